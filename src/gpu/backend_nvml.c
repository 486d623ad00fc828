/* NVML backend: libnvidia-ml.so.1 through joblet's one binding (nvml.h: dlopen, never linked,
 * so joblet runs on hosts without a driver). Every failure names the NVML call and the device.
 *
 * What happens when a call fails:
 *   library missing, nvmlInit_v2 fails, a required symbol is absent -> the backend fails and
 *     discovery falls back to the next backend (/proc by default);
 *   an identity call fails on one GPU (handle, UUID, PCI info) -> the backend fails too: a GPU
 *     that cannot be named cannot be handed out safely;
 *   any other call -> that field is unknown, with a warning; NUMA and CPU affinity then come
 *     from sysfs, PCIe levels from sysfs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "gpu.h"
#include "nvml.h"

static void warn_call(const nvml_lib *n, const char *call, const gpu_dev *g, nvmlReturn_t r)
{
    log_warn("gpu: NVML %s(GPU %d %s): %s; that field is unknown", call, g->index, g->bus_id, nvml_error(n, r));
}

/* A GPU whose name, minor or memory cannot be read is listed but never handed out. */
static void fail_call(const nvml_lib *n, const char *call, gpu_dev *g, nvmlReturn_t r)
{
    warn_call(n, call, g, r);
    if (!*g->problem)
        snprintf(g->problem, sizeof g->problem, "NVML %s: %s", call, nvml_error(n, r));
}

static int identify(const nvml_lib *n, unsigned idx, nvmlDevice_t *dev, gpu_dev *g, jerr *e)
{
    nvmlReturn_t r;
    nvmlPciInfo_t pci;
    g->index = (int)idx;
    if ((r = n->nvmlDeviceGetHandleByIndex_v2(idx, dev)) != NVML_SUCCESS)
        return jerr_set(e, EIO, "NVML: nvmlDeviceGetHandleByIndex_v2(GPU %u): %s", idx, nvml_error(n, r));
    if ((r = n->nvmlDeviceGetPciInfo_v3(*dev, &pci)) != NVML_SUCCESS)
        return jerr_set(e, EIO, "NVML: nvmlDeviceGetPciInfo_v3(GPU %u): %s", idx, nvml_error(n, r));
    if (gpu_bus_normalize(pci.busId, g->bus_id) < 0)
        return jerr_set(e, EIO, "NVML: nvmlDeviceGetPciInfo_v3(GPU %u): unreadable bus id '%.32s'", idx, pci.busId);
    if ((r = n->nvmlDeviceGetUUID(*dev, g->uuid, sizeof g->uuid)) != NVML_SUCCESS)
        return jerr_set(e, EIO, "NVML: nvmlDeviceGetUUID(GPU %u %s): %s", idx, g->bus_id, nvml_error(n, r));
    return 0;
}

static void read_links(const nvml_lib *n, nvmlDevice_t dev, gpu_dev *g)
{
    if (!n->nvmlDeviceGetNvLinkState)
        return;
    g->links_known = 1;
    for (unsigned l = 0; l < GPU_LINKS_MAX; l++) {
        nvmlEnableState_t on;
        nvmlReturn_t r = n->nvmlDeviceGetNvLinkState(dev, l, &on);
        if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT)
            continue; /* this GPU has no such link */
        if (r != NVML_SUCCESS) {
            warn_call(n, "nvmlDeviceGetNvLinkState", g, r);
            g->links_known = 0;
            return;
        }
        gpu_link *k = &g->links[g->nlinks++];
        k->link = (int)l;
        k->active = on == NVML_FEATURE_ENABLED;
        snprintf(k->remote_type, sizeof k->remote_type, "unknown");
        nvmlIntNvLinkDeviceType_t t;
        if (n->nvmlDeviceGetNvLinkRemoteDeviceType &&
            n->nvmlDeviceGetNvLinkRemoteDeviceType(dev, l, &t) == NVML_SUCCESS)
            snprintf(k->remote_type, sizeof k->remote_type, "%s",
                     t == NVML_NVLINK_DEVICE_TYPE_GPU      ? "gpu"
                     : t == NVML_NVLINK_DEVICE_TYPE_SWITCH ? "switch"
                     : t == NVML_NVLINK_DEVICE_TYPE_IBMNPU ? "ibmnpu"
                                                           : "unknown");
        nvmlPciInfo_t pci;
        if (k->active && n->nvmlDeviceGetNvLinkRemotePciInfo_v2 &&
            n->nvmlDeviceGetNvLinkRemotePciInfo_v2(dev, l, &pci) == NVML_SUCCESS)
            gpu_bus_normalize(pci.busId, k->remote_bus);
    }
}

