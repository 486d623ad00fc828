#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sched/placement.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx1_quad_is_fully_nvlinked),
        cmocka_unit_test(test_optimal_against_brute_force),
        cmocka_unit_test(test_greedy_beyond_sixteen),
        cmocka_unit_test(test_strategies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
