/* Limits and statistics on a cgroup2 directory, for cgroup.c. */
#ifndef JOBLET_CGROUP_V2_H
#define JOBLET_CGROUP_V2_H

#include "cgroup.h"

int cgv2_prepare_parent(const char *unified, const char *root, jerr *e);
/* Offers the controllers jobs use to dir's children (cgroup.subtree_control). */
void cgv2_enable_controllers(const char *dir);
int cgv2_apply_limits(const char *dir, const cg_limits *l, jerr *e);
int cgv2_read_stats(const char *dir, cg_stats *s);

#endif
