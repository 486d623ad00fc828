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

/* DGX-1 (V100) hybrid cube-mesh: NVLink counts; 0-3 on one socket, 4-7 on the other. */
static const int cube[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
    {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1}, {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
};

static void dgx1_pairs(int *pair)
{
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            pair[i * 8 + j] = i == j ? 0 : placement_pair_score(cube[i][j], (i < 4) == (j < 4) ? 30 : 50, (i < 4) == (j < 4));
}

/* Brute force over every subset, independent of the implementation's enumeration. */
static long brute_best(const int *pair, size_t n, uint64_t cand, unsigned count)
{
    long best = -1;
    for (uint64_t s = 0; s < (1ull << n); s++)
        if ((s & ~cand) == 0 && (unsigned)__builtin_popcountll(s) == count && placement_score(pair, n, s) > best)
            best = placement_score(pair, n, s);
    return best;
}

static void test_dgx1_quad_is_fully_nvlinked(void **state)
{
    int pair[64];
    dgx1_pairs(pair);
    uint64_t set;
    assert_int_equal(placement_best(pair, 8, 0xff, 0, PLACE_TOPOLOGY, 4, &set), 0);
    assert_int_equal(set, 0x0f); /* 0-1-2-3: every pair linked, one socket */
    /* with GPU 0 busy the other socket's quad is the best there is */
    assert_int_equal(placement_best(pair, 8, 0xfe, 0x01, PLACE_TOPOLOGY, 4, &set), 0);
    assert_int_equal(set, 0xf0);
    /* a pair: the NV2 links win over NV1 */
    assert_int_equal(placement_best(pair, 8, 0xff, 0, PLACE_TOPOLOGY, 2, &set), 0);
    assert_int_equal(cube[__builtin_ctzll(set)][63 - __builtin_clzll(set)], 2);
}

/* The chosen set scores as high as any subset, for every size and every pattern of busy GPUs. */
static void test_optimal_against_brute_force(void **state)
{
    int pair[64];
    dgx1_pairs(pair);
    for (uint64_t busy = 0; busy < 256; busy++)
        for (unsigned count = 1; count <= 8; count++) {
            uint64_t cand = 0xff & ~busy, set = 0;
            int rc = placement_best(pair, 8, cand, busy, PLACE_TOPOLOGY, count, &set);
            if ((unsigned)__builtin_popcountll(cand) < count) {
                assert_int_equal(rc, -1);
                continue;
            }
            assert_int_equal(rc, 0);
            assert_int_equal(set & ~cand, 0);
            assert_int_equal(__builtin_popcountll(set), count);
            assert_int_equal(placement_score(pair, 8, set), brute_best(pair, 8, cand, count));
        }
}

static void test_greedy_beyond_sixteen(void **state)
{
    /* 20 GPUs in 5 NVLinked groups of 4: a 4-GPU job gets one whole group */
    int pair[400];
    for (int i = 0; i < 20; i++)
        for (int j = 0; j < 20; j++)
            pair[i * 20 + j] = i == j ? 0 : placement_pair_score(i / 4 == j / 4 ? 4 : 0, 50, 0);
    uint64_t set;
    assert_int_equal(placement_best(pair, 20, (1ull << 20) - 1 - 1, 1, PLACE_TOPOLOGY, 4, &set), 0);
    assert_int_equal(__builtin_popcountll(set), 4);
    int group = __builtin_ctzll(set) / 4;
    assert_int_equal(set, 0xfull << (4 * group));
}

/* Two NVLinked groups of four; GPU 0 busy. One GPU: topology and pack put it beside the busy
 * one (keeping group 4-7 whole), spread puts it in the idle group. */
static void test_strategies(void **state)
{
    int pair[64];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            pair[i * 8 + j] = i == j ? 0 : placement_pair_score(i / 4 == j / 4 ? 2 : 0, i / 4 == j / 4 ? 30 : 50, i / 4 == j / 4);
    uint64_t set;
    assert_int_equal(placement_best(pair, 8, 0xfe, 0x01, PLACE_TOPOLOGY, 1, &set), 0);
    assert_int_equal(set, 1u << 1);
    assert_int_equal(placement_best(pair, 8, 0xfe, 0x01, PLACE_PACK, 1, &set), 0);
    assert_int_equal(set, 1u << 1);
    assert_int_equal(placement_best(pair, 8, 0xfe, 0x01, PLACE_SPREAD, 1, &set), 0);
    assert_int_equal(set, 1u << 4);
    /* four GPUs: topology keeps a whole group (internal score first), pack fills group 0 first
     * even though it then spans groups, spread takes the idle group */
    assert_int_equal(placement_best(pair, 8, 0xfe, 0x01, PLACE_TOPOLOGY, 4, &set), 0);
    assert_int_equal(set, 0xf0);
    assert_int_equal(placement_best(pair, 8, 0xfe, 0x01, PLACE_PACK, 4, &set), 0);
    assert_int_equal(set & 0x0e, 0x0e);
    assert_int_equal(placement_best(pair, 8, 0xfe, 0x01, PLACE_SPREAD, 4, &set), 0);
    assert_int_equal(set, 0xf0);
    assert_int_equal(placement_strategy_parse("spread"), PLACE_SPREAD);
    assert_int_equal(placement_strategy_parse("random"), -1);
}

/* The fixture machines, with the pair scores the daemon derives from their inventories. */
static const char *const fixtures[] = {"dgx-h100", "dgx1-v100", "a100-pcie-4", "a100-mig", "mixed", "no-gpu", "broken-driver"};


/* Best score over every subset of exactly count GPUs among cand: a plain recursion over the
 * GPUs, nothing shared with placement.c but placement_score. */
static long brute_rec(const int *pair, size_t n, uint64_t cand, unsigned count, size_t i, uint64_t set)
{
    if ((unsigned)__builtin_popcountll(set) == count)
        return placement_score(pair, n, set);
    if (i == n)
        return -1;
    long a = -1, b;
    if (cand >> i & 1)
        a = brute_rec(pair, n, cand, count, i + 1, set | 1ull << i);
    b = brute_rec(pair, n, cand, count, i + 1, set);
    return a > b ? a : b;
}

static void check_best(const int *pair, size_t n, uint64_t busy, unsigned count)
{
    uint64_t all = n == 64 ? ~0ull : (1ull << n) - 1, cand = all & ~busy, set = 0;
    int rc = placement_best(pair, n, cand, busy, PLACE_TOPOLOGY, count, &set);
    if ((unsigned)__builtin_popcountll(cand) < count) {
        assert_int_equal(rc, -1);
        return;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(set & ~cand, 0);
    assert_int_equal(__builtin_popcountll(set), count);
    long got = placement_score(pair, n, set), want = brute_rec(pair, n, cand, count, 0, 0);
    if (got != want)
        print_error("n=%zu busy=%#llx count=%u: set %#llx scores %ld, best is %ld\n", n, (unsigned long long)busy,
                    count, (unsigned long long)set, got, want);
    assert_int_equal(got, want);
}

/* Every request size and every pattern of busy GPUs: all of them up to 8 GPUs; beyond, every
 * pattern of at most two busy GPUs and 500 random ones. */
static void check_machine(const int *pair, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            assert_int_equal(pair[i * n + j], pair[j * n + i]);
    if (n <= 8) {
        for (uint64_t busy = 0; busy < (1ull << n); busy++)
            for (unsigned count = 1; count <= n; count++)
                check_best(pair, n, busy, count);
        return;
    }
    for (size_t a = 0; a <= n; a++)
        for (size_t b = a; b <= n; b++) {
            uint64_t busy = (a < n ? 1ull << a : 0) | (b < n ? 1ull << b : 0);
            for (unsigned count = 1; count <= n; count++)
                check_best(pair, n, busy, count);
        }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < 500; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        check_best(pair, n, x & ((1ull << n) - 1), 1 + (unsigned)(x >> 40) % (unsigned)n);
    }
}

/* For every fixture machine with GPUs, with the pair scores the daemon derives from its
 * inventory, the topology strategy's set scores as high as the best subset there is. */
static void test_fixtures_optimal_against_brute_force(void **state)
{
    static gpu_inventory inv;
    static int pair[GPU_MAX * GPU_MAX];
    int machines = 0;
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        assert_int_equal(load_fixture(fixtures[f], &inv), 0);
        if (inv.n == 0)
            continue;
        machines++;
        gpu_pair_scores(&inv, pair);
        check_machine(pair, (size_t)inv.n);
    }
    assert_int_equal(machines, 6); /* all but no-gpu */
}

