#include "promtext.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "util.h"

static void grow(prom_buf *b, size_t need)
{
    if (b->len + need + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + need + 1)
        cap *= 2;
    char *p = xrealloc(b->p, cap);
    b->p = p;
    b->cap = cap;
}

static void put(prom_buf *b, const char *s, size_t n)
{
    grow(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void puts_(prom_buf *b, const char *s) { put(b, s, strlen(s)); }

void prom_printf(prom_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    grow(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *prom_take(prom_buf *b)
{
    char *p = b->p ? b->p : xstrdup("");
    *b = (prom_buf){0};
    return p;
}

void prom_free(prom_buf *b)
{
    free(b->p);
    *b = (prom_buf){0};
}

void prom_family(prom_buf *b, const char *name, const char *type, const char *help)
{
    prom_printf(b, "# HELP %s ", name);
    for (const char *c = help; *c; c++) {
        if (*c == '\\')
            puts_(b, "\\\\");
        else if (*c == '\n')
            puts_(b, "\\n");
        else
            put(b, c, 1);
    }
    prom_printf(b, "\n# TYPE %s %s\n", name, type);
}

void prom_label(prom_buf *labels, const char *key, const char *value)
{
    if (labels->len)
        put(labels, ",", 1);
    prom_printf(labels, "%s=\"", key);
    char *v = xstrdup(value ? value : "");
    utf8_sanitize(v);
    for (const char *c = v; *c; c++) {
        if (*c == '\\')
            puts_(labels, "\\\\");
        else if (*c == '"')
            puts_(labels, "\\\"");
        else if (*c == '\n')
            puts_(labels, "\\n");
        else
            put(labels, c, 1);
    }
    free(v);
    put(labels, "\"", 1);
}

void prom_format_double(double v, char *out, size_t len)
{
    if (isnan(v)) {
        snprintf(out, len, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, len, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v > -1e15 && v < 1e15 && v == (double)(long long)v) {
        snprintf(out, len, "%.0f", v);
        return;
    }
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(out, len, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

static void name_labels(prom_buf *b, const char *name, const char *labels)
{
    puts_(b, name);
    if (labels && *labels)
        prom_printf(b, "{%s}", labels);
}

void prom_sample(prom_buf *b, const char *name, const char *labels, double v)
{
    char num[64];
    prom_format_double(v, num, sizeof num);
    name_labels(b, name, labels);
    prom_printf(b, " %s\n", num);
}

void prom_sample_u(prom_buf *b, const char *name, const char *labels, uint64_t v)
{
    name_labels(b, name, labels);
    prom_printf(b, " %llu\n", (unsigned long long)v);
}

void prom_sample_with(prom_buf *b, const char *name, const char *labels, const char *key, const char *value, double v)
{
    prom_buf l = {0};
    if (labels && *labels)
        puts_(&l, labels);
    prom_label(&l, key, value);
    prom_sample(b, name, l.p, v);
    prom_free(&l);
}

void prom_hist_init(prom_hist *h, const double *le, size_t n)
{
    *h = (prom_hist){0};
    h->n = n < PROM_HIST_MAX ? n : PROM_HIST_MAX;
    memcpy(h->le, le, h->n * sizeof *le);
}

void prom_hist_observe(prom_hist *h, double v)
{
    if (isnan(v))
        return;
    if (v < 0)
        v = 0;
    size_t k = 0;
    while (k < h->n && v > h->le[k])
        k++;
    h->bucket[k]++;
    h->count++;
    h->sum += v;
}

void prom_hist_write(prom_buf *b, const char *name, const char *help, const char *labels, const prom_hist *h)
{
    prom_family(b, name, "histogram", help);
    char bn[160], le[64];
    snprintf(bn, sizeof bn, "%s_bucket", name);
    uint64_t cum = 0;
    for (size_t k = 0; k <= h->n; k++) {
        cum += h->bucket[k];
        if (k < h->n)
            prom_format_double(h->le[k], le, sizeof le);
        else
            snprintf(le, sizeof le, "+Inf");
        prom_buf l = {0};
        if (labels && *labels)
            puts_(&l, labels);
        prom_label(&l, "le", le);
        prom_sample_u(b, bn, l.p, cum);
        prom_free(&l);
    }
    snprintf(bn, sizeof bn, "%s_sum", name);
    prom_sample(b, bn, labels, h->sum);
    snprintf(bn, sizeof bn, "%s_count", name);
    prom_sample_u(b, bn, labels, h->count);
}
