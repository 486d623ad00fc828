/* The daemon's side of a GPU job's spec (gpu_spec.h): the running driver's libraries found
 * once at start, and the spec builder's view of the machine filled from core. What a grant
 * becomes in the spec is exec/spec_gpu.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../gpu/ldcache.h"
#include "gpu_mps.h"
#include "gpu_spec.h"
#include "state.h"

#define NLIB_NAMES 64

size_t gpu_spec_driver_lib_paths(const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < core.ndriver_libs && n < max; i++)
        out[n++] = core.driver_libs[i].lib.real;
    return n;
}

void gpu_spec_find_driver_libs(void)
{
    const spec_gpu_lib_name *names = spec_gpu_lib_names;
    size_t nnames = spec_gpu_nlib_names < NLIB_NAMES ? spec_gpu_nlib_names : NLIB_NAMES;
    const char *prefixes[NLIB_NAMES];
    for (size_t i = 0; i < nnames; i++)
        prefixes[i] = names[i].prefix;
    ldcache_lib found[NLIB_NAMES];
    int skipped = 0;
    jerr e = {0};
    int n = ldcache_driver_libs(core.cfg.gpu.ldcache, core.gpu.inv.driver_version, prefixes, nnames, found, nnames,
                                &skipped, &e);
    if (n < 0) {
        log_warn("gpu: driver libraries: %s; GPU jobs get none", e.msg);
        return;
    }
    core.driver_libs = xcalloc((size_t)n + 1, sizeof *core.driver_libs);
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < nnames; i++)
            if (strcmp(found[k].prefix, names[i].prefix) == 0)
                core.driver_libs[core.ndriver_libs++] = (spec_gpu_lib){names[i].cap, found[k]};
    log_info("gpu: %zu driver %s libraries found in %s%s", core.ndriver_libs, core.gpu.inv.driver_version, core.cfg.gpu.ldcache,
             skipped ? " (libraries of other driver versions ignored)" : "");
    /* What the default capabilities (compute, utility) would miss is worth a warning; video
     * and graphics libraries are absent from most compute servers. */
    char missing[1024] = "";
    for (size_t i = 0; i < nnames; i++) {
        int have = 0;
        for (size_t k = 0; k < core.ndriver_libs; k++)
            have |= strcmp(core.driver_libs[k].lib.prefix, names[i].prefix) == 0;
        size_t l = strlen(missing);
        if (!have && (!strcmp(names[i].cap, "compute") || !strcmp(names[i].cap, "utility")))
            snprintf(missing + l, sizeof missing - l, "%s%s", l ? ", " : "", names[i].prefix);
    }
    if (*missing)
        log_warn("gpu: not found for driver %s in %s (jobs get the others): %s", core.gpu.inv.driver_version,
                 core.cfg.gpu.ldcache, missing);
}

/* The machine as discovery found it at start. */
static void machine(spec_gpu_host *h)
{
    *h = (spec_gpu_host){
        .dev_root = core.cfg.gpu.dev_root,
        .proc_root = core.cfg.gpu.proc_root,
        .inv = &core.gpu.inv,
        .cuda = core.gpu.cuda,
        .ncuda = core.gpu.ncuda,
        .libs = core.driver_libs,
        .nlibs = core.ndriver_libs,
        .online_cpus = core.online_cpus,
    };
}

void gpu_spec_host(const job *j, spec_gpu_host *h, char *mps_dir, size_t mps_len)
{
    machine(h);
    if (j->gpus.n && j->req.gpu_share) {
        gpu_mps_pipe_dir(j->gpus.g[0].index, mps_dir, mps_len);
        h->mps_pipe_dir = mps_dir;
    }
}

void gpu_spec_locality(const job *j, char *cpus, size_t cpus_len, char *mems, size_t mems_len)
{
    spec_gpu_host h;
    machine(&h);
    spec_gpu_locality(&j->gpus, &h, cpus, cpus_len, mems, mems_len);
}
