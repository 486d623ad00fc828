/* Job arrays (arrays.h). */
#include "arrays.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/idindex.h"
#include "../common/idref.h"
#include "../common/log.h"
#include "../common/marklist.h"
#include "../common/util.h"
#include "qclock.h"
#include "job_row.h"
#include "workfs.h"
#include "state.h"

/* The arrays by id and name (common/idindex.h). */
static idindex by_ref;

/* Every array, in submission order (seq): core.arrays. */

jarray **arrays_all(size_t *n)
{
    *n = core.narrays;
    return core.arrays;
}

bool arrays_visible(const jarray *a, const caller *who) { return authz_may_on(who, AUTHZ_OTHERS_JOBS, a->owner_uid); }

/* Into the open transaction; a failed commit has every array written again (state.c). */
static int save(const jarray *a, jerr *e)
{
    array_row_buf b;
    state_wrote_arrays();
    return db_array_save(core.db, array_row(a, &b), e);
}

/* save() where nothing waits for the answer: a failure is in the log (the row is written again
 * with the turn's others by a later commit: core/state.c). */
static void save_logged(const jarray *a)
{
    jerr e = {0};
    if (save(a, &e) < 0)
        log_err("array %s: %s", a->id, e.msg);
}

/* ---- the counts per owner (arrays_unmade, arrays_jobless) ---- */

static struct aowner {
    uid_t uid;
    uint64_t unmade, jobless;
    uint64_t unmade_bytes;      /* each task not made yet counts its array's request (jobreq_bytes) */
} *owners;                      /* by uid */
static size_t nowners, owners_cap;

static struct aowner *owner_of(uid_t uid)
{
    size_t lo = 0, hi = nowners;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (owners[mid].uid < uid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < nowners && owners[lo].uid == uid)
        return &owners[lo];
    if (nowners == owners_cap) {
        owners_cap = owners_cap ? owners_cap * 2 : 16;
        owners = xrealloc(owners, owners_cap * sizeof *owners);
    }
    memmove(&owners[lo + 1], &owners[lo], (nowners - lo) * sizeof *owners);
    nowners++;
    owners[lo] = (struct aowner){.uid = uid};
    return &owners[lo];
}

/* Of its tasks at the cursor and after it: those canceled before they were made, and those made
 * ahead of the cursor. O(ranges x their ranges), both bounded. */
static uint64_t skip_left(const jarray *a)
{
    return arrays_skip(a)->n ? arrayspec_count_from(a->spec, a->made, arrays_skip(a)) : 0;
}

static uint64_t ahead_left(const jarray *a)
{
    return arrays_ahead(a)->n ? arrayspec_count_from(a->spec, a->made, arrays_ahead(a)) : 0;
}

/* Its tasks not made yet and not canceled. */
static uint64_t unmade_of(const jarray *a)
{
    if (arrays_canceled(a) || a->made >= a->spec->count)
        return 0;
    return a->spec->count - a->made - skip_left(a) - ahead_left(a);
}

/* ---- the lists an array keeps (arrays.h: skip, ahead, released): each a block sized to its
 * ranges (arrayspec_dup), NULL when empty; changed on a whole copy (arrayspec_copy), then kept
 * again ---- */

/* *slot becomes a block of v (NULL when v is empty); what it held goes to *was when was is not
 * NULL (list_back puts it back), else is freed. -1 with e (503: nothing changed) when memory is
 * out. */
static int list_set(arrayspec **slot, const arrayspec *v, arrayspec **was, jerr *e)
{
    arrayspec *kept = NULL;
    if (v->n && !(kept = arrayspec_dup(v)))
        return jerr_busy(e, "out of memory keeping an array's task list (%zu ranges); nothing changed", v->n);
    if (was)
        *was = *slot;
    else
        free(*slot);
    *slot = kept;
    return 0;
}

/* What list_set took out put back. */
static void list_back(arrayspec **slot, arrayspec *was)
{
    free(*slot);
    *slot = was;
}

/* A list's text (of field, as arrayspec_parse reads it) kept in *slot as list_set keeps it; NULL
 * text: left as it is. */
static int list_parse(arrayspec **slot, const char *text, const char *field, bool throttle_ok, jerr *e)
{
    arrayspec s;
    if (!text)
        return 0;
    return arrayspec_parse(text, field, throttle_ok, &s, e) < 0 ? -1 : list_set(slot, &s, NULL, e);
}

/* ---- sets of task ids: skip and ahead (disjoint ranges, any step, in order of their first ids;
 * released: ranges of step 1, in order) ---- */

static void set_bounds(arrayspec *s)
{
    s->min = s->n ? s->r[0].lo : 0;
    s->max = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->r[i].hi > s->max)
            s->max = s->r[i].hi;
}

/* The first id of s in lo, lo+k, ... up to hi, and *at the range holding it; -1 when none.
 * O(ranges). */
static int64_t set_first_in(const arrayspec *s, int64_t lo, uint32_t k, int64_t hi, size_t *at)
{
    int64_t best = -1;
    for (size_t q = 0; q < s->n; q++) {
        int64_t x = arrayspec_first_common(lo, k, hi, s->r[q].lo, s->r[q].step, s->r[q].hi);
        if (x >= 0 && (best < 0 || x < best))
            best = x, *at = q;
    }
    return best;
}

/* A refusal for a limit of the ranges kept (409): the tasks named are at fault (field "tasks"), not
 * the state they were found in (rnx job cancel --status=S says a 409 without a field, a job gone
 * on, not as an error). -1. */
static int ranges_refused(jerr *e)
{
    snprintf(e->field, sizeof e->field, "tasks");
    return -1;
}

/* s less sub's ids (both ranges of any step), each range of s cut where sub holds one of its
 * ids: false, s unchanged, when that needs more than ARRAYSPEC_MAX_RANGES ranges (or, sub's
 * ranges with a step interleaving over a long run, more than ARRAYS_MINUS_LOOKS ids to pass one
 * by one). The one subtraction of released (ranges of step 1) and of skip (runs of a range of the
 * list kept as ranges of its step). O(pieces x sub's ranges). */
#define ARRAYS_MINUS_LOOKS 65536
static bool set_minus(arrayspec *s, const arrayspec *sub)
{
    arrayspec *out = xmalloc(sizeof *out); /* (~3 KB) */
    *out = (arrayspec){.throttle = 0};
    uint32_t looks = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < s->n; i++) {
        int64_t lo = s->r[i].lo, hi = s->r[i].hi;
        uint32_t k = s->r[i].step;
        while (lo <= hi) {
            size_t q = 0;
            int64_t x = sub->n ? set_first_in(sub, lo, k, hi, &q) : -1;
            int64_t end = x < 0 ? hi : x - k;
            if (end >= lo) {
                if (out->n == ARRAYSPEC_MAX_RANGES) {
                    ok = false;
                    break;
                }
                out->r[out->n++] = (arrayspec_range){(uint32_t)lo, (uint32_t)end, end > lo ? k : 1};
                out->count += (uint64_t)(end - lo) / k + 1;
            }
            if (x < 0)
                break;
            /* past x: the run of ids of s in sub's range there at once (its step divides s's),
             * else one id */
            const arrayspec_range *g = &sub->r[q];
            lo = k % g->step == 0 ? x + ((int64_t)g->hi - x) / k * k + k : x + k;
            if (++looks > ARRAYS_MINUS_LOOKS) {
                ok = false;
                break;
            }
        }
    }
    if (ok) {
        set_bounds(out);
        *s = *out;
    }
    free(out);
    return ok;
}

/* ---- ahead: the tasks made ahead of the cursor ----
 *
 * Tasks of one range of the list made ahead in a row (tasks released from a whole hold one by
 * one, `rnx job release ID_[7-2100:7]`) are kept as one range of that range's step (7-2100:7),
 * however the ids between are taken: by no task, or by tasks of another range of the list that
 * interleaves with it (0-1000:2,1-1001:2), made or not; kept one range each, ARRAYSPEC_MAX_RANGES
 * of them were all that could be made ahead, and the others waited for a cursor that a held
 * array never moves. A range of step 1 also bridges the ids between two of its tasks that are no
 * task of the array (nor one of skip's, so the two stay disjoint; rows saved before steps were
 * kept have such ranges only): what is asked of ahead is only ever asked of the array's tasks.
 * The ranges never share an id (the text saved parses back). O(ranges of the list, of skip and of
 * ahead) per task. Where its tasks released from the hold would need more ranges than that, the
 * release is refused up front (released_fit), as a hold of tasks not made yet is.
 *
 * skip, the tasks canceled before they were made, is kept the same way, by the same functions
 * (other: the set it must not share an id with, skip for ahead and ahead for skip): a cancel of
 * `ID_[1-2001:2]` of 0-2000:2,1-2001:2 is one range of skip, as a release of those tasks is one
 * of ahead (merge_skip). */

/* The first id of lo, lo+k, ... up to hi (none when lo > hi) that is a task of a's list (but of
 * its range own, when not NULL), one of other's, or (s not NULL) one that s holds: what a range of
 * s cannot bridge; -1 when none. */
static int64_t ahead_block(const jarray *a, const arrayspec *other, const arrayspec *s, int64_t lo, int64_t hi,
                           uint32_t k, const arrayspec_range *own)
{
    if (lo > hi)
        return -1;
    int64_t best = -1;
    const arrayspec *sets[3] = {a->spec, other, s};
    for (size_t w = 0; w < 3; w++)
        for (size_t i = 0; sets[w] && i < sets[w]->n; i++) {
            const arrayspec_range *r = &sets[w]->r[i];
            if (r == own || (int64_t)r->hi < lo || (int64_t)r->lo > (best >= 0 ? best : hi))
                continue;
            int64_t x = arrayspec_first_common(lo, k, hi, r->lo, r->step, r->hi);
            if (x >= 0 && (best < 0 || x < best))
                best = x;
        }
    return best;
}

/* The step of the list's range holding task t (1 for a single task). */
static uint32_t task_step(const jarray *a, uint32_t t)
{
    const arrayspec_range *r = arrayspec_range_of(a->spec, t);
    return r && r->lo < r->hi ? r->step : 1;
}

/* Of s's range i, whether it takes step k at an end: a single id, or a range of that step. */
static bool takes_step(const arrayspec *s, size_t i, uint32_t k)
{
    return s->r[i].lo == s->r[i].hi || s->r[i].step == k;
}

/* How t joins set s (ahead, a copy, or skip's: other as ahead_block's): below/above the ranges it joins at their end/start (-1
 * none), k the step the joined range has. In this order: (1) the range ending at t - k, k the
 * step of t's range of the list, and with it the one starting at t + k, of that step too; (2) the
 * range starting at t + k; (3) bridging ids that are no task: the range of step 1 (or single id)
 * ending last below t and the one starting first above it, k 1, each when the ids between are
 * no task, none of other's and none of s's. */
typedef struct ahead_join {
    int64_t below, above;
    uint32_t k;
} ahead_join;

/* true when s holds t already; else *j says how it joins (none: a range of its own). */
static bool ahead_where(const jarray *a, const arrayspec *other, const arrayspec *s, uint32_t t, ahead_join *j)
{
    *j = (ahead_join){-1, -1, 1};
    if (!s->n)
        return false;
    if (arrayspec_has(s, t))
        return true;
    uint32_t k = task_step(a, t);
    int64_t lb = -1, la = -1; /* (3): the candidates */
    for (size_t i = 0; i < s->n; i++) {
        const arrayspec_range *r = &s->r[i];
        if ((uint64_t)r->hi + k == t && takes_step(s, i, k))
            j->below = (int64_t)i;
        else if ((uint64_t)t + k == r->lo && takes_step(s, i, k))
            j->above = (int64_t)i;
        if (takes_step(s, i, 1)) {
            if (r->hi < t && (lb < 0 || r->hi > s->r[lb].hi))
                lb = (int64_t)i;
            if (r->lo > t && (la < 0 || r->lo < s->r[la].lo))
                la = (int64_t)i;
        }
    }
    if (j->below >= 0 || j->above >= 0) {
        j->k = k;
        return false;
    }
    if (lb >= 0 && ahead_block(a, other, s, (int64_t)s->r[lb].hi + 1, (int64_t)t - 1, 1, NULL) < 0)
        j->below = lb;
    if (la >= 0 && ahead_block(a, other, s, (int64_t)t + 1, (int64_t)s->r[la].lo - 1, 1, NULL) < 0)
        j->above = la;
    return false;
}

