/* The pure scheduler (src/sched/sched.h), case by case. test_sched_random.c runs it against an
 * independent checker on the fixture machines. GPU sets in the comments are GPU indexes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fixture_load.h"

#include "gpu/gpu.h"
#include "gpu/sched_view.h"
#include "sched/placement.h"
#include "sched/sched.h"

#define NJ 32
#define NOW 1000

/* ---- building inputs ---- */

static sched_req req(uint32_t count)
{
    sched_req r;
    memset(&r, 0, sizeof r);
    r.gpu_count = count;
    r.mig_profile = -1;
    return r;
}

static sched_req req_mig(int profile)
{
    sched_req r = req(0);
    r.mig_profile = profile;
    return r;
}

static sched_req req_shared(uint32_t count, uint64_t mb)
{
    sched_req r = req(count);
    r.shared = 1;
    r.gpu_memory_mb = mb;
    return r;
}

static sched_req prio(sched_req r, int32_t p, int preemptible)
{
    r.priority = p;
    r.preemptible = preemptible;
    return r;
}

static sched_req user(sched_req r, uint32_t u)
{
    r.user = u;
    return r;
}

static sched_req mem(sched_req r, uint64_t mb)
{
    r.gpu_memory_mb = mb;
    return r;
}

static sched_req runtime(sched_req r, int64_t ms)
{
    r.runtime_ms = ms;
    return r;
}

static sched_job job(uint64_t seq, sched_req r) { return (sched_job){.seq = seq, .r = r}; }

/* A running job: whole GPUs (or shared ones when r.shared) until end_ms (0 unknown). */
static sched_running on(uint64_t seq, sched_req r, uint64_t gpus, int64_t end_ms)
{
    return (sched_running){seq, r, gpus, -1, end_ms, 0};
}

static sched_running stopping(sched_running x)
{
    x.stopping = 1;
    return x;
}

/* n healthy, open, MPS-capable GPUs of mem MB; the first half on NUMA node 0, the rest on 1. */
static void gpus_init(sched_gpu *g, size_t n, int64_t mem)
{
    for (size_t i = 0; i < n; i++)
        g[i] = (sched_gpu){1, 0, mem, i < (n + 1) / 2 ? 0 : 1, 1};
}

static sched_input input(const sched_job *jobs, size_t n, const sched_running *running, size_t nrunning,
                         const sched_gpu *gpus, size_t ngpus)
{
    sched_input in;
    memset(&in, 0, sizeof in);
    in.jobs = jobs;
    in.n = n;
    in.running = running;
    in.nrunning = nrunning;
    in.now_ms = NOW;
    in.gpus = gpus;
    in.ngpus = ngpus;
    return in;
}

/* ---- running the scheduler ---- */

typedef struct res {
    sched_output out;
    size_t start[NJ];
    uint64_t sets[NJ];
    int picks[NJ];
    size_t pre[NJ];
    uint8_t why[NJ];
    uint32_t pos[NJ];
} res;

static void decide_with(const sched_input *in, res *r, int want_preempt)
{
    assert_true(in->n <= NJ && in->nrunning <= NJ);
    memset(r, 0xa5, sizeof *r); /* garbage: whatever is not written is not trusted */
    r->out.start = r->start;
    r->out.gpu_sets = r->sets;
    r->out.mig_picks = r->picks;
    r->out.preempt = want_preempt ? r->pre : NULL;
    r->out.why = r->why;
    r->out.position = r->pos;
    sched_decide(in, &r->out);
    assert_true(r->out.nstart <= in->n);
    assert_true(r->out.npreempt <= in->nrunning);
    if (!want_preempt)
        assert_int_equal(r->out.npreempt, 0);
}

static void decide(const sched_input *in, res *r) { decide_with(in, r, 1); }

/* Whether jobs[i] starts in this pass, and with which GPU set. */
static int started(const res *r, size_t i, uint64_t *set)
{
    for (size_t k = 0; k < r->out.nstart; k++)
        if (r->start[k] == i) {
            if (set)
                *set = r->sets[k];
            return 1;
        }
    return 0;
}

static uint64_t set_of(const res *r, size_t i)
{
    uint64_t s = 0;
    assert_true(started(r, i, &s));
    return s;
}

/* ---- order, limits, time ---- */

static void test_priority_then_submission_order(void **state)
{
    sched_job jobs[] = {job(3, req(0)), job(1, req(0)), job(2, prio(req(0), 5, 0)), job(4, prio(req(0), 5, 0))};
    sched_input in = input(jobs, 4, NULL, 0, NULL, 0);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 4);
    /* priority 5 first, oldest first within a priority */
    assert_int_equal(r.start[0], 2);
    assert_int_equal(r.start[1], 3);
    assert_int_equal(r.start[2], 1);
    assert_int_equal(r.start[3], 0);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(r.why[i], SW_STARTS);
        assert_int_equal(r.pos[i], 0);
        assert_int_equal(r.sets[i], 0);
        assert_int_equal(r.picks[i], -1);
    }
    assert_int_equal(r.out.head, -1);
    assert_int_equal(r.out.npreempt, 0);
}

static void test_room_limits_starts(void **state)
{
    sched_job jobs[] = {job(1, req(0)), job(2, req(0)), job(3, req(0))};
    sched_running run[5];
    for (int k = 0; k < 5; k++)
        run[k] = on(100 + (uint64_t)k, req(0), 0, 0);
    sched_input in = input(jobs, 3, run, 1, NULL, 0);
    in.max_running = 2;
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.start[0], 0);
    assert_int_equal(r.why[1], SW_MAX_RUNNING);
    assert_int_equal(r.why[2], SW_MAX_RUNNING);
    assert_int_equal(r.pos[1], 1);
    assert_int_equal(r.pos[2], 2);
    in.nrunning = 2;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 0);
    assert_int_equal(r.pos[0], 1);
    in.nrunning = 5; /* over the limit after a config change */
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 0);
    /* a job on its way out still runs */
    in.nrunning = 2;
    run[1] = stopping(run[1]);
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 0);
    in.max_running = 0;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 3);
}

/* A GPU job that cannot start for want of job slots is not the head: it reserves nothing. */
static void test_max_running_makes_no_head(void **state)
{
    sched_gpu gpus[2];
    gpus_init(gpus, 2, 40960);
    sched_running run[] = {on(1, req(1), 0x1, 0)};
    sched_job jobs[] = {job(2, req(0)), job(3, req(2))};
    sched_input in = input(jobs, 2, run, 1, gpus, 2);
    in.max_running = 2;
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.start[0], 0);
    assert_int_equal(r.why[1], SW_MAX_RUNNING);
    assert_int_equal(r.out.head, -1);
    assert_int_equal(r.out.reserved, 0);
}

static void test_scheduled_jobs_wait_and_set_wakeup(void **state)
{
    sched_job jobs[] = {{.seq = 1, .not_before_ms = 5000, .r = req(0)}, {.seq = 2, .not_before_ms = 3000, .r = req(0)},
                        {.seq = 3, .r = req(0)}};
    sched_input in = input(jobs, 3, NULL, 0, NULL, 0);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.start[0], 2);
    assert_int_equal(r.out.next_wakeup_ms, 3000);
    assert_int_equal(r.why[0], SW_SCHEDULED);
    assert_int_equal(r.why[1], SW_SCHEDULED);
    assert_int_equal(r.pos[0], 0);
    assert_int_equal(r.pos[1], 0);
    in.now_ms = 3000; /* due exactly now */
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 2);
    assert_int_equal(r.start[0], 1);
    assert_int_equal(r.out.next_wakeup_ms, 5000);
    in.now_ms = 6000;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 3);
    assert_int_equal(r.out.next_wakeup_ms, 0);
}

