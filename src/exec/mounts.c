/* The job's filesystem, bubblewrap style: a plan (a table of operations relative to the new
 * root) is built first, then executed, then the job pivots into it. Every failure names the
 * path. Read-only is applied with mount_setattr(AT_RECURSIVE) so submounts are covered too
 * and flags the kernel locked on the source (nosuid, nodev, noexec) are kept. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/util.h"
#include "isolate.h"

enum op_kind {
    OP_DIR_BIND_RO,   /* host dir, recursively read-only; a host symlink is copied as a symlink */
    OP_BIND_RW,       /* host dir, writable (nosuid, nodev) */
    OP_FILE_BIND,     /* host file onto an empty file */
    OP_DEVNODE,       /* a new node with the host node's type, numbers and mode (cheaper than a
                       * bind mount; done before the job's device filter applies) */
    OP_TMPFS,
    OP_PROC,
    OP_SYSFS,
    OP_DEVPTS,
    OP_SYMLINK,       /* src = link target */
    OP_MASK,          /* hide a /proc or /sys entry (file: /dev/null; dir: empty read-only tmpfs) */
    OP_RO_SELF,       /* make an existing path inside the new root read-only */
    OP_DEVNODE_CHECKED, /* a node with given numbers, after checking the host node has them */
    OP_WRITE_FILE,    /* data into a new read-only file */
    OP_ETC_NAMES,     /* the job's own /etc/hosts and /etc/hostname (etc_names) */
};

typedef struct mount_op {
    enum op_kind kind;
    const char *src;
    const char *dst;     /* inside the job, absolute */
    const char *data;    /* fs options */
    unsigned long flags;
    int optional;        /* skip when the host lacks src */
    dev_t rdev;          /* OP_DEVNODE_CHECKED */
} mount_op;

#define MAX_OPS 320
/* Host system directories every job sees, read-only (isolate.h). */
const char *const mounts_system_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", NULL};
#define NSYS (sizeof mounts_system_dirs / sizeof *mounts_system_dirs - 1)

typedef struct plan {
    mount_op ops[MAX_OPS];
    size_t n;
    char tmp_opts[64], shm_opts[64], pts_opts[80];
    char sys_src[NSYS][4200];  /* system_root + mounts_system_dirs[i], for a runtime */
} plan;

static void add(plan *p, enum op_kind k, const char *src, const char *dst, const char *data, unsigned long flags,
                int optional)
{
    if (p->n < MAX_OPS)
        p->ops[p->n++] = (mount_op){k, src, dst, data, flags, optional, 0};
}

/* Standard device nodes (the device filter allows exactly these, see cg_default_devices;
 * isolate.h). */
const char *const mounts_dev_nodes[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                                        "/dev/tty", NULL};
/* /proc entries that describe or control the host, not the job (as in Docker's defaults). */
static const char *const proc_masked[] = {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
                                          "/proc/latency_stats", "/proc/acpi", "/proc/scsi", "/sys/firmware"};
static const char *const proc_readonly[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus",
                                            "/proc/fs"};

