/* HTTP/1.1 with libmicrohttpd on the unix socket and, when remote.listen names addresses, on
 * TLS listeners (docs/remote.md), all driven from the daemon's own event loop (MHD_USE_EPOLL
 * without an internal thread), so request handlers run on the thread that owns the state.
 *
 * Who asks is settled once per connection, here, and carried in every request (request.who):
 * on the unix socket the peer's uid from SO_PEERCRED; on TLS the person and role of the client
 * certificate (tls.h), checked at the connection's first request, mapped to a local account
 * (authz_remote). A TLS connection that has not passed that check yet is "pending": at most
 * remote.max_pending of them at once (a new one pushes the oldest out) and for at most
 * remote.handshake_timeout_s, so that clients that never finish a handshake, or never ask,
 * cannot hold the listener. Past the check, connections count per account, as local ones do. */
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/fairshare.h"
#include "../common/log.h"
#include "../common/parse.h"
#include "../common/util.h"
#include "../core/audit.h"
#include "../core/connfds.h"
#include "../core/counters.h"
#include "../core/incoming.h"
#include "../core/nsscache.h"
#include "../core/loop.h"
#include "attach.h"
#include "jobs_list.h"
#include "pace.h"
#include "park.h"
#include "reply.h"
#include "stream.h"
#include "tls.h"
#include "uploads.h"

/* The unix socket's server, then one per remote.listen address. */
typedef struct server {
    struct MHD_Daemon *mhd;
    watch w;
    bool tls;
    char addr[64];
    watch listen;   /* TLS: joblet accepts, and hands the connection to mhd at its source's pace */
    unsigned limit;   /* its connections at once (MHD_OPTION_CONNECTION_LIMIT: server_share) */
    unsigned counted; /* of them, those of users other than admins (conn_count) */
} server;
static server servers[1 + REMOTE_LISTEN_MAX];
static unsigned nservers;
static uint64_t body_limit;
static char sock_path[256];

/* An account's connections (conn_counts, below) and the request bodies they hold. */
struct conn_count {
    uid_t uid;
    unsigned n;                  /* over every server; 0: a free slot */
    unsigned on[1 + REMOTE_LISTEN_MAX]; /* to each server (servers[]) */
    uint64_t body_bytes;         /* what its connections' request bodies hold (on_request) */
};

/* What http.c knows of a connection (reply_conn.owner): who it is, settled once. */
typedef struct conn_id {
    struct conn_count *slot;  /* its account's count of connections; NULL when not counted */
    server *sv;               /* the server it came to */
    bool tls;
    bool known;               /* who or refused is settled */
    caller who;
    jerr refused;             /* known and refused: every request of it gets this */
    int fd;
    int64_t since_ms;
    bool pending;             /* TLS, its first request not answered yet: among pending */
    struct conn_id *prev, *next;
    struct pending_src *src;  /* pending: where it comes from, among that source's */
    struct conn_id *src_prev, *src_next;
    struct conn_id *tls_prev, *tls_next; /* among tls_conns */
    tls_peer *peer;           /* its client's certificates, checked again at a reload */
    int64_t not_after;        /* when its certificate expires (s since the epoch; 0: unknown) */
    char request[192];        /* "POST /v1/jobs": the request under way (the audit) */
    const char *made;         /* its request.made (conn_state's), NULL before the request */
    bool audited;             /* the request's change is in the audit trail (audit_answer) */
} conn_id;

/* Every TLS connection open (an upgraded one, a terminal or an exec, included): those of a
 * certificate revoked by a reload are closed (http_reload_remote). */
static conn_id *tls_conns;

static void tls_conns_remove(conn_id *id)
{
    if (!id->tls)
        return;
    *(id->tls_prev ? &id->tls_prev->tls_next : &tls_conns) = id->tls_next;
    if (id->tls_next)
        id->tls_next->tls_prev = id->tls_prev;
}

/* The earliest notAfter (ms, plus a second: a certificate is good through its notAfter) of the
 * TLS connections open: then those past theirs are closed, streams and terminals included
 * (expire_certificates); 0 when none is known. */
static int64_t next_expiry_ms;

/* TLS connections not yet past their first request, oldest first. */
static struct {
    conn_id *head, *tail;
    unsigned n, max;
    int64_t timeout_ms;
} pending;

/* Where pending connections come from: an IPv4 address, or an IPv6 one's /64 (what one host
 * or one network of one person holds). One source holds at most PENDING_SRC_SHARE of
 * remote.max_pending (at least 2): past that its own oldest makes room, so that plain connects
 * from one place, never a word said, cannot push everyone else's handshakes out; the pool as a
 * whole, full of many sources, gives up its oldest. A table of the sources with pending
 * connections, chained in buckets. */
#define PENDING_SRC_SHARE 8
#define PENDING_SRC_BUCKETS 1024
#define PENDING_SRC_MAX 16384
struct waiter;
typedef struct pending_src {
    unsigned char key[16];
    unsigned n;
    conn_id *head, *tail;     /* its pending connections, oldest first */
    struct pending_src *chain;
    /* its handshakes' pace (a token bucket: remote.handshakes_per_s, twice as many at once) */
    double tokens;
    int64_t refilled_ms;
    unsigned nwait;
    struct waiter *w_head, *w_tail; /* its connections waiting for their turn, oldest first */
    struct pending_src *r_prev, *r_next; /* the ring of sources with connections waiting */
} pending_src;
static pending_src *pending_srcs[PENDING_SRC_BUCKETS];
static unsigned npending_srcs;

/* The pace of handshakes. A TLS handshake is public-key work on the loop thread (~1 ms), and
 * anyone who reaches the port may ask for one (no certificate is needed to start): joblet
 * accepts the listeners' connections itself and hands each to libmicrohttpd (MHD_add_connection)
 * only when its source has a turn: remote.handshakes_per_s a second, up to twice as many at
 * once. Those beyond wait, a descriptor and no byte read, within their source's share of
 * remote.max_pending (its own oldest makes room) and for at most remote.handshake_timeout_s.
 * One place that opens connections as fast as it can then costs the loop at most its pace;
 * everyone else's handshakes go through meanwhile. And all places together get
 * remote.handshakes_total_per_s, twice as many at once: many addresses each at its own pace
 * (127.0.0.0/8 from this machine, an IPv6 network's /64s) kept the loop on handshakes, a CPU
 * of joblet's whole (1,400 a second from 180 addresses of 127.0.x.y, 0.7 ms each). Beyond it
 * the sources waiting take turns, one connection each (a ring), so one address of one person
 * waits for one turn of the others, not behind all their connections; and when the waiting
 * are too many, the source with the most gives up its oldest. */
typedef struct waiter {
    int fd;
    struct server *sv;
    struct sockaddr_storage addr;
    socklen_t alen;
    int64_t since_ms;
    struct waiter *prev, *next;         /* all waiting, oldest first */
    struct waiter *src_prev, *src_next; /* its source's */
    pending_src *src;
} waiter;
static struct {
    waiter *head, *tail;
    unsigned n;
    /* at most remote.max_pending, and no more than the listener may hold connected (its share
     * of the descriptors, connection_limit): each holds a descriptor, and beyond that share they
     * would take those of the local socket, of jobs, of the database */
    unsigned max;
    double per_s;       /* remote.handshakes_per_s */
    double all_per_s;   /* remote.handshakes_total_per_s */
    double all_tokens;  /* its bucket, twice as many at once */
    int64_t all_refilled_ms;
    bool all_short;     /* the last pass left connections waiting for want of the total's turns */
    pending_src *ring;  /* the sources with connections waiting: the next to have a turn */
    int64_t next_ms;    /* the next pass over them (waiters_run) */
    /* The log's line of an address beyond its pace: once a minute for all addresses together,
     * not once a minute an address: a source is forgotten two seconds after its turns are whole
     * again, so a line a source would be a line a burst, and many addresses (IPv6 /64s) many
     * lines: the log would be a lever for anyone who reaches the port. */
    int64_t warned_ms;
    unsigned waited;    /* connections that waited since that line */
    int64_t all_warned_ms;   /* the same for the total's pace: once a minute */
    unsigned all_waited;
} waiting;
#define WAITERS_TICK_MS 20
#define RING_LOOKS 64
#define ACCEPTS_PER_WAKE 64

