/* Deleted jobs' trees removed a slice per loop turn (trash.c). */
#ifndef JOBLET_TRASH_H
#define JOBLET_TRASH_H

/* The tree at path (a deleted job's directory, or its /work on its owner's filesystem) goes with
 * what is left of this turn's slice (TRASH_SLICE_MS, shared by the turn's removals: a small tree
 * is gone before the answer), the rest a slice per turn of the loop after it: a job whose
 * /work held 40,000 entries (its upload listing, or what it made) held the loop 1.6 s of CPU in
 * its DELETE. What a stopping joblet leaves is a directory named by a job the database no longer
 * holds, which the next start's orphan sweep removes (orphans.c). */
void trash_remove(const char *path);

#endif
