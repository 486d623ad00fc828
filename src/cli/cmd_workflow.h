/* The "rnx workflow" commands (cmd_workflow.c). */
#ifndef JOBLET_CMD_WORKFLOW_H
#define JOBLET_CMD_WORKFLOW_H

#include "cli.h"

/* The "workflow" command group; argv[0] is "workflow". */
int cmd_workflow(rnx_ctx *ctx, int argc, char **argv);

#endif
