/* The items of {"KEY":[...]} as they come, and their text indented (json_items.h). */
#include "json_items.h"

#include <stdlib.h>
#include <string.h>

#include "../common/jsonscan.h"
#include "../common/util.h"

enum ji_phase { JI_PREFIX, JI_BETWEEN, JI_ITEM, JI_CLOSE, JI_DONE, JI_OTHER, JI_BAD };

struct json_items {
    char *prefix;          /* {"KEY":[ */
    size_t plen, matched;  /* its bytes seen so far */
    enum ji_phase phase;
    bool comma_due;        /* between items: a ',' or the ']' comes next (not an item) */
    bool any;              /* an item was seen */
    int depth;             /* in an item: its nesting */
    bool in_str, esc;
    char *item;            /* the item's bytes so far (JI_ITEM), or the whole body (JI_OTHER) */
    size_t len, cap;
    size_t max;            /* item's (or whole body's) bytes at most */
    bool too_big;          /* refused for passing it */
    json_items_cb cb;
    void *ud;
};

json_items *json_items_new(const char *key, size_t max, json_items_cb cb, void *ud)
{
    json_items *ji = xcalloc(1, sizeof *ji);
    ji->max = max;
    ji->plen = strlen(key) + 5; /* {"KEY":[ */
    ji->prefix = xmalloc(ji->plen + 1);
    snprintf(ji->prefix, ji->plen + 1, "{\"%s\":[", key);
    ji->cb = cb;
    ji->ud = ud;
    return ji;
}

void json_items_free(json_items *ji)
{
    if (!ji)
        return;
    free(ji->prefix);
    free(ji->item);
    free(ji);
}

bool json_items_done(const json_items *ji) { return ji->phase == JI_DONE; }

bool json_items_other(const json_items *ji) { return ji->phase == JI_OTHER; }

bool json_items_too_big(const json_items *ji) { return ji->too_big; }

/* Whether n more bytes of the item (or whole body) pass max: then the body is refused. */
static bool over(json_items *ji, size_t n)
{
    if (ji->len + n <= ji->max)
        return false;
    ji->phase = JI_BAD;
    ji->too_big = true;
    return true;
}

void json_items_append(char **p, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (*len + n + 1 > c)
            c *= 2;
        *p = xrealloc(*p, c);
        *cap = c;
    }
    memcpy(*p + *len, s, n);
    *len += n;
    (*p)[*len] = '\0';
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int json_items_feed(json_items *ji, const char *buf, size_t n)
{
    size_t i = 0;
    if (ji->phase == JI_BAD)
        return -1;
    if (ji->phase == JI_OTHER) {
        if (over(ji, n))
            return -1;
        json_items_append(&ji->item, &ji->len, &ji->cap, buf, n);
        return 0;
    }
    while (i < n) {
        char c = buf[i];
        switch (ji->phase) {
        case JI_PREFIX:
            if (c != ji->prefix[ji->matched]) {
                /* another layout: the whole body is the caller's to parse */
                ji->phase = JI_OTHER;
                if (over(ji, ji->matched + n - i))
                    return -1;
                json_items_append(&ji->item, &ji->len, &ji->cap, ji->prefix, ji->matched);
                json_items_append(&ji->item, &ji->len, &ji->cap, buf + i, n - i);
                return 0;
            }
            i++;
            if (++ji->matched == ji->plen)
                ji->phase = JI_BETWEEN;
            break;
        case JI_BETWEEN:
            i++;
            if (is_space(c))
                break;
            if (c == ']' && (ji->comma_due || !ji->any)) {
                ji->phase = JI_CLOSE;
            } else if (c == ',' && ji->comma_due) {
                ji->comma_due = false;
            } else if ((c == '{' || c == '[') && !ji->comma_due) {
                ji->phase = JI_ITEM;
                ji->depth = 1;
                ji->in_str = ji->esc = false;
                ji->len = 0;
                json_items_append(&ji->item, &ji->len, &ji->cap, &c, 1);
            } else {
                ji->phase = JI_BAD;
                return -1;
            }
            break;
        case JI_ITEM: {
            /* up to the item's end, or this buffer's */
            size_t s = i;
            for (; i < n && ji->depth > 0; i++) {
                char d = buf[i];
                if (ji->in_str) {
                    if (ji->esc)
                        ji->esc = false;
                    else if (d == '\\')
                        ji->esc = true;
                    else if (d == '"')
                        ji->in_str = false;
                } else if (d == '"') {
                    ji->in_str = true;
                } else if (d == '{' || d == '[') {
                    ji->depth++;
                } else if (d == '}' || d == ']') {
                    ji->depth--;
                }
            }
            if (over(ji, i - s))
                return -1;
            json_items_append(&ji->item, &ji->len, &ji->cap, buf + s, i - s);
            if (ji->depth == 0) {
                ji->phase = JI_BETWEEN;
                ji->comma_due = ji->any = true;
                if (ji->cb(ji->item, ji->len, ji->ud) < 0) {
                    ji->phase = JI_BAD;
                    return -1;
                }
            }
            break;
        }
        case JI_CLOSE:
            i++;
            if (c == '}') {
                ji->phase = JI_DONE;
            } else if (!is_space(c)) {
                ji->phase = JI_BAD;
                return -1;
            }
            break;
        case JI_DONE:
            i++;
            if (!is_space(c)) {
                ji->phase = JI_BAD;
                return -1;
            }
            break;
        default: return -1;
        }
    }
    return 0;
}

