/* The console's History (docs/console.md): GPU samples kept in the database at a bounded size
 * (one row per GPU and minute for a day, then one per hour, none after history.keep_days), and
 * GET /v1/history's answer: GPU-hours per user and per GPU, jobs per hour, queue waits (from the
 * jobs joblet knows) and utilization over time (from the samples). */
#ifndef JOBLET_GPU_HISTORY_H
#define JOBLET_GPU_HISTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../store/db.h"
#include "job.h"

/* Starts sampling (a timer on the loop, every HISTORY_TICK_S). */
void gpu_history_start(void);
void gpu_history_stop(void);
/* One reading of every GPU now (the timer's work; tests call it through the API's ?sample=1). */
void gpu_history_tick(int64_t now);
/* The answer for uid: per-user figures are its own alone unless all (core/authz.h:
 * AUTHZ_HISTORY_ALL). */
json_t *gpu_history_json(uid_t uid, bool all, int hours);
/* What job j, being deleted, leaves in the answer's per-user and per-GPU sums (its GPU time, its
 * count: store/db.h db_usage), so that they do not forget deleted jobs. */
void gpu_history_usage(const job *j, db_usage *u);

#endif
