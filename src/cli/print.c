/* Text output for rnx. Everything here reads the API's job object defensively: a field that
 * is missing or null prints as "-" or is left out, never crashes the client. */
#include "print.h"

#include "../common/jobreq.h"

#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/parse.h"
#include "../common/util.h"

const char *jstr(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

bool jint(json_t *obj, const char *key, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        return false;
    *out = (int64_t)json_integer_value(v);
    return true;
}

void fmt_local_time(const char *rfc3339, char *out, size_t outlen)
{
    int64_t ms;
    if (!rfc3339) {
        snprintf(out, outlen, "-");
        return;
    }
    if (parse_ms(rfc3339, &ms) < 0) {
        snprintf(out, outlen, "%s", rfc3339);
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(out, outlen, "%Y-%m-%d %H:%M:%S", &tm);
}

void fmt_elapsed_ms(int64_t ms, char *out, size_t outlen)
{
    if (ms < 0)
        ms = 0;
    int64_t s = ms / 1000;
    if (s < 60)
        snprintf(out, outlen, "%lld.%llds", (long long)s, (long long)(ms % 1000 / 100));
    else if (s < 3600)
        snprintf(out, outlen, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else if (s < 86400)
        snprintf(out, outlen, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else
        snprintf(out, outlen, "%lldd%02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

void fmt_seconds(uint64_t s, char *out, size_t outlen)
{
    static const struct { uint64_t secs; const char *unit; } parts[] = {
        {86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"},
    };
    size_t n = 0;
    out[0] = 0;
    if (s == 0) {
        snprintf(out, outlen, "0s");
        return;
    }
    for (size_t i = 0; i < ARRAY_LEN(parts) && n < outlen; i++) {
        uint64_t k = s / parts[i].secs;
        if (!k)
            continue;
        int w = snprintf(out + n, outlen - n, "%llu%s", (unsigned long long)k, parts[i].unit);
        if (w < 0)
            return;
        n += (size_t)w;
        s %= parts[i].secs;
    }
}

void fmt_bytes(uint64_t bytes, char *out, size_t outlen)
{
    static const char *const units[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
    if (bytes < 1024) {
        snprintf(out, outlen, "%llu B", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes / 1024;
    size_t u = 0;
    while (v >= 1024 && u + 1 < ARRAY_LEN(units)) {
        v /= 1024;
        u++;
    }
    snprintf(out, outlen, "%.1f %s", v, units[u]);
}

void fmt_mb(uint64_t mb, char *out, size_t outlen)
{
    /* exact whole units only, so the figure reads back into --max-memory unchanged */
    if (mb >= 1024 * 1024 && mb % (1024 * 1024) == 0)
        snprintf(out, outlen, "%llu TB", (unsigned long long)(mb >> 20));
    else if (mb >= 1024 && mb % 1024 == 0)
        snprintf(out, outlen, "%llu GB", (unsigned long long)(mb >> 10));
    else
        snprintf(out, outlen, "%llu MB", (unsigned long long)mb);
}

void fmt_signal(int sig, char *out, size_t outlen)
{
    const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
    if (abbrev)
        snprintf(out, outlen, "SIG%s", abbrev);
    else
        snprintf(out, outlen, "signal %d", sig);
}

/* True when s can be typed to a shell as it is. */
static bool shell_plain(const char *s)
{
    if (!*s)
        return false;
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./:,@%^", *p) &&
            !((unsigned char)*p & 0x80))
            return false;
    return true;
}

/* Appends s to out (capacity tracked in *cap), single-quoted when the shell needs it. */
static void append_word(char **out, size_t *len, size_t *cap, const char *s)
{
    size_t need = *len + strlen(s) * 4 + 4;
    if (need > *cap) {
        *cap = need * 2;
        *out = xrealloc(*out, *cap);
    }
    char *p = *out + *len;
    if (*len)
        *p++ = ' ';
    if (shell_plain(s)) {
        p = stpcpy(p, s);
    } else {
        *p++ = '\'';
        for (const char *q = s; *q; q++) {
            if (*q == '\'')
                p = stpcpy(p, "'\\''");
            else
                *p++ = *q;
        }
        *p++ = '\'';
        *p = 0;
    }
    *len = (size_t)(p - *out);
}

char *shell_join(const char *command, json_t *args)
{
    size_t len = 0, cap = 64;
    char *out = xmalloc(cap);
    out[0] = 0;
    append_word(&out, &len, &cap, command ? command : "");
    size_t i;
    json_t *a;
    json_array_foreach(args, i, a) {
        if (json_is_string(a))
            append_word(&out, &len, &cap, json_string_value(a));
    }
    return out;
}

/* Length in bytes of the UTF-8 sequence starting with c (1 for a stray byte). */
static size_t utf8_seq_len(unsigned char c)
{
    if (c >= 0xf0 && c < 0xf8)
        return 4;
    if (c >= 0xe0)
        return c < 0xf0 ? 3 : 1;
    if (c >= 0xc0)
        return 2;
    return 1;
}

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; n++) {
        size_t l = utf8_seq_len(*p);
        for (size_t i = 0; i < l && *p; i++)
            p++;
    }
    return n;
}

char *cell_text(const char *s, size_t max)
{
    char *esc = text_escape(s);
    size_t total = utf8_chars(esc);
    if (total <= max)
        return esc;
    size_t keep = max > 3 ? max - 3 : 0;
    char *out = xmalloc(strlen(esc) + 4);
    char *o = out;
    const unsigned char *p = (const unsigned char *)esc;
    for (size_t n = 0; n < keep && *p; n++) {
        size_t l = utf8_seq_len(*p);
        for (size_t i = 0; i < l && *p; i++)
            *o++ = (char)*p++;
    }
    o = stpcpy(o, max >= 3 ? "..." : "");
    *o = 0;
    free(esc);
    return out;
}

struct table {
    size_t ncols, nrows, cap;
    char **cells;     /* row-major; row 0 holds the headers */
};

table *table_new(size_t ncols, const char *const *headers)
{
    table *t = xcalloc(1, sizeof *t);
    t->ncols = ncols;
    table_add(t, headers);
    return t;
}

void table_add(table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
    }
    for (size_t c = 0; c < t->ncols; c++)
        t->cells[t->nrows * t->ncols + c] = text_escape(cells[c] ? cells[c] : "-");
    t->nrows++;
}

void table_print(const table *t, FILE *f)
{
    size_t *w = xcalloc(t->ncols, sizeof *w);
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t l = utf8_chars(t->cells[r * t->ncols + c]);
            if (l > w[c])
                w[c] = l;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * t->ncols + c];
            if (c + 1 == t->ncols) {
                fprintf(f, "%s", cell);   /* no trailing blanks after the last column */
                break;
            }
            fprintf(f, "%s%*s", cell, (int)(w[c] - utf8_chars(cell) + 2), "");
        }
        fputc('\n', f);
    }
    free(w);
}

void table_free(table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

void fmt_end_reason(json_t *job, char *out, size_t outlen)
{
    const char *r = jstr(job, "end_reason");
    json_t *limits = json_object_get(job, "limits");
    int64_t v;
    char b[64];

    out[0] = 0;
    if (!r)
        return;
    if (strcmp(r, "exit") == 0) {
        snprintf(out, outlen, "exited");
    } else if (strcmp(r, "signal") == 0) {
        const char *name = jstr(job, "signal_name");
        if (!name && jint(job, "signal", &v)) {
            fmt_signal((int)v, b, sizeof b);
            name = b;
        }
        snprintf(out, outlen, "killed by signal %s", name ? name : "(unknown)");
    } else if (strcmp(r, "oom_killed") == 0) {
        if (jint(limits, "max_memory_mb", &v) && v > 0) {
            fmt_mb((uint64_t)v, b, sizeof b);
            snprintf(out, outlen, "killed: out of memory (memory limit %s)", b);
        } else {
            snprintf(out, outlen, "killed: out of memory");
        }
    } else if (strcmp(r, "time_limit") == 0) {
        if (jint(limits, "max_runtime_s", &v) && v > 0) {
            fmt_seconds((uint64_t)v, b, sizeof b);
            snprintf(out, outlen, "stopped: time limit %s reached", b);
        } else {
            snprintf(out, outlen, "stopped: time limit reached");
        }
    } else if (strcmp(r, "stopped") == 0) {
        if (jint(job, "stopped_by", &v))
            snprintf(out, outlen, "stopped by uid %lld", (long long)v);
        else
            snprintf(out, outlen, "stopped");
    } else if (strcmp(r, "killed") == 0) {
        if (jint(job, "stopped_by", &v))
            snprintf(out, outlen, "killed by uid %lld (SIGKILL to every process: rnx job kill)", (long long)v);
        else
            snprintf(out, outlen, "killed (SIGKILL to every process: rnx job kill)");
    } else if (strcmp(r, "canceled") == 0) {
        snprintf(out, outlen, "canceled");
    } else if (strcmp(r, "dependency") == 0) {
        /* which dependency could never hold, and how it ended */
        const char *err = jstr(job, "error");
        snprintf(out, outlen, "dependency%s%s", err ? ": " : "", err ? err : "");
    } else if (strcmp(r, "start_failed") == 0) {
        const char *err = jstr(job, "error");
        snprintf(out, outlen, "failed to start%s%s", err ? ": " : "", err ? err : "");
    } else if (strcmp(r, "lost") == 0) {
        /* joblet's words say how it was lost and where to look (the shim's log) */
        const char *err = jstr(job, "error");
        snprintf(out, outlen, "lost%s%s", err ? ": " : "", err ? err : "");
    } else if (strcmp(r, "gpu_error") == 0) {
        /* which GPU, the XID and what joblet's XID policy did, or the admin's command and who */
        json_t *f = json_object_get(job, "gpu_fault");
        const char *act = jstr(f, "action"), *meaning = jstr(f, "meaning"), *err = jstr(job, "error");
        int64_t gpu, xid, by;
        if (!jint(f, "gpu", &gpu) || !act) {
            snprintf(out, outlen, "failed: GPU error%s%s", err ? ": " : "", err ? err : "");
        } else if (jint(f, "xid", &xid)) {
            snprintf(out, outlen, "failed: GPU %lld XID %lld (%s; XID policy: %s)", (long long)gpu, (long long)xid,
                     meaning ? meaning : "no known meaning", act);
        } else {
            const char *what = !strncmp(act, "offline", 7) ? "went offline" : !strncmp(act, "drain", 5) ? "was drained"
                                                                                                        : act;
            if (jint(f, "by_uid", &by))
                snprintf(out, outlen, "failed: GPU %lld %s (admin uid %lld: rnx gpu %s)", (long long)gpu, what,
                         (long long)by, act);
            else
                snprintf(out, outlen, "failed: GPU %lld %s (rnx gpu %s)", (long long)gpu, what, act);
        }
    } else {
        snprintf(out, outlen, "%s", r);   /* a reason newer than this client */
    }
}

bool job_elapsed_ms(json_t *job, int64_t *ms)
{
    int64_t start, end;
    if (parse_ms(jstr(job, "started_at"), &start) < 0)
        return false;
    if (parse_ms(jstr(job, "ended_at"), &end) < 0)
        end = now_ms();
    *ms = end - start;
    return true;
}

/* Prints "Key: " as the GPU guide's status sample has its lines ("GPUs: [0, 1] (2 GPUs
 * allocated)"): one space, no padding, so that lines can be matched and grepped as shown. */
static void key(FILE *f, const char *k)
{
    fprintf(f, "%s ", k);
}

/* Text a user controls (a job's name, command, env, paths, messages that quote them), as
 * visible characters: control characters and bytes that are not UTF-8 become \n, \t, \xNN,
 * and Unicode's controls (C1, U+2028/2029, bidi overrides and isolates) \uNNNN,
 * so nothing of another user's reaches an admin's terminal as an escape sequence or a forged
 * line. */
void print_text(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        uint32_t cp;
        size_t cl = utf8_control_len(p, &cp);
        if (cl) { /* a C1 control, a line separator, a bidi override: as \u009b */
            fprintf(f, "\\u%04x", (unsigned)cp);
            p += cl;
            continue;
        }
        size_t l = utf8_seq_len(*p), ok = l;
        for (size_t i = 1; i < l; i++)
            if ((p[i] & 0xc0) != 0x80)
                ok = 0;
        if (l > 1 && ok) {
            fwrite(p, 1, l, f);
            p += l;
            continue;
        }
        if (*p >= 0x20 && *p < 0x7f)
            fputc(*p, f);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else
            fprintf(f, "\\x%02x", *p);
        p++;
    }
}

void print_text_lines(FILE *f, const char *s)
{
    for (const char *p = s ? s : ""; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *line = strndup(p, n);
        if (!line)
            abort();
        print_text(f, line);
        free(line);
        if (nl)
            fputc('\n', f);
        p += n + (nl ? 1 : 0);
    }
}

char *text_escape(const char *s)
{
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    if (!m)
        abort();
    print_text(m, s);
    if (fclose(m) != 0 || !out)
        abort();
    return out;
}

/* printf's conversions read one by one (flags, width, precision, length), each argument printed
 * by fprintf itself, %s and %c escaped first. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void print_textf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *p = fmt;
    while (*p) {
        if (*p != '%' || p[1] == '%') {
            fputc(*p, f); /* the format's own text, as it is */
            p += *p == '%' ? 2 : 1;
            continue;
        }
        char spec[40];
        size_t n = 0;
        int star[2] = {0, 0}, nstar = 0;
        spec[n++] = *p++;
        while (*p && strchr("-+ #0'", *p) && n < 8)
            spec[n++] = *p++;
        for (int part = 0; part < 2; part++) {
            if (part == 1) {
                if (*p != '.')
                    break;
                spec[n++] = *p++;
            }
            if (*p == '*') {
                star[nstar++] = va_arg(ap, int);
                spec[n++] = *p++;
            } else {
                while (*p >= '0' && *p <= '9' && n < 24)
                    spec[n++] = *p++;
            }
        }
        char len[3] = "";
        size_t ll = 0;
        while (*p && strchr("hlzjtL", *p) && ll < 2)
            len[ll++] = spec[n++] = *p++;
        len[ll] = 0;
        char conv = *p ? *p++ : 0;
        spec[n++] = conv == 'c' ? 's' : conv;
        spec[n] = 0;
#define EMIT(v) (nstar == 2 ? fprintf(f, spec, star[0], star[1], v) : nstar == 1 ? fprintf(f, spec, star[0], v) \
                                                                   : fprintf(f, spec, v))
        switch (conv) {
        case 's':
        case 'c': {
            char one[2] = {0, 0};
            const char *s = conv == 'c' ? (one[0] = (char)va_arg(ap, int), one) : va_arg(ap, const char *);
            char *e = text_escape(s ? s : "(null)");
            EMIT(e);
            free(e);
            break;
        }
        case 'd':
        case 'i':
            if (!strcmp(len, "l"))
                EMIT(va_arg(ap, long));
            else if (!strcmp(len, "ll"))
                EMIT(va_arg(ap, long long));
            else if (!strcmp(len, "z"))
                EMIT(va_arg(ap, ssize_t));
            else if (!strcmp(len, "j"))
                EMIT(va_arg(ap, intmax_t));
            else if (!strcmp(len, "t"))
                EMIT(va_arg(ap, ptrdiff_t));
            else
                EMIT(va_arg(ap, int)); /* also hh, h: promoted */
            break;
        case 'u':
        case 'x':
        case 'X':
        case 'o':
            if (!strcmp(len, "l"))
                EMIT(va_arg(ap, unsigned long));
            else if (!strcmp(len, "ll"))
                EMIT(va_arg(ap, unsigned long long));
            else if (!strcmp(len, "z"))
                EMIT(va_arg(ap, size_t));
            else if (!strcmp(len, "j"))
                EMIT(va_arg(ap, uintmax_t));
            else if (!strcmp(len, "t"))
                EMIT(va_arg(ap, ptrdiff_t));
            else
                EMIT(va_arg(ap, unsigned));
            break;
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G':
        case 'a':
        case 'A':
            if (!strcmp(len, "L"))
                EMIT(va_arg(ap, long double));
            else
                EMIT(va_arg(ap, double));
            break;
        case 'p':
            EMIT(va_arg(ap, void *));
            break;
        default:
            abort(); /* a conversion rnx does not use (%n is never one) */
        }
#undef EMIT
    }
    va_end(ap);
}
#pragma GCC diagnostic pop

