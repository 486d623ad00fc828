/* Unit tests for src/common/jsonscan.c: the bounds a request body is held to before jansson
 * parses it (issue 14), the places and figures its refusals name, and its agreement with
 * jansson on what a text holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/jsonscan.h"

static const jsonscan_limits wide = {
    .depth = 2048, .members = SIZE_MAX, .elements = SIZE_MAX, .string_bytes = SIZE_MAX,
    .values = SIZE_MAX, .containers = SIZE_MAX,
};

static const jsonscan_limits tight = {
    .depth = 4, .members = 3, .elements = 5, .string_bytes = 8, .long_key = "b64",
    .values = 20, .containers = 6, .fits = "a test fits",
};

static jsonscan_over scan_str(const char *s, const jsonscan_limits *lim, jsonscan_result *r)
{
    return jsonscan(s, strlen(s), lim, r);
}

/* what jansson built: values, containers, depth, largest object and array, longest string and key */
typedef struct tally {
    size_t values, containers, members, elements, string, key;
    unsigned depth;
} tally;

static void count(json_t *j, unsigned depth, tally *t)
{
    t->values++;
    if ((json_is_object(j) || json_is_array(j)) && depth > t->depth)
        t->depth = depth;
    if (json_is_string(j) && json_string_length(j) > t->string)
        t->string = json_string_length(j);
    if (json_is_object(j)) {
        t->containers++;
        if (json_object_size(j) > t->members)
            t->members = json_object_size(j);
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            if (strlen(k) > t->key)
                t->key = strlen(k);
            count(v, depth + 1, t);
        }
    } else if (json_is_array(j)) {
        t->containers++;
        if (json_array_size(j) > t->elements)
            t->elements = json_array_size(j);
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            count(v, depth + 1, t);
    }
}

static void test_counts_agree_with_jansson(void **state)
{
    (void)state;
    static const char *const docs[] = {
        "{}",
        "[]",
        "[1, -2.5e3, true, false, null, \"x\"]",
        "{\"a\": {\"b\": [[], {}, [[\"deep\"]]]}, \"c\": 0}",
        " \r\n\t[ { \"k\" : \"v\" } , 3 ]\n",
        "{\"esc\": \"a\\n\\t\\\"\\\\\\/\\b\\f\\r\", \"u\": \"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\"}",
        "{\"\\u00e9t\\u00e9\": \"\\u0001\", \"utf8\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
        "[[[[[[[[[[]]]]]]]]]]",
        "{\"uploads\": [{\"path\": \"a\", \"type\": \"dir\", \"mode\": 493}, {\"path\": \"a/b\", \"size\": 9}]}",
    };
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
        json_error_t je;
        json_t *j = json_loads(docs[d], JSON_REJECT_DUPLICATES, &je);
        assert_non_null(j);
        tally t = {0};
        count(j, 1, &t);
        json_decref(j);
        jsonscan_result r;
        assert_int_equal(scan_str(docs[d], &wide, &r), JSONSCAN_OK);
        assert_int_equal(r.values, t.values);
        assert_int_equal(r.containers, t.containers);
        assert_int_equal(r.depth, t.depth);
        assert_int_equal(r.max_members, t.members);
        assert_int_equal(r.max_elements, t.elements);
        assert_int_equal(r.max_string, t.string);
        assert_int_equal(r.max_key, t.key);
    }
}

static void test_depth(void **state)
{
    (void)state;
    jsonscan_result r;
    assert_int_equal(scan_str("[[[[1]]]]", &tight, &r), JSONSCAN_OK); /* 4 levels: the limit */
    assert_int_equal(r.depth, 4);
    assert_int_equal(scan_str("{\"a\":[{\"b\":[[]]}]}", &tight, &r), JSONSCAN_DEPTH);
    assert_int_equal(r.amount, 5);
    assert_string_equal(r.where, "a[0].b[0]");
    /* past the limit only brackets count, strings skipped whole: the depth the text reaches */
    assert_int_equal(scan_str("[[[[[[\"]]]]\", [[[]]]]]]]]]", &tight, &r), JSONSCAN_DEPTH);
    assert_int_equal(r.amount, 9);
    assert_string_equal(r.where, "[0][0][0][0]");
    /* depth is told before anything passed earlier */
    assert_int_equal(scan_str("[1,2,3,4,5,6,[[[[]]]]]", &tight, &r), JSONSCAN_DEPTH);

    jerr e = {0};
    char deep[200] = "{\"a\":";
    for (int i = 0; i < 40; i++)
        strcat(deep, "[");
    for (int i = 0; i < 40; i++)
        strcat(deep, "]");
    strcat(deep, "}");
    jsonscan_limits l32 = wide;
    l32.depth = 32;
    assert_null(jsonscan_load(deep, strlen(deep), &l32, &e));
    assert_int_equal(e.http, 400);
    assert_non_null(strstr(e.msg, "the request nests 41 levels deep (at a[0][0]"));
    assert_non_null(strstr(e.msg, "joblet takes at most 32 levels"));
}

