/* joblet-copy — copies files out of a job and into it for `rnx job cp` (docs/cli.md, docs/api.md
 * "Copying files"). joblet starts one per copy and watches it from its event loop
 * (core/job_cp.c); the bytes go through a pipe, as a tar stream, never through the daemon's
 * memory whole.
 *
 *   joblet-copy MODE UID GID ROOT PATH NAME MAX CGROOT
 *     MODE    stat: PATH's type, size and mode (no walk)
 *             out:  PATH (a file, a directory with everything below it, a symlink as a symlink)
 *                   as a pax tar on stdout, its top entry named NAME
 *             outL: the same, a symlink at PATH followed (rnx job cp -L)
 *             in:   a tar on stdin extracted into the directory PATH, which must exist
 *     ROOT    "ns": the job's own view, through the mount namespace of the process whose
 *             pidfd is fd 4 (the job's init, while the job runs); or a host directory that
 *             is the root PATH is read in (the job's /work once the job has ended)
 *     MAX     in: bytes the files may hold together (jobs.max_upload_bytes); 0 = no bound
 *     CGROOT  the cgroup level of the job's owner (exec/cgroup.h: "<cgroup.root>/user-<uid>"):
 *             the copy counts among the owner's tasks
 *
 * The plan, then the steps, as bubblewrap does it:
 *   1. enter the owner's cgroup level (its pids.max holds the copy too, and the CPU the copy
 *      spends, a tar of gigabytes maybe, is the owner's: cg_user_enter_cpu); in, into a running
 *      job: its memory cgroup too (join_job_memory: what lands in its tmpfs is its memory)
 *   2. enter the job's root: setns into its mount namespace, or chroot into ROOT
 *   3. become the job's user: every capability dropped, uid and gid the job's, no_new_privs,
 *      not dumpable. From here on every path is resolved by the kernel, in the job's root, with
 *      the job's rights: a symlink the job made leads where the job itself could go, no
 *      further, and a file the job cannot read cannot be copied.
 *   4. check PATH, then report on fd 3 before a byte of data moves: "ok TYPE BYTES ENTRIES
 *      MODE" (out and stat: what will come; in: the directory) or "err ERRNO WHY"
 *   5. stream; then "done BYTES ENTRIES" or "err ERRNO WHY" on fd 3.
 * The exit status is 0 or 1 as well. Nothing here loads code after step 2 (no user or group
 * names are looked up, no locale or charset module is opened): the job's root is the job's.
 * What charset code there is, is set up before step 1: out's names are written in the C.UTF-8
 * locale, read from the host, and glibc's iconv has read the host's gconv configuration (its
 * UTF-8 and ASCII converters are built in), so a conversion later never reads the job's. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <iconv.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/err.h"
#include "../common/parse.h"
#include "cgroup.h"
#include "isolate.h"

enum copy_mode { COPY_STAT, COPY_OUT, COPY_OUT_FOLLOW, COPY_IN };

typedef struct copy_plan {
    enum copy_mode mode;
    uid_t uid;
    gid_t gid;
    bool in_ns;               /* ROOT "ns": the job's mount namespace through fd 4 */
    const char *root;         /* else the host directory to chroot into */
    const char *path;         /* inside the root */
    const char *name;         /* out: the top entry's name */
    uint64_t max;             /* in: bytes of the files together, 0 = no bound */
    const char *cgroot;
} copy_plan;

#define STATUS_FD 3
#define PIDFD_FD 4

static void report(const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    for (int i = 0; i < n; i++) /* one line: a name with a newline in it stays on it */
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[n++] = '\n';
    ssize_t w = write(STATUS_FD, line, (size_t)n);
    (void)w;
}

_Noreturn static void fail(int err, const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    report("err %d %s", err ? err : EIO, why);
    _exit(1);
}

static int parse_plan(int argc, char **argv, copy_plan *p)
{
    if (argc != 9)
        return -1;
    static const char *const modes[] = {"stat", "out", "outL", "in"};
    p->mode = (enum copy_mode)-1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(argv[1], modes[i]))
            p->mode = (enum copy_mode)i;
    uint64_t uid, gid;
    if ((int)p->mode < 0 || parse_u64(argv[2], &uid) < 0 || parse_u64(argv[3], &gid) < 0 || uid >= UINT32_MAX ||
        gid >= UINT32_MAX || parse_u64(argv[7], &p->max) < 0)
        return -1;
    p->uid = (uid_t)uid;
    p->gid = (gid_t)gid;
    p->in_ns = !strcmp(argv[4], "ns");
    p->root = argv[4];
    p->path = argv[5];
    p->name = argv[6];
    p->cgroot = argv[8];
    if (p->path[0] != '/' || (!p->in_ns && p->root[0] != '/') || strchr(p->name, '/'))
        return -1;
    return 0;
}

