/* The cgroup manager on cgroup2-only hosts (cgroup_layout.h): limits and statistics on a
 * cgroup2 directory, the eBPF device filter attached to it. For cgroup.c. */
#ifndef JOBLET_CGROUP_V2_H
#define JOBLET_CGROUP_V2_H

#include "cgroup_layout.h"

extern const cg_layout_ops cg_ops_v2;
/* The eBPF device filter on the job's cgroup2 directory: v2's, and hybrid's (cgroup_v1.c). */
int cgv2_set_devices(const cg_job *j, int prog, const cg_dev_rule *rules, size_t n, jerr *e);

#endif
