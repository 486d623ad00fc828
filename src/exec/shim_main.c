/* joblet-shim JOB_DIR — one per job. It creates the job from the spec on its fd 5, holds its
 * output pipes and appends time-stamped lines to the job's logs, enforces the run-time
 * limit, stops the job on SIGTERM (SIGTERM to all, SIGKILL after the grace period) and kills
 * it on SIGUSR1 (SIGKILL to all at once: rnx job kill), takes a new run-time limit on SIGUSR2
 * (sigqueue'd, its value SHIM_LIMIT_*: the limit in seconds of run time, 0 none, and whether the
 * job is suspended: rnx job update, suspend, resume; time suspended does not count), and
 * records how it ended (shim_status.h). It does not depend on the daemon: if joblet dies,
 * the job and its logs go on, and a restarted joblet reads what the shim wrote. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/termframe.h"
#include "../common/util.h"
#include "console.h"
#include "gvisor.h"
#include "isolate.h"
#include "logwriter.h"
#include "shim.h"
#include "shim_status.h"
#include "shim_term.h"
#include "workcopy.h"
#include "zygote.h"

typedef struct shim {
    job_spec spec;
    cg_job cg;
    cg_host host;
    int dirfd;
    pid_t init;
    int out_r, err_r, status_r;
    logw out, err;
    uint64_t log_seq;        /* the last piece of output's number, across both streams */
    uint64_t pumped;         /* bytes of output read so far (pump), up to SHIM_CPU_JOIN_BYTES */
    bool cpu_joined;         /* in its user's level of the CPU hierarchies too (pump) */
    int64_t started_ms, ended_ms;
    int stop_requested, kill_requested, timed_out, killed;
    int tfd_runtime, tfd_grace;
    int tfd_warn;             /* --signal's timer (spec.warn_signal), -1 none */
    bool warned;              /* --signal's signal was sent for the limit as it is now */
    int64_t runtime_from_ns;  /* when the run-time limit counts from (mono_ns) */
    uint64_t runtime_s;       /* the run-time limit, 0 none */
    int64_t paused_ns;        /* time suspended so far (not counted against the limit) */
    int64_t paused_since_ns;  /* while suspended: since when (mono_ns); 0 not suspended */
    int notify_fd;
    bool gated;        /* notify_fd is joblet's socket pair: no command before its SHIM_GO */
    bool not_run;      /* the pair ended before SHIM_GO: joblet went away, nothing ran */
    bool stopped_unrun; /* a stop or kill came while it waited for SHIM_GO: nothing ran */
    bool record_files; /* its records are files, not the attribute (shim_status.h) */
    shim_term *term; /* a job with a terminal: its clients (shim_term.h); NULL none */
    int console_r;   /* a tty job: where its init sends the pty master (console.h); -1 none */
    char error[1024];
} shim;

/* shim.log is on the state filesystem and counted in no budget, and some of its lines come as
 * often as a user asks (each signal sent, each suspend, resume or run-time update): they fill
 * at most SHIM_LOG_ASKED_MAX of it, the shim's own diagnostics (a failed start, the cleanup) the
 * rest up to SHIM_LOG_MAX. A line saying so marks where each kind stopped. */
#define SHIM_LOG_MAX (64 << 10)
#define SHIM_LOG_ASKED_MAX (32 << 10)

static void shim_vlog(shim *sh, off_t bound, const char *fmt, va_list ap)
{
    int fd = openat(sh->dirfd, SHIM_LOG, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char msg[1200];
    int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
    if (n > (int)sizeof msg - 2)
        n = (int)sizeof msg - 2;
    msg[n++] = '\n';
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size + n > bound) {
        n = st.st_size < bound ? snprintf(msg, sizeof msg, "(shim.log holds %lld KiB of such lines: later ones are "
                                                          "not kept)\n", (long long)bound >> 10)
                               : 0;
    }
    ssize_t w = n > 0 ? write(fd, msg, (size_t)n) : 0;
    (void)w;
    close(fd);
}

