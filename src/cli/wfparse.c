/* Workflow files: YAML -> the body of POST /v1/workflows (docs/workflows.md).
 *
 * The YAML is read with libfyaml's event parser into a small tree of our own that keeps the
 * line and column of every node (libfyaml 0.7's document nodes do not expose them), resolving
 * anchors, aliases and "<<" merge keys on the way. The tree is then walked against the
 * workflow's schema: every key known, every value of the right kind, each job's request read
 * and checked by the one request schema (common/jobreq.h) that `rnx job run`'s flags and the
 * daemon's API use too, in its words, every dependency naming a job of the file, no cycles. Problems are collected, each "FILE:LINE:COL: message"; a file with any problem
 * produces no body, so nothing is ever submitted from an invalid file. */
#include "wfparse.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libfyaml.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/jobreq.h"
#include "../common/jsonx.h"
#include "../common/netaddr.h"
#include "../common/parse.h"
#include "../common/suggest.h"
#include "../common/util.h"
#include "upload.h"

/* ---- the tree ------------------------------------------------------------------------ */

typedef enum { Y_SCALAR, Y_SEQ, Y_MAP } ykind;

typedef struct ynode {
    ykind kind;
    int line, col;            /* 1-based; 0 while unknown (an empty value has no mark) */
    char *text;               /* scalar: its value, NUL-terminated */
    size_t len;               /* scalar: length of text (it may hold a NUL from a "\0" escape) */
    bool plain;               /* plain (unquoted, untagged) scalar: null, true, 12 are resolved */
    size_t from, to;          /* scalar: its bytes in the text (a quoted one's inside its quotes) */
    bool block;               /* a literal (|) or folded (>) scalar */
    struct ynode **kids;      /* sequence: items; mapping: key, value, key, value, ... */
    size_t nkids, cap;
    uint64_t nodes, bytes;    /* what it stands for with every alias in it written out (saturating) */
} ynode;

typedef struct anchor {
    char *name;
    ynode *node;
} anchor;

typedef struct ytree {
    ynode **all;              /* every node, for freeing; aliases share nodes */
    size_t nall, capall;
    anchor *anchors;
    size_t nanchors;
    ynode *root;
} ytree;

static ynode *ynew(ytree *t, ykind kind)
{
    ynode *n = xcalloc(1, sizeof *n);
    n->kind = kind;
    if (t->nall == t->capall) {
        t->capall = t->capall ? t->capall * 2 : 64;
        t->all = xrealloc(t->all, t->capall * sizeof *t->all);
    }
    t->all[t->nall++] = n;
    return n;
}

static void ykid(ynode *p, ynode *k)
{
    if (p->nkids == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->kids = xrealloc(p->kids, p->cap * sizeof *p->kids);
    }
    p->kids[p->nkids++] = k;
}

static void ytree_free(ytree *t)
{
    for (size_t i = 0; i < t->nall; i++) {
        free(t->all[i]->text);
        free(t->all[i]->kids);
        free(t->all[i]);
    }
    for (size_t i = 0; i < t->nanchors; i++)
        free(t->anchors[i].name);
    free(t->all);
    free(t->anchors);
    memset(t, 0, sizeof *t);
}

static bool y_eq(const ynode *n, const char *s)
{
    return n && n->kind == Y_SCALAR && n->len == strlen(s) && memcmp(n->text, s, n->len) == 0;
}

/* YAML's null: no value at all, ~ or null (plain). */
static bool y_null(const ynode *n)
{
    return !n || (n->kind == Y_SCALAR && n->plain &&
                  (n->len == 0 || y_eq(n, "~") || y_eq(n, "null") || y_eq(n, "Null") || y_eq(n, "NULL")));
}

/* ---- messages ------------------------------------------------------------------------ */

typedef struct ctx {
    const char *path;         /* the file as the user named it */
    char *dir;                /* its directory as given, "" for the current one */
    wfp_errors *errs;
    const char *job;          /* the job being read, named in messages; NULL outside jobs */
    struct wfp_doc *doc;
} ctx;

static void add_msg(wfp_errors *errs, char *msg)
{
    if (errs->n < WFP_MAX_ERRORS)
        errs->msg[errs->n++] = msg;
    else {
        errs->dropped++;
        free(msg);
    }
}

__attribute__((format(printf, 4, 5))) static int err_pos(ctx *c, int line, int col, const char *fmt, ...)
{
    char msg[1024], *out;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (asprintf(&out, "%s:%d:%d: %s%s%s%s", c->path, line > 0 ? line : 1, col > 0 ? col : 1, c->job ? "job '" : "",
                 c->job ? c->job : "", c->job ? "': " : "", msg) < 0)
        abort();
    add_msg(c->errs, out);
    return -1;
}

#define err_at(c, node, ...) err_pos((c), (node) ? (node)->line : 1, (node) ? (node)->col : 1, __VA_ARGS__)

static bool failed(const ctx *c) { return c->errs->n > 0 || c->errs->dropped > 0; }

/* User text as it may appear in a message: at most 60 bytes (cut on a character boundary,
 * "..." marks the cut), control characters (Unicode's too: utf8_control_len) as '?'. */
