/* Streams a job's output (job_logs.h): history first, then (follow) what the shim appends. The
 * files are read through exec/logreader.h; here: the followers, their encodings, the wake-ups. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "../common/b64.h"
#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/logframe.h"
#include "../common/util.h"
#include "../exec/logreader.h"
#include "../exec/shim.h"
#include "job_dirs.h"
#include "jobs.h"
#include "job_logs.h"
#include "state.h"

#define LINE_MAX_NDJSON 16384     /* an NDJSON record holds at most this much of a line */
/* frames and raw: what libmicrohttpd asks us to fill at once. It allocates this much per
 * response, so per log follower: 256 KiB (64 followers of one user: 16 MiB) replays as fast
 * as 1 MiB did here (docs/performance.md, "Logs") */
#define BLOCK_BULK (1 << 18)
#define BLOCK_NDJSON 65536

/* The NDJSON form's state of one stream: a line being put together from pieces, and when its
 * last piece came. */
typedef struct ndline {
    char *line;
    size_t linelen;
    int64_t line_ts;
} ndline;

static const char *const stream_names[2] = {"stdout", "stderr"};

/* The readers of one user (the caller's uid, core/authz.h), for its share of a turn's reading. */
typedef struct log_user {
    struct log_user *next;
    uid_t uid;
    unsigned readers;          /* its followers open now: freed at 0 */
    uint64_t turn;             /* the loop turn `used` counts (loop_turns) */
    uint64_t used;             /* of the turn's budget, taken by its readers in that turn */
    bool held;                 /* ... and one of them was refused, or spent its slice */
} log_user;

struct follower {
    struct follower *next;
    job *j;
    log_user *user;            /* whose reader it is */
    job_logs_opts o;
    bool end_sent;
    bool said_turn;            /* told (at debug) that the turn's share ran out for it, once */
    pull_notify_fn notify;     /* its reader's, called when there may be more */
    void *notify_arg;
    logreader r;               /* the job's files (exec/logreader.h) */
    ndline nd[2];
    loop_task later;           /* the next slice (of the --tail search, of pieces), at the next loop turn */
    char *out;                 /* ndjson: encoded records not yet handed over */
    size_t outlen, outoff, outcap;
    char *scratch;             /* ndjson: a piece's bytes read from .data */
};

/* ---- a slice per turn: --tail, and the pieces ------------------------------------------------ */

/* The search for --tail (logreader_tail) may have to read a job's whole output (GBs, millions of
 * index entries) when its lines are long or few: it goes a slice at a time, LOGREADER_TAIL_SLICE
 * bytes of .data, then gives the loop a turn (loop_later) and goes on where it stopped. Done in
 * one go it held the loop 0.48 s for a job of long lines, ~35 s at jobs.max_log_bytes (issue 25).
 * Reading the pieces is sliced the same way, from the same share: a block of 256 KiB is 262,144
 * pieces (an index entry and two preads each) when the job wrote a byte at a time, and 16 such
 * readers made turns of 0.8 s; a reader's call now reads at most LOGREADER_TAIL_SLICE of bytes
 * and entries (LOGREADER_ENTRY_COST each: 1,024 one-byte pieces), and stops at the first piece
 * past it. All the searches and readers together, in one turn: 64 of them open at once still
 * cost a turn 8 MiB (2,048 index entries, ~8 ms). */
static loop_budget turn_budget = {.per_turn = 2 * LOGREADER_TAIL_SLICE};

/* The turn's share is split between users, not readers. One user's 60 readers of a long log
 * read ~50 bytes for each byte another user's one reader of a log as long got
 * (test_hostile_logfair): libmicrohttpd asks each connection for one block a turn (~32 KiB: the
 * connection's buffer), so a user's bytes a turn were a block per reader, the turn's length was
 * what all of them read, and the budget above never bound. Now, in a turn, a user's readers
 * together take at most
 *  - the budget divided by the users whose readers asked for some in this turn or one of the
 *    USER_RECENT before (those that ask late in this turn count before they ask; a reader
 *    whose client is slow to take its block skips turns), and
 *  - when another user's readers asked in those turns, about what the hungriest of them took
 *    the last time they asked (at least USER_MIN_SHARE), unless that one was held back
 *    itself (refused, or its slice spent): then only the even split holds.
 * A user alone has all of it; two users each reading all they can have half each; one user's
 * many readers beside another's one have about that one's block a turn, so the turns are short
 * and the one reader's bytes a second about as many as theirs. */
