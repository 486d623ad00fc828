/* GET /metrics on the unix socket (a route like any other) and on the optional TCP listener
 * for Prometheus. The listener is a second libmicrohttpd daemon with an internal thread: a
 * scrape there must never read the core's state, which belongs to the loop thread, so it
 * signals an eventfd the loop watches and waits on a condition variable until the loop has
 * built a fresh text, or 5 s at most. Each connection has a thread of its own (64 at most, 8 of
 * one peer), so that scrapes do wait together: with the daemon's one thread they waited one
 * after another, a gap each, and one local user's 8 connections held every other scrape behind
 * theirs (8 gaps, up to 16 s). Scrapes that wait together share one text, and the loop
 * builds at most one per BUILD_GAP (a text reads every running job's cgroup files, so anyone
 * who may scrape, in a loop from many connections, would otherwise hold the loop building
 * them): a scrape is still answered with a text begun after it arrived, up to a gap later. */
#include "metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/netaddr.h"
#include "../common/promtext.h"
#include "../common/tcpowner.h"
#include "../common/thread.h"
#include "../common/util.h"
#include "../core/account.h"
#include "../core/loop.h"
#include "../core/metrics.h"
#include "reply.h"

#define SCRAPE_WAIT_MS 5000
/* After a text that took d to build, the next waits max(BUILD_GAP_MIN_MS, 9 d): the listener's
 * scrapes take at most a tenth of the loop's time however many come, and a scrape of a
 * machine of many jobs waits at most BUILD_GAP_MAX_MS more (well within SCRAPE_WAIT_MS). */
#define BUILD_GAP_MIN_MS 100
#define BUILD_GAP_MAX_MS 2000

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *type, char *text)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result metrics_reply(request *r)
{
    if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
        jerr e = {0};
        jerr_http(&e, 404, "no route %s %s; /metrics answers GET", r->method, r->path);
        return http_reply_error(r->conn, &e);
    }
    /* The text names every user's running jobs; /v1/jobs shows a user only their own. */
    jerr e = {0};
    if (authz_check(&r->who, AUTHZ_METRICS, "/metrics names every user's jobs: it", &e) < 0) {
        size_t n = strlen(e.msg);
        snprintf(e.msg + n, sizeof e.msg - n, ". Prometheus scrapes the metrics.listen address instead");
        return http_reply_error(r->conn, &e);
    }
    return reply_text(r->conn, 200, PROM_CONTENT_TYPE, metrics_text());
}

/* ---- the TCP listener ---- */

static struct {
    pthread_mutex_t mu;
    pthread_mutex_t peers_mu; /* the peers' counts (each connection's thread ends its own) */
    pthread_cond_t cv;
    struct MHD_Daemon *mhd;
    int efd;
    watch w;
    int tfd;            /* the loop's timer for a text asked for within the gap */
    watch tw;
    bool timer_set;     /* loop thread only, as next_build_ms */
    int64_t next_build_ms; /* monotonic: no text is built before it */
    uint64_t asked;     /* scrapes that asked the loop for a text */
    uint64_t answered;  /* the value of asked when the loop began the current text */
    char *text;         /* the loop's latest text */
    bool stopping;
    char where[80];
    char readers[512];  /* metrics.readers; "" = every peer */
    char cg_mount[256]; /* the cgroup2 mount point, and beneath it the jobs' parent ("" none) */
    char cg_jobs[400];
} listener = {.mu = PTHREAD_MUTEX_INITIALIZER, .peers_mu = PTHREAD_MUTEX_INITIALIZER, .efd = -1, .tfd = -1};

/* Loop thread: a text for the scrapes that wait now, unless none does. */
static void build(void)
{
    pthread_mutex_lock(&listener.mu);
    uint64_t gen = listener.asked;
    bool wanted = gen > listener.answered;
    pthread_mutex_unlock(&listener.mu);
    if (!wanted)
        return;
    int64_t t0 = mono_ns();
    char *text = metrics_text();
    int64_t took_ms = (mono_ns() - t0) / 1000000, gap = 9 * took_ms;
    gap = gap < BUILD_GAP_MIN_MS ? BUILD_GAP_MIN_MS : gap > BUILD_GAP_MAX_MS ? BUILD_GAP_MAX_MS : gap;
    listener.next_build_ms = mono_ms() + gap;
    pthread_mutex_lock(&listener.mu);
    free(listener.text);
    listener.text = text;
    listener.answered = gen;
    pthread_cond_broadcast(&listener.cv);
    pthread_mutex_unlock(&listener.mu);
}

