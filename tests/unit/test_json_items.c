/* Unit tests for rnx's reader of a long answer's items (src/cli/json_items.c): the items of
 * {"jobs":[...]} whatever the pieces they come in, strings holding brackets and escapes, the
 * shapes refused, another layout handed back whole; and json_items_indent_to laying a value out as
 * jansson's JSON_INDENT(2) does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/json_items.h"

typedef struct got {
    char items[16][256];
    size_t n;
    int stop_at; /* the callback's -1 at this item (0: never) */
} got;

static int keep(const char *text, size_t len, void *ud)
{
    got *g = ud;
    assert_true(len < sizeof g->items[0] && g->n < 16);
    memcpy(g->items[g->n], text, len);
    g->items[g->n][len] = '\0';
    return ++g->n == (size_t)g->stop_at ? -1 : 0;
}

/* body fed in pieces of step bytes: json_items_feed's result (the first -1) */
static int feed(const char *body, size_t step, got *g, json_items **out)
{
    json_items *ji = json_items_new("jobs", 1 << 20, keep, g);
    int rc = 0;
    for (size_t i = 0, n = strlen(body); i < n && rc == 0; i += step)
        rc = json_items_feed(ji, body + i, n - i < step ? n - i : step);
    *out = ji;
    return rc;
}

static void test_items_in_any_pieces(void **st)
{
    (void)st;
    const char *body = "{\"jobs\":[{\"a\":\"x]}{[,\\\"\\\\\",\"b\":[1,{}]},[],{\"c\":null}]}\n";
    const char *want[] = {"{\"a\":\"x]}{[,\\\"\\\\\",\"b\":[1,{}]}", "[]", "{\"c\":null}"};
    for (size_t step = 1; step <= strlen(body); step++) {
        got g = {0};
        json_items *ji;
        assert_int_equal(feed(body, step, &g, &ji), 0);
        assert_true(json_items_done(ji));
        assert_false(json_items_other(ji));
        assert_int_equal(g.n, 3);
        for (size_t i = 0; i < 3; i++)
            assert_string_equal(g.items[i], want[i]);
        json_items_free(ji);
    }
    got g = {0};
    json_items *ji;
    assert_int_equal(feed("{\"jobs\":[]}", 1, &g, &ji), 0);
    assert_true(json_items_done(ji));
    assert_int_equal(g.n, 0);
    json_items_free(ji);
}

static void test_shapes_refused_or_cut(void **st)
{
    (void)st;
    const char *bad[] = {"{\"jobs\":[1]}", "{\"jobs\":[{},]}", "{\"jobs\":[,{}]}", "{\"jobs\":[{}{}]}",
                         "{\"jobs\":[{}]}x", "{\"jobs\":[{}],\"more\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        got g = {0};
        json_items *ji;
        assert_int_equal(feed(bad[i], 1, &g, &ji), -1);
        assert_false(json_items_done(ji));
        assert_int_equal(json_items_feed(ji, "]}", 2), -1); /* and stays refused */
        json_items_free(ji);
    }
    /* cut short: no error, not done */
    got g = {0};
    json_items *ji;
    assert_int_equal(feed("{\"jobs\":[{\"a\":\"]}\"},{\"b\":", 3, &g, &ji), 0);
    assert_false(json_items_done(ji));
    assert_int_equal(g.n, 1);
    json_items_free(ji);
    /* the callback stops it */
    got s = {.stop_at = 1};
    assert_int_equal(feed("{\"jobs\":[{},{}]}", 4, &s, &ji), -1);
    assert_int_equal(s.n, 1);
    json_items_free(ji);
}

static void test_other_layout_whole(void **st)
{
    (void)st;
    const char *bodies[] = {"{ \"jobs\": [{}]}", "{\"other\":1}", "[]", "{\"jobs\" :[]}"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        got g = {0};
        json_items *ji;
        assert_int_equal(feed(bodies[i], 2, &g, &ji), 0);
        assert_true(json_items_other(ji));
        size_t len;
        const char *whole = json_items_whole(ji, &len);
        assert_int_equal(len, strlen(bodies[i]));
        assert_string_equal(whole, bodies[i]);
        assert_int_equal(g.n, 0);
        json_items_free(ji);
    }
}

/* An item of max bytes is taken, one of max + 1 refused (before more is held), whatever the
 * pieces; a body of another layout the same as a whole. */
