/* common/srun.c: srun's command line inside a joblet job, read as srun reads it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/srun.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* a job with 4 CPUs, 2 GPUs and 8 GiB */
static const srun_job JOB = {4, 2, 8192};

static void test_options_and_the_command(void **state)
{
    (void)state;
    srun_plan p;
    jerr e = {0};
    char *a[] = {"-l", "-n", "1", "-N1", "--ntasks-per-node=1", "-c", "4", "--gpus=2", "--mem=8G", "--mpi=pmix",
                 "-J", "step", "--cpu-bind=cores", "-u", "--kill-on-bad-exit=1", "-o", "out_%j.txt", "--open-mode=append",
                 "-D", "/work/sub", "--export=ALL,A=1,B", "python", "-c", "print(1)"};
    assert_int_equal(srun_args(&p, ARGC(a), a, &JOB, &e), 0);
    assert_int_equal(p.cmd, 21);
    assert_true(p.label);
    assert_true(p.append);
    assert_string_equal(p.out, "out_%j.txt");
    assert_null(p.err);
    assert_null(p.in);
    assert_string_equal(p.chdir, "/work/sub");
    assert_false(p.export_none);
    assert_int_equal(p.export_vars.n, 2);
    assert_string_equal(p.export_vars.v[0], "A=1");
    assert_string_equal(p.export_vars.v[1], "B");
    assert_int_equal(p.notes.n, 0); /* all of it the job's as it is */
    srun_free(&p);

    /* "--" ends the options; "none" and a task number; NONE */
    char *b[] = {"-i", "none", "-e", "0", "--output=all", "--export=NONE,X=2", "--", "-weird", "x"};
    assert_int_equal(srun_args(&p, ARGC(b), b, &JOB, &e), 0);
    assert_int_equal(p.cmd, 7);
    assert_string_equal(p.in, "/dev/null");
    assert_null(p.err);
    assert_null(p.out);
    assert_true(p.export_none);
    assert_string_equal(p.export_vars.v[0], "X=2");
    srun_free(&p);

    /* switches together, getopt's way: the first that takes a value takes the rest */
    char *g[] = {"-lu", "-Ql", "-lo%j.out", "-uo", "f2", "x"};
    assert_int_equal(srun_args(&p, ARGC(g), g, &JOB, &e), 0);
    assert_int_equal(p.cmd, 5);
    assert_true(p.label);
    assert_string_equal(p.out, "f2");
    srun_free(&p);
    /* names without ALL: only they and SLURM_*, as NONE */
    char *x[] = {"--export=A=1,B", "x"};
    assert_int_equal(srun_args(&p, ARGC(x), x, &JOB, &e), 0);
    assert_true(p.export_none);
    assert_int_equal(p.export_vars.n, 2);
    srun_free(&p);
    /* --version, --help: nothing to run */
    char *v[] = {"-l", "--version", "x"};
    assert_int_equal(srun_args(&p, ARGC(v), v, &JOB, &e), 0);
    assert_int_equal(p.info, 'V');
    assert_int_equal(p.cmd, 3);
    srun_free(&p);
    char *h[] = {"-h"};
    assert_int_equal(srun_args(&p, 1, h, &JOB, &e), 0);
    assert_int_equal(p.info, 'h');
    srun_free(&p);

    /* no option at all; nodes as min-max, at least one */
    char *c[] = {"hostname"};
    assert_int_equal(srun_args(&p, 1, c, &JOB, &e), 0);
    assert_int_equal(p.cmd, 0);
    srun_free(&p);
    char *d[] = {"--nodes=1-4", "true"};
    assert_int_equal(srun_args(&p, 2, d, &JOB, &e), 0);
    srun_free(&p);
}

static void test_gpus_pick(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(srun_gpus_pick("0,1,2,3", NULL, 2, out, sizeof out), 0);
    assert_string_equal(out, "0,1");
    assert_int_equal(srun_gpus_pick("0,1,2,3", "1", 2, out, sizeof out), 0);
    assert_string_equal(out, "0,2");
    assert_int_equal(srun_gpus_pick("0,1,2,3", "0,1,3", 1, out, sizeof out), 0);
    assert_string_equal(out, "2");
    /* fewer free than asked: the step waits */
    assert_int_equal(srun_gpus_pick("0,1", "0", 2, out, sizeof out), 1);
    assert_int_equal(srun_gpus_pick("0,1", "1,0", 1, out, sizeof out), 1);
    /* a name is a whole item: 1 taken is not 10 */
    assert_int_equal(srun_gpus_pick("1,10", "1", 1, out, sizeof out), 0);
    assert_string_equal(out, "10");
    /* UUIDs, as a MIG or a UUID-named job has them */
    assert_int_equal(srun_gpus_pick("GPU-aa,GPU-bb", "GPU-aa", 1, out, sizeof out), 0);
    assert_string_equal(out, "GPU-bb");
    /* more than the job has, none asked, no GPUs, or no room in out */
    assert_int_equal(srun_gpus_pick("0,1", NULL, 3, out, sizeof out), -1);
    assert_int_equal(srun_gpus_pick("0,1", NULL, 0, out, sizeof out), -1);
    assert_int_equal(srun_gpus_pick(NULL, NULL, 1, out, sizeof out), -1);
    assert_int_equal(srun_gpus_pick("", "", 1, out, sizeof out), -1);
    assert_int_equal(srun_gpus_pick("GPU-aaaaaaaa,GPU-bb", NULL, 1, out, 8), -1);
    /* empty items are not GPUs */
    assert_int_equal(srun_gpus_pick(",0,,1,", "0", 1, out, sizeof out), 0);
    assert_string_equal(out, "1");
}

