/* Copying files out of a job and into it over the API (docs/api.md "Copying files"):
 *   GET /v1/jobs/{id}/archive?path=P[&follow=1]  P as a tar (application/x-tar), streamed
 *   GET /v1/jobs/{id}/archive?path=P&stat=1      what is at P, as JSON
 *   PUT /v1/jobs/{id}/archive?path=DIR           a tar extracted into the directory DIR
 * The work is core/job_cp.h's; this file is its HTTP. */
#ifndef JOBLET_API_JOBS_CP_H
#define JOBLET_API_JOBS_CP_H

#include <stdint.h>

#include "../common/err.h"
#include "../core/job.h"
#include "http.h"

/* The route of /v1/jobs/{id}/archive for j (found for the caller). */
enum MHD_Result jobs_cp_route(request *r, job *j);
/* For routes_body_sink: a PUT of an archive streams into its helper (2), others are not
 * this file's (0); -1 refuses it before its body is read. */
int jobs_cp_body(request *r, int *fd, uint64_t *max, jerr *e);
/* Whether method and path are such a PUT (jobs_cp_body takes its body), by their form alone. */
bool jobs_cp_body_route(const char *method, const char *path);

#endif
