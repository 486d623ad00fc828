/* One connection of rnx to joblet, whatever carries it: the daemon's unix socket (conn.c) or a
 * TLS session over TCP to a remote node (conn_tls.c). client.c speaks HTTP over it and rnx
 * console carries a browser's bytes through it; neither knows which kind it holds. The unix
 * kind is a socket and nothing else: no TLS code is loaded or run for it. */
#ifndef JOBLET_CONN_H
#define JOBLET_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../common/err.h"

typedef struct conn conn;

/* What a kind of connection does. read and write block; they work like recv and send: read
 * gives how many bytes (0 at the end of the peer's data), write how many it took (at least
 * one), both -1 with errno set on failure (write: EPIPE or ECONNRESET when the peer is gone,
 * EINTR to be retried). pending: bytes already read off the socket and decrypted, which a
 * poll on the socket does not show. shutdown_write: no more bytes from us (the peer reads its
 * end); close frees the connection. */
typedef struct conn_ops {
    ssize_t (*read)(conn *c, void *buf, size_t cap);
    ssize_t (*write)(conn *c, const void *p, size_t n);
    size_t (*pending)(conn *c);
    int (*shutdown_write)(conn *c);
    void (*cork)(conn *c);     /* gather writes until uncork (one TLS record, not three) */
    int (*uncork)(conn *c);    /* 0, or -1 with errno as write's */
    void (*close)(conn *c);
    /* Closes a connection whose last answer was read whole (nothing more will come on it): a
     * keeper's may then serve another command (conn_agent.h). NULL: as close. */
    void (*release)(conn *c);
} conn_ops;

struct conn {
    const conn_ops *ops;
    int fd;                    /* the socket, for poll */
    bool kept;                 /* made before the command asked for it (a keeper's spare,
                                  conn_agent.h): the node may have closed it just now */
    char why[256];             /* what broke it, when a read or write fails for a reason worth
                                  telling ("the node sent the TLS alert ..."); "" otherwise */
};

static inline ssize_t conn_read(conn *c, void *buf, size_t cap) { return c->ops->read(c, buf, cap); }
static inline ssize_t conn_write(conn *c, const void *p, size_t n) { return c->ops->write(c, p, n); }
static inline size_t conn_pending(conn *c) { return c->ops->pending(c); }
static inline int conn_shutdown_write(conn *c) { return c->ops->shutdown_write(c); }
static inline void conn_cork(conn *c) { c->ops->cork(c); }
static inline int conn_uncork(conn *c) { return c->ops->uncork(c); }
static inline void conn_close(conn *c)
{
    if (c)
        c->ops->close(c);
}
static inline void conn_release(conn *c)
{
    if (c)
        (c->ops->release ? c->ops->release : c->ops->close)(c);
}

/* Sends all n bytes, again after EINTR and short writes; false when the peer is gone (errno
 * as conn_write's). */
bool conn_send_all(conn *c, const void *p, size_t n);
/* The same on a plain socket fd (send with MSG_NOSIGNAL: a peer gone raises no SIGPIPE). */
bool conn_fd_send_all(int fd, const void *p, size_t n);

/* Connects to the unix socket at path. NULL with e set (e->code the errno; e->msg says why,
 * naming the path) when it cannot. */
conn *conn_unix_dial(const char *path, jerr *e);

#endif
