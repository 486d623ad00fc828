/* "rnx job batch" (cmd_batch.c): a batch script written for Slurm, submitted as sbatch would,
 * its #SBATCH lines read (common/sbatch.h). It plans; `rnx job run` (cmd_job.c) submits. */
#ifndef JOBLET_CMD_BATCH_H
#define JOBLET_CMD_BATCH_H

#include "../common/sbatch.h"
#include "cli.h"

/* argv[0] is "batch". Fills run with the words of the `rnx job run` that submits it ("run",
 * flags, "--", the command), and where (NULL: not wanted) with where each word was given, one
 * for each of run's: "sweep.sh: line 6: #SBATCH --cpus-per-task=4" (a script's), "-c 4" (the
 * command line's), "" (nothing gave it: "run", --slurm-env, the command), so that joblet's
 * refusal of a field names what the user wrote. RNX_OK; -1 after --help; an exit code after
 * printing why. */
int cmd_batch_plan(int argc, char **argv, sbatch_list *run, sbatch_list *where);

#endif