static void test_empty_queue(void **state)
{
    sched_input in = input(NULL, 0, NULL, 0, NULL, 0);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 0);
    assert_int_equal(r.out.next_wakeup_ms, 0);
    assert_int_equal(r.out.head, -1);
    assert_int_equal(r.out.reserved, 0);
    assert_int_equal(r.out.shadow_ms, 0);
    assert_int_equal(r.out.npreempt, 0);
}

/* ---- whole GPUs ---- */

/* All GPUs of a job at once or none: a 3-GPU job on 2 free GPUs starts nothing. */
static void test_gpu_gang_all_or_nothing(void **state)
{
    sched_gpu gpus[3];
    gpus_init(gpus, 3, 81920);
    sched_running run[] = {on(1, req(1), 0x2, 0)};
    sched_job jobs[] = {job(2, req(3))};
    sched_input in = input(jobs, 1, run, 1, gpus, 3);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 0);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.pos[0], 1);
    assert_int_equal(r.out.head, 0);
    /* GPU 1 ends at an unknown time: every free GPU the head could use is reserved */
    assert_int_equal(r.out.reserved, 0x5);
    assert_int_equal(r.out.shadow_ms, 0);
    jobs[0].r.gpu_count = 2;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.sets[0], 0x5); /* GPUs 0 and 2: the free ones */
    assert_int_equal(r.picks[0], -1);
    assert_int_equal(r.out.head, -1);
}

/* Never oversubscribed: jobs of one pass never share a GPU; memory minimum honoured; unusable
 * or unknown-memory GPUs are not handed to memory requests. */
static void test_gpu_no_oversubscription_and_memory(void **state)
{
    sched_gpu gpus[] = {{1, 0, 16384, 0, 1}, {1, 0, 40960, 0, 1}, {0, 0, 81920, 0, 1}, {1, 0, -1, 0, 1}, {1, 0, 40960, 0, 1}};
    sched_req big = req(1);
    big.gpu_memory_mb = 32768;
    sched_job jobs[] = {job(1, big), job(2, big), job(3, big), job(4, req(1)), job(5, req(1)), job(6, req(1))};
    sched_input in = input(jobs, 6, NULL, 0, gpus, 5);
    res r;
    decide(&in, &r);
    /* jobs 1 and 2 get GPUs 1 and 4, the only usable ones known to have 32 GB; job 3 waits for
     * one of them, reserving nothing free (SW_HEAD_HELD: free GPUs, none of use to it); jobs 4
     * and 5 take GPUs 0 and 3, which job 3 can never use; job 6 finds none left and is the head
     * in job 3's stead, with nothing left to reserve */
    assert_int_equal(r.out.nstart, 4);
    assert_int_equal(set_of(&r, 0), 1u << 1);
    assert_int_equal(set_of(&r, 1), 1u << 4);
    assert_int_equal(set_of(&r, 3), 1u << 0);
    assert_int_equal(set_of(&r, 4), 1u << 3);
    assert_int_equal(r.why[2], SW_HEAD_HELD);
    assert_int_equal(r.out.head, 5);
    assert_int_equal(r.out.reserved, 0);
    assert_int_equal(r.why[5], SW_HEAD);
    uint64_t all = 0;
    for (size_t k = 0; k < r.out.nstart; k++) {
        assert_int_equal(all & r.sets[k], 0);
        assert_int_equal(r.sets[k] & 1u << 2, 0);
        all |= r.sets[k];
    }
    sched_req three = big;
    three.gpu_count = 3;
    assert_int_equal(sched_feasible(&in, &three), -1); /* only 2 GPUs qualify */
    assert_int_equal(sched_feasible(&in, &big), 0);
    sched_req four = req(4), five = req(5);
    assert_int_equal(sched_feasible(&in, &four), 0); /* 0, 1, 3, 4 */
    assert_int_equal(sched_feasible(&in, &five), -1);
    assert_true(sched_qualifies(&gpus[1], &big));
    assert_false(sched_qualifies(&gpus[0], &big));
    assert_false(sched_qualifies(&gpus[2], &four)); /* unusable */
    assert_false(sched_qualifies(&gpus[3], &big));  /* memory unknown */
    assert_true(sched_qualifies(&gpus[3], &four));
}

/* Explicit devices (gpu_ids): exactly those, all free, or the job waits. */
static void test_gpu_explicit_ids(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 81920);
    sched_req a = req(2), b = req(2);
    a.gpu_ids = 0x3;
    b.gpu_ids = 0xc;
    sched_running run[] = {on(1, req(1), 0x2, 5000)};
    sched_job jobs[] = {job(2, a), job(3, b)};
    sched_input in = input(jobs, 2, run, 1, gpus, 4);
    res r;
    decide(&in, &r);
    /* job 2 wants GPU 1, busy until 5000: it is the head and GPUs 0-1 are its reservation; job 3
     * on GPUs 2-3 cannot delay it */
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.reserved, 0x3);
    assert_int_equal(r.out.shadow_ms, 5000);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.start[0], 1);
    assert_int_equal(r.sets[0], 0xc);
    in.nrunning = 0;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 2);
    assert_int_equal(r.sets[0], 0x3);
    assert_int_equal(r.sets[1], 0xc);
    /* an unusable GPU among them: never, and it blocks no one */
    gpus[0].usable = 0;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_UNPLACEABLE);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.out.head, -1);
    assert_int_equal(sched_feasible(&in, &a), -1);
    /* a GPU that does not exist */
    a.gpu_ids = 0x30;
    gpus[0].usable = 1;
    assert_int_equal(sched_feasible(&in, &a), -1);
}

/* MIG devices are units of their own: a job gets one free device of its profile. */
static void test_mig_devices(void **state)
{
    sched_mig migs[] = {{0, 1}, {1, 1}, {1, 1}, {2, 0}};
    sched_running run[] = {{9, req_mig(1), 0, 1, 0, 0}};
    sched_job jobs[] = {job(1, req_mig(1)), job(2, req_mig(1)), job(3, req_mig(2)), job(4, req_mig(0))};
    sched_input in = input(jobs, 4, run, 1, NULL, 0);
    in.migs = migs;
    in.nmigs = 4;
    res r;
    decide(&in, &r);
    /* profile 1: device 1 is taken, device 2 free, so the second such job waits; profile 2's
     * only device is unusable; profile 0 gets device 0 */
    assert_int_equal(r.out.nstart, 2);
    assert_int_equal(r.start[0], 0);
    assert_int_equal(r.picks[0], 2);
    assert_int_equal(r.sets[0], 0);
    assert_int_equal(r.start[1], 3);
    assert_int_equal(r.picks[1], 0);
    assert_int_equal(r.why[1], SW_HEAD);
    assert_int_equal(r.why[2], SW_UNPLACEABLE);
    assert_int_equal(r.pos[1], 1);
    assert_int_equal(r.pos[2], 2);
    assert_int_equal(r.out.head, 1);
    assert_int_equal(r.out.reserved, 0);
    /* with the holder's end known, that is when the head fits */
    run[0].end_ms = 7000;
    decide(&in, &r);
    assert_int_equal(r.why[1], SW_HEAD);
    assert_int_equal(r.out.shadow_ms, 7000);
    sched_req m1 = req_mig(1), m3 = req_mig(3);
    assert_int_equal(sched_feasible(&in, &m1), 0);
    assert_int_equal(sched_feasible(&in, &m3), -1);
    uint64_t set = 1;
    int mig = -2;
    assert_int_equal(sched_fits_now(&in, &m1, &set, &mig), 0);
    assert_int_equal(mig, 2);
    assert_int_equal(set, 0);
}

