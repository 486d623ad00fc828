/* The "rnx job" commands (cmd_job.c). */
#ifndef JOBLET_CMD_JOB_H
#define JOBLET_CMD_JOB_H

#include "cli.h"
#include "client.h"

/* The "job" command group; argv[0] is "job". */
int cmd_job(rnx_ctx *ctx, int argc, char **argv);
/* Follows a submitted job's output as `rnx job run --follow` does; its exit code. */
int cmd_job_follow(const rnx_ctx *ctx, rnx_client *c, const char *id);

#endif
