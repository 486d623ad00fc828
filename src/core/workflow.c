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

#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/util.h"
#include "core.h"


static void wf_save(workflow *wf)
{
    jerr e = {0};
    if (db_update_workflow(C.db, wf, &e) < 0)
        log_err("%s", e.msg);
}

static void wf_add(workflow *wf)
{
    C.workflows = realloc(C.workflows, (C.nworkflows + 1) * sizeof *C.workflows);
    if (!C.workflows)
        abort();
    C.workflows[C.nworkflows++] = wf;
    if (wf->seq >= C.next_wf_seq)
        C.next_wf_seq = wf->seq + 1;
}

static void wf_free(workflow *wf)
{
    if (!wf)
        return;
    for (size_t i = 0; i < wf->n; i++)
        free(wf->jobs[i].conds);
    free(wf->jobs);
    free(wf->reason);
    json_decref(wf->doc);
    free(wf);
}

void workflow_free_all(void)
{
    for (size_t i = 0; i < C.nworkflows; i++)
        wf_free(C.workflows[i]);
    free(C.workflows);
}

static const char *job_name_at(const workflow *wf, size_t i)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(wf->doc, "jobs"), i), "name"));
}

/* ---- validation ---- */

static const char *const body_keys[] = {"name", "description", "source", "yaml", "jobs", NULL};
static const char *const job_keys[] = {"name", "requires", "runtime", "volumes", "request", NULL};

static int known_keys(json_t *o, const char *const *keys, const char *where, jerr *e)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], k))
            i++;
        if (!keys[i]) {
            char field[64];
            snprintf(field, sizeof field, "%s%s", where, k);
            return jerr_field(e, field, "%s: unknown field", field);
        }
    }
    return 0;
}

static bool good_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n > 0 && n <= 128 && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* Prefixes a job request's error field with its place: "jobs[2].request.gpu_count". */
static int in_job(jerr *e, size_t i, const char *name)
{
    char field[sizeof e->field], msg[sizeof e->msg];
    snprintf(field, sizeof field, "jobs[%zu].request%s%s", i, e->field[0] ? "." : "", e->field);
    snprintf(msg, sizeof msg, "job '%s': %s", name, e->msg);
    snprintf(e->field, sizeof e->field, "%s", field);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    return -1;
}

/* Depth-first search for a cycle; names it "a -> b -> a". */
static int find_cycle(const wf_job *jobs, size_t n, json_t *names, size_t at, uint8_t *mark, size_t *stack,
                      size_t depth, jerr *e)
{
    mark[at] = 1;
    stack[depth] = at;
    for (size_t c = 0; c < jobs[at].nconds; c++) {
        size_t d = jobs[at].conds[c].dep;
        if (mark[d] == 1) {
            char cyc[sizeof e->msg] = "";
            size_t k = depth;
            while (stack[k] != d)
                k--;
            for (size_t m = k; m <= depth; m++) {
                size_t l = strlen(cyc);
                snprintf(cyc + l, sizeof cyc - l, "%s -> ", json_string_value(json_array_get(names, stack[m])));
            }
            size_t l = strlen(cyc);
            snprintf(cyc + l, sizeof cyc - l, "%s", json_string_value(json_array_get(names, d)));
            char field[64];
            snprintf(field, sizeof field, "jobs[%zu].requires", at);
            return jerr_field(e, field, "%s: dependency cycle: %s", field, cyc);
        }
        if (!mark[d] && find_cycle(jobs, n, names, d, mark, stack, depth + 1, e) < 0)
            return -1;
    }
    mark[at] = 2;
    return 0;
}

static const enum job_state end_states[] = {JS_COMPLETED, JS_FAILED, JS_STOPPED, JS_CANCELED};

