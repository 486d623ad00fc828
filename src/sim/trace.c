#include "trace.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum col { C_SUBMIT, C_DURATION, C_GPUS, C_MEMORY, C_PRIORITY, C_USER, C_LIMIT, C_PREEMPTIBLE, C_SINGLE_NUMA, C_N };

static const char *const col_names[C_N] = {"submit", "duration", "gpus", "memory_mb",
                                           "priority", "user", "limit", "preemptible",
                                           "single_numa"};
#define COLS_KNOWN "submit, duration, gpus, memory_mb, priority, user, limit, preemptible, single_numa"
#define COLS_MIN 3 /* submit, duration, gpus: the rest may be left out */
#define TIME_MAX_S 1000000000LL

/* Seconds with at most three decimals ("12", "0.5", "3600.250") into milliseconds. */
static int parse_time(const char *s, int64_t *ms)
{
    int64_t whole = 0, frac = 0;
    int nd = 0, nf = 0;
    const char *p = s;
    for (; isdigit((unsigned char)*p); p++, nd++) {
        whole = whole * 10 + (*p - '0');
        if (whole > TIME_MAX_S)
            return -1;
    }
    if (*p == '.') {
        for (p++; isdigit((unsigned char)*p); p++, nf++) {
            if (nf == 3)
                return -1;
            frac = frac * 10 + (*p - '0');
        }
        if (!nf)
            return -1;
        for (int k = nf; k < 3; k++)
            frac *= 10;
    }
    if (!nd || *p)
        return -1;
    *ms = whole * 1000 + frac;
    return 0;
}

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    if (!*s || isspace((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = 0;
    return s;
}

/* Splits a line at commas in place; no quoting. Returns the field count, at most max (more is
 * reported as max + 1). */
static int split(char *line, char **f, int max)
{
    int n = 0;
    for (char *p = line;; n++) {
        char *c = strchr(p, ',');
        if (n < max)
            f[n] = p;
        if (!c)
            return n + 1 > max ? max + 1 : n + 1;
        *c = 0;
        p = c + 1;
    }
}

static int user_id(sim_trace *t, const char *name, uint32_t *id, jerr *e)
{
    for (size_t u = 0; u < t->nusers; u++)
        if (!strcmp(t->users[u], name)) {
            *id = (uint32_t)u;
            return 0;
        }
    if (t->nusers % 64 == 0) {
        char **nu = realloc(t->users, (t->nusers + 64) * sizeof *nu);
        if (!nu)
            return jerr_set(e, ENOMEM, "out of memory");
        t->users = nu;
    }
    if (!(t->users[t->nusers] = strdup(name)))
        return jerr_set(e, ENOMEM, "out of memory");
    *id = (uint32_t)t->nusers++;
    return 0;
}

#define FIELD_ERR(fmt, ...)                                                                                         \
    jerr_set(e, EINVAL, "%s:%d: column %d (%s): " fmt, name, lineno, k + 1, col_names[c], __VA_ARGS__)

static int parse_job(sim_trace *t, char **f, int nf, const int *cols, const char *name, int lineno, sim_job *j,
                     jerr *e)
{
    *j = (sim_job){.line = lineno};
    int seen[C_N] = {0};
    for (int k = 0; k < nf; k++) {
        int c = cols[k];
        char *v = trim(f[k]);
        long long x;
        seen[c] = 1;
        if (strchr(v, '"'))
            return FIELD_ERR("'%s': quoted fields are not supported", v);
        if (!*v) {
            if (c == C_SUBMIT || c == C_DURATION || c == C_GPUS)
                return FIELD_ERR("%s", "empty, but required");
            if (c != C_USER)
                continue;
        }
        switch (c) {
        case C_SUBMIT:
            if (parse_time(v, &j->submit_ms) < 0)
                return FIELD_ERR("'%s' is not a time in seconds (0 to %lld, at most 3 decimals)", v, TIME_MAX_S);
            break;
        case C_DURATION:
        case C_LIMIT: {
            int64_t ms;
            if (parse_time(v, &ms) < 0 || ms == 0)
                return FIELD_ERR("'%s' is not a duration in seconds (above 0, at most %lld, at most 3 decimals)", v,
                                 TIME_MAX_S);
            *(c == C_DURATION ? &j->duration_ms : &j->limit_ms) = ms;
            break;
        }
        case C_GPUS:
            if (parse_int(v, 1, 64, &x) < 0)
                return FIELD_ERR("'%s' is not a whole number of GPUs from 1 to 64", v);
            j->gpus = (uint32_t)x;
            break;
        case C_MEMORY:
            if (parse_int(v, 0, 1LL << 40, &x) < 0)
                return FIELD_ERR("'%s' is not a whole number of MiB (0 = any)", v);
            j->memory_mb = (uint64_t)x;
            break;
        case C_PRIORITY:
            if (parse_int(v, INT32_MIN, INT32_MAX, &x) < 0)
                return FIELD_ERR("'%s' is not a whole number (32-bit)", v);
            j->priority = (int32_t)x;
            break;
        case C_USER:
            if (user_id(t, v, &j->user, e) < 0)
                return -1;
            break;
        case C_PREEMPTIBLE:
        case C_SINGLE_NUMA: {
            int b;
            if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"))
                b = 1;
            else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no"))
                b = 0;
            else
                return FIELD_ERR("'%s' is not 0/1, true/false or yes/no", v);
            *(c == C_PREEMPTIBLE ? &j->preemptible : &j->single_numa) = b;
            break;
        }
        default:
            break;
        }
    }
    if (!seen[C_USER] && user_id(t, "", &j->user, e) < 0)
        return -1;
    return 0;
}

int trace_read(FILE *f, const char *name, sim_trace *t, jerr *e)
{
    memset(t, 0, sizeof *t);
    char *line = NULL;
    size_t cap = 0, alloc = 0;
    int lineno = 0, ncols = -1, rc = -1;
    int cols[C_N];
    char *fld[C_N + 1];
    ssize_t len;
    errno = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (memchr(line, 0, (size_t)len)) {
            jerr_set(e, EINVAL, "%s:%d: a NUL byte: not a text file", name, lineno);
            goto out;
        }
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        int nf = split(s, fld, C_N);
        if (ncols < 0) {
            /* The first line names the columns unless it starts with a number. */
            int64_t ms;
            char *first = trim(fld[0]);
            if (parse_time(first, &ms) == 0 || isdigit((unsigned char)*first)) {
                ncols = 0; /* positional, in col_names order */
                for (int k = 0; k < C_N; k++)
                    cols[k] = k;
            } else {
                if (nf > C_N) {
                    jerr_set(e, EINVAL, "%s:%d: more than %d columns in the header (known: " COLS_KNOWN ")", name,
                             lineno, C_N);
                    goto out;
                }
                int have[C_N] = {0};
                for (int k = 0; k < nf; k++) {
                    char *h = trim(fld[k]);
                    int c = -1;
                    for (int i = 0; i < C_N; i++)
                        if (!strcasecmp(h, col_names[i]) || (i == C_MEMORY && !strcasecmp(h, "memory")))
                            c = i;
                    if (c < 0) {
                        jerr_set(e, EINVAL, "%s:%d: column %d: unknown column '%s' (known: " COLS_KNOWN ")", name,
                                 lineno, k + 1, h);
                        goto out;
                    }
                    if (have[c]) {
                        jerr_set(e, EINVAL, "%s:%d: column %d: '%s' named twice", name, lineno, k + 1, h);
                        goto out;
                    }
                    have[c] = 1;
                    cols[k] = c;
                }
                for (int c = 0; c < COLS_MIN; c++)
                    if (!have[c]) {
                        jerr_set(e, EINVAL, "%s:%d: the header lacks the required column '%s'", name, lineno,
                                 col_names[c]);
                        goto out;
                    }
                ncols = nf;
                continue;
            }
        }
        if (ncols ? nf != ncols : nf < COLS_MIN || nf > C_N) {
            if (ncols)
                jerr_set(e, EINVAL, "%s:%d: %d fields, but the header names %d", name, lineno, nf > C_N ? C_N + 1 : nf,
                         ncols);
            else
                jerr_set(e, EINVAL,
                         "%s:%d: %s%d fields; expected %d to %d: submit, duration, gpus[, memory_mb, priority, user, "
                         "limit, preemptible, single_numa]",
                         name, lineno, nf > C_N ? "more than " : "", nf > C_N ? C_N : nf, COLS_MIN, C_N);
            goto out;
        }
        if (t->n == alloc) {
            size_t na = alloc ? alloc * 2 : 256;
            sim_job *nj = realloc(t->jobs, na * sizeof *nj);
            if (!nj) {
                jerr_set(e, ENOMEM, "out of memory");
                goto out;
            }
            t->jobs = nj;
            alloc = na;
        }
        if (parse_job(t, fld, nf, cols, name, lineno, &t->jobs[t->n], e) < 0)
            goto out;
        t->n++;
    }
    if (ferror(f)) {
        jerr_sys(e, "%s: read", name);
        goto out;
    }
    if (!t->n) {
        jerr_set(e, EINVAL, "%s: no jobs in the trace", name);
        goto out;
    }
    rc = 0;
out:
    free(line);
    if (rc < 0)
        trace_free(t);
    return rc;
}

void trace_free(sim_trace *t)
{
    for (size_t u = 0; u < t->nusers; u++)
        free(t->users[u]);
    free(t->users);
    free(t->jobs);
    memset(t, 0, sizeof *t);
}