/* Loop thread: a scrape is waiting; its text is built now, or when the gap since the last
 * one is over (the timer). */
static void on_ask(watch *w, uint32_t events)
{
    (void)events;
    uint64_t v;
    while (read(w->fd, &v, sizeof v) == sizeof v)
        ;
    if (listener.timer_set)
        return; /* the text due at the timer is theirs too */
    int64_t wait = listener.next_build_ms - mono_ms();
    if (wait <= 0) {
        build();
        return;
    }
    struct itimerspec it = {.it_value = {.tv_sec = wait / 1000, .tv_nsec = (wait % 1000) * 1000000L}};
    if (timerfd_settime(listener.tfd, 0, &it, NULL) == 0)
        listener.timer_set = true;
    else
        build(); /* (cannot happen with a valid timer): answered now rather than never */
}

static void on_timer(watch *w, uint32_t events)
{
    (void)events;
    uint64_t v;
    while (read(w->fd, &v, sizeof v) == sizeof v)
        ;
    listener.timer_set = false;
    build();
}

/* A connection's thread: a text built after this call began, or NULL after the wait. */
static char *ask_loop(void)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += SCRAPE_WAIT_MS / 1000;
    until.tv_nsec += (long)(SCRAPE_WAIT_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&listener.mu);
    uint64_t mine = ++listener.asked;
    pthread_mutex_unlock(&listener.mu);
    uint64_t one = 1;
    if (write(listener.efd, &one, sizeof one) != sizeof one && errno != EAGAIN)
        return NULL;
    char *text = NULL;
    pthread_mutex_lock(&listener.mu);
    while (!listener.stopping && listener.answered < mine)
        if (pthread_cond_timedwait(&listener.cv, &listener.mu, &until) == ETIMEDOUT)
            break;
    if (!listener.stopping && listener.answered >= mine && listener.text)
        text = strdup(listener.text);
    pthread_mutex_unlock(&listener.mu);
    return text;
}

static bool refused(struct MHD_Connection *c, jerr *e);

static enum MHD_Result on_scrape(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    static int seen;
    if (!*con_cls) { /* headers only so far: answer once any body has been read */
        *con_cls = &seen;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0; /* a body is not expected; it is read and dropped */
        return MHD_YES;
    }
    if (strcmp(url, "/metrics") != 0)
        return reply_text(c, 404, "text/plain; charset=utf-8",
                          strdup("404 not found: this listener serves only GET /metrics\n"));
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        struct MHD_Response *r = MHD_create_response_from_buffer(
            strlen("405 method not allowed: use GET /metrics\n"), (void *)"405 method not allowed: use GET /metrics\n",
            MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Allow", "GET, HEAD");
        MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
        enum MHD_Result rc = MHD_queue_response(c, 405, r);
        MHD_destroy_response(r);
        return rc;
    }
    jerr e = {0};
    if (refused(c, &e))
        return reply_text(c, 403, "text/plain; charset=utf-8", xstrdup(e.msg));
    char *text = ask_loop();
    if (!text)
        return reply_text(c, 503, "text/plain; charset=utf-8",
                          strdup("503 service unavailable: joblet's event loop did not answer within 5 s (or joblet "
                                 "is stopping)\n"));
    return reply_text(c, 200, PROM_CONTENT_TYPE, text);
}

/* Connections open by each peer, at most METRICS_PER_PEER each, so that no one of them holds
 * the listener's 64 and a scraper gets no answer: on loopback, where every local user comes from
 * 127.0.0.1, a peer is the uid that opened the connection (common/tcpowner.h: the kernel's exact
 * look-up of the client's socket); elsewhere its address. One over its share is shut down unanswered
 * as it starts. Counted under listener.peers_mu: a connection starts on the listener's thread
 * and ends on its own. A slot's key does not change while it counts a connection. */
#define METRICS_PER_PEER 8
#define PEER_LOCAL (1ull << 62) /* | its uid: a client on this machine */
#define PEER_GONE (1ull << 61)  /* a local client the kernel no longer knows */
#define PEER_REMOTE (1ull << 63) /* | a hash of its address: a client elsewhere */
#define METRICS_CONNS 64
#define METRICS_STACK (1u << 20) /* each connection's thread's: a scrape, an account's look-up (NSS) */
static struct peer_count {
    uint64_t key;
    unsigned n;                /* 0: a free place */
} peers[METRICS_CONNS];

/* A socket made in a job's cgroup is its owner's (the cgroup user-N beneath the jobs' parent),
 * whichever uid the kernel says made it: a --network=host gVisor sandbox makes its sockets as
 * its sandbox uid, no user's (docs/sandbox.md; as host uid 0 under an older joblet, which would
 * pass for root). One in a job of no known owner made as uid 0 is "gone": nobody to answer. */
