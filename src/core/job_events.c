/* A job's history (job_events.h). Rows of the database's job_events table, written in the
 * same transaction as the state change they tell of. */
#include "job_events.h"

#include <stdarg.h>
#include <stdio.h>

#include "../common/log.h"
#include "../common/util.h"
#include "arrays.h"
#include "state.h"

const char *job_event_name(enum job_event ev)
{
    static const char *const names[] = {
        [JE_SUBMITTED] = "submitted", [JE_PENDING] = "pending",   [JE_RELEASED] = "released",
        [JE_QUEUED] = "queued",       [JE_GRANTED] = "granted",   [JE_STARTED] = "started",
        [JE_STOPPING] = "stopping",   [JE_PREEMPTED] = "preempted", [JE_REQUEUED] = "requeued",
        [JE_RESTARTED] = "restarted", [JE_ENDED] = "ended",       [JE_ATTACHED] = "attached",
        [JE_DETACHED] = "detached",   [JE_EXEC] = "exec",
        [JE_HELD] = "held",           [JE_UPDATED] = "updated",   [JE_SUSPENDED] = "suspended",
        [JE_RESUMED] = "resumed",     [JE_SIGNALED] = "signaled",
    };
    return (size_t)ev < ARRAY_LEN(names) ? names[ev] : "?";
}

static void record(const char *id, int64_t at_ms, enum job_event ev, int64_t uid, const char *fmt, va_list ap)
{
    char detail[1024];
    vsnprintf(detail, sizeof detail, fmt, ap);
    if (!core.db)
        return;
    db_event x = {at_ms > 0 ? at_ms : now_ms(), job_event_name(ev), uid, *detail ? detail : NULL};
    jerr e = {0};
    if (db_event_add(core.db, id, &x, JOB_EVENTS_MAX, &e) < 0)
        log_err("job %s: event %s not recorded: %s", id, x.event, e.msg);
}

void job_event(job *j, enum job_event ev, int64_t uid, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(j->id, 0, ev, uid, fmt, ap);
    va_end(ap);
}

void job_event_array(const jarray *a, enum job_event ev, int64_t uid, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(a->id, 0, ev, uid, fmt, ap);
    va_end(ap);
}

void job_event_at(job *j, int64_t at_ms, enum job_event ev, int64_t uid, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(j->id, at_ms, ev, uid, fmt, ap);
    va_end(ap);
}

int job_event_wait_is_new(job *j, uint8_t why)
{
    if (j->ev_wait == why + 1)
        return 0;
    j->ev_wait = (uint8_t)(why + 1);
    return 1;
}
