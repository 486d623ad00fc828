/* Publishing settled changes as events (publish.h). The events' JSON is written here, as the
 * API's JSON is in job_json.c: small objects that say what changed; the console reads the rest
 * with the JSON API. */
#include "publish.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "arrays.h"
#include "events.h"
#include "gpus.h"
#include "gpu_health.h"
#include "jobs.h"
#include "state.h"
#include "workflow.h"

static bool synced;                   /* the marks below describe the state as it is */
static uint64_t gpu_sig[GPU_MAX];
static int64_t gpu_sampled[GPU_MAX];

static uint32_t job_sig(const job *j)
{
    return (uint32_t)j->state | (uint32_t)j->wait_why << 8 | (j->queue_position & 0xffffu) << 16;
}

static uint64_t gpu_signature(int i)
{
    gpu_report r = gpus_report(i);
    uint64_t reserved;
    int tenants = gpus_tenants(i, &reserved);
    const job *holder = gpus_holder(i);
    uint64_t h = 1469598103934665603ull;   /* FNV-1a of the holder's id */
    for (const char *p = holder ? holder->id : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    const gpu_health *hh = gpu_health_of(i);   /* a new XID is news even when the state stays */
    uint64_t x = hh ? (uint64_t)hh->last_xid_ms : 0;
    return ((uint64_t)r.state | (uint64_t)r.takes_jobs << 8 | (uint64_t)(tenants & 0xff) << 16) ^ (h << 24) ^
           (x * 0x9e3779b97f4a7c15ull);
}

static void emit(const char *kind, int64_t owner, json_t *o)
{
    char *t = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (t)
        events_publish(kind, owner, t);
    free(t);
}

static void publish_job(job *j)
{
    json_t *gpus = json_array();
    for (size_t k = 0; k < j->gpus.n; k++)
        json_array_append_new(gpus, json_integer(j->gpus.g[k].index));
    json_t *o = json_pack("{s:s,s:s?,s:s,s:I,s:o}", "id", j->id, "name", j->name, "status", job_state_name(j->state),
                          "user", (json_int_t)j->owner_uid, "gpus", gpus);
    if (j->queue_position && job_in_queue(j))
        json_object_set_new(o, "queue_position", json_integer(j->queue_position));
    if (j->has_exit)
        json_object_set_new(o, "exit_code", json_integer(j->exit_code));
    if (j->end_reason)
        json_object_set_new(o, "end_reason", json_string(j->end_reason));
    if (*j->wf_id)
        json_object_set_new(o, "workflow", json_string(j->wf_id));
    if (*j->array_id) { /* (rnx job wait ID_T learns the job of a task made after it asked) */
        json_object_set_new(o, "array", json_string(j->array_id));
        json_object_set_new(o, "task", json_integer(j->array_task));
    }
    emit("job", j->owner_uid, o);
}

/* A GPU's change: its holder's id to those who see its owner's jobs, "another_users_job" to
 * the others (gpu_json_holder's rule; events_publish_others). */
static void publish_gpu(int i)
{
    gpu_report r = gpus_report(i);
    const job *holder = gpus_holder(i);
    json_t *o = json_pack("{s:i,s:s,s:b,s:s?}", "index", i, "state", gpu_state_name(r.state), "takes_jobs",
                          r.takes_jobs, "job", holder ? holder->id : NULL);
    const gpu_health *hh = gpu_health_of(i);
    if (hh && hh->last_xid)
        json_object_set_new(o, "last_xid", json_integer(hh->last_xid));
    if (!holder)
        return emit("gpu", -1, o);
    json_t *others = json_deep_copy(o);
    json_object_set_new(others, "job", json_null());
    json_object_set_new(others, "another_users_job", json_true());
    emit("gpu", holder->owner_uid, o);
    char *t = json_dumps(others, JSON_COMPACT);
    json_decref(others);
    if (t)
        events_publish_others("gpu", holder->owner_uid, t);
    free(t);
}

static void publish_sample(int i, const gpu_health *h)
{
    json_t *o = json_pack("{s:i,s:I}", "index", i, "t", (json_int_t)h->sampled_ms);
    const char *keys[] = {"temperature_c", "utilization_pct", "memory_used_mb", "power_w"};
    int v[] = {h->temperature_c, h->utilization_pct, h->memory_used_mb, h->power_w};
    for (int k = 0; k < 4; k++)
        json_object_set_new(o, keys[k], v[k] >= 0 ? json_integer(v[k]) : json_null());
    emit("gpu_sample", -1, o);
}

static void job_changes(job **v, size_t n, bool quiet)
{
    for (size_t i = 0; i < n; i++) {
        job *j = v[i];
        uint32_t sig = job_sig(j) + 1;
        if (j->ev_sig != sig || j->ev_news) {
            j->ev_sig = sig;
            j->ev_news = false;
            if (!quiet)
                publish_job(j);
        }
    }
}

/* At log level debug (state_check_due): every job kept looked at, as the lists looked at them;
 * one whose change they missed is a bug (its event was never sent). */
static void job_changes_verify(void)
{
    static int64_t last_ns;
    if (!state_check_due(&last_ns, core.njobs))
        return;
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        if (j->ev_sig != job_sig(j) + 1) {
            log_err("publish: job %s (%s) changed unseen: %#x published, %#x now", j->id, job_state_name(j->state),
                    (unsigned)j->ev_sig, (unsigned)job_sig(j) + 1);
            abort();
        }
    }
}

