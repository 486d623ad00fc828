#include "cgroup.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../common/util.h"
#include "bpfdev.h"
#include "cgroup_fs.h"
#include "cgroup_v1.h"
#include "cgroup_v2.h"
#include "mountinfo.h"

#define DEFAULT_ROOT "joblet"
#define JOB_NAME_SIZE sizeof(((cg_job *)NULL)->name)
#define JOB_PATH_SIZE sizeof(((cg_job *)NULL)->unified_path)
/* How long cg_destroy waits for the kernel to release a cgroup whose tasks were just killed. */
#define DESTROY_WAIT_MS 1000
#define DESTROY_POLL_MS 10
/* Passes over cgroup.procs when there is no cgroup.kill: children forked between listing and
 * killing show up in the next pass; the bound keeps a task stuck in D state from hanging us. */
#define KILL_PASSES 10
#define KILL_PASS_GAP_MS 2
/* A job's directories at most: one per v1 controller, its freezer's and its cgroup2 one. */
#define JOB_DIRS_MAX (CGC_N + 2)

static const char *const ctrl_names[CGC_N] = {
    [CGC_CPU] = "cpu",     [CGC_CPUACCT] = "cpuacct", [CGC_MEMORY] = "memory",  [CGC_PIDS] = "pids",
    [CGC_BLKIO] = "blkio", [CGC_CPUSET] = "cpuset",   [CGC_DEVICES] = "devices",
};

/* "rw" without "m": jobs get these nodes from the runtime and have no business creating any. */
const cg_dev_rule cg_default_devices[] = {
    { 'c', 1, 3, "rw" },   /* null */
    { 'c', 1, 5, "rw" },   /* zero */
    { 'c', 1, 7, "rw" },   /* full */
    { 'c', 1, 8, "rw" },   /* random */
    { 'c', 1, 9, "rw" },   /* urandom */
    { 'c', 5, 0, "rw" },   /* tty */
    { 'c', 5, 2, "rw" },   /* ptmx */
    { 'c', 136, -1, "rw" } /* pts/N */
};
const size_t cg_default_devices_n = ARRAY_LEN(cg_default_devices);

const char *cg_ctrl_name(enum cg_ctrl c)
{
    return c >= 0 && c < CGC_N ? ctrl_names[c] : "?";
}

enum cg_ctrl cg_ctrl_by_name(const char *name)
{
    int c = 0;
    while (c < CGC_N && strcmp(ctrl_names[c], name))
        c++;
    return (enum cg_ctrl)c;
}

const char *cg_layout_name(enum cg_layout l)
{
    switch (l) {
    case CG_V2: return "v2";
    case CG_HYBRID: return "hybrid";
    case CG_V1: return "v1";
    }
    return "unknown";
}

