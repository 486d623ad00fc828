/* A job's cgroup freezer (rnx job suspend and resume), asked and then watched (job_freeze.c).
 * The kernel freezes asynchronously, and a task that cannot stop at once keeps its cgroup
 * FREEZING for a while, or (v1) until the freeze is asked again: nothing here waits for it on the
 * loop thread. A freeze or thaw asked is watched on a timer (every 10 ms for its first second,
 * then every second) until the freezer says it is done; a v1 freezer still FREEZING is asked
 * again at each look (the kernel's cgroup-v1/freezer-subsystem.rst: "userspace retries"). */
#ifndef JOBLET_JOB_FREEZE_H
#define JOBLET_JOB_FREEZE_H

#include <stdbool.h>

#include "../common/err.h"
#include "job.h"

/* Every process of the running job asked to freeze (frozen) or thaw in its cgroup, and watched
 * until it has (exec/cgroup.h cg_freeze). 501 where the job has no freezer, 500 when the write
 * fails. */
int job_freeze_ask(job *j, bool frozen, jerr *e);
/* Whether its cgroup is frozen now: 1, 0, or -1 unknown (no freezer). */
int job_freeze_state(const job *j);

/* Called once the freeze or thaw asked last is done, or has taken a second (it goes on being
 * watched then): e is always NULL (what the freezer says is in the job's JSON). */
typedef void (*job_freeze_done_fn)(void *arg, const jerr *e);
/* fn(arg, NULL) when j's freezer says what was asked last (job_freeze_ask), or a second after it
 * was asked, whichever comes first; true when fn will be called so, false when nothing is being
 * waited for (done already: fn is not called). */
bool job_freeze_wait(const job *j, job_freeze_done_fn fn, void *arg);

/* Whether a freeze (*frozen true) or thaw asked of j is not done yet (still watched). */
bool job_freeze_pending(const job *j, bool *frozen);

#endif
