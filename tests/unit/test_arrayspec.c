/* common/arrayspec.c: job arrays' task lists in Slurm's syntax. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/arrayspec.h"

static arrayspec a, b;

static void test_forms(void **state)
{
    (void)state;
    jerr e = {0};
    char out[200];
    assert_int_equal(arrayspec_parse("0-99%8", "array", true, &a, &e), 0);
    assert_int_equal(a.count, 100);
    assert_int_equal(a.throttle, 8);
    assert_int_equal(a.min, 0);
    assert_int_equal(a.max, 99);
    arrayspec_format(&a, true, out, sizeof out);
    assert_string_equal(out, "0-99%8");
    assert_int_equal(arrayspec_parse("1,3,7", "array", true, &a, &e), 0);
    assert_int_equal(a.count, 3);
    assert_int_equal(arrayspec_task(&a, 0), 1);
    assert_int_equal(arrayspec_task(&a, 2), 7);
    assert_int_equal(a.min, 1);
    assert_int_equal(a.max, 7);
    /* a step: 0,4,8,12; the end normalised to the last id the step reaches */
    assert_int_equal(arrayspec_parse("0-15:4", "array", true, &a, &e), 0);
    assert_int_equal(a.count, 4);
    assert_int_equal(arrayspec_task(&a, 3), 12);
    assert_int_equal(a.max, 12);
    arrayspec_format(&a, false, out, sizeof out);
    assert_string_equal(out, "0-12:4");
    assert_true(arrayspec_has(&a, 8));
    assert_false(arrayspec_has(&a, 9));
    assert_false(arrayspec_has(&a, 16));
    /* order as given; min and max over all */
    assert_int_equal(arrayspec_parse("20-29:2,0-9", "array", true, &a, &e), 0);
    assert_int_equal(a.count, 15);
    assert_int_equal(arrayspec_task(&a, 0), 20);
    assert_int_equal(arrayspec_task(&a, 5), 0);
    assert_int_equal(a.min, 0);
    assert_int_equal(a.max, 28);
    assert_int_equal(arrayspec_parse("0-99999", "array", true, &a, &e), 0);
    assert_int_equal(a.count, 100000);
    assert_int_equal(arrayspec_parse("4000000", "array", true, &a, &e), 0);
}

