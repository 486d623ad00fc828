/* Unit tests for src/common/promtext.c: the Prometheus text exposition format 0.0.4 that
 * GET /metrics answers (label escaping, numbers, HELP/TYPE lines, histograms). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/promtext.h"

static void test_label_escaping(void **state)
{
    prom_buf l = {0};
    prom_label(&l, "job_name", "a\"b\\c\nd");
    assert_string_equal(l.p, "job_name=\"a\\\"b\\\\c\\nd\"");
    prom_label(&l, "empty", NULL);
    assert_string_equal(l.p, "job_name=\"a\\\"b\\\\c\\nd\",empty=\"\"");
    prom_free(&l);
    /* bytes that are not UTF-8 would make the whole scrape fail: they become '?' */
    prom_label(&l, "name", "ok\xff\xfe caf\xc3\xa9");
    assert_string_equal(l.p, "name=\"ok?? caf\xc3\xa9\"");
    prom_free(&l);
}

static void test_numbers(void **state)
{
    char b[64];
    static const struct { double v; const char *text; } cases[] = {
        {0, "0"},           {1, "1"},          {-3, "-3"},       {85520809984.0, "85520809984"},
        {0.1, "0.1"},       {0.0005, "0.0005"}, {1.5e-05, "1.5e-05"}, {2.007419, "2.007419"},
        {1e20, "1e+20"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        prom_format_double(cases[i].v, b, sizeof b);
        assert_string_equal(b, cases[i].text);
        assert_true(strtod(b, NULL) == cases[i].v);
    }
    prom_format_double(INFINITY, b, sizeof b);
    assert_string_equal(b, "+Inf");
    prom_format_double(-INFINITY, b, sizeof b);
    assert_string_equal(b, "-Inf");
    prom_format_double(NAN, b, sizeof b);
    assert_string_equal(b, "NaN");
    /* the shortest text that reads back exactly */
    prom_format_double(1.0 / 3, b, sizeof b);
    assert_true(strtod(b, NULL) == 1.0 / 3);
}

static void test_family_and_samples(void **state)
{
    prom_buf b = {0}, l = {0};
    prom_family(&b, "joblet_x", "gauge", "a \\ help\nwith two lines");
    prom_label(&l, "gpu", "0");
    prom_sample(&b, "joblet_x", l.p, 0.25);
    prom_sample_with(&b, "joblet_x", l.p, "state", "allocated", 1);
    prom_sample_u(&b, "joblet_x", NULL, UINT64_MAX);
    prom_sample(&b, "joblet_x", "", 2);
    char *t = prom_take(&b);
    assert_string_equal(t, "# HELP joblet_x a \\\\ help\\nwith two lines\n"
                           "# TYPE joblet_x gauge\n"
                           "joblet_x{gpu=\"0\"} 0.25\n"
                           "joblet_x{gpu=\"0\",state=\"allocated\"} 1\n"
                           "joblet_x 18446744073709551615\n"
                           "joblet_x 2\n");
    free(t);
    prom_free(&l);
    assert_null(b.p);
    t = prom_take(&b); /* nothing written: "" */
    assert_string_equal(t, "");
    free(t);
}

static void test_histogram(void **state)
{
    static const double le[] = {0.1, 1, 10};
    prom_hist h;
    prom_hist_init(&h, le, 3);
    prom_hist_observe(&h, 0.05);
    prom_hist_observe(&h, 0.1);  /* le is inclusive */
    prom_hist_observe(&h, 5);
    prom_hist_observe(&h, 100);
    prom_hist_observe(&h, -1);   /* a clock that stepped back: 0 */
    prom_hist_observe(&h, NAN);  /* ignored */
    prom_buf b = {0};
    prom_hist_write(&b, "joblet_h_seconds", "h", NULL, &h);
    assert_string_equal(b.p, "# HELP joblet_h_seconds h\n"
                             "# TYPE joblet_h_seconds histogram\n"
                             "joblet_h_seconds_bucket{le=\"0.1\"} 3\n"
                             "joblet_h_seconds_bucket{le=\"1\"} 3\n"
                             "joblet_h_seconds_bucket{le=\"10\"} 4\n"
                             "joblet_h_seconds_bucket{le=\"+Inf\"} 5\n"
                             "joblet_h_seconds_sum 105.15\n"
                             "joblet_h_seconds_count 5\n");
    prom_free(&b);
    prom_buf l = {0};
    prom_label(&l, "method", "GET");
    prom_hist_write(&b, "joblet_h_seconds", "h", l.p, &h);
    assert_non_null(strstr(b.p, "joblet_h_seconds_bucket{method=\"GET\",le=\"+Inf\"} 5\n"));
    assert_non_null(strstr(b.p, "joblet_h_seconds_count{method=\"GET\"} 5\n"));
    prom_free(&b);
    prom_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_family_and_samples),
        cmocka_unit_test(test_histogram),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
