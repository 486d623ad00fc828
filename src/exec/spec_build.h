/* The spec builder: a job's spec (spec.h, what the shim runs) from an explicit context —
 * the typed request, the grants, what the machine has (driver libraries, toolkits, GPU
 * inventory, device and /proc roots), the settings and the job's directories — reading no
 * global. The daemon (core/job_launch.c) is one caller: it fills the context from its state and
 * the job; a test, or a Slurm plugin, fills it from what it has. Everything the context names
 * must have been resolved already (the runtime's root, the volumes' mount points, the disk
 * of /work): the builder decides, it does not look things up, except the GPU part's reads of
 * the driver's /proc files and device nodes (spec_gpu.h).
 * Linked into joblet (library jspec), not into the shim. */
#ifndef JOBLET_SPEC_BUILD_H
#define JOBLET_SPEC_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "../gpu/grant.h"
#include "spec.h"
#include "spec_gpu.h"

/* The PATH a job gets when its environment gives none (GPU jobs get the CUDA toolkit's bin
 * appended). */
#define SPEC_BUILD_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* Where a job with Slurm's variables finds joblet's srun (bound there, first in its PATH). */
#define SPEC_BUILD_SRUN_DIR "/run/joblet/bin"

/* gVisor (docs/sandbox.md): what the machine's runsc is, for a job whose request asks for it. */
typedef struct spec_gvisor {
    bool available;            /* runsc found and usable; false: a gVisor job is refused with why */
    const char *why;           /* why it is not available */
    const char *runsc;         /* the program */
    const char *root;          /* runsc --root */
    const char *platform;      /* ptrace, systrap or kvm */
    bool nvproxy;              /* runsc proxies GPUs (--nvproxy) */
} spec_gvisor;

/* Everything a job's spec is made of. Pointers are borrowed for the call; NULL where a field
 * says none. */
typedef struct spec_ctx {
    /* the job */
    const char *id;               /* its id (36 characters); its hostname is job-<first 8> */
    uint64_t number;              /* its number (joblet's seq: SLURM_JOB_ID); 0 none */
    const job_req *req;           /* its typed, validated request */
    const gpu_grants *gpus;       /* what it was granted (n 0: no GPU) */
    uid_t uid, gid;               /* whom the command runs as */
    uid_t owner_uid;              /* who submitted it (its cgroup level, log budget) */
    uid_t sandbox_uid;            /* gVisor: its sandbox's host uid */
    /* where it runs */
    const char *job_dir;          /* its directory: logs, started, status.json */
    const char *work_dir;         /* the host directory bound on /work */
    const char *work_copy_from;   /* an array task's: its array's files, copied there first; or NULL */
    const char *root_mount;       /* the shared mount point of every job's root */
    const char *cgroup_root;      /* cgroup.root */
    const char *io_dev;           /* the block device of /work for --max-iobps ("" none) */
    const char *log_budget;       /* the owner's log budget file ("" or NULL: none) */
    /* its runtime (docs/runtimes.md): NULL = the host's system directories */
    const char *system_root;
    const jobreq_pair *runtime_env; /* the runtime's variables, before the job's own */
    size_t nruntime_env;
    /* its volumes at /volumes/NAME (volumes.c resolves them), after the GPU binds */
    const spec_mount *volumes;
    size_t nvolumes;
    /* settings */
    uint64_t stop_grace_s;        /* jobs.stop_grace_s */
    uint64_t tmp_size_mb;         /* jobs.tmp_size_mb */
    uint64_t ptys_max;            /* jobs.ptys_max */
    uint64_t nofile_soft;         /* the job's soft RLIMIT_NOFILE: joblet's own before it raised it; 0 = as inherited */
    uint64_t nofile_hard;         /* and the hard one (joblet's) */
    bool kernel_aio;              /* jobs.kernel_aio */
    uint64_t attach_wait_s;       /* jobs.attach_wait_s: a terminal job's wait for its first attach */
    uint64_t log_floor;           /* output stops below this much free space; 0 never */
    /* the machine */
    spec_gpu_host gpu;            /* for a job with grants; its online_cpus for every job with Slurm's
                                   * variables (the CPUs of one without a cpuset: SLURM_CPUS_ON_NODE) */
    spec_gvisor gvisor;           /* for a job whose request asks for gVisor */
    const spec_net *net;          /* a job on a network of joblet's (core/networks.c placed it);
                                   * NULL: network none or host, as the request says */
    /* variables joblet gives this job (a job array's task: its ids), after JOB_ID and before
     * the job's own, which win */
    const jobreq_pair *given_env;
    size_t ngiven_env;
    /* joblet-srun on the host (slurm/srun_main.c), bound in a job with Slurm's variables; NULL:
     * none (the job's srun is what its root has, if any) */
    const char *srun;
} spec_ctx;

/* The job's spec, every string and list owned by *out (spec_free). On failure (the GPU part
 * cannot be made, gVisor asked for and missing) -1 with e filled, and *out holds nothing. */
int spec_build(const spec_ctx *c, job_spec *out, jerr *e);

#endif
