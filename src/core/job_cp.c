/* Copies out of a job and into it (job_cp.h): the helper's start, its two words on the status
 * pipe, its end. */
#include "job_cp.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../exec/cgroup.h"
#include "connfds.h"
#include "isolation.h"
#include "job_detail.h"
#include "jobs.h"
#include "loop.h"
#include "state.h"
#include "transfers.h"
#include "workfs.h"

extern char **environ;

struct jobcp {
    jobcp *next;
    enum job_cp_kind kind;
    uid_t for_uid;            /* whose transfer it is */
    unsigned fds;             /* taken from the connections' count (connfds.h) while it is open */
    char job_id[37];
    pid_t pid;
    watch w_pid;              /* pidfd of the helper: readable when it ends */
    watch w_status;           /* its status pipe */
    int data_fd;              /* the pipe's daemon end, -1 once closed */
    char line[1400];          /* the status line being read */
    size_t nline;
    int said;                 /* lines the helper said: its report, then (OUT, IN) its end */
    bool refused, ended, whole;
    bool holds;               /* counted in its job's copies until its helper is known to have ended */
    bool freed;               /* freed by its user, its helper killed and not yet seen to end: dying's */
    bool oom_known;           /* in, into a running job: its memory cgroup's OOM kills when it began */
    uint64_t oom_before;
    jerr err;                 /* its refusal or failure */
    job_cp_info info;
    job_cp_fn fn;
    void *arg;
};

static jobcp *all;
/* Those freed whose helper, killed, had not been seen to end: watched until it is (their job is
 * not deleted meanwhile: the helper may still write into its /work or read it). */
static jobcp *dying;

/* The helper ended: its job may be deleted again (as far as this copy goes). */
static void let_go(jobcp *c)
{
    if (!c->holds)
        return;
    c->holds = false;
    job *j = jobs_by_id(c->job_id);
    if (j && j->copies)
        j->copies--;
}

/* "/a/./b//../c/" -> "/a/c": the path as a root resolves it lexically; the kernel resolves
 * symlinks again, inside the job's root. -1 when not absolute or too long. */
static int clean_path(const char *in, char *out, size_t len)
{
    if (in[0] != '/' || strlen(in) >= len)
        return -1;
    size_t n = 0;
    out[n++] = '/';
    for (const char *p = in; *p;) {
        while (*p == '/')
            p++;
        const char *end = strchrnul(p, '/');
        size_t k = (size_t)(end - p);
        if (k == 0 || (k == 1 && p[0] == '.')) {
            /* nothing */
        } else if (k == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 1 && out[n - 1] != '/')
                n--; /* the last component */
            if (n > 1)
                n--; /* the slash before it */
        } else {
            if (n > 1 && out[n - 1] != '/')
                out[n++] = '/';
            memcpy(out + n, p, k);
            n += k;
        }
        p = end;
    }
    if (n > 1 && out[n - 1] == '/')
        n--;
    out[n] = 0;
    return 0;
}

static int http_of(int err)
{
    switch (err) {
    case ENOENT: case ENOTDIR: case ELOOP: return 404;
    case EACCES: case EPERM: return 403;
    case EFBIG: return 413;
    case ENOSPC: case EDQUOT: return 507;
    case EINVAL: case ENAMETOOLONG: return 400;
    case EAGAIN: return 429;
    case EROFS: case EEXIST: case EISDIR: case ESRCH: return 409; /* ESRCH: the job ended meanwhile */
    default: return 500;
    }
}

static void changed(jobcp *c)
{
    if (c->fn)
        c->fn(c->arg);
}

