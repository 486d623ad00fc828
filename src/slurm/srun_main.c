/* joblet-srun: Slurm's srun inside a joblet job, so that a batch script written for Slurm runs
 * its `srun python train.py` lines unchanged (docs/batch.md, "srun in a batch job"). joblet binds
 * it at /run/joblet/bin/srun in a job with Slurm's variables (--slurm-env, which rnx job batch
 * sets) and puts that directory first in the job's PATH (exec/spec_build.c). Bound there as
 * scontrol too, it answers `scontrol show hostnames`, the one thing batch scripts ask scontrol.
 *
 * A joblet job is one task on one machine, so a step is that task: srun reads its options
 * (common/srun.c says what each does), sets what srun tells a task of itself (SLURM_PROCID,
 * SLURM_NTASKS=1, SLURM_STEP_ID...), takes its share of the job's GPUs, opens the step's files,
 * and then becomes the command, which runs with everything else the job has; with -l it stays, prefixing each line of the command's
 * output with its task number, as srun does. It runs as the job's user, in the job: it does
 * nothing the job could not do itself. Statically linked (a runtime's tree may have another C
 * library). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/srun.h"

extern char **environ;

/* --export=NONE: only Slurm's variables stay, and those the option names (NAME alone keeps the
 * value srun has; NAME=VALUE is set after). */
static void keep_only_slurm(const sbatch_list *named)
{
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n++;
    char **keep = calloc(n + 1, sizeof *keep);
    if (!keep)
        return;
    size_t k = 0;
    for (char **e = environ; *e; e++) {
        bool mine = !strncmp(*e, "SLURM_", 6) || !strncmp(*e, "SLURMD_", 7);
        size_t nl = strcspn(*e, "=");
        for (size_t i = 0; i < named->n && !mine; i++)
            mine = !strchr(named->v[i], '=') && strlen(named->v[i]) == nl && !strncmp(named->v[i], *e, nl);
        if (mine)
            keep[k++] = *e;
    }
    environ = keep;
}

/* The job's steps are numbered in the order they start, 0, 1, 2..., as Slurm numbers them: the
 * next number is kept in a file of the job's private /tmp, taken and counted on under a lock,
 * so that steps started at once (srun ... &) each get their own. A job runs again (requeued)
 * with a fresh /tmp, and its steps from 0, as a requeued Slurm job's do. Where /tmp cannot keep
 * it (a read-only one), every step is 0, and the step's stderr says so. */
