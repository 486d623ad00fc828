/* Volumes (volumes.h).
 *
 * On disk, <volumes.dir>/<name>/ holds
 *   .joblet-volume   made first: marks the directory as joblet's (only such are ever removed)
 *   image            filesystem: the sparse ext4 image, as large as the volume
 *   mnt/             where the volume is mounted on the host; jobs bind it at /volumes/<name>
 *   mkfs.log         while the image is formatted: what mke2fs says
 * volumes.dir is 0700 root: the host's users cannot reach into a volume, only the jobs that
 * mount it can.
 *
 * Creating a volume is a plan of steps (create_steps), run in order; the one that takes time,
 * mke2fs, runs in a helper process whose pidfd the loop watches, and the steps after it run
 * when it exits. The request that asked waits, parked (api/park.h). A failed step undoes the
 * ones before it: a volume is either in the database and mounted, or gone.
 *
 * Who writes in a volume: a job runs as its submitter's uid, and each of root's jobs as a uid
 * of its own (jobs.uid_range_start), so the volume's root directory is mode 0777 with a default
 * ACL of rwx for all: what one job creates in it (files 0666, directories 0777, whatever the
 * job's umask) the next job that mounts the volume may change, whatever its uid. Who may mount
 * it (its owner, root, admins) is the access control; the files keep the uid that wrote them. */
#include "volumes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "arrays.h"
#include "authz.h"
#include "diskimg.h"
#include "state.h"
#include "statedisk.h"
#include "workfs.h"

/* The two types. min_mb, max_mb: the sizes a request may ask for; the machine bounds them
 * further (check_room: the disk under volumes.dir, the memory). */
static const struct volume_kind {
    const char *name;
    uint64_t min_mb, max_mb;
    const char *note;        /* its lifetime, as rnx volume list says it */
} kinds[VOLUME_TYPE_N] = {
    /* ext4 keeps a journal (1 MB at 16 MB, 4 MB at 64 MB, 32 MB at 1 GB) and inode tables:
     * below 16 MB little would be left for files. The largest file the host's ext4 holds
     * (the image) is 16 TB with 4 KB blocks: 15 TB keeps clear of it. */
    [VOLUME_FILESYSTEM] = {"filesystem", 16, 15ull << 20, "kept until removed; survives restarts and reboots"},
    /* a tmpfs: its pages are memory, charged to the job that writes them */
    [VOLUME_MEMORY] = {"memory", 1, 1ull << 20, "memory: gone when the last job using it ends, and on reboot"},
};

static const char *const state_names[] = {"creating", "ready", "unavailable"};

#define VOLUMES_MAX 256     /* in all: each filesystem volume holds a loop device */
#define CREATING_MAX 8      /* images being formatted at once */
#define WAITERS_MAX 16      /* requests waiting for one volume's creation */
#define MARK ".joblet-volume"

