/* A job as the API and rnx see it (job_json.c): JSON at the API's edge. */
#ifndef JOBLET_JOB_JSON_H
#define JOBLET_JOB_JSON_H

#include <jansson.h>

#include "job.h"

/* Its id, name, state, request (secrets masked), GPUs, placement, usage, times, and while it
 * waits its queue position and reason. */
json_t *job_json(const job *j);

#endif
