/* rnx job batch: sbatch for joblet (cmd_batch.h). The script is read here, its #SBATCH lines and
 * the command line become the flags of `rnx job run`, the script goes along as an upload and
 * runs under the interpreter of its "#!" line, in /work, where the job starts. */
#include "cmd_batch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/util.h"
#include "upload.h"

/* A script is read whole, as sbatch reads it; past this it is not a script. */
#define BATCH_SCRIPT_MAX (4u << 20)

static const char batch_help[] =
    "Usage: rnx job batch [OPTIONS] SCRIPT [ARGS...]\n"
    "       rnx job batch [OPTIONS] --wrap=COMMAND\n"
    "\n"
    "Submits a batch script written for Slurm as sbatch does, and prints the job's id. The\n"
    "script must start with #! and its interpreter (#!/bin/bash); its #SBATCH lines, up to\n"
    "its first command, give sbatch's options, and the same options on the command line win\n"
    "over them. The script is sent along (as --upload) and runs as INTERPRETER /work/SCRIPT\n"
    "ARGS..., in /work. The job's name is the script's file name unless -J gives one.\n"
    "\n"
    "sbatch's options, and what each becomes (rnx job run's flags):\n"
    "  -a, --array=LIST[%N]         --array (SLURM_ARRAY_TASK_ID... in each task)\n"
    "  -J, --job-name=NAME          --name (and SLURM_JOB_NAME)\n"
    "  -t, --time=TIME              --max-runtime: MIN, MIN:SEC, H:MIN:SEC, D-H, D-H:MIN,\n"
    "                               D-H:MIN:SEC; UNLIMITED for none\n"
    "  --mem=SIZE                   --max-memory: megabytes, or with K, M, G, T; 0 for none\n"
    "  --mem-per-cpu=SIZE           --max-memory: SIZE times -c\n"
    "  --mem-per-gpu=SIZE           --max-memory: SIZE times the GPUs\n"
    "  -c, --cpus-per-task=N        --max-cpu=N*100 (and SLURM_CPUS_PER_TASK)\n"
    "  -G, --gpus=[TYPE:]N          --gpu=N (--gpu-type=TYPE); also --gpus-per-node,\n"
    "  --gres=gpu[:TYPE][:N]        --gpus-per-task (one task)\n"
    "  -d, --dependency=LIST        --dependency (afterok:ID, afterany:, afternotok:,\n"
    "                               after:, aftercorr:, singleton)\n"
    "  -b, --begin=TIME             --schedule: now+N[minutes|hours|days...], HH:MM[:SS],\n"
    "                               YYYY-MM-DD[THH:MM[:SS]] (local time), midnight, noon...\n"
    "  --signal=[B:]SIG[@SECS]      --signal\n"
    "  --priority=N, --nice[=N]     --priority (a nice of N is a priority of -N)\n"
    "  -D, --chdir=DIR              --workdir\n"
    "  --export=NAME[=VALUE],...    --env (NAME alone: its value here); NONE: none. A job\n"
    "                               never gets this shell's whole environment\n"
    "  -N, --nodes=1, -n, --ntasks=1, --ntasks-per-node=1\n"
    "                               one task on this machine, as every joblet job (more:\n"
    "                               refused)\n"
    "  --wrap=COMMAND               no script: /bin/sh -c COMMAND\n"
    "  -W, --wait                   --wait: exit with the job's exit code once it ended\n"
    "  -H, --hold                   --hold: it waits HELD until rnx job release ID\n"
    "  --parsable, -Q, -v           rnx prints the id alone anyway\n"
    "\n"
    "Options with no meaning on one joblet machine (--partition, --account, --qos,\n"
    "--output, --error, --mail-type, --exclusive, --constraint...) are shown as notes on\n"
    "stderr and ignored; any other option is refused. A long flag of rnx job run that\n"
    "sbatch does not have (--upload, --runtime, --network, --volume, --env, --gpu-memory,\n"
    "--follow...) is taken as rnx job run takes it, on the command line or on an #SBATCH\n"
    "line.\n"
    "\n"
    "The job sees what sbatch tells a job of itself (rnx job run --slurm-env): SLURM_JOB_ID\n"
    "(its number), SLURM_JOB_NAME, SLURM_SUBMIT_DIR=/work, SLURM_NNODES=1, and the CPUs,\n"
    "memory and GPUs it has, asked for or the machine's default (SLURM_CPUS_ON_NODE,\n"
    "SLURM_MEM_PER_NODE, SLURM_GPUS_ON_NODE, SLURM_CPUS_PER_TASK for -c...); an array's\n"
    "tasks SLURM_ARRAY_TASK_ID and the rest. Its srun lines run as they are: joblet's srun,\n"
    "first in the job's PATH, runs a step as the job's one task (-l, -o, -e, -i, -D,\n"
    "--export...; more than one task or node is refused; docs/batch.md).\n"
    "\n"
    "Example:\n"
    "  rnx job batch --upload=data/ sweep.sh      # sweep.sh: #SBATCH --array=0-99%8 ...\n";

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* The --upload flags among the plan's, each listed as rnx job run lists it (upload_add: the
 * path there, a name of its own in /work), after the script's own file, so that one refused
 * names the line that gave it. RNX_OK or an exit code after printing why. */
