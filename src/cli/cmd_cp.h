/* rnx job cp (cmd_cp.c): files and directories out of a job and into it. */
#ifndef JOBLET_CMD_CP_H
#define JOBLET_CMD_CP_H

#include "cli.h"

/* argv[0] is "cp". */
int cmd_job_cp(rnx_ctx *ctx, int argc, char **argv);

#endif
