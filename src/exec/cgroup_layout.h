/* The cgroup manager's implementations, one per host layout (cgroup.h): cgroup_v2.c has v2's,
 * cgroup_v1.c v1's and hybrid's. cg_host_detect picks one once (cg_host.ops) and cgroup.c
 * asks it for everything that differs between layouts; no other code looks at the layout.
 * For cgroup.c, cgroup_v1.c and cgroup_v2.c only; not for other callers. */
#ifndef JOBLET_CGROUP_LAYOUT_H
#define JOBLET_CGROUP_LAYOUT_H

#include <stdbool.h>

#include "cgroup.h"

/* Which directories of a user's level cg_user_prepare has just made (a level found made
 * is ready, but for a cgroup2 level that offers no controller yet). */
typedef struct cg_level_made {
    bool unified;
    bool v1[CGC_N];
} cg_level_made;

struct cg_layout_ops {
    enum cg_layout layout;
    /* After the mounts are found: leaves out those the layout does not use (hybrid's v1
     * devices controller: its device filter is the eBPF program on the cgroup2 tree). */
    void (*use_mounts)(cg_host *h);
    /* The parent of all jobs, made in every hierarchy: controllers offered to children
     * (v2), cpus and mems filled (v1 cpuset). */
    int (*prepare_root)(const cg_host *h, jerr *e);
    /* The same for a user's level, "<mount>/<uh's root>" in each hierarchy. */
    int (*prepare_level)(const cg_host *uh, const cg_level_made *made, jerr *e);
    /* The mount whose pids.max bounds the tasks of a user's level; NULL when none does. */
    const char *(*tasks_mount)(const cg_host *h);
    /* Leaves out of a job about to be made the v1 directories that none of l's limits
     * needs (each costs a cgroup); l is never NULL. */
    void (*trim)(cg_job *j, const cg_limits *l);
    int (*apply_limits)(const cg_job *j, const cg_limits *l, jerr *e);
    /* Counters the layout has; the job's primary directory exists (checked by cgroup.c).
     * current: also the counters of now (memory and tasks in use), else they stay 0. */
    int (*read_stats)(const cg_job *j, cg_stats *s, bool current);
    /* The deny-by-default device filter allowing exactly rules[]: prog >= 0 is it loaded. */
    int (*set_devices)(const cg_job *j, int prog, const cg_dev_rule *rules, size_t n, jerr *e);
};

#endif