static const char *shown(const ynode *n, char *buf, size_t len)
{
    size_t max = len - 4 < 60 ? len - 4 : 60, i = 0, o = 0;
    const char *s = n && n->kind == Y_SCALAR ? n->text : "";
    size_t sl = n && n->kind == Y_SCALAR ? n->len : 0;
    for (; i < sl && o < max; i++) {
        uint32_t cp;
        size_t cl = utf8_control_len((const unsigned char *)s + i, &cp);
        if (cl) { /* a C1 control, a line separator, a bidi override */
            buf[o++] = '?';
            i += cl - 1;
            continue;
        }
        buf[o++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    }
    if (i < sl) {
        while (o > 0 && ((unsigned char)buf[o] & 0xc0) == 0x80)   /* back to a character's start */
            o--;
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = 0;
    return buf;
}

/* What a node is, for "must be X, got Y": "a list", "a mapping", "no value", "'text'". */
static const char *what(const ynode *n, char *buf, size_t len)
{
    if (!n || y_null(n))
        return "no value";
    if (n->kind == Y_SEQ)
        return "a list";
    if (n->kind == Y_MAP)
        return "a mapping";
    char s[80];
    snprintf(buf, len, "'%s'", shown(n, s, sizeof s));
    return buf;
}

/* ---- YAML text -> tree ---------------------------------------------------------------- */

static void quiet_output(struct fy_diag *diag, void *user, const char *buf, size_t len) {}

static void set_mark(ynode *n, struct fy_event *ev)
{
    const struct fy_mark *m = fy_event_start_mark(ev);
    if (m && m->line >= 0 && m->column >= 0) {
        n->line = m->line + 1;
        n->col = m->column + 1;
    }
}

typedef struct frame {
    ynode *node;
    char *anchor;
} frame;

/* Names (a mapping's keys, the anchors) to what they name, hashed, so that a file of many keys
 * or anchors is read in linear time: a scan of the earlier ones for each made 100,000 keys take
 * minutes (tests/fuzz). */
typedef struct name_slot {
    const char *text;  /* NULL: empty */
    size_t len;
    const void *val;
} name_slot;

typedef struct name_index {
    name_slot *slot;
    size_t cap, n;     /* cap: a power of two, or 0 */
} name_index;

static size_t name_hash(const char *s, size_t len)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return (size_t)h;
}

static name_slot *ni_slot(const name_index *x, const char *s, size_t len)
{
    for (size_t i = name_hash(s, len) & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
        name_slot *t = &x->slot[i];
        if (!t->text || (t->len == len && memcmp(t->text, s, len) == 0))
            return t;
    }
}

static const void *ni_get(const name_index *x, const char *s, size_t len)
{
    return x->cap ? ni_slot(x, s, len)->val : NULL;
}

/* Adds s (which must outlive the index), or gives an existing s the new val. */
static void ni_put(name_index *x, const char *s, size_t len, const void *val)
{
    if (2 * (x->n + 1) > x->cap) {
        name_index g = {xcalloc(x->cap ? 2 * x->cap : 16, sizeof *g.slot), x->cap ? 2 * x->cap : 16, x->n};
        for (size_t i = 0; i < x->cap; i++)
            if (x->slot[i].text)
                *ni_slot(&g, x->slot[i].text, x->slot[i].len) = x->slot[i];
        free(x->slot);
        *x = g;
    }
    name_slot *t = ni_slot(x, s, len);
    if (!t->text)
        x->n++;
    *t = (name_slot){s, len, val};
}

/* Keys that "<<" merges may bring into one file, all mappings together: a chain of merges
 * copies every key again at each step, so that a few kilobytes could ask for gigabytes. */
#define WFP_MAX_MERGED_KEYS 100000

/* What the file may stand for with its aliases written out: an anchor of 900 KB named by 3,000
 * jobs (a file under 1 MiB) made rnx build 2.7 GB of request (8 GB of memory, minutes), and
 * each level of aliases to aliases multiplies. joblet takes at most 800,000 values in a request
 * and 16 MB of body by default (server.max_body_bytes), so these refuse no file it could take. */
#define WFP_MAX_EXPANDED_NODES 1000000u
#define WFP_MAX_EXPANDED_BYTES (64u << 20)

typedef struct builder {
    ytree *t;
    ctx *c;
    frame *stack;
    size_t depth, cap;
    name_index anchors;   /* name -> the node its latest definition anchors */
    size_t merged;        /* keys merges brought in so far */
} builder;

/* A finished mapping: keys must be scalars and unique; "<<: *anchor" (or a list of them)
 * merges the keys of other mappings that are not given here. */
static void finish_map(builder *b, ynode *m)
{
    ynode **out = xcalloc(m->nkids + 2, sizeof *out), **merges = NULL;
    size_t n = 0, cap = m->nkids + 2, nmerges = 0;
    char w[80];
    name_index keys = {0};  /* the keys in out */
    const ynode *merge_key = NULL;
    for (size_t i = 0; i + 1 < m->nkids; i += 2) {
        ynode *k = m->kids[i], *v = m->kids[i + 1];
        if (k->kind != Y_SCALAR) {
            err_at(b->c, k, "a key must be a name, not %s", what(k, w, sizeof w));
            continue;
        }
        if (k->plain && y_eq(k, "<<")) {
            merge_key = k;
            size_t nsrc = v->kind == Y_SEQ ? v->nkids : 1;
            for (size_t s = 0; s < nsrc; s++) {
                ynode *src = v->kind == Y_SEQ ? v->kids[s] : v;
                if (src->kind != Y_MAP) {
                    err_at(b->c, src, "'<<' merges mappings (an alias such as *defaults, or a list of them), not %s",
                           what(src, w, sizeof w));
                    continue;
                }
                merges = xrealloc(merges, (nmerges + 1) * sizeof *merges);
                merges[nmerges++] = src;
            }
            continue;
        }
        const ynode *first = ni_get(&keys, k->text, k->len);
        if (first) {
            char s[80];
            err_at(b->c, k, "duplicate key '%s' (first given at line %d, column %d)", shown(k, s, sizeof s),
                   first->line, first->col);
            continue;
        }
        ni_put(&keys, k->text, k->len, k);
        out[n++] = k;
        out[n++] = v;
    }
    for (size_t s = 0; s < nmerges; s++)
        for (size_t i = 0; i + 1 < merges[s]->nkids; i += 2) {
            const ynode *mk = merges[s]->kids[i];
            if (ni_get(&keys, mk->text, mk->len))
                continue;   /* given here, or by an earlier merge: that one wins */
            if (b->merged >= WFP_MAX_MERGED_KEYS) {
                if (b->merged == WFP_MAX_MERGED_KEYS) /* said once */
                    err_at(b->c, merge_key, "'<<' merges would bring more than %d keys into this file (each "
                                            "merge of a merge copies its keys again); merge fewer",
                           WFP_MAX_MERGED_KEYS);
                b->merged = WFP_MAX_MERGED_KEYS + 1;
                s = nmerges;
                break;
            }
            b->merged++;
            ni_put(&keys, mk->text, mk->len, mk);
            if (n + 2 > cap) {
                cap *= 2;
                out = xrealloc(out, cap * sizeof *out);
            }
            out[n++] = merges[s]->kids[i];
            out[n++] = merges[s]->kids[i + 1];
        }
    free(merges);
    free(keys.slot);
    free(m->kids);
    m->kids = out;
    m->nkids = n;
    m->cap = cap;
}

static void add_anchor(builder *b, char *name, ynode *n)
{
    if (!name)
        return;
    b->t->anchors = xrealloc(b->t->anchors, (b->t->nanchors + 1) * sizeof *b->t->anchors);
    b->t->anchors[b->t->nanchors++] = (anchor){name, n};
    ni_put(&b->anchors, name, strlen(name), n);   /* the latest definition wins */
}

/* Places a finished node in its parent. A value without a mark of its own (an empty one) is
 * placed at its key; an empty item of a list at the list. */
static void attach(builder *b, ynode *n)
{
    if (b->depth == 0) {
        if (!b->t->root)
            b->t->root = n;
        if (!n->line)
            n->line = n->col = 1;
        return;
    }
    ynode *p = b->stack[b->depth - 1].node;
    if (!n->line) {
        const ynode *at = p->kind == Y_MAP && p->nkids % 2 == 1 ? p->kids[p->nkids - 1] : p;
        n->line = at->line;
        n->col = at->col;
    }
    ykid(p, n);
}

static char *token_text(struct fy_token *t)
{
    size_t l = 0;
    const char *s = t ? fy_token_get_text(t, &l) : NULL;
    if (!s)
        return NULL;
    char *out = xmalloc(l + 1);
    memcpy(out, s, l);
    out[l] = 0;
    return out;
}

/* Tags: !!str makes a scalar text whatever it looks like; the other standard tags are
 * accepted as the value's own kind; any other tag is refused rather than ignored. */
static bool tag_ok(builder *b, struct fy_event *ev, ynode *n)
{
    struct fy_token *tt = fy_event_get_tag_token(ev);
    char *tag = token_text(tt);
    bool ok = true;
    if (tag) {
        static const char *const known[] = {"str", "int", "float", "bool", "null", "map", "seq"};
        const char *std = "tag:yaml.org,2002:";
        size_t i = 0;
        if (!strncmp(tag, std, strlen(std)))
            while (i < ARRAY_LEN(known) && strcmp(tag + strlen(std), known[i]))
                i++;
        else
            i = ARRAY_LEN(known);
        if (i == ARRAY_LEN(known)) {
            const struct fy_mark *m = fy_token_start_mark(tt);
            err_pos(b->c, m && m->line >= 0 ? m->line + 1 : n->line, m && m->column >= 0 ? m->column + 1 : n->col,
                    "the tag '%.60s' is not supported in a workflow file", tag);
            ok = false;
        } else if (i == 0) {
            n->plain = false;
        }
    }
    free(tag);
    return ok;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* A finished node's expanded size: its own, and its items' (an alias's target counts each time
 * it is named; it was finished before, so this is one pass over the file's nodes). */
static void weigh(ynode *n)
{
    n->nodes = 1;
    n->bytes = n->kind == Y_SCALAR ? n->len + 2 : 2;
    for (size_t i = 0; i < n->nkids; i++) {
        n->nodes = sat_add(n->nodes, n->kids[i]->nodes);
        n->bytes = sat_add(n->bytes, n->kids[i]->bytes);
    }
}

static void push(builder *b, ynode *n, char *anchor_name)
{
    if (b->depth == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->stack = xrealloc(b->stack, b->cap * sizeof *b->stack);
    }
    b->stack[b->depth++] = (frame){n, anchor_name};
}

/* One event; returns false to stop reading. */
static bool on_event(builder *b, struct fy_event *ev, int *docs)
{
    ynode *n;
    switch (ev->type) {
    case FYET_DOCUMENT_START:
        if (++*docs > 1) {
            const struct fy_mark *m = fy_event_start_mark(ev);
            err_pos(b->c, m && m->line >= 0 ? m->line + 1 : 1, m && m->column >= 0 ? m->column + 1 : 1,
                    "a workflow file holds one YAML document; a second one starts here");
            return false;
        }
        return true;
    case FYET_MAPPING_START:
    case FYET_SEQUENCE_START:
        n = ynew(b->t, ev->type == FYET_MAPPING_START ? Y_MAP : Y_SEQ);
        set_mark(n, ev);
        tag_ok(b, ev, n);
        push(b, n, token_text(fy_event_get_anchor_token(ev)));
        return true;
    case FYET_MAPPING_END:
    case FYET_SEQUENCE_END: {
        frame f = b->stack[--b->depth];
        if (f.node->kind == Y_MAP)
            finish_map(b, f.node);
        weigh(f.node);
        add_anchor(b, f.anchor, f.node);   /* only now: an alias inside its own anchor finds nothing */
        attach(b, f.node);
        return true;
    }
    case FYET_SCALAR: {
        struct fy_token *t = fy_event_get_token(ev);
        size_t l = 0;
        const char *s = t ? fy_token_get_text(t, &l) : NULL;
        n = ynew(b->t, Y_SCALAR);
        n->text = xmalloc(l + 1);
        if (l)
            memcpy(n->text, s, l);
        n->text[l] = 0;
        n->len = l;
        enum fy_scalar_style st = t ? fy_token_scalar_style(t) : FYSS_PLAIN;
        n->plain = st == FYSS_PLAIN;
        n->block = st == FYSS_LITERAL || st == FYSS_FOLDED;
        set_mark(n, ev);
        const struct fy_mark *m0 = fy_event_start_mark(ev), *m1 = fy_event_end_mark(ev);
        if (m0 && m1 && m1->input_pos >= m0->input_pos) {
            n->from = m0->input_pos;
            n->to = m1->input_pos;
        }
        /* a quoted scalar's mark is its first character; point at the opening quote */
        if ((st == FYSS_SINGLE_QUOTED || st == FYSS_DOUBLE_QUOTED) && n->col > 1)
            n->col--;
        weigh(n);
        tag_ok(b, ev, n);
        add_anchor(b, token_text(fy_event_get_anchor_token(ev)), n);
        attach(b, n);
        return true;
    }
    case FYET_ALIAS: {
        char *name = token_text(fy_event_get_token(ev));
        ynode *target = name ? (ynode *)ni_get(&b->anchors, name, strlen(name)) : NULL;
        if (!target) {
            /* the mark is the name's; point at the '*' before it */
            const struct fy_mark *m = fy_event_start_mark(ev);
            err_pos(b->c, m && m->line >= 0 ? m->line + 1 : 1, m && m->column > 0 ? m->column : 1,
                    "the alias '*%.60s' names no anchor ('&%.60s') defined before it", name ? name : "",
                    name ? name : "");
            target = ynew(b->t, Y_SCALAR);   /* an empty stand-in, so the walk goes on */
            target->text = xstrdup("");
            target->plain = true;
            set_mark(target, ev);
            weigh(target);
        }
        free(name);
        attach(b, target);
        return true;
    }
    default:
        return true;
    }
}

static int ytree_build(ytree *t, ctx *c, const char *text, size_t len)
{
    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.output_fn = quiet_output;
    dc.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dc);
    if (!diag)
        abort();
    fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_JSON_NONE, .diag = diag};
    struct fy_parser *p = fy_parser_create(&cfg);
    if (!p || fy_parser_set_string(p, text, len) != 0)
        abort();
    builder b = {.t = t, .c = c};
    int docs = 0;
    bool go = true;
    struct fy_event *ev;
    while (go && (ev = fy_parser_parse(p))) {
        go = on_event(&b, ev, &docs);
        fy_parser_event_free(p, ev);
    }
    bool bad = fy_parser_get_stream_error(p);
    size_t before = c->errs->n + c->errs->dropped;
    const ynode *r = t->root;
    if (!bad && go && r && (r->nodes > WFP_MAX_EXPANDED_NODES || r->bytes > WFP_MAX_EXPANDED_BYTES)) {
        char nodes[32];
        if (r->nodes == UINT64_MAX)
            snprintf(nodes, sizeof nodes, "more than 2^64");
        else
            snprintf(nodes, sizeof nodes, "%llu", (unsigned long long)r->nodes);
        err_pos(c, 1, 1, "with its aliases (*name) written out this file would be %s values and %llu MB; a "
                         "workflow may be at most %u values and %u MB so (a request joblet takes is smaller): "
                         "name fewer large anchors, or an anchor less often",
                nodes, (unsigned long long)(r->bytes == UINT64_MAX ? UINT64_MAX >> 20 : r->bytes >> 20),
                WFP_MAX_EXPANDED_NODES, WFP_MAX_EXPANDED_BYTES >> 20);
        go = false;
    }
    if (bad) {
        void *it = NULL;
        struct fy_diag_error *de;
        const char *job = c->job;
        c->job = NULL;
        while ((de = fy_diag_errors_iterate(diag, &it)))
            if (de->type >= FYET_ERROR)
                err_pos(c, de->line, de->column, "%s", de->msg ? de->msg : "not valid YAML");
        if (c->errs->n + c->errs->dropped == before)
            err_pos(c, 1, 1, "not valid YAML");
        c->job = job;
    }
    for (size_t i = 0; i < b.depth; i++)
        free(b.stack[i].anchor);
    free(b.stack);
    free(b.anchors.slot);
    fy_parser_destroy(p);
    fy_diag_destroy(diag);
    return bad || !go ? -1 : 0;
}

/* ---- suggestions --------------------------------------------------------------------- */

/* Names people reach for, and the key this file format calls them. */
static const struct { const char *said, *meant; } synonyms[] = {
    {"env", "environment"},         {"secret_env", "secret_environment"}, {"secrets", "secret_environment"},
    {"depends_on", "requires"},     {"needs", "requires"},              {"dependencies", "requires"},
    {"after", "requires"},          {"cmd", "command"},                 {"arguments", "args"},
    {"upload", "uploads"},          {"files", "uploads"},               {"volume", "volumes"},
    {"cwd", "workdir"},             {"working_dir", "workdir"},         {"gpu", "gpu_count"},
    {"gpus", "gpu_count"},          {"memory", "max_memory"},           {"max_memory_mb", "max_memory"},
    {"cpu", "max_cpu"},             {"cpus", "max_cpu"},                {"gpu_memory", "gpu_memory_mb"},
    {"max_iobps", "max_io_bps"},    {"iobps", "max_io_bps"},            {"timeout", "max_runtime"},
    {"max_runtime_s", "max_runtime"}, {"cores", "cpu_cores"},           {"mig", "gpu_mig"},
    {"gpu_sharing", "gpu_share"},   {"sharing", "gpu_share"},           {"compute_capability", "gpu_cc"},
    {"title", "name"},              {"steps", "jobs"},                  {"tasks", "jobs"},
};

/* The candidate key meant: a synonym people reach for, else the closest by edit distance, or
 * NULL when none is close. */
static const char *suggest(const char *key, const char *const *cands, size_t n)
{
    for (size_t i = 0; i < ARRAY_LEN(synonyms); i++)
        if (!strcasecmp(key, synonyms[i].said))
            for (size_t k = 0; k < n; k++)
                if (!strcmp(cands[k], synonyms[i].meant))
                    return cands[k];
    return suggest_closest(key, cands, n); /* as flags and commands are (common/suggest.h) */
}

static void join_list(const char *const *items, size_t n, char *out, size_t len)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && o < len; i++)
        o += (size_t)snprintf(out + o, len - o, "%s%s", i ? ", " : "", items[i]);
}

