/* joblet-exec — runs a new process inside a running job for `rnx job exec` (docs/api.md,
 * "Interactive streams: exec"). joblet starts one per exec (core/job_exec.c) and relays its
 * socket to the client (api/attach.c); the framing is the terminal's (common/termframe.h).
 *
 *   joblet-exec JOB_ID SHIM_PID
 *     fd 3  the socket to joblet: frames both ways (shim_term.h serves it, as a job's shim does)
 *     fd 4  a pidfd of the job's init (its namespaces)
 *     fd 5  a pidfd of the job's shim (whose fd 5 is the job's spec)
 *     fd 6  the request (a memfd from joblet, made from a checked job_req), NUL-separated:
 *           "TTY STDIN NARGS NENV", WORKDIR ("" = the job's), then NARGS words (the command
 *           first), then NENV "NAME=value" (-e: on top of the job's environment)
 *
 * The plan comes from the job's own spec (the one its shim was given, read from the shim), not
 * from anything the client said, but for the command, its -e variables and -w:
 *   1. the job's cgroups and uid, gid, environment, working directory, seccomp filter
 *   2. the helper joins its owner's cgroup level (as joblet-copy: its tasks count there; and,
 *      on v1 and hybrid hosts, its CPU too: its cpu, cpuacct and cgroup2 cgroups, so that what
 *      it spends relaying is the user's, not joblet's) and the job's PID namespace for its
 *      children
 *   3. the process is born in the job's cgroup (clone3 CLONE_INTO_CGROUP on a cgroup2-only host;
 *      on v1 and hybrid hosts it writes itself into the job's cgroups first thing, before it
 *      runs anything of the job's), joins the job's mount, IPC, UTS, network and cgroup
 *      namespaces (so it has the job's root and devpts), makes its terminal there (with -t),
 *      becomes the job's user with no capability and no_new_privs, loads the job's seccomp
 *      filter and execs. The device filter is its cgroup's, as the job's.
 *   4. the helper relays its terminal (or pipes) to joblet until it ends, then sends its exit
 *      code (the exit frame) and exits with it. The process is killed when the client goes;
 *      it dies with the job anyway (its PID namespace's init ends it).
 * Under gVisor (the spec has runsc) there are no namespaces of joblet's to enter: once runsc
 * calls the container running, the child born in the job's cgroup becomes `runsc exec` with the
 * same plan as a process object (gvisor.h: uid/gid, the job's environment with -e on top, the
 * working directory, no capability, no_new_privs), and the Sentry starts the process beside the
 * job's. With -t the terminal is a host pty whose slave runsc hands to the Sentry. The helper
 * relays as in 4; when the client goes it kills the process through `runsc kill --pid`, and it
 * ends runsc exec when the job's init (runsc run) ends.
 * A refusal before the exec is a line on stderr ("joblet: exec: ...") and exit code 126 (127: no
 * such command), as a shell says it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/close_range.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/termframe.h"
#include "../common/util.h"
#include "cgroup.h"
#include "console.h"
#include "gvisor.h"
#include "isolate.h"
#include "oci.h"
#include "shim_term.h"
#include "spec.h"

#define SOCK_FD 3
#define INIT_FD 4
#define SHIM_FD 5
#define REQ_FD 6
#define REQ_MAX (1u << 20)

extern char **environ;

typedef struct exec_req {
    bool tty, stdin_open;
    const char *workdir;
    char **argv;              /* NULL-terminated */
    char **env;               /* the job's, -e on top; NULL-terminated */
} exec_req;

/* Before there is a stream: a line and an exit frame written straight to joblet's socket. */
_Noreturn static void refuse(int code, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + TERMFRAME_HDR, sizeof line - TERMFRAME_HDR - 2, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if (n > (int)(sizeof line - TERMFRAME_HDR - 3))
        n = (int)(sizeof line - TERMFRAME_HDR - 3);
    memcpy(line + TERMFRAME_HDR + n, "\r\n", 2);
    n += 2;
    termframe_put((unsigned char *)line, TERMFRAME_STDERR, (uint32_t)n);
    write_all(SOCK_FD, line, TERMFRAME_HDR + (size_t)n);
    unsigned char ex[TERMFRAME_HDR + 4];
    termframe_exit(ex, code);
    write_all(SOCK_FD, ex, sizeof ex);
    _exit(code);
}

