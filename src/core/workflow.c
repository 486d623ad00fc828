/* The workflow engine (docs/workflows.md). A workflow is a set of ordinary jobs, each of which
 * may wait (PENDING) for others to end in given states. When a job ends, its dependents are
 * decided at once: they join the scheduler's queue, or are CANCELED when their conditions can
 * no longer hold (which in turn decides theirs). */
#include "workflow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../common/idindex.h"
#include "../common/idref.h"
#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/marklist.h"
#include "../common/util.h"
#include "events.h"
#include "job_events.h"
#include "job_row.h"
#include "jobs.h"
#include "job_launch.h"
#include "arrays.h"
#include "networks.h"
#include "state.h"
#include "submit.h"
#include "depend.h"
#include "depend_rule.h"


static void wf_save(workflow *wf)
{
    jerr e = {0};
    db_workflow row;
    state_wrote_workflows();
    if (db_update_workflow(core.db, workflow_row(wf, &row), &e) < 0)
        log_err("%s", e.msg);
}

/* The workflows by id and name (common/idindex.h). */
static idindex by_ref;

/* workflow_drop_gone's list: the ids of workflows whose job or array was deleted (ids, not
 * pointers: a workflow taken back at its submission is freed at once) */
static char (*gone_ids)[37];
static size_t gone_n, gone_cap;

/* workflow_take_changed's list */
static marklist changed_list = MARKLIST_INIT(workflow, ev_listed);

static void mark_changed(workflow *wf) { marklist_add(&changed_list, wf); }

static void unmark_changed(workflow *wf) { marklist_remove(&changed_list, wf); }

void **workflow_take_changed(size_t *n) { return marklist_take(&changed_list, n); }

static const char *wf_name(const workflow *wf) { return json_string_value(json_object_get(wf->doc, "name")); }

/* The workflows of each owner, in submission order (workflow_of_owner): few owners, looked up
 * by a walk. */
typedef struct wf_owner {
    uid_t uid;
    workflow **v;
    size_t n, cap;
    uint64_t bytes;            /* its workflows' text_bytes together (workflow_owner_bytes) */
} wf_owner;
static wf_owner *owners;
static size_t nowners;

static wf_owner *owner_of(uid_t uid, bool make)
{
    for (size_t i = 0; i < nowners; i++)
        if (owners[i].uid == uid)
            return &owners[i];
    if (!make)
        return NULL;
    owners = xrealloc(owners, (nowners + 1) * sizeof *owners);
    owners[nowners] = (wf_owner){.uid = uid};
    return &owners[nowners++];
}

workflow *const *workflow_of_owner(uid_t uid, size_t *n)
{
    wf_owner *o = owner_of(uid, false);
    *n = o ? o->n : 0;
    return o ? o->v : NULL;
}

uint64_t workflow_doc_bytes(const json_t *doc)
{
    static const char *const keys[] = {"name", "description", "source", "yaml"};
    uint64_t n = 0;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        n += json_string_length(json_object_get(doc, keys[i]));
    return n;
}

uint64_t workflow_owner_bytes(uid_t uid)
{
    wf_owner *o = owner_of(uid, false);
    return o ? o->bytes : 0;
}

void workflow_add(workflow *wf)
{
    static bool hooked; /* (nothing to count before the first workflow) */
    if (!hooked)
        submit_held_bytes_hook(workflow_owner_bytes);
    hooked = true;
    wf_owner *o = owner_of(wf->owner_uid, true);
    wf->text_bytes = workflow_doc_bytes(wf->doc); /* (its doc never changes) */
    o->bytes += wf->text_bytes;
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 16;
        o->v = xrealloc(o->v, o->cap * sizeof *o->v);
    }
    o->v[o->n++] = wf;
    for (size_t k = 0; wf->jobs && k < wf->n; k++)
        for (size_t c = 0; c < wf->jobs[k].nconds; c++)
            if (wf->jobs[k].conds[c].dep < wf->n)
                wf->jobs[wf->jobs[k].conds[c].dep].handled |= 1u << wf->jobs[k].conds[c].status;
    core.workflows = xrealloc(core.workflows, (core.nworkflows + 1) * sizeof *core.workflows);
    core.workflows[core.nworkflows++] = wf;
    idindex_add(&by_ref, wf, wf->id, wf_name(wf), wf->seq);
    mark_changed(wf);
    if (wf->seq >= core.next_wf_seq)
        core.next_wf_seq = wf->seq + 1;
}