static void put_line(FILE *f, const char *s)
{
    print_text(f, s);
    fputc('\n', f);
}

static void print_time_line(FILE *f, json_t *job, const char *k, const char *field)
{
    const char *t = jstr(job, field);
    char b[64];
    if (!t)
        return;
    fmt_local_time(t, b, sizeof b);
    key(f, k);
    print_textf(f, "%s\n", b);
}

/* Appends ", "-separated text to a line being built. */
static void add_item(char *line, size_t len, const char *item)
{
    size_t n = strlen(line);
    snprintf(line + n, len - n, "%s%s", n ? ", " : "", item);
}

/* The job's limits, as the request table names them (jobreq_field.limit), each in its unit. */
static void print_limits(FILE *f, json_t *limits)
{
    char line[512] = "", item[128], b[64];
    for (int i = 0; i < JR_N; i++) {
        const jobreq_field *fl = &jobreq_fields[i];
        json_t *v = fl->limit ? json_object_get(limits, fl->key) : NULL;
        int64_t n = json_is_integer(v) ? json_integer_value(v) : 0;
        if (json_is_string(v) && *json_string_value(v))
            snprintf(b, sizeof b, "%.60s", json_string_value(v));
        else if (n <= 0)
            continue;
        else if (fl->unit == JU_MB)
            fmt_mb((uint64_t)n, b, sizeof b);
        else if (fl->unit == JU_BYTES)
            fmt_bytes((uint64_t)n, b, sizeof b);
        else if (fl->unit == JU_SECONDS)
            fmt_seconds((uint64_t)n, b, sizeof b);
        else
            snprintf(b, sizeof b, "%lld%s", (long long)n, fl->unit == JU_PERCENT ? "%" : "");
        const char *at = strstr(fl->limit, "%s"); /* the value's place in the label */
        int pre = at ? (int)(at - fl->limit) : (int)strlen(fl->limit);
        snprintf(item, sizeof item, "%.*s%s%s", pre, fl->limit, at ? b : "", at ? at + 2 : "");
        add_item(line, sizeof line, item);
    }
    key(f, "Limits:");
    print_textf(f, "%s\n", line[0] ? line : "none");
}

