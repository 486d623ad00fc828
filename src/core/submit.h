/* Submission (submit.c): every field is checked before anything is created, and a failure
 * after the job's directory exists removes it, so a refused request leaves nothing behind. */
#ifndef JOBLET_SUBMIT_H
#define JOBLET_SUBMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "job.h"

/* Validates a request and creates a job (and its directory with uploads). The request (typed
 * at the API's edge) is taken over by the job; on failure it is the caller's. */
job *submit_job(job_req *req, uid_t caller_uid, gid_t caller_gid, jerr *e);

/* The two halves, for workflows (all jobs checked before any is created): */
typedef struct submit_info {
    int64_t sched_ms;         /* when it may start; 0 = now */
    uint64_t total;           /* bytes uploaded */
} submit_info;
int submit_check(job_req *req, uid_t caller_uid, gid_t caller_gid, submit_info *si, jerr *e);
/* limits.* for these requests together: sizes, queued jobs, the GPU request rate (a dry run
 * checks the rate without using it up). */
enum { SUBMIT_WORKFLOW = 1, SUBMIT_DRY_RUN = 2 };
int submit_check_limits(job_req *const *reqs, size_t n, uid_t uid, int flags, jerr *e);
job *submit_create(job_req *req, uid_t caller_uid, gid_t caller_gid, const submit_info *si, jerr *e);

#endif