static unsigned pending_src_bucket(const unsigned char key[16])
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 16; i++)
        h = (h ^ key[i]) * 16777619u;
    return h % PENDING_SRC_BUCKETS;
}

/* the source of a client address (all zero when unknown: one source for those) */
static void pending_src_key(const struct sockaddr *sa, unsigned char key[16])
{
    memset(key, 0, 16);
    if (sa && sa->sa_family == AF_INET) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6) {
        const unsigned char *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        memcpy(key, a, memcmp(a, v4mapped, 12) ? 8 : 16);
    }
}

static void srcs_forget_idle(void);
static pending_src *pending_src_get(const unsigned char key[16])
{
    pending_src **b = &pending_srcs[pending_src_bucket(key)];
    for (pending_src *p = *b; p; p = p->chain)
        if (!memcmp(p->key, key, 16))
            return p;
    if (npending_srcs >= PENDING_SRC_MAX)
        srcs_forget_idle();
    pending_src *p = xcalloc(1, sizeof *p);
    memcpy(p->key, key, 16);
    p->tokens = 2 * waiting.per_s;
    p->refilled_ms = now_ms();
    p->chain = *b;
    *b = p;
    npending_srcs++;
    return p;
}

/* A token bucket of per_s a second, twice as many at once, refilled up to now. */
static void bucket_refill(double *tokens, int64_t *refilled_ms, double per_s, int64_t now)
{
    if (now > *refilled_ms) {
        *tokens += (double)(now - *refilled_ms) * per_s / 1000.0;
        if (*tokens > 2 * per_s)
            *tokens = 2 * per_s;
    }
    *refilled_ms = now;
}

static void src_refill(pending_src *p, int64_t now) { bucket_refill(&p->tokens, &p->refilled_ms, waiting.per_s, now); }

/* A source nothing is left of (no connection pending or waiting, its turns whole again) is
 * forgotten: the table holds the places that opened connections in the last two seconds or so. */
static bool src_forget(pending_src *p, int64_t now)
{
    if (p->n || p->nwait)
        return false;
    src_refill(p, now);
    if (p->tokens < 2 * waiting.per_s)
        return false;
    pending_src **b = &pending_srcs[pending_src_bucket(p->key)];
    while (*b != p)
        b = &(*b)->chain;
    *b = p->chain;
    free(p);
    npending_srcs--;
    return true;
}

/* The table at PENDING_SRC_MAX (many addresses, each new in the last two seconds: an IPv6
 * attacker has many /64s): every source with no connection pending or waiting is forgotten,
 * its turns not yet whole included (a new address gets whole turns anyway). A sweep frees
 * nearly all, so it comes at most once per PENDING_SRC_MAX new addresses. */
static void srcs_forget_idle(void)
{
    for (unsigned i = 0; i < PENDING_SRC_BUCKETS; i++)
        for (pending_src **b = &pending_srcs[i]; *b;) {
            pending_src *p = *b;
            if (p->n || p->nwait) {
                b = &p->chain;
                continue;
            }
            *b = p->chain;
            free(p);
            npending_srcs--;
        }
}

/* Every second or so: the sources whose turns are whole again, forgotten. */
static void srcs_sweep(int64_t now)
{
    static int64_t next;
    if (now < next || !npending_srcs)
        return;
    next = now + 1000;
    for (unsigned i = 0; i < PENDING_SRC_BUCKETS; i++)
        for (pending_src *p = pending_srcs[i], *nx; p; p = nx) {
            nx = p->chain;
            src_forget(p, now);
        }
}

static void pending_remove(conn_id *id)
{
    if (!id->pending)
        return;
    *(id->prev ? &id->prev->next : &pending.head) = id->next;
    *(id->next ? &id->next->prev : &pending.tail) = id->prev;
    id->prev = id->next = NULL;
    id->pending = false;
    pending.n--;
    pending_src *p = id->src;
    *(id->src_prev ? &id->src_prev->src_next : &p->head) = id->src_next;
    *(id->src_next ? &id->src_next->src_prev : &p->tail) = id->src_prev;
    id->src_prev = id->src_next = NULL;
    id->src = NULL;
    p->n--;
    src_forget(p, now_ms());
}

/* Closes a pending connection: libmicrohttpd sees the end of its socket at the next turn. */
static void pending_drop(conn_id *id)
{
    pending_remove(id);
    shutdown(id->fd, SHUT_RDWR);
}

/* What one source may hold of the pending connections, and of those waiting: an eighth of
 * remote.max_pending, at least 2. */
static unsigned src_share(void)
{
    return pending.max / PENDING_SRC_SHARE > 2 ? pending.max / PENDING_SRC_SHARE : 2;
}

static void pending_add(conn_id *id, const struct sockaddr *from)
{
    unsigned char key[16];
    pending_src_key(from, key);
    pending_src *p = pending_src_get(key);
    unsigned share = src_share();
    if (p->n >= share)
        pending_drop(p->head); /* its own oldest makes room */
    else if (pending.n >= pending.max && pending.head)
        pending_drop(pending.head); /* the oldest makes room: new clients always get their chance */
    p = pending_src_get(key);   /* (the drop may have freed it) */
    id->since_ms = now_ms();
    id->prev = pending.tail;
    *(pending.tail ? &pending.tail->next : &pending.head) = id;
    pending.tail = id;
    id->src = p;
    id->src_prev = p->tail;
    *(p->tail ? &p->tail->src_next : &p->head) = id;
    p->tail = id;
    p->n++;
    id->pending = true;
    pending.n++;
}

/* Those past remote.handshake_timeout_s are closed. */
static void pending_expire(int64_t now)
{
    while (pending.head && now - pending.head->since_ms >= pending.timeout_ms)
        pending_drop(pending.head);
}

/* The total's bucket (remote.handshakes_total_per_s, twice as many at once). */
static void all_refill(int64_t now)
{
    bucket_refill(&waiting.all_tokens, &waiting.all_refilled_ms, waiting.all_per_s, now);
}

/* A source whose first connection waits joins the ring, last in its turn order. */
static void ring_join(pending_src *p)
{
    if (!waiting.ring) {
        p->r_prev = p->r_next = p;
        waiting.ring = p;
        return;
    }
    p->r_next = waiting.ring;
    p->r_prev = waiting.ring->r_prev;
    p->r_prev->r_next = p;
    waiting.ring->r_prev = p;
}

static void ring_leave(pending_src *p)
{
    if (p->r_next == p) {
        waiting.ring = NULL;
    } else {
        p->r_prev->r_next = p->r_next;
        p->r_next->r_prev = p->r_prev;
        if (waiting.ring == p)
            waiting.ring = p->r_next;
    }
    p->r_prev = p->r_next = NULL;
}

static void waiter_remove(waiter *w)
{
    *(w->prev ? &w->prev->next : &waiting.head) = w->next;
    *(w->next ? &w->next->prev : &waiting.tail) = w->prev;
    waiting.n--;
    pending_src *p = w->src;
    *(w->src_prev ? &w->src_prev->src_next : &p->w_head) = w->src_next;
    *(w->src_next ? &w->src_next->src_prev : &p->w_tail) = w->src_prev;
    if (!--p->nwait)
        ring_leave(p);
}

