/* A response streamed from a pipe (fdstream.h). */
#include "fdstream.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "../common/util.h"
#include "../core/loop.h"

struct fdstream {
    struct MHD_Connection *conn;
    int fd;
    fdstream_end_fn end;
    fdstream_gone_fn gone;
    void *arg;                /* NULL once detached */
    bool suspended, eof, hung_up, fd_watched;
    watch w_fd;               /* the pipe, while suspended for it */
    watch w_conn;             /* the client's socket, while suspended: a hang-up ends it */
    fdstream *next_suspended;
};

static fdstream *suspended;

/* Out of the suspended ones, its watches taken off. */
static void unsuspend(fdstream *s)
{
    s->suspended = false;
    if (s->fd_watched)
        loop_del(&s->w_fd);
    s->fd_watched = false;
    if (s->w_conn.fd >= 0)
        loop_del(&s->w_conn);
    for (fdstream **p = &suspended; *p; p = &(*p)->next_suspended)
        if (*p == s) {
            *p = s->next_suspended;
            break;
        }
}

static void resume(fdstream *s)
{
    if (!s->suspended)
        return;
    unsuspend(s);
    MHD_resume_connection(s->conn);
}

static void on_fd(watch *w, uint32_t events) { resume(w->data); }

static void on_conn(watch *w, uint32_t events)
{
    fdstream *s = w->data;
    s->hung_up = true;
    resume(s);
}

static void suspend(fdstream *s, bool for_fd)
{
    s->suspended = true;
    s->next_suspended = suspended;
    suspended = s;
    MHD_suspend_connection(s->conn);
    if (for_fd)
        s->fd_watched = loop_add(&s->w_fd) == 0;
    if (s->w_conn.fd >= 0)
        loop_add_events(&s->w_conn, EPOLLRDHUP);
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    fdstream *s = cls;
    if (s->hung_up || !s->arg)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    while (!s->eof) {
        ssize_t n = read(s->fd, buf, max);
        if (n > 0)
            return n;
        if (n == 0) {
            s->eof = true;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        suspend(s, true);
        return 0;
    }
    int whole = s->end(s->arg);
    if (whole == 0) {
        suspend(s, false);
        return 0;
    }
    return whole > 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void free_stream(void *cls)
{
    fdstream *s = cls;
    if (s->suspended)
        unsuspend(s);
    if (s->arg && s->gone)
        s->gone(s->arg);
    free(s);
}

struct MHD_Response *fdstream_response(struct MHD_Connection *conn, int fd, fdstream_end_fn end,
                                       fdstream_gone_fn gone, void *arg, fdstream **out)
{
    fdstream *s = xcalloc(1, sizeof *s);
    s->conn = conn;
    s->fd = fd;
    s->end = end;
    s->gone = gone;
    s->arg = arg;
    s->w_fd = (watch){fd, on_fd, s};
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    s->w_conn = (watch){ci ? ci->connect_fd : -1, on_conn, s};
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 256 << 10, reader, s, free_stream);
    if (!r) {
        free(s);
        return NULL;
    }
    *out = s;
    return r;
}

void fdstream_wake(fdstream *s) { resume(s); }

void fdstream_detach(fdstream *s)
{
    s->arg = NULL; /* the reader ends it at its next call; fd is never read again */
    resume(s);
}

void fdstream_stop_all(void)
{
    while (suspended) {
        suspended->hung_up = true;
        resume(suspended);
    }
}