static void test_refusals(void **state)
{
    (void)state;
    struct {
        const char *in, *msg;
    } bad[] = {
        {"", "array: an empty list of tasks"},
        {"x", "array: 'x' is not a list of task ids"},
        {"5-3", "array: '5-3': a range runs from a lower id to a higher one"},
        {"0-9:0", "array: '0-9:0': a range's step is a whole number from 1"},
        {"4000001", "array: '4000001' is not a list of task ids"},
        {"0-9%0", "array: '0-9%0': %N runs at most N tasks at once"},
        {"0-9,5", "array: '0-9,5' names a task twice"},
        {"0-20:2,1-21:4,8", "array: '0-20:2,1-21:4,8' names a task twice"},
        {"1,2,", "array: '1,2,' is not a list of task ids"},
        {"0-9%", "array: '0-9%': %N runs at most N tasks at once"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        jerr e = {0};
        assert_int_equal(arrayspec_parse(bad[i].in, "array", true, &a, &e), -1);
        assert_string_equal(e.field, "array");
        if (strncmp(e.msg, bad[i].msg, strlen(bad[i].msg)))
            fail_msg("'%s': got \"%s\", want it to start \"%s\"", bad[i].in, e.msg, bad[i].msg);
    }
    /* %N past the bound says the bound, as an array's throttle on its own does (test_throttle_check) */
    jerr te = {0};
    assert_int_equal(arrayspec_parse("0-3%4000001", "array", true, &a, &te), -1);
    assert_string_equal(te.msg, "array: '0-3%4000001': %N runs at most N tasks at once; N is a whole number from 1 to "
                                "4000000");
    te = (jerr){0};
    assert_int_equal(arrayspec_parse("0-3%0", "array", true, &a, &te), -1);
    assert_string_equal(te.msg, "array: '0-3%0': %N runs at most N tasks at once; N is a whole number from 1 to 4000000");
    /* interleaved progressions that never meet are fine: evens and odds */
    jerr e = {0};
    assert_int_equal(arrayspec_parse("0-20:2,1-21:2", "array", true, &a, &e), 0);
    assert_int_equal(a.count, 22);
    /* a reference's list takes no throttle */
    assert_int_equal(arrayspec_parse("3-5%2", "tasks", false, &a, &e), -1);
    assert_string_equal(e.field, "tasks");
}

/* count_from against counting one task at a time */
static void test_count_from(void **state)
{
    (void)state;
    jerr e = {0};
    const char *lists[] = {"0-99", "0-99:3,200-300:7", "5,9,11-40:2", "1000-2000:13"};
    const char *subs[] = {"3-5", "0-300:2", "9", "1000-1999", "50-60,70-80:5"};
    for (size_t i = 0; i < 4; i++)
        for (size_t s = 0; s < 5; s++) {
            assert_int_equal(arrayspec_parse(lists[i], "array", true, &a, &e), 0);
            assert_int_equal(arrayspec_parse(subs[s], "tasks", false, &b, &e), 0);
            for (uint64_t k = 0; k <= a.count; k += 7) {
                uint64_t want = 0;
                for (uint64_t x = k; x < a.count; x++)
                    want += arrayspec_has(&b, arrayspec_task(&a, x));
                assert_int_equal(arrayspec_count_from(&a, k, &b), want);
            }
        }
}

static void test_index(void **state)
{
    (void)state;
    jerr e = {0};
    assert_int_equal(arrayspec_parse("5,0-15:4,100-102,7", "array", true, &a, &e), 0);
    for (uint64_t k = 0; k < a.count; k++)
        assert_int_equal(arrayspec_index(&a, arrayspec_task(&a, k)), (int64_t)k);
    assert_int_equal(arrayspec_index(&a, 1), -1);
    assert_int_equal(arrayspec_index(&a, 103), -1);
    assert_int_equal(arrayspec_index(&a, 4000000), -1);
    assert_int_equal(arrayspec_parse("0-4000000", "array", true, &a, &e), 0);
    assert_int_equal(arrayspec_index(&a, 4000000), 4000000);
}

static void test_range_of(void **state)
{
    (void)state;
    jerr e = {0};
    assert_int_equal(arrayspec_parse("10-20:5,3,0-2", "array", true, &a, &e), 0);
    assert_ptr_equal(arrayspec_range_of(&a, 15), &a.r[0]);
    assert_null(arrayspec_range_of(&a, 16)); /* between its steps */
    assert_ptr_equal(arrayspec_range_of(&a, 3), &a.r[1]);
    assert_ptr_equal(arrayspec_range_of(&a, 0), &a.r[2]);
    assert_null(arrayspec_range_of(&a, 21));
    assert_int_equal(arrayspec_range_count(&a.r[0]), 3);
    assert_int_equal(arrayspec_range_count(&a.r[1]), 1);
    assert_true(arrayspec_has(&a, 20) && !arrayspec_has(&a, 4));
}

static void test_refs(void **state)
{
    (void)state;
    jerr e = {0};
    char base[64];
    assert_int_equal(arrayspec_split_ref("3f2a_7", base, sizeof base, &a, &e), 1);
    assert_string_equal(base, "3f2a");
    assert_int_equal(a.count, 1);
    assert_int_equal(arrayspec_task(&a, 0), 7);
    assert_int_equal(arrayspec_split_ref("sweep_[3-5,9]", base, sizeof base, &a, &e), 1);
    assert_string_equal(base, "sweep");
    assert_int_equal(a.count, 4);
    /* not of the form: plain references */
    assert_int_equal(arrayspec_split_ref("my_job", base, sizeof base, &a, &e), 0);
    assert_int_equal(arrayspec_split_ref("3f2a", base, sizeof base, &a, &e), 0);
    assert_int_equal(arrayspec_split_ref("_7", base, sizeof base, &a, &e), 0);
    assert_int_equal(arrayspec_split_ref("x_", base, sizeof base, &a, &e), 0);
    /* of the form, with a bad list */
    assert_int_equal(arrayspec_split_ref("x_[5-3]", base, sizeof base, &a, &e), -1);
    assert_string_equal(e.field, "tasks");
}

/* A %N on its own: the bounds a list's %N has, and the message naming the field or the flag. */
static void test_throttle_check(void **state)
{
    (void)state;
    jerr e = {0};
    assert_int_equal(arrayspec_throttle_check(0, true, "array_throttle", NULL, &e), 0);
    assert_int_equal(arrayspec_throttle_check(ARRAYSPEC_MAX_ID, true, "array_throttle", NULL, &e), 0);
    arrayspec most;
    assert_int_equal(arrayspec_parse("0-9%4000000", "array", true, &most, &e), 0); /* the same bound */
    assert_int_equal(arrayspec_throttle_check(ARRAYSPEC_MAX_ID + 1, true, "array_throttle", NULL, &e), -1);
    assert_string_equal(e.field, "array_throttle");
    assert_string_equal(e.msg, "array_throttle: must be a whole number of tasks to run at once, from 1 to 4000000, "
                               "or 0 for no limit");
    e = (jerr){0};
    assert_int_equal(arrayspec_throttle_check(-1, true, "array_throttle", NULL, &e), -1);
    e = (jerr){0};
    assert_int_equal(arrayspec_throttle_check(3, false, "--throttle", "x", &e), -1);
    assert_string_equal(e.msg, "--throttle: 'x' must be a whole number of tasks to run at once, from 1 to 4000000, "
                               "or 0 for no limit");
}

/* first_common against a look at each id; and the text of interleaved ranges with steps (an
 * array's `ahead`, saved in its row: core/arrays.c) parses back to the same ranges */
static void test_first_common(void **state)
{
    (void)state;
    const int64_t pr[][3] = {{0, 1, 50}, {0, 2, 40}, {1, 2, 41}, {3, 7, 90}, {10, 4, 10}, {5, 6, 95}, {40, 3, 30}};
    size_t np = sizeof pr / sizeof pr[0];
    for (size_t i = 0; i < np; i++)
        for (size_t j = 0; j < np; j++) {
            int64_t want = -1;
            for (int64_t x = pr[i][0]; x <= pr[i][2] && want < 0; x += pr[i][1])
                if (x >= pr[j][0] && x <= pr[j][2] && (x - pr[j][0]) % pr[j][1] == 0)
                    want = x;
            assert_int_equal(arrayspec_first_common(pr[i][0], pr[i][1], pr[i][2], pr[j][0], pr[j][1], pr[j][2]),
                             want);
        }
    assert_int_equal(arrayspec_first_common(0, 2, 4000000, 1, 2, 3999999), -1);
    assert_int_equal(arrayspec_first_common(3999998, 3999999, 4000000, 0, 1, 4000000), 3999998);
    jerr e = {0};
    char out[128];
    assert_int_equal(arrayspec_parse("1-401:2,2-600:2,700,702-704", "ahead", false, &a, &e), 0);
    arrayspec_format(&a, false, out, sizeof out);
    assert_string_equal(out, "1-401:2,2-600:2,700,702-704");
    assert_int_equal(a.count, 201 + 300 + 1 + 3);
    assert_true(arrayspec_has(&a, 401) && arrayspec_has(&a, 600) && !arrayspec_has(&a, 403) && !arrayspec_has(&a, 701));
    /* the widest range text there is, 256 times: what the row's buffer for ahead holds */
    char big[256 * 24 + 1];
    size_t l = 0;
    for (int i = 0; i < 256; i++)
        l += (size_t)snprintf(big + l, sizeof big - l, "%s%d-%d:%d", i ? "," : "", 1000000 + i, 3999000 + i, 2999000);
    assert_int_equal(arrayspec_parse(big, "ahead", false, &b, &e), 0);
    char back[6400];
    arrayspec_format(&b, false, back, sizeof back);
    assert_string_equal(back, big);
}

/* A list said in a message: whole items, ",..." after those that fit (cut mid-number it named a
 * range never named: "3055000-"). */
static void test_format_cut(void **state)
{
    (void)state;
    arrayspec l;
    jerr e = {0};
    char out[16];
    assert_int_equal(arrayspec_parse("1-3,5", "tasks", false, &l, &e), 0);
    arrayspec_format_cut(&l, out, sizeof out);
    assert_string_equal(out, "1-3,5");
    assert_int_equal(arrayspec_parse("3000000-3000500:5,3001000-3001500:5", "tasks", false, &l, &e), 0);
    arrayspec_format_cut(&l, out, sizeof out);
    assert_string_equal(out, "...");              /* not even the first fits */
    char mid[24];
    arrayspec_format_cut(&l, mid, sizeof mid);
    assert_string_equal(mid, "3000000-3000500:5,...");
    assert_int_equal(arrayspec_parse("10,11,13,15,17,19", "tasks", false, &l, &e), 0);
    char exact[18]; /* "10,11,13,15,17,19": 17 bytes and its 0 */
    arrayspec_format_cut(&l, exact, sizeof exact);
    assert_string_equal(exact, "10,11,13,15,17,19");
    arrayspec_format_cut(&l, exact, sizeof exact - 1);
    assert_string_equal(exact, "10,11,13,15,...");
}

/* A list kept as a block of its ranges (arrayspec_dup) reads as the whole one, and arrayspec_copy
 * makes a whole one of it again; the empty list reads as a list of no task. */
static void test_dup_copy_empty(void **state)
{
    (void)state;
    jerr e = {0};
    char out[200];
    assert_int_equal(arrayspec_empty.n, 0);
    assert_int_equal(arrayspec_empty.count, 0);
    assert_false(arrayspec_has(&arrayspec_empty, 0));
    assert_int_equal(arrayspec_index(&arrayspec_empty, 0), -1);
    assert_null(arrayspec_range_of(&arrayspec_empty, 7));
    arrayspec_format(&arrayspec_empty, true, out, sizeof out);
    assert_string_equal(out, "");
    assert_int_equal(arrayspec_parse("0-99", "array", true, &a, &e), 0);
    assert_int_equal(arrayspec_count_from(&a, 0, &arrayspec_empty), 0);
    /* sized to its ranges: "0-99" one range, a list of 256 the whole struct */
    assert_int_equal(arrayspec_size(0), offsetof(arrayspec, r));
    assert_int_equal(arrayspec_size(1), offsetof(arrayspec, r) + sizeof(arrayspec_range));
    assert_int_equal(arrayspec_size(ARRAYSPEC_MAX_RANGES), offsetof(arrayspec, r) + sizeof a.r);
    assert_true(arrayspec_size(1) < 64);
    assert_int_equal(arrayspec_parse("0-99:3,200,300-310%4", "array", true, &a, &e), 0);
    arrayspec *d = arrayspec_dup(&a);
    assert_non_null(d);
    assert_int_equal(d->n, 3);
    assert_int_equal(d->count, a.count);
    assert_int_equal(d->min, 0);
    assert_int_equal(d->max, 310);
    assert_int_equal(d->throttle, 4);
    assert_true(arrayspec_has(d, 99) && arrayspec_has(d, 200) && arrayspec_has(d, 310) && !arrayspec_has(d, 98));
    assert_int_equal(arrayspec_index(d, 200), 34);
    arrayspec_format(d, true, out, sizeof out);
    assert_string_equal(out, "0-99:3,200,300-310%4");
    /* back to a whole one, which grows as any does */
    memset(&b, 0xff, sizeof b);
    arrayspec_copy(&b, d);
    assert_int_equal(b.n, 3);
    assert_int_equal(b.count, a.count);
    assert_memory_equal(b.r, a.r, 3 * sizeof *a.r);
    b.r[b.n++] = (arrayspec_range){400, 400, 1};
    b.count++;
    b.max = 400;
    arrayspec_format(&b, false, out, sizeof out);
    assert_string_equal(out, "0-99:3,200,300-310,400");
    /* a block of a block, and of the empty list */
    arrayspec *d2 = arrayspec_dup(d);
    assert_non_null(d2);
    assert_memory_equal(d2, d, arrayspec_size(3));
    free(d2);
    free(d);
    d = arrayspec_dup(&arrayspec_empty);
    assert_non_null(d);
    assert_int_equal(d->n, 0);
    arrayspec_copy(&b, d);
    assert_int_equal(b.n, 0);
    assert_int_equal(b.count, 0);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_range_of),
        cmocka_unit_test(test_count_from),
        cmocka_unit_test(test_first_common),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_throttle_check),
        cmocka_unit_test(test_format_cut),
        cmocka_unit_test(test_dup_copy_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