static void shim_log(shim *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void shim_log(shim *sh, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shim_vlog(sh, SHIM_LOG_MAX, fmt, ap);
    va_end(ap);
}

/* A line a user's request brings (see SHIM_LOG_ASKED_MAX). */
static void shim_log_asked(shim *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void shim_log_asked(shim *sh, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    shim_vlog(sh, SHIM_LOG_ASKED_MAX, fmt, ap);
    va_end(ap);
}


static int arm(int tfd, uint64_t seconds)
{
    struct itimerspec it = {.it_value = {.tv_sec = (time_t)seconds}};
    return timerfd_settime(tfd, 0, &it, NULL);
}

/* The longest joblet-net may take to give a job its veth before the job fails to start. */
#define NET_UP_TIMEOUT_MS 10000

/* The job's network (spec.h: spec_net): joblet-net makes the veth pair, eth0 inside the
 * network namespace at netns, addresses and the default route; the daemon made the bridge and
 * the rules. Its one line of complaint becomes the job's error. */
static int net_up(shim *sh, const char *netns, jerr *e)
{
    const spec_net *n = sh->spec.net;
    char maxbps[32];
    snprintf(maxbps, sizeof maxbps, "%llu", (unsigned long long)n->max_bps);
    const char *argv[24];
    size_t k = 0;
    argv[k++] = n->helper;
    argv[k++] = "job-up";
    argv[k++] = "--netns";
    argv[k++] = netns;
    argv[k++] = "--host-if";
    argv[k++] = n->host_if;
    argv[k++] = "--addr";
    argv[k++] = n->addr;
    argv[k++] = "--gateway";
    argv[k++] = n->gateway;
    argv[k++] = n->bridge ? "--bridge" : "--host-addr";
    argv[k++] = n->bridge ? n->bridge : n->host_addr;
    if (n->max_bps) {
        argv[k++] = "--max-bps";
        argv[k++] = maxbps;
    }
    argv[k] = NULL;
    char *env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    int errp[2];
    if (pipe2(errp, O_CLOEXEC) < 0)
        return jerr_sys(e, "pipe");
    pid_t child = fork();
    if (child < 0) {
        close(errp[0]);
        close(errp[1]);
        return jerr_sys(e, "fork %s", n->helper);
    }
    if (child == 0) {
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(errp[1], 2) < 0)
            _exit(126);
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(n->helper, (char *const *)argv, env);
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(errp[1]);
    char msg[512];
    size_t got = 0;
    int64_t deadline = now_ms() + NET_UP_TIMEOUT_MS;
    for (;;) {
        int64_t left = deadline - now_ms();
        struct pollfd p = {.fd = errp[0], .events = POLLIN};
        int r = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        ssize_t m = read(errp[0], msg + got, sizeof msg - 1 - got);
        if (m < 0 && errno == EINTR)
            continue;
        if (m <= 0)
            break;
        got += (size_t)m;
        if (got == sizeof msg - 1)
            break;
    }
    close(errp[0]);
    bool late = now_ms() >= deadline;
    if (late)
        kill(child, SIGKILL);
    int st = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR)
        ;
    msg[got] = 0;
    while (got && (msg[got - 1] == '\n' || msg[got - 1] == ' '))
        msg[--got] = 0;
    if (late)
        return jerr_set(e, ETIMEDOUT, "network %s: %s did not finish within %d s", n->network, n->helper,
                        NET_UP_TIMEOUT_MS / 1000);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return jerr_set(e, ECANCELED, "network %s: %s", n->network,
                        got ? msg : WIFEXITED(st) && WEXITSTATUS(st) == 127 ? "joblet-net not found" : "joblet-net failed");
    return 0;
}

/* Under gVisor: the network namespace runsc is started in, before it runs (gvisor.h). */
static int await_go(shim *sh, jerr *e);

/* What precedes runsc's run of the command (gvisor.h): the job's network, joblet's word */
static int gvisor_ready_shim(void *arg, const char *netns, jerr *e)
{
    shim *sh = arg;
    if (sh->spec.net && net_up(sh, netns, e) < 0)
        return -1;
    return await_go(sh, e);
}

/* Polite stop: SIGTERM to the job's init (which forwards it to every process), SIGKILL to
 * the whole cgroup when the grace period is over. */
static void begin_stop(shim *sh)
{
    if (sh->init <= 0 || sh->tfd_grace >= 0)
        return;
    if (!sh->spec.runsc)
        kill(sh->init, SIGTERM);
    else if (gvisor_kill(&sh->spec, SIGTERM, true) < 0)
        shim_log(sh, "runsc kill TERM failed; the job is killed when the grace period ends");
    sh->tfd_grace = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (sh->tfd_grace < 0 || arm(sh->tfd_grace, sh->spec.stop_grace_s ? sh->spec.stop_grace_s : 1) < 0)
        kill(sh->init, SIGKILL);
}

static const char *signal_name(int sig)
{
    static char buf[16];
    const char *abbrev = sigabbrev_np(sig);
    if (!abbrev)
        return NULL;
    snprintf(buf, sizeof buf, "SIG%s", abbrev);
    return buf;
}

/* A signal for the job's command, or with SHIM_SIGNAL_ALL for every process of the job (shim.h
 * SHIM_SIGNAL_FORWARD): to its init, which passes it on (jobinit.c), or through runsc to the
 * sandbox's command or every process of it. A frozen job gets it when it is thawed. Only the
 * signals parse_signal takes (common/parse.h): the word is joblet's, but the shim sends nothing
 * its init would not pass on. */
static void forward_signal(shim *sh, int word, const char *why)
{
    int sig = word & ~SHIM_SIGNAL_ALL;
    bool all = word & SHIM_SIGNAL_ALL;
    if (sh->init <= 0 || !parse_signal_sendable(sig) || sig == SIGKILL)
        return;
    int rc;
    if (sh->spec.runsc)
        rc = gvisor_kill(&sh->spec, sig, all);
    else if (all)
        rc = kill(sh->init, sig);
    else
        rc = sigqueue(sh->init, sig, (union sigval){.sival_int = SHIM_SIGNAL_COMMAND});
    const char *name = signal_name(sig);
    if (rc < 0)
        shim_log_asked(sh, "could not send %s to the job's %s (%s): %s", name ? name : "?",
                       all ? "processes" : "command", why, strerror(errno));
    else
        shim_log_asked(sh, "sent %s to %s (%s)", name ? name : "?",
                       all ? "every process of the job" : "the job's command", why);
}

static void hard_kill(shim *sh)
{
    sh->killed = 1;
    if (sh->spec.runsc)
        gvisor_kill(&sh->spec, SIGKILL, true); /* then runsc, its sandbox and gofer themselves */
    cg_kill_all(&sh->cg);
    if (sh->init > 0)
        kill(sh->init, SIGKILL);
}

/* Output after which the shim's CPU is its user's: reading and writing a job's output costs
 * the shim about what writing it costs the job (1.5 s of CPU for 1 GB, and as much again for
 * what it reads past the log's cap and drops), and on a v1 or hybrid host the shim is in the
 * daemon's CPU cgroups (its user's level holds it for tasks only: cgroup.h cg_user_join), where
 * each shim weighs as much as a whole user's level. Joining costs a write per hierarchy, which a
 * job of little output (most) does not pay. */
#define SHIM_CPU_JOIN_BYTES (8ull << 20)

static void join_user_cpu(shim *sh, size_t n)
{
    if (sh->cpu_joined || (sh->pumped += n) < SHIM_CPU_JOIN_BYTES || sh->spec.cgroup_given)
        return;
    sh->cpu_joined = true;
    jerr e = {0};
    if (cg_user_enter_cpu(&sh->host, &e) < 0)
        shim_log(sh, "cannot account this shim's CPU to the job's owner: %s", e.msg);
}

/* One read of the job's pipe (or its terminal), as one piece of its log (logwriter.h); its
 * sequence number orders it against the other stream's pieces. Attached clients get it too, on
 * channel ch (shim_term.h). At its end the descriptor leaves ep before it is closed: a tty's
 * master has a duplicate (the terminal's input, shim_term_set_input), which keeps the open file
 * and so its registration alive, and epoll would go on reporting the hang-up under a number
 * nothing handles any more (the shim spinning until the job ends). */
static int pump(shim *sh, int ep, int *fd, logw *w, int ch)
{
    static char buf[1 << 18];
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (n <= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, *fd, NULL);
        close(*fd);
        *fd = -1;
        return 0;
    }
    join_user_cpu(sh, (size_t)n);
    if (logw_feed(w, buf, (size_t)n, now_ns(), ++sh->log_seq) < 0)
        shim_log(sh, "writing job output failed: %s", strerror(errno));
    shim_term_output(sh->term, ch, buf, (size_t)n);
    return 0;
}

/* The owner's log budget (logwriter.h), mapped shared for the life of the shim; NULL when the
 * spec names none or it cannot be used (said in the shim's log: the stream's own cap and the
 * floor still hold). */
