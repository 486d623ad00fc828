/* Bounds on a JSON text checked before it is parsed (jsonscan.h). */
#include "jsonscan.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

enum { KIND_OBJ = 1, KIND_ARR = 2 };

/* what may come next */
enum state {
    ST_VALUE,          /* a value: at the top, after ':' or after ',' in an array */
    ST_VALUE_OR_END,   /* after '[' */
    ST_KEY,            /* after ',' in an object */
    ST_KEY_OR_END,     /* after '{' */
    ST_COLON,          /* after a key */
    ST_AFTER,          /* after a value: ',' or the end of its container (or of the text) */
};

typedef struct level {
    unsigned char kind;
    bool over;             /* the limit passed first was this container's count */
    size_t count;          /* members or elements so far */
    const char *key;       /* an object's current member's key, as written (between the quotes) */
    size_t keylen;
    size_t at;             /* where it opens */
} level;

typedef struct scan {
    const char *t;
    size_t len;
    const jsonscan_limits *lim;
    jsonscan_result *res;
    level *lv;
    unsigned n;            /* levels open, at most lim->depth */
} scan;

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_numchar(char c) { return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* t[i] is the opening '"'. Returns the offset just past the closing '"' and its length as
 * jansson decodes it (an escape is one byte, \uXXXX the bytes of its UTF-8: a surrogate pair's
 * high half 1 and low half 3, so 4 together); *closed false when the text ends first. */
static size_t string_end(const char *t, size_t len, size_t i, size_t *decoded, bool *closed)
{
    size_t n = 0;
    i++;
    while (i < len) {
        char c = t[i];
        if (c == '"') {
            *decoded = n;
            *closed = true;
            return i + 1;
        }
        if (c != '\\') {
            n++;
            i++;
            continue;
        }
        if (i + 1 >= len)
            break;
        if (t[i + 1] == 'u' && i + 5 < len) {
            int h[4] = {hexval(t[i + 2]), hexval(t[i + 3]), hexval(t[i + 4]), hexval(t[i + 5])};
            if (h[0] >= 0 && h[1] >= 0 && h[2] >= 0 && h[3] >= 0) {
                unsigned cp = (unsigned)(h[0] << 12 | h[1] << 8 | h[2] << 4 | h[3]);
                n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp >= 0xd800 && cp <= 0xdbff ? 1 : 3;
                i += 6;
                continue;
            }
        }
        /* \" \\ \/ \b \f \n \r \t, or an escape jansson refuses */
        n++;
        i += 2;
    }
    *decoded = n;
    *closed = false;
    return len;
}

/* The path to the value at the top of levels [0, upto): "jobs[0].request.args[3]". Keys are
 * shown as written, control characters, quotes and backslashes as '?', at most 32 bytes each;
 * a path too long for cap ends with "…". */
static void where(const scan *s, unsigned upto, char *out, size_t cap)
{
    static const char ellipsis[] = "\xe2\x80\xa6";
    size_t o = 0, room = cap - sizeof ellipsis; /* "…" and the NUL always fit after room */
    for (unsigned k = 0; k < upto; k++) {
        const level *l = &s->lv[k];
        char part[48];
        size_t pl = 0;
        if (l->kind == KIND_ARR) {
            if (!l->count)
                break;
            pl = (size_t)snprintf(part, sizeof part, "[%zu]", l->count - 1);
        } else {
            if (!l->key)
                break;
            if (o)
                part[pl++] = '.';
            size_t kl = l->keylen < 32 ? l->keylen : 32;
            for (size_t b = 0; b < kl; b++) {
                unsigned char c = (unsigned char)l->key[b];
                part[pl++] = c < 0x20 || c == 0x7f || c == '"' || c == '\\' ? '?' : (char)c;
            }
            if (kl < l->keylen) {
                memcpy(part + pl, ellipsis, sizeof ellipsis - 1);
                pl += sizeof ellipsis - 1;
            }
        }
        if (o + pl > room) {
            memcpy(out + o, ellipsis, sizeof ellipsis - 1);
            o += sizeof ellipsis - 1;
            break;
        }
        memcpy(out + o, part, pl);
        o += pl;
    }
    out[o] = 0;
}

static void passed(scan *s, jsonscan_over what, size_t amount, unsigned upto, size_t at)
{
    jsonscan_result *r = s->res;
    if (r->over != JSONSCAN_OK && what != JSONSCAN_DEPTH)
        return; /* the first one is told */
    r->over = what;
    r->amount = amount;
    r->at = at;
    where(s, upto, r->where, sizeof r->where);
}

bool jsonscan_number_too_big(const char *text, size_t n)
{
    char small[64];
    bool real = memchr(text, '.', n) || memchr(text, 'e', n) || memchr(text, 'E', n);
    size_t digits = 0;
    for (size_t k = 0; k < n; k++)
        digits += is_digit(text[k]);
    if (!real && digits > 19) /* past 19 digits it cannot fit; within, strtoll says */
        return true;
    char *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf)
        return true; /* (not known: taken as too big) */
    memcpy(buf, text, n);
    buf[n] = 0;
    errno = 0;
    bool big;
    if (!real) {
        (void)strtoll(buf, NULL, 10);
        big = errno == ERANGE;
    } else {
        double v = strtod(buf, NULL);
        big = errno == ERANGE && isinf(v);
    }
    if (buf != small)
        free(buf);
    return big;
}

