/* Starting jobs, noticing their end, and taking them back after a restart. The daemon
 * never waits on a job: it spawns the shim, watches the shim's pidfd, and reads what the
 * shim recorded (its start, then its end: exec/shim_status.h) when it is told something changed. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/cpuprio.h"
#include "../common/log.h"
#include "../common/parse.h"
#include "../common/util.h"
#include "../exec/cgroup.h"
#include "../exec/shim.h"
#include "../exec/shim_status.h"
#include "../exec/spec.h"
#include "../exec/spec_build.h"
#include "networks.h"
#include "../exec/zygote.h"
#include "counters.h"
#include "gpu_spec.h"
#include "isolation.h"
#include "job_detail.h"
#include "job_events.h"
#include "job_freeze.h"
#include "job_dirs.h"
#include "depend.h"
#include "arrays.h"
#include "jobs.h"
#include "job_launch.h"
#include "job_term.h"
#include "runtimes.h"
#include "state.h"
#include "statedisk.h"
#include "volumes.h"
#include "workfs.h"

/* The PATH a job gets when it gives none (job_launch.h). */
const char *const job_launch_default_path = SPEC_BUILD_DEFAULT_PATH;

/* The job's spec in a memfd for its shim (spec.h), or -1: the spec builder's context
 * (exec/spec_build.h) filled from the daemon's state and the job. */
static int make_spec(job *j, const char *dir, const job_given *g, jerr *e)
{
    spec_ctx c = {
        .id = j->id,
        .number = j->seq,
        .req = &j->req,
        .gpus = &j->gpus,
        .uid = j->uid,
        .gid = j->gid,
        .owner_uid = j->owner_uid,
        .sandbox_uid = j->sandbox_uid,
        .job_dir = dir,
        .root_mount = core.root_mount,
        .cgroup_root = core.cfg.cgroup_root,
        .stop_grace_s = core.cfg.stop_grace_s,
        .tmp_size_mb = core.cfg.tmp_size_mb,
        .ptys_max = core.cfg.ptys_max,
        .nofile_soft = core.nofile_soft,
        .nofile_hard = core.nofile_hard,
        .kernel_aio = core.cfg.kernel_aio,
        .attach_wait_s = core.cfg.attach_wait_s,
        .log_floor = core.cfg.state_reserve / 2,
        .srun = core.srun_path[0] ? core.srun_path : NULL,
    };
    /* a job array's task: its ids, as joblet's names and as Slurm's (a sweep script written
     * for sbatch --array runs unchanged); Slurm's array id is the array's number, as a task's
     * SLURM_JOB_ID is its own (spec_build.c) */
    char av[6][40], anum[24];
    jobreq_pair given[12];
    if (j->array_id[0]) {
        const arrayspec *as = j->array ? j->array->spec : NULL;
        static const char *const names[][2] = {
            {"JOBLET_ARRAY_JOB_ID", "SLURM_ARRAY_JOB_ID"},       {"JOBLET_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_ID"},
            {"JOBLET_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_COUNT"}, {"JOBLET_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MIN"},
            {"JOBLET_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_MAX"},   {"JOBLET_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_STEP"},
        };
        snprintf(av[0], sizeof av[0], "%s", j->array_id);
        snprintf(av[1], sizeof av[1], "%lld", (long long)j->array_task);
        size_t nv = 2;
        if (as) {
            snprintf(av[2], sizeof av[2], "%llu", (unsigned long long)as->count);
            snprintf(av[3], sizeof av[3], "%u", as->min);
            snprintf(av[4], sizeof av[4], "%u", as->max);
            /* Slurm gives the step of a list that is one range */
            snprintf(av[5], sizeof av[5], "%u", as->n == 1 ? as->r[0].step : 1);
            nv = 6;
        }
        snprintf(anum, sizeof anum, "%llu", (unsigned long long)(j->array ? j->array->seq : 0));
        for (size_t i = 0; i < nv; i++) {
            given[c.ngiven_env++] = (jobreq_pair){(char *)names[i][0], av[i]};
            if (i || j->array)
                given[c.ngiven_env++] = (jobreq_pair){(char *)names[i][1], i ? av[i] : anum};
        }
        c.given_env = given;
    }
    if (j->req.runtime) {
        /* checked at submission; removed since: the job cannot start (runtime_build.c refuses to
         * remove a runtime jobs wait for) */
        const runtime *rt;
        if (runtimes_find(j->req.runtime, &rt, e) < 0)
            return -1;
        c.system_root = rt->root;
        c.runtime_env = rt->env;
        c.nruntime_env = rt->nenv;
    }
    char work[800], budget[512], io_dev[32] = "", mps[600], from[800];
    workfs_path(j->owner_uid, dir, work, sizeof work);
    c.work_dir = work;
    if (j->array_id[0] && j->req.nuploads) { /* its array's files, which its shim copies into /work */
        char adir[700];
        snprintf(adir, sizeof adir, "%s/%s", core.jobs_dir, j->array_id);
        workfs_path(j->owner_uid, adir, from, sizeof from);
        c.work_copy_from = from;
    }
    if (statedisk_budget_path(j->owner_uid, budget, sizeof budget) < 0)
        budget[0] = 0;
    c.log_budget = budget;
    if (j->req.max_iobps) {
        /* the disk /work is on: the owner's loop device under jobs.work_quota (workfs.h),
         * else the state directory's */
        jerr ie = {0};
        if (cg_block_device_of(work, io_dev, sizeof io_dev, &ie) < 0)
            snprintf(io_dev, sizeof io_dev, "%s", core.io_dev);
    }
    c.io_dev = io_dev;
    /* the job's volumes at /volumes/NAME */
    spec_mount *vols = NULL;
    size_t nvols = 0;
    int fd = volumes_spec_mounts(j, &vols, &nvols, e);
    c.volumes = vols;
    c.nvolumes = nvols;
    gpu_spec_host(j, &c.gpu, mps, sizeof mps);
    const isolation_caps *ic = isolation_caps_get();
    if (isolation_gvisor(&j->req))
        c.gvisor = (spec_gvisor){ic->gvisor, ic->why, ic->runsc, isolation_runsc_root(), ic->platform, ic->nvproxy};
    spec_net *net = NULL;
    if (fd == 0 && (fd = networks_place(j, &net, e)) == 0)
        c.net = net;
    job_spec s;
    if (fd == 0 && (fd = spec_build(&c, &s, e)) == 0) {
        if (g) {
            /* delegated (exec/cgroup.h): the limits are the cgroups' maker's, none of joblet's */
            s.cgroup_given = xmalloc(sizeof *s.cgroup_given);
            *s.cgroup_given = *g->cgroups;
            s.limits = (cg_limits){0};
            s.user_procs_max = 0;
            s.user_tasks_max = 0;
            s.stdio_given = g->stdio[0] >= 0;
            if (s.stdio_given)
                s.log_max_bytes = 0;
            if (g->ngroups) {
                s.ngroups = g->ngroups < SPEC_GROUPS_MAX ? g->ngroups : SPEC_GROUPS_MAX;
                s.groups = xcalloc(s.ngroups, sizeof *s.groups);
                memcpy(s.groups, g->groups, s.ngroups * sizeof *s.groups);
            }
        }
        fd = spec_to_fd(&s, e);
        if (fd >= 0)
            job_detail_spec(j, &s);
        spec_free(&s);
    }
    networks_spec_free(net);
    for (size_t i = 0; i < nvols; i++) {
        free(vols[i].src);
        free(vols[i].dst);
    }
    free(vols);
    return fd;
}