/* /work's bound (jobs.work_quota), which all the owner's jobs share. */
static void print_work(FILE *f, json_t *work)
{
    int64_t size, used;
    if (!jint(work, "quota_bytes", &size) || !jint(work, "used_bytes", &used))
        return;
    char a[32], b[32];
    fmt_bytes((uint64_t)used, a, sizeof a);
    fmt_bytes((uint64_t)size, b, sizeof b);
    key(f, "Work:");
    fprintf(f, "/work %s used of %s (shared by the owner's jobs)\n", a, b);
}

/* One K=V per line, continuation lines indented under the first. */
static void print_env(FILE *f, const char *k, json_t *env, bool secret)
{
    const char *name;
    json_t *v;
    bool first = true;
    if (!json_object_size(env))
        return;
    json_object_foreach(env, name, v) {
        if (first)
            key(f, k);
        else
            print_textf(f, "%-*s ", (int)strlen(k), "");
        first = false;
        /* the server never returns secret values; print the mask whatever came */
        print_text(f, name);
        fputc('=', f);
        put_line(f, secret ? "***" : (json_string_value(v) ? json_string_value(v) : ""));
    }
}

static void print_uploads(FILE *f, json_t *uploads)
{
    size_t i, files = 0;
    uint64_t total = 0;
    json_t *u;
    char b[64];
    if (!json_array_size(uploads))
        return;
    json_array_foreach(uploads, i, u) {
        int64_t size;
        if (jint(u, "size", &size) && size > 0)
            total += (uint64_t)size;
        const char *type = jstr(u, "type");
        if (type && strcmp(type, "file") == 0)
            files++;
    }
    fmt_bytes(total, b, sizeof b);
    key(f, "Uploads:");
    print_textf(f, "%zu entr%s (%zu file%s, %s)\n", json_array_size(uploads),
                json_array_size(uploads) == 1 ? "y" : "ies", files, files == 1 ? "" : "s", b);
}