/* Whether ahead_add(a, s, t) would fit. */
static bool ahead_fits(const jarray *a, const arrayspec *s, uint32_t t)
{
    ahead_join j;
    return ahead_where(a, arrays_skip(a), s, t, &j) || j.below >= 0 || j.above >= 0 || s->n < ARRAYSPEC_MAX_RANGES;
}

/* s's range i moved to its place in the order of first ids (its lo changed, or it is new). */
static void ahead_resort(arrayspec *s, size_t i)
{
    arrayspec_range r = s->r[i];
    while (i > 0 && s->r[i - 1].lo > r.lo) {
        s->r[i] = s->r[i - 1];
        i--;
    }
    while (i + 1 < s->n && s->r[i + 1].lo < r.lo) {
        s->r[i] = s->r[i + 1];
        i++;
    }
    s->r[i] = r;
}

/* t added to s (ahead, a copy, or skip's: other as ahead_block's), joined as ahead_where says:
 * false, s unchanged, when that needs more than ARRAYSPEC_MAX_RANGES ranges. */
static bool ahead_add(const jarray *a, const arrayspec *other, arrayspec *s, uint32_t t)
{
    ahead_join j;
    if (ahead_where(a, other, s, t, &j))
        return true;
    if (j.below < 0 && j.above < 0) {
        if (s->n == ARRAYSPEC_MAX_RANGES)
            return false;
        s->r[s->n++] = (arrayspec_range){t, t, 1};
        ahead_resort(s, s->n - 1);
    } else if (j.below >= 0) {
        arrayspec_range *b = &s->r[j.below];
        s->count -= arrayspec_range_count(b);
        b->hi = t;
        b->step = j.k;
        if (j.above >= 0) { /* (t fills the gap between the two) */
            s->count -= arrayspec_range_count(&s->r[j.above]);
            b->hi = s->r[j.above].hi;
            memmove(&s->r[j.above], &s->r[j.above + 1], (s->n - (size_t)j.above - 1) * sizeof *s->r);
            s->n--;
            b = &s->r[j.below < j.above ? j.below : j.below - 1];
        }
        s->count += arrayspec_range_count(b);
    } else {
        arrayspec_range *u = &s->r[j.above];
        s->count -= arrayspec_range_count(u);
        u->lo = t;
        u->step = j.k;
        s->count += arrayspec_range_count(u);
        ahead_resort(s, (size_t)j.above);
    }
    if (j.below < 0 && j.above < 0)
        s->count++;
    set_bounds(s);
    return true;
}

/* t (the cursor's task) taken out of s (a whole copy of ahead), and with it what is left on either
 * side of it in its range when that holds no task: false, s unchanged, when the split needs one
 * range too many. */
static bool ahead_del(const jarray *a, arrayspec *s, uint32_t t)
{
    size_t i = 0;
    while (i < s->n && !(s->r[i].lo <= t && t <= s->r[i].hi && (t - s->r[i].lo) % s->r[i].step == 0))
        i++;
    if (i == s->n)
        return true;
    arrayspec_range r = s->r[i];
    uint32_t k = r.step;
    bool left = r.lo < t && ahead_block(a, arrays_skip(a), NULL, r.lo, (int64_t)t - k, k, NULL) >= 0;
    bool right = r.hi > t && ahead_block(a, arrays_skip(a), NULL, (int64_t)t + k, r.hi, k, NULL) >= 0;
    if (left && right && s->n == ARRAYSPEC_MAX_RANGES)
        return false;
    s->count -= arrayspec_range_count(&r);
    arrayspec_range lr = {r.lo, t - k, t - k > r.lo ? k : 1}, rr = {t + k, r.hi, r.hi > t + k ? k : 1};
    if (left && right) {
        memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
        s->n++;
        s->r[i] = lr;
        s->r[i + 1] = rr;
        ahead_resort(s, i + 1);
        s->count += arrayspec_range_count(&lr) + arrayspec_range_count(&rr);
    } else if (left || right) {
        s->r[i] = left ? lr : rr;
        ahead_resort(s, i);
        s->count += arrayspec_range_count(left ? &lr : &rr);
    } else {
        memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof *s->r);
        s->n--;
    }
    set_bounds(s);
    return true;
}

/* The arrays with tasks still to make, in seq order: what the scheduler's pass looks at (an
 * array whose tasks are all made or canceled has nothing to offer it). Few: the sweeps under way. */
static jarray **open_v;
static size_t open_n, open_cap;

static void open_set(jarray *a, bool open)
{
    size_t lo = 0, hi = open_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (open_v[mid]->seq < a->seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool there = lo < open_n && open_v[lo] == a;
    if (open && !there) {
        if (open_n == open_cap) {
            open_cap = open_cap ? open_cap * 2 : 16;
            open_v = xrealloc(open_v, open_cap * sizeof *open_v);
        }
        memmove(&open_v[lo + 1], &open_v[lo], (open_n - lo) * sizeof *open_v);
        open_v[lo] = a;
        open_n++;
    } else if (!open && there) {
        memmove(&open_v[lo], &open_v[lo + 1], (open_n - lo - 1) * sizeof *open_v);
        open_n--;
    }
}

jarray **arrays_open(size_t *n)
{
    *n = open_n;
    return open_v;
}

/* Counts a under its owner as it is now (in: kept) or not at all, where it counted as before;
 * what arrays_count_cached kept of it is dropped. Every change of an array calls it. */
static void count_as(jarray *a, bool in)
{
    uint64_t unmade = in ? unmade_of(a) : 0;
    if ((unmade != 0) != (a->ix_unmade != 0))
        open_set(a, unmade != 0);
    /* ended (arrays_ended: none active, none left) and keeping no job */
    bool jobless = in && !a->nlinked && !a->active && !unmade;
    if (unmade != a->ix_unmade || jobless != a->ix_jobless) {
        struct aowner *o = owner_of(a->owner_uid);
        o->unmade = o->unmade - a->ix_unmade + unmade;
        /* (an array's command, args and env never change: measured once) */
        if (unmade && !a->ix_bytes)
            a->ix_bytes = jobreq_bytes(&a->req);
        o->unmade_bytes = o->unmade_bytes - a->ix_unmade * a->ix_bytes + unmade * a->ix_bytes;
        o->jobless = o->jobless - a->ix_jobless + jobless;
        a->ix_unmade = unmade;
        a->ix_jobless = jobless;
    }
    a->counts_ok = false;
}

static void changed(jarray *a) { count_as(a, true); }

/* At log level debug: the counts against a scan of every array and its task slots (what
 * arrays_unmade and arrays_jobless computed before they were kept); a difference is a bug (a
 * change of an array that skipped changed()) and stops the daemon, so the tests find it. */
static void verify(const char *where)
{
    static int64_t last_ns;
    if (!state_check_due(&last_ns, core.narrays + core.njobs))
        return;
    char what[300] = "";
    uint64_t unmade = 0, jobless = 0;
    for (size_t i = 0; i < core.narrays && !what[0]; i++) {
        const jarray *a = core.arrays[i];
        size_t linked = 0;
        for (size_t k = 0; k < a->ntasks; k++)
            linked += a->tasks[k] != NULL;
        uint64_t u = arrays_canceled(a) ? 0
                                        : a->spec->count - a->made -
                                              arrayspec_count_from(a->spec, a->made, arrays_skip(a)) -
                                              arrayspec_count_from(a->spec, a->made, arrays_ahead(a));
        bool jl = !linked && arrays_ended(a);
        /* out of the list's order (ahead): never a task canceled before it was made; the made
         * tasks in the list's order, each one made (before the cursor, or ahead) */
        int64_t last = -1, last_place = -1;
        for (size_t k = 0; k < a->ntasks && !what[0]; k++) {
            if ((int64_t)a->places[k] <= last_place)
                snprintf(what, sizeof what, "array %s: slot %zu's place %u is not after the one before it", a->id, k,
                         a->places[k]);
            last_place = a->places[k];
            const job *t = a->tasks[k];
            if (!t)
                continue;
            int64_t p = arrayspec_index(a->spec, (uint32_t)t->array_task);
            if (!what[0] && p != (int64_t)a->places[k])
                snprintf(what, sizeof what, "array %s: task %lld's slot says place %u, its list %lld", a->id,
                         (long long)t->array_task, a->places[k], (long long)p);
            /* (and never counted canceled before it was made too: merge_skip) */
            bool made = p >= 0 && ((uint64_t)p < a->made || arrayspec_has(arrays_ahead(a), (uint32_t)t->array_task)) &&
                        !arrayspec_has(arrays_skip(a), (uint32_t)t->array_task);
            if (p <= last || !made)
                snprintf(what, sizeof what, "array %s: task %lld's job is out of the list's order or not counted made",
                         a->id, (long long)t->array_task);
            last = p;
        }
        if (!what[0] && arrayspec_count_from(arrays_ahead(a), 0, arrays_skip(a)))
            snprintf(what, sizeof what, "array %s: a task made ahead is counted canceled before it was made", a->id);
        if (linked != a->nlinked || u != a->ix_unmade || jl != a->ix_jobless)
            snprintf(what, sizeof what,
                     "array %s: %zu jobs, %llu tasks not made, jobless %d counted; %zu, %llu, %d in it", a->id,
                     a->nlinked, (unsigned long long)a->ix_unmade, a->ix_jobless, linked, (unsigned long long)u, jl);
        unmade += u;
        jobless += jl;
        if (!what[0] && idindex_get(&by_ref, a->id) != a)
            snprintf(what, sizeof what, "array %s is not found by its id", a->id);
    }
    size_t nopen = 0;
    for (size_t i = 0; i < core.narrays; i++)
        nopen += core.arrays[i]->ix_unmade != 0;
    for (size_t i = 0; i < open_n && !what[0]; i++)
        if (!open_v[i]->ix_unmade || (i && open_v[i - 1]->seq >= open_v[i]->seq))
            snprintf(what, sizeof what, "array %s is listed with tasks to make, out of order or with none", open_v[i]->id);
    if (!what[0] && nopen != open_n)
        snprintf(what, sizeof what, "%zu arrays listed with tasks to make; %zu have some", open_n, nopen);
    if (!what[0] && by_ref.n != core.narrays)
        snprintf(what, sizeof what, "%zu arrays found by id; %zu kept", by_ref.n, core.narrays);
    for (size_t o = 0; o < nowners && !what[0]; o++) {
        uint64_t u = 0, jl = 0, ub = 0;
        for (size_t i = 0; i < core.narrays; i++)
            if (core.arrays[i]->owner_uid == owners[o].uid) {
                u += core.arrays[i]->ix_unmade;
                jl += core.arrays[i]->ix_jobless;
                ub += core.arrays[i]->ix_unmade ? core.arrays[i]->ix_unmade * jobreq_bytes(&core.arrays[i]->req) : 0;
            }
        unmade -= u;
        jobless -= jl;
        if (!what[0] && ub != owners[o].unmade_bytes)
            snprintf(what, sizeof what, "uid %u: %llu bytes of tasks not made counted; %llu in its arrays",
                     (unsigned)owners[o].uid, (unsigned long long)owners[o].unmade_bytes, (unsigned long long)ub);
        if (u != owners[o].unmade || jl != owners[o].jobless)
            snprintf(what, sizeof what,
                     "uid %u: %llu tasks not made, %llu jobless arrays counted; %llu, %llu in its arrays",
                     (unsigned)owners[o].uid, (unsigned long long)owners[o].unmade,
                     (unsigned long long)owners[o].jobless, (unsigned long long)u, (unsigned long long)jl);
    }
    if (!what[0] && (unmade || jobless))
        snprintf(what, sizeof what, "arrays counted under no owner");
    if (what[0]) {
        log_err("arrays: the counts per owner differ from a scan (%s): %s", where, what);
        abort();
    }
}

/* arrays_take_changed's list: the arrays whose tasks changed since publish.c last looked */
static marklist changed_list = MARKLIST_INIT(jarray, ev_listed);

static void ev_mark(jarray *a)
{
    a->ev_dirty = true;
    marklist_add(&changed_list, a);
}

void **arrays_take_changed(size_t *n) { return marklist_take(&changed_list, n); }

static void add(jarray *a)
{
    idindex_add(&by_ref, a, a->id, a->name, a->seq);
    if (core.narrays == core.arrays_cap) {
        core.arrays_cap = core.arrays_cap ? core.arrays_cap * 2 : 16;
        core.arrays = xrealloc(core.arrays, core.arrays_cap * sizeof *core.arrays);
    }
    core.arrays[core.narrays++] = a;
    if (a->seq >= core.next_seq)
        core.next_seq = a->seq + 1;
    changed(a);
    ev_mark(a); /* (its first status: published) */
}

static void free_one(jarray *a)
{
    if (!a)
        return;
    free(a->name);
    jobreq_free(&a->req);
    free(a->spec);
    free(a->skip);
    free(a->ahead);
    free(a->released);
    free(a->tasks);
    free(a->places);
    free(a->canceled_why);
    free(a->after_seq);
    free(a->dependents);
    free(a->ready);
    free(a->go);
    free(a->by_task);
    free(a);
}

static void drop(jarray *a)
{
    core.removed++;
    for (size_t i = 0; i < core.narrays; i++)
        if (core.arrays[i] == a) {
            idindex_del(&by_ref, a, a->id, a->name);
            memmove(&core.arrays[i], &core.arrays[i + 1], (core.narrays - i - 1) * sizeof *core.arrays);
            core.narrays--;
            break;
        }
    count_as(a, false);
    marklist_remove(&changed_list, a);
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i])
            a->tasks[i]->array = NULL;
    /* the arrays waiting on it task by task: none of their tasks' own tasks is kept now (each
     * waits to be canceled, depend_task_verdict's DEPEND_TASK_ALL) */
    for (uint32_t i = 0; i < a->nby_task; i++) {
        jarray *w = arrays_by_seq(a->by_task[i]);
        if (w && w->corr_ready) {
            w->corr_ready = 0;
            ev_mark(w);
        }
    }
    free_one(a);
}