/* A GPU job that waits does not hold back jobs without GPUs. */
static void test_gpu_wait_does_not_block_cpu_jobs(void **state)
{
    sched_gpu gpus[1];
    gpus_init(gpus, 1, 81920);
    sched_running run[] = {on(1, req(1), 0x1, 0)};
    sched_job jobs[] = {job(2, req(1)), job(3, req(0)), job(4, req(1))};
    sched_input in = input(jobs, 3, run, 1, gpus, 1);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.start[0], 1);
    assert_int_equal(r.sets[0], 0);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.why[2], SW_NO_ROOM);
    assert_int_equal(r.pos[0], 1);
    assert_int_equal(r.pos[1], 0);
    assert_int_equal(r.pos[2], 2);
}

/* GPUs held without a job (scrubbing, resetting) are not handed out, but do not make a job
 * infeasible. */
static void test_held_gpus(void **state)
{
    sched_gpu gpus[2];
    gpus_init(gpus, 2, 40960);
    sched_job jobs[] = {job(1, req(1)), job(2, req(1)), job(3, req(2))};
    sched_input in = input(jobs, 3, NULL, 0, gpus, 2);
    in.held = 0x1;
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.sets[0], 0x2);
    assert_int_equal(r.why[1], SW_HEAD);
    assert_int_equal(r.why[2], SW_NO_ROOM);
    sched_req two = req(2), one = req(1);
    assert_int_equal(sched_feasible(&in, &two), 0);
    uint64_t set;
    int mig;
    assert_int_equal(sched_fits_now(&in, &two, &set, &mig), -1);
    assert_int_equal(sched_fits_now(&in, &one, &set, &mig), 0);
    assert_int_equal(set, 0x2);
    assert_int_equal(mig, -1);
}

/* ---- why and position ---- */

static void test_why_and_positions(void **state)
{
    sched_gpu gpus[2];
    gpus_init(gpus, 2, 40960);
    sched_running run[] = {on(100, user(req(1), 7), 0x1, 0)};
    sched_job jobs[] = {
        job(10, req(0)),                /* 0: after the job slots run out */
        job(9, req(0)),                 /* 1: starts */
        job(8, req(0)),                 /* 2: starts */
        job(7, user(req(1), 2)),        /* 3: would fit, on the head's GPU */
        job(6, user(req(2), 3)),        /* 4: too few free GPUs */
        job(5, user(req(2), 1)),        /* 5: the head */
        job(4, mem(req(2), 50000)),     /* 6: no GPU has 50 GB */
        job(3, user(req(2), 7)),        /* 7: user 7 holds 1 of 2 */
        job(2, req(0)),                 /* 8: starts */
        {.seq = 1, .not_before_ms = 5000, .r = req(0)}, /* 9: later */
    };
    sched_input in = input(jobs, 10, run, 1, gpus, 2);
    in.max_running = 4;
    in.max_gpus_per_user = 2;
    res r;
    decide(&in, &r);
    static const uint8_t why[] = {SW_MAX_RUNNING, SW_STARTS, SW_STARTS, SW_RESERVED, SW_NO_ROOM,
                                  SW_HEAD, SW_UNPLACEABLE, SW_USER_LIMIT, SW_STARTS, SW_SCHEDULED};
    static const uint32_t pos[] = {6, 0, 0, 5, 4, 3, 2, 1, 0, 0};
    for (size_t i = 0; i < 10; i++) {
        assert_int_equal(r.why[i], why[i]);
        assert_int_equal(r.pos[i], pos[i]);
    }
    assert_int_equal(r.out.nstart, 3);
    assert_int_equal(r.start[0], 8);
    assert_int_equal(r.start[1], 2);
    assert_int_equal(r.start[2], 1);
    assert_int_equal(r.out.head, 5);
    assert_int_equal(r.out.reserved, 0x2);
    assert_int_equal(r.out.next_wakeup_ms, 5000);
    /* no why or position wanted */
    sched_output o;
    memset(&o, 0, sizeof o);
    o.start = r.start;
    o.gpu_sets = r.sets;
    o.mig_picks = r.picks;
    sched_decide(&in, &o);
    assert_int_equal(o.nstart, 3);
    assert_int_equal(o.head, 5);
}

/* ---- EASY backfilling ---- */

/* Five GPUs; A holds 0-1 until 10000, B holds 2 until 20000. The head wants 4: it fits when A
 * ends, on 0, 1, 3, 4. Meanwhile only a job sure to end by then may use 3 or 4. */
static void test_backfill_within_shadow(void **state)
{
    sched_gpu gpus[5];
    gpus_init(gpus, 5, 81920);
    sched_running run[] = {on(1, req(2), 0x3, 10000), on(2, req(1), 0x4, 20000)};
    sched_job jobs[] = {
        job(10, req(4)),
        job(11, runtime(req(1), 9001)),   /* ends at 10001: after the shadow */
        job(12, req(1)),                  /* run time unknown */
        job(13, runtime(req(1), 9000)),   /* ends at 10000: just in time */
        job(14, runtime(req(1), 100)),
        job(15, runtime(req(1), 100)),    /* nothing left */
    };
    sched_input in = input(jobs, 6, run, 2, gpus, 5);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.head, 0);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.shadow_ms, 10000);
    assert_int_equal(r.out.reserved, 0x1b);
    assert_int_equal(r.out.npreempt, 0);
    assert_int_equal(r.out.nstart, 2);
    assert_int_equal(set_of(&r, 3), 1u << 3);
    assert_int_equal(set_of(&r, 4), 1u << 4);
    assert_int_equal(r.why[1], SW_RESERVED);
    assert_int_equal(r.why[2], SW_RESERVED);
    assert_int_equal(r.why[5], SW_NO_ROOM);
    assert_int_equal(r.pos[0], 1);
    assert_int_equal(r.pos[1], 2);
    assert_int_equal(r.pos[2], 3);
    assert_int_equal(r.pos[5], 4);

    /* the head needs B's GPU too: the shadow is when B ends, and every GPU is reserved */
    jobs[0].r.gpu_count = 5;
    decide(&in, &r);
    assert_int_equal(r.out.shadow_ms, 20000);
    assert_int_equal(r.out.reserved, 0x1f);
    assert_true(started(&r, 1, NULL)); /* 10001 <= 20000 now */
    assert_false(started(&r, 2, NULL));

    /* B's end unknown: no shadow; the free GPUs the head could use are reserved */
    run[1].end_ms = 0;
    decide(&in, &r);
    assert_int_equal(r.out.shadow_ms, 0);
    assert_int_equal(r.out.reserved, 0x18);
    assert_int_equal(r.out.nstart, 0);
    assert_int_equal(r.why[4], SW_RESERVED);
}