static log_budget *map_budget(shim *sh)
{
    if (!sh->spec.log_budget[0])
        return NULL;
    int fd = open(sh->spec.log_budget, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    void *p = fd < 0 ? MAP_FAILED : mmap(NULL, LOG_BUDGET_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED || ((log_budget *)p)->magic != LOG_BUDGET_MAGIC) {
        shim_log(sh, "the log budget %s cannot be used (%s): the output of this job counts only against its own cap",
                 sh->spec.log_budget, p == MAP_FAILED ? strerror(err) : "not a budget file");
        if (p != MAP_FAILED)
            munmap(p, LOG_BUDGET_FILE_SIZE);
        return NULL;
    }
    return p;
}

/* What every job of this process needs and a zygote prepares once, before it forks. */
static struct sock_fprog seccomp_prog;
static struct sock_fprog seccomp_prog_aio; /* jobs.kernel_aio's, compiled at its first job */
static cg_host host;
static bool host_ready;

static void prepare(const char *cgroup_root)
{
    jerr e = {0};
    if (seccomp_default_program(&seccomp_prog, false, &e) < 0)
        seccomp_prog.filter = NULL; /* each shim retries, and reports the error in its job */
    host_ready = cg_host_detect(&host, cgroup_root, &e) == 0;
    caps_last_cap();
    /* jansson's hash seed, read from /dev/urandom at its first object: once here, not in
     * every shim (the spec, the only JSON a shim parses, comes from joblet) */
    json_object_seed(0);
}

/* The longest a step hook may hold the job's init before the job fails to start. */
#define STEP_HOOK_TIMEOUT_MS 30000

/* The spec's step hook, run while the init holds (isolate.h: jobinit_fds): as root, in the
 * shim's cgroups, its output appended to shim.log, with the job's id and directory and the
 * init's host pid in its environment (what moving a network link into the job's namespace,
 * or handing it a terminal, needs). 0 once it exited 0 within STEP_HOOK_TIMEOUT_MS. */
static int run_step_hook(shim *sh, jerr *e)
{
    const char *hook = sh->spec.step_hook;
    char id[64], pid[48], dir[4200];
    snprintf(id, sizeof id, "JOBLET_JOB_ID=%s", sh->spec.id);
    snprintf(pid, sizeof pid, "JOBLET_INIT_PID=%d", (int)sh->init);
    snprintf(dir, sizeof dir, "JOBLET_JOB_DIR=%s", sh->spec.job_dir);
    char *env[] = {id, pid, dir, "JOBLET_HOOK=before-exec", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    char *argv[] = {(char *)hook, "before-exec", NULL};
    int log = openat(sh->dirfd, SHIM_LOG, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    pid_t child = fork();
    if (child < 0) {
        if (log >= 0)
            close(log);
        return jerr_sys(e, "fork the step hook %s", hook);
    }
    if (child == 0) {
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        int outfd = log >= 0 ? log : devnull;
        if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(outfd, 1) < 0 || dup2(outfd, 2) < 0)
            _exit(126);
        syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(hook, argv, env);
        _exit(errno == ENOENT ? 127 : 126);
    }
    if (log >= 0)
        close(log);
    int pfd = (int)syscall(SYS_pidfd_open, child, 0);
    struct pollfd p = {.fd = pfd, .events = POLLIN};
    int ready = pfd < 0 ? 1 : poll(&p, 1, STEP_HOOK_TIMEOUT_MS);
    while (ready < 0 && errno == EINTR)
        ready = poll(&p, 1, STEP_HOOK_TIMEOUT_MS);
    if (pfd >= 0)
        close(pfd);
    if (ready == 0)
        kill(child, SIGKILL);
    int st = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR)
        ;
    if (ready == 0)
        return jerr_set(e, ETIMEDOUT, "the step hook %s did not finish within %d s: killed", hook,
                        STEP_HOOK_TIMEOUT_MS / 1000);
    if (WIFSIGNALED(st))
        return jerr_set(e, ECANCELED, "the step hook %s was killed by signal %d", hook, WTERMSIG(st));
    if (WEXITSTATUS(st) != 0)
        return jerr_set(e, ECANCELED, "the step hook %s exited with %d%s", hook, WEXITSTATUS(st),
                        WEXITSTATUS(st) == 127 ? " (not found?)" : WEXITSTATUS(st) == 126 ? " (not executable?)" : "");
    return 0;
}

/* While the init holds, a job with a terminal: its pty master (a tty job) becomes the job's
 * output and input; joblet is told its clients may attach ("T"); the command waits for the first
 * (shim_term_await). -1 with e set when the init sent no pty. */
static int await_attach(shim *sh, jerr *e)
{
    if (sh->console_r >= 0) {
        int master;
        int rc = console_recv(sh->console_r, &master, e);
        close(sh->console_r);
        sh->console_r = -1;
        if (rc < 0)
            return -1;
        int in = fcntl(master, F_DUPFD_CLOEXEC, 3);
        if (in < 0) {
            close(master);
            return jerr_sys(e, "dup the job's pty");
        }
        sh->out_r = master;
        shim_term_set_input(sh->term, in);
    }
    if (sh->notify_fd >= 0) {
        ssize_t w = write(sh->notify_fd, "T\n", 2);
        (void)w;
    }
    /* a stop or a kill meanwhile ends the wait (a shim gated by joblet's word runs nothing then:
     * await_go; else the command starts and is stopped as any job): a signalfd that is polled,
     * never read, so the signal stays pending */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    shim_term_await(sh->term, sh->spec.attach_wait_s, sfd);
    if (sfd >= 0)
        close(sfd);
    return 0;
}

/* joblet's word that the database holds this start (shim.h: SHIM_GO), after the turn's commit
 * that names this shim: a joblet killed before that commit starts the job again at its next
 * start, so a command run before the word could run twice (its output twice). Meanwhile the
 * job's namespaces, cgroup and network are made; the command waits. The end of the pair with
 * nothing read: joblet went away; the command is not run (SHIM_NOT_RUN). */
static int await_go(shim *sh, jerr *e)
{
    if (!sh->gated)
        return 0;
    char c = 0;
    ssize_t r;
    while ((r = read(sh->notify_fd, &c, 1)) < 0 && errno == EINTR)
        ;
    /* A stop (SIGTERM) or kill (SIGUSR1) joblet sent while the shim waited (blocked, pending):
     * joblet sends it before it commits the stop, and so before that commit's word. The command
     * is not run at all, whatever came (the word, or the pair's end: a joblet killed after the
     * stop was sent), and the end says stopped or killed, as a run that was stopped does (a
     * requeue, a preemption: back in the queue). Left pending: nothing takes them after. */
    sigset_t pend;
    if (sigpending(&pend) == 0 && (sigismember(&pend, SIGTERM) || sigismember(&pend, SIGUSR1))) {
        sh->stopped_unrun = true;
        sh->stop_requested = 1;
        sh->kill_requested = sigismember(&pend, SIGUSR1);
        return jerr_set(e, ECANCELED, "%s before its command ran (it waited for joblet to record its start); the "
                                      "command was not run", sh->kill_requested ? "killed" : "stopped");
    }
    if (r == 1 && c == SHIM_GO)
        return 0;
    sh->not_run = true;
    return jerr_set(e, EPIPE, "joblet went away before it recorded the job's start; the command was not run "
                              "(the next joblet starts the job again)");
}

/* Until the init has exec'd the command: EOF on the sync pipe says it did, bytes are the setup
 * error (left in sh->error). With a step hook, a network, a terminal or joblet's word to wait for
 * (hold_w >= 0) the init first says it holds (one NUL byte); the network is made, the hook runs,
 * the first client attaches (await_attach) and joblet's word comes (await_go), and 'g' lets the
 * init go on, or the pipe's EOF makes it exit. */
static void await_exec(shim *sh, int sync_r, int hold_w)
{
    size_t got = 0;
    for (;;) {
        ssize_t n = read(sync_r, sh->error + got, sizeof sh->error - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (hold_w >= 0 && got == 1 && sh->error[0] == 0) {
            got = 0;
            jerr e = {0};
            if (sh->spec.net) {
                char netns[64];
                snprintf(netns, sizeof netns, "/proc/%d/ns/net", (int)sh->init);
                if (net_up(sh, netns, &e) < 0) {
                    snprintf(sh->error, sizeof sh->error, "%s", e.msg);
                    close(hold_w);
                    return;
                }
            }
            if (sh->spec.step_hook && run_step_hook(sh, &e) < 0) {
                snprintf(sh->error, sizeof sh->error, "step hook: %s", e.msg);
                close(hold_w);
                return;
            }
            if (sh->term && await_attach(sh, &e) < 0) {
                snprintf(sh->error, sizeof sh->error, "terminal: %s", e.msg);
                close(hold_w);
                return;
            }
            if (await_go(sh, &e) < 0) {
                snprintf(sh->error, sizeof sh->error, "%s", e.msg);
                close(hold_w);
                return;
            }
            ssize_t w = write(hold_w, "g", 1);
            (void)w; /* the init gone: its sync pipe says why */
            close(hold_w);
            hold_w = -1;
            continue;
        }
        if (got >= sizeof sh->error - 1)
            break;
    }
    sh->error[got] = 0;
    if (hold_w >= 0)
        close(hold_w);
}

/* The job's cgroups: made in its owner's level with the spec's limits, or given (delegated:
 * cgroup.h), in which case the shim makes none and stays where it was started. */
static int job_cgroups(shim *sh, jerr *e)
{
    job_spec *s = &sh->spec;
    sh->host = host;
    if (s->cgroup_given)
        return cg_job_given(&sh->host, s->id, s->cgroup_given, &sh->cg, e);
    /* the job and this shim in its user's level, whose pids.max bounds all the user's jobs
     * together (cgroup.h); what the shim forks from here on (the job's init, runsc) counts */
    cg_user_host(&host, (uint32_t)s->owner_uid, &sh->host);
    if (cg_user_join(&sh->host, s->user_tasks_max, e) < 0)
        return -1;
    if (cg_create_for(&sh->host, s->id, &s->limits, &sh->cg, e) == 0)
        return 0;
    if (e->code != ENOENT) /* else a directory of the user's level is missing (cg_user_join) */
        return -1;
    *e = (jerr){0};
    if (cg_user_prepare(&sh->host, s->user_tasks_max, e) < 0)
        return -1;
    return cg_create_for(&sh->host, s->id, &s->limits, &sh->cg, e);
}

/* An array task's /work: its array's files, copied here, by the task's own process (in its
 * owner's cgroup level: what the copy costs is theirs), once: a run started again (a requeue)
 * finds /work as the last one left it (workcopy.h). A stop or kill asked for meanwhile ends the
 * copy at once, and the job is stopped before its command runs (await_go; a shim without
 * joblet's word: as soon as it starts); the next run copies again. */
static int work_copy(shim *sh, jerr *e)
{
    const job_spec *s = &sh->spec;
    if (!s->work_copy_from || faccessat(sh->dirfd, SHIM_WORK_COPIED, F_OK, 0) == 0)
        return 0;
    workcopy_stats st;
    jerr ce = {0};
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGUSR1);
    if (workcopy_tree(s->work_copy_from, s->work_dir, s->uid, s->gid, &stop, &st, &ce) < 0) {
        if (ce.code == ECANCELED) {
            shim_log(sh, "work: the copy of the array's files ended: %s", ce.msg);
            return 0;
        }
        return jerr_set(e, ce.code, "uploads: the array's files into the task's /work: %s%s", ce.msg,
                        ce.code == ENOSPC || ce.code == EDQUOT
                            ? " (its owner's /work is full: jobs.work_quota; what was copied stays until the job is "
                              "deleted)"
                            : "");
    }
    int fd = openat(sh->dirfd, SHIM_WORK_COPIED, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || fsync(fd) < 0 || fsync(sh->dirfd) < 0)
        shim_log(sh, "cannot record that /work has the array's files: %s", strerror(errno));
    if (fd >= 0)
        close(fd);
    shim_log(sh, "work: %llu files (%llu bytes) copied from the array's files", (unsigned long long)st.files,
             (unsigned long long)st.bytes);
    return 0;
}

static int start_job(shim *sh, int notify_fd)
{
    jerr e = {0};
    job_spec *s = &sh->spec;
    sh->notify_fd = notify_fd; /* (a terminal job's "T" comes before the start) */
    if (!host_ready || strcmp(host.root, s->cgroup_root)) {
        if (cg_host_detect(&host, s->cgroup_root, &e) < 0)
            goto fail_nocg;
        host_ready = true;
    }
    if (job_cgroups(sh, &e) < 0)
        goto fail_nocg;
    if (cg_apply_limits(&sh->cg, &s->limits, &e) < 0 || work_copy(sh, &e) < 0)
        goto fail;
    size_t nrules = cg_default_devices_n + s->ndevices;
    cg_dev_rule *rules = xcalloc(nrules, sizeof *rules);
    memcpy(rules, cg_default_devices, cg_default_devices_n * sizeof *rules);
    memcpy(rules + cg_default_devices_n, s->devices, s->ndevices * sizeof *rules);
    int prog = s->ndevices == 0 && fcntl(SHIM_DEVFILTER_FD, F_GETFD) >= 0 ? SHIM_DEVFILTER_FD : -1;
    int rc = cg_set_devices_prog(&sh->cg, prog, rules, nrules, &e);
    if (prog >= 0)
        close(prog);
    free(rules);
    if (rc < 0)
        goto fail;
    struct sock_fprog *prog_used = s->kernel_aio ? &seccomp_prog_aio : &seccomp_prog;
    if (!prog_used->filter && seccomp_default_program(prog_used, s->kernel_aio, &e) < 0)
        goto fail;

    /* a terminal: the job's input and output go through the shim (shim_term.h); a tty job's
     * are its pty, which its init makes and sends over a socket pair */
    int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1}, con[2] = {-1, -1}, sync[2], status[2],
        hold[2] = {-1, -1};
    bool terminal = s->tty || s->stdin_open;
    if (terminal && !(sh->term = shim_term_new(sh->dirfd, s->tty, &e)))
        goto fail;
    if (s->stdio_given) {
        /* the job's own stdio, given (a Slurm task's): no pipes, nothing logged; the shim keeps
         * none of them once the init has them, so their readers see the end with the job's */
        in[0] = SHIM_STDIO_FD;
        out[1] = SHIM_STDIO_FD + 1;
        err[1] = SHIM_STDIO_FD + 2;
        for (int i = 0; i < 3; i++)
            if (fcntl(SHIM_STDIO_FD + i, F_GETFD) < 0) {
                jerr_sys(&e, "the job's given stdio (fd %d)", SHIM_STDIO_FD + i);
                goto fail;
            }
    }
    if ((!s->tty && !s->stdio_given && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)) ||
        (s->stdin_open && !s->tty && pipe2(in, O_CLOEXEC) < 0) ||
        (s->tty && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, con) < 0) || pipe2(sync, O_CLOEXEC) < 0 ||
        pipe2(status, O_CLOEXEC) < 0 ||
        ((s->step_hook || (s->net && !s->runsc) || terminal || (sh->gated && !s->runsc)) &&
         pipe2(hold, O_CLOEXEC) < 0)) {
        jerr_sys(&e, "pipe");
        goto fail;
    }
    uint64_t flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | (s->net_host ? 0 : CLONE_NEWNET);
    struct clone_args ca = {.flags = flags, .exit_signal = SIGCHLD};
    pid_t pid;
    if (s->runsc) {
        /* gVisor: runsc makes the namespaces and the sandbox; the same pipes, the same cgroup */
        struct jobinit_fds fds = {.out_w = out[1], .err_w = err[1], .in_r = -1, .console_w = -1, .sync_w = sync[1],
                                  .status_w = status[1], .hold_r = -1};
        if (gvisor_bundle_write(s, &sh->cg, &e) < 0 ||
            (pid = gvisor_spawn(s, &sh->cg, &fds, gvisor_ready_shim, sh, &e)) < 0) {
            for (int i = 0; i < 2; i++) {
                close(out[i]);
                close(err[i]);
                close(sync[i]);
                close(status[i]);
            }
            goto fail;
        }
    } else if ((pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca)) < 0) {
        jerr_sys(&e, "clone the job's namespaces");
        goto fail;
    }
    if (pid == 0) {
        close(SHIM_SPEC_FD); /* the job's init holds nothing of the spec (secret variables) */
        int mine[] = {out[0], err[0], in[1], con[0], sync[0], status[0], hold[1]};
        for (size_t i = 0; i < ARRAY_LEN(mine); i++)
            if (mine[i] >= 0)
                close(mine[i]);
        struct jobinit_fds fds = {.out_w = out[1], .err_w = err[1], .in_r = in[0], .console_w = con[1],
                                  .sync_w = sync[1], .status_w = status[1], .hold_r = hold[0]};
        jobinit_run(s, &sh->cg, prog_used, &fds);
    }
    sh->init = pid;
    int theirs[] = {out[1], err[1], in[0], con[1], sync[1], status[1], hold[0]};
    for (size_t i = 0; i < ARRAY_LEN(theirs); i++)
        if (theirs[i] >= 0)
            close(theirs[i]);
    sh->console_r = con[0];
    if (in[1] >= 0)
        shim_term_set_input(sh->term, in[1]);
    sh->out_r = out[0];
    sh->err_r = err[0];
    sh->status_r = status[0];
    await_exec(sh, sync[0], hold[1]);
    close(sync[0]);
    sh->started_ms = now_ms();
    if (!sh->error[0]) {
        char line[64];
        snprintf(line, sizeof line, "%d %lld\n", (int)pid, (long long)sh->started_ms);
        /* The record first, for a joblet that is not there to hear the pipe (or dies before
         * reading it): it reads the record when it comes back. */
        char why[300];
        if (shim_record_write(sh->dirfd, sh->spec.job_dir, SHIM_STARTED, line, strlen(line), &sh->record_files, why,
                              sizeof why) < 0)
            shim_log(sh, "cannot record the job's start: %s", why);
        if (notify_fd >= 0) {
            char msg[80];
            int n = snprintf(msg, sizeof msg, "S %s", line);
            ssize_t w = write(notify_fd, msg, (size_t)n);
            (void)w;
        }
    }
    return 0;