/* ---- the schema ---------------------------------------------------------------------- */

static const char *const top_keys[] = {"name", "description", "jobs"};

enum {
    YK_COMMAND, YK_ARGS, YK_RUNTIME, YK_NETWORK, YK_UPLOADS, YK_VOLUMES, YK_ENVIRONMENT,
    YK_SECRET_ENVIRONMENT, YK_WORKDIR, YK_RESOURCES, YK_REQUIRES, YK_ISOLATION, YK_DEVICES, YK_ARRAY, YK_N
};
static const char *const job_keys[YK_N] = {
    "command", "args", "runtime", "network", "uploads", "volumes", "environment",
    "secret_environment", "workdir", "resources", "requires", "isolation", "devices", "array",
};

/* resources: is every field of the request schema (common/jobreq.c) whose YAML key sits under
 * it: its own name there, its parsing, its checks and its words. gpu_all is written
 * "gpu_count: all" and has no key of its own. */
static bool resource_key(const jobreq_field *f)
{
    return f->yaml && f->yaml_resource && !strchr(f->yaml, ' ');
}

static const jobreq_field *resource_field(const char *key)
{
    const jobreq_field *f = jobreq_field_by_yaml(key, true);
    return f && resource_key(f) ? f : NULL;
}

/* The resources: keys, in the schema's order. */
static size_t resource_names(const char **out)
{
    size_t n = 0;
    for (int i = 0; i < JR_N; i++)
        if (resource_key(&jobreq_fields[i]))
            out[n++] = jobreq_fields[i].yaml;
    return n;
}

/* The schema's field a (daemon's) error field names: "uploads[2]" is uploads'. */
static const jobreq_field *field_named(const char *field, size_t len)
{
    char key[64];
    size_t l = strcspn(field, "[.");
    snprintf(key, sizeof key, "%.*s", (int)(l < len ? l : len), field);
    return jobreq_field_by_key(key);
}

static const char *const end_states[] = {"COMPLETED", "FAILED", "STOPPED", "CANCELED"};

typedef struct wreq {
    ynode *item, *dep, *status;   /* the list item, the job it names, the state */
    size_t to;                    /* index of that job */
    char state[16];               /* upper case */
} wreq;

typedef struct wjob {
    char *name;
    ynode *key, *val;
    ynode *at[YK_N];              /* each job key's value, NULL when not given */
    ynode *node[JR_N];            /* the value that set each field of the request */
    wreq *reqs;
    size_t nreqs;
    bool reqs_ok;                 /* every requires item names a job and a state */
    job_req req;                  /* the request, read and checked by the schema */
    upload_set up;                /* the uploads: walked on disk, listed in the request, sent after it */
    json_t *request;              /* the POST /v1/jobs body */
} wjob;

/* A volume the workflow creates when it is missing: a volumes: item with a size. */
typedef struct wvol {
    char name[65];
    uint64_t size_mb;
    const char *type;             /* "filesystem" or "memory" */
    const ynode *at;              /* the item that asked for it first */
} wvol;

/* A network the workflow creates when it is missing: a job's network: {name, cidr}. */
typedef struct wnet {
    char name[NETADDR_NAME_MAX + 1];
    netaddr_cidr cidr;
    const ynode *at;              /* the mapping that asked for it first */
    const ynode *cidr_at;         /* its cidr: value */
} wnet;

struct wfp_doc {
    char *path;
    ytree t;
    ynode *name_node, *desc_node, *jobs_node;
    wjob *jobs;
    size_t njobs;
    wvol *vols;
    size_t nvols;
    wnet *nets;
    size_t nnets;
    json_t *body;
};

/* ---- values -------------------------------------------------------------------------- */

/* The text of a single value, or NULL after saying why there is none. */
static const char *scalar(ctx *c, const char *key, const ynode *v)
{
    char w[80];
    if (!v || y_null(v)) {
        err_at(c, v, "%s: has no value; give one, or leave the key out", key);
        return NULL;
    }
    if (v->kind != Y_SCALAR) {
        err_at(c, v, "%s: must be a single value, not %s", key, what(v, w, sizeof w));
        return NULL;
    }
    if (strlen(v->text) != v->len) {
        err_at(c, v, "%s: must not contain a NUL character", key);
        return NULL;
    }
    return v->text;
}

/* A non-empty text. */
static const char *text_value(ctx *c, const char *key, const ynode *v)
{
    const char *s = scalar(c, key, v);
    if (s && !*s) {
        err_at(c, v, "%s: is empty", key);
        return NULL;
    }
    return s;
}

