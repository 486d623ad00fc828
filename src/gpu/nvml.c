#include "nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Without these nothing trustworthy can be said about a GPU. */
static const char *const required[] = {
    "nvmlInit_v2", "nvmlShutdown", "nvmlErrorString", "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetName", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMinorNumber",
};

/* The one binding of the process, and how loading it went. */
static struct {
    pthread_mutex_t mu;
    int tried;          /* 0: not yet; 1: loaded or failed for good */
    char path[256];
    nvml_lib lib;
    int code;           /* 0 loaded, else the errno of the failure in why */
    char why[512];
} binding = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void load(const char *path)
{
    nvml_lib *n = &binding.lib;
    n->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->h) {
        binding.code = ENOENT;
        snprintf(binding.why, sizeof binding.why, "NVML: cannot load %s: %s", path, dlerror());
        return;
    }
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!dlsym(n->h, required[i])) {
            binding.code = ENOSYS;
            snprintf(binding.why, sizeof binding.why, "NVML: %s does not export %s (driver too old or not NVML)", path,
                     required[i]);
            dlclose(n->h);
            n->h = NULL;
            return;
        }
#define NVML_RESOLVE(name, ret, params) *(void **)&n->name = dlsym(n->h, #name);
    NVML_FUNCTIONS(NVML_RESOLVE)
#undef NVML_RESOLVE
}

const nvml_lib *nvml_load(const char *path, jerr *e)
{
    pthread_mutex_lock(&binding.mu);
    if (!binding.tried) {
        binding.tried = 1;
        snprintf(binding.path, sizeof binding.path, "%s", path);
        load(path);
    }
    const nvml_lib *n = NULL;
    if (strcmp(binding.path, path) != 0)
        jerr_set(e, EINVAL, "NVML: %s is loaded already; %s cannot be loaded beside it", binding.path, path);
    else if (binding.code)
        jerr_set(e, binding.code, "%s", binding.why);
    else
        n = &binding.lib;
    pthread_mutex_unlock(&binding.mu);
    return n;
}

const char *nvml_error(const nvml_lib *n, nvmlReturn_t r) { return n->nvmlErrorString(r); }
