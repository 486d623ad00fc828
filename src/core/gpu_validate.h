/* The machine's half of validating a GPU request (gpu_validate.c). */
#ifndef JOBLET_GPU_VALIDATE_H
#define JOBLET_GPU_VALIDATE_H

#include "../common/err.h"
#include "../common/jobreq.h"

/* Fills gpu_count (gpu_all: the usable GPUs of the kind), stores gpu_ids as UUIDs, and runs a
 * --gpu-optional job that the machine cannot serve without GPUs (gpu_degraded says why).
 * -1 and the refusal, naming the field, when the request can never run here. */
int gpu_validate(job_req *req, jerr *e);

#endif