/* A job that needs none of the reserved GPUs starts, whatever its run time. */
static void test_backfill_outside_reservation(void **state)
{
    sched_gpu gpus[6];
    gpus_init(gpus, 6, 81920);
    sched_running run[] = {on(1, req(2), 0x3, 10000), on(2, req(1), 0x4, 20000)};
    sched_job jobs[] = {job(10, prio(req(4), 3, 0)), job(11, req(1)), job(12, req(1))};
    sched_input in = input(jobs, 3, run, 2, gpus, 6);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.reserved, 0x1b); /* 0, 1, 3, 4 */
    assert_int_equal(r.out.shadow_ms, 10000);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(set_of(&r, 1), 1u << 5);
    assert_int_equal(r.why[2], SW_RESERVED);
}

/* Jobs started earlier in the same pass count among the holders the shadow comes from. */
static void test_shadow_from_jobs_started_this_pass(void **state)
{
    sched_gpu gpus[2];
    gpus_init(gpus, 2, 81920);
    sched_running run[] = {on(1, req(1), 0x2, 3000)};
    sched_job jobs[] = {job(2, prio(runtime(req(1), 5000), 9, 0)), job(3, req(2)), job(4, runtime(req(1), 1000))};
    sched_input in = input(jobs, 3, run, 1, gpus, 2);
    res r;
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x1);
    assert_int_equal(r.why[1], SW_HEAD);
    assert_int_equal(r.out.shadow_ms, NOW + 5000);
    assert_int_equal(r.out.reserved, 0x3);
    assert_int_equal(r.why[2], SW_NO_ROOM);
}

/* ---- preemption ---- */

/* Four GPUs held by: r0 (priority 0, seq 10), r1 (priority 0, seq 11), r2 (priority 1, seq 5),
 * all preemptible, and r3 (priority 0, not preemptible). */
static void test_preempt_victim_order(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 81920);
    sched_running run[] = {on(10, prio(req(1), 0, 1), 0x1, 0), on(11, prio(req(1), 0, 1), 0x2, 0),
                           on(5, prio(req(1), 1, 1), 0x4, 0), on(1, prio(req(1), 0, 0), 0x8, 0)};
    sched_job jobs[] = {job(20, prio(req(1), 5, 0)), job(21, prio(req(1), 5, 0))};
    sched_input in = input(jobs, 1, run, 4, gpus, 4);
    res r;
    /* lowest priority first, then the most recently started */
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_PREEMPTING);
    assert_int_equal(r.pos[0], 1);
    assert_int_equal(r.out.head, 0);
    assert_int_equal(r.out.nstart, 0);
    assert_int_equal(r.out.npreempt, 1);
    assert_int_equal(r.pre[0], 1);
    assert_int_equal(r.out.reserved, 0x2);
    assert_int_equal(r.out.shadow_ms, NOW);
    jobs[0].r.gpu_count = 2;
    decide(&in, &r);
    assert_int_equal(r.out.npreempt, 2);
    assert_int_equal(r.pre[0], 1);
    assert_int_equal(r.pre[1], 0);
    assert_int_equal(r.out.reserved, 0x3);
    jobs[0].r.gpu_count = 3;
    decide(&in, &r);
    assert_int_equal(r.out.npreempt, 3);
    assert_int_equal(r.pre[0], 1);
    assert_int_equal(r.pre[1], 0);
    assert_int_equal(r.pre[2], 2);
    /* r3 is not preemptible: four GPUs cannot be had, so nothing is stopped in vain */
    jobs[0].r.gpu_count = 4;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.npreempt, 0);
    /* only strictly lower priorities: at priority 1, r2 is no victim */
    jobs[0].r = prio(req(3), 1, 0);
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.npreempt, 0);
    jobs[0].r.gpu_count = 2;
    decide(&in, &r);
    assert_int_equal(r.out.npreempt, 2);
    jobs[0].r.priority = 0;
    decide(&in, &r);
    assert_int_equal(r.out.npreempt, 0);
    /* the caller asked for no preemption */
    jobs[0].r = prio(req(1), 5, 0);
    decide_with(&in, &r, 0);
    assert_int_equal(r.why[0], SW_HEAD);
    /* only the head preempts: the job behind it waits */
    in.n = 2;
    decide(&in, &r);
    assert_int_equal(r.out.npreempt, 1);
    assert_int_equal(r.why[1], SW_NO_ROOM);
}

/* No victim the head can do without: r0 (priority 0, 1 GPU) comes first in victim order, but
 * freeing r1 (priority 1, 2 GPUs) is enough on its own, so r0 keeps running. */
static void test_preempt_no_needless_victim(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 81920);
    sched_running run[] = {on(1, prio(req(1), 0, 1), 0x1, 0), on(2, prio(req(2), 1, 1), 0x6, 0),
                           on(3, prio(req(1), 0, 0), 0x8, 0)};
    sched_job jobs[] = {job(10, prio(req(2), 5, 0))};
    sched_input in = input(jobs, 1, run, 3, gpus, 4);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.npreempt, 1);
    assert_int_equal(r.pre[0], 1);
    assert_int_equal(r.out.reserved, 0x6);
    jobs[0].r.gpu_count = 1;
    decide(&in, &r);
    assert_int_equal(r.out.npreempt, 1);
    assert_int_equal(r.pre[0], 0);
    /* a victim on a GPU the head cannot use is no help: GPU 0 is too small for 40 GB */
    gpus[0].memory_mb = 16384;
    jobs[0].r.gpu_memory_mb = 40960;
    decide(&in, &r);
    assert_int_equal(r.out.npreempt, 1);
    assert_int_equal(r.pre[0], 1);
}

/* Jobs already on their way out: their room is counted as coming back, and no new victim is
 * stopped while it is enough. */
static void test_preempt_waits_for_stopping_jobs(void **state)
{
    sched_gpu gpus[5];
    gpus_init(gpus, 5, 81920);
    sched_running run[] = {stopping(on(1, prio(req(2), 0, 1), 0x3, 0)), on(8, prio(req(1), 0, 1), 0x4, 0),
                           on(9, prio(req(1), 0, 1), 0x8, 0)};
    sched_job jobs[] = {job(10, prio(req(2), 5, 0)), job(11, req(1)), job(12, runtime(req(1), 10))};
    sched_input in = input(jobs, 3, run, 3, gpus, 5);
    res r;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_PREEMPTING);
    assert_int_equal(r.out.npreempt, 0);
    assert_int_equal(r.out.reserved, 0x3);
    assert_int_equal(r.out.shadow_ms, NOW);
    /* GPU 4 is free and not the head's: the next job takes it; the one after finds nothing,
     * and a short run time does not buy GPUs that come back now */
    assert_int_equal(set_of(&r, 1), 0x10);
    assert_int_equal(r.why[2], SW_NO_ROOM);
    /* four GPUs: the stopping job and GPU 4 give three, one more victim (the most recent) */
    jobs[0].r.gpu_count = 4;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_PREEMPTING);
    assert_int_equal(r.out.npreempt, 1);
    assert_int_equal(r.pre[0], 2);
    assert_int_equal(r.out.reserved, 0x1b);
    assert_int_equal(r.out.nstart, 0);
}

