/* Copies out of a job and into it (rnx job cp, docs/api.md "Copying files"): one joblet-copy
 * helper per copy (exec/copy_main.c), which reads or writes the job's files in the job's own
 * root, as the job's user, and moves them as a tar stream through a pipe. The daemon only
 * passes the bytes on (api/jobs_cp.c): a copy of any size holds a pipe's worth of it.
 *
 * Where the files are read:
 *   - a running job (not gVisor): anywhere in its root, /tmp included, as the job sees it
 *     (the helper enters the job's mount namespace);
 *   - a job that ended, or a gVisor job: its /work only (the helper is chrooted into it), the
 *     rest of its root having gone with it (or living inside gVisor's sandbox).
 * A copy takes one of the transfers' places (transfers.h); it ends when its request does (the
 * daemon's stop ends every request). */
#ifndef JOBLET_CORE_JOBCP_H
#define JOBLET_CORE_JOBCP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "authz.h"
#include "job.h"

enum job_cp_kind {
    JOB_CP_STAT,               /* what is at path (a symlink followed when it leads somewhere) */
    JOB_CP_OUT,                /* path as a tar, its top entry named after path's last component */
    JOB_CP_OUT_FOLLOW,         /* the same, a symlink at path followed (rnx job cp -L) */
    JOB_CP_IN,                 /* a tar into the directory path (which must exist) */
};

typedef struct jobcp jobcp;

/* What the helper found: path's type ("file", "dir", "symlink", "other"), the bytes of the files
 * the copy moves, how many entries, path's permission bits; the top entry's name (out). */
typedef struct job_cp_info {
    char type[12];
    uint64_t bytes, entries;
    unsigned mode;
    char name[256];
    char path[4096];          /* path as it was checked (made absolute and clean) */
} job_cp_info;

/* Called when the helper said something or ended (on the loop). */
typedef void (*job_cp_fn)(void *arg);

/* Starts a copy in job j (which who may see: jobs_find) for who. The path must be
 * absolute; it is cleaned ("." and ".." taken out as the job's root would). Refusals: 400 a
 * path that is not absolute or too long, 409 a job not started or a path outside /work once
 * there is only its /work, 429/503 no transfer's place left, 500 the helper could not start. */
jobcp *job_cp_start(job *j, enum job_cp_kind kind, const char *path, const caller *who, jerr *e);
/* Who to call when the helper says something or ends; replaces the one before (NULL: none). */
void job_cp_on_change(jobcp *c, job_cp_fn fn, void *arg);
/* The helper's first word: 0 not yet, 1 it may go on (info filled), -1 refused (e says why,
 * with its HTTP status: 404 no such path, 403 the job's user may not, 409 not a directory ...). */
int job_cp_report(jobcp *c, job_cp_info *info, jerr *e);
/* The data's end of the pipe (non-blocking): OUT reads the tar from it, IN writes the tar into
 * it. It stays c's: closed by job_cp_free (or job_cp_end_input). */
int job_cp_fd(const jobcp *c);
/* IN: the whole tar was written; the helper sees its end. */
void job_cp_end_input(jobcp *c);
/* How the copy ended (its helper's last word heard, and its end seen): 0 not yet, 1 whole (IN: info's bytes and entries are what was written),
 * -1 not (e says why). */
int job_cp_result(jobcp *c, job_cp_info *info, jerr *e);
/* Ends the copy: a helper still at work is killed (what it wrote into the job stays). Its job
 * counts it (job.h, copies: not deleted) from its start until the helper is seen to end, after
 * this too. */
void job_cp_free(jobcp *c);
/* At joblet's stop, once no copy is left: what is kept of helpers killed and not yet seen to end. */
void job_cp_shutdown(void);

#endif
