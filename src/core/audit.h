/* The audit trail of GPU use and GPU states, and of what remote callers did or were refused
 * (table audit, `rnx audit`, docs/health.md, docs/remote.md). */
#ifndef JOBLET_AUDIT_H
#define JOBLET_AUDIT_H

#include <stdint.h>

#include "../common/err.h"
#include "authz.h"

/* One record: action ("allocate", "release", "state", "xid", "scrub", ...), by uid (-1 =
 * joblet), GPU index (-1 none; its UUID is added), job, how long it was held (-1 unknown),
 * memory (-1 unknown), free text. A database error is logged, never fatal. */
void audit_record(const char *action, int64_t uid, int gpu, const char *job_id, int64_t duration_ms, int64_t memory_mb,
                  const char *detail);

/* One record of what a caller did or was refused (action "api", "refused"): for a caller on
 * the TLS listener, the person, the certificate's serial, the role and the peer address too. */
void audit_caller(const char *action, const caller *c, const char *job_id, const char *detail);
/* The record of a change a caller on the TLS listener made (action "api"), written into the open
 * transaction before the answer's commit, and kept until a commit takes it: one that a failed
 * commit rolled back is written again with the rows a failed commit lost (state.c's resync).
 * -1 with e (HTTP 503) when its insert failed (it is still written again later). */
int audit_change(const caller *c, const char *job_id, const char *detail, jerr *e);
/* Adds note to the detail of the last change recorded (audit_change), while no commit took it
 * yet: what its answer became (a commit that failed). */
void audit_change_note(const char *note);
/* Refusals ("refused") are recorded one by one up to 10 a minute from one source (a TLS peer's
 * address, a local uid); past that they are counted, and the count is one record at the minute's
 * end (audit_tick) or at audit_stop. The trail is kept to audit.keep_days and audit.max_rows,
 * pruned a bounded batch at a time. */
/* When audit_tick has work next (ms since the epoch; 1: at once). */
int64_t audit_due_ms(void);
void audit_tick(int64_t now);
/* Records the counts of refusals still held (joblet stops). */
void audit_stop(void);

#endif