static void build_plan(const job_spec *s, plan *p)
{
    const unsigned long nsd = MS_NOSUID | MS_NODEV;
    p->n = 0;
    /* the host's, or a runtime's tree: its /bin, /lib... are links into usr/, copied as links */
    for (size_t i = 0; i < NSYS; i++) {
        const char *src = mounts_system_dirs[i];
        if (s->system_root && *s->system_root) {
            snprintf(p->sys_src[i], sizeof p->sys_src[i], "%s%s", s->system_root, mounts_system_dirs[i]);
            src = p->sys_src[i];
        }
        add(p, OP_DIR_BIND_RO, src, mounts_system_dirs[i], NULL, 0, 1);
    }
    add(p, OP_ETC_NAMES, NULL, "/etc", NULL, 0, 0);
    add(p, OP_BIND_RW, NULL /* work_dir */, "/work", NULL, nsd, 0);
    snprintf(p->tmp_opts, sizeof p->tmp_opts, "mode=1777,size=%llum", (unsigned long long)s->tmp_size_mb);
    add(p, OP_TMPFS, "tmpfs", "/tmp", p->tmp_opts, nsd, 0);
    add(p, OP_PROC, "proc", "/proc", NULL, nsd | MS_NOEXEC, 0);
    add(p, OP_SYSFS, "sysfs", "/sys", NULL, nsd | MS_NOEXEC | MS_RDONLY, 0);
    add(p, OP_TMPFS, "tmpfs", "/dev", "mode=0755,size=64k", MS_NOSUID | MS_NOEXEC, 0);
    for (size_t i = 0; mounts_dev_nodes[i]; i++)
        add(p, OP_DEVNODE, mounts_dev_nodes[i], mounts_dev_nodes[i], NULL, 0, 0);
    /* max=: the job's share of the machine's ptys (jobs.ptys_max), which no cgroup counts; its own
     * terminal and each exec -t take one of them too */
    if (s->ptys_max)
        snprintf(p->pts_opts, sizeof p->pts_opts, "newinstance,ptmxmode=0666,mode=0620,max=%llu",
                 (unsigned long long)s->ptys_max);
    else
        snprintf(p->pts_opts, sizeof p->pts_opts, "newinstance,ptmxmode=0666,mode=0620");
    add(p, OP_DEVPTS, "devpts", "/dev/pts", p->pts_opts, MS_NOSUID | MS_NOEXEC, 0);
    add(p, OP_SYMLINK, "pts/ptmx", "/dev/ptmx", NULL, 0, 0);
    /* /dev/shm's pages are charged to the job's memory cgroup; its size is the job's memory
     * limit, so it cannot take more than the job may (without a limit: the kernel's default,
     * half the host) */
    if (s->limits.mem_bytes)
        snprintf(p->shm_opts, sizeof p->shm_opts, "mode=1777,size=%llum",
                 (unsigned long long)((s->limits.mem_bytes + (1 << 20) - 1) >> 20));
    else
        snprintf(p->shm_opts, sizeof p->shm_opts, "mode=1777");
    add(p, OP_TMPFS, "tmpfs", "/dev/shm", p->shm_opts, nsd, 0);
    add(p, OP_SYMLINK, "/proc/self/fd", "/dev/fd", NULL, 0, 0);
    add(p, OP_SYMLINK, "/proc/self/fd/0", "/dev/stdin", NULL, 0, 0);
    add(p, OP_SYMLINK, "/proc/self/fd/1", "/dev/stdout", NULL, 0, 0);
    add(p, OP_SYMLINK, "/proc/self/fd/2", "/dev/stderr", NULL, 0, 0);
    for (size_t i = 0; i < ARRAY_LEN(proc_masked); i++)
        add(p, OP_MASK, NULL, proc_masked[i], NULL, 0, 1);
    for (size_t i = 0; i < ARRAY_LEN(proc_readonly); i++)
        add(p, OP_RO_SELF, NULL, proc_readonly[i], NULL, 0, 1);
    for (size_t i = 0; i < s->nmounts; i++)
        add(p, s->mounts[i].rw ? OP_BIND_RW : OP_DIR_BIND_RO, s->mounts[i].src, s->mounts[i].dst, NULL, nsd, 0);
    for (size_t i = 0; i < s->nops; i++) {
        const spec_op *x = &s->ops[i];
        switch (x->kind) {
        case SPEC_DEVNODE:
            add(p, OP_DEVNODE_CHECKED, x->src, x->dst, NULL, 0, 0);
            if (p->n)
                p->ops[p->n - 1].rdev = makedev(x->major, x->minor);
            break;
        case SPEC_TMPFS: add(p, OP_TMPFS, "tmpfs", x->dst, "mode=0755,size=1m", nsd | MS_NOEXEC, 0); break;
        case SPEC_FILE: add(p, OP_WRITE_FILE, NULL, x->dst, x->data ? x->data : "", 0, 0); break;
        case SPEC_SYMLINK: add(p, OP_SYMLINK, x->src, x->dst, NULL, 0, 0); break;
        case SPEC_READONLY: add(p, OP_RO_SELF, NULL, x->dst, NULL, 0, 0); break;
        }
    }
}

