/* "rnx job metrics" (cmd_metrics.c). */
#ifndef JOBLET_CMD_METRICS_H
#define JOBLET_CMD_METRICS_H

#include "cli.h"

/* argv[0] is "metrics". */
int cmd_job_metrics(rnx_ctx *ctx, int argc, char **argv);

#endif