/* A refusal on a field whose HTTP status is not 400: a conflict, a permission. */
__attribute__((format(printf, 4, 5))) static int refuse(jerr *e, int http, const char *field, const char *fmt, ...)
{
    char msg[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jerr_http(e, http, "%s", msg);
    snprintf(e->field, sizeof e->field, "%s", field);
    return -1;
}

typedef struct volume_run {
    watch w;                 /* pidfd of the helper that runs mke2fs */
    pid_t pid;
    int status_fd;           /* the helper writes mke2fs's wait status here, then exits */
    size_t next;             /* the creation step to go on with (create_steps) */
    struct {
        volumes_done_fn fn;
        void *arg;
    } waiters[WAITERS_MAX];
    size_t nwaiters;
} volume_run;

static char vdir[600];       /* volumes.dir */
static volume **vols;        /* sorted by name */
static size_t nvols;
static size_t ncreating;

const char *volumes_type_name(enum volume_type t) { return kinds[t].name; }
const char *volumes_type_note(enum volume_type t) { return kinds[t].note; }
const char *volumes_state_name(enum volume_state s) { return state_names[s]; }

int volumes_type_parse(const char *s, enum volume_type *t)
{
    for (int i = 0; s && i < VOLUME_TYPE_N; i++)
        if (!strcmp(s, kinds[i].name)) {
            *t = (enum volume_type)i;
            return 0;
        }
    return -1;
}

/* "512 MB", "64 GB", "2 TB": whole units, as rnx's --size reads them back. */
static const char *mb_text(uint64_t mb, char *out, size_t len)
{
    if (mb >= (1u << 20) && mb % (1u << 20) == 0)
        snprintf(out, len, "%llu TB", (unsigned long long)(mb >> 20));
    else if (mb >= 1024 && mb % 1024 == 0)
        snprintf(out, len, "%llu GB", (unsigned long long)(mb >> 10));
    else
        snprintf(out, len, "%llu MB", (unsigned long long)mb);
    return out;
}

size_t volumes_count(void) { return nvols; }
const volume *volumes_at(size_t i) { return i < nvols ? vols[i] : NULL; }

static volume *find(const char *name)
{
    for (size_t i = 0; name && i < nvols; i++)
        if (!strcmp(vols[i]->name, name))
            return vols[i];
    return NULL;
}

const volume *volumes_find(const char *name) { return find(name); }

bool volumes_allowed(const volume *v, const caller *who) { return authz_may_on(who, AUTHZ_OTHERS_VOLUMES, v->owner_uid); }

/* A job's use of a volume: its owner's account's rights (the job runs as that account). */
static bool owner_may_use(const volume *v, uid_t owner, gid_t gid)
{
    caller who = authz_local(owner, gid);
    return volumes_allowed(v, &who);
}

static volume *add(const char *name, enum volume_type type, uint64_t size_mb, uid_t uid, gid_t gid, int64_t created)
{
    volume *v = xcalloc(1, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->type = type;
    v->size_mb = size_mb;
    v->owner_uid = uid;
    v->owner_gid = gid;
    v->created_ms = created;
    snprintf(v->dir, sizeof v->dir, "%s/%s", vdir, name);
    snprintf(v->mnt, sizeof v->mnt, "%s/mnt", v->dir);
    size_t at = 0;
    while (at < nvols && strcmp(vols[at]->name, name) < 0)
        at++;
    vols = xrealloc(vols, (nvols + 1) * sizeof *vols);
    memmove(vols + at + 1, vols + at, (nvols - at) * sizeof *vols);
    vols[at] = v;
    nvols++;
    return v;
}

static void drop(volume *v)
{
    for (size_t i = 0; i < nvols; i++)
        if (vols[i] == v) {
            memmove(vols + i, vols + i + 1, (nvols - i - 1) * sizeof *vols);
            nvols--;
            break;
        }
    free(v);
}

/* ---- the mounts ----------------------------------------------------------------------- */

/* Something is mounted on the volume's mnt (its device differs from its directory's). */
static bool mounted(const volume *v) { return diskimg_mounted(v->mnt); }

static int mount_image(volume *v, jerr *e)
{
    char image[760];
    snprintf(image, sizeof image, "%s/image", v->dir);
    return diskimg_mount(image, v->mnt, e);
}

static int mount_tmpfs(volume *v, jerr *e)
{
    /* inodes bounded like ext4's (one per 16 KB): their kernel memory is not in size= */
    uint64_t inodes = (v->size_mb << 20) / 16384;
    char opts[160];
    snprintf(opts, sizeof opts, "size=%llum,nr_inodes=%llu,mode=0777,uid=%u,gid=%u", (unsigned long long)v->size_mb,
             (unsigned long long)(inodes < 1024 ? 1024 : inodes), (unsigned)v->owner_uid, (unsigned)v->owner_gid);
    if (mount("joblet-volume", v->mnt, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
        return jerr_sys(e, "mount a tmpfs (%s) on %s", opts, v->mnt);
    return 0;
}

/* Unmounts the volume; a mount a process on the host still uses is detached (it and its loop
 * device go when that process lets go). Checked: nothing is mounted there after. */
static int unmount(volume *v, jerr *e)
{
    for (int i = 0; i < 4 && mounted(v); i++)
        if (umount2(v->mnt, UMOUNT_NOFOLLOW) < 0) {
            if (errno != EBUSY || umount2(v->mnt, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                return jerr_sys(e, "unmount volume %s (%s)", v->name, v->mnt);
            log_warn("volume %s: %s is busy on the host; detached: it goes when the last process using it lets go",
                     v->name, v->mnt);
        }
    if (mounted(v))
        return jerr_set(e, EBUSY, "volume %s: %s is still mounted", v->name, v->mnt);
    return 0;
}

/* The root directory: owned by the owner, 0777, and a default ACL of rwx for user, group and
 * other (the header's comment says why), written as the kernel's xattr format
 * (linux/posix_acl_xattr.h): a version, then {tag, perm, id} entries sorted by tag. */
static int set_root_access(volume *v, jerr *e)
{
    if (chown(v->mnt, v->owner_uid, v->owner_gid) < 0 || chmod(v->mnt, 0777) < 0)
        return jerr_sys(e, "volume %s: set the owner and mode of its root directory", v->name);
    struct {
        uint32_t version;
        struct {
            uint16_t tag, perm;
            uint32_t id;
        } entry[3];
    } acl = {2, {{0x01 /* ACL_USER_OBJ */, 7, (uint32_t)-1},
                 {0x04 /* ACL_GROUP_OBJ */, 7, (uint32_t)-1},
                 {0x20 /* ACL_OTHER */, 7, (uint32_t)-1}}};
    if (setxattr(v->mnt, "system.posix_acl_default", &acl, sizeof acl, 0) < 0) {
        if (errno != EOPNOTSUPP)
            return jerr_sys(e, "volume %s: set the default ACL of its root directory", v->name);
        log_warn("volume %s: no POSIX ACLs here; what one job creates follows that job's umask", v->name);
    }
    return 0;
}

/* ---- creating ------------------------------------------------------------------------- */

static void notify(volume_run *r, const jerr *e)
{
    for (size_t i = 0; i < r->nwaiters; i++)
        r->waiters[i].fn(r->waiters[i].arg, e);
    r->nwaiters = 0;
}

/* Undoes a creation that failed at any step: nothing of it stays (a directory without the
 * mark was not made by joblet and is left alone). */
static void undo(volume *v)
{
    jerr ue = {0};
    char mark[760];
    snprintf(mark, sizeof mark, "%s/" MARK, v->dir);
    if (mounted(v) && unmount(v, &ue) < 0)
        log_err("volume %s: %s; its directory %s is left", v->name, ue.msg, v->dir);
    else if (access(mark, F_OK) == 0)
        rm_rf(v->dir);
    drop(v);
}

/* ---- the steps of a creation ---------------------------------------------------------- */

static int step_dir(volume *v, jerr *e)
{
    char mark[760];
    snprintf(mark, sizeof mark, "%s/" MARK, v->dir);
    if (mkdir(v->dir, 0700) < 0)
        return jerr_sys(e, "create %s", v->dir);
    return write_file_atomic(mark, "", 0, 0600, e);
}

static int step_mount_point(volume *v, jerr *e)
{
    return mkdir(v->mnt, 0700) < 0 ? jerr_sys(e, "create %s", v->mnt) : 0;
}

static int step_image(volume *v, jerr *e)
{
    char image[760];
    snprintf(image, sizeof image, "%s/image", v->dir);
    return diskimg_create(image, v->size_mb, e);
}

static int start_mkfs(volume *v, jerr *e);

/* The mke2fs to run: volumes.mke2fs, or Debian's; NULL when it is not executable. */
static const char *mke2fs_path(void) { return diskimg_mke2fs(core.cfg.volumes_mke2fs); }

static int step_mount(volume *v, jerr *e)
{
    int64_t t0 = mono_ns();
    if ((v->type == VOLUME_FILESYSTEM ? mount_image(v, e) : mount_tmpfs(v, e)) < 0)
        return -1;
    log_debug("volume %s: mounted in %.2f ms (on the event loop)", v->name, (double)(mono_ns() - t0) / 1e6);
    return 0;
}

static int step_row(volume *v, jerr *e)
{
    char log_path[760];
    snprintf(log_path, sizeof log_path, "%s/mkfs.log", v->dir);
    unlink(log_path);
    db_volume row = {v->name, kinds[v->type].name, (int64_t)v->size_mb, v->owner_uid, v->owner_gid, v->created_ms};
    return db_volume_insert(core.db, &row, e) < 0 ? db_busy_refusal(e, "created") : 0;
}

/* Committed before the volume is answered for: a failed commit undoes the volume (run_steps),
 * so that no answer says created what a restart would not find. */
static int step_commit(volume *v, jerr *e)
{
    if (state_commit_now(e) == 0)
        return 0;
    char msg[sizeof e->msg];
    snprintf(msg, sizeof msg, "%s", e->msg);
    return jerr_http(e, e->http, "volume '%s' was not created: %s", v->name, msg);
}

#define FS (1u << VOLUME_FILESYSTEM)
#define MEM (1u << VOLUME_MEMORY)
/* Creating a volume: the plan, run in order for the steps of its type. A step marked async
 * starts work the loop finishes later (mke2fs, in a helper): the steps after it run when that
 * is done (on_mkfs_exit). Any failure undoes the whole (undo): a volume is either in the
 * database and mounted, or gone. */
static const struct create_step {
    const char *what;                      /* for the debug log */
    int (*run)(volume *v, jerr *e);
    unsigned types;                        /* the types it applies to */
    bool async;
} create_steps[] = {
    {"its directory and mark", step_dir, FS | MEM, false},
    {"its mount point", step_mount_point, FS | MEM, false},
    {"the sparse image", step_image, FS, false},
    {"mke2fs", start_mkfs, FS, true},                       /* the one that takes time */
    {"the loop device and the mount", step_mount, FS | MEM, false},
    {"its root directory's owner, mode and ACL", set_root_access, FS | MEM, false},
    {"its row in the database", step_row, FS | MEM, false},
    {"its row committed", step_commit, FS | MEM, false},
};

/* Runs the steps from `from` on: 0 when the volume is ready, VOLUMES_PENDING when an async
 * step is under way (v->run->next says where to go on), -1 when a step failed (undone). */
static int run_steps(volume *v, size_t from, jerr *e)
{
    for (size_t i = from; i < ARRAY_LEN(create_steps); i++) {
        const struct create_step *st = &create_steps[i];
        if (!(st->types & (1u << v->type)))
            continue;
        log_debug("volume %s: %s", v->name, st->what);
        if (st->run(v, e) < 0) {
            log_err("volume %s: %s", v->name, e->msg);
            undo(v);
            return -1;
        }
        if (st->async) {
            v->run->next = i + 1;
            return VOLUMES_PENDING;
        }
    }
    v->state = VOLUME_READY;
    log_info("volume %s created: %s, %llu MB, owner uid %u", v->name, kinds[v->type].name,
             (unsigned long long)v->size_mb, (unsigned)v->owner_uid);
    return 0;
}

static void on_mkfs_exit(watch *w, uint32_t events)
{
    volume *v = w->data;
    volume_run *r = v->run;
    /* The helper itself may already be reaped by the daemon's SIGCHLD handler (main.c reaps
     * every child): its report, not its own exit status, tells how mke2fs ended. */
    siginfo_t si;
    waitid((idtype_t)P_PIDFD, (id_t)w->fd, &si, WEXITED | WNOHANG);
    loop_del(w);
    close(w->fd);
    v->run = NULL;
    ncreating--;
    jerr e = {0};
    char log_path[760], what[300];
    snprintf(log_path, sizeof log_path, "%s/mkfs.log", v->dir);
    snprintf(what, sizeof what, "volume %s", v->name);
    if (diskimg_format_result(r->status_fd, what, log_path, &e) < 0) {
        log_err("%s", e.msg);
        notify(r, &e);
        free(r);
        undo(v);
        return;
    }
    size_t next = r->next;
    if (run_steps(v, next, &e) == 0) { /* on failure it undid the volume */
        state_commit(); /* the answer that follows must find the volume in the database */
        notify(r, NULL);
    } else {
        notify(r, &e);
    }
    free(r);
}

/* mke2fs, run by a helper process the loop watches through its pidfd (diskimg.h); its output
 * goes to mkfs.log. */
static int start_mkfs(volume *v, jerr *e)
{
    const char *mke2fs = mke2fs_path();
    if (!mke2fs)
        return jerr_set(e, ENOENT, "mke2fs is gone");
    char image[760], log_path[760];
    snprintf(image, sizeof image, "%s/image", v->dir);
    snprintf(log_path, sizeof log_path, "%s/mkfs.log", v->dir);
    int out = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0)
        return jerr_sys(e, "create %s", log_path);
    int pidfd = -1, status_fd = -1;
    pid_t pid = diskimg_format_start(mke2fs, image, v->owner_uid, v->owner_gid, out, &pidfd, &status_fd, e);
    close(out);
    if (pid < 0)
        return -1;
    set_cloexec_nonblock(status_fd);
    v->run = xcalloc(1, sizeof *v->run);
    v->run->pid = pid;
    v->run->status_fd = status_fd;
    v->run->w = (watch){pidfd, on_mkfs_exit, v};
    if (loop_add(&v->run->w) < 0) {
        int err = errno;
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        close(pidfd);
        close(status_fd);
        free(v->run);
        v->run = NULL;
        errno = err;
        return jerr_sys(e, "watch %s", mke2fs);
    }
    ncreating++;
    return 0;
}

/* The volumes a workflow creates before the one being checked (volumes_precheck_all): they
 * count as made, so that the whole workflow is checked before any of them is. */
typedef struct earlier {
    uint32_t count;
    uint64_t mb[2];      /* by type */
    uint32_t formatting; /* filesystem volumes among them: each takes one of CREATING_MAX */
} earlier;

/* A user's share of what the machine gives volumes of one type (root has no bound): the sizes
 * of the user's volumes of that type together, this one included, at most pct % of whole_mb. */
static int check_share(const volume_req *rq, uid_t uid, uint64_t whole_mb, uint32_t pct, const char *key,
                       const char *of, const earlier *x, jerr *e)
{
    caller who = authz_local(uid, 0); /* the bound's exemption is the uid's (authz.h) */
    if (authz_may(&who, AUTHZ_UNLIMITED) || !pct)
        return 0;
    uint64_t mine = x->mb[rq->type], bound = whole_mb * pct / 100;
    for (size_t i = 0; i < nvols; i++)
        if (vols[i]->type == rq->type && vols[i]->owner_uid == uid)
            mine += vols[i]->size_mb;
    if (mine + rq->size_mb <= bound)
        return 0;
    char a[32], b[32], c[32], d[32];
    return refuse(e, 429, "size_mb", "size_mb: %s is more than uid %u may have of %s volumes: %s is %u %% of %s, "
                                     "%s, for all of them, of which %s are taken; ask for %s or less, or remove one "
                                     "(rnx volume remove NAME)",
                  mb_text(rq->size_mb, a, sizeof a), (unsigned)uid, kinds[rq->type].name, key, (unsigned)pct, of,
                  mb_text(bound, b, sizeof b), mb_text(mine, c, sizeof c),
                  mb_text(bound > mine ? bound - mine : 0, d, sizeof d));
}

uint64_t volumes_promised_mb(dev_t dev)
{
    uint64_t promised = 0;
    for (size_t i = 0; i < nvols; i++) {
        if (vols[i]->type != VOLUME_FILESYSTEM)
            continue;
        char image[760];
        struct stat st;
        snprintf(image, sizeof image, "%s/image", vols[i]->dir);
        if (stat(image, &st) < 0) {
            /* not made yet (a creation under way): promised whole where volumes.dir is */
            if (stat(vdir, &st) < 0 || st.st_dev != dev)
                continue;
            promised += vols[i]->size_mb;
            continue;
        }
        if (st.st_dev != dev)
            continue;
        uint64_t have = (uint64_t)st.st_blocks * 512 >> 20;
        promised += vols[i]->size_mb > have ? vols[i]->size_mb - have : 0;
    }
    return promised;
}

/* The bounds on one more volume of this size, for uid. Memory: the user's share
 * (volumes.memory_percent_per_user of the machine's memory), and half the machine's memory for
 * all memory volumes together. Filesystem: the user's share (volumes.disk_percent_per_user of
 * the disk under volumes.dir), and what that disk has free less what the sparse images on it
 * may still take as they fill (each is promised its whole size): the volumes', and the users'
 * /work images' when they are on the same disk (workfs.h). */
static int check_room(const volume_req *rq, uid_t uid, const earlier *x, jerr *e)
{
    uint64_t want = rq->size_mb;
    char a[32], b[32], c[32], d[32];
    if (rq->type == VOLUME_MEMORY) {
        if (check_share(rq, uid, core.mem_total_mb, core.cfg.volumes_memory_pct_per_user,
                        "volumes.memory_percent_per_user", "this machine's memory", x, e) < 0)
            return -1;
        uint64_t taken = x->mb[VOLUME_MEMORY], bound = core.mem_total_mb / 2;
        for (size_t i = 0; i < nvols; i++)
            if (vols[i]->type == VOLUME_MEMORY)
                taken += vols[i]->size_mb;
        if (taken + want > bound)
            return jerr_field(e, "size_mb", "size_mb: %s of memory volumes is more than this machine allows: half its "
                                            "memory, %s, for all of them, of which %s are taken; ask for %s or less",
                              mb_text(want, a, sizeof a), mb_text(bound, b, sizeof b), mb_text(taken, c, sizeof c),
                              mb_text(bound > taken ? bound - taken : 0, d, sizeof d));
        return 0;
    }
    struct statvfs sv;
    struct stat ds;
    if (statvfs(vdir, &sv) < 0 || stat(vdir, &ds) < 0)
        return jerr_sys(e, "statvfs %s", vdir);
    if (check_share(rq, uid, (uint64_t)sv.f_blocks * sv.f_frsize >> 20, core.cfg.volumes_disk_pct_per_user,
                    "volumes.disk_percent_per_user", "the disk under volumes.dir", x, e) < 0)
        return -1;
    uint64_t free_mb = (uint64_t)sv.f_bavail * sv.f_frsize >> 20;
    uint64_t promised = x->mb[VOLUME_FILESYSTEM] + volumes_promised_mb(ds.st_dev);
    uint64_t work = workfs_promised_mb(ds.st_dev);
    promised += work;
    /* on the state filesystem, jobs.state_reserve is the database's: a volume filled to its size
     * must not take it (one user's full volume refused every user's jobs, 507) */
    struct stat ss;
    uint64_t reserve = stat(core.cfg.state_dir, &ss) == 0 && ss.st_dev == ds.st_dev ? core.cfg.state_reserve >> 20 : 0;
    uint64_t kept = promised + reserve, room = free_mb > kept ? free_mb - kept : 0;
    char f[32], g[32];
    if (want > room)
        return jerr_field(e, "size_mb", "size_mb: %s is more than the disk under volumes.dir (%s) can promise: %s free, "
                                        "of which %s are promised to the sparse images there that grow as they fill "
                                        "(filesystem volumes, and %s to the users' /work) and %s kept for joblet's "
                                        "database (jobs.state_reserve); ask for %s or less",
                          mb_text(want, a, sizeof a), vdir, mb_text(free_mb, b, sizeof b),
                          mb_text(promised, c, sizeof c), mb_text(work, d, sizeof d), mb_text(reserve, g, sizeof g),
                          mb_text(room, f, sizeof f));
    return 0;
}

int volumes_size_refused(enum volume_type t, const char *given, jerr *e)
{
    const struct volume_kind *k = &kinds[t];
    char b[32], c[32];
    return jerr_field(e, "size_mb", "size_mb: %.60s is not a size for a %s volume; give from %s to %s (e.g. %s)", given,
                      k->name, mb_text(k->min_mb, b, sizeof b), mb_text(k->max_mb, c, sizeof c),
                      t == VOLUME_MEMORY ? "256MB" : "1GB");
}

/* What the request asks, before anything is made: the name, the size, the bounds. */
static int check_request(const volume_req *rq, uid_t uid, const earlier *x, jerr *e)
{
    if (!rq->name || !jobreq_volume_name_ok(rq->name, strlen(rq->name)))
        return jerr_field(e, "name", "name: '%.80s' is not a volume name; use letters, digits, '.', '_' and '-', "
                                     "at most 64, not starting with '.'",
                          rq->name ? rq->name : "");
    const struct volume_kind *k = &kinds[rq->type];
    char a[32];
    if (rq->size_mb < k->min_mb || rq->size_mb > k->max_mb)
        return volumes_size_refused(rq->type, mb_text(rq->size_mb, a, sizeof a), e);
    if (nvols + x->count >= VOLUMES_MAX)
        return jerr_http(e, 429, "this machine has %d volumes, the most joblet keeps; remove some (rnx volume remove "
                                 "NAME)", VOLUMES_MAX);
    uint32_t per_user = core.cfg.volumes_max_per_user;
    caller who = authz_local(uid, 0); /* the bound's exemption is the uid's (authz.h) */
    if (!authz_may(&who, AUTHZ_UNLIMITED) && per_user) {
        uint32_t mine = x->count;
        for (size_t i = 0; i < nvols; i++)
            mine += vols[i]->owner_uid == uid;
        if (mine >= per_user)
            return jerr_http(e, 429, "uid %u owns %u volumes%s; volumes.max_per_user is %u: remove one first (rnx "
                                     "volume remove NAME)%s", (unsigned)uid, mine,
                             x->count ? ", counting those this workflow creates before it" : "", per_user,
                             x->count ? " or create fewer" : "");
    }
    if (rq->type == VOLUME_FILESYSTEM && !mke2fs_path())
        return refuse(e, 503, "type", "type: filesystem volumes need mke2fs (Debian package e2fsprogs; volumes.mke2fs "
                                      "names another), which this machine lacks; use --type=memory or ask an admin");
    /* a workflow's are formatted together: all of them fit now, or none is made (the ninth of
     * nine was refused after eight were made, and those stayed) */
    if (rq->type == VOLUME_FILESYSTEM && x->formatting >= CREATING_MAX)
        return jerr_http(e, 400, "a workflow creates at most %d filesystem volumes (they are formatted at once); "
                                 "create the others first (rnx volume create NAME --size=SIZE) or make them memory "
                                 "volumes", CREATING_MAX);
    if (rq->type == VOLUME_FILESYSTEM && ncreating + x->formatting >= CREATING_MAX)
        return jerr_busy(e, "%zu volumes are being created already%s; at most %d at once: try again in a moment",
                         ncreating + x->formatting, x->formatting ? ", counting those this workflow creates before it" : "",
                         CREATING_MAX);
    return statedisk_room(0, "new volumes", e) < 0 ? -1 : check_room(rq, uid, x, e);
}

/* The same volume asked for again: the request is satisfied by what exists, or refused
 * naming what differs. */
static int existing(volume *v, const volume_req *rq, uid_t uid, gid_t gid, volumes_done_fn done, void *arg, jerr *e)
{
    if (v->owner_uid != uid)
        return refuse(e, 409, "name", "name: volume '%s' exists and is another user's (volume names are one for the "
                                      "machine); choose another name", v->name);
    if (v->type != rq->type || v->size_mb != rq->size_mb)
        return refuse(e, 409, "name", "name: volume '%s' exists as a %s volume of %llu MB, not %s of %llu MB; remove it "
                                      "first (rnx volume remove %s) or choose another name",
                         v->name, kinds[v->type].name, (unsigned long long)v->size_mb, kinds[rq->type].name,
                         (unsigned long long)rq->size_mb, v->name);
    if (v->state == VOLUME_UNAVAILABLE)
        return jerr_http(e, 409, "volume '%s' exists but is unavailable: %s", v->name, v->why);
    if (v->state == VOLUME_READY)
        return VOLUMES_EXISTED;
    if (!done)
        return jerr_http(e, 409, "volume '%s' is still being created", v->name);
    if (v->run->nwaiters >= WAITERS_MAX)
        return jerr_busy(e, "volume '%s' is being created and %d requests wait for it already; try again in a "
                            "moment", v->name, WAITERS_MAX);
    v->run->waiters[v->run->nwaiters].fn = done;
    v->run->waiters[v->run->nwaiters++].arg = arg;
    return VOLUMES_PENDING;
}

static int precheck(const volume_req *rq, uid_t uid, gid_t gid, const earlier *x, jerr *e)
{
    volume *v = find(rq->name);
    if (!v)
        return check_request(rq, uid, x, e);
    if (v->state == VOLUME_CREATING && v->owner_uid == uid && v->type == rq->type && v->size_mb == rq->size_mb)
        return 0;
    return existing(v, rq, uid, gid, NULL, NULL, e) < 0 ? -1 : 0;
}

int volumes_precheck(const volume_req *rq, uid_t uid, gid_t gid, jerr *e)
{
    return precheck(rq, uid, gid, &(earlier){0}, e);
}

int volumes_precheck_all(const volume_req *rqs, size_t n, uid_t uid, gid_t gid, size_t *at, jerr *e)
{
    earlier x = {0};
    for (size_t i = 0; i < n; i++) {
        *at = i;
        if (precheck(&rqs[i], uid, gid, &x, e) < 0)
            return -1;
        if (!find(rqs[i].name)) { /* made by this workflow: it counts for the next ones */
            x.count++;
            x.mb[rqs[i].type] += rqs[i].size_mb;
            x.formatting += rqs[i].type == VOLUME_FILESYSTEM;
        }
    }
    return 0;
}

bool volumes_would_wait(const volume_req *rqs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const volume *v = find(rqs[i].name);
        if (v ? v->state == VOLUME_CREATING : rqs[i].type == VOLUME_FILESYSTEM)
            return true;
    }
    return false;
}

static int64_t fresh_id(const char *name);

int volumes_create(const volume_req *rq, uid_t uid, gid_t gid, volumes_done_fn done, void *arg, jerr *e)
{
    volume *v = find(rq->name);
    if (v)
        return existing(v, rq, uid, gid, done, arg, e);
    if (check_request(rq, uid, &(earlier){0}, e) < 0)
        return -1;
    if (rq->type == VOLUME_FILESYSTEM && !done)
        return jerr_http(e, 500, "volume '%s': a filesystem volume is created in the background, and nothing waits",
                         rq->name);
    v = add(rq->name, rq->type, rq->size_mb, uid, gid, fresh_id(rq->name));
    v->state = VOLUME_CREATING;
    int rc = run_steps(v, 0, e);
    if (rc == VOLUMES_PENDING) {
        v->run->waiters[0].fn = done;
        v->run->waiters[0].arg = arg;
        v->run->nwaiters = 1;
        return VOLUMES_PENDING;
    }
    return rc < 0 ? -1 : VOLUMES_CREATED;
}

/* ---- pins: which volume a name meant ---------------------------------------------------- */

static bool names(const job_req *req, const char *name)
{
    for (size_t i = 0; i < req->nvolumes; i++) {
        char n[80];
        bool ro;
        if (jobreq_volume_parse(req->volumes[i], n, sizeof n, &ro) == 0 && !strcmp(n, name))
            return true;
    }
    return false;
}

/* The volume a request pinned under name: its owner and id. false when it pinned none (a job
 * stored by a joblet before pins: its owner's right to use the volume is all that is checked). */
static bool pin_of(const job_req *req, const char *name, uid_t *uid, int64_t *id)
{
    size_t len = strlen(name);
    for (const char *p = req->volume_pins; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        unsigned long long u;
        long long i;
        if (n > len && !strncmp(p, name, len) && p[len] == ':' && sscanf(p + len, ":%llu:%lld", &u, &i) == 2) {
            *uid = (uid_t)u;
            *id = (int64_t)i;
            return true;
        }
        p += n + (end != NULL);
    }
    return false;
}

/* Whether the request names this volume: by its name, and it pinned this one (or none). */
static bool uses(const job_req *req, const volume *v)
{
    uid_t uid;
    int64_t id;
    return names(req, v->name) && (!pin_of(req, v->name, &uid, &id) || (uid == v->owner_uid && id == v->created_ms));
}

/* The id of a volume created now under name: the time, made later than any id a job not yet
 * ended pinned under that name (the clock may have gone back, or the name been reused within
 * a millisecond), so that no job ever takes it for the volume it pinned. */
static int64_t fresh_id(const char *name)
{
    int64_t id = now_ms();
    for (size_t i = 0; i < core.njobs; i++) {
        const job *j = core.jobs[i];
        uid_t uid;
        int64_t pinned;
        if (!job_state_terminal(j->state) && pin_of(&j->req, name, &uid, &pinned) && pinned >= id)
            id = pinned + 1;
    }
    /* and any an array with tasks still to make pinned: its tasks are made with its request */
    size_t na;
    jarray **open = arrays_open(&na);
    for (size_t i = 0; i < na; i++) {
        uid_t uid;
        int64_t pinned;
        if (pin_of(&open[i]->req, name, &uid, &pinned) && pinned >= id)
            id = pinned + 1;
    }
    return id;
}

/* Why the volume name that a checked request names cannot be used by owner now, in words that
 * follow "volume 'NAME' is "; NULL when it can (then *out is the volume). */
/* Why the job cannot use the volume it names (NULL: it can); *for_now: only because it is not
 * ready or mounted now (it is the job's own and may be again). */
static const char *unusable(const job_req *req, const char *name, uid_t owner, gid_t gid, volume **out, char *buf,
                            size_t len, bool *for_now)
{
    *for_now = false;
    volume *v = find(name);
    uid_t pu;
    int64_t pid;
    *out = v;
    if (!v)
        return "gone: it was removed (or, a memory volume, went with its last job or a reboot) after the job was "
               "submitted";
    if (pin_of(req, name, &pu, &pid) && (v->owner_uid != pu || v->created_ms != pid)) {
        snprintf(buf, len, "not the one the job was submitted with: that one (uid %u's) is gone, and the volume of "
                           "that name now is another (uid %u's, created since); the job does not use it",
                 (unsigned)pu, (unsigned)v->owner_uid);
        return buf;
    }
    if (!owner_may_use(v, owner, gid)) {
        snprintf(buf, len, "uid %u's, and uid %u may no longer use it", (unsigned)v->owner_uid, (unsigned)owner);
        return buf;
    }
    if (v->state != VOLUME_READY || !mounted(v)) {
        *for_now = true;
        return v->state == VOLUME_UNAVAILABLE ? v->why : v->state == VOLUME_CREATING ? "being created" : "not mounted";
    }
    return NULL;
}

/* ---- using and removing -------------------------------------------------------------- */

size_t volumes_jobs(const volume *v, const job **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < core.njobs; i++) {
        const job *j = core.jobs[i];
        if (job_state_terminal(j->state) || !uses(&j->req, v))
            continue;
        if (n < max)
            out[n] = j;
        n++;
    }
    return n;
}

size_t volumes_arrays(const volume *v, bool now_only, const jarray **out, size_t max)
{
    size_t n = 0, na;
    /* the open arrays only (arrays.h: kept as arrays change), not every array kept */
    jarray **open = arrays_open(&na);
    for (size_t i = 0; i < na; i++) {
        const jarray *a = open[i];
        if ((now_only && arrays_unmade_state(a) == JS_SCHEDULED) || !uses(&a->req, v))
            continue;
        if (n < max)
            out[n] = a;
        n++;
    }
    return n;
}

void volumes_usage(const volume *v, volume_usage *u)
{
    *u = (volume_usage){0};
    if (v->type == VOLUME_FILESYSTEM) {
        char image[760];
        struct stat st;
        snprintf(image, sizeof image, "%s/image", v->dir);
        if (stat(image, &st) == 0)
            u->image_bytes = (uint64_t)st.st_blocks * 512;
    }
    struct statvfs sv;
    struct stat ms;
    if (v->state != VOLUME_READY || !mounted(v) || statvfs(v->mnt, &sv) < 0 || stat(v->mnt, &ms) < 0)
        return;
    u->capacity_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
    u->used_bytes = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
    u->available_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
    if (v->type == VOLUME_FILESYSTEM && major(ms.st_dev) == 7 /* LOOP_MAJOR */)
        snprintf(u->device, sizeof u->device, "/dev/loop%u", minor(ms.st_dev));
}

/* Forgets a volume whose data is gone or going: its row, its directory. */
static int destroy(volume *v, jerr *e)
{
    /* the row's delete is committed before anything of the volume goes: a delete the database
     * did not take leaves the volume as it is, mounted, its data there (a memory volume's data
     * is its mount: unmounted first, a failed commit had lost it) */
    if (db_volume_delete(core.db, v->name, e) < 0)
        return db_busy_refusal(e, "removed");
    if (state_commit_now(e) < 0) {
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "%s", e->msg);
        return jerr_http(e, e->http, "volume '%s' was not removed: %s", v->name, msg);
    }
    jerr ue = {0};
    if (unmount(v, &ue) < 0) /* the row is gone: what is left is the host's (detached, or swept) */
        log_err("volume %s: removed, but %s", v->name, ue.msg);
    rm_rf(v->dir);
    drop(v);
    return 0;
}

/* "ID (STATE), ID (STATE) and 3 more": the first few of the n jobs (js, all of them) or arrays
 * (as) that who may see; the others are counted, not named (another user's job is not shown to
 * whom may not see it). */
static void list_users(const caller *who, const job *const *js, const jarray *const *as, size_t n, char *out,
                       size_t len)
{
    size_t o = 0, shown = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && shown < 4 && o < len; i++) {
        uid_t owner = js ? js[i]->owner_uid : as[i]->owner_uid;
        if (!authz_may_on(who, AUTHZ_OTHERS_JOBS, owner))
            continue;
        enum job_state st = JS_QUEUED;
        if (js) {
            st = js[i]->state;
        } else {
            arrays_counts c;
            arrays_count(as[i], &c);
            st = arrays_state(as[i], &c);
        }
        o += (size_t)snprintf(out + o, len - o, "%s%s (%s)", shown ? ", " : "", js ? js[i]->id : as[i]->id,
                              job_state_name(st));
        shown++;
    }
    if (n > shown && o < len)
        snprintf(out + o, len - o, "%s%zu %s", shown ? " and " : "", n - shown,
                 shown ? "more" : n - shown == 1 ? "of another user" : "of other users");
}

int volumes_remove(const char *name, const caller *who, jerr *e)
{
    volume *v = find(name);
    if (!v)
        return jerr_http(e, 404, "no volume '%.80s' (rnx volume list shows yours)", name);
    if (!volumes_allowed(v, who))
        return jerr_http(e, 403, "volume '%s' is another user's; only its owner, root and admins (server.admin_group) "
                                 "may remove it", name);
    if (v->state == VOLUME_CREATING)
        return jerr_http(e, 409, "volume '%s' is being created; remove it once rnx volume create has returned", name);
    size_t n = volumes_jobs(v, NULL, 0);
    if (n) {
        char list[400];
        const job **js = xcalloc(n, sizeof *js);
        volumes_jobs(v, js, n);
        list_users(who, js, NULL, n, list, sizeof list);
        free(js);
        return jerr_http(e, 409, "volume '%s' is in use by %zu job%s not yet ended: %s; stop them (rnx job stop ID) "
                                 "or wait for them to end, then remove it",
                         name, n, n == 1 ? "" : "s", list);
    }
    /* an array's tasks not made yet will mount it: they are made with the volume it pinned */
    size_t na = volumes_arrays(v, false, NULL, 0);
    if (na) {
        char list[400];
        const jarray **as = xcalloc(na, sizeof *as);
        volumes_arrays(v, false, as, na);
        list_users(who, NULL, as, na, list, sizeof list);
        free(as);
        return jerr_http(e, 409, "volume '%s' is in use by %zu job arra%s with tasks not started yet: %s; stop them "
                                 "(rnx job stop ID) or wait for them to end, then remove it",
                         name, na, na == 1 ? "y" : "ys", list);
    }
    if (v->uploads)
        return jerr_http(e, 409, "volume '%s' is in use by %u upload%s still arriving (a job whose files are being "
                                 "sent, PUT /v1/uploads/ID); wait for its job to be submitted, or for the upload to "
                                 "fail, then remove it",
                         name, (unsigned)v->uploads, v->uploads == 1 ? "" : "s");
    char what[300];
    snprintf(what, sizeof what, "volume %s (%s, %llu MB, owner uid %u) removed by uid %u%s%s", v->name,
             kinds[v->type].name, (unsigned long long)v->size_mb, (unsigned)v->owner_uid, (unsigned)who->uid,
             who->person[0] ? ", " : "", who->person);
    if (destroy(v, e) < 0)
        return -1;
    log_info("%s", what);
    return 0;
}

int volumes_check(job_req *req, const caller *as, jerr *e)
{
    char pins[4096];
    size_t o = 0;
    for (size_t i = 0; i < req->nvolumes; i++) {
        char name[80];
        bool ro;
        if (jobreq_volume_parse(req->volumes[i], name, sizeof name, &ro) < 0)
            return jerr_field(e, "volumes", "volumes: '%.80s' is not a volume name; give NAME or NAME:ro",
                              req->volumes[i]);
        const volume *v = find(name);
        if (!v)
            return jerr_field(e, "volumes", "volumes: no volume '%s' on this machine; create it (rnx volume create %s "
                                            "--size=1GB) or use one of yours (rnx volume list)",
                              name, name);
        if (!volumes_allowed(v, as))
            return refuse(e, 403, "volumes", "volumes: volume '%s' is another user's; only its owner, root and admins "
                                     "(server.admin_group) may use it (rnx volume list shows yours)",
                             name);
        if (v->state == VOLUME_CREATING)
            return refuse(e, 409, "volumes", "volumes: volume '%s' is still being created; submit once rnx volume create has "
                                     "returned", name);
        if (v->state == VOLUME_UNAVAILABLE)
            return refuse(e, 409, "volumes", "volumes: volume '%s' is unavailable: %s", name, v->why);
        /* at most 32 of (64 + 1 + 10 + 1 + 20 + 1) bytes: 3,104 */
        o += (size_t)snprintf(pins + o, sizeof pins - o, "%s%s:%u:%lld", i ? "," : "", v->name,
                              (unsigned)v->owner_uid, (long long)v->created_ms);
        if (o >= sizeof pins)
            return jerr_http(e, 500, "volumes: the pins of %zu volumes do not fit in %zu bytes", req->nvolumes,
                             sizeof pins);
    }
    jobreq_set_str(req, JR_VOLUME_PINS, req->nvolumes ? pins : NULL);
    return 0;
}

int volumes_verify(const job_req *req, uid_t owner, gid_t gid, jerr *e)
{
    for (size_t i = 0; i < req->nvolumes; i++) {
        char name[80], buf[300];
        bool ro;
        volume *v;
        const char *why;
        if (jobreq_volume_parse(req->volumes[i], name, sizeof name, &ro) < 0)
            return jerr_field(e, "volumes", "volumes: '%.80s' is not a volume name", req->volumes[i]);
        bool for_now;
        if ((why = unusable(req, name, owner, gid, &v, buf, sizeof buf, &for_now))) {
            refuse(e, 409, "volumes", "volumes: volume '%s' is %s; submit again", name, why);
            /* the job's own volume, only not mounted now (a failed mount, being made): it may be
             * again, EAGAIN (an array's next task waits instead of canceling the rest) */
            if (for_now)
                e->code = EAGAIN;
            return -1;
        }
    }
    return 0;
}

static bool kept(const volume *v);

/* A memory volume whose last job ended while an upload kept it goes once no upload does, and
 * the job that upload made (if it made one: at the next turn, when it exists) does not keep it. */
static void on_owed(loop_task *t)
{
    (void)t;
    for (size_t i = nvols; i-- > 0;) {
        volume *v = vols[i];
        if (!v->release_owed || v->uploads)
            continue;
        v->release_owed = false;
        if (v->type != VOLUME_MEMORY || v->state != VOLUME_READY || kept(v))
            continue;
        jerr e = {0};
        char name[sizeof v->name];
        snprintf(name, sizeof name, "%s", v->name); /* destroy frees v */
        if (destroy(v, &e) < 0) {
            v->gone_owed = true;
            log_err("memory volume %s: the upload that kept it went, but: %s (tried again)", name, e.msg);
        }
        else
            log_info("memory volume %s removed: the upload that kept it after its last job ended went", name);
    }
}
static loop_task owed_task = {.fn = on_owed};

/* Memory volumes whose removal a failed commit rolled back (gone_owed): their rows' deletes are
 * written again with the rows a failed commit lost (state.c's resync, after a wait that
 * doubles), and once one is committed, the volume goes (on_gone: not within the commit, where
 * a caller may be walking the volumes). Else the tmpfs stayed mounted, its memory held, for as
 * long as joblet ran. */
static void on_gone(loop_task *t)
{
    (void)t;
    for (size_t i = nvols; i-- > 0;) {
        volume *v = vols[i];
        if (!v->gone)
            continue;
        jerr ue = {0};
        if (unmount(v, &ue) < 0)
            log_err("volume %s: removed, but %s", v->name, ue.msg);
        rm_rf(v->dir);
        log_info("memory volume %s removed: its last job ended, and its removal is committed now", v->name);
        drop(v);
    }
}
static loop_task gone_task = {.fn = on_gone};

static bool gone_unsaved(void)
{
    for (size_t i = 0; i < nvols; i++)
        if (vols[i]->gone_owed)
            return true;
    return false;
}

static void gone_resync(void)
{
    for (size_t i = 0; i < nvols; i++) {
        volume *v = vols[i];
        if (!v->gone_owed)
            continue;
        v->gone_owed = false;
        if (v->type != VOLUME_MEMORY || v->state != VOLUME_READY || kept(v))
            continue; /* used again meanwhile: it stays (its next last job removes it) */
        jerr e = {0};
        if (db_volume_delete(core.db, v->name, &e) < 0) {
            v->gone_owed = true;
            log_err("memory volume %s: its removal not written again: %s", v->name, e.msg);
        } else {
            v->gone_in_txn = true;
        }
    }
}

static void gone_committed(bool ok)
{
    bool any = false;
    for (size_t i = 0; i < nvols; i++) {
        volume *v = vols[i];
        if (!v->gone_in_txn)
            continue;
        v->gone_in_txn = false;
        if (!ok) {
            v->gone_owed = true;
            continue;
        }
        /* its row is gone: no job may name it from now on */
        v->gone = true;
        v->state = VOLUME_UNAVAILABLE;
        snprintf(v->why, sizeof v->why, "removed: its last job ended");
        any = true;
    }
    if (any)
        loop_later(&gone_task);
}

static const state_rows gone_rows = {gone_committed, gone_unsaved, gone_resync};

void volumes_hold(const job_req *req, bool hold)
{
    for (size_t i = 0; i < req->nvolumes; i++) {
        char name[80];
        bool ro;
        volume *v;
        if (jobreq_volume_parse(req->volumes[i], name, sizeof name, &ro) < 0 || !(v = find(name)) || !uses(req, v))
            continue;
        if (hold)
            v->uploads++;
        else if (v->uploads)
            v->uploads--;
        if (!hold && v->release_owed && !v->uploads)
            loop_later(&owed_task);
    }
}

int volumes_spec_mounts(const job *j, spec_mount **mounts, size_t *n, jerr *e)
{
    for (size_t i = 0; i < j->req.nvolumes; i++) {
        char name[80], dst[100], buf[300];
        bool ro;
        volume *v;
        const char *why;
        if (jobreq_volume_parse(j->req.volumes[i], name, sizeof name, &ro) < 0)
            return jerr_field(e, "volumes", "volumes: '%.80s' is not a volume name", j->req.volumes[i]);
        /* checked at submission; since then it may have gone, been replaced, failed to mount at
         * a start, or its owner's right to it may have ended (an admin no longer one) */
        bool for_now;
        if ((why = unusable(&j->req, name, j->owner_uid, j->owner_gid, &v, buf, sizeof buf, &for_now)))
            return jerr_set(e, ENOENT, "volume '%s' is %s", name, why);
        snprintf(dst, sizeof dst, "/volumes/%s", name);
        *mounts = xrealloc(*mounts, (*n + 1) * sizeof **mounts);
        (*mounts)[(*n)++] = (spec_mount){xstrdup(v->mnt), xstrdup(dst), !ro};
    }
    return 0;
}

/* What keeps a memory volume (volumes_release): a streamed upload still arriving that names
 * it, a job not yet ended that uses it and may run now, or an array with tasks still to make
 * that uses it and whose tasks may be made now (its next task would mount it: between two of
 * its tasks no job uses it). A job or an array scheduled for later does not: it would keep the
 * memory for as long as its start is away (ten years). */
static bool kept(const volume *v)
{
    if (v->uploads)
        return true;
    for (size_t i = 0; i < core.njobs; i++) {
        const job *j = core.jobs[i];
        if (!job_state_terminal(j->state) && j->state != JS_SCHEDULED && uses(&j->req, v))
            return true;
    }
    const jarray *a[1];
    return volumes_arrays(v, true, a, 1) > 0;
}

void volumes_release(const job *j)
{
    for (size_t i = 0; i < j->req.nvolumes; i++) {
        char name[80];
        bool ro;
        volume *v;
        if (jobreq_volume_parse(j->req.volumes[i], name, sizeof name, &ro) < 0 || !(v = find(name)) ||
            v->type != VOLUME_MEMORY || v->state != VOLUME_READY || !uses(&j->req, v))
            continue;
        if (kept(v)) {
            v->release_owed = v->uploads > 0; /* only an upload keeps it: it goes when that does */
            continue;
        }
        const job *waiting[1] = {NULL};
        const jarray *arrays_later[1] = {NULL};
        size_t later = volumes_jobs(v, waiting, 1), alater = volumes_arrays(v, false, arrays_later, 1);
        jerr e = {0};
        if (destroy(v, &e) < 0) {
            v->gone_owed = true;
            log_err("memory volume %s: its last job ended, but: %s (tried again)", name, e.msg);
        }
        else if (later || alater)
            log_info("memory volume %s removed: the last job using it (%s) ended; %zu job%s and %zu job arra%s "
                     "scheduled for later named it (%s first), and will fail to start", name, j->id, later,
                     later == 1 ? "" : "s", alater, alater == 1 ? "y" : "ys",
                     later ? waiting[0]->id : arrays_later[0]->id);
        else
            log_info("memory volume %s removed: the last job using it (%s) ended", name, j->id);
    }
}

/* ---- at start ------------------------------------------------------------------------ */

static void load_one(const db_volume *row, void *arg)
{
    enum volume_type t;
    if (volumes_type_parse(row->type, &t) < 0 || !jobreq_volume_name_ok(row->name, strlen(row->name))) {
        log_err("volume '%s': stored with type '%s', which this joblet does not know; ignored", row->name, row->type);
        return;
    }
    volume *v = add(row->name, t, (uint64_t)row->size_mb, (uid_t)row->owner_uid, (gid_t)row->owner_gid,
                    row->created_ms);
    v->state = VOLUME_READY;
}

/* A volume the database holds, mounted again if it is not; see volumes_init. */
static void bring_up(volume *v)
{
    if (mounted(v))
        return;
    jerr e = {0};
    if (v->type == VOLUME_MEMORY) {
        char name[sizeof v->name];
        snprintf(name, sizeof name, "%s", v->name);
        if (destroy(v, &e) < 0) /* v is gone when it succeeds */
            log_err("memory volume %s: its tmpfs is gone (a reboot): %s", name, e.msg);
        else
            log_info("memory volume %s: its tmpfs went with a reboot; forgotten", name);
        return;
    }
    struct stat st;
    char image[760];
    snprintf(image, sizeof image, "%s/image", v->dir);
    if (stat(image, &st) < 0)
        jerr_sys(&e, "its image %s", image);
    else
        mount_image(v, &e);
    if (e.msg[0]) {
        v->state = VOLUME_UNAVAILABLE;
        snprintf(v->why, sizeof v->why, "%s", e.msg);
        log_err("volume %s is unavailable: %s", v->name, e.msg);
    }
}

/* Directories of joblet's (marked) that no volume owns: a creation a crash cut short. */
static void sweep(void)
{
    DIR *d = opendir(vdir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || find(de->d_name) || !jobreq_volume_name_ok(de->d_name, strlen(de->d_name)))
            continue;
        volume tmp = {0};
        snprintf(tmp.name, sizeof tmp.name, "%s", de->d_name);
        snprintf(tmp.dir, sizeof tmp.dir, "%s/%s", vdir, de->d_name);
        snprintf(tmp.mnt, sizeof tmp.mnt, "%s/mnt", tmp.dir);
        char mark[760];
        snprintf(mark, sizeof mark, "%s/" MARK, tmp.dir);
        if (access(mark, F_OK) < 0)
            continue;
        jerr e = {0};
        if (unmount(&tmp, &e) < 0) {
            log_err("%s; left as it is", e.msg);
            continue;
        }
        rm_rf(tmp.dir);
        log_info("volume %s: removed what a creation cut short left in %s", tmp.name, tmp.dir);
    }
    closedir(d);
}