size_t jsonscan_number_len(const char *text, size_t n)
{
    size_t i = 0;
    if (i < n && text[i] == '-')
        i++;
    if (i >= n || !is_digit(text[i]))
        return 0;
    if (text[i] == '0') {
        i++;
        if (i < n && is_digit(text[i]))
            return 0;
    } else {
        while (i < n && is_digit(text[i]))
            i++;
    }
    if (i < n && text[i] == '.') {
        if (i + 1 >= n || !is_digit(text[i + 1]))
            return 0;
        for (i++; i < n && is_digit(text[i]); i++)
            ;
    }
    if (i < n && (text[i] == 'e' || text[i] == 'E')) {
        size_t k = i + 1;
        if (k < n && (text[k] == '+' || text[k] == '-'))
            k++;
        if (k >= n || !is_digit(text[k]))
            return 0;
        for (i = k; i < n && is_digit(text[i]); i++)
            ;
    }
    return i;
}

/* The same while scanning, of the numbers jansson's lexer reads in a loose token text[0, n): the
 * one at its start (jsonscan_number_len), and where another begins right after it, that one too
 * ("1-1e999": only a '-' can follow a number jansson read whole). jansson lexes that second token
 * before its parser finds that it may not stand there, so its overflow is jansson's word; past it
 * the parser has stopped. The one found: text[*at, *at + *len). */
static bool number_too_big(const char *text, size_t n, size_t *at, size_t *len)
{
    size_t first = jsonscan_number_len(text, n);
    if (!first)
        return false;
    if (jsonscan_number_too_big(text, first)) {
        *at = 0;
        *len = first;
        return true;
    }
    if (first < n && text[first] == '-') {
        size_t second = jsonscan_number_len(text + first, n - first);
        if (second && jsonscan_number_too_big(text + first, second)) {
            *at = first;
            *len = second;
            return true;
        }
    }
    return false;
}

/* A value begins at offset at: counted in the text and in its container. */
static void count_value(scan *s, bool container, size_t at)
{
    jsonscan_result *r = s->res;
    r->values++;
    if (container)
        r->containers++;
    if (s->n) {
        level *p = &s->lv[s->n - 1];
        p->count++;
        bool obj = p->kind == KIND_OBJ;
        size_t *max = obj ? &r->max_members : &r->max_elements;
        if (p->count > *max)
            *max = p->count;
        if (p->count > (obj ? s->lim->members : s->lim->elements) && r->over == JSONSCAN_OK) {
            passed(s, obj ? JSONSCAN_MEMBERS : JSONSCAN_ELEMENTS, p->count, s->n - 1, p->at);
            p->over = true;
        }
    }
    if (container && r->containers > s->lim->containers)
        passed(s, JSONSCAN_CONTAINERS, 0, 0, at);
    if (r->values > s->lim->values)
        passed(s, JSONSCAN_VALUES, 0, 0, at);
}

static void close_level(scan *s)
{
    level *p = &s->lv[--s->n];
    if (p->over)
        s->res->amount = p->count;
}

/* Opening a level past the limit at t[i]: from here only brackets are counted, for the depth
 * the text reaches. */
static void too_deep(scan *s, size_t i)
{
    jsonscan_result *r = s->res;
    passed(s, JSONSCAN_DEPTH, 0, s->n, i);
    size_t depth = s->n, max = s->n;
    while (i < s->len) {
        char c = s->t[i];
        if (c == '"') {
            size_t d;
            bool closed;
            i = string_end(s->t, s->len, i, &d, &closed);
            continue;
        }
        if (c == '[' || c == '{') {
            if (++depth > max)
                max = depth;
        } else if ((c == ']' || c == '}') && --depth == 0) {
            break;
        }
        i++;
    }
    r->amount = max;
    r->depth = (unsigned)(max < 1u << 30 ? max : 1u << 30);
}