/* No fixture has more than 8 GPUs: a 12-GPU machine (three NVLinked groups of four, two
 * sockets) takes the bounded patterns. */
static void test_twelve_optimal_against_brute_force(void **state)
{
    int pair[144];
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++)
            pair[i * 12 + j] = i == j ? 0
                                      : placement_pair_score(i / 4 == j / 4 ? 2 + (i ^ j) % 2 : 0,
                                                             i / 6 == j / 6 ? 20 : 50, i / 6 == j / 6);
    check_machine(pair, 12);
}

/* rnx job status --detail's scores: the best set with every GPU free, and among those free now
 * (held, closed and busy GPUs out), each the brute-force best, whatever the strategy. */
static void test_best_scores(void **state)
{
    int pair[64];
    dgx1_pairs(pair);
    sched_gpu g[8];
    for (int i = 0; i < 8; i++)
        g[i] = (sched_gpu){.usable = 1, .memory_mb = 16384, .numa = i < 4 ? 0 : 1};
    g[7].closed = 1; /* draining: not free now, but part of the machine's best */
    sched_running run = {.seq = 1, .r = {.gpu_count = 2, .mig_profile = -1}, .gpus = 0x09 /* 0 and 3 */, .mig = -1};
    sched_input in = {.running = &run, .nrunning = 1, .gpus = g, .ngpus = 8, .held = 0x20 /* 5: scrubbing */,
                      .gpu_pair = pair, .strategy = PLACE_PACK};
    uint64_t free_now = 0xff & ~0x09ull & ~0x20ull & ~0x80ull;
    for (unsigned count = 1; count <= 4; count++) {
        sched_req r = {.gpu_count = count, .mig_profile = -1, .gpu_ids = 0x03 /* named: judged by count */};
        long best, best_free;
        sched_best_scores(&in, &r, &best, &best_free);
        assert_int_equal(best, brute_best(pair, 8, 0xff, count));
        assert_int_equal(best_free, brute_best(pair, 8, free_now, count));
    }
    /* one NUMA node: the best of each node's sets */
    sched_req r = {.gpu_count = 3, .mig_profile = -1, .single_numa = 1};
    long best, best_free;
    sched_best_scores(&in, &r, &best, &best_free);
    long n0 = brute_best(pair, 8, 0x0f, 3), n1 = brute_best(pair, 8, 0xf0, 3);
    assert_int_equal(best, n0 > n1 ? n0 : n1);
    assert_int_equal(best_free, -1); /* node 0 has 1 and 2 free, node 1 has 4 and 6 */
    /* nothing to compare: a MIG device, no GPU, no scores */
    r = (sched_req){.gpu_count = 0, .mig_profile = 2};
    sched_best_scores(&in, &r, &best, &best_free);
    assert_true(best == 0 && best_free == 0);
    r = (sched_req){.gpu_count = 2, .mig_profile = -1};
    in.gpu_pair = NULL;
    sched_best_scores(&in, &r, &best, &best_free);
    assert_true(best == 0 && best_free == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx1_quad_is_fully_nvlinked),
        cmocka_unit_test(test_optimal_against_brute_force),
        cmocka_unit_test(test_greedy_beyond_sixteen),
        cmocka_unit_test(test_strategies),
        cmocka_unit_test(test_fixtures_optimal_against_brute_force),
        cmocka_unit_test(test_twelve_optimal_against_brute_force),
        cmocka_unit_test(test_best_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
