/* ext4 images on loop devices: what a filesystem volume (volumes.h) and a user's /work
 * (workfs.h) are made of. The pieces, each one system call or helper process:
 *   diskimg_mke2fs         which mke2fs to run
 *   diskimg_create         the sparse image file
 *   diskimg_format_start   mke2fs in a helper process: its pidfd and a pipe that reports
 *   diskimg_format_result  how mke2fs ended (from that pipe), as an error naming what it said
 *   diskimg_mount          a loop device for the image, and the mount on a directory
 *   diskimg_mounted        whether something is mounted on a directory */
#ifndef JOBLET_CORE_DISKIMG_H
#define JOBLET_CORE_DISKIMG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

/* configured (a path, or "" for Debian's /usr/sbin/mke2fs), when executable; else NULL */
const char *diskimg_mke2fs(const char *configured);

/* A new sparse image of size_mb (O_EXCL: an existing file is an error). */
int diskimg_create(const char *image, uint64_t size_mb, jerr *e);

/* The helper process's first argument: joblet run as `joblet __diskimg-helper TOOL ARGV...`
 * (the daemon's main hands it to diskimg_helper_main before anything else). */
#define DISKIMG_HELPER_ARG "__diskimg-helper"
/* The helper's whole life: forks TOOL with ARGV (a fixed PATH, LC_ALL=C; killed when the helper
 * is), waits for it and writes its wait status to fd 3; does not return. */
__attribute__((noreturn)) void diskimg_helper_main(int argc, char **argv);

/* Starts mke2fs on image (its root directory owned by root_uid:root_gid) in a helper process
 * whose output goes to log_fd. Returns the helper's pid and sets *pidfd and *status_fd (the
 * helper writes mke2fs's wait status there, then exits), or -1. */
pid_t diskimg_format_start(const char *mke2fs, const char *image, uid_t root_uid, gid_t root_gid, int log_fd,
                           int *pidfd, int *status_fd, jerr *e);

/* Reads the helper's report from status_fd (blocking, or what a readable fd holds) and closes
 * it: 0 when mke2fs succeeded, else -1 with an error naming what, how it ended and what it
 * wrote to log_path. */
int diskimg_format_result(int status_fd, const char *what, const char *log_path, jerr *e);

/* Binds the image to a free loop device (released by the kernel when the mount goes) and
 * mounts it on mnt as ext4, nosuid, nodev, noatime. */
int diskimg_mount(const char *image, const char *mnt, jerr *e);

/* Something is mounted on mnt (its device differs from its parent directory's). */
bool diskimg_mounted(const char *mnt);

/* ---- repair: an image whose filesystem the kernel made read-only (errors=remount-ro) after a
 * write error, e.g. when the disk under a sparse image filled ---- */
/* mnt's filesystem is mounted read-only. */
bool diskimg_read_only(const char *mnt);
/* The image's superblock says the filesystem has errors (EXT2_ERROR_FS). */
bool diskimg_has_errors(const char *image);
/* Unmounts mnt (when mounted there); -1 (EBUSY) as well when the image is still held by a loop
 * device (mounted in another namespace, or the kernel has not let the device go yet: a moment
 * later it may have): it must not be checked then. Never waits. */
int diskimg_unmount_if_free(const char *image, const char *mnt, jerr *e);
/* e2fsck -f -y on an unmounted image in a helper process, its output in log_path: its pidfd and
 * the pipe that reports how it ended (diskimg_fsck_result), as diskimg_format_start's. */
pid_t diskimg_fsck_start(const char *image, const char *log_path, int *pidfd, int *status_fd, jerr *e);
/* 0 when the filesystem is clean or was repaired, else the error naming what e2fsck said;
 * closes status_fd. */
int diskimg_fsck_result(int status_fd, const char *image, const char *log_path, jerr *e);
/* Both, waited for here (at most timeout_ms): for the daemon's start, before it serves. */
int diskimg_fsck(const char *image, const char *log_path, int timeout_ms, jerr *e);

#endif
