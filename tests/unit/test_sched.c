#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sched/sched.h"

static void decide(const sched_job *jobs, size_t n, int64_t now, uint32_t running, uint32_t max, size_t *start,
                   sched_output *out)
{
    sched_input in = {jobs, n, now, running, max, NULL, 0, NULL, 0, NULL, 0};
    out->start = start;
    out->gpu_sets = NULL;
    out->mig_picks = NULL;
    sched_decide(&in, out);
}

static void decide_gpus(const sched_job *jobs, size_t n, const sched_gpu *gpus, size_t ngpus, size_t *start,
                        uint64_t *sets, sched_output *out)
{
    sched_input in = {jobs, n, 1000, 0, 0, gpus, ngpus, NULL, 0, NULL, 0};
    out->start = start;
    out->gpu_sets = sets;
    out->mig_picks = NULL;
    sched_decide(&in, out);
}

/* All GPUs of a job at once or none: a 3-GPU job on 2 free GPUs starts nothing. */
static void test_gpu_gang_all_or_nothing(void **state)
{
    sched_gpu gpus[] = {{1, 1, 81920}, {1, 0, 81920}, {1, 1, 81920}};
    sched_job jobs[] = {{1, 0, 0, 3, 0, 0, -1}};
    size_t start[1];
    uint64_t sets[1];
    sched_output out;
    decide_gpus(jobs, 1, gpus, 3, start, sets, &out);
    assert_int_equal(out.nstart, 0);
    jobs[0].gpu_count = 2;
    decide_gpus(jobs, 1, gpus, 3, start, sets, &out);
    assert_int_equal(out.nstart, 1);
    assert_int_equal(sets[0], 0x5); /* GPUs 0 and 2: the free ones */
}

/* Never oversubscribed: two jobs in one pass never share a GPU; memory minimum honoured;
 * unusable or unknown-memory GPUs are not handed to memory requests. */
static void test_gpu_no_oversubscription_and_memory(void **state)
{
    sched_gpu gpus[] = {{1, 1, 16384}, {1, 1, 40960}, {0, 1, 81920}, {1, 1, -1}, {1, 1, 40960}};
    sched_job jobs[] = {{1, 0, 0, 1, 32768, 0, -1}, {2, 0, 0, 1, 32768, 0, -1}, {3, 0, 0, 1, 32768, 0, -1}, {4, 0, 0, 1, 0, 0, -1}};
    size_t start[4];
    uint64_t sets[4];
    sched_output out;
    decide_gpus(jobs, 4, gpus, 5, start, sets, &out);
    /* jobs 1 and 2 get GPUs 1 and 4; job 3 waits (no third GPU with 32 GB that is usable and
     * known), and so does job 4 behind it, which would otherwise take a GPU job 3 may need */
    assert_int_equal(out.nstart, 2);
    assert_int_equal(sets[0], 1u << 1);
    assert_int_equal(sets[1], 1u << 4);
    uint32_t q;
    assert_int_equal(sched_gpu_feasible(gpus, 5, 3, 32768, &q), -1);
    assert_int_equal(q, 2);
    assert_int_equal(sched_gpu_feasible(gpus, 5, 4, 0, &q), 0);
}

/* Explicit devices (gpu_ids): exactly those, all free, or the job waits. */
static void test_gpu_explicit_ids(void **state)
{
    sched_gpu gpus[] = {{1, 1, 81920}, {1, 0, 81920}, {1, 1, 81920}, {1, 1, 81920}};
    sched_job jobs[] = {{1, 0, 0, 2, 0, 0x3, -1}, {2, 0, 0, 2, 0, 0xc, -1}};
    size_t start[2];
    uint64_t sets[2];
    sched_output out;
    decide_gpus(jobs, 2, gpus, 4, start, sets, &out);
    /* job 1 wants GPU 1, which is busy: it waits and, being first, holds back job 2 */
    assert_int_equal(out.nstart, 0);
    gpus[1].free = 1;
    decide_gpus(jobs, 2, gpus, 4, start, sets, &out);
    assert_int_equal(out.nstart, 2);
    assert_int_equal(sets[0], 0x3);
    assert_int_equal(sets[1], 0xc);
}

/* MIG devices are units of their own: a job gets one free device of its profile. */
static void test_mig_devices(void **state)
{
    sched_mig migs[] = {{0, 1, 1}, {1, 0, 1}, {1, 1, 1}, {2, 1, 0}};
    sched_job jobs[] = {{1, 0, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 0, 1}, {3, 0, 0, 0, 0, 0, 2}, {4, 0, 0, 0, 0, 0, 0}};
    size_t start[4];
    int picks[4];
    sched_input in = {jobs, 4, 1000, 0, 0, NULL, 0, migs, 4, NULL, 0};
    sched_output out = {start, 0, 0, NULL, picks};
    sched_decide(&in, &out);
    /* profile 1: only device 2 is free, so the second such job waits; profile 2's device is
     * unusable; profile 0 gets device 0 */
    assert_int_equal(out.nstart, 2);
    assert_int_equal(start[0], 0);
    assert_int_equal(picks[0], 2);
    assert_int_equal(start[1], 3);
    assert_int_equal(picks[1], 0);
}

/* A GPU job that waits does not hold back jobs without GPUs. */
static void test_gpu_wait_does_not_block_cpu_jobs(void **state)
{
    sched_gpu gpus[] = {{1, 0, 81920}};
    sched_job jobs[] = {{1, 0, 0, 1, 0, 0, -1}, {2, 0, 0, 0, 0, 0, -1}, {3, 0, 0, 1, 0, 0, -1}};
    size_t start[3];
    uint64_t sets[3];
    sched_output out;
    decide_gpus(jobs, 3, gpus, 1, start, sets, &out);
    assert_int_equal(out.nstart, 1);
    assert_int_equal(start[0], 1);
    assert_int_equal(sets[0], 0);
}

static void test_priority_then_submission_order(void **state)
{
    sched_job jobs[] = {{3, 0, 0, 0, 0, 0, -1}, {1, 0, 0, 0, 0, 0, -1}, {2, 5, 0, 0, 0, 0, -1}, {4, 5, 0, 0, 0, 0, -1}};
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
    sched_job jobs[] = {{1, 0, 0, 0, 0, 0, -1}, {2, 0, 0, 0, 0, 0, -1}, {3, 0, 0, 0, 0, 0, -1}};
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
    sched_job jobs[] = {{1, 0, 5000, 0, 0, 0, -1}, {2, 0, 3000, 0, 0, 0, -1}, {3, 0, 0, 0, 0, 0, -1}};
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
    sched_job jobs[] = {{5, 0, 0, 0, 0, 0, -1}, {6, 0, 99999, 0, 0, 0, -1}, {7, 1, 0, 0, 0, 0, -1}};
    uint32_t pos[3];
    sched_input in = {jobs, 3, 1000, 0, 1, NULL, 0, NULL, 0, NULL, 0};
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
        cmocka_unit_test(test_gpu_gang_all_or_nothing),
        cmocka_unit_test(test_gpu_no_oversubscription_and_memory),
        cmocka_unit_test(test_gpu_wait_does_not_block_cpu_jobs),
        cmocka_unit_test(test_gpu_explicit_ids),
        cmocka_unit_test(test_mig_devices),
        cmocka_unit_test(test_room_limits_starts),
        cmocka_unit_test(test_scheduled_jobs_wait_and_set_wakeup),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_empty_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
