/* What a job was granted: whole GPUs (exclusive or an MPS share) or one MIG device, typed
 * once when the grant is made and turned into JSON only for the API and the database. */
#ifndef JOBLET_GRANT_H
#define JOBLET_GRANT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gpu_grant {
    int index;                /* the GPU's index; a MIG device's parent GPU's */
    char uuid[96];            /* the GPU's UUID, or the MIG device's */
    char parent_uuid[96];     /* a MIG device's GPU; "" for a whole GPU */
    int minor;                /* /dev/nvidiaN */
    char bus_id[32];
    char name[160];
    int64_t memory_mb;
    bool simulated;           /* a fixture's GPU: no device behind it */
    int64_t shared_mb;        /* an MPS share's reservation; -1 for a GPU of its own */
    bool mig;                 /* a MIG device: the fields below */
    char mig_profile[32];
    int gi, ci, gi_cap_minor, ci_cap_minor;
} gpu_grant;

/* A job's grants: NULL/0 when it holds (or held) none. */
typedef struct gpu_grants {
    gpu_grant *g;
    size_t n;
} gpu_grants;

json_t *grant_list_to_json(const gpu_grants *gs);
/* From the stored JSON; entries it cannot read are skipped. */
void grant_list_from_json(json_t *arr, gpu_grants *gs);
void grant_list_free(gpu_grants *gs);
gpu_grant *grant_list_add(gpu_grants *gs);

/* Why a job lost its GPU (it ended FAILED with end_reason gpu_error): which GPU, the XID and
 * what joblet's XID policy did about it, or the admin's command, and when. */
typedef struct gpu_fault {
    bool set;                 /* false: the job lost no GPU */
    int gpu;                  /* the GPU's index */
    char uuid[96];
    int xid;                  /* the XID; 0: an admin's command, not an XID */
    char meaning[96];         /* the XID's meaning (xid_policy.h); "" for an admin's command */
    char action[32];          /* the XID policy's action (offline, reset, restart_job), or the admin's
                               * command: "offline --force", "drain --force" */
    int64_t by_uid;           /* the admin; -1: joblet itself (the XID policy) */
    int64_t ms;               /* when */
} gpu_fault;

/* {"gpu", "uuid", "xid" (null: an admin's command), "meaning", "action", "by_uid" (null:
 * joblet), "time"}: the API's "gpu_fault" and the database column share this form. NULL when
 * not set. */
json_t *gpu_fault_to_json(const gpu_fault *f);
/* From the stored JSON; anything else (NULL, null, a malformed object) leaves it unset. */
void gpu_fault_from_json(json_t *o, gpu_fault *f);

#endif
