/* GPUs as the API shows them (gpu_json.c). */
#ifndef JOBLET_GPU_JSON_H
#define JOBLET_GPU_JSON_H

#include <jansson.h>

/* GET /v1/gpus: discovery (backend, driver, CUDA, attempts), "enabled", and every GPU. */
json_t *gpu_json_all(void);
/* GET /v1/gpus/{gpu}: one GPU, with "state", "state_reason", "health", "takes_jobs", "job",
 * "shared" and "problem" as they are now. */
json_t *gpu_json_one(int index);

#endif