#define SRUN_STEPS "/tmp/.joblet-srun-steps"
static unsigned long long next_step(void)
{
    int fd = open(SRUN_STEPS, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    unsigned long long n = 0;
    char buf[32];
    if (fd < 0 || flock(fd, LOCK_EX) < 0) {
        fprintf(stderr, "srun: joblet: cannot number this step (%s: %s); it is step 0\n", SRUN_STEPS,
                strerror(errno));
    } else {
        ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
        if (r > 0) {
            buf[r] = 0;
            n = strtoull(buf, NULL, 10);
        }
        int l = snprintf(buf, sizeof buf, "%llu\n", n + 1);
        if (pwrite(fd, buf, (size_t)l, 0) != l || ftruncate(fd, l) < 0)
            fprintf(stderr, "srun: joblet: cannot count this step in %s: %s; the next may have its number\n",
                    SRUN_STEPS, strerror(errno));
    }
    if (fd >= 0)
        close(fd); /* (the lock with it) */
    return n;
}

/* When a process started (field 22 of /proc/PID/stat: clock ticks after boot), or 0 when it is
 * gone: a pid with another start time is another process. */
static unsigned long long started_at(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0)
        return 0;
    buf[r] = 0;
    char *p = strrchr(buf, ')'); /* (the command's name may hold spaces and parentheses) */
    if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X') /* (ended, not yet waited for: gone) */
        return 0;
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* A step with a share of the job's GPUs (srun --gpus=1 in a job of 2) sees only those: the
 * GPUs held by the job's running steps are kept in a file of its private /tmp, one line per step
 * ("PID START GPU,GPU"; a step whose process is gone holds nothing), read and written under a
 * lock, so that steps started at once (srun --gpus=1 a & srun --gpus=1 b &) take different
 * ones, and one that finds too few free waits for them, as Slurm's steps do (--overlap: it takes
 * the first of the job's, held or not, and holds none). The step's pid holds them: srun's, which
 * becomes the command (or waits for it, -l). Not a device boundary (a step could still open the
 * job's other GPUs, as a Slurm step can without ConstrainDevices). */
#define SRUN_GPUS "/tmp/.joblet-srun-gpus"
static int take_gpus(const char *visible, long long n, bool overlap, char *out, size_t len)
{
    bool told = false;
    for (;;) {
        int fd = open(SRUN_GPUS, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) < 0) {
            fprintf(stderr, "srun: error: cannot share the job's GPUs out (%s: %s)\n", SRUN_GPUS, strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        static char held[65536], kept[65536], taken[65536];
        ssize_t r = pread(fd, held, sizeof held - 1, 0);
        held[r > 0 ? r : 0] = 0;
        size_t nk = 0, nt = 0;
        kept[0] = taken[0] = 0;
        for (char *save = NULL, *line = strtok_r(held, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            long pid;
            unsigned long long start;
            int at = 0;
            if (sscanf(line, "%ld %llu %n", &pid, &start, &at) != 2 || !at || pid <= 0 || !start ||
                started_at(pid) != start)
                continue; /* that step ended (or the line is not one srun wrote): its GPUs are free */
            int wk = snprintf(kept + nk, sizeof kept - nk, "%s\n", line);
            int wt = snprintf(taken + nt, sizeof taken - nt, "%s%s", nt ? "," : "", line + at);
            if (wk < 0 || wt < 0 || nk + (size_t)wk >= sizeof kept || nt + (size_t)wt >= sizeof taken)
                break; /* (thousands of steps at once: the rest are not seen) */
            nk += (size_t)wk;
            nt += (size_t)wt;
        }
        /* --overlap: the first n of the job's, whoever holds them, and none held for it */
        int rc = srun_gpus_pick(visible, overlap ? NULL : taken, n, out, len);
        long self = (long)getpid();
        unsigned long long since = started_at(self);
        if (rc == 0 && !overlap) {
            int w = since ? snprintf(kept + nk, sizeof kept - nk, "%ld %llu %s\n", self, since, out) : -1;
            if (w < 0 || (nk += (size_t)w) >= sizeof kept || pwrite(fd, kept, nk, 0) != (ssize_t)nk ||
                ftruncate(fd, (off_t)nk) < 0)
                fprintf(stderr, "srun: joblet: cannot note this step's GPUs in %s; another step may take them too\n",
                        SRUN_GPUS);
        }
        close(fd); /* (the lock with it) */
        if (rc < 0) {
            fprintf(stderr, "srun: error: --gpus=%lld: the job's GPUs (CUDA_VISIBLE_DEVICES=%s) are fewer\n", n,
                    visible ? visible : "");
            return -1;
        }
        if (rc == 0)
            return 0;
        if (!told) /* as Slurm says it */
            fprintf(stderr, "srun: Job %s step creation temporarily disabled, retrying (its %lld GPU%s are in "
                            "other steps' use)\n",
                    getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "?", n, n == 1 ? "" : "s");
        told = true;
        usleep(100 * 1000);
    }
}

/* What srun tells its task: one task of one node, task 0 of its step, on this host. */
static void step_env(const char *host, const char *step)
{
    static const char *const one[][2] = {
        {"SLURM_STEP_ID", NULL},       {"SLURM_STEPID", NULL},        {"SLURM_PROCID", "0"},
        {"SLURM_LOCALID", "0"},        {"SLURM_NODEID", "0"},         {"SLURM_GTIDS", "0"},
        {"SLURM_NTASKS", "1"},         {"SLURM_NPROCS", "1"},         {"SLURM_STEP_NUM_TASKS", "1"},
        {"SLURM_STEP_NUM_NODES", "1"}, {"SLURM_TASKS_PER_NODE", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "1"},
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        setenv(one[i][0], one[i][1] ? one[i][1] : step, 1);
    static const char *const node[] = {"SLURM_NODELIST", "SLURM_JOB_NODELIST", "SLURM_STEP_NODELIST",
                                       "SLURMD_NODENAME"};
    for (size_t i = 0; i < sizeof node / sizeof node[0]; i++)
        setenv(node[i], host, 1);
}

static int open_file(const char *pattern, const srun_names *nm, int flags, const char *what)
{
    char path[4096];
    if (!srun_file_name(pattern, nm, path, sizeof path)) {
        fprintf(stderr, "srun: error: the %s file name '%.64s...' is too long\n", what, pattern);
        return -1;
    }
    int fd = open(path, flags | O_CLOEXEC, 0644);
    if (fd < 0)
        fprintf(stderr, "srun: error: cannot open the %s file %s: %s\n", what, path, strerror(errno));
    return fd;
}

/* fd as target for the command (open gave it O_CLOEXEC; dup2 clears it, and so must this when
 * open returned the target itself, the job's own having been closed). */
static int put_fd(int fd, int target)
{
    if (fd == target)
        return fcntl(fd, F_SETFD, 0) < 0 ? -1 : 0;
    return dup2(fd, target) < 0 ? -1 : 0;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* -l: the command's output and error, each line after "0: ", as srun labels task 0's. */
typedef struct labeled {
    int from, to;
    char buf[8192];
    size_t have;
} labeled;

static void label_flush(labeled *l, bool all)
{
    size_t start = 0;
    for (size_t i = 0; i < l->have; i++)
        if (l->buf[i] == '\n') {
            write_all(l->to, "0: ", 3);
            write_all(l->to, l->buf + start, i + 1 - start);
            start = i + 1;
        }
    if (all || (start == 0 && l->have == sizeof l->buf)) { /* the end, or a line longer than the buffer */
        if (start < l->have) {
            write_all(l->to, "0: ", 3);
            write_all(l->to, l->buf + start, l->have - start);
            if (all)
                write_all(l->to, "\n", 1);
        }
        start = l->have;
    }
    memmove(l->buf, l->buf + start, l->have - start);
    l->have -= start;
}

static volatile sig_atomic_t child_pid;

/* A signal srun gets while it labels is passed on to the command, as srun passes them to its
 * tasks; not one from the job's init (pid 1 here), which sends a stop or a time limit's signal
 * to every process of the job: the command has it already. */
static void forward(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    int saved = errno;
    if (child_pid > 0 && !(si && si->si_code == SI_USER && si->si_pid == 1))
        kill(child_pid, sig);
    errno = saved;
}

static int run_labeled(char *const *argv)
{
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
        fprintf(stderr, "srun: error: pipe: %s\n", strerror(errno));
        return 1;
    }
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
    sigset_t these, old;
    sigemptyset(&these);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&these, sigs[i]);
    /* held until child_pid is known: one that came between the fork and that would be lost */
    sigprocmask(SIG_BLOCK, &these, &old);
    struct sigaction sa = {.sa_sigaction = forward, .sa_flags = SA_RESTART | SA_SIGINFO};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    /* waitpid needs SIGCHLD not ignored (an ignoring parent leaves it so across exec) */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGCHLD, &dfl, NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "srun: error: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            sigaction(sigs[i], &dfl, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        char pidv[24];
        snprintf(pidv, sizeof pidv, "%d", (int)getpid());
        setenv("SLURM_TASK_PID", pidv, 1);
        if (dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
            _exit(2);
        execvp(argv[0], argv);
        fprintf(stderr, "srun: error: execve(): %s: %s\n", argv[0], strerror(errno));
        _exit(2);
    }
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(out[1]);
    close(err[1]);
    labeled l[2] = {{.from = out[0], .to = 1}, {.from = err[0], .to = 2}};
    int open_n = 2;
    while (open_n > 0) {
        struct pollfd p[2] = {{.fd = l[0].from, .events = POLLIN}, {.fd = l[1].from, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (l[i].from < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t r = read(l[i].from, l[i].buf + l[i].have, sizeof l[i].buf - l[i].have);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                label_flush(&l[i], true);
                close(l[i].from);
                l[i].from = -1;
                open_n--;
                continue;
            }
            l[i].have += (size_t)r;
            label_flush(&l[i], false);
        }
    }
    /* (after a poll that failed: the command must not block on a pipe no one reads while it is
     * waited for) */
    for (int i = 0; i < 2; i++)
        if (l[i].from >= 0)
            close(l[i].from);
    int st = 0;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
        ;
    if (w < 0) {
        fprintf(stderr, "srun: error: waitpid: %s\n", strerror(errno));
        return 1;
    }
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "srun: error: task 0: %s\n", strsignal(WTERMSIG(st)));
        return 128 + WTERMSIG(st);
    }
    return WEXITSTATUS(st);
}

/* srun itself: its exit code (the command's, when it stays for -l) unless it became the command. */
static int run(int argc, char **argv)
{
    srun_job job = srun_job_from_env(getenv);
    srun_plan p;
    jerr e = {0};
    if (srun_args(&p, argc - 1, argv + 1, &job, &e) < 0) {
        fprintf(stderr, "srun: error: %s\n", e.msg);
        return 1;
    }
    if (p.info) {
        printf(p.info == 'V' ? "srun (joblet): Slurm's srun inside a joblet job, where a step is the job's one task\n"
                             : "Usage: srun [OPTIONS] COMMAND [ARGS...]\n"
                               "In a joblet job, a step is the job's one task: -l, -o, -e, -i, --open-mode, -D and\n"
                               "--export are honoured, -n and -N above 1 refused, a step's share of GPUs is the\n"
                               "GPUs it sees, of CPUs or memory noted (docs/batch.md, \"srun in a batch job\").\n");
        srun_free(&p);
        return 0;
    }
    for (size_t i = 0; i < p.notes.n; i++)
        fprintf(stderr, "srun: joblet: %s\n", p.notes.v[i]);
    /* the job's GPUs, before --export=NONE takes its variables: the step's are set after */
    char gpus[4096];
    if (p.gpus > 0) {
        if (take_gpus(getenv("CUDA_VISIBLE_DEVICES"), p.gpus, p.overlap, gpus, sizeof gpus) < 0)
            return 1;
    }
    char host[256] = "localhost";
    if (gethostname(host, sizeof host) < 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    if (p.export_none)
        keep_only_slurm(&p.export_vars);
    for (size_t i = 0; i < p.export_vars.n; i++) {
        char *eq = strchr(p.export_vars.v[i], '=');
        if (!eq)
            continue; /* NAME alone: the value srun has (kept by keep_only_slurm too) */
        *eq = 0;
        setenv(p.export_vars.v[i], eq + 1, 1);
        *eq = '=';
    }
    if (p.gpus > 0) {
        setenv("CUDA_VISIBLE_DEVICES", gpus, 1); /* the job's names for them: CUDA's numbering, or UUIDs */
        setenv("GPU_DEVICE_ORDINAL", gpus, 1);
        setenv("SLURM_STEP_GPUS", gpus, 1);
    }
    char step[24];
    snprintf(step, sizeof step, "%llu", next_step());
    step_env(host, step);
    if (p.chdir && chdir(p.chdir) < 0) {
        fprintf(stderr, "srun: error: chdir %s: %s\n", p.chdir, strerror(errno));
        return 1;
    }
    char uid[24];
    snprintf(uid, sizeof uid, "%u", (unsigned)getuid());
    const char *user = getenv("USER");
    srun_names nm = {getenv("SLURM_JOB_ID"), host, user && *user ? user : uid, getenv("SLURM_JOB_NAME"),
                     getenv("SLURM_ARRAY_JOB_ID"), getenv("SLURM_ARRAY_TASK_ID"), step};
    int wflags = O_WRONLY | O_CREAT | (p.append ? O_APPEND : O_TRUNC);
    if (p.in) {
        int fd = open_file(p.in, &nm, O_RDONLY, "input");
        if (fd < 0 || put_fd(fd, 0) < 0)
            return 1;
    }
    /* -o alone takes the error too, as srun's does, and so does -e naming the same file (one
     * open file, not two writing over each other) */
    const char *errp = p.err && (!p.out || strcmp(p.err, p.out)) ? p.err : p.out;
    if (p.out) {
        int fd = open_file(p.out, &nm, wflags, "output");
        if (fd < 0 || put_fd(fd, 1) < 0)
            return 1;
        if (errp == p.out && put_fd(1, 2) < 0)
            return 1;
    }
    if (errp && errp != p.out) {
        int fd = open_file(errp, &nm, wflags, "error");
        if (fd < 0 || put_fd(fd, 2) < 0)
            return 1;
    }
    char **cmd = argv + 1 + p.cmd;
    bool label = p.label;
    srun_free(&p);
    if (label)
        return run_labeled(cmd);
    char pidv[24];
    snprintf(pidv, sizeof pidv, "%d", (int)getpid());
    setenv("SLURM_TASK_PID", pidv, 1);
    execvp(cmd[0], cmd);
    fprintf(stderr, "srun: error: execve(): %s: %s\n", cmd[0], strerror(errno));
    return 2;
}

/* scontrol in a job: `scontrol show hostnames [LIST]` (LIST: SLURM_JOB_NODELIST), the one use
 * batch scripts make of it (the head node of `srun torchrun --rdzv_endpoint`), one name a line;
 * anything else asks Slurm's controller, which a joblet job has not. */
static int scontrol_run(int argc, char **argv)
{
    if (argc < 3 || argc > 4 || strcmp(argv[1], "show") ||
        (strcmp(argv[2], "hostnames") && strcmp(argv[2], "hostname"))) {
        fprintf(stderr, "scontrol: error: a joblet job has no Slurm controller: only 'scontrol show hostnames "
                        "[LIST]' is answered in it (rnx job status ID tells of a job from outside)\n");
        return 1;
    }
    const char *list = argc == 4 ? argv[3] : getenv("SLURM_JOB_NODELIST");
    if (!list || !*list) {
        fprintf(stderr, "scontrol: error: no host list given and SLURM_JOB_NODELIST is not set\n");
        return 1;
    }
    sbatch_list names = {0};
    jerr e = {0};
    if (srun_hostnames(list, &names, &e) < 0) {
        fprintf(stderr, "scontrol: error: %s\n", e.msg);
        return 1;
    }
    for (size_t i = 0; i < names.n; i++)
        printf("%s\n", names.v[i]);
    sbatch_list_free(&names);
    return 0;
}

/* srun ends with _exit, its output flushed: nothing is left to free in a process that ends, and a
 * sanitizer build's leak check at exit needs ptrace, which the job's seccomp filter refuses (it
 * would turn every step's end into a failure). srun.c's leaks are the unit tests' and fuzz_srun's. */
int main(int argc, char **argv)
{
    const char *self = strrchr(argv[0], '/');
    self = self ? self + 1 : argv[0];
    int code = !strcmp(self, "scontrol") ? scontrol_run(argc, argv) : run(argc, argv);
    fflush(NULL);
    _exit(code);
}
