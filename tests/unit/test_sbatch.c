/* common/sbatch.c: Slurm's batch scripts read as sbatch reads them, into rnx job run's flags. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/sbatch.h"

/* 2026-11-29 10:00:00 UTC; TZ is UTC for these tests */
#define NOW ((time_t)1795946400)

/* The flags the script (and the command line) come to, joined by spaces. */
static char *flags_of(const char *script, int argc, char **argv, jerr *e)
{
    sbatch_plan p = {0}, cl = {0};
    if (argc && sbatch_args(&cl, argc, argv, NOW, e) < 0) {
        sbatch_free(&cl);
        return NULL;
    }
    if (script && sbatch_script(&p, script, strlen(script), NOW, e) < 0) {
        sbatch_free(&p);
        sbatch_free(&cl);
        return NULL;
    }
    sbatch_merge(&p, &cl);
    sbatch_list out = {0};
    sbatch_flags(&p, &out, NULL);
    static char buf[4096];
    buf[0] = 0;
    for (size_t i = 0; i < out.n; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? " " : "", out.v[i]);
    sbatch_list_free(&out);
    sbatch_free(&p);
    sbatch_free(&cl);
    return buf;
}

static void test_a_sweep_script(void **state)
{
    (void)state;
    jerr e = {0};
    const char *s = "#!/bin/bash\n"
                    "#SBATCH --job-name=sweep\n"
                    "#SBATCH --array=0-99%8\n"
                    "#SBATCH -t 1-02:30   # a day and two and a half hours\n"
                    "#SBATCH --mem=8G -c 4\n"
                    "#SBATCH --gres=gpu:a100:2\n"
                    "\n"
                    "# SBATCH --partition=off (a comment)\n"
                    "#SBATCH --dependency=afterok:123\n"
                    "#SBATCH --signal=B:USR1@120\n"
                    "echo $SLURM_ARRAY_TASK_ID\n"
                    "#SBATCH --mem=1G\n";
    char *f = flags_of(s, 0, NULL, &e);
    assert_non_null(f);
    assert_string_equal(f, "--array=0-99%8 --name=sweep --max-runtime=95400s --gpu=2 --gpu-type=a100 "
                           "--dependency=afterok:123 --signal=USR1@120 --max-cpu=400 --max-memory=8192 --slurm-env");
}

static void test_the_command_line_wins(void **state)
{
    (void)state;
    jerr e = {0};
    const char *s = "#!/bin/sh\n#SBATCH -J a --time=10 --export=A=1 --runtime=x --gpus=2\n";
    char *argv[] = {"-J", "b", "--time=5:30", "--export=NONE", "--runtime=y", "--gpus=1", "script.sh"};
    char *f = flags_of(s, 6, argv, &e);
    assert_non_null(f);
    assert_string_equal(f, "--name=b --max-runtime=330s --gpu=1 --slurm-env --runtime=y");
    /* the script's --export stays when the command line gives none; a type goes with its count */
    char *argv2[] = {"--mem-per-cpu=100", "-c2"};
    f = flags_of("#!/bin/sh\n#SBATCH --export=A=1,B --gres=gpu:v100:1\n", 2, argv2, &e);
    assert_string_equal(f, "--gpu=1 --gpu-type=v100 --max-cpu=200 --max-memory=200 --slurm-env --env=A=1");
    /* a memory option on the command line replaces the script's, whichever of the three */
    char *argv5[] = {"--mem-per-cpu=4G", "-c", "4"};
    f = flags_of("#!/bin/sh\n#SBATCH --mem=8G\n", 3, argv5, &e);
    assert_non_null(f);
    assert_string_equal(f, "--max-cpu=400 --max-memory=16384 --slurm-env");
    /* sbatch_args stops at the script and at "--" */
    sbatch_plan p = {0};
    char *argv3[] = {"-a", "1-3", "job.sh", "-J", "x"};
    assert_int_equal(sbatch_args(&p, 5, argv3, NOW, &e), 2);
    sbatch_free(&p);
    char *argv4[] = {"--", "-J"};
    assert_int_equal(sbatch_args(&p, 2, argv4, NOW, &e), 1);
    sbatch_free(&p);
}

