/* Unit tests for src/common/b64.c (uploads travel as base64) and utf8_valid from
 * src/common/jsonx.c (log lines that are not UTF-8 are sent as data_b64). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/b64.h"
#include "common/jsonx.h"

/* ---- base64 ------------------------------------------------------------------------- */

/* RFC 4648 section 10. */
static const struct { const char *plain, *enc; } rfc4648[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

static void test_encode_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rfc4648 / sizeof rfc4648[0]; i++) {
        char *enc = b64_encode(rfc4648[i].plain, strlen(rfc4648[i].plain));
        assert_non_null(enc);
        assert_string_equal(enc, rfc4648[i].enc);
        free(enc);
    }
}

static void test_decode_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rfc4648 / sizeof rfc4648[0]; i++) {
        const char *enc = rfc4648[i].enc;
        size_t n = 12345;
        unsigned char *dec = b64_decode(enc, strlen(enc), &n);
        assert_non_null(dec);
        assert_int_equal(n, strlen(rfc4648[i].plain));
        assert_true(n <= b64_decoded_max(strlen(enc)));
        assert_memory_equal(dec, rfc4648[i].plain, n);
        free(dec);
    }
}

static void test_alphabet(void **state)
{
    (void)state;
    /* The standard alphabet, including '+' and '/' (not the URL-safe '-' and '_'). */
    const unsigned char bytes[] = {0xfb, 0xff, 0xbf};
    char *enc = b64_encode(bytes, sizeof bytes);
    assert_string_equal(enc, "+/+/");
    free(enc);

    const unsigned char zeros[] = {0, 0, 0};
    enc = b64_encode(zeros, sizeof zeros);
    assert_string_equal(enc, "AAAA");
    free(enc);

    size_t n = 0;
    unsigned char *dec = b64_decode("AAECAwQFBgcICQoLDA0ODw==", 24, &n);
    assert_non_null(dec);
    assert_int_equal(n, 16);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(dec[i], i);
    free(dec);
}

static void test_roundtrip_all_bytes(void **state)
{
    (void)state;
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;

    /* Every length from 0 to 256 so that each padding case and every byte value at every
     * position within a group of three is covered. */
    for (size_t len = 0; len <= sizeof all; len++) {
        char *enc = b64_encode(all, len);
        assert_non_null(enc);
        assert_int_equal(strlen(enc), (len + 2) / 3 * 4);
        size_t n = 0;
        unsigned char *dec = b64_decode(enc, strlen(enc), &n);
        assert_non_null(dec);
        assert_int_equal(n, len);
        assert_memory_equal(dec, all, len);
        size_t counted = 999;   /* b64_decoded_len: the same length, without decoding */
        assert_int_equal(b64_decoded_len(enc, strlen(enc), &counted), 0);
        assert_int_equal(counted, len);
        free(dec);
        free(enc);
    }

    /* The same bytes shifted by one and two positions within their group. */
    for (size_t shift = 1; shift <= 2; shift++) {
        unsigned char buf[258] = {0};
        memcpy(buf + shift, all, sizeof all);
        char *enc = b64_encode(buf, sizeof all + shift);
        size_t n = 0;
        unsigned char *dec = b64_decode(enc, strlen(enc), &n);
        assert_non_null(dec);
        assert_int_equal(n, sizeof all + shift);
        assert_memory_equal(dec, buf, n);
        free(dec);
        free(enc);
    }
}

static void test_decode_length_param(void **state)
{
    (void)state;
    /* Only slen characters are read: the rest of the buffer is ignored, and a NUL is not needed. */
    const char buf[] = {'Z', 'm', '9', 'v', '!', '!'};
    size_t n = 0;
    unsigned char *dec = b64_decode(buf, 4, &n);
    assert_non_null(dec);
    assert_int_equal(n, 3);
    assert_memory_equal(dec, "foo", 3);
    free(dec);
}

static void test_decode_malformed(void **state)
{
    (void)state;
    const char *bad[] = {
        "Z",          /* not a multiple of four */
        "Zg",
        "Zg=",
        "Zm9vY",
        "Zm9v Yg==",  /* spaces */
        " Zm9v",
        "Zm9v\n",
        "Zm9vYg==\n",
        "Zm9\nv",
        "Zm9-",       /* URL-safe alphabet */
        "Zm9_",
        "Zm9!",
        "Zm.v",
        "====",       /* padding only */
        "Z===",       /* too much padding */
        "=Zm9",
        "Z=g=",       /* padding before data */
        "Zg=a",
        "Zm=v",
        "Zg==Zm9v",   /* padding in the middle */
        "Zm8=Zm8=",
        "Zm9vYg==Zg==",
        "\xc3\xa9\xc3\xa9", /* non-ASCII */
        "Zm\x80v",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = 999;
        void *dec = b64_decode(bad[i], strlen(bad[i]), &n);
        if (dec) {
            free(dec);
            fail_msg("b64_decode accepted malformed input #%zu '%s'", i, bad[i]);
        }
        if (b64_decoded_len(bad[i], strlen(bad[i]), &n) == 0)
            fail_msg("b64_decoded_len accepted malformed input #%zu '%s'", i, bad[i]);
    }

    /* An embedded NUL is a malformed character, not an end of input. */
    const char nul[] = {'Z', 'm', '\0', 'v'};
    size_t n = 0;
    assert_null(b64_decode(nul, sizeof nul, &n));
    assert_int_equal(b64_decoded_len(nul, sizeof nul, &n), -1);
}

