#include <stdio.h>
#include <string.h>

#include "../common/jsonx.h"
#include "../common/util.h"
#include "core.h"

static json_t *masked_secrets(json_t *req)
{
    json_t *out = json_object(), *v;
    const char *k;
    json_object_foreach(json_object_get(req, "secret_env"), k, v)
        json_object_set_new(out, k, json_string("***"));
    return out;
}

static json_t *copy_or(json_t *req, const char *key, json_t *dflt)
{
    json_t *v = json_object_get(req, key);
    if (v) {
        json_decref(dflt);
        return json_deep_copy(v);
    }
    return dflt;
}

static json_t *limits_json(const job *j)
{
    json_t *r = j->req, *l = json_object();
    static const char *const keys[] = {"max_cpu", "max_memory_mb", "max_iobps", "cpu_cores", "max_runtime_s",
                                       "pids_max"};
    for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
        json_t *v = json_object_get(r, keys[i]);
        json_object_set(l, keys[i], v ? v : json_null());
    }
    return l;
}

json_t *job_to_json(const job *j)
{
    json_t *o = json_object();
    json_t *r = j->req;
    json_object_set_new(o, "id", json_string(j->id));
    jx_set_str_or_null(o, "name", j->name);
    json_object_set_new(o, "status", json_string(job_state_name(j->state)));
    json_object_set_new(o, "owner_uid", json_integer(j->owner_uid));
    json_object_set_new(o, "uid", json_integer(j->uid));
    json_object_set_new(o, "gid", json_integer(j->gid));
    json_object_set_new(o, "command", copy_or(r, "command", json_null()));
    json_object_set_new(o, "args", copy_or(r, "args", json_array()));
    json_object_set_new(o, "env", copy_or(r, "env", json_object()));
    json_object_set_new(o, "secret_env", masked_secrets(r));
    json_object_set_new(o, "workdir", copy_or(r, "workdir", json_string("/work")));
    json_object_set_new(o, "network", copy_or(r, "network", json_string("none")));
    char host[64];
    snprintf(host, sizeof host, "job-%.8s", j->id);
    json_object_set_new(o, "hostname", json_string(host));
    json_object_set_new(o, "limits", limits_json(j));
    json_object_set_new(o, "uploads", copy_or(r, "uploads", json_array()));
    jx_set_time_or_null(o, "created_at", j->created_ms);
    jx_set_time_or_null(o, "scheduled_at", j->scheduled_ms);
    jx_set_time_or_null(o, "started_at", j->started_ms);
    jx_set_time_or_null(o, "ended_at", j->ended_ms);
    json_object_set_new(o, "exit_code", j->has_exit ? json_integer(j->exit_code) : json_null());
    json_object_set_new(o, "signal", j->signal ? json_integer(j->signal) : json_null());
    jx_set_str_or_null(o, "signal_name", j->signal_name);
    jx_set_str_or_null(o, "end_reason", j->end_reason);
    json_object_set_new(o, "stopped_by", j->stopped_by >= 0 ? json_integer(j->stopped_by) : json_null());
    jx_set_str_or_null(o, "error", j->error);
    json_object_set_new(o, "pid", j->init_pid > 0 ? json_integer(j->init_pid) : json_null());
    json_object_set_new(o, "shim_pid", j->shim_pid > 0 ? json_integer(j->shim_pid) : json_null());
    uint32_t pos = job_in_queue(j) && j->state != JS_SCHEDULED ? j->queue_position : 0;
    json_object_set_new(o, "priority", json_integer(json_integer_value(json_object_get(r, "priority"))));
    json_object_set_new(o, "queue_position", pos ? json_integer(pos) : json_null());
    char why[200] = "";
    if (job_in_queue(j) && j->state != JS_SCHEDULED)
        core_wait_reason(j, why, sizeof why);
    json_object_set_new(o, "preemptions", json_integer(j->preemptions));
    json_object_set_new(o, "workflow", j->wf ? json_pack("{s:s,s:O?,s:O?}", "id", j->wf->id, "name",
                                                         json_object_get(j->wf->doc, "name"), "job",
                                                         json_object_get(r, "name"))
                                             : json_null());
    json_object_set_new(o, "preemptible", json_boolean(json_is_true(json_object_get(r, "preemptible"))));
    json_object_set_new(o, "wait_reason", *why ? json_string(why) : json_null());
    job_usage u = j->usage;
    if (j->state == JS_RUNNING || j->state == JS_STOPPING)
        launch_live_usage(j, &u);
    json_object_set_new(o, "usage", json_pack("{s:I,s:I,s:I,s:I,s:I}", "cpu_ns", (json_int_t)u.cpu_ns,
                                              "memory_peak_bytes", (json_int_t)u.memory_peak_bytes,
                                              "io_read_bytes", (json_int_t)u.io_read_bytes, "io_write_bytes",
                                              (json_int_t)u.io_write_bytes, "pids_current",
                                              (json_int_t)u.pids_current));
    json_object_set_new(o, "gpus", j->gpus ? json_deep_copy(j->gpus) : json_array());
    json_object_set_new(o, "gpu_request",
                        json_pack("{s:O?,s:O?,s:O?,s:b,s:O?,s:b,s:O?,s:O?}", "count", json_object_get(r, "gpu_count"),
                                  "memory_mb", json_object_get(r, "gpu_memory_mb"), "ids", json_object_get(r, "gpu_ids"),
                                  "all", json_is_true(json_object_get(r, "gpu_all")), "caps",
                                  json_object_get(r, "gpu_caps"), "optional",
                                  json_is_true(json_object_get(r, "gpu_optional")), "degraded",
                                  json_object_get(r, "gpu_degraded"), "mig", json_object_get(r, "gpu_mig")));
    json_t *gr = json_object_get(o, "gpu_request");
    json_object_set(gr, "type", json_object_get(r, "gpu_type") ? json_object_get(r, "gpu_type") : json_null());
    json_object_set(gr, "cc", json_object_get(r, "gpu_cc") ? json_object_get(r, "gpu_cc") : json_null());
    json_object_set_new(gr, "share", json_boolean(json_is_true(json_object_get(r, "gpu_share"))));
    json_object_set_new(gr, "cross_numa", json_boolean(!json_is_false(json_object_get(r, "cross_numa"))));
    return o;
}
