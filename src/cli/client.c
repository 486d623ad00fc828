/* HTTP/1.1 over the daemon's unix socket, or over TLS to a remote node (conn.h: the
 * connection's kind is chosen once, in client_connect, and nothing else here knows it). Deliberately
 * small: rnx talks to one server whose answers are always Content-Length or chunked, and
 * start-up time matters — libcurl and the TLS stack it drags in cost ~4 ms of loading per rnx
 * run, half the start-latency budget of `rnx job run --follow` (docs/performance.md); GnuTLS
 * is opened only when a node is dialed (conn_tls.c). One connection per request. */
#include "client.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "../common/arrayspec.h"
#include "../common/util.h"
#include "conn_agent.h"
#include "print.h"

#ifndef JOBLET_VERSION
#define JOBLET_VERSION "dev"
#endif

/* Guards against a runaway answer filling memory; a job list of this size is not plausible. */
#define MAX_BODY (256u << 20)
#define MAX_HEAD (64u << 10)

struct rnx_client {
    char *socket;             /* the local socket, or NULL: */
    conn_tls_peer node;       /* a node over TLS (its strings are this client's) */
    conn_tls_creds *creds;    /* read at the first dial */
    char where[300];          /* "joblet at PATH", "node NAME (ADDRESS)": messages */
    char host[280];           /* the Host header */
    unsigned persist_s;       /* a node: how long its keeper stays (conn_agent.h); 0: none */
    conn *idle;               /* TLS: the connection of the last request, kept open for the next
                               * (client_request): a command pays one handshake, not one per request */
    int retry_after_s;        /* the last 503 "ask again" answer's Retry-After */
};

typedef struct buf {
    char *data;
    size_t len, cap;
} buf;

static int buf_append(buf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > MAX_BODY)
        return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return 0;
}

static void buf_consume(buf *b, size_t n)
{
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    if (b->data)
        b->data[b->len] = 0;
}

static const char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

rnx_client *client_new(const client_target *t)
{
    rnx_client *c = xcalloc(1, sizeof *c);
    if (t->socket) {
        c->socket = xstrdup(t->socket);
        snprintf(c->where, sizeof c->where, "joblet at %s", t->socket);
        snprintf(c->host, sizeof c->host, "localhost");
        return c;
    }
    c->node = (conn_tls_peer){dup_or_null(t->node.node), dup_or_null(t->node.address), dup_or_null(t->node.host),
                              dup_or_null(t->node.port), dup_or_null(t->node.ca), dup_or_null(t->node.cert),
                              dup_or_null(t->node.key)};
    c->persist_s = t->persist_s;
    snprintf(c->where, sizeof c->where, "node %s (%s)", t->node.node, t->node.address);
    snprintf(c->host, sizeof c->host, "%s", t->node.address);
    return c;
}

void client_free(rnx_client *c)
{
    if (!c)
        return;
    conn_release(c->idle);   /* its last answer was read whole (client_request) */
    free(c->socket);
    if (c->node.key)
        explicit_bzero((char *)c->node.key, strlen(c->node.key));
    const char *const strs[] = {c->node.node, c->node.address, c->node.host, c->node.port,
                                c->node.ca,   c->node.cert,    c->node.key};
    for (size_t i = 0; i < ARRAY_LEN(strs); i++)
        free((char *)strs[i]);
    conn_tls_creds_free(c->creds);
    free(c);
}

char *client_escape(rnx_client *c, const char *s)
{
    char *out = xmalloc(strlen(s) * 3 + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || strchr("-._~", *p))
            *o++ = (char)*p;
        else
            o += sprintf(o, "%%%02X", *p);
    }
    *o = 0;
    return out;
}

conn *client_connect(rnx_client *c, jerr *e)
{
    if (c->idle) {
        conn *k = c->idle;
        c->idle = NULL;
        return k;
    }
    if (c->socket)
        return conn_unix_dial(c->socket, e);
    if (c->persist_s && !c->creds) {
        bool direct = false;
        conn *k = conn_agent_dial(&c->node, c->persist_s, &direct, e);
        if (k || !direct)
            return k;
        c->persist_s = 0;   /* no keeper here: this command dials the node itself */
    }
    if (!c->creds && !(c->creds = conn_tls_creds_open(&c->node, e)))
        return NULL;
    return conn_tls_dial(c->creds, e);
}

const char *client_where(const rnx_client *c) { return c->where; }

/* Sends n bytes: 0, 1 when the server closed its side (it answered early: read the answer
 * next), -1 on another error. */
