/* Streams a job's output (logstream.h): history first, then (follow) what the shim appends. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/b64.h"
#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/logframe.h"
#include "../common/util.h"
#include "../exec/logwriter.h"
#include "../exec/shim.h"
#include "jobdirs.h"
#include "jobs.h"
#include "logstream.h"
#include "state.h"

#define LINE_MAX_NDJSON 16384     /* an NDJSON record holds at most this much of a line */
/* frames and raw: what libmicrohttpd asks us to fill at once. It allocates this much per
 * response, so per log follower: 256 KiB (64 followers of one user: 16 MiB) replays as fast
 * as 1 MiB did here (docs/performance.md, "Logs") */
#define BLOCK_BULK (1 << 18)
#define BLOCK_NDJSON 65536

/* One piece of output to send: in .data at off (mem NULL), or in memory. */
typedef struct piece {
    int64_t ts;
    uint64_t seq;              /* 0 for the old format: order by time */
    const char *mem;
    uint64_t off;
    size_t len;
    bool note;                 /* the cap note, not the job's bytes */
} piece;

typedef struct src {
    const char *name;          /* "stdout", "stderr" */
    int id;                    /* LOGFRAME_STDOUT, LOGFRAME_STDERR */
    bool on;
    /* the format of logwriter.h */
    int data_fd, idx_fd;
    uint64_t next;             /* the entry the next byte belongs to */
    uint64_t pos;              /* offset in .data of the next byte to send */
    log_index_entry cur;
    bool have;                 /* cur is entry `next` */
    bool noted;                /* the cap note was sent */
    char note[400];
    /* the old format: one record per line */
    int legacy_fd;
    char *buf;
    size_t len, cap;
    log_record rec;
    size_t rec_bytes, rec_off;
    bool rec_have;
    /* ndjson: a line being put together from pieces, and when its last piece came */
    char *line;
    size_t linelen;
    int64_t line_ts;
} src;

struct follower {
    struct follower *next;
    job *j;
    logstream_opts o;
    bool end_sent;
    pull_notify_fn notify;     /* its reader's, called when there may be more */
    void *notify_arg;
    uint64_t cap;              /* the job's jobs.max_log_bytes, for the note */
    src s[2];
    struct tailseek *seek;     /* --tail: the search for where the replay starts, not over yet */
    loop_task later;           /* the search's next slice, at the next loop turn */
    char *out;                 /* ndjson: encoded records not yet handed over */
    size_t outlen, outoff, outcap;
    char *scratch;             /* ndjson: a piece's bytes read from .data */
};

/* ---- the sources: the pieces of one stream, in order ---------------------------------------- */

static uint64_t idx_entries(const src *s)
{
    struct stat st;
    return s->idx_fd >= 0 && fstat(s->idx_fd, &st) == 0 ? (uint64_t)st.st_size / sizeof(log_index_entry) : 0;
}

static bool entry_at(const src *s, uint64_t k, log_index_entry *e)
{
    return pread(s->idx_fd, e, sizeof *e, (off_t)(k * sizeof *e)) == (ssize_t)sizeof *e;
}

/* Where entry k's bytes start in .data. */
static uint64_t entry_start(const src *s, uint64_t k)
{
    log_index_entry e;
    return k && entry_at(s, k - 1, &e) ? e.end : 0;
}