static void print_usage(FILE *f, json_t *usage)
{
    int64_t cpu = 0, mem = 0, rd = 0, wr = 0;
    char c[32], m[32], r[32], w[32];
    if (!json_is_object(usage))
        return;
    jint(usage, "cpu_ns", &cpu);
    jint(usage, "memory_peak_bytes", &mem);
    jint(usage, "io_read_bytes", &rd);
    jint(usage, "io_write_bytes", &wr);
    if (cpu < 1000000000)
        snprintf(c, sizeof c, "%lldms", (long long)(cpu / 1000000));
    else
        fmt_elapsed_ms(cpu / 1000000, c, sizeof c);
    fmt_bytes((uint64_t)(mem > 0 ? mem : 0), m, sizeof m);
    fmt_bytes((uint64_t)(rd > 0 ? rd : 0), r, sizeof r);
    fmt_bytes((uint64_t)(wr > 0 ? wr : 0), w, sizeof w);
    key(f, "Usage:");
    print_textf(f, "CPU time %s, memory peak %s, I/O read %s, write %s\n", c, m, r, w);
}

/* "0, 1" for the granted GPUs' indexes. */
static void gpu_indexes(FILE *f, json_t *gpus)
{
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        int64_t idx = -1;
        if (json_is_integer(g))
            idx = (int64_t)json_integer_value(g);
        else
            jint(g, "index", &idx);
        if (idx >= 0)
            print_textf(f, "%s%lld", i ? ", " : "", (long long)idx);
        else
            print_textf(f, "%s?", i ? ", " : "");
    }
}

/* "2 requested", "all GPUs requested", "GPUs 3, GPU-… requested", "a 1g.10gb MIG device
 * requested" (NULL for a job that asks for no GPU). */