static int send_all(conn *k, const char *p, size_t left)
{
    while (left) {
        ssize_t w = conn_write(k, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno == EPIPE || errno == ECONNRESET ? 1 : -1;
        p += w;
        left -= (size_t)w;
    }
    return 0;
}

/* The request line and headers; a body of blen bytes of ctype follows when ctype is set. */
static int send_head(const rnx_client *c, conn *k, const char *method, const char *path, const char *accept,
                     const char *ctype, unsigned long long blen, bool keep)
{
    /* a path is at most 20 KiB: a reference to tasks of an array (ID_[LIST]) has a list of up to
     * ARRAYSPEC_TEXT_MAX bytes, each escaped in at most 3 */
    char head[24576];
    if (strlen(path) > 3 * (ARRAYSPEC_TEXT_MAX + 256)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: rnx/" JOBLET_VERSION
                     "\r\nAccept: %s\r\nConnection: %s\r\n",
                     method, path, c->host, accept, keep ? "keep-alive" : "close");
    if (ctype)
        n += snprintf(head + n, sizeof head - (size_t)n, "Content-Type: %s\r\nContent-Length: %llu\r\n", ctype,
                      blen);
    n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    return send_all(k, head, (size_t)n);
}

/* Ends a corked send (conn_cork): what send_all returns. */
static int uncork(conn *k)
{
    if (conn_uncork(k) == 0)
        return 0;
    return errno == EPIPE || errno == ECONNRESET ? 1 : -1;
}

/* Sends the whole request. A server that refuses a large body may answer and close before
 * reading it all: EPIPE is then not an error, the answer is read next. */
static int send_request(const rnx_client *c, conn *k, const char *method, const char *path, const char *accept,
                        const char *body, size_t blen, bool keep)
{
    conn_cork(k);   /* over TLS: head and body in one record */
    int rc = send_head(c, k, method, path, accept, body ? "application/json" : NULL, blen, keep);
    if (rc == 0 && body)
        rc = send_all(k, body, blen);
    int u = uncork(k);
    if (rc == 0)
        rc = u;
    return rc < 0 ? -1 : 0;
}

/* Where the body of an answer goes. */
typedef int (*sink_fn)(const char *p, size_t n, void *ud);

typedef struct answer {
    int status;
    bool chunked;
    long long length;   /* -1: until the connection closes */
    bool close;         /* Connection: close */
    int retry_after;    /* Retry-After's seconds (a date: 1); -1 without one */
} answer;

/* Reads what the socket has (up to 256 KiB) onto the end of in. */
static ssize_t fill(conn *k, buf *in)
{
    const size_t want = 256 << 10;
    if (in->len + want + 1 > MAX_BODY)
        return -2;
    if (in->len + want + 1 > in->cap) {
        size_t cap = in->cap ? in->cap : 4096;
        while (cap < in->len + want + 1)
            cap *= 2;
        in->data = xrealloc(in->data, cap);
        in->cap = cap;
    }
    ssize_t r;
    do
        r = conn_read(k, in->data + in->len, want);
    while (r < 0 && errno == EINTR);
    if (r > 0)
        in->len += (size_t)r;
    in->data[in->len] = 0;
    return r;
}

static int read_head(conn *k, buf *in, answer *a)
{
    char *end;
    while (!(end = in->data ? strstr(in->data, "\r\n\r\n") : NULL)) {
        if (in->len > MAX_HEAD || fill(k, in) <= 0)
            return -1;
    }
    *end = 0;
    if (sscanf(in->data, "HTTP/1.%*d %d", &a->status) != 1)
        return -1;
    a->chunked = false;
    a->length = -1;
    a->close = false;
    a->retry_after = -1;
    for (char *line = strstr(in->data, "\r\n"); line; line = strstr(line, "\r\n")) {
        line += 2;
        if (!strncasecmp(line, "Content-Length:", 15))
            a->length = atoll(line + 15);
        else if (!strncasecmp(line, "Transfer-Encoding:", 18) && strcasestr(line, "chunked"))
            a->chunked = true;
        else if (!strncasecmp(line, "Connection:", 11) && strcasestr(line, "close"))
            a->close = true;
        else if (!strncasecmp(line, "Retry-After:", 12))
            a->retry_after = atoi(line + 12) > 0 ? atoi(line + 12) : 1;
    }
    buf_consume(in, (size_t)(end - in->data) + 4);
    return 0;
}

/* Feeds the body to sink; 1 = complete, -1 = the connection broke, -2 = sink stopped. */
static int read_body(conn *k, buf *in, const answer *a, sink_fn sink, void *ud)
{
    if (!a->chunked) {
        long long left = a->length;
        for (;;) {
            size_t take = left < 0 || (long long)in->len < left ? in->len : (size_t)left;
            if (take && sink(in->data, take, ud) < 0)
                return -2;
            buf_consume(in, take);
            if (left >= 0 && (left -= (long long)take) == 0)
                return 1;
            ssize_t r = fill(k, in);
            if (r == 0)
                return left < 0 ? 1 : -1;
            if (r < 0)
                return -1;
        }
    }
    for (;;) {
        char *crlf;
        while (!(crlf = in->data ? memmem(in->data, in->len, "\r\n", 2) : NULL))
            if (fill(k, in) <= 0)
                return -1;
        char *end;
        unsigned long long size = strtoull(in->data, &end, 16);
        if (end == in->data || size > MAX_BODY)
            return -1; /* not a chunk size we could hold: a broken or hostile answer */
        buf_consume(in, (size_t)(crlf - in->data) + 2);
        if (size == 0) {
            /* trailers (not needed), then the empty line that ends the answer: read to it, so
             * that the connection is left at the next answer's start */
            for (;;) {
                while (!(crlf = in->data ? memmem(in->data, in->len, "\r\n", 2) : NULL))
                    if (in->len > MAX_HEAD || fill(k, in) <= 0)
                        return -1;
                bool last = crlf == in->data;
                buf_consume(in, (size_t)(crlf - in->data) + 2);
                if (last)
                    return 1;
            }
        }
        while (in->len < size + 2)
            if (fill(k, in) <= 0)
                return -1;
        if (sink(in->data, (size_t)size, ud) < 0)
            return -2;
        buf_consume(in, (size_t)size + 2);
    }
}

/* Fills e from a non-2xx answer: the API's {"error": {...}} when it is one. */
static void error_from_answer(long status, const buf *b, jerr *e)
{
    json_t *root = b->len ? json_loadb(b->data, b->len, 0, NULL) : NULL;
    json_t *err = json_object_get(root, "error");
    const char *msg = json_string_value(json_object_get(err, "message"));
    const char *field = json_string_value(json_object_get(err, "field"));
    e->http = (int)status;
    e->code = 0;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    if (msg && *msg) {
        snprintf(e->msg, sizeof e->msg, "%s", msg);
    } else if (b->len) {
        snprintf(e->msg, sizeof e->msg, "joblet answered HTTP %ld: %.200s", status, b->data);
        size_t l = strlen(e->msg);
        while (l && (e->msg[l - 1] == '\n' || e->msg[l - 1] == '\r'))
            e->msg[--l] = 0;
    } else {
        snprintf(e->msg, sizeof e->msg, "joblet answered HTTP %ld with no explanation", status);
    }
    json_decref(root);
}

/* A refusal's error; a 503 with Retry-After is a jerr_busy's (common/err.h): nothing was done, ask
 * again (client_busy_again), after the seconds it says. */
static void refused(rnx_client *c, const answer *a, const buf *body, jerr *e)
{
    error_from_answer(a->status, body, e);
    if (a->status == 503 && a->retry_after >= 0) {
        e->code = EAGAIN;
        c->retry_after_s = a->retry_after;
    }
}

static int collect(const char *p, size_t n, void *ud) { return buf_append(ud, p, n); }

/* k (may be NULL) tells what broke it, when it knows better than what. */
static void lost(rnx_client *c, conn *k, jerr *e, const char *what)
{
    e->code = ECONNRESET;
    snprintf(e->msg, sizeof e->msg, "lost the connection to %s (%s)", c->where, k && k->why[0] ? k->why : what);
}

/* What an answer left of its connection (read_answer). */
enum { ANSWER_NONE, ANSWER_READ, ANSWER_REUSABLE };

static int read_answer(rnx_client *c, conn *k, json_t **out, jerr *e, int *left);

/* A request answered "not now, nothing was done: ask again" (503 with Retry-After: a jerr_busy's,
 * common/err.h) is asked again after the seconds it says (1 to BUSY_PAUSE_MAX_S), for
 * BUSY_RETRY_S in all, as sbatch does while slurmctld is busy ("Slurm temporarily unable to
 * accept job, sleeping and retrying"), and said once on stderr: a sweep's script does not fail
 * because joblet looked an account up, or a backup held its database for a few seconds. true:
 * ask again now; *waited_s counts. */
#define BUSY_RETRY_S 60
#define BUSY_PAUSE_MAX_S 10
bool client_busy_again(rnx_client *c, const jerr *e, int *waited_s)
{
    if (e->http != 503 || e->code != EAGAIN || *waited_s >= BUSY_RETRY_S)
        return false;
    if (!*waited_s)
        print_textf(stderr, "rnx: %s is busy: %s; asking again for up to %d s\n", c->where, e->msg, BUSY_RETRY_S);
    int pause = c->retry_after_s < 1 ? 1 : c->retry_after_s > BUSY_PAUSE_MAX_S ? BUSY_PAUSE_MAX_S : c->retry_after_s;
    struct timespec ts = {.tv_sec = pause};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    *waited_s += pause;
    return true;
}

static int request_once(rnx_client *c, const char *method, const char *path, const char *payload, json_t **out,
                        jerr *e);

int client_request(rnx_client *c, const char *method, const char *path, json_t *body, json_t **out, jerr *e)
{
    *out = NULL;
    char *payload = NULL;
    if (!strcmp(method, "POST")) {
        payload = body ? json_dumps(body, JSON_COMPACT) : xstrdup("");
        if (!payload)
            abort(); /* json_dumps fails only on allocation failure */
    }
    int ret, waited = 0;
    while ((ret = request_once(c, method, path, payload, out, e)) < 0 && client_busy_again(c, e, &waited))
        *e = (jerr){0}; /* (an attempt that fails otherwise says so afresh: never the busy 503 again) */
    free(payload);
    return ret;
}

static int request_once(rnx_client *c, const char *method, const char *path, const char *payload, json_t **out,
                        jerr *e)
{
    /* over TLS the connection is kept for the command's next request; one kept from before that
     * joblet closed meanwhile (server.idle_timeout_s) took nothing: the request goes again on a
     * new one. The local socket is dialed per request (as fast as keeping it). */
    bool keep = !c->socket;
    int ret = -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        bool reused = c->idle != NULL;
        conn *k = client_connect(c, e);
        if (!k)
            break;
        reused |= k->kept;
        int left = ANSWER_NONE;
        bool sent = send_request(c, k, method, path, "application/json", payload, payload ? strlen(payload) : 0,
                                 keep) == 0;
        if (!sent)
            lost(c, k, e, strerror(errno));
        else
            ret = read_answer(c, k, out, e, &left);
        if (keep && left == ANSWER_REUSABLE) {
            c->idle = k;
            break;
        }
        conn_close(k);
        if (ret == 0 || !reused || left != ANSWER_NONE) {
            /* a change asked whole whose answer never came (joblet killed, restarted) may have
             * been done and committed before: asking again could do it twice (a second requeue,
             * a second job) */
            if (ret < 0 && sent && e->code == ECONNRESET && strcmp(method, "GET") && strcmp(method, "HEAD")) {
                size_t n = strlen(e->msg);
                snprintf(e->msg + n, sizeof e->msg - n, "; the request was sent whole, and joblet may have done it "
                                                         "before the connection went: look (rnx job list, rnx job "
                                                         "status) before asking again");
            }
            break;
        }
    }
    return ret;
}