workflow *workflow_new(db_workflow *r)
{
    workflow *wf = xcalloc(1, sizeof *wf);
    memcpy(wf->id, r->id, sizeof wf->id);
    wf->seq = r->seq;
    wf->owner_uid = (uid_t)r->owner_uid;
    wf->owner_gid = (gid_t)r->owner_gid;
    wf->state = r->state;
    wf->created_ms = r->created_ms;
    wf->started_ms = r->started_ms;
    wf->ended_ms = r->ended_ms;
    wf->canceled_by = r->canceled_by;
    /* the workflow has the row's reason and doc now */
    wf->reason = r->reason;
    wf->doc = r->doc;
    r->reason = NULL;
    r->doc = NULL;
    return wf;
}

static void wf_free(workflow *wf)
{
    if (!wf)
        return;
    for (size_t i = 0; wf->jobs && i < wf->n; i++) {
        free(wf->jobs[i].name);
        free(wf->jobs[i].conds);
    }
    free(wf->jobs);
    free(wf->reason);
    json_decref(wf->doc);
    free(wf);
}

void workflow_free_all(void)
{
    idindex_free(&by_ref);
    marklist_free(&changed_list);
    free(gone_ids);
    gone_ids = NULL;
    gone_n = gone_cap = 0;
    for (size_t i = 0; i < nowners; i++)
        free(owners[i].v);
    free(owners);
    owners = NULL;
    nowners = 0;
    for (size_t i = 0; i < core.nworkflows; i++)
        wf_free(core.workflows[i]);
    free(core.workflows);
}

int workflow_err_in_job(jerr *e, size_t i, const char *name)
{
    char field[sizeof e->field], msg[sizeof e->msg];
    snprintf(field, sizeof field, "jobs[%zu].request%s%s", i, e->field[0] ? "." : "", e->field);
    snprintf(msg, sizeof msg, "job '%s': %s", name, e->msg);
    snprintf(e->field, sizeof e->field, "%s", field);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    return -1;
}

void workflow_body_free(wf_body *b)
{
    for (size_t i = 0; b->jobs && i < b->n; i++) {
        free(b->jobs[i].name);
        free(b->jobs[i].conds);
    }
    free(b->jobs);
    free(b->requests);
    free(b->volumes);
    free(b->networks);
    json_decref(b->doc);
    *b = (wf_body){0};
}

void workflow_checked_free(wf_checked *c)
{
    for (size_t i = 0; c->reqs && i < c->n; i++)
        jobreq_free(&c->reqs[i]);
    free(c->reqs);
    free(c->si);
    *c = (wf_checked){0};
}

/* A refusal about the workflow's volumes[i]. */
static int err_in_volume(jerr *e, const wf_body *b, size_t i)
{
    char field[sizeof e->field], msg[sizeof e->msg], named[100];
    snprintf(field, sizeof field, "volumes[%zu]%s%s", i, e->field[0] ? "." : "", e->field);
    /* "name: volume 'x' exists ..." -> "volume 'x' exists ..."; "size_mb: 8 MB ..." ->
     * "volume 'x': size: 8 MB ..." (the file's key) */
    size_t fl = strlen(e->field);
    const char *m = fl && !strncmp(e->msg, e->field, fl) && e->msg[fl] == ':' ? e->msg + fl + 2 : e->msg;
    snprintf(named, sizeof named, "'%s'", b->volumes[i].name);
    if (strstr(m, named))
        snprintf(msg, sizeof msg, "%s", m);
    else
        snprintf(msg, sizeof msg, "volume '%s': %s%s%s", b->volumes[i].name,
                 !strcmp(e->field, "size_mb") ? "size" : e->field, fl ? ": " : "", m);
    snprintf(e->field, sizeof e->field, "%s", field);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    return -1;
}

/* A refusal about the workflow's networks[i]: "cidr: 10.9.0.0/24 overlaps ..." -> field
 * "networks[0].cidr", "network 'x': cidr: 10.9.0.0/24 overlaps ..." */
static int err_in_network(jerr *e, const wf_body *b, size_t i)
{
    char field[sizeof e->field], msg[sizeof e->msg], named[100];
    snprintf(field, sizeof field, "networks[%zu]%s%s", i, e->field[0] ? "." : "", e->field);
    snprintf(named, sizeof named, "network %s ", b->networks[i].name);
    if (strstr(e->msg, named) == e->msg)
        snprintf(msg, sizeof msg, "%s", e->msg);
    else
        snprintf(msg, sizeof msg, "network '%s': %s", b->networks[i].name, e->msg);
    snprintf(e->field, sizeof e->field, "%s", field);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    return -1;
}

/* A dry run, before the networks the workflow creates exist: a job on one of them is checked
 * for all but its network's being there (networks_precheck checked that), then checked as a
 * job on no network. -1 when the job may not be on such a network at all. */
static int without_created_network(job_req *req, const wf_body *b, jerr *e)
{
    bool made = false;
    for (size_t m = 0; req->network && m < b->nnetworks && !made; m++)
        made = !strcmp(b->networks[m].name, req->network);
    if (!made)
        return 0;
    if (networks_check_declared(req, e) < 0)
        return -1;
    jobreq_set_str(req, JR_NETWORK, NULL);
    req->max_netbps = 0;
    return 0;
}