static void test_notes(void **state)
{
    (void)state;
    srun_plan p;
    jerr e = {0};
    char *a[] = {"-c", "1", "--gpus-per-task=1", "--mem-per-cpu=1G", "-t", "10", "--gres=gpu:a100:1,tmpfs:5", "x"};
    assert_int_equal(srun_args(&p, ARGC(a), a, &JOB, &e), 0);
    assert_int_equal(p.notes.n, 3);
    assert_string_equal(p.notes.v[0], "--cpus-per-task=1: a step has the job's CPUs, not a share: the task has the job's "
                                      "4 CPUs");
    assert_string_equal(p.notes.v[1], "--mem-per-cpu=1G: a step has the job's memory, not a share: the task has the "
                                      "job's 8192 MB");
    assert_string_equal(p.notes.v[2], "--time=10: a step runs within the job's time limit, not one of its own");
    assert_int_equal(p.gpus, 1); /* a GPU of the job's 2 is the step's to see (srun_gpus_pick), not a note */
    srun_free(&p);
    /* all of the job's GPUs: all, none another step holds; none asked: no share */
    char *g[] = {"--gpus=2", "x"};
    assert_int_equal(srun_args(&p, ARGC(g), g, &JOB, &e), 0);
    assert_int_equal(p.gpus, 2);
    assert_int_equal(p.notes.n, 0);
    srun_free(&p);
    char *none_asked[] = {"x"};
    assert_int_equal(srun_args(&p, ARGC(none_asked), none_asked, &JOB, &e), 0);
    assert_int_equal(p.gpus, 0);
    assert_false(p.overlap);
    srun_free(&p);
    /* the last one given counts; --overlap shares what others hold */
    char *again[] = {"--gpus=1", "--gpus=0", "--overlap", "x"};
    assert_int_equal(srun_args(&p, ARGC(again), again, &JOB, &e), 0);
    assert_int_equal(p.gpus, 0);
    assert_true(p.overlap);
    srun_free(&p);
    /* a job without limits: the task has all of it */
    const srun_job none = {-1, 0, -1};
    char *b[] = {"-c", "2", "--mem=1G", "x"};
    assert_int_equal(srun_args(&p, ARGC(b), b, &none, &e), 0);
    assert_int_equal(p.notes.n, 2);
    assert_string_equal(p.notes.v[0], "--cpus-per-task=2: a step has the job's CPUs, not a share: the task has all of "
                                      "the job's");
    assert_string_equal(p.notes.v[1], "--mem=1G: a step has the job's memory, not a share: the task has all of the "
                                      "job's");
    srun_free(&p);
    /* a step with no GPU: noted in a job with some, nothing said in one without */
    char *c[] = {"--gpus=0", "--gres=gpu:0", "x"};
    assert_int_equal(srun_args(&p, ARGC(c), c, &JOB, &e), 0);
    assert_int_equal(p.notes.n, 2);
    assert_string_equal(p.notes.v[0], "--gpus=0: a step has the job's GPUs, not a share: the task has the job's 2 GPUs");
    srun_free(&p);
    assert_int_equal(srun_args(&p, ARGC(c), c, &none, &e), 0);
    assert_int_equal(p.notes.n, 0);
    srun_free(&p);
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *words[4];
        const char *msg;
    } cases[] = {
        {{"-n", "2", "x"}, "--ntasks=2: a joblet job is one task with no Slurm of its own; this needs Slurm itself "
                           "(docs/slurm.md)"},
        {{"--nodes=2", "x"}, "--nodes=2: a joblet job is one task with no Slurm of its own; this needs Slurm itself "
                             "(docs/slurm.md)"},
        {{"-n", "many", "x"}, "--ntasks=many: must be a whole number (1 in a joblet job)"},
        {{"--gpus=3", "x"}, "--gpus=3: more than the job has (2 GPUs): a step has at most the job's"},
        {{"-c", "8", "x"}, "--cpus-per-task=8: more than the job has (4 CPUs): a step has at most the job's"},
        {{"--mem=9G", "x"}, "--mem=9G: more than the job has (8192 MB): a step has at most the job's"},
        {{"--mem=lots", "x"}, "--mem=lots: memory is a number with K, M, G or T"},
        {{"--foo", "x"}, "unrecognized option '--foo' (srun in a joblet job: docs/batch.md)"},
        {{"-y", "x"}, "invalid option -- 'y' (srun in a joblet job: docs/batch.md)"},
        {{"-lz", "x"}, "invalid option -- 'z' (srun in a joblet job: docs/batch.md)"},
        {{"-lH", "x"}, "--hold: a joblet job is one task with no Slurm of its own; this needs Slurm itself "
                       "(docs/slurm.md)"},
        {{"-N", "1-junk", "x"}, "--nodes=1-junk: must be a whole number (1 in a joblet job)"},
        {{"--export=", "x"}, "--export=: ALL, NONE, or [ALL,]NAME[=VALUE],..."},
        {{"--ntasks-per-gpu=1", "x"}, "--ntasks-per-gpu=1: a task a GPU is 2 tasks in this job: a joblet job is one "
                                      "task with no Slurm of its own; this needs Slurm itself (docs/slurm.md)"},
        {{"--label=yes", "x"}, "option '--label' doesn't allow an argument"},
        {{"-o"}, "option '--output' requires an argument"},
        {{"-o", "3", "x"}, "--output=3: the job's one task is task 0"},
        {{"--multi-prog", "x"}, "--multi-prog: give the command itself (a joblet job has one task)"},
        {{"--dependency=afterok:1", "x"}, "--dependency=afterok:1: a joblet job is one task with no Slurm of its own; "
                                          "this needs Slurm itself (docs/slurm.md)"},
        {{"--export=1BAD", "x"}, "--export=1BAD: '1BAD': a variable is NAME or NAME=VALUE"},
        {{"--open-mode=sideways", "x"}, "--open-mode=sideways: append or truncate"},
        {{"-l"}, "no command to run (srun [OPTIONS] COMMAND [ARGS...])"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = 0;
        while (n < 4 && cases[i].words[n])
            n++;
        srun_plan p;
        jerr e = {0};
        if (srun_args(&p, n, (char *const *)cases[i].words, &JOB, &e) == 0) {
            srun_free(&p);
            fail_msg("case %zu (%s) was taken", i, cases[i].words[0]);
        }
        assert_string_equal(e.msg, cases[i].msg);
    }
}