jarray *arrays_create(job_req *req, uid_t uid, gid_t gid, jerr *e)
{
    jarray *a = xcalloc(1, sizeof *a);
    if (list_parse(&a->spec, req->array, "array", true, e) < 0) {
        free(a);
        return NULL;
    }
    uuid_v4(a->id);
    a->seq = core.next_seq;
    a->owner_uid = uid;
    a->owner_gid = gid;
    a->created_ms = now_ms();
    a->joined_ms = qclock_now(); /* its place in the queue (qclock.h) */
    a->canceled_by = -1;
    a->wf_index = -1;
    a->name = req->name ? xstrdup(req->name) : NULL;
    a->held = req->hold; /* submitted held (sbatch -H): no task made until it is released */
    a->held_by = a->held ? (int64_t)uid : -1;
    a->req = *req;
    if (save(a, e) < 0) {
        a->req = (job_req){0};
        free_one(a);
        return NULL;
    }
    *req = (job_req){0};
    add(a);
    state_want(WANT_SCHEDULE);
    char spec[2048];
    arrayspec_format(a->spec, true, spec, sizeof spec);
    log_info("array %s submitted by uid %u: %s, %llu tasks (%s)", a->id, (unsigned)uid, a->req.command,
             (unsigned long long)a->spec->count, spec);
    return a;
}

void arrays_set_workflow(jarray *a, struct workflow *wf, const char *wf_id, int index, bool waiting)
{
    snprintf(a->wf_id, sizeof a->wf_id, "%s", wf_id);
    a->wf_index = index;
    a->wf = wf;
    a->waiting = waiting;
    changed(a);
    save_logged(a);
}

void arrays_undo(jarray *a)
{
    log_info("array %s: taken back (its submission could not be saved)", a->id);
    drop(a);
}

uint64_t arrays_unmade(uid_t uid)
{
    verify("a user's tasks not made");
    return owner_of(uid)->unmade;
}

uint64_t arrays_unmade_bytes(uid_t uid)
{
    verify("a user's tasks not made");
    return owner_of(uid)->unmade_bytes;
}

uint64_t arrays_jobless(uid_t uid)
{
    verify("a user's jobless arrays");
    return owner_of(uid)->jobless; /* (one with tasks left counts them: arrays_unmade) */
}

/* ---- the scheduler's side ---- */

/* The most tasks of one array offered to one pass of the scheduler: what a pass can start is
 * bounded by what it may make in one turn of the loop; the next pass comes at the next turn. */
#define ARRAYS_PER_PASS 64

uint32_t arrays_offer(const jarray *a, uint32_t runs)
{
    /* (its tasks not made and not canceled, as counted at its last change) */
    if ((a->held && !arrays_released(a)->n) || a->waiting || arrays_canceled(a) || !a->ix_unmade)
        return 0;
    /* held: those released from the hold one by one only */
    uint64_t left = a->held ? arrays_released_left(a, NULL, ARRAYS_PER_PASS) : a->ix_unmade;
    uint64_t n = left < ARRAYS_PER_PASS ? left : ARRAYS_PER_PASS;
    if (a->spec->throttle)
        n = runs >= a->spec->throttle ? 0 : n < a->spec->throttle - runs ? n : a->spec->throttle - runs;
    return (uint32_t)n;
}

int arrays_next(jarray *a, uint32_t *task)
{
    if (arrays_canceled(a))
        return -1;
    uint64_t was = a->made;
    int rc = -1;
    arrayspec ahead; /* (a whole copy, once the cursor meets a task made ahead) */
    bool passed = false;
    while (a->made < a->spec->count) {
        uint32_t t = arrayspec_task(a->spec, a->made);
        if (arrayspec_has(passed ? &ahead : arrays_ahead(a), t)) {
            /* made ahead: passed over, out of ahead when that fits (what stays there behind the
             * cursor counts for nothing: kept as it was when memory is out) */
            if (!passed)
                arrayspec_copy(&ahead, arrays_ahead(a));
            passed = true;
            ahead_del(a, &ahead, t);
            a->made++;
            continue;
        }
        if (!arrayspec_has(arrays_skip(a), t)) {
            *task = t;
            rc = 0;
            break;
        }
        a->made++; /* canceled before it was made: passed over (counted CANCELED) */
    }
    jerr e = {0};
    if (passed && list_set(&a->ahead, &ahead, NULL, &e) < 0)
        log_err("array %s: %s", a->id, e.msg);
    /* (saved with the next task made: the row's cursor and ahead as they were say the same) */
    if (a->made != was)
        changed(a); /* (its tasks not made are the same: those passed over were not counted) */
    return rc;
}

/* Of range r of a's list, how many of its tasks from t on (at most room) are canceled before
 * they were made or made ahead, one after the other: 0 when t is neither. O(ranges). */
static uint64_t gone_run(const jarray *a, const arrayspec_range *r, uint32_t t, uint64_t room)
{
    const arrayspec_range *g = arrays_skip(a)->n ? arrayspec_range_of(arrays_skip(a), t) : NULL;
    if (!g && arrays_ahead(a)->n)
        g = arrayspec_range_of(arrays_ahead(a), t);
    if (!g)
        return 0;
    /* (a range of ahead of another step holds t, not the next of r's tasks) */
    uint64_t n = r->step % g->step == 0 ? (uint64_t)(g->hi - t) / r->step + 1 : 1;
    return n < room ? n : room;
}

uint32_t arrays_upcoming(const jarray *a, uint32_t *tasks, uint32_t max)
{
    uint32_t n = 0;
    if (arrays_canceled(a))
        return 0;
    /* arrays_next passed the canceled ones at the cursor; a long run of them further on is
     * looked into a bounded way (places), the rest found at later passes as the cursor moves.
     * Range by range from the cursor's: a place costs O(1) to find, and a run of tasks canceled
     * or made ahead (gone_run: skip's ranges, and ahead's) is passed in one step: a list of 250
     * ranges with every task but two canceled cost 0.7 ms a look, at each scheduler pass */
    uint64_t k = a->made, end = a->made + 4096 + max, off = k;
    size_t i = 0;
    while (i < a->spec->n && off >= arrayspec_range_count(&a->spec->r[i]))
        off -= arrayspec_range_count(&a->spec->r[i++]);
    while (i < a->spec->n && k < end && n < max) {
        const arrayspec_range *r = &a->spec->r[i];
        uint64_t c = arrayspec_range_count(r);
        if (off >= c) {
            i++;
            off = 0;
            continue;
        }
        uint32_t t = r->lo + (uint32_t)off * r->step;
        uint64_t past = gone_run(a, r, t, c - off);
        if (!past) {
            tasks[n++] = t;
            past = 1;
        }
        off += past;
        k += past;
    }
    static int64_t checked_ns;
    if (core.cfg.log_level >= LOG_DEBUG && state_check_due(&checked_ns, 4096 + max)) {
        /* (the tests' level: the same as a look at every place, one by one) */
        uint32_t m = 0;
        for (uint64_t p = a->made, stop = a->made + 4096 + max; p < a->spec->count && p < stop && m < max; p++) {
            uint32_t t = arrayspec_task(a->spec, p);
            if (!arrayspec_has(arrays_skip(a), t) && !arrayspec_has(arrays_ahead(a), t) &&
                (m >= n || tasks[m++] != t)) {
                log_err("array %s: its upcoming tasks differ from a look at each place (%u: %u)", a->id, m, t);
                abort();
            }
        }
        if (m != n) {
            log_err("array %s: %u upcoming tasks, %u by a look at each place", a->id, n, m);
            abort();
        }
    }
    return n;
}

/* ---- out of the list's order (--after=ARRAY:corr) ---- */

/* Whether t is still to make ahead of the cursor (at_cursor: or at it): not made, not canceled. */
static bool still_to_make(const jarray *a, uint32_t t, bool at_cursor)
{
    int64_t k = arrayspec_index(a->spec, t);
    return k >= 0 && ((uint64_t)k > a->made || (at_cursor && (uint64_t)k == a->made)) && !arrays_canceled(a) &&
           !arrayspec_has(arrays_skip(a), t) && !arrayspec_has(arrays_ahead(a), t);
}

/* ---- task by task: its tasks still to make whose own task COMPLETED (corr_ready) ---- */

/* The first array a waits on task by task (NULL: none, or it was deleted). */
static const jarray *corr_first(const jarray *a)
{
    for (size_t k = 0; a->after_seq && k < a->req.nafter && k < 64; k++)
        if (a->req.after[k].state == JA_CORR && (a->after_arrays >> k & 1))
            return arrays_by_seq(a->after_seq[k]);
    return NULL;
}

/* Whether task t's own task, in each array a waits on task by task, is there, kept and
 * COMPLETED (what lets t go: depend_task_verdict). One that array does not have waits for it
 * whole: not. */
static bool own_completed(const jarray *a, uint32_t t)
{
    for (size_t k = 0; a->after_seq && k < a->req.nafter && k < 64; k++) {
        if (a->req.after[k].state != JA_CORR || !(a->after_arrays >> k & 1))
            continue; /* (not task by task: corr on a job is ok on the whole, the array's wait) */
        const jarray *d = arrays_by_seq(a->after_seq[k]);
        bool made;
        const job *j = d ? arrays_task(d, t, &made) : NULL;
        if (!j || j->array_gone || j->state != JS_COMPLETED)
            return false;
    }
    return true;
}

/* Whether t counts in a's corr_ready. */
static bool corr_counted(const jarray *a, uint32_t t)
{
    return a->corr && still_to_make(a, t, true) && own_completed(a, t);
}

/* The next of a's tasks that count in corr_ready, from the first array it waits on's slot *i on
 * (its task's own task there COMPLETED, and in every other array waited on so): its id, or -1
 * when none is left. A count's walk (corr_count, corr_places): O(that array's made tasks). */
static int64_t corr_next(const jarray *a, size_t *i)
{
    const jarray *d = a->corr && !arrays_canceled(a) ? corr_first(a) : NULL;
    for (; d && *i < d->ntasks; (*i)++) {
        const job *j = d->tasks[*i];
        if (j && !j->array_gone && j->state == JS_COMPLETED && corr_counted(a, (uint32_t)j->array_task)) {
            (*i)++;
            return j->array_task;
        }
    }
    return -1;
}

/* corr_ready as a count finds it. */
static uint64_t corr_count(const jarray *a)
{
    uint64_t n = 0;
    for (size_t i = 0; corr_next(a, &i) >= 0;)
        n++;
    return n;
}

void arrays_corr_recount(jarray *a, bool corr)
{
    a->corr = corr;
    a->corr_ready = corr_count(a);
    ev_mark(a);
}

/* Task j of d: COMPLETED (by +1), its job being deleted (-1), or its delete undone (+1). Each
 * array waiting on d task by task whose task of that id is still to make counts it ready, or no
 * longer (once each: an array named twice in by_task is told once). */
