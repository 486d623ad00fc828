/* Streams a runtime build's log (runtime_log.h). The daemon appends the helper's output to the
 * log file as it reads it (runtime_build.c), so a follower only ever reads that file: whoever
 * starts following, whenever, sees the same lines and the same progress. */
#include "runtime_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/util.h"

struct rt_follower {
    struct rt_follower *next;
    rt_build *b;              /* NULL once the build's record is gone */
    int fd;                   /* the log file */
    bool follow, end_sent;
    pull_notify_fn notify;    /* the reader's, called when there may be more */
    void *notify_arg;
    rtprogress progress;
    char line[4096];          /* the line read so far */
    size_t nline;
    char *out;                /* NDJSON not yet sent */
    size_t outlen, outoff, outcap;
};

static const char *const state_names[] = {"running", "succeeded", "failed"};

static void out_append(rt_follower *f, const char *p, size_t n)
{
    if (f->outlen + n > f->outcap) {
        f->outcap = (f->outlen + n) * 2;
        f->out = xrealloc(f->out, f->outcap);
    }
    memcpy(f->out + f->outlen, p, n);
    f->outlen += n;
}

static void out_json(rt_follower *f, json_t *o)
{
    char *t = json_dumps(o, JSON_COMPACT);
    out_append(f, t, strlen(t));
    out_append(f, "\n", 1);
    free(t);
    json_decref(o);
}

static void emit_line(rt_follower *f)
{
    f->line[f->nline < sizeof f->line ? f->nline : sizeof f->line - 1] = 0;
    rtprogress_feed(&f->progress, f->line, strlen(f->line));
    utf8_sanitize(f->line);
    out_json(f, json_pack("{s:s,s:s,s:i}", "line", f->line, "phase", f->progress.phase, "percent",
                          f->progress.percent));
    f->nline = 0;
}

/* Reads up to 64 KiB of the log into NDJSON records; the number of bytes read. */
static ssize_t produce(rt_follower *f)
{
    char buf[65536];
    ssize_t n = read(f->fd, buf, sizeof buf);
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n' || buf[i] == '\r')
            emit_line(f);
        else if (f->nline < sizeof f->line - 1)
            f->line[f->nline++] = buf[i];
    }
    return n;
}

static void end_record(rt_follower *f)
{
    const rt_build *b = f->b;
    out_json(f, json_pack("{s:b,s:i,s:s,s:s?,s:s?,s:s,s:i,s:b}", "end", 1, "id", (int)b->id, "state",
                          state_names[b->state], "name", b->name[0] ? b->name : NULL, "error",
                          b->error[0] ? b->error : NULL, "phase", f->progress.phase, "percent", f->progress.percent,
                          "from_cache", b->from_cache));
}

size_t runtime_log_read(rt_follower *f, char *buf, size_t max, enum pull_state *st)
{
    for (;;) {
        if (f->outoff < f->outlen) {
            size_t n = f->outlen - f->outoff < max ? f->outlen - f->outoff : max;
            memcpy(buf, f->out + f->outoff, n);
            f->outoff += n;
            return n;
        }
        f->outlen = f->outoff = 0;
        if (!f->b || f->end_sent) {
            *st = PULL_END;
            return 0;
        }
        /* over means the daemon has written all there is to the file */
        bool over = f->b->state != RTB_RUNNING;
        if (produce(f) > 0)
            continue;
        if (over || !f->follow) {
            if (f->nline)
                emit_line(f);
            if (over)
                end_record(f);
            f->end_sent = true;
            continue;
        }
        *st = PULL_WAIT;
        return 0;
    }
}

void runtime_log_close(rt_follower *f)
{
    if (f->b)
        for (rt_follower **p = &f->b->followers; *p; p = &(*p)->next)
            if (*p == f) {
                *p = f->next;
                break;
            }
    if (f->fd >= 0)
        close(f->fd);
    free(f->out);
    free(f);
}

rt_follower *runtime_log_open(rt_build *b, bool follow, pull_notify_fn notify, void *arg)
{
    rt_follower *f = xcalloc(1, sizeof *f);
    f->b = b;
    f->follow = follow;
    f->notify = notify;
    f->notify_arg = arg;
    rtprogress_init(&f->progress);
    f->fd = open(b->log_path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0)
        log_warn("runtimes: build %u's log %s: %s", b->id, b->log_path, strerror(errno));
    f->next = b->followers;
    b->followers = f;
    return f;
}

void runtime_log_set_notify(rt_follower *f, pull_notify_fn notify, void *arg)
{
    f->notify = notify;
    f->notify_arg = arg;
}

void runtime_log_wake(rt_build *b)
{
    for (rt_follower *f = b->followers; f; f = f->next)
        if (f->notify)
            f->notify(f->notify_arg);
}

void runtime_log_detach(rt_build *b)
{
    runtime_log_wake(b);
    for (rt_follower *f = b->followers; f; f = f->next)
        f->b = NULL;
    b->followers = NULL;
}
