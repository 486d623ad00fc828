/* The "detail" of a job as the API shows it (job_detail_json.h): JSON at the API's edge, from
 * what job_detail.c and job_events.c wrote into the database and the job's live GPU use. */
#include "job_detail_json.h"

#include <stdlib.h>

#include "../common/jsonx.h"
#include "../common/log.h"
#include "metrics.h"
#include "state.h"

static json_t *stored(const job *j, enum db_job_extra which)
{
    char *text = db_job_extra_get(core.db, j->id, which);
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return v ? v : json_null();
}

static void add_event(const db_event *ev, void *arg)
{
    json_t *o = json_object();
    jx_set_time_or_null(o, "time", ev->ts_ms);
    json_object_set_new(o, "event", json_string(ev->event));
    json_object_set_new(o, "uid", ev->uid >= 0 ? json_integer(ev->uid) : json_null());
    jx_set_str_or_null(o, "detail", ev->detail);
    json_array_append_new(arg, o);
}

json_t *job_detail_json_request(const job_req *r)
{
    json_t *fields = jobreq_to_json(r, 0);
    /* what the daemon set itself, and the file listing (the job's "uploads" has it) */
    for (int i = 0; i < JR_N; i++)
        if (jobreq_fields[i].daemon_only || i == JR_UPLOADS || (i == JR_MAX_MEMORY_MB && r->memory_default))
            json_object_del(fields, jobreq_fields[i].key);
    return json_pack("{s:o,s:o,s:o}", "fields", fields, "flags", jobreq_to_flags(r), "uploads",
                     json_integer((json_int_t)r->nuploads));
}

void job_detail_json_events(json_t *o, const char *id)
{
    json_t *evs = json_array();
    uint64_t dropped = 0;
    jerr e = {0};
    if (db_event_load(core.db, id, add_event, evs, &dropped, &e) < 0)
        log_err("job %s: %s", id, e.msg);
    json_object_set_new(o, "events", evs);
    json_object_set_new(o, "events_dropped", json_integer((json_int_t)dropped));
}

json_t *job_detail_json(const job *j)
{
    json_t *o = json_object();
    json_object_set_new(o, "request", job_detail_json_request(&j->req));
    /* the placement of the GPUs it holds or held last; none while it waits (again) */
    json_object_set_new(o, "placement", j->gpus.n ? stored(j, DB_JOB_PLACEMENT) : json_null());
    json_object_set_new(o, "spec", stored(j, DB_JOB_SPEC));
    json_t *usage = json_object();
    if ((j->state == JS_RUNNING || j->state == JS_STOPPING || j->state == JS_SUSPENDED) && j->gpus.n) {
        json_t *mj = metrics_job_json(j);
        json_object_set(usage, "gpus", json_object_get(mj, "gpus"));
        json_decref(mj);
    } else {
        json_object_set_new(usage, "gpus", json_null());
    }
    json_object_set_new(o, "usage", usage);
    job_detail_json_events(o, j->id);
    return o;
}
