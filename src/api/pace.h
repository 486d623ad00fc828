/* The pace of a streamed body (pace.c): PUT /v1/uploads/{id} and the bodies that go to a
 * process or a file (PUT /v1/jobs/{id}/archive, a runtime's import). The idle timeout alone
 * (jobs.upload_timeout_s, server.idle_timeout_s) is reset by each byte: a client that sent one
 * byte before each timeout held the body, and what it holds (a place of limits.uploads_per_user,
 * an open file, a copy's helper and its pipe), for ever (256 MiB at a byte per 29 s: 250 years).
 * Each window of the timeout must bring PACE_FLOOR bytes, or what is left of the body; a body
 * short of it is cut, so one lasts at most its size / PACE_FLOOR windows. A window the daemon
 * made the client wait through (the copy's pipe full) does not count against it. */
#ifndef JOBLET_PACE_H
#define JOBLET_PACE_H

#include <stdbool.h>
#include <stdint.h>

#define PACE_FLOOR (1u << 20)
#define PACE_UNKNOWN UINT64_MAX /* the body's length is not known (chunked) */

typedef struct pace {
    int64_t start_ns;         /* the window began (CLOCK_MONOTONIC) */
    uint64_t got;             /* bytes in the window */
} pace;

/* A new window from now: at the headers, and whenever the daemon made the client wait. */
void pace_start(pace *p);
/* n more bytes came and left are still to come (PACE_UNKNOWN: not known): false once the
 * window of timeout_s seconds went by short of PACE_FLOOR bytes (or of the rest of the body). */
bool pace_ok(pace *p, uint64_t n, uint64_t left, uint64_t timeout_s);

#endif