static void corr_tell(const jarray *d, const job *j, int by)
{
    static uint64_t gen;
    if (j->state != JS_COMPLETED || !d->nby_task)
        return;
    gen++;
    for (uint32_t i = 0; i < d->nby_task; i++) {
        jarray *w = arrays_by_seq(d->by_task[i]);
        if (!w || w->corr_told == gen || !corr_counted(w, (uint32_t)j->array_task))
            continue;
        w->corr_told = gen;
        w->corr_ready += (uint64_t)(int64_t)by;
        ev_mark(w);
    }
}

static bool set_add_range(arrayspec *s, uint32_t lo, uint32_t hi);

/* The places of a's tasks that count in corr_ready (ranges of step 1), of those in `in` (places):
 * false past ARRAYSPEC_MAX_RANGES. O(the made tasks of the first array waited on x ranges). */
static bool corr_places(const jarray *a, const arrayspec *in, arrayspec *out)
{
    *out = (arrayspec){.n = 0};
    int64_t t;
    for (size_t i = 0; (t = corr_next(a, &i)) >= 0;) {
        uint32_t k = (uint32_t)arrayspec_index(a->spec, (uint32_t)t);
        if (arrayspec_has(in, k) && !set_add_range(out, k, k))
            return false;
    }
    return true;
}

bool arrays_ahead_ok(const jarray *a, uint32_t t)
{
    int64_t k = arrayspec_index(a->spec, t);
    return k >= 0 && ((uint64_t)k == a->made || ahead_fits(a, arrays_ahead(a), t));
}

bool arrays_ahead_ok_all(const jarray *a, const uint32_t *ts, size_t n, uint32_t *bad)
{
    arrayspec *ahead = xmalloc(sizeof *ahead); /* (a copy: ~3 KB) */
    arrayspec_copy(ahead, arrays_ahead(a));
    uint64_t made = a->made;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        /* as arrays_made: the cursor's task moves the cursor, another goes into ahead */
        if (made < a->spec->count && arrayspec_task(a->spec, made) == ts[i])
            made++;
        else if (!ahead_add(a, arrays_skip(a), ahead, ts[i]))
            ok = false, *bad = ts[i];
    }
    free(ahead);
    return ok;
}

void arrays_ready_push(jarray *a, uint32_t t)
{
    if (!still_to_make(a, t, false))
        return;
    if (a->ready_at == a->nready)
        a->ready_at = a->nready = 0;
    if (a->nready == a->ready_cap) {
        if (a->ready_at) { /* (what was looked at goes first) */
            memmove(a->ready, a->ready + a->ready_at, (a->nready - a->ready_at) * sizeof *a->ready);
            a->nready -= a->ready_at;
            a->ready_at = 0;
        } else {
            a->ready_cap = a->ready_cap ? a->ready_cap * 2 : 16;
            a->ready = xrealloc(a->ready, a->ready_cap * sizeof *a->ready);
        }
    }
    a->ready[a->nready++] = t;
    state_want(WANT_SCHEDULE);
}

int arrays_ready_pop(jarray *a, uint32_t *t)
{
    while (a->ready_at < a->nready) {
        uint32_t x = a->ready[a->ready_at++];
        if (still_to_make(a, x, false)) {
            *t = x;
            return 0;
        }
    }
    a->ready_at = a->nready = 0;
    return -1;
}

void arrays_ready_again(jarray *a, uint32_t t)
{
    if (!still_to_make(a, t, false))
        return;
    if (!a->ready_at) { /* (pushed meanwhile, and what was looked at went: room at the front) */
        if (a->nready == a->ready_cap) {
            a->ready_cap = a->ready_cap ? a->ready_cap * 2 : 16;
            a->ready = xrealloc(a->ready, a->ready_cap * sizeof *a->ready);
        }
        memmove(a->ready + 1, a->ready, a->nready++ * sizeof *a->ready);
        a->ready_at = 1;
    }
    a->ready[--a->ready_at] = t;
}

void arrays_go_again(jarray *a, uint32_t t)
{
    uint32_t n = a->ngo;
    arrays_go_add(a, t);
    if (a->ngo == n)
        return; /* (there already) */
    memmove(a->go + 1, a->go, n * sizeof *a->go); /* (its place: first) */
    a->go[0] = t;
}

/* Whether t may be made now out of go: still to make (at the cursor too), and ahead has room. */
static bool go_can(const jarray *a, uint32_t t) { return still_to_make(a, t, true) && arrays_ahead_ok(a, t); }

void arrays_go_prune(jarray *a)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < a->ngo; i++)
        if (go_can(a, a->go[i]))
            a->go[k++] = a->go[i];
    a->ngo = k;
}

void arrays_go_add(jarray *a, uint32_t t)
{
    if (!go_can(a, t))
        return; /* (no room ahead: it waits for the cursor, as arrays_go_take would leave it) */
    for (uint32_t i = 0; i < a->ngo; i++)
        if (a->go[i] == t)
            return; /* (queued twice: its own task's end seen again at start) */
    if (a->ngo == a->go_cap) {
        a->go_cap = a->go_cap ? a->go_cap * 2 : 16;
        a->go = xrealloc(a->go, a->go_cap * sizeof *a->go);
    }
    a->go[a->ngo++] = t;
}

int arrays_go_take(jarray *a, uint32_t *t)
{
    while (a->ngo) {
        uint32_t x = a->go[0];
        memmove(a->go, a->go + 1, --a->ngo * sizeof *a->go); /* (a pass's worth at most) */
        if (go_can(a, x)) {
            *t = x;
            return 0;
        }
    }
    return -1;
}

/* ---- tasks released one by one from a whole hold (released: places in the list) ---- */

/* The range of a's list holding place p, and p's offset in it (p < count). */
static size_t range_at(const arrayspec *s, uint64_t p, uint64_t *off)
{
    size_t i = 0;
    while (i + 1 < s->n && p >= arrayspec_range_count(&s->r[i]))
        p -= arrayspec_range_count(&s->r[i++]);
    *off = p;
    return i;
}

/* Of range r of a's list, how many of its tasks from t on (at most room; t is one still to make)
 * are still to make, one after the other: up to the first that skip or ahead holds. O(ranges). */
static uint64_t unmade_run(const jarray *a, const arrayspec_range *r, uint32_t t, uint64_t room)
{
    uint64_t run = room;
    int64_t hi = (int64_t)t + (int64_t)(room - 1) * r->step;
    const arrayspec *sets[2] = {arrays_skip(a), arrays_ahead(a)};
    for (size_t w = 0; w < 2; w++)
        for (size_t i = 0; i < sets[w]->n; i++) {
            const arrayspec_range *g = &sets[w]->r[i];
            if ((int64_t)g->hi < t || g->lo > hi)
                continue;
            int64_t x = arrayspec_first_common(t, r->step, hi, g->lo, g->step, g->hi);
            if (x >= 0 && (uint64_t)(x - t) / r->step < run)
                run = (uint64_t)(x - t) / r->step;
        }
    return run;
}

/* Walks a's tasks released from its hold and not made yet (nor canceled), from the cursor on, in
 * the list's order: each run of them in one range r of the list, n tasks from t (place p), to
 * fn, which says whether to go on. Range by range of released: a run of tasks canceled or made
 * ahead passed in one step, a run of tasks still to make handed in one. */
typedef bool (*released_fn)(void *ctx, const arrayspec_range *r, uint64_t p, uint32_t t, uint64_t n);
static void released_runs(const jarray *a, released_fn fn, void *ctx)
{
    if (arrays_canceled(a))
        return;
    const arrayspec *rel = arrays_released(a);
    for (size_t l = 0; l < rel->n; l++) {
        uint64_t p = rel->r[l].lo > a->made ? rel->r[l].lo : a->made, hi = rel->r[l].hi;
        while (p <= hi && p < a->spec->count) {
            uint64_t off;
            const arrayspec_range *r = &a->spec->r[range_at(a->spec, p, &off)];
            uint64_t room = arrayspec_range_count(r) - off;
            if (hi - p + 1 < room)
                room = hi - p + 1;
            uint32_t t = r->lo + (uint32_t)off * r->step;
            uint64_t past = gone_run(a, r, t, room);
            if (past) {
                p += past;
                continue;
            }
            uint64_t run = unmade_run(a, r, t, room);
            if (!fn(ctx, r, p, t, run))
                return;
            p += run;
        }
    }
}

struct released_count {
    uint64_t n, upto;
    uint32_t *first;
};

static bool released_count_run(void *ctx, const arrayspec_range *r, uint64_t p, uint32_t t, uint64_t n)
{
    (void)r, (void)p;
    struct released_count *c = ctx;
    if (!c->n && c->first)
        *c->first = t;
    c->n += n;
    return c->n < c->upto;
}

uint64_t arrays_released_left(const jarray *a, uint32_t *first, uint64_t upto)
{
    struct released_count c = {.upto = upto, .first = first};
    if (upto)
        released_runs(a, released_count_run, &c);
    return c.n;
}

/* Whether every task released from a's hold and not made yet can be made as the scheduler makes
 * them (arrays_released_next: one after the other in the list's order, the cursor's moving the
 * cursor, the others going into ahead), ahead's ranges staying within ARRAYSPEC_MAX_RANGES: made
 * so on a copy of ahead, a run of tasks of one range of the list in a few steps (the tasks in its
 * middle only ever extend the range its first went into, as ahead_add would, one by one).
 * O(runs x ranges). false, *bad the first task that would not fit, otherwise. */
struct released_sim {
    const jarray *a;
    arrayspec *s;
    uint64_t made;
    uint32_t bad;
    bool ok;
};

static bool released_sim_run(void *ctx, const arrayspec_range *r, uint64_t p, uint32_t t, uint64_t n)
{
    struct released_sim *m = ctx;
    arrayspec *s = m->s;
    if (p == m->made) { /* (at the cursor: each moves it) */
        m->made += n;
        return true;
    }
    uint32_t k = r->step, x = t, last = t + (uint32_t)(n - 1) * k;
    bool added = ahead_add(m->a, arrays_skip(m->a), s, x);
    for (uint32_t tries = 0; added && x != last; tries++) {
        if (tries > 2 * ARRAYSPEC_MAX_RANGES + 16) { /* (not seen: refused, as not kept) */
            added = false;
            break;
        }
        const arrayspec_range *g = arrayspec_range_of(s, x);
        size_t i = (size_t)(g - s->r);
        uint32_t y = x; /* the task the range holding x is extended to: each one between as ahead_add would */
        if (g->hi == x && last - x >= 2 * k && takes_step(s, i, k)) {
            y = last - k; /* ahead_where's (1): the next after x joins it, none its next range */
        } else if (g->hi == x && last - x >= 2 * k && g->step == 1) {
            /* (3), bridging on step 1: each task u while u - k .. u + k holds no other task, no id of
             * skip's or of another range of ahead (none starts there to join) */
            int64_t b = ahead_block(m->a, arrays_skip(m->a), s, (int64_t)x + 1, (int64_t)last - 1, 1, r);
            int64_t upto = b < 0 ? (int64_t)last - k : b - k;
            if (upto > (int64_t)last - k)
                upto = (int64_t)last - k;
            if (upto >= (int64_t)x + k)
                y = x + (uint32_t)((upto - x) / k) * k;
        }
        if (y != x) {
            s->count -= arrayspec_range_count(&s->r[i]);
            s->r[i].hi = y;
            s->r[i].step = g->lo == x ? k : s->r[i].step;
            s->count += arrayspec_range_count(&s->r[i]);
            set_bounds(s);
            x = y;
        }
        x += k;
        added = ahead_add(m->a, arrays_skip(m->a), s, x);
    }
    if (!added) {
        m->ok = false;
        m->bad = x;
    }
    return added;
}

static bool released_fit(const jarray *a, uint32_t *bad)
{
    struct released_sim m = {.a = a, .s = xmalloc(sizeof *m.s), .made = a->made, .ok = true};
    arrayspec_copy(m.s, arrays_ahead(a));
    released_runs(a, released_sim_run, &m);
    free(m.s);
    *bad = m.bad;
    return m.ok;
}

int arrays_released_next(const jarray *a, uint32_t *t)
{
    if (!a->held || !arrays_released(a)->n || arrays_released_left(a, t, 1) == 0)
        return -1;
    return arrays_ahead_ok(a, *t) ? 0 : -1;
}

