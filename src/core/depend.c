/* Jobs that wait for other jobs (depend.h). */
#include "depend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/arrayspec.h"
#include "../common/idindex.h"
#include "../common/log.h"
#include "../common/util.h"
#include "qclock.h"
#include "arrays.h"
#include "depend_rule.h"
#include "job_events.h"
#include "jobref.h"
#include "jobs.h"
#include "state.h"

static void describe_single(const job *j, bool after_said, char *out, size_t len);

void depend_release(job *j, const char *detail)
{
    j->state = job_state_after_hold(false, job_ran_before(j), j->scheduled_ms, now_ms());
    j->after_met = true; /* (in the same row, so the same commit, as the state that lets it go) */
    j->joined_ms = qclock_now(); /* it joins the queue now, as a held job released (job.h) */
    job_event(j, JE_RELEASED, -1, "%s", detail);
    job_save(j);
    state_want(WANT_SCHEDULE);
}

void depend_cancel(job *j, const char *why)
{
    free(j->error);
    j->error = xstrdup(why);
    job_finish(j, JS_CANCELED, "dependency");
}

int depend_resolve(job_req *req, const caller *as, bool for_owner, jerr *e)
{
    for (size_t i = 0; i < req->nafter; i++) {
        const char *ref = req->after[i].job;
        /* as every route under /v1/jobs/{ref} resolves it (core/jobref.h): a job, or an array (by
         * its id, number, name or prefix: all its tasks), or ID_T, an array's task (Slurm's
         * afterok:123_7): the job it was made, by its own id */
        jobref r;
        jerr fe = {0};
        const char *id = NULL;
        if (jobref_find(ref, as, IDREF_ANY, &r, &fe) < 0) {
            if (fe.http == 409 || fe.http == 400 || r.a) /* several match (the message lists them, the
                                                          * caller's own), a bad list, a task not the array's */
                return jerr_field(e, "after", "after: %s", fe.msg);
            /* missing, or another user's: the same words either way; Slurm's type alone
             * (--dependency=afterok, its ids left out) is read as a job's name, said so */
            char hint[120] = "";
            if (!strncmp(ref, "after", 5) && jobreq_after_state_parse(ref) >= 0)
                snprintf(hint, sizeof hint, "; Slurm's %s needs the jobs' ids: %s:ID[:ID...]", ref, ref);
            return jerr_field(e, "after", "after: no job '%s' (by id, number, unique id prefix or name) among the "
                                          "jobs %s may see%s", ref, for_owner ? "the job's owner" : "you", hint);
        }
        if (r.tasks_named) {
            if (r.tasks.count != 1)
                return jerr_field(e, "after", "after: '%s' names several tasks; wait for one task (%.8s_%u) or for "
                                              "the whole array (%.8s)", ref, r.a->id, r.tasks.r[0].lo, r.a->id);
            bool made;
            arrays_task(r.a, r.tasks.r[0].lo, &made);
            if (made)
                return jerr_field(e, "after", "after: task %u of array %s was deleted; wait for the whole array "
                                              "(%.8s), or task by task from an array (%.8s:corr)", r.tasks.r[0].lo,
                                  r.a->id, r.a->id, r.a->id);
            /* (Slurm's afterok:123_4 names a task pending as any: here a task is a job once made,
             * which its start does, or a hold of it where array_ctl.c's unmade_named takes one) */
            uint32_t t = r.tasks.r[0].lo;
            bool holdable = !r.a->waiting && !r.a->held && !arrays_canceled(r.a) && !depend_tasks_by_task(r.a) &&
                            !arrayspec_has(arrays_skip(r.a), t) && arrays_ahead_ok(r.a, t);
            char hold[96] = "";
            if (holdable)
                snprintf(hold, sizeof hold, ", or once held: rnx job hold %.8s_%u, then release it", r.a->id, t);
            return jerr_field(e, "after", "after: task %u of array %s has not started yet (it is a job once it starts%s); "
                                          "wait for the whole array (%.8s), or task by task from an array (%.8s:corr)",
                              t, r.a->id, hold, r.a->id, r.a->id);
        }
        id = r.a ? r.a->id : r.j->id;
        if (strcmp(ref, id)) {
            free(req->after[i].job);
            req->after[i].job = xstrdup(id);
        }
    }
    return 0;
}

/* What a dependency is: a job, or a job array (all its tasks), found by the seq it was linked
 * with (0: gone) and checked by id (a seq given again after a restart). */
typedef struct target {
    job *j;
    jarray *a;
} target;

static uint64_t looked; /* dependency_of's calls and single_holder's jobs: depend_looked */

uint64_t depend_looked(void) { return looked; }

static target dependency_of(const job_req *req, const uint64_t *after_seq, size_t k)
{
    looked++;
    uint64_t seq = after_seq ? after_seq[k] : 0;
    job *d = seq ? jobs_by_seq(seq) : NULL;
    if (d && !strcmp(d->id, req->after[k].job))
        return (target){d, NULL};
    jarray *a = seq ? arrays_by_seq(seq) : NULL;
    if (a && !strcmp(a->id, req->after[k].job))
        return (target){NULL, a};
    return (target){NULL, NULL};
}

static job *dependency(const job *j, size_t k) { return dependency_of(&j->req, j->after_seq, k).j; }

/* While array_changed decides an array's dependents: its counts, counted once for them all (a
 * running array's are not kept: each of 1,000 dependents counted its 100,000 tasks again, at each
 * task's start and end). NULL when none. */
static struct {
    const jarray *a;
    arrays_counts c;
    size_t n;           /* its dependents: what a check of each costs */
} counted;

/* An array as a dependency: started once a task was launched, ended once every task ended, in the
 * state of its tasks together (arrays_state: COMPLETED only when every task completed). */
static depend_seen seen_of(target t)
{
    if (t.j)
        return (depend_seen){.exists = true, .started = job_started(t.j), .state = t.j->state};
    if (!t.a)
        return (depend_seen){.exists = false, .state = JS_CANCELED};
    arrays_counts c;
    if (t.a == counted.a) {
        c = counted.c;
        static int64_t checked_ns;
        /* (the tests' level: a change meanwhile is a bug) */
        if (core.cfg.log_level >= LOG_DEBUG && state_check_due(&checked_ns, t.a->ntasks * counted.n)) {
            arrays_counts now;
            arrays_count(t.a, &now);
            if (memcmp(&now, &c, sizeof now)) {
                log_err("array %s: its tasks changed while its dependents were decided", t.a->id);
                abort();
            }
        }
    } else
        arrays_count_cached(t.a, &c); /* (an ended array's counts kept: 10,000 jobs waiting on it count it once) */
    enum job_state st = arrays_state(t.a, &c);
    return (depend_seen){.exists = true, .started = arrays_started(t.a),
                         .state = arrays_ended(t.a) || !job_state_terminal(st) ? st : JS_RUNNING};
}

