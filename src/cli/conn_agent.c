/* rnx's keeper of TLS connections to a node (conn_agent.h): the command's side (find the
 * keeper, start it when there is none) and the keeper's (a loop that accepts commands, a thread
 * per command that carries its bytes, threads that make the next spares). */
#include "conn_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "../common/util.h"

/* A node name as the keeper's argument: what ps shows. */
#define NODE_ARG_MAX 80

#ifndef JOBLET_VERSION
#define JOBLET_VERSION "dev"
#endif

/* ---- where a node's keeper listens ----------------------------------------------------------- */

/* The user's private directory for keepers (made when missing and create): 0, or -1 when
 * there is none that is safe (not a directory of ours with mode 0700). */
static int agent_dir(char *out, size_t cap, bool create)
{
    const char *rt = getenv("XDG_RUNTIME_DIR");
    int n = rt && rt[0] == '/' ? snprintf(out, cap, "%s/rnx", rt) : snprintf(out, cap, "/tmp/rnx-%u", (unsigned)getuid());
    if (n < 0 || (size_t)n >= cap)
        return -1;
    if (create && mkdir(out, 0700) < 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(out, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
        return -1;
    return 0;
}

/* FNV-1a, 64 bits, over one string and its NUL. */
static uint64_t fnv(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); ; p++) {
        h = (h ^ *p) * 0x100000001b3ull;
        if (!*p)
            return h;
    }
}

/* The keeper's socket for node p in dir: 0, or -1 when it does not fit a unix socket path. */
static int agent_path(const conn_tls_peer *p, const char *dir, struct sockaddr_un *sa)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const char *const parts[] = {p->node, p->address, p->ca, p->cert, p->key};
    for (size_t i = 0; i < ARRAY_LEN(parts); i++)
        h = fnv(h, parts[i]);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    int n = snprintf(sa->sun_path, sizeof sa->sun_path, "%s/%016llx.sock", dir, (unsigned long long)h);
    return n < 0 || (size_t)n >= sizeof sa->sun_path ? -1 : 0;
}

/* A connection to the keeper at sa: the socket, or -1 with errno (ENOENT, ECONNREFUSED: no
 * keeper; EPERM: the one listening there is not the user's). *pid: the keeper's process. */
static int agent_connect(const struct sockaddr_un *sa, pid_t *pid)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) < 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    struct ucred uc;
    socklen_t ul = sizeof uc;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) < 0 || uc.uid != getuid()) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    if (pid)
        *pid = uc.pid;
    return fd;
}

/* ---- the keeper ------------------------------------------------------------------------------ */

static struct {
    pthread_mutex_t mu;
    conn_tls_creds *cr;          /* NULL when the node's credentials do not load: */
    jerr cr_err;                 /* why, told to every command */
    const conn_tls_peer *peer;
    conn *pool[CONN_AGENT_POOL];       /* idle at an HTTP boundary, rnx's certificate accepted */
    int64_t idle_since[CONN_AGENT_POOL];   /* monotonic ms */
    int npool;
    int filling;                 /* threads making one each */
    int threads;                 /* sessions: commands, and rnx node show looking */
    int active;                  /* commands being carried */
    int64_t last_ms;             /* when the last command ended (or the keeper started) */
    bool refills;                /* the last spare was accepted: keep one ready between commands */
    int64_t idle_max_ms;         /* an idle connection is handed out for this long at most */
} ag = {.mu = PTHREAD_MUTEX_INITIALIZER, .idle_max_ms = CONN_AGENT_IDLE_MAX_S * 1000};

/* Whether an idle connection may carry a command: nothing to read (the node's close, or
 * anything else, makes it useless) and not idle so long that the node may close it now. */
static bool pool_fresh(conn *k, int64_t since)
{
    struct pollfd pfd = {k->fd, POLLIN, 0};
    return conn_pending(k) == 0 && poll(&pfd, 1, 0) == 0 && mono_ms() - since < ag.idle_max_ms;
}