/* Preemption that could not make the head fit does not happen. */
static void test_preempt_only_when_it_helps(void **state)
{
    sched_gpu gpus[3];
    gpus_init(gpus, 3, 81920);
    sched_running run[] = {on(1, prio(req(1), 0, 0), 0x1, 0), on(2, prio(req(1), 0, 1), 0x2, 0),
                           on(3, prio(req(1), 0, 1), 0x4, 0)};
    sched_job jobs[] = {job(10, prio(req(3), 5, 0))};
    sched_input in = input(jobs, 1, run, 3, gpus, 3);
    res r;
    decide(&in, &r); /* needs the non-preemptible job's GPU */
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.npreempt, 0);
    jobs[0].r = prio(req(1), 5, 0);
    jobs[0].r.gpu_ids = 0x1;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.npreempt, 0);
    /* a closed GPU cannot be had either */
    run[0].gpus = 0;
    gpus[0].closed = 1;
    jobs[0].r = prio(req(3), 5, 0);
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.npreempt, 0);
    gpus[0].closed = 0;
    decide(&in, &r);
    assert_int_equal(r.out.npreempt, 2);
}

/* ---- shared (MPS) GPUs ---- */

static void test_shared_memory_sums(void **state)
{
    sched_gpu gpus[1];
    gpus_init(gpus, 1, 40000);
    sched_job jobs[] = {job(1, req_shared(1, 15000)), job(2, req_shared(1, 15000)), job(3, req_shared(1, 15000)),
                        job(4, req_shared(1, 10000))};
    sched_input in = input(jobs, 4, NULL, 0, gpus, 1);
    res r;
    decide(&in, &r);
    /* 15 + 15 fit in 40; a third 15 does not; 10 fills it exactly */
    assert_int_equal(r.out.nstart, 3);
    assert_int_equal(set_of(&r, 0), 0x1);
    assert_int_equal(set_of(&r, 1), 0x1);
    assert_int_equal(set_of(&r, 3), 0x1);
    assert_int_equal(r.why[2], SW_HEAD);
    /* beside running shared jobs too */
    sched_running run[] = {on(1, req_shared(1, 30000), 0x1, 0)};
    in.running = run;
    in.nrunning = 1;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.start[0], 3);
    /* more than the GPU has: never */
    sched_req huge = req_shared(1, 40001);
    assert_int_equal(sched_feasible(&in, &huge), -1);
}

/* Shared jobs go onto GPUs other shared jobs use, the fullest first. */
static void test_shared_colocate(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 40000);
    sched_running run[] = {on(1, req_shared(1, 10000), 0x2, 0), on(2, req_shared(1, 20000), 0x4, 0)};
    sched_job jobs[] = {job(3, req_shared(1, 5000))};
    sched_input in = input(jobs, 1, run, 2, gpus, 4);
    res r;
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x4);
    jobs[0].r = req_shared(2, 5000);
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x6);
    jobs[0].r = req_shared(1, 25000); /* only fits where less is reserved */
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x2);
    jobs[0].r = req_shared(1, 35000); /* only fits on a GPU of its own */
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x1);
    uint64_t set;
    int mig;
    sched_req s = req_shared(1, 5000);
    assert_int_equal(sched_fits_now(&in, &s, &set, &mig), 0);
    assert_int_equal(set, 0x4);
}

/* Never beside an exclusive job, never on a GPU without MPS; and exclusive jobs never on a
 * shared GPU. */
static void test_shared_exclusion(void **state)
{
    sched_gpu gpus[3];
    gpus_init(gpus, 3, 40000);
    gpus[1].mps = 0;
    sched_running run[] = {on(1, req(1), 0x1, 0)};
    sched_job jobs[] = {job(2, req_shared(1, 1000)), job(3, req_shared(1, 1000)), job(4, req_shared(2, 1000))};
    sched_input in = input(jobs, 3, run, 1, gpus, 3);
    res r;
    decide(&in, &r);
    /* GPU 2 is the only one: both one-GPU shared jobs share it; the two-GPU one would need
     * GPU 0, held whole */
    assert_int_equal(set_of(&r, 0), 0x4);
    assert_int_equal(set_of(&r, 1), 0x4);
    assert_int_equal(r.why[2], SW_HEAD);
    /* exclusive jobs: GPU 2 is shared, GPU 0 taken, GPU 1 free */
    sched_running run2[] = {on(1, req(1), 0x1, 0), on(2, req_shared(1, 1000), 0x4, 0)};
    sched_job ex[] = {job(5, req(1)), job(6, req(1))};
    in = input(ex, 2, run2, 2, gpus, 3);
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x2);
    assert_int_equal(r.why[1], SW_HEAD);
    /* no GPU with MPS, or none of known memory: never */
    gpus[0].mps = gpus[2].mps = 0;
    sched_req s = req_shared(1, 1000);
    assert_int_equal(sched_feasible(&in, &s), -1);
    gpus[0].mps = 1;
    gpus[0].memory_mb = -1;
    assert_int_equal(sched_feasible(&in, &s), -1);
    sched_job sj[] = {job(7, s), job(8, req(1))};
    in = input(sj, 2, NULL, 0, gpus, 3);
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_UNPLACEABLE);
    assert_int_equal(set_of(&r, 1), 0x1); /* blocking no one */
}

/* NVIDIA MPS serves one uid at a time: a GPU's shared jobs all run as one uid; a shared job of
 * another uid goes to another GPU, or waits for the GPU to be given up, reserving it as the head
 * so that more jobs of the first uid do not keep it for ever. */
static sched_req as_uid(sched_req r, uint32_t uid)
{
    r.mps_uid = uid;
    return r;
}

