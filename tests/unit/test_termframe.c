/* Unit tests for src/common/termframe.c (the framing of interactive streams, docs/api.md
 * "Interactive streams"): frames written and read back, in pieces of every size, and the streams
 * a reader must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/termframe.h"

/* A stream of every kind of frame, as bytes. */
static size_t sample(unsigned char *out)
{
    size_t n = 0;
    termframe_put(out + n, TERMFRAME_STDOUT, 5);
    memcpy(out + n + 5, "hello", 5);
    n += 10;
    termframe_resize(out + n, 24, 80);
    n += 9;
    termframe_put(out + n, TERMFRAME_CLOSE, 0);
    n += 5;
    termframe_put(out + n, 9, 2); /* a channel this reader does not know: skipped by its callers */
    memcpy(out + n + 5, "??", 2);
    n += 7;
    termframe_put(out + n, TERMFRAME_STDERR, 3);
    memcpy(out + n + 5, "err", 3);
    n += 8;
    termframe_exit(out + n, -2);
    n += 9;
    return n;
}

typedef struct seen {
    char out[64], err[64];
    int rows, cols, code, closes, unknown;
} seen;

static void read_in_pieces(const unsigned char *s, size_t len, size_t piece, seen *w)
{
    termframe_reader r = {0};
    memset(w, 0, sizeof *w);
    w->code = 99;
    for (size_t at = 0; at < len; at += piece) {
        const char *p = (const char *)s + at;
        size_t n = len - at < piece ? len - at : piece;
        termframe_out f;
        enum termframe_event ev;
        while ((ev = termframe_next(&r, &p, &n, &f)) != TERMFRAME_NEED) {
            assert_int_not_equal(ev, TERMFRAME_BAD);
            if (ev == TERMFRAME_SIZE) {
                w->rows = f.rows;
                w->cols = f.cols;
            } else if (ev == TERMFRAME_CODE) {
                w->code = f.code;
            } else if (f.ch == TERMFRAME_STDOUT) {
                strncat(w->out, f.p, f.n);
            } else if (f.ch == TERMFRAME_STDERR) {
                strncat(w->err, f.p, f.n);
            } else if (f.ch == TERMFRAME_CLOSE) {
                assert_int_equal(f.n, 0);
                w->closes++;
            } else {
                w->unknown += (int)f.n;
            }
        }
        assert_int_equal(n, 0); /* all of a piece is taken */
    }
}

static void test_round_trip_in_pieces_of_every_size(void **state)
{
    unsigned char s[128];
    size_t len = sample(s);
    for (size_t piece = 1; piece <= len; piece++) {
        seen w;
        read_in_pieces(s, len, piece, &w);
        assert_string_equal(w.out, "hello");
        assert_string_equal(w.err, "err");
        assert_int_equal(w.rows, 24);
        assert_int_equal(w.cols, 80);
        assert_int_equal(w.closes, 1);
        assert_int_equal(w.unknown, 2);
        assert_int_equal(w.code, -2);
    }
}

static void test_big_endian_on_the_wire(void **state)
{
    unsigned char h[9];
    termframe_put(h, TERMFRAME_STDIN, 0x01020304);
    assert_memory_equal(h, "\x00\x01\x02\x03\x04", 5);
    termframe_resize(h, 0x0102, 0x0304);
    assert_memory_equal(h, "\x03\x00\x00\x00\x04\x01\x02\x03\x04", 9);
    termframe_exit(h, 3);
    assert_memory_equal(h, "\x04\x00\x00\x00\x04\x00\x00\x00\x03", 9);
}

/* A length over the bound, or a resize or exit frame that is not four bytes: the stream is
 * broken, whatever follows. */
static void test_broken_streams(void **state)
{
    static const char *const bad[] = {
        "\x01\x00\x01\x00\x01",        /* 65537 bytes: over TERMFRAME_MAX */
        "\x01\xff\xff\xff\xff",
        "\x03\x00\x00\x00\x05",        /* a resize of 5 bytes */
        "\x04\x00\x00\x00\x00",        /* an empty exit */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        termframe_reader r = {0};
        const char *p = bad[i];
        size_t n = 5;
        termframe_out f;
        assert_int_equal(termframe_next(&r, &p, &n, &f), TERMFRAME_BAD);
    }
    /* the bound itself is a frame */
    termframe_reader r = {0};
    const char *p = "\x00\x00\x01\x00\x00";
    size_t n = 5;
    termframe_out f;
    assert_int_equal(termframe_next(&r, &p, &n, &f), TERMFRAME_NEED);
    assert_int_equal(r.left, TERMFRAME_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_in_pieces_of_every_size),
        cmocka_unit_test(test_big_endian_on_the_wire),
        cmocka_unit_test(test_broken_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