/* The job's environment with the -e variables on top (a name given replaces the job's). */
static char **merge_env(char **job, char **extra, size_t nextra)
{
    size_t n = 0;
    while (job && job[n])
        n++;
    char **out = xcalloc(n + nextra + 1, sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(job[i], "=");
        bool replaced = false;
        for (size_t x = 0; x < nextra && !replaced; x++)
            replaced = !strncmp(extra[x], job[i], len) && extra[x][len] == '=';
        if (!replaced)
            out[k++] = job[i];
    }
    for (size_t x = 0; x < nextra; x++)
        out[k++] = extra[x];
    return out;
}

static void read_req(exec_req *r, const job_spec *s)
{
    char *buf = xmalloc(REQ_MAX + 1);
    ssize_t len = pread(REQ_FD, buf, REQ_MAX, 0);
    if (len <= 0)
        refuse(126, "joblet: exec: no request");
    buf[len] = 0;
    close(REQ_FD);
    char *p = buf, *end = buf + len;
    unsigned tty, in;
    size_t nargs, nenv;
    if (sscanf(p, "%u %u %zu %zu", &tty, &in, &nargs, &nenv) != 4 || nargs < 1 || nargs > 65536 || nenv > 65536)
        refuse(126, "joblet: exec: a request that is not one");
    r->tty = tty;
    r->stdin_open = in;
    char **words = xcalloc(nargs + nenv + 2, sizeof *words);
    for (size_t i = 0; i < nargs + nenv + 2; i++) {
        if (p >= end)
            refuse(126, "joblet: exec: the request ends early");
        words[i] = p;
        p += strlen(p) + 1;
    }
    r->workdir = words[1][0] ? words[1] : s->workdir;
    r->argv = xcalloc(nargs + 1, sizeof *r->argv);
    memcpy(r->argv, words + 2, nargs * sizeof *words);
    r->env = merge_env(s->env, words + 2 + nargs, nenv);
}

/* The job's spec, from its shim: the shim holds it on its fd SHIM_SPEC_FD while the job runs. */
static void load_spec(job_spec *s, const char *id, pid_t shim)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/5", (int)shim);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        refuse(126, "joblet: exec: job %.8s's spec cannot be read (%s): was it started by an older joblet?", id,
               strerror(errno));
    /* the shim is still the one joblet meant (its pid not reused since the pidfd was made) */
    if (syscall(SYS_pidfd_send_signal, SHIM_FD, 0, NULL, 0) < 0)
        refuse(126, "joblet: exec: job %.8s is ending", id);
    jerr e = {0};
    if (spec_load_fd(s, fd, &e) < 0)
        refuse(126, "joblet: exec: job %.8s's spec: %s", id, e.msg);
    close(fd);
    if (strcmp(s->id, id))
        refuse(126, "joblet: exec: the shim of pid %d does not run job %.8s", (int)shim, id);
}

/* The process, from its birth to its exec; errors go up the sync pipe (close-on-exec: EOF is
 * success). Only syscalls and what was allocated before the fork. */
