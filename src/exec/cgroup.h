/* Cgroups for one job on any of the three host layouts.
 *
 *   v2      one cgroup2 hierarchy at /sys/fs/cgroup; limits via cpu.max, memory.max, ...
 *   hybrid  v1 controllers under /sys/fs/cgroup/<ctrl> hold the limits, and the cgroup2
 *           mount (usually /sys/fs/cgroup/unified) carries the eBPF device filter
 *   v1      v1 controllers only; devices.deny/allow is the device filter
 *
 * The layout is read from /proc/self/mountinfo and confirmed with statfs magic numbers, once:
 * cg_host_detect picks the manager of that layout (cg_host.ops, cgroup_layout.h; v2's in
 * cgroup_v2.c, v1's and hybrid's in cgroup_v1.c) and nothing after it asks which layout it is.
 *
 * A job's cgroups come one of two ways:
 *   made       joblet makes "<root>/user-<uid>/<name>" in every hierarchy used (root defaults
 *              to "joblet"), sets the spec's limits there and removes it after the job; the
 *              level of the user who submitted it holds all that user's jobs, so that its
 *              pids.max bounds the host tasks of all of them together (cg_user_*).
 *   delegated  someone else made them for this one job and gives their paths (cg_given:
 *              Slurm's step cgroup; a test's). Their limits are their maker's: joblet makes no
 *              cgroup, sets no limit and removes nothing. It still moves the job in, reads its
 *              statistics, kills all in it, and applies its device filter: on v2 and hybrid
 *              hosts the eBPF program is attached to the given cgroup2 directory (with
 *              BPF_F_ALLOW_MULTI, so it can only narrow what the maker allows) and detached
 *              again by cg_destroy; on v1 hosts devices.deny/allow are written to the given v1
 *              devices cgroup (a v1 list can only narrow too) and stay after the job, as the
 *              cgroup is the job's alone. A filter is required as for a made cgroup: without a
 *              cgroup2 directory (v2, hybrid) or a devices cgroup (v1) the job does not start. */
#ifndef JOBLET_CGROUP_H
#define JOBLET_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

enum cg_layout { CG_V2, CG_HYBRID, CG_V1 };
typedef struct cg_layout_ops cg_layout_ops; /* one per layout: cgroup_layout.h */

enum cg_ctrl { CGC_CPU, CGC_CPUACCT, CGC_MEMORY, CGC_PIDS, CGC_BLKIO, CGC_CPUSET, CGC_DEVICES, CGC_N };

typedef struct cg_host {
    enum cg_layout layout;
    const cg_layout_ops *ops; /* the layout's manager, chosen by cg_host_detect */
    char unified[256];        /* cgroup2 mount point, "" when none */
    char v1[CGC_N][256];      /* v1 mount point per controller, "" when absent (always "" on v2) */
    char freezer[256];        /* the v1 freezer's mount point, "" when absent: a delegated job joins
                              * its maker's there (Slurm's proctrack/cgroup) */
    bool freezer_jobs;        /* joblet makes each job a freezer cgroup of its own under root there
                              * (rnx job suspend): a v1-only host, which has no cgroup.freeze */
    char root[96];            /* name of the parent cgroup of all jobs, e.g. "joblet"; a user's
                              * level is a host of its own, "joblet/user-1001" (cg_user_host) */
} cg_host;

typedef struct cg_limits {
    uint32_t cpu_pct;         /* 0 = unlimited; 100 = one core (period 100 ms) */
    uint64_t mem_bytes;       /* 0 = unlimited */
    uint64_t swap_bytes;      /* swap allowed on top of mem_bytes; 0 = none (only when mem set) */
    uint64_t pids_max;        /* 0 = unlimited */
    uint64_t io_bps;          /* 0 = unlimited; applied to read and write on io_dev */
    char io_dev[32];          /* "major:minor" of a whole block device; required when io_bps */
    char cpus[256];           /* cpuset list; "" = all of the parent's */
    char mems[64];            /* memory nodes; "" = all of the parent's */
} cg_limits;

/* One device rule. type 'c' or 'b'; major/minor -1 = any; access a subset of "rwm". */
typedef struct cg_dev_rule {
    char type;
    int64_t major, minor;
    char access[4];
} cg_dev_rule;

/* Cgroups someone else made for one job (delegated mode): absolute paths, each below the
 * host's mount of its hierarchy, "" for a hierarchy not given. The job joins exactly these;
 * for a hierarchy not given it stays where its shim is. */
typedef struct cg_given {
    char unified[320];        /* a cgroup2 directory */
    char v1[CGC_N][320];      /* a directory per v1 controller (co-mounted ones may repeat it) */
    char freezer[320];        /* a v1 freezer directory the job joins and nothing else: not read, not
                              * killed through, never removed (Slurm tracks a step's processes there) */
} cg_given;

