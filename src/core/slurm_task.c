/* A Slurm task run as a joblet job (slurm_task.h). */
#include "slurm_task.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../exec/cgroup.h"
#include "../exec/spec.h"
#include "account.h"
#include "cmdcheck.h"
#include "gpus.h"
#include "job_ctl.h"
#include "job_events.h"
#include "job_launch.h"
#include "jobs.h"
#include "state.h"
#include "submit.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#define NVIDIA_MAJOR 195

void slurm_task_req_free(slurm_task_req *r)
{
    jobreq_free(&r->req);
    for (size_t i = 0; i < r->ngpus; i++)
        free(r->gpus[i]);
    free(r->gpus);
    for (size_t i = 0; i < r->ntask_gpus; i++)
        free(r->task_gpus[i]);
    free(r->task_gpus);
    *r = (slurm_task_req){0};
}

/* The task's cgroups: for each v1 controller joblet knows, the one Slurm put pid in, when it
 * is a Slurm step's or task's; ids from them, all the same step. 0, or -1 (403) naming what
 * the process is in. */
static int task_cgroups(pid_t pid, cg_given *g, slurm_ids *ids, jerr *e)
{
    char path[64], *text;
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    if (!(text = read_file(path, NULL)))
        return jerr_http(e, 403, "cannot read %s: %s", path, strerror(errno));
    *g = (cg_given){0};
    *ids = (slurm_ids){0};
    char seen[200] = "";
    int rc = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
        /* "4:memory:/slurm/uid_1000/job_7/step_0/task_1"; "0::/..." is the cgroup2 one */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2 == c1 + 1)
            continue;
        *c2 = 0;
        const char *cg = c2 + 1;
        slurm_ids here;
        if (slurmcg_parse(cg, &here) < 0) {
            if (!seen[0] && strstr(c1 + 1, "memory"))
                snprintf(seen, sizeof seen, "%s:%s", c1 + 1, cg);
            continue;
        }
        /* memory and devices are task/cgroup's task_<local id>, the one joblet names the task by;
         * cpuacct (jobacct_gather/cgroup) counts task_<global id>, freezer stops at step_S */
        bool local = strstr(c1 + 1, "memory") || strstr(c1 + 1, "devices");
        if (!local)
            here.task = -1;
        if (ids->set && !slurmcg_same(ids, &here)) {
            rc = jerr_http(e, 403, "pid %d is in the cgroups of two Slurm steps (%s): refused", (int)pid, cg);
            break;
        }
        if (!ids->set || (ids->task < 0 && here.task >= 0))
            *ids = here;
        for (char *save2 = NULL, *name = strtok_r(c1 + 1, ",", &save2); name; name = strtok_r(NULL, ",", &save2)) {
            enum cg_ctrl c = cg_ctrl_by_name(name);
            if (c < CGC_N && core.cg.v1[c][0])
                snprintf(g->v1[c], sizeof g->v1[c], "%s%s", core.cg.v1[c], cg);
            else if (!strcmp(name, "freezer") && core.cg.freezer[0])
                snprintf(g->freezer, sizeof g->freezer, "%s%s", core.cg.freezer, cg);
        }
    }
    free(text);
    if (rc < 0)
        return -1;
    if (!ids->set || !cg_given_any(g))
        return jerr_http(e, 403, "pid %d is not in a Slurm task's cgroup (it is in %s): joblet runs a Slurm task only "
                                 "from the cgroups slurmstepd made for it (<prepend>/uid_U/job_J/step_S/task_T, cgroup/v1)",
                         (int)pid, seen[0] ? seen : "no v1 memory cgroup");
    return 0;
}

/* The process's real, effective, saved and filesystem uids must all be uid, and its four gids one
 * gid (given in gid); its supplementary groups (those Slurm gave the task: at most
 * SPEC_GROUPS_MAX) in groups. The process is read when it asks, not when it connected: one that
 * exec'd a set-gid program since (unix_chkpwd, waiting on its input, is set-gid shadow) has that
 * program's group as its effective one, which must never become the job's. */