/* jobs[i].requires: [{job, status}] into conditions. */
static int parse_conds(json_t *reqs, size_t i, json_t *names, wf_job *wj, jerr *e)
{
    char field[64];
    snprintf(field, sizeof field, "jobs[%zu].requires", i);
    if (!reqs || json_is_null(reqs))
        return 0;
    if (!json_is_array(reqs))
        return jerr_field(e, field, "%s: must be a list of {job, status}", field);
    wj->conds = xcalloc(json_array_size(reqs) + 1, sizeof *wj->conds);
    size_t k;
    json_t *c;
    json_array_foreach(reqs, k, c)
    {
        snprintf(field, sizeof field, "jobs[%zu].requires[%zu]", i, k);
        const char *dep = json_string_value(json_object_get(c, "job"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (!json_is_object(c) || !dep || !st || json_object_size(c) != 2)
            return jerr_field(e, field, "%s: must be {\"job\": NAME, \"status\": STATE}", field);
        size_t d = 0;
        while (d < json_array_size(names) && strcmp(json_string_value(json_array_get(names, d)), dep))
            d++;
        if (d == json_array_size(names))
            return jerr_field(e, field, "%s: no job '%.64s' in this workflow", field, dep);
        if (d == i)
            return jerr_field(e, field, "%s: a job cannot wait for itself", field);
        enum job_state s;
        bool ok = job_state_parse(st, &s) == 0 && !strcmp(st, job_state_name(s));
        for (size_t t = 0; ok && t < ARRAY_LEN(end_states); t++)
            if (end_states[t] == s)
                goto found;
        return jerr_field(e, field, "%s: '%.32s' is not a state a job ends in; use COMPLETED, FAILED, STOPPED or "
                                    "CANCELED", field, st);
    found:
        wj->conds[wj->nconds++] = (wf_cond){d, s};
    }
    return 0;
}

/* names: the jobs' names, filled here (the user's body is not written to). */
static int check_body(json_t *body, json_t *names, wf_job *jobs, jerr *e)
{
    json_t *arr = json_object_get(body, "jobs");
    size_t i;
    json_t *jj;
    json_array_foreach(arr, i, jj)
    {
        char field[64];
        if (!json_is_object(jj)) {
            snprintf(field, sizeof field, "jobs[%zu]", i);
            return jerr_field(e, field, "%s: must be an object", field);
        }
        snprintf(field, sizeof field, "jobs[%zu].", i);
        if (known_keys(jj, job_keys, field, e) < 0)
            return -1;
        const char *name = json_string_value(json_object_get(jj, "name"));
        snprintf(field, sizeof field, "jobs[%zu].name", i);
        if (!good_name(name))
            return jerr_field(e, field, "%s: a job needs a name of letters, digits, '.', '_' and '-' (at most 128)",
                              field);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(json_string_value(json_array_get(names, k)), name))
                return jerr_field(e, field, "%s: two jobs are named '%s'", field, name);
        json_array_append_new(names, json_string(name));
    }
    json_array_foreach(arr, i, jj)
    {
        char field[64];
        const char *rt = NULL;
        snprintf(field, sizeof field, "jobs[%zu].runtime", i);
        if (json_object_get(jj, "runtime") && !(rt = json_string_value(json_object_get(jj, "runtime"))))
            return jerr_field(e, field, "%s: must be a string", field);
        if (rt)
            return jerr_field(e, field, "%s: runtime '%.64s' is not available: this joblet has no runtime "
                                        "environments yet; remove 'runtime:' to run the command with the host's own "
                                        "system directories (read-only)", field, rt);
        json_t *vol = json_object_get(jj, "volumes");
        snprintf(field, sizeof field, "jobs[%zu].volumes", i);
        if (vol && !json_is_null(vol) && !(json_is_array(vol) && json_array_size(vol) == 0))
            return jerr_field(e, field, "%s: volumes are not available in this joblet yet; send files with "
                                        "'uploads:' instead", field);
        if (parse_conds(json_object_get(jj, "requires"), i, names, &jobs[i], e) < 0)
            return -1;
        json_t *req = json_object_get(jj, "request");
        snprintf(field, sizeof field, "jobs[%zu].request", i);
        if (!json_is_object(req))
            return jerr_field(e, field, "%s: must be an object: the job's request, as POST /v1/jobs takes", field);
        json_t *rn = json_object_get(req, "name");
        if (rn && (!json_is_string(rn) || strcmp(json_string_value(rn), json_string_value(json_array_get(names, i)))))
        {
            snprintf(field, sizeof field, "jobs[%zu].request.name", i);
            return jerr_field(e, field, "%s: must be the job's name or absent", field);
        }
        json_object_set_new(req, "name", json_string(json_string_value(json_array_get(names, i))));
    }
    size_t n = json_array_size(arr);
    uint8_t *mark = xcalloc(n, 1);
    size_t *stack = xcalloc(n, sizeof *stack);
    int rc = 0;
    for (i = 0; i < n && rc == 0; i++)
        if (!mark[i])
            rc = find_cycle(jobs, n, names, i, mark, stack, 0, e);
    free(mark);
    free(stack);
    return rc;
}

workflow *workflow_submit(json_t *body, uid_t uid, gid_t gid, jerr *e)
{
    if (!json_is_object(body)) {
        jerr_field(e, "", "a workflow is a JSON object: {name, description, source, yaml, jobs}");
        return NULL;
    }
    if (known_keys(body, body_keys, "", e) < 0)
        return NULL;
    const char *name = NULL, *desc = NULL, *source = NULL, *yaml = NULL;
    if (jx_str(body, "name", &name, e) < 0 || jx_str(body, "description", &desc, e) < 0 ||
        jx_str(body, "source", &source, e) < 0 || jx_str(body, "yaml", &yaml, e) < 0)
        return NULL;
    if (!name || !*name || strlen(name) > 200) {
        jerr_field(e, "name", "name: a workflow needs a name of 1 to 200 characters");
        return NULL;
    }
    if (yaml && strlen(yaml) > (1u << 20)) {
        jerr_field(e, "yaml", "yaml: the workflow file is larger than 1 MiB");
        return NULL;
    }
    json_t *arr = json_object_get(body, "jobs");
    size_t n = json_array_size(arr);
    if (!json_is_array(arr) || n == 0 || n > 10000) {
        jerr_field(e, "jobs", "jobs: a workflow needs a list of 1 to 10000 jobs");
        return NULL;
    }
    wf_job *jobs = xcalloc(n, sizeof *jobs);
    job_req *reqs = xcalloc(n, sizeof *reqs);
    job_req **rp = xcalloc(n, sizeof *rp);
    submit_info *si = xcalloc(n, sizeof *si);
    workflow *wf = NULL;
    json_t *names = json_array();
    if (check_body(body, names, jobs, e) < 0)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        json_t *rq = json_object_get(json_array_get(arr, i), "request");
        rp[i] = &reqs[i];
        if (jobreq_from_json(rq, &reqs[i], 0, time(NULL), e) < 0 || submit_check(&reqs[i], uid, &si[i], e) < 0) {
            in_job(e, i, json_string_value(json_array_get(names, i)));
            goto fail;
        }
    }
    if (submit_check_limits(rp, n, uid, true, e) < 0)
        goto fail;
    wf = xcalloc(1, sizeof *wf);
    uuid_v4(wf->id);
    wf->seq = C.next_wf_seq;
    wf->owner_uid = uid;
    wf->owner_gid = gid;
    wf->created_ms = now_ms();
    wf->canceled_by = -1;
    wf->state = WF_PENDING;
    wf->jobs = jobs;
    wf->n = n;
    jobs = NULL;
    wf->doc = json_pack("{s:s,s:s?,s:s?,s:s?,s:[]}", "name", name, "description", desc, "source", source, "yaml", yaml,
                        "jobs");
    for (size_t i = 0; i < n; i++) {
        json_t *src = json_array_get(arr, i);
        json_t *rq = json_object_get(src, "requires");
        json_t *o = json_pack("{s:O,s:o}", "name", json_array_get(names, i), "requires",
                              rq ? json_incref(rq) : json_array());
        json_array_append_new(json_object_get(wf->doc, "jobs"), o);
    }
    if (db_insert_workflow(C.db, wf, e) < 0)
        goto fail;
    wf_add(wf);
    for (size_t i = 0; i < n; i++) {
        job *j = submit_create(&reqs[i], uid, gid, &si[i], e);
        if (!j) {
            /* a disk or database fault halfway: what exists is canceled, and the workflow says why */
            log_err("workflow %s: job %zu: %s", wf->id, i, e->msg);
            wf->canceled_by = 0;
            free(wf->reason);
            wf->reason = xstrdup(e->msg);
            for (size_t k = 0; k < i; k++)
                if (wf->jobs[k].j && !job_state_terminal(wf->jobs[k].j->state))
                    job_finish(wf->jobs[k].j, JS_CANCELED, "workflow_failed");
            workflow_job_changed(NULL);
            break;
        }
        snprintf(j->wf_id, sizeof j->wf_id, "%s", wf->id);
        j->wf_index = (int)i;
        j->wf = wf;
        if (wf->jobs[i].nconds && j->state == JS_QUEUED)
            j->state = JS_PENDING;
        job_save(j);
        wf->jobs[i].j = j;
    }
    log_info("workflow %s '%s' submitted by uid %u: %zu jobs", wf->id, name, (unsigned)uid, n);
    for (size_t i = 0; i < n; i++)
        jobreq_free(&reqs[i]);
    json_decref(names);
    free(reqs);
    free(rp);
    free(si);
    return wf->canceled_by == 0 ? (wf_save(wf), wf) : wf;
fail:
    json_decref(names);
    for (size_t i = 0; i < n; i++)
        jobreq_free(&reqs[i]);
    free(rp);
    if (jobs)
        for (size_t i = 0; i < n; i++)
            free(jobs[i].conds);
    free(jobs);
    free(reqs);
    free(si);
    if (wf) {
        wf->jobs = NULL;
        wf->n = 0;
        wf_free(wf);
    }
    return NULL;
}