static void on_shim_exit(watch *w, uint32_t events);
static void on_notify(watch *w, uint32_t events);
static void notify_lines(job *j, char *buf);
static void finalize(job *j);
static int read_warned(job *j, const char *dir);
static void warned_event(job *j, int64_t at_ms, int sig, unsigned long long limit);

static void watch_shim(job *j, int pidfd, int notify_fd)
{
    j->w_pid = (watch){pidfd, on_shim_exit, j};
    loop_add(&j->w_pid);
    if (notify_fd >= 0) {
        j->w_notify = (watch){notify_fd, on_notify, j};
        loop_add(&j->w_notify);
    }
}

/* Shims adopted after a restart that joblet could not watch yet: it had too few descriptors free
 * for their pidfds (restarted under a lower open-file limit than its jobs had taken, ulimit -n).
 * pidfd_open's EMFILE is not the shim's end: read so, a job that runs on was declared ended, its
 * room and GPUs given to others, its files tidied away under its processes. Each keeps its state,
 * its room and its GPUs, is watched once descriptors are free (job_launch_adopt_retry: tried
 * every UNWATCHED_RETRY_MS, and at once when a watched shim ends), and a word to its shim waits
 * for that, answered busy meanwhile (shim_watched). In the order they were adopted. */
#define UNWATCHED_RETRY_MS 1000
static job **unwatched;
static size_t nunwatched, unwatched_cap;
static int64_t unwatched_retry_ms; /* when job_launch_adopt_retry runs next; 0 none */

static zygote zyg = {-1, -1};

/* The zygote, above the shims it forks as the loop is (common/cpuprio.h): every start waits
 * for its fork. */
static int zygote_up(jerr *e)
{
    if (zygote_start(&zyg, core.shim_path, core.cfg.cgroup_root, e) < 0)
        return -1;
    jerr pe = {0};
    if (cpuprio_raise(zyg.pid, core.cfg.cpu_priority, &pe) < 0)
        log_warn("server.cpu_priority: the shim zygote stays at nice 0: %s", pe.msg);
    return 0;
}

/* The word that lets a shim run the job's command (exec/shim.h: SHIM_GO), once the database
 * holds the row that names the shim: a joblet killed before that commit would find the job
 * still waiting at its next start and start it again, and the command would have run twice.
 * With the word after the commit, the shim of such a start runs nothing: it sees its socket
 * pair end and records SHIM_NOT_RUN (finalize, unrecorded_run: the job waits again).
 * Told each commit's outcome (state.h: state_rows); a job whose row a failed commit lost
 * (STATE_DB_STALE, written again by a later one) waits for that one. The gated jobs hold room:
 * their list, not every job kept, is looked at. */
static size_t ngated;

static void go_committed(bool ok)
{
    if (!ok || !ngated)
        return;
    size_t n, left = 0;
    job **room = jobs_holding_room(&n);
    for (size_t i = 0; i < n; i++) {
        job *j = room[i];
        if (!j->gated)
            continue;
        if (j->db_mark & (STATE_DB_STALE | STATE_DB_NEW)) {
            left++;
            continue;
        }
        j->gated = false;
        char go = SHIM_GO;
        /* a shim already gone (its start failed) reads nothing: its end says why */
        if (j->w_notify.fd >= 0 && send(j->w_notify.fd, &go, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1 &&
            errno != EPIPE && errno != ECONNRESET)
            log_err("job %s: cannot tell its shim that its start is recorded (%s): the job waits at its start",
                    j->id, strerror(errno));
    }
    ngated = left;
}

static bool go_unsaved(void) { return false; }
static void go_resync(void) {}
static const state_rows go_rows = {go_committed, go_unsaved, go_resync};

void job_launch_init(void)
{
    state_rows_register(&go_rows);
    jerr e = {0};
    if (zygote_up(&e) < 0)
        log_warn("%s; every job will exec its own shim", e.msg);
}

void job_launch_shutdown(void)
{
    zygote_stop(&zyg);
    free(unwatched); /* (the jobs are core's; their shims run on, watched by the next joblet) */
    unwatched = NULL;
    nunwatched = unwatched_cap = 0;
}

/* A shim from the zygote, restarting it once if it went away; else a freshly exec'd one. A job
 * with given stdio gets an exec'd one, the three fds at theirs (shim.h). */
static pid_t fork_shim(const char *dir, int notify_fd, int spec_fd, const int *stdio, jerr *e)
{
    if (stdio) {
        pid_t pid;
        return shim_spawn_stdio(core.shim_path, dir, notify_fd, spec_fd, core.devfilter_prog, stdio, &pid, e) < 0
                   ? -1
                   : pid;
    }
    for (int attempt = 0; attempt < 2 && zyg.sock >= 0; attempt++) {
        jerr ze = {0};
        pid_t pid = zygote_fork(&zyg, dir, notify_fd, spec_fd, core.devfilter_prog, &ze);
        if (pid > 0)
            return pid;
        log_warn("%s; restarting the shim zygote", ze.msg);
        zygote_stop(&zyg);
        if (zygote_up(&ze) < 0)
            log_warn("%s", ze.msg);
        if (ze.code == ETIMEDOUT || ze.code == EAGAIN) {
            /* The request may still be served late: make sure a late shim finds an empty
             * spec and only records that it could not start, instead of running the job. */
            if (ftruncate(spec_fd, 0) < 0)
                log_err("job directory %s: cannot withdraw the spec: %s", dir, strerror(errno));
            return jerr_set(e, ETIMEDOUT, "the shim zygote did not answer in time; the job was not started");
        }
    }
    pid_t pid;
    if (shim_spawn(core.shim_path, dir, NULL, -1, notify_fd, spec_fd, core.devfilter_prog, &pid, e) < 0)
        return -1;
    return pid;
}

static int launch(job *j, const job_given *g, jerr *e);

int job_launch_job(job *j, jerr *e) { return launch(j, NULL, e); }

int job_launch_given(job *j, const job_given *g, jerr *e) { return launch(j, g, e); }

static int launch(job *j, const job_given *g, jerr *e)
{
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    if (j->state == JS_PREEMPTED)
        j->state = JS_QUEUED; /* started again: QUEUED until its command runs, as the first time */
    free(j->end_reason);      /* "preempted" described the last run; preemptions keeps the count */
    j->end_reason = NULL;
    if (job_dirs_ensure(j, e) < 0) /* made now if the turns since its submission have not */
        return -1;
    /* gVisor: a host uid of its own for the sandbox (exec/oci.h), looked for from the other half
     * of the range than root's jobs' uids are */
    if (j->sandbox_uid) { /* a run's before (requeued): no longer held, in the uid table too */
        j->sandbox_uid = 0;
        jobs_index(j);
    }
    if (isolation_gvisor(&j->req))
        j->sandbox_uid = jobs_free_uid(j->seq + core.cfg.uid_range_size / 2);
    int spec_fd = make_spec(j, dir, g, e);
    if (spec_fd < 0)
        return -1;
    /* a socket pair, not a pipe: the shim's lines come this way, joblet's go the other
     * (go_committed below) */
    int pfd[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pfd) < 0) {
        close(spec_fd);
        return jerr_sys(e, "socketpair");
    }
    pid_t pid = fork_shim(dir, pfd[1], spec_fd, g && g->stdio[0] >= 0 ? g->stdio : NULL, e);
    close(pfd[1]);
    close(spec_fd);
    if (pid < 0) {
        close(pfd[0]);
        return -1;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        /* The shim already ended (it could not even start the job): what it recorded in
         * status.json is the outcome. Never kill() by a bare pid that may have been reused. */
        log_warn("job %s: pidfd_open %d: %s", j->id, (int)pid, strerror(errno));
        j->shim_pid = pid;
        j->holds_room = true;
        core.running++;
        /* what it said on its way (its start: the job ran, and counts in the start latency;
         * its end) is in the pipe, whole: every writer has gone */
        set_cloexec_nonblock(pfd[0]);
        char buf[256];
        ssize_t n = read(pfd[0], buf, sizeof buf - 1);
        close(pfd[0]);
        if (n > 0) {
            buf[n] = 0;
            notify_lines(j, buf);
        }
        if (!job_state_terminal(j->state))
            finalize(j);
        return 0;
    }
    set_cloexec_nonblock(pfd[0]);
    j->shim_pid = pid;
    j->shim_start = proc_start_time(pid);
    j->holds_room = true;
    j->ev_wait = 0; /* its next wait, if any, is told afresh */
    core.running++;
    watch_shim(j, pidfd, pfd[0]);
    job_save(j);
    j->gated = true; /* its command waits for the commit of this row (go_committed) */
    ngated++;
    return 0;
}