static int task_user(pid_t pid, uid_t uid, gid_t *gid, gid_t *groups, size_t *ngroups, jerr *e)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *text = read_file(path, NULL);
    if (!text)
        return jerr_http(e, 403, "cannot read %s: %s", path, strerror(errno));
    unsigned u[4] = {1, 1, 1, 1}, g[4] = {0};
    const char *uu = strstr(text, "\nUid:"), *gg = strstr(text, "\nGid:");
    int nu = uu ? sscanf(uu + 5, "%u %u %u %u", &u[0], &u[1], &u[2], &u[3]) : 0;
    int ng = gg ? sscanf(gg + 5, "%u %u %u %u", &g[0], &g[1], &g[2], &g[3]) : 0;
    *ngroups = 0;
    const char *gl = strstr(text, "\nGroups:");
    if (gl) {
        /* "Groups:\t27 100 1000 \n" */
        char *end;
        for (const char *p = gl + 8; *p && *p != '\n' && *ngroups < SPEC_GROUPS_MAX;) {
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p < '0' || *p > '9')
                break;
            unsigned long v = strtoul(p, &end, 10);
            groups[(*ngroups)++] = (gid_t)v;
            p = end;
        }
    }
    free(text);
    if (nu != 4 || ng != 4)
        return jerr_http(e, 403, "cannot read the uids of pid %d", (int)pid);
    for (int i = 0; i < 4; i++)
        if (u[i] != uid)
            return jerr_http(e, 403, "pid %d runs as uid %u, but its Slurm cgroup is uid %u's: a task asks only once "
                                     "slurmstepd dropped to the task's user (slurm_spank_task_init)",
                             (int)pid, u[i], (unsigned)uid);
    for (int i = 1; i < 4; i++)
        if (g[i] != g[0])
            return jerr_http(e, 403, "pid %d runs with gids %u %u %u %u (real, effective, saved, filesystem), not one: "
                                     "a set-gid program's group is not the task's", (int)pid, g[0], g[1], g[2], g[3]);
    *gid = g[0];
    return 0;
}

/* The most records of a user's ended Slurm tasks deleted to make room for one more task. */
#define SLURM_TASK_EVICT 8

/* Room for one more of uid's jobs under limits.max_jobs_per_user, made from the records of its
 * ended Slurm tasks, oldest first: Slurm keeps the task's accounting (sacct), so joblet's copy is
 * the first to go, and a user's every srun step does not fail once 10,000 of them were kept.
 * Its ordinary jobs are never touched. Only when the user is at the limit: a look at the table
 * from its oldest job, up to SLURM_TASK_EVICT records, deleted in one commit. */
static void make_room(uid_t uid)
{
    uint32_t max = core.cfg.limits.max_jobs_per_user;
    uint64_t kept = max ? submit_kept(uid) : 0;
    if (!max || kept < max)
        return;
    /* as many as the new one needs (the limit may have been lowered: up to SLURM_TASK_EVICT) */
    size_t want = kept + 1 - max < SLURM_TASK_EVICT ? (size_t)(kept + 1 - max) : SLURM_TASK_EVICT;
    job *old[SLURM_TASK_EVICT];
    size_t n = 0;
    for (size_t i = 0; i < core.njobs && n < want; i++) {
        job *j = core.jobs[i];
        if (j->slurm.set && j->owner_uid == uid && job_state_terminal(j->state) && !j->settle)
            old[n++] = j;
    }
    jerr e = {0};
    if (n && job_ctl_delete_many(old, n, &e) < 0)
        log_warn("uid %u: the records of %zu ended Slurm tasks could not be deleted to make room: %s", (unsigned)uid,
                 n, e.msg);
    else if (n)
        log_info("uid %u keeps limits.max_jobs_per_user jobs: the record%s of its %zu oldest ended Slurm task%s "
                 "deleted to make room (Slurm's accounting keeps them)", (unsigned)uid, n == 1 ? "" : "s", n,
                 n == 1 ? " was" : "s were");
}

