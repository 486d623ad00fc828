/* The daemon's jobs and GPUs as the pure scheduler's input (sched/sched.h), built afresh
 * for every pass from the typed requests and grants (sched_input.c). */
#ifndef JOBLET_SCHED_INPUT_H
#define JOBLET_SCHED_INPUT_H

#include <sys/types.h>

#include "../common/jobreq.h"
#include "../sched/sched.h"
#include "job.h"

void sched_input_req_of(const job_req *req, uid_t owner, sched_req *r);
void sched_input_req(const job *j, sched_req *r);
/* Everything but the queue: the GPUs, the jobs holding room, the configuration. The arrays
 * are the caller's: gpus GPU_MAX slots, migs GPU_MAX * GPU_MIG_MAX, run (and runmap, which
 * may be NULL) as many as jobs_holding_room lists (jobs.h; core.njobs is always enough). */
void sched_input_base(sched_input *in, sched_gpu *gpus, sched_mig *migs, sched_running *run, job **runmap);

#endif