static void mark_running(job *j, pid_t init_pid, int64_t started_ms)
{
    if (j->state != JS_QUEUED && j->state != JS_SCHEDULED)
        return;
    j->state = JS_RUNNING;
    j->init_pid = init_pid;
    j->started_ms = started_ms;
    j->suspended_ms = j->suspended_since_ms = 0; /* this run's */
    job_event_at(j, started_ms, JE_STARTED, -1, "pid %d", (int)init_pid);
    counters_start((double)(started_ms - (j->scheduled_ms > j->created_ms ? j->scheduled_ms : j->created_ms)) / 1000.0);
    job_save(j);
    jobs_mark(j, JOB_SETTLE_WORKFLOW);
}

/* Lines from the shim: "S <pid> <ms>" when the command runs, "E" once status.json is written
 * (the shim still tidies the cgroups before it exits: the job need not wait for that). */
static void notify_lines(job *j, char *buf)
{
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int pid, sig;
        long long ms;
        unsigned long long limit;
        if (sscanf(line, "S %d %lld", &pid, &ms) == 2)
            mark_running(j, pid, ms);
        else if (sscanf(line, "W %d %llu", &sig, &limit) == 2) {
            /* its --signal, sent by the shim before the run-time limit: recorded from the
             * shim's file, else (the shim could not write it) from the line */
            char dir[700];
            jobs_dir_of(j, dir, sizeof dir);
            if (read_warned(j, dir) == 0) {
                warned_event(j, now_ms(), sig, limit);
                job_save(j);
            }
        }
        else if (!strcmp(line, "T"))
            job_term_wake(j); /* its terminal takes clients: the attached wait no more */
        else if (!strcmp(line, "E") && !job_state_terminal(j->state) && !j->preempting) {
            /* (a preempted job waits for its shim to be gone, cgroups and all, before it
             * goes back to the queue: its next run reuses the same names) */
            finalize(j);
        }
    }
}

static void on_notify(watch *w, uint32_t events)
{
    job *j = w->data;
    char buf[256];
    ssize_t n = read(w->fd, buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
        notify_lines(j, buf);
        return;
    }
    if (n < 0 && errno == EAGAIN)
        return;
    loop_del(w);
    close(w->fd);
    w->fd = -1;
}

static void read_started(job *j, const char *dir)
{
    char *s = shim_record_read(dir, SHIM_STARTED);
    int pid;
    long long ms;
    if (s && sscanf(s, "%d %lld", &pid, &ms) == 2)
        mark_running(j, pid, ms);
    free(s);
}

/* --signal's warning in the job's history, at the time the shim sent it. */
static void warned_event(job *j, int64_t at_ms, int sig, unsigned long long limit)
{
    char name[16];
    uint32_t secs;
    jobreq_signal(&j->req, &secs);
    job_event_at(j, at_ms, JE_SIGNALED, -1, "%s to its command by joblet, due %u s before its run-time limit of %llu s "
                 "(--signal)", parse_signal_name(sig, name, sizeof name), secs, limit);
}

/* Records the warnings listed in file path, saves, removes it. How many. */
static int warned_from(job *j, const char *path)
{
    char *s = read_file(path, NULL);
    if (!s)
        return 0;
    int n = 0;
    char *save = NULL;
    for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        int sig;
        unsigned long long limit;
        long long ms;
        if (sscanf(line, "%d %llu %lld", &sig, &limit, &ms) != 3)
            continue;
        warned_event(j, ms, sig, limit);
        n++;
    }
    free(s);
    if (n)
        job_save(j); /* before the file goes: a crash in between records one twice, never none */
    if (unlink(path) < 0 && errno != ENOENT)
        log_warn("job %s: cannot remove %s: %s", j->id, path, strerror(errno));
    return n;
}

/* The --signal warnings the shim recorded (exec/shim.h SHIM_WARNED), each in the job's history.
 * The "W" line says one was just sent; a joblet that was down then, or restarted since (it has
 * no pipe to that shim), reads them when it adopts the job and when the job ends. The file is
 * taken whole (renamed) before it is read, so a warning the shim appends meanwhile goes to a
 * new one; one taken by a joblet that died before it had saved them is read first. How many. */
static int read_warned(job *j, const char *dir)
{
    uint32_t secs;
    if (!jobreq_signal(&j->req, &secs))
        return 0; /* no --signal: no file to look for (every job's end comes here) */
    char path[760], taken[780];
    snprintf(path, sizeof path, "%s/%s", dir, SHIM_WARNED);
    snprintf(taken, sizeof taken, "%s.taken", path);
    int n = warned_from(j, taken);
    if (rename(path, taken) == 0)
        n += warned_from(j, taken);
    else if (errno != ENOENT)
        log_warn("job %s: cannot take %s: %s", j->id, path, strerror(errno));
    return n;
}