/* Closed before a byte of it was read: pushed out, or waited past remote.handshake_timeout_s. */
static void waiter_drop(waiter *w, int64_t now)
{
    waiter_remove(w);
    close(w->fd);
    pending_src *p = w->src;
    free(w);
    src_forget(p, now);
}

/* Its turn: libmicrohttpd takes it (and closes it when it cannot: its connection limit). */
static void waiter_hand(struct server *sv, int fd, const struct sockaddr *sa, socklen_t alen)
{
    if (MHD_add_connection(sv->mhd, fd, sa, alen) != MHD_YES)
        log_debug("remote: a connection on %s not taken: %s", sv->addr, strerror(errno));
}

/* A connection just accepted: handed over now if its source has a turn and none of its
 * connections waits before it, else it waits. */
static void waiter_admit(struct server *sv, int fd, const struct sockaddr_storage *sa, socklen_t alen, int64_t now)
{
    unsigned char key[16];
    pending_src_key((const struct sockaddr *)sa, key);
    pending_src *p = pending_src_get(key);
    src_refill(p, now);
    all_refill(now);
    /* (the total's turns go to those waiting first) */
    bool all_turn = waiting.all_tokens >= 1 && (!waiting.all_short || !waiting.n);
    if (!p->nwait && p->tokens >= 1 && all_turn) {
        p->tokens -= 1;
        waiting.all_tokens -= 1;
        waiter_hand(sv, fd, (const struct sockaddr *)sa, alen);
        return;
    }
    unsigned share = src_share();
    if (p->nwait >= share) {
        waiter_drop(p->w_head, now); /* its own oldest makes room */
    } else if (waiting.n >= waiting.max && waiting.ring) {
        /* the source with the most waiting gives up its oldest: the new one's own source when
         * it has as many as any, else the most among the next RING_LOOKS of the ring (a bounded
         * look per connection); when each has one, the new one is closed instead (a listen
         * backlog's rule): a place that keeps opening connections, from one address or from
         * many, pushes out its own, never the one of a person already waiting for a turn */
        pending_src *most = waiting.ring;
        unsigned looks = 1;
        for (pending_src *q = most->r_next; q != waiting.ring && looks < RING_LOOKS; q = q->r_next, looks++)
            if (q->nwait > most->nwait)
                most = q;
        if (p->nwait && p->nwait >= most->nwait) {
            waiter_drop(p->w_head, now);
        } else if (most->nwait > 1 || p->nwait) {
            waiter_drop(most->w_head, now);
        } else {
            close(fd);
            waiting.waited++;
            src_forget(p, now);
            return;
        }
    }
    p = pending_src_get(key); /* (a drop may have forgotten it) */
    if (p->tokens >= 1 && !p->nwait) {
        /* its own pace would let it in: it waits for the total's */
        if (!waiting.all_warned_ms || now - waiting.all_warned_ms >= 60000) {
            log_warn("remote: TLS connections come from many addresses together faster than "
                     "remote.handshakes_total_per_s (%g a second, %g at once): they wait their turn, one address "
                     "after another (said once a minute; %u connections waited for it since the last time)",
                     waiting.all_per_s, 2 * waiting.all_per_s, waiting.all_waited);
            waiting.all_warned_ms = now;
            waiting.all_waited = 0;
        }
        waiting.all_waited++;
    } else if (!waiting.warned_ms || now - waiting.warned_ms >= 60000) {
        char host[INET6_ADDRSTRLEN + 1] = "?";
        getnameinfo((const struct sockaddr *)sa, alen, host, sizeof host, NULL, 0, NI_NUMERICHOST);
        log_warn("remote: %s opens TLS connections faster than remote.handshakes_per_s (%g a second, %g at once): "
                 "the others wait their turn (said once a minute for all addresses; %u connections waited since "
                 "the last time)",
                 host, waiting.per_s, 2 * waiting.per_s, waiting.waited);
        waiting.warned_ms = now;
        waiting.waited = 0;
    }
    if (p->tokens < 1 || p->nwait)
        waiting.waited++;
    waiter *w = xcalloc(1, sizeof *w);
    w->fd = fd;
    w->sv = sv;
    memcpy(&w->addr, sa, alen);
    w->alen = alen;
    w->since_ms = now;
    w->src = p;
    w->prev = waiting.tail;
    *(waiting.tail ? &waiting.tail->next : &waiting.head) = w;
    waiting.tail = w;
    waiting.n++;
    w->src_prev = p->w_tail;
    *(p->w_tail ? &p->w_tail->src_next : &p->w_head) = w;
    p->w_tail = w;
    if (!p->nwait++)
        ring_join(p);
}

/* Every WAITERS_TICK_MS while any wait: those past remote.handshake_timeout_s closed, then
 * handed over as their sources' turns and the total's come: the sources in the ring's order, each
 * its oldest, round after round, until the total's turns are used up or no source has one. */
static void waiters_run(int64_t now)
{
    if (!waiting.n || now < waiting.next_ms)
        return;
    waiting.next_ms = now + WAITERS_TICK_MS;
    while (waiting.head && now - waiting.head->since_ms >= pending.timeout_ms)
        waiter_drop(waiting.head, now);
    all_refill(now);
    bool handed = true;
    while (handed && waiting.ring && waiting.all_tokens >= 1) {
        handed = false;
        /* one round: each source once, from the one whose turn it is */
        unsigned left = 0;
        pending_src *p = waiting.ring;
        do {
            left++;
            p = p->r_next;
        } while (p != waiting.ring);
        for (p = waiting.ring; left-- && waiting.all_tokens >= 1;) {
            pending_src *nx = p->r_next;
            src_refill(p, now);
            if (p->tokens >= 1) {
                waiter *w = p->w_head;
                p->tokens -= 1;
                waiting.all_tokens -= 1;
                waiting.ring = nx;   /* the next source's turn comes first next time */
                waiter_remove(w);    /* (p leaves the ring when it was its last) */
                waiter_hand(w->sv, w->fd, (const struct sockaddr *)&w->addr, w->alen);
                free(w);
                handed = true;
            }
            p = nx;
        }
    }
    waiting.all_short = waiting.n && waiting.all_tokens < 1;
}

static void waiters_drop_all(void)
{
    while (waiting.head)
        waiter_drop(waiting.head, now_ms());
}

typedef struct conn_state {
    char *body;
    size_t len, cap;
    bool too_large;
    bool busy;              /* refused: other requests already hold the body budget */
    uint64_t busy_share;    /* ... its user's share of it (a 429 that says so); 0: everyone's (503) */
    struct conn_count *acct; /* its account's share of bodies held; NULL: not counted (admins) */
    put_state *put;         /* PUT /v1/uploads/{id}: its bytes go to disk, never into body */
    park_slot park;         /* parked while the route waits (park.h) */
    int sink_fd;            /* the body goes to this file (routes_body_sink), -1: to memory */
    uint64_t sink_max;
    int sink_error;         /* errno of a failed write */
    bool sink_pipe;         /* the sink is a pipe to a process (routes_body_sink 2) */
    stream_held sink_hold;  /* held until the pipe has room */
    uint64_t sink_total;    /* its Content-Length; PACE_UNKNOWN without one */
    pace pace;              /* a byte per idle timeout does not keep it (pace.h) */
    bool sink_waited;       /* the pipe was full: the client waited, its window begins anew */
    struct MHD_Connection *conn;
    http_ctx ctx;           /* the route's own (http.h) */
    caller who;             /* who asks (request_caller, at the request's first call) */
    char ident_account[256]; /* TLS: the account its person acts as, being looked up (core/nsscache.h):
                              * who asks is settled once it is answered, before the route */
    char made[HTTP_MADE_LEN]; /* request.made */
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
 * once must not push a root daemon into the OOM killer: past the budget, answer 503. And one
 * user must not hold the budget and refuse everyone else's submissions (bodies it starts and
 * never finishes, a byte before each idle timeout): a user other than an admin holds at most a
 * share (the larger of one whole body and a quarter of the budget; past it, 429), and a body
 * of at most BODY_ALWAYS bytes is never refused for the budget (their memory is bounded by the
 * connections a user may open, server.max_connections_per_user). */
