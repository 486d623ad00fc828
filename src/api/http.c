/* HTTP/1.1 on the unix socket with libmicrohttpd, driven from the daemon's own event loop
 * (MHD_USE_EPOLL without an internal thread), so request handlers run on the thread that
 * owns the state. */
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/parse.h"
#include "../common/util.h"
#include "../core/counters.h"
#include "../core/incoming.h"
#include "../core/loop.h"
#include "jobs_list.h"
#include "park.h"
#include "reply.h"
#include "stream.h"
#include "uploads.h"

static struct MHD_Daemon *mhd;
static watch w_mhd;
static uint64_t body_limit;
static char sock_path[256];

typedef struct conn_state {
    char *body;
    size_t len, cap;
    bool too_large;
    bool busy;              /* refused: other requests already hold the body budget */
    put_state *put;         /* PUT /v1/uploads/{id}: its bytes go to disk, never into body */
    park_slot park;         /* parked while the route waits (park.h) */
    int sink_fd;            /* the body goes to this file (routes_body_sink), -1: to memory */
    uint64_t sink_max;
    int sink_error;         /* errno of a failed write */
    bool sink_pipe;         /* the sink is a pipe to a process (routes_body_sink 2) */
    stream_held sink_hold;  /* held until the pipe has room */
    struct MHD_Connection *conn;
    http_ctx ctx;           /* the route's own (http.h) */
} conn_state;

/* The client went away while its body waited for the pipe: what is left of it is dropped. */
static void sink_hung_up(void *arg) { ((conn_state *)arg)->sink_error = ECONNRESET; }

/* Writes what the pipe takes now; the rest waits, the connection suspended until there is
 * room (the data stays with libmicrohttpd, which calls again with it). */
static void sink_pipe_write(conn_state *st, const char *p, size_t *left)
{
    while (*left && !st->sink_error) {
        ssize_t w = write(st->sink_fd, p, *left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            stream_hold_fd(&st->sink_hold, st->conn, st->sink_fd, EPOLLOUT, sink_hung_up, st);
            return;
        }
        if (w <= 0) {
            st->sink_error = w < 0 ? errno : EIO;
            break;
        }
        p += w;
        *left -= (size_t)w;
        st->len += (size_t)w;
    }
}

/* Bytes held for request bodies across all connections. One caller opening many uploads at
 * once must not push a root daemon into the OOM killer: past the budget, answer 503. */
static uint64_t buffered, buffer_budget;