/* The answer to a request just sent, as client_request returns it; *left (may be NULL) says
 * whether anything came, and whether the connection can carry another request. */
static int read_answer(rnx_client *c, conn *k, json_t **out, jerr *e, int *left)
{
    buf in = {0}, resp = {0};
    answer a;
    int ret = -1;
    if (read_head(k, &in, &a) < 0) {
        lost(c, k, e, in.len ? "answer cut short" : "no answer");
        if (left)
            *left = in.len ? ANSWER_READ : ANSWER_NONE;
        goto out;
    }
    if (left)
        *left = ANSWER_READ;
    int rb = read_body(k, &in, &a, collect, &resp);
    if (left && rb == 1 && !a.close && (a.chunked || a.length >= 0) && !in.len)
        *left = ANSWER_REUSABLE;
    if (rb < 0) {
        if (rb == -2)
            snprintf(e->msg, sizeof e->msg, "joblet's answer is larger than %u MB", MAX_BODY >> 20);
        else
            lost(c, k, e, "answer cut short");
        goto out;
    }
    if (a.status < 200 || a.status > 299) {
        refused(c, &a, &resp, e);
        goto out;
    }
    if (resp.len) {
        json_error_t jerror;
        *out = json_loadb(resp.data, resp.len, 0, &jerror);
        if (!*out) {
            e->http = a.status;
            snprintf(e->msg, sizeof e->msg, "joblet sent an answer that is not JSON (%s): %.120s", jerror.text,
                     resp.data);
            goto out;
        }
    }
    ret = 0;
out:
    free(in.data);
    free(resp.data);
    return ret;
}

