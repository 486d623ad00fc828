/* The daemon's view of its GPUs: discovery at start, what the API shows. */
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
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

void core_gpu_init(void)
{
    const gpu_config *gc = &C.cfg.gpu;
    if (gc->enabled == 0) {
        log_info("gpu: support disabled by configuration (gpu.enabled: false)");
        gpu_inventory_init(&C.gpu.inv, "none");
        C.gpu.attempts = json_array();
        return;
    }
    gpu_discover(gc, &C.gpu);
    const gpu_inventory *inv = &C.gpu.inv;
    C.gpu_on = C.gpu.found && (inv->n > 0 || gc->enabled == 1);
    if (!C.gpu.found) {
        log_msg(gc->enabled == 1 ? LOG_WARN : LOG_INFO, "gpu: no GPU found (every backend failed; see above)%s",
                gc->enabled == 1 ? " although gpu.enabled is true" : "");
        return;
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
}

static void add_state(json_t *o, int i)
{
    const gpu_dev *g = &C.gpu.inv.gpu[i];
    json_object_set_new(o, "state", json_string(*g->problem ? "unusable" : "available"));
    json_object_set_new(o, "job", json_null());
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