static int peer_creds(struct MHD_Connection *c, uid_t *uid, gid_t *gid)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return -1;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    conn_state *st = *con_cls;
    if (!st) {
        /* the headers are in: the only moment before the body when an answer can be queued */
        *con_cls = st = xcalloc(1, sizeof *st);
        st->sink_fd = -1;
        st->conn = c;
        const union MHD_ConnectionInfo *sc = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        reply_conn *rc = sc ? sc->socket_context : NULL;
        if (rc) {
            snprintf(rc->method, sizeof rc->method, "%s", method);
            rc->own_commit = false;
        }
        uid_t uid;
        gid_t gid;
        jerr e = {0};
        if (uploads_is_put(method, url)) {
            if (peer_creds(c, &uid, &gid) < 0) {
                jerr_http(&e, 403, "cannot read the caller's credentials (SO_PEERCRED)");
                return http_reply_error(c, &e);
            }
            return uploads_begin(c, url, uid, &st->put);
        }
        /* a route that takes its body as a file (an archive, past server.max_body_bytes), or
         * refuses it unread, says so now */
        request r = {.conn = c, .method = method, .path = url, .body_fd = -1, .ctx = &st->ctx};
        uid_t ruid;
        gid_t rgid;
        if (peer_creds(c, &ruid, &rgid) == 0) {
            r.who = authz_local(ruid, rgid);
            int how = routes_body_sink(&r, &st->sink_fd, &st->sink_max, &e);
            if (how < 0) {
                return http_reply_error(c, &e);
            }
            st->sink_pipe = how == 2;
            if (how > 0)
                return MHD_YES;
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        uint64_t len;
        if (cl && parse_u64(cl, &len) == 0 && len > body_limit) {
            /* refused before a byte of it is read */
            jerr_http(&e, 413, "the request body is %llu bytes; joblet takes at most %llu (server.max_body_bytes); "
                               "send files as a streamed upload (docs/api.md, \"Streamed uploads\")",
                      (unsigned long long)len, (unsigned long long)body_limit);
            return http_reply_error(c, &e);
        }
        return MHD_YES;
    }
    if (st->put) {
        if (*upload_size)
            return uploads_data(st->put, upload, upload_size);
        put_state *p = st->put;
        st->put = NULL;
        return uploads_end(c, p);
    }
    if (*upload_size && st->sink_fd >= 0 && st->sink_pipe) {
        /* into the process as fast as it takes it; past the bound, or once it stopped reading,
         * the rest is read and dropped (so the client gets the answer), but not forever */
        if (st->len + *upload_size > st->sink_max && !st->sink_error)
            st->too_large = true;
        if (!st->too_large && !st->sink_error) {
            size_t left = *upload_size;
            sink_pipe_write(st, upload, &left); /* what it did not take comes again */
            *upload_size = left;
            return MHD_YES;
        }
        st->len += *upload_size;
        *upload_size = 0;
        return st->len > st->sink_max + (64u << 20) ? MHD_NO : MHD_YES;
    }
    if (*upload_size && st->sink_fd >= 0) {
        /* into the file, never into memory; past the bound the rest is read and dropped (so the
         * client gets the answer), but not forever */
        if (!st->too_large && !st->sink_error && st->len + *upload_size <= st->sink_max) {
            if (write_all(st->sink_fd, upload, *upload_size) != *upload_size)
                st->sink_error = errno;
        } else if (st->len + *upload_size > st->sink_max && !st->too_large) {
            st->too_large = true;
            if (ftruncate(st->sink_fd, 0) < 0)
                st->sink_error = errno;
        }
        st->len += *upload_size;
        *upload_size = 0;
        return st->len > st->sink_max + (64u << 20) ? MHD_NO : MHD_YES;
    }
    if (*upload_size) {
        /* Keep reading an oversized body (so the client gets our answer, not a reset), but
         * not forever: past twice the limit the connection is closed. */
        if (st->too_large || st->busy || st->len + *upload_size > body_limit) {
            st->too_large = !st->busy;
            st->len += *upload_size;
            *upload_size = 0;
            return st->len > 2 * body_limit ? MHD_NO : MHD_YES;
        }
        if (st->len + *upload_size + 1 > st->cap) {
            size_t cap = (st->len + *upload_size + 1) * 2;
            if (cap > body_limit + 1)
                cap = body_limit + 1;
            if (buffered + (cap - st->cap) > buffer_budget) {
                st->busy = true;
                buffered -= st->cap;
                free(st->body);
                st->body = NULL;
                st->cap = 0;
                st->len += *upload_size;
                *upload_size = 0;
                return MHD_YES;
            }
            buffered += cap - st->cap;
            st->cap = cap;
            st->body = realloc(st->body, st->cap);
            if (!st->body)
                return MHD_NO;
        }
        memcpy(st->body + st->len, upload, *upload_size);
        st->len += *upload_size;
        *upload_size = 0;
        return MHD_YES;
    }
    const jerr *waited = NULL;
    bool resumed = park_resumed(&st->park, &waited);
    if (waited)
        return http_reply_error(c, waited);
    if (st->sink_pipe && st->sink_fd >= 0) {
        close(st->sink_fd); /* the body has ended: the process reads its end */
        st->sink_fd = -1;
    }
    request r = {.conn = c, .method = method, .path = url, .body_too_large = st->too_large, .body_busy = st->busy,
                 .resumed = resumed, .park = &st->park, .body_fd = st->sink_fd, .body_fd_error = st->sink_error,
                 .ctx = &st->ctx};
    if (st->sink_fd >= 0)
        r.body_len = st->len;
    if (st->body && !st->too_large && !st->busy) {
        st->body[st->len] = 0; /* cap is always > len while the body fits */
        r.body = st->body;
        r.body_len = st->len;
    }
    uid_t ruid;
    gid_t rgid;
    if (peer_creds(c, &ruid, &rgid) < 0) {
        jerr e = {0};
        jerr_http(&e, 403, "cannot read the caller's credentials (SO_PEERCRED)");
        return http_reply_error(c, &e);
    }
    r.who = authz_local(ruid, rgid);
    enum MHD_Result rc = routes_dispatch(&r);
    park_lapse(&st->park); /* a ticket the route did not wait on */
    return rc;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode tc)
{
    conn_state *st = *con_cls;
    /* every answer is counted here, whoever queued it (a route, a stream, the server) */
    const union MHD_ConnectionInfo *hs = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
    const union MHD_ConnectionInfo *sc = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    const reply_conn *rc = sc ? sc->socket_context : NULL;
    if (hs && hs->http_status && rc)
        counters_request(rc->method, hs->http_status);
    if (st) {
        if (st->put)
            uploads_abort(st->put, tc);
        park_forget(&st->park);
        stream_forget(&st->sink_hold);
        if (st->sink_fd >= 0)
            close(st->sink_fd);
        if (st->ctx.free)
            st->ctx.free(st->ctx.p);
        buffered -= st->cap;
        free(st->body);
        free(st);
        *con_cls = NULL;
    }
}

static void on_mhd(watch *w, uint32_t events) { /* progress is made in http_run after every wake */ }

bool http_socket_in_use(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return false;
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool used = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    return used;
}

/* Connections open per uid, so that one local user cannot take every connection the server
 * has (MHD_OPTION_CONNECTION_LIMIT) and lock the others out. An open-addressing table of the
 * uids with connections; a uid past its cap has the new connection shut down at once. */
#define CONN_UIDS 4096
static struct conn_count {
    uid_t uid;
    unsigned n;                  /* 0: a free slot */
} conn_counts[CONN_UIDS];
static unsigned per_user_cap;