static bool gpu_asked(json_t *req, char *out, size_t outlen)
{
    int64_t count = 0;
    json_t *ids = json_object_get(req, "ids");
    if (jstr(req, "mig")) {
        snprintf(out, outlen, "a %s MIG device requested", jstr(req, "mig"));
        return true;
    }
    if (json_is_true(json_object_get(req, "all"))) {
        snprintf(out, outlen, "all GPUs requested");
        return true;
    }
    if (json_array_size(ids)) {
        size_t l = (size_t)snprintf(out, outlen, "GPU%s ", json_array_size(ids) == 1 ? "" : "s");
        for (size_t i = 0; i < json_array_size(ids) && l < outlen; i++)
            l += (size_t)snprintf(out + l, outlen - l, "%s%s", i ? ", " : "", json_string_value(json_array_get(ids, i)));
        if (l < outlen)
            snprintf(out + l, outlen - l, " requested");
        return true;
    }
    if (!jint(req, "count", &count) || count <= 0)
        return false;
    snprintf(out, outlen, "%lld requested", (long long)count);
    return true;
}

/* The GPU guide's lines (001 "Job Status Inspection"), first after UUID and Status:
 *   GPUs: [0, 1] (2 GPUs allocated)
 *   GPU Memory: 8192 MB required per GPU
 * GPUs show as allocated only once they are granted; a job holding them that is still
 * being started says so, since its status is not RUNNING yet. */
static void print_gpu_lines(FILE *f, json_t *job)
{
    json_t *gpus = json_object_get(job, "gpus"), *req = json_object_get(job, "gpu_request");
    const char *status = jstr(job, "status");
    bool ended = jstr(job, "ended_at") != NULL;
    char asked[512];
    bool wants = gpu_asked(req, asked, sizeof asked);
    size_t n = json_array_size(gpus);
    key(f, "GPUs:");
    if (n) {
        bool mig = json_is_object(json_object_get(json_array_get(gpus, 0), "mig"));
        fputc('[', f);
        gpu_indexes(f, gpus);
        print_textf(f, "] (%zu %s allocated", n, mig ? (n == 1 ? "MIG device" : "MIG devices") : (n == 1 ? "GPU" : "GPUs"));
        if (ended)
            print_textf(f, "; released when the job ended");
        else if (status && (!strcmp(status, "QUEUED") || !strcmp(status, "PREEMPTED")))
            print_textf(f, "; the job is being started");
        print_textf(f, ")\n");
    } else if (jstr(req, "degraded")) {
        print_textf(f, "none (--gpu-optional: %s)\n", jstr(req, "degraded"));
    } else if (wants) {
        print_textf(f, "none allocated%s (%s)\n", ended ? "" : " yet", asked);
    } else {
        print_textf(f, "none\n");
    }
    int64_t mem = 0;
    if (jint(req, "memory_mb", &mem) && mem > 0) {
        key(f, "GPU Memory:");
        if (json_is_true(json_object_get(req, "share")))
            print_textf(f, "%lld MB reserved on a shared GPU (MPS)\n", (long long)mem);
        else
            print_textf(f, "%lld MB required per GPU\n", (long long)mem);
    }
}

/* Where a GPU job runs: its GPUs' NUMA nodes and the CPUs it is pinned to. */
static void print_locality(FILE *f, json_t *loc)
{
    if (!json_is_object(loc))
        return;
    json_t *nodes = json_object_get(loc, "numa_nodes");
    const char *cpus = jstr(loc, "cpus"), *gpu_cpus = jstr(loc, "gpu_cpus"), *why = jstr(loc, "pinning");
    key(f, "NUMA:");
    if (json_is_array(nodes) && json_array_size(nodes)) {
        print_textf(f, "node%s ", json_array_size(nodes) == 1 ? "" : "s");
        for (size_t i = 0; i < json_array_size(nodes); i++)
            print_textf(f, "%s%lld", i ? ", " : "", (long long)json_integer_value(json_array_get(nodes, i)));
        if (gpu_cpus)
            print_textf(f, " (the GPUs' CPUs %s)", gpu_cpus);
    } else {
        print_textf(f, "unknown");
    }
    fputc('\n', f);
    key(f, "CPUs:");
    if (cpus && why && !strcmp(why, "--cpu-cores"))
        print_textf(f, "%s, as --cpu-cores asked\n", cpus);
    else if (cpus)
        print_textf(f, "%s (pinned to %s%s%s)\n", cpus, why ? why : "its GPUs' NUMA nodes",
                    jstr(loc, "mems") ? "; memory of node " : "", jstr(loc, "mems") ? jstr(loc, "mems") : "");
    else
        print_textf(f, "not pinned: %s\n", why ? why : "unknown");
}

/* The granted devices, one line each. */
static void print_gpu_devices(FILE *f, json_t *gpus)
{
    size_t i;
    json_t *g;
    if (!json_array_size(gpus))
        return;
    print_textf(f, "GPU devices:\n");
    json_array_foreach(gpus, i, g) {
        int64_t idx = -1, mem = -1;
        if (!json_is_object(g))
            continue;
        jint(g, "index", &idx);
        jint(g, "memory_mb", &mem);
        print_textf(f, "  GPU %lld  %s  %s  %lld MiB%s\n", (long long)idx, jstr(g, "uuid") ? jstr(g, "uuid") : "?",
                    jstr(g, "name") ? jstr(g, "name") : "?", (long long)mem,
                    json_is_true(json_object_get(g, "simulated")) ? "  [simulated]" : "");
    }
}

