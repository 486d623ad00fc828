/* A job as the API and rnx see it (job_json.c): JSON at the API's edge. */
#ifndef JOBLET_JOB_JSON_H
#define JOBLET_JOB_JSON_H

#include <jansson.h>

#include "job.h"

/* Its id, name, state, request (secrets masked), GPUs, placement, usage, times, and while it
 * waits its queue position and reason. */
json_t *job_json(const job *j);
/* What a request waits for (rnx job run --after; a job's or an array's), each with its state now
 * (null: not known, as for a job that left PENDING before joblet last started). */
json_t *job_json_after(const job_req *r, const uint64_t *after_seq);

#endif