/* ---- UTF-8 -------------------------------------------------------------------------- */

#define UTF8_OK(lit) assert_true(utf8_valid((lit), sizeof(lit) - 1))
#define UTF8_BAD(lit)                                                                          \
    do {                                                                                       \
        if (utf8_valid((lit), sizeof(lit) - 1))                                                \
            fail_msg("utf8_valid accepted " #lit);                                             \
    } while (0)

static void test_utf8_valid(void **state)
{
    (void)state;
    UTF8_OK("");
    UTF8_OK("hello, world\n");
    UTF8_OK("\x7f");
    UTF8_OK("\xc3\xa9");                 /* é U+00E9 */
    UTF8_OK("caf\xc3\xa9 cr\xc3\xa8me");
    UTF8_OK("\xe2\x82\xac");             /* € U+20AC */
    UTF8_OK("\xe6\x97\xa5\xe6\x9c\xac"); /* 日本 */
    UTF8_OK("\xf0\x9f\x98\x80");         /* 😀 U+1F600 */
    UTF8_OK("a\xf0\x9f\x98\x80z");

    /* Boundaries of each length. */
    UTF8_OK("\xc2\x80");         /* U+0080 */
    UTF8_OK("\xdf\xbf");         /* U+07FF */
    UTF8_OK("\xe0\xa0\x80");     /* U+0800 */
    UTF8_OK("\xed\x9f\xbf");     /* U+D7FF, just below the surrogates */
    UTF8_OK("\xee\x80\x80");     /* U+E000, just above them */
    UTF8_OK("\xef\xbf\xbf");     /* U+FFFF */
    UTF8_OK("\xf0\x90\x80\x80"); /* U+10000 */
    UTF8_OK("\xf4\x8f\xbf\xbf"); /* U+10FFFF, the last code point */

    /* Overlong forms. */
    UTF8_BAD("\xc0\x80");          /* NUL in two bytes */
    UTF8_BAD("\xc0\xaf");          /* '/' in two bytes */
    UTF8_BAD("\xc1\xbf");          /* U+007F in two bytes */
    UTF8_BAD("\xe0\x80\x80");
    UTF8_BAD("\xe0\x80\xaf");
    UTF8_BAD("\xe0\x9f\xbf");      /* U+07FF in three bytes */
    UTF8_BAD("\xf0\x80\x80\x80");
    UTF8_BAD("\xf0\x8f\xbf\xbf");  /* U+FFFF in four bytes */

    /* UTF-16 surrogates. */
    UTF8_BAD("\xed\xa0\x80");      /* U+D800 */
    UTF8_BAD("\xed\xaf\xbf");      /* U+DBFF */
    UTF8_BAD("\xed\xb0\x80");      /* U+DC00 */
    UTF8_BAD("\xed\xbf\xbf");      /* U+DFFF */
    UTF8_BAD("\xed\xa0\xbd\xed\xb8\x80"); /* CESU-8 pair for U+1F600 */

    /* Beyond U+10FFFF and invalid lead bytes. */
    UTF8_BAD("\xf4\x90\x80\x80");  /* U+110000 */
    UTF8_BAD("\xf5\x80\x80\x80");
    UTF8_BAD("\xf7\xbf\xbf\xbf");
    UTF8_BAD("\xf8\x88\x80\x80\x80");
    UTF8_BAD("\xfc\x84\x80\x80\x80\x80");
    UTF8_BAD("\xfe");
    UTF8_BAD("\xff");

    /* Lone or unexpected continuation bytes. */
    UTF8_BAD("\x80");
    UTF8_BAD("\xbf");
    UTF8_BAD("a\x80z");
    UTF8_BAD("\xc3\xa9\xa9");

    /* Truncated sequences, at the end and in the middle. */
    UTF8_BAD("\xc3");
    UTF8_BAD("\xe2\x82");
    UTF8_BAD("\xe2");
    UTF8_BAD("\xf0\x9f\x98");
    UTF8_BAD("\xf0\x9f");
    UTF8_BAD("abc\xf0");
    UTF8_BAD("\xc3z");
    UTF8_BAD("\xe2\x82z");
    UTF8_BAD("\xf0\x9f\x98z");
    UTF8_BAD("\xe2\xc3\xa9");

    /* NUL is refused wherever it is (jansson strings cannot hold it). */
    UTF8_BAD("\0");
    UTF8_BAD("a\0b");
    UTF8_BAD("abc\0");
    UTF8_BAD("\xc3\0");

    /* The length is honoured: bytes past it are not read, and a cut sequence is refused. */
    const char *s = "\xc3\xa9xyz";
    assert_true(utf8_valid(s, 2));
    assert_false(utf8_valid(s, 1));
    assert_true(utf8_valid("ab\xff", 2));
    assert_true(utf8_valid("\xff", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_vectors),
        cmocka_unit_test(test_decode_vectors),
        cmocka_unit_test(test_alphabet),
        cmocka_unit_test(test_roundtrip_all_bytes),
        cmocka_unit_test(test_decode_length_param),
        cmocka_unit_test(test_decode_malformed),
        cmocka_unit_test(test_utf8_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
