/* Unit tests for src/common/termring.c (what a new attacher of a job's terminal is replayed:
 * docs/interactive.md, "Re-attaching"): kept whole until it wraps, then the last TERMRING_CAP
 * bytes from the first line end on, whatever the sizes of the pieces added. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/termring.h"

/* The replay, as one string (caller frees). */
static char *replay(const termring *r, size_t *n)
{
    const char *p1, *p2;
    size_t n1, n2;
    termring_view(r, &p1, &n1, &p2, &n2);
    char *s = malloc(n1 + n2 + 1);
    memcpy(s, p1, n1);
    memcpy(s + n1, p2, n2);
    s[n1 + n2] = 0;
    *n = n1 + n2;
    return s;
}

static void test_empty(void **st)
{
    (void)st;
    static termring r;
    memset(&r, 0, sizeof r);
    size_t n;
    char *s = replay(&r, &n);
    assert_int_equal(n, 0);
    free(s);
}

static void test_kept_whole_until_it_wraps(void **st)
{
    (void)st;
    static termring r;
    memset(&r, 0, sizeof r);
    termring_add(&r, "no line end", 11);
    termring_add(&r, "; $ ", 4);
    size_t n;
    char *s = replay(&r, &n);
    assert_string_equal(s, "no line end; $ ");
    free(s);
}

/* Lines "line NNNNN\n" (11 bytes each) added in pieces of `piece` bytes: the replay is a run of
 * whole lines ending with the last one, and no more than TERMRING_CAP bytes. */
static void check_lines(size_t piece)
{
    static termring r;
    memset(&r, 0, sizeof r);
    size_t total = 3 * TERMRING_CAP;
    char *all = malloc(total + 11);
    size_t len = 0;
    for (int i = 0; len < total; i++)
        len += (size_t)sprintf(all + len, "line %05d\n", i % 100000);
    for (size_t at = 0; at < len; at += piece)
        termring_add(&r, all + at, len - at < piece ? len - at : piece);
    size_t n;
    char *s = replay(&r, &n);
    assert_true(n <= TERMRING_CAP && n > TERMRING_CAP - 11);
    assert_int_equal(n % 11, 0);                             /* whole lines only */
    assert_memory_equal(s, all + len - n, n);                /* the last ones, in order */
    assert_int_equal(strncmp(s, "line ", 5), 0);
    free(s);
    free(all);
}

static void test_wrapped_in_pieces(void **st)
{
    (void)st;
    size_t pieces[] = {1, 7, 11, 4096, TERMRING_CAP - 1, TERMRING_CAP, TERMRING_CAP + 3, 3 * TERMRING_CAP};
    for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++)
        check_lines(pieces[i]);
}

static void test_wrapped_without_a_line_end(void **st)
{
    (void)st;
    static termring r;
    memset(&r, 0, sizeof r);
    char *x = malloc(TERMRING_CAP + 100);
    memset(x, 'x', TERMRING_CAP + 100);
    termring_add(&r, x, 50);
    termring_add(&r, x, TERMRING_CAP + 50);
    size_t n;
    char *s = replay(&r, &n);
    assert_int_equal(n, TERMRING_CAP); /* no line end to start at: all of it */
    free(s);
    free(x);
}

static void test_exactly_full_is_not_wrapped(void **st)
{
    (void)st;
    static termring r;
    memset(&r, 0, sizeof r);
    char *x = malloc(TERMRING_CAP);
    memset(x, 'a', TERMRING_CAP);
    x[10] = '\n';
    termring_add(&r, x, TERMRING_CAP);
    size_t n;
    char *s = replay(&r, &n);
    assert_int_equal(n, TERMRING_CAP); /* nothing was dropped: nothing cut at its front */
    termring_add(&r, "b", 1);
    free(s);
    s = replay(&r, &n);
    assert_int_equal(n, TERMRING_CAP - 10); /* one byte dropped: from the first line end on */
    assert_int_equal(s[n - 1], 'b');
    free(s);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_kept_whole_until_it_wraps),
        cmocka_unit_test(test_wrapped_in_pieces),
        cmocka_unit_test(test_wrapped_without_a_line_end),
        cmocka_unit_test(test_exactly_full_is_not_wrapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
