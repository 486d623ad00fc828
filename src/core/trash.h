/* Deleted jobs' trees removed off the loop (trash.c). */
#ifndef JOBLET_TRASH_H
#define JOBLET_TRASH_H

/* The tree at path (a deleted job's directory, or its /work on its owner's filesystem): its first
 * entries go now (a small tree is gone before the answer), the rest on a thread of its own: a job
 * whose /work held 40,000 entries (its upload listing, or what it made) held the loop 1.6 s of CPU
 * in its DELETE, and sliced across turns, 30-130 ms in the one turn that removed the directory.
 * What a stopping joblet leaves is a directory named by a job the database no longer holds, which
 * the next start's orphan sweep removes (orphans.c). Loop thread. */
void trash_remove(const char *path);

#endif