bool arrays_task_held(const jarray *a, uint32_t t)
{
    if (!a->held)
        return false;
    if (!arrays_released(a)->n)
        return true;
    int64_t k = arrayspec_index(a->spec, t);
    return k < 0 || !arrayspec_has(arrays_released(a), (uint32_t)k);
}

/* lo..hi added to a set of ranges of step 1 (in order, merged): false, s unchanged, when that needs
 * more than ARRAYSPEC_MAX_RANGES ranges. */
static bool set_add_range(arrayspec *s, uint32_t lo, uint32_t hi)
{
    size_t i = 0;
    while (i < s->n && (uint64_t)s->r[i].hi + 1 < lo)
        i++;
    size_t j = i;
    while (j < s->n && s->r[j].lo <= (uint64_t)hi + 1) {
        if (s->r[j].lo < lo)
            lo = s->r[j].lo;
        if (s->r[j].hi > hi)
            hi = s->r[j].hi;
        j++;
    }
    if (j == i) {
        if (s->n == ARRAYSPEC_MAX_RANGES)
            return false;
        memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
        s->n++;
    } else {
        memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof *s->r);
        s->n -= j - i - 1;
    }
    s->r[i] = (arrayspec_range){lo, hi, 1};
    s->count = 0;
    for (size_t k = 0; k < s->n; k++)
        s->count += (uint64_t)(s->r[k].hi - s->r[k].lo) + 1;
    set_bounds(s);
    return true;
}

/* The tasks of a list (of a's tasks) by their places in a's list, as ranges of step 1 into out: a
 * range of the list of step 1 (or of the array's own step there) is a run of places in each range
 * of a's list, found by arithmetic; one of another step, each of its tasks (at most 65,536 in
 * all: 400 beyond, naming the way that costs nothing). 409 past ARRAYSPEC_MAX_RANGES ranges. */
#define ARRAYS_RELEASE_LOOKS 65536
static int to_places(const jarray *a, const arrayspec *tasks, arrayspec *out, jerr *e)
{
    *out = (arrayspec){.n = 0};
    uint64_t looks = 0;
    for (size_t q = 0; q < tasks->n; q++) {
        const arrayspec_range *n = &tasks->r[q];
        uint64_t base = 0;
        for (size_t i = 0; i < a->spec->n; base += arrayspec_range_count(&a->spec->r[i]), i++) {
            const arrayspec_range *r = &a->spec->r[i];
            uint32_t x = n->lo > r->lo ? n->lo : r->lo, y = n->hi < r->hi ? n->hi : r->hi, s = r->step;
            if (x > y)
                continue;
            bool ok = true;
            if (n->lo == n->hi || n->step == 1 ||
                (n->step == s && (n->lo >= r->lo ? (n->lo - r->lo) % s : (r->lo - n->lo) % s) == 0)) {
                uint64_t k0 = ((uint64_t)(x - r->lo) + s - 1) / s, k1 = (uint64_t)(y - r->lo) / s;
                if (k0 <= k1)
                    ok = set_add_range(out, (uint32_t)(base + k0), (uint32_t)(base + k1));
            } else {
                uint64_t v = n->lo + ((uint64_t)(x - n->lo) + n->step - 1) / n->step * n->step;
                for (; ok && v <= y; v += n->step) {
                    if (++looks > ARRAYS_RELEASE_LOOKS)
                        return jerr_http(e, 400, "tasks: array %s: releasing tasks from its hold takes ranges of step 1 "
                                                 "(or of the array's own step); a range of step %u names more than %d "
                                                 "tasks to look at one by one", a->id, n->step, ARRAYS_RELEASE_LOOKS);
                    if ((v - r->lo) % s == 0)
                        ok = set_add_range(out, (uint32_t)(base + (v - r->lo) / s), (uint32_t)(base + (v - r->lo) / s));
                }
            }
            if (!ok) {
                jerr_http(e, 409, "tasks: array %s: the tasks named are kept as more than %d ranges of its list; at "
                                  "most %d may be released from its hold one by one (name fewer ranges, or release the "
                                  "whole array: rnx job release %.8s)", a->id, ARRAYSPEC_MAX_RANGES,
                          ARRAYS_RELEASED_MAX, a->id);
                return ranges_refused(e);
            }
        }
    }
    return 0;
}

int arrays_released_set(jarray *a, const arrayspec *tasks, bool release, uint64_t *moved, jerr *e)
{
    *moved = 0;
    if (!a->held)
        return 0;
    arrayspec *pl = xmalloc(sizeof *pl), *now = xmalloc(sizeof *now), *was = NULL;
    int rc = -1;
    if (to_places(a, tasks, pl, e) < 0)
        goto out;
    arrayspec_copy(now, arrays_released(a));
    bool ok = true;
    for (size_t i = 0; ok && i < pl->n; i++)
        ok = release ? set_add_range(now, pl->r[i].lo, pl->r[i].hi) : true;
    if (ok && !release)
        ok = set_minus(now, pl);
    if (!ok || now->n > ARRAYS_RELEASED_MAX) {
        jerr_http(e, 409, "array %s: the tasks released from its hold one by one are kept as at most %d ranges of its "
                          "list, and this would make %s%zu; nothing changed (name fewer ranges, or release the whole "
                          "array: rnx job release %.8s)", a->id, ARRAYS_RELEASED_MAX, ok ? "" : "more than ",
                  ok ? now->n : (size_t)ARRAYSPEC_MAX_RANGES, a->id);
        goto out;
    }
    uint64_t before = arrays_released_left(a, NULL, UINT64_MAX);
    if (list_set(&a->released, now, &was, e) < 0)
        goto out;
    /* each released is made ahead of the cursor, kept in ahead: refused now where it could not
     * all be, not made until ahead is full and the rest left QUEUED for ever */
    uint32_t bad;
    if (!released_fit(a, &bad)) {
        list_back(&a->released, was), was = NULL;
        jerr_http(e, 409, "array %s: task %u could not be made: the tasks released from its hold one by one are made "
                          "ahead of its list's order, kept as at most %d ranges ahead, and with these they would "
                          "need more; nothing changed (name fewer ranges, release the whole array: rnx job release "
                          "%.8s, or hold some again)", a->id, bad, ARRAYSPEC_MAX_RANGES, a->id);
        goto out;
    }
    uint64_t after = arrays_released_left(a, NULL, UINT64_MAX);
    if (after == before) {
        /* none of those named was still to make (each made, canceled, or released already): kept
         * as it was, not saved; the caller's answer is that nothing moved (a 409 when nothing else
         * was done changes nothing: released grew or shrank by tasks that no longer wait) */
        list_back(&a->released, was), was = NULL;
        rc = 0;
        goto out;
    }
    if (save(a, e) < 0) {
        list_back(&a->released, was), was = NULL;
        goto out;
    }
    *moved = release ? after - before : before - after;
    ev_mark(a);
    changed(a);
    if (release)
        state_want(WANT_SCHEDULE);
    rc = 0;
out:
    free(pl), free(now), free(was);
    return rc;
}

/* What a task released from its array's hold waits as: as one of an array not held. */
static enum job_state released_state(const jarray *a)
{
    return a->waiting ? JS_PENDING : a->req.schedule_ms > now_ms() ? JS_SCHEDULED : JS_QUEUED;
}

/* A set of places of a's list (ranges of step 1) as the tasks there, into out: each run of places
 * within one range of the list is a range of that one's step. false when they take more than
 * ARRAYSPEC_MAX_RANGES ranges (out holds the first ones). */
static bool places_tasks(const jarray *a, const arrayspec *places, arrayspec *out)
{
    *out = (arrayspec){.n = 0};
    for (size_t l = 0; l < places->n; l++) {
        uint64_t p = places->r[l].lo, hi = places->r[l].hi;
        while (p <= hi && p < a->spec->count) {
            uint64_t off;
            const arrayspec_range *r = &a->spec->r[range_at(a->spec, p, &off)];
            uint64_t room = arrayspec_range_count(r) - off;
            if (hi - p + 1 < room)
                room = hi - p + 1;
            if (out->n == ARRAYSPEC_MAX_RANGES)
                return false;
            uint32_t lo = r->lo + (uint32_t)off * r->step;
            out->r[out->n++] = (arrayspec_range){lo, lo + (uint32_t)(room - 1) * r->step, room > 1 ? r->step : 1};
            out->count += room;
            if (out->n == 1 || lo < out->min)
                out->min = lo;
            if (out->n == 1 || out->r[out->n - 1].hi > out->max)
                out->max = out->r[out->n - 1].hi;
            p += room;
        }
    }
    return true;
}

void arrays_released_format(const jarray *a, char *out, size_t len)
{
    arrayspec *s = xmalloc(sizeof *s);
    bool cut = !places_tasks(a, arrays_released(a), s);
    arrayspec_format(s, false, out, len);
    size_t l = strlen(out);
    if (cut && l + 4 < len)
        snprintf(out + l, len - l, ",...");
    free(s);
}

int64_t arrays_cancel_unmade_in(jarray *a, const arrayspec *tasks, enum job_state only, uid_t by, jerr *e)
{
    /* Two sides among those not made yet, by places in the list (side: ranges of step 1): held
     * whole with tasks released from the hold one by one, the released ones (as if not held,
     * released_state) and the others HELD; waiting task by task, not held, those whose own task
     * COMPLETED (QUEUED) and the others PENDING. Otherwise all of them are in one state. */
    bool released = a->held && arrays_released(a)->n && arrays_released_left(a, NULL, 1);
    bool by_task = !a->held && a->corr && arrays_unmade_state(a) == JS_QUEUED && !arrays_canceled(a);
    if (!released && !by_task)
        return arrays_unmade_state(a) == only ? arrays_cancel_unmade(a, tasks, by, e) : 0;
    enum job_state side_state = released ? released_state(a) : JS_QUEUED;
    enum job_state rest_state = released ? JS_HELD : JS_PENDING;
    if (only != side_state && only != rest_state)
        return 0;
    bool rest = only == rest_state; /* (the side's state is never HELD nor PENDING: QUEUED or SCHEDULED) */
    arrayspec *pl = xmalloc(sizeof *pl), *other = xmalloc(sizeof *other), *side = NULL;
    int64_t n = -1;
    if (tasks) {
        if (to_places(a, tasks, pl, e) < 0)
            goto out;
    } else {
        *pl = (arrayspec){.n = 1, .count = a->spec->count - a->made, .min = (uint32_t)a->made,
                          .max = (uint32_t)(a->spec->count - 1)};
        pl->r[0] = (arrayspec_range){(uint32_t)a->made, (uint32_t)(a->spec->count - 1), 1};
    }
    if (by_task) { /* (of those named only: the rest of the array may take more ranges than can be kept) */
        side = xmalloc(sizeof *side);
        if (!corr_places(a, pl, side)) {
            jerr_http(e, 409, "array %s: its tasks not started yet %swhose own task completed are more than %d "
                              "separate ranges; cancel them by name in fewer ranges (rnx job cancel %.8s_[LIST]), "
                              "or the whole array", a->id, tasks ? "named " : "", ARRAYSPEC_MAX_RANGES, a->id);
            ranges_refused(e);
            goto out;
        }
    }
    *other = *pl; /* the rest: those named less the side's; the side: those named less that */
    bool ok = set_minus(other, side ? side : arrays_released(a)) && (rest || set_minus(pl, other));
    if (rest)
        *pl = *other;
    if (!ok || !places_tasks(a, pl, other)) {
        jerr_http(e, 409, "array %s: its tasks not started yet that are %s are more than %d separate ranges; cancel "
                          "them by name in ranges (rnx job cancel %.8s_[LIST]), or the whole array", a->id,
                  by_task ? (rest ? "waiting for their own task" : "no longer waiting for their own task")
                  : rest  ? "still held"
                          : "released from its hold",
                  ARRAYSPEC_MAX_RANGES, a->id);
        ranges_refused(e);
        goto out;
    }
    n = other->n ? arrays_cancel_unmade(a, other, by, e) : 0;
out:
    free(pl), free(other), free(side);
    return n;
}

/* The slot of the made task at the list's place k (*found: its job may have been deleted since,
 * NULL), or where it goes: a->tasks hold the made tasks in the list's order, a->places their
 * places. A binary search over the places, deleted slots included: a request naming 1,000 tasks
 * of a big array costs 1,000 x log(tasks), and deleting a 100,000-task array's tasks front to
 * back costs each the same (a search that walked past deleted slots made that quadratic). */
