/* The "rnx volume" commands (cmd_volume.c). */
#ifndef JOBLET_CMD_VOLUME_H
#define JOBLET_CMD_VOLUME_H

#include "cli.h"

/* The "volume" command group; argv[0] is "volume". */
int cmd_volume(rnx_ctx *ctx, int argc, char **argv);

#endif
