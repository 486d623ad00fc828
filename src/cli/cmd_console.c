/* "rnx console": a browser cannot speak to a unix socket, so rnx listens on 127.0.0.1:PORT (and
 * [::1]:PORT: console_listen) as the calling user and carries the browser's requests to joblet's socket. The daemon sees this
 * user (SO_PEERCRED), exactly as for any other rnx command. With a node (--node, rnx node use)
 * the requests go through a TLS session to the node instead, where rnx's client certificate
 * says who they are from: the same connection every rnx command makes (client_connect).
 *
 * Other local users can reach the port too, and their servers on other ports of 127.0.0.1 get
 * the browser's cookies for the host: nothing passes without the checks of console_gate.c (the
 * printed link's one-time token, then the session cookie, the page's own key, the exact
 * origin, JSON for changes). They are made here, in this one process, on the request's head,
 * before anything is forked: connections that have not passed cost one slot of a bounded
 * table (--max-pending, the oldest dropped first) and 10 s at most, never a process of the
 * user. Only a request that passes gets a child process that carries it to joblet (an event
 * stream stays open for hours; a slow browser blocks nobody), at most --max-connections at
 * once. Every request is checked: each connection carries one (Connection: close).
 *
 * The printed URL names a host of its own, LABEL.localhost (LABEL random per console; browsers
 * resolve *.localhost to loopback without asking DNS), and the console answers to no other: a
 * service worker or cached file that another user's server left in the browser for
 * 127.0.0.1:PORT (while it held the port) never sees the link's navigation.
 *
 * The link is also written into a page only the user can read (console_file.c), printed
 * first: `chromium FILE` keeps the token off the command line, which every local user reads in
 * /proc/PID/cmdline. The signals that end the console come through the loop's signalfd, so
 * the file is removed after the loop, then rnx dies of the signal as it did before. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/util.h"
#include "cli.h"
#include "client.h"
#include "cmd_console.h"
#include "cmd_node.h"
#include "conn.h"
#include "console_file.h"
#include "console_gate.h"
#include "print.h"

#define HEAD_MAX 16384                /* a request's head, as the browser sends it */
#define HEAD_TIMEOUT_MS 10000         /* to send it, from its first byte: a browser sends it at once */
/* A connection that has sent nothing yet: a browser opens some before it needs them (preconnect)
 * and keeps each unused for 10-20 s (Chromium) before closing it; closed without an answer, after
 * longer than that. An answer (408) there would race with the browser's first request on it,
 * which the browser then sends again or, past its retries, reports failed. */
#define IDLE_TIMEOUT_MS 60000
#define DRAIN_TIMEOUT_MS 2000         /* a refused request's unread body is read for this long (so the */
#define DRAIN_MAX (1u << 20)          /* browser gets the answer, not a reset), this much at most */
#define PENDING_DEFAULT 64
#define CONNECTIONS_DEFAULT 64
#define FLAG_MAX 4096