static void sleep_ms(long ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* ---- layout detection ---- */

static bool fs_magic_is(const char *path, unsigned long magic)
{
    struct statfs sf;
    return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == magic;
}

/* Several mounts may show one hierarchy (bind mounts, containers): prefer one that shows its
 * whole tree (root "/"), else keep the first. */
static void take_mount(char *dst, size_t dstlen, bool *whole, const mountinfo_entry *m)
{
    bool is_whole = !strcmp(m->root, "/");
    if ((dst[0] && (*whole || !is_whole)) || strlen(m->point) >= dstlen)
        return;
    snprintf(dst, dstlen, "%s", m->point);
    *whole = is_whole;
}

typedef struct scan_state {
    cg_host *h;
    bool unified_whole;       /* whether h->unified shows its whole tree */
    bool v1_whole[CGC_N];     /* the same per v1 controller */
    bool freezer_whole;
} scan_state;

static void take_v1_mount(scan_state *st, mountinfo_entry *m)
{
    if (!fs_magic_is(m->point, CGROUP_SUPER_MAGIC))
        return;
    /* superopts list the controllers bound to this hierarchy ("rw,cpu,cpuacct"); a named
     * hierarchy such as "name=systemd" carries no controller and matches nothing here */
    char *save = NULL;
    for (char *o = strtok_r(m->super, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
        for (int c = 0; c < CGC_N; c++)
            if (!strcmp(o, ctrl_names[c]))
                take_mount(st->h->v1[c], sizeof st->h->v1[c], &st->v1_whole[c], m);
        if (!strcmp(o, "freezer"))
            take_mount(st->h->freezer, sizeof st->h->freezer, &st->freezer_whole, m);
    }
}

/* mountinfo_fn: notes the cgroup and cgroup2 mounts, confirmed by their statfs magic. */
static int scan_mount(mountinfo_entry *m, void *arg, jerr *e)
{
    scan_state *st = arg;
    if (!strcmp(m->fstype, "cgroup2")) {
        if (fs_magic_is(m->point, CGROUP2_SUPER_MAGIC))
            take_mount(st->h->unified, sizeof st->h->unified, &st->unified_whole, m);
    } else if (!strcmp(m->fstype, "cgroup")) {
        take_v1_mount(st, m);
    }
    return 0;
}

static int scan_mounts(cg_host *h, jerr *e)
{
    scan_state st = { .h = h };
    return mountinfo_foreach("/proc/self/mountinfo", scan_mount, &st, e) < 0 ? -1 : 0;
}

typedef struct super_of {
    const char *point;
    char *opts;
    size_t optslen;
} super_of;

#define FAVOR_OPT ",favordynmods"

/* mountinfo_fn: copies the superblock options of the first mount at s->point and stops. They
 * are handed back to the kernel on remount, so they must fit whole, with room for FAVOR_OPT:
 * a cut list would change the mount's options. */
static int copy_super_of(mountinfo_entry *m, void *arg, jerr *e)
{
    super_of *s = arg;
    if (strcmp(m->point, s->point))
        return 0;
    size_t n = strlen(m->super);
    if (n + sizeof FAVOR_OPT > s->optslen)
        return jerr_set(e, ENAMETOOLONG, "the options of %s are %zu bytes, more than the %zu joblet keeps to "
                        "remount it; left as it is", s->point, n, s->optslen - sizeof FAVOR_OPT);
    memcpy(s->opts, m->super, n + 1);
    return 1;
}

/* Moving a task between cgroups takes cgroup_threadgroup_rwsem for writing, which waits for
 * an RCU grace period: up to ~11 ms per job seen on the hybrid CI host (it depends on RCU
 * activity), more than the rest of a job start. "favordynmods" (Linux 6.0+) makes that lock cheap to write and slightly dearer to
 * read (fork/exit). The lock is global, so setting it on one hierarchy is enough; the mount
 * keeps its other options. */
int cg_favor_dynmods(const cg_host *h, jerr *e)
{
    const char *target = h->unified[0] ? h->unified : NULL;
    for (int c = 0; !target && c < CGC_N; c++)
        if (h->v1[c][0])
            target = h->v1[c];
    if (!target)
        return jerr_set(e, ENOENT, "no cgroup hierarchy is mounted");
    char opts[512] = "";
    super_of s = { .point = target, .opts = opts, .optslen = sizeof opts };
    int rc = mountinfo_foreach("/proc/self/mountinfo", copy_super_of, &s, e);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return jerr_set(e, ENOENT, "%s is not in /proc/self/mountinfo", target);
    if (strstr(opts, "favordynmods"))
        return 0;
    size_t n = strlen(opts);
    snprintf(opts + n, sizeof opts - n, "%s", n ? FAVOR_OPT : FAVOR_OPT + 1);
    if (mount(NULL, target, NULL, MS_REMOUNT, opts) < 0)
        return jerr_sys(e, "remount %s with %s", target, opts);
    return 0;
}

static bool any_v1(const cg_host *h)
{
    for (int c = 0; c < CGC_N; c++)
        if (h->v1[c][0])
            return true;
    return false;
}

static int decide_layout(cg_host *h, jerr *e)
{
    if (any_v1(h))
        h->ops = h->unified[0] ? &cg_ops_hybrid : &cg_ops_v1;
    else if (h->unified[0])
        h->ops = &cg_ops_v2;
    else
        return jerr_set(e, ENOENT, "no cgroup filesystem is mounted (looked for cgroup and cgroup2 in "
                                   "/proc/self/mountinfo); joblet needs one to limit jobs");
    h->layout = h->ops->layout;
    h->ops->use_mounts(h);
    return 0;
}

/* ---- names ---- */

static bool name_char_ok(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

static int check_component(const char *what, const char *full, const char *s, size_t len, jerr *e)
{
    if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
        return jerr_set(e, EINVAL, "cgroup %s \"%s\" has an empty, \".\" or \"..\" component", what, full);
    for (size_t i = 0; i < len; i++)
        if (!name_char_ok(s[i]))
            return jerr_set(e, EINVAL, "cgroup %s \"%s\" may hold only letters, digits, '-', '_' and '.'",
                            what, full);
    return 0;
}

static int check_root(const char *root, char *out, size_t outlen, jerr *e)
{
    if (strlen(root) >= outlen)
        return jerr_set(e, ENAMETOOLONG, "cgroup root \"%s\" is longer than %zu characters", root, outlen - 1);
    for (const char *p = root;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (check_component("root", root, p, len, e) < 0)
            return -1;
        if (!slash)
            break;
        p = slash + 1;
    }
    snprintf(out, outlen, "%s", root);
    return 0;
}

static int check_name(const char *name, jerr *e)
{
    if (!name || strlen(name) >= JOB_NAME_SIZE)
        return jerr_set(e, EINVAL, "cgroup name \"%s\" is missing or longer than %zu characters",
                        name ? name : "", JOB_NAME_SIZE - 1);
    return check_component("name", name, name, strlen(name), e);
}

/* ---- host ---- */

static int make_parent(const char *mnt, const char *root, jerr *e)
{
    char dir[PATH_MAX];
    if (cg_file_path(dir, sizeof dir, mnt, root) < 0)
        return jerr_sys(e, "cgroup path %s/%s", mnt, root);
    return mkdir_p(dir, 0755, e);
}

static int make_parents(const cg_host *h, jerr *e)
{
    if (h->unified[0] && make_parent(h->unified, h->root, e) < 0)
        return -1;
    for (int c = 0; c < CGC_N; c++)
        if (h->v1[c][0] && make_parent(h->v1[c], h->root, e) < 0)
            return -1;
    if (h->freezer_jobs && make_parent(h->freezer, h->root, e) < 0)
        return -1;
    return 0;
}

int cg_host_detect(cg_host *h, const char *root, jerr *e)
{
    memset(h, 0, sizeof *h);
    if (check_root(root && *root ? root : DEFAULT_ROOT, h->root, sizeof h->root, e) < 0)
        return -1;
    return scan_mounts(h, e) < 0 || decide_layout(h, e) < 0 ? -1 : 0;
}

int cg_host_init(cg_host *h, const char *root, jerr *e)
{
    if (cg_host_detect(h, root, e) < 0)
        return -1;
    if (make_parents(h, e) < 0)
        return -1;
    return h->ops->prepare_root(h, e);
}

/* ---- job paths ---- */

static bool job_path(char *out, size_t outlen, const char *mnt, const char *root, const char *name)
{
    int n = snprintf(out, outlen, "%s/%s/%s", mnt, root, name);
    if (n < 0 || (size_t)n >= outlen) {
        out[0] = 0;
        return false;
    }
    return true;
}

/* Paths that do not fit are left empty; cg_create refuses such names before using them. */
void cg_job_paths(const cg_host *h, const char *name, cg_job *j)
{
    memset(j, 0, sizeof *j);
    j->host = h;
    j->dev_prog = -1;
    snprintf(j->name, sizeof j->name, "%s", name);
    if (h->unified[0])
        job_path(j->unified_path, sizeof j->unified_path, h->unified, h->root, name);
    for (int c = 0; c < CGC_N; c++)
        if (h->v1[c][0])
            job_path(j->v1_path[c], sizeof j->v1_path[c], h->v1[c], h->root, name);
    if (h->freezer_jobs)
        job_path(j->freezer_path, sizeof j->freezer_path, h->freezer, h->root, name);
}

void cg_user_job_paths(const cg_host *h, uint32_t uid, const char *name, cg_host *uh, cg_job *j)
{
    cg_user_host(h, uid, uh);
    cg_job_paths(uh, name, j);
}

/* ---- delegated cgroups ---- */

int cg_given_of_pid(const cg_host *h, pid_t pid, cg_given *g)
{
    memset(g, 0, sizeof *g);
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        /* "4:memory:/slurm/uid_1000/job_7/step_0/task_1", "0::/joblet/slurm-<id>" */
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || !strcmp(c2 + 1, "/"))
            continue;
        *c2 = 0;
        const char *cg = c2 + 1;
        if (c2 == c1 + 1) {
            if (h->unified[0])
                snprintf(g->unified, sizeof g->unified, "%s%s", h->unified, cg);
            continue;
        }
        for (char *save = NULL, *name = strtok_r(c1 + 1, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            enum cg_ctrl c = cg_ctrl_by_name(name);
            if (c < CGC_N && h->v1[c][0])
                snprintf(g->v1[c], sizeof g->v1[c], "%s%s", h->v1[c], cg);
        }
    }
    fclose(f);
    return 0;
}

bool cg_given_any(const cg_given *g)
{
    if (g->unified[0])
        return true;
    for (int c = 0; c < CGC_N; c++)
        if (g->v1[c][0])
            return true;
    return false;
}

/* path, resolved ("..", symbolic links such as /sys/fs/cgroup/cpu -> cpu,cpuacct) into out, is
 * a cgroup directory strictly below mnt (so never the hierarchy's root, nor outside it), on a
 * filesystem of that magic. */
static int check_given(const char *what, const char *mnt, const char *path, unsigned long magic, char *out,
                       size_t outlen, jerr *e)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return jerr_sys(e, "the delegated cgroup %s (%s)", path, what);
    size_t ml = strlen(mnt);
    if (strncmp(real, mnt, ml) || real[ml] != '/' || !real[ml + 1])
        return jerr_set(e, EINVAL, "the delegated cgroup \"%s\" (%s) is not below this host's mount of that "
                        "hierarchy, %s", path, what, mnt);
    struct stat st;
    if (stat(real, &st) < 0)
        return jerr_sys(e, "the delegated cgroup %s (%s)", path, what);
    if (!S_ISDIR(st.st_mode) || !fs_magic_is(real, magic))
        return jerr_set(e, EINVAL, "the delegated cgroup %s (%s) is not a cgroup directory", path, what);
    if (strlen(real) >= outlen)
        return jerr_set(e, ENAMETOOLONG, "the delegated cgroup %s (%s) is longer than %zu characters", real, what,
                        outlen - 1);
    memcpy(out, real, strlen(real) + 1);
    return 0;
}

int cg_job_given(const cg_host *h, const char *name, const cg_given *g, cg_job *j, jerr *e)
{
    memset(j, 0, sizeof *j);
    j->host = h;
    j->delegated = true;
    j->dev_prog = -1;
    snprintf(j->name, sizeof j->name, "%s", name);
    if (!cg_given_any(g))
        return jerr_set(e, EINVAL, "job %s is to run in a delegated cgroup, but none is named", name);
    if (memchr(g->unified, 0, sizeof g->unified) == NULL)
        return jerr_set(e, ENAMETOOLONG, "a delegated cgroup path of job %s is too long", name);
    for (int c = 0; c < CGC_N; c++)
        if (memchr(g->v1[c], 0, sizeof g->v1[c]) == NULL)
            return jerr_set(e, ENAMETOOLONG, "a delegated cgroup path of job %s is too long", name);
    if (g->unified[0]) {
        if (!h->unified[0])
            return jerr_set(e, ENOTSUP, "the delegated cgroup2 directory %s cannot be used: this host (%s) has no "
                            "cgroup2 mount", g->unified, cg_layout_name(h->layout));
        if (check_given("cgroup2", h->unified, g->unified, CGROUP2_SUPER_MAGIC, j->unified_path,
                        sizeof j->unified_path, e) < 0)
            return -1;
    }
    if (g->freezer[0]) {
        if (memchr(g->freezer, 0, sizeof g->freezer) == NULL)
            return jerr_set(e, ENAMETOOLONG, "a delegated cgroup path of job %s is too long", name);
        if (!h->freezer[0])
            return jerr_set(e, ENOTSUP, "the delegated cgroup %s (freezer) cannot be used: this host has no v1 "
                            "freezer mount", g->freezer);
        if (check_given("freezer", h->freezer, g->freezer, CGROUP_SUPER_MAGIC, j->freezer_path,
                        sizeof j->freezer_path, e) < 0)
            return -1;
    }
    for (int c = 0; c < CGC_N; c++) {
        if (!g->v1[c][0])
            continue;
        if (!h->v1[c][0])
            return jerr_set(e, ENOTSUP, "the delegated cgroup %s (%s) cannot be used: joblet uses no v1 %s "
                            "controller on this host (layout %s)", g->v1[c], ctrl_names[c], ctrl_names[c],
                            cg_layout_name(h->layout));
        if (check_given(ctrl_names[c], h->v1[c], g->v1[c], CGROUP_SUPER_MAGIC, j->v1_path[c],
                        sizeof j->v1_path[c], e) < 0)
            return -1;
    }
    return 0;
}

static int check_fits(const cg_host *h, const char *name, jerr *e)
{
    char tmp[JOB_PATH_SIZE];
    if (h->unified[0] && !job_path(tmp, sizeof tmp, h->unified, h->root, name))
        return jerr_set(e, ENAMETOOLONG, "cgroup path %s/%s/%s is too long", h->unified, h->root, name);
    for (int c = 0; c < CGC_N; c++)
        if (h->v1[c][0] && !job_path(tmp, sizeof tmp, h->v1[c], h->root, name))
            return jerr_set(e, ENAMETOOLONG, "cgroup path %s/%s/%s is too long", h->v1[c], h->root, name);
    if (h->freezer_jobs && !job_path(tmp, sizeof tmp, h->freezer, h->root, name))
        return jerr_set(e, ENAMETOOLONG, "cgroup path %s/%s/%s is too long", h->freezer, h->root, name);
    return 0;
}

static bool seen(const char *const *dirs, size_t n, const char *d)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(dirs[i], d))
            return true;
    return false;
}