/* ---- the engine ---- */

static bool handled(const workflow *wf, size_t x)
{
    const job *j = wf->jobs[x].j;
    for (size_t k = 0; k < wf->n; k++)
        for (size_t c = 0; c < wf->jobs[k].nconds; c++)
            if (wf->jobs[k].conds[c].dep == x && j && wf->jobs[k].conds[c].status == j->state)
                return true;
    return false;
}

/* The workflow's state by the rules of docs/workflows.md. */
static void refresh(workflow *wf)
{
    enum wf_state old = wf->state;
    bool all_ended = true, started = false;
    size_t failed = wf->n;
    for (size_t i = 0; i < wf->n; i++) {
        const job *j = wf->jobs[i].j;
        if (!j)
            continue;
        all_ended &= job_state_terminal(j->state);
        started |= j->started_ms > 0 || j->shim_pid > 0;
        if (failed == wf->n && job_state_terminal(j->state) && j->state != JS_COMPLETED && !handled(wf, i) &&
            !(j->state == JS_CANCELED && j->end_reason && !strcmp(j->end_reason, "dependency")))
            failed = i;
    }
    if (started && !wf->started_ms)
        wf->started_ms = now_ms();
    if (wf->canceled_by >= 0)
        wf->state = WF_CANCELED;
    else if (!all_ended)
        wf->state = started ? WF_RUNNING : WF_PENDING;
    else if (failed < wf->n) {
        wf->state = WF_FAILED;
        const job *j = wf->jobs[failed].j;
        char why[300], ec[32] = "";
        if (j->has_exit)
            snprintf(ec, sizeof ec, ", exit code %d", j->exit_code);
        snprintf(why, sizeof why, "job '%s' ended %s (%s%s)", job_name_at(wf, failed), job_state_name(j->state),
                 j->end_reason ? j->end_reason : "?", ec);
        free(wf->reason);
        wf->reason = xstrdup(why);
    } else
        wf->state = WF_COMPLETED;
    if (all_ended && !wf->ended_ms)
        wf->ended_ms = now_ms();
    if (wf->state != old || (all_ended && wf->ended_ms)) {
        if (wf->state != old)
            log_info("workflow %s %s%s%s", wf->id, wf_state_name(wf->state), wf->reason ? ": " : "",
                     wf->reason ? wf->reason : "");
        wf_save(wf);
    }
}

