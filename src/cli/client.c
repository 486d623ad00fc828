/* HTTP over the daemon's unix socket with libcurl. One easy handle per client so that a
 * submit followed by a log stream (run --follow) reuses the connection. */
#include "client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"

#ifndef JOBLET_VERSION
#define JOBLET_VERSION "dev"
#endif

/* Guards against a runaway answer filling memory; a job list of this size is not plausible. */
#define MAX_BODY (256u << 20)

struct rnx_client {
    CURL *curl;
    char *socket;
    char errbuf[CURL_ERROR_SIZE];
};

/* A growing byte buffer. */
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
        b->data = realloc(b->data, cap);
        if (!b->data)
            abort();
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return 0;
}

rnx_client *client_new(const char *socket_path)
{
    rnx_client *c = xcalloc(1, sizeof *c);
    c->curl = curl_easy_init();
    if (!c->curl) {
        free(c);
        return NULL;
    }
    c->socket = xstrdup(socket_path);
    return c;
}

void client_free(rnx_client *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->curl);
    free(c->socket);
    free(c);
}

char *client_escape(rnx_client *c, const char *s)
{
    char *esc = curl_easy_escape(c->curl, s, 0);
    if (!esc)
        abort();
    char *out = xstrdup(esc);
    curl_free(esc);
    return out;
}

/* Options every request needs; curl_easy_reset keeps the connection cache, so a second
 * request on the same client goes over the same connection when the daemon allows it. */
static void setup(rnx_client *c, const char *path)
{
    char url[2048];
    snprintf(url, sizeof url, "http://localhost%s", path);
    curl_easy_reset(c->curl);
    c->errbuf[0] = 0;
    curl_easy_setopt(c->curl, CURLOPT_UNIX_SOCKET_PATH, c->socket);
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "rnx/" JOBLET_VERSION);
    /* Never let a proxy from the environment intercept a local socket request. */
    curl_easy_setopt(c->curl, CURLOPT_NOPROXY, "*");
}

/* Fills e from a non-2xx answer: the API's {"error": {...}} when it is one, else the status
 * and the start of whatever came. */
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
        /* a plain-text answer usually ends with a newline that would split the message */
        size_t l = strlen(e->msg);
        while (l && (e->msg[l - 1] == '\n' || e->msg[l - 1] == '\r'))
            e->msg[--l] = 0;
    } else {
        snprintf(e->msg, sizeof e->msg, "joblet answered HTTP %ld with no explanation", status);
    }
    json_decref(root);
}

/* Fills e when curl got no complete answer. */
static void error_from_curl(rnx_client *c, CURLcode rc, jerr *e)
{
    long oserr = 0;
    e->http = 0;
    e->field[0] = 0;
    if (rc == CURLE_COULDNT_CONNECT) {
        curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &oserr);
        e->code = oserr ? (int)oserr : ECONNREFUSED;
        if (e->code == EACCES || e->code == EPERM)
            snprintf(e->msg, sizeof e->msg,
                     "cannot reach joblet at %s: permission denied; is your user allowed to use the socket? (%s)",
                     c->socket, strerror(e->code));
        else
            snprintf(e->msg, sizeof e->msg, "cannot reach joblet at %s: is it running? (%s)", c->socket,
                     strerror(e->code));
        return;
    }
    e->code = EIO;
    snprintf(e->msg, sizeof e->msg, "talking to joblet at %s failed: %s", c->socket,
             c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
}

static size_t collect_cb(char *p, size_t size, size_t n, void *ud)
{
    return buf_append(ud, p, size * n) < 0 ? 0 : size * n;
}