#define USER_MIN_SHARE BLOCK_NDJSON
#define USER_RECENT 16

static log_user *users;
static uint64_t asking_turn = UINT64_MAX; /* the turn asking_now counts */
static unsigned asking_now, asking_before;
/* The users that asked in the USER_RECENT turns before asking_turn: the two largest of what
 * one's readers took the last time (UINT64_MAX: it was held back, wanting more), and whose the
 * largest was. */
static uint64_t took_first, took_second;
static const log_user *took_first_user;

static log_user *user_get(uid_t uid)
{
    for (log_user *u = users; u; u = u->next)
        if (u->uid == uid) {
            u->readers++;
            return u;
        }
    log_user *u = xcalloc(1, sizeof *u);
    u->uid = uid;
    u->readers = 1;
    u->turn = UINT64_MAX; /* none counted yet */
    u->next = users;
    users = u;
    return u;
}

static void user_put(log_user *u)
{
    if (--u->readers)
        return;
    for (log_user **p = &users; *p; p = &(*p)->next)
        if (*p == u) {
            *p = u->next;
            break;
        }
    if (took_first_user == u)
        took_first_user = NULL;
    free(u);
}

/* The first ask of turn t: what the users took in the turns before, summed up. */
static void turn_begin(uint64_t t)
{
    asking_before = 0;
    took_first = took_second = 0;
    took_first_user = NULL;
    for (const log_user *u = users; u; u = u->next) {
        if (u->turn == UINT64_MAX || u->turn >= t || u->turn + USER_RECENT < t)
            continue;
        asking_before++;
        uint64_t took = u->held ? UINT64_MAX : u->used;
        if (took > took_first || !took_first_user) {
            took_second = took_first;
            took_first = took;
            took_first_user = u;
        } else if (took > took_second) {
            took_second = took;
        }
    }
    asking_now = 0;
    asking_turn = t;
}

/* What u's readers may take in this turn, in all. */
static uint64_t user_cap(const log_user *u)
{
    unsigned n = asking_now > asking_before ? asking_now : asking_before;
    uint64_t even = turn_budget.per_turn / (n ? n : 1);
    uint64_t other = took_first_user == u ? took_second : took_first; /* 0: none competed */
    if (!other || other >= even)
        return even;
    return other > USER_MIN_SHARE ? other : USER_MIN_SHARE;
}

/* Up to want of the turn's budget for f, within its user's share; 0 when none is left. */
static uint64_t share_take(follower *f, uint64_t want)
{
    uint64_t t = loop_turns();
    if (asking_turn != t)
        turn_begin(t);
    log_user *u = f->user;
    if (u->turn != t) {
        u->turn = t;
        u->used = 0;
        u->held = false;
        asking_now++;
    }
    uint64_t cap = user_cap(u);
    uint64_t got = u->used < cap ? loop_budget_take(&turn_budget, want < cap - u->used ? want : cap - u->used) : 0;
    u->used += got;
    if (!got)
        u->held = true;
    return got;
}

/* Gives back what a slice took and did not use (none: it was spent, the reader wants more). */
static void share_return(follower *f, uint64_t unused)
{
    loop_budget_return(&turn_budget, unused);
    log_user *u = f->user;
    if (u->turn != loop_turns())
        return;
    u->used -= unused < u->used ? unused : u->used;
    if (!unused)
        u->held = true;
}

/* One slice of the --tail search; true when the replay's starts are set. */
static bool seek_step(follower *f)
{
    uint64_t budget = share_take(f, LOGREADER_TAIL_SLICE);
    if (!budget)
        return false; /* the turn's share is used up: at the next one */
    bool over = logreader_tail_step(&f->r, &budget);
    share_return(f, budget);
    if (over)
        loop_later_cancel(&f->later);
    return over;
}

/* A reader's slice of pieces: what is left of it, counted down as pieces are read. */
typedef struct slice {
    uint64_t left;
    uint64_t entries; /* logreader_entries when last counted */
} slice;

/* Counts the entries read since the last call and n bytes against s: whether any is left. */
static bool slice_spend(follower *f, slice *s, uint64_t n)
{
    uint64_t e = logreader_entries(&f->r);
    n += (e - s->entries) * LOGREADER_ENTRY_COST;
    s->entries = e;
    s->left = n < s->left ? s->left - n : 0;
    return s->left > 0;
}

/* ---- the three forms ------------------------------------------------------------------------ */

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