fail:
    cg_destroy(&sh->cg, NULL);
fail_nocg:
    snprintf(sh->error, sizeof sh->error, "%s", e.msg);
    return -1;
}

static void write_status(shim *sh, int have_status, int wstatus, const cg_stats *st)
{
    json_t *o = json_object();
    const char *reason;
    if (sh->stopped_unrun) {
        reason = sh->kill_requested ? "killed" : "stopped";
        json_object_set_new(o, "error", json_string(sh->error));
    } else if (sh->not_run) {
        reason = SHIM_NOT_RUN;
        json_object_set_new(o, "error", json_string(sh->error));
    } else if (sh->error[0]) {
        reason = "start_failed";
        json_object_set_new(o, "exit_code", json_integer(127));
        json_object_set_new(o, "error", json_string(sh->error));
    } else if (!have_status) {
        reason = "lost";
        json_object_set_new(o, "error", json_string("the job's init ended without reporting the command's status"));
    } else {
        if (WIFEXITED(wstatus)) {
            json_object_set_new(o, "exit_code", json_integer(WEXITSTATUS(wstatus)));
            reason = "exit";
        } else {
            int sig = WTERMSIG(wstatus);
            json_object_set_new(o, "exit_code", json_integer(128 + sig));
            json_object_set_new(o, "signal", json_integer(sig));
            const char *name = signal_name(sig);
            if (name)
                json_object_set_new(o, "signal_name", json_string(name));
            reason = "signal";
            if (sig == SIGKILL && st->oom_kills > 0 && !sh->stop_requested && !sh->timed_out)
                reason = "oom_killed";
        }
        /* A stop or time limit names the cause even if the job exited on its own SIGTERM handler. */
        if (sh->timed_out)
            reason = "time_limit";
        else if (sh->kill_requested)
            reason = "killed";
        else if (sh->stop_requested)
            reason = "stopped";
    }
    json_object_set_new(o, "end_reason", json_string(reason));
    json_object_set_new(o, "started_at_ms", json_integer(sh->started_ms));
    json_object_set_new(o, "ended_at_ms", json_integer(sh->ended_ms));
    json_object_set_new(o, "oom_kills", json_integer((json_int_t)st->oom_kills));
    /* its output is all written (the pipes drained): what its owner's log budget counts for it,
     * kept by joblet with its end so that a start need not look at every ended job's files
     * (none said without its directory: joblet looks at the files then) */
    if (sh->dirfd >= 0)
        json_object_set_new(o, "log_bytes", json_integer((json_int_t)log_files_bytes(sh->dirfd)));
    json_object_set_new(o, "usage", json_pack("{s:I,s:I,s:I,s:I}", "cpu_ns", (json_int_t)st->cpu_usage_ns,
                                              "memory_peak_bytes", (json_int_t)st->mem_peak_bytes,
                                              "io_read_bytes", (json_int_t)st->io_read_bytes,
                                              "io_write_bytes", (json_int_t)st->io_write_bytes));
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    /* Atomic but not fsynced: it must survive joblet's crash, not a power loss (which ends
     * the job anyway); an fsync here costs every job start-to-end a disk flush. It replaces
     * the start line (shim_status.h): a reader meanwhile sees the one or the other. */
    char err[300];
    if (shim_record_write(sh->dirfd, sh->spec.job_dir, SHIM_STATUS, txt, strlen(txt), &sh->record_files, err,
                          sizeof err) < 0)
        shim_log(sh, "cannot record the job's status: %s", err);
    free(txt);
}

