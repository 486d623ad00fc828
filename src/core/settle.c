/* The settle step (settle.h). */
#include "settle.h"

#include <stdlib.h>

#include "../common/log.h"
#include "arrays.h"
#include "gpus.h"
#include "gpu_health.h"
#include "jobs.h"
#include "job_logs.h"
#include "job_term.h"
#include "publish.h"
#include "queue.h"
#include "slurm_node.h"
#include "state.h"
#include "volumes.h"
#include "networks.h"
#include "workflow.h"
#include "depend.h"

/* A round's work can ask for more (a start that fails ends a job; a workflow cancels its
 * dependents); each round settles at least one job for good, so this bound is only a guard
 * against a fault looping: what is left waits for the next turn, which comes at once. */
#define SETTLE_ROUNDS 64

static void settle_jobs(void)
{
    size_t n;
    job **list = jobs_take_changed(&n);
    for (size_t i = 0; i < n; i++) {
        job *j = list[i];
        uint8_t what = j->settle;
        j->settle = 0;
        if (what & JOB_SETTLE_RELEASE)
            gpus_release(j);
        if (what & JOB_SETTLE_WAKE) {
            job_logs_wake(j);
            job_term_wake(j);
        }
        if (what & JOB_SETTLE_WORKFLOW) {
            workflow_job_changed(j);
            arrays_task_changed(j); /* an ended task frees room under its array's %N */
            if (j->array) {
                jarray *a = j->array;
                depend_task_ended(j); /* arrays waiting on it task by task: its task there may go */
                depend_array_changed(a); /* the array started or ended: who waits on it */
                workflow_array_changed(a); /* a workflow's array: its dependents, its workflow's state */
            }
            depend_job_changed(j); /* the jobs waiting on it by --after (none: nothing to do) */
            depend_single_changed(j); /* its owner's singleton jobs of its name (none: nothing to do) */
        }
        if (what & JOB_SETTLE_RELEASE) {
            volumes_release(j); /* memory volumes no job not yet ended uses go */
            networks_release(j); /* its address, and its name from the network's hosts file */
        }
    }
    free(list);
}

void settle(void)
{
    int round = 0;
    while (core.want && round++ < SETTLE_ROUNDS) {
        unsigned want = core.want;
        core.want = 0;
        if (want & WANT_JOBS)
            settle_jobs();
        if (want & (WANT_JOBS | WANT_GPUS))
            gpu_health_reset_when_idle();
        if (want & WANT_GPUS)
            slurm_node_sync(); /* a GPU out of service drains the Slurm node; all back resumes it */
        if (want & WANT_SCHEDULE || core.want & WANT_SCHEDULE) {
            core.want &= ~(unsigned)WANT_SCHEDULE;
            queue_run();
        }
    }
    if (core.want)
        log_warn("settle: work still asked for after %d rounds (0x%x); the next turn goes on", SETTLE_ROUNDS,
                 core.want);
    publish_changes(); /* what changed, settled, to the event streams (events.h) */
}

bool settle_pending(void) { return core.want != 0; }
