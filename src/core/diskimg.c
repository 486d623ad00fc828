/* ext4 images on loop devices (diskimg.h). */
#include "diskimg.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/statvfs.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"

/* mke2fs, as Debian's e2fsprogs installs it. */
static const char *const mke2fs_paths[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs"};

const char *diskimg_mke2fs(const char *configured)
{
    if (configured && configured[0])
        return access(configured, X_OK) == 0 ? configured : NULL;
    for (size_t i = 0; i < ARRAY_LEN(mke2fs_paths); i++)
        if (access(mke2fs_paths[i], X_OK) == 0)
            return mke2fs_paths[i];
    return NULL;
}

/* sparse: the image takes disk blocks only as the filesystem fills */
int diskimg_create(const char *image, uint64_t size_mb, jerr *e)
{
    int fd = open(image, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    int rc = fd < 0 || ftruncate(fd, (off_t)(size_mb << 20)) < 0 ? jerr_sys(e, "create the image %s", image) : 0;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* The helper (joblet re-executed, diskimg.h): mke2fs or e2fsck forked, waited for, and its wait
 * status written to fd 3. 0 is /dev/null, 1 and 2 the log, 3 the status pipe (not passed on).
 * It holds nothing else of the daemon's: no client's connection, no listening socket, not the
 * state directory's lock (a daemon killed meanwhile must be able to start again). */
void diskimg_helper_main(int argc, char **argv)
{
    static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
    if (argc < 4 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
        _exit(126);
    if (syscall(SYS_close_range, 4u, ~0u, 0) < 0)
        for (int fd = 4; fd < 65536; fd++)
            close(fd);
    pid_t me = getpid(), m = fork();
    if (m == 0) {
        /* none blocked (the helper starts so, spawn_fds; a sanitizer's fork() returns in the child
         * with every signal blocked: mke2fs ran deaf to all but SIGKILL in the sanitizer build) */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the helper killed (daemon stopping, a timeout): the tool too */
        if (getppid() != me)
            _exit(127);
        execve(argv[2], argv + 3, envp);
        _exit(127);
    }
    int st = 127 << 8;
    if (m > 0)
        while (waitpid(m, &st, 0) < 0 && errno == EINTR)
            ;
    _exit(write(3, &st, sizeof st) == (ssize_t)sizeof st ? 0 : 1);
}

enum { DISKIMG_DEVS = 8 };
typedef char diskimg_dev[32]; /* "/dev/loopN" */
static int held_by(const char *image, diskimg_dev *devs, int max);

/* The helper forks mke2fs, waits for it and writes its wait status to a pipe: the daemon reaps
 * every child in its SIGCHLD handler, so a child's own exit status cannot be relied on.
 * mke2fs's output goes to a file, which cannot fill up and block it as a pipe could. */
static pid_t start_helper(const char *path, const char *const *argv, int log_fd, int *pidfd, int *status_fd, jerr *e);

pid_t diskimg_format_start(const char *mke2fs, const char *image, uid_t root_uid, gid_t root_gid, int log_fd,
                           int *pidfd, int *status_fd, jerr *e)
{
    char opts[128];
    /* lazy_*_init: the image is new and sparse, its unwritten blocks read as zeros, so
     * nothing needs zeroing (mke2fs punches the image and marks the inode tables zeroed: no
     * background initialisation either). -m 0: no blocks reserved for root; a job never is. */
    snprintf(opts, sizeof opts, "lazy_itable_init=1,lazy_journal_init=1,root_owner=%u:%u", (unsigned)root_uid,
             (unsigned)root_gid);
    const char *argv[] = {mke2fs, "-t", "ext4", "-q", "-F", "-m", "0", "-E", opts, image, NULL};
    pid_t pid = start_helper(mke2fs, argv, log_fd, pidfd, status_fd, e);
    if (pid > 0)
        log_debug("%s %s %s (helper pid %d)", mke2fs, opts, image, (int)pid);
    return pid;
}

/* The helper (diskimg_helper_main) running path with argv: its pid, *pidfd and *status_fd.
 * joblet's own executable spawned (spawn_fds, util.h), not a clone of the daemon (a daemon
 * with 150,000 jobs kept took ~185 page faults more over a volume's creation and the next three
 * jobs, 79 + 106 against 1 + 1, besides the copy of its page tables). */
static pid_t start_helper(const char *path, const char *const *argv, int log_fd, int *pidfd, int *status_fd, jerr *e)
{
    const char *args[24];
    size_t n = 0;
    args[n++] = "joblet";
    args[n++] = DISKIMG_HELPER_ARG;
    args[n++] = path;
    for (size_t i = 0; argv[i]; i++) {
        /* (never cut short: the image is the last argument, a tool run without it is another) */
        if (n == ARRAY_LEN(args) - 1)
            return jerr_set(e, E2BIG, "start %s: more than %zu arguments for joblet's helper", path,
                            ARRAY_LEN(args) - 4);
        args[n++] = argv[i];
    }
    args[n] = NULL;
    int sp[2];
    if (pipe2(sp, O_CLOEXEC) < 0)
        return jerr_sys(e, "pipe");
    pid_t pid;
    int rc = spawn_fds("/proc/self/exe", (char *const *)args, log_fd, sp[1], &pid, pidfd), err = errno;
    close(sp[1]);
    if (rc < 0) {
        close(sp[0]);
        errno = err;
        return jerr_sys(e, "start %s (joblet's helper)", path);
    }
    *status_fd = sp[0];
    return pid;
}

static const char *const e2fsck_paths[] = {"/usr/sbin/e2fsck", "/sbin/e2fsck"};

pid_t diskimg_fsck_start(const char *image, const char *log_path, int *pidfd, int *status_fd, jerr *e)
{
    const char *fsck = NULL;
    for (size_t i = 0; i < ARRAY_LEN(e2fsck_paths) && !fsck; i++)
        if (access(e2fsck_paths[i], X_OK) == 0)
            fsck = e2fsck_paths[i];
    if (!fsck)
        return jerr_set(e, ENOENT, "no e2fsck (e2fsprogs) here to repair %s", image);
    int out = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0)
        return jerr_sys(e, "create %s", log_path);
    const char *argv[] = {fsck, "-f", "-y", image, NULL};
    pid_t pid = start_helper(fsck, argv, out, pidfd, status_fd, e);
    close(out);
    return pid;
}

int diskimg_fsck_result(int status_fd, const char *image, const char *log_path, jerr *e)
{
    int st = 0;
    ssize_t r;
    while ((r = read(status_fd, &st, sizeof st)) < 0 && errno == EINTR)
        ;
    close(status_fd);
    /* 0: clean, 1: errors corrected, 2: corrected (a reboot is asked for a mounted root only) */
    if (r == (ssize_t)sizeof st && WIFEXITED(st) && WEXITSTATUS(st) <= 2) {
        log_info("%s: e2fsck -f -y exited with status %d", image, WEXITSTATUS(st));
        return 0;
    }
    char *txt = read_file(log_path, NULL);
    for (char *q = txt; q && *q; q++)
        if (*q == '\n' || *q == '\r' || *q == '\t')
            *q = ' ';
    jerr_set(e, EIO, "e2fsck -f -y %s %s%s%.300s", image,
             r != (ssize_t)sizeof st ? "ended without a report" : WIFEXITED(st) ? "failed" : "was killed",
             txt && *txt ? ": " : "", txt ? txt : "");
    free(txt);
    return -1;
}

int diskimg_fsck(const char *image, const char *log_path, int timeout_ms, jerr *e)
{
    int pidfd = -1, status_fd = -1;
    if (diskimg_fsck_start(image, log_path, &pidfd, &status_fd, e) < 0)
        return -1;
    struct pollfd p = {.fd = status_fd, .events = POLLIN};
    int n;
    while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
        ;
    if (n == 0)
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0); /* its report then says so */
    close(pidfd);
    return diskimg_fsck_result(status_fd, image, log_path, e);
}

bool diskimg_has_errors(const char *image)
{
    /* ext4's superblock at 1024: s_state (le16) at 58, EXT2_ERROR_FS = 2; s_magic at 56 */
    unsigned char sb[60];
    int fd = open(image, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    bool bad = pread(fd, sb, sizeof sb, 1024) == (ssize_t)sizeof sb && sb[56] == 0x53 && sb[57] == 0xef &&
               (sb[58] & 2);
    close(fd);
    return bad;
}

bool diskimg_read_only(const char *mnt)
{
    struct statvfs sv;
    return statvfs(mnt, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

int diskimg_unmount_if_free(const char *image, const char *mnt, jerr *e)
{
    if (diskimg_mounted(mnt) && umount2(mnt, 0) < 0)
        return jerr_sys(e, "unmount %s", mnt);
    diskimg_dev dev[1];
    if (held_by(image, dev, 1))
        return jerr_set(e, EBUSY, "%s is still held by %s (mounted elsewhere, or not let go by the kernel yet)",
                        image, dev[0]);
    return 0;
}

int diskimg_format_result(int status_fd, const char *what, const char *log_path, jerr *e)
{
    int st = 0;
    ssize_t n;
    while ((n = read(status_fd, &st, sizeof st)) < 0 && errno == EINTR)
        ;
    close(status_fd);
    if (n == (ssize_t)sizeof st && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    char *out = read_file(log_path, NULL);
    for (char *p = out; p && *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    char how[64];
    if (n != (ssize_t)sizeof st)
        snprintf(how, sizeof how, "ended without a report (its helper was killed)");
    else if (WIFEXITED(st))
        snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(st));
    else
        snprintf(how, sizeof how, "was killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    jerr_set(e, EIO, "%s: mke2fs %s%s%.300s", what, how, out && *out ? ": " : "", out ? out : "");
    free(out);
    return -1;
}

/* A free loop device bound to the image, its fd open (mount it, then close it). With
 * LO_FLAGS_AUTOCLEAR the kernel releases the device when its last user goes: the mount, or
 * this fd when the mount fails. So no loop device outlives the image's mount. */
static int attach_loop(const char *image, char *dev, size_t devlen, jerr *e)
{
    int img = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (img < 0)
        return jerr_sys(e, "open %s", image);
    int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0) {
        close(img);
        return jerr_sys(e, "open /dev/loop-control (is the loop module loaded?)");
    }
    int lfd = -1;
    /* Another process may take the device LOOP_CTL_GET_FREE named before we configure it
     * (EBUSY): ask again, a bounded number of times. */
    for (int attempt = 0; attempt < 16 && lfd < 0; attempt++) {
        int n = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0) {
            jerr_sys(e, "no free loop device (LOOP_CTL_GET_FREE)");
            break;
        }
        snprintf(dev, devlen, "/dev/loop%d", n);
        int fd = open(dev, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            jerr_sys(e, "open %s", dev);
            break;
        }
        struct loop_config cfg = {.fd = (uint32_t)img, .info = {.lo_flags = LO_FLAGS_AUTOCLEAR}};
        snprintf((char *)cfg.info.lo_file_name, sizeof cfg.info.lo_file_name, "%s", image);
        if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
            lfd = fd;
            break;
        }
        int err = errno;
        close(fd);
        if (err != EBUSY) {
            errno = err;
            jerr_sys(e, "bind %s to %s (LOOP_CONFIGURE, Linux 5.8 or later)", image, dev);
            break;
        }
        jerr_set(e, EBUSY, "every free loop device was taken by another process first");
    }
    close(ctl);
    close(img);
    return lfd;
}

/* The loop devices that name the image as their backing file (at most max, in devs[]): one
 * holds the filesystem when it is mounted somewhere still (a job's mount namespace holds it after
 * the daemon's own mount went), and a second device over the same image would be a second ext4
 * over the same blocks: the filesystem is mounted through the first again instead. Others may be
 * on their way out (below). */
static int held_by(const char *image, diskimg_dev *devs, int max)
{
    char real[PATH_MAX];
    if (!realpath(image, real))
        return 0;
    DIR *d = opendir("/sys/block");
    if (!d)
        return 0;
    struct dirent *de;
    int n = 0;
    while (n < max && (de = readdir(d))) {
        if (strncmp(de->d_name, "loop", 4) || strlen(de->d_name) >= sizeof devs[0] - 5)
            continue;
        char path[300];
        snprintf(path, sizeof path, "/sys/block/%s/loop/backing_file", de->d_name);
        char *b = read_file(path, NULL);
        if (!b)
            continue;
        b[strcspn(b, "\n")] = 0;
        if (!strcmp(b, real))
            snprintf(devs[n++], sizeof devs[0], "/dev/%s", de->d_name);
        free(b);
    }
    closedir(d);
    return n;
}

/* Whether a loop device is held by a filesystem (or by anyone else exclusively): a mount holds
 * its device exclusively, so an exclusive open fails EBUSY. A device being torn down (its last
 * user gone: the kernel's autoclear, or a `losetup -d` deferred while udev probed it) refuses
 * opens, ENXIO: not held. */
static bool held_exclusively(const char *dev)
{
    int fd = open(dev, O_RDONLY | O_EXCL | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        close(fd);
        return false;
    }
    return errno != ENXIO && errno != ENODEV && errno != ENOENT;
}

int diskimg_mount(const char *image, const char *mnt, jerr *e)
{
    diskimg_dev devs[DISKIMG_DEVS];
    int n = held_by(image, devs, DISKIMG_DEVS);
    /* Through a device that names the image when one will take the mount. One that will not and
     * that nothing holds exclusively holds no filesystem: it is being torn down (mounting through
     * it fails EIO), or it is someone's loop device over the image that is not mounted. No second
     * ext4 over the same blocks can come of a fresh device then, and the image is attached anew.
     * A device held exclusively that will not take the mount (mounted elsewhere, yet refusing)
     * is not gone around: its error is the answer. */
    for (int i = 0; i < n; i++) {
        if (mount(devs[i], mnt, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "errors=remount-ro") == 0) {
            log_info("%s mounted on %s through %s, which already held it", image, mnt, devs[i]);
            return 0;
        }
        int err = errno;
        if (held_exclusively(devs[i])) {
            errno = err;
            return jerr_sys(e, "mount %s (%s, which already holds it) on %s", image, devs[i], mnt);
        }
        log_warn("%s: mounting it through %s, which names it, failed (%s), and nothing holds that device",
                 image, devs[i], strerror(err));
    }
    if (n == DISKIMG_DEVS) /* (more may name it, one of them mounted: no fresh device then) */
        return jerr_set(e, EBUSY, "%d loop devices or more name %s and none takes the mount: detach them "
                                  "(losetup -j %s)", DISKIMG_DEVS, image, image);
    char dev[300];
    int lfd = attach_loop(image, dev, sizeof dev, e);
    if (lfd < 0)
        return -1;
    int rc = mount(dev, mnt, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "errors=remount-ro");
    if (rc < 0)
        jerr_sys(e, "mount %s (%s) on %s", image, dev, mnt);
    close(lfd); /* the mount holds the device now; after a failure, this releases it */
    if (rc == 0)
        log_info("%s mounted on %s through %s%s", image, mnt, dev, n ? " (attached anew)" : "");
    return rc;
}

bool diskimg_mounted(const char *mnt)
{
    char parent[4200];
    snprintf(parent, sizeof parent, "%s/..", mnt);
    struct stat m, d;
    return stat(mnt, &m) == 0 && stat(parent, &d) == 0 && m.st_dev != d.st_dev;
}