/* Decides a PENDING job: queued once every condition holds, canceled once one cannot. */
static void decide(workflow *wf, size_t i)
{
    job *j = wf->jobs[i].j;
    if (!j || j->state != JS_PENDING)
        return;
    bool all = true;
    for (size_t c = 0; c < wf->jobs[i].nconds; c++) {
        const wf_cond *cd = &wf->jobs[i].conds[c];
        const job *d = wf->jobs[cd->dep].j;
        if (d && !job_state_terminal(d->state)) {
            all = false;
            continue;
        }
        if (!d || d->state != cd->status) {
            char msg[300];
            snprintf(msg, sizeof msg, "needed '%s' to end %s; it %s%s", job_name_at(wf, cd->dep),
                     job_state_name(cd->status), d ? "ended " : "was deleted", d ? job_state_name(d->state) : "");
            free(j->error);
            j->error = xstrdup(msg);
            job_finish(j, JS_CANCELED, "dependency"); /* decides its own dependents in turn */
            return;
        }
    }
    if (!all)
        return;
    j->state = j->scheduled_ms > now_ms() ? JS_SCHEDULED : JS_QUEUED;
    job_save(j);
    log_info("job %s (%s of workflow %s): dependencies met, queued", j->id, job_name_at(wf, i), wf->id);
}