int client_upload(rnx_client *c, const char *path, uint64_t len, client_source_fn src, void *ud, json_t **out,
                  jerr *e)
{
    *out = NULL;
    conn *k = client_connect(c, e);
    if (!k)
        return -1;
    enum { PIECE = 256 << 10 };
    char *piece = xmalloc(PIECE);
    int ret = -1, sent = send_head(c, k, "PUT", path, "application/json", "application/octet-stream", len, false);
    uint64_t left = len;
    while (sent == 0 && left) {
        long n = src(ud, piece, left < PIECE ? (size_t)left : PIECE, e);
        if (n <= 0) {
            /* the source failed (or ended short): closing before the body is complete makes
             * joblet drop the upload */
            if (n == 0)
                snprintf(e->msg, sizeof e->msg, "the files ended %llu bytes short of what was listed",
                         (unsigned long long)left);
            goto out;
        }
        sent = send_all(k, piece, (size_t)n);
        left -= (uint64_t)n;
    }
    if (sent < 0)
        lost(c, k, e, strerror(errno));
    else
        ret = read_answer(c, k, out, e, NULL); /* also when joblet answered before taking it all */
out:
    free(piece);
    conn_close(k);
    return ret;
}

int client_request_raw(rnx_client *c, const char *method, const char *path, const char *ctype, const char *body,
                       size_t len, json_t **out, jerr *e)
{
    for (int waited = 0;; *e = (jerr){0}) { /* (each attempt's failure said afresh: client_request) */
        *out = NULL;
        conn *k = client_connect(c, e);
        if (!k)
            return -1;
        int ret = -1, sent = send_head(c, k, method, path, "application/json", ctype, len, false);
        if (sent == 0)
            sent = send_all(k, body, len);
        if (sent < 0)
            lost(c, k, e, strerror(errno));
        else
            ret = read_answer(c, k, out, e, NULL); /* also when joblet answered before taking it all */
        conn_close(k);
        if (ret == 0 || !client_busy_again(c, e, &waited))
            return ret;
    }
}

