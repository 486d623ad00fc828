/* The build sandbox (sandbox.h). The order matters: namespaces first, then the mount
 * propagation (slave: an unmount on the host, such as a job's volume going away, still
 * reaches the box; nothing mounted in the box reaches the host), then the box's own /tmp
 * and /proc once PID 1 exists. */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* linux/ioprio.h is not in every libc's headers; the ABI is stable */
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_BE 2
#define IOPRIO_PRIO_VALUE(class, data) (((class) << 13) | (data))

/* Lowers a limit to v (never raises one: the daemon may run without CAP_SYS_RESOURCE). */
static int set_limit(int res, uint64_t v, const char *what, jerr *e)
{
    struct rlimit rl;
    if (getrlimit(res, &rl) < 0)
        return jerr_sys(e, "read the build's %s limit", what);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)v)
        v = (uint64_t)rl.rlim_max;
    rl.rlim_cur = rl.rlim_max = (rlim_t)v;
    if (setrlimit(res, &rl) < 0)
        return jerr_sys(e, "set the build's %s limit to %llu", what, (unsigned long long)v);
    return 0;
}

int sandbox_enter(const sandbox_cfg *c, jerr *e)
{
    if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
        return jerr_sys(e, "create the build's namespaces");
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
        return jerr_sys(e, "make the build's mounts its own");
    /* the directories it works in, taken along before its /tmp hides them (they may be under
     * the host's /tmp) */
    int trees[SANDBOX_KEEP_MAX];
    for (size_t i = 0; i < c->nkeep; i++)
        if ((trees[i] = open_tree(AT_FDCWD, c->keep[i].path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)) < 0)
            return jerr_sys(e, "take %s into the build", c->keep[i].path);
    char opts[64];
    snprintf(opts, sizeof opts, "mode=1777,size=%llum", (unsigned long long)c->tmp_size_mb);
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
        return jerr_sys(e, "mount the build's private /tmp");
    for (size_t i = 0; i < c->nkeep; i++) {
        char at[128];
        snprintf(at, sizeof at, "/tmp/%s", c->keep[i].as);
        if (mkdir(at, 0700) < 0 || move_mount(trees[i], "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return jerr_sys(e, "mount %s at %s in the build", c->keep[i].path, at);
        close(trees[i]);
    }
    if (chdir("/") < 0) /* the directory it was started in may be hidden now */
        return jerr_sys(e, "chdir /");
    if (set_limit(RLIMIT_FSIZE, c->fsize_max, "file size", e) < 0 || set_limit(RLIMIT_NOFILE, c->nofile, "open files", e) < 0 ||
        set_limit(RLIMIT_CORE, 0, "core dump", e) < 0)
        return -1;
    if (setpriority(PRIO_PROCESS, 0, c->nice) < 0)
        return jerr_sys(e, "lower the build's CPU priority");
    /* best effort, lowest best-effort I/O priority: not every I/O scheduler has classes */
    syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 7));
    /* the keeper holds the write end of this pipe until it ends: PID 1 sees it closed when the
     * keeper ended before PID 1 could ask to die with it (its parent is outside its PID
     * namespace, so getppid() cannot tell) */
    int alive[2];
    if (pipe2(alive, O_CLOEXEC) < 0)
        return jerr_sys(e, "pipe");
    pid_t pid = fork();
    if (pid < 0)
        return jerr_sys(e, "fork the build's first process");
    if (pid == 0) {
        /* PID 1 of the box: dies with its keeper, and so does everything in the box */
        close(alive[1]);
        struct pollfd pf = {alive[0], POLLIN, 0};
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || poll(&pf, 1, 0) != 0)
            _exit(125);
        close(alive[0]);
        if (sethostname(c->hostname, strlen(c->hostname)) < 0)
            return jerr_sys(e, "set the build's hostname");
        if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
            return jerr_sys(e, "mount the build's /proc");
        return 0;
    }
    /* the keeper: what happens to the box is what happens to it */
    close(alive[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            _exit(125);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

int sandbox_run(char *const argv[], char *const envp[], int in_fd, int out_fd, jerr *e)
{
    pid_t pid = fork();
    if (pid < 0)
        return jerr_sys(e, "fork for %s", argv[0]);
    if (pid == 0) {
        int in = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in < 0 || dup2(in, 0) < 0 || (out_fd >= 0 && dup2(out_fd, 1) < 0))
            _exit(126);
        /* the tool runs at the box's priority but with signals as a fresh process has them */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvpe(argv[0], argv, envp);
        fprintf(stderr, "joblet: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    /* PID 1 reaps every orphan left in the box until the one it waits for is done */
    for (;;) {
        int st;
        pid_t got = waitpid(-1, &st, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return jerr_sys(e, "wait for %s", argv[0]);
        if (got == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
}