typedef struct cg_job {
    const cg_host *host;
    bool delegated;           /* made by cg_job_given: not joblet's to limit or remove */
    bool dev_attached;        /* delegated: dev_prog is attached to unified_path (cg_destroy detaches) */
    int dev_prog;
    char name[80];
    char unified_path[320];   /* "" when no cgroup2 hierarchy is used */
    char v1_path[CGC_N][320]; /* "" for controllers not used */
    char freezer_path[320];   /* the job's v1 freezer directory, or "": made with the others where the
                              * host's freezer_jobs says so, else a delegated job's given one,
                              * which cg_enter joins too and nothing else touches */
    char cpu_level[320];      /* "" or, for a made job with no cgroup of its own in the v1 cpu
                              * hierarchy (no CPU limit), its user's level there, which cg_enter
                              * joins instead and nothing else touches: not the job's to read,
                              * kill through or remove (cg_job_cpu_level) */
} cg_job;

typedef struct cg_stats {
    uint64_t cpu_usage_ns;
    uint64_t mem_current_bytes;
    uint64_t mem_peak_bytes;
    uint64_t oom_kills;       /* processes killed by the memory limit */
    uint64_t pids_current;
    uint64_t io_read_bytes, io_write_bytes;
} cg_stats;

/* Reads the layout only (what a shim needs; the daemon has prepared the parents). */
int cg_host_detect(cg_host *h, const char *root, jerr *e);
/* Reads the layout and prepares the parent cgroup(s) "<root>" (enables v2 controllers in
 * subtree_control; copies cpuset.cpus/mems into a v1 parent). Idempotent. */
int cg_host_init(cg_host *h, const char *root, jerr *e);
const char *cg_layout_name(enum cg_layout l);
/* Makes task migration between cgroups cheap host-wide (mount option favordynmods). */
int cg_favor_dynmods(const cg_host *h, jerr *e);

/* The user's level: a copy of h whose root is "<h's root>/user-<uid>", under which that
 * user's jobs are made (cg_create_for, cg_job_paths). Touches nothing. */
void cg_user_host(const cg_host *h, uint32_t uid, cg_host *out);
/* Makes the user's level where missing (the daemon made h's root) and sets its pids.max:
 * tasks_max host tasks for all the user's jobs and their shims together, 0 = "max". */
int cg_user_prepare(const cg_host *uh, uint64_t tasks_max, jerr *e);
/* Moves the calling process (a job's shim) into "<uh's root>/shims" of the hierarchy that
 * counts tasks (pids on v1 and hybrid hosts, cgroup2 on v2), so that it and everything it
 * forks count for the user. A migration is not held to pids.max, so the level is checked
 * after: when it holds more than its bound the caller goes back out and -1 says so (EAGAIN).
 * 0 without doing anything on a host with no pids controller. */
int cg_user_enter(const cg_host *uh, jerr *e);
/* Moves the calling process (joblet-exec, joblet-copy, a job's shim past SHIM_CPU_JOIN_BYTES of
 * output) into "<uh's root>/shims" of the hierarchies that
 * account CPU but do not count tasks: cpu and cpuacct on v1 and hybrid hosts, and the cgroup2
 * mount of a hybrid one (its cpu.stat), so that the CPU it spends is its user's, not the
 * daemon's. 0 without doing anything on a cgroup2-only host (cg_user_enter did it there). */
int cg_user_enter_cpu(const cg_host *uh, jerr *e);
/* Back out of those (to each hierarchy's root, where a job's init is in a hierarchy it has no
 * directory of its own in): joblet-exec's child, before cg_enter puts it where the job's are
 * (the child has the helper's cgroups, as any child). */
int cg_user_leave_cpu(const cg_host *uh, jerr *e);
/* Back out of the user's level (to the hierarchy's root), once the job has ended: the shim's
 * tidying up (runsc delete) is not the user's to pay for, nor refused at the user's bound. */
void cg_user_leave(const cg_host *uh);
/* A job's shim into its user's level: what cg_user_prepare and cg_user_enter do, in the fewest
 * steps where the level is there already (every job of a user but the first): pids.max written
 * and the shim moved into "shims", the level made only when one of them is missing. With no
 * bound (tasks_max 0) the level cannot be over it and nothing is read back. A level found in
 * the tasks hierarchy may still miss another hierarchy's directory (made a moment ago by
 * another shim, or a hierarchy mounted since): cg_create_for then fails with ENOENT, and the
 * caller runs cg_user_prepare and tries once more. */
int cg_user_join(const cg_host *uh, uint64_t tasks_max, jerr *e);

/* The names of the v1 controllers ("memory", "cpu", ...), as their mounts' options spell them;
 * cg_ctrl_by_name gives CGC_N for a name that is none. */
const char *cg_ctrl_name(enum cg_ctrl c);
enum cg_ctrl cg_ctrl_by_name(const char *name);
/* Whether g names any directory. */
bool cg_given_any(const cg_given *g);
/* The cgroups process pid is in, as given ones (what the host's hierarchies name; a hierarchy's
 * root is not named): a delegated job's, read from its init (a Slurm task: Slurm's directories
 * and joblet's cgroup2 one). 0, or -1 with errno when /proc/PID/cgroup cannot be read. */
int cg_given_of_pid(const cg_host *h, pid_t pid, cg_given *g);

