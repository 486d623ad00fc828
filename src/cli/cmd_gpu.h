/* The "rnx gpu" commands and "rnx audit" (cmd_gpu.c). */
#ifndef JOBLET_CMD_GPU_H
#define JOBLET_CMD_GPU_H

#include "cli.h"

/* The "gpu" command group; argv[0] is "gpu". */
int cmd_gpu(rnx_ctx *ctx, int argc, char **argv);
/* "rnx audit"; argv[0] is "audit". */
int cmd_audit(rnx_ctx *ctx, int argc, char **argv);

#endif