/* Puts k in the pool (ag.mu held), or closes it when the pool is full. */
static void pool_put_locked(conn *k)
{
    if (ag.npool >= CONN_AGENT_POOL) {
        conn_close(k);
        return;
    }
    ag.pool[ag.npool] = k;
    ag.idle_since[ag.npool++] = mono_ms();
}

/* The node's server.idle_timeout_s as GET /v1/version says it (body, len bytes): idle
 * connections are handed out for two thirds of it at most (ag.mu held). A request sent on one
 * the node is closing that moment is lost unanswered, its bytes unread ("no answer": the node
 * closed it at 30 s while the keeper kept it for 60). */
static void learn_idle_locked(const char *body, size_t len)
{
    json_t *v = json_loadb(body, len, 0, NULL);
    json_int_t s = json_integer_value(json_object_get(v, "idle_timeout_s"));
    json_decref(v);
    int64_t ms = s > 0 ? (int64_t)s * 2000 / 3 : 0;
    if (ms > 0 && ms < ag.idle_max_ms)
        ag.idle_max_ms = ms;
}

/* The node checks rnx's certificate at a connection's first request: a spare makes one (GET
 * /v1/version, read to its end) so that a command's first request does not wait for it; it
 * says how long the node keeps an idle connection (learn_idle_locked). 0 when it was answered
 * in full and the connection is kept open. */