void workflow_job_changed(job *j)
{
    if (!j || !j->wf)
        return;
    workflow *wf = j->wf;
    if (job_state_terminal(j->state))
        for (size_t k = 0; k < wf->n; k++)
            for (size_t c = 0; c < wf->jobs[k].nconds; c++)
                if (wf->jobs[k].conds[c].dep == (size_t)j->wf_index) {
                    decide(wf, k);
                    break;
                }
    refresh(wf);
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
        job *j = wf->jobs[i].j;
        if (!j || job_state_terminal(j->state))
            continue;
        j->stopped_by = by;
        if (j->state == JS_PENDING || job_in_queue(j))
            job_finish(j, JS_CANCELED, "canceled");
        else if (j->state != JS_STOPPING && launch_stop(j, by, e) < 0)
            log_warn("workflow %s: %s", wf->id, e->msg);
    }
    e->msg[0] = 0;
    refresh(wf);
    return 0;
}

void workflow_load(workflow *wf)
{
    json_t *names = json_array(), *arr = json_object_get(wf->doc, "jobs"), *jj;
    size_t i;
    json_array_foreach(arr, i, jj) json_array_append(names, json_object_get(jj, "name"));
    wf->n = json_array_size(arr);
    wf->jobs = xcalloc(wf->n + 1, sizeof *wf->jobs);
    json_array_foreach(arr, i, jj)
    {
        jerr e = {0};
        if (parse_conds(json_object_get(jj, "requires"), i, names, &wf->jobs[i], &e) < 0)
            log_err("workflow %s: stored conditions: %s", wf->id, e.msg);
    }
    json_decref(names);
    wf_add(wf);
}

void workflow_resume_all(void)
{
    for (size_t i = 0; i < C.njobs; i++) {
        job *j = C.jobs[i];
        if (!j->wf_id[0])
            continue;
        for (size_t w = 0; w < C.nworkflows && !j->wf; w++)
            if (!strcmp(C.workflows[w]->id, j->wf_id) && j->wf_index >= 0 && (size_t)j->wf_index < C.workflows[w]->n) {
                j->wf = C.workflows[w];
                j->wf->jobs[j->wf_index].j = j;
            }
    }
    /* Whatever ended while the daemon was down (or between its last commit and a crash). */
    for (size_t w = 0; w < C.nworkflows; w++) {
        workflow *wf = C.workflows[w];
        for (size_t k = 0; k < wf->n; k++)
            decide(wf, k);
        refresh(wf);
    }
}

void workflow_forget_job(job *j)
{
    if (j->wf && j->wf_index >= 0 && (size_t)j->wf_index < j->wf->n)
        j->wf->jobs[j->wf_index].j = NULL;
    j->wf = NULL;
}