static uint64_t buffered, buffer_budget, user_share;
#define BODY_ALWAYS (64u << 10)
static uint64_t idle_s; /* server.idle_timeout_s: a sink's window (pace.h) */

static conn_id *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *sc = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    reply_conn *rc = sc ? sc->socket_context : NULL;
    return rc ? rc->owner : NULL;
}

static bool conn_identify(struct MHD_Connection *c, conn_id *id, char *wait, size_t wait_len);

static bool read_only(const char *method) { return !strcmp(method, "GET") || !strcmp(method, "HEAD"); }

/* Who asks, settled for the connection (conn_identify), and whether they may change anything
 * at all (a reader may not: AUTHZ_CHANGE). NULL, with e set, when the request is refused. */
static const caller *request_caller(struct MHD_Connection *c, const char *method, const char *url, jerr *e,
                                    char *wait, size_t wait_len)
{
    conn_id *id = conn_of(c);
    if (!id) {
        jerr_http(e, 403, "cannot tell who is asking");
        return NULL;
    }
    snprintf(id->request, sizeof id->request, "%s %s", method, url);
    if (!conn_identify(c, id, wait, wait_len)) {
        *e = id->refused;
        return NULL;
    }
    if (id->tls && tls_revoked(id->who.serial)) {
        /* revoked by a reload while the connection was open */
        jerr_http(e, 403, "the client certificate of %s (serial %s) is revoked", id->who.person, id->who.serial);
        audit_caller("refused", &id->who, NULL, e->msg);
        id->refused = *e;
        id->known = true;
        return NULL;
    }
    if (id->tls && id->not_after && (int64_t)time(NULL) > id->not_after) {
        /* expired while the connection was open: checked once at the first request, it was
         * served on for as long as it kept asking */
        jerr_http(e, 403, "the client certificate of %s (serial %s) expired while its connection was open: make "
                          "a new one (joblet cert client)", id->who.person, id->who.serial);
        audit_caller("refused", &id->who, NULL, e->msg);
        id->refused = *e;
        return NULL;
    }
    /* A request a web page made (the browser says so: Origin, or Sec-Fetch-Site other than
     * "none", a navigation the user typed). joblet's API has neither cookie nor CSRF token: the
     * caller is the connection, and a browser that holds a client certificate for the TLS
     * listener would send any page's form or fetch as its person (a job submitted, stopped, a GPU
     * drained). A browser reaches joblet through rnx console only, which checks both against its
     * own origin and takes them off (cli/console_gate.c). */
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    const char *site = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site");
    if (origin || (site && strcasecmp(site, "none"))) {
        jerr_http(e, 403, "a request made by a web page (Origin: %.80s, Sec-Fetch-Site: %.20s): a browser reaches "
                          "joblet through rnx console only (docs/console.md)", origin ? origin : "-", site ? site : "-");
        if (id->tls)
            audit_caller("refused", &id->who, NULL, e->msg);
        return NULL;
    }
    char what[160];
    snprintf(what, sizeof what, "%s %.120s (a change)", method, url);
    if (!read_only(method) && authz_check(&id->who, AUTHZ_CHANGE, what, e) < 0) {
        if (id->tls)
            audit_caller("refused", &id->who, NULL, e->msg);
        return NULL;
    }
    return &id->who;
}

/* n more bytes of a sink's body came, seen in all with them: false, said in the log,
 * when its window went by short of the floor (pace.h); the connection is then closed. */
static bool sink_paced(conn_state *st, uint64_t n, uint64_t seen)
{
    uint64_t left = st->sink_total == PACE_UNKNOWN ? PACE_UNKNOWN : st->sink_total > seen ? st->sink_total - seen : 0;
    if (pace_ok(&st->pace, n, left, idle_s))
        return true;
    const conn_id *id = conn_of(st->conn);
    log_info("uid %u: %s: fewer than %u bytes of the body came in server.idle_timeout_s (%llu s), after %llu bytes: "
             "the connection is closed", (unsigned)st->who.uid, id ? id->request : "a request", PACE_FLOOR,
             (unsigned long long)idle_s, (unsigned long long)st->len);
    return false;
}

