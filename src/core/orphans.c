/* What a killed joblet left for jobs the database does not hold (orphans.h). */
#include "orphans.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../exec/cgroup.h"
#include "arrays.h"
#include "job_detail.h"
#include "job_events.h"
#include "job_launch.h"
#include "jobs.h"
#include "state.h"
#include "workfs.h"

bool orphans_named_by_id(const char *name, char id[37])
{
    for (int i = 0; i < 36; i++) {
        char c = name[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    if (name[36] && name[36] != '.')
        return false;
    memcpy(id, name, 36);
    id[36] = 0;
    return true;
}

/* Whether the database holds the ID: a job's, or an array's (an array with uploads keeps its files
 * in <state>/jobs/<array id> (and a /work copy of them), which its tasks copy from as they start,
 * submit.c, for as long as it lives). Looked up in their tables by id (hashed): sorting 162,000
 * ids and a binary search of each entry found was a third of the sweep's time. */
static bool known(const char *id) { return jobs_by_id(id) || arrays_by_id(id); }

/* A name that is exactly an unknown job's ID (a /work directory). */
static bool orphan_work(const char *name)
{
    char id[37];
    return orphans_named_by_id(name, id) && !name[36] && !known(id);
}

/* Removes each entry of dir named by an unknown job's ID; how many. */
static size_t sweep_dir(const char *dir, const char *what)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char id[37], path[1200];
        if (!orphans_named_by_id(de->d_name, id) || known(id))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (rm_rf(path) < 0)
            log_warn("%s %s of job %s, which the database does not hold: not removed: %s", what, path, id,
                     strerror(errno));
        else
            n++;
    }
    closedir(d);
    return n;
}

/* The job a process is the shim of, or NULL: a process of the shim's program (the zygote and
 * the shims it forks: "joblet-shim --zygote ...") holding the job's directory open (the shim's
 * dirfd, exec/shim_main.c), <state>/jobs/<id> (jobs_dir: as the kernel names it, no link in it). */
static job *shim_of(pid_t pid, const char *jobs_dir)
{
    char path[64], comm[32];
    /* root's, and named so: not its command line, whose read waits on the process's memory
     * lock (a local user's process stuck in a page fault of a FUSE file that never answers held
     * joblet's start for as long as it wished); its name (comm) and real uid need no lock (the
     * owner of /proc/PID is root's for any process that made itself undumpable) */
    if (proc_status_uid(pid) != 0)
        return NULL;
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, comm, sizeof comm - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    comm[n] = 0;
    if (strcmp(comm, "joblet-shim\n"))
        return NULL;
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return NULL;
    size_t dirlen = strlen(jobs_dir);
    job *j = NULL;
    struct dirent *de;
    while (!j && (de = readdir(d))) {
        char link[80], to[800];
        if (de->d_name[0] == '.')
            continue;
        snprintf(link, sizeof link, "%s/%s", path, de->d_name);
        ssize_t m = readlink(link, to, sizeof to - 1);
        if (m <= 0)
            continue;
        to[m] = 0;
        char id[37];
        if (!strncmp(to, jobs_dir, dirlen) && to[dirlen] == '/' && orphans_named_by_id(to + dirlen + 1, id) &&
            !to[dirlen + 1 + 36])
            j = jobs_by_id(id);
    }
    closedir(d);
    return j;
}

/* A run that no row records: the shim of a job that has not ended, which its row does not name.
 * joblet forked it and was killed before the turn's commit that records it (a launch and its
 * row's shim pid are committed together, after the fork). The row says the job still waits, so
 * it is started again; this run, whose GPUs and room no row holds, is killed first: its shim
 * before its processes (so that it cannot tidy away what the new run makes), then its cgroup
 * removed. A shim whose job's cgroup holds no process may be one tidying up after a run that
 * ended and was put back in the queue (a requeue, a preemption: its row names no shim either):
 * such shims get RUNS_TIDY_MS to end on their own, all at once, before they are killed too.
 * How many were killed. */
