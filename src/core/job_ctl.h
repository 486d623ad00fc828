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
/* A job that has not started (pending, scheduled, queued, preempted) is CANCELED; 409 else. */
int job_ctl_cancel(job *j, uid_t by, jerr *e);
/* An ended job, its directory, logs and database rows are gone; 409 for one not ended. The
 * job is freed: the caller must not use it afterwards. */
int job_ctl_delete(job *j, jerr *e);
/* These ended jobs (409 if one is not), their rows in one commit, then gone as job_ctl_delete's;
 * freed. */
int job_ctl_delete_many(job **v, size_t n, jerr *e);
/* Ended jobs the caller may see (root: all), newest first, at most max of them, their rows in
 * one commit: *deleted says how many, *more whether some are left; -1 (none of these deleted)
 * when a row or the commit failed. */
int job_ctl_delete_ended(const caller *who, size_t max, size_t *deleted, bool *more, jerr *e);

#endif
