/* A build's log as NDJSON (runtime_log.c), the body of GET /v1/runtime-builds/{id}/log: one
 * record per line with the build's phase and percent at that line (common/rtprogress.h), then,
 * when following, what the helper writes next, and an end record when the build is over. A
 * follower is a pull source (common/pull.h): with nothing to give it waits, and its notify is
 * called when the build writes or ends. Nothing here blocks the event loop. */
#ifndef JOBLET_RUNTIME_LOG_H
#define JOBLET_RUNTIME_LOG_H

#include <stdbool.h>

#include "runtime_build.h"

#include "../common/pull.h"

typedef struct rt_follower rt_follower;

/* A reader of b's log from its start (follow: until the build ends). */
rt_follower *runtime_log_open(rt_build *b, bool follow, pull_notify_fn notify, void *arg);
void runtime_log_set_notify(rt_follower *f, pull_notify_fn notify, void *arg);
/* Up to max bytes of NDJSON, or 0 with *st (common/pull.h). */
size_t runtime_log_read(rt_follower *f, char *buf, size_t max, enum pull_state *st);
void runtime_log_close(rt_follower *f);
/* The build wrote to its log or ended: its followers go on. */
void runtime_log_wake(rt_build *b);
/* The build's record goes away: its followers end now. */
void runtime_log_detach(rt_build *b);

#endif