const char *json_items_whole(const json_items *ji, size_t *len)
{
    *len = ji->len;
    return ji->item ? ji->item : "";
}

static void newline(int depth, char **out, size_t *len, size_t *cap)
{
    static const char spaces[] = "\n                                                                ";
    size_t want = 1 + 2 * (size_t)(depth > 0 ? depth : 0);
    json_items_append(out, len, cap, spaces, 1);
    for (want--; want > 0;) {
        size_t k = want < sizeof spaces - 2 ? want : sizeof spaces - 2;
        json_items_append(out, len, cap, spaces + 1, k);
        want -= k;
    }
}

static size_t skip_space(const char *t, size_t i, size_t n)
{
    while (i < n && is_space(t[i]))
        i++;
    return i;
}

void json_items_indent_to(const char *t, size_t n, int depth, char **out, size_t *len, size_t *cap, size_t flush_at,
                          void (*flush)(void *ud), void *ud)
{
    for (size_t i = 0; i < n;) {
        if (flush && *len >= flush_at)
            flush(ud);
        char c = t[i];
        if (is_space(c)) {
            i++;
        } else if (c == '"') {
            /* a string: as it is, up to its closing quote */
            size_t s = i++;
            for (; i < n && t[i] != '"'; i++)
                if (t[i] == '\\' && i + 1 < n)
                    i++;
            i = i < n ? i + 1 : n;
            json_items_append(out, len, cap, t + s, i - s);
        } else if (c == '{' || c == '[') {
            size_t k = skip_space(t, i + 1, n);
            if (k < n && t[k] == (c == '{' ? '}' : ']')) {
                /* empty: {} and [] as jansson writes them */
                json_items_append(out, len, cap, c == '{' ? "{}" : "[]", 2);
                i = k + 1;
            } else {
                json_items_append(out, len, cap, &c, 1);
                newline(++depth, out, len, cap);
                i++;
            }
        } else if (c == '}' || c == ']') {
            newline(--depth, out, len, cap);
            json_items_append(out, len, cap, &c, 1);
            i++;
        } else if (c == ',') {
            json_items_append(out, len, cap, ",", 1);
            newline(depth, out, len, cap);
            i++;
        } else if (c == ':') {
            json_items_append(out, len, cap, ": ", 2);
            i++;
        } else {
            /* a number or literal: up to the next delimiter */
            size_t s = i;
            while (i < n && !is_space(t[i]) && !strchr(",:{}[]\"", t[i]))
                i++;
            json_items_append(out, len, cap, t + s, i - s);
        }
    }
}

/* The bytes of one UTF-8 character at t[k] (c = t[k], 0x80 or more) as RFC 3629 has them, or 0:
 * no overlong form, no surrogate (U+D800-DFFF), none past U+10FFFF, none cut short (jansson's
 * utf8_check_full). */
static size_t utf8_len(const char *t, size_t k, size_t n, unsigned char c)
{
    /* (the second byte's bounds: they alone rule out the overlong forms, the surrogates and
     * what lies past U+10FFFF) */
    unsigned char lo = 0x80, hi = 0xbf;
    size_t len;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0; /* a continuation byte first, 0xc0-0xc1, 0xf5-0xff */
    }
    if (n - k < len)
        return 0;
    for (size_t b = 1; b < len; b++) {
        unsigned char d = (unsigned char)t[k + b];
        if (d < (b == 1 ? lo : 0x80) || d > (b == 1 ? hi : 0xbf))
            return 0;
    }
    return len;
}

