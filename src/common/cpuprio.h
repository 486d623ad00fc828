/* The CPU priority of joblet's own work against its jobs': the loop thread, through which every
 * request and every job's start and end pass one after another, and the shim zygote, whose fork
 * every start waits for, run at a nice below 0; whatever they start (shims, helpers, the
 * resolver threads, `rnx job exec`'s processes, every job) is back at 0 from its first
 * instruction (SCHED_RESET_ON_FORK), so no job and no user's helper ever runs above another.
 *
 * Why: on a busy machine the loop thread and the zygote competed as equals with every shim in
 * their cgroup (a shim stays in the zygote's until its job has written 8 MiB, exec/cgroup.h) and,
 * on a v1 or hybrid host, with the jobs' whole cgroup root: measured over 400 jobs, the loop
 * thread waited 1.24 s on the run queue for 0.58 s of running, and the zygote 0.63 s for 0.06;
 * every submission waits for both (docs/performance.md). */
#ifndef JOBLET_CPUPRIO_H
#define JOBLET_CPUPRIO_H

#include <sys/types.h>

#include "err.h"

/* Thread (or process) tid (0: the calling thread) at nice -raise, with SCHED_RESET_ON_FORK, so
 * that the tasks it makes start at nice 0. raise 0 leaves it as it is. Needs CAP_SYS_NICE. */
int cpuprio_raise(pid_t tid, unsigned raise, jerr *e);

#endif