/* Makes the old-format source hold its next complete record if the file has one. */
static void legacy_fill(src *s)
{
    while (!s->rec_have) {
        long used = log_parse_record(s->buf, s->len, &s->rec);
        if (used > 0) {
            s->rec_have = true;
            s->rec_bytes = (size_t)used;
            s->rec_off = 0;
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
        ssize_t n = read(s->legacy_fd, s->buf + s->len, s->cap - s->len);
        if (n <= 0)
            return;
        s->len += (size_t)n;
    }
}

/* The source's next piece, if it has one now. since: pieces written before it are skipped. */
static bool src_peek(follower *f, src *s, piece *p)
{
    if (!s->on)
        return false;
    if (s->legacy_fd >= 0) {
        for (;;) {
            legacy_fill(s);
            if (!s->rec_have)
                return false;
            if (s->rec.ts_ns >= f->o.since_ns)
                break;
            memmove(s->buf, s->buf + s->rec_bytes, s->len - s->rec_bytes);
            s->len -= s->rec_bytes;
            s->rec_have = false;
        }
        /* the record's data, and its own LF when the job wrote one */
        *p = (piece){.ts = s->rec.ts_ns, .mem = s->rec.data + s->rec_off,
                     .len = s->rec.len + (s->rec.newline ? 1 : 0) - s->rec_off};
        return true;
    }
    if (s->idx_fd < 0)
        return false;
    for (;;) {
        if (!s->have) {
            if (!entry_at(s, s->next, &s->cur))
                return false;
            s->have = true;
        }
        if (s->pos < s->cur.end) {
            *p = (piece){.ts = s->cur.ts_ns, .seq = s->cur.seq, .off = s->pos, .len = (size_t)(s->cur.end - s->pos)};
            return true;
        }
        if (s->cur.flags & LOG_IDX_CAPPED && !s->noted) {
            int n = log_stop_note(s->note, sizeof s->note, s->name, s->cur.flags, f->cap,
                                  core.cfg.max_log_bytes_per_user);
            *p = (piece){.ts = s->cur.ts_ns, .seq = s->cur.seq, .mem = s->note,
                         .len = n > 0 && (size_t)n < sizeof s->note ? (size_t)n : 0, .note = true};
            return true;
        }
        s->next++;
        s->have = false;
    }
}

/* n bytes of the piece src_peek gave were sent. */
static void src_take(src *s, const piece *p, size_t n)
{
    if (p->note) {
        s->noted = true;
        return;
    }
    if (s->legacy_fd >= 0) {
        s->rec_off += n;
        if (s->rec_off >= s->rec.len + (s->rec.newline ? 1 : 0)) {
            memmove(s->buf, s->buf + s->rec_bytes, s->len - s->rec_bytes);
            s->len -= s->rec_bytes;
            s->rec_have = false;
        }
        return;
    }
    s->pos += n;
}

/* The next piece across the streams asked for: in the shim's order (its sequence numbers),
 * by time for the old format. */
static src *pick(follower *f, piece *out)
{
    src *best = NULL;
    piece p[2];
    for (int i = 0; i < 2; i++) {
        if (!src_peek(f, &f->s[i], &p[i]))
            continue;
        if (!best) {
            best = &f->s[i];
            *out = p[i];
            continue;
        }
        bool by_seq = p[i].seq && out->seq;
        if (by_seq ? p[i].seq < out->seq : p[i].ts < out->ts) {
            best = &f->s[i];
            *out = p[i];
        }
    }
    return best;
}

/* Copies up to n bytes of the piece to dst; how many (0: the file is shorter than its index
 * says, which only a torn write can cause). */
static size_t piece_read(const src *s, const piece *p, char *dst, size_t n)
{
    if (n > p->len)
        n = p->len;
    if (p->mem) {
        memcpy(dst, p->mem, n);
        return n;
    }
    ssize_t got = pread(s->data_fd, dst, n, (off_t)p->off);
    return got > 0 ? (size_t)got : 0;
}

/* ---- where a replay starts: --since and --tail ---------------------------------------------- */

/* The first entry written at or after since_ns (times grow along the index). */
static uint64_t first_since(const src *s, int64_t since_ns)
{
    uint64_t lo = 0, hi = idx_entries(s);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        log_index_entry e;
        if (entry_at(s, mid, &e) && e.ts_ns < since_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first entry whose sequence number is above seq. */
static uint64_t first_after_seq(const src *s, uint64_t seq, uint64_t lo)
{
    uint64_t hi = idx_entries(s);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        log_index_entry e;
        if (entry_at(s, mid, &e) && e.seq <= seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A place in a stream: byte off of .data, in entry k. */
typedef struct spot {
    uint64_t k, off;
} spot;

/* The search for --tail reads the streams backwards from their ends, which may be a job's whole
 * output (GBs, millions of index entries) when its lines are long or few: it goes a slice at a
 * time, TAIL_SLICE_BYTES of .data read (each index entry read counting TAIL_ENTRY_COST), then
 * gives the loop a turn (loop_later) and goes on where it stopped. Done in one go it held the loop
 * 0.48 s for a job of long lines, ~35 s at jobs.max_log_bytes (issue 25). */
#define TAIL_SLICE_BYTES (4u << 20)
#define TAIL_ENTRY_COST 512
/* all the searches together, in one turn: 64 of them open at once still cost a turn 8 MiB */
static loop_budget tail_budget = {.per_turn = 2 * TAIL_SLICE_BYTES};

/* A walk back through one stream for its last newline, from (k, end) to entry lo. */
typedef struct backscan {
    uint64_t k, end, lo, start;
    bool entered; /* start is entry k's */
} backscan;

typedef struct tailseek {
    uint64_t n, seen;        /* lines asked for, line ends found so far */
    uint64_t lo[2], k[2];    /* per stream: its first entry (since), the entry after the next to read */
    bool valid[2], last[2];  /* entries left; still at the stream's end */
    int in_i;                /* the stream of the entry being read, -1 between entries */
    uint64_t in_start, in_end, in_seq, in_k;
    bool in_first;
    int cut_i;               /* the cut: the n-th line end from the end, once found */
    spot cut;
    uint64_t cut_seq;
    bool cut_over;           /* the cut search is over (found or not) */
    int place;               /* then each stream, 0 and 1, is placed after its last newline before the cut */
    bool place_begun;
    backscan bs;
    char *buf;               /* BLOCK_BULK bytes */
} tailseek;

static void spend(uint64_t *budget, uint64_t n) { *budget = n < *budget ? *budget - n : 0; }

/* One slice of the search for the cut; true when it is over. */
static bool cut_step(follower *f, tailseek *t, uint64_t *budget)
{
    while (t->cut_i < 0) {
        if (t->in_i < 0) {
            log_index_entry e[2];
            for (int i = 0; i < 2; i++)
                if (t->valid[i] && !entry_at(&f->s[i], t->k[i] - 1, &e[i]))
                    t->valid[i] = false;
            if (!t->valid[0] && !t->valid[1])
                return true;
            spend(budget, 2 * TAIL_ENTRY_COST);
            int i = !t->valid[0] ? 1 : !t->valid[1] ? 0 : e[0].seq > e[1].seq ? 0 : 1;
            src *s = &f->s[i];
            t->in_i = i;
            t->in_k = t->k[i] - 1;
            t->in_start = entry_start(s, t->in_k);
            if (t->in_start < s->pos)
                t->in_start = s->pos;
            t->in_end = e[i].end;
            t->in_seq = e[i].seq;
            t->in_first = t->last[i];
            t->last[i] = false;
        }
        int i = t->in_i;
        src *s = &f->s[i];
        while (t->in_end > t->in_start) {
            if (!*budget)
                return false;
            size_t w = t->in_end - t->in_start > BLOCK_BULK ? BLOCK_BULK : (size_t)(t->in_end - t->in_start);
            if (pread(s->data_fd, t->buf, w, (off_t)(t->in_end - w)) != (ssize_t)w)
                break;
            spend(budget, w);
            for (size_t b = w; b-- > 0;) {
                bool ends_line = t->buf[b] == '\n';
                uint64_t at = t->in_end - w + b;
                /* a last line without a newline ends where the stream ends */
                if (t->in_first && b == w - 1 && !ends_line && ++t->seen == t->n) {
                    t->cut_i = i, t->cut = (spot){t->in_k, at + 1}, t->cut_seq = t->in_seq;
                    return true;
                }
                t->in_first = false;
                if (ends_line && ++t->seen == t->n) {
                    t->cut_i = i, t->cut = (spot){t->in_k, at}, t->cut_seq = t->in_seq;
                    return true;
                }
            }
            t->in_end -= w;
        }
        if (--t->k[i] <= t->lo[i])
            t->valid[i] = false;
        t->in_i = -1;
        if (!*budget)
            return false;
    }
    return true;
}

/* One slice of a walk back for the last newline: 1 found (*found), 0 none, -1 not over. */
static int backscan_step(const src *s, backscan *b, char *buf, uint64_t *budget, spot *found)
{
    for (;;) {
        if (!b->entered) {
            b->start = entry_start(s, b->k);
            if (b->start < s->pos)
                b->start = s->pos;
            b->entered = true;
            spend(budget, TAIL_ENTRY_COST);
        }
        while (b->end > b->start) {
            if (!*budget)
                return -1;
            size_t w = b->end - b->start > BLOCK_BULK ? BLOCK_BULK : (size_t)(b->end - b->start);
            if (pread(s->data_fd, buf, w, (off_t)(b->end - w)) != (ssize_t)w)
                return 0;
            spend(budget, w);
            const char *nl = memrchr(buf, '\n', w);
            if (nl) {
                *found = (spot){b->k, b->end - w + (uint64_t)(nl - buf)};
                return 1;
            }
            b->end -= w;
        }
        if (b->k <= b->lo)
            return 0;
        b->k--;
        log_index_entry e;
        if (!entry_at(s, b->k, &e))
            return 0;
        spend(budget, TAIL_ENTRY_COST);
        b->end = e.end;
        b->entered = false;
        if (!*budget)
            return -1;
    }
}

/* One slice of placing each stream just after its last newline before the cut; true when over. */
static bool place_step(follower *f, tailseek *t, uint64_t *budget)
{
    for (; t->place < 2; t->place++, t->place_begun = false) {
        int i = t->place;
        src *s = &f->s[i];
        if (!t->place_begun) {
            if (!s->on || s->idx_fd < 0 || idx_entries(s) <= t->lo[i])
                continue;
            spot before = t->cut;
            if (i != t->cut_i) {
                uint64_t after = first_after_seq(s, t->cut_seq, t->lo[i]); /* its pieces before the cut's */
                if (after == t->lo[i]) {
                    before = (spot){t->lo[i], s->pos}; /* none: from its start */
                } else {
                    log_index_entry e;
                    before = (spot){after - 1, entry_at(s, after - 1, &e) ? e.end : 0};
                }
                spend(budget, 64 * TAIL_ENTRY_COST); /* a binary search of the index */
            }
            t->bs = (backscan){.k = before.k, .end = before.off, .lo = t->lo[i]};
            t->place_begun = true;
        }
        spot nl;
        int rc = backscan_step(s, &t->bs, t->buf, budget, &nl);
        if (rc < 0)
            return false;
        if (rc > 0) {
            log_index_entry e;
            s->next = nl.k;
            s->pos = nl.off + 1;
            if (entry_at(s, nl.k, &e) && s->pos >= e.end) /* the newline ended its piece */
                s->next = nl.k + 1;
        }
        s->have = false;
    }
    return true;
}

/* Sets up the search that moves the sources' starts so that the replay holds the last n lines of
 * the streams asked for. A line belongs where it ends (its newline, or the end of its stream for
 * a last line without one); walking back through both streams in the shim's order, the n-th such
 * end found is the cut, and each stream then starts just after its last newline before the cut.
 * Each source's start is already where --since puts it. Fewer lines than asked for: all of them,
 * from the starts as they are. */
static void start_at_tail(follower *f, uint64_t n)
{
    if (n == 0) { /* nothing of the past: from the ends on */
        for (int i = 0; i < 2; i++) {
            src *s = &f->s[i];
            uint64_t k = s->on && s->idx_fd >= 0 ? idx_entries(s) : 0;
            if (k > s->next) {
                s->next = k;
                s->pos = entry_start(s, k);
            }
        }
        return;
    }
    tailseek *t = xcalloc(1, sizeof *t);
    t->n = n;
    t->in_i = t->cut_i = -1;
    for (int i = 0; i < 2; i++) {
        src *s = &f->s[i];
        t->lo[i] = s->next;
        t->k[i] = s->on && s->idx_fd >= 0 ? idx_entries(s) : 0;
        t->valid[i] = t->k[i] > t->lo[i];
        t->last[i] = true; /* the walk is still at the stream's end */
    }
    t->buf = xmalloc(BLOCK_BULK);
    f->seek = t;
}

static void seek_free(follower *f)
{
    loop_later_cancel(&f->later);
    if (f->seek)
        free(f->seek->buf);
    free(f->seek);
    f->seek = NULL;
}

static bool seek_slice(follower *f, tailseek *t, uint64_t *budget);

/* One slice of the --tail search; true when the replay's starts are set. */
static bool seek_step(follower *f)
{
    tailseek *t = f->seek;
    uint64_t budget = loop_budget_take(&tail_budget, TAIL_SLICE_BYTES);
    if (!budget)
        return false; /* the turn's share is used up: at the next one */
    bool over = seek_slice(f, t, &budget);
    loop_budget_return(&tail_budget, budget);
    return over;
}

/* One slice of the search within budget; true when the replay's starts are set. */
static bool seek_slice(follower *f, tailseek *t, uint64_t *budget)
{
    if (!t->cut_over) {
        if (!cut_step(f, t, budget))
            return false;
        t->cut_over = true;
        if (t->cut_i < 0)
            t->place = 2; /* fewer lines than asked for */
    }
    if (!place_step(f, t, budget))
        return false;
    seek_free(f);
    return true;
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
static void ndjson_record(follower *f, src *s, int64_t ts, const char *data, size_t n)
{
    char head[96];
    format_ns_us(ts, head + 7, sizeof head - 7);
    memcpy(head, "{\"ts\":\"", 7);
    int hl = (int)strlen(head);
    hl += snprintf(head + hl, sizeof head - (size_t)hl, "\",\"stream\":\"%s\",", s->name);
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
 * s->line (a record of its own once it passes LINE_MAX_NDJSON). */
static void ndjson_bytes(follower *f, src *s, int64_t ts, const char *p, size_t n)
{
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) + 1 : n;
        if (!s->linelen && nl) {
            ndjson_record(f, s, ts, p, take);   /* a whole line: no copy */
        } else {
            size_t room = LINE_MAX_NDJSON - s->linelen, part = take < room ? take : room;
            if (!s->line)
                s->line = xmalloc(LINE_MAX_NDJSON);
            memcpy(s->line + s->linelen, p, part);
            s->linelen += part;
            s->line_ts = ts;
            take = part;
            if (s->linelen == LINE_MAX_NDJSON || s->line[s->linelen - 1] == '\n') {
                ndjson_record(f, s, ts, s->line, s->linelen);
                s->linelen = 0;
            }
        }
        p += take;
        n -= take;
    }
}

/* Encodes up to ~64 KiB of records. Returns how many pieces were taken. */
static int ndjson_produce(follower *f)
{
    int n = 0;
    while (f->outlen < BLOCK_NDJSON) {
        piece p;
        src *s = pick(f, &p);
        if (!s)
            break;
        size_t want = p.len < BLOCK_NDJSON ? p.len : BLOCK_NDJSON;
        size_t got = piece_read(s, &p, f->scratch, want);
        if (!got)
            break;
        ndjson_bytes(f, s, p.ts, f->scratch, got);
        src_take(s, &p, got);
        n++;
    }
    return n;
}

/* Frames (or, raw, the bytes alone) straight into libmicrohttpd's buffer. */
static size_t bulk_produce(follower *f, char *buf, size_t max)
{
    bool raw = f->o.format == LOGSTREAM_RAW;
    size_t used = 0, hdr = raw ? 0 : LOGFRAME_HDR;
    while (max - used > hdr) {
        piece p;
        src *s = pick(f, &p);
        if (!s)
            break;
        size_t got = piece_read(s, &p, buf + used + hdr, max - used - hdr);
        if (!got)
            break;
        if (!raw)
            logframe_put((unsigned char *)buf + used, s->id, (uint32_t)got, p.ts);
        used += hdr + got;
        src_take(s, &p, got);
    }
    return used;
}

/* ---- the reader's side --------------------------------------------------------------------- */

size_t logstream_read(follower *f, char *buf, size_t max, enum pull_state *st)
{
    bool ndjson = f->o.format == LOGSTREAM_NDJSON;
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
        if (f->seek && !seek_step(f)) {
            /* the rest at the next turn: other requests are served in between */
            loop_later(&f->later);
            *st = PULL_WAIT;
            return 0;
        }
        /* Terminal means the shim has drained the job's pipes: the files hold everything. */
        bool ended = job_state_terminal(f->j->state);
        if (ndjson) {
            if (ndjson_produce(f) > 0)
                continue;
        } else {
            size_t n = bulk_produce(f, buf, max);
            if (n)
                return n;
        }
        if (ended) {
            if (f->end_sent) {
                *st = PULL_END;
                return 0;
            }
            f->end_sent = true;
            json_t *end = end_json(f->j);
            if (ndjson) {
                for (int i = 0; i < 2; i++)   /* a last line without its newline */
                    if (f->s[i].linelen) {
                        ndjson_record(f, &f->s[i], f->s[i].line_ts, f->s[i].line, f->s[i].linelen);
                        f->s[i].linelen = 0;
                    }
                out_json(f, end);
            } else if (f->o.format == LOGSTREAM_FRAMES) {
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

/* The --tail search's next slice: the reader is asked again. */
static void on_later(loop_task *t) { resume(t->data); }

static void close_src(src *s)
{
    if (s->data_fd >= 0)
        close(s->data_fd);
    if (s->idx_fd >= 0)
        close(s->idx_fd);
    if (s->legacy_fd >= 0)
        close(s->legacy_fd);
    free(s->buf);
    free(s->line);
}

void logstream_close(follower *f)
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
    seek_free(f);
    for (int i = 0; i < 2; i++)
        close_src(&f->s[i]);
    free(f->out);
    free(f->scratch);
    free(f);
}

/* Opens stream i of the job: its .data and .idx, or its old .log; the files of a job that has
 * written nothing yet are created empty so that they can be followed. */
static void open_src(src *s, int dirfd, int i)
{
    static const char *const names[2] = {"stdout", "stderr"};
    static const char *const legacy[2] = {SHIM_STDOUT_LEGACY, SHIM_STDERR_LEGACY};
    char data[32], idx[32];
    s->name = names[i];
    s->id = i ? LOGFRAME_STDERR : LOGFRAME_STDOUT;
    s->data_fd = s->idx_fd = s->legacy_fd = -1;
    s->legacy_fd = openat(dirfd, legacy[i], O_RDONLY | O_CLOEXEC);
    if (s->legacy_fd >= 0)
        return;
    snprintf(data, sizeof data, "%s.data", names[i]);
    snprintf(idx, sizeof idx, "%s.idx", names[i]);
    s->data_fd = openat(dirfd, data, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
    s->idx_fd = openat(dirfd, idx, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
}

/* An ended job's one stream, whole: the file itself (sent by sendfile), taken from f. false
 * when it must be read piece by piece. */
static bool raw_file(follower *f, logstream_file *out)
{
    src *s = f->o.streams == 1 ? &f->s[0] : &f->s[1];
    uint64_t n = idx_entries(s);
    log_index_entry last = {0};
    if (f->o.follow && !job_state_terminal(f->j->state))
        return false;
    if (f->o.tail >= 0 || f->o.since_ns > 0 || s->legacy_fd >= 0 || s->data_fd < 0 ||
        (n && !entry_at(s, n - 1, &last)))
        return false;
    *out = (logstream_file){.fd = s->data_fd, .len = last.end, .capped = (last.flags & LOG_IDX_CAPPED) != 0,
                            .name = s->name};
    s->data_fd = -1;   /* the caller's now */
    return true;
}

follower *logstream_open(job *j, const logstream_opts *o, logstream_file *file, jerr *e)
{
    file->fd = -1;
    follower *f = xcalloc(1, sizeof *f);
    f->j = j;
    f->o = *o;
    f->cap = (uint64_t)j->req.max_log_bytes;
    f->later = (loop_task){.fn = on_later, .data = f};
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    jerr de = {0};
    if (jobdirs_ensure(j, &de) < 0) /* a job just submitted: its files to follow */
        log_warn("job %s: %s", j->id, de.msg);
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool legacy = false;
    for (int i = 0; i < 2; i++) {
        src *s = &f->s[i];
        s->on = (o->streams >> i & 1) != 0;
        s->data_fd = s->idx_fd = s->legacy_fd = -1;
        s->name = i ? "stderr" : "stdout";
        if (s->on && dirfd >= 0)
            open_src(s, dirfd, i);
        legacy |= s->legacy_fd >= 0;
        if (s->on && s->idx_fd >= 0 && o->since_ns > 0) {
            s->next = first_since(s, o->since_ns);
            s->pos = entry_start(s, s->next);
        }
    }
    if (dirfd >= 0)
        close(dirfd);
    if (legacy && o->tail >= 0) {
        jerr_field(e, "tail", "tail: job %s's output is in the format of an older joblet, which cannot be read from "
                              "its end; leave out tail (rnx job log --tail)", j->id);
        logstream_close(f);
        return NULL;
    }
    if (o->tail >= 0)
        start_at_tail(f, (uint64_t)o->tail);
    if (o->format == LOGSTREAM_RAW && raw_file(f, file)) {
        logstream_close(f);
        return NULL;
    }
    if (o->format == LOGSTREAM_NDJSON)
        f->scratch = xmalloc(BLOCK_NDJSON);
    if (o->follow && !job_state_terminal(j->state) && j->inotify_wd < 0)
        watch_job(j, dir);
    f->next = j->followers;
    j->followers = f;
    return f;
}

void logstream_set_notify(follower *f, pull_notify_fn notify, void *arg)
{
    f->notify = notify;
    f->notify_arg = arg;
}

size_t logstream_block(const logstream_opts *o) { return o->format == LOGSTREAM_NDJSON ? BLOCK_NDJSON : BLOCK_BULK; }

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