static void test_item_bound(void **st)
{
    (void)st;
    const char *body = "{\"jobs\":[{\"a\":\"0123456789\"},[1,2]]}"; /* the first item: 18 bytes */
    for (size_t step = 1; step <= strlen(body); step++)
        for (size_t max = 17; max <= 18; max++) {
            got g = {0};
            json_items *ji = json_items_new("jobs", max, keep, &g);
            int rc = 0;
            for (size_t i = 0, n = strlen(body); i < n && rc == 0; i += step)
                rc = json_items_feed(ji, body + i, n - i < step ? n - i : step);
            assert_int_equal(rc, max == 18 ? 0 : -1);
            assert_int_equal(json_items_too_big(ji), max == 17);
            assert_int_equal(json_items_done(ji), max == 18);
            assert_int_equal(g.n, max == 18 ? 2 : 0);
            json_items_free(ji);
        }
    const char *other = "{ \"jobs\": []}"; /* 13 bytes */
    for (size_t step = 1; step <= strlen(other); step++)
        for (size_t max = 12; max <= 13; max++) {
            got g = {0};
            json_items *ji = json_items_new("jobs", max, keep, &g);
            int rc = 0;
            for (size_t i = 0, n = strlen(other); i < n && rc == 0; i += step)
                rc = json_items_feed(ji, other + i, n - i < step ? n - i : step);
            assert_int_equal(rc, max == 13 ? 0 : -1);
            assert_int_equal(json_items_too_big(ji), max == 12);
            assert_int_equal(json_items_other(ji), max == 13);
            json_items_free(ji);
        }
}

/* json_items_valid_at (level 0): what jansson takes as one value, and what it refuses, the same. */
static void test_valid_as_jansson(void **st)
{
    (void)st;
    const char *good[] = {
        "{\"id\":\"a\",\"args\":[\"x y\",\"q\\\"]\\\\\",\"\\u00e9\\t\\/\\b\\f\\n\\r\"],\"env\":{},\"v\":[],\"n\":null}",
        "{\"t\":true,\"f\":false,\"i\":-12,\"z\":0,\"r\":1.5e+300,\"s\":-0.25E-3,\"o\":{\"p\":{\"q\":[[],[{}],[1,2]]}}}",
        "[]", "{}", "[[[]]]", " [ 1 , { \"a\" : [ ] } , \"s\" ]\n", "{\"a\":\"x]}{[,\\\"\\\\\",\"b\":[1,{}]}",
        "\"\xc3\xa9\"", "0", "true",
    };
    const char *bad[] = {
        "", " ", "{\"id\" \"x\"}", "{\"a\":1]", "[1}", "{\"id\":tru}", "[1,]", "{\"a\":1,}", "{,}", "[,1]",
        "{\"a\":1}}", "{\"a\":1}x", "[1 2]", "{1:2}", "{\"a\"}", "{\"a\":}", "\"\x01\"", "\"\\q\"",
        "\"\\u12g4\"", "\"\\u12\"", "\"abc", "01", "1.", "-", "1e", "1e+", ".5", "+1", "[", "{\"a\":[1,{\"b\":2]}",
        "nul", "[true false]", "{\"a\":1 \"b\":2}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_t *v = json_loads(good[i], JSON_DECODE_ANY, NULL);
        assert_non_null(v);
        json_decref(v);
        assert_true(json_items_valid_at(good[i], strlen(good[i]), 0));
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *v = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        assert_null(v);
        if (json_items_valid_at(bad[i], strlen(bad[i]), 0))
            fail_msg("taken as JSON: %s", bad[i]);
    }
    /* a value cut anywhere is not one (but where the cut leaves a whole number) */
    const char *whole = good[0];
    for (size_t n = 0; n < strlen(whole); n++)
        assert_false(json_items_valid_at(whole, n, 0));
    /* deep nesting: its containers grown past the first 64 */
    char deep[2001];
    memset(deep, '[', 1000);
    memset(deep + 1000, ']', 1000);
    deep[2000] = '\0';
    assert_true(json_items_valid_at(deep, 2000, 0));
    assert_false(json_items_valid_at(deep, 1999, 0));
    /* nested as deep as jansson parses (JSON_PARSER_MAX_DEPTH), and one level more: not JSON (an
     * item is laid out at 2 spaces a level, a line a value: 200,000 levels were 80 GB) */
    for (size_t d = JSON_PARSER_MAX_DEPTH; d <= JSON_PARSER_MAX_DEPTH + 1; d++) {
        char *t = malloc(2 * d + 1);
        assert_non_null(t);
        memset(t, '[', d);
        memset(t + d, ']', d);
        t[2 * d] = '\0';
        json_t *v = json_loads(t, 0, NULL);
        assert_int_equal(v != NULL, d == JSON_PARSER_MAX_DEPTH);
        json_decref(v);
        assert_int_equal(json_items_valid_at(t, 2 * d, 0), d == JSON_PARSER_MAX_DEPTH);
        free(t);
    }
}