static const char *state_words(target t, const uint64_t *after_seq)
{
    return t.j || t.a ? job_state_name(seen_of(t).state) : after_seq ? "deleted" : "?";
}

const job *depend_on(const job *j, size_t k) { return k < j->req.nafter ? dependency(j, k) : NULL; }

static target find_target(const char *id);

const char *depend_on_state_req(const job_req *req, const uint64_t *after_seq, size_t k)
{
    if (k >= req->nafter)
        return NULL;
    /* not linked (a job decided before joblet's last start is not linked again): by its id */
    target t = after_seq ? dependency_of(req, after_seq, k) : find_target(req->after[k].job);
    return t.j || t.a ? job_state_name(seen_of(t).state) : "DELETED";
}

const char *depend_on_state(const job *j, size_t k) { return depend_on_state_req(&j->req, j->after_seq, k); }

void depend_describe_req(const job_req *req, const uint64_t *after_seq, char *out, size_t len)
{
    size_t l = (size_t)snprintf(out, len, req->after_any ? "waiting for any one of " : "waiting for ");
    for (size_t k = 0; k < req->nafter && l < len; k++) {
        target t = dependency_of(req, after_seq, k);
        char words[64];
        depend_need_words((depend_need){.kind = req->after[k].state}, words, sizeof words);
        l += (size_t)snprintf(out + l, len - l, "%s%s %.8s to %s (it is %s)", k ? ", " : "", t.a ? "array" : "job",
                              req->after[k].job, words, state_words(t, after_seq));
    }
}

void depend_describe(const job *j, char *out, size_t len)
{
    size_t l = 0;
    if (j->req.nafter && !j->after_met) { /* (met once: it waits for them no more) */
        depend_describe_req(&j->req, j->after_seq, out, len);
        l = strnlen(out, len);
    }
    if (j->req.singleton && l < len)
        describe_single(j, l > 0, out + l, len - l);
}

/* The waiter (a job's or an array's seq) is told when the dependency ends (or starts). */
static void add_dependent(uint64_t **list, uint32_t *n, uint32_t *cap, uint64_t waiter)
{
    for (uint32_t i = *n; i > 0 && i + 8 > *n; i--)
        if ((*list)[i - 1] == waiter)
            return; /* (the same job twice in a row of after) */
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        *list = xrealloc(*list, *cap * sizeof **list);
    }
    (*list)[(*n)++] = waiter;
}

/* waiter out of a list: it no longer waits on that job or array */
static void remove_dependent(uint64_t *list, uint32_t *n, uint64_t waiter)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < *n; i++)
        if (list[i] != waiter)
            list[k++] = list[i];
    *n = k;
}

void depend_unlink(job *j)
{
    for (size_t k = 0; j->after_seq && k < j->req.nafter; k++) {
        target t = dependency_of(&j->req, j->after_seq, k);
        if (t.j)
            remove_dependent(t.j->dependents, &t.j->ndependents, j->seq);
        else if (t.a)
            remove_dependent(t.a->dependents, &t.a->ndependents, j->seq);
    }
}

static uint64_t named_gen; /* links made: depend_named_gen */

uint64_t depend_named_gen(void) { return named_gen; }

/* (the one place a need is linked, after_seq's only writer but its zeroing: every job or array
 * that comes to name another comes through here) */
static void link_target(uint64_t *after_seq, size_t k, uint64_t waiter, target t)
{
    named_gen++;
    after_seq[k] = t.j ? t.j->seq : t.a ? t.a->seq : 0;
    if (t.j && !job_state_terminal(t.j->state))
        add_dependent(&t.j->dependents, &t.j->ndependents, &t.j->dependents_cap, waiter);
    else if (t.a && !arrays_ended(t.a))
        add_dependent(&t.a->dependents, &t.a->ndependents, &t.a->dependents_cap, waiter);
    /* else decided at once: nothing to be told later */
}

/* An array's k-th need linked; an array depended on is marked so (after_arrays), and so is one
 * not found at all (deleted while joblet was down: whether it was an array is not known, and a
 * task-by-task need on it must not let tasks run unchecked). */
static void link_array_target(jarray *a, size_t k, target t)
{
    link_target(a->after_seq, k, a->seq, t);
    if (!t.j && k < 64)
        a->after_arrays |= 1ull << k;
    /* task by task: told of each of that array's tasks as it ends (depend_task_ended), apart
     * from its dependents (told of the whole), which may be many jobs; one that ended already
     * too: a task of it deleted is one fewer whose own task is kept (arrays.h, corr_ready) */
    if (t.a && a->req.after[k].state == JA_CORR)
        add_dependent(&t.a->by_task, &t.a->nby_task, &t.a->by_task_cap, a->seq);
}

/* Whether the k-th need is task by task: corr, by an array (a; NULL for a job), on an array (what
 * the tasks themselves wait for; depend_task_verdict). Otherwise corr is ok, on the whole. */
static bool per_task(const job_req *req, const uint64_t *after_seq, size_t k, const jarray *a)
{
    if (!a || req->after[k].state != JA_CORR || !after_seq)
        return false;
    /* linked (after_seq): to an array, or to one that is no more (deleted: its tasks' ends went
     * with it, so none of ours can go); a job deleted after it was ok is nothing to wait for */
    target d = dependency_of(req, after_seq, k);
    return d.a || (!d.j && (a->after_arrays >> k & 1));
}

/* The k-th need as the rule takes it: corr on a job, or of a job, is the whole (Slurm's aftercorr
 * without tasks on both sides); task by task is per_task's. */
static depend_need need_of(const job_req *req, size_t k)
{
    return (depend_need){.kind = req->after[k].state == JA_CORR ? JA_OK : req->after[k].state};
}

/* The verdict over a request's `after` as seen now; msg says why (cancel) or what went (go). An
 * array's (waiter; NULL for a job) needs that are task by task are its tasks' (only a deleted array
 * cancels it whole). */
