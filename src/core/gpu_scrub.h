/* Memory scrubbing between tenants: joblet-gpu-scrub zeroes released GPUs before anyone else
 * gets them (gpu_scrub.c). */
#ifndef JOBLET_GPU_SCRUB_H
#define JOBLET_GPU_SCRUB_H

#include <stdint.h>

/* Zeroes the memory of these GPUs (bit i = GPU i) when gpu.scrub is on; they are SCRUBBING,
 * not free, until it succeeds, and DEGRADED when it fails. */
void gpu_scrub_start(uint64_t gpus);

#endif
