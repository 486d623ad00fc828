/* Streams a job's logs as NDJSON: history first, then (follow) new lines as the shim
 * appends them. A follower with nothing to send suspends its connection; inotify on the
 * job's directory, or the job's end, resumes it. Nothing here blocks the event loop. */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "../common/b64.h"
#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../exec/logwriter.h"
#include "../exec/shim.h"
#include "jobs.h"
#include "logstream.h"
#include "state.h"

typedef struct src {
    int fd;
    const char *name;
    char *buf;
    size_t len, cap;
    bool have;
    log_record rec;
    size_t rec_bytes;
} src;

typedef struct follower {
    struct follower *next;
    job *j;
    struct MHD_Connection *conn;
    bool follow, suspended, end_sent;
    bool gone;               /* the client hung up while we waited for output */
    watch w_conn;            /* its socket, watched while suspended: libmicrohttpd does not */
    src s[2];
    char *out;
    size_t outlen, outoff, outcap;
} follower;

static void out_append(follower *f, const char *p, size_t n)
{
    if (f->outlen + n > f->outcap) {
        f->outcap = (f->outlen + n) * 2;
        f->out = xrealloc(f->out, f->outcap);
    }
    memcpy(f->out + f->outlen, p, n);
    f->outlen += n;
}

static void out_json(follower *f, json_t *o)
{
    char *t = json_dumps(o, JSON_COMPACT);
    out_append(f, t, strlen(t));
    out_append(f, "\n", 1);
    free(t);
    json_decref(o);
}

/* Makes sure s holds its next complete record if the file has one. */
static void fill(src *s)
{
    if (s->fd < 0 || s->have)
        return;
    for (;;) {
        long used = log_parse_record(s->buf, s->len, &s->rec);
        if (used > 0) {
            s->have = true;
            s->rec_bytes = (size_t)used;
            return;
        }
        if (used < 0) { /* not a record: skip to the next line rather than stall the stream */
            char *nl = memchr(s->buf, '\n', s->len);
            size_t drop = nl ? (size_t)(nl - s->buf + 1) : s->len;
            memmove(s->buf, s->buf + drop, s->len - drop);
            s->len -= drop;
            continue;
        }
        if (s->cap - s->len < 16384) {
            s->cap = s->cap ? s->cap * 2 : 65536;
            s->buf = xrealloc(s->buf, s->cap);
        }
        ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len);
        if (n <= 0)
            return;
        s->len += (size_t)n;
    }
}

static void consume(src *s)
{
    memmove(s->buf, s->buf + s->rec_bytes, s->len - s->rec_bytes);
    s->len -= s->rec_bytes;
    s->have = false;
}

static void encode(follower *f, src *s)
{
    char ts[40];
    format_ns_us(s->rec.ts_ns, ts, sizeof ts);
    json_t *o = json_pack("{s:s,s:s}", "ts", ts, "stream", s->name);
    size_t n = s->rec.len + (s->rec.newline ? 1 : 0);
    char *line = xmalloc(n + 1);
    memcpy(line, s->rec.data, s->rec.len);
    if (s->rec.newline)
        line[s->rec.len] = '\n';
    line[n] = 0;
    if (utf8_valid(line, n)) {
        json_object_set_new(o, "data", json_stringn(line, n));
    } else {
        char *b = b64_encode(line, n);
        json_object_set_new(o, "data_b64", json_string(b));
        free(b);
    }
    free(line);
    out_json(f, o);
}

/* Encodes up to ~64 KiB of records, oldest first across both streams. Returns records. */
static int produce(follower *f)
{
    int n = 0;
    while (f->outlen < 65536) {
        fill(&f->s[0]);
        fill(&f->s[1]);
        src *pick = NULL;
        for (int i = 0; i < 2; i++)
            if (f->s[i].have && (!pick || f->s[i].rec.ts_ns < pick->rec.ts_ns))
                pick = &f->s[i];
        if (!pick)
            break;
        encode(f, pick);
        consume(pick);
        n++;
    }
    return n;
}