/* A workflow's status, when it changed since it was last published. */
static void workflow_change(workflow *wf, bool quiet)
{
    if (wf->ev_state == (uint8_t)(wf->state + 1))
        return;
    wf->ev_state = (uint8_t)(wf->state + 1);
    if (!quiet)
        emit("workflow", wf->owner_uid, json_pack("{s:s,s:s}", "id", wf->id, "status", wf_state_name(wf->state)));
}

/* A job array's status as one job's (rnx job wait ARRAY, the console), when its tasks changed. */
static void array_change(jarray *a, bool quiet)
{
    if (!a->ev_dirty && a->ev_state)
        return;
    a->ev_dirty = false;
    arrays_counts c;
    arrays_count(a, &c);
    enum job_state st = arrays_state(a, &c);
    bool canceled = a->ev_canceled; /* (one event for a cancel, however many tasks it took) */
    a->ev_canceled = false;
    if (a->ev_state == (uint8_t)(st + 1) && !canceled)
        return;
    a->ev_state = (uint8_t)(st + 1);
    if (quiet)
        return;
    json_t *o = json_pack("{s:s,s:s,s:s?,s:s,s:I}", "id", a->id, "kind", "array", "name", a->name, "status",
                          job_state_name(st), "user", (json_int_t)a->owner_uid);
    int ec = arrays_exit_code(a, &c);
    if (ec >= 0)
        json_object_set_new(o, "exit_code", json_integer(ec));
    emit("job", a->owner_uid, o);
}

void publish_changes(void)
{
    size_t n;
    job **ended = jobs_take_ended(&n);
    /* the workflows and job arrays whose status may have changed (workflow.c and arrays.c list
     * them), not every one kept: a user may keep many, and every turn comes here while a stream
     * listens */
    size_t nw, na;
    void **wv = workflow_take_changed(&nw);
    void **av = arrays_take_changed(&na);
    if (!events_listening()) {
        free(wv);
        free(av);
        synced = false;
        return;
    }
    bool quiet = !synced;   /* the first stream's client loads what is now */
    synced = true;
    /* Only a job that is waiting or holds room, or one that ended since the last turn, can have
     * changed what its event says: most jobs kept have ended long ago, and every turn of the
     * loop comes here while a console or an rnx job wait listens. The first stream's turn marks
     * them all. */
    if (quiet)
        job_changes(core.jobs, core.njobs, true);
    else {
        job_changes(ended, n, false);
        job **v = jobs_queued(&n);
        job_changes(v, n, false);
        v = jobs_holding_room(&n);
        job_changes(v, n, false);
        v = jobs_in_state(JS_PENDING, &n);
        job_changes(v, n, false);
        v = jobs_in_state(JS_HELD, &n);
        job_changes(v, n, false);
        job_changes_verify();
    }
    /* (the first stream's turn looks at all) */
    if (quiet) {
        for (size_t i = 0; i < core.nworkflows; i++)
            workflow_change(core.workflows[i], true);
        for (size_t i = 0; i < core.narrays; i++)
            array_change(core.arrays[i], true);
    } else {
        if (nw)
            log_debug("events: a turn looked at %zu workflows of %zu kept", nw, core.nworkflows);
        if (na)
            log_debug("events: a turn looked at %zu arrays of %zu kept", na, core.narrays);
        for (size_t i = 0; i < nw; i++)
            workflow_change(wv[i], false);
        for (size_t i = 0; i < na; i++)
            array_change(av[i], false);
    }
    free(wv);
    free(av);
    for (int i = 0; i < core.gpu.inv.n && i < GPU_MAX; i++) {
        uint64_t sig = gpu_signature(i);
        if (gpu_sig[i] != sig) {
            gpu_sig[i] = sig;
            if (!quiet)
                publish_gpu(i);
        }
        const gpu_health *h = gpu_health_of(i);
        if (h && h->sampled_ms > gpu_sampled[i]) {
            gpu_sampled[i] = h->sampled_ms;
            if (!quiet)
                publish_sample(i, h);
        }
    }
}
