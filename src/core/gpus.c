/* The daemon's view of its GPUs: discovery at start, what the API shows. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../sched/sched.h"
#include "core.h"

static void log_gpu(const gpu_inventory *inv, int i)
{
    const gpu_dev *g = &inv->gpu[i];
    char links[96] = "links unknown";
    if (g->links_known) {
        int active = 0, sw = 0;
        for (int l = 0; l < g->nlinks; l++) {
            active += g->links[l].active;
            sw += g->links[l].active && strcmp(g->links[l].remote_type, "switch") == 0;
        }
        snprintf(links, sizeof links, "%d NVLinks%s", active, sw ? " (NVSwitch)" : "");
    }
    char mig[64] = "";
    if (g->nmig)
        snprintf(mig, sizeof mig, ", MIG with %d instances", g->nmig);
    log_info("gpu %d: %s minor %d bus %s numa %d cpus %s, %s, %lld MiB, cc %d.%d, %s%s%s%s%s", g->index, g->uuid,
             g->minor, g->bus_id, g->numa_node, *g->local_cpus ? g->local_cpus : "?", g->name,
             (long long)g->memory_total_mb, g->cc_major, g->cc_minor, links, mig, inv->simulated ? " [simulated]" : "",
             *g->problem ? "; NOT USABLE: " : "", g->problem);
}

int core_gpu_init(jerr *e)
{
    const gpu_config *gc = &C.cfg.gpu;
    if (gc->enabled == 0) {
        log_info("gpu: support disabled by configuration (gpu.enabled: false)");
        gpu_inventory_init(&C.gpu.inv, "none");
        C.gpu.attempts = json_array();
        return 0;
    }
    gpu_discover(gc, &C.gpu);
    const gpu_inventory *inv = &C.gpu.inv;
    for (size_t i = 0; i < C.njobs; i++)
        if (!job_state_terminal(C.jobs[i]->state) && C.jobs[i]->gpus)
            core_gpu_reclaim(C.jobs[i]);
    C.gpu_on = C.gpu.found && (inv->n > 0 || gc->enabled == 1);
    if (!C.gpu.found && *gc->fixture) {
        /* a simulation asked for by name and not possible is a configuration error */
        json_t *a = json_array_get(C.gpu.attempts, 0);
        const char *err = json_string_value(json_object_get(a, "error"));
        return jerr_set(e, EINVAL, "%s", err ? err : "gpu.fixture: cannot be read");
    }
    if (!C.gpu.found) {
        log_msg(gc->enabled == 1 ? LOG_WARN : LOG_INFO, "gpu: no GPU found (every backend failed; see above)%s",
                gc->enabled == 1 ? " although gpu.enabled is true" : "");
        return 0;
    }
    log_info("gpu: %d GPU%s found by the %s backend in %.1f ms%s; driver %s, CUDA %d.%d", inv->n, inv->n == 1 ? "" : "s",
             inv->backend, inv->discovery_ms, inv->simulated ? " (SIMULATED from a fixture)" : "",
             *inv->driver_version ? inv->driver_version : "unknown", inv->cuda_driver_version / 1000,
             inv->cuda_driver_version % 1000 / 10);
    for (int i = 0; i < inv->n; i++)
        log_gpu(inv, i);
    for (int i = 0; i < C.gpu.ncuda; i++)
        log_info("gpu: CUDA toolkit %s (%s) version %s: %s", C.gpu.cuda[i].path, C.gpu.cuda[i].real,
                 *C.gpu.cuda[i].version ? C.gpu.cuda[i].version : "unknown", C.gpu.cuda[i].compat);
    return 0;
}

static const char *core_gpu_owner(int i);

static void add_state(json_t *o, int i)
{
    if (i < 0 || i >= C.gpu.inv.n || i >= GPU_MAX)
        return;
    const gpu_dev *g = &C.gpu.inv.gpu[i];
    const char *holder = core_gpu_owner(i);
    json_object_set_new(o, "state", json_string(*g->problem ? "unusable" : holder ? "allocated" : "available"));
    json_object_set_new(o, "job", holder ? json_string(holder) : json_null());
}

json_t *core_gpus_json(void)
{
    json_t *o = gpu_discovery_json(&C.gpu);
    json_object_set_new(o, "enabled", json_boolean(C.gpu_on));
    json_t *gpus = json_object_get(o, "gpus");
    for (size_t i = 0; i < json_array_size(gpus); i++)
        add_state(json_array_get(gpus, i), (int)i);
    return o;
}

json_t *core_gpu_json(int index)
{
    json_t *o = gpu_dev_json(&C.gpu.inv, index);
    add_state(o, index);
    return o;
}

/* ---- jobs and their GPUs ---- */

static job *owner[GPU_MAX];

static bool usable(int i)
{
    return !*C.gpu.inv.gpu[i].problem && C.gpu.inv.gpu[i].minor >= 0;
}

