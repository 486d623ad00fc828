/* An array task's /work, made from its array's files by the task's shim before the job starts
 * (docs/batch.md, "Files sent with an array"): the array's files are sent and written once, into
 * the array's own directory; each task's /work is a copy of that tree, its own to change. The
 * copy is the shim's, a process of the task, not joblet's: joblet's loop made it before, and a
 * user's array of large files held every other request for the time of a copy per task made.
 *
 * The tree is walked without following any link on either side (a symlink is copied as one),
 * directories, regular files and symlinks only, each made the job's uid's (the tree's own are
 * root's) with the permission bits it has; a file there already (a run cut short in the middle
 * of the copy, started again) is replaced, never written through. */
#ifndef JOBLET_EXEC_WORKCOPY_H
#define JOBLET_EXEC_WORKCOPY_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

/* Levels of directories copied at most: an upload's path is at most 1,024 bytes ("a/a/..."). */
#define WORKCOPY_DEPTH 512
/* Bytes copied between two looks at a stop asked for. */
#define WORKCOPY_SLICE (64 << 20)

typedef struct workcopy_stats {
    uint64_t files, bytes;
} workcopy_stats;

/* Copies the tree under from into the directory to, whose entries become uid's and gid's. A
 * signal of stop (may be NULL) pending ends it between two slices (ECANCELED: a stop or kill of
 * the job, heard at once, not after a copy of gigabytes). 0, or -1 with e naming the entry and
 * what failed (ENOSPC: the owner's /work is full); what was copied stays. */
int workcopy_tree(const char *from, const char *to, uid_t uid, gid_t gid, const sigset_t *stop, workcopy_stats *st,
                  jerr *e);

#endif