/* What a job asked for, shown while it waits and after. */
static void print_gpu_request(FILE *f, json_t *req)
{
    int64_t count = 0, mem = 0;
    const char *degraded = jstr(req, "degraded");
    if (degraded) {
        key(f, "GPU request:");
        print_textf(f, "none granted (--gpu-optional): %s\n", degraded);
        return;
    }
    if (jstr(req, "mig")) {
        key(f, "GPU request:");
        print_textf(f, "one MIG device %s\n", jstr(req, "mig"));
        return;
    }
    if (!jint(req, "count", &count) || count <= 0)
        return;
    key(f, "GPU request:");
    print_textf(f, "%lld GPU%s", (long long)count, count == 1 ? "" : "s");
    if (json_is_true(json_object_get(req, "all")))
        print_textf(f, " (all)");
    json_t *ids = json_object_get(req, "ids"), *id;
    size_t i;
    json_array_foreach(ids, i, id) print_textf(f, "%s%s", i ? ", " : ": ", json_string_value(id));
    if (json_is_true(json_object_get(req, "share")))
        print_textf(f, " shared (MPS)");
    if (jint(req, "memory_mb", &mem) && mem > 0) {
        char m[32];
        fmt_mb((uint64_t)mem, m, sizeof m);
        print_textf(f, json_is_true(json_object_get(req, "share")) ? ", reserving %s" : " with at least %s each", m);
    }
    if (jstr(req, "type"))
        print_textf(f, " of type %s", jstr(req, "type"));
    if (jstr(req, "cc"))
        print_textf(f, ", compute capability %s or more", jstr(req, "cc"));
    if (json_is_false(json_object_get(req, "cross_numa")))
        print_textf(f, ", on one NUMA node");
    if (jstr(req, "caps"))
        print_textf(f, "; capabilities %s", jstr(req, "caps"));
    fputc('\n', f);
}

/* Command:, Owner uid: and Created: lines, a job's or an array's. */
static void print_command_owner_created(json_t *job, FILE *f)
{
    int64_t v;
    char *cmd = shell_join(jstr(job, "command"), json_object_get(job, "args"));
    key(f, "Command:");
    put_line(f, cmd);
    free(cmd);
    if (jint(job, "owner_uid", &v)) {
        key(f, "Owner uid:");
        print_textf(f, "%lld\n", (long long)v);
    }
    print_time_line(f, job, "Created:", "created_at");
}

/* "2 COMPLETED, 8 RUNNING, 90 QUEUED": an array's tasks by state, in the states' order. */
void print_array_counts(json_t *arr, char *out, size_t len)
{
    static const char *const order[] = {"RUNNING", "STOPPING", "QUEUED", "SCHEDULED", "PENDING", "PREEMPTED",
                                        "HELD", "SUSPENDED", "COMPLETED", "FAILED", "STOPPED", "CANCELED"};
    json_t *counts = json_object_get(arr, "counts");
    size_t l = 0;
    out[0] = 0;
    for (size_t i = 0; i < sizeof order / sizeof *order && l < len; i++) {
        int64_t n;
        if (jint(counts, order[i], &n) && n > 0)
            l += (size_t)snprintf(out + l, len - l, "%s%lld %s", l ? ", " : "", (long long)n, order[i]);
    }
}

/* The jobs it waits for (rnx job run --after; a job's or an array's): each, how it must go, its
 * state now. */
static void print_after(json_t *job, FILE *f)
{
    json_t *after = json_object_get(job, "after");
    if (!json_array_size(after))
        return;
    key(f, "After:");
    size_t i;
    json_t *a;
    bool any = json_is_true(json_object_get(job, "after_any"));
    if (any)
        print_textf(f, "any one of: ");
    json_array_foreach(after, i, a) {
        const char *st = jstr(a, "job_state");
        print_textf(f, "%s%.8s %s%s%s%s", i ? (any ? " or " : ", ") : "", jstr(a, "job") ? jstr(a, "job") : "-",
                    jstr(a, "state") ? jstr(a, "state") : "any", st ? " (" : "", st ? st : "", st ? ")" : "");
    }
    put_line(f, "");
}

/* A job array (rnx job status ARRAY): its task list, its tasks by state, why the next waits. */
static void print_array(json_t *job, FILE *f)
{
    json_t *arr = json_object_get(job, "array");
    char b[1024];
    int64_t v;
    key(f, "UUID:");
    put_line(f, jstr(job, "id") ? jstr(job, "id") : "-");
    key(f, "Array:");
    print_textf(f, "%s", jstr(arr, "ref") ? jstr(arr, "ref") : "-");
    if (jint(arr, "tasks", &v))
        print_textf(f, ": %lld task%s", (long long)v, v == 1 ? "" : "s");
    if (jint(arr, "throttle", &v) && v > 0)
        print_textf(f, ", at most %lld at once", (long long)v);
    if (jint(job, "number", &v))
        print_textf(f, " (SLURM_ARRAY_JOB_ID=%lld)", (long long)v);
    fputc('\n', f);
    key(f, "Status:");
    put_line(f, jstr(job, "status") ? jstr(job, "status") : "-");
    print_array_counts(arr, b, sizeof b);
    key(f, "Tasks:");
    print_textf(f, "%s", *b ? b : "-");
    if (jint(arr, "deleted", &v) && v > 0)
        print_textf(f, "; %lld deleted", (long long)v);
    fputc('\n', f);
    if (jstr(arr, "wait")) {
        key(f, "Waiting:");
        put_line(f, jstr(arr, "wait"));
    }
    print_after(job, f);
    if (jint(arr, "canceled_by", &v)) {
        key(f, "Canceled:");
        print_textf(f, "by uid %lld (tasks not started were canceled)\n", (long long)v);
    }
    key(f, "Name:");
    put_line(f, jstr(job, "name") && *jstr(job, "name") ? jstr(job, "name") : "-");
    print_command_owner_created(job, f);
}

