/* GET /v1/runtime-builds/{id}/log: a build's log as NDJSON (runtime_log.c), one record per
 * line with the build's phase and percent at that line (common/rtprogress.h), then, when
 * following, what the helper writes next, and an end record when the build is over. A
 * follower with nothing to send suspends its connection until the build writes or ends.
 * Nothing here blocks the event loop. */
#ifndef JOBLET_RUNTIME_LOG_H
#define JOBLET_RUNTIME_LOG_H

#include <stdbool.h>

#include "runtime_build.h"

struct MHD_Connection;
struct MHD_Response;

struct MHD_Response *runtime_log_response(rt_build *b, struct MHD_Connection *conn, bool follow);
/* The build wrote to its log or ended: its followers go on. */
void runtime_log_wake(rt_build *b);
/* The build's record goes away: its followers end now. */
void runtime_log_detach(rt_build *b);

#endif
