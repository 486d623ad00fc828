/* Job arrays' task lists (arrayspec.h). */
#include "arrayspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ARRAYSPEC_MAX_ID as text, for the sentences below: the one bound, said where it is broken */
#define ARRAYSPEC_STR_(x) #x
#define ARRAYSPEC_STR(x) ARRAYSPEC_STR_(x)
#define MAX_ID ARRAYSPEC_STR(ARRAYSPEC_MAX_ID)
#define ACCEPTS "give ids from 0 to " MAX_ID " as Slurm's --array does: 0-99, 1,3,7, 0-15:4 (every 4th)"
/* what %N and an array's throttle on its own (arrayspec_throttle_check) take, besides 0 there */
#define THROTTLE_RANGE "from 1 to " MAX_ID

/* A decimal id at *p: 0 and *p past it, or -1 (none, or above ARRAYSPEC_MAX_ID). */
static int read_id(const char **p, uint32_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > ARRAYSPEC_MAX_ID)
            return -1;
    }
    *p = s;
    *out = (uint32_t)v;
    return 0;
}

static int cmp_lo(const void *a, const void *b)
{
    const arrayspec_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static uint64_t range_count(const arrayspec_range *r) { return (uint64_t)(r->hi - r->lo) / r->step + 1; }

/* Greatest common divisor and Bezout coefficient: g = gcd(a, b), a*x = g (mod b). */
static int64_t egcd(int64_t a, int64_t b, int64_t *x)
{
    int64_t x0 = 1, x1 = 0;
    while (b) {
        int64_t q = a / b, t = a % b;
        a = b;
        b = t;
        t = x0 - q * x1;
        x0 = x1;
        x1 = t;
    }
    *x = x0;
    return a;
}

/* The first id two progressions share, lo1 + k*s1 (up to hi1) and lo2 + k*s2 (up to hi2), and
 * *lcm the distance between two they share; -1 when none. Ids are at most 4,000,000, so every
 * product below fits in 64 bits. */
static int64_t first_common(int64_t lo1, int64_t s1, int64_t hi1, int64_t lo2, int64_t s2, int64_t hi2, int64_t *lcm)
{
    int64_t a = lo1 > lo2 ? lo1 : lo2, b = hi1 < hi2 ? hi1 : hi2;
    if (a > b)
        return -1;
    int64_t inv, g = egcd(s1, s2, &inv);
    int64_t d = lo2 - lo1;
    if (d % g)
        return -1;
    int64_t m = s2 / g, l = s1 * m;   /* the lcm */
    /* x = lo1 + s1*t with s1*t = d (mod s2): t = (d/g) * inv (mod m) */
    int64_t t = ((d / g) % m * (inv % m)) % m;
    if (t < 0)
        t += m;
    int64_t x0 = lo1 + s1 * t;        /* one common id; every other differs by a multiple of l */
    int64_t first = x0 >= a ? x0 - (x0 - a) / l * l : x0 + (a - x0 + l - 1) / l * l;
    *lcm = l;
    return first > b ? -1 : first;
}

/* How many ids two progressions share. */
static uint64_t common(int64_t lo1, int64_t s1, int64_t hi1, int64_t lo2, int64_t s2, int64_t hi2)
{
    int64_t l, first = first_common(lo1, s1, hi1, lo2, s2, hi2, &l);
    return first < 0 ? 0 : (uint64_t)((hi1 < hi2 ? hi1 : hi2) - first) / (uint64_t)l + 1;
}

const arrayspec arrayspec_empty = {.n = 0};

size_t arrayspec_size(size_t n) { return offsetof(arrayspec, r) + n * sizeof(arrayspec_range); }

arrayspec *arrayspec_dup(const arrayspec *a)
{
    arrayspec *d = malloc(arrayspec_size(a->n));
    if (d)
        memcpy(d, a, arrayspec_size(a->n));
    return d;
}

void arrayspec_copy(arrayspec *out, const arrayspec *a) { memcpy(out, a, arrayspec_size(a->n)); }

int64_t arrayspec_first_common(int64_t lo1, int64_t s1, int64_t hi1, int64_t lo2, int64_t s2, int64_t hi2)
{
    int64_t l;
    return first_common(lo1, s1, hi1, lo2, s2, hi2, &l);
}

int arrayspec_parse(const char *s, const char *field, bool throttle_ok, arrayspec *out, jerr *e)
{
    memset(out, 0, sizeof *out);
    const char *p = s ? s : "";
    if (!*p)
        return jerr_field(e, field, "%s: an empty list of tasks; " ACCEPTS, field);
    for (;;) {
        arrayspec_range r = {.step = 1};
        if (read_id(&p, &r.lo) < 0) {
            /* where: an item left empty ("1,", "1,,3", ",1", "%2") said so; it read "(at '')" */
            char at[64];
            if (!*p)
                snprintf(at, sizeof at, "an empty item at its end");
            else if (*p == ',' || *p == '%')
                snprintf(at, sizeof at, "an empty item before '%.20s'", p);
            else
                snprintf(at, sizeof at, "at '%.20s'", p);
            return jerr_field(e, field, "%s: '%s' is not a list of task ids (%s); " ACCEPTS "%s", field, s, at,
                              throttle_ok ? ", %N to run at most N at once" : "");
        }
        r.hi = r.lo;
        if (*p == '-') {
            p++;
            if (read_id(&p, &r.hi) < 0 || r.hi < r.lo)
                return jerr_field(e, field, "%s: '%s': a range runs from a lower id to a higher one, both at most "
                                  MAX_ID, field, s);
            if (*p == ':') {
                p++;
                if (read_id(&p, &r.step) < 0 || r.step == 0)
                    return jerr_field(e, field, "%s: '%s': a range's step is a whole number from 1 (0-15:4 is "
                                      "0,4,8,12)", field, s);
            }
        }
        r.hi = r.lo + (r.hi - r.lo) / r.step * r.step;
        if (r.hi == r.lo)
            r.step = 1;
        if (out->n == ARRAYSPEC_MAX_RANGES)
            return jerr_field(e, field, "%s: more than %d ranges; name tasks in fewer ranges (0-99 rather than "
                              "0,1,...,99)", field, ARRAYSPEC_MAX_RANGES);
        out->r[out->n++] = r;
        out->count += range_count(&r);
        if (*p == ',') {
            p++;
            continue;
        }
        break;
    }
    if (*p == '%' && throttle_ok) {
        p++;
        uint32_t n;
        if (read_id(&p, &n) < 0 || n == 0)
            return jerr_field(e, field, "%s: '%s': %%N runs at most N tasks at once; N is a whole number "
                              THROTTLE_RANGE, field, s);
        out->throttle = n;
    }
    if (*p)
        return jerr_field(e, field, "%s: '%s' is not a list of task ids (at '%.20s'); " ACCEPTS "%s", field, s, p,
                          throttle_ok ? ", %N to run at most N at once" : "");
    /* a task named twice: compared in order of their first ids, each range against those
     * that begin before its end */
    arrayspec_range sorted[ARRAYSPEC_MAX_RANGES];
    memcpy(sorted, out->r, out->n * sizeof *sorted);
    qsort(sorted, out->n, sizeof *sorted, cmp_lo);
    out->min = sorted[0].lo;
    out->max = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (out->r[i].hi > out->max)
            out->max = out->r[i].hi;
        for (size_t k = i + 1; k < out->n && sorted[k].lo <= sorted[i].hi; k++)
            if (common(sorted[i].lo, sorted[i].step, sorted[i].hi, sorted[k].lo, sorted[k].step, sorted[k].hi))
                return jerr_field(e, field, "%s: '%s' names a task twice (ranges from %u and from %u overlap); name "
                                  "each task once", field, s, sorted[i].lo, sorted[k].lo);
    }
    return 0;
}

