/* GPU health: a monitor thread samples the GPUs and waits for NVML's XID and ECC events; what
 * it sees reaches the core (the event-loop thread) through a pipe, and the core acts on it by
 * the XID policy (xid_policy.h) and the GPU state machine (docs/health.md). */
#ifndef JOBLET_GPU_HEALTH_H
#define JOBLET_GPU_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../gpu/xid_policy.h"
#include "job.h"

#define GPU_HEALTH_XID_CODES 8       /* distinct XID codes counted per GPU (the rest go to "other") */
#define GPU_HEALTH_RECENT_XIDS 8     /* the last XIDs of each GPU kept with their time and action */

/* The last sample of one GPU and its counters, owned by the core (the loop thread). -1 = not
 * known (the backend cannot see it). */
typedef struct gpu_health {
    int64_t sampled_ms;          /* when; 0 = never */
    int temperature_c;
    int utilization_pct;
    int memory_used_mb;
    int power_w;
    int64_t throttle_reasons;    /* NVML clocks-throttle bit mask; -1 unknown */
    int64_t ecc_sbe, ecc_dbe;    /* ECC errors seen as events since the daemon started */
    int64_t ecc_sbe_total, ecc_dbe_total; /* the driver's volatile ECC counters (since it loaded); -1 unknown */
    int64_t ecc_sbe_aggregate, ecc_dbe_aggregate; /* its aggregate counters (the board's lifetime); -1 unknown */
    int64_t remapped_rows;       /* rows remapped (corrected + uncorrectable); -1 unknown */
    int64_t remapped_correctable, remapped_uncorrectable; /* the two apart; -1 unknown */
    int remap_pending;           /* a remapping waits for the next reset: 1, 0, -1 unknown */
    int remap_failure;           /* a remapping failed (the board should be replaced): 1, 0, -1 unknown */
    struct {
        int code;
        uint64_t count;
    } xid[GPU_HEALTH_XID_CODES];
    uint64_t xid_other;
    int last_xid;                /* 0 none */
    int64_t last_xid_ms;
    struct {
        int64_t ms;
        int code;
        const char *meaning;     /* xid_policy.h's words (static) */
        enum xid_action action;  /* what the policy did */
    } recent[GPU_HEALTH_RECENT_XIDS]; /* the last XIDs, newest first */
    int nrecent;
    bool hot;                    /* above gpu.max_temperature_c: takes no new jobs until it cools */
} gpu_health;

const gpu_health *gpu_health_of(int i);
/* Jobs holding GPU i (exclusive, shared or through one of its MIG devices), at most max. */
size_t gpu_health_jobs_on(int i, job **out, size_t max);
/* The jobs on a failed GPU: preemptible ones go back to the queue (and run elsewhere), the
 * others are stopped and end FAILED (gpu_error) with the fault: f says which GPU, the XID or the
 * admin's command, and by whom (its gpu is i). */
void gpu_health_lose_jobs(int i, const gpu_fault *f);
/* Why, in words: "XID 79: GPU has fallen off the bus", "taken offline by uid 0". */
void gpu_health_fault_why(const gpu_fault *f, char *out, size_t len);
/* A job that was being stopped for its GPU when joblet stopped: its end will say so again. */
void gpu_health_fault_restore(job *j);
/* A GPU waiting for its reset gets it once nothing holds it any more (the settle step asks). */
void gpu_health_reset_when_idle(void);
/* Starts the monitor (no-op without GPUs or with gpu.health_interval_ms 0). */
void gpu_health_start(void);
void gpu_health_stop(void);

#endif