static void test_members_and_elements(void **state)
{
    (void)state;
    jsonscan_result r;
    assert_int_equal(scan_str("{\"a\":1,\"b\":2,\"c\":3}", &tight, &r), JSONSCAN_OK);
    assert_int_equal(scan_str("{\"x\":{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5}}", &tight, &r), JSONSCAN_MEMBERS);
    assert_int_equal(r.amount, 5); /* the object's final count, not where it passed */
    assert_string_equal(r.where, "x");
    assert_int_equal(scan_str("[[1,2,3,4,5],[1,2,3,4,5,6,7]]", &tight, &r), JSONSCAN_ELEMENTS);
    assert_int_equal(r.amount, 7);
    assert_string_equal(r.where, "[1]");
    assert_false(r.at_least);
    /* the outermost container has no path */
    assert_int_equal(scan_str("[1,2,3,4,5,6]", &tight, &r), JSONSCAN_ELEMENTS);
    assert_string_equal(r.where, "");
    /* the text ends before the array does: as far as it went */
    assert_int_equal(scan_str("[1,2,3,4,5,6,7", &tight, &r), JSONSCAN_ELEMENTS);
    assert_int_equal(r.amount, 7);
    assert_true(r.at_least);

    jerr e = {0};
    const char *t = "{\"env\":{\"A\":\"1\",\"B\":\"2\",\"C\":\"3\",\"D\":\"4\"}}";
    assert_null(jsonscan_load(t, strlen(t), &tight, &e));
    assert_int_equal(e.http, 413);
    assert_string_equal(e.field, "env");
    assert_string_equal(e.msg, "env: an object of 4 members; joblet takes at most 3 members per object");
}

static void test_strings(void **state)
{
    (void)state;
    jsonscan_result r;
    /* decoded lengths: an escape is a byte, \u its UTF-8, a surrogate pair 4 */
    assert_int_equal(scan_str("[\"\\n\\t\\\"\\\\\\/\\b\\f\\r\"]", &tight, &r), JSONSCAN_OK);
    assert_int_equal(r.max_string, 8);
    assert_int_equal(scan_str("[\"\\u00e9\\u20ac\\ud83d\\ude00\"]", &tight, &r), JSONSCAN_STRING);
    assert_int_equal(r.amount, 9);
    assert_int_equal(scan_str("[\"\\u00e9\\u20ac\\u0041\\u0042\\u0043\"]", &tight, &r), JSONSCAN_OK);
    assert_int_equal(r.max_string, 8);
    assert_int_equal(scan_str("{\"a\":[\"ok\",\"123456789\"]}", &tight, &r), JSONSCAN_STRING);
    assert_int_equal(r.amount, 9);
    assert_string_equal(r.where, "a[1]");
    /* the long key's strings have no bound but the text's; the key itself is a key */
    assert_int_equal(scan_str("[{\"b64\":\"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\"}]", &tight, &r),
                     JSONSCAN_OK);
    assert_int_equal(scan_str("[{\"b64\":{\"x\":\"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\"}}]", &tight, &r),
                     JSONSCAN_STRING);
    assert_string_equal(r.where, "[0].b64.x");
    /* keys are held to the same length */
    assert_int_equal(scan_str("{\"abcdefghi\":1}", &tight, &r), JSONSCAN_STRING);
    assert_string_equal(r.where, "abcdefghi");
    /* a place's keys shown without control bytes or quotes, 32 bytes at most */
    jsonscan_limits l = wide;
    l.members = 1;
    assert_int_equal(scan_str("{\"a\x1b\x07\r\n\\\"b\":{\"x\":1,\"y\":2}}", &l, &r), JSONSCAN_MEMBERS);
    assert_string_equal(r.where, "a??????b");
    assert_int_equal(scan_str("{\"0123456789012345678901234567890123456789\":{\"x\":1,\"y\":2}}", &l, &r),
                     JSONSCAN_MEMBERS);
    assert_string_equal(r.where, "01234567890123456789012345678901\xe2\x80\xa6");
    /* an unterminated string that already passed: "at least" */
    assert_int_equal(scan_str("[\"123456789", &tight, &r), JSONSCAN_STRING);
    assert_true(r.at_least);

    jerr e = {0};
    const char *t = "{\"args\":[\"x\",\"much too long\"]}";
    assert_null(jsonscan_load(t, strlen(t), &tight, &e));
    assert_int_equal(e.http, 413);
    assert_string_equal(e.field, "args[1]");
    assert_string_equal(e.msg, "args[1]: a string of 13 bytes; joblet takes strings of at most 8 bytes (but an "
                               "upload's b64, which the body's size bounds)");
}

