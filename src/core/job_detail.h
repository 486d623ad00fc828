/* What `rnx job status --detail` adds to a job (job_detail.c; GET /v1/jobs/{id}?detail=1,
 * docs/api.md): the request as submitted (and as rnx flags), where its GPUs were placed and
 * how that placement scores against the best possible, a summary of the spec it was started
 * with, its GPU usage, and its history (job_events.h).
 *
 * The placement and the spec summary are written once, when they happen (the grant, the
 * launch), into the job's database row as JSON, and read back only when asked for
 * (job_detail_json.h): a job costs no memory for them, and they outlive a restart of joblet. */
#ifndef JOBLET_JOB_DETAIL_H
#define JOBLET_JOB_DETAIL_H

#include <jansson.h>

#include "../exec/cgroup.h"
#include "../exec/spec.h"
#include "job.h"

/* How the GPUs a job was just granted score (sched_best_scores): its set's score, the best
 * this machine has for the request with every GPU free, and the best among the GPUs free at
 * the time; -1 unknown. */
typedef struct job_placement_score {
    long score, best, best_free;
} job_placement_score;

/* Right after the grant (gpus_grant, gpus_grant_mig): records where the job went and why
 * (its GPUs, NUMA nodes, the interconnect between them, the scores) and the JE_GRANTED event. */
void job_detail_placed(job *j, const job_placement_score *sc);

/* At launch, with the spec handed to the shim: what the job may open and sees (device nodes,
 * mounts, the names of its environment variables, never their values), as whom it runs, and
 * its limits. */
void job_detail_spec(const job *j, const job_spec *s);
/* The sandbox uid that summary recorded (gVisor), 0 when none: a restarted joblet keeps it
 * held while the job runs. */
uid_t job_detail_sandbox_uid(const job *j);
/* The job's cgroups, to read its statistics: joblet's own (<root>/user-<uid>/<id>, uh the user's
 * level), or, for a Slurm task, the ones its init is in (Slurm's task cgroups: they also count
 * the task process that waits for it; joblet's cgroup2 directory). */
void job_detail_cgroup(const job *j, cg_host *uh, cg_job *cg);

#endif