/* A job's variables as a test gives them to srun_job_from_env: NAME=VALUE, NULL-ended. */
static const char *const *env_now;
static char *env_get(const char *name)
{
    size_t l = strlen(name);
    for (const char *const *v = env_now; *v; v++)
        if (!strncmp(*v, name, l) && (*v)[l] == '=')
            return (char *)*v + l + 1;
    return NULL;
}

static srun_job job_of(const char *const *env)
{
    env_now = env;
    return srun_job_from_env(env_get);
}

/* What srun checks a step against is what the job's node has: joblet tells every job its CPUs
 * (SLURM_CPUS_ON_NODE) and its memory limit whether the job gave it or it is the machine's
 * default (SLURM_MEM_PER_NODE, exec/spec_build.c), so a step beyond either is refused; what the
 * job asked for (SLURM_CPUS_PER_TASK, SLURM_GPUS) is read where the node's are not given. */
static void test_the_job_from_its_variables(void **state)
{
    (void)state;
    /* a job that asked for nothing, under a default memory limit of 1638 MB, on 16 CPUs */
    static const char *const dflt[] = {"SLURM_CPUS_ON_NODE=16", "SLURM_MEM_PER_NODE=1638", "SLURM_JOB_ID=7", NULL};
    srun_job j = job_of(dflt);
    assert_int_equal(j.cpus, 16);
    assert_int_equal(j.gpus, 0);
    assert_int_equal(j.mem_mb, 1638);
    srun_plan p;
    jerr e = {0};
    char *big[] = {"--mem=2G", "x"};
    assert_int_equal(srun_args(&p, ARGC(big), big, &j, &e), -1);
    assert_string_equal(e.msg, "--mem=2G: more than the job has (1638 MB): a step has at most the job's");
    char *many[] = {"-c", "17", "x"};
    assert_int_equal(srun_args(&p, ARGC(many), many, &j, &e), -1);
    assert_string_equal(e.msg, "--cpus-per-task=17: more than the job has (16 CPUs): a step has at most the job's");
    char *fits[] = {"--mem=1G", "-c", "16", "x"};
    assert_int_equal(srun_args(&p, ARGC(fits), fits, &j, &e), 0);
    assert_int_equal(p.notes.n, 1);
    assert_string_equal(p.notes.v[0], "--mem=1G: a step has the job's memory, not a share: the task has the job's "
                                      "1638 MB");
    srun_free(&p);
    /* the node's counts before what was asked (a job's own SLURM_CPUS_PER_TASK=8 on a cpuset
     * of 4 has 4); these alone where the node's are not given */
    static const char *const both[] = {"SLURM_CPUS_PER_TASK=8", "SLURM_CPUS_ON_NODE=4", "SLURM_GPUS=1",
                                       "SLURM_GPUS_ON_NODE=2", NULL};
    j = job_of(both);
    assert_int_equal(j.cpus, 4);
    assert_int_equal(j.gpus, 2);
    assert_int_equal(j.mem_mb, -1);
    static const char *const asked[] = {"SLURM_CPUS_PER_TASK=8", "SLURM_GPUS=1", NULL};
    j = job_of(asked);
    assert_int_equal(j.cpus, 8);
    assert_int_equal(j.gpus, 1);
    /* nothing said, or not a whole number: no limit, and no GPU */
    static const char *const junk[] = {"SLURM_CPUS_ON_NODE=lots", "SLURM_MEM_PER_NODE=8G", "SLURM_GPUS_ON_NODE=", NULL};
    j = job_of(junk);
    assert_int_equal(j.cpus, -1);
    assert_int_equal(j.gpus, 0);
    assert_int_equal(j.mem_mb, -1);
}