static json_t *end_json(const job *j)
{
    return json_pack("{s:b,s:s,s:o,s:o,s:o}", "end", 1, "status", job_state_name(j->state), "exit_code",
                     j->has_exit ? json_integer(j->exit_code) : json_null(), "signal",
                     j->signal ? json_integer(j->signal) : json_null(), "end_reason",
                     j->end_reason ? json_string(j->end_reason) : json_null());
}

/* data as the inside of a JSON string (valid UTF-8 without NUL: utf8_valid), written as
 * jansson writes it: '"', '\\' and control characters escaped, the rest as it is. */
static void json_escaped(follower *f, const char *data, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)data[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        out_append(f, data + run, i - run);
        char e[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t el = 2;
        switch (c) {
        case '"': case '\\': break;
        case '\n': e[1] = 'n'; break;
        case '\t': e[1] = 't'; break;
        case '\r': e[1] = 'r'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        default:
            memcpy(e, "\\u00", 4);
            e[4] = hex[c >> 4];
            e[5] = hex[c & 15];
            el = 6;
        }
        out_append(f, e, el);
        run = i + 1;
    }
    out_append(f, data + run, n - run);
}

/* One NDJSON record: a line (with its newline) or the part of one there is. Put together by
 * hand, not through jansson: this is the one place that runs per line. */
static void ndjson_record(follower *f, int stream, int64_t ts, const char *data, size_t n)
{
    char head[96];
    format_ns_us(ts, head + 7, sizeof head - 7);
    memcpy(head, "{\"ts\":\"", 7);
    int hl = (int)strlen(head);
    hl += snprintf(head + hl, sizeof head - (size_t)hl, "\",\"stream\":\"%s\",", stream_names[stream]);
    out_append(f, head, (size_t)hl);
    if (utf8_valid(data, n)) {
        out_append(f, "\"data\":\"", 8);
        json_escaped(f, data, n);
    } else {
        char *b = b64_encode(data, n);
        out_append(f, "\"data_b64\":\"", 12);
        out_append(f, b, strlen(b));
        free(b);
    }
    out_append(f, "\"}\n", 3);
}

/* Splits a piece's bytes into line records; the end of a line still being written waits in
 * the stream's ndline (a record of its own once it passes LINE_MAX_NDJSON). */
static void ndjson_bytes(follower *f, int stream, int64_t ts, const char *p, size_t n)
{
    ndline *s = &f->nd[stream];
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) + 1 : n;
        if (!s->linelen && nl) {
            ndjson_record(f, stream, ts, p, take);   /* a whole line: no copy */
        } else {
            size_t room = LINE_MAX_NDJSON - s->linelen, part = take < room ? take : room;
            if (!s->line)
                s->line = xmalloc(LINE_MAX_NDJSON);
            memcpy(s->line + s->linelen, p, part);
            s->linelen += part;
            s->line_ts = ts;
            take = part;
            if (s->linelen == LINE_MAX_NDJSON || s->line[s->linelen - 1] == '\n') {
                ndjson_record(f, stream, ts, s->line, s->linelen);
                s->linelen = 0;
            }
        }
        p += take;
        n -= take;
    }
}

/* Encodes up to ~64 KiB of records, within the slice s (one piece at least). Returns how many
 * pieces were taken: 0 only when there is none now. */
static int ndjson_produce(follower *f, slice *s)
{
    int n = 0;
    while (f->outlen < BLOCK_NDJSON) {
        logreader_piece p;
        if (!logreader_next(&f->r, &p))
            break;
        size_t want = p.len < BLOCK_NDJSON ? p.len : BLOCK_NDJSON;
        size_t got = logreader_read(&f->r, &p, f->scratch, want);
        if (!got)
            break;
        ndjson_bytes(f, p.stream, p.ts_ns, f->scratch, got);
        logreader_take(&f->r, &p, got);
        n++;
        if (!slice_spend(f, s, got))
            break;
    }
    return n;
}

/* Frames (or, raw, the bytes alone) straight into libmicrohttpd's buffer, within the slice s
 * (one piece at least): 0 only when there is no piece now. */
static size_t bulk_produce(follower *f, char *buf, size_t max, slice *s)
{
    bool raw = f->o.format == JOB_LOGS_RAW;
    size_t used = 0, hdr = raw ? 0 : LOGFRAME_HDR;
    while (max - used > hdr) {
        logreader_piece p;
        if (!logreader_next(&f->r, &p))
            break;
        size_t got = logreader_read(&f->r, &p, buf + used + hdr, max - used - hdr);
        if (!got)
            break;
        if (!raw)
            logframe_put((unsigned char *)buf + used, p.stream ? LOGFRAME_STDERR : LOGFRAME_STDOUT, (uint32_t)got,
                         p.ts_ns);
        used += hdr + got;
        logreader_take(&f->r, &p, got);
        if (!slice_spend(f, s, got))
            break;
    }
    return used;
}