static int set_readonly(const char *path, int recursive, jerr *e)
{
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    if (syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &attr, sizeof attr) == 0)
        return 0;
    if (errno != ENOSYS)
        return jerr_sys(e, "make %s read-only", path);
    /* Kernels before 5.12: remount, keeping the flags the kernel may have locked. */
    struct statvfs sv;
    unsigned long keep = 0;
    if (statvfs(path, &sv) == 0) {
        if (sv.f_flag & ST_NOEXEC) keep |= MS_NOEXEC;
        if (sv.f_flag & ST_NOATIME) keep |= MS_NOATIME;
        if (sv.f_flag & ST_NODIRATIME) keep |= MS_NODIRATIME;
        if (sv.f_flag & ST_RELATIME) keep |= MS_RELATIME;
    }
    if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | keep, NULL) < 0)
        return jerr_sys(e, "remount %s read-only", path);
    return 0;
}

static int make_target(const char *path, int dir, jerr *e)
{
    /* Most targets sit right under the new root: try that before walking every parent. */
    if (dir ? mkdir(path, 0755) == 0 || errno == EEXIST : false)
        return 0;
    if (!dir) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            close(fd);
            return 0;
        }
    }
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = 0;
        if (mkdir_p(parent, 0755, e) < 0)
            return -1;
    }
    if (dir) {
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            return jerr_sys(e, "mkdir %s", path);
    } else {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return jerr_sys(e, "create mount point %s", path);
        close(fd);
    }
    return 0;
}

static int make_parent(const char *path, jerr *e)
{
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return 0;
    *slash = 0;
    return mkdir_p(parent, 0755, e);
}

int mounts_names_text(const char *hostname, char *hosts, size_t hlen, char *name, size_t nlen, jerr *e)
{
    size_t n = strlen(hostname);
    /* a hostname (RFC 1123 labels): nothing that could end the line or add a name */
    if (!n || n > 64 || strspn(hostname, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != n ||
        hostname[0] == '-' || hostname[0] == '.')
        return jerr_set(e, EINVAL, "the job's hostname '%.80s' is not a hostname", hostname);
    /* the hostname on 127.0.0.1 only, as Debian puts it on 127.0.1.1 only: a name that also
     * resolved to ::1 would be tried there first, and a host without IPv6 gives the job's
     * network namespace no ::1 */
    int a = snprintf(hosts, hlen,
                     "# this job's own (joblet): its hostname and localhost on the loopback\n"
                     "127.0.0.1\tlocalhost\n"
                     "127.0.0.1\t%s\n"
                     "::1\tlocalhost ip6-localhost ip6-loopback\n",
                     hostname);
    int b = snprintf(name, nlen, "%s\n", hostname);
    if (a < 0 || (size_t)a >= hlen || b < 0 || (size_t)b >= nlen)
        return jerr_set(e, ENAMETOOLONG, "the job's /etc/hosts does not fit");
    return 0;
}

/* data into a new file at path (0444), which must not exist. */
static int new_file(const char *path, const char *data, jerr *e)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (fd < 0)
        return jerr_sys(e, "create %s", path);
    size_t len = strlen(data);
    ssize_t w = write(fd, data, len);
    int err = errno;
    close(fd);
    if (w < 0 || (size_t)w != len)
        return jerr_set(e, w < 0 ? err : EIO, "write %s: %s", path, strerror(w < 0 ? err : EIO));
    return 0;
}

/* Overlay's lowerdir escapes ':', ',' and '\\' in a path with a backslash. */
static int lower_escaped(char *out, size_t len, const char *path)
{
    size_t o = 0;
    for (const char *p = path; *p; p++) {
        if (o + 3 >= len)
            return -1;
        if (*p == ':' || *p == ',' || *p == '\\')
            out[o++] = '\\';
        out[o++] = *p;
    }
    out[o] = 0;
    return 0;
}

/* The job's /etc/hosts (its hostname and localhost on the loopback) and, where the tree has
 * one, /etc/hostname (its hostname), read-only, made per job in its root tmpfs: the host's
 * and a runtime's files stay as they are. Where the tree's /etc/hosts is a file, the job's is
 * bound over it (each bind's source is unlinked at once: the mount keeps it). Where it is
 * missing (a runtime's tree usually has none) or a link, there is nothing to bind over in a
 * read-only /etc: /etc becomes a read-only overlay of the two files on the tree's /etc (whose
 * own submounts it then does not show), its top layer a small tmpfs detached at once (the
 * overlay keeps its own reference). */
