/* gres.conf's GPU files for a node (gresconf.h). */
#include "gresconf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static void free_all(char **out, int n)
{
    for (int i = 0; i < n; i++) {
        free(out[i]);
        out[i] = NULL;
    }
}

/* One comma-free term: "pre[a-b,c]post" or a plain name: out[n..] filled, the new count; -1
 * (what it added freed again) when it is not one or there are more than max. */
static int expand_term_(const char *t, size_t len, char **out, int *n, int max)
{
    const char *lb = memchr(t, '[', len);
    if (!lb) {
        if (*n >= max || !len)
            return -1;
        return (out[*n] = dup_n(t, len)) ? ++*n : -1;
    }
    const char *rb = memchr(lb, ']', len - (size_t)(lb - t));
    if (!rb)
        return -1;
    const char *post = rb + 1;
    size_t postlen = len - (size_t)(post - t);
    for (const char *p = lb + 1; p < rb;) {
        const char *end = memchr(p, ',', (size_t)(rb - p));
        if (!end)
            end = rb;
        char *dash = memchr(p, '-', (size_t)(end - p));
        const char *hi_s = dash ? dash + 1 : p;
        int width = (int)((dash ? dash : end) - p);
        for (const char *q = p; q < end; q++)
            if (!isdigit((unsigned char)*q) && q != dash)
                return -1;
        if (width <= 0 || hi_s >= end + (dash ? 0 : 1))
            return -1;
        long lo = strtol(p, NULL, 10), hi = strtol(hi_s, NULL, 10);
        if (hi < lo || hi - lo > 4096)
            return -1;
        for (long v = lo; v <= hi; v++) {
            if (*n >= max)
                return -1;
            char buf[512];
            int w = snprintf(buf, sizeof buf, "%.*s%0*ld%.*s", (int)(lb - t), t, width, v, (int)postlen, post);
            if (w < 0 || (size_t)w >= sizeof buf || !(out[*n] = strdup(buf)))
                return -1;
            ++*n;
        }
        p = end + 1;
    }
    return *n;
}

static int expand_term(const char *t, size_t len, char **out, int n, int max)
{
    int had = n;
    if (expand_term_(t, len, out, &n, max) < 0) {
        free_all(out + had, n - had);
        return -1;
    }
    return n;
}

int gresconf_expand(const char *expr, char **out, int max)
{
    int n = 0, depth = 0;
    const char *start = expr;
    for (const char *p = expr;; p++) {
        if (*p == '[')
            depth++;
        else if (*p == ']')
            depth--;
        if ((*p == ',' && depth == 0) || !*p) {
            int k = expand_term(start, (size_t)(p - start), out, n, max);
            if (k < 0) {
                free_all(out, n);
                return -1;
            }
            n = k;
            if (!*p)
                break;
            start = p + 1;
        }
    }
    return n;
}

/* The value of key= in a line's words (case-insensitive key), copied to out; false when absent. */
static bool value_of(const char *line, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = line; *p;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        const char *end = p;
        while (*end && !isspace((unsigned char)*end))
            end++;
        if ((size_t)(end - p) > kl && p[kl] == '=' && !strncasecmp(p, key, kl)) {
            snprintf(out, len, "%.*s", (int)(end - p - (long)kl - 1), p + kl + 1);
            return true;
        }
        p = end;
    }
    return false;
}

int gresconf_gpu_files(const char *text, const char *node, char **out, char *why, size_t whylen)
{
    int n = 0, lineno = 0;
    for (const char *p = text; p && *p; lineno++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        p = nl ? nl + 1 : NULL;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char name[64], file[2048], nodes[2048];
        if (!value_of(line, "Name", name, sizeof name) || strcasecmp(name, "gpu") ||
            !value_of(line, "File", file, sizeof file))
            continue;
        if (value_of(line, "NodeName", nodes, sizeof nodes)) {
            char *names[1024];
            int k = gresconf_expand(nodes, names, 1024);
            if (k < 0) {
                free_all(out, n);
                snprintf(why, whylen, "gres.conf line %d: cannot read NodeName=%s", lineno + 1, nodes);
                return -1;
            }
            bool mine = false;
            for (int i = 0; i < k; i++)
                mine = mine || (node && !strcmp(names[i], node));
            free_all(names, k);
            if (!mine)
                continue;
        }
        int k = gresconf_expand(file, out + n, GRESCONF_MAX - n);
        if (k < 0) {
            free_all(out, n);
            snprintf(why, whylen, "gres.conf line %d: cannot read File=%s (or more than %d GPUs)", lineno + 1, file,
                     GRESCONF_MAX);
            return -1;
        }
        n += k;
    }
    return n;
}

int gresconf_pick(char *const *files, int nfiles, const char *positions, const char **out, char *why, size_t whylen)
{
    char *idx[GRESCONF_MAX];
    char expr[1024];
    /* "0,2-3" reads as the bracket list of an empty name */
    snprintf(expr, sizeof expr, "[%s]", positions);
    int k = *positions ? gresconf_expand(expr, idx, GRESCONF_MAX) : 0;
    if (k < 0) {
        snprintf(why, whylen, "cannot read the GPU positions '%s'", positions);
        return -1;
    }
    int n = 0;
    for (int i = 0; i < k; i++) {
        long v = strtol(idx[i], NULL, 10);
        if (v < 0 || v >= nfiles) {
            snprintf(why, whylen, "GPU position %ld is past the %d GPU files gres.conf lists for this node", v, nfiles);
            free_all(idx, k);
            return -1;
        }
        out[n++] = files[v];
    }
    free_all(idx, k);
    return n;
}
