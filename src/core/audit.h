/* The audit trail of GPU use and GPU states (table audit, `rnx audit`, docs/health.md). */
#ifndef JOBLET_AUDIT_H
#define JOBLET_AUDIT_H

#include <stdint.h>

#include "authz.h"

/* One record: action ("allocate", "release", "state", "xid", "scrub", ...), by uid (-1 =
 * joblet), GPU index (-1 none; its UUID is added), job, how long it was held (-1 unknown),
 * memory (-1 unknown), free text. A database error is logged, never fatal. */
void audit_record(const char *action, int64_t uid, int gpu, const char *job_id, int64_t duration_ms, int64_t memory_mb,
                  const char *detail);

/* One record of what a caller did or was refused (action "api", "refused"): for a caller on
 * the TLS listener, the person, the certificate's serial, the role and the peer address too. */
void audit_caller(const char *action, const caller *c, const char *job_id, const char *detail);

#endif
