/* "rnx console": the web console through a loopback proxy (cmd_console.c, docs/console.md). */
#ifndef JOBLET_CMD_CONSOLE_H
#define JOBLET_CMD_CONSOLE_H

#include "cli.h"

/* argv[0] is "console". */
int cmd_console(rnx_ctx *ctx, int argc, char **argv);

#endif
