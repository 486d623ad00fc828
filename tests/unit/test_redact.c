/* Unit tests for src/common/redact.c: many secret values scrubbed from a text in one pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/redact.h"

/* The obvious way, for comparison: mark every byte of every occurrence of every needle, then
 * write each marked run as "***" (or as many '*' as it is long, when shorter). */
static char *naive(const char *text, const char *const *needles, size_t n)
{
    size_t len = strlen(text);
    char *mark = calloc(len + 1, 1), *out = malloc(len + 1);
    for (size_t k = 0; k < n; k++) {
        size_t nl = strlen(needles[k]);
        if (!nl)
            continue;
        for (size_t i = 0; i + nl <= len; i++)
            if (!memcmp(text + i, needles[k], nl))
                memset(mark + i, 1, nl);
    }
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        if (!mark[i]) {
            out[w++] = text[i++];
            continue;
        }
        size_t run = i;
        while (i < len && mark[i])
            i++;
        for (size_t j = 0; j < 3 && j < i - run; j++)
            out[w++] = '*';
    }
    out[w] = 0;
    free(mark);
    return out;
}

static void test_examples(void **state)
{
    (void)state;
    static const struct { const char *text; const char *needles[4]; const char *want; } cases[] = {
        {"token: hunter22\nother: x", {"hunter22"}, "token: ***\nother: x"},
        {"a secret and a secret", {"secret"}, "a *** and a ***"},
        /* overlapping and adjacent occurrences of two values are one run */
        {"xxABCDEFyy", {"ABCD", "CDEF"}, "xx***yy"},
        {"ABCDABCD", {"ABCD"}, "***"},
        /* one value inside another: the longer one wins */
        {"key=longsecret", {"secret", "longsecret"}, "key=***"},
        {"nothing here", {"absent"}, "nothing here"},
        {"", {"x"}, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = strdup(cases[i].text);
        size_t n = 0;
        while (n < 4 && cases[i].needles[n])
            n++;
        bool changed = redact_all(t, cases[i].needles, n);
        assert_string_equal(t, cases[i].want);
        assert_int_equal(changed, strcmp(cases[i].text, cases[i].want) != 0);
        free(t);
    }
}

/* Random texts and needles over a small alphabet (many overlaps): the same as the obvious way. */
static void test_random_against_naive(void **state)
{
    (void)state;
    srand(25);
    for (int round = 0; round < 3000; round++) {
        char text[200], nb[6][12];
        const char *needles[6];
        size_t tl = (size_t)(rand() % 199), n = (size_t)(rand() % 6) + 1;
        for (size_t i = 0; i < tl; i++)
            text[i] = "ab*c"[rand() % (round % 2 ? 2 : 4)];
        text[tl] = 0;
        for (size_t k = 0; k < n; k++) {
            size_t nl = (size_t)(rand() % 8) + 1;
            for (size_t i = 0; i < nl; i++)
                nb[k][i] = "ab*c"[rand() % (round % 2 ? 2 : 4)];
            nb[k][nl] = 0;
            needles[k] = nb[k];
        }
        char *want = naive(text, needles, n);
        char *got = strdup(text);
        redact_all(got, needles, n);
        if (strcmp(got, want))
            fail_msg("text '%s': got '%s', want '%s'", text, got, want);
        free(want);
        free(got);
    }
}

/* The issue 25 input: 1 MiB of '*' and secret values made of '*'. Scanned once, it ends at once
 * (a strstr + memmove per match held the daemon's loop ~9 s); the whole text is one run. */
static void test_one_pass_on_hostile_text(void **state)
{
    (void)state;
    size_t len = 1 << 20;
    char *t = malloc(len + 1);
    memset(t, '*', len);
    t[len] = 0;
    char *longer = malloc(70001);
    memset(longer, '*', 70000);
    longer[70000] = 0;
    const char *needles[] = {"****", longer, "*****"};
    assert_true(redact_all(t, needles, 3));
    assert_string_equal(t, "***");
    free(t);
    free(longer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_random_against_naive),
        cmocka_unit_test(test_one_pass_on_hostile_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