_Noreturn static void child(const job_spec *s, const cg_host *uh, const cg_job *cg, bool born_in, const exec_req *r,
                            const struct sock_fprog *prog, int sync_w, int con_w, int in_r, int out_w, int err_w)
{
    jerr e = {0};
    const char *stage = "cgroup";
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* out of the helper's CPU cgroups (its owner's), where the job has no cgroup of its own too */
    if (!born_in && ((uh && cg_user_leave_cpu(uh, &e) < 0) || cg_enter(cg, &e) < 0))
        goto fail;
    stage = "namespaces";
    if (setns(INIT_FD, CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | CLONE_NEWCGROUP) < 0) {
        jerr_sys(&e, "enter the job's namespaces (has it ended?)");
        goto fail;
    }
    /* setns put the root and the working directory at the namespace's root: the job's */
    int slave = -1;
    if (r->tty) {
        stage = "terminal";
        int master;
        if (console_open(s->uid, s->gid, &master, &slave, &e) < 0) {
            /* the job's devpts has max= (mounts.c): the bound, not a full disk, said so (a job
             * an older joblet started has none: the machine's ptys are all taken) */
            if (e.code == ENOSPC && s->ptys_max)
                jerr_set(&e, ENOSPC, "the job has all %llu terminals open that it may (jobs.ptys_max): one of "
                                     "them must close first, or exec without -t", (unsigned long long)s->ptys_max);
            else if (e.code == ENOSPC)
                jerr_set(&e, ENOSPC, "the machine's terminals are all taken (kernel.pty.max): exec without -t");
            goto fail;
        }
        if (console_send(con_w, master, &e) < 0)
            goto fail;
        close(master);
        if (console_take(slave, &e) < 0)
            goto fail;
    } else {
        stage = "start";
        int in = in_r >= 0 ? in_r : open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in < 0 || dup2(in, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0) {
            jerr_sys(&e, "connect stdin/stdout/stderr");
            goto fail;
        }
    }
    syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    stage = "start";
    if (s->user_procs_max &&
        setrlimit(RLIMIT_NPROC, &(struct rlimit){s->user_procs_max, s->user_procs_max}) < 0) {
        jerr_sys(&e, "RLIMIT_NPROC");
        goto fail;
    }
    stage = "drop privileges";
    if (caps_drop_and_setuid(s->uid, s->gid, s->groups, s->ngroups, &e) < 0)
        goto fail;
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* (a change of credentials clears it: set again) */
    stage = "working directory";
    if (chdir(r->workdir) < 0) { /* as the job's user: where the job itself may go */
        jerr_sys(&e, "%s", r->workdir);
        goto fail;
    }
    stage = "seccomp";
    if (seccomp_apply(prog, &e) < 0)
        goto fail;
    environ = r->env; /* execvp looks the command up in the job's PATH */
    execvp(r->argv[0], r->argv);
    int err = errno;
    jerr_sys(&e, "%s", r->argv[0]);
    char msg[1100];
    int n = snprintf(msg, sizeof msg, "%c%s", err == ENOENT ? 'N' : 'E', e.msg);
    write_all(sync_w, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
    _exit(err == ENOENT ? 127 : 126);
fail:;
    char m[1100];
    int k = snprintf(m, sizeof m, "E%s: %s", stage, e.msg);
    write_all(sync_w, m, (size_t)(k < (int)sizeof m ? k : (int)sizeof m - 1));
    _exit(126);
}

/* Under gVisor: the child becomes `runsc exec` (gvisor.h), born in the job's cgroup (or put
 * there first thing), with the process's stdio: the terminal's slave (made on the host by the
 * helper: runsc hands it to the Sentry, which makes it the process's terminal) or the pipes. */
_Noreturn static void gvisor_child(const job_spec *s, const cg_host *uh, const cg_job *cg, bool born_in,
                                   gvisor_exec_fds *f, int sync_w)
{
    jerr e = {0};
    const char *stage = "cgroup";
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (born_in || ((!uh || cg_user_leave_cpu(uh, &e) == 0) && cg_enter(cg, &e) == 0)) {
        stage = "runsc exec";
        gvisor_exec(s, f, &e);
    }
    char m[1100];
    int k = snprintf(m, sizeof m, "E%s: %s", stage, e.msg);
    write_all(sync_w, m, (size_t)(k < (int)sizeof m ? k : (int)sizeof m - 1));
    _exit(126);
}

/* The memfds of a gVisor exec: the process object, the pid file, runsc's log. */
static void gvisor_fds(const job_spec *s, const exec_req *r, gvisor_exec_fds *f)
{
    f->process = memfd_create("joblet-exec-process", MFD_CLOEXEC);
    f->pid_file = memfd_create("joblet-exec-pid", MFD_CLOEXEC);
    f->log = memfd_create("joblet-exec-runsc-log", MFD_CLOEXEC);
    if (f->process < 0 || f->pid_file < 0 || f->log < 0)
        refuse(126, "joblet: exec: memfd: %s", strerror(errno));
    json_t *o = oci_exec_process(s, r->argv, r->env, r->workdir, r->tty);
    char *txt = json_dumps(o, 0);
    json_decref(o);
    if (!txt || write_all(f->process, txt, strlen(txt)) != strlen(txt))
        refuse(126, "joblet: exec: write the process for runsc: %s", strerror(errno));
    free(txt);
}

