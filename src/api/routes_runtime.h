/* The routes of runtimes, their builds and imports (routes_runtime.c; docs/api.md). */
#ifndef JOBLET_ROUTES_RUNTIME_H
#define JOBLET_ROUTES_RUNTIME_H

#include <stdint.h>

#include "http.h"

/* /v1/runtimes..., /v1/runtime-builds..., /v1/runtime-imports */
enum MHD_Result routes_runtime(request *r);
/* Before the body (routes_body_sink): an import's archive goes to a file, not to memory. */
int routes_runtime_body(request *r, int *fd, uint64_t *max, jerr *e);
/* Whether method and path are an import (routes_runtime_body takes its body). */
bool routes_runtime_body_route(const char *method, const char *path);

#endif
