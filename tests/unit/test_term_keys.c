/* Unit tests for src/cli/term_keys.c: rnx's detach keys (Docker's ctrl-p ctrl-q, --detach-keys
 * in Docker's words), held back while a sequence is typed, sent on when it breaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/term_keys.h"

static void test_parse(void **state)
{
    term_keys k;
    char why[300];
    assert_int_equal(term_keys_parse(TERM_KEYS_DEFAULT, &k, why, sizeof why), 0);
    assert_int_equal(k.n, 2);
    assert_int_equal(k.seq[0], 0x10);
    assert_int_equal(k.seq[1], 0x11);
    assert_int_equal(term_keys_parse("ctrl-A,x,ctrl-@,ctrl-[,ctrl-_", &k, why, sizeof why), 0);
    assert_int_equal(k.n, 5);
    assert_memory_equal(k.seq, "\x01x\x00\x1b\x1f", 5);
    assert_int_equal(term_keys_parse("", &k, why, sizeof why), 0);
    assert_int_equal(k.n, 0);
    static const char *const bad[] = {"ctrl-1", "ctrl-", "ab", "a,", ",a", "ctrl-pp", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        assert_int_equal(term_keys_parse(bad[i], &k, why, sizeof why), -1);
        assert_true(why[0]);
    }
    term_keys_parse("ctrl-1", &k, why, sizeof why);
    assert_string_equal(why, "'ctrl-1' is not a key: give a character or ctrl-X (X a letter or one of @[\\]^_), "
                             "separated by commas, e.g. ctrl-p,ctrl-q");
}

/* Feeds s in pieces of `piece` bytes: what went to the job, and whether (and where) it detached. */
static bool feed(term_keys *k, const char *s, size_t piece, char *sent, size_t *at)
{
    size_t len = strlen(s), o = 0;
    for (size_t i = 0; i < len; i += piece) {
        char out[64];
        size_t n = 0, take = len - i < piece ? len - i : piece;
        bool done = term_keys_feed(k, s + i, take, out, &n);
        memcpy(sent + o, out, n);
        o += n;
        sent[o] = 0;
        if (done) {
            *at = i;
            return true;
        }
    }
    return false;
}

static void test_feed(void **state)
{
    static const struct {
        const char *typed, *sent;
        bool detach;
    } cases[] = {
        {"ls\r", "ls\r", false},
        {"ab\x10\x11" "cd", "ab", true},        /* the sequence: what follows is dropped */
        {"\x10x", "\x10x", false},              /* broken: the held ctrl-p goes on */
        {"\x10\x10\x11", "\x10", true},         /* broken by the key that starts it again */
        {"\x10", "", false},                    /* held, waiting for the next key */
        {"\x11\x10\x11", "\x11", true},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t piece = 1; piece <= 3; piece++) {
            term_keys k;
            char why[200], sent[64];
            size_t at;
            term_keys_parse(TERM_KEYS_DEFAULT, &k, why, sizeof why);
            assert_int_equal(feed(&k, cases[c].typed, piece, sent, &at), cases[c].detach);
            assert_string_equal(sent, cases[c].sent);
        }
    /* none: every byte goes on */
    term_keys k;
    char why[200], sent[64];
    size_t at;
    term_keys_parse("", &k, why, sizeof why);
    assert_false(feed(&k, "\x10\x11", 1, sent, &at));
    assert_string_equal(sent, "\x10\x11");
    /* one key */
    term_keys_parse("ctrl-x", &k, why, sizeof why);
    assert_true(feed(&k, "a\x18" "b", 3, sent, &at));
    assert_string_equal(sent, "a");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_feed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
