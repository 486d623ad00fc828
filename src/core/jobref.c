/* Job and array references (jobref.h). */
#include "jobref.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../common/idref.h"
#include "jobs.h"

/* ref as a job's or an array's id, number, prefix or name: out->a or out->j (the other NULL). */
static int find_plain(const char *ref, const caller *who, enum idref_want want, jobref *out, jerr *e)
{
    out->a = NULL;
    out->j = NULL;
    idref r;
    if (idref_start(&r, "job", "--name", ref, e) < 0)
        return -1;
    idref_want(&r, want);
    jarray *numbered = arrays_offer_number(&r, who); /* (a job's number: jobs_offer) */
    size_t narr;
    jarray **arrs = arrays_named(ref, &narr);
    bool hit = false;
    for (size_t i = 0; i < narr && !hit; i++)
        hit = idref_offer(&r, arrs[i]->id, arrs[i]->name, "ARRAY", arrays_ended(arrs[i]), arrs[i]->owner_uid,
                          arrays_visible(arrs[i], who), arrs[i]);
    if (!hit)
        jobs_offer(&r, who, false); /* a task answers to its own id, not to its array's name */
    void *res = idref_result(&r, e);
    if (res && res == numbered) {
        out->a = numbered;
        free(arrs);
        return 0;
    }
    for (size_t i = 0; res && i < narr; i++)
        if (arrs[i] == res) {
            out->a = arrs[i];
            free(arrs);
            return 0;
        }
    free(arrs);
    if (!res)
        return -1;
    out->j = res;
    return 0;
}

/* How many ids of lo, lo+step, ... hi (hi one of them) spec has: O(spec's ranges). */
static uint64_t held_of(uint32_t lo, uint32_t hi, uint32_t step, const arrayspec *spec)
{
    arrayspec one = {.n = 1};
    one.r[0] = (arrayspec_range){.lo = lo, .hi = hi, .step = step};
    return arrayspec_count_from(&one, 0, spec);
}

/* Whether tasks names an id spec does not have: true and the first such in tasks' order. By
 * ranges (how many of each range spec has, and a binary search in the first range short of
 * some), never id by id, so the answer is the same however many tasks the list names:
 * O(ranges x spec's ranges x log(ids)). */
static bool first_missing(const arrayspec *tasks, const arrayspec *spec, uint32_t *missing)
{
    for (size_t i = 0; i < tasks->n; i++) {
        arrayspec_range r = tasks->r[i];
        uint64_t n = (uint64_t)(r.hi - r.lo) / r.step + 1;
        if (held_of(r.lo, r.hi, r.step, spec) == n)
            continue;
        /* the smallest k whose prefix lo .. lo+k*step has fewer than k+1 ids of spec */
        uint64_t lo = 0, hi = n - 1;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (held_of(r.lo, r.lo + (uint32_t)mid * r.step, r.step, spec) < mid + 1)
                hi = mid;
            else
                lo = mid + 1;
        }
        *missing = r.lo + (uint32_t)lo * r.step;
        return true;
    }
    return false;
}

/* ref is no job's, and before its last '_' an array's: a task reference typed wrong ("3f2a_",
 * "3f2a_[", "3f2a_[]", "3f2a_x"), said so with the forms a task takes and the array's tasks,
 * rather than as a job of that name missing. e unchanged otherwise. */
static void jobref_bad_tasks(const char *ref, const caller *who, enum idref_want want, jerr *e)
{
    const char *us = strrchr(ref, '_');
    char base[160];
    if (!us || us == ref || (size_t)(us - ref) >= sizeof base)
        return;
    memcpy(base, ref, (size_t)(us - ref));
    base[us - ref] = 0;
    jobref b;
    jerr be = {0};
    if (find_plain(base, who, want, &b, &be) < 0 || !b.a)
        return;
    char list[256];
    arrayspec_format_cut(b.a->spec, list, sizeof list);
    jerr_field(e, "tasks", "'%s' is not a task of array %s: name a task as %s_N or several as %s_[LIST] (Slurm's "
                           "--array syntax: %s_[3-5,9]); its tasks are %s", ref, b.a->id, base, base, base, list);
}

