/* What a user asks of a job that exists: stop, cancel, delete (job_ctl.c). The API's routes
 * call these; the transitions and their rules are here. */
#ifndef JOBLET_JOB_CTL_H
#define JOBLET_JOB_CTL_H

#include <stddef.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../common/err.h"
#include "authz.h"
#include "job.h"

/* A running job gets SIGTERM (its shim kills it after the grace period); a waiting one is
 * CANCELED at once. 409 for a job already ended or stopping. by: the caller's uid. */
int job_ctl_stop(job *j, uid_t by, jerr *e);
/* rnx job kill: a running or stopping job gets SIGKILL, every process at once; a waiting one is
 * CANCELED at once; 409 for one already ended. */
int job_ctl_kill(job *j, uid_t by, jerr *e);
/* rnx job kill --signal=SIG [--all]: a running, stopping or suspended job (or one whose shim is
 * starting it) gets sig in its command, or all: in every process (job_launch_signal); SIGKILL is
 * job_ctl_kill. 409 for a job that has not started or has ended: a signal is never a cancel. */
int job_ctl_signal(job *j, uid_t by, int sig, bool all, jerr *e);
/* A job that has not started (pending, scheduled, queued, preempted) is CANCELED; 409 else. */
int job_ctl_cancel(job *j, uid_t by, jerr *e);
/* An ended job, its directory, logs and database rows are gone; 409 for one not ended. The
 * job is freed: the caller must not use it afterwards. */
int job_ctl_delete(job *j, jerr *e);
/* These ended jobs (409 if one is not), their rows in one commit, then gone as job_ctl_delete's;
 * freed. */
int job_ctl_delete_many(job **v, size_t n, jerr *e);
/* retention.c's walk of the ended jobs (job_ctl_delete_ended), in seq order (submission order,
 * not the order they ended in) from a cursor it keeps across loop turns: a turn goes on after the
 * last job the turn before looked at, and looks at max_looks jobs at most, so that jobs kept
 * ahead of those due (running, waiting, an array's or a workflow's still going, named by a
 * waiter, followed, or not due yet) cost each turn nothing more than those it looks at. */
struct depend_named;
typedef struct job_ctl_walk {
    int64_t ended_before_ms;          /* only jobs that ended before it */
    const struct depend_named *named; /* kept: the jobs and arrays a waiter names (depend.h) */
    uint64_t next_seq;   /* in: from the job of the lowest seq at or after it; out: where the next turn goes on */
    size_t max_looks;    /* jobs looked at, at most */
    size_t looked;       /* out: jobs looked at */
} job_ctl_walk;
/* Ended jobs the caller may see (root: all), at most max of them, their rows in one commit:
 * *deleted says how many, *more whether some are left (or not looked at yet: max_looks); -1 (none
 * of these deleted) when a row or the commit failed. walk NULL: every ended job, newest first (rnx
 * job delete-all); else walk's, only jobs that ended before ended_before_ms whose array and
 * workflow (if any) ended too (retention.c: a sweep's or a pipeline's history goes whole, not task
 * by task under it). */
int job_ctl_delete_ended(const caller *who, job_ctl_walk *walk, size_t max, size_t *deleted, bool *more,
                         jerr *e);

/* Slurm's scontrol hold|release|update|suspend|resume|requeue (docs/batch.md). Each records an
 * event in the job's history with the acting uid, and answers 409 naming the state when the
 * job's state does not allow it. */
/* A waiting job (pending, scheduled, queued, preempted) is HELD: out of the scheduler's sight. */
int job_ctl_hold(job *j, uid_t by, jerr *e);
/* A HELD job goes back where it belongs (job_state_after_hold), its seq and so its place kept.
 * A hold made by another uid than the job's owner (an admin's: Slurm's JobHeldAdmin) is released
 * only by whom AUTHZ_RELEASE_ADMIN_HOLD allows (403 naming who may); the owner's own hold by the
 * owner too. */
int job_ctl_release(job *j, const caller *who, jerr *e);
/* Whether j is being stopped to go back to the queue (rnx job requeue, or a preemption): a hold
 * then makes it wait HELD once stopped (job_ctl_hold), a release takes that back. */