/* The 4 hex digits at t[k]: their value, or -1 when they are not 4 hex digits. */
static long hex4(const char *t, size_t k, size_t n)
{
    long v = 0;
    for (size_t h = 0; h < 4; h++) {
        if (k + h >= n)
            return -1;
        char c = t[k + h];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A string at t[*i] ('"'), its end past it into *i: its escapes as JSON has them, no control
 * character in it, its bytes UTF-8 (RFC 8259 8.1; jansson refuses others, and rnx's parse of a
 * whole answer did). */
static bool valid_string(const char *t, size_t *i, size_t n)
{
    size_t k = *i;
    if (k >= n || t[k] != '"')
        return false;
    for (k++; k < n; k++) {
        unsigned char c = (unsigned char)t[k];
        if (c == '"') {
            *i = k + 1;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c >= 0x80) {
            size_t len = utf8_len(t, k, n, c);
            if (!len)
                return false;
            k += len - 1;
            continue;
        }
        if (c != '\\')
            continue;
        if (++k >= n)
            return false;
        if (t[k] == 'u') {
            /* jansson refuses \u0000 (no JSON_ALLOW_NUL) and a surrogate but a high one
             * followed by a low one */
            long u = hex4(t, k + 1, n);
            k += 4;
            if (u <= 0 || (u >= 0xdc00 && u <= 0xdfff))
                return false;
            if (u >= 0xd800 && u <= 0xdbff) {
                long lo = k + 2 < n && t[k + 1] == '\\' && t[k + 2] == 'u' ? hex4(t, k + 3, n) : -1;
                if (lo < 0xdc00 || lo > 0xdfff)
                    return false;
                k += 6;
            }
        } else if (!t[k] || !strchr("\"\\/bfnrt", t[k])) {
            return false;
        }
    }
    return false;
}

/* A number, true, false or null at t[*i], its end into *i. */
static bool valid_scalar(const char *t, size_t *i, size_t n)
{
    static const char *const lits[] = {"true", "false", "null"};
    size_t k = *i;
    for (size_t l = 0; l < 3; l++) {
        size_t len = strlen(lits[l]);
        if (n - k >= len && !memcmp(t + k, lits[l], len)) {
            *i = k + len;
            return true;
        }
    }
    size_t len = jsonscan_number_len(t + k, n - k);
    if (!len || jsonscan_number_too_big(t + k, len)) /* (not a number, or one jansson cannot hold) */
        return false;
    *i = k + len;
    return true;
}

/* An object's key and its ':' at t[*i], past them into *i. */
static bool valid_key(const char *t, size_t *i, size_t n)
{
    if (!valid_string(t, i, n))
        return false;
    *i = skip_space(t, *i, n);
    if (*i >= n || t[*i] != ':')
        return false;
    *i = skip_space(t, *i + 1, n);
    return true;
}

/* Containers nested deeper than this are not taken (jansson's JSON_PARSER_MAX_DEPTH: the parse
 * rnx made of a whole answer refused them). Laid out, a value at depth N takes a line of 2N
 * spaces: an item of 200,000 levels (400 KB) was 80 GB of text. */
#define JSON_ITEMS_MAX_DEPTH 2048

bool json_items_valid_at(const char *t, size_t n, int at)
{
    char *open = NULL; /* the containers the value at i is in, '{' or '[' each */
    size_t depth = 0, cap = 0, i = skip_space(t, 0, n);
    /* (its own containers and those it is printed in) */
    size_t max = at <= 0 ? JSON_ITEMS_MAX_DEPTH : at < JSON_ITEMS_MAX_DEPTH ? JSON_ITEMS_MAX_DEPTH - (size_t)at : 0;
    bool ok = false;
    for (;;) {
        /* a value at i */
        if (i >= n)
            break;
        if (t[i] == '{' || t[i] == '[') {
            char c = t[i];
            if (depth >= max) /* (this one, empty or not, one level more) */
                break;
            i = skip_space(t, i + 1, n);
            if (i < n && t[i] == (c == '{' ? '}' : ']')) {
                i++;
            } else {
                if (depth == cap) {
                    cap = cap ? 2 * cap : 64;
                    open = xrealloc(open, cap);
                }
                open[depth++] = c;
                if (c == '{' && !valid_key(t, &i, n))
                    break;
                continue;
            }
        } else if (!(t[i] == '"' ? valid_string(t, &i, n) : valid_scalar(t, &i, n))) {
            break;
        }
        /* after a value: its container's ',' or end, as many as end here */
        bool next = false;
        for (;;) {
            i = skip_space(t, i, n);
            if (!depth || i >= n)
                break;
            char top = open[depth - 1];
            if (t[i] == ',') {
                i = skip_space(t, i + 1, n);
                next = top == '[' || valid_key(t, &i, n);
                break;
            }
            if (t[i] != (top == '{' ? '}' : ']'))
                break;
            depth--;
            i++;
        }
        if (!next) {
            ok = !depth && i == n;
            break;
        }
    }
    free(open);
    return ok;
}