static void end_record(follower *f)
{
    const job *j = f->j;
    out_json(f, json_pack("{s:b,s:s,s:o,s:o,s:o}", "end", 1, "status", job_state_name(j->state), "exit_code",
                          j->has_exit ? json_integer(j->exit_code) : json_null(), "signal",
                          j->signal ? json_integer(j->signal) : json_null(), "end_reason",
                          j->end_reason ? json_string(j->end_reason) : json_null()));
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    follower *f = cls;
    for (;;) {
        if (f->outoff < f->outlen) {
            size_t n = f->outlen - f->outoff < max ? f->outlen - f->outoff : max;
            memcpy(buf, f->out + f->outoff, n);
            f->outoff += n;
            return (ssize_t)n;
        }
        f->outlen = f->outoff = 0;
        if (!f->j)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (f->gone)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        /* Terminal means the shim has drained the job's pipes: the files hold everything. */
        bool ended = job_state_terminal(f->j->state);
        if (produce(f) > 0)
            continue;
        if (ended) {
            if (f->end_sent)
                return MHD_CONTENT_READER_END_OF_STREAM;
            f->end_sent = true;
            end_record(f);
            continue;
        }
        if (!f->follow)
            return MHD_CONTENT_READER_END_OF_STREAM;
        f->suspended = true;
        MHD_suspend_connection(f->conn);
        if (f->w_conn.fd >= 0 && loop_add_events(&f->w_conn, EPOLLRDHUP) < 0)
            log_warn("watching a log follower's connection: %s", strerror(errno));
        return 0;
    }
}

/* Jobs with an inotify watch: the few being followed, so an event need not scan every job. */
static job **watched;
static size_t nwatched, capwatched;

static void watch_job(job *j, const char *dir)
{
    j->inotify_wd = inotify_add_watch(core.inotify_fd, dir, IN_MODIFY);
    if (j->inotify_wd < 0) {
        log_warn("inotify on %s: %s", dir, strerror(errno));
        return;
    }
    if (nwatched == capwatched) {
        capwatched = capwatched ? capwatched * 2 : 16;
        watched = xrealloc(watched, capwatched * sizeof *watched);
    }
    watched[nwatched++] = j;
}

static void drop_watch(job *j)
{
    if (j->inotify_wd < 0)
        return;
    inotify_rm_watch(core.inotify_fd, j->inotify_wd);
    j->inotify_wd = -1;
    for (size_t i = 0; i < nwatched; i++)
        if (watched[i] == j) {
            watched[i] = watched[--nwatched];
            break;
        }
}

static void unwatch(job *j)
{
    if (!j->followers)
        drop_watch(j);
}

static void resume(follower *f)
{
    if (!f->suspended)
        return;
    f->suspended = false;
    loop_del(&f->w_conn);
    MHD_resume_connection(f->conn);
}

static void on_conn_event(watch *w, uint32_t events)
{
    follower *f = w->data;
    f->gone = true;
    resume(f);
}

static void free_follower(void *cls)
{
    follower *f = cls;
    if (f->suspended)
        loop_del(&f->w_conn);
    if (f->j) {
        for (follower **p = &f->j->followers; *p; p = &(*p)->next)
            if (*p == f) {
                *p = f->next;
                break;
            }
        unwatch(f->j);
    }
    for (int i = 0; i < 2; i++) {
        if (f->s[i].fd >= 0)
            close(f->s[i].fd);
        free(f->s[i].buf);
    }
    free(f->out);
    free(f);
}

struct MHD_Response *logstream_response(job *j, struct MHD_Connection *conn, bool follow, int streams)
{
    follower *f = xcalloc(1, sizeof *f);
    f->j = j;
    f->conn = conn;
    f->follow = follow;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    f->w_conn = (watch){ci ? ci->connect_fd : -1, on_conn_event, f};
    char dir[700], path[760];
    jobs_dir_of(j, dir, sizeof dir);
    const char *files[2] = {SHIM_STDOUT, SHIM_STDERR};
    const char *names[2] = {"stdout", "stderr"};
    for (int i = 0; i < 2; i++) {
        f->s[i].name = names[i];
        f->s[i].fd = -1;
        if (!(streams & (1 << i)))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        /* The shim may not have created the file yet: create it empty so we can follow it. */
        f->s[i].fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
    }
    if (follow && !job_state_terminal(j->state) && j->inotify_wd < 0)
        watch_job(j, dir);
    f->next = j->followers;
    j->followers = f;
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, reader, f, free_follower);
    MHD_add_response_header(r, "Content-Type", "application/x-ndjson");
    return r;
}

void logstream_wake(job *j)
{
    for (follower *f = j->followers; f; f = f->next)
        resume(f);
}

/* A job is being deleted: its followers end at once. */
void logstream_detach(job *j)
{
    logstream_wake(j);
    for (follower *f = j->followers; f; f = f->next)
        f->j = NULL;
    j->followers = NULL;
    drop_watch(j);
}

static void on_inotify(watch *w, uint32_t events)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(w->fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            for (size_t i = 0; i < nwatched; i++)
                if (watched[i]->inotify_wd == ev->wd)
                    logstream_wake(watched[i]);
            p += sizeof *ev + ev->len;
        }
    }
}

void logstream_init(void)
{
    core.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    core.w_inotify = (watch){core.inotify_fd, on_inotify, NULL};
    loop_add(&core.w_inotify);
}