/* The job's run time so far: since its start, less the time it was suspended (while it is,
 * up to its suspension). */
static int64_t ran_ns(const shim *sh)
{
    return (sh->paused_since_ns ? sh->paused_since_ns : mono_ns()) - sh->runtime_from_ns - sh->paused_ns;
}

/* When --signal's signal is due, in run time (ns): warn_s before the limit, 0 (at once) when the
 * limit is nearer than that; -1 when the job has no such signal or no limit. */
static int64_t warn_due_ns(const shim *sh)
{
    if (!sh->spec.warn_signal || !sh->runtime_s)
        return -1;
    int64_t due = ((int64_t)sh->runtime_s - (int64_t)sh->spec.warn_s) * 1000000000LL;
    return due > 0 ? due : 0;
}

/* Sets a timer (made and watched by ep on first use) to fire after left_ns of run time, or
 * disarms it (left_ns < 0); one already past fires now. */
static void timer_arm(int *fd, int ep, int64_t left_ns)
{
    if (*fd < 0) {
        *fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        if (*fd < 0)
            return;
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = *fd};
        epoll_ctl(ep, EPOLL_CTL_ADD, *fd, &ev);
    }
    struct itimerspec it = {0};
    if (left_ns >= 0) {
        if (left_ns < 1)
            left_ns = 1;
        it.it_value.tv_sec = (time_t)(left_ns / 1000000000LL);
        it.it_value.tv_nsec = (long)(left_ns % 1000000000LL);
    }
    timerfd_settime(*fd, 0, &it, NULL);
}