/* A dry run, before the volumes the workflow creates exist or while they are being created:
 * the job's items naming them are left out of its check (volumes_precheck checked them, and
 * more strictly: only their owner may ask for them). */
static void without_created_volumes(job_req *req, const wf_body *b)
{
    char **kept = xcalloc(req->nvolumes + 1, sizeof *kept);
    size_t nkept = 0;
    for (size_t k = 0; k < req->nvolumes; k++) {
        char name[80];
        bool ro, made = false;
        if (jobreq_volume_parse(req->volumes[k], name, sizeof name, &ro) == 0)
            for (size_t m = 0; m < b->nvolumes && !made; m++)
                made = !strcmp(b->volumes[m].name, name);
        if (!made)
            kept[nkept++] = req->volumes[k];
    }
    if (nkept < req->nvolumes)
        jobreq_set_list(req, JR_VOLUMES, kept, nkept);
    free(kept);
}

/* Every job's request read and checked as a submission checks it (the schema, the machine,
 * the names, the limits of all together). rp[i] = &reqs[i]. */
static int check_jobs(wf_body *b, const caller *who, job_req *reqs, job_req **rp, submit_info *si, int flags,
                      jerr *e)
{
    /* more jobs than its owner may still queue or keep, arrays' tasks aside: refused before each
     * is checked (a 10,000-job workflow over the limit held the loop 0.5 s, to be refused) */
    if (submit_check_count(b->n, who->uid, e) < 0)
        return -1;
    for (size_t i = 0; i < b->n; i++) {
        rp[i] = &reqs[i];
        if (jobreq_from_json(b->requests[i], &reqs[i], 0, time(NULL), e) < 0)
            return workflow_err_in_job(e, i, b->jobs[i].name);
        if (reqs[i].nafter) { /* within a workflow, its own requires: says what a job waits for */
            jerr_field(e, "after", "after: not accepted in a workflow's job; use requires: (docs/workflows.md)");
            return workflow_err_in_job(e, i, b->jobs[i].name);
        }
        if (reqs[i].hold) { /* a workflow goes as a whole: held, it is its jobs' to hold one by one */
            jerr_field(e, "hold", "hold: not accepted in a workflow's job; hold its jobs once submitted (rnx job "
                                  "hold ID)");
            return workflow_err_in_job(e, i, b->jobs[i].name);
        }
        if (reqs[i].singleton) { /* a workflow's jobs run as its requires: say, not one by one by name */
            jerr_field(e, "singleton", "singleton: not accepted in a workflow's job; use requires: to order its "
                                       "jobs (docs/workflows.md)");
            return workflow_err_in_job(e, i, b->jobs[i].name);
        }
        if (flags & SUBMIT_DRY_RUN) {
            without_created_volumes(&reqs[i], b);
            if (without_created_network(&reqs[i], b, e) < 0)
                return workflow_err_in_job(e, i, b->jobs[i].name);
        }
        if (submit_check(&reqs[i], who, &si[i], e) < 0)
            return workflow_err_in_job(e, i, b->jobs[i].name);
    }
    return submit_check_limits(rp, b->n, who->uid, SUBMIT_WORKFLOW | flags, workflow_doc_bytes(b->doc), e);
}

int workflow_check(wf_body *b, const caller *who, jerr *e)
{
    caller as = authz_as_account(who); /* as a job's network is checked (submit.c) */
    for (size_t i = 0; i < b->nnetworks; i++) {
        bool exists;
        if (networks_precheck(b->networks[i].name, b->networks[i].cidr, &as, &exists, e) < 0)
            return err_in_network(e, b, i);
    }
    size_t at = 0;
    if (volumes_precheck_all(b->volumes, b->nvolumes, who->uid, who->gid, &at, e) < 0)
        return err_in_volume(e, b, at);
    job_req *reqs = xcalloc(b->n, sizeof *reqs);
    job_req **rp = xcalloc(b->n, sizeof *rp);
    submit_info *si = xcalloc(b->n, sizeof *si);
    int rc = check_jobs(b, who, reqs, rp, si, SUBMIT_DRY_RUN, e);
    for (size_t i = 0; i < b->n; i++)
        jobreq_free(&reqs[i]);
    free(reqs), free(rp), free(si);
    return rc;
}