static int etc_names(const char *root, const job_spec *s, jerr *e)
{
    char hosts[512], name[80], etc[4200], path[4300], tmp[4300];
    if (mounts_names_text(s->hostname, hosts, sizeof hosts, name, sizeof name, e) < 0)
        return -1;
    snprintf(etc, sizeof etc, "%s/etc", root);
    struct stat st, hst, nst;
    if (lstat(etc, &st) < 0) {
        /* a tree without /etc: the files go straight into the root tmpfs */
        if (mkdir(etc, 0755) < 0)
            return jerr_sys(e, "mkdir /etc");
        snprintf(path, sizeof path, "%s/hosts", etc);
        if (new_file(path, hosts, e) < 0)
            return -1;
        snprintf(path, sizeof path, "%s/hostname", etc);
        return new_file(path, name, e);
    }
    if (!S_ISDIR(st.st_mode))
        return 0; /* a tree whose /etc is a link (copied as one): the job's /etc is where it points */
    snprintf(path, sizeof path, "%s/hosts", etc);
    bool hosts_file = lstat(path, &hst) == 0 && S_ISREG(hst.st_mode);
    snprintf(path, sizeof path, "%s/hostname", etc);
    bool have_name = lstat(path, &nst) == 0;
    if (hosts_file) {
        const char *files[2][2] = {{"hosts", hosts}, {"hostname", name}};
        for (size_t i = 0; i < 2; i++) {
            if (i == 1 && !(have_name && S_ISREG(nst.st_mode)))
                break; /* no /etc/hostname (or not a file): the job's name is uname's */
            snprintf(tmp, sizeof tmp, "%s/.joblet-%s", root, files[i][0]);
            snprintf(path, sizeof path, "%s/%s", etc, files[i][0]);
            /* a job on a network: its network's hosts file itself, which joblet keeps current
             * (rewritten in place) as the network's jobs come and go */
            bool shared = i == 0 && s->net && s->net->hosts_file;
            int rc = shared ? 0 : new_file(tmp, files[i][1], e);
            if (rc == 0 && mount(shared ? s->net->hosts_file : tmp, path, NULL, MS_BIND, NULL) < 0)
                rc = jerr_sys(e, "bind the job's /etc/%s", files[i][0]);
            if (rc == 0 && mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                 NULL) < 0)
                rc = jerr_sys(e, "make the job's /etc/%s read-only", files[i][0]);
            if (!shared && unlink(tmp) < 0 && rc == 0)
                rc = jerr_sys(e, "unlink %s", tmp);
            if (rc < 0)
                return -1;
        }
        return 0;
    }
    char upper[4300], opts[8800], a[4400], b[4400];
    snprintf(upper, sizeof upper, "%s/.joblet-etc", root);
    if (mkdir(upper, 0755) < 0)
        return jerr_sys(e, "mkdir %s", upper);
    int rc = 0;
    if (mount("tmpfs", upper, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=16k") < 0)
        rc = jerr_sys(e, "mount a tmpfs for the job's /etc/hosts");
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/hosts", upper);
        rc = new_file(path, hosts, e);
        snprintf(path, sizeof path, "%s/hostname", upper);
        if (rc == 0 && have_name)
            rc = new_file(path, name, e);
        if (rc == 0 && (lower_escaped(a, sizeof a, upper) < 0 || lower_escaped(b, sizeof b, etc) < 0))
            rc = jerr_set(e, ENAMETOOLONG, "the job's root path is too long for an overlay");
        snprintf(opts, sizeof opts, "lowerdir=%s:%s", a, b);
        /* two lower layers and no upper: a read-only overlay. A kernel without overlayfs, or
         * one that cannot lay it over this tree's file system: the job runs without the file,
         * as jobs did before it had one, rather than not at all */
        if (rc == 0 && mount("overlay", etc, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0 &&
            errno != ENODEV && errno != EINVAL && errno != EOPNOTSUPP)
            rc = jerr_sys(e, "mount the job's /etc (an overlay with its own hosts file)");
        if (umount2(upper, MNT_DETACH) < 0 && rc == 0)
            rc = jerr_sys(e, "detach %s", upper);
    }
    if (rmdir(upper) < 0 && rc == 0)
        rc = jerr_sys(e, "rmdir %s", upper);
    return rc;
}

/* A job on a network: the resolvers joblet chose (the host's, or network.dns: a host whose
 * own resolver listens on its loopback cannot be reached from the job's namespace) bound over
 * the tree's /etc/resolv.conf, read-only, where that is a file; else the tree's stays. */
static int etc_resolv(const char *root, const job_spec *s, jerr *e)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/etc/resolv.conf", root);
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return 0;
    if (mount(s->net->resolv_file, path, NULL, MS_BIND, NULL) < 0)
        return jerr_sys(e, "bind %s on the job's /etc/resolv.conf", s->net->resolv_file);
    if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        return jerr_sys(e, "make the job's /etc/resolv.conf read-only");
    return 0;
}

