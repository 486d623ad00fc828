/* One user's take of a count that many users share under one bound: the descriptors
 * connections hold besides their sockets (core/connfds.c), a server's connections (api/http.c).
 * Three rules, in this order:
 *   - the bound: nobody takes past it (busy: nothing done, ask again later);
 *   - a user's share: a user other than an admin holds at most `share` (429: end some first);
 *   - the reserve: the last `reserve` of the bound are kept for admins and for users who hold at
 *     most `floor` with the take, so that a few users each within its share cannot fill the bound
 *     and leave root's `rnx job run --follow`, or a fifth user's first follower, nothing (busy).
 * Pure: no state of its own, the caller keeps the counts. */
#ifndef JOBLET_FAIRSHARE_H
#define JOBLET_FAIRSHARE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fairshare {
    uint64_t bound;   /* what all may hold together */
    uint64_t share;   /* what one user other than an admin may hold */
    uint64_t reserve; /* the part of bound kept for admins and users who hold at most floor */
    uint64_t floor;
} fairshare;

enum fairshare_verdict {
    FAIRSHARE_OK,
    FAIRSHARE_FULL,     /* past the bound */
    FAIRSHARE_SHARE,    /* past the user's share */
    FAIRSHARE_RESERVED, /* into the reserve, by a user who holds more than floor */
};

/* The rules for a user who holds `mine` (its count) taking n more while all hold `held`. */
enum fairshare_verdict fairshare_take(const fairshare *f, uint64_t held, uint64_t mine, uint64_t n, bool admin);

/* The rules for a bound: a user's share a quarter of it (at most `most`: 0, no more than that
 * bound; at least floor), the reserve an eighth. */
fairshare fairshare_of(uint64_t bound, uint64_t most, uint64_t floor);

#endif