/* The pid of the process the pidfd on fd is of (its fdinfo's "Pid:"); 0 when unknown. */
static pid_t pidfd_pid(int fd)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    FILE *f = fopen(path, "re");
    long pid = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Pid: %ld", &pid) == 1)
            break;
    if (f)
        fclose(f);
    return pid > 0 ? (pid_t)pid : 0;
}

/* in, into a running job: the copy joins the job's memory cgroup (the cgroup2 one where memory
 * is cgroup2's), the one its init is in. What a copy writes into the job's /tmp, /dev/shm or a
 * memory volume is tmpfs pages, charged to the cgroup of the process that writes them and held
 * until the job ends: they are the job's memory, as if the job had written them. In the owner's
 * level (cgroup2) or the daemon's own cgroup (v1), where no limit is, a job of --max-memory=32MB
 * held 70 MB in its /tmp through ten copies of 7 MB (test_hostile_cp2.py), while writing them
 * itself got it killed at 32 MB. Read from the host's /proc before step 2; the pid is the init's
 * only while its pidfd says it lives, checked after the read. On v1 and hybrid hosts only the
 * memory cgroup: the CPU the copy spends stays its owner's level's (cg_user_enter_cpu); on a
 * cgroup2 host the job's one cgroup, CPU and tasks included, as joblet-exec's processes. */
static void join_job_memory(const cg_host *uh)
{
    jerr e = {0};
    cg_given g, mem = {0};
    pid_t pid = pidfd_pid(PIDFD_FD);
    if (!pid || cg_given_of_pid(uh, pid, &g) < 0)
        fail(errno ? errno : ESRCH, "the job's cgroups: %s (has the job ended?)", strerror(errno ? errno : ESRCH));
    if (syscall(SYS_pidfd_send_signal, PIDFD_FD, 0, NULL, 0) < 0)
        fail(ESRCH, "the job's init ended: has the job ended?");
    if (uh->v1[CGC_MEMORY][0])
        memcpy(mem.v1[CGC_MEMORY], g.v1[CGC_MEMORY], sizeof mem.v1[CGC_MEMORY]);
    else
        memcpy(mem.unified, g.unified, sizeof mem.unified);
    if (!cg_given_any(&mem)) /* the init is at the hierarchy's root: the job has no memory cgroup */
        return;
    cg_job cg;
    if (cg_job_given(uh, "copy", &mem, &cg, &e) < 0 || cg_enter(&cg, &e) < 0)
        fail(e.code, "join the job's memory cgroup: %s", e.msg);
}

/* Steps 1 to 3. */
static void enter(const copy_plan *p)
{
    jerr e = {0};
    cg_host uh;
    bool cgroups = cg_host_detect(&uh, p->cgroot, &e) == 0;
    if (cgroups && (cg_user_enter(&uh, &e) < 0 || cg_user_enter_cpu(&uh, &e) < 0))
        fail(e.code, "%s", e.msg);
    if (cgroups && p->in_ns && p->mode == COPY_IN)
        join_job_memory(&uh);
    if (p->in_ns) {
        if (setns(PIDFD_FD, CLONE_NEWNS) < 0)
            fail(errno, "enter the job's mount namespace: %s (has the job ended?)", strerror(errno));
        close(PIDFD_FD);
        /* setns put the root and the working directory at the namespace's root: the job's */
    } else if (chroot(p->root) < 0 || chdir("/") < 0) {
        fail(errno, "enter %s: %s", p->root, strerror(errno));
    }
    if (caps_drop_and_setuid(p->uid, p->gid, NULL, 0, &e) < 0)
        fail(e.code, "%s", e.msg);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static const char *type_name(mode_t m)
{
    return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

/* out's names: UTF-8, as pax wants them (hdrcharset left out: GNU tar 1.34 does not know the
 * keyword and says so for every entry), and a name or symlink target that is not UTF-8 as its
 * bytes, that entry alone marked hdrcharset=BINARY; libarchive does that in a UTF-8 locale
 * (names_init). Without one, or when a name holds a UTF-16 surrogate, which libarchive would
 * rewrite (a CESU-8 pair becomes one 4-byte sequence), every entry is marked BINARY. */
static bool names_utf8;

static void names_init(void)
{
    names_utf8 = setlocale(LC_CTYPE, "C.UTF-8") && !strcmp(nl_langinfo(CODESET), "UTF-8");
    if (!names_utf8)
        setlocale(LC_CTYPE, "C");
}

static bool names_surrogate(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)s[0] == 0xed && (unsigned char)s[1] >= 0xa0 && (unsigned char)s[1] <= 0xbf)
            return true;
    return false;
}

