/* POST /v1/jobs/{id}/exec (docs/api.md, "Interactive streams: exec"): a new process in a running
 * job (core/job_exec.h). The body says what to run; the answer is 101 (Upgrade: tcp) and the
 * connection carries the frames of attach (api/attach.h), ending with the process's exit code. */
#ifndef JOBLET_API_JOBS_EXEC_H
#define JOBLET_API_JOBS_EXEC_H

#include <microhttpd.h>

#include "../core/job.h"
#include "http.h"

enum MHD_Result jobs_exec_route(request *r, job *j);

#endif