/* One attempt of client_post_file. */
static int post_file_once(rnx_client *c, const char *path, const char *ctype, int file, uint64_t size,
                          client_progress_cb cb, void *ud, json_t **out, jerr *e)
{
    *out = NULL;
    conn *k = client_connect(c, e);
    if (!k)
        return -1;
    enum { PIECE = 256 << 10 };
    char *piece = xmalloc(PIECE);
    int ret = -1, sent = send_head(c, k, "POST", path, "application/json", ctype, size, false);
    uint64_t done = 0;
    while (sent == 0 && done < size) {
        ssize_t n = read(file, piece, size - done < PIECE ? (size_t)(size - done) : PIECE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* closing before the body is complete makes joblet drop what it received */
            e->code = n < 0 ? errno : EIO;
            snprintf(e->msg, sizeof e->msg, "reading what to send: %s",
                     n < 0 ? strerror(errno) : "the file is shorter than it was");
            goto out;
        }
        sent = send_all(k, piece, (size_t)n);
        done += (uint64_t)n;
        if (cb)
            cb(done, size, ud);
    }
    if (sent < 0)
        lost(c, k, e, strerror(errno));
    else
        ret = read_answer(c, k, out, e, NULL); /* also when joblet answered before taking it all */
out:
    free(piece);
    conn_close(k);
    return ret;
}

int client_post_file(rnx_client *c, const char *path, const char *ctype, int file, uint64_t size,
                     client_progress_cb cb, void *ud, json_t **out, jerr *e)
{
    /* a file that can be read again from where it began is sent again on a busy answer (a pipe
     * cannot: its busy answer is the caller's) */
    off_t start = lseek(file, 0, SEEK_CUR);
    int ret, waited = 0;
    while ((ret = post_file_once(c, path, ctype, file, size, cb, ud, out, e)) < 0 && start >= 0 &&
           client_busy_again(c, e, &waited) && lseek(file, start, SEEK_SET) == start)
        *e = (jerr){0}; /* (each attempt's failure said afresh: client_request) */
    return ret;
}

typedef struct to_file {
    int fd;
    uint64_t got, total;
    client_progress_cb cb;
    void *ud;
    int werr;
} to_file;

static int write_out(const char *p, size_t n, void *ud)
{
    to_file *t = ud;
    size_t w = write_all(t->fd, p, n);
    t->got += w;
    if (w != n) {
        t->werr = errno;
        return -1;
    }
    if (t->cb)
        t->cb(t->got, t->total, t->ud);
    return 0;
}

/* GET path and feed a 2xx answer's body to sink as it arrives; head (may be NULL) sees the
 * answer's head first. 1: the whole body; -1 the connection broke (e set: lost, saying cut),
 * -2 sink stopped; 0: no 2xx answer (e set). */