static int warm(conn *k)
{
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET /v1/version HTTP/1.1\r\nHost: %s\r\nUser-Agent: rnx/" JOBLET_VERSION
                     "\r\nAccept: application/json\r\nConnection: keep-alive\r\n\r\n", ag.peer->address);
    if (n < 0 || (size_t)n >= sizeof req || !conn_send_all(k, req, (size_t)n))
        return -1;
    char buf[8192];
    size_t len = 0;
    const char *end = NULL;
    while (!end) {
        if (len + 1 >= sizeof buf)
            return -1;
        ssize_t r = conn_read(k, buf + len, sizeof buf - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        len += (size_t)r;
        buf[len] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    if (strncmp(buf, "HTTP/1.1 200", 12))
        return -1;
    for (const char *l = strstr(buf, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n")) {
        const char *v = l + 2 + 11, *eol = strstr(l + 2, "\r\n"), *c;
        if (!strncasecmp(l + 2, "Connection:", 11) && (c = strcasestr(v, "close")) && c < eol)
            return -1;   /* a node that ends each connection after one answer: no spares for it */
    }
    /* its body: Content-Length bytes (joblet answers this one with a length, never chunked) */
    unsigned long long body = 0;
    bool have = false;
    for (const char *l = strstr(buf, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n"))
        if (!strncasecmp(l + 2, "Content-Length:", 15)) {
            body = strtoull(l + 17, NULL, 10);
            have = true;
        }
    if (!have || body >= sizeof buf)
        return -1;
    /* the body, kept while it fits (it does: a small object) */
    size_t start = (size_t)(end + 4 - buf), got = len - start;
    memmove(buf, buf + start, got);
    while (got < body) {
        if (got >= sizeof buf)
            return -1;
        ssize_t r = conn_read(k, buf + got, sizeof buf - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    if (got != body)
        return -1;
    pthread_mutex_lock(&ag.mu);
    learn_idle_locked(buf, got);
    pthread_mutex_unlock(&ag.mu);
    return 0;
}

static void *fill_main(void *arg)
{
    (void)arg;
    jerr e = {0};
    conn *k = conn_tls_dial(ag.cr, &e);
    if (k && warm(k) < 0) {
        conn_close(k);
        k = NULL;
    }
    pthread_mutex_lock(&ag.mu);
    if (k)
        pool_put_locked(k);
    /* refused (a certificate revoked or expired, a node gone): no more spares until a command
     * gets through again, or the keeper would dial a node that refuses it every second */
    ag.refills = k != NULL;
    ag.filling--;
    pthread_mutex_unlock(&ag.mu);
    return NULL;
}

/* Starts making connections until CONN_AGENT_READY are idle or being made (ag.mu held). A
 * node that refuses gets no more attempts than commands: fills start only after a command got
 * through. */
static void fill_locked(void)
{
    while (ag.cr && ag.npool + ag.filling < CONN_AGENT_READY) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int r = pthread_create(&t, &a, fill_main, NULL);
        pthread_attr_destroy(&a);
        if (r != 0)
            return;
        ag.filling++;
    }
}

/* The connection idle for the shortest time, taken out (ag.mu held); stale ones met on the
 * way are closed. */
static conn *pool_take_locked(void)
{
    while (ag.npool) {
        conn *k = ag.pool[--ag.npool];
        if (pool_fresh(k, ag.idle_since[ag.npool]))
            return k;
        conn_close(k);
    }
    return NULL;
}

/* How a command's session ended. */
enum { RELAY_END, RELAY_KEEP };

/* What a command sends is framed (conn_agent.h); this is where its parser stands. */
typedef struct frames {
    unsigned char head[4];
    size_t head_got;
    size_t left;                 /* bytes of a data frame still to come */
} frames;

/* Takes r bytes the command sent: data goes to the node. RELAY_KEEP when the command gave the
 * connection back (a keep frame, the last thing it sends), -1 on a broken frame or when the
 * node is gone, 0 otherwise; *wrote_shut when a shut frame came. */
static int frames_take(frames *f, const unsigned char *b, size_t r, conn *k, bool *wrote_shut)
{
    for (size_t i = 0; i < r;) {
        if (f->left) {
            size_t n = r - i < f->left ? r - i : f->left;
            if (!conn_send_all(k, b + i, n))
                return -1;
            i += n;
            f->left -= n;
            continue;
        }
        f->head[f->head_got++] = b[i++];
        if (f->head_got < sizeof f->head)
            continue;
        f->head_got = 0;
        size_t len = (size_t)f->head[1] << 16 | (size_t)f->head[2] << 8 | f->head[3];
        switch (f->head[0]) {
        case CONN_AGENT_FRAME_DATA: f->left = len; break;
        case CONN_AGENT_FRAME_SHUT:
            if (len || *wrote_shut)
                return -1;
            *wrote_shut = true;
            conn_shutdown_write(k);
            break;
        case CONN_AGENT_FRAME_KEEP: return len || i != r || *wrote_shut ? -1 : RELAY_KEEP;
        default: return -1;
        }
    }
    return 0;
}

/* Carries bytes both ways until the command gives the connection back (RELAY_KEEP) or both
 * sides have ended theirs, or either breaks (RELAY_END). */
static int relay(int fd, conn *k)
{
    unsigned char buf[65536];
    bool from_cmd = true, from_node = true, shut = false;
    frames f = {0};
    while (from_node || from_cmd) {
        struct pollfd pfd[2] = {{fd, from_cmd ? POLLIN : 0, 0}, {k->fd, from_node ? POLLIN : 0, 0}};
        bool ready_node = from_node && conn_pending(k) > 0;
        /* once the command has ended its side, the node gets a minute to end its own (a
         * command gone for good must not keep the keeper from leaving) */
        int pr = ready_node ? 0 : poll(pfd, 2, from_cmd ? -1 : 60000);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0 || (pr == 0 && !ready_node))
            return RELAY_END;
        if (from_cmd && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return RELAY_END;
            if (r == 0) {   /* gone without giving the connection back: it may be mid-answer */
                from_cmd = false;
                if (!shut)
                    conn_shutdown_write(k);
            } else {
                int t = frames_take(&f, buf, (size_t)r, k, &shut);
                if (t != 0)
                    return t == RELAY_KEEP ? RELAY_KEEP : RELAY_END;
            }
        }
        if (from_node && (ready_node || (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))) {
            ssize_t r = conn_read(k, buf, sizeof buf);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return RELAY_END;
            if (r == 0) {
                from_node = false;
                shutdown(fd, SHUT_WR);
                if (from_cmd)   /* the node has ended: whatever the command still sends goes nowhere */
                    return RELAY_END;
            } else if (!conn_fd_send_all(fd, buf, (size_t)r)) {
                return RELAY_END;
            }
        }
    }
    return RELAY_END;
}

/* The first line to a command: ok, or why there is no connection (conn_agent.h). */
static void tell(int fd, const jerr *e)
{
    char line[sizeof e->msg + 64];
    int n = e ? snprintf(line, sizeof line, "err %d\t%s\t%s\n", e->code ? e->code : EIO, e->field, e->msg)
              : snprintf(line, sizeof line, "ok\n");
    for (char *p = line + 4; e && p < line + n - 1; p++)
        if (*p == '\n')
            *p = ' ';
    conn_fd_send_all(fd, line, n > 0 && (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* A command's first byte: 'c', it wants a connection; nothing (rnx node show looking for the
 * keeper), it does not. */
static bool wants_conn(int fd)
{
    char b = 0;
    ssize_t r;
    while ((r = recv(fd, &b, 1, 0)) < 0 && errno == EINTR)
        ;
    return r == 1 && b == 'c';
}

static void *session_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    if (!wants_conn(fd)) {
        close(fd);
        pthread_mutex_lock(&ag.mu);
        ag.threads--;
        pthread_mutex_unlock(&ag.mu);
        return NULL;
    }
    pthread_mutex_lock(&ag.mu);
    ag.active++;
    conn *k = pool_take_locked();
    conn_tls_creds *cr = ag.cr;
    pthread_mutex_unlock(&ag.mu);
    jerr e = {0};
    if (!cr)
        e = ag.cr_err;
    else if (!k)
        k = conn_tls_dial(cr, &e);
    if (!k) {
        tell(fd, &e);
    } else {
        tell(fd, NULL);
        pthread_mutex_lock(&ag.mu);
        fill_locked();
        pthread_mutex_unlock(&ag.mu);
        int how = relay(fd, k);
        pthread_mutex_lock(&ag.mu);
        if (how == RELAY_KEEP && pool_fresh(k, mono_ms()))
            pool_put_locked(k);   /* at an HTTP boundary: the next command's */
        else
            conn_close(k);
        pthread_mutex_unlock(&ag.mu);
    }
    close(fd);
    pthread_mutex_lock(&ag.mu);
    ag.active--;
    ag.threads--;
    ag.last_ms = mono_ms();
    pthread_mutex_unlock(&ag.mu);
    return NULL;
}

static volatile sig_atomic_t agent_stop;
static void on_term(int sig) { (void)sig; agent_stop = 1; }

/* The keeper's life: never returns. lfd listens at path. */
__attribute__((noreturn)) static void agent_run(int lfd, const conn_tls_peer *p, unsigned persist_s, const char *path)
{
    /* listen again: the socket's credentials, which a connecting command reads with
     * SO_PEERCRED, are those of the last listen() (the command that made it, until now) */
    listen(lfd, 64);
    struct stat st;
    ino_t ino = stat(path, &st) == 0 ? st.st_ino : 0;
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    ag.peer = p;
    ag.cr = conn_tls_creds_open(p, &ag.cr_err);
    ag.last_ms = mono_ms();
    for (;;) {
        struct pollfd pfd = {lfd, POLLIN, 0};
        int r = poll(&pfd, 1, 1000);
        if (agent_stop)
            break;
        if (r > 0) {
            int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            struct ucred uc;
            socklen_t ul = sizeof uc;
            if (fd >= 0 && (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) < 0 || uc.uid != getuid())) {
                close(fd);
                fd = -1;
            }
            if (fd >= 0) {
                pthread_mutex_lock(&ag.mu);
                bool room = ag.threads < CONN_AGENT_MAX_SESSIONS;
                pthread_t t;
                pthread_attr_t a;
                pthread_attr_init(&a);
                pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
                if (room && pthread_create(&t, &a, session_main, (void *)(intptr_t)fd) == 0)
                    ag.threads++;
                else
                    close(fd);   /* the command sees no line and dials the node itself */
                pthread_attr_destroy(&a);
                pthread_mutex_unlock(&ag.mu);
            }
        }
        /* gone when the socket file is no longer ours (removed, or another keeper's) */
        if (stat(path, &st) < 0 || st.st_ino != ino)
            break;
        pthread_mutex_lock(&ag.mu);
        bool idle = ag.active == 0 && mono_ms() - ag.last_ms >= (int64_t)persist_s * 1000;
        int kept = 0;
        for (int i = 0; i < ag.npool; i++) {
            if (pool_fresh(ag.pool[i], ag.idle_since[i])) {
                ag.pool[kept] = ag.pool[i];
                ag.idle_since[kept++] = ag.idle_since[i];
            } else {
                conn_close(ag.pool[i]);
            }
        }
        ag.npool = kept;
        if (!idle && ag.refills)
            fill_locked();   /* one kept ready while commands may come */
        pthread_mutex_unlock(&ag.mu);
        if (idle)
            break;
    }
    if (stat(path, &st) == 0 && st.st_ino == ino)
        unlink(path);
    _exit(0);
}

/* Starts a keeper listening at sa (the directory's lock held by the caller): 0, or -1. The
 * keeper is rnx itself, run again as "rnx node keep NAME" (what ps shows), in its own session,
 * with no terminal and no descriptor of the command's but two: 3, the listening socket, and 4,
 * a memfd with what it needs (keeper_read); a pipe of the caller's kept open would keep the
 * caller's reader waiting for ten minutes. */
static int agent_spawn(const struct sockaddr_un *sa, const conn_tls_peer *p, unsigned persist_s)
{
    unlink(sa->sun_path);   /* a keeper that died left it (the lock keeps live ones from this) */
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0)
        return -1;
    int mfd = memfd_create("rnx-keeper", MFD_CLOEXEC);
    char head[64];
    int hl = snprintf(head, sizeof head, "%u", persist_s);
    const char *const parts[] = {head, sa->sun_path, p->node, p->address, p->host, p->port, p->ca, p->cert, p->key};
    bool ok = mfd >= 0 && hl > 0;
    for (size_t i = 0; ok && i < ARRAY_LEN(parts); i++)
        ok = write_all(mfd, parts[i], strlen(parts[i]) + 1) == strlen(parts[i]) + 1;
    if (!ok || lseek(mfd, 0, SEEK_SET) < 0 || bind(lfd, (const struct sockaddr *)sa, sizeof *sa) < 0 ||
        listen(lfd, 64) < 0) {
        close(lfd);
        if (mfd >= 0)
            close(mfd);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (setsid() < 0 || fork() != 0)
            _exit(0);
        int null = open("/dev/null", O_RDWR);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 || dup2(lfd, 3) < 0 ||
            dup2(mfd, 4) < 0 || chdir("/") < 0)
            _exit(1);
        close_range(5, ~0u, 0);
        char name[NODE_ARG_MAX];
        snprintf(name, sizeof name, "%s", p->node);
        char *const argv[] = {"rnx", "node", "keep", name, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(lfd);
    close(mfd);
    if (pid < 0) {
        unlink(sa->sun_path);
        return -1;
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

/* ---- a command's connection through the keeper --------------------------------------------- */

/* Sends one frame: its head, then n bytes of p (a data frame). */
static int frame_send(int fd, char type, const void *p, size_t n)
{
    unsigned char head[4] = {(unsigned char)type, (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                             (unsigned char)n};
    struct iovec iov[2] = {{head, sizeof head}, {(void *)p, n}};
    size_t left = sizeof head + n;
    int at = 0;
    while (left) {
        struct msghdr mh = {.msg_iov = iov + at, .msg_iovlen = (size_t)(2 - at)};
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        left -= (size_t)w;
        while (at < 2 && (size_t)w >= iov[at].iov_len) {
            w -= (ssize_t)iov[at].iov_len;
            iov[at++].iov_len = 0;
        }
        if (at < 2) {
            iov[at].iov_base = (char *)iov[at].iov_base + w;
            iov[at].iov_len -= (size_t)w;
        }
    }
    return 0;
}

static ssize_t kept_read(conn *c, void *buf, size_t cap) { return recv(c->fd, buf, cap, 0); }

static ssize_t kept_write(conn *c, const void *p, size_t n)
{
    if (n > CONN_AGENT_FRAME_MAX)
        n = CONN_AGENT_FRAME_MAX;
    return frame_send(c->fd, CONN_AGENT_FRAME_DATA, p, n) < 0 ? -1 : (ssize_t)n;
}

static size_t kept_pending(conn *c) { return 0; }
static int kept_shutdown_write(conn *c) { return frame_send(c->fd, CONN_AGENT_FRAME_SHUT, NULL, 0); }
static void kept_cork(conn *c) {}
static int kept_uncork(conn *c) { return 0; }

static void kept_close(conn *c)
{
    close(c->fd);
    free(c);
}

/* Gives the connection back, and waits (a second at most) for the keeper to have it in its pool
 * again, which it says by closing its end: a command that dials the keeper again at once (run
 * --follow's log stream after its submission, the job list after whoami) would otherwise find
 * the pool one short while the keeper's thread was still reading the keep frame, and the keeper
 * would dial the node for a spare it does not need (a handshake more under load: CI's run of
 * stop 58). */
static void kept_release(conn *c)
{
    if (frame_send(c->fd, CONN_AGENT_FRAME_KEEP, NULL, 0) == 0) {
        int64_t until = mono_ms() + 1000;
        char b[64];
        for (int64_t left; (left = until - mono_ms()) > 0;) {
            struct pollfd pfd = {c->fd, POLLIN, 0};
            int pr = poll(&pfd, 1, (int)left);
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr <= 0)
                break;
            ssize_t r = recv(c->fd, b, sizeof b, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
                break;
        }
    }
    kept_close(c);
}

static const conn_ops kept_ops = {kept_read,  kept_write,  kept_pending, kept_shutdown_write,
                                  kept_cork,  kept_uncork, kept_close,   kept_release};

/* The keeper's first line on fd: 0 (ok), 1 (it told why in e), -1 (no line: it cannot serve). */
static int agent_hello(int fd, jerr *e)
{
    char line[sizeof e->msg + 64];
    size_t len = 0;
    while (len + 1 < sizeof line && (len == 0 || line[len - 1] != '\n')) {
        ssize_t r = recv(fd, line + len, sizeof line - 1 - len, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        len += (size_t)r;
    }
    line[len] = 0;
    if (!strcmp(line, "ok\n"))
        return 0;
    int code = 0;
    char *f = NULL, *m = NULL;
    if (strncmp(line, "err ", 4) || (code = atoi(line + 4)) <= 0 || !(f = strchr(line, '\t')) ||
        !(m = strchr(f + 1, '\t')))
        return -1;
    *m++ = 0;
    m[strcspn(m, "\n")] = 0;
    e->code = code;
    e->http = 0;
    snprintf(e->field, sizeof e->field, "%s", f + 1);
    snprintf(e->msg, sizeof e->msg, "%s", m);
    return 1;
}

conn *conn_agent_dial(const conn_tls_peer *p, unsigned persist_s, bool *direct, jerr *e)
{
    *direct = true;
    char dir[sizeof ((struct sockaddr_un *)0)->sun_path];
    struct sockaddr_un sa;
    if (agent_dir(dir, sizeof dir, true) < 0 || agent_path(p, dir, &sa) < 0)
        return NULL;
    int fd = agent_connect(&sa, NULL);
    if (fd < 0 && (errno == ENOENT || errno == ECONNREFUSED)) {
        /* none: start one, under the directory's lock so that two commands start one keeper */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            return NULL;
        while (flock(dfd, LOCK_EX) < 0 && errno == EINTR)
            ;
        fd = agent_connect(&sa, NULL);
        if (fd < 0 && (errno == ENOENT || errno == ECONNREFUSED) && agent_spawn(&sa, p, persist_s) == 0)
            fd = agent_connect(&sa, NULL);
        close(dfd);
    }
    if (fd < 0)
        return NULL;
    /* the keeper answers at once, or after its own dial of the node (CONN_TLS_TIMEOUT_MS): a
     * keeper that says nothing for longer is stuck, and the command dials the node itself */
    struct timeval tv = {CONN_TLS_TIMEOUT_MS / 1000 + 5, 0}, none = {0, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int h = !conn_fd_send_all(fd, "c", 1) ? -1 : agent_hello(fd, e);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    if (h != 0) {
        close(fd);
        *direct = h < 0;
        return NULL;
    }
    conn *k = xcalloc(1, sizeof *k);
    k->ops = &kept_ops;
    k->fd = fd;
    k->kept = true;
    *direct = false;
    return k;
}

/* ---- rnx node show, rnx node disconnect ------------------------------------------------------ */

/* Whether node p has a keeper: its process id (from its socket's SO_PEERCRED), 0 when not;
 * *sa its socket. Sends nothing: the keeper's connections stay where they are. */
static pid_t keeper_of(const conn_tls_peer *p, struct sockaddr_un *sa)
{
    char dir[sizeof sa->sun_path];
    pid_t pid = 0;
    if (agent_dir(dir, sizeof dir, false) < 0 || agent_path(p, dir, sa) < 0)
        return 0;
    int fd = agent_connect(sa, &pid);
    if (fd < 0)
        return 0;
    close(fd);
    return pid;
}

pid_t conn_agent_pid(const conn_tls_peer *p)
{
    struct sockaddr_un sa;
    return keeper_of(p, &sa);
}

/* Whether pid is a keeper ("rnx node keep ..."): never signal any other process. */
static bool is_keeper(pid_t pid)
{
    char path[64], cmd[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, cmd, sizeof cmd);
    close(fd);
    static const char want[] = "rnx\0node\0keep\0";
    return n >= (ssize_t)sizeof want - 1 && !memcmp(cmd, want, sizeof want - 1);
}

pid_t conn_agent_stop(const conn_tls_peer *p)
{
    struct sockaddr_un sa;
    pid_t pid = keeper_of(p, &sa);
    if (!pid)
        return 0;
    unlink(sa.sun_path);   /* the keeper also leaves when it sees its socket file gone */
    if (pid > 0 && is_keeper(pid))
        kill(pid, SIGTERM);
    return pid;
}

/* ---- the keeper's process ------------------------------------------------------------------- */

int conn_agent_main(int argc, char **argv)
{
    struct stat st;
    int type = 0;
    socklen_t tl = sizeof type;
    if (argc != 2 || fstat(4, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)(1u << 20) ||
        getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &tl) < 0) {
        fprintf(stderr, "rnx: node keep: rnx starts its keepers itself (rnx node --help); nothing to do\n");
        return 2;
    }
    size_t len = (size_t)st.st_size, got = 0;
    char *d = xmalloc(len + 1);
    ssize_t r;
    while (got < len && ((r = pread(4, d + got, len - got, (off_t)got)) > 0 || (r < 0 && errno == EINTR)))
        got += r > 0 ? (size_t)r : 0;
    close(4);
    d[got] = 0;
    const char *f[9];
    size_t n = 0;
    for (size_t i = 0; i < got && n < ARRAY_LEN(f); i += strlen(d + i) + 1)
        f[n++] = d + i;
    if (n != ARRAY_LEN(f))
        _exit(2);
    static conn_tls_peer p;
    p = (conn_tls_peer){f[2], f[3], f[4], f[5], f[6], f[7], f[8]};
    agent_run(3, &p, (unsigned)strtoul(f[0], NULL, 10), f[1]);
}
