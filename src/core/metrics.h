/* Metrics and monitoring (docs/metrics.md): the Prometheus text of GET /metrics, the JSON of
 * GET /v1/monitor and GET /v1/jobs/{id}/metrics, and the daemon's own counters and histograms.
 * Everything here runs on the event-loop thread, which owns the state it reads; the counters
 * are also guarded by a mutex, so a call from another thread is harmless. */
#ifndef JOBLET_METRICS_H
#define JOBLET_METRICS_H

#include <jansson.h>

#include "authz.h"
#include "job.h"

/* Every metric in the Prometheus text exposition format 0.0.4. Caller frees. */
char *metrics_text(void);

/* The host (name, CPUs, load, memory, uptime), the daemon, job counts by state, and every GPU
 * with its state, last health sample and jobs: the ids of those who sees (AUTHZ_OTHERS_JOBS),
 * the others counted ("other_users_jobs"), as gpu_json_holder shows a GPU's holder. */
json_t *metrics_monitor_json(const caller *who);
/* One usage sample of a job: cgroup statistics while it runs (its totals once it ended) and
 * the last health sample of each GPU it holds. */
json_t *metrics_job_json(const job *j);

#endif
