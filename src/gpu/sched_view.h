/* An inventory as the pure scheduler sees it: the one translation the daemon, the simulator
 * and the scheduler tests share. */
#ifndef JOBLET_GPU_SCHED_VIEW_H
#define JOBLET_GPU_SCHED_VIEW_H

#include "inventory.h"
#include "../sched/sched.h"

/* pair[i * n + j]: placement_pair_score of GPUs i and j (0 on the diagonal). */
void gpu_pair_scores(const gpu_inventory *inv, int *pair);

/* One sched_gpu per GPU: usable when healthy, with a minor and not in MIG mode; mps as given. */
void gpu_sched_gpus(const gpu_inventory *inv, int mps, sched_gpu *out);

/* MIG devices of GPUs in MIG mode, in GPU then instance order; each profile's id is the flat
 * index of the first device that has it. A device is usable on a healthy GPU when it has its
 * capability nodes (a simulated machine has none to give: usable all the same). gpu_of (may be
 * NULL) gets each device's GPU. The daemon's scheduler input is this (core/gpus.c). */
size_t gpu_sched_migs(const gpu_inventory *inv, sched_mig *out, int *gpu_of, size_t max);

/* The GPUs whose name contains type (case-insensitive; "" any) and whose compute capability
 * is at least cc (major * 10 + minor; 0 any; unknown capability never qualifies). */
uint64_t gpu_kind_mask(const gpu_inventory *inv, const char *type, int cc);

#endif
