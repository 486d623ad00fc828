/* Job directories made ahead of need, a slice per loop turn (job_dirs.c). */
#ifndef JOBLET_JOB_DIRS_H
#define JOBLET_JOB_DIRS_H

#include "../common/err.h"
#include "job.h"

/* The job (just submitted, with nothing uploaded) gets its directory and its /work at the next
 * turns of the loop rather than now: a workflow of 1,000 jobs spent 0.45 s of the loop in
 * mkdir alone (the filesystem's inode allocation), now a slice of JOB_DIRS_SLICE_MS a turn. */
void job_dirs_defer(job *j);
/* The job's directory and /work exist when this returns 0 (made now if they were still to come,
 * or if a joblet stopped before making them): before a launch, before a log is read. */
int job_dirs_ensure(job *j, jerr *e);
/* A job loaded at start that has not run yet: its directory is checked again before its launch,
 * as an earlier joblet may have been killed between making it and making its /work. */
void job_dirs_recheck(job *j);

#endif
