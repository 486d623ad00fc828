/* Where each job's /work lives, and its bound (workfs.h).
 *
 * On disk, <state>/work/ (0700 root) holds
 *   <uid>.img      the owner's sparse ext4 image, jobs.work_quota bytes (or the state
 *                  directory's disk, if that is smaller)
 *   <uid>/         where it is mounted: nosuid, nodev, noatime; its root is 0711 root
 *   <uid>/<id>/    one job's work, owned by the job's uid (a streamed upload's is
 *                  <uid>/.incoming-..., renamed with the upload's job directory)
 * and no <jobs>/<id>/work: a job directory has one inode fewer on the state directory's disk. Jobs bind their own
 * directory only: inside a job, /work's mount shows the loop device and /<name>, nothing of
 * the host's paths. */
#include "workfs.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "diskimg.h"
#include "state.h"
#include "trash.h"

#define MKFS_TIMEOUT_MS 60000 /* mke2fs of a sparse image takes tens of milliseconds */

static char root[600];       /* <state>/work */
static bool enforced;        /* jobs.work_quota is set and can be enforced here */
static workfs_promised_fn others; /* the volumes' promises on a disk (workfs_init) */

static void fs_paths(uid_t owner, char *mnt, size_t mlen, char *image, size_t ilen)
{
    snprintf(mnt, mlen, "%s/%u", root, (unsigned)owner);
    snprintf(image, ilen, "%s/%u.img", root, (unsigned)owner);
}

static int check_image(const char *image, const char *mnt, jerr *e);

int workfs_init(workfs_promised_fn others_promised, jerr *e)
{
    others = others_promised;
    snprintf(root, sizeof root, "%s/work", core.cfg.state_dir);
    if (mkdir(root, 0700) < 0 && errno != EEXIST)
        return jerr_sys(e, "create %s", root);
    enforced = false;
    bool loops = access("/dev/loop-control", R_OK | W_OK) == 0;
    int why = errno;
    if (core.cfg.work_quota && !diskimg_mke2fs(core.cfg.volumes_mke2fs))
        log_warn("jobs.work_quota: no mke2fs (e2fsprogs) here: /work has no bound (jobs show none)");
    else if (core.cfg.work_quota && !loops)
        log_warn("jobs.work_quota: no loop devices here (/dev/loop-control: %s): /work has no bound (jobs show none)",
                 strerror(why));
    else
        enforced = core.cfg.work_quota > 0;
    if (!loops)
        return 0;
    /* the owners' filesystems made before: mounted again when they are not (after a reboot),
     * also when jobs.work_quota was turned off since (their jobs' work is on them) */
    DIR *d = opendir(root);
    if (!d)
        return jerr_sys(e, "open %s", root);
    struct dirent *de;
    while ((de = readdir(d))) {
        unsigned uid;
        char tail[8];
        if (sscanf(de->d_name, "%u.im%7s", &uid, tail) != 2 || strcmp(tail, "g"))
            continue;
        char mnt[700], image[700];
        fs_paths((uid_t)uid, mnt, sizeof mnt, image, sizeof image);
        jerr me = {0}, ce = {0};
        /* one the kernel found errors in (a write error made it read-only) is checked first */
        if (!diskimg_mounted(mnt) && diskimg_has_errors(image) && check_image(image, mnt, &ce) < 0)
            log_err("the /work filesystem of uid %u: %s; mounted as it is", uid, ce.msg);
        if ((mkdir(mnt, 0700) < 0 && errno != EEXIST) || (!diskimg_mounted(mnt) && diskimg_mount(image, mnt, &me) < 0))
            log_err("the /work filesystem of uid %u: %s; its jobs' work is out of reach until it mounts", uid,
                    me.msg[0] ? me.msg : strerror(errno));
    }
    closedir(d);
    return 0;
}

/* mke2fs on a new image, waited for here: it runs once per owner, in tens of milliseconds. */
static int format(const char *image, const char *mnt, jerr *e)
{
    char log_path[720];
    snprintf(log_path, sizeof log_path, "%s.mkfs.log", mnt);
    int out = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0)
        return jerr_sys(e, "create %s", log_path);
    int pidfd = -1, status_fd = -1;
    pid_t pid = diskimg_format_start(diskimg_mke2fs(core.cfg.volumes_mke2fs), image, 0, 0, out, &pidfd, &status_fd, e);
    close(out);
    if (pid < 0) {
        unlink(log_path);
        return -1;
    }
    struct pollfd p = {.fd = status_fd, .events = POLLIN};
    int n;
    while ((n = poll(&p, 1, MKFS_TIMEOUT_MS)) < 0 && errno == EINTR)
        ;
    if (n == 0)
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0); /* its report then says so */
    close(pidfd);
    int rc = diskimg_format_result(status_fd, "the /work filesystem", log_path, e);
    unlink(log_path);
    return rc;
}