bool job_ctl_requeuing(const job *j);
/* 0 when who may release j's hold (as job_ctl_release decides), else -1 with the 403 in e. */
int job_ctl_may_release(const job *j, const caller *who, jerr *e);
/* The fields of req (the job's request with the changes, read through the schema) that differ
 * (changed: bits 1 << JR_x) become the job's. A waiting or held job may change every field
 * job_ctl_update_fields lists, a running or suspended one only max_runtime_s (its shim gets it at
 * once); raising the priority is AUTHZ_RAISE_PRIORITY's, raising or taking away (req without it)
 * the time limit of one that runs AUTHZ_RAISE_RUNTIME's. after (depend_check_change) and
 * schedule_at change only while it waits: a new start time moves a SCHEDULED or QUEUED job
 * between the two; new dependencies are decided at once (depend_changed). req is taken over on
 * success. */
int job_ctl_update(job *j, const caller *who, job_req *req, uint64_t changed, jerr *e);
/* "priority 0 -> 5, max_runtime_s 3600 -> 7200": the fields of job_ctl_update_fields that
 * changed (bits 1 << JR_x) from a to b, as an update's event says them; its length. */
size_t job_ctl_say_changes(const job_req *a, const job_req *b, uint64_t changed, char *out, size_t len);
/* Whether req's time limit is more than cur's: longer, or none where it had one. */
bool job_ctl_runtime_raised(const job_req *cur, const job_req *req);
/* 0 when who may give j the time limit of req: anyone, unless j runs (job_ctl_update_runs) and
 * the limit is raised or taken away, which is AUTHZ_RAISE_RUNTIME's (403 naming who may). */
int job_ctl_may_raise_runtime(const job *j, const job_req *req, const caller *who, jerr *e);
/* Whether an update may change only j's time limit: it runs or is suspended, or its shim is
 * starting it (still QUEUED; the shim, born with SIGUSR2 blocked, takes a new limit once it reads
 * its signals). */
bool job_ctl_update_runs(const job *j);
/* The fields rnx job update may change, n of them. */
extern const enum jobreq_id job_ctl_update_fields[];
extern const size_t job_ctl_update_nfields;
/* A running job frozen (SUSPENDED: its room and GPUs stay held), and thawed (RUNNING). */
int job_ctl_suspend(job *j, uid_t by, jerr *e);
int job_ctl_resume(job *j, uid_t by, jerr *e);
/* At start, after the running jobs are adopted: a job whose freezer disagrees with its row (joblet
 * died between the freeze and the commit of a suspend, or of a resume) is put as its row says:
 * a RUNNING one thawed (the suspend was never answered), a SUSPENDED one frozen again. */
void job_ctl_resume_all(void);
/* The same for one job, whose shim was watched only later (job_launch_adopt_retry: joblet had
 * too few descriptors free at its start); nothing for a job not running, or not watched. */
void job_ctl_resume_job(job *j);
/* A running or suspended job stopped and back in the queue with its id and place, as a
 * preemption does (job_requeue); HELD once stopped when hold. */
int job_ctl_requeue(job *j, uid_t by, bool hold, jerr *e);
/* 0 when who may put j back in the queue as it is: an ended job runs again as a submission of its
 * request would, so one whose priority is above 0 (an admin's to give: AUTHZ_RAISE_PRIORITY,
 * at a submission as at an update) is requeued only by those who may give it, else 403 naming
 * priority; a running or suspended job's requeue goes on with the run it has. One canceled
 * while an admin held it (ended_held) is requeued only by those who may release an admin's hold
 * (AUTHZ_RELEASE_ADMIN_HOLD), else 403: its owner's cancel and requeue undid that hold. */
int job_ctl_may_requeue(const job *j, const caller *who, jerr *e);
/* Why a held or suspended job is so, for its wait_reason; "" for any other. */
void job_ctl_reason(const job *j, char *out, size_t len);
/* How long its run was SUSPENDED in all (ms), the suspension now included: time its run-time
 * limit did not count. */
int64_t job_ctl_suspended_ms(const job *j);

#endif
