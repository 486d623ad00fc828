/* GPU sharing: one NVIDIA MPS control daemon per shared GPU (gpu_mps.c). */
#ifndef JOBLET_GPU_MPS_H
#define JOBLET_GPU_MPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

/* nvidia-cuda-mps-control can be run; why not, in words, when it cannot. */
bool gpu_mps_available(void);
bool gpu_mps_available_why(char *why, size_t len);
/* Starts the control daemon of GPU `gpu` (its first tenant) on a pipe directory mounted afresh;
 * stops it (its last left) and unmounts that directory. */
int gpu_mps_start(int gpu, jerr *e);
void gpu_mps_stop(int gpu);
/* The pipe directory a tenant of GPU `gpu` is given (CUDA_MPS_PIPE_DIRECTORY). */
void gpu_mps_pipe_dir(int gpu, char *out, size_t len);
/* At start: stops the control daemons of GPUs no re-adopted job shares (bit i = GPU i) and
 * unmounts their pipe directories, those of GPUs not found included. */
void gpu_mps_init(uint64_t in_use);

#endif