/* e2fsck -f -y, for an image that had errors: waited for, as mke2fs is (rare: after a write
 * error, usually a full disk under the sparse image). */
static int check_image(const char *image, const char *mnt, jerr *e)
{
    char log_path[720];
    snprintf(log_path, sizeof log_path, "%s.fsck.log", mnt);
    int64_t t0 = mono_ns();
    int rc = diskimg_fsck(image, log_path, MKFS_TIMEOUT_MS, e);
    unlink(log_path);
    if (rc == 0)
        log_info("%s checked (e2fsck) in %.1f ms", image, (double)(mono_ns() - t0) / 1e6);
    return rc;
}

/* ---- repairs, in the background ---------------------------------------------------------
 *
 * The kernel made an owner's filesystem read-only after a write error (errors=remount-ro; a full
 * disk under its sparse image). Once no job of the owner's runs on it, it is unmounted, checked
 * (e2fsck -f -y, in a helper process the loop watches: it may take seconds on a large image, and
 * the loop serves everyone meanwhile) and mounted again. Meanwhile the owner's new jobs are
 * refused, saying why (503: try again in a moment). */

typedef struct repair_run {
    uid_t owner;
    bool owed;          /* unmounted for a check that has not yet succeeded */
    bool running;       /* e2fsck runs: w watches its report */
    watch w;
    int pidfd;
    int64_t started_ms;
    char why[300];      /* how the last check failed, "" when none did */
} repair_run;

static repair_run **repairs;
static size_t nrepairs;

static repair_run *repair_of(uid_t owner, bool make)
{
    for (size_t i = 0; i < nrepairs; i++)
        if (repairs[i]->owner == owner)
            return repairs[i];
    if (!make)
        return NULL;
    repairs = xrealloc(repairs, (nrepairs + 1) * sizeof *repairs);
    repair_run *r = xcalloc(1, sizeof *r);
    r->owner = owner;
    r->w.fd = -1;
    r->pidfd = -1;
    return repairs[nrepairs++] = r;
}

static void on_checked(watch *w, uint32_t events)
{
    (void)events;
    repair_run *r = w->data;
    char mnt[700], image[700], log_path[720];
    fs_paths(r->owner, mnt, sizeof mnt, image, sizeof image);
    snprintf(log_path, sizeof log_path, "%s.fsck.log", mnt);
    loop_del(&r->w);
    close(r->pidfd);
    r->pidfd = -1;
    r->running = false;
    jerr e = {0};
    int rc = diskimg_fsck_result(r->w.fd, image, log_path, &e);
    r->w.fd = -1;
    unlink(log_path);
    if (rc == 0 && diskimg_mount(image, mnt, &e) == 0 && chmod(mnt, 0711) == 0) {
        log_info("the /work filesystem of uid %u: checked (e2fsck) in %lld ms and mounted again", (unsigned)r->owner,
                 (long long)(now_ms() - r->started_ms));
        r->owed = false;
        r->why[0] = 0;
        return;
    }
    snprintf(r->why, sizeof r->why, "%s", e.msg[0] ? e.msg : strerror(errno));
    log_err("the /work filesystem of uid %u: %s", (unsigned)r->owner, r->why);
}

/* The owner's image, not mounted, is owed a check (unmounted for one, or its superblock records
 * errors): started now, or under way; always -1 with a 503 (or why it cannot be). */
static int start_check(uid_t owner, const char *image, const char *mnt, jerr *e)
{
    repair_run *r = repair_of(owner, true);
    r->owed = true;
    if (r->running) {
        if (now_ms() - r->started_ms > MKFS_TIMEOUT_MS) /* its report comes, and says so */
            syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0);
        return jerr_busy(e, "it is being checked (e2fsck) after the kernel made it read-only; try again in a "
                            "moment");
    }
    jerr he = {0};
    if (diskimg_unmount_if_free(image, mnt, &he) < 0)
        return jerr_busy(e, "it waits to be checked (e2fsck) after the kernel made it read-only: %s; try again "
                            "in a moment", he.msg);
    char log_path[720];
    snprintf(log_path, sizeof log_path, "%s.fsck.log", mnt);
    int status_fd = -1;
    if (diskimg_fsck_start(image, log_path, &r->pidfd, &status_fd, &he) < 0)
        return jerr_http(e, 507, "it cannot be checked: %s", he.msg);
    r->running = true;
    r->started_ms = now_ms();
    r->w = (watch){status_fd, on_checked, r};
    if (loop_add(&r->w) < 0) { /* never: the loop takes any fd */
        close(status_fd);
        r->w.fd = -1;
        r->running = false;
        return jerr_sys(e, "watch e2fsck");
    }
    log_warn("the /work filesystem of uid %u was made read-only by the kernel after a write error: checking it "
             "(e2fsck -f -y)%s%s", (unsigned)owner, r->why[0] ? "; the last check failed: " : "", r->why);
    return jerr_busy(e, "it is being checked (e2fsck) after the kernel made it read-only; try again in a "
                        "moment");
}