static enum MHD_Result on_request_run(struct MHD_Connection *c, const char *url, const char *method,
                                      const char *upload, size_t *upload_size, void **con_cls)
{
    conn_state *st = *con_cls;
    if (!st) {
        /* the headers are in: the only moment before the body when an answer can be queued */
        *con_cls = st = xcalloc(1, sizeof *st);
        st->sink_fd = -1;
        st->conn = c;
        st->park.since = nsscache_gen();
        nsscache_accept_since(st->park.since);
        const union MHD_ConnectionInfo *sc = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        reply_conn *rc = sc ? sc->socket_context : NULL;
        if (rc) {
            snprintf(rc->method, sizeof rc->method, "%s", method);
            rc->own_commit = false;
            conn_id *id = rc->owner;
            id->made = st->made;
            id->audited = false;
        }
        jerr e = {0};
        const caller *who = request_caller(c, method, url, &e, st->ident_account, sizeof st->ident_account);
        if (!who && st->ident_account[0]) {
            /* the person's account is being looked up: the body is read as any small one's,
             * the request waits for it before its route (below); one a route takes before its
             * body is read (an archive: routes_body_sink) cannot wait so, and is asked again */
            if (uploads_is_put(method, url) || routes_body_sink_route(method, url)) {
                jerr_busy(&e, "joblet is looking up the account '%.200s' this certificate acts as, to decide "
                              "on this request before its body: send it again", st->ident_account);
                return http_reply_error(c, &e);
            }
            st->who = (caller){.uid = (uid_t)-1, .via = CALLER_TLS};
            return MHD_YES;
        }
        if (!who)
            return http_reply_error(c, &e);
        st->who = *who;
        if (uploads_is_put(method, url))
            return uploads_begin(c, url, who->uid, &st->put);
        /* a route that takes its body as a file (an archive, past server.max_body_bytes), or
         * refuses it unread, says so now */
        request r = {.conn = c, .method = method, .path = url, .body_fd = -1, .ctx = &st->ctx, .who = *who};
        if (who->via == CALLER_UNIX && routes_body_sink_route(method, url)) {
            /* decided on before its body, with the role its account has now (a connection kept
             * open may have seen another): known, or being looked up (core/nsscache.h), when it
             * is told to send it again, neither refused for a role it may have nor let in for
             * one it had */
            if (!authz_local_known(who->uid)) {
                jerr_busy(&e, "joblet is looking up the account of uid %u (server.admin_group: its role) to "
                              "decide on this request before its body: send it again", (unsigned)who->uid);
                return http_reply_error(c, &e);
            }
            r.who = authz_local(who->uid, who->gid);
            r.who.pid = who->pid;
        }
        int how = routes_body_sink(&r, &st->sink_fd, &st->sink_max, &e);
        if (how < 0)
            return http_reply_error(c, &e);
        st->sink_pipe = how == 2;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        uint64_t len;
        if (how > 0) {
            st->sink_total = cl && parse_u64(cl, &len) == 0 ? len : PACE_UNKNOWN;
            pace_start(&st->pace);
            return MHD_YES;
        }
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
        bool done;
        enum MHD_Result rc = uploads_end(c, st->put, &done);
        if (done)
            st->put = NULL;
        return rc;
    }
    if (*upload_size && st->sink_fd >= 0 && st->sink_pipe) {
        /* into the process as fast as it takes it; past the bound, or once it stopped reading,
         * the rest is read and dropped (so the client gets the answer), but not forever */
        if (st->len + *upload_size > st->sink_max && !st->sink_error)
            st->too_large = true;
        if (!st->too_large && !st->sink_error) {
            size_t left = *upload_size;
            uint64_t at = st->len;
            if (st->sink_waited) {
                /* the pipe has room again: the client may send from now, a new window (begun when
                 * the pipe refused, the wait itself counted against it, and a helper that stalled
                 * longer than a window had its copy cut once it drained the pipe) */
                pace_start(&st->pace);
                st->sink_waited = false;
            }
            sink_pipe_write(st, upload, &left); /* what it did not take comes again */
            if (left && st->sink_error) {
                /* it stopped reading (a helper that refused the path and ended): what it did not
                 * take is dropped now, as the rest will be. Handed back, libmicrohttpd would have
                 * waited for new bytes before it asked again, and the last had all come */
                st->len += left;
                left = 0;
            }
            *upload_size = left;
            if (left)
                st->sink_waited = true; /* the process makes the client wait */
            else if (!sink_paced(st, st->len - at, st->len)) /* (st->len counts them already) */
                return MHD_NO;
            return MHD_YES;
        }
        if (!sink_paced(st, *upload_size, st->len + *upload_size))
            return MHD_NO;
        st->len += *upload_size;
        *upload_size = 0;
        return st->len > st->sink_max + (64u << 20) ? MHD_NO : MHD_YES;
    }
    if (*upload_size && st->sink_fd >= 0) {
        /* into the file, never into memory; past the bound the rest is read and dropped (so the
         * client gets the answer), but not forever */
        if (!sink_paced(st, *upload_size, st->len + *upload_size))
            return MHD_NO;
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
            if (!st->cap) {
                conn_id *id = conn_of(c);
                st->acct = id ? id->slot : NULL;
            }
            /* (what the body needs, not the doubled buffer: a body of at most BODY_ALWAYS bytes
             * gets a buffer of at most that, and is never refused) */
            size_t need = st->len + *upload_size + 1;
            if (need <= BODY_ALWAYS + 1 && cap > BODY_ALWAYS + 1)
                cap = BODY_ALWAYS + 1;
            bool small = need <= BODY_ALWAYS + 1;
            uint64_t grow = cap - st->cap;
            bool mine = !small && st->acct && st->acct->body_bytes + grow > user_share;
            if (mine || (!small && buffered + grow > buffer_budget)) {
                st->busy = true;
                st->busy_share = mine ? user_share : 0;
                buffered -= st->cap;
                if (st->acct)
                    st->acct->body_bytes -= st->cap;
                free(st->body);
                st->body = NULL;
                st->cap = 0;
                st->len += *upload_size;
                *upload_size = 0;
                return MHD_YES;
            }
            buffered += grow;
            if (st->acct)
                st->acct->body_bytes += grow;
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
    /* The caller's account (core/nsscache.h), known before its route first runs: asked off the
     * loop, and the request parked meanwhile, so that a directory service slow for one account
     * keeps that account's requests waiting, not everyone's. Then its role from it (an
     * operator: a member of server.admin_group). A route's own rerun (park.h) does not ask again. */
    if (!resumed || st->park.for_account) {
        resumed = false;
        st->park.for_account = false;
        if (st->ident_account[0]) {
            /* TLS: the account its person acts as, then who asks (request_caller again) */
            request pr = {.conn = c, .park = &st->park, .who = st->who};
            jerr e = {0};
            if (!park_for_account(&pr, NSS_USER, 0, st->ident_account, &e)) {
                if (!e.msg[0])
                    st->park.for_account = true;
                return e.msg[0] ? http_reply_error(c, &e) : MHD_YES;
            }
            park_lapse(&st->park);
            st->ident_account[0] = 0;
            const caller *who = request_caller(c, method, url, &e, st->ident_account, sizeof st->ident_account);
            if (!who && !e.msg[0])
                jerr_busy(&e, "your account is being looked up: ask again");
            if (!who)
                return http_reply_error(c, &e);
            st->who = *who;
            if (st->too_large || st->busy) {
                /* its body was read before who asks was known: one too large to keep was not
                 * kept (an upload's, an archive's were refused before it: above) */
                jerr_busy(&e, "your account was being looked up when this request began: send it again");
                return http_reply_error(c, &e);
            }
        }
        {   /* (a TLS caller's too: its account's rights count where its jobs use others' things) */
            request pr = {.conn = c, .park = &st->park, .who = st->who};
            jerr e = {0};
            if (!park_for_account_known(&pr, st->who.uid, true, &e))
                return e.msg[0] ? http_reply_error(c, &e) : MHD_YES;
        }
        if (st->who.via == CALLER_UNIX) {
            caller w = authz_local(st->who.uid, st->who.gid);
            w.pid = st->who.pid;
            st->who = w;
        }
    }
    if (st->sink_pipe && st->sink_fd >= 0) {
        close(st->sink_fd); /* the body has ended: the process reads its end */
        st->sink_fd = -1;
    }
    request r = {.conn = c, .method = method, .path = url, .body_too_large = st->too_large, .body_busy = st->busy, .body_busy_share = st->busy_share,
                 .resumed = resumed, .park = &st->park, .body_fd = st->sink_fd, .body_fd_error = st->sink_error,
                 .ctx = &st->ctx, .made = st->made};
    if (st->sink_fd >= 0)
        r.body_len = st->len;
    if (st->body && !st->too_large && !st->busy) {
        st->body[st->len] = 0; /* cap is always > len while the body fits */
        r.body = st->body;
        r.body_len = st->len;
    }
    r.who = st->who;
    enum MHD_Result rc = routes_dispatch(&r);
    park_lapse(&st->park); /* a ticket the route did not wait on */
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    /* the account look-ups asked since the request began count for it, however long they took
     * (core/nsscache.h): a request that needs several keys, each answered slowly, does not
     * find the first expired once the last comes, and park again without end */
    const conn_state *st = *con_cls;
    uint64_t was = nsscache_accept_since(st ? st->park.since : 0);
    enum MHD_Result rc = on_request_run(c, url, method, upload, upload_size, con_cls);
    nsscache_accept_since(was);
    return rc;
}

/* What a person changed through the TLS listener: a change answered 2xx (reads are not
 * recorded, refusals were; an answer of 4xx or 5xx changed nothing, and recording each would
 * let one connection grow the trail as fast as it asks). Called by http_reply_json before the
 * answer's commit (reply_conn.audit), so that the record is committed with the change or before
 * its answer; for an answer queued otherwise, when the request is done (on_done). */
static int audit_answer(struct MHD_Connection *c, unsigned status, jerr *e)
{
    const union MHD_ConnectionInfo *sc = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    const reply_conn *rc = sc ? sc->socket_context : NULL;
    conn_id *id = rc ? rc->owner : NULL;
    if (!id || id->audited || !id->tls || !id->known || id->refused.msg[0] || read_only(rc->method) ||
        status < 200 || status >= 300)
        return 0;
    id->audited = true;
    char detail[240];
    snprintf(detail, sizeof detail, "%s: %u", id->request, status);
    return audit_change(&id->who, id->made && id->made[0] ? id->made : NULL, detail, e) < 0 ? -1 : 1;
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
    conn_id *id = rc ? rc->owner : NULL;
    if (id && !id->audited && hs && hs->http_status >= 200 && hs->http_status < 300) {
        /* a 2xx not queued by http_reply_json (a stream's): recorded now, its commit the turn's */
        jerr e = {0};
        audit_answer(c, hs->http_status, &e);
    }
    if (id) {
        id->audited = false;
        id->made = NULL;
    }
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
        if (st->acct)
            st->acct->body_bytes -= st->cap;
        free(st->body);
        free(st);
        *con_cls = NULL;
    }
}