static void test_file_names(void **state)
{
    (void)state;
    srun_names nm = {"8bea11bb", "job-8bea11bb", "alice", "sweep", "8bea11bb", "7", NULL};
    char out[64];
    assert_string_equal(srun_file_name("out_%j_%s_%t_%n.%N.txt", &nm, out, sizeof out),
                        "out_8bea11bb_0_0_0.job-8bea11bb.txt");
    assert_string_equal(srun_file_name("%x-%u-%A_%a-%3a-%4t%%", &nm, out, sizeof out),
                        "sweep-alice-8bea11bb_7-007-0000%");
    assert_string_equal(srun_file_name("%q%J%", &nm, out, sizeof out), "%q8bea11bb.0%");
    assert_string_equal(srun_file_name("a%12", &nm, out, sizeof out), "a%12");
    srun_names none = {0};
    assert_string_equal(srun_file_name("a%ab%xc", &none, out, sizeof out), "abc");
    assert_null(srun_file_name("%N%N%N%N", &nm, out, 16)); /* too long */
    /* the job's third step (srun_main.c numbers them) */
    srun_names third = {"42", "job-8bea11bb", "alice", "sweep", "41", "7", "2"};
    assert_string_equal(srun_file_name("%j.%s.%3s.%J.%A_%a", &third, out, sizeof out), "42.2.002.42.2.41_7");
    assert_string_equal(srun_file_name("%5j-%4A-%6J", &third, out, sizeof out), "00042-0041-000042.2");
}

static void test_host_lists(void **state)
{
    (void)state;
    sbatch_list l = {0};
    jerr e = {0};
    assert_int_equal(srun_hostnames("node[01-03,7]-ib,gpu5,[8-9]", &l, &e), 0);
    assert_int_equal(l.n, 7);
    const char *want[] = {"node01-ib", "node02-ib", "node03-ib", "node7-ib", "gpu5", "8", "9"};
    for (size_t i = 0; i < l.n; i++)
        assert_string_equal(l.v[i], want[i]);
    sbatch_list_free(&l);
    assert_int_equal(srun_hostnames("job-8bea11bb", &l, &e), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0], "job-8bea11bb");
    sbatch_list_free(&l);
    static const struct {
        const char *list, *msg;
    } bad[] = {
        {"n[1-3", "'n[1-3': a '[' not closed"},
        {"n1-3]", "'n1-3]': a ']' with no '['"},
        {"n[3-1]", "'n[3-1]': a range is N or LOW-HIGH, in numbers, LOW <= HIGH"},
        {"n[a-b]", "'n[a-b]': a range is N or LOW-HIGH, in numbers, LOW <= HIGH"},
        {"r[1-2]n[1-2]", "'r[1-2]n[1-2]': one bracket a name"},
        {"n[0-99999]", "more than 65536 names"},
        {"n[]", "'n[]': an empty bracket"},
        {"a[1]],b", "'a[1]],b': a ']' with no '['"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(srun_hostnames(bad[i].list, &l, &e), -1);
        assert_string_equal(e.msg, bad[i].msg);
        sbatch_list_free(&l);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_and_the_command),
        cmocka_unit_test(test_notes),
        cmocka_unit_test(test_gpus_pick),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_the_job_from_its_variables),
        cmocka_unit_test(test_file_names),
        cmocka_unit_test(test_host_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
