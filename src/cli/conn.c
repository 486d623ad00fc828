/* The unix-socket kind of connection (conn.h): recv and send on the socket, as rnx always did.
 * The TLS kind is conn_tls.c. */
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/util.h"

static ssize_t unix_read(conn *c, void *buf, size_t cap) { return read(c->fd, buf, cap); }

static ssize_t unix_write(conn *c, const void *p, size_t n) { return send(c->fd, p, n, MSG_NOSIGNAL); }

static size_t unix_pending(conn *c) { return 0; }

static int unix_shutdown_write(conn *c) { return shutdown(c->fd, SHUT_WR); }

static void unix_cork(conn *c) {}

static int unix_uncork(conn *c) { return 0; }

static void unix_close(conn *c)
{
    close(c->fd);
    free(c);
}

static const conn_ops unix_ops = {unix_read, unix_write, unix_pending, unix_shutdown_write,
                                  unix_cork, unix_uncork, unix_close, NULL};

bool conn_send_all(conn *c, const void *p, size_t n)
{
    const char *b = p;
    while (n) {
        ssize_t w = conn_write(c, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

bool conn_fd_send_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

conn *conn_unix_dial(const char *path, jerr *e)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    e->http = 0;
    e->field[0] = 0;
    if (strlen(path) >= sizeof sa.sun_path) {
        e->code = ENAMETOOLONG;
        snprintf(e->msg, sizeof e->msg, "cannot reach joblet at %s: the path is too long for a unix socket", path);
        return NULL;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        conn *c = xcalloc(1, sizeof *c);
        c->ops = &unix_ops;
        c->fd = fd;
        return c;
    }
    e->code = errno;
    if (fd >= 0)
        close(fd);
    if (e->code == EACCES || e->code == EPERM)
        snprintf(e->msg, sizeof e->msg,
                 "cannot reach joblet at %s: permission denied; is your user allowed to use the socket? (%s)", path,
                 strerror(e->code));
    else
        snprintf(e->msg, sizeof e->msg, "cannot reach joblet at %s: is it running? (%s)", path, strerror(e->code));
    return NULL;
}