/* The client went: the process in the sandbox is killed by its pid, which runsc writes once
 * it started it (waited for while runsc exec runs, a bounded while) */
static void gvisor_kill_started(const job_spec *s, int runsc_pidfd, int pid_file)
{
    for (int i = 0; i < 200; i++) {
        pid_t pid = gvisor_exec_pid(pid_file);
        if (pid > 0) {
            gvisor_kill_pid(s, pid, SIGKILL);
            return;
        }
        struct pollfd p = {runsc_pidfd, POLLIN, 0};
        if (poll(&p, 1, 10) > 0)
            return; /* runsc exec ended first */
    }
}

static void nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

#define READ_PIECE (64u << 10)   /* one read of the process's output */
#define TAIL_MAX (1u << 20)      /* after its end: the most read of what is left (its children may write on) */
#define TAIL_WAIT_MS 1000        /* then: the most the client may take to make room */

/* Reads what fd has now into the stream, as long as the client has room for it (the rest waits
 * in the pipe, and the process waits for its client: nothing is dropped); false at its end. */
static bool pass_output(shim_term *t, int fd, int ch)
{
    char buf[READ_PIECE];
    for (int i = 0; i < 16 && shim_term_room(t, sizeof buf); i++) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return true;
        if (n <= 0)
            return false; /* EOF, or EIO: a terminal whose every slave is closed */
        shim_term_output(t, ch, buf, (size_t)n);
    }
    return true;
}

/* After the process ended: what it wrote last (not what its children, if they go on, write
 * after: at most TAIL_MAX), as the client makes room for it; a client that takes nothing for
 * TAIL_WAIT_MS is given no more of it. */
