/* "rnx job wait" (cmd_wait.c): blocks until jobs end; exits with their exit status. */
#ifndef JOBLET_CMD_WAIT_H
#define JOBLET_CMD_WAIT_H

#include "cli.h"

/* Exit status of rnx job wait when --timeout passed first (as timeout(1)), and when rnx itself
 * failed (a job that does not exist, joblet unreachable). */
#define WAIT_TIMED_OUT 124
#define WAIT_FAILED 125

/* argv[0] is "wait". */
int cmd_job_wait(rnx_ctx *ctx, int argc, char **argv);

#endif
