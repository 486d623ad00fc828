/* Held connections and streamed answers (stream.h). */
#include "stream.h"

#include <poll.h>

#include <stdlib.h>
#include <sys/epoll.h>

#include "../common/util.h"

static stream_held *holds; /* every connection held now */
static bool stopping;      /* stream_stop_all was called: nothing is held from now on */

static void unlist(stream_held *h)
{
    for (stream_held **p = &holds; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            return;
        }
}

/* Off the list, its watches taken off; the connection is not touched. */
static void unhold(stream_held *h)
{
    if (!h->held)
        return;
    h->held = false;
    if (h->w_conn.fd >= 0)
        loop_del(&h->w_conn);
    if (h->fd_watched)
        loop_del(&h->w_fd);
    h->fd_watched = false;
    unlist(h);
}

void stream_release(stream_held *h)
{
    if (!h->held)
        return;
    unhold(h);
    MHD_resume_connection(h->conn);
}

void stream_forget(stream_held *h) { unhold(h); }

bool stream_client_gone(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct pollfd p = {.fd = ci ? ci->connect_fd : -1, .events = 0};
    return p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static void on_conn(watch *w, uint32_t events)
{
    stream_held *h = w->data;
    h->hung_up = true;
    stream_release(h);
    if (h->on_hangup)
        h->on_hangup(h->arg);
}

static void on_fd(watch *w, uint32_t events) { stream_release(w->data); }

void stream_hold_fd(stream_held *h, struct MHD_Connection *conn, int fd, unsigned events,
                    void (*on_hangup)(void *arg), void *arg)
{
    if (h->held)
        return;
    if (stopping) {
        /* as if its client had gone: libmicrohttpd's stop aborts the daemon while a connection is
         * suspended (a copy's body that found its helper's pipe full again, once released) */
        h->hung_up = true;
        if (on_hangup)
            on_hangup(arg);
        return;
    }
    h->conn = conn;
    h->on_hangup = on_hangup;
    h->arg = arg;
    h->held = true;
    h->next = holds;
    holds = h;
    MHD_suspend_connection(conn);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    h->w_conn = (watch){ci && on_hangup ? ci->connect_fd : -1, on_conn, h};
    if (h->w_conn.fd >= 0 && loop_add_events(&h->w_conn, EPOLLRDHUP) < 0)
        h->w_conn.fd = -1;
    if (fd >= 0) {
        h->w_fd = (watch){fd, on_fd, h};
        h->fd_watched = loop_add_events(&h->w_fd, events) == 0;
    }
}

void stream_hold(stream_held *h, struct MHD_Connection *conn, void (*on_hangup)(void *arg), void *arg)
{
    stream_hold_fd(h, conn, -1, 0, on_hangup, arg);
}

/* ---- streamed answers ---- */

struct stream {
    stream_held hold;
    stream_read_fn read;
    stream_close_fn close;
    void *src;
    int wait_fd;              /* stream_wait_fd's, -1 none */
    bool cut;                 /* ends cut short at the next read (client gone, server stopping) */
};

static void on_stream_hangup(void *arg) { ((stream *)arg)->cut = true; }

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream *s = cls;
    if (s->cut || s->hold.hung_up)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    enum pull_state st = PULL_WAIT;
    size_t n = s->read(s->src, buf, max, &st);
    if (n)
        return (ssize_t)n;
    if (st == PULL_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (st == PULL_FAIL)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    stream_hold_fd(&s->hold, s->hold.conn, s->wait_fd, EPOLLIN, on_stream_hangup, s);
    return 0;
}

static void free_stream(void *cls)
{
    stream *s = cls;
    stream_forget(&s->hold);
    if (s->close)
        s->close(s->src);
    free(s);
}

struct MHD_Response *stream_response(struct MHD_Connection *conn, size_t block, stream_read_fn read,
                                     stream_close_fn close, void *src, stream **out)
{
    stream *s = xcalloc(1, sizeof *s);
    s->hold.conn = conn;
    s->hold.w_conn.fd = -1;
    s->read = read;
    s->close = close;
    s->src = src;
    s->wait_fd = -1;
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block, reader, s, free_stream);
    if (!r) {
        free(s);
        return NULL;
    }
    if (out)
        *out = s;
    return r;
}

void stream_wake(void *arg)
{
    stream *s = arg;
    stream_release(&s->hold);
}

void stream_wait_fd(stream *s, int fd) { s->wait_fd = fd; }

void stream_stop_all(void)
{
    stopping = true;
    while (holds) {
        stream_held *h = holds;
        h->hung_up = true; /* a stream's reader ends it cut short; a held request runs and answers */
        stream_release(h);
    }
}