static size_t slot_of(const jarray *a, int64_t k, bool *found)
{
    *found = false;
    size_t lo = 0, hi = a->ntasks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((int64_t)a->places[mid] == k) {
            *found = true;
            return mid;
        }
        if ((int64_t)a->places[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* j linked in its place (in_place), or last (at start: sorted once all are linked). A task made
 * in the list's order goes last but for those made ahead of it; one made ahead goes among them:
 * a move of the slots after it, pointers only (at most a pass's worth of tasks made so a pass). */
static void link_task(jarray *a, job *j, bool in_place)
{
    if (a->ntasks == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->tasks = xrealloc(a->tasks, a->cap * sizeof *a->tasks);
        a->places = xrealloc(a->places, a->cap * sizeof *a->places);
    }
    j->array = a;
    bool found;
    int64_t k = arrayspec_index(a->spec, (uint32_t)j->array_task);
    size_t at = in_place ? slot_of(a, k, &found) : a->ntasks;
    memmove(&a->tasks[at + 1], &a->tasks[at], (a->ntasks - at) * sizeof *a->tasks);
    memmove(&a->places[at + 1], &a->places[at], (a->ntasks - at) * sizeof *a->places);
    a->tasks[at] = j;
    a->places[at] = (uint32_t)k;
    a->ntasks++;
    a->nlinked++;
    a->started |= job_started(j) || j->preemptions > 0; /* (one requeued ran: its start time went) */
    if (!job_state_terminal(j->state)) {
        j->array_active = true;
        a->active++;
    }
}

/* t added to ahead (ahead_add on a whole copy): false, ahead unchanged, when it does not fit or
 * (e set) memory is out. */
static bool ahead_put(jarray *a, uint32_t t, jerr *e)
{
    arrayspec s;
    arrayspec_copy(&s, arrays_ahead(a));
    return ahead_add(a, arrays_skip(a), &s, t) && list_set(&a->ahead, &s, NULL, e) == 0;
}

void arrays_made(jarray *a, job *j)
{
    jerr e = {0};
    uint32_t t = (uint32_t)j->array_task;
    if (corr_counted(a, t))
        a->corr_ready--; /* (made: no longer one to make) */
    link_task(a, j, true);
    if (a->made < a->spec->count && arrayspec_task(a->spec, a->made) == t)
        a->made++;
    else if (!ahead_put(a, t, &e)) /* (arrays_ahead_ok said it fits) */
        log_err("array %s: task %u was made ahead of its list's order but cannot be kept so%s%s", a->id, t,
                e.msg[0] ? ": " : "", e.msg);
    ev_mark(a);
    changed(a);
    save_logged(a);
}

void arrays_task_changed(job *j)
{
    jarray *a = j->array;
    if (!a)
        return;
    ev_mark(a);
    a->started |= job_started(j);
    bool ended = j->array_active && job_state_terminal(j->state);
    if (ended) {
        j->array_active = false;
        a->active--;
        corr_tell(a, j, +1); /* (a task whose own task it is may go: QUEUED, no longer PENDING) */
    }
    changed(a); /* (and what arrays_count_cached kept goes: the task's state changed) */
    if (ended && arrays_offer(a, 0)) /* (the pass counts what runs) */
        state_want(WANT_SCHEDULE);
}

void arrays_task_deleting(job *j)
{
    jarray *a = j->array;
    if (!a || j->array_gone || !job_state_terminal(j->state))
        return;
    corr_tell(a, j, -1); /* (before it is gone: whose count it was in) */
    j->array_gone = true;
    a->gone[j->state]++;
    if (j->has_exit && j->exit_code > a->gone_exit)
        a->gone_exit = j->exit_code; /* (left as is if the delete is undone: the job still has it) */
    changed(a);
    save_logged(a);
}

void arrays_task_kept(job *j)
{
    jarray *a = j->array;
    if (!a || !j->array_gone)
        return;
    j->array_gone = false;
    a->gone[j->state]--;
    corr_tell(a, j, +1); /* (counted again where it was) */
    changed(a);
}

void arrays_forget_task(job *j)
{
    jarray *a = j->array;
    if (!a)
        return;
    bool found;
    size_t at = slot_of(a, arrayspec_index(a->spec, (uint32_t)j->array_task), &found);
    if (found && a->tasks[at] == j) {
        a->tasks[at] = NULL;
        a->nlinked--;
    }
    if (j->array_active && a->active)
        a->active--;
    j->array = NULL;
    j->array_active = false;
    changed(a);
}

/* ---- reading ---- */

jarray **arrays_named(const char *ref, size_t *n)
{
    idindex_entry *c = idindex_candidates(&by_ref, ref, n);
    jarray **out = xcalloc(*n + 1, sizeof *out);
    for (size_t i = 0; i < *n; i++)
        out[i] = c[i].obj;
    free(c);
    return out;
}

jarray *arrays_by_id(const char *id) { return idindex_get(&by_ref, id); }

jarray *arrays_offer_number(idref *r, const caller *who)
{
    unsigned long long number;
    if (idref_number(r, &number) && number < core.next_seq)
        idref_number_given(r); /* (numbers are shared by jobs and arrays) */
    jarray *a = idref_number(r, &number) ? arrays_by_seq(number) : NULL;
    if (a)
        idref_offer_number(r, a->id, "ARRAY", arrays_visible(a, who), a);
    return a;
}

jarray *arrays_from_seq(uint64_t seq)
{
    size_t lo = 0, hi = core.narrays;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (core.arrays[mid]->seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < core.narrays ? core.arrays[lo] : NULL;
}

jarray *arrays_by_seq(uint64_t seq)
{
    jarray *a = arrays_from_seq(seq);
    return a && a->seq == seq ? a : NULL;
}

job *arrays_task(const jarray *a, uint32_t t, bool *made)
{
    *made = false;
    int64_t k = arrayspec_index(a->spec, t);
    if (k < 0)
        return NULL;
    /* the tasks before the cursor were made (or passed over when canceled before); those after
     * it only when made ahead */
    *made = (uint64_t)k < a->made ? !arrayspec_has(arrays_skip(a), t) : arrayspec_has(arrays_ahead(a), t);
    if (!*made)
        return NULL;
    bool found;
    size_t at = slot_of(a, k, &found);
    return found ? a->tasks[at] : NULL; /* (none: its job was deleted) */
}

enum job_state arrays_unmade_state(const jarray *a)
{
    /* as a job of the same request would be now: a held one is HELD, whatever it waits for (as a
     * job held while PENDING); one scheduled for later is SCHEDULED until its time */
    return a->held ? JS_HELD : a->waiting ? JS_PENDING : a->req.schedule_ms > now_ms() ? JS_SCHEDULED : JS_QUEUED;
}

enum job_state arrays_unmade_task_state(const jarray *a, uint32_t t)
{
    if (a->held && !arrays_task_held(a, t))
        return released_state(a);
    enum job_state st = arrays_unmade_state(a);
    /* (as arrays_count: one still to make that waits for its own task) */
    return st == JS_QUEUED && a->corr && !own_completed(a, t) ? JS_PENDING : st;
}

void arrays_count(const jarray *a, arrays_counts *c)
{
    *c = (arrays_counts){0};
    uint64_t linked = 0;
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i] && !a->tasks[i]->array_gone) {
            c->n[a->tasks[i]->state]++;
            linked++;
        }
    /* the tasks whose jobs were deleted, as they ended (also in deleted, below) */
    for (int s = JS_STOPPED; s < JS_COUNT; s++)
        c->n[s] += a->gone[s];
    /* the tasks at the cursor and after it: made ahead (jobs, counted above), canceled before
     * they were made, or not made yet */
    uint64_t left = a->spec->count - a->made, ahead = ahead_left(a);
    uint64_t skipped_left = skip_left(a);
    uint64_t skipped_before = arrays_skip(a)->n ? arrayspec_count_from(a->spec, 0, arrays_skip(a)) - skipped_left : 0;
    c->n[JS_CANCELED] += skipped_before;
    if (arrays_canceled(a))
        c->n[JS_CANCELED] += left - ahead;
    else {
        c->n[JS_CANCELED] += skipped_left;
        uint64_t unmade = left - skipped_left - ahead;
        uint64_t rel = a->held && arrays_released(a)->n ? arrays_released_left(a, NULL, UINT64_MAX) : 0;
        if (rel > unmade)
            rel = unmade;
        enum job_state st = arrays_unmade_state(a);
        /* task by task: those whose own task COMPLETED QUEUED, the others PENDING (not held:
         * rel is 0) */
        uint64_t go = st == JS_QUEUED && a->corr ? a->corr_ready : unmade - rel;
        if (go > unmade - rel) {
            log_err("array %s: %llu tasks kept as ready to go, of %llu still to make", a->id,
                    (unsigned long long)go, (unsigned long long)(unmade - rel));
            go = unmade - rel;
        }
        c->n[st] += go;
        c->n[JS_PENDING] += unmade - rel - go;
        c->n[released_state(a)] += rel;
        if (a->corr && core.cfg.log_level >= LOG_DEBUG && corr_count(a) != a->corr_ready) {
            /* a change of a task that skipped corr_counted's bookkeeping: a bug, found by the tests */
            log_err("array %s: %llu tasks kept as ready to go, %llu by a count", a->id,
                    (unsigned long long)a->corr_ready, (unsigned long long)corr_count(a));
            abort();
        }
    }
    uint64_t made_jobs = a->made - skipped_before + ahead;
    c->deleted = made_jobs > linked ? made_jobs - linked : 0;
}

void arrays_count_cached(jarray *a, arrays_counts *c)
{
    if (a->counts_ok) {
        *c = a->counts;
        if (core.cfg.log_level >= LOG_DEBUG) {
            arrays_counts now;
            arrays_count(a, &now);
            if (memcmp(&now, c, sizeof now)) {
                log_err("array %s: its counts kept since it ended differ from a count (%llu deleted kept, %llu now)",
                        a->id, (unsigned long long)c->deleted, (unsigned long long)now.deleted);
                abort();
            }
        }
        return;
    }
    arrays_count(a, c);
    if (!arrays_ended(a))
        return;
    for (int s = 0; s < JS_COUNT; s++)
        if (!job_state_terminal((enum job_state)s) && c->n[s])
            return; /* a task not ended yet that the settle step has not seen: not kept */
    a->counts = *c;
    a->counts_ok = true;
}

enum job_state arrays_state(const jarray *a, const arrays_counts *c)
{
    (void)a;
    if (c->n[JS_RUNNING] || c->n[JS_STOPPING] || c->n[JS_SUSPENDED])
        return JS_RUNNING;
    if (c->n[JS_QUEUED] || c->n[JS_PREEMPTED])
        return JS_QUEUED;
    for (int s = 0; s < JS_COUNT; s++)
        if (!job_state_terminal((enum job_state)s) && c->n[s])
            return (enum job_state)s;
    return c->n[JS_FAILED] ? JS_FAILED : c->n[JS_STOPPED] ? JS_STOPPED : c->n[JS_CANCELED] ? JS_CANCELED : JS_COMPLETED;
}

int arrays_exit_code(const jarray *a, const arrays_counts *c)
{
    if (!arrays_ended(a))
        return -1;
    int code = a->gone_exit; /* (the tasks whose jobs were deleted) */
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i] && a->tasks[i]->has_exit && a->tasks[i]->exit_code > code)
            code = a->tasks[i]->exit_code;
    return code == 0 && arrays_state(a, c) != JS_COMPLETED ? 1 : code;
}

bool arrays_ended(const jarray *a)
{
    if (a->active)
        return false;
    if (arrays_canceled(a) || a->made >= a->spec->count)
        return true;
    return skip_left(a) + ahead_left(a) == a->spec->count - a->made;
}

/* ---- acting ---- */

/* Takes the ids lo..hi out of the pieces v[0..*n) (ranges of step 1, at most max of them). */
static bool pieces_cut(arrayspec_range *v, size_t *n, size_t max, uint32_t lo, uint32_t hi)
{
    for (size_t i = 0; i < *n; i++) {
        arrayspec_range p = v[i];
        if (hi < p.lo || lo > p.hi)
            continue;
        if (lo > p.lo && hi < p.hi) { /* in the middle: two pieces */
            if (*n == max)
                return false;
            v[(*n)++] = (arrayspec_range){hi + 1, p.hi, 1};
            v[i].hi = lo - 1;
        } else if (lo <= p.lo && hi >= p.hi) {
            v[i--] = v[--(*n)];
        } else if (lo <= p.lo) {
            v[i].lo = hi + 1;
        } else {
            v[i].hi = lo - 1;
        }
    }
    return true;
}

/* The ids of r (step 1) that the cursor has not passed, as pieces of step 1 into v (at most
 * max): a list that does not ascend ("9,1-3") has its places before the cursor anywhere among
 * r's ids. Per range of the list before the cursor, its ids passed: one cut for a range of step
 * 1, one per id in r for a range with a step. The number of pieces, or -1 past max. */
static int64_t cut_passed(const jarray *a, arrayspec_range r, arrayspec_range *v, size_t max)
{
    size_t n = 1;
    v[0] = r;
    uint64_t p0 = 0;
    for (size_t i = 0; i < a->spec->n && p0 < a->made && n; i++) {
        const arrayspec_range *s = &a->spec->r[i];
        uint64_t count = (uint64_t)(s->hi - s->lo) / s->step + 1, passed = a->made - p0 < count ? a->made - p0 : count;
        uint32_t last = s->lo + (uint32_t)(passed - 1) * s->step; /* the last id of s the cursor passed */
        p0 += count;
        if (last < r.lo || s->lo > r.hi)
            continue;
        if (s->step == 1) {
            if (!pieces_cut(v, &n, max, s->lo, last))
                return -1;
            continue;
        }
        uint32_t from = s->lo >= r.lo ? s->lo : s->lo + (r.lo - s->lo + s->step - 1) / s->step * s->step;
        for (uint32_t t = from; t <= last && t <= r.hi; t += s->step)
            if (!pieces_cut(v, &n, max, t, t))
                return -1;
    }
    return (int64_t)n;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Of a range of tasks named with a step (n, step > 1), those the cursor has not passed: a run of
 * them in one range of the list of that same step (on its grid) as one range of that step into
 * runs (at most rmax), as ahead keeps a run of tasks made (a run of one task: a single id into v);
 * in a range of the list of another step, each task a single id into v (at most vmax), found as
 * the ids the two progressions share (lcm apart), *looked counting them. `rnx job
 * cancel ID_[1-2001:2]` of 0-2000:2,1-2001:2 is one run: kept as ranges of step 1 bridging only
 * ids that are no task, it was 1,001 pieces, refused (409) past ARRAYSPEC_MAX_RANGES. false past
 * either bound. (Each range of the list was walked id by id over n's ids in its span, most of them
 * not its own: ID_[0-3999998:2] of 0-3999998:2 and 53 ranges of two odd ids each spanning the
 * whole list, 1,016 bytes, looked at 106 million ids, 300 ms of the loop a request.) */
static bool stepped_pieces(const jarray *a, arrayspec_range n, arrayspec_range *runs, size_t *nr, size_t rmax,
                           arrayspec_range *v, size_t *nv, size_t vmax, uint64_t *looked)
{
    uint64_t base = 0;
    for (size_t i = 0; i < a->spec->n; base += arrayspec_range_count(&a->spec->r[i]), i++) {
        const arrayspec_range *q = &a->spec->r[i];
        int64_t x = n.lo > q->lo ? n.lo : q->lo, y = n.hi < q->hi ? n.hi : q->hi, s = n.step;
        if (x > y)
            continue;
        /* q's first task the cursor has not passed */
        int64_t from = a->made > base ? (int64_t)q->lo + (int64_t)(a->made - base) * q->step : q->lo;
        if (q->lo < q->hi && q->step == n.step && ((int64_t)n.lo - q->lo) % s == 0) {
            x = x > from ? x : from;
            x += ((s - (x - (int64_t)n.lo) % s) % s); /* (on the grid) */
            y -= (y - (int64_t)n.lo) % s;
            if (x > y)
                continue;
            if (x < y ? *nr == rmax : *nv == vmax)
                return false;
            if (x < y)
                runs[(*nr)++] = (arrayspec_range){(uint32_t)x, (uint32_t)y, (uint32_t)s};
            else
                v[(*nv)++] = (arrayspec_range){(uint32_t)x, (uint32_t)x, 1};
            continue;
        }
        /* n's ids from x (and from the cursor's) up to y that are q's: lcm(s, q's step) apart */
        int64_t qs = q->lo < q->hi ? q->step : 1, lo = x > from ? x : from;
        if (lo > y)
            continue;
        lo += (s - (lo - (int64_t)n.lo) % s) % s; /* (on n's grid) */
        int64_t l = s / gcd64(s, qs) * qs;
        for (int64_t z = arrayspec_first_common(lo, s, y, q->lo, qs, q->hi); z >= 0 && z <= y; z += l) {
            (*looked)++;
            if (*nv == vmax)
                return false;
            v[(*nv)++] = (arrayspec_range){(uint32_t)z, (uint32_t)z, 1};
        }
    }
    return true;
}

static int range_lo_cmp(const void *x, const void *y)
{
    const arrayspec_range *p = x, *q = y;
    return (p->lo > q->lo) - (p->lo < q->lo);
}

/* by step, then by where on it (lo mod step), then by lo: the ranges that one range of their step
 * could hold side by side */
static int range_grid_cmp(const void *x, const void *y)
{
    const arrayspec_range *p = x, *q = y;
    if (p->step != q->step)
        return (p->step > q->step) - (p->step < q->step);
    if (p->lo % p->step != q->lo % q->step)
        return (p->lo % p->step > q->lo % q->step) - (p->lo % p->step < q->lo % q->step);
    return range_lo_cmp(x, y);
}

/* s's ranges (disjoint) in the order of their first ids, counted again. */
static void set_sort(arrayspec *s)
{
    qsort(s->r, s->n, sizeof *s->r, range_lo_cmp);
    s->count = 0;
    for (size_t i = 0; i < s->n; i++)
        s->count += arrayspec_range_count(&s->r[i]);
    set_bounds(s);
}

/* s's disjoint ranges of one step that follow each other on its grid (0-98:2 and 100-200:2) as
 * one (0-200:2): the same ids. */
static void set_join(arrayspec *s)
{
    qsort(s->r, s->n, sizeof *s->r, range_grid_cmp);
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        arrayspec_range *p = m ? &s->r[m - 1] : NULL, c = s->r[i];
        if (p && p->step == c.step && (uint64_t)p->hi + p->step == c.lo)
            p->hi = c.hi;
        else
            s->r[m++] = c;
    }
    s->n = m;
    set_sort(s);
}

/* s with sub's ranges added (disjoint from s's): false past ARRAYSPEC_MAX_RANGES. */
static bool set_append(arrayspec *s, const arrayspec *sub)
{
    if (s->n + sub->n > ARRAYSPEC_MAX_RANGES)
        return false;
    memcpy(&s->r[s->n], sub->r, sub->n * sizeof *sub->r);
    s->n += sub->n;
    return true;
}

/* skip with the ids of tasks added (those the cursor passed left out: they were made), less the
 * tasks made ahead (jobs, canceled as jobs: array_ctl_act), into *out: disjoint ranges of any
 * step, in the order of their first ids, kept as ahead is (a run of one range of the list's
 * tasks as one range of its step; a range of step 1 may also hold ids that are no task). Built
 * from three parts that share no id: p, the ranges of step 1 (skip's, and those named with step
 * 1, merged where they touch); skip's ranges with a step, less p; the runs named with a step
 * (stepped_pieces), less skip and p. Then runs that follow each other on one grid are joined, the
 * tasks made ahead taken out, and p's single ids join the ranges next to them as ahead_add joins
 * a task. 0 (skip as it was in *was: list_set), or 409 (nothing changed) when that needs more
 * than ARRAYSPEC_MAX_RANGES ranges. */
static int merge_skip(jarray *a, const arrayspec *tasks, arrayspec **was, jerr *e)
{
    const size_t max = 4 * ARRAYSPEC_MAX_RANGES;
    bool ascends = true;
    for (size_t i = 1; i < a->spec->n; i++)
        ascends &= a->spec->r[i - 1].hi < a->spec->r[i].lo;
    /* v: ranges of step 1 (cut_passed's pieces, and single ids among them); runs: named with a step */
    size_t vcap = arrays_skip(a)->n + tasks->n + 2 * max, nv = 0, nr = 0;
    uint64_t looked = 0; /* ids stepped_pieces looked at one by one */
    bool stepped = false;
    arrayspec_range *v = xcalloc(vcap, sizeof *v), *runs = xcalloc(ARRAYSPEC_MAX_RANGES, sizeof *runs);
    arrayspec *p = xmalloc(sizeof *p), *r = xmalloc(sizeof *r), *nw = xmalloc(sizeof *nw);
    *p = *r = *nw = (arrayspec){.n = 0};
    bool ok = true;
    for (size_t i = 0; i < arrays_skip(a)->n; i++)
        if (arrays_skip(a)->r[i].step == 1)
            v[nv++] = arrays_skip(a)->r[i];
    /* The named tasks the cursor passed were made (or were canceled before already): they are
     * not kept as canceled before they were made, which would count each twice (its job, and
     * CANCELED) and hide its job from ID_T. Where the list's ranges ascend (each after the one
     * before it, as lists are written), the ids below the cursor's; otherwise what the list's
     * places before the cursor leave of a range (cut_passed), one by one for a range with a step. */
    uint32_t from = a->made < a->spec->count ? arrayspec_task(a->spec, a->made) : ARRAYSPEC_MAX_ID + 1;
    for (size_t i = 0; ok && i < tasks->n; i++) {
        arrayspec_range n = tasks->r[i];
        if (n.step == 1 && !ascends) {
            int64_t got = nv < vcap ? cut_passed(a, n, v + nv, vcap - nv) : -1;
            ok = got >= 0;
            nv += got > 0 ? (size_t)got : 0;
        } else if (n.step == 1) {
            if (n.lo < from)
                n.lo = from;
            if (n.lo <= n.hi && !(ok = nv < vcap))
                break;
            if (n.lo <= n.hi)
                v[nv++] = n;
        } else {
            ok = stepped_pieces(a, n, runs, &nr, ARRAYSPEC_MAX_RANGES, v, &nv, vcap, &looked);
            stepped = true;
        }
    }
    if (stepped)
        log_debug("array %s: the tasks named with a step other than their ranges' looked at %llu ids one by one",
                  a->id, (unsigned long long)looked);
    /* p: v merged where they touch; a single id named that skip holds already (in one of its
     * ranges with a step) left there whole, not cut out of it */
    size_t m = 0;
    for (size_t i = 0; i < nv; i++) {
        const arrayspec_range *in = v[i].lo == v[i].hi ? arrayspec_range_of(arrays_skip(a), v[i].lo) : NULL;
        if (!in || in->step == 1)
            v[m++] = v[i];
    }
    qsort(v, m, sizeof *v, range_lo_cmp);
    for (size_t i = 0; ok && i < m; i++) {
        if (p->n && v[i].lo <= (uint64_t)p->r[p->n - 1].hi + 1) {
            if (v[i].hi > p->r[p->n - 1].hi)
                p->r[p->n - 1].hi = v[i].hi;
        } else if (p->n == ARRAYSPEC_MAX_RANGES) {
            ok = false;
        } else {
            p->r[p->n++] = (arrayspec_range){v[i].lo, v[i].hi, 1};
        }
    }
    if (ok)
        set_sort(p);
    /* r: skip's ranges with a step, and the runs named, less p (and the runs less skip) */
    for (size_t i = 0; ok && i < arrays_skip(a)->n; i++)
        if (arrays_skip(a)->r[i].step != 1)
            r->r[r->n++] = arrays_skip(a)->r[i];
    memcpy(nw->r, runs, nr * sizeof *runs);
    nw->n = nr;
    ok = ok && set_minus(r, p) && set_minus(nw, arrays_skip(a)) && set_minus(nw, p) && set_append(r, nw);
    if (ok) {
        set_join(r);
        /* a task made ahead of the cursor is a job: canceled as one (array_ctl_act), not here */
        ok = !arrays_ahead(a)->n || (set_minus(r, arrays_ahead(a)) && set_minus(p, arrays_ahead(a)));
    }
    /* p's ranges into r; its single ids joined to those next to them as ahead's tasks are */
    for (size_t i = 0; ok && i < p->n; i++)
        if (p->r[i].lo != p->r[i].hi) {
            ok = r->n < ARRAYSPEC_MAX_RANGES;
            if (ok)
                r->r[r->n++] = p->r[i];
        }
    if (ok)
        set_sort(r);
    for (size_t i = 0; ok && i < p->n; i++)
        if (p->r[i].lo == p->r[i].hi)
            ok = ahead_add(a, arrays_ahead(a), r, p->r[i].lo);
    int rc = ok ? list_set(&a->skip, r, was, e)
                : (jerr_http(e, 409, "tasks: too many separate tasks to cancel before they start (at most %d ranges "
                                     "are kept); cancel them in ranges, or the whole array", ARRAYSPEC_MAX_RANGES),
                   ranges_refused(e));
    free(v), free(runs), free(p), free(r), free(nw);
    return rc;
}

int64_t arrays_cancel_unmade(jarray *a, const arrayspec *tasks, uid_t by, jerr *e)
{
    if (arrays_canceled(a))
        return 0;
    uint64_t left = a->spec->count - a->made, skipped = skip_left(a);
    int64_t n;
    if (!tasks) {
        a->canceled_by = by;
        a->corr_ready = 0;
        n = (int64_t)(left - skipped - ahead_left(a));
    } else {
        /* one task (the pass's cancel of one whose own task never ran, ID_7): whether it counted
         * in corr_ready, else a count again once they are canceled */
        uint32_t one = tasks->count == 1 ? tasks->r[0].lo : 0;
        bool counted = tasks->count == 1 && corr_counted(a, one);
        arrayspec *was = NULL;
        int rc = merge_skip(a, tasks, &was, e);
        /* held whole with tasks released from it: those left must all still fit in ahead once made
         * (a task canceled between two cuts their run in two) */
        uint32_t bad;
        if (rc == 0 && a->held && arrays_released(a)->n && !released_fit(a, &bad)) {
            list_back(&a->skip, was), was = NULL;
            rc = jerr_http(e, 409, "array %s: canceling these would leave the tasks released from its hold one by "
                                   "one (task %u on) needing more than %d ranges ahead of its list's order to be "
                                   "made; nothing canceled (cancel them in fewer ranges, or the whole array)",
                           a->id, bad, ARRAYSPEC_MAX_RANGES);
            ranges_refused(e);
        }
        free(was);
        /* (also where rc < 0: a save that failed leaves its change in skip, merge_skip) */
        if (tasks->count != 1)
            a->corr_ready = corr_count(a);
        else if (counted && !still_to_make(a, one, true))
            a->corr_ready--;
        if (rc < 0)
            return -1;
        n = (int64_t)(arrayspec_count_from(a->spec, a->made, arrays_skip(a)) - skipped);
    }
    if (n > 0)
        a->canceled_ms = now_ms();
    ev_mark(a);
    a->ev_canceled |= n > 0;
    changed(a); /* (before the save: a failed one leaves the change in memory) */
    if (save(a, e) < 0)
        return -1;
    if (n)
        log_info("array %s: %lld tasks not started yet canceled by uid %u", a->id, (long long)n, (unsigned)by);
    return n;
}

void arrays_release_wait(jarray *a)
{
    a->waiting = false;
    a->joined_ms = qclock_now(); /* it joins the queue now, as a job let go by its dependencies (job.h) */
    ev_mark(a);
    changed(a);
    /* its row (after_met, depend.c) in the transaction of what let it go: a restart does not
     * decide it again */
    save_logged(a);
    state_want(WANT_SCHEDULE);
}

void arrays_cancel_dependency(jarray *a, const char *why) { arrays_cancel_by_joblet(a, ARRAYS_CANCELED_DEPENDENCY, why); }

void arrays_cancel_by_joblet(jarray *a, int64_t how, const char *why)
{
    a->waiting = false;
    a->canceled_by = how;
    a->corr_ready = 0;
    a->canceled_ms = now_ms();
    ev_mark(a);
    free(a->canceled_why);
    a->canceled_why = xstrdup(why);
    changed(a);
    save_logged(a);
}

int arrays_set_held(jarray *a, bool held, uid_t by, jerr *e)
{
    if (a->held == held && held && arrays_released(a)->n) { /* held whole again: those released with it */
        arrayspec *was = a->released;
        a->released = NULL;
        int rc = save(a, e);
        if (rc < 0)
            a->released = was;
        else
            free(was);
        ev_mark(a);
        changed(a);
        return rc;
    }
    if (a->held == held)
        return 0;
    a->held = held;
    a->held_by = held ? (int64_t)by : -1;
    free(a->released);
    a->released = NULL; /* (released whole, or held again whole: none is apart) */
    if (!held)
        a->joined_ms = qclock_now(); /* its place in the queue is from now (job.h, joined_ms) */
    ev_mark(a);
    changed(a);
    if (!held)
        state_want(WANT_SCHEDULE);
    return save(a, e);
}

int arrays_update(jarray *a, job_req *req, jerr *e)
{
    arrayspec now;
    if (!req->array || strlen(req->array) > (size_t)jobreq_fields[JR_ARRAY].max)
        return jerr_field(e, "array_throttle", "array_throttle: the array's list with its %%N would be longer than "
                                               "%lld bytes", (long long)jobreq_fields[JR_ARRAY].max);
    if (arrayspec_parse(req->array, "array", true, &now, e) < 0)
        return -1;
    char tasks[2048], had[2048];
    arrayspec_format(&now, false, tasks, sizeof tasks);
    arrayspec_format(a->spec, false, had, sizeof had);
    if (strcmp(tasks, had))
        return jerr_field(e, "array", "array: an array's tasks stay %s; only its %%N can change", had);
    job_req was = a->req;
    uint32_t was_throttle = a->spec->throttle;
    a->req = *req;
    a->spec->throttle = now.throttle;
    if (save(a, e) < 0) {
        a->req = was;
        a->spec->throttle = was_throttle;
        return -1;
    }
    jobreq_free(&was);
    *req = (job_req){0};
    ev_mark(a);
    changed(a);
    state_want(WANT_SCHEDULE);
    return 0;
}

int arrays_delete_row(jarray *a, jerr *e)
{
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i])
            return jerr_http(e, 409, "array %s still has task %lld's job", a->id, (long long)a->tasks[i]->array_task);
    if (!arrays_ended(a))
        return jerr_http(e, 409, "array %s has tasks still to run; cancel it first (rnx job cancel %s)", a->id, a->id);
    return db_array_delete(core.db, a->id, e);
}

