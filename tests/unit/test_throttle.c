#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gpu/throttle.h"

/* nvml.h's bits, one by one, then together; an unknown bit is named by its value */
static void test_names(void **state)
{
    static const struct { uint64_t mask; const char *want; } rows[] = {
        {0x0, ""},
        {0x1, "gpu_idle"},
        {0x2, "applications_clocks_setting"},
        {0x4, "sw_power_cap"},
        {0x8, "hw_slowdown"},
        {0x10, "sync_boost"},
        {0x20, "sw_thermal_slowdown"},
        {0x40, "hw_thermal_slowdown"},
        {0x80, "hw_power_brake_slowdown"},
        {0x100, "display_clock_setting"},
        {0x44, "sw_power_cap,hw_thermal_slowdown"},
        {0x400 | 0x1, "gpu_idle,0x400"},
        {1ull << 63, "0x8000000000000000"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *names[8];
        char unknown[8 * 24], joined[256] = "";
        size_t n = throttle_names(rows[i].mask, names, 8, unknown);
        for (size_t k = 0; k < n; k++) {
            if (k)
                strcat(joined, ",");
            strcat(joined, names[k]);
        }
        assert_string_equal(joined, rows[i].want);
    }
    /* at most max names */
    const char *names[2];
    char unknown[2 * 24];
    assert_int_equal(throttle_names(0xff, names, 2, unknown), 2);
    assert_string_equal(names[1], "applications_clocks_setting");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_names)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
