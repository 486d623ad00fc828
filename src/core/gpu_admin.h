/* What admins do to a GPU: POST /v1/gpus/{gpu}/drain|offline|online (gpu_admin.c). */
#ifndef JOBLET_GPU_ADMIN_H
#define JOBLET_GPU_ADMIN_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../gpu/gpu_state.h"

/* Moves GPU i by an admin's event (GE_ADMIN_DRAIN, _OFFLINE, _ONLINE: the action's name read
 * by gpu_admin_action_parse, gpu/gpu_state.h), stopping its jobs where the action and force say
 * so, and records it. Returns {"jobs_affected": [ids], "note": "..."} (the caller adds the GPU as
 * it is once settled), or NULL and why (409 refused). */
json_t *gpu_admin_action(int i, enum gpu_event ev, bool force, uid_t by, jerr *e);

#endif