/* Every directory of the job once: co-mounted v1 controllers ("cpu,cpuacct") share one. A
 * delegated job's freezer directory is not among them: it only joins it (cg_enter). */
static size_t job_dirs(const cg_job *j, const char *dirs[JOB_DIRS_MAX])
{
    size_t n = 0;
    for (int c = 0; c < CGC_N; c++)
        if (j->v1_path[c][0] && !seen(dirs, n, j->v1_path[c]))
            dirs[n++] = j->v1_path[c];
    if (j->freezer_path[0] && !j->delegated && !seen(dirs, n, j->freezer_path))
        dirs[n++] = j->freezer_path;
    if (j->unified_path[0])
        dirs[n++] = j->unified_path;
    return n;
}

/* The directory whose cgroup.procs stands for the whole job: its cgroup2 one, else one of a v1
 * controller that every made job has (no limit is needed for it: the layouts' trim never leaves
 * these out). Not the first of job_dirs: paths filled by cg_job_paths name the cpu hierarchy
 * first, where a job without a CPU limit has no directory (a v1-only host's running jobs showed
 * no usage, and cg_nprocs said "unknown"). */
static const char *primary_dir(const cg_job *j)
{
    static const enum cg_ctrl always[] = {CGC_PIDS, CGC_MEMORY, CGC_DEVICES, CGC_CPUACCT};
    const char *dirs[JOB_DIRS_MAX];
    if (j->unified_path[0])
        return j->unified_path;
    for (size_t i = 0; i < ARRAY_LEN(always); i++)
        if (j->v1_path[always[i]][0])
            return j->v1_path[always[i]];
    return job_dirs(j, dirs) ? dirs[0] : NULL;
}