static void test_totals(void **state)
{
    (void)state;
    jsonscan_result r;
    /* 20 values: the limit */
    assert_int_equal(scan_str("[[1,2,3,4],[1,2,3,4],[1,2,3,4],[1,2,3]]", &tight, &r), JSONSCAN_OK);
    assert_int_equal(r.values, 20);
    assert_int_equal(scan_str("[[1,2,3,4],[1,2,3,4],[1,2,3,4],[1,2,3,4],[1,2,3,4]]", &tight, &r), JSONSCAN_VALUES);
    assert_int_equal(r.amount, 26); /* all of them, counted to the end */
    assert_string_equal(r.where, "");
    assert_int_equal(scan_str("[[{},{},{}],[{},{}]]", &tight, &r), JSONSCAN_CONTAINERS);
    assert_int_equal(r.amount, 8);
    assert_int_equal(scan_str("[[{},{},{}],[{},{}],", &tight, &r), JSONSCAN_CONTAINERS);
    assert_int_equal(r.amount, 8);
    assert_true(r.at_least);

    jerr e = {0};
    const char *t = "[[{},{},{}],[{},{}]]";
    assert_null(jsonscan_load(t, strlen(t), &tight, &e));
    assert_int_equal(e.http, 413);
    assert_string_equal(e.field, "");
    assert_string_equal(e.msg, "the request holds 8 objects and arrays; joblet takes at most 6 in one request "
                               "(a test fits)");
    t = "[[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]]";
    assert_null(jsonscan_load(t, strlen(t), &tight, &e));
    assert_string_equal(e.msg, "the request holds 26 values; joblet takes at most 20 in one request (a test fits)");
}

static void test_syntax(void **state)
{
    (void)state;
    jsonscan_result r;
    static const struct { const char *text; size_t at; } bad[] = {
        {"", 0},           {"  ", 2},          {"[", 1},          {"[1,", 3},       {"{\"a\"}", 4},
        {"{\"a\":}", 5},   {"{1:2}", 1},       {"[1 2]", 3},      {"[1,]x", 3},     {"{\"a\":1,}", 7},
        {"[}", 1},         {"{]", 1},          {"[1]]", 3},       {"{} {}", 3},     {"[\"abc", 5},
        {"{\"ab", 4},      {"[\x01]", 1},      {"[1]\x00", 3},    {"\xef\xbb\xbf[]", 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t len = strlen(bad[i].text) + (i == 17); /* one holds a NUL */
        assert_int_equal(jsonscan(bad[i].text, len, &wide, &r), JSONSCAN_SYNTAX);
        assert_int_equal(r.at, bad[i].at);
        jerr e = {0};
        assert_null(jsonscan_load(bad[i].text, len, &wide, &e));
        assert_int_equal(e.http, 400);
        assert_non_null(strstr(e.msg, "the request body is not valid JSON: "));
    }
    /* loose tokens: jansson refuses them, in its words */
    static const char *const loose[] = {"[tru]", "[01]", "[1.]", "[\"\\x\"]", "[\"\x01\"]", "[\"\xff\"]", "1",
                                        "{\"a\":1,\"a\":2}", "[\"\\u0000\"]", "[-]", "[1e]"};
    for (size_t i = 0; i < sizeof loose / sizeof loose[0]; i++) {
        assert_int_equal(scan_str(loose[i], &wide, &r), JSONSCAN_OK);
        jerr e = {0};
        assert_null(jsonscan_load(loose[i], strlen(loose[i]), &wide, &e));
        assert_int_equal(e.http, 400);
        /* (a NUL in a string is JSON; jansson's words named its flag: joblet's say what to do) */
        assert_non_null(strstr(e.msg, strstr(loose[i], "\\u0000") ? "holds \\u0000 (a NUL character) in a string"
                                      : !strcmp(loose[i], "1")   ? "must be a JSON object ({...}) or, where a list "
                                                                   "is taken, an array ([...]), not a bare string"
                                                                 : "the request body is not valid JSON: "));
        assert_null(strstr(e.msg, "JSON_ALLOW_NUL"));
    }
    /* a bare value is JSON, but no request: said so (was "not valid JSON: '[' or '{' expected"), and
     * text that is no JSON at all starting as one is not */
    static const char *const bare[] = {"\"x\"", "null", "true", "-2.5"};
    for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++) {
        jerr be = {0};
        assert_null(jsonscan_load(bare[i], strlen(bare[i]), &wide, &be));
        assert_int_equal(be.http, 400);
        assert_non_null(strstr(be.msg, "not a bare string, number, true, false or null"));
    }
    jerr ne = {0};
    assert_null(jsonscan_load("stop it", 7, &wide, &ne));
    assert_non_null(strstr(ne.msg, "the request body is not valid JSON: "));
    jerr e = {0};
    const char *t = "{\"a\":1,\"a\":2}";
    assert_null(jsonscan_load(t, strlen(t), &wide, &e));
    assert_non_null(strstr(e.msg, "duplicate object key"));
    json_t *j;
    /* jansson loses a NUL right after a number or literal ("[1\0]" is [1]): so does the scan */
    assert_int_equal(jsonscan("[1\0,true\0]", 10, &wide, &r), JSONSCAN_OK);
    assert_int_equal(r.values, 3);
    j = jsonscan_load("[1\0,true\0]", 10, &wide, &e);
    assert_non_null(j);
    json_decref(j);
    /* the text need not end in a NUL: only len bytes are read */
    j = jsonscan_load("[1,2]xyz", 5, &wide, &e);
    assert_non_null(j);
    assert_int_equal(json_array_size(j), 2);
    json_decref(j);
}

