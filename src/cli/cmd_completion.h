/* rnx completion: the bash and zsh completion scripts, and the candidates they ask rnx for. */
#ifndef JOBLET_CMD_COMPLETION_H
#define JOBLET_CMD_COMPLETION_H

#include "cli.h"

/* rnx completion bash|zsh: prints the script; rnx completion complete -- WORDS...: the
 * candidates for the last of WORDS (the scripts' call). argv[0] is "completion". */
int cmd_completion(rnx_ctx *ctx, int argc, char **argv);

#endif
