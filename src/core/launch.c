/* Starting jobs, noticing their end, and taking them back after a restart. The daemon
 * never waits on a job: it spawns the shim, watches the shim's pidfd, and reads what the
 * shim wrote (started, status.json) when it is told something changed. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../exec/cgroup.h"
#include "../exec/shim.h"
#include "../exec/shim_status.h"
#include "../exec/spec.h"
#include "../exec/zygote.h"
#include "counters.h"
#include "gpu_spec.h"
#include "isolation.h"
#include "job_detail.h"
#include "job_events.h"
#include "jobdirs.h"
#include "jobs.h"
#include "launch.h"
#include "runtimes.h"
#include "state.h"
#include "statedisk.h"
#include "volumes.h"
#include "workfs.h"

/* The PATH a job gets when it gives none (launch.h). */
const char *const launch_default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

static void add_env(char ***env, size_t *n, const char *k, const char *v)
{
    *env = xrealloc(*env, (*n + 2) * sizeof **env);
    size_t l = strlen(k) + strlen(v) + 2;
    (*env)[*n] = xmalloc(l);
    snprintf((*env)[*n], l, "%s=%s", k, v);
    (*env)[++*n] = NULL;
}

/* PATH and LD_LIBRARY_PATH: the job's own (or the default) with the GPU directories appended. */
static void add_path_env(const job_req *r, const char *key, const char *dflt, const char *extra, char ***env, size_t *n)
{
    const char *mine = jobreq_env_get(r, false, key);
    const char *base = mine ? mine : dflt;
    if (!*extra && !mine && !*dflt)
        return;
    char *v = xmalloc(strlen(base) + strlen(extra) + 2);
    sprintf(v, "%s%s%s", base, *base && *extra ? ":" : "", extra);
    add_env(env, n, key, v);
    free(v);
}

/* The job's environment is built from nothing: the daemon's own variables never leak in. */
static char **job_env(const job *j, const gpu_spec *gs, const runtime *rt)
{
    char **env = NULL;
    size_t n = 0;
    const job_req *r = &j->req;
    /* the runtime's variables first; the job's own of the same name win */
    for (size_t i = 0; rt && i < rt->nenv; i++)
        if (!jobreq_env_get(r, false, rt->env[i].name) && !jobreq_env_get(r, true, rt->env[i].name) &&
            strcmp(rt->env[i].name, "PATH") && strcmp(rt->env[i].name, "LD_LIBRARY_PATH"))
            add_env(&env, &n, rt->env[i].name, rt->env[i].value);
    static const char *const defaults[][2] = {{"HOME", "/work"}, {"LANG", "C.UTF-8"}};
    for (size_t i = 0; i < ARRAY_LEN(defaults); i++)
        if (!jobreq_env_get(r, false, defaults[i][0]) && !jobreq_env_get(r, true, defaults[i][0]))
            add_env(&env, &n, defaults[i][0], defaults[i][1]);
    if (!jobreq_env_get(r, true, "PATH"))
        add_path_env(r, "PATH", launch_default_path, gs->path_add, &env, &n);
    if (!jobreq_env_get(r, true, "LD_LIBRARY_PATH"))
        add_path_env(r, "LD_LIBRARY_PATH", "", gs->ld_add, &env, &n);
    add_env(&env, &n, "JOB_ID", j->id);
    for (size_t i = 0; i < gs->nenv; i++)
        add_env(&env, &n, gs->env[i].name, gs->env[i].value);
    for (size_t i = 0; i < r->nenv; i++) {
        const char *name = r->env[i].name;
        if (!strcmp(name, "PATH") || !strcmp(name, "LD_LIBRARY_PATH"))
            continue;
        /* NVIDIA's two variables were read as the request (common/jobreq.c): the job sees what
         * it got, the GPU spec's values, or "void" when it got none (a --gpu-optional job run
         * without) unless what was given says so already */
        bool nvidia = !strcmp(name, "NVIDIA_VISIBLE_DEVICES") || !strcmp(name, "NVIDIA_DRIVER_CAPABILITIES");
        if (nvidia && j->gpus.n)
            continue;
        const char *v = r->env[i].value;
        bool none = !*v || !strcmp(v, "void") || !strcmp(v, "none");
        add_env(&env, &n, name, nvidia && !strcmp(name, "NVIDIA_VISIBLE_DEVICES") && !none ? "void" : v);
    }
    for (size_t i = 0; i < r->nsecret_env; i++)
        add_env(&env, &n, r->secret_env[i].name, r->secret_env[i].value);
    return env;
}