/* Of a name and, for a symlink, its target. */
static bool names_entry_surrogate(const char *path, mode_t m)
{
    char target[PATH_MAX];
    ssize_t n;
    if (names_surrogate(path))
        return true;
    if (!S_ISLNK(m) || (n = readlink(path, target, sizeof target - 1)) < 0)
        return false;
    target[n] = 0;
    return names_surrogate(target);
}

/* glibc's iconv reads its configuration (gconv-modules) on its first use, from the root it
 * runs in; read here, before step 2, it is the host's. */
static void charsets_init(void)
{
    iconv_t cd = iconv_open("UTF-8", "ANSI_X3.4-1968");
    if (cd != (iconv_t)-1)
        iconv_close(cd);
}

/* Step 4 of out: what the walk will send, and the first thing in it the job's user may not read
 * (refused now, before a byte is sent, rather than found half way). */
static uint64_t walk_bytes, walk_entries;
static char walk_denied[PATH_MAX];

static int walk_one(const char *fpath, const struct stat *st, int flag, struct FTW *ftw)
{
    walk_entries++;
    if (names_utf8 && names_entry_surrogate(fpath, flag == FTW_SL ? S_IFLNK : 0))
        names_utf8 = false;
    if (flag == FTW_DNR || flag == FTW_NS) {
        snprintf(walk_denied, sizeof walk_denied, "%s", fpath);
        return 1;
    }
    if (S_ISREG(st->st_mode)) {
        walk_bytes += (uint64_t)st->st_size;
        if (access(fpath, R_OK) < 0) { /* the real ids are the job's: access is exact */
            snprintf(walk_denied, sizeof walk_denied, "%s", fpath);
            return 1;
        }
    }
    return 0;
}

/* An entry of the walk of `from` named under `to` instead: "from" is "to", "from/x" is "to/x".
 * from may be "/" (the whole of a chrooted /work): its entries are "/x". */
static void entry_rename(struct archive_entry *ent, const char *from, const char *to)
{
    const char *p = archive_entry_pathname(ent);
    size_t fl = strlen(from);
    while (fl && from[fl - 1] == '/')
        fl--;
    const char *rest = strlen(p) > fl ? p + fl : "";
    while (rest[0] == '/' && rest[1] == '/')
        rest++;
    char name[PATH_MAX + 256];
    snprintf(name, sizeof name, "%s%s", to, strcmp(rest, "/") ? rest : "");
    archive_entry_copy_pathname(ent, name);
}

