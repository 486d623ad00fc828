/* Limits, statistics and the device list on cgroup v1 controllers (v1 and hybrid hosts), for
 * cgroup.c. */
#ifndef JOBLET_CGROUP_V1_H
#define JOBLET_CGROUP_V1_H

#include "cgroup.h"

int cgv1_prepare_parent(const cg_host *h, jerr *e);
int cgv1_apply_limits(const cg_job *j, const cg_limits *l, jerr *e);
int cgv1_read_stats(const cg_job *j, cg_stats *s);
int cgv1_set_devices(const char *dir, const cg_dev_rule *rules, size_t n, jerr *e);

#endif