/* ---- reading ---- */

static bool visible(const workflow *wf, uid_t caller) { return caller == 0 || wf->owner_uid == caller; }

workflow *workflow_find(const char *id, uid_t caller, jerr *e)
{
    size_t len = id ? strlen(id) : 0;
    if (len == 0 || len > 36 || strspn(id, "0123456789abcdef-") != len) {
        jerr_http(e, 404, "no workflow '%s': a workflow id is a UUID or a unique prefix of one", id ? id : "");
        return NULL;
    }
    workflow *found = NULL;
    size_t nmatch = 0;
    for (size_t i = 0; i < C.nworkflows; i++)
        if (!strncmp(C.workflows[i]->id, id, len) && visible(C.workflows[i], caller)) {
            found = C.workflows[i];
            nmatch++;
        }
    if (nmatch == 0)
        jerr_http(e, 404, "no workflow matches '%s'", id);
    else if (nmatch > 1)
        jerr_http(e, 409, "'%s' matches %zu workflows; type more of the id", id, nmatch);
    return nmatch == 1 ? found : NULL;
}

json_t *workflow_to_json(const workflow *wf, bool detail)
{
    json_t *o = json_object(), *jobs = json_array(), *counts = json_object();
    json_object_set_new(o, "id", json_string(wf->id));
    json_object_set(o, "name", json_object_get(wf->doc, "name"));
    json_object_set_new(o, "description", json_incref(json_object_get(wf->doc, "description")) ?: json_null());
    json_object_set_new(o, "source", json_incref(json_object_get(wf->doc, "source")) ?: json_null());
    json_object_set_new(o, "state", json_string(wf_state_name(wf->state)));
    json_object_set_new(o, "owner_uid", json_integer(wf->owner_uid));
    jx_set_time_or_null(o, "created_at", wf->created_ms);
    jx_set_time_or_null(o, "started_at", wf->started_ms);
    jx_set_time_or_null(o, "ended_at", wf->ended_ms);
    jx_set_str_or_null(o, "reason", wf->reason);
    json_object_set_new(o, "canceled_by", wf->canceled_by >= 0 ? json_integer(wf->canceled_by) : json_null());
    for (size_t i = 0; i < wf->n; i++) {
        const job *j = wf->jobs[i].j;
        json_t *jo = json_object();
        json_object_set_new(jo, "name", json_string(job_name_at(wf, i)));
        json_object_set(jo, "requires", json_object_get(json_array_get(json_object_get(wf->doc, "jobs"), i), "requires"));
        json_object_set_new(jo, "job_id", j ? json_string(j->id) : json_null());
        const char *st = j ? job_state_name(j->state) : "DELETED";
        json_object_set_new(jo, "status", json_string(st));
        json_object_set_new(counts, st, json_integer(json_integer_value(json_object_get(counts, st)) + 1));
        json_object_set_new(jo, "exit_code", j && j->has_exit ? json_integer(j->exit_code) : json_null());
        jx_set_str_or_null(jo, "end_reason", j ? j->end_reason : NULL);
        jx_set_str_or_null(jo, "error", j ? j->error : NULL);
        json_t *g = json_array();
        for (size_t k = 0; j && k < j->gpus.n; k++)
            json_array_append_new(g, json_integer(j->gpus.g[k].index));
        json_object_set_new(jo, "gpus", g);
        jx_set_time_or_null(jo, "started_at", j ? j->started_ms : 0);
        jx_set_time_or_null(jo, "ended_at", j ? j->ended_ms : 0);
        json_array_append_new(jobs, jo);
    }
    json_object_set_new(o, "jobs", jobs);
    json_object_set_new(o, "counts", counts);
    if (detail)
        json_object_set_new(o, "yaml", json_incref(json_object_get(wf->doc, "yaml")) ?: json_null());
    return o;
}

json_t *workflow_list_json(uid_t caller)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < C.nworkflows; i++)
        if (visible(C.workflows[i], caller))
            json_array_append_new(arr, workflow_to_json(C.workflows[i], false));
    return json_pack("{s:o}", "workflows", arr);
}
