/* Where each job's /work lives, and its bound (jobs.work_quota).
 *
 * With a quota, the /work of every job of one owner (the user who submitted it) is a directory
 * on a filesystem of that owner's: a sparse ext4 image of jobs.work_quota bytes, made at the
 * owner's first job (tens of milliseconds, once) and mounted from then on. A job that writes
 * past what is left gets ENOSPC in /work, and nothing outside the image fills. Without a quota
 * (0), /work is a plain directory in the job's own directory on the state directory's disk.
 *
 * Which of the two a job has is on disk: <jobs>/<id>/work exists, or <state>/work/<uid>/<id> is
 * its work (workfs_path). The shim binds the path its spec names (exec/spec.h: work_dir).
 *
 * When the daemon stops, the filesystem of an owner with a job still running stays mounted: the
 * job keeps using it, and a daemon started again mounts each through the loop device that
 * already holds it (diskimg.h), never a second one over the same image. The others are
 * unmounted (workfs_shutdown), their loop devices going with them; the next daemon mounts them
 * again (workfs_init). */
#ifndef JOBLET_CORE_WORKFS_H
#define JOBLET_CORE_WORKFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

/* What other sparse images on the filesystem dev may still take as they fill, in MB: the
 * filesystem volumes' (volumes_promised_mb), handed in by the daemon's start (volumes.h counts
 * this file's images in turn; neither includes the other). */
typedef uint64_t (*workfs_promised_fn)(dev_t dev);

/* Creates <state>/work and mounts the owners' filesystems that are not mounted (after a reboot);
 * says in the log when jobs.work_quota cannot be enforced here (no mke2fs, no loop devices), in
 * which case /work is unbounded, as jobs show it. A new owner's image is jobs.work_quota, or
 * less: what the state directory's disk has free less what `others` are promised there and
 * jobs.state_reserve (refused, 507, under WORKFS_MIN_MB). */
int workfs_init(workfs_promised_fn others, jerr *e);
/* The smallest /work image made: a user's first job is refused (507) where the disk cannot
 * promise this much. */
#define WORKFS_MIN_MB 16

/* Makes the /work of the job (or streamed upload) whose directory job_dir was just made, for
 * owner: on the owner's filesystem (made now if it is the owner's first) or in job_dir. Its
 * path in out. */
int workfs_make(uid_t owner, const char *job_dir, char *out, size_t len, jerr *e);

/* Whether owner's jobs can have a /work now: the owner's filesystem exists and is mounted (made
 * now if this is the owner's first job), as workfs_make needs; 507 otherwise. For a job whose
 * directory is made later (job_dirs.h), checked at its submission all the same. */
int workfs_ready(uid_t owner, jerr *e);

/* A streamed upload's directory staged became the job's, job_dir: its work follows. */
int workfs_rename(uid_t owner, const char *staged, const char *job_dir, jerr *e);

/* The path of the /work of the job whose directory is job_dir. */
void workfs_path(uid_t owner, const char *job_dir, char *out, size_t len);

/* Removes a job directory and its work, wherever that is. */
void workfs_remove(uid_t owner, const char *job_dir);
/* The same for a deleted job, over the loop's next turns when it is large (trash.h). */
void workfs_remove_later(uid_t owner, const char *job_dir);

/* The bound on the work of job_dir's job and what its owner's jobs use of it together: both 0
 * when its /work has no bound of its own. */
void workfs_usage(uid_t owner, const char *job_dir, uint64_t *size, uint64_t *used);

/* Removes the work of streamed uploads an earlier daemon did not finish: the entries whose
 * name starts with prefix on every owner's filesystem. */
void workfs_clean_stale(const char *prefix);

/* What the owners' sparse images on the filesystem dev may still take as they fill, in MB
 * (each is promised its whole size): volumes (volumes.h) count it when their images share that
 * disk, so that the two together never promise more than it has. */
uint64_t workfs_promised_mb(dev_t dev);

/* Removes each entry, on every owner's filesystem, for whose name orphan() says so (a job the
 * database does not hold: core/orphans.c); how many. */
size_t workfs_sweep(bool (*orphan)(const char *name));

/* At a clean stop: unmounts the filesystem of each owner none of whose jobs runs (has a shim);
 * how many. */
size_t workfs_shutdown(void);

#endif