#define RUNS_TIDY_MS 2000
typedef struct unrecorded {
    int pidfd;
    long pid;
    job *j;
    bool busy;               /* its job's cgroup holds processes: a run, not a tidying */
} unrecorded;

static void kill_run(unrecorded *u)
{
    syscall(SYS_pidfd_send_signal, u->pidfd, SIGKILL, NULL, 0);
    struct pollfd pf = {.fd = u->pidfd, .events = POLLIN};
    if (poll(&pf, 1, 5000) <= 0)
        log_warn("job %s: the shim (pid %ld) of a start no row records did not end within 5 s of SIGKILL", u->j->id,
                 u->pid);
    /* its cgroup is the job's: a run the row records (a later shim of it) may be in it now */
    if (u->j->shim_pid <= 0) {
        cg_host uh;
        cg_job cg;
        job_detail_cgroup(u->j, &uh, &cg);
        cg_kill_all(&cg);
        jerr e = {0};
        if (cg_destroy(&cg, &e) < 0)
            log_warn("job %s: the cgroup of a start no row records: %s", u->j->id, e.msg);
    }
    job_event(u->j, JE_RESTARTED, -1, "joblet restarted; a start of it that was not recorded (shim pid %ld) was "
                                      "killed, and the job waits to start again", u->pid);
    log_warn("job %s: killed a run no row records (shim pid %ld, forked by a joblet killed before it committed "
             "the start); the job (%s) starts again", u->j->id, u->pid, job_state_name(u->j->state));
}

static size_t sweep_unrecorded_runs(void)
{
    char *jobs_dir = realpath(core.jobs_dir, NULL);
    DIR *d = jobs_dir ? opendir("/proc") : NULL;
    if (!d) {
        log_warn("cannot look for runs no row records: %s: %s", jobs_dir ? "/proc" : core.jobs_dir, strerror(errno));
        free(jobs_dir);
        return 0;
    }
    unrecorded *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 1 || pid == getpid())
            continue;
        /* the pidfd first, then the command line: the pid cannot name another process after */
        int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
        if (pidfd < 0)
            continue;
        job *j = shim_of((pid_t)pid, jobs_dir);
        /* a shim's own clones (the job's init, before and after it names itself) have its
         * command line too: only the one whose parent is not of that job is its shim */
        pid_t parent = j ? (pid_t)proc_stat_field((pid_t)pid, 4) : 0;
        if (j && job_state_terminal(j->state) && parent > 0 && shim_of(parent, jobs_dir) != j) {
            /* an ended job's shim still tidying up (its cgroups, its sandbox): it is its own;
             * watched, so that a requeue of the job waits for its end (job_launch_tidying) */
            log_info("job %s: the shim of its run (pid %ld) still tidies up after its end", j->id, pid);
            job_launch_watch_tidying(j, pidfd);
            continue;
        }
        if (!j || job_state_terminal(j->state) || j->shim_pid == (pid_t)pid || parent <= 0 || shim_of(parent, jobs_dir) == j) {
            close(pidfd);
            continue;
        }
        if (n == cap)
            v = xrealloc(v, (cap = cap ? cap * 2 : 8) * sizeof *v);
        cg_host uh;
        cg_job cg;
        job_detail_cgroup(j, &uh, &cg);
        v[n++] = (unrecorded){.pidfd = pidfd, .pid = pid, .j = j, .busy = j->shim_pid <= 0 && cg_nprocs(&cg) > 0};
    }
    closedir(d);
    free(jobs_dir);
    /* those that may be tidying: a while to end on their own, all together */
    int64_t until = mono_ns() + (int64_t)RUNS_TIDY_MS * 1000000;
    for (;;) {
        struct pollfd pf[64];
        size_t np = 0;
        for (size_t i = 0; i < n && np < ARRAY_LEN(pf); i++)
            if (!v[i].busy && v[i].pidfd >= 0)
                pf[np++] = (struct pollfd){.fd = v[i].pidfd, .events = POLLIN};
        int64_t left = (until - mono_ns()) / 1000000;
        if (!np || left <= 0 || poll(pf, np, (int)left) <= 0)
            break;
        for (size_t k = 0; k < np; k++)
            for (size_t i = 0; i < n && pf[k].revents; i++)
                if (v[i].pidfd == pf[k].fd) { /* ended: it was tidying */
                    close(v[i].pidfd);
                    v[i].pidfd = -1;
                }
    }
    size_t killed = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].pidfd >= 0) {
            kill_run(&v[i]);
            close(v[i].pidfd);
            killed++;
        }
    free(v);
    return killed;
}

