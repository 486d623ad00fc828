/* Memory scrubbing between tenants: joblet-gpu-scrub clears released GPUs of processes outside
 * jobs holding their device nodes and zeroes them before anyone else gets them (gpu_scrub.c). */
#ifndef JOBLET_GPU_SCRUB_H
#define JOBLET_GPU_SCRUB_H

#include <stdint.h>

/* Clears and zeroes these GPUs (bit i = GPU i) when gpu.scrub is on; they are SCRUBBING, not
 * free, until it succeeds, and DEGRADED when it fails. released_by: the job that released them,
 * named in the audit record of a holder the helper killed. */
void gpu_scrub_start(uint64_t gpus, const char *released_by);

#endif