/* The GPUs named by device nodes: their bits, or -1 (400 naming the node). */
static int gpu_set_of(char **nodes, size_t n, uint64_t *set, jerr *e)
{
    *set = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(nodes[i], &st) < 0)
            return jerr_field(e, "gpus", "gpus[%zu]: %s: %s", i, nodes[i], strerror(errno));
        int k = S_ISCHR(st.st_mode) && major(st.st_rdev) == NVIDIA_MAJOR ? gpus_by_minor((int)minor(st.st_rdev)) : -1;
        if (k < 0)
            return jerr_field(e, "gpus", "gpus[%zu]: %s is not the device node of one of this machine's GPUs (rnx gpu "
                                         "list: /dev/nvidiaN, character device %d:N)", i, nodes[i], NVIDIA_MAJOR);
        *set |= 1ull << k;
    }
    return 0;
}

/* Slurm's working directory for the task (srun --chdir, the submission's): the directory
 * slurmstepd put the task process in, as the kernel shows it. The job starts there when its
 * view has that directory (a system directory of its root, /work, /tmp), else in /work. */
static void task_workdir(pid_t pid, job_req *req)
{
    char link[64], cwd[4096];
    snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
    ssize_t n = readlink(link, cwd, sizeof cwd - 1);
    if (req->workdir || n <= 0)
        return;
    cwd[n] = 0;
    if (cmdcheck_dir_visible(req, cwd)) {
        req->workdir = xstrdup(cwd);
        req->has |= 1ull << JR_WORKDIR;
    }
}

/* Whether a v1 devices.list grants read or write on character device major:minor. */
static bool devices_list_allows(const char *list, int major, int minor)
{
    char line[128];
    for (const char *p = list; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        p += n + (nl ? 1 : 0);
        char type, maj[16], min[16], acc[8];
        if (sscanf(line, "%c %15[^:]:%15s %7s", &type, maj, min, acc) != 4 || (type != 'a' && type != 'c'))
            continue;
        if ((strcmp(maj, "*") && atoi(maj) != major) || (strcmp(min, "*") && atoi(min) != minor))
            continue;
        if (strchr(acc, 'r') || strchr(acc, 'w'))
            return true;
    }
    return false;
}

/* The step's GPUs narrowed to the task's: by Slurm's devices cgroup of the task where it
 * constrains them (ConstrainDevices=yes; Slurm then numbers the task's own list from 0, so that
 * list cannot say which they are), else by the task's list, which must lie within the step's. */
static int task_gpu_set(const slurm_task_req *r, const char *slurm_devices, uint64_t *set, jerr *e)
{
    if (gpu_set_of(r->gpus, r->ngpus, set, e) < 0)
        return -1;
    char path[400], *list = NULL;
    if (slurm_devices[0]) {
        snprintf(path, sizeof path, "%s/devices.list", slurm_devices);
        list = read_file(path, NULL);
    }
    if (list && !strstr(list, "a *:* rwm")) {
        for (size_t i = 0; i < r->ngpus; i++) {
            struct stat st;
            if (stat(r->gpus[i], &st) == 0 && !devices_list_allows(list, (int)major(st.st_rdev), (int)minor(st.st_rdev)))
                *set &= ~(1ull << gpus_by_minor((int)minor(st.st_rdev)));
        }
        free(list);
        return 0;
    }
    free(list);
    if (!r->task_gpus)
        return 0;
    uint64_t task = 0;
    if (gpu_set_of(r->task_gpus, r->ntask_gpus, &task, e) < 0) {
        snprintf(e->field, sizeof e->field, "task_gpus");
        return -1;
    }
    if (task & ~*set)
        return jerr_field(e, "task_gpus", "task_gpus: names a GPU that is not among the step's (gpus)");
    *set = task;
    return 0;
}

/* The task's fds 0-2, taken from it. */
static int task_stdio(int pidfd, int fds[3], jerr *e)
{
    for (int i = 0; i < 3; i++)
        fds[i] = -1;
    for (int i = 0; i < 3; i++)
        if ((fds[i] = (int)syscall(SYS_pidfd_getfd, pidfd, i, 0)) < 0) {
            jerr_http(e, 403, "cannot take the task's fd %d (pidfd_getfd): %s", i, strerror(errno));
            for (int k = 0; k < i; k++)
                close(fds[k]);
            return -1;
        }
    return 0;
}

