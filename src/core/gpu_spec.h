/* The daemon's side of a GPU job's spec: the running driver's libraries, looked up once at
 * start, and the machine as the spec builder's GPU part sees it (exec/spec_gpu.h), filled from
 * the daemon's state. */
#ifndef JOBLET_GPU_SPEC_H
#define JOBLET_GPU_SPEC_H

#include <stddef.h>

#include "../exec/spec_gpu.h"
#include "job.h"

/* At start, GPUs found on a real machine: the running driver's libraries, looked up once in
 * the loader cache (core.driver_libs). */
void gpu_spec_find_driver_libs(void);
/* The driver's libraries found at start (gpu_spec_find_driver_libs): host paths, as mounted. */
size_t gpu_spec_driver_lib_paths(const char **out, size_t max);

/* The machine as the job's GPU spec sees it: the configured roots, discovery's inventory and
 * toolkits, the driver's libraries, the online CPUs, and for a shared job its GPU's MPS pipe
 * directory (written into mps_dir, which h then points at). Borrowed from core: valid until
 * the state changes. */
void gpu_spec_host(const job *j, spec_gpu_host *h, char *mps_dir, size_t mps_len);

/* The CPUs and NUMA nodes the job's GPUs are local to (spec_gpu_locality) on this host. */
void gpu_spec_locality(const job *j, char *cpus, size_t cpus_len, char *mems, size_t mems_len);

#endif
