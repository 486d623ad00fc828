#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gpu/xid_policy.h"

/* The documented table, row by row (docs/health.md): application errors leave the GPU
 * in service, 94 costs the jobs their work, ECC/NVLink/GSP faults reset, 79 takes it offline. */
static void test_table(void **state)
{
    static const struct { int xid; enum xid_action a; } rows[] = {
        {13, XA_APP}, {31, XA_APP}, {43, XA_APP}, {45, XA_APP}, {68, XA_APP},
        {94, XA_RESTART_JOB},
        {48, XA_RESET}, {74, XA_RESET}, {95, XA_RESET}, {119, XA_RESET}, {120, XA_RESET},
        {63, XA_DRAIN_RESET}, {64, XA_DRAIN_RESET}, {92, XA_DRAIN_RESET},
        {79, XA_OFFLINE},
        {12345, XA_APP}, /* unknown */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *m = NULL;
        assert_int_equal(xid_policy_action(NULL, rows[i].xid, &m), rows[i].a);
        assert_non_null(m);
    }
    const char *m;
    xid_policy_action(NULL, 79, &m);
    assert_string_equal(m, "GPU has fallen off the bus");
}

static void test_overrides(void **state)
{
    xid_policy p;
    char err[256];
    assert_int_equal(xid_policy_parse(&p, "79=reset, 13=offline,12345=drain_reset", err, sizeof err), 0);
    assert_int_equal(p.n, 3);
    assert_int_equal(xid_policy_action(&p, 79, NULL), XA_RESET);
    assert_int_equal(xid_policy_action(&p, 13, NULL), XA_OFFLINE);
    assert_int_equal(xid_policy_action(&p, 12345, NULL), XA_DRAIN_RESET);
    assert_int_equal(xid_policy_action(&p, 48, NULL), XA_RESET); /* untouched rows keep the table's */
    static const char *const bad[] = {"79", "79=explode", "x=app", "0=app", "79=", "=app"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(xid_policy_parse(&p, bad[i], err, sizeof err), -1);
        assert_non_null(strstr(err, "gpu.xid_policy: '"));
    }
    assert_int_equal(xid_policy_parse(&p, "", err, sizeof err), 0);
    assert_int_equal(p.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table), cmocka_unit_test(test_overrides)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
