/* Reads a job's output from its files (logreader.h): the pieces in order, since and tail. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/util.h"
#include "logreader.h"

/* How much of .data the tail search reads at once. */
#define SCAN_BLOCK (1 << 18)

/* ---- one stream: its pieces, in order ------------------------------------------------------- */

static uint64_t idx_entries(const logreader_stream *s)
{
    struct stat st;
    return s->idx_fd >= 0 && fstat(s->idx_fd, &st) == 0 ? (uint64_t)st.st_size / sizeof(log_index_entry) : 0;
}

static bool entry_at(const logreader_stream *s, uint64_t k, log_index_entry *e)
{
    return pread(s->idx_fd, e, sizeof *e, (off_t)(k * sizeof *e)) == (ssize_t)sizeof *e;
}

/* Where entry k's bytes start in .data. */
static uint64_t entry_start(const logreader_stream *s, uint64_t k)
{
    log_index_entry e;
    return k && entry_at(s, k - 1, &e) ? e.end : 0;
}

/* Makes the old-format stream hold its next complete record if the file has one. */
static void legacy_fill(logreader *r, logreader_stream *s)
{
    while (!s->rec_have) {
        long used = log_parse_record(s->buf, s->len, &s->rec);
        r->entries++;
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

/* The stream's next piece, if it has one now. */
static bool stream_peek(logreader *r, int i, logreader_piece *p)
{
    logreader_stream *s = &r->s[i];
    if (!s->on)
        return false;
    if (s->legacy_fd >= 0) {
        for (;;) {
            legacy_fill(r, s);
            if (!s->rec_have)
                return false;
            if (s->rec.ts_ns >= r->since_ns)
                break;
            memmove(s->buf, s->buf + s->rec_bytes, s->len - s->rec_bytes);
            s->len -= s->rec_bytes;
            s->rec_have = false;
        }
        /* the record's data, and its own LF when the job wrote one */
        *p = (logreader_piece){.stream = i, .ts_ns = s->rec.ts_ns, .mem = s->rec.data + s->rec_off,
                               .len = s->rec.len + (s->rec.newline ? 1 : 0) - s->rec_off};
        return true;
    }
    if (s->idx_fd < 0)
        return false;
    for (;;) {
        if (!s->have) {
            r->entries++;
            if (!entry_at(s, s->next, &s->cur))
                return false;
            s->have = true;
        }
        if (s->pos < s->cur.end) {
            *p = (logreader_piece){.stream = i, .ts_ns = s->cur.ts_ns, .seq = s->cur.seq, .off = s->pos,
                                   .len = (size_t)(s->cur.end - s->pos)};
            return true;
        }
        if (s->cur.flags & LOG_IDX_CAPPED && !s->noted) {
            int n = log_stop_note(s->note, sizeof s->note, s->name, s->cur.flags, r->cap, r->user_cap);
            *p = (logreader_piece){.stream = i, .ts_ns = s->cur.ts_ns, .seq = s->cur.seq, .mem = s->note,
                                   .len = n > 0 && (size_t)n < sizeof s->note ? (size_t)n : 0, .note = true};
            return true;
        }
        s->next++;
        s->have = false;
    }
}

/* The next piece across the streams: in the shim's order (its sequence numbers), by time for
 * the old format. */
bool logreader_next(logreader *r, logreader_piece *out)
{
    bool found = false;
    logreader_piece p;
    for (int i = 0; i < 2; i++) {
        if (!stream_peek(r, i, &p))
            continue;
        if (!found) {
            *out = p;
            found = true;
            continue;
        }
        bool by_seq = p.seq && out->seq;
        if (by_seq ? p.seq < out->seq : p.ts_ns < out->ts_ns)
            *out = p;
    }
    return found;
}

uint64_t logreader_entries(const logreader *r) { return r->entries; }

size_t logreader_read(const logreader *r, const logreader_piece *p, char *dst, size_t n)
{
    if (n > p->len)
        n = p->len;
    if (p->mem) {
        memcpy(dst, p->mem, n);
        return n;
    }
    ssize_t got = pread(r->s[p->stream].data_fd, dst, n, (off_t)p->off);
    return got > 0 ? (size_t)got : 0;
}

void logreader_take(logreader *r, const logreader_piece *p, size_t n)
{
    logreader_stream *s = &r->s[p->stream];
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

/* ---- opening, since ------------------------------------------------------------------------- */

void logreader_init(logreader *r, uint64_t cap, uint64_t user_cap)
{
    memset(r, 0, sizeof *r);
    r->cap = cap;
    r->user_cap = user_cap;
    for (int i = 0; i < 2; i++) {
        logreader_stream *s = &r->s[i];
        s->name = i ? "stderr" : "stdout";
        s->data_fd = s->idx_fd = s->legacy_fd = -1;
    }
}

void logreader_open(logreader *r, int i, int data_fd, int idx_fd, int legacy_fd)
{
    logreader_stream *s = &r->s[i];
    s->on = true;
    s->data_fd = data_fd;
    s->idx_fd = idx_fd;
    s->legacy_fd = legacy_fd;
}

bool logreader_legacy(const logreader *r)
{
    return (r->s[0].on && r->s[0].legacy_fd >= 0) || (r->s[1].on && r->s[1].legacy_fd >= 0);
}

/* The first entry written at or after since_ns (times grow along the index). */
static uint64_t first_since(const logreader_stream *s, int64_t since_ns)
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

void logreader_since(logreader *r, int64_t since_ns)
{
    r->since_ns = since_ns;
    if (since_ns <= 0)
        return;
    for (int i = 0; i < 2; i++) {
        logreader_stream *s = &r->s[i];
        if (s->on && s->idx_fd >= 0) {
            s->next = first_since(s, since_ns);
            s->pos = entry_start(s, s->next);
        }
    }
}

/* ---- where a replay starts: tail ------------------------------------------------------------ */

/* The first entry whose sequence number is above seq. */
static uint64_t first_after_seq(const logreader_stream *s, uint64_t seq, uint64_t lo)
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

/* A walk back through one stream for its last newline, from (k, end) to entry lo. */
typedef struct backscan {
    uint64_t k, end, lo, start;
    bool entered; /* start is entry k's */
} backscan;

/* The search reads the streams backwards from their ends, which may be a job's whole output
 * (GBs, millions of index entries) when its lines are long or few: hence the slices. */
struct logreader_tail {
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
    char *buf;               /* SCAN_BLOCK bytes */
};

static void spend(uint64_t *budget, uint64_t n) { *budget = n < *budget ? *budget - n : 0; }

/* One slice of the search for the cut; true when it is over. */
static bool cut_step(logreader *r, struct logreader_tail *t, uint64_t *budget)
{
    while (t->cut_i < 0) {
        if (t->in_i < 0) {
            log_index_entry e[2];
            for (int i = 0; i < 2; i++)
                if (t->valid[i] && !entry_at(&r->s[i], t->k[i] - 1, &e[i]))
                    t->valid[i] = false;
            if (!t->valid[0] && !t->valid[1])
                return true;
            spend(budget, 2 * LOGREADER_ENTRY_COST);
            int i = !t->valid[0] ? 1 : !t->valid[1] ? 0 : e[0].seq > e[1].seq ? 0 : 1;
            logreader_stream *s = &r->s[i];
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
        logreader_stream *s = &r->s[i];
        while (t->in_end > t->in_start) {
            if (!*budget)
                return false;
            size_t w = t->in_end - t->in_start > SCAN_BLOCK ? SCAN_BLOCK : (size_t)(t->in_end - t->in_start);
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
static int backscan_step(const logreader_stream *s, backscan *b, char *buf, uint64_t *budget, spot *found)
{
    for (;;) {
        if (!b->entered) {
            b->start = entry_start(s, b->k);
            if (b->start < s->pos)
                b->start = s->pos;
            b->entered = true;
            spend(budget, LOGREADER_ENTRY_COST);
        }
        while (b->end > b->start) {
            if (!*budget)
                return -1;
            size_t w = b->end - b->start > SCAN_BLOCK ? SCAN_BLOCK : (size_t)(b->end - b->start);
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
        spend(budget, LOGREADER_ENTRY_COST);
        b->end = e.end;
        b->entered = false;
        if (!*budget)
            return -1;
    }
}

/* One slice of placing each stream just after its last newline before the cut; true when over. */
static bool place_step(logreader *r, struct logreader_tail *t, uint64_t *budget)
{
    for (; t->place < 2; t->place++, t->place_begun = false) {
        int i = t->place;
        logreader_stream *s = &r->s[i];
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
                spend(budget, 64 * LOGREADER_ENTRY_COST); /* a binary search of the index */
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

static void tail_free(logreader *r)
{
    if (r->tail)
        free(r->tail->buf);
    free(r->tail);
    r->tail = NULL;
}

void logreader_tail(logreader *r, uint64_t n)
{
    tail_free(r);
    if (n == 0) { /* nothing of the past: from the ends on */
        for (int i = 0; i < 2; i++) {
            logreader_stream *s = &r->s[i];
            uint64_t k = s->on && s->idx_fd >= 0 ? idx_entries(s) : 0;
            if (k > s->next) {
                s->next = k;
                s->pos = entry_start(s, k);
            }
        }
        return;
    }
    struct logreader_tail *t = xcalloc(1, sizeof *t);
    t->n = n;
    t->in_i = t->cut_i = -1;
    for (int i = 0; i < 2; i++) {
        logreader_stream *s = &r->s[i];
        t->lo[i] = s->next;
        t->k[i] = s->on && s->idx_fd >= 0 ? idx_entries(s) : 0;
        t->valid[i] = t->k[i] > t->lo[i];
        t->last[i] = true; /* the walk is still at the stream's end */
    }
    t->buf = xmalloc(SCAN_BLOCK);
    r->tail = t;
}

bool logreader_seeking(const logreader *r) { return r->tail != NULL; }

bool logreader_tail_step(logreader *r, uint64_t *budget)
{
    struct logreader_tail *t = r->tail;
    if (!t)
        return true;
    if (!t->cut_over) {
        if (!cut_step(r, t, budget))
            return false;
        t->cut_over = true;
        if (t->cut_i < 0)
            t->place = 2; /* fewer lines than asked for */
    }
    if (!place_step(r, t, budget))
        return false;
    tail_free(r);
    return true;
}

/* ---- whole files, the end ------------------------------------------------------------------- */

int logreader_whole(logreader *r, int i, uint64_t *len, bool *capped)
{
    logreader_stream *s = &r->s[i];
    uint64_t n = idx_entries(s);
    log_index_entry last = {0};
    if (s->legacy_fd >= 0 || s->data_fd < 0 || (n && !entry_at(s, n - 1, &last)))
        return -1;
    *len = last.end;
    *capped = (last.flags & LOG_IDX_CAPPED) != 0;
    int fd = s->data_fd;
    s->data_fd = -1; /* the caller's now */
    return fd;
}

void logreader_free(logreader *r)
{
    tail_free(r);
    for (int i = 0; i < 2; i++) {
        logreader_stream *s = &r->s[i];
        if (s->data_fd >= 0)
            close(s->data_fd);
        if (s->idx_fd >= 0)
            close(s->idx_fd);
        if (s->legacy_fd >= 0)
            close(s->legacy_fd);
        free(s->buf);
        s->buf = NULL;
        s->data_fd = s->idx_fd = s->legacy_fd = -1;
    }
}
