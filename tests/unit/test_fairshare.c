#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/fairshare.h"

/* The rules of a bound of 192 (a share of 48, the last 24 kept for admins and users with at most
 * 8), row by row: who holds what, and the take's verdict. */
static void test_rules(void **state)
{
    (void)state;
    fairshare f = fairshare_of(192, 0, 8);
    assert_int_equal(f.share, 48);
    assert_int_equal(f.reserve, 24);
    static const struct {
        uint64_t held, mine, n;
        bool admin;
        enum fairshare_verdict want;
    } rows[] = {
        {0, 0, 4, false, FAIRSHARE_OK},
        {44, 44, 4, false, FAIRSHARE_OK},          /* up to its share */
        {48, 48, 4, false, FAIRSHARE_SHARE},       /* past it */
        {48, 48, 4, true, FAIRSHARE_OK},           /* an admin has no share */
        {164, 20, 4, false, FAIRSHARE_OK},         /* up to the reserve */
        {168, 20, 4, false, FAIRSHARE_RESERVED},   /* into it, holding more than 8 */
        {168, 4, 4, false, FAIRSHARE_OK},          /* into it, holding 8 with the take */
        {168, 0, 8, false, FAIRSHARE_OK},
        {168, 0, 9, false, FAIRSHARE_RESERVED},
        {168, 40, 4, true, FAIRSHARE_OK},          /* an admin takes from it */
        {188, 0, 4, false, FAIRSHARE_OK},          /* the last of it */
        {189, 0, 4, false, FAIRSHARE_FULL},        /* past the bound, for anyone */
        {189, 0, 4, true, FAIRSHARE_FULL},
        {200, 0, 1, true, FAIRSHARE_FULL},         /* counted past it already */
        {0, 60, 1, false, FAIRSHARE_SHARE},        /* holding past its share already (the bound lowered) */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        enum fairshare_verdict got = fairshare_take(&f, rows[i].held, rows[i].mine, rows[i].n, rows[i].admin);
        if (got != rows[i].want)
            fail_msg("row %zu: held %llu, mine %llu, n %llu: %d, want %d", i, (unsigned long long)rows[i].held,
                     (unsigned long long)rows[i].mine, (unsigned long long)rows[i].n, got, rows[i].want);
    }
}

/* Four users each taking its share in turn fill the bound but for the reserve; a fifth user and
 * an admin then still get theirs from it. */
static void test_four_users_leave_the_reserve(void **state)
{
    (void)state;
    fairshare f = fairshare_of(64, 64, 2); /* a server's 64 connections, server.max_connections_per_user 64 */
    assert_int_equal(f.share, 16);
    uint64_t held = 0, mine[5] = {0};
    for (int u = 0; u < 4; u++)
        while (fairshare_take(&f, held, mine[u], 1, false) == FAIRSHARE_OK)
            held++, mine[u]++;
    assert_int_equal(held, 56);
    assert_int_equal(mine[3], 8);
    assert_int_equal(fairshare_take(&f, held, mine[3], 1, false), FAIRSHARE_RESERVED);
    assert_int_equal(fairshare_take(&f, held, mine[4], 1, false), FAIRSHARE_OK);
    assert_int_equal(fairshare_take(&f, held, mine[4], 2, false), FAIRSHARE_OK);
    assert_int_equal(fairshare_take(&f, held, mine[4], 3, false), FAIRSHARE_RESERVED);
    assert_int_equal(fairshare_take(&f, held, 0, 8, true), FAIRSHARE_OK);
    /* a share configured below the quarter; a bound below four floors */
    assert_int_equal(fairshare_of(4096, 64, 2).share, 64);
    assert_int_equal(fairshare_of(4, 64, 2).share, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_four_users_leave_the_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
