/* The complete, validated description of one job that the daemon hands to the shim
 * (JSON in a memfd, the shim's fd SHIM_SPEC_FD). The executor applies it and decides nothing:
 * everything a job gets — limits, devices, mounts, environment — is spelled out here. */
#ifndef JOBLET_SPEC_H
#define JOBLET_SPEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "cgroup.h"

typedef struct spec_mount {
    char *src;      /* host path */
    char *dst;      /* path inside the job */
    bool rw;
} spec_mount;

/* Extra steps of the job's filesystem plan, run in order after the standard ones and the
 * binds: GPU device nodes, the job's own /proc/driver/nvidia, driver library links. */
enum spec_op_kind { SPEC_DEVNODE, SPEC_TMPFS, SPEC_FILE, SPEC_SYMLINK, SPEC_READONLY };
typedef struct spec_op {
    enum spec_op_kind kind;
    char *src;             /* DEVNODE: the host node, checked first; SYMLINK: the link's target */
    char *dst;             /* inside the job */
    char *data;            /* FILE: the content */
    uint32_t major, minor; /* DEVNODE: the numbers the host node must have */
} spec_op;

/* A job on a network of joblet's (docs/networks.md); the spec's net is NULL with network none
 * (loopback only) or host. The shim has joblet-net make its veth pair (one end eth0 in the
 * job's network namespace) while the job's init waits, or, under gVisor, in a namespace it
 * made before runsc starts; the daemon allocated the addresses and made the bridge and rules. */
typedef struct spec_net {
    char *network;     /* its name, for messages */
    char *helper;      /* the joblet-net program */
    char *host_if;     /* the host side of its veth pair */
    char *bridge;      /* a bridge network's Linux bridge, which the host side joins; NULL isolated */
    char *addr;        /* eth0's "10.217.0.5/16" */
    char *host_addr;   /* isolated: the host side's "10.216.0.4/31" (point to point); NULL bridge */
    char *gateway;     /* the default route's */
    char *hosts_file;  /* a host file bound read-only at /etc/hosts, kept current by joblet (the
                        * network's jobs by name and id); NULL: the job's own (localhost only) */
    char *resolv_file; /* a host file bound read-only at /etc/resolv.conf; NULL: the tree's */
    uint64_t max_bps;  /* bytes/s each way, 0 none (tc, exec/netlink.h) */
} spec_net;