static void test_shared_one_uid_per_gpu(void **state)
{
    sched_gpu gpus[2];
    gpus_init(gpus, 2, 40000);
    sched_running run[] = {on(1, as_uid(req_shared(1, 10000), 1001), 0x1, 0)};
    sched_job jobs[] = {job(2, as_uid(req_shared(1, 5000), 1002)), job(3, as_uid(req_shared(1, 5000), 1001))};
    sched_input in = input(jobs, 2, run, 1, gpus, 2);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 2);
    assert_int_equal(set_of(&r, 0), 0x2); /* uid 1002: not beside 1001's job, though it has room */
    assert_int_equal(set_of(&r, 1), 0x1); /* uid 1001: beside its own */
    /* both GPUs shared by 1001: 1002 waits, first in line, GPU 0 (ending first) reserved for it;
     * a later job of 1001 with no end known goes beside 1001's other job, not onto GPU 0 */
    sched_running run2[] = {on(1, as_uid(req_shared(1, 10000), 1001), 0x1, NOW + 5000),
                            on(4, as_uid(req_shared(1, 10000), 1001), 0x2, 0)};
    in = input(jobs, 2, run2, 2, gpus, 2);
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.reserved, 0x1);
    assert_int_equal(set_of(&r, 1), 0x2);
    /* with no room left on GPU 1, it may not take GPU 0 either */
    run2[1].r.gpu_memory_mb = 38000;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 0);
    assert_int_equal(r.why[1], SW_RESERVED);
    run2[1].r.gpu_memory_mb = 10000;
    /* once 1001's jobs are gone from GPU 0, 1002's job takes it */
    in = input(jobs, 1, run2 + 1, 1, gpus, 2);
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(set_of(&r, 0), 0x1);
    /* no end known for 1001's jobs: 1002's head reserves the GPUs they hold, so that a stream of
     * 1001's later jobs does not keep it off them for ever (and on a machine with a free GPU it
     * cannot use, it still does not give up its place: SW_HEAD_HELD is for what nothing frees) */
    run2[0].end_ms = 0;
    run2[1].r.gpu_memory_mb = 10000;
    in = input(jobs, 2, run2, 2, gpus, 2);
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 0);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.reserved, 0x3);
    assert_int_equal(r.why[1], SW_RESERVED);
    sched_gpu three[3];
    gpus_init(three, 3, 40000);
    three[2].mps = 0; /* free, but of no use to a shared job */
    in = input(jobs, 2, run2, 2, three, 3);
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.reserved, 0x3);
    assert_int_equal(r.why[1], SW_RESERVED);
    run2[0].end_ms = NOW + 5000;
    /* fits-now and the tenants of a GPU started in the same pass */
    sched_job two[] = {job(5, as_uid(req_shared(1, 1000), 7)), job(6, as_uid(req_shared(1, 1000), 8)),
                       job(7, as_uid(req_shared(1, 1000), 7))};
    in = input(two, 3, NULL, 0, gpus, 2);
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 3);
    assert_int_equal(set_of(&r, 0) & set_of(&r, 1), 0);
    assert_int_equal(set_of(&r, 2), set_of(&r, 0));
    uint64_t set;
    int mig;
    sched_req s = as_uid(req_shared(1, 1000), 1002);
    in = input(NULL, 0, run2, 2, gpus, 2);
    assert_int_equal(sched_fits_now(&in, &s, &set, &mig), -1);
    assert_int_equal(sched_held_by_other_uids(&in, &s), 0x3); /* (its wait reason says why) */
    s.gpu_ids = 0x2;
    assert_int_equal(sched_held_by_other_uids(&in, &s), 0x2);
    s.mps_uid = 1001;
    assert_int_equal(sched_held_by_other_uids(&in, &s), 0);
}

/* ---- kinds of GPU ---- */

static void test_single_numa(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 40960); /* 0-1 on node 0, 2-3 on node 1 */
    sched_req sn = req(2);
    sn.single_numa = 1;
    sched_running run[] = {on(1, req(1), 0x1, 0)};
    sched_job jobs[] = {job(2, sn), job(3, sn), job(4, req(1))};
    sched_input in = input(jobs, 3, run, 1, gpus, 4);
    res r;
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0xc);
    assert_int_equal(r.why[1], SW_HEAD); /* node 0 has one free GPU */
    assert_int_equal(r.out.reserved, 0x2);
    assert_int_equal(r.why[2], SW_RESERVED);
    /* without the NUMA constraint the same two GPUs are enough */
    sched_req any = req(2);
    uint64_t set;
    int mig;
    in.n = 0;
    assert_int_equal(sched_fits_now(&in, &any, &set, &mig), 0);
    assert_int_equal(set, 0x6);
    assert_int_equal(sched_fits_now(&in, &sn, &set, &mig), 0);
    assert_int_equal(set, 0xc);
    sched_req sn3 = sn;
    sn3.gpu_count = 3;
    assert_int_equal(sched_feasible(&in, &sn3), -1);
    /* GPUs of unknown NUMA node never serve a single-node request */
    for (int i = 0; i < 4; i++)
        gpus[i].numa = -1;
    assert_int_equal(sched_feasible(&in, &sn), -1);
}

/* First-in-line jobs that can use none of the free GPUs and have no known time to fit (their
 * GPU held by a job with no end) hand the head on, each in turn: the big job behind them gets
 * the reservation, and a small job after it may not take the GPUs it waits for (hostile tester:
 * one such job made the big one wait for ever while small ones took every GPU that freed; the
 * next review: two of them did still). */
static void test_heads_that_can_use_nothing_free_hand_the_reservation_on(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 40960);
    sched_running run[] = {on(1, req(1), 0x1, 0)}; /* GPU 0, no end known */
    sched_req plug = req(1);
    plug.gpu_ids = 0x1;
    sched_job jobs[] = {job(2, plug), job(3, plug), job(4, req(4)), job(5, req(1))};
    sched_input in = input(jobs, 4, run, 1, gpus, 4);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 0);
    assert_int_equal(r.why[0], SW_HEAD_HELD);
    assert_int_equal(r.why[1], SW_HEAD_HELD);
    assert_int_equal(r.why[2], SW_HEAD);
    assert_int_equal(r.out.head, 2);
    assert_int_equal(r.out.reserved, 0xe);
    assert_int_equal(r.why[3], SW_RESERVED);
    /* with a known end for GPU 0 the first is an ordinary head (its shadow: that end) */
    run[0].end_ms = in.now_ms + 60000;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.head, 0);
    assert_int_equal(r.out.shadow_ms, in.now_ms + 60000);
}

static void test_gpu_mask(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 40960);
    sched_req m = req(1);
    m.gpu_mask = 0xc;
    sched_running run[] = {on(1, req(1), 0x4, 0)};
    sched_job jobs[] = {job(2, m), job(3, m), job(4, req(1))};
    sched_input in = input(jobs, 3, run, 1, gpus, 4);
    res r;
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x8);
    assert_int_equal(r.why[1], SW_HEAD_HELD); /* GPUs 0 and 1 are free but of the wrong kind */
    assert_int_equal(r.out.head, -1);
    assert_int_equal(r.out.reserved, 0);
    assert_int_equal(set_of(&r, 2), 0x1);
    m.gpu_count = 3;
    assert_int_equal(sched_feasible(&in, &m), -1);
    m.gpu_count = 2;
    assert_int_equal(sched_feasible(&in, &m), 0);
}

/* ---- per-user limit ---- */

/* limits.max_running_per_user: jobs of a user past it wait, within a pass too; user 0 (root)
 * is not counted, nor held back */
static void test_user_running(void **state)
{
    (void)state;
    sched_gpu gpus[2];
    gpus_init(gpus, 2, 40960);
    sched_running run[] = {on(1, user(req(0), 7), 0, 0)};
    sched_job jobs[] = {job(2, user(req(0), 7)), job(3, user(req(0), 7)), job(4, user(req(0), 8)),
                        job(5, user(req(0), 0)), job(6, user(req(0), 0)), job(7, user(req(0), 0))};
    sched_input in = input(jobs, 6, run, 1, gpus, 2);
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 6);
    in.max_running_per_user = 2;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 5);
    assert_int_equal(r.why[0], SW_STARTS);
    assert_int_equal(r.why[1], SW_USER_RUNNING);
    assert_int_equal(r.pos[1], 1);
    assert_int_equal(r.why[2], SW_STARTS);
    for (int k = 3; k < 6; k++)
        assert_int_equal(r.why[k], SW_STARTS);
    in.max_running_per_user = 1;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_USER_RUNNING);
    assert_int_equal(r.why[1], SW_USER_RUNNING);
    assert_int_equal(r.out.nstart, 4);
}

