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
#include "authz.h"
#include "job.h"

/* Validates a request and creates a job (and its directory with uploads). The request (typed
 * at the API's edge) is taken over by the job; on failure it is the caller's. */
job *submit_job(job_req *req, const caller *who, jerr *e);

/* The two halves, for workflows (all jobs checked before any is created): */
typedef struct submit_info {
    int64_t sched_ms;         /* when it may start; 0 = now */
    uint64_t total;           /* bytes uploaded */
    const char *staged;       /* a streamed upload: the directory its files were written into
                               * (<jobs>/.incoming-*), renamed to the job's; NULL otherwise */
    const char *array_id;     /* a job array's task (submit_task): its array, and its task id */
    int64_t array_task;
    bool owned;               /* staged: each entry was given run_uid and run_gid as it was
                               * written (core/incoming.c), only work/ itself is left to own */
    uid_t run_uid;            /* (then) the uid the job runs as, chosen then */
    gid_t run_gid;
} submit_info;
int submit_check(job_req *req, const caller *who, submit_info *si, jerr *e);
/* limits.* for these requests together: sizes, queued jobs, the GPU request rate (a dry run
 * checks the rate without using it up). wf_bytes: what a workflow keeps of itself besides its
 * jobs' requests (workflow_doc_bytes), counted with them for limits.max_request_bytes_per_user;
 * 0 for a job or an array. */
enum { SUBMIT_WORKFLOW = 1, SUBMIT_DRY_RUN = 2 };
int submit_check_limits(job_req *const *reqs, size_t n, uid_t uid, int flags, uint64_t wf_bytes, jerr *e);
/* Its counts alone (limits.max_queued_per_user, max_jobs_per_user) for ntasks more jobs: what
 * submit_check_limits checks first, and a workflow of more jobs than that checks before its jobs
 * are read (each costs a submission's checks: ~45 us, 0.5 s for 10,000, refused after all). 429. */
int submit_check_count(uint64_t ntasks, uid_t uid, jerr *e);
/* What else a user keeps that limits.max_request_bytes_per_user counts (workflow.c gives its
 * workflows' own text: workflow_owner_bytes), asked by the limit check. */
void submit_held_bytes_hook(uint64_t (*fn)(uid_t uid));
/* The jobs uid keeps as limits.max_jobs_per_user counts them: its jobs, an array's tasks not made
 * yet, an ended array that keeps no job, and uploads still arriving. */
uint64_t submit_kept(uid_t uid);
job *submit_create(job_req *req, uid_t caller_uid, gid_t caller_gid, const submit_info *si, jerr *e);
/* Commits the job submit_create made (state_commit_now): the job, or NULL after taking it back
 * (submit_undo) with e saying why (507 when the state filesystem is full). */
job *submit_commit(job *j, jerr *e);
/* Takes back a job submit_create made that was not launched: out of the table, its directory
 * and /work removed, freed. */
void submit_undo(job *j);
/* An ended job about to be put back in the queue (rnx job requeue: core/job_ctl.c): what its run
 * needs is still there (its directory and /work, its runtime, the volumes it pinned, its network:
 * 409 naming the one gone), and the limits of a submission for its owner
 * (limits.max_queued_per_user: it waits once more; max_gpus_per_user; a GPU job takes one of
 * gpu_requests_per_minute: 429 as a submission's). It is kept already: max_jobs_per_user and its
 * request's bytes are counted. */
int submit_check_again(const job *j, jerr *e);
/* A waiting job's request as rnx job update changed it (req; changed: the fields, by enum
 * jobreq_id bit): what the machine decides of it (CPUs, memory, GPUs that exist),
 * limits.max_gpus_per_user, and a GPU request changed takes one of the owner's
 * limits.gpu_requests_per_minute, as for a submission. */
int submit_check_change(job_req *req, uid_t owner, gid_t owner_gid, uint64_t changed, jerr *e);

/* A request with an array field (docs/batch.md): checked as a job's is (submit_check), the
 * limits counting every task, then the array made and committed: one row however many tasks.
 * The request is taken over on success; on failure it is the caller's. */
struct jarray *submit_array(job_req *req, const caller *who, jerr *e);
/* The second half, for an array whose uploads were streamed (core/incoming.c): si->staged holds
 * its files, which every task's /work is then a copy of. */
struct jarray *submit_array_create(job_req *req, uid_t caller_uid, gid_t caller_gid, const submit_info *si, jerr *e);
/* submit_array_create's first half, for a workflow's array (workflow_create commits the
 * workflow whole): the array and its uploads made, nothing committed; NULL with e set (req the
 * caller's again). submit_array_undo takes it back when the commit fails (its files too). */
struct jarray *submit_array_make(job_req *req, uid_t caller_uid, gid_t caller_gid, const submit_info *si, jerr *e);
void submit_array_undo(struct jarray *a);
/* The array's task t made as a job (QUEUED; its row written, not committed: the loop turn
 * commits), for the scheduler that starts it now: the cursor's (arrays_next) or one the pass
 * found may go ahead of it (arrays_go_take). NULL with e set when it could not be made. */
job *submit_task(struct jarray *a, uint32_t t, jerr *e);

/* Jobs promised by streamed uploads not yet complete (core/incoming.c): counted with the
 * user's waiting jobs by submit_check_limits, an array's tasks one each (submit_task_count),
 * and their requests' bytes (submit_request_bytes) with those the user keeps. jobs and bytes
 * < 0 take them back. */
void submit_promise(uid_t uid, int64_t jobs, int64_t bytes);
/* The bytes of reqs' requests (jobreq_bytes), an array's counted once for each of its tasks:
 * what they will hold for limits.max_request_bytes_per_user. */
uint64_t submit_request_bytes(job_req *const *reqs, size_t n);
/* The jobs these requests make: one each, an array's tasks one each (what the limits count). */
uint64_t submit_task_count(job_req *const *reqs, size_t n);

/* Writing uploads (both forms), beneath the work directory workfd without following any link:
 * creates a directory or a link at once, or an empty file (0600) whose fd is returned in *fd
 * (-1 otherwise). The entry becomes the listing's: written, its mode without setuid, setgid
 * and sticky bits; given to uid and gid unless uid is (uid_t)-1. */
int submit_upload_create(int workfd, jobreq_upload *u, uid_t uid, gid_t gid, int *fd, jerr *e);
/* The JSON form's entry: created as submit_upload_create does, its content_b64 decoded and
 * written (then freed), the file closed. */
int submit_upload_inline(int workfd, jobreq_upload *u, uid_t uid, gid_t gid, jerr *e);
int submit_upload_write(int fd, const jobreq_upload *u, const void *data, size_t len, jerr *e);
/* The file's bytes are all there: its mode applied, fd closed, the size written recorded. */
int submit_upload_done(int fd, jobreq_upload *u, uint64_t size, jerr *e);

#endif