/* A string's bytes as jansson takes them: UTF-8 (RFC 3629: no overlong form, no surrogate, none
 * past U+10FFFF, no sequence cut short); printed as they came, bytes that are not were not JSON
 * (RFC 8259 8.1), where rnx's parse of the whole answer refused them. Each case against jansson,
 * and 20,000 random strings of bytes around the bounds. */
static void test_valid_utf8_as_jansson(void **st)
{
    (void)st;
    const char *cases[] = {
        "\"\xff\"", "\"\xfe\"", "\"\x80\"", "\"\xbf\"", "\"\xc0\xaf\"", "\"\xc1\xbf\"", "\"\xc2\"", "\"\xc2\x7f\"",
        "\"\xe0\x80\xaf\"", "\"\xe0\x9f\xbf\"", "\"\xed\xa0\x80\"", "\"\xed\xbf\xbf\"", "\"\xe2\x82\"",
        "\"\xf0\x8f\xbf\xbf\"", "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xf8\x88\x80\x80\x80\"",
        "{\"id\":\"\xff\xfe\"}", "{\"\xff\":1}", "\"\xc2\x80\"", "\"\xdf\xbf\"", "\"\xe0\xa0\x80\"", "\"\xed\x9f\xbf\"",
        "\"\xee\x80\x80\"", "\"\xef\xbf\xbf\"", "\"\xf0\x90\x80\x80\"", "\"\xf4\x8f\xbf\xbf\"", "\"\xe2\x82\xac\"",
        "{\"id\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = json_loads(cases[i], JSON_DECODE_ANY, NULL);
        if (json_items_valid_at(cases[i], strlen(cases[i]), 0) != (v != NULL))
            fail_msg("case %zu: jansson %s, json_items_valid_at not", i, v ? "takes it" : "refuses it");
        json_decref(v);
    }
    static const unsigned char pool[] = {'a', 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0,
                                         0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
    unsigned seed = 7;
    for (int r = 0; r < 20000; r++) {
        char t[16];
        size_t n = 0;
        t[n++] = '"';
        for (int k = 1 + (int)(rand_r(&seed) % 6); k > 0; k--)
            t[n++] = (char)pool[rand_r(&seed) % sizeof pool];
        t[n++] = '"';
        t[n] = '\0';
        json_t *v = json_loads(t, JSON_DECODE_ANY, NULL);
        if (json_items_valid_at(t, n, 0) != (v != NULL)) {
            char hex[64] = "";
            for (size_t k = 0; k < n; k++)
                snprintf(hex + 3 * k, sizeof hex - 3 * k, "%02x ", (unsigned char)t[k]);
            fail_msg("%s: jansson %s, json_items_valid_at not", hex, v ? "takes it" : "refuses it");
        }
        json_decref(v);
    }
}

/* \u escapes and numbers as jansson (flags 0, as rnx parses a whole answer) takes them: no
 * \u0000, a surrogate only as a high one followed by a low one, an integer that fits json_int_t,
 * a real that does not overflow a double (one that underflows is 0); each case against jansson. */
static void test_valid_escapes_and_numbers_as_jansson(void **st)
{
    (void)st;
    const char *cases[] = {
        "\"\\u0000\"", "\"a\\u0000b\"", "{\"\\u0000\":1}", "\"\\u0001\"", "\"\\u00e9\"", "\"\\uFFFF\"",
        "\"\\ud800\"", "\"\\uDBFF\"", "\"\\udc00\"", "\"\\uDFFF\"", "\"\\ud800\\udc00\"", "\"\\uDBFF\\uDFFF\"",
        "\"\\ud800\\ud800\"", "\"\\ud800\\u0041\"", "\"\\ud800x\"", "\"\\ud800\\n\"", "\"\\ud800\\\"",
        "\"\\udc00\\ud800\"", "\"x\\ud83d\\ude00y\"", "\"\\ud800\\udc0\"", "\"\\ud800\\uzc00\"",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "99999999999999999999999999", "-0", "0.0", "1e308", "1e309", "-1e309", "1.7976931348623157e308",
        "1.7976931348623159e308", "1e-400", "-1e-400", "4.9e-324", "123456789012345678901234567890.5",
        "[1e400]", "{\"n\":18446744073709551616}", "1E+2", "0e0",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = json_loads(cases[i], JSON_DECODE_ANY, NULL);
        if (json_items_valid_at(cases[i], strlen(cases[i]), 0) != (v != NULL))
            fail_msg("case %s: jansson %s, json_items_valid_at not", cases[i], v ? "takes it" : "refuses it");
        json_decref(v);
    }
    /* a number of 100,000 digits: an integer too big, a real that is not (its digits after the
     * point), one that is (its digits before an exponent) */
    size_t n = 100000;
    char *t = malloc(n + 3);
    assert_non_null(t);
    memset(t, '7', n);
    t[n] = '\0';
    assert_false(json_items_valid_at(t, n, 0));
    t[1] = '.';
    assert_true(json_items_valid_at(t, n, 0));
    t[1] = '7', t[n] = 'e', t[n + 1] = '9', t[n + 2] = '\0';
    assert_false(json_items_valid_at(t, n + 2, 0));
    free(t);
}

/* An item printed one level in (rnx job list: inside the listing's array) is taken only as deep as
 * jansson parses the listing printed: [ITEM] */
static void test_valid_at_a_depth_as_jansson(void **st)
{
    (void)st;
    for (size_t d = JSON_PARSER_MAX_DEPTH - 2; d <= JSON_PARSER_MAX_DEPTH; d++) {
        char *t = malloc(2 * d + 3);
        assert_non_null(t);
        t[0] = '[';
        memset(t + 1, '[', d);
        memset(t + 1 + d, ']', d);
        t[2 * d + 1] = ']';
        t[2 * d + 2] = '\0';
        json_t *v = json_loads(t, 0, NULL);
        assert_int_equal(json_items_valid_at(t + 1, 2 * d, 1), v != NULL);
        assert_int_equal(json_items_valid_at(t + 1, 2 * d, 1), d < JSON_PARSER_MAX_DEPTH);
        assert_int_equal(json_items_valid_at(t + 1, 2 * d, 2), d < JSON_PARSER_MAX_DEPTH - 1);
        json_decref(v);
        free(t);
    }
    assert_false(json_items_valid_at("[]", 2, JSON_PARSER_MAX_DEPTH));
    assert_true(json_items_valid_at("1", 1, JSON_PARSER_MAX_DEPTH));
}

static void test_indent_as_jansson(void **st)
{
    (void)st;
    const char *values[] = {
        "{\"id\":\"a\",\"args\":[\"x y\",\"q\\\"]\\\\\",\"\\u00e9\\t\"],\"env\":{},\"v\":[],\"n\":null,\"t\":true,"
        "\"i\":-12,\"r\":1.5e+300,\"o\":{\"p\":{\"q\":[[],[{}],[1,2]]}}}",
        "[]", "{}", "[[[]]]", "[1,{\"a\":[]},\"s\"]",
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        json_t *v = json_loads(values[i], 0, NULL);
        assert_non_null(v);
        char *compact = json_dumps(v, JSON_COMPACT);
        char *want = json_dumps(v, JSON_INDENT(2));
        char *out = NULL;
        size_t len = 0, cap = 0;
        json_items_indent_to(compact, strlen(compact), 0, &out, &len, &cap, 0, NULL, NULL);
        assert_string_equal(out, want);
        /* one level in: what follows "[\n  " in the dump of [v] */
        json_t *arr = json_pack("[O]", v);
        char *in_arr = json_dumps(arr, JSON_INDENT(2));
        len = 0;
        json_items_append(&out, &len, &cap, "[\n  ", 4);
        json_items_indent_to(compact, strlen(compact), 1, &out, &len, &cap, 0, NULL, NULL);
        json_items_append(&out, &len, &cap, "\n]", 2);
        assert_string_equal(out, in_arr);
        free(in_arr);
        json_decref(arr);
        free(out);
        free(compact);
        free(want);
        json_decref(v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_items_in_any_pieces),
        cmocka_unit_test(test_shapes_refused_or_cut),
        cmocka_unit_test(test_other_layout_whole),
        cmocka_unit_test(test_item_bound),
        cmocka_unit_test(test_valid_as_jansson),
        cmocka_unit_test(test_valid_utf8_as_jansson),
        cmocka_unit_test(test_valid_escapes_and_numbers_as_jansson),
        cmocka_unit_test(test_valid_at_a_depth_as_jansson),
        cmocka_unit_test(test_indent_as_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