/* A list, or NULL (after a message unless the value is null, which is an empty list). */
static const ynode *list(ctx *c, const char *key, const ynode *v, const char *example)
{
    char w[80];
    if (y_null(v))
        return NULL;
    if (v->kind != Y_SEQ) {
        err_at(c, v, "%s: must be a list, e.g. %s; got %s", key, example, what(v, w, sizeof w));
        return NULL;
    }
    return v;
}

static const ynode *mapping(ctx *c, const char *key, const ynode *v, const char *example)
{
    char w[80];
    if (y_null(v))
        return NULL;
    if (v->kind != Y_MAP) {
        err_at(c, v, "%s: must be a mapping, e.g. %s; got %s", key, example, what(v, w, sizeof w));
        return NULL;
    }
    return v;
}

/* A refusal of the schema ("max_memory_mb: ...") at the YAML that asked for it, worded with
 * the file's key ("max_memory: ..."). */
static int schema_error(ctx *c, const ynode *at, const jerr *e)
{
    char msg[sizeof e->msg + 64];
    const jobreq_field *f = field_named(e->field, strlen(e->field));
    jobreq_reword(e, f ? f->yaml : NULL, msg, sizeof msg);
    return err_at(c, at, "%s", msg);
}

/* One field of the request from text the YAML value v gave, read and checked by the schema. */
static void field_text(ctx *c, wjob *j, const jobreq_field *f, ynode *v, const char *s)
{
    enum jobreq_id id = (enum jobreq_id)(f - jobreq_fields);
    jerr e = {0};
    j->node[id] = v;
    if (jobreq_set_text(&j->req, f, s, time(NULL), &e) < 0)
        schema_error(c, v, &e);
    else if (id == JR_GPU_COUNT && j->req.gpu_all)
        j->node[JR_GPU_ALL] = v;   /* gpu_count: all */
}

/* One field of the request from a single YAML value, read and checked by the schema. */
static void field_value(ctx *c, wjob *j, const jobreq_field *f, ynode *v)
{
    const char *s = scalar(c, f->yaml, v);
    if (s)
        field_text(c, j, f, v, s);
}

/* ---- volumes ------------------------------------------------------------------------- */

/* The workflow creates volume name (size, type) when it is missing; the same name asked for
 * twice must be asked alike. */
static void volume_to_create(ctx *c, const ynode *at, const char *name, uint64_t mb, const char *type)
{
    struct wfp_doc *d = c->doc;
    for (size_t i = 0; i < d->nvols; i++)
        if (!strcmp(d->vols[i].name, name)) {
            if (d->vols[i].size_mb != mb || strcmp(d->vols[i].type, type))
                err_at(c, at, "volumes: volume '%s' is asked for with another size or type at line %d; give it once, "
                              "or alike", name, d->vols[i].at->line);
            return;
        }
    d->vols = xrealloc(d->vols, (d->nvols + 1) * sizeof *d->vols);
    wvol *w = &d->vols[d->nvols++];
    snprintf(w->name, sizeof w->name, "%s", name);
    w->size_mb = mb;
    w->type = type;
    w->at = at;
}

/* {name: scratch, size: 1GB, type: memory, read_only: false}: the volume, created when missing
 * if a size is given. */
static void volume_mapping(ctx *c, wjob *j, ynode *m)
{
    static const char *const keys[] = {"name", "size", "type", "read_only"};
    const ynode *at[4] = {0};
    char w[80];
    for (size_t i = 0; i + 1 < m->nkids; i += 2) {
        size_t k = 0;
        while (k < ARRAY_LEN(keys) && !y_eq(m->kids[i], keys[k]))
            k++;
        if (k == ARRAY_LEN(keys)) {
            err_at(c, m->kids[i], "volumes: unknown key '%s'; a volume item takes name, size, type and read_only",
                   shown(m->kids[i], w, sizeof w));
            return;
        }
        at[k] = m->kids[i + 1];
    }
    const char *name = at[0] ? scalar(c, "volumes: name", at[0]) : NULL;
    if (!at[0])
        err_at(c, m, "volumes: an item written as a mapping needs a name: {name: scratch, size: 1GB}");
    if (!name)
        return;
    bool ro = false;
    if (at[3]) {
        const char *b = scalar(c, "volumes: read_only", at[3]);
        if (b && (!strcasecmp(b, "true") || !strcasecmp(b, "yes")))
            ro = true;
        else if (b && strcasecmp(b, "false") && strcasecmp(b, "no")) {
            err_at(c, at[3], "volumes: read_only: must be true or false, not '%s'", shown(at[3], w, sizeof w));
            return;
        }
    }
    const char *type = "filesystem";
    if (at[2]) {
        const char *t = scalar(c, "volumes: type", at[2]);
        if (!t)
            return;
        if (strcmp(t, "filesystem") && strcmp(t, "memory")) {
            err_at(c, at[2], "volumes: type: '%s' is not a volume type; use filesystem or memory", shown(at[2], w, sizeof w));
            return;
        }
        type = !strcmp(t, "memory") ? "memory" : "filesystem";
        if (!at[1]) {
            err_at(c, at[2], "volumes: type: is for a volume the workflow creates; give its size too");
            return;
        }
    }
    char item[100];
    snprintf(item, sizeof item, "%s%s", name, ro ? ":ro" : "");
    if (!strchr(name, ':'))
        field_text(c, j, jobreq_field_by_yaml("volumes", false), m, item);
    else
        err_at(c, at[0], "volumes: name: '%s' is not a volume name", shown(at[0], w, sizeof w));
    if (at[1]) {
        const char *sz = scalar(c, "volumes: size", at[1]);
        uint64_t mb;
        jerr e = {0};
        if (sz && parse_size_mb("size", sz, &mb, &e) < 0)
            err_at(c, at[1], "volumes: %s", e.msg);
        else if (sz && jobreq_volume_name_ok(name, strlen(name)))
            volume_to_create(c, m, name, mb, type);
    }
}

/* One volumes: item: NAME, NAME:ro, NAME:SIZE (created when missing: data:1GB), or a mapping. */
static void volume_item(ctx *c, wjob *j, ynode *v)
{
    const jobreq_field *f = jobreq_field_by_yaml("volumes", false);
    if (v->kind == Y_MAP) {
        volume_mapping(c, j, v);
        return;
    }
    const char *s = v->kind == Y_SCALAR && !y_null(v) ? v->text : NULL;
    const char *colon = s ? strchr(s, ':') : NULL;
    if (!colon || !isdigit((unsigned char)colon[1])) {
        field_value(c, j, f, v);
        return;
    }
    char name[80];
    uint64_t mb;
    jerr e = {0};
    snprintf(name, sizeof name, "%.*s", (int)(colon - s < 79 ? colon - s : 79), s);
    field_text(c, j, f, v, name);
    if (parse_size_mb("size", colon + 1, &mb, &e) < 0)
        err_at(c, v, "volumes: '%s': %s", s, e.msg);
    else if (jobreq_volume_name_ok(name, strlen(name)))
        volume_to_create(c, v, name, mb, "filesystem");
}

/* ---- networks ------------------------------------------------------------------------ */

/* The workflow creates network name (cidr) when it is missing; the same name asked for twice
 * must be asked alike. */
static void network_to_create(ctx *c, const ynode *at, const ynode *cidr_at, const char *name, const netaddr_cidr *nc)
{
    struct wfp_doc *d = c->doc;
    for (size_t i = 0; i < d->nnets; i++)
        if (!strcmp(d->nets[i].name, name)) {
            if (d->nets[i].cidr.base != nc->base || d->nets[i].cidr.prefix != nc->prefix) {
                char was[40];
                netaddr_cidr_format(&d->nets[i].cidr, was, sizeof was);
                err_at(c, cidr_at, "network: network '%s' is asked for with cidr %s at line %d; give its cidr "
                                   "once, or alike", name, was, d->nets[i].at->line);
            }
            return;
        }
    d->nets = xrealloc(d->nets, (d->nnets + 1) * sizeof *d->nets);
    wnet *w = &d->nets[d->nnets++];
    snprintf(w->name, sizeof w->name, "%s", name);
    w->cidr = *nc;
    w->at = at;
    w->cidr_at = cidr_at;
}

/* network: {name: train, cidr: 10.218.10.0/24}: the job joins train, which the workflow creates
 * with those addresses when it is missing (a mapping without cidr only names it). */
static void network_mapping(ctx *c, wjob *j, ynode *m)
{
    static const char *const keys[] = {"name", "cidr"};
    const ynode *at[2] = {0};
    char w[80];
    for (size_t i = 0; i + 1 < m->nkids; i += 2) {
        size_t k = 0;
        while (k < ARRAY_LEN(keys) && !y_eq(m->kids[i], keys[k]))
            k++;
        if (k == ARRAY_LEN(keys)) {
            err_at(c, m->kids[i], "network: unknown key '%s'; a network written as a mapping takes name and cidr: "
                                  "{name: train, cidr: 10.218.10.0/24}", shown(m->kids[i], w, sizeof w));
            return;
        }
        at[k] = m->kids[i + 1];
    }
    if (!at[0]) {
        err_at(c, m, "network: a network written as a mapping needs a name: {name: train, cidr: 10.218.10.0/24}");
        return;
    }
    const char *name = scalar(c, "network: name", at[0]);
    if (!name)
        return;
    field_text(c, j, jobreq_field_by_yaml("network", false), m, name);
    if (!at[1])
        return;
    const char *cidr = scalar(c, "network: cidr", at[1]);
    if (!cidr)
        return;
    if (!strcmp(name, "none") || !strcmp(name, "host") || !strcmp(name, "isolated") || !strcmp(name, "bridge")) {
        err_at(c, at[1], "network: cidr: is for a network the workflow creates; '%s' is joblet's own: leave cidr "
                         "out", name);
        return;
    }
    if (!netaddr_name_ok(name))
        return; /* the schema said why (field_text) */
    netaddr_cidr nc;
    jerr e = {0};
    if (netaddr_named_cidr_parse("cidr", cidr, &nc, &e) < 0)
        err_at(c, at[1], "network: %s", e.msg);
    else
        network_to_create(c, m, at[1], name, &nc);
}