static void test_user_limit(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 40960);
    sched_running run[] = {on(1, user(req(2), 1), 0x3, 0)};
    sched_job jobs[] = {job(2, prio(user(req(3), 1), 9, 0)), job(3, user(req(2), 2))};
    sched_input in = input(jobs, 2, run, 1, gpus, 4);
    res r;
    /* unlimited: user 1's 3-GPU job is the head and keeps GPUs 2-3 for itself */
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.why[1], SW_RESERVED);
    /* at 4 GPUs a user, it could not start anyway: not the head, and blocks no one */
    in.max_gpus_per_user = 4;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_USER_LIMIT);
    assert_int_equal(r.pos[0], 1);
    assert_int_equal(r.out.head, -1);
    assert_int_equal(r.out.reserved, 0);
    assert_int_equal(set_of(&r, 1), 0xc);
    /* counted within a pass too, and not for jobs without GPUs */
    sched_job mine[] = {job(1, user(req(1), 3)), job(2, user(req(1), 3)), job(3, user(req(1), 3)), job(4, user(req(0), 3))};
    in = input(mine, 4, NULL, 0, gpus, 4);
    in.max_gpus_per_user = 2;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 3);
    assert_int_equal(r.why[2], SW_USER_LIMIT);
    assert_true(started(&r, 3, NULL));
    /* a MIG device counts as one */
    sched_mig migs[] = {{0, 1}, {0, 1}};
    sched_running mr[] = {{5, user(req_mig(0), 4), 0, 0, 0, 0}};
    sched_job mj[] = {job(6, user(req_mig(0), 4)), job(7, user(req(1), 4)), job(8, user(req_mig(0), 5))};
    in = input(mj, 3, mr, 1, gpus, 4);
    in.migs = migs;
    in.nmigs = 2;
    in.max_gpus_per_user = 1;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_USER_LIMIT);
    assert_int_equal(r.why[1], SW_USER_LIMIT);
    assert_int_equal(r.picks[0], 1);
    assert_int_equal(r.start[0], 2);
    in.max_gpus_per_user = 2;
    decide(&in, &r);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.picks[0], 1);
    assert_int_equal(r.why[1], SW_USER_LIMIT); /* the MIG job took the second unit */
    assert_int_equal(r.why[2], SW_HEAD);
}

/* ---- closed and unusable GPUs ---- */

static void test_closed_gpus(void **state)
{
    sched_gpu gpus[3];
    gpus_init(gpus, 3, 40960);
    gpus[0].closed = 1;
    sched_job jobs[] = {job(1, req(1)), job(2, req(3))};
    sched_input in = input(jobs, 2, NULL, 0, gpus, 3);
    res r;
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x2); /* not GPU 0 */
    assert_int_equal(r.why[1], SW_HEAD); /* GPU 0 opens again some day */
    assert_int_equal(r.out.reserved, 0x4);
    sched_req three = req(3), two = req(2);
    assert_int_equal(sched_feasible(&in, &three), 0);
    uint64_t set;
    int mig;
    assert_int_equal(sched_fits_now(&in, &three, &set, &mig), -1);
    assert_int_equal(sched_fits_now(&in, &two, &set, &mig), 0);
    assert_int_equal(set, 0x6);
    /* unusable is another matter */
    gpus[0].closed = 0;
    gpus[0].usable = 0;
    assert_int_equal(sched_feasible(&in, &three), -1);
}

/* A job that cannot fit even with every GPU free does not block the queue. */
static void test_unplaceable_blocks_no_one(void **state)
{
    sched_gpu gpus[2];
    gpus_init(gpus, 2, 40960);
    gpus[1].usable = 0;
    sched_job jobs[] = {job(1, prio(req(2), 5, 0)), job(2, req(1)), job(3, req(1))};
    sched_input in = input(jobs, 3, NULL, 0, gpus, 2);
    res r;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_UNPLACEABLE);
    assert_int_equal(r.pos[0], 1);
    assert_int_equal(set_of(&r, 1), 0x1);
    assert_int_equal(r.why[2], SW_HEAD); /* the head is the first that can ever fit */
    assert_int_equal(r.out.head, 2);
    assert_int_equal(r.pos[2], 2);
}

static void test_feasible_and_fits_now(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 40000);
    sched_running run[] = {on(1, req(2), 0x3, 0), on(2, req_shared(1, 30000), 0x4, 0)};
    sched_input in = input(NULL, 0, run, 2, gpus, 4);
    uint64_t set;
    int mig;
    sched_req r1 = req(1), r2 = req(2), r4 = req(4), r5 = req(5), cpu = req(0);
    assert_int_equal(sched_fits_now(&in, &r2, &set, &mig), -1);
    assert_int_equal(sched_fits_now(&in, &r1, &set, &mig), 0);
    assert_int_equal(set, 0x8);
    assert_int_equal(mig, -1);
    sched_req s = req_shared(1, 10000);
    assert_int_equal(sched_fits_now(&in, &s, &set, &mig), 0);
    assert_int_equal(set, 0x4);
    s.gpu_memory_mb = 10001;
    assert_int_equal(sched_fits_now(&in, &s, &set, &mig), 0);
    assert_int_equal(set, 0x8);
    s = req_shared(2, 10000);
    assert_int_equal(sched_fits_now(&in, &s, &set, &mig), 0);
    assert_int_equal(set, 0xc);
    assert_int_equal(sched_fits_now(&in, &cpu, &set, &mig), 0);
    assert_int_equal(set, 0);
    assert_int_equal(sched_feasible(&in, &r4), 0);
    assert_int_equal(sched_feasible(&in, &r5), -1);
    r1.gpu_memory_mb = 40001;
    assert_int_equal(sched_feasible(&in, &r1), -1);
    sched_req m = req_mig(0);
    assert_int_equal(sched_feasible(&in, &m), -1);
    assert_int_equal(sched_feasible(&in, &cpu), 0);
    /* fits_now ignores the head's reservation: GPU 3 is reserved for a 2-GPU head */
    sched_job jobs[] = {job(3, req(2))};
    in.jobs = jobs;
    in.n = 1;
    res r;
    decide(&in, &r);
    assert_int_equal(r.out.reserved, 0x8);
    r1.gpu_memory_mb = 0;
    assert_int_equal(sched_fits_now(&in, &r1, &set, &mig), 0);
    assert_int_equal(set, 0x8);
}

/* ---- the fixture machines through sched_view ---- */


