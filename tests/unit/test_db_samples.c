/* Unit tests for the console's GPU samples (src/store/db.c, schema 9): minutes older than a day
 * become one row per hour holding their means, rows older than the retention go, so the table's
 * size is bounded whatever the uptime; the series answers means per bucket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/db.h"

#define MIN 60000LL
#define HOUR 3600000LL
#define DAY 86400000LL

static void test_compact_bounds_and_means(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_db_samples.XXXXXX", path[128], cmd[160];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/joblet.db", dir);
    jerr e = {0};
    db *d = db_open(path, &e);
    if (!d)
        fail_msg("%s", e.msg);
    assert_int_equal(db_schema_version(d), 28);
    const int64_t now = 100 * DAY;
    /* three days of minutes for two GPUs: util = the minute within its hour, unknown power */
    for (int64_t t = now - 3 * DAY; t < now; t += MIN)
        for (int g = 0; g < 2; g++) {
            db_sample s = {.gpu = g, .t_ms = t, .util = (double)((t % HOUR) / MIN), .temp = 40, .mem_mb = 100,
                           .power = -1, .allocated = g};
            assert_int_equal(db_sample_add(d, &s, &e), 0);
        }
    assert_int_equal(db_flush(d, &e), 0);
    assert_int_equal(db_sample_rows(d), 2 * 3 * 24 * 60);
    /* keep 2 days: the last day as minutes, the day before as hours, the first day gone */
    assert_int_equal(db_sample_compact(d, now - DAY, now - 2 * DAY, &e), 0);
    assert_int_equal(db_flush(d, &e), 0);
    assert_int_equal(db_sample_rows(d), 2 * (24 * 60 + 24));
    /* compacting again changes nothing */
    assert_int_equal(db_sample_compact(d, now - DAY, now - 2 * DAY, &e), 0);
    assert_int_equal(db_sample_rows(d), 2 * (24 * 60 + 24));
    json_t *series = db_sample_series(d, now - 2 * DAY, HOUR, &e);
    assert_non_null(series);
    assert_int_equal(json_array_size(series), 48);
    json_t *first = json_array_get(series, 0);
    /* the hourly mean of 0..59 is 29.5; GPU 0 never allocated, GPU 1 always: 50 % */
    assert_true(json_real_value(json_object_get(first, "util_pct")) > 29.4 &&
                json_real_value(json_object_get(first, "util_pct")) < 29.6);
    assert_true(json_real_value(json_object_get(first, "allocated_pct")) > 49.9);
    assert_true(json_is_null(json_object_get(first, "power_w")));
    json_decref(series);
    db_close(d);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compact_bounds_and_means),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
