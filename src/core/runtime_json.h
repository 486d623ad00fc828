/* Runtimes and their builds as the API and rnx see them (runtime_json.c): JSON at the API's
 * edge, nowhere else. docs/api.md, "Runtimes". */
#ifndef JOBLET_RUNTIME_JSON_H
#define JOBLET_RUNTIME_JSON_H

#include <jansson.h>

#include "runtime_build.h"
#include "runtimes.h"

/* Its manifest, where it lives, whether it is runtimes.default, and the jobs not ended that
 * run in it (a runtime they use cannot be removed). */
json_t *runtime_json(const runtime *rt);
/* Every installed runtime, by name; one that cannot be read is listed with its error. */
json_t *runtime_json_list(void);
/* A build or import: its state, phase and percent, times, error, where its log is. */
json_t *runtime_json_build(const rt_build *b);

#endif