static void on_mhd(watch *w, uint32_t events) { /* progress is made in http_run after every wake */ }

/* A TLS listener's new connections, accepted here (a bounded number a wake: the loop's
 * watch is level-triggered, the rest comes at the next turn), each handed over or left waiting
 * (waiter_admit). Out of descriptors: the listener is left alone for a moment, not spun on. */
static int64_t accept_again_ms;
/* said once a minute, not at each try (ten a second while the descriptors last out): a log line
 * a try would be a lever for whoever holds the descriptors */
static int64_t accept_warned_ms;
static unsigned accept_failed;
static void on_accept(watch *lw, uint32_t events)
{
    (void)events;
    struct server *sv = lw->data;
    int64_t now = now_ms();
    for (int i = 0; i < ACCEPTS_PER_WAKE; i++) {
        struct sockaddr_storage sa;
        socklen_t alen = sizeof sa;
        int fd = accept4(lw->fd, (struct sockaddr *)&sa, &alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                accept_failed++;
                if (!accept_warned_ms || now - accept_warned_ms >= 60000) {
                    log_warn("remote: accepting on %s: %s; the listener waits a moment (said once a minute: %u "
                             "tries failed since the last time)",
                             sv->addr, strerror(errno), accept_failed);
                    accept_warned_ms = now;
                    accept_failed = 0;
                }
                for (unsigned k = 0; k < nservers; k++)
                    if (servers[k].tls)
                        loop_del(&servers[k].listen);
                accept_again_ms = now + 100;
            }
            return; /* EAGAIN: none left */
        }
        waiter_admit(sv, fd, &sa, alen, now);
    }
}

/* "10.0.0.7:51234", "[::1]:51234": where a TLS client connects from (the audit). */
static void peer_text(struct MHD_Connection *c, char *out, size_t len)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char host[INET6_ADDRSTRLEN + 1] = "?", port[8] = "?";
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (sa)
        getnameinfo(sa, sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in), host,
                    sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(out, len, sa && sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

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
static struct conn_count conn_counts[CONN_UIDS];
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
        *free_slot = (struct conn_count){.uid = uid};
    return add ? free_slot : NULL;
}

/* A user's connections: at most server.max_connections_per_user over every server, and to each
 * server a quarter of what it takes at once (a limit short of four times the configured share:
 * ulimit -n 256 gives the socket 64); each server's last eighth is kept for admins and users with
 * at most CONN_FLOOR there (common/fairshare.h), so that four users each within its share cannot
 * hold all of one server's. A user's connections to one server are not counted against its share
 * of another (16 on the socket leave its TLS connections their own quarter of the listener). */
#define CONN_FLOOR 2

/* Counts a connection against its account's share; false, and why in e, when it may not be. */
static bool conn_count(conn_id *id, jerr *e)
{
    if (authz_may(&id->who, AUTHZ_UNLIMITED))
        return true;
    /* (counted with no cap too: its request bodies' share of the buffer is kept in its slot) */
    struct conn_count *slot = conn_slot(id->who.uid, true);
    if (!slot) {
        jerr_http(e, 429, "more than %u users have connections open: try again once some close", CONN_UIDS);
        return !per_user_cap; /* more distinct users than the table holds: refused under a cap */
    }
    size_t si = (size_t)(id->sv - servers);
    if (per_user_cap) {
        char who[sizeof id->who.person + 16];
        if (id->who.person[0])
            snprintf(who, sizeof who, "%s", id->who.person);
        else
            snprintf(who, sizeof who, "uid %u", (unsigned)id->who.uid);
        if (slot->n >= per_user_cap) {
            jerr_http(e, 429, "%s has %u connections open already (to %s and joblet's other servers), its share "
                              "(server.max_connections_per_user, %u): close some",
                      who, slot->n, id->sv->addr, per_user_cap);
            return false;
        }
        fairshare f = fairshare_of(id->sv->limit, per_user_cap, CONN_FLOOR);
        switch (fairshare_take(&f, id->sv->counted, slot->on[si], 1, false)) {
        case FAIRSHARE_OK:
            break;
        case FAIRSHARE_SHARE:
            jerr_http(e, 429, "%s has %u connections open already to %s, its share there (a quarter of the %u it "
                              "takes at once, at most server.max_connections_per_user, %u): close some",
                      who, slot->on[si], id->sv->addr, id->sv->limit, per_user_cap);
            return false;
        case FAIRSHARE_FULL:
        case FAIRSHARE_RESERVED:
            jerr_busy(e, "%s takes %u connections at once, and the last %llu are kept for admins and for users with "
                         "at most %u open there; %s has %u: try again once some close",
                      id->sv->addr, id->sv->limit, (unsigned long long)f.reserve, CONN_FLOOR, who, slot->on[si]);
            return false;
        }
    }
    slot->n++;
    slot->on[si]++;
    id->slot = slot;
    id->sv->counted++;
    return true;
}

/* Settles who a connection is, once: true when it may ask (id->who), false when refused
 * (id->refused says why; a TLS refusal is in the audit trail). */