/* A Slurm task whose start ran nothing (SHIM_NOT_RUN): it is not started again. Its stdio,
 * cgroups and GPUs were its request's (slurm_task.c), and the task process that asked was told
 * the start failed when the killed joblet's connection ended: from the queue the command would
 * run outside Slurm, its output in joblet's log, while Slurm counts the task failed. */
static void slurm_task_not_run(job *j)
{
    job_event(j, JE_RESTARTED, -1, "joblet restarted; the Slurm task's command never ran (joblet was killed before "
                                   "it let it run): not started again, its task process was told it failed");
    free(j->error);
    j->error = xstrdup("joblet was killed before the Slurm task's command ran; the task was not started (Slurm's "
                       "task process was told so)");
    j->shim_pid = 0;
    j->has_exit = false;
    j->preempting = j->requeue_asked = j->requeue_hold = false;
    job_finish(j, JS_FAILED, "start_failed");
}

/* Reads the shim's end record (shim_status.h) into the job and makes it terminal. */
static void finalize(job *j)
{
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    j->gated = false;
    read_started(j, dir);
    read_warned(j, dir);
    shim_status st;
    bool have = shim_status_read(dir, &st) == 0;
    j->log_bytes = have ? st.log_bytes : -1; /* (saved with its end; statedisk.c) */
    if (have && !strcmp(st.end_reason, SHIM_NOT_RUN)) {
        /* the previous joblet committed this start and was killed before its word to the shim
         * (go_committed), which then ran nothing: the job waits again, or ends if it was being
         * stopped (a requeue asked for waits, as asked) */
        if (j->state == JS_STOPPING && !j->preempting) {
            job_event(j, JE_RESTARTED, -1, "joblet restarted; the job was being stopped before its command ran, "
                                           "and it never ran");
            j->shim_pid = 0;
            job_finish(j, JS_STOPPED, "stopped");
            return;
        }
        if (j->slurm.set) {
            slurm_task_not_run(j);
            return;
        }
        j->preempting = j->requeue_asked = j->requeue_hold = false;
        if (j->state == JS_STOPPING)
            j->state = JS_QUEUED;
        job_unstart(j);
        job_event(j, JE_RESTARTED, -1, "joblet restarted; its shim had not been told that the start was recorded "
                                       "(joblet was killed first), and ran nothing: the job waits to start again");
        log_warn("job %s: a recorded start whose shim was never let run the command; the job waits again", j->id);
        depend_single_changed(j);
        return;
    }
    if (!have && j->preempting) {
        /* a requeue (or preemption) committed before its stop, whose run ended; the earlier
         * joblet took the end and removed the run's files (job_requeue) but was killed before
         * the turn's commit saved the job back in the queue: what was asked is done now */
        job_event(j, JE_RESTARTED, -1, "joblet restarted; the run it was stopping to go back to the queue had ended");
        j->shim_pid = 0;
        job_requeue(j);
        depend_single_changed(j);
        return;
    }
    if (!have) {
        free(j->error);
        /* its log only when it wrote one (it is made with the shim's first line) */
        char msg[1024], log[760];
        snprintf(log, sizeof log, "%s/%s", dir, SHIM_LOG);
        bool logged = access(log, F_OK) == 0;
        snprintf(msg, sizeof msg, "the job's shim (pid %d) ended without recording how the job ended%s%s",
                 (int)j->shim_pid,
                 logged ? "; see " : " and wrote no " SHIM_LOG ": it was killed (SIGKILL, the kernel's OOM killer: "
                                     "the kernel's log says which) or it crashed",
                 logged ? log : "");
        j->error = xstrdup(msg);
        j->shim_pid = 0;
        job_finish(j, JS_FAILED, "lost");
        return;
    }
    j->has_exit = st.has_exit;
    j->exit_code = st.exit_code;
    j->signal = st.signal;
    free(j->signal_name);
    j->signal_name = *st.signal_name ? xstrdup(st.signal_name) : NULL;
    if (*st.error) {
        free(j->error);
        j->error = xstrdup(st.error);
    }
    j->usage.cpu_ns = st.cpu_ns;
    j->usage.memory_peak_bytes = st.memory_peak_bytes;
    j->usage.io_read_bytes = st.io_read_bytes;
    j->usage.io_write_bytes = st.io_write_bytes;
    if (!j->started_ms && st.started_at_ms)
        j->started_ms = st.started_at_ms;
    j->ended_ms = st.ended_at_ms;
    const char *reason = *st.end_reason ? st.end_reason : "lost";
    enum job_state s = JS_FAILED;
    if (!strcmp(reason, "stopped") || !strcmp(reason, "killed"))
        s = JS_STOPPED;
    else if (!strcmp(reason, "exit") && j->exit_code == 0)
        s = JS_COMPLETED;
    /* A shim that is still tidying up is no longer the job's: job_finish records both at once. */
    j->shim_pid = 0;
    /* Preempted: back in the queue, unless it ended on its own before the stop reached it. */
    if (j->preempting && !strcmp(reason, "stopped")) {
        job_requeue(j);
        depend_single_changed(j); /* it no longer holds its name: a singleton of its name may go */
    }    else if (j->fail_reason && !strcmp(reason, "stopped")) {
        free(j->error);
        j->error = j->fail_reason;
        j->fail_reason = NULL;
        job_finish(j, JS_FAILED, "gpu_error");
    } else {
        /* it ended on its own before the stop for its GPU reached it: not the GPU's doing */
        j->gpu_fault = (gpu_fault){0};
        free(j->fail_reason);
        j->fail_reason = NULL;
        j->preempting = j->requeue_asked = j->requeue_hold = false;
        job_finish(j, s, reason);
    }
}

static void on_shim_exit(watch *w, uint32_t events)
{
    job *j = w->data;
    if (j->w_notify.fd >= 0) {
        on_notify(&j->w_notify, 0); /* a start line may still sit in the pipe */
        if (j->w_notify.fd >= 0) {
            loop_del(&j->w_notify);
            close(j->w_notify.fd);
            j->w_notify.fd = -1;
        }
    }
    loop_del(w);
    close(w->fd);
    w->fd = -1;
    if (nunwatched)
        unwatched_retry_ms = now_ms(); /* its descriptor is free: a shim not watched yet may take it */
    /* (a shim that told its end is no longer the job's: the job, requeued, may wait again) */
    if (!job_state_terminal(j->state) && j->shim_pid > 0) {
        finalize(j);
    }
    job_launch_unwait(j);
    if (job_in_queue(j))
        state_want(WANT_SCHEDULE); /* requeued while it tidied up: it may go now (job_launch_tidying) */
    if (j->cg2_made) {
        /* the shim has detached its device filter and its job is gone: the directory is empty */
        if (rmdir(j->cg2_made) < 0 && errno != ENOENT)
            log_warn("job %s: cannot remove its cgroup %s: %s", j->id, j->cg2_made, strerror(errno));
        free(j->cg2_made);
        j->cg2_made = NULL;
    }
}

