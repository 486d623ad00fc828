/* A job's terminal, made inside the job (console.h). */
#include "console.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

int console_open(uid_t uid, gid_t gid, int *master, int *slave, jerr *e)
{
    *master = *slave = -1;
    /* the job's /dev/ptmx: a link to its own devpts instance's ptmx (mounts.c) */
    int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0)
        return jerr_sys(e, "open the job's /dev/ptmx");
    int unlock = 0;
    if (ioctl(m, TIOCSPTLCK, &unlock) < 0) {
        jerr_sys(e, "unlock the job's pty");
        close(m);
        return -1;
    }
    int s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0) {
        jerr_sys(e, "open the job's pty slave (TIOCGPTPEER)");
        close(m);
        return -1;
    }
    /* the job's user may set its modes, as login(1) gives a user their terminal */
    if (fchown(s, uid, gid) < 0 || fchmod(s, 0620) < 0) {
        jerr_sys(e, "give the job's pty to uid %u", (unsigned)uid);
        close(s);
        close(m);
        return -1;
    }
    *master = m;
    *slave = s;
    return 0;
}

int console_send(int sock, int fd, jerr *e)
{
    char byte = 'm', cbuf[CMSG_SPACE(sizeof(int))];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = {&byte, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t n;
    do
        n = sendmsg(sock, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : jerr_sys(e, "hand the job's pty to its shim");
}

int console_recv(int sock, int *fd, jerr *e)
{
    char byte, cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&byte, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    ssize_t n;
    do
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return jerr_sys(e, "receive the job's pty");
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (n != 1 || !c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(sizeof(int)))
        return jerr_set(e, EPROTO, "the job's init sent no pty");
    memcpy(fd, CMSG_DATA(c), sizeof *fd);
    return 0;
}

int console_take(int slave, jerr *e)
{
    if (setsid() < 0)
        return jerr_sys(e, "new session for the terminal");
    if (ioctl(slave, TIOCSCTTY, 0) < 0)
        return jerr_sys(e, "make the pty the controlling terminal");
    for (int fd = 0; fd < 3; fd++)
        if (dup2(slave, fd) < 0)
            return jerr_sys(e, "connect the terminal to fd %d", fd);
    return 0;
}
