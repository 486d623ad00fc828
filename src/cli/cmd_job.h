/* The "rnx job" commands (cmd_job.c). */
#ifndef JOBLET_CMD_JOB_H
#define JOBLET_CMD_JOB_H

#include "cli.h"

/* The "job" command group; argv[0] is "job". */
int cmd_job(rnx_ctx *ctx, int argc, char **argv);

#endif
