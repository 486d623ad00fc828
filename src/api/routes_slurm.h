/* POST /v1/slurm/tasks (routes_slurm.c; docs/slurm.md, "The SPANK plugin"): a Slurm task run as
 * a joblet job, asked by joblet's SPANK plugin from the task's own process. */
#ifndef JOBLET_ROUTES_SLURM_H
#define JOBLET_ROUTES_SLURM_H

#include "http.h"

enum MHD_Result routes_slurm_task(request *r);

#endif
