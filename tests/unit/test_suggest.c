/* Unit tests for src/common/suggest.c: the edit distance and "did you mean" choices rnx
 * makes for mistyped flags and commands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/suggest.h"

static void test_distance(void **state)
{
    (void)state;
    static const struct { const char *a, *b; unsigned d; } cases[] = {
        {"", "", 0},          {"gpu", "gpu", 0},       {"gpu", "gpus", 1},     {"gpus", "gpu", 1},
        {"stauts", "status", 1} /* transposition */,   {"lsit", "list", 1},    {"kitten", "sitting", 3},
        {"", "abc", 3},       {"GPU", "gpu", 0} /* case-insensitive */,        {"ca", "abc", 3},
        {"max-memroy", "max-memory", 1},               {"flollow", "follow", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned d = suggest_distance(cases[i].a, cases[i].b);
        if (d != cases[i].d)
            fail_msg("distance('%s', '%s') = %u, expected %u", cases[i].a, cases[i].b, d, cases[i].d);
    }
    char longw[200];
    memset(longw, 'a', sizeof longw - 1);
    longw[sizeof longw - 1] = 0;
    assert_int_equal(suggest_distance(longw, "a"), 255);
}

static const char *const run_flags[] = {"name", "max-cpu", "max-memory", "max-iobps", "gpu", "gpu-memory",
                                        "gpu-ids", "gpu-caps", "follow", "env", "network", "upload"};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_closest(void **state)
{
    (void)state;
    static const struct { const char *word, *want; } cases[] = {
        {"gpus", "gpu"},               /* one edit */
        {"max-mem", "max-memory"},     /* a prefix of exactly one */
        {"max-memroy", "max-memory"},  /* a transposition */
        {"gpu-mem", "gpu-memory"},     /* prefix beats a far distance */
        {"folow", "follow"},
        {"netwrok", "network"},
        {"max", NULL},                 /* prefix of three: ambiguous */
        {"xyz", NULL},                 /* nothing close */
        {"detail", NULL},
        {"name", NULL},                /* the word itself: nothing to suggest */
        {"g", NULL},                   /* too short for a prefix */
    };
    for (size_t i = 0; i < N(cases); i++) {
        const char *got = suggest_closest(cases[i].word, run_flags, N(run_flags));
        if ((got == NULL) != (cases[i].want == NULL) || (got && strcmp(got, cases[i].want)))
            fail_msg("closest('%s') = %s, expected %s", cases[i].word, got ? got : "(none)",
                     cases[i].want ? cases[i].want : "(none)");
    }
}

static void test_ties_and_nulls(void **state)
{
    (void)state;
    static const char *const cmds[] = {"stop", "start", NULL, "status", "list"};
    assert_string_equal(suggest_closest("stauts", cmds, N(cmds)), "status");
    assert_string_equal(suggest_closest("lst", cmds, N(cmds)), "list");
    /* "sta" is one edit from nothing and a prefix of both start and status: no guess */
    assert_null(suggest_closest("sta", cmds, N(cmds)));
    static const char *const two[] = {"cat", "bat"};
    assert_null(suggest_closest("hat", two, N(two)));   /* a tie */
    assert_null(suggest_closest("hat", NULL, 0));
    /* a word so far from every candidate that each is at the cap (255): nothing, and no best
     * to compare a tie with (found by fuzz_wfparse) */
    char far[300];
    memset(far, 'S', sizeof far - 1);
    far[sizeof far - 1] = 0;
    assert_null(suggest_closest(far, cmds, N(cmds)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_closest),
        cmocka_unit_test(test_ties_and_nulls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
