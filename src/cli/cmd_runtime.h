/* The "rnx runtime" commands (cmd_runtime.c). */
#ifndef JOBLET_CMD_RUNTIME_H
#define JOBLET_CMD_RUNTIME_H

#include "cli.h"

/* The "runtime" command group; argv[0] is "runtime". */
int cmd_runtime(rnx_ctx *ctx, int argc, char **argv);

#endif
