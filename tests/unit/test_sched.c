#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sched/sched.h"

static void decide(const sched_job *jobs, size_t n, int64_t now, uint32_t running, uint32_t max, size_t *start,
                   sched_output *out)
{
    sched_input in = {jobs, n, now, running, max};
    out->start = start;
    sched_decide(&in, out);
}

static void test_priority_then_submission_order(void **state)
{
    sched_job jobs[] = {{3, 0, 0}, {1, 0, 0}, {2, 5, 0}, {4, 5, 0}};
    size_t start[4];
    sched_output out;
    decide(jobs, 4, 1000, 0, 0, start, &out);
    assert_int_equal(out.nstart, 4);
    /* priority 5 first, oldest first within a priority */
    assert_int_equal(start[0], 2);
    assert_int_equal(start[1], 3);
    assert_int_equal(start[2], 1);
    assert_int_equal(start[3], 0);
}

static void test_room_limits_starts(void **state)
{
    sched_job jobs[] = {{1, 0, 0}, {2, 0, 0}, {3, 0, 0}};
    size_t start[3];
    sched_output out;
    decide(jobs, 3, 1000, 1, 2, start, &out);
    assert_int_equal(out.nstart, 1);
    assert_int_equal(start[0], 0);
    decide(jobs, 3, 1000, 2, 2, start, &out);
    assert_int_equal(out.nstart, 0);
    decide(jobs, 3, 1000, 5, 2, start, &out); /* over the limit after a config change */
    assert_int_equal(out.nstart, 0);
}

static void test_scheduled_jobs_wait_and_set_wakeup(void **state)
{
    sched_job jobs[] = {{1, 0, 5000}, {2, 0, 3000}, {3, 0, 0}};
    size_t start[3];
    sched_output out;
    decide(jobs, 3, 1000, 0, 0, start, &out);
    assert_int_equal(out.nstart, 1);
    assert_int_equal(start[0], 2);
    assert_int_equal(out.next_wakeup_ms, 3000);
    decide(jobs, 3, 3000, 0, 0, start, &out);
    assert_int_equal(out.nstart, 2);
    assert_int_equal(start[0], 1);
    assert_int_equal(out.next_wakeup_ms, 5000);
    decide(jobs, 3, 6000, 0, 0, start, &out);
    assert_int_equal(out.nstart, 3);
    assert_int_equal(out.next_wakeup_ms, 0);
}

static void test_positions(void **state)
{
    sched_job jobs[] = {{5, 0, 0}, {6, 0, 99999}, {7, 1, 0}};
    uint32_t pos[3];
    sched_input in = {jobs, 3, 1000, 0, 1};
    sched_positions(&in, pos);
    assert_int_equal(pos[0], 2);
    assert_int_equal(pos[1], 0);
    assert_int_equal(pos[2], 1);
}

static void test_empty_queue(void **state)
{
    size_t start[1];
    sched_output out;
    decide(NULL, 0, 1000, 0, 0, start, &out);
    assert_int_equal(out.nstart, 0);
    assert_int_equal(out.next_wakeup_ms, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priority_then_submission_order),
        cmocka_unit_test(test_room_limits_starts),
        cmocka_unit_test(test_scheduled_jobs_wait_and_set_wakeup),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_empty_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