/* One line of the helper: "ok TYPE BYTES ENTRIES MODE", "done BYTES ENTRIES", "err ERRNO WHY". */
static void heard(jobcp *c, char *line)
{
    c->said++;
    if (!strncmp(line, "err ", 4)) {
        char *why = NULL;
        long err = strtol(line + 4, &why, 10);
        while (why && *why == ' ')
            why++;
        jerr_http(&c->err, http_of((int)err), "job %.8s: %s", c->job_id, why && *why ? why : "the copy failed");
        /* a path not found, or one that cannot be (the helper's words say "path: "); a 400 for
         * the archive itself (a hard link, a bad tar) names no field: the body is at fault */
        if (c->err.http == 404 || (c->err.http == 400 && why && !strncmp(why, "path: ", 6)))
            snprintf(c->err.field, sizeof c->err.field, "path");
        if (c->said == 1)
            c->refused = true;
        c->ended = true;
        return;
    }
    unsigned long long b = 0, n = 0;
    unsigned mode = 0;
    char type[12] = "";
    if (c->said == 1 && sscanf(line, "ok %11s %llu %llu %o", type, &b, &n, &mode) == 4) {
        snprintf(c->info.type, sizeof c->info.type, "%s", type);
        c->info.bytes = b;
        c->info.entries = n;
        c->info.mode = mode;
        if (c->kind == JOB_CP_STAT)
            c->ended = c->whole = true;
        return;
    }
    if (c->said == 2 && sscanf(line, "done %llu %llu", &b, &n) == 2) {
        if (c->kind == JOB_CP_IN) {
            c->info.bytes = b;
            c->info.entries = n;
        }
        c->ended = c->whole = true;
        return;
    }
    jerr_http(&c->err, 500, "job %.8s: the copy's helper said something unexpected: %.200s", c->job_id, line);
    c->refused = c->said == 1;
    c->ended = true;
}

/* Reads what the status pipe holds; true when it reached its end. */
static bool read_status(jobcp *c)
{
    char buf[1024];
    for (;;) {
        ssize_t r = read(c->w_status.fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0;
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] != '\n') {
                if (c->nline < sizeof c->line - 1)
                    c->line[c->nline++] = buf[i];
                continue;
            }
            c->line[c->nline] = 0;
            c->nline = 0;
            if (!c->ended)
                heard(c, c->line);
        }
    }
}

static void close_status(jobcp *c)
{
    if (c->w_status.fd >= 0) {
        loop_del(&c->w_status);
        close(c->w_status.fd);
        c->w_status.fd = -1;
    }
}

/* The OOM kills of a running job's memory cgroup (the copy in joins it: joblet-copy); false when
 * it has none to read (ended). */
static bool oom_kills(const job *j, uint64_t *n)
{
    if (!j || (j->state != JS_RUNNING && j->state != JS_STOPPING && j->state != JS_SUSPENDED))
        return false;
    cg_host uh;
    cg_job cg;
    cg_stats st;
    job_detail_cgroup(j, &uh, &cg);
    if (cg_read_stats(&cg, &st) < 0)
        return false;
    *n = st.oom_kills;
    return true;
}

/* The helper ended without its last word: killed (by the user's pids.max, the OOM killer, or
 * the daemon), or it crashed. A copy in that the job's memory limit stopped (what lands in its
 * /tmp, /dev/shm or a memory volume is its memory) says so: the user's to mend, not joblet's. */
static void gone_silent(jobcp *c)
{
    if (c->ended)
        return;
    uint64_t now;
    const job *j = c->oom_known ? jobs_by_id(c->job_id) : NULL;
    if (j && oom_kills(j, &now) && now > c->oom_before) {
        char limit[64] = "";
        if (j->req.max_memory_mb > 0)
            snprintf(limit, sizeof limit, " (--max-memory=%lldMB)", (long long)j->req.max_memory_mb);
        jerr_http(&c->err, 507, "job %.8s: the copy was stopped at the job's memory limit%s: what is copied into its "
                                "/tmp, /dev/shm or a memory volume is the job's memory; copy into /work (its disk), "
                                "or free memory in the job",
                  c->job_id, limit);
    } else {
        jerr_http(&c->err, 500, "job %.8s: the copy's helper ended before it was done", c->job_id);
    }
    c->refused = c->said == 0;
    c->ended = true;
}