static int get_streamed(rnx_client *c, const char *path, const char *accept, void (*head)(const answer *, void *),
                        sink_fn sink, void *ud, const char *cut, jerr *e)
{
    conn *k = client_connect(c, e);
    if (!k)
        return 0;
    buf in = {0}, errbody = {0};
    answer a;
    int ret = 0, whole = 0;
    bool keep = !c->socket;   /* as client_request: over TLS, the next request goes on it */
    if (send_request(c, k, "GET", path, accept, NULL, 0, keep) < 0 || read_head(k, &in, &a) < 0) {
        lost(c, k, e, "no answer");
    } else if (a.status < 200 || a.status > 299) {
        if ((whole = read_body(k, &in, &a, collect, &errbody)) < 0)
            lost(c, k, e, "answer cut short");
        else
            error_from_answer(a.status, &errbody, e);
        if (whole >= 0 && a.status == 503 && a.retry_after >= 0) {
            e->code = EAGAIN; /* as read_answer's: nothing was done, the caller may ask again */
            c->retry_after_s = a.retry_after;
        }
    } else {
        if (head)
            head(&a, ud);
        whole = ret = read_body(k, &in, &a, sink, ud);
        if (ret == -2)
            e->http = a.status;
        else if (ret == -1)
            lost(c, k, e, cut);
    }
    if (keep && whole == 1 && !a.close && (a.chunked || a.length >= 0) && !in.len && !c->idle)
        c->idle = k;   /* read to its end: it can carry the command's next request */
    else
        conn_close(k);
    free(in.data);
    free(errbody.data);
    return ret;
}

/* The total a download expects, from the answer's length. */
static void download_total(const answer *a, void *ud) { ((to_file *)ud)->total = a->length > 0 ? (uint64_t)a->length : 0; }

int client_download(rnx_client *c, const char *path, int out_fd, client_progress_cb cb, void *ud, jerr *e)
{
    to_file t = {out_fd, 0, 0, cb, ud, 0};
    int rb = get_streamed(c, path, "*/*", download_total, write_out, &t, "the answer was cut short", e);
    if (rb == -2) {
        e->code = t.werr;
        snprintf(e->msg, sizeof e->msg, "writing what joblet sent: %s", strerror(t.werr));
    }
    return rb == 1 ? 0 : -1;
}

typedef struct lines {
    buf pending;
    client_line_cb cb;
    void *ud;
} lines;

/* Hands over every complete line, keeping the tail for the next piece. */
static int split_lines(const char *p, size_t n, void *ud)
{
    lines *l = ud;
    if (buf_append(&l->pending, p, n) < 0)
        return -1;
    size_t start = 0;
    for (size_t i = 0; i < l->pending.len; i++) {
        if (l->pending.data[i] != '\n')
            continue;
        size_t len = i - start;
        if (len && l->pending.data[start + len - 1] == '\r')
            len--;
        if (len && l->cb(l->pending.data + start, len, l->ud) < 0)
            return -1;
        start = i + 1;
    }
    buf_consume(&l->pending, start);
    return 0;
}

int client_stream_bytes(rnx_client *c, const char *path, const char *accept, client_bytes_cb cb, void *ud, jerr *e)
{
    int rb = get_streamed(c, path, accept, NULL, cb, ud, "the stream ended early", e);
    if (rb == -2) {
        e->code = ECANCELED;
        snprintf(e->msg, sizeof e->msg, "stopped reading");
    }
    return rb == 1 ? 0 : -1;
}

int client_stream(rnx_client *c, const char *path, client_line_cb cb, void *ud, jerr *e)
{
    lines l = {.cb = cb, .ud = ud};
    int ret = client_stream_bytes(c, path, "application/x-ndjson", split_lines, &l, e);
    /* the last line may come without a newline */
    if (ret == 0 && l.pending.len && cb(l.pending.data, l.pending.len, ud) < 0) {
        e->code = ECANCELED;
        snprintf(e->msg, sizeof e->msg, "stopped reading");
        ret = -1;
    }
    free(l.pending.data);
    return ret;
}

/* ---- bodies a piece at a time ---------------------------------------------------------- */

struct client_body {
    rnx_client *c;
    conn *k;
    buf in;
    answer a;
    char *head;               /* the answer's header lines (GET) */
    long long left;           /* of the current chunk, or of the length (-1: until the close) */
    bool crlf_due;            /* a chunk's data ended: its CRLF comes next */
    bool done, broken;
};

static void body_free(client_body *b)
{
    conn_close(b->k);
    free(b->in.data);
    free(b->head);
    free(b);
}

