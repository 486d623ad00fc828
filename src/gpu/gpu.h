/* GPU discovery: configuration, backends and the helpers they share. */
#ifndef JOBLET_GPU_H
#define JOBLET_GPU_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/err.h"
#include "gpu_state.h"
#include "inventory.h"

#define GPU_CUDA_PATHS_MAX 8
#define GPU_BACKENDS_MAX 4

typedef struct gpu_config {
    int enabled;                  /* gpu.enabled: -1 auto (on when GPUs are found), 0, 1 */
    char backends[GPU_BACKENDS_MAX][8]; /* gpu.backends: order to try; default nvml, proc, smi */
    int nbackends;
    char nvml_library[256];       /* gpu.nvml_library */
    char nvidia_smi[256];         /* gpu.nvidia_smi */
    char proc_root[256];          /* gpu.proc_root */
    char sys_root[256];           /* gpu.sys_root */
    char dev_root[256];           /* gpu.dev_root */
    char fixture[512];            /* gpu.fixture: simulate this machine (JSON) instead */
    char cuda_paths[GPU_CUDA_PATHS_MAX][256]; /* gpu.cuda_paths, searched after the standard ones */
    int ncuda_paths;
    char cuda_search_root[256];   /* gpu.cuda_search_root: prefix of the standard locations */
    char ldcache[256];            /* gpu.ldcache: where the driver's libraries are looked up */
    uint64_t scrub;               /* gpu.scrub: zero a GPU's memory between jobs (1/0) */
    int strategy;                 /* gpu.strategy: enum placement_strategy (topology, pack, spread) */
    char libcuda[256];            /* gpu.libcuda: the CUDA driver library the scrubber loads */
    int smi_timeout_ms;           /* gpu.smi_timeout_ms */
} gpu_config;

void gpu_config_defaults(gpu_config *c);
/* "nvml,proc,smi" or a YAML list item by item; refuses unknown names. */
int gpu_config_add_backend(gpu_config *c, const char *name, jerr *e);

typedef int (*gpu_backend_fn)(const gpu_config *c, gpu_inventory *inv, jerr *e);
int gpu_backend_nvml(const gpu_config *c, gpu_inventory *inv, jerr *e);
int gpu_backend_proc(const gpu_config *c, gpu_inventory *inv, jerr *e);
int gpu_backend_smi(const gpu_config *c, gpu_inventory *inv, jerr *e);
int gpu_backend_fixture(const gpu_config *c, gpu_inventory *inv, jerr *e);
gpu_backend_fn gpu_backend_by_name(const char *name);

/* CUDA toolkits found on the host. */
#define GPU_CUDA_MAX 16
typedef struct gpu_cuda {
    char path[256];        /* as found (/usr/local/cuda) */
    char real[256];        /* resolved (/usr/local/cuda-12.2) */
    char version[16];      /* "12.2.2"; "" unknown */
    int major, minor;
    char compat[16];       /* ok, minor-version, too-new, unknown */
} gpu_cuda;

int gpu_cuda_detect(const gpu_config *c, int cuda_driver_version, gpu_cuda *out, int max);
json_t *gpu_cuda_json(const gpu_cuda *list, int n);

/* The outcome of trying the configured backends in order. */
typedef struct gpu_discovery {
    gpu_inventory inv;
    int found;              /* some backend answered (inv.backend says which) */
    json_t *attempts;       /* [{backend, error|null, ms}] */
    gpu_cuda cuda[GPU_CUDA_MAX];
    int ncuda;
} gpu_discovery;

void gpu_discover(const gpu_config *c, gpu_discovery *d);
void gpu_discovery_free(gpu_discovery *d);
/* The discovery as the API shows it: inventory, attempts, CUDA installations, topology. */
json_t *gpu_discovery_json(const gpu_discovery *d);
/* Why each backend failed, joined with "; " ("" when none said); first: only the
 * first backend's error, "" when it has none. */
void gpu_discovery_errors(const gpu_discovery *d, bool first, char *out, size_t len);

/* ---- shared by the backends ---- */
/* Highest CUDA version (1000*major + 10*minor) a driver version supports; 0 unknown. */
int gpu_driver_cuda_version(const char *driver_version);
/* Minimum driver for a CUDA major.minor; NULL unknown. */
const char *gpu_cuda_min_driver(int cuda_version);
/* Compute capability from the marketing name; -1 when the model is not in the table. */
int gpu_name_compute_capability(const char *name, int *major, int *minor);
/* numa_node and local_cpulist of a PCI device from sysfs. */
void gpu_sysfs_locality(const char *sys_root, gpu_dev *g);
/* Bridges between a device's host bridge and the device, from its sysfs path. */
int gpu_sysfs_pci_path(const char *sys_root, const char *bus, char hostbridge[32], char path[][16], int max);
/* PCIe common ancestor of two devices given their host bridge, bridge chain and NUMA node. */
int gpu_level_from_paths(const char *hb_a, char pa[][16], int na, int numa_a, const char *hb_b, char pb[][16],
                         int nb, int numa_b);
/* Fills every unknown pair level from sysfs; 0 when all could be read. */
int gpu_sysfs_levels(const char *sys_root, gpu_inventory *inv);
/* MIG capability minors from <proc_root>/driver/nvidia-caps/mig-minors. */
void gpu_mig_cap_minors(const char *proc_root, gpu_dev *g);
/* Profile ("3g.40gb") from a MIG device name ("NVIDIA A100-SXM4-80GB MIG 3g.40gb"). */
void gpu_mig_profile_from_name(const char *name, char *out, size_t outlen);

#endif