static void send_out(const copy_plan *p, const char *path)
{
    struct archive *disk = archive_read_disk_new(), *tar = archive_write_new();
    if (!disk || !tar)
        fail(ENOMEM, "no memory for the archive");
    /* pax (the POSIX tar): any length of name, sizes past 8 GiB, nanosecond times; names as the
     * bytes they are (names_utf8: UTF-8 ones checked, not converted; nothing loaded for it) */
    if (archive_write_set_format_pax_restricted(tar) != ARCHIVE_OK ||
        archive_write_set_format_option(tar, "pax", "hdrcharset", names_utf8 ? "UTF-8" : "BINARY") < ARCHIVE_WARN ||
        archive_write_set_bytes_in_last_block(tar, 1) != ARCHIVE_OK || archive_write_open_fd(tar, 1) != ARCHIVE_OK)
        fail(EIO, "start the archive: %s", archive_error_string(tar));
    archive_read_disk_set_symlink_physical(disk);
    archive_read_disk_set_behavior(disk, ARCHIVE_READDISK_NO_XATTR | ARCHIVE_READDISK_NO_ACL |
                                             ARCHIVE_READDISK_NO_FFLAGS);
    if (archive_read_disk_open(disk, path) != ARCHIVE_OK)
        fail(errno ? errno : EIO, "%s: %s", p->path, archive_error_string(disk));
    char *buf = malloc(1 << 20);
    if (!buf)
        fail(ENOMEM, "no memory for the copy");
    uint64_t sent = 0;
    for (;;) {
        struct archive_entry *ent = archive_entry_new();
        int r = archive_read_next_header2(disk, ent);
        if (r == ARCHIVE_EOF) {
            archive_entry_free(ent);
            break;
        }
        if (r < ARCHIVE_WARN)
            fail(errno ? errno : EIO, "%s", archive_error_string(disk));
        /* only what the walk found readable is sent: an entry that changed since is still
         * read with the job's rights */
        if (archive_entry_filetype(ent) == AE_IFDIR)
            archive_read_disk_descend(disk);
        entry_rename(ent, path, p->name);
        const char *target = archive_entry_symlink(ent);
        if (names_utf8 && (names_surrogate(archive_entry_pathname(ent)) || (target && names_surrogate(target))))
            fail(EILSEQ, "%s: a name holding a UTF-16 surrogate, made during the copy", archive_entry_pathname(ent));
        archive_entry_set_uname(ent, NULL);
        archive_entry_set_gname(ent, NULL);
        bool data = archive_entry_filetype(ent) == AE_IFREG && archive_entry_size(ent) > 0;
        if (archive_write_header(tar, ent) < ARCHIVE_WARN)
            fail(EPIPE, "write %s: %s", archive_entry_pathname(ent), archive_error_string(tar));
        sent++;
        if (data) {
            la_ssize_t n;
            while ((n = archive_read_data(disk, buf, 1 << 20)) > 0)
                if (archive_write_data(tar, buf, (size_t)n) < 0)
                    fail(EPIPE, "write %s: %s", archive_entry_pathname(ent), archive_error_string(tar));
            if (n < 0)
                fail(errno ? errno : EIO, "read %s: %s", archive_entry_pathname(ent), archive_error_string(disk));
        }
        archive_entry_free(ent);
    }
    free(buf);
    archive_read_close(disk);
    archive_read_free(disk);
    /* Fewer entries than step 4 found: some vanished meanwhile, a directory removed whole reads as
     * an empty one (no error: its walk just ends). The stream ends cut short, as for a file that
     * vanished under its read (as tar's "file removed before we read it"), not whole; the tar's
     * end blocks are not written. (Entries made meanwhile may hide as many that vanished.) */
    if (sent < walk_entries)
        fail(ENOENT, "%s: %llu of the %llu entries found at the copy's start vanished during it: the copy is cut "
                     "short", p->path, (unsigned long long)(walk_entries - sent), (unsigned long long)walk_entries);
    if (archive_write_close(tar) != ARCHIVE_OK)
        fail(EPIPE, "end the archive: %s", archive_error_string(tar));
    archive_write_free(tar);
    report("done %llu %llu", (unsigned long long)walk_bytes, (unsigned long long)walk_entries);
}

static void out(const copy_plan *p)
{
    struct stat st;
    const char *path = p->path;
    char target[PATH_MAX];
    if (p->mode == COPY_OUT_FOLLOW) {
        /* -L: the symlink at PATH is followed, in the job's root; what lies below is not */
        if (!realpath(p->path, target))
            fail(errno, "%s: %s", p->path, strerror(errno));
        path = target;
    }
    if (lstat(path, &st) < 0)
        fail(errno, "%s: %s", p->path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        if (nftw(path, walk_one, 64, FTW_PHYS) != 0)
            fail(walk_denied[0] ? EACCES : errno, "%s: %s", walk_denied[0] ? walk_denied : p->path,
                 walk_denied[0] ? "permission denied to the job's user" : strerror(errno));
    } else {
        if (names_utf8 && (names_surrogate(p->name) || names_entry_surrogate(path, st.st_mode)))
            names_utf8 = false;
        walk_entries = 1;
        walk_bytes = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
        if (S_ISREG(st.st_mode) && access(path, R_OK) < 0)
            fail(errno, "%s: %s", p->path, strerror(errno));
    }
    report("ok %s %llu %llu %o", type_name(st.st_mode), (unsigned long long)walk_bytes,
           (unsigned long long)walk_entries, (unsigned)(st.st_mode & 07777));
    if (p->mode != COPY_STAT)
        send_out(p, path);
}

/* A symlink is followed (where a copy into it lands), and reported as one when it leads
 * nowhere. */
static void stat_only(const copy_plan *p)
{
    struct stat st;
    if (stat(p->path, &st) < 0 && (errno != ENOENT || lstat(p->path, &st) < 0))
        fail(errno, "%s: %s", p->path, strerror(errno));
    report("ok %s %llu 1 %o", type_name(st.st_mode), S_ISREG(st.st_mode) ? (unsigned long long)st.st_size : 0ull,
           (unsigned)(st.st_mode & 07777));
}

/* The archive's entries are extracted relative to the directory, never above it (no "..",
 * no absolute name, no symlink on the way), as the job's user, with the modes and times they
 * carry and the job's user as owner. */