static void read_mig(const nvml_lib *n, nvmlDevice_t dev, gpu_dev *g)
{
    unsigned cur, pend, max;
    if (!n->nvmlDeviceGetMigMode || n->nvmlDeviceGetMigMode(dev, &cur, &pend) != NVML_SUCCESS)
        return; /* not MIG-capable */
    g->mig_enabled = cur == NVML_DEVICE_MIG_ENABLE;
    if (!g->mig_enabled || !n->nvmlDeviceGetMaxMigDeviceCount || !n->nvmlDeviceGetMigDeviceHandleByIndex ||
        n->nvmlDeviceGetMaxMigDeviceCount(dev, &max) != NVML_SUCCESS)
        return;
    for (unsigned i = 0; i < max && g->nmig < GPU_MIG_MAX; i++) {
        nvmlDevice_t md;
        nvmlReturn_t r = n->nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &md);
        if (r == NVML_ERROR_NOT_FOUND)
            continue; /* an empty slot */
        if (r != NVML_SUCCESS) {
            warn_call(n, "nvmlDeviceGetMigDeviceHandleByIndex", g, r);
            continue;
        }
        gpu_mig *m = &g->mig[g->nmig];
        unsigned gi, ci;
        if ((r = n->nvmlDeviceGetGpuInstanceId(md, &gi)) != NVML_SUCCESS ||
            (r = n->nvmlDeviceGetComputeInstanceId(md, &ci)) != NVML_SUCCESS) {
            warn_call(n, "nvmlDeviceGetGpuInstanceId/ComputeInstanceId", g, r);
            continue;
        }
        m->gi = (int)gi;
        m->ci = (int)ci;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        if (n->nvmlDeviceGetName(md, name, sizeof name) == NVML_SUCCESS)
            gpu_mig_profile_from_name(name, m->profile, sizeof m->profile);
        if (n->nvmlDeviceGetUUID(md, m->uuid, sizeof m->uuid) != NVML_SUCCESS)
            m->uuid[0] = 0;
        nvmlMemory_t mem;
        if (n->nvmlDeviceGetMemoryInfo(md, &mem) == NVML_SUCCESS)
            m->memory_mb = (int64_t)(mem.total >> 20);
        g->nmig++;
    }
}

static void describe(const nvml_lib *n, nvmlDevice_t dev, gpu_dev *g, const gpu_config *c)
{
    nvmlReturn_t r;
    unsigned u;
    if ((r = n->nvmlDeviceGetMinorNumber(dev, &u)) == NVML_SUCCESS)
        g->minor = (int)u;
    else
        fail_call(n, "nvmlDeviceGetMinorNumber", g, r);
    if ((r = n->nvmlDeviceGetName(dev, g->name, sizeof g->name)) != NVML_SUCCESS) {
        g->name[0] = 0;
        fail_call(n, "nvmlDeviceGetName", g, r);
    }
    nvmlMemory_t mem;
    if ((r = n->nvmlDeviceGetMemoryInfo(dev, &mem)) == NVML_SUCCESS) {
        g->memory_total_mb = (int64_t)(mem.total >> 20);
        g->memory_used_mb = (int64_t)(mem.used >> 20);
    } else {
        fail_call(n, "nvmlDeviceGetMemoryInfo", g, r);
    }
    int maj, min;
    if (n->nvmlDeviceGetCudaComputeCapability &&
        (r = n->nvmlDeviceGetCudaComputeCapability(dev, &maj, &min)) == NVML_SUCCESS) {
        g->cc_major = maj;
        g->cc_minor = min;
    }
    /* Locality: NVML where the driver has it, sysfs otherwise (older drivers lack
     * nvmlDeviceGetNumaNodeId; VMs often report no affinity). */
    gpu_sysfs_locality(c->sys_root, g);
    if (n->nvmlDeviceGetNumaNodeId && n->nvmlDeviceGetNumaNodeId(dev, &u) == NVML_SUCCESS)
        g->numa_node = (int)u;
    unsigned long mask[64] = {0};
    if (n->nvmlDeviceGetCpuAffinity && n->nvmlDeviceGetCpuAffinity(dev, 64, mask) == NVML_SUCCESS) {
        char cpus[256];
        gpu_cpulist_from_mask(mask, 64, cpus, sizeof cpus);
        if (*cpus)
            snprintf(g->local_cpus, sizeof g->local_cpus, "%s", cpus);
    }
    nvmlEnableState_t cur, pend;
    if (n->nvmlDeviceGetEccMode && n->nvmlDeviceGetEccMode(dev, &cur, &pend) == NVML_SUCCESS)
        g->ecc = cur == NVML_FEATURE_ENABLED;
    if (n->nvmlDeviceGetTemperature && n->nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &u) == NVML_SUCCESS)
        g->temperature_c = (int)u;
    nvmlUtilization_t util;
    if (n->nvmlDeviceGetUtilizationRates && n->nvmlDeviceGetUtilizationRates(dev, &util) == NVML_SUCCESS)
        g->utilization_pct = (int)util.gpu;
    if (n->nvmlDeviceGetPowerUsage && n->nvmlDeviceGetPowerUsage(dev, &u) == NVML_SUCCESS)
        g->power_w = (int)((u + 500) / 1000);
    read_links(n, dev, g);
    read_mig(n, dev, g);
    gpu_mig_cap_minors(c->proc_root, g);
}

