/* Writing the Prometheus text exposition format, version 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/): HELP and TYPE lines, samples
 * with escaped label values, histograms with cumulative buckets. */
#ifndef JOBLET_PROMTEXT_H
#define JOBLET_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A growing text buffer; p is always NUL-terminated once anything was written. */
typedef struct prom_buf {
    char *p;
    size_t len, cap;
} prom_buf;

void prom_printf(prom_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands over the text (caller frees) and leaves b empty; "" rather than NULL when empty. */
char *prom_take(prom_buf *b);
void prom_free(prom_buf *b);

/* `# HELP name help` (backslashes and newlines escaped) and `# TYPE name type`. */
void prom_family(prom_buf *b, const char *name, const char *type, const char *help);

/* Appends `key="value"` to a label set (a comma first when it is not empty), the value
 * escaped (\\, \", \n) and any byte that is not UTF-8 replaced by '?'. */
void prom_label(prom_buf *labels, const char *key, const char *value);

/* `name{labels} value`; labels is the inner text (prom_label's), NULL or "" for none. */
void prom_sample(prom_buf *b, const char *name, const char *labels, double v);
void prom_sample_u(prom_buf *b, const char *name, const char *labels, uint64_t v);
/* The same with one more label after the set, e.g. state="allocated". */
void prom_sample_with(prom_buf *b, const char *name, const char *labels, const char *key, const char *value,
                      double v);

/* The shortest text that reads back as v; "+Inf", "-Inf" and "NaN" as the format spells them. */
void prom_format_double(double v, char *out, size_t len);

#define PROM_HIST_MAX 24
typedef struct prom_hist {
    size_t n;                        /* upper bounds, ascending; +Inf is implied */
    double le[PROM_HIST_MAX];
    uint64_t bucket[PROM_HIST_MAX + 1]; /* per bucket, not cumulative; [n] is +Inf */
    uint64_t count;
    double sum;
} prom_hist;

void prom_hist_init(prom_hist *h, const double *le, size_t n);
/* NaN is ignored; a negative value counts as 0 (a clock that stepped back). */
void prom_hist_observe(prom_hist *h, double v);
/* The family lines, name_bucket{le=...} cumulative, name_sum and name_count. */
void prom_hist_write(prom_buf *b, const char *name, const char *help, const char *labels, const prom_hist *h);

#endif
