/* GPU placement: which free GPUs a job of N GPUs gets. Pure: no syscalls, deterministic. */
#ifndef JOBLET_PLACEMENT_H
#define JOBLET_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

/* How much two GPUs gain from being in one job: NVLink first, then PCIe proximity, then NUMA
 * (placement_pair_score builds it from an inventory's tables). */
int placement_pair_score(int nvlinks, int pcie_level, int same_numa);

/* gpu.strategy (ADR-008):
 *   topology  the best-connected set; among equals, the one next to busy GPUs, which keeps
 *             whole well-connected groups free for later jobs
 *   pack      next to busy GPUs first (fewer partly used groups, idle ones can power down),
 *             then the best-connected
 *   spread    away from busy GPUs first (less thermal and bandwidth contention), then the
 *             best-connected */
enum placement_strategy { PLACE_TOPOLOGY, PLACE_PACK, PLACE_SPREAD };
int placement_strategy_parse(const char *s);

/* The set of `count` GPUs among `candidates` (bit i = GPU i may be used) that is best under
 * the strategy, judged by pair scores (pair[i * n + j]) within the set and towards the busy
 * GPUs. Exhaustive for up to 16 candidates, so the best set there is is found; greedy beyond.
 * Remaining ties go to the set with the lowest indexes. 0 and *out set, or -1 when there are
 * fewer than count candidates. */
int placement_best(const int *pair, size_t n, uint64_t candidates, uint64_t busy, enum placement_strategy st,
                   unsigned count, uint64_t *out);

/* The score of a set: the sum over its pairs. */
long placement_score(const int *pair, size_t n, uint64_t set);

#endif