uint32_t arrayspec_task(const arrayspec *a, uint64_t k)
{
    for (size_t i = 0; i < a->n; i++) {
        uint64_t c = range_count(&a->r[i]);
        if (k < c)
            return a->r[i].lo + (uint32_t)k * a->r[i].step;
        k -= c;
    }
    return UINT32_MAX;
}

int64_t arrayspec_index(const arrayspec *a, uint32_t t)
{
    uint64_t k = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (t >= a->r[i].lo && t <= a->r[i].hi && (t - a->r[i].lo) % a->r[i].step == 0)
            return (int64_t)(k + (t - a->r[i].lo) / a->r[i].step);
        k += range_count(&a->r[i]);
    }
    return -1;
}

const arrayspec_range *arrayspec_range_of(const arrayspec *a, uint32_t t)
{
    for (size_t i = 0; i < a->n; i++)
        if (t >= a->r[i].lo && t <= a->r[i].hi && (t - a->r[i].lo) % a->r[i].step == 0)
            return &a->r[i];
    return NULL;
}

bool arrayspec_has(const arrayspec *a, uint32_t t) { return arrayspec_range_of(a, t) != NULL; }

uint64_t arrayspec_count_from(const arrayspec *a, uint64_t k, const arrayspec *sub)
{
    uint64_t n = 0;
    for (size_t i = 0; i < a->n; i++) {
        arrayspec_range r = a->r[i];
        uint64_t c = range_count(&r);
        if (k >= c) {
            k -= c;
            continue;
        }
        r.lo += (uint32_t)k * r.step;   /* the places before k are not counted */
        k = 0;
        for (size_t s = 0; s < sub->n; s++)
            n += common(r.lo, r.step, r.hi, sub->r[s].lo, sub->r[s].step, sub->r[s].hi);
    }
    return n;
}