static char **job_argv(const job *j)
{
    char **argv = xcalloc(j->req.nargs + 2, sizeof *argv);
    argv[0] = xstrdup(j->req.command);
    for (size_t i = 0; i < j->req.nargs; i++)
        argv[i + 1] = xstrdup(j->req.args[i]);
    return argv;
}

/* The job's spec in a memfd for its shim (spec.h), or -1. */
static int make_spec(const job *j, const char *dir, jerr *e)
{
    job_spec s = {0};
    char host[64];
    gpu_spec g;
    if (gpu_spec_build(j, &g, e) < 0)
        return -1;
    snprintf(s.id, sizeof s.id, "%s", j->id);
    char work[800];
    workfs_path(j->owner_uid, dir, work, sizeof work);
    s.job_dir = (char *)dir;
    s.work_dir = work;
    s.root_mount = core.root_mount;
    snprintf(host, sizeof host, "job-%.8s", j->id);
    s.hostname = host;
    const runtime *rt = NULL;
    if (j->req.runtime) {
        /* checked at submission; removed since: the job cannot start (runtime_build.c refuses to
         * remove a runtime jobs wait for) */
        if (runtimes_find(j->req.runtime, &rt, e) < 0) {
            gpu_spec_free(&g);
            return -1;
        }
        s.system_root = (char *)rt->root;
    }
    s.argv = job_argv(j);
    s.env = job_env(j, &g, rt);
    s.workdir = j->req.workdir ? j->req.workdir : (char *)"/work";
    s.uid = j->uid;
    s.gid = j->gid;
    s.net_host = j->req.network && !strcmp(j->req.network, "host");
    s.max_runtime_s = (uint64_t)j->req.max_runtime_s;
    s.stop_grace_s = core.cfg.stop_grace_s;
    s.tmp_size_mb = core.cfg.tmp_size_mb;
    s.log_max_bytes = (uint64_t)j->req.max_log_bytes;
    if (statedisk_budget_path(j->owner_uid, s.log_budget, sizeof s.log_budget) < 0)
        s.log_budget[0] = 0;
    s.log_floor = core.cfg.state_reserve / 2;
    s.user_procs_max = (uint64_t)j->req.user_pids_max;
    /* the user's jobs' host tasks together, root's unbounded (exec/cgroup.h) */
    s.owner_uid = j->owner_uid;
    s.user_tasks_max = j->owner_uid ? (uint64_t)j->req.user_pids_max : 0;
    s.cgroup_root = core.cfg.cgroup_root;
    s.limits.cpu_pct = (uint32_t)j->req.max_cpu;
    s.limits.mem_bytes = (uint64_t)j->req.max_memory_mb << 20;
    s.limits.pids_max = (uint64_t)j->req.pids_max;
    s.limits.io_bps = (uint64_t)j->req.max_iobps;
    if (s.limits.io_bps) {
        /* the disk /work is on: the owner's loop device under jobs.work_quota (workfs.h),
         * else the state directory's */
        jerr ie = {0};
        if (cg_block_device_of(work, s.limits.io_dev, sizeof s.limits.io_dev, &ie) < 0)
            snprintf(s.limits.io_dev, sizeof s.limits.io_dev, "%s", core.io_dev);
    }
    const char *cores = j->req.cpu_cores;
    snprintf(s.limits.cpus, sizeof s.limits.cpus, "%s", cores ? cores : g.cpus);
    snprintf(s.limits.mems, sizeof s.limits.mems, "%s", cores ? "" : g.mems);
    s.ops = g.ops;
    s.nops = g.nops;
    s.devices = g.rules;
    s.ndevices = g.nrules;
    /* the GPU's binds, then the job's volumes at /volumes/NAME */
    spec_mount *mounts = NULL;
    size_t nmounts = g.nmounts, nown = 0;
    if (g.nmounts) {
        mounts = xmalloc(g.nmounts * sizeof *mounts);
        memcpy(mounts, g.mounts, g.nmounts * sizeof *mounts);
    }
    int fd = volumes_spec_mounts(j, &mounts, &nmounts, e);
    nown = nmounts - g.nmounts;
    s.mounts = mounts;
    s.nmounts = nmounts;
    /* gVisor: the shim renders this spec as an OCI bundle for runsc (exec/gvisor.h) */
    char cdi[2048] = "";
    cg_dev_rule *kvm_rules = NULL;
    const isolation_caps *ic = isolation_caps_get();
    if (j->req.isolation && !strcmp(j->req.isolation, "gvisor")) {
        s.runsc = (char *)ic->runsc;
        s.runsc_root = (char *)isolation_runsc_root();
        s.runsc_platform = (char *)ic->platform;
        s.runsc_nvproxy = j->gpus.n > 0 && ic->nvproxy;
        s.runsc_sandbox_uid = j->sandbox_uid;
        /* the granted GPUs by their CDI names (joblet cdi generate names each by UUID) */
        size_t n = 0;
        for (size_t i = 0; i < j->gpus.n && n < sizeof cdi; i++)
            n += (size_t)snprintf(cdi + n, sizeof cdi - n, "%snvidia.com/gpu=%s", i ? "," : "", j->gpus.g[i].uuid);
        s.cdi_devices = cdi[0] ? cdi : NULL;
        /* the kvm platform: the sandbox (in the job's cgroup) opens /dev/kvm */
        if (!strcmp(ic->platform, "kvm")) {
            kvm_rules = xcalloc(g.nrules + 1, sizeof *kvm_rules);
            if (g.nrules)
                memcpy(kvm_rules, g.rules, g.nrules * sizeof *kvm_rules);
            kvm_rules[g.nrules] = (cg_dev_rule){'c', 10, 232, "rw"};
            s.devices = kvm_rules;
            s.ndevices = g.nrules + 1;
        }
        if (fd == 0 && !ic->gvisor) {
            fd = jerr_set(e, ENOENT, "the job asks for gVisor, which this machine no longer has: %s", ic->why);
        }
    }
    if (fd == 0)
        fd = spec_to_fd(&s, e);
    if (fd >= 0)
        job_detail_spec(j, &s);
    for (size_t i = g.nmounts; i < g.nmounts + nown; i++) {
        free(mounts[i].src);
        free(mounts[i].dst);
    }
    free(mounts);
    free(kvm_rules);
    gpu_spec_free(&g);
    for (char **p = s.argv; *p; p++)
        free(*p);
    free(s.argv);
    for (char **p = s.env; *p; p++)
        free(*p);
    free(s.env);
    return fd;
}