client_body *client_get_body(rnx_client *c, const char *path, const char *accept, jerr *e)
{
    conn *k = client_connect(c, e);
    if (!k)
        return NULL;
    client_body *b = xcalloc(1, sizeof *b);
    b->c = c;
    b->k = k;
    if (send_request(c, k, "GET", path, accept, NULL, 0, false) < 0) {
        lost(c, k, e, "no answer");
        body_free(b);
        return NULL;
    }
    /* the head, kept for its headers: read_head cuts it off the buffer */
    char *end;
    while (!(end = b->in.data ? strstr(b->in.data, "\r\n\r\n") : NULL))
        if (b->in.len > MAX_HEAD || fill(k, &b->in) <= 0) {
            lost(c, k, e, "no answer");
            body_free(b);
            return NULL;
        }
    b->head = strndup(b->in.data, (size_t)(end - b->in.data) + 2);
    if (!b->head)
        abort();
    if (read_head(k, &b->in, &b->a) < 0) {
        lost(c, k, e, "no answer");
        body_free(b);
        return NULL;
    }
    if (b->a.status < 200 || b->a.status > 299) {
        buf errbody = {0};
        if (read_body(k, &b->in, &b->a, collect, &errbody) < 0)
            lost(c, k, e, "answer cut short");
        else
            error_from_answer(b->a.status, &errbody, e);
        free(errbody.data);
        body_free(b);
        return NULL;
    }
    b->left = b->a.chunked ? 0 : b->a.length;
    return b;
}

bool client_body_header(const client_body *b, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *line = b->head ? strstr(b->head, "\r\n") : NULL; line; line = strstr(line, "\r\n")) {
        line += 2;
        if (strncasecmp(line, name, n) || line[n] != ':')
            continue;
        const char *v = line + n + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vl = strcspn(v, "\r");
        snprintf(out, len, "%.*s", (int)vl, v);
        return true;
    }
    return false;
}

static long body_cut(client_body *b, jerr *e)
{
    b->broken = true;
    e->code = ECONNRESET;
    if (b->k->why[0])
        snprintf(e->msg, sizeof e->msg, "the answer was cut short: %s", b->k->why);
    else
        snprintf(e->msg, sizeof e->msg, "the answer was cut short: joblet ended it before its end");
    return -1;
}

long client_body_read(client_body *b, char *out, size_t cap, jerr *e)
{
    if (b->done)
        return 0;
    if (b->broken)
        return body_cut(b, e);
    if (b->a.chunked && b->left == 0) {
        if (b->crlf_due) {
            while (b->in.len < 2)
                if (fill(b->k, &b->in) <= 0)
                    return body_cut(b, e);
            buf_consume(&b->in, 2);
            b->crlf_due = false;
        }
        char *crlf;
        while (!(crlf = b->in.data ? memmem(b->in.data, b->in.len, "\r\n", 2) : NULL))
            if (b->in.len > 64 || fill(b->k, &b->in) <= 0)
                return body_cut(b, e);
        char *end;
        unsigned long long size = strtoull(b->in.data, &end, 16);
        if (end == b->in.data)
            return body_cut(b, e);
        buf_consume(&b->in, (size_t)(crlf - b->in.data) + 2);
        if (size == 0) {
            b->done = true;
            return 0;
        }
        b->left = (long long)size;
    }
    if (!b->a.chunked && b->left == 0) {
        b->done = true;
        return 0;
    }
    if (b->in.len == 0) {
        ssize_t r = fill(b->k, &b->in);
        if (r == 0 && !b->a.chunked && b->left < 0) {
            b->done = true;
            return 0;
        }
        if (r <= 0)
            return body_cut(b, e);
    }
    size_t n = b->in.len < cap ? b->in.len : cap;
    if (b->left >= 0 && (long long)n > b->left)
        n = (size_t)b->left;
    memcpy(out, b->in.data, n);
    buf_consume(&b->in, n);
    if (b->left > 0) {
        b->left -= (long long)n;
        if (b->left == 0 && b->a.chunked)
            b->crlf_due = true;
    }
    return (long)n;
}

client_body *client_put_body(rnx_client *c, const char *path, const char *ctype, jerr *e)
{
    if (strlen(path) > 2048) {
        snprintf(e->msg, sizeof e->msg, "the request's path is longer than 2048 bytes");
        return NULL;
    }
    conn *k = client_connect(c, e);
    if (!k)
        return NULL;
    client_body *b = xcalloc(1, sizeof *b);
    b->c = c;
    b->k = k;
    char head[4096];
    int n = snprintf(head, sizeof head,
                     "PUT %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: rnx/" JOBLET_VERSION
                     "\r\nAccept: application/json\r\nConnection: close\r\nContent-Type: %s\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n",
                     path, c->host, ctype);
    if (send_all(k, head, (size_t)n) != 0) {
        lost(c, k, e, strerror(errno));
        body_free(b);
        return NULL;
    }
    return b;
}

