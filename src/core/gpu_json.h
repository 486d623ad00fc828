/* GPUs as the API shows them (gpu_json.c). */
#ifndef JOBLET_GPU_JSON_H
#define JOBLET_GPU_JSON_H

#include <jansson.h>

#include "authz.h"

/* GET /v1/gpus: discovery (backend, driver, CUDA, attempts), "enabled", and every GPU, as who
 * may see them (gpu_json_holder). */
json_t *gpu_json_all(const caller *who);
/* GET /v1/gpus/{gpu}: one GPU, with "state", "state_reason", "health", "takes_jobs", "job",
 * "shared" and "problem" as they are now. */
json_t *gpu_json_one(int index, const caller *who);
/* Sets o's "job": the id of the job holding GPU i exclusively (null: none), for who sees its
 * owner's jobs; for others null with "another_users_job": true. */
void gpu_json_holder(json_t *o, int i, const caller *who);

#endif