static void test_times_and_sizes(void **state)
{
    (void)state;
    jerr e = {0};
    static const struct {
        const char *line, *flags;
    } cases[] = {
        {"-t 90", "--max-runtime=5400s"},          /* minutes */
        {"-t 2:30", "--max-runtime=150s"},         /* minutes:seconds */
        {"-t 1:00:00", "--max-runtime=3600s"},     /* hours:minutes:seconds */
        {"-t 2-0", "--max-runtime=172800s"},       /* days-hours */
        {"-t 1-0:1:2", "--max-runtime=86462s"},    /* days-hours:minutes:seconds */
        {"-t UNLIMITED", ""},
        {"--mem=512", "--max-memory=512"},
        {"--mem=1500K", "--max-memory=2"},         /* rounded up */
        {"--mem=1T", "--max-memory=1048576"},
        {"--mem=0", ""},                           /* all of it: no limit */
        {"--mem-per-gpu=2G --gpus=3", "--gpu=3 --max-memory=6144"},
        {"--gres=gpu", "--gpu=1"},
        {"--gres=gpu:4,shard:2", "--gpu=4"},
        {"-G h100:8", "--gpu=8 --gpu-type=h100"},
        {"--nice=50", "--priority=-50"},
        {"--nice", "--priority=-100"},
        {"--nice=-20000", "--priority=1000"},
        {"-b now+2hours", "--schedule=7200s"},
        {"--begin=now+90", "--schedule=90s"},
        {"--begin=now", ""},
        {"--begin=11:30", "--schedule=2026-11-29T11:30:00Z"},
        {"--begin=09:15:10", "--schedule=2026-11-30T09:15:10Z"}, /* past today: tomorrow */
        {"--begin=2026-12-24T18:00", "--schedule=2026-12-24T18:00:00Z"},
        {"--begin=2026-12-24", "--schedule=2026-12-24T00:00:00Z"},
        {"--begin=2020-01-01", ""},                              /* past: now */
        {"--begin=teatime", "--schedule=2026-11-29T16:00:00Z"},
        {"--begin=midnight", "--schedule=2026-11-30T00:00:00Z"},
        {"-N 1 -n 1 --ntasks-per-node=1 --parsable -Q --kill-on-invalid-dep=yes", ""},
        {"--chdir=/work/run", "--workdir=/work/run"},
        {"-W", "--wait"},
        {"-H", "--hold"},
        {"--priority=5", "--priority=5"},
        {"--network=bridge --volume=data:ro --gpu-share", "--network=bridge --volume=data:ro --gpu-share"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char script[256], want[512];
        snprintf(script, sizeof script, "#!/bin/sh\n#SBATCH %s\n", cases[i].line);
        snprintf(want, sizeof want, "%s%s--slurm-env", cases[i].flags, *cases[i].flags ? " " : "");
        /* the rnx flags come after --slurm-env */
        if (!strncmp(cases[i].flags, "--network", 9) || !strcmp(cases[i].flags, "--wait") ||
            !strcmp(cases[i].flags, "--hold"))
            snprintf(want, sizeof want, "--slurm-env %s", cases[i].flags);
        e = (jerr){0};
        char *f = flags_of(script, 0, NULL, &e);
        if (!f)
            fail_msg("%s: %s", cases[i].line, e.msg);
        if (strcmp(f, want))
            fail_msg("%s: got '%s', want '%s'", cases[i].line, f, want);
    }
}

static void test_notes(void **state)
{
    (void)state;
    jerr e = {0};
    sbatch_plan p = {0};
    const char *s = "#!/bin/bash -l\n#SBATCH -p gpu -A proj\n#SBATCH -o out-%j.txt --export=ALL\n";
    assert_int_equal(sbatch_script(&p, s, strlen(s), NOW, &e), 0);
    assert_string_equal(p.interp, "/bin/bash");
    assert_string_equal(p.interp_arg, "-l");
    assert_int_equal(p.notes.n, 4);
    assert_string_equal(p.notes.v[0], "line 2: #SBATCH --partition=gpu: has no meaning on one joblet machine; ignored");
    assert_string_equal(p.notes.v[2], "line 3: #SBATCH --output=out-%j.txt: joblet keeps the job's output: rnx job log "
                                      "ID (--stdout, --stderr); ignored");
    assert_non_null(strstr(p.notes.v[3], "does not get the environment it was submitted from"));
    sbatch_free(&p);
    /* a command through srun says nothing (the job's srun is joblet's), and no #SBATCH line
     * after the first command is read */
    s = "#!/bin/bash\n#SBATCH -t 5\nmodule load x\n  srun -n1 python a.py\n#SBATCH --partition=x\n";
    assert_int_equal(sbatch_script(&p, s, strlen(s), NOW, &e), 0);
    assert_int_equal(p.notes.n, 0);
    assert_string_equal(p.slot[SB_TIME], "300s");
    sbatch_free(&p);
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *script, *msg;
    } cases[] = {
        {"echo hi\n", "this does not look like a batch script: its first line must start with #!"},
        {"#!bash\n", "its #! line names no interpreter by its full path"},
        {"#!/bin/sh\r\necho\r\n", "DOS line breaks"},
        {"#!/bin/sh\n#SBATCH --nodes=2\n", "line 2: #SBATCH --nodes=2: 2: joblet runs a job as one task on one "
                                           "machine"},
        {"#!/bin/sh\n#SBATCH -n 4\n", "line 2: #SBATCH --ntasks=4: 4: joblet runs a job as one task"},
        {"#!/bin/sh\n\n#SBATCH --uid=5\n", "line 3: #SBATCH --uid=5: a job runs as the user who submits it"},
        {"#!/bin/sh\n#SBATCH --tme=10\n", "line 2: #SBATCH --tme: not an option of sbatch's that joblet reads"},
        {"#!/bin/sh\n#SBATCH -Z\n", "line 2: #SBATCH -Z: not an option of sbatch's that joblet reads"},
        {"#!/bin/sh\n#SBATCH --time=1:2:3:4\n", "line 2: #SBATCH --time=1:2:3:4: '1:2:3:4': a time limit is"},
        {"#!/bin/sh\n#SBATCH --time=abc\n", "a time limit is MINUTES"},
        {"#!/bin/sh\n#SBATCH --mem=8X\n", "line 2: #SBATCH --mem=8X: '8X': memory is a number of megabytes"},
        {"#!/bin/sh\n#SBATCH -c 0\n", "'0': must be a whole number of CPUs from 1 to 1024"},
        {"#!/bin/sh\n#SBATCH --gres=gpu:a:b:c\n", "a GPU is gpu, gpu:N or gpu:TYPE:N"},
        {"#!/bin/sh\n#SBATCH --gpus=0\n", "GPUs are N or TYPE:N"},
        {"#!/bin/sh\n#SBATCH --begin=someday\n", "a start time is now+N"},
        {"#!/bin/sh\n#SBATCH --begin=25:00\n", "a start time is"},
        {"#!/bin/sh\n#SBATCH --priority=TOP\n", "give a number from -1000 to 1000"},
        {"#!/bin/sh\n#SBATCH --export=1X=2\n", "each is NAME or NAME=VALUE"},
        {"#!/bin/sh\n#SBATCH --wrap=ls\n", "only on the command line"},
        {"#!/bin/sh\n#SBATCH -J\n", "line 2: #SBATCH -J: needs a value (on its line)"},
        {"#!/bin/sh\n#SBATCH job.sh\n", "line 2: #SBATCH job.sh: not an option"},
        {"#!/bin/sh\n#SBATCH --parsable=1\n", "line 2: #SBATCH --parsable takes no value"},
        {"#!/bin/sh\n#SBATCH --mem=1G\n#SBATCH --mem-per-cpu=2G\n",
         "line 3: #SBATCH --mem-per-cpu=2G: not with --mem, given already"},
        {"#!/bin/sh\n#SBATCH -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q "
         "-Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q -Q\n",
         "line 2: an #SBATCH line of more than 64 words"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        jerr e = {0};
        if (flags_of(cases[i].script, 0, NULL, &e))
            fail_msg("accepted: %s", cases[i].script);
        if (!strstr(e.msg, cases[i].msg))
            fail_msg("%s: got '%s', want '%s'", cases[i].script, e.msg, cases[i].msg);
    }
    jerr e = {0};
    char *argv[] = {"--test-only", "x.sh"};
    assert_null(flags_of(NULL, 2, argv, &e));
    assert_string_equal(e.msg, "--test-only: joblet has no test-only submission");
    char *argv2[] = {"--nonsense=1"};
    assert_null(flags_of(NULL, 1, argv2, &e));
    assert_string_equal(e.msg, "--nonsense: not an option of sbatch's that joblet reads, nor one of rnx job run's "
                               "(rnx job batch --help)");
}

/* The script (and the command line) planned and its flags checked as rnx job run reads them
 * (sbatch_check): 0, or -1 with e saying why. Each flag has where it was given. */
static int checked(const char *script, int argc, char **argv, jerr *e)
{
    sbatch_plan p = {0}, cl = {0};
    int rc = -1;
    if ((argc && sbatch_args(&cl, argc, argv, NOW, e) < 0) ||
        (script && sbatch_script(&p, script, strlen(script), NOW, e) < 0))
        goto out;
    sbatch_merge(&p, &cl);
    sbatch_list flags = {0}, where = {0};
    sbatch_flags(&p, &flags, &where);
    assert_int_equal(flags.n, where.n);
    rc = sbatch_check(&flags, &where, NOW, e);
    sbatch_list_free(&flags);
    sbatch_list_free(&where);
out:
    sbatch_free(&p);
    sbatch_free(&cl);
    return rc;
}

/* docs/batch.md: refused, "the message naming the line", whatever rnx job run refuses in what
 * the options became: the same parsers (the request's schema, arrayspec_parse), the line
 * named before their sentence; a rule between fields names the line of the field it is about. */
static void test_what_rnx_refuses_names_the_line(void **state)
{
    (void)state;
    static const struct {
        const char *opt, *msg;   /* the #SBATCH line's option (line 3), the whole message */
    } cases[] = {
        {"--array=5-3", "line 3: #SBATCH --array=5-3: '5-3': a range runs from a lower id to a higher one, both at "
                        "most 4000000"},
        {"--array=0-3%0", "line 3: #SBATCH --array=0-3%0: '0-3%0': %N runs at most N tasks at once; N is a whole "
                          "number from 1 to 4000000"},
        {"--array=", "line 3: #SBATCH --array=: '' is not a task list"},
        {"--priority=5000", "line 3: #SBATCH --priority=5000: '5000' must be a whole number from -1000 to 1000 "
                            "(higher runs first; default 0)"},
        {"--gpus=65", "line 3: #SBATCH --gpus=65: '65' must be a number of GPUs from 0 to 64, or all"},
        {"-G a100:65", "line 3: #SBATCH --gpus=a100:65: '65' must be a number of GPUs from 0 to 64, or all"},
        {"--chdir=rel", "line 3: #SBATCH --chdir=rel: 'rel' must be an absolute path without '..' (e.g. /work/src)"},
        {"--export=A=1,A=2", "line 3: #SBATCH --export=A=1,A=2: 'A' is given twice"},
        {"--env=A", "line 3: #SBATCH --env=A: 'A' is not KEY=VALUE"},
        /* a secret's value is not shown */
        {"--secret-env=1A=hush", "line 3: #SBATCH --secret-env=1A=***: '1A' is not a valid variable name; use "
                                 "letters, digits and '_', not starting with a digit"},
        {"--max-memory=lots", "line 3: #SBATCH --max-memory=lots: 'lots' is not a size of at least 4 MB; use "
                              "megabytes (4096) or a unit: 4096MB, 8GB"},
        {"--cross-numa=maybe", "line 3: #SBATCH --cross-numa=maybe: 'maybe' must be yes or no (true or false)"},
        {"--signal=USR1@600", "line 3: #SBATCH --signal=USR1@600: SIGUSR1@600 is due 600 s before the run-time "
                              "limit"},
        {"--job-name=\xff", "line 3: #SBATCH --job-name=\xff: the value is not valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char script[256];
        snprintf(script, sizeof script, "#!/bin/sh\n# a sweep\n#SBATCH %s\n#SBATCH -t 5\ntrue\n", cases[i].opt);
        jerr e = {0};
        if (checked(script, 0, NULL, &e) == 0)
            fail_msg("accepted: %s", cases[i].opt);
        if (strncmp(e.msg, cases[i].msg, strlen(cases[i].msg)))
            fail_msg("%s: got '%s', want '%s'", cases[i].opt, e.msg, cases[i].msg);
    }
    jerr e = {0};
    /* a rule between two lines: the line of the field it refuses */
    assert_int_equal(checked("#!/bin/sh\n#SBATCH --array=0-3 -J x\n#SBATCH --dependency=singleton\n", 0, NULL, &e),
                     -1);
    assert_string_equal(e.msg, "line 3: #SBATCH --dependency=singleton: not for an array; to run its tasks one at "
                               "a time give %1 (--array=0-9%1)");
    /* the memory a line's per-CPU size comes to, named by that line */
    e = (jerr){0};
    assert_int_equal(checked("#!/bin/sh\n#SBATCH -c 2\n#SBATCH --mem-per-cpu=1K\n", 0, NULL, &e), -1);
    assert_string_equal(e.field, "max_memory_mb");
    assert_true(!strncmp(e.msg, "line 3: #SBATCH --mem-per-cpu=1K: '2' is not a size of at least 4 MB", 68));
    /* the command line's option names itself; one there replaces the script's (not refused) */
    char *argv[] = {"--array=0-3%4000001"};
    e = (jerr){0};
    assert_int_equal(checked("#!/bin/sh\n#SBATCH --array=0-1\n", 1, argv, &e), -1);
    assert_string_equal(e.msg, "--array=0-3%4000001: '0-3%4000001': %N runs at most N tasks at once; N is a whole "
                               "number from 1 to 4000000");
    char *argv2[] = {"--array=0-1", "--priority=7", "-G", "2"};
    assert_int_equal(checked("#!/bin/sh\n#SBATCH --array=5-3\n#SBATCH --priority=5000 --gpus=65\n", 4, argv2, &e), 0);
    /* what is accepted stays accepted: the sweep of test_a_sweep_script */
    assert_int_equal(checked("#!/bin/bash\n#SBATCH --job-name=sweep --array=0-99%8 -t 1-02:30 --mem=8G -c 4\n"
                             "#SBATCH --gres=gpu:a100:2 --dependency=afterok:123 --signal=B:USR1@120\n"
                             "#SBATCH --export=A=1,B --upload=data/ --runtime=python-3.11 --nice=5\n",
                             0, NULL, &e),
                     0);
}

int main(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_sweep_script),
        cmocka_unit_test(test_the_command_line_wins),
        cmocka_unit_test(test_times_and_sizes),
        cmocka_unit_test(test_notes),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_what_rnx_refuses_names_the_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