typedef struct job_spec {
    char id[37];
    char *job_dir;       /* host directory: logs, started/status.json */
    char *work_dir;      /* host directory bound on /work (core/workfs.h) */
    char *work_copy_from; /* an array's task: the host directory of its array's files, which the
                           * shim copies into work_dir before the job's first start (workcopy.h);
                           * NULL: none */
    char *root_mount;    /* empty host directory the job's root tmpfs is mounted on, in the
                          * job's own mount namespace (so every job can share one) */
    char *hostname;
    char **argv;         /* NULL-terminated */
    char **env;          /* NULL-terminated "K=V", exactly the job's environment */
    char *workdir;       /* inside the job */
    char *system_root;   /* host directory the job's /usr, /etc, /bin, /lib... come from: a
                          * runtime's rootfs (docs/runtimes.md); NULL or "" = the host's own */
    uid_t uid;
    gid_t gid;
#define SPEC_GROUPS_MAX 256
    gid_t *groups;       /* supplementary groups besides gid; NULL/0: none (joblet's jobs). A
                          * Slurm task keeps the ones Slurm gave its process (core/slurm_task.h) */
    size_t ngroups;
    bool net_host;       /* false: own network namespace: loopback only, or net's veth */
    spec_net *net;
    uint64_t max_runtime_s;
    int warn_signal;         /* --signal: sent to the command warn_s seconds of run time before */
    uint32_t warn_s;         /* the run-time limit (once a run); 0 none */
    uint64_t stop_grace_s;
    uint64_t tmp_size_mb;
    uint64_t ptys_max;       /* the job's devpts instance's max= (jobs.ptys_max); 0 = the kernel's */
    bool kernel_aio;         /* io_setup let through (jobs.kernel_aio, exec/seccomp.c) */
    uint64_t log_max_bytes;  /* per stream (stdout.log, stderr.log); 0 = no cap */
    char log_budget[512];    /* the owner's log budget file (logwriter.h: log_budget), "" none */
    uint64_t log_floor;      /* output stops when the job directory's filesystem has less free; 0 = never */
    uint64_t user_procs_max; /* RLIMIT_NPROC: the processes of the job's uid together; 0 = none */
    uint64_t nofile_soft;    /* RLIMIT_NOFILE's soft value (the hard one stays joblet's): what joblet was
                              * started with, before it raised its own (daemon/main.c); 0 = as inherited */
    uint64_t nofile_hard;    /* and the hard one, joblet's (gVisor's OCI rlimits name both) */
    uid_t owner_uid;         /* who submitted it: its cgroup is made in that user's level (cgroup.h) */
    uint64_t user_tasks_max; /* that level's pids.max: the host tasks of all the user's jobs and
                              * their shims together, gVisor's included; 0 = none (root's) */
    char *cgroup_root;
    cg_given *cgroup_given; /* NULL: the shim makes the job's cgroups under cgroup_root (in
                             * owner_uid's level) and sets limits there. Else the job runs in
                             * these cgroups, made by someone else (cgroup.h, "delegated"):
                             * limits must then be all 0 (they are the maker's), no user level
                             * is made or entered, and the shim stays in the cgroups it was
                             * started in. The hook for Slurm's step cgroup (a SPANK plugin);
                             * today no request of joblet's API sets it. */
    char *step_hook;        /* NULL: none. Else a host program the shim runs (as root, its
                             * output in shim.log) while the job's init waits, its namespaces
                             * and root made, just before it starts the command; the command
                             * starts only when the hook exits 0 (shim_main.c, "hold").
                             * Native isolation only. Used today by nothing but a test. */
    /* A terminal (docs/api.md, "Interactive streams"): with tty the command's stdin, stdout and
     * stderr are a pty made inside the job (exec/console.h), with stdin_open its stdin is a pipe
     * from the shim (else /dev/null); with either the shim listens on SHIM_ATTACH and the
     * command starts once someone attached, or attach_wait_s went by (shim_term.h). Native
     * isolation only. */
    bool tty, stdin_open;
    /* The job's stdin, stdout and stderr are the shim's fds SHIM_STDIO_FD, +1, +2 (shim.h),
     * given by whoever started the shim: a Slurm task's own (core/slurm_task.h), so its output
     * goes where Slurm sends it. Nothing is logged then. Not with a terminal nor gVisor. */
    bool stdio_given;
    uint64_t attach_wait_s;
    cg_limits limits;
    cg_dev_rule *devices;  /* allowed on top of cg_default_devices */
    size_t ndevices;
    spec_mount *mounts;    /* extra read-only/read-write binds (GPU driver, toolkits) */
    size_t nmounts;
    spec_op *ops;
    size_t nops;
    /* gVisor (docs/sandbox.md): with runsc set, the shim renders this spec as an OCI bundle
     * (oci.h) and runs it under runsc (gvisor.h) instead of its own namespaces */
    char *runsc;           /* the runsc program; NULL = native isolation */
    char *runsc_root;      /* runsc --root: its state, under joblet's state directory */
    char *runsc_platform;  /* runsc --platform: ptrace, systrap or kvm */
    bool runsc_nvproxy;    /* --nvproxy=true: the job has GPUs and runsc proxies their driver */
    uid_t runsc_sandbox_uid; /* the host uid (and gid) of the job's sandbox: runsc runs the Sentry
                              * and its helpers as "nobody" of the user namespace the shim makes
                              * for it, which maps that name to this id (oci.h); one of
                              * jobs.uid_range_start's, held by no other unfinished job */
    char *cdi_devices;     /* the job's GPUs as CDI names, comma-separated, for the bundle's
                            * annotation; NULL when none */
} job_spec;

/* The most a shim reads. A spec is mostly argv and env, which execve takes at most 6 MiB
 * of; JSON escapes can make that six times longer. A bound, so that a spec that is not one
 * (a wrong fd, a runaway writer) is refused rather than read whole into memory. */
#define SPEC_MAX_BYTES (64 << 20)

/* A new memfd (close-on-exec) holding s as JSON, or -1. */
int spec_to_fd(const job_spec *s, jerr *e);
/* Reads the spec from fd (from offset 0). On failure s holds nothing (spec_free on it is
 * harmless). */
int spec_load_fd(job_spec *s, int fd, jerr *e);
void spec_free(job_spec *s);

#endif
