/* Where each job's /work lives, and its bound (jobs.work_quota).
 *
 * With a quota, the /work of every job of one owner (the user who submitted it) is a directory
 * on a filesystem of that owner's: a sparse ext4 image of jobs.work_quota bytes, made at the
 * owner's first job (tens of milliseconds, once) and mounted from then on. A job that writes
 * past what is left gets ENOSPC in /work, and nothing outside the image fills. Without a quota
 * (0), /work is a plain directory in the job's own directory on the state directory's disk.
 *
 * Either way <jobs>/<id>/work names it: the directory itself, or a symlink to the directory on
 * the owner's filesystem. Callers open, chown and bind "<job dir>/work" as before; only making
 * and removing a job directory go through here.
 *
 * The filesystems stay mounted when the daemon stops: running jobs keep using them, and a
 * daemon started again mounts each through the loop device that already holds it (diskimg.h),
 * never a second one over the same image. */
#ifndef JOBLET_CORE_WORKFS_H
#define JOBLET_CORE_WORKFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

/* Creates <state>/work and mounts the owners' filesystems that are not mounted (after a reboot,
 * or a daemon stopped cleanly); says in the log when jobs.work_quota cannot be enforced here
 * (no mke2fs, no loop devices), in which case /work is unbounded, as jobs show it. */
int workfs_init(jerr *e);

/* Makes job_dir/work for a job of owner: on the owner's filesystem (made now if it is the
 * first) or in job_dir. job_dir exists. */
int workfs_make(uid_t owner, const char *job_dir, jerr *e);

/* Removes a job directory and its work, wherever that is. */
void workfs_remove(const char *job_dir);

/* The bound on the work of job_dir's job and what its owner's jobs use of it together: 0 when
 * its /work has no bound of its own. */
int workfs_usage(const char *job_dir, uint64_t *size, uint64_t *used);

#endif
