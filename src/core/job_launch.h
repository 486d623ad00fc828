/* Starting jobs, noticing their end, and taking them back after a restart (job_launch.c). The
 * daemon never waits on a job: it spawns the shim, watches its pidfd, and reads what the shim
 * wrote when told something changed. */
#ifndef JOBLET_JOB_LAUNCH_H
#define JOBLET_JOB_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../exec/cgroup.h"
#include "job.h"

/* The PATH a job gets when its environment gives none (GPU jobs get the CUDA toolkit's bin
 * appended); submission resolves the command along it too (cmdcheck.h). */
extern const char *const job_launch_default_path;

/* The shim zygote (exec/zygote.h), started once; stopped at shutdown. */
void job_launch_init(void);
void job_launch_shutdown(void);
/* Descriptors a launch may need free, with a margin: its checks' (the account, the command in its
 * runtime), its directory, the spec's memfd, a socket pair, the zygote's, a pidfd; 2 of them (3 a
 * Slurm task's) held while it runs. Who launches checks them first (fds_available): an EMFILE part
 * way through a launch ended the job FAILED (start_failed). */
#define JOB_LAUNCH_FDS 12
#define JOB_LAUNCH_HELD_FDS 2 /* held while it runs (its shim's pidfd and notify socket) */
/* Spawns the job's shim with its spec (GPUs already granted); the job holds room from now. */
int job_launch_job(job *j, jerr *e);
/* What the one who starts a job for someone else gives it (a Slurm task: slurm_task.h). */
typedef struct job_given {
    const cg_given *cgroups;  /* its cgroups, made by someone else (delegated, exec/cgroup.h):
                               * none of joblet's limits */
    int stdio[3];             /* its stdin, stdout, stderr (the spec's stdio_given: nothing is
                               * logged); the caller's still. -1s: none given (a terminal job's
                               * own terminal, its output logged) */
    const gid_t *groups;      /* supplementary groups (the spec's groups), ngroups of them */
    size_t ngroups;
} job_given;
/* The same with what g gives. */
int job_launch_given(job *j, const job_given *g, jerr *e);
/* pidfd (taken over) is the process waiting for the job (a Slurm task): when it ends, the job
 * is killed. job_launch_unwait stops watching it (the job's shim ended, or it is deleted). */
void job_launch_wait_by(job *j, int pidfd, pid_t pid);
/* A Slurm task's cgroup2 directory, joblet's own, for its device filter alone:
 * <unified>/<cgroup.root>/slurm-<id>. */
void job_launch_cg2_path(const job *j, char *out, size_t len);

void job_launch_unwait(job *j);
/* After a restart: every job that had a shim is re-attached, finished, or declared lost. A shim
 * joblet has too few descriptors free to watch (restarted under a lower open-file limit than its
 * jobs took: pidfd_open's EMFILE, ENFILE) still runs: its job keeps its state, room and GPUs, is
 * said so once (an event, a warning), and is re-attached later (job_launch_adopt_retry); until
 * then a stop (a requeue, a preemption) of it waits for that, STOPPING, while a kill, signal,
 * suspend, resume or run-time update is answered busy (503, nothing done), and jobs wait to
 * launch (job_launch_unwatched). */
void job_launch_adopt_all(void);
/* The shims not watched yet, re-attached (or, gone, their jobs ended as they recorded) in the
 * order adopted while a launch's descriptors (JOB_LAUNCH_FDS) stay free; watched(j) is called
 * for each one re-attached (what the start does after adoption: job_ctl_resume_job). Due at
 * job_launch_adopt_due_ms (0: none waits): every second, at once when a watched shim ends or a
 * request found its job's shim unwatched. */
void job_launch_adopt_retry(void (*watched)(job *j));
int64_t job_launch_adopt_due_ms(void);
/* How many running jobs' shims are not watched yet (a launch waits for them: queue.c). */
size_t job_launch_unwatched(void);
/* SIGTERM to the job's shim (the grace period, then SIGKILL, is the shim's); 409 when no shim
 * runs. by: the uid asking, -1 for joblet. */
int job_launch_stop(job *j, uid_t by, jerr *e);
/* SIGUSR1 to the job's shim: SIGKILL to every process of the job at once (also while a
 * stop's grace period runs); the job ends STOPPED with end reason "killed". 409 when no
 * shim runs. */
int job_launch_kill(job *j, uid_t by, jerr *e);
/* rnx job kill --signal: sig (parse_signal's, not SIGKILL) to the job's command, or with all to
 * every process of the job, through its shim (exec/shim.h SHIM_SIGNAL_FORWARD); the job goes on
 * unless the signal ends it. A starting job gets it once its command runs, a suspended one once
 * it is resumed. 409 when no shim runs; 503 while JOB_LAUNCH_SIGNALS_QUEUED_MAX sent before
 * still wait for its shim to take them. */
#define JOB_LAUNCH_SIGNALS_QUEUED_MAX 32
int job_launch_signal(job *j, uid_t by, int sig, bool all, jerr *e);
/* Stops a job to make room for the job or array for_id (of priority for_priority); it goes back
 * to the queue as it was. for_id NULL: its GPU failed. */
void job_launch_preempt(job *j, const char *for_id, int64_t for_priority);
/* rnx job update --max-runtime on a running job, or the job suspended or resumed: its shim gets
 * the limit (seconds of run time, 0 none; time suspended does not count) and whether the job is
 * suspended (its time stands still), sigqueue'd SIGUSR2 (exec/shim.h SHIM_LIMIT_*), and ends
 * the job by it. 409 when no shim runs. */
int job_launch_runtime(job *j, uint64_t seconds, bool suspended, jerr *e);
/* A suspended job thawed to be stopped (job_launch_stop; rnx job stop, kill, requeue: job_ctl.c):
 * its processes must run to hear SIGTERM; its shim's clock runs again, the suspension's time is
 * added to the run's, it is RUNNING. Nothing to do for a job not suspended. */
int job_launch_thaw(job *j, jerr *e);
/* Its run-time limit as its shim has it: seconds of run time, 0 none. */
uint64_t job_launch_runtime_s(const job_req *r);
/* rnx job requeue: stopped as a preemption stops it (SIGTERM, SIGKILL after the grace period)
 * and back in the queue with its id and place when its run is over (job_requeue). */
int job_launch_requeue(job *j, uid_t by, jerr *e);
/* The job is being deleted while its shim finishes tidying up: stop watching it. */
void job_launch_forget(job *j);
/* An adopted job whose start the previous joblet did not hear: the shim's file tells. */
void job_launch_refresh(job *j);

/* Whether the shim of the job's run before still runs, the job waiting again (requeued): it
 * tidies up what is named after the job (its cgroups, its gVisor sandbox), and a new run would
 * be made in what it removes (its processes killed with the old ones). Its end asks for a
 * scheduler pass. */
bool job_launch_tidying(const job *j);

/* At a start: pidfd is the shim of the job's run before, which ended (the job's row says so)
 * and still tidies up; watched as job_launch_tidying's, so that a requeue waits for its end
 * (core/orphans.c finds it). Takes pidfd. */
void job_launch_watch_tidying(job *j, int pidfd);
/* A running job's usage, read from its cgroup now (unchanged when it has none). */
void job_launch_live_usage(const job *j, job_usage *u);

#endif