static int64_t job_owner(uint64_t cg, uid_t uid)
{
    char path[512];
    size_t n = strlen(listener.cg_jobs);
    if (!cg || !n || tcpowner_cgroup_path(listener.cg_mount, cg, path, sizeof path) < 0 ||
        strncmp(path, listener.cg_jobs, n) || path[n] != '/')
        return uid;
    unsigned long owner;
    char *end;
    if (!strncmp(path + n + 1, "user-", 5) && (owner = strtoul(path + n + 6, &end, 10), end != path + n + 6) &&
        (*end == '/' || !*end) && owner <= 0xffffffffu)
        return (int64_t)owner;
    return uid ? (int64_t)uid : -1;
}

static uint64_t peer_key(int fd)
{
    struct sockaddr_storage peer, here;
    socklen_t pl = sizeof peer, hl = sizeof here;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || getsockname(fd, (struct sockaddr *)&here, &hl) < 0)
        return PEER_GONE; /* (gone already: one key for all such) */
    uid_t uid;
    const struct sockaddr *a = (const struct sockaddr *)&peer;
    /* a client on this machine (on loopback, or at one of the machine's own addresses) is its
     * uid; one there the kernel no longer knows is "gone" (not "elsewhere": an unlisted user
     * whose socket the look-up missed would be answered) */
    uint64_t cg = 0;
    if (tcpowner_of(a, (const struct sockaddr *)&here, &uid, &cg) == 0) {
        int64_t owner = job_owner(cg, uid);
        return owner < 0 ? PEER_GONE : PEER_LOCAL | (uint64_t)owner;
    }
    if (tcpowner_local(a))
        return PEER_GONE;
    uint64_t k = 1ull << 60;
    const unsigned char *b = a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)(const void *)a)->sin6_addr.s6_addr
                                                      : (const unsigned char *)&((const struct sockaddr_in *)(const void *)a)->sin_addr;
    for (int i = 0; i < (a->sa_family == AF_INET6 ? 16 : 4); i++)
        k = k * 1099511628211ull ^ b[i];
    return k | PEER_REMOTE;
}

static struct peer_count *peer_of(uint64_t key, bool add)
{
    struct peer_count *free_one = NULL;
    for (size_t i = 0; i < METRICS_CONNS; i++) {
        if (peers[i].n && peers[i].key == key)
            return &peers[i];
        if (!peers[i].n && !free_one)
            free_one = &peers[i];
    }
    if (add && free_one)
        *free_one = (struct peer_count){.key = key};
    return add ? free_one : NULL;
}

/* A connection's thread: whether metrics.readers keeps this connection's client out (e says why): one
 * on this machine is answered for root and those it lists, by its account and groups (look-ups
 * that are safe off the loop thread: core/account.h); one from elsewhere is the network's to
 * keep out. Every local user's connections come from this machine's addresses, jobs on
 * --network=host included. */
static bool refused(struct MHD_Connection *c, jerr *e)
{
    if (!listener.readers[0])
        return false;
    const union MHD_ConnectionInfo *sc = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    const struct peer_count *p = sc ? sc->socket_context : NULL;
    if (!p || p->key == PEER_GONE) {
        jerr_set(e, EACCES, "403 forbidden: metrics.readers is set and the kernel cannot say who this "
                            "connection's client is\n");
        return true;
    }
    if (p->key & PEER_REMOTE)
        return false; /* from elsewhere */
    uid_t uid = (uid_t)(p->key & 0xffffffffu);
    if (uid == 0)
        return false;
    if (account_listed(listener.readers, uid, (gid_t)-1, NULL, 0))
        return false;
    jerr_set(e, EACCES, "403 forbidden: metrics.readers does not list uid %u (the metrics name every user's "
                        "running jobs; an admin adds a reader there)\n", (unsigned)uid);
    return true;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci)
            return;
        uint64_t key = peer_key(ci->connect_fd);
        pthread_mutex_lock(&listener.peers_mu);
        struct peer_count *p = peer_of(key, true);
        bool over = !p || p->n >= METRICS_PER_PEER;
        if (!over)
            p->n++;
        pthread_mutex_unlock(&listener.peers_mu);
        if (over) {
            shutdown(ci->connect_fd, SHUT_RDWR); /* closed unanswered: its peer holds its share */
            return;
        }
        *socket_context = p;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct peer_count *p = *socket_context;
        pthread_mutex_lock(&listener.peers_mu);
        if (p->n)
            p->n--;
        pthread_mutex_unlock(&listener.peers_mu);
        *socket_context = NULL;
    }
}