static enum depend_verdict verdict(const job_req *req, const uint64_t *after_seq, const jarray *waiter, char *msg,
                                   size_t len)
{
    depend_need needs[JOBREQ_AFTER_MAX];
    depend_seen seen[JOBREQ_AFTER_MAX];
    size_t at[JOBREQ_AFTER_MAX];
    size_t n = 0, which = 0;
    for (size_t k = 0; k < req->nafter && k < JOBREQ_AFTER_MAX; k++) {
        if (per_task(req, after_seq, k, waiter))
            continue;
        at[n] = k;
        needs[n] = need_of(req, k);
        seen[n++] = seen_of(dependency_of(req, after_seq, k));
    }
    char words[64];
    if (req->after_any) {
        /* any one of them (no item is task by task: jobreq.c refuses corr in such a list) */
        enum depend_verdict v = depend_rule_any(needs, seen, n, &which);
        size_t l = 0;
        if (v == DEPEND_GO) {
            target t = dependency_of(req, after_seq, at[which]);
            depend_need_words(needs[which], words, sizeof words);
            snprintf(msg, len, "one of the jobs it waited for went as it needs: %s %.8s did %s (%s)",
                     t.a ? "array" : "job", req->after[at[which]].job, words, state_words(t, after_seq));
        } else if (v == DEPEND_CANCEL) {
            l = (size_t)snprintf(msg, len, "needed one of");
            for (size_t i = 0; i < n && l < len; i++) {
                target t = dependency_of(req, after_seq, at[i]);
                depend_need_words(needs[i], words, sizeof words);
                l += (size_t)snprintf(msg + l, len - l, "%s %s %.8s to %s (it %s %s)", i ? "," : "",
                                      t.a ? "array" : "job", req->after[at[i]].job, words,
                                      t.j || t.a ? "ended" : "was", t.j || t.a ? job_state_name(seen[i].state)
                                                                                : "deleted");
            }
            if (l < len)
                snprintf(msg + l, len - l, "; none can any more");
        }
        return v;
    }
    enum depend_verdict v = depend_rule_all(needs, seen, n, &which);
    if (v == DEPEND_CANCEL) {
        size_t k = at[which];
        target t = dependency_of(req, after_seq, k);
        depend_need_words(needs[which], words, sizeof words);
        if (t.j || t.a)
            snprintf(msg, len, "needed %s %.8s to %s; it ended %s", t.a ? "array" : "job", req->after[k].job,
                     words, job_state_name(seen[which].state));
        else
            snprintf(msg, len, "needed job %.8s to %s; it was deleted", req->after[k].job, words);
    } else if (v == DEPEND_GO) {
        size_t l = (size_t)snprintf(msg, len, "the jobs it waited for went as it needs:");
        for (size_t k = 0; k < req->nafter && k < JOBREQ_AFTER_MAX && l < len; k++)
            l += (size_t)snprintf(msg + l, len - l, "%s %.8s %s", k ? "," : "", req->after[k].job,
                                  per_task(req, after_seq, k, waiter)
                                      ? "(task by task)"
                                      : state_words(dependency_of(req, after_seq, k), after_seq));
    }
    return v;
}

/* Whether a waiter whose last verdict was WAIT surely waits still, now that the job or array
 * `changed` (by seq) changed: only its needs on that one can have moved since (every other
 * dependency's change decided it in turn), so it waits on while one of them waits (all of
 * them), or while none of them went (any one of them), unless another need of its, looked at
 * from the one after `changed` on, still waits, and none of them was deleted meanwhile. False:
 * decide it over every need (verdict).
 * 200 jobs after 64 arrays each counted all 64 arrays' tasks at every array's start and end
 * (CI: 5 s of the loop's CPU more than the arrays' own 3.3 s); now they look at one or two.
 * *removed: core.removed when the waiter last found every one of its dependencies there. */
static bool still_waits(const job_req *req, const uint64_t *after_seq, const jarray *waiter, uint64_t changed,
                        uint64_t *removed)
{
    size_t n = req->nafter < JOBREQ_AFTER_MAX ? req->nafter : JOBREQ_AFTER_MAX;
    size_t last = n;
    bool waits = false;
    for (size_t k = 0; after_seq && k < n; k++) {
        if (after_seq[k] != changed || per_task(req, after_seq, k, waiter))
            continue;
        target t = dependency_of(req, after_seq, k);
        if (!t.j && !t.a)
            return false; /* (a seq given again after a restart) */
        enum depend_verdict v = depend_rule(need_of(req, k), seen_of(t));
        if (v == DEPEND_CANCEL || (req->after_any && v == DEPEND_GO))
            return false;
        waits |= v == DEPEND_WAIT;
        last = k;
    }
    if (last == n || req->after_any)
        return last < n && waits; /* (not among its needs: decided in full) */
    /* all of them: one deleted since it was decided (an ended job or array, deleted without its
     * dependents told) cancels it now, as the full verdict would. Looked for only when a job or
     * an array was taken out since the waiter's last look: each look is at all its dependencies,
     * and 200 jobs after 64 arrays made 1.7 million of them at the arrays' starts and ends */
    if (*removed != core.removed) {
        for (size_t k = 0; k < n; k++) {
            target t = dependency_of(req, after_seq, k);
            if (!t.j && !t.a && !per_task(req, after_seq, k, waiter))
                return false;
        }
        *removed = core.removed;
    }
    if (waits)
        return true;
    for (size_t i = 1; i < n; i++) { /* the first that still waits, after the one that moved */
        size_t k = (last + i) % n;
        if (after_seq[k] == changed || per_task(req, after_seq, k, waiter))
            continue;
        target t = dependency_of(req, after_seq, k);
        if (!t.j && !t.a)
            return false;
        enum depend_verdict v = depend_rule(need_of(req, k), seen_of(t));
        if (v == DEPEND_WAIT)
            return true;
    }
    return false;
}

/* ---- task by task: --after=ARRAY:corr of an array (Slurm's aftercorr) ---- */

/* What is known of array d's task t: its job's state; a task canceled before it was made:
 * CANCELED, never started; one made whose job was deleted since: gone. *ran: it was a job. */
static depend_seen task_seen(const jarray *d, uint32_t t, int64_t at, bool *ran)
{
    bool made;
    const job *dj = arrays_task(d, t, &made);
    *ran = dj != NULL;
    if (dj)
        return (depend_seen){.exists = true, .started = job_started(dj), .state = dj->state};
    if (made)
        return (depend_seen){.exists = false, .state = JS_CANCELED};
    if ((uint64_t)at < d->made || arrays_canceled(d) || arrayspec_has(arrays_skip(d), t))
        return (depend_seen){.exists = true, .state = JS_CANCELED};
    return (depend_seen){.exists = true, .state = d->waiting ? JS_PENDING : d->held ? JS_HELD : JS_QUEUED};
}