/* Read-only and mounted: unmounted once no job of the owner's runs, then checked. */
static int repair(uid_t owner, const char *image, const char *mnt, jerr *e)
{
    for (size_t i = 0; i < core.njobs; i++) {
        const job *j = core.jobs[i];
        if (j->owner_uid == owner && j->shim_pid > 0)
            return jerr_http(e, 507, "it was made read-only by the kernel after a write error (the state filesystem "
                                     "full?); it is checked and mounted again at the next submission once no job of "
                                     "uid %u runs (job %s still does)", (unsigned)owner, j->id);
    }
    return start_check(owner, image, mnt, e);
}

/* The size of a new owner's image: jobs.work_quota, no larger than the disk under it (a sparse
 * image that could never fill), nor than what that disk can still promise: its free space less
 * what the filesystem volumes' sparse images there may still take and jobs.state_reserve (the
 * database's). Other owners' /work images are not counted: each is bounded, their sum is not
 * (docs/hardening.md). Under WORKFS_MIN_MB, refused (507) saying so. */
static int new_image_mb(uint64_t *mb, jerr *e)
{
    struct statvfs sv;
    struct stat st;
    if (statvfs(root, &sv) < 0 || stat(root, &st) < 0)
        return jerr_sys(e, "statvfs %s", root);
    uint64_t quota = core.cfg.work_quota >> 20, disk = (uint64_t)sv.f_blocks * sv.f_frsize >> 20;
    uint64_t free_mb = (uint64_t)sv.f_bavail * sv.f_frsize >> 20, volumes = others ? others(st.st_dev) : 0;
    uint64_t reserve = core.cfg.state_reserve >> 20, kept = volumes + reserve;
    uint64_t room = free_mb > kept ? free_mb - kept : 0;
    *mb = quota < disk ? quota : disk;
    if (*mb < WORKFS_MIN_MB)
        *mb = WORKFS_MIN_MB; /* (before the room is compared: it was raised after, past what it promised) */
    if (room < *mb) {
        if (room < WORKFS_MIN_MB) {
            return jerr_http(e, 507, "the disk under %s can promise no new /work image (%d MB at least): %llu MB "
                                     "free, of which %llu MB are promised to the filesystem volumes' sparse images "
                                     "there and %llu MB kept for joblet's database (jobs.state_reserve); a volume "
                                     "removed (rnx volume remove NAME) makes room",
                             root, WORKFS_MIN_MB, (unsigned long long)free_mb, (unsigned long long)volumes,
                             (unsigned long long)reserve);
        }
        log_warn("a new /work filesystem: %llu MB, not the %llu of jobs.work_quota: what the disk under %s can promise "
                 "(%llu MB free, %llu promised to filesystem volumes, %llu kept by jobs.state_reserve)",
                 (unsigned long long)room, (unsigned long long)*mb, root, (unsigned long long)free_mb,
                 (unsigned long long)volumes, (unsigned long long)reserve);
        *mb = room;
    }
    return 0;
}