void cg_job_cpu_level(cg_job *j)
{
    const char *mnt = j->host->v1[CGC_CPU];
    j->cpu_level[0] = 0;
    if (j->delegated || !mnt[0])
        return;
    /* a directory kept in the cpu hierarchy (its own, or a co-mounted partner's) is a cgroup of
     * the job's own there, below the level already */
    for (int c = 0; c < CGC_N; c++)
        if (j->v1_path[c][0] && !strcmp(j->host->v1[c], mnt))
            return;
    int n = snprintf(j->cpu_level, sizeof j->cpu_level, "%s/%s", mnt, j->host->root);
    if (n < 0 || (size_t)n >= sizeof j->cpu_level)
        j->cpu_level[0] = 0; /* cannot be: check_fits passed a longer path in that hierarchy */
}

int cg_create_for(const cg_host *h, const char *name, const cg_limits *l, cg_job *j, jerr *e)
{
    if (check_name(name, e) < 0 || check_fits(h, name, e) < 0)
        return -1;
    cg_job_paths(h, name, j);
    /* v1 controllers whose limit was not asked for would cost a cgroup each and do nothing:
     * usage is read from cpuacct, memory and pids. A controller co-mounted with one of those
     * still gets its directory through its partner. A job left so without a directory in
     * the cpu hierarchy joins its user's level there (cg_job_cpu_level): one write of the
     * init's pid, no cgroup made or removed. */
    if (l)
        h->ops->trim(j, l);
    cg_job_cpu_level(j);
    if (j->cpu_level[0] && access(j->cpu_level, F_OK) < 0)
        return errno == ENOENT ? jerr_set(e, ENOENT, "cgroup %s (the level of the job's user) is missing",
                                          j->cpu_level)
                               : jerr_sys(e, "cgroup %s", j->cpu_level);
    const char *dirs[JOB_DIRS_MAX];
    size_t n = job_dirs(j, dirs);
    for (size_t i = 0; i < n; i++) {
        if (mkdir(dirs[i], 0755) == 0)
            continue;
        /* left by a run before of the same job whose shim gave it up busy (cg_destroy), and
         * empty since: removed, made anew. One that holds processes is refused, not joined. */
        bool busy = false;
        if (errno == EEXIST) {
            if (rmdir(dirs[i]) < 0) {
                busy = errno == EBUSY;
                errno = EEXIST;
            } else if (mkdir(dirs[i], 0755) == 0) {
                continue;
            }
        }
        if (errno == EEXIST)
            jerr_set(e, EEXIST, "cgroup %s already exists%s", dirs[i],
                     busy ? " and holds processes (left by a run before of the job, or not joblet's)" : "");
        else
            jerr_sys(e, "mkdir %s", dirs[i]);
        while (i--)
            rmdir(dirs[i]);
        return -1;
    }
    return 0;
}

