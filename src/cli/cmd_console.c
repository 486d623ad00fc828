/* "rnx console": a browser cannot speak to a unix socket, so rnx listens on 127.0.0.1:PORT as
 * the calling user and carries each browser connection to joblet's socket. The daemon sees
 * this user (SO_PEERCRED), exactly as for any other rnx command.
 *
 * Other local users can reach the port too, so nothing passes without a secret: the URL rnx
 * prints carries a one-time token; the first request with it gets a session cookie (HttpOnly,
 * SameSite=Strict) and a redirect to the page; a request with neither gets 401. Both secrets
 * are 256 random bits, compared in constant time. Each connection is served by a child process
 * of its own (an event stream stays open for hours; a slow browser blocks nobody). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/parse.h"
#include "cli.h"
#include "cmd_console.h"

#define SECRET_HEX 64                 /* 32 random bytes */
#define HEAD_MAX 16384                /* a request's head, as the browser sends it */

static const char console_help[] =
    "Usage: rnx console [--port N]\n"
    "\n"
    "Serves joblet's web console to a browser on this machine: listens on 127.0.0.1:N (any free\n"
    "port by default) as you, and carries the browser's requests to joblet's socket, where they\n"
    "are yours (what you may see and do is what rnx lets you). Prints the URL to open; it holds a\n"
    "one-time token that the browser trades for a session cookie, so other users of this machine\n"
    "cannot use the port. Runs until interrupted (Ctrl-C).\n"
    "\n"
    "Flags:\n"
    "  --port N   the port to listen on (default 0: any free one)\n"
    "\n"
    "Reaching it from another machine: ssh -L 8080:127.0.0.1:N host, then open the URL with\n"
    "port 8080.\n";

static char token[SECRET_HEX + 1], session[SECRET_HEX + 1];
static volatile int *token_used;      /* shared with the connections' children */
static const char *sock_path;
/* "joblet_console_PORT": browsers share cookies between the ports of a host, so two consoles
 * (two users, two daemons) in one browser each keep their own */
static char cookie[40];
static size_t cookie_len;

static int random_hex(char *out)
{
    unsigned char b[SECRET_HEX / 2];
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

/* Whether s (len bytes) is the secret, in time that does not depend on where they differ. */
static bool secret_equal(const char *s, size_t len, const char *secret)
{
    unsigned char diff = len != SECRET_HEX;
    for (size_t i = 0; i < SECRET_HEX; i++)
        diff |= (unsigned char)((i < len ? s[i] : 0) ^ secret[i]);
    return diff == 0;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void reply(int fd, const char *status, const char *extra, const char *body)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n%s",
                     status, strlen(body), extra, body);
    send_all(fd, buf, (size_t)n);
}

/* The value of header `name` in the head (first line excluded), or NULL; *len its length. */
static const char *header(const char *head, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (!strncasecmp(line, name, nl) && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            const char *end = strstr(v, "\r\n");
            *len = end ? (size_t)(end - v) : strlen(v);
            return v;
        }
    }
    return NULL;
}

/* Whether the Cookie header holds our session. */
static bool has_session(const char *head)
{
    size_t len;
    const char *v = header(head, "Cookie", &len);
    bool ok = false;
    while (v && len) {
        const char *semi = memchr(v, ';', len);
        size_t part = semi ? (size_t)(semi - v) : len;
        if (part > cookie_len + 1 && !strncmp(v, cookie, cookie_len) && v[cookie_len] == '=')
            ok |= secret_equal(v + cookie_len + 1, part - cookie_len - 1, session);
        if (!semi)
            break;
        len -= part + 1;
        v = semi + 1;
        while (len && *v == ' ')
            v++, len--;
    }
    return ok;
}

/* The token=... of the request line's query, or NULL. */
static const char *query_token(const char *target, size_t tlen, size_t *len)
{
    const char *q = memchr(target, '?', tlen);
    while (q && q < target + tlen) {
        q++;
        const char *end = memchr(q, '&', (size_t)(target + tlen - q));
        if (!end)
            end = target + tlen;
        if (end - q > 6 && !strncmp(q, "token=", 6)) {
            *len = (size_t)(end - q - 6);
            return q + 6;
        }
        q = end;
    }
    return NULL;
}

static int daemon_connect(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Bytes both ways until either side is done. */
static void relay(int a, int b)
{
    char buf[65536];
    struct pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (int i = 0; i < 2; i++) {
            if (!p[i].revents)
                continue;
            ssize_t n = recv(p[i].fd, buf, sizeof buf, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return;
            send_all(p[1 - i].fd, buf, (size_t)n);
        }
    }
}

/* The head (request line and headers; end: where "\r\n\r\n" starts) without its Connection and
 * Keep-Alive lines, ending with "Connection: close". */
static size_t rewrite_head(const char *head, const char *end, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *line = head; line <= end;) {
        const char *eol = strstr(line, "\r\n");
        size_t ll = (size_t)(eol - line) + 2;
        bool drop = line != head && (!strncasecmp(line, "Connection:", 11) || !strncasecmp(line, "Keep-Alive:", 11));
        if (!drop && n + ll < cap) {
            memcpy(out + n, line, ll);
            n += ll;
        }
        line = eol + 2;
    }
    int w = snprintf(out + n, cap - n, "Connection: close\r\n\r\n");
    return n + (w > 0 ? (size_t)w : 0);
}

