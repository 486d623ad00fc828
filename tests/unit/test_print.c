/* Unit tests for rnx's escaping printers (src/cli/print.c): print_textf escapes every %s and %c
 * argument and nothing of its format, and formats numbers, widths and precisions as printf does;
 * text_escape, cell_text, print_text_lines and the tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/print.h"

/* what print_textf(f, ...) wrote */
#define TEXTF(...)                                                                                    \
    ({                                                                                                \
        char *out_ = NULL;                                                                            \
        size_t len_ = 0;                                                                              \
        FILE *f_ = open_memstream(&out_, &len_);                                                      \
        print_textf(f_, __VA_ARGS__);                                                                 \
        fclose(f_);                                                                                   \
        out_;                                                                                         \
    })

static void expect_textf(char *got, const char *want)
{
    assert_string_equal(got, want);
    free(got);
}

static void test_strings_escaped_format_not(void **state)
{
    (void)state;
    const char *hostile = "\x1b]0;t\x07\x1b[2J\rX\ny\t\x7f caf\xc3\xa9 \xff";
    expect_textf(TEXTF("name: %s\n", hostile), "name: \\x1b]0;t\\x07\\x1b[2J\\x0dX\\ny\\t\\x7f caf\xc3\xa9 \\xff\n");
    /* the format's own control characters are the caller's: kept */
    expect_textf(TEXTF("\r\033[K%s\n\n", "a\nb"), "\r\033[Ka\\nb\n\n");
    expect_textf(TEXTF("%c|%c|%c", 'a', '\n', 0x1b), "a|\\n|\\x1b");
    expect_textf(TEXTF("100%% %s", "x"), "100% x");
    /* Unicode's controls: C1 (U+009B is CSI in xterm, U+0085 NEL), U+2028/2029, bidi overrides,
     * embeddings, isolates and marks; the characters around them, and é, kept (issue 25) */
    expect_textf(TEXTF("%s", "a\xc2\x9b" "2Jb\xc2\x85" "c\xe2\x80\xa8" "d\xe2\x80\xa9" "e\xe2\x80\xae" "f"),
                 "a\\u009b2Jb\\u0085c\\u2028d\\u2029e\\u202ef");
    expect_textf(TEXTF("%s", "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8"
                             "\xe2\x81\xa9\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c"),
                 "\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c");
    /* neighbours that are text: U+00A0, U+2027, U+202F, U+2065 (unassigned but not a control),
     * U+2070, and a cut sequence (\xe2\x80 then the end) */
    expect_textf(TEXTF("%s", "\xc2\xa0\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xb0\xe2\x80"),
                 "\xc2\xa0\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xb0\\xe2\\x80");
}

static void test_as_printf(void **state)
{
    (void)state;
    char want[256];
    snprintf(want, sizeof want, "[%-8s|%8s|%.3s|%-*s|%*.*s]", "ab", "cd", "efghij", 6, "k", 5, 2, "lmnop");
    expect_textf(TEXTF("[%-8s|%8s|%.3s|%-*s|%*.*s]", "ab", "cd", "efghij", 6, "k", 5, 2, "lmnop"), want);
    snprintf(want, sizeof want, "%d %i %ld %lld %zu %zd %u %lu %llu %x %X %o %05d %-4d| %+d %jd %td %hhd %hd",
             -1, 2, -3L, -4LL, (size_t)5, (ssize_t)-6, 7u, 8UL, 9ULL, 255u, 255u, 8u, 42, 7, 3, (intmax_t)-9,
             (ptrdiff_t)-10, 11, 12);
    expect_textf(TEXTF("%d %i %ld %lld %zu %zd %u %lu %llu %x %X %o %05d %-4d| %+d %jd %td %hhd %hd", -1, 2, -3L,
                       -4LL, (size_t)5, (ssize_t)-6, 7u, 8UL, 9ULL, 255u, 255u, 8u, 42, 7, 3, (intmax_t)-9,
                       (ptrdiff_t)-10, 11, 12),
                 want);
    snprintf(want, sizeof want, "%.2f %g %e %5.1f %Lg %%", 3.14159, 0.5, 1e10, 2.25, (long double)1.5);
    expect_textf(TEXTF("%.2f %g %e %5.1f %Lg %%", 3.14159, 0.5, 1e10, 2.25, (long double)1.5), want);
    /* the arguments after a %s are read in their places */
    expect_textf(TEXTF("%s=%lld %s=%.1f %s", "a", 1LL, "b\x01", 2.0, "c"), "a=1 b\\x01=2.0 c");
}