enum depend_verdict depend_task_verdict(const jarray *a, uint32_t t, enum depend_task_end *end, char *why,
                                        size_t len)
{
    enum depend_verdict all = DEPEND_GO;
    *end = DEPEND_TASK_UNMADE;
    if (len)
        why[0] = 0;
    for (size_t k = 0; k < a->req.nafter; k++) {
        if (!per_task(&a->req, a->after_seq, k, a))
            continue;
        target d = dependency_of(&a->req, a->after_seq, k);
        if (!d.a) {
            *end = DEPEND_TASK_ALL;
            snprintf(why, len, "needed array %.8s to end COMPLETED, task by task; it was deleted", a->req.after[k].job);
            return DEPEND_CANCEL;
        }
        int64_t at = arrayspec_index(d.a->spec, t);
        bool ran_here = false;
        /* a task the other array does not have waits for that array as a whole (as ok) */
        /* (an array with tasks left is not ok yet, whatever they are: no count of its tasks then,
         * which a pass would otherwise make for each of its next tasks) */
        depend_seen s = at >= 0                 ? task_seen(d.a, t, at, &ran_here)
                        : !arrays_ended(d.a) ? (depend_seen){.exists = true, .started = arrays_started(d.a),
                                                             .state = arrays_started(d.a) ? JS_RUNNING : JS_QUEUED}
                                              : seen_of(d);
        enum depend_verdict v = depend_rule((depend_need){.kind = JA_OK}, s);
        if (v == DEPEND_CANCEL) {
            *end = ran_here ? DEPEND_TASK_MADE : DEPEND_TASK_UNMADE;
            if (at < 0)
                snprintf(why, len, "needed array %.8s (which has no task %u) to end COMPLETED; it ended %s",
                         d.a->id, t, job_state_name(s.state));
            else if (!s.exists)
                snprintf(why, len, "needed task %u of array %.8s to end COMPLETED; its job was deleted", t, d.a->id);
            else
                snprintf(why, len, "needed task %u of array %.8s to end COMPLETED; it ended %s%s", t, d.a->id,
                         job_state_name(s.state), ran_here ? "" : " before it started");
            return DEPEND_CANCEL;
        }
        if (v == DEPEND_WAIT && all == DEPEND_GO) {
            all = DEPEND_WAIT;
            if (at < 0)
                snprintf(why, len, "task %u waits for array %.8s (which has no task %u) to end COMPLETED (it is %s)",
                         t, d.a->id, t, job_state_name(s.state));
            else
                snprintf(why, len, "task %u waits for task %u of array %.8s to end COMPLETED (it is %s)", t, t,
                         d.a->id, job_state_name(s.state));
        }
    }
    return all;
}

/* b's tasks whose own task (of an array b waits on task by task) ended already: queued to be
 * looked at (arrays_ready_push), as depend_task_ended does as each ends. At b's submission and at
 * start: O(the made tasks of those arrays), once. */
static void ready_from_ended(jarray *b)
{
    arrays_corr_recount(b, depend_tasks_by_task(b)); /* (what it keeps of them, counted) */
    for (size_t k = 0; k < b->req.nafter; k++) {
        if (!per_task(&b->req, b->after_seq, k, b))
            continue;
        target d = dependency_of(&b->req, b->after_seq, k);
        for (size_t i = 0; d.a && i < d.a->ntasks; i++)
            if (d.a->tasks[i] && job_state_terminal(d.a->tasks[i]->state))
                arrays_ready_push(b, (uint32_t)d.a->tasks[i]->array_task);
    }
}

void depend_task_ended(job *j)
{
    jarray *d = j->array;
    if (!d || !d->nby_task || !job_state_terminal(j->state))
        return;
    for (uint32_t i = 0; i < d->nby_task; i++) {
        jarray *b = arrays_by_seq(d->by_task[i]);
        if (b && depend_tasks_by_task(b))
            arrays_ready_push(b, (uint32_t)j->array_task); /* (one it does not have: nothing) */
    }
}

bool depend_tasks_by_task(const jarray *a)
{
    for (size_t k = 0; k < a->req.nafter; k++)
        if (per_task(&a->req, a->after_seq, k, a))
            return true;
    return false;
}

uint32_t depend_tasks_ready(const jarray *a, uint32_t n)
{
    if (!n || !depend_tasks_by_task(a))
        return n;
    uint32_t next[64];
    n = arrays_upcoming(a, next, n < 64 ? n : 64);
    for (uint32_t i = 0; i < n; i++) {
        enum depend_task_end end;
        char why[8];
        if (depend_task_verdict(a, next[i], &end, why, sizeof why) != DEPEND_GO)
            return i;
    }
    return n;
}

const char *depend_tasks_describe(const jarray *a, char *out, size_t len)
{
    uint32_t t;
    enum depend_task_end end;
    if (!depend_tasks_by_task(a) || arrays_upcoming(a, &t, 1) != 1)
        return NULL;
    return depend_task_verdict(a, t, &end, out, len) == DEPEND_WAIT ? out : NULL;
}

/* ---- one at a time by name: --singleton (Slurm's --dependency=singleton) ---- */

/* A singleton job that waits, by its name: what the index holds is its own (a job may be
 * deleted while its entry is there; an entry is checked against the job of its seq when it is
 * found, and leaves then). */
typedef struct single_wait {
    char id[37];
    char *name;
    uid_t uid;
    uint64_t seq;
} single_wait;
static idindex single_waiting;

static void single_wait_del(single_wait *w)
{
    idindex_del_owned(&single_waiting, w, w->id, w->name, (uint32_t)w->uid);
    free(w->name);
    free(w);
}

static int by_seq(const void *a, const void *b)
{
    uint64_t x = (*(job *const *)a)->seq, y = (*(job *const *)b)->seq;
    return x < y ? -1 : x > y;
}

/* The jobs of uid waiting on name, oldest first; entries whose job no longer waits so leave.
 * By owner and name: another user's many waiting on the name are not looked at. */
static job **single_waiters(uid_t uid, const char *name, size_t *n)
{
    size_t nc;
    idindex_entry *c = idindex_named_owned(&single_waiting, name, (uint32_t)uid, &nc);
    job **out = xcalloc(nc + 1, sizeof *out);
    *n = 0;
    for (size_t i = 0; i < nc; i++) {
        single_wait *w = c[i].obj;
        job *j = jobs_by_seq(w->seq);
        if (j && strcmp(j->id, w->id))
            j = NULL;
        if (!j || !j->req.singleton || (j->state != JS_PENDING && j->state != JS_HELD)) {
            if (j)
                j->single_listed = false;
            single_wait_del(w);
            continue;
        }
        if (w->uid == uid)
            out[(*n)++] = j;
    }
    free(c);
    if (*n > 1)
        qsort(out, *n, sizeof *out, by_seq);
    return out;
}

static void single_wait_add(job *j)
{
    if (j->single_listed)
        return;
    j->single_listed = true;
    single_wait *w = xcalloc(1, sizeof *w);
    memcpy(w->id, j->id, sizeof w->id);
    w->name = xstrdup(j->name);
    w->uid = j->owner_uid;
    w->seq = j->seq;
    idindex_add_owned(&single_waiting, w, w->id, w->name, (uint32_t)w->uid, w->seq);
}