/* The waiter ended (a Slurm task killed by scancel, or by anyone): its job goes too. */
static void on_waiter_exit(watch *w, uint32_t events)
{
    job *j = w->data;
    job_launch_unwait(j);
    if (job_state_terminal(j->state) || j->shim_pid <= 0)
        return;
    job_event(j, JE_STOPPING, -1, "the process that waits for it (pid %d) ended: SIGKILL to every process at once",
              (int)j->waiter_pid);
    jerr e = {0};
    if (job_launch_kill(j, (uid_t)-1, &e) < 0)
        log_err("job %s: %s", j->id, e.msg);
}

void job_launch_wait_by(job *j, int pidfd, pid_t pid)
{
    j->waiter_pid = pid;
    j->waiter_start = proc_start_time(pid); /* (pidfd held: the pid is still that process) */
    j->w_waiter = (watch){pidfd, on_waiter_exit, j};
    loop_add(&j->w_waiter);
}

void job_launch_unwait(job *j)
{
    if (j->w_waiter.fd < 0)
        return;
    loop_del(&j->w_waiter);
    close(j->w_waiter.fd);
    j->w_waiter.fd = -1;
}

void job_launch_cg2_path(const job *j, char *out, size_t len)
{
    snprintf(out, len, "%s/%s/slurm-%s", core.cg.unified, core.cfg.cgroup_root, j->id);
}

/* A Slurm task's own pieces after a restart: its cgroup2 directory is the job's again (removed
 * when its shim exits), and the process that waited for it is watched again, by pid and start
 * time; when it is gone (scancel while joblet was down), the job goes too. */
static void adopt_slurm_task(job *j)
{
    char d[320];
    job_launch_cg2_path(j, d, sizeof d);
    if (core.cg.unified[0] && !j->cg2_made && access(d, F_OK) == 0)
        j->cg2_made = xstrdup(d);
    if (j->waiter_pid <= 0)
        return;
    int pidfd = (int)syscall(SYS_pidfd_open, j->waiter_pid, 0);
    if (pidfd >= 0 && j->waiter_start && proc_start_time(j->waiter_pid) == j->waiter_start) {
        job_launch_wait_by(j, pidfd, j->waiter_pid);
        return;
    }
    if (pidfd >= 0)
        close(pidfd);
    job_event(j, JE_STOPPING, -1, "the process that waited for it (pid %d) ended while joblet was down: SIGKILL to "
                                  "every process at once",
              (int)j->waiter_pid);
    jerr e = {0};
    if (job_launch_kill(j, (uid_t)-1, &e) < 0)
        log_err("job %s: %s", j->id, e.msg);
}

/* A Slurm task's cgroup2 directory (its device filter's), empty with its shim gone, removed after
 * a restart. */
static void slurm_cg2_remove(job *j)
{
    if (!core.cg.unified[0])
        return;
    char d[320];
    job_launch_cg2_path(j, d, sizeof d);
    if (rmdir(d) < 0 && errno != ENOENT)
        log_warn("job %s: cannot remove its cgroup %s: %s", j->id, d, strerror(errno));
}

/* A start the previous joblet made and was killed before it committed (no shim in the job's
 * row). Its shim waited for the commit's word (go_committed), saw joblet gone, and ran
 * nothing: its end record says SHIM_NOT_RUN, and the job waits as before. A shim of a joblet
 * from before that word ran the command and may have ended while joblet was down: its end
 * record is then the job's outcome (started again, it would run twice: an array task's
 * command twice, its output twice in its log). (A requeue removes a run's records before the
 * job goes back to the queue, so a waiting job's directory has none of its own.) A shim still
 * there is orphans.c's: killed, and the job starts again. true: settled here (told, or ended). */
static bool unrecorded_run(job *j)
{
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    shim_status st;
    if (shim_status_read(dir, &st) < 0)
        return false;
    if (!strcmp(st.end_reason, SHIM_NOT_RUN)) {
        /* its shim waited for the commit (go_committed) and ran nothing: no end of the job's */
        shim_record_clear(dir);
        if (j->slurm.set)
            return false; /* (a Slurm task is not started again: job_launch_adopt_all ends it) */
        job_event(j, JE_RESTARTED, -1, "joblet restarted; a start of it that was not recorded (joblet was killed "
                                       "before it committed the start) ran nothing: the job still waits (%s)",
                  job_state_name(j->state));
        return true;
    }
    job_event(j, JE_RESTARTED, -1, "joblet restarted; a start of it that was not recorded (joblet was killed before "
                                   "it committed the start) ran and ended while joblet was down: its end is the job's");
    log_warn("job %s: a run no row records ended while joblet was down; its end is taken (not started again)", j->id);
    j->holds_room = true;
    core.running++;
    finalize(j);
    return true;
}

/* The descriptors an adoption at the start leaves free: what the start opens after it (the
 * zygote's socket, the listeners, the account look-ups' threads, the metrics listener) must find
 * them, or joblet would not come up at all. Later ones leave a launch's (JOB_LAUNCH_FDS). */
#define ADOPT_START_FDS (2 * JOB_LAUNCH_FDS)

/* Out of the unwatched list (watched now, ended, or deleted). */
static void unwatched_drop(job *j)
{
    if (!j->unwatched)
        return;
    j->unwatched = false;
    for (size_t i = 0; i < nunwatched; i++)
        if (unwatched[i] == j) {
            memmove(unwatched + i, unwatched + i + 1, (nunwatched - i - 1) * sizeof *unwatched);
            nunwatched--;
            return;
        }
}

enum adopt_outcome { ADOPT_WATCHED, ADOPT_ENDED, ADOPT_SHORT };

static bool files_short(int err) { return err == EMFILE || err == ENFILE; }

/* The job's shim watched again, with keep descriptors left free: its pidfd held, its start and
 * the warnings sent while joblet was away read, a stop owed told, a Slurm task's pieces taken
 * back. ADOPT_ENDED: the shim is gone (its pid ended, or is another process's now). ADOPT_SHORT,
 * nothing done: too few descriptors free, or its pidfd (or the read of its start time) failed
 * with EMFILE or ENFILE, which says nothing of the shim. late: after the start (unwatched). */