static void test_escape_cells_lines(void **state)
{
    (void)state;
    char *e = text_escape("a\x1b" "b\n");
    assert_string_equal(e, "a\\x1bb\\n");
    free(e);
    e = text_escape(NULL);
    assert_string_equal(e, "");
    free(e);
    char *c = cell_text("ab\x1b[2Jcdef", 10); /* escaped first, then cut: ab\x1b[2J... */
    assert_string_equal(c, "ab\\x1b[...");
    free(c);
    c = cell_text("caf\xc3\xa9", 4);
    assert_string_equal(c, "caf\xc3\xa9");
    free(c);

    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    print_text_lines(f, "line 1\n\x1b[2Jline 2\r\n\nlast");
    fclose(f);
    assert_string_equal(out, "line 1\n\\x1b[2Jline 2\\x0d\n\nlast");
    free(out);

    static const char *const hdr[] = {"A", "B"};
    table *t = table_new(2, hdr);
    const char *row[] = {"x\ny", "\x07"};
    table_add(t, row);
    f = open_memstream(&out, &len);
    table_print(t, f);
    fclose(f);
    table_free(t);
    assert_string_equal(out, "A     B\nx\\ny  \\x07\n");
    free(out);
}

/* End reason gpu_error: the job's gpu_fault (XID, admin command, neither) in words */
static void test_end_reason_gpu_fault(void **state)
{
    static const struct { const char *job, *want; } rows[] = {
        {"{\"end_reason\": \"gpu_error\", \"gpu_fault\": {\"gpu\": 3, \"uuid\": \"GPU-x\", \"xid\": 79, "
         "\"meaning\": \"GPU has fallen off the bus\", \"action\": \"offline\", \"by_uid\": null}}",
         "failed: GPU 3 XID 79 (GPU has fallen off the bus; XID policy: offline)"},
        {"{\"end_reason\": \"gpu_error\", \"gpu_fault\": {\"gpu\": 3, \"xid\": null, \"meaning\": null, "
         "\"action\": \"offline --force\", \"by_uid\": 0}}",
         "failed: GPU 3 went offline (admin uid 0: rnx gpu offline --force)"},
        {"{\"end_reason\": \"gpu_error\", \"gpu_fault\": {\"gpu\": 1, \"xid\": null, \"action\": \"drain --force\", "
         "\"by_uid\": 1000}}",
         "failed: GPU 1 was drained (admin uid 1000: rnx gpu drain --force)"},
        /* a job from before gpu_fault existed: the error alone */
        {"{\"end_reason\": \"gpu_error\", \"gpu_fault\": null, \"error\": \"GPU 2 failed: XID 48: x\"}",
         "failed: GPU error: GPU 2 failed: XID 48: x"},
        {"{\"end_reason\": \"gpu_error\"}", "failed: GPU error"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *j = json_loads(rows[i].job, 0, NULL);
        assert_non_null(j);
        char out[256];
        fmt_end_reason(j, out, sizeof out);
        assert_string_equal(out, rows[i].want);
        json_decref(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings_escaped_format_not),
        cmocka_unit_test(test_as_printf),
        cmocka_unit_test(test_escape_cells_lines),
        cmocka_unit_test(test_end_reason_gpu_fault),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
