/* common/slurmcg.c: Slurm's ids of a task from the cgroup Slurm put it in; paths that are not
 * a Slurm step's are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/slurmcg.h"

static void test_task_and_step_paths(void **state)
{
    slurm_ids s;
    char t[64];
    assert_int_equal(slurmcg_parse("/slurm/uid_1000/job_42/step_0/task_3", &s), 0);
    assert_true(s.set);
    assert_int_equal(s.uid, 1000);
    assert_int_equal(s.job, 42);
    assert_string_equal(s.step, "0");
    assert_int_equal(s.task, 3);
    slurmcg_text(&s, t, sizeof t);
    assert_string_equal(t, "42.0.3");
    /* several slurmd on one host: CgroupPrepend /slurm_%n */
    assert_int_equal(slurmcg_parse("/slurm_node2/uid_0/job_7/step_batch/task_0", &s), 0);
    assert_string_equal(s.step, "batch");
    /* freezer has no task level */
    assert_int_equal(slurmcg_parse("/slurm/uid_5/job_9/step_12", &s), 0);
    assert_int_equal(s.task, -1);
    slurmcg_text(&s, t, sizeof t);
    assert_string_equal(t, "9.12");
}

static void test_not_slurm(void **state)
{
    const char *bad[] = {"/", "/user.slice/user-1000.slice", "/slurm/uid_1000/job_42", "/slurmx/uid_1/job_2/step_0",
                         "/slurm/uid_x/job_2/step_0", "/slurm/uid_1/job_2/step_0/task_", "/slurm/uid_1/job_2/step_foo",
                         "/slurm/uid_1/job_2/step_0/task_1/extra", "/joblet/slurm/uid_1/job_2/step_0",
                         "/slurm/uid_1/job_-2/step_0", "/slurm/uid_99999999999/job_2/step_0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        slurm_ids s = {.set = true};
        assert_int_equal(slurmcg_parse(bad[i], &s), -1);
        assert_false(s.set);
    }
}

static void test_same_and_json(void **state)
{
    slurm_ids a, b, c;
    slurmcg_parse("/slurm/uid_1000/job_42/step_0/task_3", &a);
    slurmcg_parse("/slurm/uid_1000/job_42/step_0", &b);
    assert_true(slurmcg_same(&a, &b));
    slurmcg_parse("/slurm/uid_1001/job_42/step_0", &c);
    assert_false(slurmcg_same(&a, &c));
    json_t *o = slurmcg_to_json(&a);
    assert_true(slurmcg_from_json(o, &c));
    assert_true(slurmcg_same(&a, &c) && c.task == 3);
    json_decref(o);
    slurm_ids none = {0};
    assert_null(slurmcg_to_json(&none));
    assert_false(slurmcg_from_json(NULL, &c));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_and_step_paths),
        cmocka_unit_test(test_not_slurm),
        cmocka_unit_test(test_same_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
