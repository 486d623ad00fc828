/* GPU placement: which free GPUs a job of N GPUs gets. Pure: no syscalls, deterministic. */
#ifndef JOBLET_PLACEMENT_H
#define JOBLET_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

/* How much two GPUs gain from being in one job: NVLink first, then PCIe proximity, then NUMA
 * (placement_pair_score builds it from an inventory's tables). */
int placement_pair_score(int nvlinks, int pcie_level, int same_numa);

/* The set of `count` GPUs among `candidates` (bit i = GPU i may be used) whose pair scores
 * (pair[i * n + j]) sum highest. Exhaustive for up to 16 candidates, so the best set there is
 * is found; greedy beyond. Ties go to the set with the lowest indexes. 0 and *out set, or -1
 * when there are fewer than count candidates. */
int placement_best(const int *pair, size_t n, uint64_t candidates, unsigned count, uint64_t *out);

/* The score of a set: the sum over its pairs. */
long placement_score(const int *pair, size_t n, uint64_t set);

#endif