int workflow_networks(const wf_body *b, const caller *who, jerr *e)
{
    caller as = authz_as_account(who);
    for (size_t i = 0; i < b->nnetworks; i++) {
        bool exists;
        if (networks_precheck(b->networks[i].name, b->networks[i].cidr, &as, &exists, e) < 0 ||
            (!exists && networks_create(b->networks[i].name, b->networks[i].cidr, &as, e) < 0))
            return err_in_network(e, b, i);
        if (!exists)
            log_info("workflow %s: network %s (%s) created for uid %u", b->name, b->networks[i].name,
                     b->networks[i].cidr, (unsigned)who->uid);
    }
    return 0;
}

int workflow_volumes(const wf_body *b, uid_t uid, gid_t gid, volumes_done_fn done, void *arg, jerr *e)
{
    int pending = 0;
    for (size_t i = 0; i < b->nvolumes; i++) {
        int rc = volumes_create(&b->volumes[i], uid, gid, done, arg, e);
        if (rc < 0)
            return err_in_volume(e, b, i);
        if (rc == VOLUMES_PENDING)
            pending = VOLUMES_PENDING;
    }
    return pending;
}

int workflow_prepare(wf_body *b, const caller *who, wf_checked *c, jerr *e)
{
    size_t n = b->n;
    *c = (wf_checked){.n = n, .reqs = xcalloc(n, sizeof *c->reqs), .si = xcalloc(n, sizeof *c->si)};
    job_req **rp = xcalloc(n, sizeof *rp);
    int rc = check_jobs(b, who, c->reqs, rp, c->si, 0, e);
    free(rp);
    if (rc < 0)
        workflow_checked_free(c);
    return rc;
}

workflow *workflow_submit(wf_body *b, const caller *who, jerr *e)
{
    wf_checked c;
    if (workflow_prepare(b, who, &c, e) < 0)
        return NULL;
    return workflow_create(b, &c, who->uid, who->gid, e);
}

workflow *workflow_create(wf_body *b, wf_checked *c, uid_t uid, gid_t gid, jerr *e)
{
    size_t n = b->n;
    job_req *reqs = c->reqs;
    submit_info *si = c->si;
    /* checked at submission, maybe long ago (a streamed upload): every job's volumes are still
     * the ones it pinned, or nothing is created */
    for (size_t i = 0; i < n; i++)
        if (volumes_verify(&reqs[i], uid, gid, e) < 0) {
            workflow_err_in_job(e, i, b->jobs[i].name);
            workflow_checked_free(c);
            return NULL;
        }
    db_workflow row = {.seq = core.next_wf_seq, .owner_uid = uid, .owner_gid = gid, .created_ms = now_ms(),
                       .canceled_by = -1, .state = WF_PENDING, .doc = b->doc};
    uuid_v4(row.id);
    workflow *wf = workflow_new(&row);
    wf->jobs = b->jobs;
    wf->n = n;
    const char *name = b->name;
    state_wrote_workflows();
    if (db_insert_workflow(core.db, workflow_row(wf, &row), e) < 0) {
        db_busy_refusal(e, "submitted");
        wf->jobs = NULL;
        wf->n = 0;
        wf->doc = NULL;
        workflow_checked_free(c);
        wf_free(wf);
        return NULL;
    }
    free(b->requests);
    free(b->volumes); /* created already (workflow_volumes) */
    free(b->networks); /* likewise (workflow_networks) */
    *b = (wf_body){0}; /* the workflow has it now */
    workflow_add(wf);
    for (size_t i = 0; i < n; i++) {
        if (reqs[i].array) {
            /* an array: no task is made while it waits for the jobs it requires */
            jarray *a = submit_array_make(&reqs[i], uid, gid, &si[i], e);
            if (a) {
                arrays_set_workflow(a, wf, wf->id, (int)i, wf->jobs[i].nconds > 0);
                wf->jobs[i].array_seq = a->seq;
                continue;
            }
        }
        job *j = reqs[i].array ? NULL : submit_create(&reqs[i], uid, gid, &si[i], e);
        if (!j) {
            /* a disk or database fault halfway: what exists is canceled, and the workflow says why */
            log_err("workflow %s: job %zu: %s", wf->id, i, e->msg);
            wf->canceled_by = 0;
            free(wf->reason);
            wf->reason = xstrdup(e->msg);
            for (size_t k = 0; k < i; k++) {
                jarray *a = workflow_array(wf, k);
                jerr ce = {0};
                if (a && arrays_cancel_unmade(a, NULL, 0, &ce) < 0)
                    log_err("workflow %s: %s", wf->id, ce.msg);
                if (wf->jobs[k].j && !job_state_terminal(wf->jobs[k].j->state))
                    job_finish(wf->jobs[k].j, JS_CANCELED, "workflow_failed");
            }
            break;
        }
        snprintf(j->wf_id, sizeof j->wf_id, "%s", wf->id);
        j->wf_index = (int)i;
        j->wf = wf;
        if (wf->jobs[i].nconds && j->state == JS_QUEUED) {
            j->state = JS_PENDING;
            job_event(j, JE_PENDING, -1, "job '%s' of workflow %s: waits for the jobs it depends on",
                      wf->jobs[i].name, wf->id);
        }
        job_save(j);
        wf->jobs[i].j = j;
    }
    workflow_checked_free(c);
    if (wf->canceled_by == 0)
        wf_save(wf);
    /* committed before it is answered or launched: else taken back whole */
    if (state_commit_now(e) < 0) {
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "%s", e->msg);
        jerr_http(e, e->http, "the workflow was not created: %s", msg);
        log_info("workflow %s '%s' of uid %u: taken back (its submission could not be saved)", wf->id, name,
                 (unsigned)uid);
        for (size_t i = n; i-- > 0;) { /* arrays last made first: each is dropped from the list */
            jarray *a = workflow_array(wf, i);
            if (a)
                submit_array_undo(a);
            if (wf->jobs[i].j)
                submit_undo(wf->jobs[i].j);
        }
        core.nworkflows--; /* added last, above, as in its owner's list */
        owner_of(wf->owner_uid, true)->n--;
        owner_of(wf->owner_uid, true)->bytes -= wf->text_bytes;
        idindex_del(&by_ref, wf, wf->id, wf_name(wf));
        unmark_changed(wf);
        wf_free(wf);
        return NULL;
    }
    log_info("workflow %s '%s' submitted by uid %u: %zu jobs", wf->id, name, (unsigned)uid, n);
    return wf;
}


