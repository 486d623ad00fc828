#ifndef JOBLET_GPU_SPEC_H
#define JOBLET_GPU_SPEC_H

#include "../exec/spec.h"
#include "job.h"

#define GPU_NVIDIA_MAJOR 195
#define GPU_NVIDIACTL_MINOR 255

typedef struct gpu_spec {
    spec_op *ops;
    size_t nops;
    cg_dev_rule *rules;
    size_t nrules;
    spec_mount *mounts;     /* read-only binds: CUDA toolkit, driver libraries */
    size_t nmounts;
    jobreq_pair *env;       /* variables for the job: CUDA_VISIBLE_DEVICES, ... */
    size_t nenv;
    char path_add[600];     /* appended to the job's PATH */
    char ld_add[600];       /* appended to its LD_LIBRARY_PATH */
    char cpus[256];         /* CPUs local to its GPUs (on this host); "" = no preference */
    char mems[64];          /* their NUMA nodes */
} gpu_spec;

/* At start, GPUs found on a real machine: the running driver's libraries, looked up once in
 * the loader cache (core.driver_libs). */
void gpu_spec_find_driver_libs(void);

/* The CPUs local to the job's GPUs that this host has, and those GPUs' NUMA nodes that it
 * has ("" when a GPU's locality is unknown or none of its CPUs is here): what a GPU job is
 * pinned to unless it chose --cpu-cores (not applied for simulated GPUs, whose CPU lists
 * describe another machine). */
void gpu_spec_locality(const job *j, char *cpus, size_t cpus_len, char *mems, size_t mems_len);

/* The number <proc_root>/devices gives a character driver ("507 nvidia-uvm"); -1 when absent. */
int gpu_spec_char_major(const char *proc_root, const char *name);
/* The driver's libraries found at start (gpu_spec_find_driver_libs): host paths, as mounted. */
size_t gpu_spec_driver_lib_paths(const char **out, size_t max);

/* The spec additions for the job's GPU grant; empty for no grant or a simulated one. */
int gpu_spec_build(const job *j, gpu_spec *g, jerr *e);
void gpu_spec_free(gpu_spec *g);

#endif
