/* The states of a job and of a workflow, and their names as the API, the database, the logs
 * and rnx spell them: one list for the daemon and the client. */
#ifndef JOBLET_JOBSTATE_H
#define JOBLET_JOBSTATE_H

#include <stdbool.h>
#include <stdint.h>

enum job_state {
    JS_PENDING,               /* a workflow job waiting for the jobs it depends on */
    JS_SCHEDULED, JS_QUEUED, JS_RUNNING, JS_STOPPING,
    JS_PREEMPTED,             /* stopped for a job of higher priority; back in the queue as it was */
    JS_HELD,                  /* a waiting job held (rnx job hold): out of the scheduler's sight until released */
    JS_SUSPENDED,             /* a running job frozen (rnx job suspend): keeps its room and GPUs */
    JS_STOPPED, JS_COMPLETED, JS_FAILED, JS_CANCELED,
};
#define JS_COUNT (JS_CANCELED + 1)

/* "PENDING", ..., "CANCELED". */
const char *job_state_name(enum job_state s);
/* A state's name in any case -> 0 and *out; -1 when s (maybe NULL) names none. */
int job_state_parse(const char *s, enum job_state *out);
static inline bool job_state_terminal(enum job_state s) { return s >= JS_STOPPED; }
/* Not started (again) yet: what the scheduler looks at. */
static inline bool job_state_waiting(enum job_state s) { return s == JS_SCHEDULED || s == JS_QUEUED || s == JS_PREEMPTED; }

/* Where a job let go goes (a released hold, job_ctl.c; dependencies that hold, depend.c; a
 * start time that came or changed, queue.c and job_ctl.c): PENDING while the jobs it depends on
 * have not all ended as it needs (deps_pending), SCHEDULED while its start time (not_before_ms,
 * 0 none) lies ahead of now_ms, else QUEUED, or PREEMPTED for a job waiting to run again after a
 * run that was preempted or requeued (ran_before). Its seq is untouched, so it keeps its place. */
enum job_state job_state_after_hold(bool deps_pending, bool ran_before, int64_t not_before_ms, int64_t now_ms);

enum wf_state { WF_PENDING, WF_RUNNING, WF_COMPLETED, WF_FAILED, WF_CANCELED };

const char *wf_state_name(enum wf_state s);
/* A state's name, exactly (upper case) -> 0 and *out; -1 otherwise. */
int wf_state_parse(const char *s, enum wf_state *out);

#endif