int cg_enter(const cg_job *j, jerr *e)
{
    const char *dirs[JOB_DIRS_MAX];
    size_t n = job_dirs(j, dirs);
    if (n == 0)
        return jerr_set(e, ENOENT, "job %s has no cgroup directory to enter", j->name);
    for (size_t i = 0; i < n; i++)
        if (cg_write(dirs[i], "cgroup.procs", "0", e) < 0)
            return -1;
    if (j->cpu_level[0] && cg_write(j->cpu_level, "cgroup.procs", "0", e) < 0)
        return -1;
    if (j->delegated && j->freezer_path[0] && cg_write(j->freezer_path, "cgroup.procs", "0", e) < 0)
        return -1;
    return 0;
}

/* How many processes dir's cgroup.procs lists; -1 when it cannot be read. */
static int nprocs_in(const char *dir)
{
    char *s = dir ? cg_read(dir, "cgroup.procs") : NULL;
    if (!s)
        return -1;
    int n = 0;
    for (char *p = s; *p; p++)
        if (*p == '\n')
            n++;
    free(s);
    return n;
}

int cg_nprocs(const cg_job *j) { return nprocs_in(primary_dir(j)); }

static size_t kill_listed_pids(char *list)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(list, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
        uint64_t pid;
        if (cg_parse_num(t, &pid) == 0 && pid > 0 && pid <= INT_MAX && kill((pid_t)pid, SIGKILL) == 0)
            n++;
    }
    return n;
}

static int kill_by_listing(const char *dir)
{
    for (int pass = 0; pass < KILL_PASSES; pass++) {
        char *s = cg_read(dir, "cgroup.procs");
        if (!s)
            return pass ? 0 : -1;
        size_t killed = kill_listed_pids(s);
        free(s);
        if (!killed)
            return 0;
        sleep_ms(KILL_PASS_GAP_MS);
    }
    return 0;
}

/* A task frozen by the v1 freezer does not act on SIGKILL until it is thawed (cgroup2's freezer
 * lets a fatal signal through). The kills are queued first and the thaw comes after, so that each
 * task dies as it wakes, before it runs another instruction of the job's. */
static void thaw_to_kill(const cg_job *j)
{
    char *state = cg_read(j->freezer_path, "freezer.state");
    bool thawed = state && !strncmp(state, "THAWED", 6);
    free(state);
    if (thawed)
        return;
    char *s = cg_read(j->freezer_path, "cgroup.procs");
    if (s)
        kill_listed_pids(s);
    free(s);
    cg_write(j->freezer_path, "freezer.state", "THAWED", NULL);
}

int cg_kill_all(const cg_job *j)
{
    /* cgroup.kill (5.14+) kills atomically, racing no fork */
    if (j->unified_path[0] && cg_has_file(j->unified_path, "cgroup.kill") &&
        cg_write(j->unified_path, "cgroup.kill", "1", NULL) == 0)
        return 0;
    if (j->freezer_path[0] && !j->delegated)
        thaw_to_kill(j);
    const char *dirs[JOB_DIRS_MAX];
    size_t n = job_dirs(j, dirs);
    int rc = -1;
    for (size_t i = 0; i < n; i++)
        if (kill_by_listing(dirs[i]) == 0)
            rc = 0;
    return rc;
}