/* Whether the process of pidfd has not ended: while it lives its pid names it alone, so what
 * was read of /proc/PID before was its own. */
static bool task_alive(int pidfd)
{
    return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

job *slurm_task_start(const caller *who, int peer_pidfd, slurm_task_req *r, jerr *e)
{
    job *j = NULL;
    int pidfd = peer_pidfd, stdio[3] = {-1, -1, -1};
    if (who->via != CALLER_UNIX || who->pid <= 0) {
        jerr_http(e, 403, "a Slurm task asks on joblet's unix socket, from the task's own process");
        goto out;
    }
    if (core.cg.layout == CG_V2) {
        jerr_http(e, 501, "Slurm tasks on a cgroup v2 host are not supported yet (docs/slurm.md): this host's Slurm "
                          "tasks are not in cgroup/v1's <prepend>/uid_U/job_J/step_S/task_T");
        goto out;
    }
    pid_t pid = who->pid;
    /* The process that connected, held from here. Its pid is read through /proc below, which
     * names it only while it lives: once it ended (and was reaped) the pid may be another
     * process's, which a caller could make one of its own with other groups or cgroups (a
     * process that connected and handed its connection on before ending); task_alive after
     * the reads says they were its own. */
    if (pidfd < 0 && (pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0) {
        jerr_http(e, 403, "the caller (pid %d) is gone: %s", (int)pid, strerror(errno));
        goto out;
    }
    cg_given given;
    slurm_ids ids;
    gid_t gid = 0, groups[SPEC_GROUPS_MAX];
    size_t ngroups = 0;
    if (task_cgroups(pid, &given, &ids, e) < 0 || task_user(pid, ids.uid, &gid, groups, &ngroups, e) < 0)
        goto out;
    if (!task_alive(pidfd))
        goto gone;
    if (!authz_may_on(who, AUTHZ_OTHERS_SLURM_TASKS, ids.uid)) {
        char what[120];
        snprintf(what, sizeof what, "starting pid %d, a Slurm task of uid %u", (int)pid, ids.uid);
        authz_check(who, AUTHZ_OTHERS_SLURM_TASKS, what, e);
        goto out;
    }
    if (r->claimed.set && !slurmcg_same(&r->claimed, &ids)) {
        char a[64], b[64];
        slurmcg_text(&r->claimed, a, sizeof a);
        slurmcg_text(&ids, b, sizeof b);
        jerr_http(e, 403, "the request says Slurm task %s of uid %u, but the caller is in task %s's cgroups (uid %u)",
                  a, r->claimed.uid, b, ids.uid);
        goto out;
    }
    if ((r->ngpus || r->ntask_gpus) && authz_check(who, AUTHZ_SLURM_GPUS, "naming a Slurm task's GPUs", e) < 0) {
        snprintf(e->field, sizeof e->field, "gpus");
        goto out;
    }
    uint64_t set = 0;
    if (task_gpu_set(r, given.v1[CGC_DEVICES], &set, e) < 0)
        goto out;
    if (!core.cg.unified[0] && !given.v1[CGC_DEVICES][0]) {
        jerr_http(e, 403, "pid %d has no devices cgroup of Slurm's, and this host no cgroup2 mount: the task's device "
                          "filter has nowhere to go (ConstrainDevices=yes in cgroup.conf)", (int)pid);
        goto out;
    }
    /* a terminal job (srun --pty) has a terminal of its own, which the plugin relays: the task's
     * stdio stays the task process's */
    if (!r->req.tty && task_stdio(pidfd, stdio, e) < 0)
        goto out;
    task_workdir(pid, &r->req);
    if (!task_alive(pidfd)) /* (its cwd was read too) */
        goto gone;
    submit_info si;
    if (!account_known(ids.uid, NULL, NULL)) { /* asked off the loop: the API waits, and asks again */
        r->account_wait = true;
        r->account_uid = ids.uid;
        jerr_busy(e, "uid %u's account is being looked up", (unsigned)ids.uid);
        goto out;
    }
    if (!fds_available(JOB_LAUNCH_FDS + 1)) { /* (its waiter's pidfd too) */
        jerr_busy(e, "joblet has too few descriptors free to start the task now (its open-file limit, ulimit -n): "
                     "nothing was made; try again");
        goto out;
    }
    caller as = authz_local(ids.uid, gid); /* (the task's uid, as Slurm's root said: no priority of its own) */
    job_req *rp = &r->req;
    if (submit_check(&r->req, &as, &si, e) < 0)
        goto out;
    /* joblet's limits hold as for any job (jobs kept, the state filesystem's reserve); the
     * records of the user's ended Slurm tasks make room first, for a request that is otherwise
     * good */
    make_room(ids.uid);
    if (submit_check_limits(&rp, 1, ids.uid, 0, 0, e) < 0 || !(j = submit_create(&r->req, ids.uid, gid, &si, e)))
        goto out;
    /* Slurm's limits hold (its cgroups): none of joblet's defaults is the job's. The log's bound
     * stays for a terminal job, whose output joblet logs (a given stdio's goes to Slurm alone) */
    j->req.has &= ~(1ull << JR_MAX_MEMORY_MB | 1ull << JR_MEMORY_DEFAULT | 1ull << JR_PIDS_MAX |
                    1ull << JR_USER_PIDS_MAX | (j->req.tty ? 0 : 1ull << JR_MAX_LOG_BYTES));
    j->req.max_memory_mb = j->req.pids_max = j->req.user_pids_max = 0;
    if (!j->req.tty)
        j->req.max_log_bytes = 0;
    j->req.memory_default = false;
    j->slurm = ids;
    /* the row as changed here, in the commit below: a joblet killed before the start's commit
     * finds a Slurm task (ended, not started from the queue: job_launch_adopt_all), not a job
     * of the request's limits that its queue would run outside Slurm */
    job_save(j);
    if (!(j = submit_commit(j, e)))
        goto out;
    /* from here the job exists: a failure ends it FAILED (start_failed), as the queue does */
    if (set && gpus_grant_given(j, set, e) < 0)
        goto failed;
    if (core.cg.unified[0]) {
        /* the device filter's cgroup2 directory, joblet's own: Slurm's cgroup/v1 makes none */
        char d[320];
        job_launch_cg2_path(j, d, sizeof d);
        if (mkdir(d, 0755) < 0) {
            jerr_sys(e, "mkdir %s", d);
            goto failed;
        }
        j->cg2_made = xstrdup(d);
        snprintf(given.unified, sizeof given.unified, "%s", d);
    }
    job_given jg = {&given, {stdio[0], stdio[1], stdio[2]}, groups, ngroups};
    if (job_launch_given(j, &jg, e) < 0)
        goto failed;
    job_launch_wait_by(j, pidfd, pid);
    pidfd = -1;
    char t[64];
    slurmcg_text(&ids, t, sizeof t);
    log_info("job %s: Slurm task %s of uid %u (pid %d), %zu GPUs", j->id, t, ids.uid, (int)pid, r->ngpus);
    goto out;
gone:
    jerr_http(e, 403, "the process that connected (pid %d) is gone: a Slurm task asks from its own process, which "
                      "waits for the job", (int)pid);
    goto out;
failed:
    log_err("job %s: %s", j->id, e->msg);
    free(j->error);
    j->error = xstrdup(e->msg);
    j->has_exit = false;
    job_finish(j, JS_FAILED, "start_failed");
    if (j->cg2_made && j->shim_pid <= 0) {
        rmdir(j->cg2_made);
        free(j->cg2_made);
        j->cg2_made = NULL;
    }
    j = NULL;
out:
    for (int i = 0; i < 3; i++)
        if (stdio[i] >= 0)
            close(stdio[i]);
    if (pidfd >= 0)
        close(pidfd);
    bool wait = r->account_wait; /* (what the caller is told, past the request's free) */
    uid_t wait_uid = r->account_uid;
    slurm_task_req_free(r);
    r->account_wait = wait;
    r->account_uid = wait_uid;
    return j;
}