void arrays_delete_rest(jarray *a)
{
    if (a->req.nuploads) {
        /* the files its tasks' /work were copies of (submit.c) */
        char dir[700];
        snprintf(dir, sizeof dir, "%s/%s", core.jobs_dir, a->id);
        workfs_remove(a->owner_uid, dir);
    }
    log_info("array %s deleted", a->id);
    drop(a);
}

/* ---- start ---- */

/* Arrays whose stored request cannot be read (db_array.unreadable), with why: their tasks not made
 * yet are canceled by joblet once every array is loaded (as db_load_jobs ends a waiting job so):
 * a task is never made without its command or its secrets. */
typedef struct unreadable_array {
    char id[37];
    char *why;
} unreadable_array;

typedef struct load_ctx {
    unreadable_array *bad;
    size_t nbad;
} load_ctx;

static void load_one(db_array *r, void *arg)
{
    load_ctx *lc = arg;
    jarray *a = xcalloc(1, sizeof *a);
    jerr e = {0};
    if (list_parse(&a->spec, r->spec, "array", true, &e) < 0 || list_parse(&a->skip, r->skip, "skip", false, &e) < 0 ||
        list_parse(&a->ahead, r->ahead, "ahead", false, &e) < 0 ||
        list_parse(&a->released, r->held ? r->released : NULL, "released", false, &e) < 0) {
        log_err("array %s: its stored task list cannot be read: %s; it is left out", r->id, e.msg);
        free_one(a);
        return;
    }
    memcpy(a->id, r->id, sizeof a->id);
    a->seq = r->seq;
    a->name = r->name ? xstrdup(r->name) : NULL;
    a->owner_uid = (uid_t)r->owner_uid;
    a->owner_gid = (gid_t)r->owner_gid;
    a->req = r->req;
    r->req = (job_req){0};
    a->created_ms = r->created_ms;
    a->made = r->made > a->spec->count ? a->spec->count : r->made;
    a->canceled_by = r->canceled_by;
    a->canceled_why = r->canceled_by < -1 && r->canceled_why ? xstrdup(r->canceled_why) : NULL;
    a->held = r->held;
    a->held_by = r->held ? r->held_by : -1;
    for (int s = JS_STOPPED; s < JS_COUNT; s++)
        a->gone[s] = r->gone[s - JS_STOPPED];
    a->gone_exit = r->gone_exit;
    a->after_met = r->after_met;
    a->joined_ms = r->joined_ms;
    a->canceled_ms = r->canceled_ms;
    qclock_seen(a->created_ms);
    qclock_seen(a->joined_ms);
    memcpy(a->wf_id, r->wf_id, sizeof a->wf_id);
    a->wf_index = r->wf_index; /* linked to its workflow by workflow_resume_all */
    if (r->unreadable && !arrays_canceled(a) && a->made < a->spec->count) {
        lc->bad = xrealloc(lc->bad, (lc->nbad + 1) * sizeof *lc->bad);
        lc->bad[lc->nbad] = (unreadable_array){.why = xprintf("canceled: joblet cannot make its tasks: %s",
                                                             r->unreadable)};
        memcpy(lc->bad[lc->nbad++].id, a->id, sizeof a->id);
    }
    add(a);
}