/* The run-time limit's timer, set to what is left of it, and --signal's before it: the limit
 * counts from the start, less the time the job was suspended; neither runs while the job is
 * suspended (its time stands still) or without a limit. One already past fires now. */
static void runtime_arm(shim *sh, int ep)
{
    bool on = sh->runtime_s && !sh->paused_since_ns;
    /* (what is left is 0, not less, once it is past: a negative left_ns disarms, and a limit
     * lowered under the run time gone by must end the job now, not never) */
    int64_t left = on ? (int64_t)sh->runtime_s * 1000000000LL - ran_ns(sh) : -1;
    if (sh->tfd_runtime >= 0 || on)
        timer_arm(&sh->tfd_runtime, ep, on && left < 0 ? 0 : left);
    int64_t due = warn_due_ns(sh);
    bool warn = on && due >= 0 && !sh->warned;
    left = warn ? due - ran_ns(sh) : -1;
    if (sh->tfd_warn >= 0 || warn)
        timer_arm(&sh->tfd_warn, ep, warn && left < 0 ? 0 : left);
}

/* --signal's timer fired: its signal to the command, once for the limit as it is, and joblet
 * told (the job's history says so). */
static void warn_fired(shim *sh)
{
    int64_t due = warn_due_ns(sh);
    if (sh->warned || sh->paused_since_ns || due < 0 || ran_ns(sh) < due)
        return; /* (a word that paused or moved the limit came after it fired) */
    sh->warned = true;
    char why[96];
    snprintf(why, sizeof why, "its --signal: %u s before its run-time limit of %llu s", sh->spec.warn_s,
             (unsigned long long)sh->runtime_s);
    forward_signal(sh, sh->spec.warn_signal, why);
    char line[80];
    int len = snprintf(line, sizeof line, "%d %llu %lld\n", sh->spec.warn_signal, (unsigned long long)sh->runtime_s,
                       (long long)now_ms());
    int fd = openat(sh->dirfd, SHIM_WARNED, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, line, (size_t)len) != len)
        shim_log(sh, "cannot record the --signal warning in %s: %s", SHIM_WARNED, strerror(errno));
    if (fd >= 0)
        close(fd);
    if (sh->notify_fd >= 0) {
        char msg[48];
        int n = snprintf(msg, sizeof msg, "W %d %llu\n", sh->spec.warn_signal, (unsigned long long)sh->runtime_s);
        ssize_t w = write(sh->notify_fd, msg, (size_t)n);
        (void)w;
    }
}