static enum adopt_outcome adopt_shim(job *j, int keep, bool late)
{
    if (!fds_available(keep))
        return ADOPT_SHORT;
    /* The pidfd first, then the start time: once the pidfd is held the pid cannot be reused
     * under us, so a matching start time proves it is still our shim. */
    int pidfd = (int)syscall(SYS_pidfd_open, j->shim_pid, 0);
    if (pidfd < 0)
        return files_short(errno) ? ADOPT_SHORT : ADOPT_ENDED;
    errno = 0;
    uint64_t started = proc_start_time(j->shim_pid);
    if (!started && files_short(errno)) {
        close(pidfd);
        return ADOPT_SHORT;
    }
    if (!j->shim_start || started != j->shim_start) {
        close(pidfd);
        return ADOPT_ENDED;
    }
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    if (late)
        job_event(j, JE_RESTARTED, -1, "re-attached to the job's shim (pid %d): joblet has descriptors free for it "
                                       "again", (int)j->shim_pid);
    else
        job_event(j, JE_RESTARTED, -1, "joblet restarted; re-attached to the job's shim (pid %d)", (int)j->shim_pid);
    read_started(j, dir);
    read_warned(j, dir); /* sent while joblet was down */
    if (!j->sandbox_uid) /* a row written before it had its column: the spec summary's */
        j->sandbox_uid = job_detail_sandbox_uid(j); /* held until it ends */
    unwatched_drop(j); /* (before any word to the shim below: shim_watched) */
    watch_shim(j, pidfd, -1);
    log_info("job %s: re-adopted running shim %d", j->id, (int)j->shim_pid);
    /* a stop (or requeue) committed before the shim was told, and joblet killed between
     * the two: told now (the shim's stop is begun once; a second SIGTERM changes nothing) */
    if ((j->state == JS_STOPPING || j->preempting) &&
        syscall(SYS_pidfd_send_signal, j->w_pid.fd, SIGTERM, NULL, 0) < 0 && errno != ESRCH)
        log_err("job %s: cannot tell its shim again to stop: %s", j->id, strerror(errno));
    if (j->slurm.set)
        adopt_slurm_task(j);
    return ADOPT_WATCHED;
}

/* The shim adopt_shim found gone: its end, as it recorded it, is the job's. */
static void adopt_ended(job *j, bool late)
{
    if (late)
        job_event(j, JE_RESTARTED, -1, "the job's shim (pid %d) ended before joblet had descriptors free to watch "
                                       "it", (int)j->shim_pid);
    else
        job_event(j, JE_RESTARTED, -1, "joblet restarted; the job's shim (pid %d) ended while it was down",
                  (int)j->shim_pid);
    finalize(j);
    if (j->slurm.set)
        slurm_cg2_remove(j);
}

/* After a restart: every job that had a shim is re-attached, finished, or declared lost; or,
 * with too few descriptors free, re-attached later (unwatched). */
void job_launch_adopt_all(void)
{
    bool short_files = false; /* (once short, the jobs after it wait too: nothing frees one here) */
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        if (!job_state_terminal(j->state) && j->shim_pid <= 0 && unrecorded_run(j))
            continue;
        if (!job_state_terminal(j->state) && j->shim_pid <= 0 && j->slurm.set) {
            /* a Slurm task whose start no row records (joblet killed between the commit of its
             * job and that of its start): its shim ran nothing (or orphans.c kills it), and the
             * queue must not start it (slurm_task_not_run) */
            slurm_task_not_run(j);
            slurm_cg2_remove(j);
            continue;
        }
        if (!job_state_terminal(j->state) && j->shim_pid <= 0)
            job_event(j, JE_RESTARTED, -1, "joblet restarted; the job still waits (%s)", job_state_name(j->state));
        if (job_state_terminal(j->state) || j->shim_pid <= 0)
            continue;
        j->holds_room = true;
        core.running++;
        enum adopt_outcome a = short_files ? ADOPT_SHORT : adopt_shim(j, ADOPT_START_FDS, false);
        if (a == ADOPT_ENDED)
            adopt_ended(j, false);
        if (a != ADOPT_SHORT)
            continue;
        short_files = true;
        if (nunwatched == unwatched_cap) {
            unwatched_cap = unwatched_cap ? unwatched_cap * 2 : 16;
            unwatched = xrealloc(unwatched, unwatched_cap * sizeof *unwatched);
        }
        unwatched[nunwatched++] = j;
        j->unwatched = true;
        /* told once: the retries say nothing until it is watched (or found ended) */
        job_event(j, JE_RESTARTED, -1, "joblet restarted with too few descriptors free to watch the job's shim (pid "
                                       "%d; its open-file limit, ulimit -n, is %llu): the job runs on as it was (%s), "
                                       "and joblet re-attaches to it once descriptors are free; until then a stop "
                                       "waits for that, and a kill, signal, suspend or resume is refused",
                  (int)j->shim_pid, (unsigned long long)core.nofile_hard, job_state_name(j->state));
    }
    if (nunwatched) {
        log_warn("%zu running jobs are not watched: joblet has too few descriptors free for their shims' pidfds (its "
                 "open-file limit, ulimit -n, is %llu: lower than the one they were started under?). They run on, "
                 "holding their room and GPUs, and are re-attached once descriptors are free (tried every %d s); new "
                 "jobs wait until then", nunwatched, (unsigned long long)core.nofile_hard, UNWATCHED_RETRY_MS / 1000);
        unwatched_retry_ms = now_ms() + UNWATCHED_RETRY_MS;
    }
}

void job_launch_adopt_retry(void (*watched)(job *j))
{
    unwatched_retry_ms = 0;
    bool any = nunwatched > 0;
    while (nunwatched) {
        job *j = unwatched[0];
        enum adopt_outcome a = adopt_shim(j, JOB_LAUNCH_FDS, true);
        if (a == ADOPT_SHORT)
            break;
        unwatched_drop(j); /* (done already for one watched) */
        if (a == ADOPT_ENDED)
            adopt_ended(j, true);
        else if (watched)
            watched(j);
    }
    if (nunwatched)
        unwatched_retry_ms = now_ms() + UNWATCHED_RETRY_MS;
    else if (any)
        log_info("joblet has descriptors free again: every running job's shim is watched");
}

int64_t job_launch_adopt_due_ms(void) { return unwatched_retry_ms; }

size_t job_launch_unwatched(void) { return nunwatched; }

/* 0 when the job's shim is watched; else a busy answer, nothing done: every word to a shim goes
 * through its pidfd, which an unwatched job's lacks (w_pid.fd -1). what: "stop", "kill", ... */
static int shim_watched(const job *j, const char *what, jerr *e)
{
    if (!j->unwatched)
        return 0;
    unwatched_retry_ms = now_ms(); /* (descriptors may be free by now: the next turn looks) */
    return jerr_busy(e, "cannot %s job %s now: joblet was restarted with too few descriptors free to watch its shim "
                        "(its open-file limit, ulimit -n) and re-attaches to it once descriptors are free; nothing "
                        "was done: try again", what, j->id);
}

/* An adopted job whose start the previous joblet did not hear: the shim's file tells. */
void job_launch_refresh(job *j)
{
    if (j->state != JS_QUEUED || j->shim_pid <= 0 || j->w_notify.fd >= 0)
        return;
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    read_started(j, dir);
}

bool job_launch_tidying(const job *j)
{
    /* (finalize: a shim whose end was told is no longer the job's, and is watched until it ends) */
    return j->shim_pid <= 0 && j->w_pid.fd >= 0;
}

void job_launch_watch_tidying(job *j, int pidfd)
{
    if (j->w_pid.fd >= 0 || j->shim_pid > 0) {
        close(pidfd); /* (watched already, or the job's own run's: cannot be) */
        return;
    }
    j->w_pid = (watch){pidfd, on_shim_exit, j};
    if (loop_add(&j->w_pid) < 0) {
        log_warn("job %s: cannot watch the shim of its run before, still tidying up: a requeue now may start "
                 "before it ended", j->id);
        close(pidfd);
        j->w_pid.fd = -1;
    }
}