static struct conn_count *conn_slot(uid_t uid, bool add)
{
    struct conn_count *free_slot = NULL;
    for (unsigned i = 0, h = (uid * 2654435761u) % CONN_UIDS; i < CONN_UIDS; i++, h = (h + 1) % CONN_UIDS) {
        struct conn_count *c = &conn_counts[h];
        if (c->n && c->uid == uid)
            return c;
        if (!c->n && !free_slot)
            free_slot = c;
    }
    if (add && free_slot)
        *free_slot = (struct conn_count){uid, 0};
    return add ? free_slot : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        /* the connection's own: what its answers need to know (reply.h), its uid's count */
        reply_conn *rc = xcalloc(1, sizeof *rc);
        *socket_context = rc;
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !per_user_cap)
            return;
        caller who = authz_local(cred.uid, cred.gid);
        if (authz_may(&who, AUTHZ_UNLIMITED))
            return;
        struct conn_count *slot = conn_slot(cred.uid, true);
        if (!slot || slot->n >= per_user_cap) {
            /* over its share (or more distinct users than the table holds): closed unanswered */
            shutdown(ci->connect_fd, SHUT_RDWR);
            return;
        }
        slot->n++;
        rc->owner = slot;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        reply_conn *rc = *socket_context;
        struct conn_count *slot = rc->owner;
        if (slot && slot->n)
            slot->n--;
        free(rc);
        *socket_context = NULL;
    }
}

/* Connections open at once: server.max_connections, and at most half the descriptors joblet
 * may open. Each connection is one; past a limit above the descriptors, idle connections of a
 * few users (each within its share) took them all, and a job's launch failed with EMFILE
 * (issue 25, the daemon's sibling of finding 7). The other half is joblet's own: the database,
 * logs, launches, cgroups. */
static unsigned connection_limit(unsigned configured)
{
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) < 0 || nofile.rlim_cur == RLIM_INFINITY || nofile.rlim_cur / 2 >= configured)
        return configured;
    unsigned n = nofile.rlim_cur / 2 > 16 ? (unsigned)(nofile.rlim_cur / 2) : 16;
    log_warn("server.max_connections is %u, but joblet may open %llu files (ulimit -n): at most %u connections at "
             "once, so that they never take the descriptors jobs need (the systemd unit sets LimitNOFILE=1048576)",
             configured, (unsigned long long)nofile.rlim_cur, n);
    return n;
}

int http_start(const char *path, mode_t mode, const http_limits *lim, jerr *e)
{
    uint64_t max_body = lim->max_body;
    per_user_cap = lim->per_user;
    body_limit = max_body;
    buffer_budget = max_body + max_body / 2 > (64u << 20) ? max_body + max_body / 2 : (64u << 20);
    snprintf(sock_path, sizeof sock_path, "%s", path);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return jerr_set(e, ENAMETOOLONG, "socket path too long: %s", path);
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return jerr_sys(e, "socket");
    /* A socket file left by a previous joblet that is gone: replace it. One that answers
     * belongs to a running joblet: refuse to start a second one. */
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        close(fd);
        return jerr_set(e, EADDRINUSE, "another joblet is already listening on %s", path);
    }
    close(fd);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return jerr_sys(e, "socket");
    unlink(path);
    char dir[256];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (mkdir_p(dir, 0755, e) < 0) {
            close(fd);
            return -1;
        }
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chmod(path, mode) < 0 || listen(fd, 1024) < 0) {
        jerr_sys(e, "listen on %s", path);
        close(fd);
        return -1;
    }
    mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request,
                           NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
                           MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
                           lim->idle_timeout_s ? lim->idle_timeout_s : 300u, MHD_OPTION_CONNECTION_LIMIT,
                           connection_limit(lim->max_conns ? lim->max_conns : 4096u), MHD_OPTION_END);
    if (!mhd) {
        close(fd);
        return jerr_set(e, EIO, "libmicrohttpd could not start on %s", path);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_EPOLL_FD);
    w_mhd = (watch){di->epoll_fd, on_mhd, NULL};
    if (loop_add(&w_mhd) < 0)
        return jerr_sys(e, "watch the HTTP server");
    return 0;
}

void http_run(void)
{
    incoming_expire(now_ms());
    if (mhd)
        MHD_run(mhd);
}

int http_timeout_ms(void)
{
    MHD_UNSIGNED_LONG_LONG t;
    int ms = -1;
    if (mhd && MHD_get_timeout(mhd, &t) == MHD_YES)
        ms = t > 60000 ? 60000 : (int)t;
    int64_t at = incoming_next_deadline();
    if (at) {
        int64_t d = at - now_ms();
        int up = d < 0 ? 0 : d > 60000 ? 60000 : (int)d + 1;
        ms = ms < 0 || up < ms ? up : ms;
    }
    return ms;
}

void http_stop(void)
{
    if (!mhd)
        return;
    /* libmicrohttpd refuses to stop with connections suspended: the parked ones get an answer */
    jerr e = {0};
    jerr_http(&e, 503, "joblet is stopping; try again when it is back");
    park_wake_all(&e);
    jobs_list_stop();
    stream_stop_all();
    MHD_run(mhd);
    MHD_stop_daemon(mhd);
    mhd = NULL;
    incoming_drop_all();
    unlink(sock_path);
}
