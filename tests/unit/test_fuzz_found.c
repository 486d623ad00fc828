/* Regression tests for what the fuzz harnesses of tests/fuzz found in pure functions, one test
 * per finding, named after it; the input that found it is in tests/fuzz/corpus/<harness>/ as
 * regress-<name>. (tests/fuzz/README.md lists every finding and its fix.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/wfparse.h"
#include "common/jobreq.h"

#define NOW ((time_t)1767225600) /* 2026-01-01T00:00:00Z */

/* jobreq_text, jobreq_json: gpu_cc "08" became "08.0", which reads back as "8.0": what rnx sent
 * was not what the daemon stored, and a stored request changed when read back. */
static void test_gpu_cc_leading_zero(void **state)
{
    job_req r = {0};
    jerr e = {0};
    assert_int_equal(jobreq_set_text(&r, &jobreq_fields[JR_GPU_CC], "08", NOW, &e), 0);
    assert_string_equal(r.gpu_cc, "8.0");
    jobreq_free(&r);
    json_t *body = json_pack("{s:s,s:i,s:s}", "command", "x", "gpu_count", 1, "gpu_cc", "09");
    assert_int_equal(jobreq_from_json(body, &r, 0, NOW, &e), 0);
    assert_string_equal(r.gpu_cc, "9.0");
    json_t *stored = jobreq_to_json(&r, JOBREQ_JSON_SECRETS);
    job_req back;
    assert_int_equal(jobreq_from_json(stored, &back, JOBREQ_FROM_DB, NOW, &e), 0);
    assert_string_equal(back.gpu_cc, "9.0");
    jobreq_free(&back);
    jobreq_free(&r);
    json_decref(stored);
    json_decref(body);
}

/* wfparse: wfp_parse takes the text with its length, but the redacted copy of the file kept
 * in the body was made with strlen/strcpy, which read past the text when it was not followed
 * by a NUL (a heap overflow under ASan; with more bytes after it, they became part of the
 * stored YAML). */
static void test_wfparse_text_without_nul(void **state)
{
    static const char yaml[] = "jobs:\n  a:\n    command: x\n    secret_environment:\n      TOKEN: s3cr3t\n";
    size_t len = sizeof yaml - 1;
    char *buf = malloc(len + 8);
    memcpy(buf, yaml, len);
    memcpy(buf + len, "GARBAGE", 8); /* what follows the text in memory */
    wfp_errors errs;
    wfp_doc *d = wfp_parse("wf.yaml", buf, len, &errs);
    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(wfp_body(d), "yaml")),
                        "jobs:\n  a:\n    command: x\n    secret_environment:\n      TOKEN: \"***\"\n");
    wfp_free(d);
    wfp_errors_free(&errs);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_cc_leading_zero),
        cmocka_unit_test(test_wfparse_text_without_nul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