/* The word for the limit as the shim keeps it now: what a word without a value leaves as it is. */
static uint64_t limit_now(const shim *sh)
{
    return sh->runtime_s | (sh->paused_since_ns ? SHIM_LIMIT_SUSPENDED : 0);
}

/* joblet's latest word (shim.h SHIM_LIMIT): its file's, else the signal's. */
static uint64_t limit_word(shim *sh, uint64_t sent)
{
    char buf[32];
    int fd = openat(sh->dirfd, SHIM_LIMIT, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return sent;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return sent;
    buf[n] = 0;
    char *end;
    errno = 0;
    unsigned long long w = strtoull(buf, &end, 10);
    return errno || end == buf || *end != '\n' ? sent : (uint64_t)w;
}

/* joblet's word (SHIM_LIMIT_*): rnx job update --max-runtime on a running job, or the job
 * suspended or resumed. Each carries the whole state, so a word repeated changes nothing. */
static void runtime_limit(shim *sh, int ep, uint64_t word)
{
    uint64_t seconds = word & SHIM_LIMIT_SECONDS;
    bool paused = (word & SHIM_LIMIT_SUSPENDED) != 0;
    if (seconds != sh->runtime_s)
        shim_log_asked(sh, "run-time limit now %llu s", (unsigned long long)seconds);
    sh->runtime_s = seconds;
    /* a limit moved further than the warning sent for the old one: the new one gets its own */
    int64_t due = warn_due_ns(sh);
    if (sh->warned && due > ran_ns(sh))
        sh->warned = false;
    if (paused && !sh->paused_since_ns) {
        sh->paused_since_ns = mono_ns();
        shim_log_asked(sh, "suspended: the run-time limit waits");
    } else if (!paused && sh->paused_since_ns) {
        sh->paused_ns += mono_ns() - sh->paused_since_ns;
        sh->paused_since_ns = 0;
        shim_log_asked(sh, "resumed: %lld ms suspended in all, not counted against the run-time limit",
                       (long long)(sh->paused_ns / 1000000));
    }
    runtime_arm(sh, ep);
}

static void supervise(shim *sh)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SHIM_SIGNAL_FORWARD);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    sh->tfd_runtime = sh->tfd_warn = -1;
    sh->runtime_from_ns = mono_ns();
    sh->runtime_s = sh->spec.max_runtime_s;
    runtime_arm(sh, ep);
    int tfd = sh->term ? shim_term_fd(sh->term) : -1;
    int fds[] = {sh->out_r, sh->err_r, sfd, tfd};
    for (size_t i = 0; i < ARRAY_LEN(fds); i++) {
        if (fds[i] < 0)
            continue;
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
    }
    int have_status = 0, wstatus = 0, init_done = 0;
    int64_t drain_deadline = 0;
    while (sh->out_r >= 0 || sh->err_r >= 0 || !init_done) {
        struct epoll_event evs[8];
        int timeout = -1;
        if (init_done) {
            /* The job's processes are gone; wait briefly for the last bytes in the pipes. */
            int64_t left = (drain_deadline - mono_ns()) / 1000000;
            if (left <= 0)
                break;
            timeout = (int)left;
        }
        int n = epoll_wait(ep, evs, 8, timeout);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == sh->out_r) {
                pump(sh, ep, &sh->out_r, &sh->out, TERMFRAME_STDOUT);
            } else if (fd == sh->err_r) {
                pump(sh, ep, &sh->err_r, &sh->err, TERMFRAME_STDERR);
            } else if (fd == tfd) {
                shim_term_run(sh->term);
            } else if (fd == sh->tfd_runtime) {
                uint64_t x;
                /* (a word that paused or moved it may have come after it fired) */
                if (read(fd, &x, sizeof x) > 0 && !init_done && sh->runtime_s && !sh->paused_since_ns &&
                    mono_ns() - sh->runtime_from_ns - sh->paused_ns >= (int64_t)sh->runtime_s * 1000000000LL) {
                    sh->timed_out = 1;
                    begin_stop(sh);
                    if (sh->tfd_grace >= 0) {
                        struct epoll_event ev = {.events = EPOLLIN, .data.fd = sh->tfd_grace};
                        epoll_ctl(ep, EPOLL_CTL_ADD, sh->tfd_grace, &ev);
                    }
                }
            } else if (fd == sh->tfd_warn) {
                uint64_t x;
                if (read(fd, &x, sizeof x) > 0 && !init_done)
                    warn_fired(sh);
            } else if (fd == sh->tfd_grace) {
                uint64_t x;
                if (read(fd, &x, sizeof x) > 0 && !init_done)
                    hard_kill(sh);
            } else if (fd == sfd) {
                struct signalfd_siginfo si;
                /* joblet's words to pass a signal on, drained whole first and each signal sent
                 * once (as the kernel merges a standard signal sent twice before it is taken):
                 * however fast they come, and however long runsc takes to send one, no more wait
                 * queued than came in while the last were sent. Bit sig; [1]: to every process. */
                uint32_t forward[2] = {0, 0};
                while (read(sfd, &si, sizeof si) == sizeof si) {
                    /* A SIGUSR2 that came without its value is joblet's word all the same: the
                     * kernel drops a signal's value, never the signal, when root's queue of
                     * pending signals is full (RLIMIT_SIGPENDING), and the file has the word. */
                    if (si.ssi_signo == SIGUSR2 && !init_done)
                        runtime_limit(sh, ep, limit_word(sh, si.ssi_code == SI_QUEUE ? si.ssi_ptr : limit_now(sh)));
                    else if ((int)si.ssi_signo == SHIM_SIGNAL_FORWARD && si.ssi_code == SI_QUEUE) {
                        int sig = si.ssi_int & ~SHIM_SIGNAL_ALL;
                        if (sig >= 1 && sig <= 31)
                            forward[(si.ssi_int & SHIM_SIGNAL_ALL) != 0] |= 1u << sig;
                    } else if (si.ssi_signo == SIGUSR1 && !init_done) {
                        /* rnx job kill: SIGKILL to every process of the job at once */
                        sh->stop_requested = sh->kill_requested = 1;
                        hard_kill(sh);
                    } else if (si.ssi_signo == SIGTERM && !init_done) {
                        sh->stop_requested = 1;
                        begin_stop(sh);
                        if (sh->tfd_grace >= 0) {
                            struct epoll_event ev = {.events = EPOLLIN, .data.fd = sh->tfd_grace};
                            epoll_ctl(ep, EPOLL_CTL_ADD, sh->tfd_grace, &ev);
                        }
                    }
                }
                for (int all = 0; all < 2 && !init_done; all++)
                    for (int sig = 1; sig <= 31; sig++)
                        if (forward[all] >> sig & 1)
                            forward_signal(sh, sig | (all ? SHIM_SIGNAL_ALL : 0), "joblet's word (rnx job kill --signal)");
                int st;
                if (!init_done && waitpid(sh->init, &st, WNOHANG) == sh->init) {
                    init_done = 1;
                    sh->ended_ms = now_ms();
                    int32_t cmd;
                    if (sh->spec.runsc) {
                        /* runsc run's exit is the command's (gvisor.h) */
                        cg_stats now = {0};
                        cg_read_final_stats(&sh->cg, &now);
                        bool sent = sh->stop_requested || sh->timed_out, oom = now.oom_kills > 0;
                        have_status = 1;
                        wstatus = gvisor_command_status(st, sent || oom);
                        char why[900];
                        if (!sent && !oom && gvisor_failure(&sh->spec, st, why, sizeof why))
                            snprintf(sh->error, sizeof sh->error, "runsc: %s", why);
                        /* the memory limit killed the sandbox: runsc reports an error of its own */
                        if (oom && !sent && !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0))
                            wstatus = SIGKILL;
                        /* what is left of the sandbox (its record under runsc's root goes
                         * once the end is reported) */
                        cg_kill_all(&sh->cg);
                    } else if (read(sh->status_r, &cmd, sizeof cmd) == sizeof cmd) {
                        have_status = 1;
                        wstatus = cmd;
                    } else if (WIFSIGNALED(st)) {
                        /* init itself was killed (grace period over, or OOM chose it):
                         * the job ended by that signal. */
                        have_status = 1;
                        wstatus = st;
                    }
                    drain_deadline = mono_ns() + 2000000000LL;
                }
            }
        }
    }
    cg_stats st = {0};
    cg_read_final_stats(&sh->cg, &st);
    write_status(sh, have_status, wstatus, &st);
    /* The job is over and recorded: tell joblet now, then the attached clients (as rnx job run
     * --follow says it: a signal's 128 + its number; 1 when nobody knows), and tidy up the
     * cgroups afterwards. */
    if (sh->notify_fd >= 0) {
        ssize_t w = write(sh->notify_fd, "E\n", 2);
        (void)w;
    }
    int code = !have_status ? 1 : WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    shim_term_finish(sh->term, sh->error[0] ? 127 : code, sh->error[0] ? sh->error : NULL);
    sh->term = NULL;
    if (!sh->cg.delegated) {
        cg_user_leave(&sh->host);
        if (sh->cpu_joined)
            cg_user_leave_cpu(&sh->host, NULL);
    }
    if (sh->spec.runsc)
        gvisor_delete(&sh->spec);
    jerr e = {0};
    if (cg_destroy(&sh->cg, &e) < 0)
        shim_log(sh, "cgroup cleanup: %s", e.msg);
}