/* Delegated mode: points j at the cgroups g names for job name, made by someone else. Each
 * path, resolved (realpath), must be an existing cgroup directory below h's mount of its
 * hierarchy (not the mount itself), of a hierarchy h's layout uses; nothing is made or changed. */
int cg_job_given(const cg_host *h, const char *name, const cg_given *g, cg_job *j, jerr *e);
/* Fills paths only, touches nothing: used to look at an existing job's cgroup. */
void cg_job_paths(const cg_host *h, const char *name, cg_job *j);
/* The same for a job of user uid: uh gets the user's level (cg_user_host), j points at it. */
void cg_user_job_paths(const cg_host *h, uint32_t uid, const char *name, cg_host *uh, cg_job *j);
/* mkdir the job's cgroup in every hierarchy used, leaving out v1 controllers that none of
 * l's limits needs (l may be NULL: all). An existing directory is an error. A job left without
 * a directory in the v1 cpu hierarchy joins its user's level there (cg_job_cpu_level), which
 * must exist (ENOENT: cg_user_prepare makes it). */
int cg_create_for(const cg_host *h, const char *name, const cg_limits *l, cg_job *j, jerr *e);
/* One user's share may never starve another's: on v1 and hybrid hosts a job that has no cpu
 * cgroup of its own (no CPU limit; cpu not co-mounted with a controller it keeps) would compete
 * per thread with every other job. j (made, not delegated) is pointed at its host's level in the
 * v1 cpu hierarchy instead, "<cpu mount>/<root>", its user's level for a job of a user: the
 * kernel then splits the CPU between users' levels equally, however many jobs each runs, as
 * cgroup2's cpu controller does on v2 hosts. Nothing is made or checked; nothing on v2 hosts. */
void cg_job_cpu_level(cg_job *j);
/* A delegated job's limits are its cgroup's maker's: none is set, and a spec that asks for
 * one is refused rather than silently not held. */
/* The limits of a job whose cgroup cg_create_for has just made (every file still at the
 * kernel's default: nothing is lifted first, nothing written twice). */
int cg_apply_limits(const cg_job *j, const cg_limits *l, jerr *e);
/* Whether l asks for any limit. */
bool cg_limits_any(const cg_limits *l);
/* Deny-by-default device filter allowing exactly rules[]: a BPF_PROG_TYPE_CGROUP_DEVICE
 * program attached to the cgroup2 directory where one is used, and devices.deny "a" +
 * devices.allow on the v1 devices controller on v1-only hosts. prog >= 0 is that program
 * already loaded for rules (the daemon loads it once); prog < 0 loads one here. */
int cg_set_devices_prog(cg_job *j, int prog, const cg_dev_rule *rules, size_t n, jerr *e);
/* Moves the calling process into the job's cgroup in every hierarchy (and its cpu_level). */
int cg_enter(const cg_job *j, jerr *e);
int cg_read_stats(const cg_job *j, cg_stats *s);
/* What a job's end record keeps (cpu, memory peak, OOM kills, I/O): cg_read_stats without the
 * counters of now (mem_current_bytes, pids_current stay 0), by the shim that made the cgroup
 * and has not removed it yet. */
int cg_read_final_stats(const cg_job *j, cg_stats *s);
/* Number of processes still in the job's cgroup, -1 when unknown. */
int cg_nprocs(const cg_job *j);
/* SIGKILL everything in the cgroup (cgroup.kill where present, else by listing pids); a job frozen
 * in its own v1 freezer cgroup is thawed once the kills are queued, as it would not die frozen. */
int cg_kill_all(const cg_job *j);
/* Freezes (frozen) or thaws every process of the job (rnx job suspend/resume): cgroup.freeze of
 * its cgroup2 directory (v2, hybrid), else the v1 freezer.state of its freezer directory (its own
 * on a v1-only host, or a delegated job's). Only asks: the kernel freezes asynchronously, and
 * cg_frozen says when it is done (a v1 freezer left FREEZING is asked again: core/job_freeze.h).
 * 0, or -1 with e (ENOTSUP: the job has no freezer: a v1-only host without a freezer mount, or a
 * job started before joblet made one for each job). */
int cg_freeze(const cg_job *j, bool frozen, jerr *e);
/* 1 frozen, 0 not, -1 unknown (no freezer, or unreadable). */
int cg_frozen(const cg_job *j);
/* rmdir every directory; retries briefly while the kernel lets go of dead tasks. A delegated
 * job's directories stay (they are their maker's): only joblet's device filter is detached. */
int cg_destroy(cg_job *j, jerr *e);
/* "major:minor" of the whole block device that holds path (a partition maps to its disk). */
int cg_block_device_of(const char *path, char *out, size_t outlen, jerr *e);
/* Standard devices every job may use: null zero full random urandom tty ptmx pts/N. */
extern const cg_dev_rule cg_default_devices[];
extern const size_t cg_default_devices_n;

/* Shared by cgroup.c, cgroup_v1.c and cgroup_v2.c only; not for other callers. Their file
 * helpers are in cgroup_fs.h, the managers' table in cgroup_layout.h. */
#define CG_CPU_PERIOD_US 100000

#endif