int cg_frozen(const cg_job *j)
{
    uint64_t v;
    if (j->unified_path[0] && cg_has_file(j->unified_path, "cgroup.freeze"))
        return cg_read_keyed(j->unified_path, "cgroup.events", "frozen", &v) == 0 ? v != 0 : -1;
    if (j->freezer_path[0]) {
        char *s = cg_read(j->freezer_path, "freezer.state");
        int r = s ? !strncmp(s, "FROZEN", 6) : -1;
        free(s);
        return r;
    }
    return -1;
}

int cg_freeze(const cg_job *j, bool frozen, jerr *e)
{
    if (j->unified_path[0] && cg_has_file(j->unified_path, "cgroup.freeze")) {
        if (cg_write(j->unified_path, "cgroup.freeze", frozen ? "1" : "0", e) < 0)
            return -1;
    } else if (j->freezer_path[0] && cg_has_file(j->freezer_path, "freezer.state")) {
        if (cg_write(j->freezer_path, "freezer.state", frozen ? "FROZEN" : "THAWED", e) < 0)
            return -1;
    } else
        return jerr_set(e, ENOTSUP, "job %s has no freezer: no cgroup2 directory with cgroup.freeze and no v1 "
                                    "freezer cgroup (a v1-only host without a freezer mount, or a job started "
                                    "before joblet made one for each)", j->name);
    return 0;
}

/* Killed tasks leave their cgroup only once they have exited; retry rmdir until then. */
static int rmdir_patiently(const cg_job *j, const char *dir, jerr *e)
{
    int64_t deadline = mono_ns() + (int64_t)DESTROY_WAIT_MS * 1000000;
    for (int tries = 0;; tries++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return jerr_sys(e, "rmdir %s", dir);
        if (mono_ns() >= deadline) {
            int left = nprocs_in(dir);
            return jerr_set(e, EBUSY, "rmdir %s: cgroup still busy (%d process%s left in it) after %d ms of killing",
                            dir, left, left == 1 ? "" : "es", DESTROY_WAIT_MS);
        }
        if (tries % 10 == 0)
            cg_kill_all(j);
        sleep_ms(DESTROY_POLL_MS);
    }
}

int cg_destroy(cg_job *j, jerr *e)
{
    if (j->delegated) {
        int rc = 0;
        if (j->dev_attached && bpfdev_detach_prog(j->unified_path, j->dev_prog, e) < 0)
            rc = -1;
        j->dev_attached = false;
        if (j->dev_prog >= 0)
            close(j->dev_prog);
        j->dev_prog = -1;
        return rc;
    }
    const char *dirs[JOB_DIRS_MAX];
    size_t n = job_dirs(j, dirs);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        jerr one = { 0 };
        if (rmdir_patiently(j, dirs[i], &one) < 0 && rc == 0) {
            rc = -1;
            if (e)
                *e = one;
        }
    }
    return rc;
}

/* ---- the user's level ---- */

void cg_user_host(const cg_host *h, uint32_t uid, cg_host *out)
{
    *out = *h;
    /* fits: check_root keeps h's root under 64 bytes */
    snprintf(out->root, sizeof out->root, "%.63s/user-%u", h->root, uid);
}

/* The mount of the hierarchy that counts tasks, NULL when none does. */
static const char *tasks_mount(const cg_host *h)
{
    return h->ops->tasks_mount(h);
}

int cg_user_prepare(const cg_host *uh, uint64_t tasks_max, jerr *e)
{
    cg_level_made made = { 0 };
    const char *mnts[JOB_DIRS_MAX];
    size_t n = 0;
    if (uh->unified[0])
        mnts[n++] = uh->unified;
    for (int c = 0; c < CGC_N; c++)
        if (uh->v1[c][0] && !seen(mnts, n, uh->v1[c]))
            mnts[n++] = uh->v1[c];
    if (uh->freezer_jobs && !seen(mnts, n, uh->freezer))
        mnts[n++] = uh->freezer;
    for (size_t i = 0; i < n; i++) {
        char dir[PATH_MAX];
        if (cg_file_path(dir, sizeof dir, mnts[i], uh->root) < 0)
            return jerr_sys(e, "cgroup path %s/%s", mnts[i], uh->root);
        int rc = mkdir(dir, 0755);
        if (rc < 0 && errno != EEXIST)
            return jerr_sys(e, "mkdir %s", dir);
        if (rc < 0)
            continue;
        made.unified |= mnts[i] == uh->unified;
        for (int c = 0; c < CGC_N; c++) /* co-mounted controllers share the directory */
            made.v1[c] |= uh->v1[c][0] && !strcmp(mnts[i], uh->v1[c]);
    }
    if (uh->ops->prepare_level(uh, &made, e) < 0)
        return -1;
    char dir[PATH_MAX];
    const char *mnt = tasks_mount(uh);
    if (!mnt)
        return 0;
    if (cg_file_path(dir, sizeof dir, mnt, uh->root) < 0)
        return jerr_sys(e, "cgroup path %s/%s", mnt, uh->root);
    char v[24] = "max";
    if (tasks_max)
        snprintf(v, sizeof v, "%llu", (unsigned long long)tasks_max);
    return cg_write(dir, "pids.max", v, e);
}