static int shim_run(const char *dir)
{
    shim sh = {.dirfd = -1, .out_r = -1, .err_r = -1, .status_r = -1, .tfd_runtime = -1, .tfd_grace = -1, .tfd_warn = -1,
               .notify_fd = -1, .console_r = -1};
    /* Its own session: terminal signals aimed at joblet's process group must not reach jobs. */
    setsid();
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SHIM_SIGNAL_FORWARD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sh.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sh.dirfd < 0) {
        fprintf(stderr, "joblet-shim: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    int notify_fd = fcntl(SHIM_NOTIFY_FD, F_GETFD) >= 0 ? SHIM_NOTIFY_FD : -1;
    struct stat nst;
    if (notify_fd >= 0) {
        fcntl(notify_fd, F_SETFD, FD_CLOEXEC);
        sh.gated = fstat(notify_fd, &nst) == 0 && S_ISSOCK(nst.st_mode);
    }

    jerr e = {0};
    int rc = spec_load_fd(&sh.spec, SHIM_SPEC_FD, &e);
    /* kept open while the job runs: joblet-exec reads the job's spec here (/proc/<shim>/fd/5,
     * root only), the very spec the job was made from (exec_main.c); never the init's */
    fcntl(SHIM_SPEC_FD, F_SETFD, FD_CLOEXEC);
    if (rc < 0) {
        shim_log(&sh, "%s", e.msg);
        snprintf(sh.error, sizeof sh.error, "%s", e.msg);
        spec_free(&sh.spec); /* what it loaded before it refused */
        sh.spec.job_dir = xstrdup(dir);
        cg_stats none = {0};
        write_status(&sh, 0, 0, &none);
        spec_free(&sh.spec);
        return 1;
    }
    logw_init(&sh.out, sh.dirfd, "stdout", sh.spec.log_max_bytes);
    logw_init(&sh.err, sh.dirfd, "stderr", sh.spec.log_max_bytes);
    /* a requeued job's earlier runs' pieces come first */
    sh.log_seq = sh.out.last_seq > sh.err.last_seq ? sh.out.last_seq : sh.err.last_seq;
    log_budget *budget = map_budget(&sh);
    logw_limits(&sh.out, budget, sh.spec.log_floor);
    logw_limits(&sh.err, budget, sh.spec.log_floor);
    if (start_job(&sh, notify_fd) < 0 || sh.error[0]) {
        if (sh.init > 0) {
            int st;
            waitpid(sh.init, &st, 0);
            cg_destroy(&sh.cg, NULL);
        }
        sh.ended_ms = now_ms();
        if (!sh.started_ms)
            sh.started_ms = sh.ended_ms;
        shim_log(&sh, "job did not start: %s", sh.error);
        cg_stats none = {0};
        write_status(&sh, 0, 0, &none);
        if (sh.console_r >= 0)
            close(sh.console_r);
        /* what write_status records: start_failed, 127; or stopped (or left) before the
         * command ran, no code: 1, as rnx job run --follow says it */
        shim_term_finish(sh.term, sh.stopped_unrun || sh.not_run ? 1 : 127, sh.error);
        spec_free(&sh.spec);
        return 0;
    }
    sh.notify_fd = notify_fd;
    supervise(&sh);
    spec_free(&sh.spec);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--zygote")) {
        prepare(argc == 3 ? argv[2] : "joblet");
        return zygote_serve(0, shim_run);
    }
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: joblet-shim JOB_DIR | --zygote (started by joblet)\n");
        return 2;
    }
    jobinit_hide_arg = argv[1];
    return shim_run(argv[1]);
}
