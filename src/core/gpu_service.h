/* One GPU's service state, as the GPU state machine (gpu/gpu_state.c) moves it, and why it is
 * out of service; the GPUs a scrub helper is zeroing. The state changes here only: an admin,
 * the XID policy, a reset or a scrub sends an event, the machine's table decides. */
#ifndef JOBLET_GPU_SERVICE_H
#define JOBLET_GPU_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "../gpu/gpu_state.h"

typedef struct gpu_service {
    enum gpu_state state;     /* GS_AVAILABLE (in service), SCRUBBING, DRAINING, RESETTING, DEGRADED or OFFLINE */
    char reason[256];         /* why it is degraded, draining, resetting or offline */
    int64_t since_ms;         /* when it entered this state (kept across a restart with it); 0 unknown */
} gpu_service;

const gpu_service *gpu_service_get(int i);
/* The one way a GPU's state changes: the transition table (gpu_state_next) decides; a
 * transition it does not allow is logged as an error and changes nothing. reason: the new
 * reason, NULL to keep the old one. Records nothing: gpu_service_set does. Returns the table's
 * next state, or -1. */
int gpu_service_event(int i, enum gpu_event ev, const char *reason);
/* gpu_service_event, recorded: the log, the audit trail ("state") and, for draining, resetting
 * and offline, table gpu_admin (kept across a restart). by: the admin's uid, -1 for joblet. */
int gpu_service_set(int i, enum gpu_event ev, const char *reason, int64_t by);
/* At start: the states kept across a restart (table gpu_admin). */
void gpu_service_load(void);
/* The turn's commit (state_commit_now): ok, what it wrote is in table gpu_admin; not ok, it was
 * rolled back, and those rows are written again (gpu_service_resync, or the GPU's next change). */
void gpu_service_committed(bool ok);
/* Rows of table gpu_admin that a failed statement or commit took back, not yet written again. */
bool gpu_service_unsaved(void);
/* Writes them again into the open transaction (state.c resync). */
void gpu_service_resync(void);
/* The GPUs a running joblet-gpu-scrub is zeroing (bit i = GPU i), whatever their state; set
 * by gpu_scrub.c. A GPU brought back into service while its scrub runs stays SCRUBBING. */
uint64_t gpu_service_scrubbing(void);
void gpu_service_set_scrubbing(uint64_t gpus);

#endif