/* The job is being deleted while its shim finishes tidying up: stop watching it. */
void job_launch_forget(job *j)
{
    job_launch_unwait(j);
    unwatched_drop(j); /* (one that ends leaves the list first: deleted, it cannot be in it) */
    watch *ws[] = {&j->w_notify, &j->w_pid};
    for (size_t i = 0; i < 2; i++)
        if (ws[i]->fd >= 0) {
            loop_del(ws[i]);
            close(ws[i]->fd);
            ws[i]->fd = -1;
        }
}

/* SIGTERM (stop) or SIGUSR1 (kill) to the job's shim. */
static int signal_shim(job *j, uid_t by, int sig, jerr *e)
{
    /* The stop of a running job whose shim is not watched yet waits for it: STOPPING (or
     * preempting) in its row, its SIGTERM is sent as it is re-attached (adopt_shim), as after
     * any restart whose joblet was killed before it told a stop. Refused, a stop would be lost
     * where nobody asks again (a workflow's cancel, a failed GPU's). A kill cannot wait so
     * (nothing re-sends it), nor the stop of a job that does not show it (SUSPENDED: its thaw
     * needs the shim; one still starting). */
    bool later = j->unwatched && sig == SIGTERM && (j->state == JS_RUNNING || j->preempting);
    if (!later && shim_watched(j, sig == SIGTERM ? "stop" : "kill", e) < 0)
        return -1;
    if (j->shim_pid <= 0 || (!later && j->w_pid.fd < 0))
        return jerr_http(e, 409, "job %s is %s; only a running job can be %s", j->id, job_state_name(j->state),
                         sig == SIGTERM ? "stopped" : "killed");
    if (!later && syscall(SYS_pidfd_send_signal, j->w_pid.fd, sig, NULL, 0) < 0 && errno != ESRCH)
        return jerr_sys(e, "signal the shim of job %s", j->id);
    j->stopped_by = by;
    if (j->state == JS_RUNNING)
        j->state = JS_STOPPING;
    /* (a preemption tells its own story: job_launch_preempt) */
    if (!j->preempting || sig == SIGUSR1) {
        char who[48], how[200];
        snprintf(who, sizeof who, by == (uid_t)-1 ? "by joblet" : "by uid %u", (unsigned)by);
        if (sig == SIGUSR1)
            snprintf(how, sizeof how, "SIGKILL to every process at once (kill)");
        else
            snprintf(how, sizeof how, "SIGTERM%s, SIGKILL after %llus",
                     later ? " once joblet has descriptors free to watch its shim (it re-attaches to it then)" : "",
                     (unsigned long long)core.cfg.stop_grace_s);
        job_event(j, JE_STOPPING, by == (uid_t)-1 ? -1 : (int64_t)by, "%s%s%s: %s", who, j->fail_reason ? ", " : "",
                  j->fail_reason ? j->fail_reason : "", how);
    }
    job_save(j);
    return 0;
}

int job_launch_stop(job *j, uid_t by, jerr *e)
{
    /* a suspended job is thawed first (a preemption, a failed GPU): frozen, it would hear SIGTERM
     * only after the grace period's SIGKILL had ended it (rnx job stop thaws it before: job_ctl.c) */
    if (j->state == JS_SUSPENDED) {
        jerr te = {0};
        if (job_launch_thaw(j, &te) < 0)
            log_warn("job %s: cannot thaw it to be stopped (%s): it ends by SIGKILL after the grace period", j->id,
                     te.msg);
        else
            job_event(j, JE_RESUMED, (int64_t)by, "thawed to be stopped");
    }
    return signal_shim(j, by, SIGTERM, e);
}

int job_launch_kill(job *j, uid_t by, jerr *e)
{
    /* a kill ends a preemption's stop too: the job is no longer to go back in the queue */
    if (signal_shim(j, by, SIGUSR1, e) < 0)
        return -1;
    if (j->preempting) {
        j->preempting = j->requeue_asked = j->requeue_hold = false;
        job_save(j);
    }
    return 0;
}

uint64_t job_launch_runtime_s(const job_req *r)
{
    return jobreq_has(r, JR_MAX_RUNTIME_S) ? (uint64_t)r->max_runtime_s : 0;
}

/* The suspension over: its time added to the run's (suspended_ms), which the deadline moved by. */
static void suspension_ends(job *j)
{
    int64_t now = now_ms();
    if (j->suspended_since_ms > 0 && now > j->suspended_since_ms)
        j->suspended_ms += now - j->suspended_since_ms;
    j->suspended_since_ms = 0;
}

int job_launch_thaw(job *j, jerr *e)
{
    if (j->state != JS_SUSPENDED)
        return 0;
    /* (thawed, its shim would not hear that its clock runs again: the limit would wait) */
    if (shim_watched(j, "thaw", e) < 0)
        return -1;
    if (job_freeze_ask(j, false, e) < 0)
        return -1;
    jerr re = {0};
    if (job_launch_runtime(j, job_launch_runtime_s(&j->req), false, &re) < 0)
        log_warn("job %s: thawed, but %s", j->id, re.msg);
    suspension_ends(j);
    j->state = JS_RUNNING;
    j->stopped_by = -1;
    state_want(WANT_SCHEDULE); /* the time it ends at the latest moved by its suspension (sched_input.c) */
    return 0;
}

/* A stop that puts the job back in the queue (requeue, preemption): the intent is committed
 * before the shim hears the stop, so a joblet killed between the two finds it in the row (and
 * sends the stop again: job_launch_adopt_all) instead of a job that was stopped and not put
 * back. false: not committed (the flag is taken back, nothing was sent). */
static bool requeue_committed(job *j, uid_t by, jerr *e)
{
    /* inside a request's savepoint (a delete of several jobs settles, and a pass may preempt):
     * a commit here would commit part of what the request may still undo. Later. */
    if (db_marked(core.db)) {
        state_want_after_commit(WANT_SCHEDULE);
        jerr_http(e, 503, "a request's change is under way; tried again once it is committed");
        return false;
    }
    j->preempting = true;
    j->stopped_by = by; /* (who asked: a requeue --hold is released by them, or by an admin) */
    job_save(j);
    if (state_commit_now(e) == 0)
        return true;
    j->preempting = j->requeue_asked = j->requeue_hold = false;
    j->stopped_by = -1;
    job_save(j); /* (the rows of a failed commit are written again from memory: without it) */
    /* nothing was sent: said so before the commit's own "try again" (its status and code kept) */
    char why[sizeof e->msg];
    size_t n = strlen(e->msg), al = strlen(STATE_COMMIT_AGAIN);
    if (n >= al && !strcmp(e->msg + n - al, STATE_COMMIT_AGAIN))
        n -= al;
    snprintf(why, sizeof why, "%.*s", (int)n, e->msg);
    int code = e->code;
    jerr_http(e, e->http, "%s; nothing was requeued: the job runs on as it was" STATE_COMMIT_AGAIN, why);
    e->code = code;
    return false;
}

