/* Jobs that wait for other jobs (depend.h). */
#include "depend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "depend_rule.h"
#include "job_events.h"
#include "jobs.h"
#include "state.h"

void depend_release(job *j, const char *detail)
{
    j->state = j->scheduled_ms > now_ms() ? JS_SCHEDULED : JS_QUEUED;
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

int depend_resolve(job_req *req, uid_t uid, gid_t gid, jerr *e)
{
    caller who = authz_local(uid, gid);
    for (size_t i = 0; i < req->nafter; i++) {
        jerr fe = {0};
        const char *ref = req->after[i].job;
        job *d = jobs_find(ref, &who, &fe);
        if (!d && fe.http == 409) /* several match: the message lists them, the caller's own */
            return jerr_field(e, "after", "after: %s", fe.msg);
        if (!d) /* missing, or another user's: the same words either way */
            return jerr_field(e, "after", "after: no job '%s' (by id, unique id prefix or name) among the jobs you "
                                          "may see", ref);
        if (strcmp(ref, d->id)) {
            free(req->after[i].job);
            req->after[i].job = xstrdup(d->id);
        }
    }
    return 0;
}

/* The jobs j waits on, by seq (0: gone); what is seen of each. */
static job *dependency(const job *j, size_t k)
{
    job *d = j->after_seq && j->after_seq[k] ? jobs_by_seq(j->after_seq[k]) : NULL;
    return d && !strcmp(d->id, j->req.after[k].job) ? d : NULL; /* a seq given again after a restart */
}

const job *depend_on(const job *j, size_t k) { return k < j->req.nafter ? dependency(j, k) : NULL; }

void depend_describe(const job *j, char *out, size_t len)
{
    size_t l = (size_t)snprintf(out, len, "waiting for ");
    for (size_t k = 0; k < j->req.nafter && l < len; k++) {
        const job *d = dependency(j, k);
        char words[64];
        depend_need_words((depend_need){.kind = j->req.after[k].state}, words, sizeof words);
        l += (size_t)snprintf(out + l, len - l, "%sjob %.8s to %s (it is %s)", k ? ", " : "", j->req.after[k].job,
                              words, d ? job_state_name(d->state) : j->after_seq ? "deleted" : "?");
    }
}

static void link_one(job *j, size_t k, job *d)
{
    j->after_seq[k] = d ? d->seq : 0;
    if (!d || job_state_terminal(d->state))
        return; /* decided at once: nothing to be told later */
    for (uint32_t i = d->ndependents; i > 0 && i + 8 > d->ndependents; i--)
        if (d->dependents[i - 1] == j->seq)
            return; /* (the same job twice in a row of after) */
    if (d->ndependents == d->dependents_cap) {
        d->dependents_cap = d->dependents_cap ? d->dependents_cap * 2 : 4;
        d->dependents = xrealloc(d->dependents, d->dependents_cap * sizeof *d->dependents);
    }
    d->dependents[d->ndependents++] = j->seq;
}

/* Decides a PENDING job with `after`: queued once every dependency holds, canceled once one
 * cannot. */
static void decide(job *j)
{
    if (j->state != JS_PENDING || !j->req.nafter || j->wf)
        return;
    depend_need needs[JOBREQ_AFTER_MAX];
    depend_seen seen[JOBREQ_AFTER_MAX];
    size_t n = j->req.nafter < JOBREQ_AFTER_MAX ? j->req.nafter : JOBREQ_AFTER_MAX, which = 0;
    for (size_t k = 0; k < n; k++) {
        const job *d = dependency(j, k);
        needs[k] = (depend_need){.kind = j->req.after[k].state};
        seen[k] = (depend_seen){.exists = d != NULL, .started = d && (d->started_ms > 0 || d->shim_pid > 0),
                                .state = d ? d->state : JS_CANCELED};
    }
    enum depend_verdict v = depend_rule_all(needs, seen, n, &which);
    char words[64], msg[300];
    if (v == DEPEND_CANCEL) {
        const job *d = dependency(j, which);
        depend_need_words(needs[which], words, sizeof words);
        if (d)
            snprintf(msg, sizeof msg, "needed job %.8s to %s; it ended %s", j->req.after[which].job, words,
                     job_state_name(d->state));
        else
            snprintf(msg, sizeof msg, "needed job %.8s to %s; it was deleted", j->req.after[which].job, words);
        log_info("job %s: %s: canceled", j->id, msg);
        depend_cancel(j, msg);
    } else if (v == DEPEND_GO) {
        size_t l = (size_t)snprintf(msg, sizeof msg, "the jobs it waited for went as it needs:");
        for (size_t k = 0; k < n && l < sizeof msg; k++) {
            const job *d = dependency(j, k);
            l += (size_t)snprintf(msg + l, sizeof msg - l, "%s %.8s %s", k ? "," : "", j->req.after[k].job,
                                  d ? job_state_name(d->state) : "?");
        }
        log_info("job %s: dependencies met, queued", j->id);
        depend_release(j, msg);
    }
}

void depend_submitted(job *j)
{
    size_t n = j->req.nafter;
    free(j->after_seq);
    j->after_seq = xcalloc(n, sizeof *j->after_seq);
    /* one pass over the table for all its dependencies (ids resolved at submission) */
    for (size_t i = 0; i < core.njobs; i++)
        for (size_t k = 0; k < n; k++)
            if (!j->after_seq[k] && core.jobs[i] != j && !strcmp(core.jobs[i]->id, j->req.after[k].job))
                link_one(j, k, core.jobs[i]);
    if (j->state == JS_QUEUED || j->state == JS_SCHEDULED) {
        char what[400], words[64];
        size_t l = 0;
        what[0] = 0;
        for (size_t k = 0; k < n && l < sizeof what; k++)
            l += (size_t)snprintf(what + l, sizeof what - l, "%sjob %.8s to %s", k ? ", " : "", j->req.after[k].job,
                                  depend_need_words((depend_need){.kind = j->req.after[k].state}, words,
                                                    sizeof words));
        j->state = JS_PENDING;
        job_event(j, JE_PENDING, -1, "waiting for %s", what);
    }
    job_save(j);
    decide(j);
}

void depend_decide(job *j) { decide(j); }

void depend_job_changed(job *j)
{
    if (!j || !j->ndependents)
        return;
    bool ended = job_state_terminal(j->state);
    if (!ended && !(j->started_ms > 0 || j->shim_pid > 0))
        return;
    /* taken first: deciding a dependent may end it, which decides its own (another list) */
    uint64_t *list = j->dependents;
    uint32_t n = j->ndependents;
    if (ended) {
        j->dependents = NULL;
        j->ndependents = j->dependents_cap = 0; /* each is decided now, once */
    }
    for (uint32_t i = 0; i < n; i++) {
        job *w = jobs_by_seq(list[i]);
        if (w)
            decide(w);
    }
    if (ended)
        free(list);
}

/* For the start: jobs by id, sorted, to resolve every `after` in n log n. */
static int by_id(const void *a, const void *b) { return strcmp((*(job *const *)a)->id, (*(job *const *)b)->id); }

void depend_resume_all(void)
{
    size_t nw = 0;
    for (size_t i = 0; i < core.njobs; i++)
        nw += (core.jobs[i]->state == JS_PENDING || core.jobs[i]->state == JS_HELD) && core.jobs[i]->req.nafter &&
              !core.jobs[i]->wf_id[0];
    if (!nw)
        return;
    job **sorted = xcalloc(core.njobs, sizeof *sorted);
    memcpy(sorted, core.jobs, core.njobs * sizeof *sorted);
    qsort(sorted, core.njobs, sizeof *sorted, by_id);
    job **waiting = xcalloc(nw, sizeof *waiting);
    nw = 0;
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        /* a held one too: its release decides it (job_ctl_release) */
        if ((j->state != JS_PENDING && j->state != JS_HELD) || !j->req.nafter || j->wf_id[0])
            continue;
        waiting[nw++] = j;
        free(j->after_seq);
        j->after_seq = xcalloc(j->req.nafter, sizeof *j->after_seq);
        for (size_t k = 0; k < j->req.nafter; k++) {
            job key = {0}, *kp = &key;
            snprintf(key.id, sizeof key.id, "%s", j->req.after[k].job);
            job **hit = bsearch(&kp, sorted, core.njobs, sizeof *sorted, by_id);
            link_one(j, k, hit ? *hit : NULL);
        }
    }
    free(sorted);
    /* whatever ended while joblet was down (in seq order: a chain is decided from its start) */
    for (size_t i = 0; i < nw; i++)
        decide(waiting[i]);
    log_info("dependencies: %zu waiting jobs linked and decided", nw);
    free(waiting);
}