/* A number jansson cannot hold is refused by its place, with what would be accepted; the largest
 * it holds, and a tiny real, pass. */
static void test_numbers_too_large(void **state)
{
    (void)state;
    static const struct {
        const char *text, *field, *shown;
    } big[] = {
        {"{\"priority\":99999999999999999999}", "priority", "99999999999999999999"},
        {"{\"a\":[1,{\"b\":9223372036854775808}]}", "a[1].b", "9223372036854775808"},
        {"{\"n\":-9223372036854775809}", "n", "-9223372036854775809"},
        {"[1e400]", "[0]", "1e400"},
        {"{\"x\":-2.5E+999}", "x", "-2.5E+999"},
        /* a real of 64 bytes or more (it was left to jansson, and its refusal named no field) */
        {"{\"r\":4e88888888888888888888888888888888888888888888888888888888888888888888}", "r",
         "4e" "88888888888888888888888888888888888888\xe2\x80\xa6"}, /* (40 bytes shown) */
        {"{\"r\":1234567890123456789012345678901234567890123456789012345678901234567890.5e300}", "r",
         "1234567890123456789012345678901234567890"},
        /* what jansson's lexer reads as one number at a loose token's start, and stops at: an
         * integer, though an 'E' comes later in the run */
        {"{\"t\":77777777777777777777+7EE20}", "t", "77777777777777777777 is too large"},
        /* and the one right after it, which jansson's lexer reads before its parser stops (the
         * project CI's fuzz_jsonscan: it was left to jansson, whose words name no field) */
        {"{\"t\":48888-88e8888888888888888}", "t", "-88e8888888888888888 is too large"},
        {"[1e5-99999999999999999999]", "[0]", "-99999999999999999999 is too large"},
    };
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
        jerr e = {0};
        assert_null(jsonscan_load(big[i].text, strlen(big[i].text), &wide, &e));
        assert_int_equal(e.http, 400);
        assert_string_equal(e.field, big[i].field);
        assert_non_null(strstr(e.msg, big[i].shown));
        assert_non_null(strstr(e.msg, "is too large; joblet takes whole numbers from -9223372036854775808 to "
                                      "9223372036854775807"));
    }
    static const char *fine[] = {"[9223372036854775807,-9223372036854775808]",
                                 "[1e-400,1.5e308,0.0000001,"
                                 "17976931348623157081452742373170435679807056752584499659891747680315726078002853876058"
                                 "95586327668781715404589535143824642343213268894641827684675467035375169860499105765512"
                                 "82076245490090389328944075868508455133942304583236903222948165808559332123348274797826"
                                 "204144723168738177180919299881250404026184124858368.0,1.0000000000000000000000000000"
                                 "000000000000000000000000000000000000000001e-5]",
                                 "{\"a\":00012}", "[7+7EE99999]", "[1.e99999]", "[1e+]", "[-0.5e-]",
                                 "[1,-99999999999999999999.e5]", "[1-2]", "[1e5-7-1e999]"};
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++) {
        jerr e = {0};
        jsonscan_result r;
        scan_str(fine[i], &wide, &r);
        assert_int_equal(r.number_len, 0);
        json_t *j = jsonscan_load(fine[i], strlen(fine[i]), &wide, &e);
        if (i < 2) {
            assert_non_null(j);
            json_decref(j);
        } else { /* not JSON (a leading zero, a bad token after a number or in one: "1.", "1e+"):
                  * jansson's word, not the number's */
            assert_null(j);
            assert_non_null(strstr(e.msg, "the request body is not valid JSON: "));
        }
    }
    /* an error before the number is jansson's */
    jerr e = {0};
    const char *t = "{\"a\":\"\\q\",\"b\":99999999999999999999}";
    assert_null(jsonscan_load(t, strlen(t), &wide, &e));
    assert_non_null(strstr(e.msg, "the request body is not valid JSON: "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_agree_with_jansson),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_members_and_elements),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_totals),
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_numbers_too_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