static void in(const copy_plan *p)
{
    struct stat st;
    if (stat(p->path, &st) < 0)
        fail(errno, "%s: %s", p->path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) /* there, but no place to extract into: a bad parameter (Docker's 400) */
        fail(EINVAL, "path: %s is not a directory: an archive is extracted into a directory", p->path);
    if (chdir(p->path) < 0)
        fail(errno, "%s: %s", p->path, strerror(errno));
    /* said before a byte moves, and as what it is (libarchive's first failed unlink would say
     * "Could not unlink") */
    struct statvfs fs;
    if (statvfs(".", &fs) == 0 && (fs.f_flag & ST_RDONLY))
        fail(EROFS, "%s: a read-only file system in the job (a volume mounted :ro, or the job's system "
                    "directories); /work and /tmp are the job's to write", p->path);
    report("ok dir 0 0 %o", (unsigned)(st.st_mode & 07777));
    struct archive *tar = archive_read_new(), *disk = archive_write_disk_new();
    if (!tar || !disk)
        fail(ENOMEM, "no memory for the archive");
    /* names as their bytes: in the C locale a UTF-8 one does not convert to ASCII and libarchive
     * keeps it as it came (an ARCHIVE_WARN), one marked BINARY is not converted at all */
    archive_read_support_format_tar(tar);
    archive_write_disk_set_options(disk, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_UNLINK |
                                             ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                             ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
    if (archive_read_open_fd(tar, 0, 1 << 16) != ARCHIVE_OK)
        fail(EINVAL, "the archive: %s", archive_error_string(tar));
    uint64_t bytes = 0, entries = 0;
    for (;;) {
        struct archive_entry *ent;
        int r = archive_read_next_header(tar, &ent);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN)
            fail(EINVAL, "the archive: %s", archive_error_string(tar));
        mode_t t = archive_entry_filetype(ent);
        if (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK)
            fail(EINVAL, "%s: only files, directories and symlinks are copied into a job",
                 archive_entry_pathname(ent));
        if (t == AE_IFREG && archive_entry_hardlink(ent))
            fail(EINVAL, "%s: hard links are not copied into a job", archive_entry_pathname(ent));
        entries++;
        if (t == AE_IFREG)
            bytes += (uint64_t)archive_entry_size(ent);
        if (p->max && bytes > p->max)
            fail(EFBIG, "the files hold more than %llu bytes (jobs.max_upload_bytes)", (unsigned long long)p->max);
        archive_entry_set_perm(ent, archive_entry_perm(ent) & 0777); /* as uploads: no set-id bits */
        if (archive_write_header(disk, ent) < ARCHIVE_WARN)
            fail(archive_errno(disk), "%s: %s", archive_entry_pathname(ent), archive_error_string(disk));
        const void *buf;
        size_t n;
        la_int64_t off;
        while ((r = archive_read_data_block(tar, &buf, &n, &off)) == ARCHIVE_OK)
            if (archive_write_data_block(disk, buf, n, off) < ARCHIVE_WARN)
                fail(archive_errno(disk), "%s: %s", archive_entry_pathname(ent), archive_error_string(disk));
        if (r != ARCHIVE_EOF)
            fail(EINVAL, "%s: the archive ended inside it: %s", archive_entry_pathname(ent), archive_error_string(tar));
        if (archive_write_finish_entry(disk) < ARCHIVE_WARN)
            fail(archive_errno(disk), "%s: %s", archive_entry_pathname(ent), archive_error_string(disk));
    }
    if (archive_write_close(disk) != ARCHIVE_OK)
        fail(archive_errno(disk), "finish: %s", archive_error_string(disk));
    archive_read_free(tar);
    archive_write_free(disk);
    report("done %llu %llu", (unsigned long long)bytes, (unsigned long long)entries);
}

int main(int argc, char **argv)
{
    copy_plan p;
    signal(SIGPIPE, SIG_IGN); /* a reader that went away is an error to report, not a death */
    if (parse_plan(argc, argv, &p) < 0) {
        fprintf(stderr, "usage: joblet-copy stat|out|outL|in UID GID ns|ROOT PATH NAME MAX CGROOT\n");
        fail(EINVAL, "joblet-copy: bad arguments");
    }
    caps_last_cap(); /* read /proc/sys now: after the setns, /proc is the job's */
    if (p.mode == COPY_OUT || p.mode == COPY_OUT_FOLLOW)
        names_init();
    charsets_init();
    enter(&p);
    umask(0);        /* in: the modes the archive carries, as they are */
    if (p.mode == COPY_STAT)
        stat_only(&p);
    else if (p.mode == COPY_IN)
        in(&p);
    else
        out(&p);
    return 0;
}
