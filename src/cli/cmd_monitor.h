/* "rnx monitor status|watch" (cmd_monitor.c). */
#ifndef JOBLET_CMD_MONITOR_H
#define JOBLET_CMD_MONITOR_H

#include "cli.h"

/* argv[0] is "monitor". */
int cmd_monitor(rnx_ctx *ctx, int argc, char **argv);

#endif