static const char console_help[] =
    "Usage: rnx console [--node NAME] [--port N] [--max-pending N] [--max-connections N] [--open]\n"
    "\n"
    "Serves joblet's web console to a browser on this machine: listens on 127.0.0.1:N and\n"
    "[::1]:N (any free port by default) as you, and carries the browser's requests to joblet's\n"
    "socket, where they are yours (what you may see and do is what rnx lets you), or with a node\n"
    "(--node, or the default of 'rnx node use') over TLS to that node, as your client\n"
    "certificate says. Prints the URL to open: http://NAME.localhost:N/?token=..., NAME random,\n"
    "the only host name the console answers to (Chromium and Firefox resolve it to loopback\n"
    "themselves; Safari does not). The token works once: the browser trades it for a session\n"
    "cookie and a key that only the console's page holds, so other users of this machine (and\n"
    "pages on other ports) cannot use the port. Runs until interrupted (Ctrl-C).\n"
    "\n"
    "It also writes a page that opens the URL, readable by you only (mode 0600), in\n"
    "$XDG_RUNTIME_DIR (when it is yours and nobody else may write to it), else in\n"
    "~/.local/share/joblet (made 0700; not in a HOME of another user's, as root's under sudo -E),\n"
    "and prints it first: open that file (file:///...) in the browser, e.g. 'chromium FILE'.\n"
    "Never give the URL itself to a command: every user of\n"
    "the machine can read a process's arguments (/proc/PID/cmdline) and use the token first.\n"
    "Paste it into the browser's address bar instead. The file is removed when the console\n"
    "ends (Ctrl-C, SIGTERM, SIGHUP); without a place for it, only the URL is printed, with why.\n"
    "\n"
    "Flags:\n"
    "  --node NAME           the node to serve the console of (as 'rnx --node NAME console')\n"
    "  --port N              the port to listen on (default 0: any free one)\n"
    "  --max-pending N       connections waiting to be checked at once (default 64; past it the\n"
    "                        oldest is closed); they cost no process\n"
    "  --max-connections N   requests carried to joblet at once, each by a process of yours\n"
    "                        (default 64; past it 503)\n"
    "  --open                start your browser on the link's file ($BROWSER, as Python's webbrowser\n"
    "                        reads it: %s for the path; else xdg-open); never on the link itself\n"
    "\n"
    "Reaching it from another machine: ssh -L 8080:127.0.0.1:N host, then open the URL with\n"
    "port 8080 (its host name as printed).\n";

static console_secrets secrets;
static console_file link_file = {.dirfd = -1};   /* the page that opens the link: console_file.c */
static rnx_client *daemon_client;   /* where the requests go: the socket or a node */

/* A connection whose head is not in yet, or a refused one whose body is read away. */
typedef struct pending {
    int fd;
    bool draining;
    int64_t since;        /* ms, monotonic: accepted, its first byte in, or answered when draining */
    uint64_t seq;         /* the order of acceptance: the lowest is the oldest */
    size_t len;           /* of buf; draining: bytes read away */
    char *buf;            /* HEAD_MAX + 1 */
} pending;

static pending *pend;
static size_t npend, max_pending = PENDING_DEFAULT, max_conns = CONNECTIONS_DEFAULT, nchildren;
/* The console's listening sockets: 127.0.0.1:PORT and [::1]:PORT (console_listen). */
static int listeners[2];
static size_t nlisteners;


static int random_hex(char *out)
{
    unsigned char b[CONSOLE_SECRET_HEX / 2];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof b; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
    return 0;
}

/* An answer of the console's own (small: it fits the socket's empty buffer), text/plain but
 * where extra names its Content-Type. */
static void reply(int fd, int flags, const char *status, const char *extra, const char *body)
{
    char buf[2048];
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %s\r\n%sContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n%s\n",
                     status, strstr(extra, "Content-Type:") ? "" : "Content-Type: text/plain; charset=utf-8\r\n",
                     strlen(body) + 1, extra, body);
    if (n < 0 || (size_t)n >= sizeof buf)
        return;
    if (flags)
        send(fd, buf, (size_t)n, flags);
    else
        conn_fd_send_all(fd, buf, (size_t)n);
}

/* Bytes both ways until the daemon's side ends (it closes after its answer: each request is
 * sent with Connection: close) or either side breaks. The browser's bytes go on up to left of
 * them (the rest of the request's body; -1: all, as they come); what it sends beyond them (a
 * second request on the connection) is read and dropped, never passed on. A browser that is
 * done sending (a half-close, or gone) is passed on as one (over TLS a close_notify, then the
 * TCP half-close), and the answer is still carried back. */
