/* GPUs as the API shows them (GET /v1/gpus, GET /v1/gpus/{gpu}): discovery's description of
 * each (gpu/discover.c) with its state, holders and last health sample. JSON is made here,
 * at the API's edge; the core keeps them typed (gpus.h, gpu_service.h, gpu_health.h). */
#include "gpu_json.h"

#include <stdio.h>

#include "../common/jsonx.h"
#include "../gpu/throttle.h"
#include "authz.h"
#include "gpu_service.h"
#include "gpus.h"
#include "gpu_health.h"
#include "isolation.h"
#include "slurm_node.h"
#include "state.h"

/* -1 is what a backend could not read: null */
static json_t *known(int64_t v) { return v >= 0 ? json_integer((json_int_t)v) : json_null(); }

/* NVML's throttle mask as names (gpu/throttle.h); null when not known */
static json_t *throttle_json(int64_t mask)
{
    if (mask < 0)
        return json_null();
    const char *names[64];
    char unknown[64 * 24];
    size_t n = throttle_names((uint64_t)mask, names, 64, unknown);
    json_t *a = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(a, json_string(names[k]));
    return a;
}

/* The health sample of a GPU the monitor has sampled: what the API shows under "health". */
static json_t *health_json(const gpu_health *hh)
{
    json_t *x = json_object();
    for (int k = 0; k < GPU_HEALTH_XID_CODES && hh->xid[k].code; k++) {
        char c[16];
        snprintf(c, sizeof c, "%d", hh->xid[k].code);
        json_object_set_new(x, c, json_integer((json_int_t)hh->xid[k].count));
    }
    json_t *recent = json_array();
    for (int k = 0; k < hh->nrecent; k++) {
        json_t *r = json_object();
        jx_set_time_or_null(r, "time", hh->recent[k].ms);
        json_object_set_new(r, "xid", json_integer(hh->recent[k].code));
        json_object_set_new(r, "meaning", json_string(hh->recent[k].meaning ? hh->recent[k].meaning : ""));
        json_object_set_new(r, "action", json_string(xid_action_name(hh->recent[k].action)));
        json_array_append_new(recent, r);
    }
    /* what the backend could not read is null, not -1 */
    json_t *hj = json_object();
    jx_set_time_or_null(hj, "sampled_at", hh->sampled_ms);
    json_object_set_new(hj, "temperature_c", known(hh->temperature_c));
    json_object_set_new(hj, "utilization_pct", known(hh->utilization_pct));
    json_object_set_new(hj, "memory_used_mb", known(hh->memory_used_mb));
    json_object_set_new(hj, "power_w", known(hh->power_w));
    json_object_set_new(hj, "hot", json_boolean(hh->hot));
    json_object_set_new(hj, "max_temperature_c", json_integer((json_int_t)core.cfg.max_temperature_c));
    json_object_set_new(hj, "ecc_sbe_events", json_integer((json_int_t)hh->ecc_sbe));
    json_object_set_new(hj, "ecc_dbe_events", json_integer((json_int_t)hh->ecc_dbe));
    json_object_set_new(hj, "xid", x);
    json_object_set_new(hj, "recent_xids", recent);
    json_object_set_new(hj, "throttle_reasons", known(hh->throttle_reasons));
    json_object_set_new(hj, "throttle_reason_names", throttle_json(hh->throttle_reasons));
    json_object_set_new(hj, "remapped_rows", known(hh->remapped_rows));
    json_object_set_new(hj, "remapped_rows_correctable", known(hh->remapped_correctable));
    json_object_set_new(hj, "remapped_rows_uncorrectable", known(hh->remapped_uncorrectable));
    json_object_set_new(hj, "remap_pending", hh->remap_pending < 0 ? json_null() : json_boolean(hh->remap_pending));
    json_object_set_new(hj, "remap_failure", hh->remap_failure < 0 ? json_null() : json_boolean(hh->remap_failure));
    json_object_set_new(hj, "ecc_sbe_total", known(hh->ecc_sbe_total));
    json_object_set_new(hj, "ecc_dbe_total", known(hh->ecc_dbe_total));
    json_object_set_new(hj, "ecc_sbe_aggregate", known(hh->ecc_sbe_aggregate));
    json_object_set_new(hj, "ecc_dbe_aggregate", known(hh->ecc_dbe_aggregate));
    return hj;
}