/* The "Array task:" line of a task (its "array" object), made or not. */
static void print_array_task(json_t *ta, FILE *f)
{
    int64_t t = -1, v;
    if (!json_is_object(ta))
        return;
    jint(ta, "task", &t);
    key(f, "Array task:");
    print_textf(f, "%s (task %lld of array %s", jstr(ta, "ref") ? jstr(ta, "ref") : "-", (long long)t,
                jstr(ta, "id") ? jstr(ta, "id") : "-");
    if (jint(ta, "number", &v))
        print_textf(f, ", SLURM_ARRAY_JOB_ID=%lld", (long long)v);
    put_line(f, ")");
}

/* A task not made yet (rnx job status ID_7 before task 7 started: "kind": "task"): no job yet,
 * so no name, command, GPUs or limits of its own to show (as a job's lines they read "none"):
 * it is made with its array's request. */
static void print_task_unmade(json_t *task, FILE *f)
{
    json_t *ta = json_object_get(task, "array");
    key(f, "UUID:");
    put_line(f, jstr(task, "id") ? jstr(task, "id") : "-");
    key(f, "Status:");
    put_line(f, jstr(task, "status") ? jstr(task, "status") : "-");
    print_array_task(ta, f);
    if (!jstr(task, "status") || strcmp(jstr(task, "status"), "CANCELED")) {
        key(f, "Request:"); /* (one canceled before it was made never will be) */
        print_textf(f, "its array's, when it is made (rnx job status %.8s)\n", jstr(ta, "id") ? jstr(ta, "id") : "-");
    }
    if (jstr(task, "wait_reason")) {
        key(f, "Waiting:");
        put_line(f, jstr(task, "wait_reason"));
    }
}

/* Several tasks (rnx job status ID_[3-5]: {"array", "tasks", "truncated"}): each as one task is
 * shown, a blank line between them, as scontrol show job prints each job of an array. */
static void print_tasks(json_t *answer, FILE *f)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(answer, "tasks"), i, t) {
        if (i)
            fputc('\n', f);
        print_job(t, f);
    }
    if (json_is_true(json_object_get(answer, "truncated")))
        fputs("rnx: joblet sent only some of the tasks named; name fewer (or see rnx job status --json)\n", stderr);
}