/* At start the tasks were linked in the order they were made: into the list's order when some
 * were made ahead of it (once, O(tasks log tasks); already in order, one look at each). */
typedef struct placed_task {
    int64_t k;
    job *j;
} placed_task;

static int placed_cmp(const void *x, const void *y)
{
    const placed_task *a = x, *b = y;
    return (a->k > b->k) - (a->k < b->k);
}

static void sort_tasks(jarray *a)
{
    bool sorted = true;
    for (size_t i = 1; i < a->ntasks && sorted; i++)
        sorted = arrayspec_index(a->spec, (uint32_t)a->tasks[i - 1]->array_task) <
                 arrayspec_index(a->spec, (uint32_t)a->tasks[i]->array_task);
    if (sorted)
        return;
    placed_task *v = xcalloc(a->ntasks, sizeof *v);
    for (size_t i = 0; i < a->ntasks; i++)
        v[i] = (placed_task){arrayspec_index(a->spec, (uint32_t)a->tasks[i]->array_task), a->tasks[i]};
    qsort(v, a->ntasks, sizeof *v, placed_cmp);
    for (size_t i = 0; i < a->ntasks; i++) {
        a->tasks[i] = v[i].j;
        a->places[i] = (uint32_t)v[i].k;
    }
    free(v);
}

int arrays_load(jerr *e)
{
    load_ctx lc = {0};
    if (db_array_load(core.db, load_one, &lc, e) < 0) {
        for (size_t i = 0; i < lc.nbad; i++)
            free(lc.bad[i].why);
        free(lc.bad);
        return -1;
    }
    /* tasks to their arrays: a task's array is most often the previous task's */
    jarray *last = NULL;
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        if (!j->array_id[0])
            continue;
        if (!last || strcmp(last->id, j->array_id))
            last = arrays_by_id(j->array_id);
        if (!last) {
            log_warn("job %s: task %lld of array %s, which is not known; it stays a job of its own", j->id,
                     (long long)j->array_task, j->array_id);
            continue;
        }
        link_task(last, j, false);
    }
    for (size_t i = 0; i < core.narrays; i++) {
        sort_tasks(core.arrays[i]);
        changed(core.arrays[i]); /* (counted by add() before their tasks were linked) */
    }
    for (size_t i = 0; i < lc.nbad; i++) {
        jarray *a = arrays_by_id(lc.bad[i].id);
        if (a) {
            log_err("array %s: %s", a->id, lc.bad[i].why);
            arrays_cancel_by_joblet(a, ARRAYS_CANCELED_UNMAKEABLE, lc.bad[i].why);
        }
        free(lc.bad[i].why);
    }
    free(lc.bad);
    return 0;
}

void arrays_free_all(void)
{
    idindex_free(&by_ref);
    free(open_v);
    open_v = NULL;
    open_n = open_cap = 0;
    marklist_free(&changed_list);
    for (size_t i = 0; i < core.narrays; i++)
        free_one(core.arrays[i]);
    free(core.arrays);
    core.arrays = NULL;
    core.narrays = core.arrays_cap = 0;
    free(owners);
    owners = NULL;
    nowners = owners_cap = 0;
}