/* The GPU's telemetry at the top level is the latest sample's where the monitor read it,
 * discovery's (the moment the daemon started) otherwise. */
static void live(json_t *o, const char *key, int64_t v)
{
    if (v >= 0)
        json_object_set_new(o, key, json_integer((json_int_t)v));
}

/* The job holding GPU i as who may see it: its id for those who see its owner's jobs (the rule
 * of every list: AUTHZ_OTHERS_JOBS), null with "another_users_job": true for the others, who
 * see that it is held (and an MPS-shared GPU's jobs and memory, counted) but not by what. */
void gpu_json_holder(json_t *o, int i, const caller *who)
{
    const job *holder = gpus_holder(i);
    if (holder && !authz_may_on(who, AUTHZ_OTHERS_JOBS, holder->owner_uid)) {
        json_object_set_new(o, "job", json_null());
        json_object_set_new(o, "another_users_job", json_true());
    } else {
        json_object_set_new(o, "job", holder ? json_string(holder->id) : json_null());
    }
}

static void add_state(json_t *o, int i, const caller *who)
{
    if (i < 0 || i >= core.gpu.inv.n || i >= GPU_MAX)
        return;
    const gpu_service *h = gpu_service_get(i);
    const gpu_report r = gpus_report(i);
    json_object_set_new(o, "state", json_string(gpu_state_name(r.state)));
    if (*h->reason && r.out_of_service) {
        json_object_set_new(o, "state_reason", json_string(h->reason));
        if (h->since_ms > 0)
            jx_set_time_or_null(o, "state_since", h->since_ms);
    }
    const gpu_health *hh = gpu_health_of(i);
    if (hh && hh->sampled_ms) {
        live(o, "temperature_c", hh->temperature_c);
        live(o, "utilization_pct", hh->utilization_pct);
        live(o, "memory_used_mb", hh->memory_used_mb);
        live(o, "power_w", hh->power_w);
        json_object_set_new(o, "health", health_json(hh));
    }
    json_object_set_new(o, "takes_jobs", json_boolean(r.takes_jobs));
    gpu_json_holder(o, i, who);
    uint64_t reserved_mb;
    int tenants = gpus_tenants(i, &reserved_mb);
    if (tenants)
        json_object_set_new(o, "shared", json_pack("{s:i,s:I}", "jobs", tenants, "reserved_mb", (json_int_t)reserved_mb));
    if (h->state == GS_DEGRADED)
        json_object_set_new(o, "problem", json_string(h->reason));
}

json_t *gpu_json_all(const caller *who)
{
    json_t *o = gpu_discovery_json(&core.gpu);
    json_object_set_new(o, "enabled", json_boolean(core.gpu_on));
    /* whether GPU jobs can run under gVisor here (docs/sandbox.md, "GPUs: nvproxy") */
    const isolation_caps *ic = isolation_caps_get();
    json_t *gv = json_pack("{s:b,s:b}", "available", ic->gvisor, "nvproxy", ic->gvisor && ic->nvproxy);
    if (ic->version[0])
        json_object_set_new(gv, "runsc_version", json_string(ic->version));
    json_object_set_new(o, "gvisor", gv);
    /* rnx gpu gres-conf's NodeName=, and whether joblet drains the node (docs/slurm.md) */
    json_object_set_new(o, "slurm", json_pack("{s:s,s:b}", "node_name", slurm_node_name(), "drains_node",
                                              slurm_node_active()));
    /* where the GPUs' device nodes are (gpu.dev_root: /dev but on test machines), for File= */
    json_object_set_new(o, "dev_root", json_string(core.cfg.gpu.dev_root[0] ? core.cfg.gpu.dev_root : "/dev"));
    json_t *gpus = json_object_get(o, "gpus");
    for (size_t i = 0; i < json_array_size(gpus); i++)
        add_state(json_array_get(gpus, i), (int)i, who);
    return o;
}

json_t *gpu_json_one(int index, const caller *who)
{
    json_t *o = gpu_dev_json(&core.gpu.inv, index);
    add_state(o, index, who);
    return o;
}

