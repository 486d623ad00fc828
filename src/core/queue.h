/* The queue (queue.c): the scheduler's passes and why a job waits. */
#ifndef JOBLET_QUEUE_H
#define JOBLET_QUEUE_H

#include <stddef.h>

#include "job.h"

/* One pass of the scheduler: starts what fits (GPUs granted, shims spawned), preempts what
 * must make room, sets each waiting job's position and reason, and when to look again
 * (core.sched_wakeup_ms). Run by the settle step only (settle.c). */
void queue_run(void);
/* Why a waiting job waits, in words ("needs 2 GPUs ...; 1 free; first in line"). */
void queue_wait_reason(const job *j, char *out, size_t len);

#endif