static void pass_tail(shim_term *t, int fd, int ch)
{
    char buf[READ_PIECE];
    for (size_t got = 0; got < TAIL_MAX && shim_term_clients(t);) {
        if (!shim_term_room(t, sizeof buf)) {
            struct pollfd p = {shim_term_fd(t), POLLIN, 0};
            int r = poll(&p, 1, TAIL_WAIT_MS);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return;
            shim_term_run(t);
            continue;
        }
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* all of it (EAGAIN), its end, or EIO */
        shim_term_output(t, ch, buf, (size_t)n);
        got += (size_t)n;
    }
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* joblet's end ends the stream: the exec goes too */
    uint64_t shim_pid;
    if (argc != 3 || strlen(argv[1]) != 36 || parse_u64(argv[2], &shim_pid) < 0 || !shim_pid ||
        shim_pid > INT32_MAX) {
        fprintf(stderr, "usage: joblet-exec JOB_ID SHIM_PID (fds 3-6 from joblet)\n");
        return 2;
    }
    const char *id = argv[1];
    job_spec s;
    load_spec(&s, id, (pid_t)shim_pid);
    exec_req r;
    read_req(&r, &s);

    /* 1-2: the cgroups, the owner's level, the filter */
    jerr e = {0};
    cg_host host, uh;
    const cg_host *cpu_in = NULL; /* the owner's level whose CPU cgroups the helper is in */
    cg_job cg;
    if (cg_host_detect(&host, s.cgroup_root, &e) < 0)
        refuse(126, "joblet: exec: %s", e.msg);
    if (s.cgroup_given) {
        if (cg_job_given(&host, s.id, s.cgroup_given, &cg, &e) < 0)
            refuse(126, "joblet: exec: %s", e.msg);
    } else {
        cg_user_job_paths(&host, (uint32_t)s.owner_uid, s.id, &uh, &cg);
        if (cg_user_enter(&uh, &e) < 0 || cg_user_enter_cpu(&uh, &e) < 0)
            refuse(126, "joblet: exec: %s", e.msg);
        cpu_in = &uh;
        /* the v1 controllers none of the job's limits needs were not made for it (cgroup.h):
         * the process stays where the job's init is for those, the hierarchy's root, but for
         * cpu, where the init is in the user's level (cg_job_cpu_level) */
        for (int c = 0; c < CGC_N; c++)
            if (cg.v1_path[c][0] && access(cg.v1_path[c], F_OK) < 0)
                cg.v1_path[c][0] = 0;
        cg_job_cpu_level(&cg);
        /* nor a freezer cgroup for a job that an older joblet started on a v1-only host */
        if (cg.freezer_path[0] && access(cg.freezer_path, F_OK) < 0)
            cg.freezer_path[0] = 0;
        if (cg.unified_path[0] && access(cg.unified_path, F_OK) < 0)
            refuse(126, "joblet: exec: job %.8s's cgroup %s is gone: is it ending?", id, cg.unified_path);
    }
    struct sock_fprog prog;
    if (seccomp_default_program(&prog, s.kernel_aio, &e) < 0)
        refuse(126, "joblet: exec: seccomp: %s", e.msg);
    caps_last_cap(); /* read /proc/sys now: the child's /proc is the job's */
    bool gv = s.runsc != NULL;
    gvisor_exec_fds gf = {-1, -1, -1, -1, -1, -1};
    int master = -1, slave = -1;
    if (gv) {
        /* runsc's control socket for the sandbox is in the network namespace runsc run was
         * started in (its own: gvisor.c); runsc state, exec and kill reach it from there */
        if (setns(INIT_FD, CLONE_NEWNET) < 0)
            refuse(126, "joblet: exec: enter job %.8s's sandbox's network namespace: %s (has it ended?)", id,
                   strerror(errno));
        /* on the host's network, its runsc commands enter the sandbox's user namespace (gvisor.h) */
        if (s.net_host)
            gvisor_use_sandbox_user(INIT_FD);
        if (gvisor_wait_running(&s, INIT_FD, &e) < 0)
            refuse(126, "joblet: exec: %s", e.msg);
        gvisor_fds(&s, &r, &gf);
        /* the terminal: a host one, for runsc to hand to the Sentry (the process never sees
         * the host's devpts: it gets the open slave, as its kernel's terminal) */
        if (r.tty && console_open(0, 0, &master, &slave, &e) < 0)
            refuse(126, "joblet: exec: terminal: %s", e.msg);
    }

    int sync[2], con[2] = {-1, -1}, in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    if (pipe2(sync, O_CLOEXEC) < 0 ||
        (r.tty && !gv && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, con) < 0) ||
        (!r.tty && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)) ||
        (!r.tty && r.stdin_open && pipe2(in, O_CLOEXEC) < 0))
        refuse(126, "joblet: exec: pipe: %s", strerror(errno));
    /* its children are born in the job's PID namespace: they see the job's processes (only
     * the one: the helper goes back to its own for any other, such as LeakSanitizer's tracer
     * at exit, which would otherwise hold the job's init in its end) */
    int own_pidns = gv ? -1 : open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (!gv && (own_pidns < 0 || setns(INIT_FD, CLONE_NEWPID) < 0))
        refuse(126, "joblet: exec: enter job %.8s's PID namespace: %s (has it ended?)", id, strerror(errno));

    /* 3: born in the job's cgroup */
    int cgfd = -1;
    if (host.layout == CG_V2 && cg.unified_path[0])
        cgfd = open(cg.unified_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int pidfd = -1;
    struct clone_args ca = {.flags = CLONE_PIDFD | (cgfd >= 0 ? CLONE_INTO_CGROUP : 0),
                            .pidfd = (uint64_t)(uintptr_t)&pidfd, .exit_signal = SIGCHLD,
                            .cgroup = (uint64_t)(cgfd >= 0 ? cgfd : 0)};
    pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
    if (pid < 0)
        refuse(126, "joblet: exec: start a process in job %.8s: %s%s", id, strerror(errno),
               errno == EAGAIN ? " (the job's pids limit)" : "");
    if (pid == 0 && gv) {
        int null = in[0] >= 0 || r.tty ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
        gf.in = r.tty ? slave : in[0] >= 0 ? in[0] : null;
        gf.out = r.tty ? slave : out[1];
        gf.err = r.tty ? slave : err[1];
        gvisor_child(&s, cpu_in, &cg, cgfd >= 0, &gf, sync[1]);
    }
    if (pid == 0)
        child(&s, cpu_in, &cg, cgfd >= 0, &r, &prog, sync[1], con[1], in[0], out[1], err[1]);
    if (!gv && setns(own_pidns, CLONE_NEWPID) < 0)
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0); /* (cannot happen: it is our own) */
    if (own_pidns >= 0)
        close(own_pidns);
    int theirs[] = {sync[1], con[1], in[0], out[1], err[1], slave};
    for (size_t i = 0; i < ARRAY_LEN(theirs); i++)
        if (theirs[i] >= 0)
            close(theirs[i]);
    if (cgfd >= 0)
        close(cgfd);

    /* 4: the stream */
    shim_term *t = shim_term_new(-1, r.tty, &e);
    if (!t) {
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        refuse(126, "joblet: exec: %s", e.msg);
    }
    if (r.tty && !gv && console_recv(con[0], &master, &e) < 0)
        master = -1; /* the child failed before: the sync pipe says why */
    if (con[0] >= 0)
        close(con[0]);
    char why[1100];
    ssize_t n, got = 0;
    while ((n = read(sync[0], why + got, sizeof why - 1 - (size_t)got)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        got += n;
    }
    close(sync[0]);
    shim_term_add(t, SOCK_FD);
    if (got > 0) {
        why[got] = 0;
        int st = 0;
        waitpid(pid, &st, 0);
        char msg[1200];
        snprintf(msg, sizeof msg, "exec: %s", why + 1);
        shim_term_finish(t, why[0] == 'N' ? 127 : 126, msg);
        return why[0] == 'N' ? 127 : 126;
    }
    int ofd = r.tty ? master : out[0], efd = r.tty ? -1 : err[0];
    if (r.tty && master >= 0)
        shim_term_set_input(t, dup(master));
    else if (r.stdin_open)
        shim_term_set_input(t, in[1]);
    if (ofd >= 0)
        nonblock(ofd);
    if (efd >= 0)
        nonblock(efd);
    bool killed = false;
    for (;;) {
        /* under gVisor the job's init is runsc run: its end is the sandbox's, and runsc exec
         * would wait on with a process that is no more */
        /* its output only while the client has room for it: the process waits for its client
         * (as under docker exec), rather than the helper reading and dropping what the client
         * does not take, at the CPU's pace, outside the job's cgroup */
        bool room = shim_term_room(t, READ_PIECE);
        struct pollfd p[5] = {{shim_term_fd(t), POLLIN, 0}, {pidfd, POLLIN, 0}, {room ? ofd : -1, POLLIN, 0},
                              {room ? efd : -1, POLLIN, 0}, {gv && !killed ? INIT_FD : -1, POLLIN, 0}};
        if (poll(p, 5, -1) < 0 && errno != EINTR)
            break;
        if (p[4].revents) {
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
            killed = true;
        }
        if (p[2].revents && !pass_output(t, ofd, TERMFRAME_STDOUT)) {
            close(ofd);
            ofd = -1;
        }
        if (p[3].revents && !pass_output(t, efd, TERMFRAME_STDERR)) {
            close(efd);
            efd = -1;
        }
        if (p[0].revents)
            shim_term_run(t);
        if (!shim_term_clients(t) && !killed) {
            /* the client went (or joblet ended the session): the process goes too; under
             * gVisor it is the Sentry's, killed through runsc (runsc exec itself passes no
             * SIGKILL on), once runsc says which it is */
            if (gv)
                gvisor_kill_started(&s, pidfd, gf.pid_file);
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
            killed = true;
        }
        if (p[1].revents)
            break;
    }
    siginfo_t si = {0};
    waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED);
    if (ofd >= 0)
        pass_tail(t, ofd, TERMFRAME_STDOUT);
    if (efd >= 0)
        pass_tail(t, efd, TERMFRAME_STDERR);
    int code = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
    char why_gv[1100];
    if (gv && si.si_code == CLD_EXITED &&
        gvisor_exec_failure(si.si_status << 8, gf.pid_file, gf.log, why_gv, sizeof why_gv)) {
        /* runsc could not start it: 127 when there is no such command, as a shell says */
        code = strstr(why_gv, "no such file or directory") ? 127 : 126;
        char msg[1200];
        snprintf(msg, sizeof msg, "exec: runsc: %s", why_gv);
        shim_term_finish(t, code, msg);
        return code;
    }
    shim_term_finish(t, code, NULL);
    return code & 0xff;
}