int jobref_find(const char *ref, const caller *who, enum idref_want want, jobref *out, jerr *e)
{
    memset(out, 0, offsetof(jobref, tasks));
    out->tasks.n = 0;
    char base[160];
    jerr se = {0};
    int form = arrayspec_split_ref(ref, base, sizeof base, &out->tasks, &se);
    if (form != 0) {
        /* ID_T / ID_[LIST], when ID is an array (else the whole text may be a job's name) */
        jobref b;
        jerr be = {0};
        if (find_plain(base, who, want, &b, &be) == 0 && b.a) {
            if (form < 0) {
                *e = se;
                return -1;
            }
            /* the whole text is also another owner's job's (or array's) name or id prefix: not the
             * array's to win (one who sees both would be led to a task of an array named so as to
             * shadow another's job named train_3) */
            jobref whole;
            jerr we = {0};
            if (find_plain(ref, who, want, &whole, &we) == 0 &&
                (whole.a ? whole.a->owner_uid : whole.j->owner_uid) != b.a->owner_uid) {
                jerr_http(e, 409, "'%s' names task(s) of array %.8s and %s %.8s (another owner's); give the one's "
                                  "full id", ref, b.a->id, whole.a ? "array" : "job", whole.a ? whole.a->id : whole.j->id);
                e->code = EEXIST;
                return -1;
            }
            out->a = b.a;
            uint32_t missing;
            if (first_missing(&out->tasks, b.a->spec, &missing)) {
                char list[256]; /* its ids alone: "0-10:2", not its %N ("0-10:2%2") */
                arrayspec_format_cut(b.a->spec, list, sizeof list);
                return jerr_http(e, 404, "array %s has no task %u; its tasks are %s (name only those)", b.a->id,
                                 missing, list); /* (out->a: the array) */
            }
            /* one task that was made: the job itself */
            bool made;
            job *j = out->tasks.count == 1 ? arrays_task(b.a, out->tasks.r[0].lo, &made) : NULL;
            if (j) {
                out->j = j;
                out->a = NULL;
                return 0;
            }
            out->tasks_named = true;
            return 0;
        }
    }
    if (find_plain(ref, who, want, out, e) == 0)
        return 0;
    if (e->http == 404 && form == 0)
        jobref_bad_tasks(ref, who, want, e);
    return -1;
}

/* What a request on one job reads or makes, in a user's words, with the rnx command that makes it
 * ("GET logs" is the API's, and a user typed rnx job log); NULL for a request that no job takes
 * (an action unknown, or one that a job takes by another method: POST logs), as one_job answers
 * it (404). method NULL: any (the route itself says which it takes). */
static const char *action_words(const char *method, const char *action)
{
    static const char *const words[][3] = {
        {"logs", "GET", "output (rnx job log)"},         {"metrics", "GET", "usage (rnx job metrics)"},
        {"archive", NULL, "files (rnx job cp)"},          {"attach", NULL, "terminal (rnx job attach)"},
        {"exec", NULL, "processes to enter (rnx job exec)"},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(action, words[i][0]) && (!words[i][1] || !strcmp(method, words[i][1])))
            return words[i][2];
    return NULL;
}

int jobref_not_a_job(const jarray *a, const arrayspec *tasks, const char *method, const char *action, jerr *e)
{
    char list[256] = "";
    const char *words = action_words(method, action);
    if (tasks)
        arrayspec_format_cut(tasks, list, sizeof list);
    /* no job takes it: not found, as for a job (told to name a task, a user was then answered
     * "no route" for it) */
    if (!words)
        return jerr_http(e, 404, "no route %s /v1/jobs/%s%s%s%s/%s: neither an array nor a job takes it; see "
                                 "docs/api.md", method, a->id, tasks ? "_[" : "", list, tasks ? "]" : "", action);
    if (tasks && tasks->count == 1)
        return jerr_http(e, 409, "task %u of array %s has not started yet: it has no %s", tasks->r[0].lo, a->id,
                         action);
    if (tasks) /* several tasks named: each is its own job for this */
        return jerr_http(e, 400, "tasks [%s] of array %s: each task has its own %s: name one (%.8s_%u)", list,
                         a->id, words, a->id, tasks->r[0].lo);
    return jerr_http(e, 400, "%s is a job array (%llu tasks), which has no %s of its own: name one task, "
                             "e.g. %.8s_%u", a->id, (unsigned long long)a->spec->count, words, a->id, a->spec->min);
}
