/* An MPS server's pipe directory on a memory file system of its own (mpsdir.h). */
#include "mpsdir.h"

#include <errno.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>

bool mpsdir_mounted(const char *dir)
{
    char parent[4200];
    struct stat here, up;
    snprintf(parent, sizeof parent, "%s/..", dir);
    /* lstat: dir itself is never followed (its parent is root's, so no tenant put a link
     * there; this only keeps a link, should one be there, from naming another mount) */
    return lstat(dir, &here) == 0 && S_ISDIR(here.st_mode) && stat(parent, &up) == 0 && here.st_dev != up.st_dev;
}

/* Mounts stacked on one another by earlier daemons killed between a mount and its unmount: at
 * most this many are looked for (each start unmounts first, so more than one is rare). */
#define MPSDIR_STACK_MAX 16

int mpsdir_unmount(const char *dir, jerr *e)
{
    for (int n = 0; mpsdir_mounted(dir); n++) {
        if (n == MPSDIR_STACK_MAX)
            return jerr_set(e, EBUSY, "%s: still mounted after %d unmounts", dir, n);
        /* UMOUNT_NOFOLLOW: dir is a path of the state directory, never a link to elsewhere */
        if (umount2(dir, UMOUNT_NOFOLLOW) < 0 && (errno != EBUSY || umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0))
            return jerr_sys(e, "unmount %s", dir);
    }
    return 0;
}

int mpsdir_mount(const char *dir, jerr *e)
{
    if (mpsdir_unmount(dir, e) < 0)
        return -1;
    char opts[128];
    snprintf(opts, sizeof opts, "mode=1777,size=%s,nr_inodes=%d", MPSDIR_SIZE, MPSDIR_INODES);
    /* nosuid, nodev, noexec: pipes and sockets only, nothing to run or open as a device */
    if (mount("joblet-mps", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
        return jerr_sys(e, "mount a tmpfs (%s) on %s", opts, dir);
    return 0;
}