static void on_shim_exit(watch *w, uint32_t events);
static void on_notify(watch *w, uint32_t events);
static void finalize(job *j);

static void watch_shim(job *j, int pidfd, int notify_fd)
{
    j->w_pid = (watch){pidfd, on_shim_exit, j};
    loop_add(&j->w_pid);
    if (notify_fd >= 0) {
        j->w_notify = (watch){notify_fd, on_notify, j};
        loop_add(&j->w_notify);
    }
}

static zygote zyg = {-1, -1};

void launch_init(void)
{
    jerr e = {0};
    if (zygote_start(&zyg, core.shim_path, core.cfg.cgroup_root, &e) < 0)
        log_warn("%s; every job will exec its own shim", e.msg);
}

void launch_shutdown(void) { zygote_stop(&zyg); }

/* A shim from the zygote, restarting it once if it went away; else a freshly exec'd one. */
static pid_t fork_shim(const char *dir, int notify_fd, int spec_fd, jerr *e)
{
    for (int attempt = 0; attempt < 2 && zyg.sock >= 0; attempt++) {
        jerr ze = {0};
        pid_t pid = zygote_fork(&zyg, dir, notify_fd, spec_fd, core.devfilter_prog, &ze);
        if (pid > 0)
            return pid;
        log_warn("%s; restarting the shim zygote", ze.msg);
        zygote_stop(&zyg);
        if (zygote_start(&zyg, core.shim_path, core.cfg.cgroup_root, &ze) < 0)
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

int launch_job(job *j, jerr *e)
{
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    if (j->state == JS_PREEMPTED) {
        j->state = JS_QUEUED; /* started again: QUEUED until its command runs, as the first time */
        free(j->end_reason);  /* "preempted" described the last run; preemptions keeps the count */
        j->end_reason = NULL;
    }
    if (jobdirs_ensure(j, e) < 0) /* made now if the turns since its submission have not */
        return -1;
    /* gVisor: a host uid of its own for the sandbox (exec/oci.h), looked for from the other half
     * of the range than root's jobs' uids are */
    j->sandbox_uid = 0;
    if (j->req.isolation && !strcmp(j->req.isolation, "gvisor"))
        j->sandbox_uid = jobs_free_uid(j->seq + core.cfg.uid_range_size / 2);
    int spec_fd = make_spec(j, dir, e);
    if (spec_fd < 0)
        return -1;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        close(spec_fd);
        return jerr_sys(e, "pipe");
    }
    pid_t pid = fork_shim(dir, pfd[1], spec_fd, e);
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
        close(pfd[0]);
        j->shim_pid = pid;
        j->holds_room = true;
        core.running++;
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
    return 0;
}

static void mark_running(job *j, pid_t init_pid, int64_t started_ms)
{
    if (j->state != JS_QUEUED && j->state != JS_SCHEDULED)
        return;
    j->state = JS_RUNNING;
    j->init_pid = init_pid;
    j->started_ms = started_ms;
    job_event_at(j, started_ms, JE_STARTED, -1, "pid %d", (int)init_pid);
    counters_start((double)(started_ms - (j->scheduled_ms > j->created_ms ? j->scheduled_ms : j->created_ms)) / 1000.0);
    job_save(j);
    jobs_mark(j, JOB_SETTLE_WORKFLOW);
}

/* Lines from the shim: "S <pid> <ms>" when the command runs, "E" once status.json is written
 * (the shim still tidies the cgroups before it exits: the job need not wait for that). */
static void on_notify(watch *w, uint32_t events)
{
    job *j = w->data;
    char buf[256];
    ssize_t n = read(w->fd, buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
        char *save = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            int pid;
            long long ms;
            if (sscanf(line, "S %d %lld", &pid, &ms) == 2)
                mark_running(j, pid, ms);
            else if (!strcmp(line, "E") && !job_state_terminal(j->state) && !j->preempting) {
                /* (a preempted job waits for its shim to be gone, cgroups and all, before it
                 * goes back to the queue: its next run reuses the same names) */
                finalize(j);
            }
        }
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
    char path[760];
    snprintf(path, sizeof path, "%s/%s", dir, SHIM_STARTED);
    char *s = read_file(path, NULL);
    int pid;
    long long ms;
    if (s && sscanf(s, "%d %lld", &pid, &ms) == 2)
        mark_running(j, pid, ms);
    free(s);
}

/* Reads status.json into the job and makes it terminal. */
static void finalize(job *j)
{
    char dir[700], path[760];
    jobs_dir_of(j, dir, sizeof dir);
    read_started(j, dir);
    snprintf(path, sizeof path, "%s/%s", dir, SHIM_STATUS);
    shim_status st;
    if (shim_status_read(path, &st) < 0) {
        free(j->error);
        char msg[256];
        snprintf(msg, sizeof msg, "the job's shim (pid %d) ended without recording how the job ended; see %s/%s",
                 (int)j->shim_pid, dir, SHIM_LOG);
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
    if (j->preempting && !strcmp(reason, "stopped"))
        job_requeue(j);
    else if (j->fail_reason && !strcmp(reason, "stopped")) {
        free(j->error);
        j->error = j->fail_reason;
        j->fail_reason = NULL;
        job_finish(j, JS_FAILED, "gpu_error");
    } else {
        /* it ended on its own before the stop for its GPU reached it: not the GPU's doing */
        j->gpu_fault = (gpu_fault){0};
        free(j->fail_reason);
        j->fail_reason = NULL;
        j->preempting = false;
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
    if (!job_state_terminal(j->state)) {
        finalize(j);
    }
}

/* After a restart: every job that had a shim is re-attached, finished, or declared lost. */
void launch_adopt_all(void)
{
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        if (!job_state_terminal(j->state) && j->shim_pid <= 0)
            job_event(j, JE_RESTARTED, -1, "joblet restarted; the job still waits (%s)", job_state_name(j->state));
        if (job_state_terminal(j->state) || j->shim_pid <= 0)
            continue;
        j->holds_room = true;
        core.running++;
        char dir[700];
        jobs_dir_of(j, dir, sizeof dir);
        /* The pidfd first, then the start time: once the pidfd is held the pid cannot be reused
         * under us, so a matching start time proves it is still our shim. */
        int pidfd = (int)syscall(SYS_pidfd_open, j->shim_pid, 0);
        if (pidfd >= 0 && j->shim_start && proc_start_time(j->shim_pid) == j->shim_start) {
            job_event(j, JE_RESTARTED, -1, "joblet restarted; re-attached to the job's shim (pid %d)", (int)j->shim_pid);
            read_started(j, dir);
            if (!j->sandbox_uid) /* a row written before it had its column: the spec summary's */
                j->sandbox_uid = job_detail_sandbox_uid(j); /* held until it ends */
            watch_shim(j, pidfd, -1);
            log_info("job %s: re-adopted running shim %d", j->id, (int)j->shim_pid);
            continue;
        }
        if (pidfd >= 0)
            close(pidfd);
        job_event(j, JE_RESTARTED, -1, "joblet restarted; the job's shim (pid %d) ended while it was down",
                  (int)j->shim_pid);
        finalize(j);
    }
}

/* An adopted job whose start the previous joblet did not hear: the shim's file tells. */
void launch_refresh(job *j)
{
    if (j->state != JS_QUEUED || j->shim_pid <= 0 || j->w_notify.fd >= 0)
        return;
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    read_started(j, dir);
}

/* The job is being deleted while its shim finishes tidying up: stop watching it. */
void launch_forget(job *j)
{
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
    if (j->shim_pid <= 0 || j->w_pid.fd < 0)
        return jerr_http(e, 409, "job %s is %s; only a running job can be %s", j->id, job_state_name(j->state),
                         sig == SIGTERM ? "stopped" : "killed");
    if (syscall(SYS_pidfd_send_signal, j->w_pid.fd, sig, NULL, 0) < 0 && errno != ESRCH)
        return jerr_sys(e, "signal the shim of job %s", j->id);
    j->stopped_by = by;
    if (j->state == JS_RUNNING)
        j->state = JS_STOPPING;
    /* (a preemption tells its own story: launch_preempt) */
    if (!j->preempting || sig == SIGUSR1) {
        char who[48], how[64];
        snprintf(who, sizeof who, by == (uid_t)-1 ? "by joblet" : "by uid %u", (unsigned)by);
        if (sig == SIGUSR1)
            snprintf(how, sizeof how, "SIGKILL to every process at once (kill)");
        else
            snprintf(how, sizeof how, "SIGTERM, SIGKILL after %llus", (unsigned long long)core.cfg.stop_grace_s);
        job_event(j, JE_STOPPING, by == (uid_t)-1 ? -1 : (int64_t)by, "%s%s%s: %s", who, j->fail_reason ? ", " : "",
                  j->fail_reason ? j->fail_reason : "", how);
    }
    job_save(j);
    return 0;
}

int launch_stop(job *j, uid_t by, jerr *e) { return signal_shim(j, by, SIGTERM, e); }

int launch_kill(job *j, uid_t by, jerr *e)
{
    /* a kill ends a preemption's stop too: the job is no longer to go back in the queue */
    if (signal_shim(j, by, SIGUSR1, e) < 0)
        return -1;
    if (j->preempting) {
        j->preempting = false;
        job_save(j);
    }
    return 0;
}

void launch_preempt(job *j, const job *for_job)
{
    jerr e = {0};
    j->preempting = true;
    if (launch_stop(j, (uid_t)-1, &e) < 0) {
        j->preempting = false;
        log_err("job %s: cannot preempt: %s", j->id, e.msg);
        return;
    }
    j->stopped_by = -1;
    job_save(j);
    if (for_job)
        job_event(j, JE_PREEMPTED, -1, "for job %s (priority %lld over %lld): SIGTERM, SIGKILL after %llus",
                  for_job->id, (long long)for_job->req.priority, (long long)j->req.priority,
                  (unsigned long long)core.cfg.stop_grace_s);
    else
        job_event(j, JE_PREEMPTED, -1, "its GPU failed; back to the queue to run elsewhere: SIGTERM, SIGKILL after %llus",
                  (unsigned long long)core.cfg.stop_grace_s);
    log_info("job %s: preempted for job %s (priority %lld over %lld): stopping, then back in the queue", j->id,
             for_job ? for_job->id : "?", for_job ? (long long)for_job->req.priority : 0,
             (long long)j->req.priority);
}

void launch_live_usage(const job *j, job_usage *u)
{
    cg_host uh;
    cg_job cg;
    cg_user_job_paths(&core.cg, (uint32_t)j->owner_uid, j->id, &uh, &cg);
    cg_stats st = {0};
    if (cg_read_stats(&cg, &st) < 0)
        return;
    u->cpu_ns = st.cpu_usage_ns;
    u->memory_peak_bytes = st.mem_peak_bytes;
    u->io_read_bytes = st.io_read_bytes;
    u->io_write_bytes = st.io_write_bytes;
    u->pids_current = st.pids_current;
}
