#include "logwriter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void logw_init(logw *w, int dirfd, const char *name, uint64_t cap)
{
    w->fd = -1;
    w->dirfd = dirfd;
    w->name = name;
    w->len = 0;
    w->bytes_written = 0;
    w->cap = cap && cap < LOGW_CAP_NOTE_MAX * 2 ? LOGW_CAP_NOTE_MAX * 2 : cap;
    w->capped = false;
    w->torn = false;
}

/* *done: the bytes written, all of them or, on failure (disk full), the start of p. */
static int write_all(int fd, const char *p, size_t n, size_t *done)
{
    *done = 0;
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        p += r;
        n -= (size_t)r;
        *done += (size_t)r;
    }
    return 0;
}

/* Output buffer for one feed call: records are appended here, then written at once. */
typedef struct obuf {
    char *p;
    size_t len, cap;
} obuf;

static int ob_record(obuf *o, int64_t ts, char flag, const char *data, size_t n)
{
    size_t need = o->len + n + 48;
    if (need > o->cap) {
        size_t cap = o->cap ? o->cap : 8192;
        while (cap < need)
            cap *= 2;
        char *np = realloc(o->p, cap);
        if (!np)
            return -1;
        o->p = np;
        o->cap = cap;
    }
    o->len += (size_t)snprintf(o->p + o->len, 40, "%lld %c ", (long long)ts, flag);
    memcpy(o->p + o->len, data, n);
    o->len += n;
    o->p[o->len++] = '\n';
    return 0;
}

/* The time stamp of the buffer's first record. */
static int64_t stamp_of(const obuf *o)
{
    long long ts = 0;
    return o->len && sscanf(o->p, "%lld", &ts) == 1 ? (int64_t)ts : 0;
}

static int ob_commit(logw *w, obuf *o)
{
    int rc = 0;
    if (o->len && w->fd < 0) {
        w->fd = openat(w->dirfd, w->name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (w->fd < 0) {
            free(o->p);
            return -1;
        }
    }
    /* A write cut short left a record without its LF: end it first, or it would swallow
     * the next record (the torn one then reads as a shortened line, or as garbage). */
    size_t done;
    if (o->len && w->torn) {
        if (write_all(w->fd, "\n", 1, &done) < 0) {
            free(o->p);
            return -1;
        }
        w->bytes_written++;
        w->torn = false;
    }
    if (o->len && w->cap && w->bytes_written + o->len > w->cap - LOGW_CAP_NOTE_MAX) {
        /* the whole records that fit, then the note, and nothing more of this stream */
        size_t keep = 0, room = w->bytes_written < w->cap - LOGW_CAP_NOTE_MAX
                                    ? (size_t)(w->cap - LOGW_CAP_NOTE_MAX - w->bytes_written) : 0;
        for (size_t i = 0; i < o->len && i < room; i++)
            if (o->p[i] == '\n')
                keep = i + 1;
        int64_t ts = stamp_of(o);
        char note[LOGW_CAP_NOTE_MAX];
        int nn = snprintf(note, sizeof note - 48, "joblet: %s reached its cap of %llu bytes (jobs.max_log_bytes); "
                                                  "the rest of the stream was discarded",
                          w->name, (unsigned long long)w->cap);
        o->len = keep;
        if (ob_record(o, ts, 'F', note, nn > 0 && (size_t)nn < sizeof note - 48 ? (size_t)nn : sizeof note - 49) < 0) {
            free(o->p);
            return -1;
        }
        w->capped = true;
    }
    if (o->len) {
        rc = write_all(w->fd, o->p, o->len, &done);
        w->bytes_written += done;
        if (rc < 0 && done > 0)
            w->torn = o->p[done - 1] != '\n';
    }
    free(o->p);
    return rc;
}

int logw_feed(logw *w, const char *data, size_t n, int64_t ts_ns)
{
    if (w->capped)
        return 0;
    obuf o = {0};
    while (n) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (take > LOGW_LINE_MAX - w->len)
            take = LOGW_LINE_MAX - w->len;
        memcpy(w->line + w->len, data, take);
        w->len += take;
        data += take;
        n -= take;
        if (n && *data == '\n') {
            if (ob_record(&o, ts_ns, 'F', w->line, w->len) < 0)
                goto fail;
            w->len = 0;
            data++;
            n--;
        } else if (w->len == LOGW_LINE_MAX) {
            if (ob_record(&o, ts_ns, 'P', w->line, w->len) < 0)
                goto fail;
            w->len = 0;
        }
    }
    return ob_commit(w, &o);
fail:
    free(o.p);
    return -1;
}

int logw_flush(logw *w, int64_t ts_ns)
{
    if (!w->len || w->capped)
        return 0;
    obuf o = {0};
    if (ob_record(&o, ts_ns, 'P', w->line, w->len) < 0) {
        free(o.p);
        return -1;
    }
    w->len = 0;
    return ob_commit(w, &o);
}

long log_parse_record(const char *buf, size_t n, log_record *r)
{
    if (n == 0)
        return 0;
    const char *nl = memchr(buf, '\n', n);
    if (!nl)
        return 0;
    size_t i = 0;
    int64_t ts = 0;
    while (i < n && buf[i] >= '0' && buf[i] <= '9') {
        int d = buf[i++] - '0';
        /* More digits than an int64 holds are garbage, not a time (and overflow is UB). */
        if (ts > (INT64_MAX - d) / 10)
            return -1;
        ts = ts * 10 + d;
    }
    if (i == 0 || buf + i + 3 > nl || buf[i] != ' ' || (buf[i + 1] != 'F' && buf[i + 1] != 'P') ||
        buf[i + 2] != ' ')
        return -1;
    r->ts_ns = ts;
    r->newline = buf[i + 1] == 'F';
    r->data = buf + i + 3;
    r->len = (size_t)(nl - r->data);
    return (long)(nl - buf + 1);
}
