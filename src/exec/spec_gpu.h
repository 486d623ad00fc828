/* What a GPU grant becomes in a job's spec (spec.h): device nodes and the device filter rules
 * that let the job open exactly them, its own /proc/driver/nvidia, the driver's libraries,
 * the CUDA toolkit and the environment. Everything it needs of the machine comes in a
 * spec_gpu_host (what discovery found at start, the configured paths): it reads no global
 * state, so a test or a Slurm plugin can call it as the daemon does. It does read the host's
 * /proc/driver/nvidia files (under proc_root) and looks at device nodes (under dev_root).
 * Part of the spec builder (spec_build.h); not linked into the shim. */
#ifndef JOBLET_SPEC_GPU_H
#define JOBLET_SPEC_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "../gpu/gpu.h"
#include "../gpu/grant.h"
#include "../gpu/ldcache.h"
#include "spec.h"

#define SPEC_GPU_NVIDIA_MAJOR 195
#define SPEC_GPU_NVIDIACTL_MINOR 255

/* One of the running driver's libraries: the capability it serves (NVIDIA_DRIVER_CAPABILITIES:
 * compute, utility, video, graphics) and where the loader cache found it. */
typedef struct spec_gpu_lib {
    const char *cap;
    ldcache_lib lib;
} spec_gpu_lib;

/* The driver's libraries by capability, after libnvidia-container's lists: what discovery
 * looks for in the loader cache (core/gpu_spec.c), in this order. */
typedef struct spec_gpu_lib_name {
    const char *cap, *prefix;
} spec_gpu_lib_name;
extern const spec_gpu_lib_name spec_gpu_lib_names[];
extern const size_t spec_gpu_nlib_names;

/* The machine as a GPU job's spec sees it. Pointers are borrowed for the call. */
typedef struct spec_gpu_host {
    const char *dev_root;          /* gpu.dev_root: where the host's nodes are (/dev) */
    const char *proc_root;         /* gpu.proc_root: where the driver's /proc files are (/proc) */
    const gpu_inventory *inv;      /* discovery's inventory: driver version, memory, locality */
    const gpu_cuda *cuda;          /* the CUDA toolkits found at start */
    int ncuda;
    const spec_gpu_lib *libs;      /* the running driver's libraries found at start */
    size_t nlibs;
    const uint8_t *online_cpus;    /* CPU_MAX / 8 bytes: the CPUs this host has online */
    const char *mps_pipe_dir;      /* a shared (MPS) job: its GPU's MPS server's pipe directory */
} spec_gpu_host;

typedef struct spec_gpu {
    spec_op *ops;
    size_t nops;
    cg_dev_rule *rules;
    size_t nrules;
    spec_mount *mounts;     /* binds: CUDA toolkit, driver libraries (read-only), MPS pipes */
    size_t nmounts;
    jobreq_pair *env;       /* variables for the job: CUDA_VISIBLE_DEVICES, ... */
    size_t nenv;
    char path_add[600];     /* appended to the job's PATH */
    char ld_add[600];       /* appended to its LD_LIBRARY_PATH */
    char cpus[256];         /* CPUs local to its GPUs (on this host); "" = no preference */
    char mems[64];          /* their NUMA nodes */
} spec_gpu;

/* The spec additions for the job `id` (named in warnings) with request req and grants gpus;
 * empty for no grant, the environment only for a simulated one (a fixture's: no device exists
 * behind it). On failure g holds nothing. */
int spec_gpu_build(const char *id, const job_req *req, const gpu_grants *gpus, const spec_gpu_host *h, spec_gpu *g,
                   jerr *e);
void spec_gpu_free(spec_gpu *g);

/* The CPUs local to the granted GPUs that this host has, and those GPUs' NUMA nodes that it
 * has ("" when a GPU's locality is unknown or none of its CPUs is here): what a GPU job is
 * pinned to unless it chose --cpu-cores (not applied for simulated GPUs, whose CPU lists
 * describe another machine). Reads h->inv and h->online_cpus only (and /sys's NUMA nodes). */
void spec_gpu_locality(const gpu_grants *gpus, const spec_gpu_host *h, char *cpus, size_t cpus_len, char *mems,
                       size_t mems_len);

/* The number <proc_root>/devices gives a character driver ("507 nvidia-uvm"); -1 when absent. */
int spec_gpu_char_major(const char *proc_root, const char *name);

#endif
