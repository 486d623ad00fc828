/* The cgroup manager on cgroup2-only hosts (cgroup_layout.h): limits and statistics on a
 * cgroup2 directory, the eBPF device filter attached to it. For cgroup.c. */
#ifndef JOBLET_CGROUP_V2_H
#define JOBLET_CGROUP_V2_H

#include "cgroup_layout.h"

extern const cg_layout_ops cg_ops_v2;

#endif
