/* Connections held open by the server (stream.c): the one place that suspends and resumes a
 * libmicrohttpd connection, watches it for a hang-up meanwhile, and lets them all go when the
 * server stops. Two users of it:
 *   - a held request (park.h, http.c's body waiting for a pipe): the connection waits with
 *     nothing answered yet, and its handler runs again once released;
 *   - a streamed answer: its body is read from a pull source (common/pull.h: a job's log, the
 *     event feed, a build's log, a copy's pipe) as the client takes it, the connection held
 *     while the source has nothing.
 * The next user is a connection upgraded to a two-way byte stream (a terminal, issue 29): it
 * reads a source in one direction and writes into a sink in the other, held the same way. */
#ifndef JOBLET_API_STREAM_H
#define JOBLET_API_STREAM_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "../common/pull.h"
#include "../core/loop.h"

/* ---- held connections ------------------------------------------------------------------ */

typedef struct stream_held {
    struct MHD_Connection *conn;
    bool held;
    bool hung_up;             /* the client went away while it was held */
    void (*on_hangup)(void *arg); /* called once then (the hold is released first); may be NULL */
    void *arg;
    watch w_conn;
    watch w_fd;               /* an fd whose readiness releases it (stream_hold_fd) */
    bool fd_watched;
    struct stream_held *next;
} stream_held;

/* Suspends conn until stream_release. With on_hangup, a client that hangs up meanwhile
 * releases it too, and on_hangup is called; without, a hang-up is noticed when it is released
 * (a parked route must not run again before its work is done). */
void stream_hold(stream_held *h, struct MHD_Connection *conn, void (*on_hangup)(void *arg), void *arg);
/* The same, released also when fd is ready for events (EPOLLIN, EPOLLOUT). */
void stream_hold_fd(stream_held *h, struct MHD_Connection *conn, int fd, unsigned events,
                    void (*on_hangup)(void *arg), void *arg);
/* Resumes a held connection (nothing when it is not held). */
void stream_release(stream_held *h);
/* Released without a resume: the connection is gone (libmicrohttpd is closing it). */
void stream_forget(stream_held *h);
/* The client of a connection went away: its socket is closed at the other end (a unix socket's
 * peer closed it; a TCP peer reset it). For a request whose body is all in, held a turn at a time
 * while its work is done a slice per turn: libmicrohttpd reads no more of it, and would only
 * notice at the answer, after all of that work. A peer that shut down only its sending half
 * still reads the answer: not gone. */
bool stream_client_gone(struct MHD_Connection *conn);

/* ---- streamed answers ------------------------------------------------------------------ */

typedef struct stream stream;

/* Up to max bytes of the source into buf: how many, or 0 with *st set (common/pull.h). */
typedef size_t (*stream_read_fn)(void *src, char *buf, size_t max, enum pull_state *st);
/* The answer is over (sent whole, cut short, or its client gone): the source's to free. */
typedef void (*stream_close_fn)(void *src);

/* A chunked answer read from src in pieces of up to block bytes; *out (may be NULL) is its
 * handle, for stream_wake. src stays the caller's until close is called. */
struct MHD_Response *stream_response(struct MHD_Connection *conn, size_t block, stream_read_fn read,
                                     stream_close_fn close, void *src, stream **out);
/* The source may have more (its notify): a waiting stream reads again. As a pull_notify_fn. */
void stream_wake(void *s);
/* A stream whose source is a non-blocking fd: a read that found it empty waits for it. */
void stream_wait_fd(stream *s, int fd);

/* Every held connection and waiting stream is let go (streams end cut short): the server stops,
 * and libmicrohttpd stops only without suspended connections. From then on a hold is not taken:
 * the holder hears a hang-up at once (its on_hangup). */
void stream_stop_all(void);

#endif