int cg_user_enter(const cg_host *uh, jerr *e)
{
    const char *mnt = tasks_mount(uh);
    if (!mnt)
        return 0;
    char dir[PATH_MAX], leaf[PATH_MAX];
    if (cg_file_path(dir, sizeof dir, mnt, uh->root) < 0 || cg_file_path(leaf, sizeof leaf, dir, "shims") < 0)
        return jerr_sys(e, "cgroup path %s/%s/shims", mnt, uh->root);
    if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
        return jerr_sys(e, "mkdir %s", leaf);
    if (cg_write(leaf, "cgroup.procs", "0", e) < 0)
        return -1;
    uint64_t now, max;
    if (cg_read_u64(dir, "pids.current", &now) == 0 && cg_read_u64(dir, "pids.max", &max) == 0 && now > max) {
        cg_user_leave(uh);
        return jerr_set(e, EAGAIN, "the user's jobs hold %llu host tasks (their shims and gVisor's sandboxes "
                        "included), more than the %llu of jobs.max_pids_per_user (%s/pids.max)",
                        (unsigned long long)now - 1, (unsigned long long)max, dir);
    }
    return 0;
}

/* The hierarchies that account CPU but do not count tasks (cg_user_enter_cpu's). */
static size_t cpu_mounts(const cg_host *uh, const char *mnts[3])
{
    const char *tasks = tasks_mount(uh);
    size_t n = 0;
    for (int c = CGC_CPU; c <= CGC_CPUACCT; c++)
        if (uh->v1[c][0] && !seen(mnts, n, uh->v1[c]) && !(tasks && !strcmp(uh->v1[c], tasks)))
            mnts[n++] = uh->v1[c];
    /* (a cgroup2-only host's one mount is the tasks one: cg_user_enter's already) */
    if (uh->unified[0] && !(tasks && !strcmp(uh->unified, tasks)))
        mnts[n++] = uh->unified;
    return n;
}

int cg_user_enter_cpu(const cg_host *uh, jerr *e)
{
    const char *mnts[3];
    size_t n = cpu_mounts(uh, mnts);
    for (size_t i = 0; i < n; i++) {
        char dir[PATH_MAX], leaf[PATH_MAX];
        if (cg_file_path(dir, sizeof dir, mnts[i], uh->root) < 0 || cg_file_path(leaf, sizeof leaf, dir, "shims") < 0)
            return jerr_sys(e, "cgroup path %s/%s/shims", mnts[i], uh->root);
        if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
            return jerr_sys(e, "mkdir %s", leaf);
        if (cg_write(leaf, "cgroup.procs", "0", e) < 0)
            return -1;
    }
    return 0;
}

int cg_user_leave_cpu(const cg_host *uh, jerr *e)
{
    const char *mnts[3];
    size_t n = cpu_mounts(uh, mnts);
    for (size_t i = 0; i < n; i++)
        if (cg_write(mnts[i], "cgroup.procs", "0", e) < 0)
            return -1;
    return 0;
}

void cg_user_leave(const cg_host *uh)
{
    const char *mnt = tasks_mount(uh);
    if (mnt)
        cg_write(mnt, "cgroup.procs", "0", NULL);
}

int cg_user_join(const cg_host *uh, uint64_t tasks_max, jerr *e)
{
    const char *mnt = tasks_mount(uh);
    /* a cgroup2 level is prepared every time (its controllers may not be offered yet) */
    if (!mnt || uh->layout == CG_V2)
        return cg_user_prepare(uh, tasks_max, e) < 0 ? -1 : cg_user_enter(uh, e);
    char dir[PATH_MAX], leaf[PATH_MAX], v[24] = "max";
    if (cg_file_path(dir, sizeof dir, mnt, uh->root) < 0 || cg_file_path(leaf, sizeof leaf, dir, "shims") < 0)
        return jerr_sys(e, "cgroup path %s/%s/shims", mnt, uh->root);
    if (tasks_max)
        snprintf(v, sizeof v, "%llu", (unsigned long long)tasks_max);
    if (cg_write(dir, "pids.max", v, NULL) < 0) {
        if (errno != ENOENT)
            return jerr_sys(e, "write \"%s\" to %s/pids.max", v, dir);
        if (cg_user_prepare(uh, tasks_max, e) < 0)
            return -1;
    }
    if (cg_write(leaf, "cgroup.procs", "0", NULL) < 0) {
        if (errno != ENOENT)
            return jerr_sys(e, "write \"0\" to %s/cgroup.procs", leaf);
        if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
            return jerr_sys(e, "mkdir %s", leaf);
        if (cg_write(leaf, "cgroup.procs", "0", e) < 0)
            return -1;
    }
    uint64_t now;
    if (tasks_max && cg_read_u64(dir, "pids.current", &now) == 0 && now > tasks_max) {
        cg_user_leave(uh);
        return jerr_set(e, EAGAIN, "the user's jobs hold %llu host tasks (their shims and gVisor's sandboxes "
                        "included), more than the %llu of jobs.max_pids_per_user (%s/pids.max)",
                        (unsigned long long)now - 1, (unsigned long long)tasks_max, dir);
    }
    return 0;
}

/* ---- limits, stats, devices: dispatch ---- */

static const char *skip_digits(const char *s)
{
    const char *p = s;
    while (isdigit((unsigned char)*p))
        p++;
    return p > s ? p : NULL;
}