int volumes_init(jerr *e)
{
    if (core.cfg.volumes_dir[0])
        snprintf(vdir, sizeof vdir, "%s", core.cfg.volumes_dir);
    else
        snprintf(vdir, sizeof vdir, "%s/volumes", core.cfg.state_dir);
    if (mkdir_p(vdir, 0700, e) < 0)
        return -1;
    if (chmod(vdir, 0700) < 0)
        return jerr_sys(e, "chmod 0700 %s (volumes.dir)", vdir);
    state_rows_register(&gone_rows);
    if (db_volume_load(core.db, load_one, NULL, e) < 0)
        return -1;
    for (size_t i = nvols; i-- > 0;)
        bring_up(vols[i]);
    sweep();
    state_commit();
    if (nvols)
        log_info("%zu volumes in %s", nvols, vdir);
    return 0;
}

void volumes_shutdown(void)
{
    for (size_t i = 0; i < nvols; i++) {
        volume *v = vols[i];
        if (!v->run)
            continue;
        syscall(SYS_pidfd_send_signal, v->run->w.fd, SIGKILL, NULL, 0);
        loop_del(&v->run->w);
        close(v->run->w.fd);
        close(v->run->status_fd);
        free(v->run);
        v->run = NULL;
        log_info("volume %s: creation cut short by the daemon's stop; the next start removes what is left", v->name);
    }
    for (size_t i = 0; i < nvols; i++)
        free(vols[i]);
    free(vols);
    vols = NULL;
    nvols = 0;
}
