/* Metrics and monitoring (docs/metrics.md): the Prometheus text of GET /metrics, the JSON of
 * GET /v1/monitor and GET /v1/jobs/{id}/metrics, and the daemon's own counters and histograms.
 * Everything here runs on the event-loop thread, which owns the state it reads; the counters
 * are also guarded by a mutex, so a call from another thread is harmless. */
#ifndef JOBLET_METRICS_H
#define JOBLET_METRICS_H

#include <jansson.h>

#include "job.h"

/* Every metric in the Prometheus text exposition format 0.0.4. Caller frees. */
char *metrics_text(void);

/* One API request answered: method as received, HTTP status code. Methods other than GET,
 * HEAD, POST, PUT, DELETE and PATCH count as "other"; codes outside 100-599 as 0. */
void metrics_count_request(const char *method, unsigned code);
/* One run of the scheduler (core_schedule), in seconds. */
void metrics_observe_schedule(double seconds);
/* A job started running this long after it was submitted (or after its scheduled time). */
void metrics_observe_start(double seconds);

/* The host (name, CPUs, load, memory, uptime), the daemon, job counts by state, and every GPU
 * with its state, last health sample and jobs. */
json_t *monitor_json(void);
/* One usage sample of a job: cgroup statistics while it runs (its totals once it ended) and
 * the last health sample of each GPU it holds. */
json_t *job_metrics_json(const job *j);

#endif
