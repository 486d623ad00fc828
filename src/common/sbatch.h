/* A batch script written for Slurm, read as sbatch reads it: the interpreter of its "#!" line,
 * its #SBATCH lines up to the first command, and sbatch's options on the command line (which
 * win over the script's), turned into the flags of `rnx job run` that mean the same
 * (cli/cmd_batch.c runs them; docs/batch.md, "Slurm's batch scripts"). What has no meaning on
 * one joblet machine (a partition, an account, an output file pattern) is kept as a note to
 * show; what joblet cannot honour (two nodes, two tasks) is refused, naming the line
 * and the option. Pure: no daemon state, no syscall, no environment read. */
#ifndef JOBLET_SBATCH_H
#define JOBLET_SBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "err.h"

/* What an option sets, once: the script's value unless the command line gives one. */
enum sbatch_slot {
    SB_ARRAY, SB_NAME, SB_TIME, SB_MEM, SB_MEM_PER_CPU, SB_MEM_PER_GPU, SB_CPUS, SB_GPUS, SB_GPU_TYPE,
    SB_DEPENDENCY, SB_BEGIN, SB_SIGNAL, SB_PRIORITY, SB_WORKDIR, SB_EXPORT,
    SB_NSLOTS
};

typedef struct sbatch_list {
    char **v;
    size_t n, cap;
} sbatch_list;

typedef struct sbatch_plan {
    /* each slot's value as rnx takes it ("3600s", "2048", "0-9%2"); "" when the option says
     * "none" (--time=UNLIMITED, --mem=0); NULL when not given */
    char *slot[SB_NSLOTS];
    /* where each slot was set, as messages name it: "line 3: #SBATCH --array=0-9%2" (a
     * script's) or "--array=0-9%2" (the command line's); NULL with its slot */
    char *slot_where[SB_NSLOTS];
    /* --export's variables: "NAME=VALUE", or "NAME" alone (its value from the submitting
     * environment, which the caller reads); empty for NONE */
    sbatch_list export_vars;
    /* flags of `rnx job run` given as they are (--runtime=..., --upload=..., -f), in order */
    sbatch_list rnx;
    sbatch_list rnx_where; /* where each of rnx was given, as slot_where */
    sbatch_list notes;     /* "line 3: #SBATCH --partition=gpu: ..." for options with no effect here */
    /* slots (bit 1 << slot) whose rnx flag is not emitted: the script's, where the command line
     * gives that flag of rnx job run itself (-J in the script, --name=... on the command line:
     * the command line's wins, as a slot it sets does) */
    unsigned unsaid;
    char *interp, *interp_arg; /* the "#!" line's interpreter and its one argument (or NULL) */
    bool wrap;             /* --wrap=CMD: no script; the command runs under /bin/sh -c */
    char *wrap_cmd;
} sbatch_plan;

void sbatch_free(sbatch_plan *p);

/* sbatch's command line: options from argv[0] on, up to the first word that is not one (the
 * script) or "--". Returns how many words were options, or -1 with e set. A long option sbatch
 * does not have but `rnx job run` does (--runtime, --upload, --network...) goes to p->rnx. */
int sbatch_args(sbatch_plan *p, int argc, char *const *argv, time_t now, jerr *e);

/* The script: its "#!" line (refused without one, as sbatch does, and with DOS line ends) and
 * its #SBATCH lines, read up to the first line that is neither blank nor a comment. */
int sbatch_script(sbatch_plan *p, const char *text, size_t len, time_t now, jerr *e);

/* The command line's plan over the script's: every slot the command line set wins, --export
 * and the rnx flags of a name it gives replace the script's. cl is emptied into p. */
void sbatch_merge(sbatch_plan *p, sbatch_plan *cl);

/* Whether the plan's rnx flags (given as they are) include flag ("--name"). */
bool sbatch_rnx_gives(const sbatch_plan *p, const char *flag);

/* The flags of `rnx job run` the plan comes to, in order, each "--flag=value" (or a switch):
 * the slots', --slurm-env (the job sees SLURM_JOB_ID and the rest: exec/spec_build.c), --env
 * for each --export NAME=VALUE, then the rnx flags. Export variables given by name only are
 * left out (the caller adds them with their values). where (NULL: not wanted) gets, for each
 * flag, where it was given (slot_where, rnx_where; "" for --slurm-env, which nothing gave). */
void sbatch_flags(const sbatch_plan *p, sbatch_list *out, sbatch_list *where);

/* The flags of `rnx job run` (flags->v, each "--flag=value" or a switch) read as rnx job run
 * reads them, through the request's schema (common/jobreq.h: jobreq_set_text, the --env pairs),
 * then held to the rules between fields (jobreq_check_submitted): so that what rnx job run would
 * refuse is refused here naming where each was given (where->v[i], flags->v[i]'s: "line 3:
 * #SBATCH --array=5-3: '5-3': a range runs ..."; a rule between fields names where its field
 * was set). Flags that are rnx's own (--upload, --follow, --wait) are left to it. 0, or -1. */
int sbatch_check(const sbatch_list *flags, const sbatch_list *where, time_t now, jerr *e);

/* Slurm's memory: a number with K, M (the default), G or T: megabytes, rounded up; -1 when
 * malformed. */
long long sbatch_mb(const char *s);
/* --gpus' "N", "TYPE:N" or "TYPE" (one), and a gres' part after "gpu:": the count and the type
 * ("" none); false when malformed (a count from 1 to 1024). */
bool sbatch_gpus(const char *s, long long *n, char *type, size_t tlen);

void sbatch_list_add(sbatch_list *l, char *s);  /* takes s */
void sbatch_list_free(sbatch_list *l);

#endif
