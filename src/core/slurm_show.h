/* What `scontrol show node NAME` says of a node that joblet needs (slurm_node.c): whether
 * it is drained and why. Pure, for the tests. */
#ifndef JOBLET_SLURM_SHOW_H
#define JOBLET_SLURM_SHOW_H

#include <stdbool.h>
#include <stddef.h>

/* Whether its State= has DRAIN (IDLE+DRAIN, MIXED+DRAIN, DRAINED...), and its Reason= without
 * the " [user@time]" Slurm appends ("" none). -1 when the text names no State=. */
int slurm_show_parse(const char *text, bool *drained, char *reason, size_t len);

#endif