/* Exactly "digits:digits": the kernel parses io.max and blkio lines no more leniently. */
static bool devnum_ok(const char *s)
{
    const char *p = skip_digits(s);
    return p && *p == ':' && (p = skip_digits(p + 1)) && *p == 0;
}

bool cg_limits_any(const cg_limits *l)
{
    return l->cpu_pct || l->mem_bytes || l->swap_bytes || l->pids_max || l->io_bps || l->cpus[0] || l->mems[0];
}

int cg_apply_limits(const cg_job *j, const cg_limits *l, jerr *e)
{
    if (j->delegated)
        return cg_limits_any(l) ? jerr_set(e, EINVAL, "job %s runs in a delegated cgroup, whose limits are its "
                                           "maker's: joblet sets none, and its spec asks for some", j->name)
                                : 0;
    if (l->io_bps && !devnum_ok(l->io_dev))
        return jerr_set(e, EINVAL, "the I/O limit (%llu bytes/s) needs io_dev as \"major:minor\" of a whole "
                        "block device, got \"%s\"", (unsigned long long)l->io_bps, l->io_dev);
    return j->host->ops->apply_limits(j, l, e);
}

int cg_read_stats(const cg_job *j, cg_stats *s)
{
    memset(s, 0, sizeof *s);
    const char *dir = primary_dir(j);
    if (!dir || access(dir, F_OK) < 0)
        return -1;
    return j->host->ops->read_stats(j, s, true);
}

int cg_read_final_stats(const cg_job *j, cg_stats *s)
{
    memset(s, 0, sizeof *s);
    return primary_dir(j) ? j->host->ops->read_stats(j, s, false) : -1;
}

/* A delegated job's filter is detached again when it ends (cg_destroy), for which the program
 * is kept: loaded here when the caller has none, a copy of the caller's otherwise. */
static int set_devices_delegated(cg_job *j, int prog, const cg_dev_rule *rules, size_t n, jerr *e)
{
    if (!j->unified_path[0]) /* v1: the list in the given devices cgroup, or the refusal */
        return j->host->ops->set_devices(j, -1, rules, n, e);
    int own = prog >= 0 ? fcntl(prog, F_DUPFD_CLOEXEC, 3) : bpfdev_load(rules, n, j->unified_path, e);
    if (own < 0)
        return prog >= 0 ? jerr_sys(e, "keep the device filter of job %s", j->name) : -1;
    if (j->host->ops->set_devices(j, own, rules, n, e) < 0) {
        close(own);
        return -1;
    }
    j->dev_prog = own;
    j->dev_attached = true;
    return 0;
}

int cg_set_devices_prog(cg_job *j, int prog, const cg_dev_rule *rules, size_t n, jerr *e)
{
    for (size_t i = 0; i < n; i++)
        if (bpfdev_check_rule(&rules[i], e) < 0)
            return -1;
    if (j->delegated)
        return set_devices_delegated(j, prog, rules, n, e);
    return j->host->ops->set_devices(j, prog, rules, n, e);
}

/* ---- block devices ---- */

/* /sys/dev/block/M:m of a partition resolves to .../<disk>/<part>; the disk's own dev is one up. */
static int disk_of_partition(const char *sysdir, char *out, size_t outlen, jerr *e)
{
    char real[PATH_MAX];
    if (!realpath(sysdir, real))
        return jerr_sys(e, "resolve %s", sysdir);
    char *slash = strrchr(real, '/');
    if (!slash || slash == real)
        return jerr_set(e, EINVAL, "%s resolves to %s, which has no parent disk", sysdir, real);
    *slash = 0;
    char *dev = cg_read(real, "dev");
    if (!dev)
        return jerr_sys(e, "read %s/dev", real);
    dev[strcspn(dev, "\n")] = 0;
    int rc = 0;
    if (!devnum_ok(dev))
        rc = jerr_set(e, EINVAL, "%s/dev holds \"%s\", not major:minor", real, dev);
    else if ((size_t)snprintf(out, outlen, "%s", dev) >= outlen)
        rc = jerr_set(e, ENAMETOOLONG, "device number %s does not fit in %zu bytes", dev, outlen);
    free(dev);
    return rc;
}

int cg_block_device_of(const char *path, char *out, size_t outlen, jerr *e)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return jerr_sys(e, "stat %s", path);
    unsigned maj = major(st.st_dev), min = minor(st.st_dev);
    if (maj == 0)
        return jerr_set(e, ENODEV, "I/O limits cannot be enforced for %s: its filesystem (device 0:%u) is not "
                        "backed by a block device (tmpfs, overlayfs, btrfs subvolumes, NFS and FUSE are not), "
                        "and the kernel throttles I/O only per block device", path, min);
    char sys[64], probe[96];
    snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", maj, min);
    if (access(sys, F_OK) < 0)
        return jerr_set(e, ENODEV, "I/O limits cannot be enforced for %s: its device %u:%u is not a block "
                        "device (%s is missing)", path, maj, min, sys);
    snprintf(probe, sizeof probe, "%s/partition", sys);
    if (access(probe, F_OK) == 0)
        return disk_of_partition(sys, out, outlen, e);
    if ((size_t)snprintf(out, outlen, "%u:%u", maj, min) >= outlen)
        return jerr_set(e, ENAMETOOLONG, "device number %u:%u does not fit in %zu bytes", maj, min, outlen);
    return 0;
}