static void relay(int b, conn *d, long long left)
{
    char buf[65536];
    bool browser_open = true;
    for (;;) {
        /* what the TLS session has decrypted already: a poll on its socket would not show it */
        if (!conn_pending(d)) {
            struct pollfd p[2] = {{d->fd, POLLIN, 0}, {b, POLLIN, 0}};
            if (poll(p, browser_open ? 2 : 1, -1) < 0) {
                if (errno == EINTR)
                    continue;
                return;
            }
            if (browser_open && p[1].revents) {
                ssize_t n = recv(b, buf, sizeof buf, 0);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n < 0)
                    return;
                if (n == 0) {
                    browser_open = false;
                    conn_shutdown_write(d);
                } else {
                    size_t pass = left >= 0 && left < n ? (size_t)left : (size_t)n;
                    if (pass && !conn_send_all(d, buf, pass))
                        return;
                    if (left > 0)
                        left -= (long long)pass;
                }
            }
            if (!p[0].revents)
                continue;
        }
        ssize_t n = conn_read(d, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || !conn_fd_send_all(b, buf, (size_t)n))
            return;
    }
}

/* In the child: carries the checked request (its head ends at end; len bytes read in all, the
 * rest the body's start) to joblet, then the bytes both ways. */
static void forward(int c, const char *head, const char *end, size_t len)
{
    jerr e = {0};
    conn *d = client_connect(daemon_client, &e);
    if (!d) {
        char msg[sizeof e.msg + 64];
        snprintf(msg, sizeof msg, "joblet does not answer: %s", e.msg);
        reply(c, 0, "502 Bad Gateway", "", msg);
        return;
    }
    char out[HEAD_MAX + 64];
    size_t n = console_gate_rewrite(head, end, out, sizeof out);
    if (!n) {
        reply(c, 0, "431 Request Header Fields Too Large", "", "request head too large");
        conn_close(d);
        return;
    }
    size_t body = (size_t)(end + 4 - head), extra = len - body;
    long long blen = console_gate_body_length(head, end);
    size_t now = blen >= 0 && (unsigned long long)blen < extra ? (size_t)blen : extra;
    conn_cork(d);
    bool sent = conn_send_all(d, out, n) && conn_send_all(d, head + body, now);
    if (conn_uncork(d) == 0 && sent)
        relay(c, d, blen < 0 ? -1 : blen - (long long)now);
    conn_close(d);
}

static void drop(pending *p)
{
    close(p->fd);
    free(p->buf);
    p->fd = -1;
    p->buf = NULL;
}

/* Answers a request the console refuses (or signs in) and reads away what the browser still
 * sends, shut for writing, so that it reads the answer rather than a reset. */
static void answer(pending *p, const char *status, const char *extra, const char *body)
{
    reply(p->fd, MSG_DONTWAIT | MSG_NOSIGNAL, status, extra, body);
    shutdown(p->fd, SHUT_WR);
    free(p->buf);
    p->buf = NULL;
    p->draining = true;
    p->len = 0;
    p->since = mono_ms();
}

static pid_t browser;   /* --open's browser while it runs: not a connection's child */

static void reap(void)
{
    pid_t pid;
    while ((pid = waitpid(-1, NULL, WNOHANG)) > 0) {
        if (pid == browser)
            browser = 0;
        else if (nchildren)
            nchildren--;
    }
}

/* The head of p is in (end: where its "\r\n\r\n" starts): check it, then answer, or fork
 * the child that carries it. */