static int check_uploads(const sbatch_list *flags, const sbatch_list *where, const char *script)
{
    upload_set u;
    jerr e = {0};
    int rc = RNX_OK;
    upload_init(&u);
    if (script && upload_add(&u, script, &e) < 0)
        rc = rnx_usage("job batch: %s", e.msg);
    for (size_t i = 0; i < flags->n && rc == RNX_OK; i++) {
        if (strncmp(flags->v[i], "--upload=", 9) || upload_add(&u, flags->v[i] + 9, &e) == 0)
            continue;
        const char *msg = !strncmp(e.msg, "--upload: ", 10) ? e.msg + 10 : e.msg;
        bool line = script && !strncmp(where->v[i], "line ", 5); /* a script's, else the command line's */
        rc = rnx_usage("job batch: %s%s%s: %s", line ? script : "", line ? ": " : "", where->v[i], msg);
    }
    upload_free(&u);
    return rc;
}

/* run's next word and where it was given (where: NULL, not wanted); takes both. */
static void plan_add(sbatch_list *run, sbatch_list *where, char *word, char *at)
{
    sbatch_list_add(run, word);
    if (where)
        sbatch_list_add(where, at);
    else
        free(at);
}

int cmd_batch_plan(int argc, char **argv, sbatch_list *run, sbatch_list *run_where)
{
    for (int i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(batch_help, stdout);
            return -1;
        }
        if (!strcmp(argv[i], "--"))
            break;
    }
    time_t now = time(NULL);
    sbatch_plan cl = {0}, plan = {0};
    jerr e = {0};
    int rc = RNX_OK;
    int k = sbatch_args(&cl, argc - 1, argv + 1, now, &e);
    if (k < 0) {
        rc = rnx_usage("job batch: %s", e.msg);
        goto out;
    }
    int first = 1 + k;
    const char *script = first < argc ? argv[first] : NULL;
    if (cl.wrap && script) {
        rc = rnx_usage("job batch: --wrap runs its COMMAND and takes no SCRIPT ('%s')", script);
        goto out;
    }
    if (!cl.wrap && !script) {
        rc = rnx_usage("job batch: missing SCRIPT; usage: rnx job batch [OPTIONS] SCRIPT [ARGS...] (or --wrap=COMMAND)");
        goto out;
    }
    if (script) {
        struct stat st;
        if (stat(script, &st) < 0) {
            rc = rnx_usage("job batch: %s: %s", script, strerror(errno));
            goto out;
        }
        if (!S_ISREG(st.st_mode)) {
            rc = rnx_usage("job batch: %s: not a regular file", script);
            goto out;
        }
        if ((size_t)st.st_size > BATCH_SCRIPT_MAX) {
            rc = rnx_usage("job batch: %s: %lld bytes; a batch script is at most %u (send data with --upload)",
                           script, (long long)st.st_size, BATCH_SCRIPT_MAX);
            goto out;
        }
        size_t len = 0;
        char *text = read_file(script, &len);
        if (!text) {
            rc = rnx_usage("job batch: %s: %s", script, strerror(errno));
            goto out;
        }
        int r = sbatch_script(&plan, text, len, now, &e);
        free(text);
        if (r < 0) {
            rc = rnx_usage("job batch: %s: %s", script, e.msg);
            goto out;
        }
    }
    sbatch_merge(&plan, &cl);
    /* sbatch's default name, unless rnx job run's --name gives one (in the script or here) */
    if (!plan.slot[SB_NAME] && !sbatch_rnx_gives(&plan, "--name"))
        plan.slot[SB_NAME] = xstrdup(script ? base_name(script) : "wrap");
    for (size_t i = 0; i < plan.notes.n; i++)
        fprintf(stderr, "rnx: note: %s\n", plan.notes.v[i]);
    sbatch_list flags = {0}, where = {0};
    sbatch_flags(&plan, &flags, &where);
    /* --export=NAME: its value from here, as sbatch takes it */
    for (size_t i = 0; i < plan.export_vars.n; i++) {
        const char *name = plan.export_vars.v[i];
        if (strchr(name, '='))
            continue;
        const char *v = getenv(name);
        if (!v)
            fprintf(stderr, "rnx: note: --export=%s: not set here; left out\n", name);
        else {
            char *f = NULL;
            if (asprintf(&f, "--env=%s=%s", name, v) < 0)
                abort();
            sbatch_list_add(&flags, f);
            sbatch_list_add(&where, xstrdup(plan.slot_where[SB_EXPORT] ? plan.slot_where[SB_EXPORT] : ""));
        }
    }
    /* what rnx job run would refuse in them, refused here naming the line (or the option) */
    if (sbatch_check(&flags, &where, now, &e) < 0)
        rc = script && !strncmp(e.msg, "line ", 5) ? rnx_usage("job batch: %s: %s", script, e.msg)
                                                   : rnx_usage("job batch: %s", e.msg);
    if (rc == RNX_OK)
        rc = check_uploads(&flags, &where, script);
    plan_add(run, run_where, xstrdup("run"), xstrdup(""));
    for (size_t i = 0; i < flags.n; i++) {
        char *at = NULL;
        bool line = script && !strncmp(where.v[i], "line ", 5); /* a script's, else the command line's */
        if (asprintf(&at, "%s%s%s", line ? script : "", line ? ": " : "", where.v[i]) < 0)
            abort();
        plan_add(run, run_where, flags.v[i], at);
        flags.v[i] = NULL;
    }
    sbatch_list_free(&flags);
    sbatch_list_free(&where);
    if (rc != RNX_OK)
        goto out;
    if (plan.wrap) {
        plan_add(run, run_where, xstrdup("--"), xstrdup(""));
        plan_add(run, run_where, xstrdup("/bin/sh"), xstrdup(""));
        plan_add(run, run_where, xstrdup("-c"), xstrdup(""));
        plan_add(run, run_where, xstrdup(plan.wrap_cmd), xstrdup(""));
    } else {
        char *f = NULL;
        if (asprintf(&f, "--upload=%s", script) < 0)
            abort();
        plan_add(run, run_where, f, xstrdup(""));
        plan_add(run, run_where, xstrdup("--"), xstrdup(""));
        plan_add(run, run_where, xstrdup(plan.interp), xstrdup(""));
        if (plan.interp_arg)
            plan_add(run, run_where, xstrdup(plan.interp_arg), xstrdup(""));
        if (asprintf(&f, "/work/%s", base_name(script)) < 0)
            abort();
        plan_add(run, run_where, f, xstrdup(""));
        for (int i = first + 1; i < argc; i++)
            plan_add(run, run_where, xstrdup(argv[i]), xstrdup(""));
    }
out:
    sbatch_free(&cl);
    sbatch_free(&plan);
    return rc;
}
