/* PID 1 of a job. It exists because the kernel only delivers signals to a namespace's init
 * when it has a handler: a command running as PID 1 would ignore a polite SIGTERM and leave
 * orphans unreaped. This init sets up isolation, starts the command, forwards signals to
 * every process of the job, reaps orphans, and reports the command's exact wait status. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/close_range.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/util.h"
#include "console.h"
#include "isolate.h"
#include "shim.h"

char *jobinit_hide_arg;

_Noreturn static void fail(int fd, const char *stage, const jerr *e, int code)
{
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s: %s", stage, e->msg);
    write_all(fd, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
    _exit(code);
}

_Noreturn static void run_command(const job_spec *s, const struct sock_fprog *filter, const struct jobinit_fds *fds,
                                  int slave)
{
    jerr e = {0};
    if (slave >= 0) {
        /* the terminal: stdin, stdout, stderr and the controlling terminal of a new session */
        if (console_take(slave, &e) < 0)
            fail(fds->sync_w, "terminal", &e, 127);
    } else {
        int in = fds->in_r >= 0 ? fds->in_r : open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in < 0 || dup2(in, 0) < 0 || dup2(fds->out_w, 1) < 0 || dup2(fds->err_w, 2) < 0) {
            jerr_sys(&e, "connect stdin/stdout/stderr");
            fail(fds->sync_w, "start", &e, 127);
        }
    }
    /* Nothing of the shim's may reach the command; sync_w stays open until exec succeeds. */
    syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    if (chdir(s->workdir) < 0) {
        jerr_sys(&e, "working directory %s", s->workdir);
        fail(fds->sync_w, "start", &e, 127);
    }
    /* The processes of the job's user, all its jobs together (and its other processes): counted
     * by the kernel per uid; checked at fork and, after the uid change, at exec (EAGAIN). */
    if (s->user_procs_max &&
        setrlimit(RLIMIT_NPROC, &(struct rlimit){s->user_procs_max, s->user_procs_max}) < 0) {
        jerr_sys(&e, "RLIMIT_NPROC %llu", (unsigned long long)s->user_procs_max);
        fail(fds->sync_w, "start", &e, 127);
    }
    /* The soft open-file limit joblet was started with, not the hard one it raised its own to
     * (a program that closes every descriptor up to it, or sizes a table by it, would crawl
     * under a hard limit of 2^30); the job may raise it to the hard one itself. */
    struct rlimit nofile;
    if (s->nofile_soft && getrlimit(RLIMIT_NOFILE, &nofile) == 0 && s->nofile_soft < nofile.rlim_cur) {
        nofile.rlim_cur = s->nofile_soft;
        if (setrlimit(RLIMIT_NOFILE, &nofile) < 0) {
            jerr_sys(&e, "RLIMIT_NOFILE %llu", (unsigned long long)s->nofile_soft);
            fail(fds->sync_w, "start", &e, 127);
        }
    }
    if (caps_drop_and_setuid(s->uid, s->gid, s->groups, s->ngroups, &e) < 0)
        fail(fds->sync_w, "drop privileges", &e, 127);
    if (seccomp_apply(filter, &e) < 0)
        fail(fds->sync_w, "seccomp", &e, 127);
    execvpe(s->argv[0], s->argv, s->env);
    jerr_sys(&e, "%s", s->argv[0]);
    fail(fds->sync_w, "exec", &e, errno == ENOENT ? 127 : 126);
}

/* The host's step hook runs meanwhile (shim_main.c); EOF instead of 'g' means it failed, and
 * the shim has recorded why. */
static void hold(const struct jobinit_fds *fds)
{
    char c = 0;
    write_all(fds->sync_w, "", 1);
    ssize_t r;
    while ((r = read(fds->hold_r, &c, 1)) < 0 && errno == EINTR)
        ;
    if (r != 1 || c != 'g')
        _exit(126);
    close(fds->hold_r);
}

