/* The daemon's own counters and histograms, written into GET /metrics (counters.c): API
 * requests answered, scheduler run times, job start latencies, loop turns. Safe from any thread. */
#ifndef JOBLET_COUNTERS_H
#define JOBLET_COUNTERS_H

#include "../common/promtext.h"

/* One API request answered: method as received, HTTP status code. Methods other than GET,
 * HEAD, POST, PUT, DELETE and PATCH count as "other"; codes outside 100-599 as 0. */
void counters_request(const char *method, unsigned code);
/* One run of the scheduler (queue.c), in seconds. */
void counters_schedule(double seconds);
/* A job started running this long after it was submitted (or after its scheduled time). */
void counters_start(double seconds);
/* One turn of the loop (loop.c), from its wake to its next wait, in seconds. */
void counters_loop_turn(double seconds);
/* The families joblet_schedule_duration_seconds, joblet_job_start_latency_seconds,
 * joblet_loop_turn_duration_seconds and joblet_api_requests_total (left out while no request
 * was answered). */
void counters_write(prom_buf *b);

#endif