/* environment / secret_environment: NAME: value. A name given in both is refused by the
 * schema, at the second one (secret_environment is read after environment). */
static void environment(ctx *c, wjob *j, int jk)
{
    const char *key = job_keys[jk];
    bool secret = jk == YK_SECRET_ENVIRONMENT;
    const ynode *m = mapping(c, key, j->at[jk], "{LOG_LEVEL: debug}");
    if (!m)
        return;
    j->node[secret ? JR_SECRET_ENV : JR_ENV] = j->at[jk];
    for (size_t i = 0; i + 1 < m->nkids; i += 2) {
        const ynode *k = m->kids[i], *v = m->kids[i + 1];
        char s[80], w[80];
        jerr e = {0};
        /* the name first, in the schema's words ('?' for what cannot be shown) */
        const char *name = strlen(k->text) == k->len ? k->text : shown(k, s, sizeof s);
        if (!env_key_valid(name)) {
            jobreq_add_env(&j->req, secret, name, "", &e);
            schema_error(c, k, &e);
            continue;
        }
        if (y_null(v)) {
            err_at(c, v, "%s: %s: has no value; write %s: \"\" for an empty one", key, k->text, k->text);
            continue;
        }
        if (v->kind != Y_SCALAR) {
            err_at(c, v, "%s: %s: must be a single value, not %s", key, k->text, what(v, w, sizeof w));
            continue;
        }
        if (strlen(v->text) != v->len) {
            err_at(c, v, "%s: %s: must not contain a NUL character", key, k->text);
            continue;
        }
        if (jobreq_add_env(&j->req, secret, k->text, v->text, &e) < 0)
            schema_error(c, k, &e);
    }
}

/* uploads: paths relative to the workflow file's directory, read now. */
static void uploads(ctx *c, wjob *j)
{
    const ynode *l = list(c, "uploads", j->at[YK_UPLOADS], "[train.py, data/]");
    if (!l)
        return;
    upload_set *u = &j->up;
    size_t before = c->errs->n + c->errs->dropped;
    for (size_t i = 0; i < l->nkids; i++) {
        const ynode *v = l->kids[i];
        char k[64];
        snprintf(k, sizeof k, "uploads[%zu]", i);
        const char *p = text_value(c, k, v);
        if (!p)
            continue;
        char *disk;
        if (p[0] == '/' || !c->dir[0])
            disk = xstrdup(p);
        else if (asprintf(&disk, "%s%s%s", c->dir, strcmp(c->dir, "/") ? "/" : "", p) < 0)
            abort();
        struct stat st;
        jerr e = {0};
        if (stat(disk, &st) < 0) {
            int err = errno;
            if (strcmp(disk, p))
                err_at(c, v, "uploads: '%s' %s (looked for %s)", p,
                       err == ENOENT ? "does not exist" : strerror(err), disk);
            else
                err_at(c, v, "uploads: '%s' %s", p, err == ENOENT ? "does not exist" : strerror(err));
        } else if (upload_add(u, disk, &e) < 0) {
            /* upload.c words its messages for the --upload flag */
            const char *m = !strncmp(e.msg, "--upload: ", 10) ? e.msg + 10 : e.msg;
            err_at(c, v, "uploads: %s", m);
        }
        free(disk);
    }
    jerr e = {0};
    if (c->errs->n + c->errs->dropped == before && upload_finish(u, &j->req, &e) < 0) {
        const char *m = !strncmp(e.msg, "--upload: ", 10) ? e.msg + 10 : e.msg;
        err_at(c, l, "uploads: %s", m);
    }
}

/* requires: a list of one-pair mappings "JOB: STATE". Names are resolved after every job is known. */
static void requires_list(ctx *c, wjob *j)
{
    const ynode *l = j->at[YK_REQUIRES];
    char w[80];
    j->reqs_ok = y_null(l);
    if (y_null(l))
        return;
    if (l->kind != Y_SEQ) {
        err_at(c, l, "requires: must be a list of 'JOB: STATE' items, one per line, e.g. '- build: COMPLETED'; got %s",
               what(l, w, sizeof w));
        return;
    }
    j->reqs_ok = true;
    j->reqs = xcalloc(l->nkids + 1, sizeof *j->reqs);
    for (size_t i = 0; i < l->nkids; i++) {
        ynode *it = l->kids[i];
        char s[80];
        if (it->kind == Y_SCALAR && !y_null(it)) {
            err_at(c, it, "requires: '%s' needs the state it must end in: write '- %s: COMPLETED'", shown(it, s, sizeof s),
                   shown(it, w, sizeof w));
            j->reqs_ok = false;
            continue;
        }
        if (it->kind != Y_MAP || it->nkids != 2) {
            if (it->kind == Y_MAP && it->nkids > 2)
                err_at(c, it->kids[2], "requires: each item is one 'JOB: STATE' pair; start another item ('- %s: ...') "
                                       "for '%s'", shown(it->kids[2], s, sizeof s), shown(it->kids[2], w, sizeof w));
            else
                err_at(c, it, "requires: each item is one 'JOB: STATE' pair, e.g. '- build: COMPLETED'; got %s",
                       what(it, w, sizeof w));
            j->reqs_ok = false;
            continue;
        }
        wreq *r = &j->reqs[j->nreqs];
        r->item = it;
        r->dep = it->kids[0];
        r->status = it->kids[1];
        const char *st = r->status->kind == Y_SCALAR && !y_null(r->status) ? r->status->text : NULL;
        size_t k = 0;
        while (st && k < ARRAY_LEN(end_states) && strcasecmp(st, end_states[k]))
            k++;
        if (!st || k == ARRAY_LEN(end_states)) {
            err_at(c, r->status, "requires: %s is not a state a job ends in; use COMPLETED, FAILED, STOPPED or CANCELED",
                   what(r->status, w, sizeof w));
            j->reqs_ok = false;
            continue;
        }
        snprintf(r->state, sizeof r->state, "%s", end_states[k]);
        j->nreqs++;
    }
}

static bool is_resource(const char *key) { return resource_field(key) != NULL; }

/* A key the job does not take: say where it belongs, or what it may have meant. */
static int unknown_job_key(ctx *c, const ynode *k)
{
    char s[80], keys[400];
    if (is_resource(k->text))
        return err_at(c, k, "'%s' belongs under resources:", k->text);
    const char *names[YK_N + JR_N];
    for (size_t i = 0; i < YK_N; i++)
        names[i] = job_keys[i];
    size_t n = YK_N + resource_names(names + YK_N);
    const char *best = suggest(k->text, names, n);
    join_list(job_keys, YK_N, keys, sizeof keys);
    if (best)
        return err_at(c, k, "unknown key '%s' (did you mean %s%s?); a job takes %s", shown(k, s, sizeof s),
                      is_resource(best) ? "resources: " : "", best, keys);
    return err_at(c, k, "unknown key '%s'; a job takes %s", shown(k, s, sizeof s), keys);
}

static int unknown_resource(ctx *c, const ynode *k)
{
    char s[80], keys[400];
    const char *names[JR_N];
    size_t n = resource_names(names);
    for (size_t i = 0; i < YK_N; i++)
        if (y_eq(k, job_keys[i]))
            return err_at(c, k, "resources: '%s' is not a resource; it belongs to the job itself, next to command:",
                          job_keys[i]);
    join_list(names, n, keys, sizeof keys);
    const char *best = suggest(k->text, names, n);
    if (best)
        return err_at(c, k, "resources: unknown key '%s' (did you mean '%s'?); resources are %s",
                      shown(k, s, sizeof s), best, keys);
    return err_at(c, k, "resources: unknown key '%s'; resources are %s", shown(k, s, sizeof s), keys);
}

/* The YAML at fault for a refusal of the request as a whole: the value that set its field,
 * else the job's resources: for a resource, else the job. */
static const ynode *node_of(const wjob *j, const char *field)
{
    const jobreq_field *f = field_named(field, strlen(field));
    const ynode *at = f ? j->node[f - jobreq_fields] : NULL;
    if (!at && f && f->yaml_resource)
        at = j->at[YK_RESOURCES];
    return at ? at : j->key;
}

