/* GPU health reaches Slurm (docs/slurm.md, "GPU health drains the Slurm node"): while any GPU
 * is out of service (draining, resetting, offline, degraded) this node is drained in Slurm
 * with joblet's reason ("joblet: GPU 2 offline: ..."), and resumed once every GPU is back —
 * only when the drain is joblet's own (its reason starts "joblet:"), never an admin's.
 *
 * Through slurm.scontrol as a child process watched by the loop (its pidfd), never waited for:
 * at most one runs at a time, each is killed after slurm.timeout_s, and changes that come
 * while one runs are coalesced (only the latest wanted state is carried out). A failure is
 * tried again after slurm.retry_s. Every outcome is logged, kept in the audit trail (action
 * "slurm") and published on the event stream (event "slurm"). Off unless slurm.node_name is
 * set or slurm.drain is true. */
#ifndef JOBLET_SLURM_NODE_H
#define JOBLET_SLURM_NODE_H

#include <stdbool.h>
#include <stddef.h>

/* The Slurm node name: slurm.node_name, else the short host name. */
const char *slurm_node_name(void);
/* Whether joblet drains and resumes the node (slurm.drain, slurm.node_name). */
bool slurm_node_active(void);
/* At start: reads the configuration and brings the node to the GPUs' state (a drain of
 * joblet's left from before a restart whose GPUs are back is resumed). */
void slurm_node_start(void);
/* The GPUs' service states may have changed (the settle step, on WANT_GPUS). */
void slurm_node_sync(void);
/* The daemon stops: a running scontrol is killed and reaped. */
void slurm_node_stop(void);

#endif
