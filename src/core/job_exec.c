/* Processes run inside running jobs (job_exec.h): the helper's start, its count, its end. */
#include "job_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "audit.h"
#include "isolation.h"
#include "job_events.h"
#include "jobs.h"
#include "loop.h"
#include "state.h"

#define JOB_EXEC_FDS 6 /* (job_exec_start: the descriptors one exec takes) */

extern char **environ;

typedef struct exec_run {
    char job_id[37];
    uid_t uid;                /* who asked (limits.exec_sessions_per_user counts by it) */
    pid_t pid;
    uint64_t serial;          /* its number, never given twice (job_exec_running) */
    watch w;                  /* the helper's pidfd: readable when it ends */
    struct exec_run *next;
} exec_run;

static exec_run *runs;
static uint64_t last_serial;

bool job_exec_running(uint64_t serial)
{
    for (exec_run *x = runs; x; x = x->next)
        if (x->serial == serial)
            return true;
    return false;
}

unsigned job_exec_count(const job *j)
{
    unsigned n = 0;
    for (exec_run *x = runs; x; x = x->next)
        n += !strcmp(x->job_id, j->id);
    return n;
}

/* How many execs uid runs now, in all jobs. */
static unsigned count_of_user(uid_t uid)
{
    unsigned n = 0;
    for (exec_run *x = runs; x; x = x->next)
        n += x->uid == uid;
    return n;
}

static void unlist(exec_run *x)
{
    for (exec_run **p = &runs; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            return;
        }
}

static void on_exit_(watch *w, uint32_t events)
{
    exec_run *x = w->data;
    int st = 0;
    loop_del(&x->w);
    close(x->w.fd);
    /* the daemon's SIGCHLD reaping may have taken it already: then its code is unknown here */
    if (waitpid(x->pid, &st, WNOHANG) == x->pid && WIFEXITED(st))
        log_info("exec in job %.8s (helper pid %d) ended: exit code %d", x->job_id, (int)x->pid, WEXITSTATUS(st));
    else
        log_info("exec in job %.8s (helper pid %d) ended", x->job_id, (int)x->pid);
    unlist(x);
    free(x);
}

/* The command as a person reads it: its words, one space apart, quoted when they have a space
 * or a quote (for the events and the audit; bounded by len). */
static void words(const job_req *r, char *out, size_t len)
{
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i <= r->nargs && n + 8 < len; i++) {
        const char *w = i ? r->args[i - 1] : r->command;
        bool q = !*w || strpbrk(w, " \t\n'\"\\$");
        n += (size_t)snprintf(out + n, len - n, "%s%s%s%s", i ? " " : "", q ? "'" : "", w, q ? "'" : "");
    }
    if (n >= len && len > 4)
        memcpy(out + len - 4, "...", 4);
}

/* The request for the helper (exec_main.c): "TTY STDIN NARGS NENV", workdir, the words, the
 * variables, each ended by a NUL, in a memfd (not in argv, where every user could read -e). */
static int request_fd(const job_req *r, jerr *e)
{
    int fd = memfd_create("joblet-exec-request", MFD_CLOEXEC);
    if (fd < 0)
        return jerr_sys(e, "memfd");
    FILE *f = fdopen(dup(fd), "w");
    if (!f) {
        close(fd);
        return jerr_sys(e, "memfd");
    }
    fprintf(f, "%d %d %zu %zu", r->tty, r->stdin_open, r->nargs + 1, r->nenv);
    fputc(0, f);
    fprintf(f, "%s", r->workdir ? r->workdir : "");
    fputc(0, f);
    fprintf(f, "%s", r->command);
    fputc(0, f);
    for (size_t i = 0; i < r->nargs; i++) {
        fputs(r->args[i], f);
        fputc(0, f);
    }
    for (size_t i = 0; i < r->nenv; i++) {
        fprintf(f, "%s=%s", r->env[i].name, r->env[i].value);
        fputc(0, f);
    }
    if (fclose(f) != 0) {
        close(fd);
        return jerr_sys(e, "write the exec request");
    }
    return fd;
}

