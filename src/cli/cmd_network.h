/* The "rnx network" commands (cmd_network.c). */
#ifndef JOBLET_CMD_NETWORK_H
#define JOBLET_CMD_NETWORK_H

#include "cli.h"

/* The "network" command group; argv[0] is "network". */
int cmd_network(rnx_ctx *ctx, int argc, char **argv);

#endif