/* ---- the engine ---- */

jarray *workflow_array(const workflow *wf, size_t i)
{
    return i < wf->n && wf->jobs[i].array_seq ? arrays_by_seq(wf->jobs[i].array_seq) : NULL;
}

/* What is known of the workflow's job x for the jobs requiring it: a job's own, or an array's,
 * its tasks together (arrays_state; ended only once every task ended). */
static depend_seen seen_of(const workflow *wf, size_t x, bool *ended)
{
    const job *d = wf->jobs[x].j;
    if (wf->jobs[x].array_seq) {
        jarray *a = workflow_array(wf, x);
        if (!a) {
            *ended = true;
            return (depend_seen){.exists = false, .state = JS_CANCELED};
        }
        arrays_counts c;
        arrays_count_cached(a, &c); /* (an ended array's: kept, not counted at every change) */
        enum job_state st = arrays_state(a, &c);
        *ended = arrays_ended(a);
        if (!*ended && job_state_terminal(st)) /* a task ended that the settle step has not seen yet */
            st = JS_RUNNING;
        return (depend_seen){.exists = true, .started = arrays_started(a), .state = st};
    }
    *ended = !d || job_state_terminal(d->state);
    return (depend_seen){.exists = d != NULL, .started = d && job_started(d), .state = d ? d->state : JS_CANCELED};
}

/* Whether a job of the workflow requires job x to end st: asked for each ended job at each
 * change, so a mask made once (workflow_add), not a walk over every condition (that made a
 * canceled workflow's settling cost jobs x jobs x conditions). */
_Static_assert(JS_COUNT <= 32, "wf_job.handled holds a bit per state");
static bool handled(const workflow *wf, size_t x, enum job_state st) { return wf->jobs[x].handled >> st & 1u; }

/* "array 3f2a1b2c: 1 FAILED, 5 COMPLETED" */
static void array_words(jarray *a, char *out, size_t len)
{
    arrays_counts c;
    arrays_count_cached(a, &c);
    size_t l = (size_t)snprintf(out, len, "array %.8s:", a->id);
    bool first = true;
    for (int s = 0; s < JS_COUNT && l < len; s++)
        if (c.n[s]) {
            l += (size_t)snprintf(out + l, len - l, "%s %llu %s", first ? "" : ",", (unsigned long long)c.n[s],
                                  job_state_name((enum job_state)s));
            first = false;
        }
}

/* The workflow's state by the rules of docs/workflows.md (an array counts as one job, in the
 * state of its tasks together). */