static void on_status(watch *w, uint32_t events)
{
    jobcp *c = w->data;
    if (read_status(c)) {
        close_status(c);
        gone_silent(c);
    }
    changed(c);
}

static void on_exit_(watch *w, uint32_t events)
{
    jobcp *c = w->data;
    loop_del(&c->w_pid);
    close(c->w_pid.fd);
    c->w_pid.fd = -1;
    waitpid(c->pid, NULL, WNOHANG); /* the daemon's SIGCHLD reaping may have taken it already */
    c->pid = 0;
    let_go(c);
    if (c->freed) {
        for (jobcp **p = &dying; *p; p = &(*p)->next)
            if (*p == c) {
                *p = c->next;
                break;
            }
        free(c);
        return;
    }
    if (c->w_status.fd >= 0 && read_status(c))
        close_status(c);
    gone_silent(c);
    changed(c);
}

static int pipe_nb(int p[2], bool daemon_reads, jerr *e)
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return jerr_sys(e, "pipe");
    int mine = daemon_reads ? p[0] : p[1];
    fcntl(mine, F_SETFL, fcntl(mine, F_GETFL) | O_NONBLOCK);
    return 0;
}

jobcp *job_cp_start(job *j, enum job_cp_kind kind, const char *path, const caller *who, jerr *e)
{
    char clean[4096];
    if (kind == JOB_CP_IN && !authz_may_on(who, AUTHZ_OTHERS_COPY_IN, j->owner_uid)) {
        char what[96];
        snprintf(what, sizeof what, "copying files into another user's job (%.8s)", j->id);
        return authz_check(who, AUTHZ_OTHERS_COPY_IN, what, e), NULL;
    }
    if (!path || !*path)
        return jerr_field(e, "path", "path: say which path in the job, e.g. /work/results"), NULL;
    if (clean_path(path, clean, sizeof clean) < 0)
        return jerr_field(e, "path", "path: '%.200s' is not an absolute path of at most 4095 bytes, e.g. "
                                     "/work/results", path), NULL;
    if (!strcmp(clean, "/") && kind != JOB_CP_STAT)
        return jerr_field(e, "path", "path: the job's whole root is not copied; name a directory in it, e.g. "
                                     "/work"), NULL;
    /* where: the job's own view while it runs natively; else its /work */
    bool live = j->state == JS_RUNNING && j->init_pid > 0 && j->shim_pid > 0 && !isolation_gvisor(&j->req);
    char root[4200] = "ns", inner[4096];
    snprintf(inner, sizeof inner, "%s", clean);
    if (!live) {
        /* (held: not started either, its /work not its command's yet) */
        if (job_state_waiting(j->state) || j->state == JS_PENDING || j->state == JS_HELD || j->dir_pending)
            return jerr_http(e, 409, "job %.8s has not started: it has no files to copy yet", j->id), NULL;
        bool under_work = !strcmp(clean, "/work") || !strncmp(clean, "/work/", 6);
        if (!under_work) {
            char why[96];
            if (job_state_terminal(j->state))
                snprintf(why, sizeof why, "has ended and its root went with it");
            else if (isolation_gvisor(&j->req))
                snprintf(why, sizeof why, "runs in gVisor, whose root lives inside its sandbox");
            else /* suspended, stopping: its root is entered only while it runs */
                snprintf(why, sizeof why, "is %s; its root is copied only while it runs", job_state_name(j->state));
            return jerr_http(e, 409, "job %.8s %s: only its /work can be copied (%s is not under /work)", j->id, why,
                             clean), NULL;
        }
        char dir[700];
        jobs_dir_of(j, dir, sizeof dir);
        workfs_path(j->owner_uid, dir, root, sizeof root);
        snprintf(inner, sizeof inner, "/%s", clean[5] ? clean + 6 : "");
        if (access(root, F_OK) < 0)
            return jerr_http(e, 409, "job %.8s has no /work any more", j->id), NULL;
    }
    if (transfers_check(who->uid, e) < 0)
        return NULL;
    int pidfd = -1;
    if (live) {
        pidfd = (int)syscall(SYS_pidfd_open, j->init_pid, 0);
        if (pidfd < 0 || !jobs_init_alive(j)) {
            if (pidfd >= 0)
                close(pidfd);
            return jerr_http(e, 409, "job %.8s is ending: try again once it has ended (its /work stays)", j->id),
                   NULL;
        }
    }
    cg_host uh;
    cg_user_host(&core.cg, (uint32_t)j->owner_uid, &uh);
    if (cg_user_prepare(&uh, core.cfg.max_pids_per_user, e) < 0) {
        if (pidfd >= 0)
            close(pidfd);
        return NULL;
    }
    /* its pipes' ends and its helper's pidfd (a copy in's body written into a dup besides) */
    unsigned fds = (kind == JOB_CP_STAT ? CONNFDS_COPY - 1 : CONNFDS_COPY) + (kind == JOB_CP_IN ? CONNFDS_COPY_IN : 0);
    if (connfds_take(who, fds, kind == JOB_CP_IN ? "a copy into a job (rnx job cp)" : "a copy out of a job (rnx job cp)",
                     e) < 0) {
        if (pidfd >= 0)
            close(pidfd);
        return NULL;
    }
    jobcp *c = xcalloc(1, sizeof *c);
    c->fds = fds;
    c->kind = kind;
    c->oom_known = kind == JOB_CP_IN && live && oom_kills(j, &c->oom_before);
    c->for_uid = who->uid;
    c->data_fd = -1;
    c->w_status.fd = c->w_pid.fd = -1;
    snprintf(c->job_id, sizeof c->job_id, "%s", j->id);
    snprintf(c->info.path, sizeof c->info.path, "%s", clean);
    const char *slash = strrchr(clean, '/');
    snprintf(c->info.name, sizeof c->info.name, "%s", slash[1] ? slash + 1 : "root");
    int data[2] = {-1, -1}, st[2] = {-1, -1};
    bool reads = kind != JOB_CP_IN;
    if (pipe_nb(st, true, e) < 0 || (kind != JOB_CP_STAT && pipe_nb(data, reads, e) < 0))
        goto fail;
    static const char *const modes[] = {"stat", "out", "outL", "in"};
    char uid[16], gid[16], max[24];
    snprintf(uid, sizeof uid, "%u", (unsigned)j->uid);
    snprintf(gid, sizeof gid, "%u", (unsigned)j->gid);
    snprintf(max, sizeof max, "%llu", (unsigned long long)core.cfg.max_upload_bytes);
    char *argv[] = {"joblet-copy", (char *)modes[kind], uid, gid, root, inner, c->info.name, max, uh.root, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (kind == JOB_CP_IN)
        posix_spawn_file_actions_adddup2(&fa, data[0], 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (kind == JOB_CP_OUT || kind == JOB_CP_OUT_FOLLOW)
        posix_spawn_file_actions_adddup2(&fa, data[1], 1);
    else
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, st[1], 3);
    if (pidfd >= 0)
        posix_spawn_file_actions_adddup2(&fa, pidfd, 4);
    posix_spawn_file_actions_addclosefrom_np(&fa, pidfd >= 0 ? 5 : 4);
    int rc = posix_spawn(&c->pid, core.copy_path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        jerr_sys(e, "start %s", core.copy_path);
        goto fail;
    }
    c->w_pid = (watch){(int)syscall(SYS_pidfd_open, c->pid, 0), on_exit_, c};
    if (c->w_pid.fd < 0 || loop_add(&c->w_pid) < 0) {
        jerr_sys(e, "watch the copy's helper");
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        if (c->w_pid.fd >= 0)
            close(c->w_pid.fd);
        goto fail;
    }
    close(st[1]);
    c->w_status = (watch){st[0], on_status, c};
    fcntl(st[0], F_SETFL, fcntl(st[0], F_GETFL) | O_NONBLOCK);
    if (loop_add(&c->w_status) < 0)
        log_warn("copy: watch the helper's status pipe: %s", strerror(errno));
    if (kind != JOB_CP_STAT) {
        c->data_fd = reads ? data[0] : data[1];
        close(reads ? data[1] : data[0]);
    }
    if (pidfd >= 0)
        close(pidfd);
    transfers_add(who->uid);
    if (kind != JOB_CP_STAT) { /* (its /work read or written: not deleted under the helper) */
        c->holds = true;
        j->copies++;
    }
    c->next = all;
    all = c;
    log_info("copy %s %s job %.8s %s as uid %u (for uid %u)", modes[kind], kind == JOB_CP_IN ? "into" : "of", j->id,
             clean, (unsigned)j->uid, (unsigned)who->uid);
    return c;
fail:
    for (int i = 0; i < 2; i++) {
        if (data[i] >= 0)
            close(data[i]);
        if (st[i] >= 0)
            close(st[i]);
    }
    if (pidfd >= 0)
        close(pidfd);
    connfds_give(who->uid, fds);
    free(c);
    return NULL;
}

void job_cp_on_change(jobcp *c, job_cp_fn fn, void *arg)
{
    c->fn = fn;
    c->arg = arg;
}

int job_cp_report(jobcp *c, job_cp_info *info, jerr *e)
{
    if (c->said == 0 && c->w_status.fd >= 0 && read_status(c)) {
        close_status(c);
        gone_silent(c);
    }
    if (c->refused) {
        *e = c->err;
        return -1;
    }
    if (c->said == 0)
        return 0;
    *info = c->info;
    return 1;
}

int job_cp_fd(const jobcp *c) { return c->data_fd; }

void job_cp_end_input(jobcp *c)
{
    if (c->kind == JOB_CP_IN && c->data_fd >= 0) {
        close(c->data_fd);
        c->data_fd = -1;
    }
}

int job_cp_result(jobcp *c, job_cp_info *info, jerr *e)
{
    if (!c->ended && c->w_status.fd >= 0 && read_status(c)) {
        close_status(c);
        gone_silent(c);
    }
    if (!c->ended || c->holds)
        return 0; /* (ended: once its helper is seen to end too, so that what follows the answer, a
                   * delete of the job, finds no copy under way) */
    *info = c->info;
    if (!c->whole) {
        *e = c->err;
        return -1;
    }
    return 1;
}

void job_cp_free(jobcp *c)
{
    if (!c)
        return;
    for (jobcp **p = &all; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    if (c->pid > 0 && c->w_pid.fd >= 0) /* reaped by the daemon's SIGCHLD handler */
        syscall(SYS_pidfd_send_signal, c->w_pid.fd, SIGKILL, NULL, 0);
    if (c->pid > 0 && c->w_pid.fd >= 0 && c->holds) {
        /* its job stays until the helper is seen to end (on_exit_): killed, it may still be in
         * the middle of a write into its /work */
        close_status(c);
        if (c->data_fd >= 0)
            close(c->data_fd);
        c->data_fd = -1;
        transfers_remove(c->for_uid);
        connfds_give(c->for_uid, c->fds);
        c->fn = NULL;
        c->freed = true;
        c->next = dying;
        dying = c;
        return;
    }
    let_go(c);
    if (c->w_pid.fd >= 0) {
        loop_del(&c->w_pid);
        close(c->w_pid.fd);
    }
    close_status(c);
    if (c->data_fd >= 0)
        close(c->data_fd);
    transfers_remove(c->for_uid);
    connfds_give(c->for_uid, c->fds);
    free(c);
}

void job_cp_shutdown(void)
{
    while (dying) {
        jobcp *c = dying;
        dying = c->next;
        loop_del(&c->w_pid);
        close(c->w_pid.fd);
        free(c);
    }
}