jsonscan_over jsonscan(const char *text, size_t len, const jsonscan_limits *lim, jsonscan_result *res)
{
    memset(res, 0, sizeof *res);
    scan s = {.t = text, .len = len, .lim = lim, .res = res, .lv = xcalloc(lim->depth + 1u, sizeof(level))};
    enum state st = ST_VALUE;
    size_t i = 0, syntax_at = 0;
    bool syntax = false;
    for (;;) {
        while (i < len && is_ws(text[i]))
            i++;
        if (i == len) {
            if (st != ST_AFTER || s.n) { /* empty, or a container or member left open */
                syntax = true;
                syntax_at = len;
            }
            break;
        }
        char c = text[i];
        level *p = s.n ? &s.lv[s.n - 1] : NULL;
        if (st == ST_AFTER) {
            if (p && c == ',') {
                st = p->kind == KIND_OBJ ? ST_KEY : ST_VALUE;
                i++;
                continue;
            }
            if (p && ((c == '}' && p->kind == KIND_OBJ) || (c == ']' && p->kind == KIND_ARR))) {
                close_level(&s);
                i++;
                continue;
            }
            syntax = true; /* nothing may follow the outermost value */
            syntax_at = i;
            break;
        }
        if (st == ST_COLON) {
            if (c != ':') {
                syntax = true;
                syntax_at = i;
                break;
            }
            st = ST_VALUE;
            i++;
            continue;
        }
        if (st == ST_KEY || st == ST_KEY_OR_END) {
            if (c == '}' && st == ST_KEY_OR_END) {
                close_level(&s);
                st = ST_AFTER;
                i++;
                continue;
            }
            size_t d;
            bool closed = false;
            size_t end = c == '"' ? string_end(text, len, i, &d, &closed) : i;
            if (!closed) {
                syntax = true;
                syntax_at = end;
                break;
            }
            p->key = text + i + 1;
            p->keylen = end - i - 2;
            if (d > res->max_key)
                res->max_key = d;
            if (d > lim->string_bytes)
                passed(&s, JSONSCAN_STRING, d, s.n, i);
            st = ST_COLON;
            i = end;
            continue;
        }
        /* ST_VALUE, ST_VALUE_OR_END */
        if (c == ']' && st == ST_VALUE_OR_END) {
            close_level(&s);
            st = ST_AFTER;
            i++;
            continue;
        }
        if (c == '{' || c == '[') {
            count_value(&s, true, i);
            if (s.n >= lim->depth) {
                too_deep(&s, i);
                break;
            }
            s.lv[s.n++] = (level){.kind = c == '{' ? KIND_OBJ : KIND_ARR, .at = i};
            if (s.n > res->depth)
                res->depth = s.n;
            st = c == '{' ? ST_KEY_OR_END : ST_VALUE_OR_END;
            i++;
            continue;
        }
        if (c == '"') {
            bool exempt = p && p->kind == KIND_OBJ && lim->long_key && p->keylen == strlen(lim->long_key) &&
                          !memcmp(p->key, lim->long_key, p->keylen);
            count_value(&s, false, i);
            size_t d;
            bool closed;
            size_t end = string_end(text, len, i, &d, &closed);
            if (d > res->max_string)
                res->max_string = d;
            if (!exempt && d > lim->string_bytes)
                passed(&s, JSONSCAN_STRING, d, s.n, i);
            if (!closed) {
                if (res->over == JSONSCAN_STRING)
                    res->at_least = true;
                syntax = true;
                syntax_at = len;
                break;
            }
            st = ST_AFTER;
            i = end;
            continue;
        }
        if (c == '-' || is_digit(c) || is_alpha(c)) {
            count_value(&s, false, i);
            bool num = !is_alpha(c);
            size_t start = i;
            while (i < len && (num ? is_numchar(text[i]) : is_alpha(text[i])))
                i++;
            size_t nat, nlen;
            if (num && !res->number_len && number_too_big(text + start, i - start, &nat, &nlen)) {
                res->number_at = start + nat;
                res->number_len = nlen;
                where(&s, s.n, res->number_where, sizeof res->number_where);
            }
            if (i < len && !text[i])
                i++; /* as jansson: the byte after a number or literal is read, then put back, and a
                      * NUL put back is lost ("[1\0]" is [1]) */
            st = ST_AFTER;
            continue;
        }
        syntax = true;
        syntax_at = i;
        break;
    }
    if (res->over == JSONSCAN_VALUES)
        res->amount = res->values;
    else if (res->over == JSONSCAN_CONTAINERS)
        res->amount = res->containers;
    if (syntax && res->over != JSONSCAN_DEPTH) {
        if (res->over == JSONSCAN_OK) {
            res->over = JSONSCAN_SYNTAX;
            res->at = syntax_at;
        } else if (res->over != JSONSCAN_STRING) {
            /* the totals, or a container never closed: as far as the scan went */
            res->at_least = true;
            for (unsigned k = 0; k < s.n; k++)
                if (s.lv[k].over)
                    res->amount = s.lv[k].count;
        }
    }
    free(s.lv);
    return res->over;
}