static void refresh(workflow *wf)
{
    enum wf_state old = wf->state;
    bool all_ended = true, started = false;
    size_t failed = wf->n;
    enum job_state failed_state = JS_FAILED;
    for (size_t i = 0; i < wf->n; i++) {
        const job *j = wf->jobs[i].j;
        jarray *a = workflow_array(wf, i);
        if (a) {
            bool ended = arrays_ended(a);
            all_ended &= ended;
            started |= arrays_started(a);
            /* (canceled for its dependencies: as a job canceled so, not the failure; canceled because
             * its tasks could never be made: a failure, as a job's start_failed) */
            if (failed == wf->n && ended && a->canceled_by != ARRAYS_CANCELED_DEPENDENCY) {
                arrays_counts c;
                arrays_count_cached(a, &c); /* ended: counted once, kept until it changes */
                enum job_state st = arrays_state(a, &c);
                if (st != JS_COMPLETED && !handled(wf, i, st)) {
                    failed = i;
                    failed_state = st;
                }
            }
            continue;
        }
        if (!j)
            continue;
        all_ended &= job_state_terminal(j->state);
        started |= job_started(j);
        if (failed == wf->n && job_state_terminal(j->state) && j->state != JS_COMPLETED && !handled(wf, i, j->state) &&
            !(j->state == JS_CANCELED && j->end_reason && !strcmp(j->end_reason, "dependency"))) {
            failed = i;
            failed_state = j->state;
        }
    }
    /* saved when something changed, not on every later change of one of its jobs: a whole
     * document per job of a workflow of 10,000 canceled at once held the loop for minutes */
    bool changed = false;
    if (started && !wf->started_ms) {
        wf->started_ms = now_ms();
        changed = true;
    }
    wf->all_ended = all_ended;
    if (wf->canceled_by >= 0)
        wf->state = WF_CANCELED;
    else if (!all_ended)
        wf->state = started ? WF_RUNNING : WF_PENDING;
    else if (failed < wf->n) {
        wf->state = WF_FAILED;
        const job *j = wf->jobs[failed].j;
        jarray *a = workflow_array(wf, failed);
        char why[400], detail[300] = "";
        if (a)
            array_words(a, detail, sizeof detail);
        else if (j->has_exit)
            snprintf(detail, sizeof detail, "%s, exit code %d", j->end_reason ? j->end_reason : "?", j->exit_code);
        else
            snprintf(detail, sizeof detail, "%s", j->end_reason ? j->end_reason : "?");
        if (a && a->canceled_by == ARRAYS_CANCELED_UNMAKEABLE) /* (its canceled_why: "canceled: its task 3 ...") */
            snprintf(why, sizeof why, "job '%s' could not start: its tasks can never be made (%s; %s)",
                     wf->jobs[failed].name, a->canceled_why ? a->canceled_why : "canceled", detail);
        else
            snprintf(why, sizeof why, "job '%s' ended %s (%s)", wf->jobs[failed].name, job_state_name(failed_state),
                     detail);
        if (!wf->reason || strcmp(wf->reason, why)) {
            free(wf->reason);
            wf->reason = xstrdup(why);
            changed = true;
        }
    } else
        wf->state = WF_COMPLETED;
    if (all_ended && !wf->ended_ms) {
        wf->ended_ms = now_ms();
        changed = true;
    }
    if (wf->state != old || changed) {
        if (wf->state != old) {
            mark_changed(wf);
            log_info("workflow %s %s%s%s", wf->id, wf_state_name(wf->state), wf->reason ? ": " : "",
                     wf->reason ? wf->reason : "");
        }
        wf_save(wf);
    }
}

static void array_changed(jarray *a);

/* Decides a PENDING job (or an array that waits): queued once every condition holds, canceled
 * once one cannot (the rule and the step are the ones of rnx job run --after: depend_rule.h,
 * depend.h). */
static void decide(workflow *wf, size_t i)
{
    job *j = wf->jobs[i].j;
    jarray *a = workflow_array(wf, i);
    if (a ? !a->waiting || arrays_canceled(a) : !j || j->state != JS_PENDING)
        return;
    enum depend_verdict v = DEPEND_GO;
    for (size_t c = 0; c < wf->jobs[i].nconds && v != DEPEND_CANCEL; c++) {
        const wf_cond *cd = &wf->jobs[i].conds[c];
        depend_need need = {.kind = DEPEND_EXACTLY, .state = (uint8_t)cd->status};
        bool ended;
        depend_seen seen = seen_of(wf, cd->dep, &ended);
        enum depend_verdict one = depend_rule(need, seen);
        if (one == DEPEND_CANCEL) {
            char msg[300];
            snprintf(msg, sizeof msg, "needed '%s' to end %s; it %s%s", wf->jobs[cd->dep].name,
                     job_state_name(cd->status), seen.exists ? "ended " : "was deleted",
                     seen.exists ? job_state_name(seen.state) : "");
            if (a) {
                log_info("array %s (%s of workflow %s): %s: its tasks are canceled", a->id, wf->jobs[i].name, wf->id,
                         msg);
                arrays_cancel_dependency(a, msg);
                depend_array_changed(a); /* ended: who waits on it by --after */
                array_changed(a);        /* and its dependents in the workflow, in turn */
            } else
                depend_cancel(j, msg); /* decides its own dependents in turn */
            return;
        }
        if (one == DEPEND_WAIT)
            v = DEPEND_WAIT;
    }
    if (v != DEPEND_GO)
        return;
    if (a) {
        arrays_release_wait(a);
        log_info("array %s (%s of workflow %s): dependencies met, its tasks are queued", a->id, wf->jobs[i].name,
                 wf->id);
        return;
    }
    depend_release(j, "the jobs it depends on ended as it needs");
    log_info("job %s (%s of workflow %s): dependencies met, queued", j->id, wf->jobs[i].name, wf->id);
}