static void walk_job(ctx *c, wjob *j)
{
    char w[80];
    jerr e = {0};
    size_t before = c->errs->n + c->errs->dropped;
    c->job = j->name;
    jobreq_set_str(&j->req, JR_NAME, j->name);
    if (y_null(j->val) || j->val->kind != Y_MAP) {
        if (y_null(j->val))
            err_at(c, j->key, "has no settings; a job needs at least 'command:'");
        else
            err_at(c, j->val, "must be a mapping of settings with at least 'command:', e.g. 'command: make'; got %s",
                   what(j->val, w, sizeof w));
        c->job = NULL;
        return;
    }
    const ynode *m = j->val;
    for (size_t i = 0; i + 1 < m->nkids; i += 2) {
        const ynode *k = m->kids[i];
        size_t jk = 0;
        while (jk < YK_N && !y_eq(k, job_keys[jk]))
            jk++;
        if (jk == YK_N)
            unknown_job_key(c, k);
        else
            j->at[jk] = m->kids[i + 1];
    }
    if (!j->at[YK_COMMAND] || y_null(j->at[YK_COMMAND]))
        err_at(c, j->at[YK_COMMAND] ? j->at[YK_COMMAND] : j->key,
               "command: missing; give the program to run, e.g. 'command: python3'");
    else {
        const char *cmd = scalar(c, "command", j->at[YK_COMMAND]);
        j->node[JR_COMMAND] = j->at[YK_COMMAND];
        if (cmd && jobreq_set_command(&j->req, cmd, &e) < 0)
            schema_error(c, j->at[YK_COMMAND], &e);
    }
    if (j->at[YK_ARGS]) {
        const ynode *l = list(c, "args", j->at[YK_ARGS], "[\"train.py\", \"--epochs\", \"100\"]");
        j->node[JR_ARGS] = j->at[YK_ARGS];
        if (l)
            jobreq_set_list(&j->req, JR_ARGS, NULL, 0);
        for (size_t i = 0; l && i < l->nkids; i++) {
            char k[64];
            snprintf(k, sizeof k, "args[%zu]", i);
            const char *s = scalar(c, k, l->kids[i]);
            if (s)
                jobreq_add_arg(&j->req, s);
        }
    }
    if (j->at[YK_ENVIRONMENT])
        environment(c, j, YK_ENVIRONMENT);
    if (j->at[YK_SECRET_ENVIRONMENT])
        environment(c, j, YK_SECRET_ENVIRONMENT);
    if (j->at[YK_WORKDIR])
        field_value(c, j, jobreq_field_by_yaml("workdir", false), j->at[YK_WORKDIR]);
    if (j->at[YK_ARRAY]) /* a job array (docs/workflows.md "Arrays in a workflow"): "0-9%2" */
        field_value(c, j, jobreq_field_by_yaml("array", false), j->at[YK_ARRAY]);
    if (j->at[YK_NETWORK]) {
        /* a name, or {name, cidr}: also a network the workflow creates when it is missing */
        if (j->at[YK_NETWORK]->kind == Y_MAP)
            network_mapping(c, j, j->at[YK_NETWORK]);
        else
            field_value(c, j, jobreq_field_by_yaml("network", false), j->at[YK_NETWORK]);
    }
    if (j->at[YK_UPLOADS]) {
        j->node[JR_UPLOADS] = j->at[YK_UPLOADS];
        uploads(c, j);
    }
    if (j->at[YK_RUNTIME])
        field_value(c, j, jobreq_field_by_yaml("runtime", false), j->at[YK_RUNTIME]);
    if (j->at[YK_ISOLATION])
        field_value(c, j, jobreq_field_by_yaml("isolation", false), j->at[YK_ISOLATION]);
    if (j->at[YK_DEVICES]) {
        /* each item through the schema, as one --device each */
        const ynode *l = list(c, "devices", j->at[YK_DEVICES], "[nvidia.com/gpu=0]");
        for (size_t i = 0; l && i < l->nkids; i++)
            field_value(c, j, jobreq_field_by_yaml("devices", false), l->kids[i]);
    }
    if (j->at[YK_VOLUMES]) {
        /* each item through the schema: NAME or NAME:ro, no name twice; an item with a size is
         * also a volume the workflow creates when it is missing */
        const ynode *l = list(c, "volumes", j->at[YK_VOLUMES], "[data-lake, images:ro]");
        for (size_t i = 0; l && i < l->nkids; i++)
            volume_item(c, j, l->kids[i]);
    }
    const ynode *res = j->at[YK_RESOURCES] ? mapping(c, "resources", j->at[YK_RESOURCES], "{max_memory: 4GB}") : NULL;
    ynode *given[JR_N] = {0};
    for (size_t i = 0; res && i + 1 < res->nkids; i += 2) {
        const jobreq_field *f = resource_field(res->kids[i]->text);
        if (!f || strlen(res->kids[i]->text) != res->kids[i]->len)
            unknown_resource(c, res->kids[i]);
        else
            given[f - jobreq_fields] = res->kids[i + 1];
    }
    /* in the schema's order, whatever order the file gives them in */
    for (int i = 0; i < JR_N; i++)
        if (given[i])
            field_value(c, j, &jobreq_fields[i], given[i]);
    requires_list(c, j);
    /* the rules between fields, once every field of the job reads well */
    if (c->errs->n + c->errs->dropped == before && jobreq_check_submitted(&j->req, &e) < 0)
        schema_error(c, node_of(j, e.field), &e);
    j->request = jobreq_to_json(&j->req, JOBREQ_JSON_SECRETS);
    c->job = NULL;
}