/* ---- the reader's side --------------------------------------------------------------------- */

size_t job_logs_read(follower *f, char *buf, size_t max, enum pull_state *st)
{
    bool ndjson = f->o.format == JOB_LOGS_NDJSON;
    for (;;) {
        if (f->outoff < f->outlen) {
            size_t n = f->outlen - f->outoff < max ? f->outlen - f->outoff : max;
            memcpy(buf, f->out + f->outoff, n);
            f->outoff += n;
            return n;
        }
        f->outlen = f->outoff = 0;
        if (!f->j) {
            *st = PULL_END;
            return 0;
        }
        if (logreader_seeking(&f->r) && !seek_step(f)) {
            /* the rest at the next turn: other requests are served in between */
            loop_later(&f->later);
            *st = PULL_WAIT;
            return 0;
        }
        /* Terminal means the shim has drained the job's pipes: the files hold everything. */
        bool ended = job_state_terminal(f->j->state);
        slice sl = {.left = share_take(f, LOGREADER_TAIL_SLICE), .entries = logreader_entries(&f->r)};
        if (!sl.left) {
            /* the turn's share is used up: the rest at the next one (nothing was looked at, so
             * neither the end nor a wait for more output can be told yet) */
            if (!f->said_turn)
                log_debug("job %s: the loop turn's share of log reading is used up; its reader goes on at the next",
                          f->j->id);
            f->said_turn = true;
            loop_later(&f->later);
            *st = PULL_WAIT;
            return 0;
        }
        size_t n = 0;
        if (ndjson)
            n = (size_t)ndjson_produce(f, &sl);
        else
            n = bulk_produce(f, buf, max, &sl);
        slice_spend(f, &sl, 0); /* the entries looked at for nothing (none there yet) count too */
        share_return(f, sl.left);
        if (n && ndjson)
            continue;
        if (n)
            return n;
        if (ended) {
            if (f->end_sent) {
                *st = PULL_END;
                return 0;
            }
            f->end_sent = true;
            json_t *end = end_json(f->j);
            if (ndjson) {
                for (int i = 0; i < 2; i++)   /* a last line without its newline */
                    if (f->nd[i].linelen) {
                        ndjson_record(f, i, f->nd[i].line_ts, f->nd[i].line, f->nd[i].linelen);
                        f->nd[i].linelen = 0;
                    }
                out_json(f, end);
            } else if (f->o.format == JOB_LOGS_FRAMES) {
                char *t = json_dumps(end, JSON_COMPACT);
                unsigned char h[LOGFRAME_HDR];
                logframe_put(h, LOGFRAME_END, (uint32_t)strlen(t), now_ms() * 1000000);
                out_append(f, (const char *)h, sizeof h);
                out_append(f, t, strlen(t));
                free(t);
                json_decref(end);
            } else {
                json_decref(end);
            }
            continue;
        }
        *st = f->o.follow ? PULL_WAIT : PULL_END;
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
    if (f->notify)
        f->notify(f->notify_arg);
}

/* The next slice (--tail search, pieces): the reader is asked again. */
static void on_later(loop_task *t) { resume(t->data); }

void job_logs_close(follower *f)
{
    loop_later_cancel(&f->later);
    if (f->j) {
        for (follower **p = &f->j->followers; *p; p = &(*p)->next)
            if (*p == f) {
                *p = f->next;
                break;
            }
        unwatch(f->j);
    }
    logreader_free(&f->r);
    for (int i = 0; i < 2; i++)
        free(f->nd[i].line);
    free(f->out);
    free(f->scratch);
    user_put(f->user);
    free(f);
}

/* Gives the reader stream i of the job: its .data and .idx, or its old .log; the files of a job
 * that has written nothing yet are created empty so that they can be followed. */
static void open_stream(logreader *r, int dirfd, int i)
{
    static const char *const legacy[2] = {SHIM_STDOUT_LEGACY, SHIM_STDERR_LEGACY};
    char data[32], idx[32];
    int legacy_fd = -1, data_fd = -1, idx_fd = -1;
    if (dirfd >= 0) {
        legacy_fd = openat(dirfd, legacy[i], O_RDONLY | O_CLOEXEC);
        if (legacy_fd < 0) {
            snprintf(data, sizeof data, "%s.data", stream_names[i]);
            snprintf(idx, sizeof idx, "%s.idx", stream_names[i]);
            data_fd = openat(dirfd, data, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
            idx_fd = openat(dirfd, idx, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
        }
    }
    logreader_open(r, i, data_fd, idx_fd, legacy_fd);
}

/* An ended job's one stream, whole: the file itself (sent by sendfile), taken from f. false
 * when it must be read piece by piece. */
static bool raw_file(follower *f, job_logs_file *out)
{
    int i = f->o.streams == 1 ? LOGREADER_STDOUT : LOGREADER_STDERR;
    uint64_t len;
    bool capped;
    if (f->o.follow && !job_state_terminal(f->j->state))
        return false;
    if (f->o.tail >= 0 || f->o.since_ns > 0)
        return false;
    int fd = logreader_whole(&f->r, i, &len, &capped);
    if (fd < 0)
        return false;
    *out = (job_logs_file){.fd = fd, .len = len, .capped = capped, .name = stream_names[i]};
    return true;
}

follower *job_logs_open(job *j, const job_logs_opts *o, job_logs_file *file, jerr *e)
{
    file->fd = -1;
    follower *f = xcalloc(1, sizeof *f);
    f->j = j;
    f->o = *o;
    f->user = user_get(o->reader);
    logreader_init(&f->r, (uint64_t)j->req.max_log_bytes, core.cfg.max_log_bytes_per_user);
    f->later = (loop_task){.fn = on_later, .data = f};
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    jerr de = {0};
    if (job_dirs_ensure(j, &de) < 0) /* a job just submitted: its files to follow */
        log_warn("job %s: %s", j->id, de.msg);
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < 2; i++)
        if (o->streams >> i & 1)
            open_stream(&f->r, dirfd, i);
    if (dirfd >= 0)
        close(dirfd);
    logreader_since(&f->r, o->since_ns);
    if (logreader_legacy(&f->r) && o->tail >= 0) {
        jerr_field(e, "tail", "tail: job %s's output is in the format of an older joblet, which cannot be read from "
                              "its end; leave out tail (rnx job log --tail)", j->id);
        job_logs_close(f);
        return NULL;
    }
    if (o->tail >= 0)
        logreader_tail(&f->r, (uint64_t)o->tail);
    if (o->format == JOB_LOGS_RAW && raw_file(f, file)) {
        job_logs_close(f);
        return NULL;
    }
    if (o->format == JOB_LOGS_NDJSON)
        f->scratch = xmalloc(BLOCK_NDJSON);
    if (o->follow && !job_state_terminal(j->state) && j->inotify_wd < 0)
        watch_job(j, dir);
    f->next = j->followers;
    j->followers = f;
    return f;
}

void job_logs_set_notify(follower *f, pull_notify_fn notify, void *arg)
{
    f->notify = notify;
    f->notify_arg = arg;
}

size_t job_logs_block(const job_logs_opts *o) { return o->format == JOB_LOGS_NDJSON ? BLOCK_NDJSON : BLOCK_BULK; }

void job_logs_wake(job *j)
{
    for (follower *f = j->followers; f; f = f->next)
        resume(f);
}

/* A job is being deleted: its followers end at once. */
void job_logs_detach(job *j)
{
    job_logs_wake(j);
    for (follower *f = j->followers; f; f = f->next)
        f->j = NULL;
    j->followers = NULL;
    drop_watch(j);
}

static void on_inotify(watch *w, uint32_t events)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    bool overflow = false;
    while ((n = read(w->fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            if (ev->mask & IN_Q_OVERFLOW)
                overflow = true;
            for (size_t i = 0; i < nwatched; i++)
                if (watched[i]->inotify_wd == ev->wd)
                    job_logs_wake(watched[i]);
            p += sizeof *ev + ev->len;
        }
    }
    /* The kernel's queue overflowed (wd -1, fs.inotify.max_queued_events): events were lost,
     * and a follower whose job wrote only then would wait for output it already has. Every
     * follower looks at its files again, once for all the lost events. */
    if (overflow) {
        log_warn("inotify: its queue overflowed; every log follower reads its files again");
        for (size_t i = 0; i < nwatched; i++)
            job_logs_wake(watched[i]);
    }
}

void job_logs_init(void)
{
    core.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    core.w_inotify = (watch){core.inotify_fd, on_inotify, NULL};
    loop_add(&core.w_inotify);
}