/* The job of uid that holds name, other than self: one that started and has not ended (RUNNING,
 * SUSPENDED, STOPPING, or its shim starting it), or a singleton let go into the queue whose time
 * has come (QUEUED, PREEMPTED: it goes next). A job of that name waiting in the queue without
 * singleton holds nothing (Slurm's rule: only the singleton job waits), nor does a singleton
 * scheduled for later (--schedule: the name is not kept for it until then); if one of those
 * starts first, a singleton waits again at its own start (depend_single_blocked). */
static const job *single_holder(uid_t uid, const char *name, const job *self)
{
    size_t n;
    job **named = jobs_named(uid, name, &n);   /* (uid's only: jobs.h) */
    looked += n; /* (listed whole, whichever holds it) */
    const job *h = NULL;
    for (size_t i = 0; i < n && !h; i++) {
        const job *k = named[i];
        if (k == self || k->owner_uid != uid || job_state_terminal(k->state))
            continue;
        bool runs = k->state == JS_RUNNING || k->state == JS_SUSPENDED || k->state == JS_STOPPING || k->shim_pid > 0;
        if (runs || (k->req.singleton && (k->state == JS_QUEUED || k->state == JS_PREEMPTED)))
            h = k;
    }
    free(named);
    return h;
}

/* A HELD job whose `after` held meanwhile: that is kept (after_met), and it is not decided again
 * when it is released (the jobs it named may be deleted by then); one that can never hold any more
 * is decided on release (job_ctl_release), as before. */
static void decide_held(job *j)
{
    char msg[400];
    if (!j->req.nafter || j->after_met || verdict(&j->req, j->after_seq, NULL, msg, sizeof msg) != DEPEND_GO)
        return;
    j->after_met = true;
    job_save(j);
    log_info("job %s: dependencies met while it is HELD: %s", j->id, msg);
}

/* Singleton jobs decided while many waiters are decided at once (a job or an array that ends,
 * joblet's start): each looked for its name's holder among every job of that name kept, so 1,000
 * singletons after one job with 8,000 ended jobs of their name kept held the loop for one turn of
 * 0.85 s (O(waiters x kept)). Within such a batch (single_batch_begin/end) a singleton is only
 * listed; once it is over, each owner and name is decided once (single_group: O(its jobs)). */
static struct {
    job **v;
    size_t n, cap;
    int depth;
} single_later;

static void single_group(uid_t uid, const char *name);

static void single_batch_begin(void) { single_later.depth++; }

