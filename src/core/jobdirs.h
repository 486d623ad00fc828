/* Job directories made ahead of need, a slice per loop turn (jobdirs.c). */
#ifndef JOBLET_JOBDIRS_H
#define JOBLET_JOBDIRS_H

#include "../common/err.h"
#include "job.h"

/* The job (just submitted, with nothing uploaded) gets its directory and its /work at the next
 * turns of the loop rather than now: a workflow of 1,000 jobs spent 0.45 s of the loop in
 * mkdir alone (the filesystem's inode allocation), now a slice of JOBDIRS_SLICE_MS a turn. */
void jobdirs_defer(job *j);
/* The job's directory and /work exist when this returns 0 (made now if they were still to come,
 * or if a joblet stopped before making them): before a launch, before a log is read. */
int jobdirs_ensure(job *j, jerr *e);

#endif
