#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim.h"

#define MAX_DIR 4096
#define NFDS 3 /* notify pipe, spec, device filter (optional) */

static void reap(int sig)
{
    int saved = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    errno = saved;
}

/* Puts the received fds at their fixed numbers (shim.h) whatever numbers they arrived with:
 * first all above the targets, so that no dup2 closes one still to be placed. */
static void place_fds(int fds[NFDS])
{
    static const int target[NFDS] = {SHIM_NOTIFY_FD, SHIM_SPEC_FD, SHIM_DEVFILTER_FD};
    for (int i = 0; i < NFDS; i++) {
        if (fds[i] < 0)
            continue;
        int high = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
        close(fds[i]);
        fds[i] = high;
    }
    for (int i = 0; i < NFDS; i++) {
        if (fds[i] < 0) {
            close(target[i]);
            continue;
        }
        dup2(fds[i], target[i]);
        close(fds[i]);
    }
}

static int receive(int sock, char *dir, int fds[NFDS])
{
    char cbuf[CMSG_SPACE(NFDS * sizeof(int))];
    struct iovec iov = {dir, MAX_DIR - 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    ssize_t n;
    do
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -1;
    dir[n] = 0;
    for (int i = 0; i < NFDS; i++)
        fds[i] = -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        memcpy(fds, CMSG_DATA(c), (k > NFDS ? NFDS : k) * sizeof(int));
    }
    return 0;
}

int zygote_serve(int sock, int (*run)(const char *dir))
{
    struct sigaction sa = {.sa_handler = reap, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &chld, NULL);
    static char dir[MAX_DIR];
    int fds[NFDS];
    while (receive(sock, dir, fds) == 0) {
        int32_t reply;
        if (fds[0] < 0 || fds[1] < 0) {
            reply = -EBADF;
        } else {
            sigprocmask(SIG_BLOCK, &chld, NULL);
            pid_t pid = fork();
            if (pid == 0) {
                signal(SIGCHLD, SIG_DFL);
                close(sock);
                place_fds(fds);
                _exit(run(dir));
            }
            sigprocmask(SIG_UNBLOCK, &chld, NULL);
            reply = pid < 0 ? -errno : pid;
        }
        for (int i = 0; i < NFDS; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        if (send(sock, &reply, sizeof reply, MSG_NOSIGNAL) != sizeof reply)
            break;
    }
    return 0;
}

static int spawn(const char *shim_path, const char *arg, const char *arg2, int stdin_fd, int notify_fd,
                 int spec_fd, int filter_fd, const int *stdio, pid_t *pid, jerr *e);

int shim_spawn(const char *shim_path, const char *arg, const char *arg2, int stdin_fd, int notify_fd,
               int spec_fd, int filter_fd, pid_t *pid, jerr *e)
{
    return spawn(shim_path, arg, arg2, stdin_fd, notify_fd, spec_fd, filter_fd, NULL, pid, e);
}

int shim_spawn_stdio(const char *shim_path, const char *arg, int notify_fd, int spec_fd, int filter_fd,
                     const int stdio[3], pid_t *pid, jerr *e)
{
    /* the dup2s onto 3-8 go in order: a source that sits at a later one's target (the daemon's
     * device filter at fd 3, a task's stdio at 6) would be clobbered first: every source is
     * copied above them */
    int src[6] = {notify_fd, spec_fd, filter_fd, stdio[0], stdio[1], stdio[2]}, hi[6], rc = -1;
    for (int i = 0; i < 6; i++)
        hi[i] = -1;
    for (int i = 0; i < 6; i++)
        if (src[i] >= 0 && (hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 16)) < 0) {
            jerr_sys(e, "keep fd %d for the shim", src[i]);
            goto out;
        }
    rc = spawn(shim_path, arg, NULL, -1, hi[0], hi[1], hi[2], hi + 3, pid, e);
out:
    for (int i = 0; i < 6; i++)
        if (hi[i] >= 0)
            close(hi[i]);
    return rc;
}

static int spawn(const char *shim_path, const char *arg, const char *arg2, int stdin_fd, int notify_fd,
                 int spec_fd, int filter_fd, const int *stdio, pid_t *pid, jerr *e)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (stdin_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (notify_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, notify_fd, SHIM_NOTIFY_FD);
    if (spec_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, spec_fd, SHIM_SPEC_FD);
    if (filter_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, filter_fd, SHIM_DEVFILTER_FD);
    for (int i = 0; stdio && i < 3; i++)
        posix_spawn_file_actions_adddup2(&fa, stdio[i], SHIM_STDIO_FD + i);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    /* Born with SIGTERM and SIGUSR1 (stop, kill) blocked: one that arrives before the shim set
     * up its signalfd must wait for it, not kill the shim and orphan the job. Forked shims
     * inherit this. */
    sigset_t mask, dflt;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGUSR1);
    sigaddset(&mask, SIGUSR2);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SHIM_SIGNAL_FORWARD);
    sigfillset(&dflt);
    posix_spawnattr_setsigmask(&at, &mask);
    posix_spawnattr_setsigdefault(&at, &dflt);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {"joblet-shim", (char *)arg, (char *)arg2, NULL};
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    int rc = posix_spawn(pid, shim_path, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        errno = rc;
        return jerr_sys(e, "start %s %s", shim_path, arg);
    }
    return 0;
}

int zygote_start(zygote *z, const char *shim_path, const char *cgroup_root, jerr *e)
{
    int sv[2];
    z->sock = -1;
    z->pid = -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return jerr_sys(e, "socketpair for the shim zygote");
    int rc = shim_spawn(shim_path, "--zygote", cgroup_root, sv[1], -1, -1, -1, &z->pid, e);
    close(sv[1]);
    if (rc < 0) {
        close(sv[0]);
        return -1;
    }
    z->sock = sv[0];
    /* A zygote that stops answering must not hang joblet's event loop. */
    struct timeval tv = {.tv_sec = 5};
    setsockopt(z->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return 0;
}

pid_t zygote_fork(zygote *z, const char *dir, int notify_fd, int spec_fd, int filter_fd, jerr *e)
{
    if (z->sock < 0)
        return jerr_set(e, ENOTCONN, "the shim zygote is not running");
    int fds[NFDS] = {notify_fd, spec_fd, filter_fd};
    size_t nfds = filter_fd >= 0 ? 3 : 2;
    char cbuf[CMSG_SPACE(NFDS * sizeof(int))];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = {(void *)dir, strlen(dir)};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                       .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    if (sendmsg(z->sock, &m, MSG_NOSIGNAL) < 0)
        return jerr_sys(e, "hand job %s to the shim zygote", dir);
    int32_t reply;
    ssize_t n;
    do
        n = recv(z->sock, &reply, sizeof reply, 0);
    while (n < 0 && errno == EINTR);
    if (n != sizeof reply) /* e->code ETIMEDOUT/EAGAIN: asked but not answered */
        return n < 0 ? jerr_sys(e, "no answer from the shim zygote") : jerr_set(e, EPIPE, "the shim zygote went away");
    if (reply < 0) {
        errno = -reply;
        return jerr_sys(e, "the shim zygote could not fork a shim");
    }
    return (pid_t)reply;
}

void zygote_stop(zygote *z)
{
    if (z->sock >= 0)
        close(z->sock); /* EOF: the zygote exits */
    z->sock = -1;
    z->pid = -1;
}