_Noreturn void jobinit_run(const job_spec *s, const cg_job *cg, const struct sock_fprog *filter,
                           const struct jobinit_fds *fds)
{
    jerr e = {0};
    /* The shim owns the job: if it dies, nothing would record its output or its end. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_DUMPABLE, 0);
    prctl(PR_SET_NAME, "joblet-init");
    if (jobinit_hide_arg)
        memset(jobinit_hide_arg, 0, strlen(jobinit_hide_arg));
    if (ns_setup(s, &e) < 0)
        fail(fds->sync_w, "namespaces", &e, 126);
    if (mounts_prepare(s, &e) < 0)
        fail(fds->sync_w, "filesystem", &e, 126);
    /* Into the job's cgroups while the host's cgroup trees are still reachable, then a
     * cgroup namespace rooted there, then the job's own root. */
    if (cg_enter(cg, &e) < 0)
        fail(fds->sync_w, "cgroup", &e, 126);
    if (unshare(CLONE_NEWCGROUP) < 0) {
        jerr_sys(&e, "unshare cgroup namespace");
        fail(fds->sync_w, "namespaces", &e, 126);
    }
    if (mounts_pivot(s, &e) < 0)
        fail(fds->sync_w, "filesystem", &e, 126);
    /* the terminal, in the job's own devpts: its master to the shim, its slave for the command */
    int master = -1, slave = -1;
    if (fds->console_w >= 0) {
        if (console_open(s->uid, s->gid, &master, &slave, &e) < 0 || console_send(fds->console_w, master, &e) < 0)
            fail(fds->sync_w, "terminal", &e, 126);
        close(master);
        close(fds->console_w);
    }
    if (fds->hold_r >= 0)
        hold(fds);

    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    /* vfork: the command borrows the init's memory until it execs, so neither copies page
     * tables nor takes copy-on-write faults (~2 % of a trivial job's CPU). The init waits
     * meanwhile, which it would do anyway; the child only makes syscalls, on its own stack
     * frame, and allocates nothing (caps_last_cap is read here, before). */
    caps_last_cap();
    /* execvpe searches the PATH of its caller's environment, not of the one it is given: the
     * init takes the job's as its own (it reads none of its own after this), so the command is
     * looked up along the job's PATH, as the check at submission did (core/cmdcheck.c). */
    environ = s->env;
    pid_t child = vfork();
    if (child < 0) {
        jerr_sys(&e, "fork the command");
        fail(fds->sync_w, "start", &e, 126);
    }
    if (child == 0) {
        /* The command starts as from a fresh login: default dispositions (the shim ignores
         * SIGPIPE, and ignored signals survive exec) and nothing blocked. */
        for (int sig = 1; sig < NSIG; sig++)
            signal(sig, SIG_DFL);
        sigset_t empty;
        sigemptyset(&empty);
        sigprocmask(SIG_SETMASK, &empty, NULL);
        run_command(s, filter, fds, slave);
    }
    /* the command holds them now: the job's end closes the terminal and the pipes */
    if (slave >= 0)
        close(slave);
    if (fds->in_r >= 0)
        close(fds->in_r);
    if (fds->out_w >= 0)
        close(fds->out_w);
    if (fds->err_w >= 0)
        close(fds->err_w);
    close(fds->sync_w);

    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&all, &si);
        if (sig < 0)
            continue;
        if (sig != SIGCHLD) {
            /* From PID 1, kill(-1) reaches every other process of the job; the shim's word for
             * the command alone (shim.h SHIM_SIGNAL_COMMAND) reaches the command. */
            if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
                continue;
            if (si.si_code == SI_QUEUE && si.si_value.sival_int == SHIM_SIGNAL_COMMAND)
                kill(child, sig);
            else
                kill(-1, sig);
            continue;
        }
        int status;
        pid_t p;
        while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
            if (p != child)
                continue;
            int32_t st = status;
            write_all(fds->status_w, &st, sizeof st);
            /* Exiting takes every remaining process of the job with it. */
            _exit(0);
        }
    }
}