void arrayspec_format(const arrayspec *a, bool with_throttle, char *out, size_t len)
{
    size_t l = 0;
    out[0] = 0;
    for (size_t i = 0; i < a->n && l < len; i++) {
        const arrayspec_range *r = &a->r[i];
        if (r->lo == r->hi)
            l += (size_t)snprintf(out + l, len - l, "%s%u", i ? "," : "", r->lo);
        else if (r->step == 1)
            l += (size_t)snprintf(out + l, len - l, "%s%u-%u", i ? "," : "", r->lo, r->hi);
        else
            l += (size_t)snprintf(out + l, len - l, "%s%u-%u:%u", i ? "," : "", r->lo, r->hi, r->step);
    }
    if (with_throttle && a->throttle && l < len)
        snprintf(out + l, len - l, "%%%u", a->throttle);
}

void arrayspec_format_cut(const arrayspec *a, char *out, size_t len)
{
    char all[ARRAYSPEC_TEXT_MAX + 16];
    arrayspec_format(a, false, all, sizeof all);
    size_t l = strlen(all);
    if (l < len) {
        memcpy(out, all, l + 1);
        return;
    }
    /* the items that fit with ",..." after them (none: "...") */
    size_t cut = len > 5 ? len - 5 : 0;
    while (cut > 0 && all[cut] != ',')
        cut--;
    snprintf(out, len, "%.*s%s", (int)cut, all, cut ? ",..." : "...");
}

int arrayspec_throttle_check(int64_t n, bool number, const char *label, const char *text, jerr *e)
{
    if (number && n >= 0 && n <= ARRAYSPEC_MAX_ID)
        return 0;
    return jerr_field(e, label, "%s: %s%.40s%smust be a whole number of tasks to run at once, " THROTTLE_RANGE
                                ", or 0 for no limit", label, text ? "'" : "",
                      text ? text : "", text ? "' " : "");
}

int arrayspec_split_ref(const char *ref, char *base, size_t blen, arrayspec *tasks, jerr *e)
{
    const char *us = strrchr(ref, '_');
    if (!us || us == ref || !us[1])
        return 0;
    const char *t = us + 1;
    char list[ARRAYSPEC_TEXT_MAX + 1];
    size_t tl = strlen(t);
    if (t[0] == '[') {
        if (tl < 3 || t[tl - 1] != ']')
            return 0;
        if (tl - 2 >= sizeof list) {
            /* (a list's characters only between the brackets: a task list, too long) */
            if (strspn(t + 1, "0123456789,-:") != tl - 2 || (size_t)(us - ref) >= blen)
                return 0;
            memcpy(base, ref, (size_t)(us - ref));
            base[us - ref] = 0;
            return jerr_field(e, "tasks", "tasks: the list of tasks named is %zu bytes; at most %d are read (as many "
                              "as %d ranges take): name them in ranges, 0-99 rather than 0,1,...,99", tl - 2,
                              ARRAYSPEC_TEXT_MAX, ARRAYSPEC_MAX_RANGES);
        }
        memcpy(list, t + 1, tl - 2);
        list[tl - 2] = 0;
    } else {
        /* ID_7: only digits; a name with an underscore ("my_job") stays a plain reference */
        if (strspn(t, "0123456789") != tl || tl >= sizeof list)
            return 0;
        memcpy(list, t, tl + 1);
    }
    if ((size_t)(us - ref) >= blen || list[strspn(list, "0123456789,-:")])
        return 0; /* not a task list (its messages quote it, so nothing else is parsed as one) */
    memcpy(base, ref, (size_t)(us - ref));
    base[us - ref] = 0;
    return arrayspec_parse(list, "tasks", false, tasks, e) < 0 ? -1 : 1;
}