void job_launch_preempt(job *j, const char *for_id, int64_t for_priority)
{
    jerr e = {0};
    if (!requeue_committed(j, (uid_t)-1, &e)) {
        if (for_id) { /* a priority's: the next pass decides again */
            log_warn("job %s: not preempted now: %s", j->id, e.msg);
            return;
        }
        /* its GPU failed: it is stopped all the same (a kill -9 before the next commit ends it
         * STOPPED instead of back in the queue) */
        log_err("job %s: its GPU failed and its requeue is not committed (%s): stopped all the same", j->id, e.msg);
        j->preempting = true;
    }
    if (job_launch_stop(j, (uid_t)-1, &e) < 0) {
        j->preempting = false;
        job_save(j);
        log_err("job %s: cannot preempt: %s", j->id, e.msg);
        return;
    }
    j->stopped_by = -1;
    job_save(j);
    if (for_id)
        job_event(j, JE_PREEMPTED, -1, "for job %s (priority %lld over %lld): SIGTERM, SIGKILL after %llus",
                  for_id, (long long)for_priority, (long long)j->req.priority,
                  (unsigned long long)core.cfg.stop_grace_s);
    else
        job_event(j, JE_PREEMPTED, -1, "its GPU failed; back to the queue to run elsewhere: SIGTERM, SIGKILL after %llus",
                  (unsigned long long)core.cfg.stop_grace_s);
    log_info("job %s: preempted for job %s (priority %lld over %lld): stopping, then back in the queue", j->id,
             for_id ? for_id : "?", for_id ? (long long)for_priority : 0,
             (long long)j->req.priority);
}

void job_launch_live_usage(const job *j, job_usage *u)
{
    cg_host uh;
    cg_job cg;
    job_detail_cgroup(j, &uh, &cg);
    cg_stats st = {0};
    if (cg_read_stats(&cg, &st) < 0)
        return;
    u->cpu_ns = st.cpu_usage_ns;
    u->memory_peak_bytes = st.mem_peak_bytes;
    u->io_read_bytes = st.io_read_bytes;
    u->io_write_bytes = st.io_write_bytes;
    u->pids_current = st.pids_current;
}

/* signo with its value v to the job's shim, as sigqueue(3) sends it (SI_QUEUE: the shim takes
 * the value only from a signal so sent), through its pidfd. */
static int shim_sigqueue(const job *j, int signo, union sigval v)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = signo;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value = v;
    return (int)syscall(SYS_pidfd_send_signal, j->w_pid.fd, signo, &si, 0);
}

/* Whether a SHIM_SIGNAL_FORWARD waits in the shim's queue, not taken yet: the kernel's mask of
 * the signals pending for the whole process (ShdPnd in /proc/PID/status, bit N-1 for signal N). */
static bool forward_pending(pid_t shim)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)shim);
    char *text = read_file(path, NULL);
    if (!text)
        return false;
    const char *p = strstr(text, "\nShdPnd:");
    unsigned long long mask = p ? strtoull(p + 8, NULL, 16) : 0;
    free(text);
    return (mask >> (SHIM_SIGNAL_FORWARD - 1)) & 1;
}

int job_launch_signal(job *j, uid_t by, int sig, bool all, jerr *e)
{
    char name[16];
    parse_signal_name(sig, name, sizeof name);
    if (shim_watched(j, "signal", e) < 0)
        return -1;
    if (j->shim_pid <= 0 || j->w_pid.fd < 0)
        return jerr_http(e, 409, "job %s is %s; only a running job can be sent %s", j->id, job_state_name(j->state),
                         name);
    /* Each queued signal is charged to root, whose pending signals are one budget for the whole
     * host (RLIMIT_SIGPENDING): a shim that does not take them yet (one still starting the job)
     * must not let one user's requests use it up, and with it the limit words of every other
     * job (job_launch_runtime). Once the shim has taken them all, the count starts again. */
    if (!forward_pending(j->shim_pid))
        j->signals_queued = 0;
    else if (j->signals_queued >= JOB_LAUNCH_SIGNALS_QUEUED_MAX)
        return jerr_busy(e, "cannot send %s to job %s now: the %u signals sent before still wait for it to "
                            "take them; try again in a moment", name, j->id, (unsigned)j->signals_queued);
    if (shim_sigqueue(j, SHIM_SIGNAL_FORWARD, (union sigval){.sival_int = sig | (all ? SHIM_SIGNAL_ALL : 0)}) < 0) {
        if (errno == ESRCH)
            return jerr_http(e, 409, "job %s ended before %s reached it", j->id, name);
        if (errno == EAGAIN) /* the queue of signals pending is full (RLIMIT_SIGPENDING) */
            return jerr_busy(e, "cannot send %s to job %s now: too many signals are waiting to be delivered; "
                                "try again in a moment", name, j->id);
        return jerr_sys(e, "send %s to the shim of job %s", name, j->id);
    }
    j->signals_queued++;
    const char *when = j->state == JS_SUSPENDED ? " (delivered when it is resumed)"
                       : job_state_waiting(j->state) ? " (delivered once its command runs)"
                                                      : "";
    job_event(j, JE_SIGNALED, (int64_t)by, "%s to %s by uid %u%s", name, all ? "every process" : "its command",
              (unsigned)by, when);
    job_save(j);
    log_info("job %s: %s sent by uid %u", j->id, name, (unsigned)by);
    return 0;
}

int job_launch_runtime(job *j, uint64_t seconds, bool suspended, jerr *e)
{
    if (shim_watched(j, "tell the run-time limit to", e) < 0)
        return -1;
    if (j->shim_pid <= 0 || j->w_pid.fd < 0)
        return jerr_http(e, 409, "job %s is %s; its shim does not run", j->id, job_state_name(j->state));
    uint64_t word = (seconds > INT32_MAX ? INT32_MAX : seconds) | (suspended ? SHIM_LIMIT_SUSPENDED : 0);
    char dir[700], path[760], txt[32];
    jobs_dir_of(j, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s", dir, SHIM_LIMIT);
    int n = snprintf(txt, sizeof txt, "%llu\n", (unsigned long long)word);
    if (write_file_opt(path, txt, (size_t)n, 0600, WF_ATOMIC, e) < 0)
        return -1;
    if (shim_sigqueue(j, SIGUSR2, (union sigval){.sival_ptr = (void *)(uintptr_t)word}) < 0)
        return jerr_sys(e, "tell the shim of job %s its run-time limit", j->id);
    return 0;
}

int job_launch_requeue(job *j, uid_t by, jerr *e)
{
    if (!requeue_committed(j, by, e))
        return -1;
    if (job_launch_stop(j, by, e) < 0) {
        j->preempting = j->requeue_asked = j->requeue_hold = false;
        job_save(j);
        return -1;
    }
    job_save(j);
    return 0;
}