/* The cgroups of unknown jobs in one directory of a tree: "<root>" for jobs made by a joblet
 * before users had levels, "<root>/user-<uid>" (the level h is) for the others. Their
 * processes (a shim started before its job was committed) killed, the cgroup removed from every
 * tree (cg_job_paths names them all). */
static size_t sweep_cgroup_dir(const char *dir, const cg_host *h)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char id[37];
        if (de->d_type != DT_DIR || !orphans_named_by_id(de->d_name, id) || de->d_name[36] || known(id))
            continue;
        cg_job cg;
        cg_job_paths(h, id, &cg);
        int procs = cg_nprocs(&cg);
        if (procs > 0) {
            log_warn("cgroup of job %s, which the database does not hold: %d processes killed", id, procs);
            cg_kill_all(&cg);
        }
        jerr e = {0};
        if (cg_destroy(&cg, &e) < 0)
            log_warn("cgroup of job %s, which the database does not hold: %s", id, e.msg);
        else
            n++;
    }
    closedir(d);
    return n;
}

/* One tree: the jobs' root, and each user's level under it. */
static size_t sweep_cgroup_tree(const char *tree)
{
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", tree, core.cg.root);
    size_t n = sweep_cgroup_dir(dir, &core.cg);
    DIR *d = opendir(dir);
    if (!d)
        return n;
    struct dirent *de;
    while ((de = readdir(d))) {
        unsigned uid;
        char tail[2], level[700];
        if (de->d_type != DT_DIR || sscanf(de->d_name, "user-%u%1s", &uid, tail) != 1)
            continue;
        cg_host uh;
        cg_user_host(&core.cg, uid, &uh);
        snprintf(level, sizeof level, "%s/%s", dir, de->d_name);
        n += sweep_cgroup_dir(level, &uh);
    }
    closedir(d);
    return n;
}

/* Every tree: cgroup2's, each v1 controller's and the v1 freezer's where jobs get a freezer
 * cgroup (a cgroup may be left in some only). */
static size_t sweep_cgroups(void)
{
    size_t n = core.cg.unified[0] ? sweep_cgroup_tree(core.cg.unified) : 0;
    for (int c = 0; c < CGC_N; c++)
        if (core.cg.v1[c][0])
            n += sweep_cgroup_tree(core.cg.v1[c]);
    if (core.cg.freezer_jobs)
        n += sweep_cgroup_tree(core.cg.freezer);
    return n;
}

void orphans_sweep(void)
{
    int64_t t0 = mono_ns();
    char bundles[700];
    snprintf(bundles, sizeof bundles, "%s/runsc/bundles", core.cfg.state_dir);
    sweep_unrecorded_runs(); /* (known jobs: each says so in the log) */
    size_t dirs = sweep_dir(core.jobs_dir, "job directory");
    size_t works = workfs_sweep(orphan_work);
    size_t bun = sweep_dir(bundles, "gVisor bundle");
    size_t cgs = sweep_cgroups();
    if (dirs + works + bun + cgs)
        log_info("removed what %zu job directories, %zu /work directories, %zu gVisor bundles and %zu cgroups of jobs "
                 "the database does not hold left (a joblet killed while it created them), in %.1f ms",
                 dirs, works, bun, cgs, (double)(mono_ns() - t0) / 1e6);
}
