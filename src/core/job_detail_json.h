/* The "detail" object of a job (job_detail_json.c): what GET /v1/jobs/{id}?detail=1 adds
 * (docs/api.md) and `rnx job status --detail` prints. */
#ifndef JOBLET_JOB_DETAIL_JSON_H
#define JOBLET_JOB_DETAIL_JSON_H

#include <jansson.h>

#include "job.h"

/* request (its fields with secret values masked, and the rnx job run flags that give it),
 * placement (job_detail.h; null while it holds no GPU), spec (null before its first start),
 * usage (its GPUs' live use while it runs), events (job_events.h, oldest first) and
 * events_dropped. */
json_t *job_detail_json(const job *j);
/* Its "request": the fields given, the flags that give them, how many uploads. */
json_t *job_detail_json_request(const job_req *r);
/* Sets "events" and "events_dropped" in o: the history kept under id (a job's, or an array's:
 * job_events.h). */
void job_detail_json_events(json_t *o, const char *id);

#endif
