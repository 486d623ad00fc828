/* Directories of deleted jobs, removed a little at a time (trash.c). */
#ifndef JOBLET_TRASH_H
#define JOBLET_TRASH_H

#include <sys/types.h>

/* The job whose directory is job_dir (owner's) is deleted from the database: its directory and
 * its work go at the next turns of the loop, TRASH_SLICE_MS of removing per turn, so that
 * deleting 10,000 jobs does not hold the loop (issue 25). Until then they are only files: no
 * row names them, and a joblet that stops first removes them at its next start (the sweep of
 * what has no database row) or in trash_drain. */
void trash_add(uid_t owner, const char *job_dir);
/* Removes everything still queued, now (the daemon is stopping). */
void trash_drain(void);
/* How many directories wait. */
size_t trash_pending(void);

#endif
