/* A Slurm task run as a joblet job (slurm_task.c; docs/slurm.md, "The SPANK plugin").
 *
 * joblet's SPANK plugin (src/slurm/) opens joblet's socket as root in the task's process, in
 * slurm_spank_task_init_privileged, and sends one request on it from slurm_spank_task_init,
 * once slurmstepd has put the task in its cgroups, given it its stdio and dropped to the
 * user. The daemon trusts only what it can check:
 *   - the task is the peer of the connection: the process that connected (SO_PEERPIDFD),
 *     alive while it is looked at; not whatever process has its pid by the time it asks;
 *   - its Slurm ids and its user are those of the cgroups Slurm put it in (/proc/PID/cgroup:
 *     <prepend>/uid_U/job_J/step_S/task_T, common/slurmcg.h), and its uids now are U: a
 *     process in no Slurm task's cgroup is refused (403);
 *   - the GPUs are accepted only on a connection root opened (authz: AUTHZ_SLURM_GPUS), as
 *     device nodes whose minors name joblet's GPUs: the step's, narrowed to the task's by
 *     Slurm's devices cgroup of the task where it constrains (ConstrainDevices=yes: the
 *     kernel's word), else by the task's own list the plugin read at task_init (within the
 *     step's: a narrowing, never a widening).
 * The job runs as U in those cgroups (delegated: Slurm's limits and accounting) plus a cgroup2
 * directory of joblet's own for its device filter, with the task's own fds 0-2 taken from it
 * (pidfd_getfd), and is killed when the task process, which waits for it, ends. */
#ifndef JOBLET_CORE_SLURM_TASK_H
#define JOBLET_CORE_SLURM_TASK_H

#include <stddef.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "../common/slurmcg.h"
#include "authz.h"
#include "job.h"

typedef struct slurm_task_req {
    job_req req;              /* the command, its environment, runtime and volumes (typed) */
    slurm_ids claimed;        /* the ids the plugin read from Slurm (set false: none): checked */
    char **gpus;              /* device nodes of the GPUs Slurm gave the step ("/dev/nvidia2") */
    size_t ngpus;
    char **task_gpus;         /* those Slurm bound to this task (--gpus-per-task), NULL: not said; */
    size_t ntask_gpus;        /* within gpus, and used only where Slurm's devices cgroup does not say */
    bool account_wait;        /* out: refused (503) as the task's uid's account is not known yet
                               * (core/nsscache.h): the API waits for account_uid's and asks again */
    uid_t account_uid;
} slurm_task_req;

/* Starts the task of the connection's peer: the job (running), or NULL with e (403: not a
 * Slurm task, the peer gone, or GPUs from a connection that is not root's; 400 naming the
 * field; 409 a GPU held by a job of joblet's own). peer_pidfd: the process that connected
 * (SO_PEERPIDFD), -1 where the kernel has none (then who->pid, opened now: before Linux 6.5 a
 * peer that ended and whose pid was given again cannot be told from the new process). The
 * request and peer_pidfd are taken over in either case. */
job *slurm_task_start(const caller *who, int peer_pidfd, slurm_task_req *r, jerr *e);
void slurm_task_req_free(slurm_task_req *r);

#endif