int gpu_backend_nvml(const gpu_config *c, gpu_inventory *inv, jerr *e)
{
    const nvml_lib *n = nvml_load(c->nvml_library, e);
    if (!n)
        return -1;
    nvmlReturn_t r = n->nvmlInit_v2();
    if (r != NVML_SUCCESS)
        return jerr_set(e, EIO, "NVML: nvmlInit_v2: %s", nvml_error(n, r));
    int rc = 0;
    unsigned count = 0;
    nvmlDevice_t devs[GPU_MAX];
    if ((r = n->nvmlDeviceGetCount_v2(&count)) != NVML_SUCCESS) {
        rc = jerr_set(e, EIO, "NVML: nvmlDeviceGetCount_v2: %s", nvml_error(n, r));
        goto out;
    }
    if (count > GPU_MAX) {
        log_warn("gpu: NVML reports %u GPUs; joblet manages the first %d", count, GPU_MAX);
        count = GPU_MAX;
    }
    char ver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    if (n->nvmlSystemGetDriverVersion && (r = n->nvmlSystemGetDriverVersion(ver, sizeof ver)) == NVML_SUCCESS)
        snprintf(inv->driver_version, sizeof inv->driver_version, "%s", ver);
    else if (n->nvmlSystemGetDriverVersion)
        log_warn("gpu: NVML nvmlSystemGetDriverVersion: %s", nvml_error(n, r));
    int cv;
    if (n->nvmlSystemGetCudaDriverVersion_v2 && n->nvmlSystemGetCudaDriverVersion_v2(&cv) == NVML_SUCCESS)
        inv->cuda_driver_version = cv;
    else
        inv->cuda_driver_version = gpu_driver_cuda_version(inv->driver_version);
    for (unsigned i = 0; i < count; i++)
        if ((rc = identify(n, i, &devs[i], &inv->gpu[i], e)) < 0)
            goto out;
    inv->n = (int)count;
    for (unsigned i = 0; i < count; i++)
        describe(n, devs[i], &inv->gpu[i], c);
    for (unsigned i = 0; i < count; i++)
        for (unsigned j = 0; j < count && n->nvmlDeviceGetTopologyCommonAncestor; j++) {
            nvmlGpuTopologyLevel_t lvl;
            if (i != j && n->nvmlDeviceGetTopologyCommonAncestor(devs[i], devs[j], &lvl) == NVML_SUCCESS)
                inv->level[i][j] = (signed char)(lvl == NVML_TOPOLOGY_INTERNAL ? GPU_LVL_PIX : (int)lvl);
        }
    gpu_sysfs_levels(c->sys_root, inv); /* only pairs NVML could not answer */
    gpu_inventory_finish(inv);
out:
    n->nvmlShutdown();
    return rc;
}
