/* Descriptors that connections hold besides their own sockets (connfds.c): a log reader's files
 * (each stream's .data and .idx), a terminal's (the shim's socket, its idle and linger timers), an
 * exec's (the same, and its helper's pidfd), a copy's (its helper's pipes and pidfd), an upload's
 * (its directory and the file being written), a build log's. They come out of the connections'
 * half of joblet's open-file limit (the other half is its own: the database, logs, launches, the
 * running jobs: daemon/main.c files_budget): api/http.c gives the connections' sockets a part of
 * that half and this count the rest (connfds_set), once at start. Whoever opens such files takes
 * them here first, and gives them back when it closes them: one count, nothing opened to check.
 * Past the count a request is answered busy (503 with Retry-After: nothing was done, rnx asks
 * again); a user other than an admin holds at most a quarter of it (429), and the last eighth is
 * kept for admins and users who hold at most CONNFDS_FLOOR (busy). Before, they were bounded
 * only by the connections' cap: three users' 64 log followers each took all of joblet's 768
 * descriptors (tests/integration/test_hostile_fds.py). */
#ifndef JOBLET_CORE_CONNFDS_H
#define JOBLET_CORE_CONNFDS_H

#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "authz.h"

#define CONNFDS_LOG_STREAM 2    /* a log reader, per stream it reads: its .data and .idx */
#define CONNFDS_ATTACH 3        /* a terminal: the shim's socket, the idle and the linger timers */
#define CONNFDS_EXEC 4          /* an exec's stream: the same and its helper's pidfd */
#define CONNFDS_TLS_UPGRADE 2   /* an upgraded TLS connection besides: libmicrohttpd's socket pair */
#define CONNFDS_COPY 3          /* a copy: its helper's status pipe and pidfd, the data pipe's end */
#define CONNFDS_COPY_IN 1       /* a copy in besides: the data pipe's end the body is written into */
#define CONNFDS_UPLOAD 2        /* an upload: its directory and the file being written */
#define CONNFDS_BUILD_LOG 1     /* a runtime build's log followed */
/* What a user may hold and still take from the last eighth of the count, kept for admins and
 * such users (common/fairshare.h): two log followers, or a terminal and an exec. */
#define CONNFDS_FLOOR 8

/* What may be held in all (UINT64_MAX: no bound, an open-file limit of infinity), and the
 * open-file limit it came from, for the messages. */
void connfds_set(uint64_t budget, uint64_t nofile);
/* Whether n more for who's what ("a log follower", said in the refusal) stay within the bounds:
 * 0, or -1 with e: 503 (busy) when the count would pass its bound, or its last eighth for a
 * user who would then hold more than CONNFDS_FLOOR, 429 when who (not an admin) would pass its
 * quarter (common/fairshare.h). */
int connfds_check(const caller *who, unsigned n, const char *what, jerr *e);
/* n more held for uid (checked in the same loop turn). */
void connfds_add(uid_t uid, unsigned n);
/* connfds_check, then connfds_add. */
int connfds_take(const caller *who, unsigned n, const char *what, jerr *e);
/* n of uid's given back (what connfds_take took for it). */
void connfds_give(uid_t uid, unsigned n);
/* Held now, and the bound (UINT64_MAX: none). */
uint64_t connfds_held(void);
uint64_t connfds_budget(void);

#endif