/* The owner's filesystem, mounted on mnt: made now if it is the first of the owner's jobs. */
static int owner_fs(uid_t owner, char *mnt, size_t mlen, jerr *e)
{
    char image[700];
    fs_paths(owner, mnt, mlen, image, sizeof image);
    if (diskimg_mounted(mnt))
        return diskimg_read_only(mnt) ? repair(owner, image, mnt, e) : 0;
    if (mkdir(mnt, 0700) < 0 && errno != EEXIST)
        return jerr_sys(e, "create %s", mnt);
    repair_run *r = repair_of(owner, false);
    if (r && (r->owed || r->running))
        return start_check(owner, image, mnt, e);
    if (access(image, F_OK) == 0 && diskimg_has_errors(image))
        return start_check(owner, image, mnt, e);
    if (access(image, F_OK) < 0) {
        uint64_t mb = 0;
        if (new_image_mb(&mb, e) < 0)
            return -1;
        /* made and formatted under another name, then renamed: an image cut short (the machine
         * down during mke2fs) is never taken for one that mounts, which locked its owner out */
        char fresh[720];
        snprintf(fresh, sizeof fresh, "%s.new", image);
        int64_t t0 = mono_ns();
        unlink(fresh);
        if (diskimg_create(fresh, mb, e) < 0)
            return -1;
        if (format(fresh, mnt, e) < 0 || (rename(fresh, image) < 0 && jerr_sys(e, "rename %s", fresh) < 0)) {
            unlink(fresh);
            return -1;
        }
        log_info("the /work filesystem of uid %u: %llu MB, made in %.1f ms", (unsigned)owner, (unsigned long long)mb,
                 (double)(mono_ns() - t0) / 1e6);
    }
    if (diskimg_mount(image, mnt, e) < 0) {
        if (e->code == EINVAL || e->code == EUCLEAN) { /* the kernel took no filesystem from it */
            char msg[sizeof e->msg];
            snprintf(msg, sizeof msg, "%s", e->msg);
            int code = e->code;
            jerr_http(e, 500, "%s: the image holds no filesystem that mounts (damaged?): an admin checks it "
                              "(e2fsck -f %s), or removes it, and the owner's next job makes a new, empty one",
                      msg, image);
            e->code = code;
            log_err("the /work filesystem of uid %u: %s", (unsigned)owner, e->msg);
        }
        return -1;
    }
    /* jobs reach their own directory only, through the path the daemon binds */
    if (chmod(mnt, 0711) < 0)
        return jerr_sys(e, "chmod %s", mnt);
    return 0;
}

/* owner_fs's refusal, named: 503 (being checked) and 500 (an image that does not mount: the
 * machine's fault) as they are, else 507 (what lacks is room: it was 507 for all but 503). */
static int owner_fs_refusal(uid_t owner, jerr *e)
{
    char msg[sizeof e->msg];
    snprintf(msg, sizeof msg, "%s", e->msg);
    return jerr_http(e, e->http == 503 || e->http == 500 ? e->http : 507,
                     "the /work filesystem of uid %u (jobs.work_quota): %s", (unsigned)owner, msg);
}

/* The last component of a job directory: the job's ID, or a streamed upload's name */
static const char *base_of(const char *job_dir)
{
    const char *slash = strrchr(job_dir, '/');
    return slash ? slash + 1 : job_dir;
}

int workfs_make(uid_t owner, const char *job_dir, char *out, size_t len, jerr *e)
{
    if (!enforced) {
        snprintf(out, len, "%s/work", job_dir);
        return mkdir(out, 0755) < 0 ? jerr_sys(e, "create %s", out) : 0;
    }
    char mnt[700];
    if (owner_fs(owner, mnt, sizeof mnt, e) < 0)
        return owner_fs_refusal(owner, e);
    snprintf(out, len, "%s/%s", mnt, base_of(job_dir));
    return mkdir(out, 0755) < 0 ? jerr_sys(e, "create %s", out) : 0;
}

int workfs_ready(uid_t owner, jerr *e)
{
    char mnt[700];
    if (!enforced || owner_fs(owner, mnt, sizeof mnt, e) == 0)
        return 0;
    return owner_fs_refusal(owner, e);
}

void workfs_path(uid_t owner, const char *job_dir, char *out, size_t len)
{
    struct stat st;
    snprintf(out, len, "%s/work", job_dir);
    if (lstat(out, &st) < 0 && errno == ENOENT)
        snprintf(out, len, "%s/%u/%s", root, (unsigned)owner, base_of(job_dir));
}

int workfs_rename(uid_t owner, const char *staged, const char *job_dir, jerr *e)
{
    char from[800], to[800];
    workfs_path(owner, job_dir, to, sizeof to); /* the staged work went along when inside */
    if (!strncmp(to, job_dir, strlen(job_dir)))
        return 0;
    snprintf(from, sizeof from, "%s/%u/%s", root, (unsigned)owner, base_of(staged));
    return rename(from, to) < 0 ? jerr_sys(e, "rename %s to %s", from, to) : 0;
}

/* The work of job_dir's job when it lies on an owner's filesystem. */
static bool on_owner_fs(uid_t owner, const char *job_dir, char *out, size_t len)
{
    workfs_path(owner, job_dir, out, len);
    return !strncmp(out, root, strlen(root)) && out[strlen(root)] == '/';
}

void workfs_remove(uid_t owner, const char *job_dir)
{
    char work[800];
    if (on_owner_fs(owner, job_dir, work, sizeof work) && rm_rf(work) < 0 && errno != ENOENT)
        log_warn("job directory %s: its work %s is not removed: %s", job_dir, work, strerror(errno));
    rm_rf(job_dir);
}