static int by_owner_name(const void *a, const void *b)
{
    const job *x = *(job *const *)a, *y = *(job *const *)b;
    if (x->owner_uid != y->owner_uid)
        return x->owner_uid < y->owner_uid ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void single_batch_end(void)
{
    if (--single_later.depth > 0)
        return;
    job **v = single_later.v;
    size_t n = single_later.n;
    single_later.v = NULL;
    single_later.n = single_later.cap = 0;
    if (n > 1)
        qsort(v, n, sizeof *v, by_owner_name);
    for (size_t i = 0; i < n; i++)
        if (!i || by_owner_name(&v[i - 1], &v[i]))
            single_group(v[i]->owner_uid, v[i]->name);
    free(v);
}

/* Decides a PENDING job with `after` or singleton: queued once every dependency holds and (a
 * singleton) no other job holds its name, canceled once a dependency cannot hold. Dependencies
 * that held once (after_met) are not decided again: a singleton waits for its turn only.
 * name_free: the caller found no holder of its name just now. True when it went. */
static bool decide_as(job *j, bool name_free)
{
    if (j->state == JS_HELD && !j->wf)
        decide_held(j);
    if (j->state != JS_PENDING || (!j->req.nafter && !j->req.singleton) || j->wf)
        return false;
    char msg[400] = "";
    enum depend_verdict v = j->req.nafter && !j->after_met ? verdict(&j->req, j->after_seq, NULL, msg, sizeof msg)
                                                           : DEPEND_GO;
    if (v == DEPEND_CANCEL) {
        log_info("job %s: %s: canceled", j->id, msg);
        depend_cancel(j, msg);
        return false;
    }
    if (j->req.singleton && !name_free && single_later.depth) {
        /* its turn among its name's jobs is decided with theirs once the batch is over */
        if (v == DEPEND_GO && j->req.nafter && !j->after_met) {
            j->after_met = true;
            job_save(j);
        }
        single_wait_add(j);
        if (single_later.n == single_later.cap) {
            single_later.cap = single_later.cap ? 2 * single_later.cap : 16;
            single_later.v = xrealloc(single_later.v, single_later.cap * sizeof *single_later.v);
        }
        single_later.v[single_later.n++] = j;
        return false;
    }
    if (j->req.singleton) {
        const job *h = name_free ? NULL : single_holder(j->owner_uid, j->name, j);
        j->single_holder = h ? h->seq : 0;
        if (h && v == DEPEND_GO && j->req.nafter && !j->after_met) {
            j->after_met = true; /* they held: it waits for its turn only from now on */
            job_save(j);
        }
        if (h || v == DEPEND_WAIT) {
            single_wait_add(j); /* told when a job of its name changes (depend_single_changed) */
            return false;
        }
        size_t l = strlen(msg);
        snprintf(msg + l, sizeof msg - l, "%sno other job of uid %u named %s runs or goes next (singleton)",
                 l ? "; " : "", (unsigned)j->owner_uid, j->name);
    } else if (v == DEPEND_WAIT) {
        return false;
    }
    log_info("job %s: dependencies met, queued", j->id);
    depend_release(j, msg);
    return true;
}

static void decide(job *j) { decide_as(j, false); }

/* uid's jobs waiting on name: the oldest that can go goes, when nothing holds the name. The
 * others are told which went (what they wait for now). O(the jobs of that name). */
static void single_group(uid_t uid, const char *name)
{
    size_t n;
    job **w = single_waiters(uid, name, &n);
    const job *h = n ? single_holder(uid, name, NULL) : NULL;
    for (size_t i = 0; h && i < n; i++)
        w[i]->single_holder = h->seq; /* (what rnx job status says it waits for) */
    if (n && !h) {
        uint64_t went = 0;
        for (size_t i = 0; i < n; i++) {
            if (went)
                w[i]->single_holder = went;
            else if (decide_as(w[i], true))
                went = w[i]->seq;
        }
    }
    free(w);
}

void depend_free_all(void)
{
    size_t nb = single_waiting.bits ? (size_t)1 << single_waiting.bits : 0;
    for (size_t k = 0; k < nb; k++)
        for (uint32_t i = 0; i < single_waiting.by_id[k].n; i++) {
            single_wait *w = single_waiting.by_id[k].v[i].obj;
            free(w->name);
            free(w);
        }
    idindex_free(&single_waiting);
}

void depend_single_changed(job *j)
{
    if (j && j->name && single_waiting.n)
        single_group(j->owner_uid, j->name);
}

bool depend_single_blocked(job *j)
{
    if (!j->req.singleton || !j->name)
        return false;
    const job *h = single_holder(j->owner_uid, j->name, j);
    if (!h)
        return false;
    j->state = JS_PENDING;
    j->single_holder = h->seq;
    job_event(j, JE_PENDING, -1, "waiting again: job %.8s of the same name and owner is %s (singleton)", h->id,
              job_state_name(h->state));
    job_save(j);
    single_wait_add(j);
    log_info("job %s: job %s of its name is %s: PENDING again (singleton)", j->id, h->id, job_state_name(h->state));
    return true;
}

/* "; waits for its turn among uid 1000's jobs named train (singleton): job 1a2b3c4d is RUNNING" */
static void describe_single(const job *j, bool after_said, char *out, size_t len)
{
    const job *h = j->single_holder ? jobs_by_seq(j->single_holder) : NULL;
    if (h && job_state_terminal(h->state))
        h = NULL;
    size_t l = (size_t)snprintf(out, len, "%sits turn among uid %u's jobs named %s, one at a time (singleton)",
                                after_said ? "; and for " : "waiting for ", (unsigned)j->owner_uid, j->name);
    if (h && l < len)
        snprintf(out + l, len - l, ": job %.8s is %s", h->id, job_state_name(h->state));
}

/* The same for an array that waits (its tasks are made once its dependencies hold). A held one
 * whose dependencies can never hold keeps its hold and is decided when released
 * (depend_array_released), as a held job is (job_ctl_release); one whose dependencies held is let
 * go of them, held still (as decide_held). */
static void decide_array(jarray *a)
{
    if (!a->waiting)
        return;
    char msg[300];
    enum depend_verdict v = verdict(&a->req, a->after_seq, a, msg, sizeof msg);
    if (v == DEPEND_CANCEL && a->held)
        return;
    if (v == DEPEND_CANCEL) {
        log_info("array %s: %s: its tasks are canceled", a->id, msg);
        a->waiting = false;
        arrays_cancel_dependency(a, msg);
        depend_array_changed(a); /* ended: who waits on it is decided in turn */
    } else if (v == DEPEND_GO) {
        log_info("array %s: dependencies met, its tasks are queued", a->id);
        a->after_met = true; /* saved by arrays_release_wait: not decided again at a restart */
        arrays_release_wait(a);
    }
}

/* A waiter by seq (a job, or an array), told that `changed` (a seq) changed. */
static void decide_seq(uint64_t seq, uint64_t changed)
{
    job *w = jobs_by_seq(seq);
    jarray *a = w ? NULL : arrays_by_seq(seq);
    if (w) {
        if (w->state == JS_PENDING && !w->wf && !w->req.singleton && w->req.nafter && !w->after_met &&
            still_waits(&w->req, w->after_seq, NULL, changed, &w->after_removed))
            return;
        decide(w);
    } else if (a) {
        if (a->waiting && still_waits(&a->req, a->after_seq, a, changed, &a->after_removed))
            return;
        decide_array(a);
    }
}

/* A job or an array, by id. */
static target find_target(const char *id)
{
    job *j = jobs_by_id(id);
    if (j)
        return (target){j, NULL};
    return (target){NULL, arrays_by_id(id)};
}

void depend_array_submitted(jarray *a)
{
    if (!a->req.nafter)
        return;
    free(a->after_seq);
    a->after_seq = xcalloc(a->req.nafter, sizeof *a->after_seq);
    a->after_arrays = 0;
    for (size_t k = 0; k < a->req.nafter; k++)
        link_array_target(a, k, find_target(a->req.after[k].job));
    a->waiting = true;
    decide_array(a);
    ready_from_ended(a);
}

void depend_array_released(jarray *a) { decide_array(a); }

static void array_changed(jarray *a)
{
    if (!a || !a->ndependents)
        return;
    bool ended = arrays_ended(a);
    if (!ended && !arrays_started(a))
        return;
    state_want(WANT_SCHEDULE); /* an array waiting on it task by task: its next task may go now */
    /* what its dependents see of it changes twice: it started (arrays_started, which stays), and
     * it ended; in between each of its tasks' starts and ends came here, and deciding each
     * dependent counted the tasks of every array it waits for (300 jobs after 64 arrays of 40
     * tasks: 13.8 s of the loop's CPU, 2.4 s without them; one turn of 0.66 s) */
    if (!ended && a->dependents_started)
        return;
    a->dependents_started = true;
    uint64_t *list = a->dependents;
    uint32_t n = a->ndependents;
    if (ended) {
        a->dependents = NULL;
        a->ndependents = a->dependents_cap = 0;
    }
    /* (its tasks do not change while its dependents are decided: none of them is one of its own,
     * a cycle being refused) */
    bool outer = counted.a == NULL;
    if (outer) {
        counted.a = a;
        counted.n = n;
        arrays_count_cached(a, &counted.c);
    }
    single_batch_begin();
    for (uint32_t i = 0; i < n; i++)
        decide_seq(list[i], a->seq);
    single_batch_end();
    if (outer)
        counted.a = NULL;
    if (ended)
        free(list);
}

/* An array that ends can end those waiting on it (decide_array cancels them), which end their
 * own: a chain of arrays is decided in this loop, one link after another, not by recursion
 * (40,000 links overflowed the stack). Arrays found by seq: one may be deleted meanwhile. */
static uint64_t *changed_later;
static size_t nchanged_later, changed_later_cap;
static bool changed_busy;

void depend_array_changed(jarray *a)
{
    if (!a)
        return;
    if (changed_busy) {
        if (nchanged_later == changed_later_cap) {
            changed_later_cap = changed_later_cap ? changed_later_cap * 2 : 16;
            changed_later = xrealloc(changed_later, changed_later_cap * sizeof *changed_later);
        }
        changed_later[nchanged_later++] = a->seq;
        return;
    }
    changed_busy = true;
    array_changed(a);
    for (size_t i = 0; i < nchanged_later; i++) {
        jarray *b = arrays_by_seq(changed_later[i]);
        if (b)
            array_changed(b);
    }
    free(changed_later);
    changed_later = NULL;
    nchanged_later = changed_later_cap = 0;
    changed_busy = false;
}

void depend_submitted(job *j)
{
    size_t n = j->req.nafter;
    free(j->after_seq);
    j->after_seq = n ? xcalloc(n, sizeof *j->after_seq) : NULL;
    j->after_met = false; /* (new ones, at submission or from rnx job update --after) */
    for (size_t k = 0; k < n; k++) { /* (ids resolved at submission) */
        target t = find_target(j->req.after[k].job);
        if (t.j != j)
            link_target(j->after_seq, k, j->seq, t);
    }
    if (job_state_waiting(j->state)) { /* (a changed job's may be PREEMPTED too) */
        char what[600], words[64];
        size_t l = 0;
        what[0] = 0;
        if (j->req.after_any && n)
            l += (size_t)snprintf(what, sizeof what, "any one of ");
        for (size_t k = 0; k < n && l < sizeof what; k++)
            l += (size_t)snprintf(what + l, sizeof what - l, "%s%s %.8s to %s",
                                  k ? (j->req.after_any ? " or " : ", ") : "",
                                  dependency_of(&j->req, j->after_seq, k).a ? "array" : "job", j->req.after[k].job,
                                  depend_need_words((depend_need){.kind = j->req.after[k].state}, words,
                                                    sizeof words));
        if (j->req.singleton && l < sizeof what)
            snprintf(what + l, sizeof what - l, "%sits turn among uid %u's jobs named %s, one at a time (singleton)",
                     n ? ", and " : "", (unsigned)j->owner_uid, j->name);
        j->state = JS_PENDING;
        job_event(j, JE_PENDING, -1, "waiting for %s", what);
    }
    job_save(j);
    decide(j);
}

void depend_decide(job *j) { decide(j); }

/* ---- a waiting job's dependencies changed: rnx job update --after ---- */

/* The seqs seen by a walk, in a set that doubles (open addressing; seqs are never 0). */
typedef struct seen_set {
    uint64_t *v;
    size_t cap, n;
} seen_set;

static bool seen_add(seen_set *s, uint64_t seq)
{
    if (2 * (s->n + 1) > s->cap) {
        seen_set b = {.cap = s->cap ? 2 * s->cap : 64};
        b.v = xcalloc(b.cap, sizeof *b.v);
        for (size_t i = 0; i < s->cap; i++)
            if (s->v[i])
                seen_add(&b, s->v[i]);
        free(s->v);
        *s = b;
    }
    size_t i = (size_t)(seq * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
    for (; s->v[i]; i = (i + 1) & (s->cap - 1))
        if (s->v[i] == seq)
            return false;
    s->v[i] = seq;
    s->n++;
    return true;
}

/* The links (`after` items) one update's check may walk, all its items together: the walk costs
 * O(what the jobs named wait for, transitively), which a user builds within their limits to
 * 1,000 jobs of 64 links each (900 jobs each after the 64 before them: 57,000 links, 8 ms of the
 * loop for each update naming the last, one whose `after` did not even change), so past this the
 * update is refused instead (docs/batch.md). Slurm stops looking past max_depend_depth (10 jobs)
 * and lets the cycle be; here none is let be. A new submission is never walked (it can only name
 * older jobs: no cycle), so a job refused so can be canceled and submitted anew. */
#define DEPEND_WALK_MAX 1000

/* Whether j is among what the job or array of id waits for, directly or through what those wait
 * for (their `after`; an ended one waits for nothing any more, nor does a job whose `after` held:
 * it goes whatever those do). 1: it is; 0: not; -1: *budget links were walked without knowing.
 * Walked with a stack of its own, each job and array once: a chain of 40,000 jobs costs no
 * recursion. seen is shared by the walks of one change: what an earlier walk went through
 * without finding j cannot lead to it, so all of a change's items together cost O(the links),
 * not 64 times that. */
static int waits_for(const char *id, const job *j, seen_set *seenp, size_t *budget)
{
    seen_set seen = *seenp;
    size_t n = 0, cap = 16;
    const char **stack = xcalloc(cap, sizeof *stack);
    int found = 0;
    stack[n++] = id;
    while (n && !found) {
        target t = find_target(stack[--n]);
        const job_req *req = NULL;
        if (t.j && !job_state_terminal(t.j->state) && !t.j->after_met && seen_add(&seen, t.j->seq))
            req = &t.j->req;
        else if (t.a && !arrays_ended(t.a) && seen_add(&seen, t.a->seq))
            req = &t.a->req;
        for (size_t k = 0; req && k < req->nafter && !found; k++) {
            if (!*budget) {
                found = -1;
                break;
            }
            --*budget;
            found = !strcmp(req->after[k].job, j->id);
            if (n == cap) {
                cap *= 2;
                stack = xrealloc(stack, cap * sizeof *stack);
            }
            stack[n++] = req->after[k].job;
        }
    }
    free(stack);
    *seenp = seen;
    return found;
}

int depend_check_change(const job *j, job_req *req, const caller *who, jerr *e)
{
    if (j->wf || j->wf_id[0])
        return jerr_http(e, 409, "job %s is a workflow's job: its dependencies are the workflow's (its requires:), "
                                 "which an update does not change", j->id);
    if (j->array_id[0])
        return jerr_http(e, 409, "job %s is task %lld of array %s: its dependencies are the array's, which held "
                                 "before it was made", j->id, (long long)j->array_task, j->array_id);
    /* in its owner's sight, as at its submission: an admin's update names no job its owner could
     * not have named (nor shows the owner one), and the owner's own, by a certificate, none that
     * certificate could not have named at submission (authz_as_account: a developer's
     * certificate on root's account sees no other user's job) */
    caller owner = who->uid == j->owner_uid ? authz_as_account(who) : authz_local(j->owner_uid, j->owner_gid);
    if (req->nafter && depend_resolve(req, &owner, who->uid != j->owner_uid, e) < 0)
        return -1;
    /* submitted jobs can only wait for older ones; a changed job may name a newer one, so the
     * loop that would keep both waiting forever is looked for here */
    seen_set seen = {0};
    size_t budget = DEPEND_WALK_MAX;
    int rc = 0;
    for (size_t k = 0; k < req->nafter && !rc; k++) {
        bool self = !strcmp(req->after[k].job, j->id);
        int w = self ? 0 : waits_for(req->after[k].job, j, &seen, &budget);
        const char *what = w && find_target(req->after[k].job).a ? "array" : "job";
        if (self)
            rc = jerr_field(e, "after", "after: job %s cannot wait for itself", j->id);
        else if (w > 0)
            rc = jerr_field(e, "after", "after: %s %s waits for job %.8s (directly or through what it waits for): "
                                        "waiting for it would be a cycle, and neither could ever start",
                            what, req->after[k].job, j->id);
        else if (w < 0)
            rc = jerr_field(e, "after", "after: what %s %s waits for, directly or through others, is more than "
                                        "%d dependencies, as far as an update looks for a cycle through job %.8s: "
                                        "name jobs that wait for fewer, or cancel the job and submit it anew "
                                        "(a new job may wait for any job)",
                            what, req->after[k].job, DEPEND_WALK_MAX, j->id);
    }
    free(seen.v);
    return rc;
}

void depend_changed(job *j)
{
    if (j->req.nafter || j->req.singleton) {
        /* linked anew (the jobs it waited for before may still tell it: it is decided again then,
         * by what it waits for now) and decided at once, as a job submitted so */
        depend_submitted(j);
        depend_single_changed(j); /* a singleton let go that waits again: the next of its name may go */
        return;
    }
    free(j->after_seq);
    j->after_seq = NULL;
    if (j->state == JS_PENDING)
        depend_release(j, "it waits for no job any more (its dependencies were removed)");
}

void depend_job_changed(job *j)
{
    if (!j || !j->ndependents)
        return;
    bool ended = job_state_terminal(j->state);
    if (!ended && !job_started(j))
        return;
    /* taken first: deciding a dependent may end it, which decides its own (another list) */
    uint64_t *list = j->dependents;
    uint32_t n = j->ndependents;
    if (ended) {
        j->dependents = NULL;
        j->ndependents = j->dependents_cap = 0; /* each is decided now, once */
    }
    single_batch_begin();
    for (uint32_t i = 0; i < n; i++)
        decide_seq(list[i], j->seq);
    single_batch_end();
    if (ended)
        free(list);
}

/* At start, an array to link again: one that waits (its `after` never held: let go once, it is not
 * decided again, even with no task made yet: held, or scheduled later), or whose tasks wait task
 * by task. */
static bool relink_array(const jarray *a)
{
    if (!a->req.nafter || a->canceled_by != -1)
        return false;
    if (!a->after_met && !arrays_made_any(a))
        return true;
    for (size_t k = 0; k < a->req.nafter; k++)
        if (a->req.after[k].state == JA_CORR)
            return !arrays_ended(a);
    return false;
}

/* At start, a job to link again and decide: PENDING or HELD, with `after` that never held, or
 * singleton (a HELD one whose `after` held before it was held is not decided again on release). */
static bool relink_job(const job *j)
{
    return (j->state == JS_PENDING || j->state == JS_HELD) && ((j->req.nafter && !j->after_met) || j->req.singleton) &&
           !j->wf_id[0];
}

static void named_add(depend_named *d, size_t *cap, const uint64_t *seq, size_t n)
{
    for (size_t k = 0; seq && k < n; k++) {
        if (!seq[k])
            continue;
        if (d->n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            d->seq = xrealloc(d->seq, *cap * sizeof *d->seq);
        }
        d->seq[d->n++] = seq[k];
    }
}

static int seq_order(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

void depend_named_collect(depend_named *d)
{
    /* those linked again at a start (relink_job, relink_array): what still waits on them */
    size_t cap = 0;
    *d = (depend_named){0};
    for (int s = 0; s < 2; s++) { /* (relink_job: PENDING or HELD) */
        size_t n;
        job **w = jobs_in_state(s ? JS_HELD : JS_PENDING, &n);
        for (size_t i = 0; i < n; i++)
            if (relink_job(w[i]) && w[i]->req.nafter && !w[i]->after_met)
                named_add(d, &cap, w[i]->after_seq, w[i]->req.nafter);
    }
    for (size_t i = 0; i < core.narrays; i++) {
        const jarray *a = core.arrays[i];
        if (relink_array(a))
            named_add(d, &cap, a->after_seq, a->req.nafter);
    }
    if (d->n)
        qsort(d->seq, d->n, sizeof *d->seq, seq_order);
}

bool depend_named_has(const depend_named *d, uint64_t seq)
{
    return d->n && bsearch(&seq, d->seq, d->n, sizeof *d->seq, seq_order);
}

void depend_named_free(depend_named *d)
{
    free(d->seq);
    *d = (depend_named){0};
}

void depend_resume_all(void)
{
    size_t nw = 0;
    for (size_t i = 0; i < core.njobs; i++)
        nw += relink_job(core.jobs[i]);
    /* arrays that wait (none of their tasks made: one made was let go before), and those whose
     * tasks wait task by task (--after=ARRAY:corr: linked again, made tasks or not) */
    size_t na = 0;
    for (size_t i = 0; i < core.narrays; i++)
        na += relink_array(core.arrays[i]);
    if (!nw && !na)
        return;
    job **waiting = xcalloc(nw, sizeof *waiting);
    nw = 0;
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        /* a held one too: its release decides it (job_ctl_release) */
        if (!relink_job(j))
            continue;
        waiting[nw++] = j;
        if (j->req.singleton)
            single_wait_add(j); /* (a held one too: told, and skipped, until it is released) */
        free(j->after_seq);
        j->after_seq = j->req.nafter ? xcalloc(j->req.nafter, sizeof *j->after_seq) : NULL;
        for (size_t k = 0; k < j->req.nafter && !j->after_met; k++)
            link_target(j->after_seq, k, j->seq, find_target(j->req.after[k].job));
    }
    jarray **arrs = xcalloc(na + 1, sizeof *arrs);
    na = 0;
    for (size_t i = 0; i < core.narrays; i++) {
        jarray *a = core.arrays[i];
        if (!relink_array(a))
            continue;
        arrs[na++] = a;
        free(a->after_seq);
        a->after_seq = xcalloc(a->req.nafter, sizeof *a->after_seq);
        a->after_arrays = 0;
        for (size_t k = 0; k < a->req.nafter; k++)
            link_array_target(a, k, find_target(a->req.after[k].job));
        /* one let go before (after_met; older rows: one with tasks made) is not decided again */
        a->waiting = !a->after_met && !arrays_made_any(a);
    }
    for (size_t i = 0; i < na; i++) {
        decide_array(arrs[i]);
        ready_from_ended(arrs[i]); /* (what was queued before the restart was not kept) */
    }
    free(arrs);
    /* whatever ended while joblet was down (in seq order: a chain is decided from its start) */
    single_batch_begin();
    for (size_t i = 0; i < nw; i++)
        decide(waiting[i]);
    single_batch_end();
    log_info("dependencies: %zu waiting jobs linked and decided", nw);
    free(waiting);
}

/* waiter's k-th need is j (linked: after_seq) */
static bool names(const uint64_t *after_seq, size_t n, const job *j)
{
    for (size_t k = 0; after_seq && k < n; k++)
        if (after_seq[k] == j->seq)
            return true;
    return false;
}

void depend_requeued(job *j)
{
    size_t n;
    named_gen++; /* (no new need: the old ones told again; counted all the same) */
    for (int s = 0; s < 2; s++) {
        job **w = jobs_in_state(s ? JS_HELD : JS_PENDING, &n);
        for (size_t i = 0; i < n; i++)
            if (relink_job(w[i]) && !w[i]->after_met && names(w[i]->after_seq, w[i]->req.nafter, j))
                add_dependent(&j->dependents, &j->ndependents, &j->dependents_cap, w[i]->seq);
    }
    for (size_t i = 0; i < core.narrays; i++) {
        jarray *a = core.arrays[i];
        if (relink_array(a) && !a->after_met && !arrays_made_any(a) && names(a->after_seq, a->req.nafter, j))
            add_dependent(&j->dependents, &j->ndependents, &j->dependents_cap, a->seq);
    }
}