/* The workflow's job x changed: once it ended, the jobs requiring it are decided. */
static void dep_changed(workflow *wf, size_t x, bool ended)
{
    if (ended)
        for (size_t k = 0; k < wf->n; k++)
            for (size_t c = 0; c < wf->jobs[k].nconds; c++)
                if (wf->jobs[k].conds[c].dep == x) {
                    decide(wf, k);
                    break;
                }
    refresh(wf);
}

static void array_changed(jarray *a)
{
    if (!a || !a->wf || a->wf_index < 0 || (size_t)a->wf_index >= a->wf->n)
        return;
    dep_changed(a->wf, (size_t)a->wf_index, arrays_ended(a));
}

void workflow_array_changed(jarray *a) { array_changed(a); }

bool workflow_ended(const workflow *wf) { return wf->state >= WF_COMPLETED && wf->all_ended; }

void workflow_job_changed(job *j)
{
    if (!j || !j->wf)
        return;
    dep_changed(j->wf, (size_t)j->wf_index, job_state_terminal(j->state));
}

/* A job of a canceled workflow (or a made task of its array) that has not ended: canceled while
 * it waits, stopped while it runs. */
static void cancel_one(workflow *wf, job *j, uid_t by, jerr *e)
{
    if (!j || job_state_terminal(j->state))
        return;
    j->stopped_by = by;
    if (j->state == JS_PENDING || j->state == JS_HELD || job_in_queue(j))
        job_finish(j, JS_CANCELED, "canceled");
    else if (j->state != JS_STOPPING && job_launch_stop(j, by, e) < 0)
        log_warn("workflow %s: %s", wf->id, e->msg);
}

int workflow_cancel(workflow *wf, uid_t by, jerr *e)
{
    if (wf->state == WF_COMPLETED || wf->state == WF_FAILED || wf->state == WF_CANCELED)
        return jerr_http(e, 409, "workflow %s is %s already", wf->id, wf_state_name(wf->state));
    wf->canceled_by = by;
    free(wf->reason);
    char why[64];
    snprintf(why, sizeof why, "canceled by uid %u", (unsigned)by);
    wf->reason = xstrdup(why);
    for (size_t i = 0; i < wf->n; i++) {
        jarray *a = workflow_array(wf, i);
        if (a) {
            /* its tasks not made are canceled (none is made from now on), the made ones as jobs */
            a->waiting = false;
            if (arrays_cancel_unmade(a, NULL, by, e) < 0)
                log_warn("workflow %s: array %s: %s", wf->id, a->id, e->msg);
            for (size_t k = 0; k < a->ntasks; k++)
                cancel_one(wf, a->tasks[k], by, e);
            depend_array_changed(a);
            continue;
        }
        cancel_one(wf, wf->jobs[i].j, by, e);
    }
    e->msg[0] = 0;
    refresh(wf);
    return 0;
}

void workflow_resume_all(void)
{
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        if (!j->wf_id[0])
            continue;
        workflow *wf = idindex_get(&by_ref, j->wf_id);
        if (wf && j->wf_index >= 0 && (size_t)j->wf_index < wf->n) {
            j->wf = wf;
            wf->jobs[j->wf_index].j = j;
        }
    }
    /* arrays, likewise (loaded before: main.c); one not made yet waits again for the engine's
     * verdict below, as at its submission */
    for (size_t i = 0; i < core.narrays; i++) {
        jarray *a = core.arrays[i];
        if (!a->wf_id[0])
            continue;
        workflow *wf = idindex_get(&by_ref, a->wf_id);
        if (wf && a->wf_index >= 0 && (size_t)a->wf_index < wf->n) {
            a->wf = wf;
            wf->jobs[a->wf_index].array_seq = a->seq;
            if (wf->jobs[a->wf_index].nconds && !arrays_made_any(a) && !arrays_canceled(a))
                a->waiting = true;
        }
        if (!a->wf)
            log_warn("array %s: of workflow %s, which is not known; it stays an array of its own", a->id, a->wf_id);
    }
    /* Whatever ended while the daemon was down (or between its last commit and a crash). */
    for (size_t w = 0; w < core.nworkflows; w++) {
        workflow *wf = core.workflows[w];
        for (size_t k = 0; k < wf->n; k++)
            decide(wf, k);
        refresh(wf);
    }
}