/* Whether the Host header names this machine's loopback (a name that a rebinding DNS points at
 * 127.0.0.1 is refused; the cookie would not have been sent to it anyway). */
static bool local_host(const char *head)
{
    size_t len;
    const char *v = header(head, "Host", &len);
    static const char *const ok[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; v && i < sizeof ok / sizeof ok[0]; i++) {
        size_t l = strlen(ok[i]);
        if (len >= l && !strncasecmp(v, ok[i], l) && (len == l || v[l] == ':'))
            return true;
    }
    return false;
}

static void serve(int c)
{
    char head[HEAD_MAX + 1];
    size_t len = 0;
    struct timeval tv = {30, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char *end = NULL;
    while (!end && len < HEAD_MAX) {
        ssize_t n = recv(c, head + len, HEAD_MAX - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        len += (size_t)n;
        head[len] = 0;
        end = strstr(head, "\r\n\r\n");
    }
    if (!end) {
        reply(c, "431 Request Header Fields Too Large", "", "request head too large\n");
        return;
    }
    tv.tv_sec = 0;
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    /* "GET /path?query HTTP/1.1" */
    const char *sp = memchr(head, ' ', len), *target = sp ? sp + 1 : NULL;
    const char *sp2 = target ? memchr(target, ' ', (size_t)(end - target)) : NULL;
    if (!sp2) {
        reply(c, "400 Bad Request", "", "not an HTTP request\n");
        return;
    }
    size_t tlen = (size_t)(sp2 - target), toklen;
    const char *tok = query_token(target, tlen, &toklen);
    if (tok) {
        /* the one-time token: traded for the session cookie, once */
        if (secret_equal(tok, toklen, token) && __sync_bool_compare_and_swap(token_used, 0, 1)) {
            char extra[300];
            snprintf(extra, sizeof extra,
                     "Location: /\r\nSet-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Strict\r\n", cookie, session);
            reply(c, "303 See Other", extra, "signed in; the console is at /\n");
        } else {
            reply(c, "401 Unauthorized", "", "this console link was used already or is wrong: run 'rnx console' "
                                              "again for a new one\n");
        }
        return;
    }
    if (!has_session(head)) {
        reply(c, "401 Unauthorized", "", "no console session: open the URL 'rnx console' printed\n");
        return;
    }
    if (!local_host(head)) {
        reply(c, "403 Forbidden", "", "the console answers only to 127.0.0.1, localhost or [::1]\n");
        return;
    }
    int d = daemon_connect();
    if (d < 0) {
        reply(c, "502 Bad Gateway", "", "joblet does not answer on its socket\n");
        return;
    }
    /* One request per connection (Connection: close, whatever the browser asked): every
     * request is checked, none rides on an earlier one's connection. */
    char out[HEAD_MAX + 64];
    size_t n = rewrite_head(head, end, out, sizeof out);
    send_all(d, out, n);
    size_t body = (size_t)(end + 4 - head);
    send_all(d, head + body, len - body);
    relay(c, d);
    close(d);
}

int cmd_console(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"port", required_argument, NULL, 'p'}, {"help", no_argument, NULL, 'h'}, {0}};
    uint64_t port = 0;
    int o;
    optind = 0;
    while ((o = rnx_getopt(argc, argv, "h", opts, "rnx console")) != -1) {
        switch (o) {
        case 'p':
            if (parse_u64(optarg, &port) < 0 || port > 65535)
                return rnx_usage("--port: '%s' is not a port (0 to 65535)", optarg);
            break;
        case 'h': fputs(console_help, stdout); return RNX_OK;
        default: return RNX_USAGE;
        }
    }
    if (optind < argc)
        return rnx_usage("console takes no arguments ('%s'); see 'rnx console --help'", argv[optind]);
    sock_path = ctx->socket;
    int probe = daemon_connect();
    if (probe < 0)
        return rnx_fail("cannot reach joblet at %s: %s", sock_path, strerror(errno));
    close(probe);
    token_used = mmap(NULL, sizeof *token_used, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (token_used == MAP_FAILED || random_hex(token) < 0 || random_hex(session) < 0)
        return rnx_fail("cannot make the console's secrets: %s", strerror(errno));
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 128) < 0 ||
        getsockname(l, (struct sockaddr *)&sa, &sl) < 0)
        return rnx_fail("cannot listen on 127.0.0.1:%llu: %s", (unsigned long long)port, strerror(errno));
    cookie_len = (size_t)snprintf(cookie, sizeof cookie, "joblet_console_%u", (unsigned)ntohs(sa.sin_port));
    signal(SIGCHLD, SIG_IGN);   /* children are reaped by the kernel */
    signal(SIGPIPE, SIG_IGN);
    printf("joblet console (as uid %u): http://127.0.0.1:%u/?token=%s\n", (unsigned)getuid(),
           (unsigned)ntohs(sa.sin_port), token);
    printf("The link works once; the browser then holds a session cookie. Ctrl-C stops the console.\n");
    fflush(stdout);
    for (;;) {
        int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
                continue;
            return rnx_fail("accept: %s", strerror(errno));
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(l);
            serve(c);
            _exit(0);
        }
        close(c);
    }
}
