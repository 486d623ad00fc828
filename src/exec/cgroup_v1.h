/* The cgroup manager on v1 and hybrid hosts (cgroup_layout.h): limits, statistics and the
 * device list on the v1 controllers; on hybrid hosts the cgroup2 tree carries the eBPF
 * device filter and counts CPU time. For cgroup.c (and the device-filter probe). */
#ifndef JOBLET_CGROUP_V1_H
#define JOBLET_CGROUP_V1_H

#include "cgroup_layout.h"

extern const cg_layout_ops cg_ops_v1, cg_ops_hybrid;
/* devices.deny "a", then devices.allow for each rule, on a v1 devices cgroup. */
int cgv1_set_devices(const char *dir, const cg_dev_rule *rules, size_t n, jerr *e);

#endif
