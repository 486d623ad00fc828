/* Discovery: the configured backends in order, the first that answers wins; or the fixture,
 * which replaces them all and marks everything simulated. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "gpu.h"
#include "cputopo.h"

static const struct { const char *name; gpu_backend_fn fn; } backends[] = {
    {"nvml", gpu_backend_nvml},
    {"proc", gpu_backend_proc},
    {"smi", gpu_backend_smi},
    {"fixture", gpu_backend_fixture},
};

gpu_backend_fn gpu_backend_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (strcmp(backends[i].name, name) == 0)
            return backends[i].fn;
    return NULL;
}

void gpu_config_defaults(gpu_config *c)
{
    memset(c, 0, sizeof *c);
    c->enabled = -1;
    snprintf(c->nvml_library, sizeof c->nvml_library, "libnvidia-ml.so.1");
    snprintf(c->nvidia_smi, sizeof c->nvidia_smi, "/usr/bin/nvidia-smi");
    snprintf(c->proc_root, sizeof c->proc_root, "/proc");
    snprintf(c->sys_root, sizeof c->sys_root, "/sys");
    snprintf(c->dev_root, sizeof c->dev_root, "/dev");
    snprintf(c->cuda_search_root, sizeof c->cuda_search_root, "/");
    snprintf(c->ldcache, sizeof c->ldcache, "/etc/ld.so.cache");
    snprintf(c->libcuda, sizeof c->libcuda, "libcuda.so.1");
    c->smi_timeout_ms = 10000;
}

int gpu_config_add_backend(gpu_config *c, const char *name, jerr *e)
{
    if (!gpu_backend_by_name(name) || strcmp(name, "fixture") == 0)
        return jerr_set(e, EINVAL, "gpu.backends: '%s' is not a backend; use nvml, proc or smi (simulation is "
                                   "gpu.fixture)", name);
    for (int i = 0; i < c->nbackends; i++)
        if (strcmp(c->backends[i], name) == 0)
            return jerr_set(e, EINVAL, "gpu.backends: '%s' is listed twice", name);
    if (c->nbackends == GPU_BACKENDS_MAX)
        return jerr_set(e, EINVAL, "gpu.backends: at most %d entries", GPU_BACKENDS_MAX);
    snprintf(c->backends[c->nbackends++], sizeof c->backends[0], "%s", name);
    return 0;
}

static double run_one(const gpu_config *c, const char *name, gpu_inventory *inv, json_t *attempts, int *ok)
{
    jerr e = {0};
    gpu_inventory_init(inv, name);
    int64_t t0 = mono_ns();
    int rc = gpu_backend_by_name(name)(c, inv, &e);
    double ms = (double)(mono_ns() - t0) / 1e6;
    json_t *a = json_object();
    json_object_set_new(a, "backend", json_string(name));
    json_object_set_new(a, "error", rc < 0 ? json_string(e.msg) : json_null());
    json_object_set_new(a, "ms", json_real(ms));
    json_array_append_new(attempts, a);
    *ok = rc == 0;
    if (rc < 0)
        log_info("gpu: backend %s: %s", name, e.msg);
    return ms;
}

void gpu_discover(const gpu_config *c, gpu_discovery *d)
{
    static const char *const defaults[] = {"nvml", "proc", "smi"};
    memset(d, 0, sizeof *d);
    d->attempts = json_array();
    int ok = 0;
    double ms = 0;
    if (*c->fixture) {
        ms = run_one(c, "fixture", &d->inv, d->attempts, &ok);
    } else {
        int n = c->nbackends ? c->nbackends : 3;
        for (int i = 0; i < n && !ok; i++)
            ms = run_one(c, c->nbackends ? c->backends[i] : defaults[i], &d->inv, d->attempts, &ok);
    }
    if (!ok)
        gpu_inventory_init(&d->inv, "none");
    d->found = ok;
    d->inv.discovery_ms = ms;
    /* Slurm's core ids of each GPU's CPUs (gres.conf's Cores=): from this machine's topology;
     * a simulated GPU whose CPUs this machine lacks (gpu.sys_root has none) gets none */
    static gpu_cputopo topo;
    if (ok && gpu_cputopo_read(c->sys_root, &topo) == 0)
        gpu_cputopo_apply(&topo, &d->inv);
    d->ncuda = gpu_cuda_detect(c, d->inv.cuda_driver_version, d->cuda, GPU_CUDA_MAX);
}

void gpu_discovery_free(gpu_discovery *d)
{
    json_decref(d->attempts);
    d->attempts = NULL;
}

json_t *gpu_discovery_json(const gpu_discovery *d)
{
    json_t *o = gpu_inventory_json(&d->inv);
    json_object_set(o, "attempts", d->attempts);
    json_object_set_new(o, "cuda_installations", gpu_cuda_json(d->cuda, d->ncuda));
    return o;
}

void gpu_discovery_errors(const gpu_discovery *d, bool first, char *out, size_t len)
{
    json_t *a;
    size_t i;
    out[0] = 0;
    json_array_foreach(d->attempts, i, a) {
        const char *err = json_string_value(json_object_get(a, "error"));
        if (first && !err)
            return;
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s", l ? "; " : "", err ? err : "no GPU found");
        if (first)
            return;
    }
}
