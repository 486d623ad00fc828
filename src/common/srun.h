/* Slurm's srun inside a joblet job: its command line, read as srun reads it, turned into what the
 * job's one task gets (slurm/srun_main.c runs it; docs/batch.md, "srun in a batch job"). A
 * joblet job is one task on one machine with everything the job has, so a step is that task:
 * one task and one node are honoured, more are refused; the task's output, error and input
 * files, its labels, directory and environment are honoured; a step's share of the job's GPUs
 * is the GPUs it sees (srun_gpus_pick: steps running at once see different ones), of its CPUs
 * or memory noted when it is less than the job has (the task has the job's); more than the job
 * has is refused, and a step's time limit is noted (the job's applies); placement and
 * accounting options a lone task meets anyway are taken without a word. Pure: no syscall, no
 * environment read (the caller passes what the job has, or how to look its variables up). */
#ifndef JOBLET_SRUN_H
#define JOBLET_SRUN_H

#include <stdbool.h>

#include "err.h"
#include "sbatch.h"

/* What the job has, from its SLURM_* variables: -1 when the job does not say (no limit; GPUs
 * are 0 then: a job without them has none). */
typedef struct srun_job {
    long long cpus, gpus, mem_mb;
} srun_job;

/* The job's srun_job from its variables as get (getenv, or a test's table) gives them: what its
 * node has, as joblet tells every job with Slurm's variables (exec/spec_build.c: the CPUs,
 * memory and GPUs it really has, however it came to have them), SLURM_CPUS_ON_NODE and
 * SLURM_GPUS_ON_NODE, else what it asked for, SLURM_CPUS_PER_TASK and SLURM_GPUS (a task is
 * the job's one); SLURM_MEM_PER_NODE. A value that is not a whole number does not say. */
srun_job srun_job_from_env(char *(*get)(const char *name));

typedef struct srun_plan {
    int cmd;                 /* argv index of the command (argc when none: refused) */
    bool label;              /* -l: "0: " before every line of output and error */
    char *out, *err, *in;    /* -o, -e, -i: file name patterns (srun_file_name); NULL: the job's own */
    bool append;             /* --open-mode=append */
    char *chdir;             /* -D */
    bool export_none;        /* --export=NONE or names without ALL: only SLURM_* and those named */
    sbatch_list export_vars; /* --export's "NAME=VALUE", or "NAME" (its value from srun's environment) */
    sbatch_list notes;       /* "--time=5: ..." for what the task does not get as asked */
    char info;               /* 'V' (--version) or 'h' (--help, --usage): say what srun is, run nothing */
    long long gpus;          /* the GPUs asked for (1 to the job's): the step sees that many, none
                              * another running step holds (srun_gpus_pick); 0: none asked, it sees
                              * the job's, whoever else uses them */
    bool overlap;            /* --overlap: it sees GPUs others may hold, and holds none (as Slurm's
                              * steps that share their resources) */
} srun_plan;

void srun_free(srun_plan *p);

/* srun's command line (argv[0] is the first option or the command): its options up to the
 * command (or "--"), switches alone or together (-lu) as getopt reads them. 0 with p filled
 * (p->info set, and no command, for --version and --help), or -1 with e set: an option srun
 * does not have, a value out of form, more than one task or node, a command missing. */
int srun_args(srun_plan *p, int argc, char *const *argv, const srun_job *job, jerr *e);

/* An -o/-e/-i pattern with srun's substitutions for the one task of a step: %j the job id, %J
 * the job and step ids (ID.STEP), %s the step, %t task and %n node (0), %N the host name, %u the
 * user, %x the job name, %A %a the array's job and task ids, %% a '%'; a number after '%' pads
 * with zeros (%3t: 000). The names' values come from the caller (NULL: "", a step NULL: 0). NULL
 * when the result would be longer than len. */
typedef struct srun_names {
    const char *job_id, *host, *user, *job_name, *array_job_id, *array_task_id, *step_id;
} srun_names;
char *srun_file_name(const char *pattern, const srun_names *n, char *out, size_t len);

/* Slurm's host list, as `scontrol show hostnames` expands it: names separated by commas, each
 * with at most one bracket of numbers and ranges ("node[01-03,7]-ib,gpu5": node01-ib, node02-ib,
 * node03-ib, node7-ib, gpu5; a range keeps its first number's zero padding). 0 with each name
 * added to out, or -1 with e set: a bracket not closed, a range backwards or not of numbers,
 * two brackets in a name, more than SRUN_HOSTS_MAX names. */
#define SRUN_HOSTS_MAX 65536

/* The GPUs a step with a share of n takes: the first n of the job's (visible: its
 * CUDA_VISIBLE_DEVICES, comma separated: 0,1,... or UUIDs) that no step running now holds
 * (taken: the ones held, comma separated; NULL or "" none), comma separated in out. 0 with out
 * set; 1 when fewer than n are free now (the step waits for them, as Slurm's does); -1 when the
 * job has fewer than n, or out is too short. */
int srun_gpus_pick(const char *visible, const char *taken, long long n, char *out, size_t len);
int srun_hostnames(const char *list, sbatch_list *out, jerr *e);

#endif