static void explain(const jsonscan_result *r, const jsonscan_limits *lim, jerr *e)
{
    const char *least = r->at_least ? "at least " : "";
    const char *subject = r->where[0] ? r->where : "the request body";
    char fits[160] = "";
    if (lim->fits)
        snprintf(fits, sizeof fits, " (%s)", lim->fits);
    switch (r->over) {
    case JSONSCAN_DEPTH:
        jerr_field(e, r->where, "the request nests %zu levels deep%s%s%s; joblet takes at most %u levels of objects "
                                "and arrays", r->amount, r->where[0] ? " (at " : "", r->where, r->where[0] ? ")" : "",
                   lim->depth);
        return;
    case JSONSCAN_STRING:
        jerr_field(e, r->where, "%s: a string of %s%zu bytes; joblet takes strings of at most %zu bytes%s%s%s",
                   subject, least, r->amount, lim->string_bytes, lim->long_key ? " (but an upload's " : "",
                   lim->long_key ? lim->long_key : "", lim->long_key ? ", which the body's size bounds)" : "");
        break;
    case JSONSCAN_MEMBERS:
        jerr_field(e, r->where, "%s: an object of %s%zu members; joblet takes at most %zu members per object", subject,
                   least, r->amount, lim->members);
        break;
    case JSONSCAN_ELEMENTS:
        jerr_field(e, r->where, "%s: an array of %s%zu elements; joblet takes at most %zu elements per array%s",
                   subject, least, r->amount, lim->elements, fits);
        break;
    case JSONSCAN_CONTAINERS:
        jerr_field(e, NULL, "the request holds %s%zu objects and arrays; joblet takes at most %zu in one request%s",
                   least, r->amount, lim->containers, fits);
        break;
    case JSONSCAN_VALUES:
        jerr_field(e, NULL, "the request holds %s%zu values; joblet takes at most %zu in one request%s", least,
                   r->amount, lim->values, fits);
        break;
    default:
        return;
    }
    e->http = 413; /* too much of something: Content Too Large */
}

/* Whether text is one JSON value that is not an object or an array ("x", 1, true, null): JSON,
 * but not what any request of joblet's is (jansson's "'[' or '{' expected" says the same of text
 * that is no JSON at all). */
static bool is_bare_value(const char *text, size_t n)
{
    json_error_t je;
    json_t *v = json_loadb(text, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    bool bare = v && !json_is_object(v) && !json_is_array(v);
    json_decref(v);
    return bare;
}

json_t *jsonscan_load(const char *text, size_t len, const jsonscan_limits *lim, jerr *e)
{
    jsonscan_result r;
    jsonscan_over over = jsonscan(text, len, lim, &r);
    if (over != JSONSCAN_OK && over != JSONSCAN_SYNTAX) {
        explain(&r, lim, e);
        return NULL;
    }
    /* Not JSON: jansson says why, reading no further than the scan did (what it builds on the
     * way was counted within the limits). */
    size_t n = over == JSONSCAN_SYNTAX && r.at < len ? r.at + 1 : len;
    json_error_t je;
    json_t *j = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
    if (j && over == JSONSCAN_SYNTAX) { /* the scan and jansson disagree: the scan's word stands */
        json_decref(j);
        j = NULL;
        snprintf(je.text, sizeof je.text, "unexpected text at byte %zu", r.at);
    }
    if (!j && r.number_len && (!je.position || (size_t)je.position >= r.number_at)) {
        /* jansson stops at the first number it cannot hold, before anything after it; the
         * number is named by its place, as a limit passed is */
        int shown = r.number_len > 40 ? 40 : (int)r.number_len;
        jerr_field(e, r.number_where, "%s: the number %.*s%s is too large; joblet takes whole numbers from "
                                      "-9223372036854775808 to 9223372036854775807 (and reals within a double's range)",
                   r.number_where[0] ? r.number_where : "the request body", shown, text + r.number_at,
                   r.number_len > 40 ? "\xe2\x80\xa6" : "");
    } else if (!j && strstr(je.text, "JSON_ALLOW_NUL")) {
        /* jansson's words name its own flag; a client can act on what the text holds */
        jerr_field(e, NULL, "the request body holds \\u0000 (a NUL character) in a string at byte %d; joblet's "
                            "strings (commands, names, paths, variables) cannot hold one: leave it out",
                   je.position);
    } else if (!j && is_bare_value(text, n)) {
        /* a bare string, number, true, false or null is JSON (RFC 8259), but no request of joblet's */
        jerr_field(e, NULL, "the request body must be a JSON object ({...}) or, where a list is taken, an array "
                            "([...]), not a bare string, number, true, false or null");
    } else if (!j) {
        jerr_field(e, NULL, "the request body is not valid JSON: %s", je.text);
    }
    return j;
}
