/* joblet's one binding to NVML (libnvidia-ml.so.1), for discovery (backend_nvml.c) and the
 * health monitor (core/gpu_health.c) alike: the library is opened with dlopen, never linked, so
 * joblet runs on hosts without a driver; it is opened once per process and stays loaded. The
 * declarations it resolves are nvml_api.h's, which the fake NVML implements too. */
#ifndef JOBLET_NVML_H
#define JOBLET_NVML_H

#include "../common/err.h"
#include "nvml_api.h"

/* Every entry point of nvml_api.h, NULL where the library does not export it. */
typedef struct nvml_lib {
    void *h;
#define NVML_POINTER(name, ret, params) ret(*name) params;
    NVML_FUNCTIONS(NVML_POINTER)
#undef NVML_POINTER
} nvml_lib;

/* The binding to the library at `path`, loaded by the first call: NULL and why in e when it
 * cannot be loaded or lacks an entry point nothing trustworthy can be said without (init,
 * shutdown, error strings, device count, handle, UUID, PCI info, name, memory, minor number).
 * Later calls answer the same, without loading anything again; a call naming another path
 * than the first is refused. Safe from any thread. Each user still pairs its own nvmlInit_v2
 * and nvmlShutdown (NVML counts them). */
const nvml_lib *nvml_load(const char *path, jerr *e);

/* NVML's words for r ("Driver Not Loaded"). */
const char *nvml_error(const nvml_lib *n, nvmlReturn_t r);

#endif