static int exec_op(const mount_op *op, const char *root, const job_spec *s, jerr *e)
{
    char dst[4096], link[4096];
    snprintf(dst, sizeof dst, "%s%s", root, op->dst);
    const char *src = op->src;
    struct stat st;
    switch (op->kind) {
    case OP_DIR_BIND_RO:
    case OP_BIND_RW:
        if (op->kind == OP_BIND_RW && !src)
            src = s->work_dir;
        if (lstat(src, &st) < 0) {
            if (op->optional && errno == ENOENT)
                return 0;
            return jerr_sys(e, "mount source %s", src);
        }
        if (S_ISLNK(st.st_mode) && op->optional) {
            ssize_t n = readlink(src, link, sizeof link - 1);
            if (n < 0)
                return jerr_sys(e, "readlink %s", src);
            link[n] = 0;
            if (symlink(link, dst) < 0)
                return jerr_sys(e, "symlink %s", dst);
            return 0;
        }
        if (make_target(dst, S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode), e) < 0)
            return -1;
        if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
            return jerr_sys(e, "bind %s on %s", src, op->dst);
        if (op->kind == OP_DIR_BIND_RO)
            return set_readonly(dst, 1, e);
        if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | op->flags, NULL) < 0)
            return jerr_sys(e, "remount %s nosuid,nodev", op->dst);
        return 0;
    case OP_FILE_BIND:
        if (make_target(dst, 0, e) < 0)
            return -1;
        if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
            return jerr_sys(e, "bind %s", src);
        return 0;
    case OP_DEVNODE:
        if (stat(src, &st) < 0)
            return jerr_sys(e, "device node %s", src);
        if (!S_ISCHR(st.st_mode))
            return jerr_set(e, EINVAL, "%s on the host is not a character device", src);
        if (mknod(dst, S_IFCHR | (st.st_mode & 07777), st.st_rdev) < 0) /* umask 0 (mounts_prepare) */
            return jerr_sys(e, "create %s", op->dst);
        return 0;
    case OP_TMPFS:
    case OP_PROC:
    case OP_SYSFS:
    case OP_DEVPTS:
        if (make_target(dst, 1, e) < 0)
            return -1;
        if (mount(src, dst, src, op->flags, op->data) < 0)
            return jerr_sys(e, "mount %s on %s", src, op->dst);
        return 0;
    case OP_SYMLINK:
        if (symlink(src, dst) < 0 && (errno != ENOENT || make_parent(dst, e) < 0 || symlink(src, dst) < 0))
            return jerr_sys(e, "symlink %s", op->dst);
        return 0;
    case OP_DEVNODE_CHECKED:
        /* The node the job gets must be the device discovery named: a host node that is
         * missing or has other numbers means the inventory is stale, not a guess to make. */
        if (stat(src, &st) < 0)
            return jerr_sys(e, "device node %s (for %s)", src, op->dst);
        if (!S_ISCHR(st.st_mode) || st.st_rdev != op->rdev)
            return jerr_set(e, EINVAL, "%s on the host is %s %u:%u, expected character device %u:%u", src,
                            S_ISCHR(st.st_mode) ? "character device" : "not a character device", major(st.st_rdev),
                            minor(st.st_rdev), major(op->rdev), minor(op->rdev));
        /* 0666 whatever the host's mode (often 0660 root:video): the job runs as a uid of its
         * own and must be able to use what it was granted; this /dev is the job's alone and the
         * device filter, not the mode, decides which devices it may open. */
        if (mknod(dst, S_IFCHR | 0666, op->rdev) < 0 &&
            (errno != ENOENT || make_parent(dst, e) < 0 || mknod(dst, S_IFCHR | 0666, op->rdev) < 0))
            return jerr_sys(e, "create %s", op->dst);
        return 0;
    case OP_WRITE_FILE: {
        if (make_parent(dst, e) < 0)
            return -1;
        int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0)
            return jerr_sys(e, "create %s", op->dst);
        size_t len = strlen(op->data);
        ssize_t w = write(fd, op->data, len);
        close(fd);
        if (w < 0 || (size_t)w != len)
            return jerr_sys(e, "write %s", op->dst);
        return 0;
    }
    case OP_MASK: {
        /* Directories share one empty read-only tmpfs: a bind of it costs no superblock to
         * create and, when the job ends, to tear down. (Static: the init runs the plan once.) */
        static char empty_dir[4096];
        /* a stat first, not a bind of /dev/null that fails on a directory: a failed bind has
         * cloned a mount already, and dropping it costs an expedited RCU grace period */
        if (lstat(dst, &st) < 0)
            return 0; /* not present on this kernel: nothing to hide */
        if (S_ISDIR(st.st_mode) && empty_dir[0]) {
            if (mount(empty_dir, dst, NULL, MS_BIND, NULL) < 0)
                return jerr_sys(e, "mask %s", op->dst);
        } else if (S_ISDIR(st.st_mode)) {
            if (mount("tmpfs", dst, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0") < 0)
                return jerr_sys(e, "mask %s", op->dst);
            snprintf(empty_dir, sizeof empty_dir, "%s", dst);
        } else if (mount("/dev/null", dst, NULL, MS_BIND, NULL) < 0) {
            return jerr_sys(e, "mask %s", op->dst);
        }
        return 0;
    }
    case OP_ETC_NAMES:
        if (etc_names(root, s, e) < 0)
            return -1;
        return s->net && s->net->resolv_file ? etc_resolv(root, s, e) : 0;
    case OP_RO_SELF:
        /* a path that is not there (ENOENT, ENOTDIR) has nothing to protect */
        if (mount(dst, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
            return errno == ENOENT || errno == ENOTDIR ? 0 : jerr_sys(e, "bind %s", op->dst);
        return set_readonly(dst, 1, e);
    }
    return 0;
}

int mounts_prepare(const job_spec *s, jerr *e)
{
    const char *root = s->root_mount;
    /* Nothing below may propagate back to the host. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return jerr_sys(e, "make / private");
    if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
        return jerr_sys(e, "mount the job's root tmpfs on %s", root);
    static plan p; /* static: the init is single-threaded and runs this once */
    build_plan(s, &p);
    /* every mode of the plan exactly as written (a device node's needs no chmod after it);
     * the command gets the umask the init was given */
    mode_t mask = umask(0);
    for (size_t i = 0; i < p.n; i++)
        if (exec_op(&p.ops[i], root, s, e) < 0)
            return -1;
    umask(mask);
    return 0;
}

int mounts_pivot(const job_spec *s, jerr *e)
{
    const char *root = s->root_mount;
    if (chdir(root) < 0)
        return jerr_sys(e, "chdir %s", root);
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        return jerr_sys(e, "pivot_root into %s", root);
    if (umount2(".", MNT_DETACH) < 0)
        return jerr_sys(e, "detach the host's root");
    if (chdir("/") < 0)
        return jerr_sys(e, "chdir /");
    /* The root itself holds only mount points and links: nothing there is the job's to change. */
    if (set_readonly("/", 0, e) < 0)
        return -1;
    return 0;
}