int core_gpu_validate(json_t *req, jerr *e)
{
    uint64_t count = 0, mem = 0;
    if (jx_u64(req, "gpu_count", 0, GPU_MAX, &count, e) < 0)
        return jerr_field(e, "gpu_count", "gpu_count: must be a whole number of GPUs from 0 to %d", GPU_MAX);
    if (jx_u64(req, "gpu_memory_mb", 1, 1ull << 30, &mem, e) < 0)
        return jerr_field(e, "gpu_memory_mb", "gpu_memory_mb: must be a size in MB from 1 (e.g. 8GB, 4096MB, 4096)");
    if (mem && !count)
        return jerr_field(e, "gpu_memory_mb", "gpu_memory_mb: asks for GPU memory but no GPU; add gpu_count (--gpu=N)");
    if (!count)
        return 0;
    if (!C.gpu_on || C.gpu.inv.n == 0) {
        char why[300] = "";
        json_t *a;
        size_t i;
        json_array_foreach(C.gpu.attempts, i, a)
        {
            const char *err = json_string_value(json_object_get(a, "error"));
            size_t l = strlen(why);
            snprintf(why + l, sizeof why - l, "%s%s", l ? "; " : "", err ? err : "no GPU found");
        }
        return jerr_field(e, "gpu_count",
                          "gpu_count: No GPUs available: this machine has no GPU joblet can use (%s). Check that "
                          "nvidia-smi works on the host, the daemon's 'gpu:' log lines, and gpu.enabled in its "
                          "configuration",
                          C.cfg.gpu.enabled == 0 ? "GPU support is disabled by gpu.enabled: false"
                          : *why                 ? why
                                                 : "none found");
    }
    sched_gpu view[GPU_MAX];
    core_gpu_sched_view(view);
    uint32_t q;
    if (sched_gpu_feasible(view, (size_t)C.gpu.inv.n, (uint32_t)count, mem, &q) < 0) {
        if (mem)
            return jerr_field(e, "gpu_count",
                              "gpu_count: asks for %llu GPU%s with at least %llu MB each; this machine has %u such "
                              "GPU%s of %d (Insufficient GPU memory: see rnx gpu list)",
                              (unsigned long long)count, count == 1 ? "" : "s", (unsigned long long)mem, q, q == 1 ? "" : "s",
                              C.gpu.inv.n);
        return jerr_field(e, "gpu_count", "gpu_count: asks for %llu GPUs; this machine has %u usable GPU%s (rnx gpu list)",
                          (unsigned long long)count, q, q == 1 ? "" : "s");
    }
    return 0;
}

void core_gpu_sched_view(sched_gpu *out)
{
    for (int i = 0; i < C.gpu.inv.n; i++)
        out[i] = (sched_gpu){usable(i), owner[i] == NULL, C.gpu.inv.gpu[i].memory_total_mb};
}

static json_t *grant_json(int i)
{
    const gpu_dev *g = &C.gpu.inv.gpu[i];
    return json_pack("{s:i,s:s,s:i,s:s,s:s,s:I,s:b}", "index", g->index, "uuid", g->uuid, "minor", g->minor, "bus_id",
                     g->bus_id, "name", g->name, "memory_mb", (json_int_t)g->memory_total_mb, "simulated",
                     C.gpu.inv.simulated);
}

void core_gpu_grant(job *j, uint64_t set)
{
    json_decref(j->gpus);
    j->gpus = json_array();
    for (int i = 0; i < C.gpu.inv.n; i++)
        if (set >> i & 1) {
            owner[i] = j;
            json_array_append_new(j->gpus, grant_json(i));
        }
    char *list = json_dumps(j->gpus, JSON_COMPACT);
    log_info("job %s: granted %zu GPU%s%s: %s", j->id, json_array_size(j->gpus), json_array_size(j->gpus) == 1 ? "" : "s",
             C.gpu.inv.simulated ? " (simulated)" : "", list ? list : "");
    free(list);
}

void core_gpu_release(job *j)
{
    for (int i = 0; i < GPU_MAX; i++)
        if (owner[i] == j)
            owner[i] = NULL;
}

/* A restarted daemon takes back the GPUs of the jobs it re-adopts, by UUID. */
void core_gpu_reclaim(job *j)
{
    json_t *g;
    size_t k;
    json_array_foreach(j->gpus, k, g)
    {
        const char *uuid = json_string_value(json_object_get(g, "uuid"));
        int i = uuid ? gpu_find(&C.gpu.inv, uuid) : -1;
        if (i < 0)
            log_warn("job %s held GPU %s, which discovery no longer finds", j->id, uuid ? uuid : "?");
        else
            owner[i] = j;
    }
}

static const char *core_gpu_owner(int i)
{
    return i >= 0 && i < GPU_MAX && owner[i] ? owner[i]->id : NULL;
}
