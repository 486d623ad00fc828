/* rnx job exec (docs/cli.md, docs/interactive.md): a new process inside a running job, as
 * docker exec runs one in a container; the stream is a terminal's (cmd_term.h). */
#ifndef JOBLET_CMD_EXEC_H
#define JOBLET_CMD_EXEC_H

#include "cli.h"

/* argv[0] is "exec". */
int cmd_job_exec(rnx_ctx *ctx, int argc, char **argv);

#endif