int client_body_write(client_body *b, const void *p, size_t n, jerr *e)
{
    if (b->broken) {
        snprintf(e->msg, sizeof e->msg, "joblet stopped reading");
        return -1;
    }
    if (!n)
        return 0;
    char size[24];
    int k = snprintf(size, sizeof size, "%zx\r\n", n);
    conn_cork(b->k);   /* over TLS: the chunk's size, data and CRLF in as few records as they fit */
    int sent = send_all(b->k, size, (size_t)k);
    if (sent == 0)
        sent = send_all(b->k, p, n);
    if (sent == 0)
        sent = send_all(b->k, "\r\n", 2);
    int u = uncork(b->k);
    if (sent != 0 || u != 0) {
        b->broken = true; /* joblet answered and closed (a refusal), or went away */
        snprintf(e->msg, sizeof e->msg, "joblet stopped reading");
        return -1;
    }
    return 0;
}

int client_body_finish(client_body *b, json_t **out, jerr *e)
{
    *out = NULL;
    if (!b->broken && send_all(b->k, "0\r\n\r\n", 5) < 0) {
        lost(b->c, b->k, e, strerror(errno));
        body_free(b);
        return -1;
    }
    int rc = read_answer(b->c, b->k, out, e, NULL); /* also when joblet answered before the end */
    body_free(b);
    return rc;
}

void client_body_close(client_body *b) { body_free(b); }

void client_account_ready(rnx_client *c)
{
    json_t *me = NULL;
    jerr e = {0};
    client_request(c, "GET", "/v1/whoami", NULL, &me, &e);
    json_decref(me);
}

int client_sees_all_jobs(rnx_client *c, bool *all, jerr *e)
{
    json_t *me = NULL;
    *all = false;
    if (client_request(c, "GET", "/v1/whoami", NULL, &me, e) < 0) {
        if (e->http != 404)
            return -1;
        *e = (jerr){0}; /* a joblet from before whoami */
        return 0;
    }
    *all = json_is_true(json_object_get(me, "sees_all_jobs"));
    json_decref(me);
    return 0;
}

conn *client_upgrade(rnx_client *c, const char *path, const char *proto, char **extra, size_t *nextra, jerr *e)
{
    return client_upgrade_with(c, path, proto, NULL, extra, nextra, e);
}

static conn *upgrade_once(rnx_client *c, const char *path, const char *proto, const char *json, char **extra,
                          size_t *nextra, jerr *e);

/* An upgrade refused "not now, nothing was done" (a jerr_busy's: joblet out of descriptors for an
 * exec, say) is asked again as a request is (client_busy_again). */
conn *client_upgrade_with(rnx_client *c, const char *path, const char *proto, const char *json, char **extra,
                          size_t *nextra, jerr *e)
{
    conn *k;
    for (int waited = 0; !(k = upgrade_once(c, path, proto, json, extra, nextra, e)) &&
                         client_busy_again(c, e, &waited);)
        *e = (jerr){0}; /* (each attempt's failure said afresh: client_request) */
    return k;
}

static conn *upgrade_once(rnx_client *c, const char *path, const char *proto, const char *json, char **extra,
                          size_t *nextra, jerr *e)
{
    *extra = NULL;
    *nextra = 0;
    size_t nbody = json ? strlen(json) : 0;
    if (strlen(path) > 2048 || strlen(proto) > 64) {
        snprintf(e->msg, sizeof e->msg, "the request is too long");
        return NULL;
    }
    conn *k = client_connect(c, e);
    if (!k)
        return NULL;
    char head[4096];
    int n = snprintf(head, sizeof head,
                     "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: rnx/" JOBLET_VERSION
                     "\r\nAccept: application/json\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%sContent-Length: "
                     "%zu\r\n\r\n",
                     path, c->host, proto, json ? "Content-Type: application/json\r\n" : "", nbody);
    buf in = {0}, body = {0};
    answer a;
    /* a refusal is decided on the head (403, 404): joblet may answer it and close before the
     * body is all sent, so a body that could not be sent is not yet a lost connection: the
     * answer already there is read (CI run 108: a reader's refused exec said "no answer") */
    bool sent = send_all(k, head, (size_t)n) == 0;
    if (sent && nbody)
        (void)send_all(k, json, nbody);
    if (!sent || read_head(k, &in, &a) < 0) {
        lost(c, k, e, in.len ? "answer cut short" : "no answer");
    } else if (a.status == 101) {
        *extra = in.data; /* what came after the head: the stream's first bytes */
        *nextra = in.len;
        return k;
    } else if (read_body(k, &in, &a, collect, &body) < 0) {
        lost(c, k, e, "answer cut short");
    } else if (a.status >= 200 && a.status <= 299) {
        e->http = a.status;
        snprintf(e->msg, sizeof e->msg, "joblet answered HTTP %d where it should have switched to %s", a.status,
                 proto);
    } else {
        refused(c, &a, &body, e);
    }
    free(in.data);
    free(body.data);
    conn_close(k);
    return NULL;
}