int job_exec_start(job *j, const job_req *r, const caller *who, unsigned held_on_job, unsigned held_of_user, int *fd,
                   uint64_t *serial, jerr *e)
{
    *fd = -1;
    *serial = 0;
    char what[96];
    snprintf(what, sizeof what, "running a process in another user's job (%.8s)", j->id);
    if (!authz_may_on(who, AUTHZ_OTHERS_EXEC, j->owner_uid))
        return authz_check(who, AUTHZ_OTHERS_EXEC, what, e);
    if (job_state_terminal(j->state))
        return jerr_http(e, 409, "job %.8s has ended (%s): there is nothing to exec into; rnx job log %.8s shows "
                                 "its output", j->id, job_state_name(j->state), j->id);
    if (j->state != JS_RUNNING || j->init_pid <= 0 || j->shim_pid <= 0)
        return jerr_http(e, 409, "job %.8s is %s: exec enters a running job; wait until it runs", j->id,
                         job_state_name(j->state));
    /* (the helpers running, and the streams still open of those that ended: each exec once) */
    if (job_exec_count(j) + held_on_job >= JOB_EXEC_MAX)
        return jerr_http(e, 429, "job %.8s has %d execs running already (the bound of execs per job): wait for "
                                 "one to end", j->id, JOB_EXEC_MAX);
    uint32_t cap = core.cfg.limits.exec_per_user;
    unsigned mine = count_of_user(who->uid) + held_of_user;
    if (cap && mine >= cap && !authz_may(who, AUTHZ_UNLIMITED))
        return jerr_http(e, 429, "uid %u has %u execs running; limits.exec_sessions_per_user is %u: wait for one "
                                 "to end", (unsigned)who->uid, mine, (unsigned)cap);
    /* the descriptors an exec takes here: the job's init's and shim's pidfds, the socket pair, the
     * request's connection, the helper's pidfd. Missing (joblet's open-file limit reached) is not
     * "the job is ending": nothing is started, and the client asks again (jerr_busy) */
    if (!fds_available(JOB_EXEC_FDS))
        return jerr_busy(e, "joblet has too few descriptors free to start an exec now (its open-file limit, "
                            "ulimit -n): nothing was started; try again");
    int init = (int)syscall(SYS_pidfd_open, j->init_pid, 0), init_err = errno;
    int shim = (int)syscall(SYS_pidfd_open, j->shim_pid, 0), shim_err = errno;
    if (init < 0 || shim < 0 || !jobs_init_alive(j)) {
        if (init >= 0)
            close(init);
        if (shim >= 0)
            close(shim);
        int err = init < 0 ? init_err : shim < 0 ? shim_err : ESRCH;
        if (err == EMFILE || err == ENFILE)
            return jerr_busy(e, "joblet has too few descriptors free to start an exec now (pidfd_open: %s): "
                                "nothing was started; try again", strerror(err));
        return jerr_http(e, 409, "job %.8s is ending: there is nothing to exec into", j->id);
    }
    int sp[2] = {-1, -1}, req = request_fd(r, e);
    if (req < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
        if (req >= 0)
            jerr_sys(e, "socketpair");
        goto fail;
    }
    char shim_pid[16];
    snprintf(shim_pid, sizeof shim_pid, "%d", (int)j->shim_pid);
    char *argv[] = {"joblet-exec", j->id, shim_pid, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, sp[1], 3);
    posix_spawn_file_actions_adddup2(&fa, init, 4);
    posix_spawn_file_actions_adddup2(&fa, shim, 5);
    posix_spawn_file_actions_adddup2(&fa, req, 6);
    posix_spawn_file_actions_addclosefrom_np(&fa, 7);
    exec_run *x = xcalloc(1, sizeof *x);
    int rc = posix_spawn(&x->pid, core.exec_path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        free(x);
        errno = rc;
        jerr_sys(e, "start %s", core.exec_path);
        goto fail;
    }
    x->w = (watch){(int)syscall(SYS_pidfd_open, x->pid, 0), on_exit_, x};
    if (x->w.fd < 0 || loop_add(&x->w) < 0) {
        jerr_sys(e, "watch the exec's helper");
        kill(x->pid, SIGKILL);
        waitpid(x->pid, NULL, 0);
        if (x->w.fd >= 0)
            close(x->w.fd);
        free(x);
        goto fail;
    }
    snprintf(x->job_id, sizeof x->job_id, "%s", j->id);
    x->uid = who->uid;
    x->serial = *serial = ++last_serial;
    x->next = runs;
    runs = x;
    close(sp[1]);
    close(init);
    close(shim);
    close(req);
    fcntl(sp[0], F_SETFL, fcntl(sp[0], F_GETFL) | O_NONBLOCK);
    *fd = sp[0];
    char cmd[600], detail[800];
    words(r, cmd, sizeof cmd);
    /* (under gVisor the helper goes through runsc exec: the job's spec says so, not the client) */
    snprintf(detail, sizeof detail, "by uid %u%s%s%s: %s", (unsigned)who->uid, r->tty ? ", with a terminal" : "",
             r->stdin_open ? ", with stdin" : "", isolation_gvisor(&j->req) ? ", through runsc exec" : "", cmd);
    job_event(j, JE_EXEC, who->uid, "%s", detail);
    audit_caller("exec", who, j->id, cmd);
    log_info("job %.8s: exec %s (helper pid %d)", j->id, detail, (int)x->pid);
    return 0;
fail:
    for (int i = 0; i < 2; i++)
        if (sp[i] >= 0)
            close(sp[i]);
    if (req >= 0)
        close(req);
    close(init);
    close(shim);
    return -1;
}

void job_exec_stop_all(void)
{
    while (runs) {
        exec_run *x = runs;
        syscall(SYS_pidfd_send_signal, x->w.fd, SIGKILL, NULL, 0);
        loop_del(&x->w);
        close(x->w.fd);
        runs = x->next;
        free(x);
    }
}