/* Same rule as the daemon: letters, digits, '.', '_' and '-', at most 128. */
static bool good_job_name(const ynode *k)
{
    return k->len > 0 && k->len <= 128 && strlen(k->text) == k->len &&
           strspn(k->text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == k->len;
}

static size_t job_index(const wfp_doc *d, const char *name)
{
    for (size_t i = 0; i < d->njobs; i++)
        if (!strcmp(d->jobs[i].name, name))
            return i;
    return d->njobs;
}

/* Each requires item: a job of this file, not the job itself, not twice. */
static void resolve_requires(ctx *c, wfp_doc *d)
{
    const char **names = xcalloc(d->njobs + 1, sizeof *names);
    for (size_t i = 0; i < d->njobs; i++)
        names[i] = d->jobs[i].name;
    for (size_t i = 0; i < d->njobs; i++) {
        wjob *j = &d->jobs[i];
        c->job = j->name;
        for (size_t r = 0; r < j->nreqs; r++) {
            wreq *q = &j->reqs[r];
            char s[80], list_s[300];
            q->to = q->dep->kind == Y_SCALAR ? job_index(d, q->dep->text) : d->njobs;
            if (q->to == d->njobs) {
                const char *best = q->dep->kind == Y_SCALAR ? suggest(q->dep->text, names, d->njobs) : NULL;
                join_list(names, d->njobs < 12 ? d->njobs : 12, list_s, sizeof list_s);
                if (best)
                    err_at(c, q->dep, "requires '%s', which is not a job of this workflow (did you mean '%s'?)",
                           shown(q->dep, s, sizeof s), best);
                else
                    err_at(c, q->dep, "requires '%s', which is not a job of this workflow; its jobs are %s%s",
                           shown(q->dep, s, sizeof s), list_s, d->njobs > 12 ? ", ..." : "");
                j->reqs_ok = false;
                continue;
            }
            if (q->to == i) {
                err_at(c, q->dep, "requires itself; a job cannot wait for its own end");
                j->reqs_ok = false;
                continue;
            }
            for (size_t p = 0; p < r; p++)
                if (j->reqs[p].to == q->to) {
                    err_at(c, q->dep, "requires '%s' twice (also at line %d); a job ends in one state, so name it once",
                           q->dep->text, j->reqs[p].dep->line);
                    j->reqs_ok = false;
                    break;
                }
        }
    }
    c->job = NULL;
    free(names);
}

/* Depth-first over "requires" edges, in file order (the daemon's order too): a back edge
 * closes a cycle, named from the job it starts at: "a -> c -> b -> a". */
static void find_cycles(ctx *c, wfp_doc *d, size_t at, uint8_t *mark, size_t *stack, size_t depth)
{
    wjob *j = &d->jobs[at];
    mark[at] = 1;
    stack[depth] = at;
    for (size_t r = 0; r < j->nreqs; r++) {
        size_t to = j->reqs[r].to;
        if (mark[to] == 1) {
            char cyc[900] = "";
            size_t k = depth, l = 0;
            while (stack[k] != to)
                k--;
            for (size_t m = k; m <= depth && l < sizeof cyc; m++)
                l += (size_t)snprintf(cyc + l, sizeof cyc - l, "%s -> ", d->jobs[stack[m]].name);
            if (l < sizeof cyc)
                snprintf(cyc + l, sizeof cyc - l, "%s", d->jobs[to].name);
            c->job = j->name;
            err_at(c, j->reqs[r].dep, "dependency cycle: %s", cyc);
            c->job = NULL;
        } else if (!mark[to]) {
            find_cycles(c, d, to, mark, stack, depth + 1);
        }
    }
    mark[at] = 2;
}

static void walk_jobs(ctx *c, wfp_doc *d, ynode *v)
{
    char w[80];
    if (y_null(v) || (v->kind == Y_MAP && v->nkids == 0)) {
        err_at(c, v, "jobs: has no jobs; a workflow needs at least one");
        return;
    }
    if (v->kind != Y_MAP) {
        err_at(c, v, "jobs: must be a mapping of job names to jobs ('NAME:' lines with 'command:' under each); got %s",
               what(v, w, sizeof w));
        return;
    }
    d->njobs = v->nkids / 2;
    d->jobs = xcalloc(d->njobs + 1, sizeof *d->jobs);
    bool names_ok = true;
    for (size_t i = 0; i < d->njobs; i++) {
        wjob *j = &d->jobs[i];
        j->key = v->kids[2 * i];
        j->val = v->kids[2 * i + 1];
        j->name = xstrdup(j->key->text);
        if (!good_job_name(j->key)) {
            char s[80];
            err_at(c, j->key, "job name '%s' may hold only letters, digits, '.', '_' and '-' (at most 128)",
                   shown(j->key, s, sizeof s));
            names_ok = false;
        }
    }
    for (size_t i = 0; i < d->njobs; i++)
        walk_job(c, &d->jobs[i]);
    if (!names_ok)
        return;
    resolve_requires(c, d);
    for (size_t i = 0; i < d->njobs; i++)
        if (!d->jobs[i].reqs_ok)
            return;   /* cycles only among dependencies that all resolved */
    uint8_t *mark = xcalloc(d->njobs, 1);
    size_t *stack = xcalloc(d->njobs, sizeof *stack);
    for (size_t i = 0; i < d->njobs; i++)
        if (!mark[i])
            find_cycles(c, d, i, mark, stack, 0);
    free(mark);
    free(stack);
}

/* The workflow's name when the file gives none: the file's name without its extension. */
static char *default_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *base = xstrdup(slash ? slash + 1 : path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = 0;
    return base;
}

static bool has_key(const ynode *m, const char *key)
{
    for (size_t i = 0; i + 1 < m->nkids; i += 2)
        if (y_eq(m->kids[i], key))
            return true;
    return false;
}

static void walk_top(ctx *c, wfp_doc *d)
{
    ynode *root = d->t.root;
    char w[80];
    if (y_null(root)) {
        err_pos(c, 1, 1, "the file is empty; a workflow needs 'jobs:', a mapping of job names to jobs");
        return;
    }
    if (root->kind != Y_MAP) {
        err_at(c, root, "the top level must be a mapping with the keys name, description and jobs; got %s",
               what(root, w, sizeof w));
        return;
    }
    for (size_t i = 0; i + 1 < root->nkids; i += 2) {
        ynode *k = root->kids[i], *v = root->kids[i + 1];
        if (y_eq(k, "name"))
            d->name_node = v;
        else if (y_eq(k, "description"))
            d->desc_node = v;
        else if (y_eq(k, "jobs"))
            d->jobs_node = v;
        else {
            char s[80];
            const char *best = suggest(k->text, top_keys, ARRAY_LEN(top_keys));
            if (v->kind == Y_MAP && has_key(v, "command"))
                err_at(c, k, "unknown key '%s'; it looks like a job: jobs go under 'jobs:'", shown(k, s, sizeof s));
            else if (best)
                err_at(c, k, "unknown key '%s' (did you mean '%s'?); the top level takes name, description and jobs",
                       shown(k, s, sizeof s), best);
            else
                err_at(c, k, "unknown key '%s'; the top level takes name, description and jobs", shown(k, s, sizeof s));
        }
    }
    if (d->name_node) {
        const char *n = text_value(c, "name", d->name_node);
        if (n && strlen(n) > 200)
            err_at(c, d->name_node, "name: longer than 200 bytes");
    }
    if (d->desc_node && !y_null(d->desc_node))
        scalar(c, "description", d->desc_node);
    if (!d->jobs_node)
        err_pos(c, 1, 1, "no 'jobs:'; a workflow needs a mapping of job names to jobs");
    else
        walk_jobs(c, d, d->jobs_node);
}

static int by_from(const void *a, const void *b)
{
    const ynode *x = *(ynode *const *)a, *y = *(ynode *const *)b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* The file as joblet keeps and shows it: every secret_environment value (where an alias
 * points to one, its anchor's value) replaced by "***", the rest byte for byte. text holds len
 * bytes; it need not end with a NUL (wfp_parse's text does not have to). */
static char *redact(const wfp_doc *d, const char *text, size_t len)
{
    size_t n = 0;
    ynode **sec = NULL;
    for (size_t i = 0; i < d->njobs; i++) {
        const ynode *m = d->jobs[i].at[YK_SECRET_ENVIRONMENT];
        for (size_t k = 1; m && m->kind == Y_MAP && k < m->nkids; k += 2)
            if (m->kids[k]->kind == Y_SCALAR && m->kids[k]->to > m->kids[k]->from && m->kids[k]->to <= len) {
                sec = xrealloc(sec, (n + 1) * sizeof *sec);
                sec[n++] = m->kids[k];
            }
    }
    if (n > 1)
        qsort(sec, n, sizeof *sec, by_from);
    char *out = xmalloc(len + 6 * n + 1), *o = out;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t from = sec[i]->from, to = sec[i]->to;
        if (from < at)
            continue;   /* the same node twice (aliases) */
        /* the quotes around a quoted value go with it; a block scalar goes from its | or >
         * indicator, and its last line break stays */
        if (from > 0 && (text[from - 1] == '"' || text[from - 1] == '\'') && !sec[i]->plain && !sec[i]->block)
            from--;
        if (sec[i]->block) {
            size_t k = from;
            while (k > at && text[k - 1] != '|' && text[k - 1] != '>')
                k--;
            if (k > at)
                from = k - 1;
        }
        if (to < len && from < to && (text[to] == '"' || text[to] == '\'') && text[to] == text[from])
            to++;
        while (to > from && (text[to - 1] == '\n' || text[to - 1] == ' ' || text[to - 1] == '\t'))
            to--;
        memcpy(o, text + at, from - at);
        o += from - at;
        o = stpcpy(o, "\"***\"");
        at = to;
    }
    memcpy(o, text + at, len - at);
    o[len - at] = 0;
    free(sec);
    return out;
}

/* The body, once the whole file is known to be good. */
static json_t *make_body(const wfp_doc *d, const char *text, size_t len)
{
    json_t *jobs = json_array();
    for (size_t i = 0; i < d->njobs; i++) {
        const wjob *j = &d->jobs[i];
        json_t *reqs = json_array();
        for (size_t r = 0; r < j->nreqs; r++)
            json_array_append_new(reqs, json_pack("{s:s, s:s}", "job", d->jobs[j->reqs[r].to].name, "status",
                                                  j->reqs[r].state));
        json_t *e = json_pack("{s:s, s:o}", "name", j->name, "requires", reqs);
        json_object_set(e, "request", j->request);
        json_array_append_new(jobs, e);
    }
    char *name = d->name_node ? xstrdup(d->name_node->text) : default_name(d->path);
    char *kept = redact(d, text, len);
    json_t *body = json_pack("{s:s, s:o, s:s, s:s, s:o}", "name", name, "description",
                             d->desc_node && !y_null(d->desc_node) ? json_string(d->desc_node->text) : json_null(),
                             "source", d->path, "yaml", kept, "jobs", jobs);
    free(kept);
    free(name);
    if (d->nvols) {
        json_t *vols = json_array();
        for (size_t i = 0; i < d->nvols; i++)
            json_array_append_new(vols, json_pack("{s:s, s:I, s:s}", "name", d->vols[i].name, "size_mb",
                                                  (json_int_t)d->vols[i].size_mb, "type", d->vols[i].type));
        json_object_set_new(body, "volumes", vols);
    }
    if (d->nnets) {
        json_t *nets = json_array();
        for (size_t i = 0; i < d->nnets; i++) {
            char cidr[40];
            netaddr_cidr_format(&d->nets[i].cidr, cidr, sizeof cidr);
            json_array_append_new(nets, json_pack("{s:s, s:s}", "name", d->nets[i].name, "cidr", cidr));
        }
        json_object_set_new(body, "networks", nets);
    }
    return body;
}

/* Line and column (in characters, as libfyaml counts them) of byte offset off. */
static void position(const char *text, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
            ++*col;
        }
    }
}

/* The file's text must travel as a JSON string: UTF-8 without NUL. */
static bool text_ok(ctx *c, const char *text, size_t len)
{
    int line, col;
    size_t nul = strnlen(text, len);
    if (len > WFP_MAX_BYTES) {
        err_pos(c, 1, 1, "the file is %zu bytes; joblet keeps workflow files of at most 1 MiB", len);
        return false;
    }
    if (nul < len) {
        position(text, nul, &line, &col);
        err_pos(c, line, col, "the file contains a NUL byte; a workflow file is text");
        return false;
    }
    if (!utf8_valid(text, len)) {
        /* the first character that is not valid UTF-8 */
        size_t i = 0;
        while (i < len) {
            unsigned char b = (unsigned char)text[i];
            size_t n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
            if (!n || i + n > len || !utf8_valid(text + i, n))
                break;
            i += n;
        }
        position(text, i, &line, &col);
        err_pos(c, line, col, "the file is not valid UTF-8 here; a workflow file is UTF-8 text");
        return false;
    }
    return true;
}

/* The line and column of a message "PATH:LINE:COL: ...", 0 when it has none. */
static void msg_pos(const char *msg, size_t plen, int *line, int *col)
{
    *line = *col = 0;
    if (strlen(msg) > plen && msg[plen] == ':')
        sscanf(msg + plen + 1, "%d:%d:", line, col);
}

/* Problems in the order of the file, as a compiler lists them (each check runs in its own
 * order: duplicate keys while reading, resources in a fixed order, dependencies last). */
static void sort_errors(wfp_errors *errs, const char *path)
{
    size_t plen = strlen(path);
    for (size_t i = 1; i < errs->n; i++) {
        char *m = errs->msg[i];
        int l, c, pl, pc;
        msg_pos(m, plen, &l, &c);
        size_t k = i;
        for (; k > 0; k--) {
            msg_pos(errs->msg[k - 1], plen, &pl, &pc);
            if (pl < l || (pl == l && pc <= c))
                break;
            errs->msg[k] = errs->msg[k - 1];
        }
        errs->msg[k] = m;
    }
}

wfp_doc *wfp_parse(const char *path, const char *text, size_t len, wfp_errors *errs)
{
    memset(errs, 0, sizeof *errs);
    wfp_doc *d = xcalloc(1, sizeof *d);
    d->path = xstrdup(path);
    ctx c = {.path = path, .errs = errs, .doc = d};
    const char *slash = strrchr(path, '/');
    c.dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : xstrdup("");
    if (!c.dir)
        abort();
    if (text_ok(&c, text, len) && ytree_build(&d->t, &c, text, len) == 0)
        walk_top(&c, d);
    free(c.dir);
    sort_errors(errs, path);
    if (failed(&c)) {
        wfp_free(d);
        return NULL;
    }
    d->body = make_body(d, text, len);
    return d;
}

wfp_doc *wfp_parse_file(const char *path, wfp_errors *errs)
{
    memset(errs, 0, sizeof *errs);
    char *msg = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (asprintf(&msg, "%s: %s", path, strerror(errno)) < 0)
            abort();
    } else if (S_ISDIR(st.st_mode)) {
        if (asprintf(&msg, "%s: is a directory; give the workflow's YAML file", path) < 0)
            abort();
    } else if (!S_ISREG(st.st_mode)) {
        if (asprintf(&msg, "%s: not a regular file", path) < 0)
            abort();
    } else if (st.st_size > (off_t)WFP_MAX_BYTES) {
        if (asprintf(&msg, "%s:1:1: the file is %lld bytes; joblet keeps workflow files of at most 1 MiB", path,
                     (long long)st.st_size) < 0)
            abort();
    }
    if (msg) {
        if (fd >= 0)
            close(fd);
        add_msg(errs, msg);
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *text = xmalloc(cap + 1);
    for (;;) {
        ssize_t r = read(fd, text + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            if (asprintf(&msg, "%s: %s", path, strerror(errno)) < 0)
                abort();
            close(fd);
            free(text);
            add_msg(errs, msg);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            if (cap > WFP_MAX_BYTES)
                break;   /* grew while being read: text_ok says it is too large */
            cap *= 2;
            text = xrealloc(text, cap + 1);
        }
    }
    close(fd);
    text[n] = 0;
    wfp_doc *d = wfp_parse(path, text, n, errs);
    free(text);
    return d;
}

json_t *wfp_body(const wfp_doc *d) { return d->body; }

size_t wfp_njobs(const wfp_doc *d) { return d->njobs; }

const upload_set *wfp_job_uploads(const wfp_doc *d, size_t i) { return &d->jobs[i].up; }

void wfp_free(wfp_doc *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->njobs; i++) {
        free(d->jobs[i].name);
        free(d->jobs[i].reqs);
        jobreq_free(&d->jobs[i].req);
        upload_free(&d->jobs[i].up);
        json_decref(d->jobs[i].request);
    }
    free(d->jobs);
    free(d->vols);
    free(d->nets);
    ytree_free(&d->t);
    json_decref(d->body);
    free(d->path);
    free(d);
}