static void maybe_gone(workflow *wf)
{
    if (wf->gc_listed)
        return;
    if (gone_n == gone_cap) {
        gone_cap = gone_cap ? 2 * gone_cap : 64;
        gone_ids = xrealloc(gone_ids, gone_cap * sizeof *gone_ids);
    }
    memcpy(gone_ids[gone_n++], wf->id, sizeof wf->id);
    wf->gc_listed = true;
}

void workflow_forget_job(job *j)
{
    if (j->wf && j->wf_index >= 0 && (size_t)j->wf_index < j->wf->n) {
        j->wf->jobs[j->wf_index].j = NULL;
        maybe_gone(j->wf);
    }
    j->wf = NULL;
}

void workflow_forget_array(jarray *a)
{
    if (a->wf)
        maybe_gone(a->wf);
}

/* Ended, and none of its jobs and arrays is kept (each was deleted, or never made). */
static bool nothing_kept(const workflow *wf)
{
    if (wf->state != WF_COMPLETED && wf->state != WF_FAILED && wf->state != WF_CANCELED)
        return false;
    for (size_t i = 0; i < wf->n; i++)
        if (wf->jobs[i].j || workflow_array(wf, i))
            return false;
    return true;
}

/* Marks wf to be dropped: its row deleted in the open transaction, its id and name unknown from
 * now on. false when the database did not take the delete (it is kept, whole). */
static bool drop_one(workflow *wf)
{
    jerr e = {0};
    if (db_delete_workflow(core.db, wf->id, &e) < 0) {
        log_err("workflow %s: not dropped: %s", wf->id, e.msg);
        return false;
    }
    idindex_del(&by_ref, wf, wf->id, wf_name(wf));
    wf->dropping = true;
    owner_of(wf->owner_uid, true)->bytes -= wf->text_bytes;
    char ev[80];
    snprintf(ev, sizeof ev, "{\"id\":\"%s\"}", wf->id);
    events_publish("workflow_deleted", wf->owner_uid, ev);
    log_info("workflow %s dropped: it ended %s and each of its jobs was deleted", wf->id, wf_state_name(wf->state));
    return true;
}

static bool not_dropping(const void *wf) { return !((const workflow *)wf)->dropping; }

/* Takes the workflows marked dropping out of v (order kept); the number left. */
static size_t without_dropped(workflow **v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!v[i]->dropping)
            v[k++] = v[i];
    return k;
}

size_t workflow_drop_gone(bool all)
{
    size_t dropped = 0;
    if (all)
        for (size_t i = 0; i < core.nworkflows; i++)
            dropped += nothing_kept(core.workflows[i]) && drop_one(core.workflows[i]);
    for (size_t i = 0; i < gone_n; i++) {
        workflow *wf = idindex_get(&by_ref, gone_ids[i]);
        if (!wf || !wf->gc_listed)
            continue;
        wf->gc_listed = false;
        dropped += nothing_kept(wf) && drop_one(wf);
    }
    gone_n = 0;
    if (!dropped)
        return 0;
    /* one pass over each list, however many went (a DELETE /v1/jobs of thousands) */
    marklist_keep(&changed_list, not_dropping);
    for (size_t i = 0; i < nowners; i++)
        owners[i].n = without_dropped(owners[i].v, owners[i].n);
    size_t k = 0;
    for (size_t i = 0; i < core.nworkflows; i++) {
        workflow *wf = core.workflows[i];
        if (wf->dropping)
            wf_free(wf);
        else
            core.workflows[k++] = wf;
    }
    core.nworkflows = k;
    core.trim_at_ms = now_ms() + 1000;
    return dropped;
}

/* ---- reading ---- */

bool workflow_visible(const workflow *wf, const caller *who) { return authz_may_on(who, AUTHZ_OTHERS_JOBS, wf->owner_uid); }

workflow *workflow_find(const char *ref, const caller *who, enum idref_want want, jerr *e)
{
    idref r;
    if (idref_start(&r, "workflow", "name", ref, e) < 0)
        return NULL;
    idref_want(&r, want);
    size_t n;
    idindex_entry *c = idindex_candidates(&by_ref, ref, &n);
    for (size_t i = 0; i < n; i++) {
        workflow *wf = c[i].obj;
        bool ended = wf->state == WF_COMPLETED || wf->state == WF_FAILED || wf->state == WF_CANCELED;
        if (idref_offer(&r, wf->id, wf_name(wf), wf_state_name(wf->state), ended, wf->owner_uid,
                        workflow_visible(wf, who), wf))
            break;
    }
    free(c);
    return idref_result(&r, e);
}


bool workflow_job_has_deps(const job *j)
{
    return j->wf && j->wf_index >= 0 && (size_t)j->wf_index < j->wf->n && j->wf->jobs[j->wf_index].nconds > 0;
}

void workflow_job_decide(job *j)
{
    if (workflow_job_has_deps(j))
        decide(j->wf, (size_t)j->wf_index);
}
