#include "gpu_cdi.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "../common/util.h"
#include "gpu_spec.h"
#include "state.h"

/* CDI 0.5.0: the first version with a device node's hostPath (the node lives elsewhere on
 * the host than in the container: gpu.dev_root). */
#define GPU_CDI_VERSION "0.5.0"
/* A simulated machine's spec (gpu.fixture): marked with an annotation, which needs 0.6.0 */
#define GPU_CDI_SIMULATED_VERSION "0.6.0"

/* A device node whose host node exists (under gpu.dev_root), with the numbers given. */
static void add_node(json_t *nodes, const char *name, int major, int minor)
{
    char host[600], path[300];
    snprintf(host, sizeof host, "%s/%s", core.cfg.gpu.dev_root, name);
    snprintf(path, sizeof path, "/dev/%s", name);
    struct stat st;
    if (stat(host, &st) < 0 || !S_ISCHR(st.st_mode))
        return;
    if (major < 0) { /* what the host node says */
        major = (int)major(st.st_rdev);
        minor = (int)minor(st.st_rdev);
    }
    json_array_append_new(nodes, json_pack("{s:s,s:s,s:s,s:i,s:i,s:s}", "path", path, "hostPath", host, "type", "c",
                                           "major", major, "minor", minor, "permissions", "rw"));
}

static void gpu_nodes(json_t *nodes, const gpu_dev *g)
{
    char name[64];
    snprintf(name, sizeof name, "nvidia%d", g->minor);
    add_node(nodes, name, SPEC_GPU_NVIDIA_MAJOR, g->minor);
}

static void add_device(json_t *devices, const char *name, json_t *nodes)
{
    json_array_append_new(devices, json_pack("{s:s,s:{s:o}}", "name", name, "containerEdits", "deviceNodes", nodes));
}

json_t *gpu_cdi_spec_json(jerr *e)
{
    const gpu_inventory *inv = &core.gpu.inv;
    if (!core.gpu.found || inv->n == 0)
        return jerr_set(e, ENODEV, "no GPU found (joblet --probe-gpus shows what discovery saw)"), NULL;
    json_t *devices = json_array(), *all = json_array();
    int caps_major = spec_gpu_char_major(core.cfg.gpu.proc_root, "nvidia-caps");
    for (int i = 0; i < inv->n; i++) {
        const gpu_dev *g = &inv->gpu[i];
        char idx[16];
        snprintf(idx, sizeof idx, "%d", g->index);
        json_t *nodes = json_array();
        gpu_nodes(nodes, g);
        gpu_nodes(all, g);
        add_device(devices, idx, json_deep_copy(nodes));
        if (g->uuid[0])
            add_device(devices, g->uuid, json_deep_copy(nodes));
        json_decref(nodes);
        /* a MIG device: its parent's node and the capability nodes of its instances */
        for (int m = 0; m < g->nmig; m++) {
            const gpu_mig *mg = &g->mig[m];
            json_t *mn = json_array();
            gpu_nodes(mn, g);
            char cap[64];
            for (int k = 0; k < 2; k++) {
                int minor = k ? mg->ci_cap_minor : mg->gi_cap_minor;
                if (minor < 0 || caps_major < 0)
                    continue;
                snprintf(cap, sizeof cap, "nvidia-caps/nvidia-cap%d", minor);
                add_node(mn, cap, caps_major, minor);
            }
            char name[32];
            snprintf(name, sizeof name, "%d:%d", g->index, m);
            add_device(devices, name, json_deep_copy(mn));
            if (mg->uuid[0])
                add_device(devices, mg->uuid, json_deep_copy(mn));
            json_decref(mn);
        }
    }
    add_device(devices, "all", all);

    /* what every device needs: the control node, unified memory, the driver's libraries */
    json_t *common = json_array();
    add_node(common, "nvidiactl", SPEC_GPU_NVIDIA_MAJOR, SPEC_GPU_NVIDIACTL_MINOR);
    int uvm = spec_gpu_char_major(core.cfg.gpu.proc_root, "nvidia-uvm");
    if (uvm >= 0) {
        add_node(common, "nvidia-uvm", uvm, 0);
        add_node(common, "nvidia-uvm-tools", uvm, 1);
    }
    json_t *mounts = json_array();
    const char *libs[64];
    size_t nl = gpu_spec_driver_lib_paths(libs, ARRAY_LEN(libs));
    for (size_t i = 0; i < nl; i++)
        json_array_append_new(mounts, json_pack("{s:s,s:s,s:[s,s,s,s]}", "hostPath", libs[i], "containerPath", libs[i],
                                                "options", "ro", "nosuid", "nodev", "bind"));
    char drv[96];
    snprintf(drv, sizeof drv, "NVIDIA_DRIVER_VERSION=%s", inv->driver_version);
    json_t *env = json_pack("[s,s]", "NVIDIA_VISIBLE_DEVICES=void", drv);
    json_t *spec = json_pack("{s:s,s:s,s:o,s:{s:o,s:o,s:o}}", "cdiVersion", GPU_CDI_VERSION, "kind", "nvidia.com/gpu",
                             "devices", devices, "containerEdits", "env", env, "deviceNodes", common, "mounts", mounts);
    if (inv->simulated) {
        /* annotations came with CDI 0.6.0: a consumer that reads only 0.5.0 refuses the spec,
         * which is right for GPUs that are not there */
        json_object_set_new(spec, "cdiVersion", json_string(GPU_CDI_SIMULATED_VERSION));
        json_object_set_new(spec, "annotations",
                            json_pack("{s:s,s:s}", GPU_CDI_SIMULATED_MARK, "true", "joblet.dev/note",
                                      "these GPUs are simulated (gpu.fixture): no device node and no driver library "
                                      "is given to a container, which gets no GPU"));
    }
    return spec;
}