static bool conn_identify(struct MHD_Connection *c, conn_id *id, char *wait, size_t wait_len)
{
    if (id->known)
        return !id->refused.msg[0];
    id->known = true;
    if (wait)
        wait[0] = 0;
    if (!id->tls) {
        /* on_connection settles the unix socket's: here only when SO_PEERCRED failed */
        jerr_http(&id->refused, 403, "cannot read the caller's credentials (SO_PEERCRED)");
        return false;
    }
    const union MHD_ConnectionInfo *ti = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    caller seen = {.uid = (uid_t)-1, .via = CALLER_TLS};
    peer_text(c, seen.peer, sizeof seen.peer);
    jerr *e = &id->refused;
    if (ti && wait && tls_verify((gnutls_session_t)ti->tls_session, &seen, e) == 0) {
        /* the account it acts as, asked off the loop (core/nsscache.h): not settled until known */
        bool mapped;
        const char *account = authz_remote_account(seen.person, &mapped);
        if (!nsscache_user(account, NULL, NULL)) {
            snprintf(wait, wait_len, "%s", account);
            id->known = false;
            *e = (jerr){0};
            return false;
        }
    }
    *e = (jerr){0};
    if (!ti || tls_verify((gnutls_session_t)ti->tls_session, &seen, e) < 0 ||
        authz_remote(seen.person, seen.role, &id->who, e) < 0) {
        /* kept among the pending: a refused connection is closed like one that never asked */
        audit_caller("refused", &seen, NULL, e->msg);
        return false;
    }
    snprintf(id->who.serial, sizeof id->who.serial, "%s", seen.serial);
    snprintf(id->who.peer, sizeof id->who.peer, "%s", seen.peer);
    id->peer = tls_peer_keep((gnutls_session_t)ti->tls_session);
    id->not_after = tls_peer_not_after(id->peer);
    if (id->not_after && (!next_expiry_ms || id->not_after * 1000 + 1000 < next_expiry_ms))
        next_expiry_ms = id->not_after * 1000 + 1000;
    if (!conn_count(id, e)) {
        audit_caller("refused", &id->who, NULL, e->msg);
        return false;
    }
    pending_remove(id);
    return true;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    server *sv = cls;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        /* the connection's own: what its answers need to know (reply.h), who it is */
        reply_conn *rc = xcalloc(1, sizeof *rc);
        conn_id *id = xcalloc(1, sizeof *id);
        rc->owner = id;
        rc->audit = audit_answer;
        *socket_context = rc;
        id->fd = ci ? ci->connect_fd : -1;
        id->tls = sv->tls;
        id->sv = sv;
        if (id->tls) {
            id->tls_next = tls_conns;
            if (tls_conns)
                tls_conns->tls_prev = id;
            tls_conns = id;
            const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
            pending_add(id, ai ? ai->client_addr : NULL);
            return;
        }
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
            return; /* refused at its first request (conn_identify) */
        id->who = authz_local(cred.uid, cred.gid);
        id->who.pid = cred.pid;
        authz_local_known(cred.uid); /* its account asked now, if it is not known: see on_request */
        id->known = true;
        jerr why = {0};
        if (!conn_count(id, &why)) {
            /* closed before libmicrohttpd reads from it (it holds nothing then), with the reason
             * written first for the client to read (rnx reads it though its request cannot be
             * sent: cli/client.c); a few hundred bytes, into an empty socket buffer */
            char raw[2048];
            size_t n = http_reply_error_raw(&why, raw, sizeof raw);
            if (n && send(ci->connect_fd, raw, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                log_debug("a refused connection's answer: %s", strerror(errno));
            shutdown(ci->connect_fd, SHUT_RDWR);
        }
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        reply_conn *rc = *socket_context;
        conn_id *id = rc->owner;
        pending_remove(id);
        tls_conns_remove(id);
        if (id->slot && id->slot->n) {
            id->slot->n--;
            size_t si = (size_t)(id->sv - servers);
            if (id->slot->on[si])
                id->slot->on[si]--;
        }
        if (id->slot && id->sv->counted)
            id->sv->counted--;
        tls_peer_free(id->peer);
        free(id);
        free(rc);
        *socket_context = NULL;
    }
}

/* Connections open at once: server.max_connections, and at most a quarter of the descriptors
 * joblet may open. The connections' half is their sockets' and what they hold besides (a log
 * follower 4 files, a terminal 3: core/connfds.h), counted there: when the limit is short of
 * twice server.max_connections, each gets half of that half. Each connection is one; past a limit
 * above the descriptors, idle connections of a few users (each within its share) took them all,
 * and a job's launch failed with EMFILE (issue 25, the daemon's sibling of finding 7); so did
 * three users' log followers (test_hostile_fds.py). The other half is joblet's own: the
 * database, logs, launches, cgroups. */
static unsigned connection_limit(unsigned configured)
{
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) < 0 || nofile.rlim_cur == RLIM_INFINITY) {
        connfds_set(UINT64_MAX, UINT64_MAX);
        return configured;
    }
    uint64_t half = nofile.rlim_cur / 2;
    if (half >= 2 * (uint64_t)configured) {
        connfds_set(half - configured, nofile.rlim_cur);
        return configured;
    }
    unsigned n = half / 2 > 16 ? (unsigned)(half / 2) : 16;
    connfds_set(half > n ? half - n : 0, nofile.rlim_cur);
    static bool said;
    if (!said)
        log_warn("server.max_connections is %u, but joblet may open %llu files (ulimit -n): at most %u connections at "
                 "once, and %llu descriptors for what they hold besides (log followers, terminals, execs, copies, "
                 "uploads), so that they never take the descriptors jobs need (the systemd unit sets "
                 "LimitNOFILE=1048576)", configured, (unsigned long long)nofile.rlim_cur, n,
                 (unsigned long long)connfds_budget());
    said = true;
    return n;
}

/* One server's part of the connections (MHD_OPTION_CONNECTION_LIMIT): server.max_connections, or
 * the connections' half of the descriptors, shared by the servers (the socket and each TLS
 * listener), so that all of them together keep within it (before, the socket had all of it and
 * the listeners their parts besides); 16 at least. */
static unsigned server_share(const http_limits *lim)
{
    unsigned limit = connection_limit(lim->max_conns ? lim->max_conns : 4096u) / (lim->servers ? lim->servers : 1);
    return limit < 16 ? 16 : limit;
}

static int server_watch(server *sv, jerr *e)
{
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(sv->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    sv->w = (watch){di->epoll_fd, on_mhd, NULL};
    if (loop_add(&sv->w) < 0)
        return jerr_sys(e, "watch the HTTP server on %s", sv->addr);
    return 0;
}

int http_start(const char *path, mode_t mode, const http_limits *lim, jerr *e)
{
    uint64_t max_body = lim->max_body;
    per_user_cap = lim->per_user;
    idle_s = lim->idle_timeout_s ? lim->idle_timeout_s : 300u;
    body_limit = max_body;
    buffer_budget = max_body + max_body / 2 > (64u << 20) ? max_body + max_body / 2 : (64u << 20);
    user_share = buffer_budget / 4 > max_body + 1 ? buffer_budget / 4 : max_body + 1;
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
    server *sv = &servers[0];
    snprintf(sv->addr, sizeof sv->addr, "%.63s", path);
    unsigned limit = server_share(lim);
    sv->limit = limit;
    sv->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG, 0, NULL,
                               NULL, on_request,
                               /* the logger first: libmicrohttpd reads the options in order */
                               NULL, MHD_OPTION_EXTERNAL_LOGGER, reply_mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
                               MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
                               MHD_OPTION_NOTIFY_CONNECTION, on_connection, sv, MHD_OPTION_CONNECTION_TIMEOUT,
                               lim->idle_timeout_s ? lim->idle_timeout_s : 300u, MHD_OPTION_CONNECTION_LIMIT, limit,
                               MHD_OPTION_END);
    if (!sv->mhd) {
        close(fd);
        return jerr_set(e, EIO, "libmicrohttpd could not start on %s", path);
    }
    nservers = 1;
    return server_watch(sv, e);
}