static void decide(pending *p, char *end, int sigfd, const sigset_t *mask)
{
    console_verdict v;
    secrets.now_ms = mono_ms();
    console_gate_check(&secrets, p->buf, end, &v);
    char extra[600], msg[800];
    if (v.action == GATE_TICKET) {
        char t[CONSOLE_SECRET_HEX + 1];
        if (random_hex(t) < 0) {
            answer(p, "503 Service Unavailable", "", "cannot make a ticket");
            return;
        }
        console_gate_ticket_add(&secrets, t);
        answer(p, "200 OK", "", t);
        return;
    }
    if (v.action == GATE_REFUSE) {
        answer(p, v.status, "", v.msg);
        return;
    }
    if (v.action == GATE_SIGN_IN) {
        /* from the link's file (file://, another site): a page of the console's origin that goes
         * on to /#key=, a same-origin navigation that carries the cookie; a 303's next request
         * would be cross-site too */
        console_gate_sign_in(&secrets, !v.cross_site, extra, sizeof extra);
        if (v.cross_site) {
            size_t at = strlen(extra);
            snprintf(extra + at, sizeof extra - at,
                     "Content-Type: text/html; charset=utf-8\r\nContent-Security-Policy: default-src 'none'\r\n");
            console_gate_sign_in_page(&secrets, msg, sizeof msg);
            answer(p, "200 OK", extra, msg);
        } else {
            answer(p, "303 See Other", extra, "signed in; the console is at /");
        }
        return;
    }
    reap();
    if (nchildren >= max_conns) {
        snprintf(msg, sizeof msg, "the console carries %zu requests at once already (rnx console --max-connections); "
                                  "try again when one ends", max_conns);
        answer(p, "503 Service Unavailable", "Retry-After: 1\r\n", msg);
        return;
    }
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        snprintf(msg, sizeof msg, "the console cannot start a process to carry the request: %s", strerror(errno));
        answer(p, "503 Service Unavailable", "", msg);
        return;
    }
    if (pid == 0) {
        /* the child holds this connection only, and ends with the console */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(0);
        for (size_t k = 0; k < nlisteners; k++)
            close(listeners[k]);
        close(sigfd);
        if (link_file.dirfd >= 0)
            close(link_file.dirfd);
        for (size_t i = 0; i < npend; i++)
            if (&pend[i] != p && pend[i].fd >= 0)
                close(pend[i].fd);
        sigprocmask(SIG_SETMASK, mask, NULL);
        fcntl(p->fd, F_SETFL, fcntl(p->fd, F_GETFL) & ~O_NONBLOCK);
        forward(p->fd, p->buf, end, p->len);
        _exit(0);
    }
    nchildren++;
    drop(p);
}