void print_job(json_t *job, FILE *f)
{
    if (jstr(job, "kind") && !strcmp(jstr(job, "kind"), "array")) {
        print_array(job, f);
        return;
    }
    if (json_is_array(json_object_get(job, "tasks"))) {
        print_tasks(job, f);
        return;
    }
    if (jstr(job, "kind") && !strcmp(jstr(job, "kind"), "task")) {
        print_task_unmade(job, f);
        return;
    }
    const char *status = jstr(job, "status");
    char b[1024];
    int64_t v;

    key(f, "UUID:");
    put_line(f, jstr(job, "id") ? jstr(job, "id") : "-");
    key(f, "Status:");
    put_line(f, status ? status : "-");
    print_gpu_lines(f, job);
    print_locality(f, json_object_get(job, "gpu_locality"));
    key(f, "Name:");
    put_line(f, jstr(job, "name") && *jstr(job, "name") ? jstr(job, "name") : "-");
    if (jint(job, "number", &v)) {
        /* what Slurm calls the job id, and what every rnx command takes as well as the id; a
         * Slurm task's SLURM_JOB_ID is Slurm's own (its Slurm: line), not this number */
        key(f, "Number:");
        json_t *tsl = json_object_get(job, "slurm");
        if (json_is_object(tsl))
            print_textf(f, "%lld (joblet's; the task's SLURM_JOB_ID is Slurm's, %lld)\n", (long long)v,
                        (long long)json_integer_value(json_object_get(tsl, "job")));
        else
            print_textf(f, "%lld (SLURM_JOB_ID)\n", (long long)v);
    }
    json_t *wf = json_object_get(job, "workflow");
    if (json_is_object(wf)) {
        key(f, "Workflow:");
        print_text(f, jstr(wf, "name") ? jstr(wf, "name") : "-");
        print_textf(f, " (%s), job ", jstr(wf, "id") ? jstr(wf, "id") : "-");
        put_line(f, jstr(wf, "job") ? jstr(wf, "job") : "-");
    }
    print_array_task(json_object_get(job, "array"), f);
    print_after(job, f);
    json_t *sl = json_object_get(job, "slurm");
    if (json_is_object(sl)) {
        /* a Slurm task run by joblet's SPANK plugin (docs/slurm.md) */
        key(f, "Slurm:");
        print_textf(f, "task %s (job, step, task on this node) of uid %lld\n", jstr(sl, "id") ? jstr(sl, "id") : "-",
                    (long long)json_integer_value(json_object_get(sl, "uid")));
    }
    print_command_owner_created(job, f);
    print_time_line(f, job, "Scheduled:", "scheduled_at");
    print_time_line(f, job, "Started:", "started_at");
    print_time_line(f, job, "Ended:", "ended_at");
    if (job_elapsed_ms(job, &v)) {
        fmt_elapsed_ms(v, b, sizeof b);
        key(f, "Duration:");
        print_textf(f, "%s%s\n", b, jstr(job, "ended_at") ? "" : " (so far)");
    }
    if (jint(job, "suspended_ms", &v) && v > 0) {
        fmt_elapsed_ms(v, b, sizeof b);
        key(f, "Suspended:");
        print_textf(f, "%s in all%s (not counted against its time limit)\n", b,
                    jstr(job, "status") && !strcmp(jstr(job, "status"), "SUSPENDED") ? ", so far" : "");
    }
    if (json_is_true(json_object_get(job, "preemptible")) || (jint(job, "preemptions", &v) && v > 0)) {
        key(f, "Preemption:");
        if (!jint(job, "preemptions", &v))
            v = 0;
        print_textf(f, "%s; preempted %lld time%s\n",
                    json_is_true(json_object_get(job, "preemptible")) ? "preemptible" : "not preemptible", (long long)v,
                    v == 1 ? "" : "s");
    }
    if (jint(job, "queue_position", &v)) {
        key(f, "Queue position:");
        print_textf(f, "%lld\n", (long long)v);
    }
    if (jstr(job, "wait_reason")) {
        key(f, "Waiting:");
        put_line(f, jstr(job, "wait_reason"));
    }
    if (jint(job, "pid", &v)) {
        key(f, "PID:");
        print_textf(f, "%lld\n", (long long)v);
    }
    if (jint(job, "exit_code", &v)) {
        key(f, "Exit code:");
        print_textf(f, "%lld\n", (long long)v);
    }
    if (jint(job, "signal", &v)) {
        const char *name = jstr(job, "signal_name");
        if (!name) {
            fmt_signal((int)v, b, sizeof b);
            name = b;
        }
        key(f, "Signal:");
        print_textf(f, "%s (%lld)\n", name, (long long)v);
    }
    fmt_end_reason(job, b, sizeof b);
    if (b[0]) {
        key(f, "End reason:");
        put_line(f, b);
    }
    print_limits(f, json_object_get(job, "limits"));
    print_work(f, json_object_get(job, "work"));
    print_env(f, "Env:", json_object_get(job, "env"), false);
    print_env(f, "Secret env:", json_object_get(job, "secret_env"), true);
    if (json_is_true(json_object_get(job, "slurm_env"))) {
        key(f, "Slurm env:");
        if (jint(job, "number", &v))
            print_textf(f, "SLURM_JOB_ID=%lld, ", (long long)v);
        else
            print_text(f, "SLURM_JOB_ID, ");
        put_line(f, "SLURM_JOB_NAME and the rest, as sbatch gives them (--slurm-env)");
    }
    if (jstr(job, "network")) {
        key(f, "Network:");
        put_line(f, jstr(job, "network"));
    }
    if (jstr(job, "isolation") && strcmp(jstr(job, "isolation"), "native")) {
        key(f, "Isolation:");
        put_line(f, !strcmp(jstr(job, "isolation"), "gvisor") ? "gvisor (gVisor's runsc; docs/sandbox.md)"
                                                              : jstr(job, "isolation"));
    }
    if (jstr(job, "workdir")) {
        key(f, "Workdir:");
        put_line(f, jstr(job, "workdir"));
    }
    if (jstr(job, "runtime")) {
        key(f, "Runtime:");
        put_line(f, jstr(job, "runtime"));
    }
    json_t *vols = json_object_get(job, "volumes");
    if (json_array_size(vols)) {
        key(f, "Volumes:");
        for (size_t i = 0; i < json_array_size(vols); i++) {
            char name[80];
            bool ro = false;
            const char *item = json_string_value(json_array_get(vols, i));
            if (item && jobreq_volume_parse(item, name, sizeof name, &ro) == 0)
                print_textf(f, "%s/volumes/%s%s", i ? ", " : "", name,
                            ro ? " (read-only)" : ""); /* names are checked */
        }
        fputc('\n', f);
    }
    print_uploads(f, json_object_get(job, "uploads"));
    print_usage(f, json_object_get(job, "usage"));
    print_gpu_request(f, json_object_get(job, "gpu_request"));
    print_gpu_devices(f, json_object_get(job, "gpus"));
}

void print_json(json_t *v)
{
    if (v)
        json_dumpf(v, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY);
    else
        fputs("{}", stdout);
    putchar('\n');
}

/* The names of the uids already looked up, found or not: a listing of 100,000 jobs of 50 users
 * asked getpwuid 100,000 times, each a walk of /etc/passwd and systemd's userdb (30 syscalls,
 * 12 of the 17 s the listing took). FMT_OWNER_CACHE uids kept, the oldest replaced. */
#define FMT_OWNER_CACHE 256
static struct { uint32_t uid; bool used; char name[64]; } owner_cache[FMT_OWNER_CACHE];
static size_t owner_cache_next;

void fmt_owner(json_t *o, char *out, size_t outlen)
{
    int64_t uid;
    snprintf(out, outlen, "-");
    if (!jint(o, "owner_uid", &uid) || uid < 0 || uid > UINT32_MAX)
        return;
    for (size_t i = 0; i < FMT_OWNER_CACHE && owner_cache[i].used; i++)
        if (owner_cache[i].uid == (uint32_t)uid) {
            snprintf(out, outlen, "%s", owner_cache[i].name);
            return;
        }
    const struct passwd *pw = getpwuid((uid_t)uid);
    if (pw && pw->pw_name && *pw->pw_name)
        snprintf(out, outlen, "%s", pw->pw_name);
    else
        snprintf(out, outlen, "%lld", (long long)uid);
    if (strlen(out) >= sizeof owner_cache[0].name)
        return; /* a name too long to keep: looked up each time */
    size_t k = owner_cache_next++ % FMT_OWNER_CACHE;
    owner_cache[k].uid = (uint32_t)uid;
    owner_cache[k].used = true;
    snprintf(owner_cache[k].name, sizeof owner_cache[k].name, "%s", out);
}