static void close_watch(void)
{
    if (listener.efd >= 0) {
        loop_del(&listener.w);
        close(listener.efd);
        listener.efd = -1;
    }
    if (listener.tfd >= 0) {
        loop_del(&listener.tw);
        close(listener.tfd);
        listener.tfd = -1;
    }
    listener.timer_set = false;
    listener.next_build_ms = 0;
}

int metrics_listen_start(const char *hostport, const char *readers, const char *cg_mount, const char *cg_root, jerr *e)
{
    if (!hostport || !*hostport)
        return 0;
    snprintf(listener.readers, sizeof listener.readers, "%s", readers ? readers : "");
    snprintf(listener.cg_mount, sizeof listener.cg_mount, "%s", cg_mount ? cg_mount : "");
    if (listener.cg_mount[0] && cg_root && *cg_root)
        snprintf(listener.cg_jobs, sizeof listener.cg_jobs, "%s/%s", listener.cg_mount, cg_root);
    else
        listener.cg_jobs[0] = 0;
    if (listener.mhd)
        return jerr_set(e, EBUSY, "metrics.listen: the listener is already running on %s", listener.where);
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    if (netaddr_hostport("metrics.listen", hostport, &ss, &sl, e) < 0)
        return -1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return jerr_sys(e, "metrics.listen: socket");
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (ss.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 64) < 0) {
        jerr_sys(e, "metrics.listen: cannot listen on %s", hostport);
        close(fd);
        return -1;
    }
    listener.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (listener.efd < 0) {
        close(fd);
        return jerr_sys(e, "metrics.listen: eventfd");
    }
    listener.w = (watch){listener.efd, on_ask, NULL};
    if (loop_add(&listener.w) < 0) {
        jerr_sys(e, "metrics.listen: watch the eventfd");
        close(listener.efd);
        listener.efd = -1;
        close(fd);
        return -1;
    }
    listener.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    listener.tw = (watch){listener.tfd, on_timer, NULL};
    if (listener.tfd < 0 || loop_add(&listener.tw) < 0) {
        jerr_sys(e, "metrics.listen: a timer for the texts' gap");
        if (listener.tfd >= 0)
            close(listener.tfd);
        listener.tfd = -1;
        close_watch();
        close(fd);
        return -1;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&listener.cv, &ca);
    pthread_condattr_destroy(&ca);
    listener.stopping = false;
    listener.asked = listener.answered = 0;
    /* signals stay with the loop thread (signalfd): the listener's threads block them all (each
     * connection's thread starts with its mask) */
    sigset_t old;
    thread_block_all(&old);
    memset(peers, 0, sizeof peers);
    /* a thread per connection: a scrape waits for the loop's text on its own (the file's head) */
    listener.mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
                                        MHD_USE_ERROR_LOG,
                                    0, NULL, NULL, on_scrape, NULL, MHD_OPTION_EXTERNAL_LOGGER, reply_mhd_log, NULL,
                                    MHD_OPTION_LISTEN_SOCKET, fd,
                                    MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONNS,
                                    MHD_OPTION_THREAD_STACK_SIZE, (size_t)METRICS_STACK,
                                    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_NOTIFY_CONNECTION,
                                    on_connection, NULL, MHD_OPTION_END);
    thread_unblock(&old);
    if (!listener.mhd) {
        close(fd);
        close_watch();
        pthread_cond_destroy(&listener.cv);
        return jerr_set(e, EIO, "metrics.listen: libmicrohttpd could not start on %s", hostport);
    }
    snprintf(listener.where, sizeof listener.where, "%s", hostport);
    bool loopback = ss.ss_family == AF_INET ? (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127
                                            : IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
    log_info("metrics: serving GET /metrics on http://%s/metrics%s", hostport,
             loopback ? "" : " (not loopback: whoever can reach it sees job ids and names)");
    return 0;
}

void metrics_listen_stop(void)
{
    if (!listener.mhd)
        return;
    pthread_mutex_lock(&listener.mu);
    listener.stopping = true;
    pthread_cond_broadcast(&listener.cv);
    pthread_mutex_unlock(&listener.mu);
    MHD_stop_daemon(listener.mhd); /* joins its thread; a waiting scrape was answered 503 above */
    listener.mhd = NULL;
    close_watch();
    pthread_cond_destroy(&listener.cv);
    free(listener.text);
    listener.text = NULL;
}
