/* One GPU's state machine (docs/health.md, "GPU states"): the states, the events that move a
 * GPU between them, the table of allowed transitions, and the one function that says what the
 * API shows for a GPU. Pure: no system calls, nothing of the daemon's; the core keeps one
 * enum gpu_state per GPU and changes it only through gpu_state_next.
 *
 * What is stored is the GPU's service state: in service (GS_AVAILABLE), SCRUBBING, DRAINING,
 * RESETTING, DEGRADED or OFFLINE. Who holds a GPU (one job, or MPS tenants) is the core's
 * count of holders, not a state: an in-service GPU is shown as allocated or shared while it
 * has them (gpu_state_report). A problem found by discovery makes it unusable whatever its
 * service state. Temperature is not a state either: a hot GPU keeps its state and takes no
 * new jobs until it cools (gpu_state_hot). */
#ifndef JOBLET_GPU_STATE_H
#define JOBLET_GPU_STATE_H

#include <stdbool.h>

enum gpu_state {
    GS_AVAILABLE,   /* in service: takes jobs (shown as allocated/shared while jobs hold it) */
    GS_ALLOCATED,   /* shown only: one job holds it exclusively */
    GS_SHARED,      /* shown only: MPS tenants share it */
    GS_SCRUBBING,   /* in service, released: its memory is being zeroed before anyone gets it */
    GS_DRAINING,    /* no new jobs; the running ones finish (rnx gpu drain) */
    GS_RESETTING,   /* an XID asked for a reset: no new jobs; reset and check once it is idle */
    GS_DEGRADED,    /* a memory scrub failed: never handed out until an admin brings it online */
    GS_OFFLINE,     /* out of service until an admin brings it online */
    GS_UNUSABLE,    /* shown only: discovery found a problem (until a restart finds it well) */
    GS_COUNT
};

enum gpu_event {
    GE_SCRUB_START,      /* released with gpu.scrub on: joblet-gpu-scrub zeroes its memory */
    GE_SCRUB_OK,         /* the helper zeroed it */
    GE_SCRUB_FAIL,       /* the helper failed on it, died, or could not be started */
    GE_ADMIN_DRAIN,      /* rnx gpu drain */
    GE_ADMIN_OFFLINE,    /* rnx gpu offline */
    GE_ADMIN_ONLINE,     /* rnx gpu online */
    GE_XID_DRAIN_RESET,  /* XID policy drain_reset: no new jobs, reset once the running ones end */
    GE_XID_RESET,        /* XID policy reset: the jobs are stopped, reset once idle */
    GE_XID_OFFLINE,      /* XID policy offline (79: fallen off the bus) */
    GE_RESET_DONE,       /* nvidia-smi --gpu-reset and the check after it passed */
    GE_RESET_FAILED,     /* ... or failed */
    GE_RESTORE_DRAINING, /* a restart found it stored as draining (table gpu_admin) */
    GE_RESTORE_RESETTING,/* ... as resetting: the reset it waited for is still due */
    GE_RESTORE_OFFLINE,  /* ... as offline */
    GE_RESTORE_DEGRADED, /* ... as degraded: a scrub failed, its memory may hold a tenant's data */
    GE_COUNT
};

/* The state after `ev` in state `s`: 0 and *next, or -1 when the table has no such row (the
 * state must then stay as it is, and the caller says so). */
int gpu_state_next(enum gpu_state s, enum gpu_event ev, enum gpu_state *next);

/* "available", "allocated", "shared", "scrubbing", "draining", "resetting", "degraded",
 * "offline", "unusable": the API's names (GET /v1/gpus "state", the gpu_admin table). */
const char *gpu_state_name(enum gpu_state s);
/* The name back: 0 and *s, or -1 for a name that is not a state. */
int gpu_state_parse(const char *name, enum gpu_state *s);
const char *gpu_event_name(enum gpu_event ev);

/* An admin's POST /v1/gpus/{gpu}/drain|offline|online, parsed once where it comes in: 0 and
 * *ev (GE_ADMIN_DRAIN, GE_ADMIN_OFFLINE, GE_ADMIN_ONLINE), or -1. */
int gpu_admin_action_parse(const char *action, enum gpu_event *ev);
/* "drain", "offline", "online" (the audit trail's action); NULL for any other event. */
const char *gpu_admin_action_name(enum gpu_event ev);

/* What the API shows for one GPU. */
typedef struct gpu_report {
    enum gpu_state state;     /* "state" */
    bool takes_jobs;          /* "takes_jobs": the scheduler may hand it to a new job */
    bool out_of_service;      /* an admin, the XID policy or a failed scrub took it out of service:
                               * its reason is "state_reason" (degraded, draining, resetting, offline) */
} gpu_report;

/* service: the stored state; exclusive: one job holds it; tenants: MPS jobs sharing it;
 * problem: discovery found one; hot: above gpu.max_temperature_c. A problem shows before the
 * service state, which shows before the holders. */
gpu_report gpu_state_report(enum gpu_state service, bool exclusive, int tenants, bool problem, bool hot);

/* Above max_c a GPU is hot; it stays hot until it has cooled to max_c - 5 (no flapping in and
 * out of service at the limit). temperature_c < 0 (not known) changes nothing. */
bool gpu_state_hot(bool was_hot, int temperature_c, int max_c);

#endif