/* What came in on p. */
static void readable(pending *p, int sigfd, const sigset_t *mask)
{
    if (p->draining) {
        char sink[16384];
        ssize_t n = recv(p->fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        p->len += n > 0 ? (size_t)n : 0;
        if (n <= 0 || p->len > DRAIN_MAX)
            drop(p);
        return;
    }
    ssize_t n = recv(p->fd, p->buf + p->len, HEAD_MAX - p->len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        drop(p);
        return;
    }
    size_t from = p->len > 3 ? p->len - 3 : 0;
    if (!p->len)
        p->since = mono_ms();   /* its head's 10 s start */
    p->len += (size_t)n;
    p->buf[p->len] = 0;
    char *end = strstr(p->buf + from, "\r\n\r\n");
    if (end) {
        decide(p, end, sigfd, mask);
        return;
    }
    if (p->len == HEAD_MAX || memchr(p->buf + from, 0, p->len - from))
        answer(p, p->len == HEAD_MAX ? "431 Request Header Fields Too Large" : "400 Bad Request", "",
               p->len == HEAD_MAX ? "request head too large" : "a NUL byte in the request head");
}

static int64_t deadline(const pending *p)
{
    return p->since + (p->draining ? DRAIN_TIMEOUT_MS : p->len ? HEAD_TIMEOUT_MS : IDLE_TIMEOUT_MS);
}

/* Room for one more connection: a free place, else the oldest waiting one's. */
static pending *slot(void)
{
    pending *old = NULL;
    for (size_t i = 0; i < npend; i++) {
        if (pend[i].fd < 0)
            return &pend[i];
        if (!old || pend[i].seq < old->seq)
            old = &pend[i];
    }
    if (npend < max_pending)
        return &pend[npend++];
    drop(old);
    return old;
}

/* The console's one loop: accepts, reads heads, answers, forks for what passes. sigs (blocked:
 * SIGCHLD and the signals that end the console) come through a signalfd; old is the mask
 * before, its children's. Returns when one of the ending signals comes (*ended: which), or
 * rnx_fail's code. */
static int serve(const sigset_t *sigs, const sigset_t *old, int *ended)
{
    int sigfd = signalfd(-1, sigs, SFD_CLOEXEC | SFD_NONBLOCK);
    pend = calloc(max_pending, sizeof *pend);
    struct pollfd *pfd = calloc(max_pending + 1 + 2, sizeof *pfd); /* the signals, two listeners, the pending */
    if (sigfd < 0 || !pend || !pfd)
        return rnx_fail("cannot set up the console: %s", strerror(errno));
    int64_t accept_again = 0;     /* out of descriptors: accept again then */
    uint64_t accepted = 0;
    for (;;) {
        int64_t now = mono_ms(), next = -1;
        size_t live = 0;
        for (size_t i = 0; i < npend; i++) {
            pending *p = &pend[i];
            if (p->fd >= 0 && now >= deadline(p)) {
                if (p->draining || !p->len)
                    drop(p);      /* (an unused connection: closed, unanswered) */
                else
                    answer(p, "408 Request Timeout", "", "the request head did not come in time");
            }
            if (p->fd < 0)
                continue;
            pend[live++] = *p;
            if (next < 0 || deadline(p) < next)
                next = deadline(p);
        }
        npend = live;
        nfds_t n = 0;
        pfd[n++] = (struct pollfd){sigfd, POLLIN, 0};
        bool listening = now >= accept_again;
        for (size_t k = 0; listening && k < nlisteners; k++)
            pfd[n++] = (struct pollfd){listeners[k], POLLIN, 0};
        if (!listening && (next < 0 || accept_again < next))
            next = accept_again;
        for (size_t i = 0; i < npend; i++)
            pfd[n++] = (struct pollfd){pend[i].fd, POLLIN, 0};
        int r = poll(pfd, n, next < 0 ? -1 : (int)(next > now ? next - now : 0));
        if (r < 0 && errno != EINTR)
            return rnx_fail("poll: %s", strerror(errno));
        if (r <= 0)
            continue;
        if (pfd[0].revents) {
            struct signalfd_siginfo si;
            while (read(sigfd, &si, sizeof si) > 0)
                if (si.ssi_signo != SIGCHLD)
                    *ended = (int)si.ssi_signo;
            if (*ended) {
                close(sigfd);
                return RNX_OK;
            }
            reap();
        }
        /* the waiting connections first, then new ones (which may push the oldest out) */
        size_t first = listening ? 1 + nlisteners : 1;
        for (size_t i = 0; i < npend; i++)
            if (pfd[first + i].revents && pend[i].fd >= 0)
                readable(&pend[i], sigfd, old);
        for (size_t m = 0; listening && m < nlisteners; m++) {
            if (!pfd[1 + m].revents)
                continue;
            for (size_t k = 0; k < max_pending; k++) {
                int c = accept4(listeners[m], NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (c < 0) {
                    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                        accept_again = mono_ms() + 100;
                    else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                        return rnx_fail("accept: %s", strerror(errno));
                    break;
                }
                pending *p = slot();
                *p = (pending){.fd = c, .since = mono_ms(), .seq = ++accepted, .buf = malloc(HEAD_MAX + 1)};
                if (!p->buf)
                    drop(p);
            }
        }
    }
}

/* One loopback listener of the console on port (0: the kernel's pick): the socket, or -1 with
 * errno. */
static int listen_on(int family, uint16_t port)
{
    int l = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
    struct sockaddr_in sa4 = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    bool v6 = family == AF_INET6;
    if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        (v6 && setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0) ||
        bind(l, v6 ? (struct sockaddr *)&sa6 : (struct sockaddr *)&sa4, v6 ? sizeof sa6 : sizeof sa4) < 0 ||
        listen(l, 128) < 0) {
        int err = errno;
        if (l >= 0)
            close(l);
        errno = err;
        return -1;
    }
    return l;
}

/* The console listens on 127.0.0.1:PORT and on [::1]:PORT. Its link's NAME.localhost is
 * loopback, which browsers try as ::1 first (chromium does): were [::1]:PORT free, any other
 * local user could listen there and receive the link's token, then the session's cookie and
 * key with every request, and act as the console's user (root's, an admin's). Where ::1 is
 * taken on the port the kernel picked, another port is tried; a --port whose ::1 is taken is
 * refused. Without IPv6 on loopback nobody can listen on ::1 either: 127.0.0.1 alone. RNX_OK and
 * *out the port, or rnx_fail's code, said. */
static int console_listen(uint64_t asked, int *out)
{
    for (int tries = 0; tries < 32; tries++) {
        int l4 = listen_on(AF_INET, (uint16_t)asked);
        struct sockaddr_in sa = {0};
        socklen_t sl = sizeof sa;
        if (l4 < 0 || getsockname(l4, (struct sockaddr *)&sa, &sl) < 0)
            return rnx_fail("cannot listen on 127.0.0.1:%llu: %s", (unsigned long long)asked, strerror(errno));
        uint16_t port = ntohs(sa.sin_port);
        int l6 = listen_on(AF_INET6, port);
        if (l6 >= 0 || errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL) {
            listeners[nlisteners++] = l4;
            if (l6 >= 0)
                listeners[nlisteners++] = l6;
            *out = port;
            return RNX_OK;
        }
        int err = errno;
        close(l4);
        if (err != EADDRINUSE || asked)
            return rnx_fail("cannot listen on [::1]:%u: %s%s", (unsigned)port, strerror(err),
                            err == EADDRINUSE ? " (another process holds it: browsers would go there first, "
                                                "with the console's link; give another --port)"
                                              : "");
    }
    return rnx_fail("cannot find a port free on both 127.0.0.1 and [::1]");
}

/* --max-pending, --max-connections: 1 to FLAG_MAX. */
static int count_flag(const char *flag, const char *arg, size_t *out)
{
    uint64_t v;
    if (parse_u64(arg, &v) < 0 || v < 1 || v > FLAG_MAX)
        return rnx_usage("%s: '%s' is not a count from 1 to %d", flag, arg, FLAG_MAX);
    *out = (size_t)v;
    return RNX_OK;
}

int cmd_console(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"node", required_argument, NULL, 'N'},
                                         {"port", required_argument, NULL, 'p'},
                                         {"max-pending", required_argument, NULL, 'P'},
                                         {"max-connections", required_argument, NULL, 'C'},
                                         {"open", no_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    uint64_t port = 0;
    int o, rc;
    bool open_it = false;
    optind = 0;
    while ((o = rnx_getopt(argc, argv, "h", opts, "rnx console")) != -1) {
        switch (o) {
        case 'p':
            if (parse_u64(optarg, &port) < 0 || port > 65535)
                return rnx_usage("--port: '%s' is not a port (0 to 65535)", optarg);
            break;
        case 'P':
            if ((rc = count_flag("--max-pending", optarg, &max_pending)) != RNX_OK)
                return rc;
            break;
        case 'C':
            if ((rc = count_flag("--max-connections", optarg, &max_conns)) != RNX_OK)
                return rc;
            break;
        case 'N':
            if (ctx->node_flag && strcmp(ctx->node_flag, optarg))
                return rnx_usage("console: --node %s and the global --node %s name two nodes; give one", optarg,
                                 ctx->node_flag);
            ctx->node_flag = optarg;
            if ((rc = cmd_node_target(ctx, false)) != RNX_OK)
                return rc;
            break;
        case 'o': open_it = true; break;
        case 'h': fputs(console_help, stdout); return RNX_OK;
        default: return RNX_USAGE;
        }
    }
    if (optind < argc)
        return rnx_usage("console takes no arguments ('%s'); see 'rnx console --help'", argv[optind]);
    /* the waiting connections are this process's descriptors: they must fit beside its own */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
        max_pending + 16 > nofile.rlim_cur)
        return rnx_usage("--max-pending: %zu connections do not fit in this process's %llu open files "
                         "(ulimit -n) with the console's own; give at most %llu",
                         max_pending, (unsigned long long)nofile.rlim_cur,
                         nofile.rlim_cur > 16 ? (unsigned long long)nofile.rlim_cur - 16 : 0ull);
    daemon_client = client_new(&ctx->target);
    jerr e = {0};
    conn *probe = client_connect(daemon_client, &e);   /* over TLS: the node's certificate is checked now */
    if (!probe)
        return rnx_fail("%s", e.msg);
    conn_close(probe);
    if (random_hex(secrets.token) < 0 || random_hex(secrets.session) < 0 || random_hex(secrets.key) < 0)
        return rnx_fail("cannot make the console's secrets: %s", strerror(errno));
    char label[CONSOLE_SECRET_HEX + 1];
    if (random_hex(label) < 0)
        return rnx_fail("cannot make the console's name: %s", strerror(errno));
    snprintf(secrets.name, sizeof secrets.name, "%.*s%s", CONSOLE_NAME_HEX, label, CONSOLE_NAME_SUFFIX);
    int lport = 0;
    if ((rc = console_listen(port, &lport)) != RNX_OK)
        return rc;
    /* "joblet_console_PORT": browsers share cookies between the ports of a host, so two consoles
     * (two users, two daemons) in one browser each keep their own */
    snprintf(secrets.cookie, sizeof secrets.cookie, "joblet_console_%u", (unsigned)lport);
    signal(SIGPIPE, SIG_IGN);
    /* The signals that end the console come through serve's signalfd from here on, so that the
     * link's file is removed after the loop (nothing in a handler), also for one that comes
     * before it starts. */
    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, &old);
    char url[CONSOLE_NAME_HEX + sizeof CONSOLE_NAME_SUFFIX + CONSOLE_SECRET_HEX + 32];
    snprintf(url, sizeof url, "http://%s:%u/?token=%s", secrets.name, (unsigned)lport, secrets.token);
    char why[2 * PATH_MAX + 256], uri[3 * PATH_MAX + 16];
    bool file = console_file_make(&link_file, url, why, sizeof why) == 0;
    if (file && !console_file_uri(link_file.path, uri, sizeof uri)) {
        console_file_remove(&link_file);
        snprintf(why, sizeof why, "its path is too long");
        file = false;
    }
    if (ctx->target.socket)
        printf("joblet console (as uid %u)\n", (unsigned)getuid());
    else
        print_textf(stdout, "joblet console (%s, as its certificate's user)\n", client_where(daemon_client));
    if (file) {
        printf("open this file in a browser: %s\n", uri);
        printf("or paste this link into the browser's address bar (never into a command: other users see "
               "commands' arguments): %s\n", url);
    } else {
        printf("no file to open it with (%s); paste this link into the browser's address bar (never into a "
               "command: other users see commands' arguments): %s\n", why, url);
    }
    printf("The link works once, in one browser tab, which then holds the session. Ctrl-C stops the console%s.\n",
           file ? " and removes the file" : "");
    fflush(stdout);
    if (open_it) {
        /* the file only: the link on a browser's command line is what the file is for avoiding */
        pid_t pid = file ? console_file_open(&link_file, getenv("BROWSER"), &old, why, sizeof why) : -1;
        if (pid > 0)
            browser = pid;
        else
            fprintf(stderr, "rnx console: --open: %s%s; open %s yourself\n", file ? "" : "no file to open: ", why,
                    file ? "the file" : "the link by pasting it");
    }
    int ended = 0;
    rc = serve(&sigs, &old, &ended);
    console_file_remove(&link_file);
    if (ended) {
        /* ended as the signal says, as before the file: the shell sees it */
        signal(ended, SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        raise(ended);
    }
    return rc;
}
