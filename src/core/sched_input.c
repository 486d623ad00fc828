/* The daemon's jobs and GPUs as the pure scheduler's input (sched_input.h). */
#include "sched_input.h"

#include "../common/util.h"
#include "../gpu/sched_view.h"
#include "gpus.h"
#include "jobs.h"
#include "state.h"

void sched_input_req_of(const job_req *q, uid_t owner, sched_req *r)
{
    *r = (sched_req){0};
    r->gpu_count = (uint32_t)q->gpu_count;
    r->gpu_memory_mb = (uint64_t)q->gpu_memory_mb;
    r->gpu_mask = gpus_kind_mask(q);
    r->gpu_ids = gpus_ids_mask(q);
    r->shared = q->gpu_share;
    r->mps_uid = q->gpu_share ? (uint32_t)jobs_run_uid(owner, q, 0) : (uint32_t)owner; /* (a job: its own uid) */
    r->mig_profile = gpus_mig_profile(q);
    r->single_numa = jobreq_has(q, JR_CROSS_NUMA) && !q->cross_numa;
    r->priority = (int32_t)q->priority;
    r->preemptible = q->preemptible;
    r->user = (uint32_t)owner;
    r->runtime_ms = q->max_runtime_s * 1000;
}

void sched_input_req(const job *j, sched_req *r)
{
    sched_input_req_of(&j->req, j->owner_uid, r);
    r->mps_uid = (uint32_t)j->uid;
}

/* Everything but the queue: the GPUs, the jobs holding room (their list, jobs.h: not a scan of
 * every job kept), the configuration. The arrays are the caller's (GPU_MAX gpus, GPU_MAX *
 * GPU_MIG_MAX migs, as many running as jobs_holding_room lists). */
void sched_input_base(sched_input *in, sched_gpu *gpus, sched_mig *migs, sched_running *run, job **runmap)
{
    int64_t now = now_ms();
    size_t nr = 0, nroom;
    job **room = jobs_holding_room(&nroom); /* in seq order, as the table's scan gave them */
    for (size_t i = 0; i < nroom; i++) {
        job *j = room[i];
        sched_running *x = &run[nr];
        *x = (sched_running){.seq = j->seq, .gpus = j->gpu_set, .mig = j->gpu_mig - 1};
        sched_input_req(j, &x->r);
        if (x->r.runtime_ms) /* its time SUSPENDED is not counted against its limit (job.h) */
            x->end_ms = (j->started_ms ? j->started_ms : now) + x->r.runtime_ms + j->suspended_ms +
                        (j->suspended_since_ms ? now - j->suspended_since_ms : 0);
        x->stopping = j->state == JS_STOPPING || j->preempting;
        if (j->state == JS_SUSPENDED) /* frozen by an admin (job_ctl.c): not stopped for another */
            x->r.preemptible = false;
        if (runmap)
            runmap[nr] = j;
        nr++;
    }
    gpus_sched_view(gpus);
    *in = (sched_input){.running = run,
                        .nrunning = nr,
                        .now_ms = now,
                        .max_running = state_max_running(), /* (jobs.max_running, and the open-file limit's) */
                        .max_gpus_per_user = core.cfg.limits.max_gpus_per_user,
                        .max_running_per_user = core.cfg.limits.max_running_per_user,
                        .gpus = gpus,
                        .ngpus = (size_t)core.gpu.inv.n,
                        .held = gpus_held(),
                        .migs = migs,
                        .nmigs = gpus_sched_migs(migs, GPU_MAX * GPU_MIG_MAX),
                        .gpu_pair = gpus_pair_scores(),
                        .strategy = (int)core.cfg.gpu.strategy};
}