void workfs_remove_later(uid_t owner, const char *job_dir)
{
    char work[800];
    if (on_owner_fs(owner, job_dir, work, sizeof work))
        trash_remove(work);
    trash_remove(job_dir);
}

void workfs_usage(uid_t owner, const char *job_dir, uint64_t *size, uint64_t *used)
{
    char work[800];
    struct statvfs sv;
    *size = *used = 0;
    if (!on_owner_fs(owner, job_dir, work, sizeof work) || statvfs(work, &sv) < 0)
        return;
    *size = (uint64_t)sv.f_blocks * sv.f_frsize;
    *used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

uint64_t workfs_promised_mb(dev_t dev)
{
    DIR *d = opendir(root);
    if (!d)
        return 0;
    uint64_t promised = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        unsigned uid;
        char tail[8];
        struct stat st;
        if (sscanf(de->d_name, "%u.im%7s", &uid, tail) != 2 || strcmp(tail, "g") ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) || st.st_dev != dev)
            continue;
        uint64_t size = (uint64_t)st.st_size, have = (uint64_t)st.st_blocks * 512;
        promised += size > have ? (size - have) >> 20 : 0;
    }
    closedir(d);
    return promised;
}

/* Calls fn for each owner's mount point under <state>/work ("<state>/work/<uid>"); the sum of
 * what it returns. */
static size_t each_owner_mnt(size_t (*fn)(uid_t owner, const char *mnt, void *arg), void *arg)
{
    DIR *d = root[0] ? opendir(root) : NULL;
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        unsigned uid;
        char tail[2], mnt[700];
        if (sscanf(de->d_name, "%u%1s", &uid, tail) != 1)
            continue;
        snprintf(mnt, sizeof mnt, "%s/%s", root, de->d_name);
        n += fn((uid_t)uid, mnt, arg);
    }
    closedir(d);
    return n;
}

/* What is removed from each owner's filesystem: the work of jobs the database does not hold
 * (orphan), or of uploads an earlier joblet did not finish (names starting with prefix). */
typedef struct removal {
    bool (*orphan)(const char *name);
    const char *prefix;
} removal;

static size_t remove_matching(uid_t owner, const char *mnt, void *arg)
{
    const removal *r = arg;
    (void)owner;
    DIR *m = diskimg_mounted(mnt) ? opendir(mnt) : NULL;
    if (!m)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(m))) {
        if (r->orphan ? !r->orphan(e->d_name) : strncmp(e->d_name, r->prefix, strlen(r->prefix)))
            continue;
        char path[1000];
        snprintf(path, sizeof path, "%s/%s", mnt, e->d_name);
        if (!r->orphan)
            log_info("removing %s, the work of an upload an earlier joblet did not finish", path);
        if (rm_rf(path) < 0 && r->orphan)
            log_warn("the work %s of a job the database does not hold: not removed: %s", path, strerror(errno));
        else
            n++;
    }
    closedir(m);
    return n;
}

size_t workfs_sweep(bool (*orphan)(const char *name))
{
    removal r = {.orphan = orphan};
    return each_owner_mnt(remove_matching, &r);
}

void workfs_clean_stale(const char *prefix)
{
    removal r = {.prefix = prefix};
    each_owner_mnt(remove_matching, &r);
}

/* Whether a job of owner's runs: its /work (a bind of a directory on the owner's filesystem,
 * in the job's mount namespace) holds the filesystem and its loop device anyway. */
static bool owner_runs(uid_t owner)
{
    for (size_t i = 0; i < core.njobs; i++)
        if (core.jobs[i]->owner_uid == owner && core.jobs[i]->shim_pid > 0)
            return true;
    return false;
}

static size_t unmount_idle(uid_t owner, const char *mnt, void *arg)
{
    (void)arg;
    if (!diskimg_mounted(mnt) || owner_runs(owner))
        return 0;
    /* busy (an open file of the daemon's, a helper's directory): detached, and the loop
     * device goes with its last user; the next daemon mounts the image through it meanwhile */
    if (umount2(mnt, UMOUNT_NOFOLLOW) < 0 && (errno != EBUSY || umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)) {
        log_warn("the /work filesystem of uid %u stays mounted on %s: %s", (unsigned)owner, mnt, strerror(errno));
        return 0;
    }
    return 1;
}

size_t workfs_shutdown(void)
{
    size_t n = each_owner_mnt(unmount_idle, NULL);
    if (n)
        log_info("unmounted the /work filesystems of %zu users with no running job", n);
    return n;
}
