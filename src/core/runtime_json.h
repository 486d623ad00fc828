/* Runtimes and their builds as the API and rnx see them (runtime_json.c): JSON at the API's
 * edge, nowhere else. docs/api.md, "Runtimes". */
#ifndef JOBLET_RUNTIME_JSON_H
#define JOBLET_RUNTIME_JSON_H

#include <jansson.h>

#include "authz.h"
#include "runtime_build.h"
#include "runtimes.h"

/* Its manifest, where it lives, whether it is runtimes.default, and the jobs not ended and the
 * arrays with tasks still to make that use it (a runtime they use cannot be removed): the ids
 * of those who may see (its own, or every user's: AUTHZ_OTHERS_JOBS), the others counted
 * (jobs_of_others), so that no user learns the ids of another's jobs. */
json_t *runtime_json(const runtime *rt, const caller *who);
/* Every installed runtime, by name, as runtime_json; one that cannot be read is listed with its
 * error. */
json_t *runtime_json_list(const caller *who);
/* A build or import: its state, phase and percent, times, error, where its log is. */
json_t *runtime_json_build(const rt_build *b);

#endif