int client_request(rnx_client *c, const char *method, const char *path, json_t *body,
                   json_t **out, jerr *e)
{
    buf resp = {0};
    char *payload = NULL;
    struct curl_slist *hdrs = NULL;
    int ret = -1;

    *out = NULL;
    setup(c, path);
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (strcmp(method, "GET") != 0)
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "POST") == 0) {
        payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (body && !payload)
            abort(); /* json_dumps fails only on allocation failure */
        curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, payload ? payload : "");
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(payload ? strlen(payload) : 0));
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    }
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, collect_cb);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &resp);

    CURLcode rc = curl_easy_perform(c->curl);
    long status = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK && !(status >= 300 && resp.len)) {
        /* An answer that came before the upload finished (a 413 refusing a large body)
         * still says more than the broken upload does, so it is only skipped when absent. */
        if (rc == CURLE_WRITE_ERROR)
            snprintf(e->msg, sizeof e->msg, "joblet's answer is larger than %u MB", MAX_BODY >> 20);
        else
            error_from_curl(c, rc, e);
        goto out;
    }
    if (status < 200 || status > 299) {
        error_from_answer(status, &resp, e);
        goto out;
    }
    if (resp.len) {
        json_error_t jerror;
        *out = json_loadb(resp.data, resp.len, 0, &jerror);
        if (!*out) {
            e->http = (int)status;
            snprintf(e->msg, sizeof e->msg, "joblet sent an answer that is not JSON (%s): %.120s", jerror.text,
                     resp.data);
            goto out;
        }
    }
    ret = 0;
out:
    curl_slist_free_all(hdrs);
    free(payload);
    free(resp.data);
    return ret;
}

/* State of one NDJSON stream: a 2xx answer is split into lines for the callback, anything
 * else is collected whole to be read as an error object. */
typedef struct stream_state {
    CURL *curl;
    long status;
    buf pending;          /* bytes after the last newline seen */
    buf errbody;
    client_line_cb cb;
    void *ud;
    bool stopped;         /* the callback asked to stop */
} stream_state;

static size_t stream_cb(char *p, size_t size, size_t n, void *ud)
{
    stream_state *s = ud;
    size_t total = size * n;
    if (!s->status)
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status < 200 || s->status > 299)
        return buf_append(&s->errbody, p, total) < 0 ? 0 : total;
    if (buf_append(&s->pending, p, total) < 0)
        return 0;
    /* hand over every complete line, keep the tail for the next chunk */
    size_t start = 0;
    for (size_t i = 0; i < s->pending.len; i++) {
        if (s->pending.data[i] != '\n')
            continue;
        size_t len = i - start;
        if (len && s->pending.data[start + len - 1] == '\r')
            len--;
        if (len && s->cb(s->pending.data + start, len, s->ud) < 0) {
            s->stopped = true;
            return 0;
        }
        start = i + 1;
    }
    memmove(s->pending.data, s->pending.data + start, s->pending.len - start);
    s->pending.len -= start;
    s->pending.data[s->pending.len] = 0;
    return total;
}

int client_stream(rnx_client *c, const char *path, client_line_cb cb, void *ud, jerr *e)
{
    stream_state s = {.curl = c->curl, .cb = cb, .ud = ud};
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/x-ndjson");
    int ret = -1;

    setup(c, path);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, stream_cb);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &s);

    CURLcode rc = curl_easy_perform(c->curl);
    if (!s.status)
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &s.status);
    if (s.stopped) {
        e->code = ECANCELED;
        e->http = (int)s.status;
        snprintf(e->msg, sizeof e->msg, "stopped reading");
        goto out;
    }
    if (s.status && (s.status < 200 || s.status > 299)) {
        error_from_answer(s.status, &s.errbody, e);
        goto out;
    }
    if (rc != CURLE_OK) {
        if (rc == CURLE_WRITE_ERROR) {
            snprintf(e->msg, sizeof e->msg, "a line of joblet's answer is larger than %u MB", MAX_BODY >> 20);
        } else if (s.status) {
            /* the answer had begun: the daemon went away (or restarted) mid-stream */
            e->code = ECONNRESET;
            snprintf(e->msg, sizeof e->msg, "lost the connection to joblet (%s)",
                     c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
        } else {
            error_from_curl(c, rc, e);
        }
        goto out;
    }
    /* the last line may come without a newline */
    if (s.pending.len && cb(s.pending.data, s.pending.len, ud) < 0) {
        e->code = ECANCELED;
        snprintf(e->msg, sizeof e->msg, "stopped reading");
        goto out;
    }
    ret = 0;
out:
    curl_slist_free_all(hdrs);
    free(s.pending.data);
    free(s.errbody.data);
    return ret;
}