static void test_fixture_machines(void **state)
{
    static gpu_inventory inv;
    static int pair[GPU_MAX * GPU_MAX];
    sched_gpu gpus[SCHED_GPU_MAX];
    res r;

    /* DGX-1: a 4-GPU job gets a fully NVLinked quad, on node 1 when GPU 0 is busy */
    assert_int_equal(load_fixture("dgx1-v100", &inv), 0);
    gpu_sched_gpus(&inv, 1, gpus);
    gpu_pair_scores(&inv, pair);
    sched_job jobs[] = {job(1, req(4))};
    sched_input in = input(jobs, 1, NULL, 0, gpus, (size_t)inv.n);
    in.gpu_pair = pair;
    in.strategy = PLACE_TOPOLOGY;
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x0f);
    sched_running run[] = {on(1, req(1), 0x1, 0)};
    in.running = run;
    in.nrunning = 1;
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0xf0);
    jobs[0].r.gpu_memory_mb = 16161; /* V100 16 GB: 16160 MiB */
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_UNPLACEABLE);

    /* mixed: 2 x A100 and 2 x T4, told apart by kind */
    assert_int_equal(load_fixture("mixed", &inv), 0);
    gpu_sched_gpus(&inv, 1, gpus);
    gpu_pair_scores(&inv, pair);
    in = input(jobs, 1, NULL, 0, gpus, (size_t)inv.n);
    in.gpu_pair = pair;
    jobs[0].r = req(2);
    jobs[0].r.gpu_mask = gpu_kind_mask(&inv, "t4", 0);
    assert_int_equal(jobs[0].r.gpu_mask, 0xc);
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0xc);
    jobs[0].r.gpu_mask = gpu_kind_mask(&inv, "", 80);
    assert_int_equal(jobs[0].r.gpu_mask, 0x3);
    decide(&in, &r);
    assert_int_equal(set_of(&r, 0), 0x3);
    jobs[0].r.gpu_count = 3;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_UNPLACEABLE);

    /* A100 in MIG mode: never whole; its devices one by one */
    assert_int_equal(load_fixture("a100-mig", &inv), 0);
    gpu_sched_gpus(&inv, 1, gpus);
    sched_mig migs[SCHED_MIG_MAX];
    int gpu_of[SCHED_MIG_MAX];
    size_t nm = gpu_sched_migs(&inv, migs, gpu_of, SCHED_MIG_MAX);
    assert_int_equal(nm, 3);
    sched_job mj[] = {job(1, req(1)), job(2, req_mig(migs[2].profile)), job(3, req_mig(migs[2].profile))};
    in = input(mj, 3, NULL, 0, gpus, (size_t)inv.n);
    in.migs = migs;
    in.nmigs = nm;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_UNPLACEABLE);
    assert_int_equal(r.out.nstart, 1);
    assert_int_equal(r.start[0], 1);
    assert_int_equal(r.picks[0], 2);
    assert_int_equal(gpu_of[2], 0);
    assert_int_equal(r.why[2], SW_HEAD);
}

/* ---- the reservation when no known end makes the head fit ---- */

/* A head with explicit gpu_ids reserves only those: GPU 1 is busy (end unknown); the head wants
 * GPUs 0 and 1; GPUs 2 and 3 can never be its, so the job that wants them cannot delay it and
 * starts. (Found by this test: the fallback once reserved every free GPU of its kind.) */
static void test_ids_head_reserves_only_its_gpus(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 81920);
    sched_req a = req(2), b = req(2);
    a.gpu_ids = 0x3;
    b.gpu_ids = 0xc;
    sched_running run[] = {on(1, req(1), 0x2, 0)};
    sched_job jobs[] = {job(2, a), job(3, b)};
    sched_input in = input(jobs, 2, run, 1, gpus, 4);
    res r;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.reserved & ~a.gpu_ids, 0);
    assert_int_equal(r.why[1], SW_STARTS);
}

/* The same with single_numa: GPU 3 is unusable, so node 1 (GPUs 2-3) can never hold a 2-GPU
 * single-node job; GPU 2 is not reserved for it, and the 1-GPU job that can use it starts. */
static void test_numa_head_reserves_only_nodes_that_fit(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 81920); /* 0-1 on node 0, 2-3 on node 1 */
    gpus[3].usable = 0;
    sched_req sn = req(2);
    sn.single_numa = 1;
    sched_running run[] = {on(1, req(1), 0x1, 0)};
    sched_job jobs[] = {job(2, sn), job(3, req(1))};
    sched_input in = input(jobs, 2, run, 1, gpus, 4);
    res r;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_HEAD);
    assert_int_equal(r.out.reserved, 0x2); 
    assert_int_equal(set_of(&r, 1), 0x4);  
}

/* The rule is least work lost, not fewest jobs: victims are taken lowest priority, most recent
 * first, and only the needless ones put back. C (seq 1) holds GPUs 0-1, A (seq 2) GPU 2, B
 * (seq 3) GPU 3, all priority 0 and preemptible; a 2-GPU head of priority 5 stops B and A, the
 * two most recent, and C, running longest, keeps going. */
static void test_preempt_least_work_lost(void **state)
{
    sched_gpu gpus[4];
    gpus_init(gpus, 4, 81920);
    sched_running run[] = {on(1, prio(req(2), 0, 1), 0x3, 0), on(2, prio(req(1), 0, 1), 0x4, 0),
                           on(3, prio(req(1), 0, 1), 0x8, 0)};
    sched_job jobs[] = {job(10, prio(req(2), 5, 0))};
    sched_input in = input(jobs, 1, run, 3, gpus, 4);
    res r;
    decide(&in, &r);
    assert_int_equal(r.why[0], SW_PREEMPTING);
    assert_int_equal(r.out.npreempt, 2);
    assert_int_equal(r.pre[0], 2);
    assert_int_equal(r.pre[1], 1);
    assert_int_equal(r.out.reserved, 0xc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priority_then_submission_order),
        cmocka_unit_test(test_room_limits_starts),
        cmocka_unit_test(test_max_running_makes_no_head),
        cmocka_unit_test(test_scheduled_jobs_wait_and_set_wakeup),
        cmocka_unit_test(test_empty_queue),
        cmocka_unit_test(test_gpu_gang_all_or_nothing),
        cmocka_unit_test(test_gpu_no_oversubscription_and_memory),
        cmocka_unit_test(test_gpu_explicit_ids),
        cmocka_unit_test(test_mig_devices),
        cmocka_unit_test(test_gpu_wait_does_not_block_cpu_jobs),
        cmocka_unit_test(test_held_gpus),
        cmocka_unit_test(test_why_and_positions),
        cmocka_unit_test(test_backfill_within_shadow),
        cmocka_unit_test(test_backfill_outside_reservation),
        cmocka_unit_test(test_shadow_from_jobs_started_this_pass),
        cmocka_unit_test(test_preempt_victim_order),
        cmocka_unit_test(test_preempt_no_needless_victim),
        cmocka_unit_test(test_preempt_waits_for_stopping_jobs),
        cmocka_unit_test(test_preempt_only_when_it_helps),
        cmocka_unit_test(test_shared_memory_sums),
        cmocka_unit_test(test_shared_colocate),
        cmocka_unit_test(test_shared_exclusion),
        cmocka_unit_test(test_shared_one_uid_per_gpu),
        cmocka_unit_test(test_single_numa),
        cmocka_unit_test(test_gpu_mask),
        cmocka_unit_test(test_heads_that_can_use_nothing_free_hand_the_reservation_on),
        cmocka_unit_test(test_user_limit),
        cmocka_unit_test(test_user_running),
        cmocka_unit_test(test_closed_gpus),
        cmocka_unit_test(test_unplaceable_blocks_no_one),
        cmocka_unit_test(test_feasible_and_fits_now),
        cmocka_unit_test(test_fixture_machines),
        cmocka_unit_test(test_ids_head_reserves_only_its_gpus),
        cmocka_unit_test(test_numa_head_reserves_only_nodes_that_fit),
        cmocka_unit_test(test_preempt_least_work_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