/* "0.0.0.0:7443", "[::]:7443": a listening TCP socket. */
static int tcp_listen(const char *addr, jerr *e)
{
    char host[64];
    const char *colon = strrchr(addr, ':');
    snprintf(host, sizeof host, "%.*s", colon ? (int)(colon - addr) : 0, addr);
    bool v6 = host[0] == '[';
    if (v6) {
        host[strlen(host) - 1] = 0;
        memmove(host, host + 1, strlen(host));
    }
    struct addrinfo hints = {.ai_family = v6 ? AF_INET6 : AF_INET, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE}, *ai = NULL;
    int rc = colon ? getaddrinfo(host, colon + 1, &hints, &ai) : EAI_NONAME;
    if (rc)
        return jerr_set(e, EINVAL, "remote.listen: %s: %s", addr, gai_strerror(rc));
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
        jerr_sys(e, "remote.listen: listen on %s", addr);
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

int http_remote_load(const remote_config *rc, jerr *e)
{
    if (!rc->nlisten || tls_load(rc->pki_dir, e) == 0)
        return 0;
    char msg[sizeof e->msg];
    snprintf(msg, sizeof msg, "%s", e->msg);
    return jerr_set(e, e->code ? e->code : EINVAL, "remote: %s (remote.pki_dir; docs/remote.md)", msg);
}

int http_start_remote(const remote_config *rc, const http_limits *lim, jerr *e)
{
    if (!rc->nlisten)
        return 0;
    if (!tls_ca_pem() && http_remote_load(rc, e) < 0)
        return -1;
    pending.max = rc->max_pending;
    pending.timeout_ms = (int64_t)rc->handshake_timeout_s * 1000;
    waiting.per_s = rc->handshakes_per_s;
    waiting.all_per_s = rc->handshakes_total_per_s;
    waiting.all_tokens = 2 * waiting.all_per_s;
    waiting.all_refilled_ms = now_ms();
    static char *trust; /* libmicrohttpd keeps the pointer: a copy of its own, for its lifetime */
    if (!trust)
        trust = xstrdup(tls_ca_pem());
    unsigned limit = server_share(lim);
    waiting.max = rc->max_pending < limit ? rc->max_pending : limit;
    for (unsigned i = 0; i < rc->nlisten; i++) {
        int fd = tcp_listen(rc->listen[i], e);
        if (fd < 0)
            return -1;
        server *sv = &servers[nservers];
        sv->tls = true;
        sv->limit = limit;
        snprintf(sv->addr, sizeof sv->addr, "%s", rc->listen[i]);
        /* the listener is joblet's own (on_accept): libmicrohttpd gets connections at their pace */
        sv->mhd = MHD_start_daemon(MHD_USE_TLS | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
                                       MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET,
            0, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, reply_mhd_log, NULL,
            MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_NOTIFY_CONNECTION,
            on_connection, sv, MHD_OPTION_CONNECTION_TIMEOUT, lim->idle_timeout_s ? lim->idle_timeout_s : 300u,
            MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_HTTPS_CERT_CALLBACK, tls_cert_callback,
            MHD_OPTION_HTTPS_MEM_TRUST, trust, MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES, MHD_OPTION_END);
        if (!sv->mhd) {
            close(fd);
            return jerr_set(e, EIO, "libmicrohttpd could not start TLS on %s", rc->listen[i]);
        }
        nservers++;
        sv->listen = (watch){fd, on_accept, sv};
        if (server_watch(sv, e) < 0)
            return -1;
        if (loop_add(&sv->listen) < 0)
            return jerr_sys(e, "watch the TLS listener on %s", sv->addr);
        log_info("remote: listening on %s (TLS 1.3, client certificates of %s/ca.pem; at most %u handshakes a second "
                 "from one address, %u at once; %u a second from all together, %u at once)",
                 rc->listen[i], rc->pki_dir, (unsigned)rc->handshakes_per_s, 2 * (unsigned)rc->handshakes_per_s,
                 (unsigned)rc->handshakes_total_per_s, 2 * (unsigned)rc->handshakes_total_per_s);
    }
    return 0;
}

/* A TLS connection whose certificate no longer holds (revoked, no longer trusted, expired), its
 * streams included: closed now, with a `closed` audit record; a request of it already read is
 * refused too. */
static void conn_cut(conn_id *id, const char *why)
{
    shutdown(id->fd, SHUT_RDWR);
    if (id->refused.msg[0])
        return;
    audit_caller("closed", &id->who, NULL, why);
    jerr_http(&id->refused, 403, "%s", why);
}

int http_reload_remote(jerr *e)
{
    if (tls_reload(e) < 0)
        return -1;
    /* a revoked certificate's connections end now, not at their next request: a stream it
     * follows, a terminal it types into, an exec it runs (docs/remote.md, "Revoking"); so do
     * those of a certificate the CA in use no longer signs (a CA replaced: its key leaked), each
     * checked again as at its first request, not by its serial alone */
    unsigned closed = 0;
    for (conn_id *id = tls_conns; id; id = id->tls_next) {
        if (!id->known)
            continue;
        caller seen = {0};
        jerr je = {0};
        bool revoked = id->who.serial[0] && tls_revoked(id->who.serial);
        if (!revoked && (!id->peer || id->refused.msg[0] || tls_peer_check(id->peer, &seen, &je) == 0))
            continue;
        char why[sizeof je.msg + 64];
        snprintf(why, sizeof why, "%s (a reload)", revoked ? "its certificate was revoked" : je.msg);
        conn_cut(id, why);
        closed++;
    }
    if (closed)
        log_info("remote: %u connection%s of revoked or no longer trusted certificates closed", closed,
                 closed == 1 ? "" : "s");
    return 0;
}

/* Connections whose certificate expired while they were open: a log followed, a terminal, an
 * exec: closed as a reload closes a revoked one's (a request of one is refused at once:
 * request_caller). */
static void expire_certificates(int64_t now)
{
    next_expiry_ms = 0;
    unsigned closed = 0;
    for (conn_id *id = tls_conns; id; id = id->tls_next) {
        if (!id->known || !id->not_after || id->refused.msg[0])
            continue;
        int64_t at = id->not_after * 1000 + 1000;
        if (now < at) {
            if (!next_expiry_ms || at < next_expiry_ms)
                next_expiry_ms = at;
            continue;
        }
        char why[300];
        snprintf(why, sizeof why, "the client certificate of %s (serial %s) expired while its connection was open: "
                 "make a new one (joblet cert client)", id->who.person, id->who.serial);
        conn_cut(id, why);
        closed++;
    }
    if (closed)
        log_info("remote: %u connection%s of expired certificates closed", closed, closed == 1 ? "" : "s");
}

void http_run(void)
{
    int64_t now = now_ms();
    incoming_expire(now);
    pending_expire(now);
    waiters_run(now);
    srcs_sweep(now);
    if (accept_again_ms && now >= accept_again_ms) {
        accept_again_ms = 0;
        for (unsigned i = 0; i < nservers; i++)
            if (servers[i].tls && loop_add(&servers[i].listen) < 0)
                log_err("remote: watching the listener on %s again: %s", servers[i].addr, strerror(errno));
    }
    if (next_expiry_ms && now >= next_expiry_ms)
        expire_certificates(now);
    /* (an upgraded TLS connection's bytes do not go through libmicrohttpd: attach.c, tls.h) */
    for (unsigned i = 0; i < nservers; i++)
        MHD_run(servers[i].mhd);
}

/* The earlier of ms (-1: none) and a deadline at (0: none). */
static int until_deadline(int ms, int64_t at)
{
    if (!at)
        return ms;
    int64_t d = at - now_ms();
    int up = d < 0 ? 0 : d > 60000 ? 60000 : (int)d + 1;
    return ms < 0 || up < ms ? up : ms;
}

int http_timeout_ms(void)
{
    int ms = -1;
    for (unsigned i = 0; i < nservers; i++) {
        MHD_UNSIGNED_LONG_LONG t;
        if (MHD_get_timeout(servers[i].mhd, &t) == MHD_YES && (ms < 0 || t < (MHD_UNSIGNED_LONG_LONG)ms))
            ms = t > 60000 ? 60000 : (int)t;
    }
    ms = until_deadline(ms, incoming_next_deadline());
    ms = until_deadline(ms, next_expiry_ms);
    ms = until_deadline(ms, waiting.n ? waiting.next_ms : 0);
    ms = until_deadline(ms, accept_again_ms);
    return until_deadline(ms, pending.head ? pending.head->since_ms + pending.timeout_ms : 0);
}

void http_stop(void)
{
    if (!nservers)
        return;
    /* libmicrohttpd refuses to stop with connections suspended: the parked ones get an answer */
    jerr e = {0};
    jerr_http(&e, 503, "joblet is stopping; try again when it is back");
    park_wake_all(&e);
    jobs_list_stop();
    stream_stop_all();
    attach_stop_all();
    waiters_drop_all();
    for (unsigned i = 0; i < nservers; i++) {
        if (servers[i].tls) {
            if (!accept_again_ms)
                loop_del(&servers[i].listen);
            close(servers[i].listen.fd);
        }
        MHD_run(servers[i].mhd);
        MHD_stop_daemon(servers[i].mhd);
        servers[i].mhd = NULL;
    }
    nservers = 0;
    tls_free();
    incoming_drop_all();
    unlink(sock_path);
}