void wfp_errors_free(wfp_errors *errs)
{
    for (size_t i = 0; i < errs->n; i++)
        free(errs->msg[i]);
    memset(errs, 0, sizeof *errs);
}

/* ---- the daemon's errors, at the YAML that caused them -------------------------------- */

/* Where the file sets a job request's field (by its API name), and the key's name. A resource
 * the job does not set is placed at its resources: (unless exact), or nowhere. */
static const ynode *request_field(const wjob *j, const char *api, size_t alen, const char **key, bool exact)
{
    const jobreq_field *f = field_named(api, alen);
    *key = NULL;
    if (!f || !f->yaml || strlen(f->key) != alen)
        return NULL;
    *key = f->yaml;
    const ynode *at = j->node[f - jobreq_fields];
    return at || exact || !f->yaml_resource ? at : j->at[YK_RESOURCES];
}

/* The item of a job's volumes: list that names the volume a refusal quotes ("volume 'data'
 * ..."): NAME, NAME:ro, NAME:SIZE or a mapping's name. NULL when none does. */
static const ynode *volume_item_named(const wjob *j, const char *msg)
{
    const char *q = msg ? strstr(msg, "volume '") : NULL;
    const ynode *l = j->at[YK_VOLUMES];
    if (!q || !l || l->kind != Y_SEQ)
        return NULL;
    q += 8;
    size_t n = strcspn(q, "'");
    for (size_t i = 0; i < l->nkids; i++) {
        const ynode *v = l->kids[i], *name = v;
        if (v->kind == Y_MAP) {
            name = NULL;
            for (size_t k = 0; k + 1 < v->nkids; k += 2)
                if (y_eq(v->kids[k], "name"))
                    name = v->kids[k + 1];
        }
        if (name && name->kind == Y_SCALAR && !y_null(name) && !strncmp(name->text, q, n) &&
            (name->text[n] == '\0' || name->text[n] == ':'))
            return v;
    }
    return NULL;
}

void wfp_explain(const wfp_doc *d, const char *field, const char *msg, char *out, size_t outlen)
{
    const ynode *at = NULL;
    const wjob *j = NULL;
    const char *key = NULL, *f = field ? field : "", *req = NULL;
    char *end;
    if (!strncmp(f, "jobs[", 5)) {
        size_t i = strtoul(f + 5, &end, 10);
        if (*end == ']' && i < d->njobs) {
            j = &d->jobs[i];
            const char *rest = end + 1;
            if (!strncmp(rest, ".requires", 9)) {
                key = "requires";
                at = j->at[YK_REQUIRES];
                size_t r = rest[9] == '[' ? strtoul(rest + 10, &end, 10) : (size_t)-1;
                if (r < j->nreqs)
                    at = j->reqs[r].item;
            } else if (!strcmp(rest, ".runtime")) {
                key = "runtime";
                at = j->at[YK_RUNTIME];
            } else if (!strcmp(rest, ".volumes")) {
                key = "volumes";
                at = j->at[YK_VOLUMES];
            } else if (!strncmp(rest, ".request.", 9)) {
                req = rest + 9;
                at = request_field(j, req, strcspn(req, ".["), &key, false);
                /* the request's field is the whole list: the item that named the volume */
                const ynode *item = key && !strcmp(key, "volumes") ? volume_item_named(j, msg) : NULL;
                if (item)
                    at = item;
            }
        }
    } else if (!strncmp(f, "volumes[", 8)) {
        /* a volume the workflow creates: where the file first asked for it */
        size_t i = strtoul(f + 8, &end, 10);
        if (*end == ']' && i < d->nvols)
            at = d->vols[i].at;
    } else if (!strncmp(f, "networks[", 9)) {
        /* a network the workflow creates: where the file first asked for it (its cidr) */
        size_t i = strtoul(f + 9, &end, 10);
        if (*end == ']' && i < d->nnets)
            at = !strcmp(end + 1, ".cidr") ? d->nets[i].cidr_at : d->nets[i].at;
    } else if (!strcmp(f, "name")) {
        at = d->name_node;
    } else if (!strcmp(f, "description")) {
        at = d->desc_node;
    } else if (!strcmp(f, "jobs")) {
        at = d->jobs_node;
    } else if (*f) {
        /* a request field without its job (the daemon's per-user limits, checked over all jobs):
         * the first job that sets it, or for "asks for N GPUs" the first that asks for N */
        const char *asks = msg ? strstr(msg, "asks for ") : NULL;
        long n = asks ? strtol(asks + 9, NULL, 10) : -1;
        for (int pass = n > 0 ? 0 : 1; pass < 2 && !at; pass++)
            for (size_t i = 0; i < d->njobs && !at; i++) {
                at = request_field(&d->jobs[i], f, strlen(f), &key, true);
                json_t *v = json_object_get(d->jobs[i].request, f);
                if (pass == 0 && at && (!json_is_integer(v) || json_integer_value(v) != n))
                    at = NULL;
                j = at ? &d->jobs[i] : NULL;
            }
        req = j ? f : NULL;
    }
    if (!at && j)
        at = j->key;
    /* "jobs[0].runtime: runtime 'x' ..." -> "job 'a': runtime: runtime 'x' ...";
     * "job 'a': max_memory_mb: ..." -> "job 'a': max_memory: ..." (the schema's words) */
    const char *m = msg ? msg : "";
    char head[200] = "", body[1024];
    size_t fl = strlen(f);
    const char *named = j && !strncmp(m, "job '", 5) ? strstr(m, "': ") : NULL;
    if (named)
        m = named + 3;
    if (j)
        snprintf(head, sizeof head, "job '%s': ", j->name);
    if (j && fl && !strncmp(m, f, fl) && m[fl] == ':') {
        m += fl + 1;
        while (*m == ' ')
            m++;
        snprintf(body, sizeof body, "%s%s%s", key ? key : "", key ? ": " : "", m);
    } else if (req && key) {
        jerr e = {0};
        snprintf(e.field, sizeof e.field, "%s", req);
        snprintf(e.msg, sizeof e.msg, "%s", m);
        jobreq_reword(&e, key, body, sizeof body);
    } else {
        snprintf(body, sizeof body, "%s", m);
    }
    snprintf(out, outlen, "%s:%d:%d: %s%s", d->path, at ? at->line : 1, at ? at->col : 1, head, body);
}
