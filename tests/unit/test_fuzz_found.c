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
#include "gpu/backend_smi.h"
#include "gpu/inventory.h"

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

static wfp_doc *parse(const char *text, wfp_errors *errs) { return wfp_parse("wf.yaml", text, strlen(text), errs); }

static bool said(const wfp_errors *errs, const char *msg)
{
    for (size_t i = 0; i < errs->n; i++)
        if (strstr(errs->msg[i], msg))
            return true;
    return false;
}

/* wfparse, found by hand (inputs written to look for quadratic work in the parser, which
 * fuzz_wfparse's inputs of at most 16 KB are too small to show): a chain of "<<"
 * merges, each mapping merging the one before, copies every key again at each step, and each
 * key was checked against the mapping's others by a scan: a 70 KB file of 2,000 steps took
 * 50 s, a 1 MiB one would take hours and gigabytes. Keys are now hashed and merges may bring
 * at most 100,000 keys into a file. */
static void test_wfparse_merge_chain(void **state)
{
    size_t cap = 1 << 20, n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text + n, cap - n, "jobs:\n  j:\n    command: x\n    environment:\n      A0: &a0 {k0: v}\n");
    for (int i = 1; i < 600; i++)
        n += (size_t)snprintf(text + n, cap - n, "      A%d: &a%d {<<: *a%d, k%d: v}\n", i, i, i - 1, i);
    wfp_errors errs;
    assert_null(parse(text, &errs));
    assert_true(said(&errs, "'<<' merges would bring more than 100000 keys into this file"));
    wfp_errors_free(&errs);
    free(text);
}

/* The same, for what the hashing must not change: a key given twice is refused at the second
 * with the first's place; a mapping's own key wins over a merged one, an earlier merge over a
 * later one; an alias names the latest definition of its anchor. */
static void test_wfparse_keys_and_anchors_as_before(void **state)
{
    wfp_errors errs;
    assert_null(parse("jobs:\n  a:\n    command: x\n    args: [1]\n    command: y\n", &errs));
    assert_true(said(&errs, "wf.yaml:5:5: duplicate key 'command' (first given at line 3, column 5)"));
    wfp_errors_free(&errs);

    wfp_doc *d = parse("name: &n first\n"
                       "description: &n second\n"
                       "jobs:\n"
                       "  a:\n"
                       "    command: x\n"
                       "    resources: &d1 {max_cpu: 50, max_memory: 1GB}\n"
                       "  b:\n"
                       "    command: x\n"
                       "    resources: &d2 {max_cpu: 75, max_runtime: 60}\n"
                       "  j:\n"
                       "    command: *n\n"
                       "    resources:\n"
                       "      <<: [*d1, *d2]\n"
                       "      max_memory: 2GB\n",
                       &errs);
    if (!d)
        fail_msg("refused: %s", errs.msg[0]);
    json_t *rq = json_object_get(json_array_get(json_object_get(wfp_body(d), "jobs"), 2), "request");
    assert_string_equal(json_string_value(json_object_get(rq, "command")), "second");
    assert_int_equal(json_integer_value(json_object_get(rq, "max_cpu")), 50);
    assert_int_equal(json_integer_value(json_object_get(rq, "max_memory_mb")), 2048);
    assert_int_equal(json_integer_value(json_object_get(rq, "max_runtime_s")), 60);
    wfp_free(d);
    wfp_errors_free(&errs);
}

/* gpu_smi: a power.draw nvidia-smi printed as 2e95 (or inf, nan) was made an int: undefined
 * behaviour (UBSan: "outside the range of representable values of type 'int'"). */
static void test_smi_power_out_of_range(void **state)
{
    static const char *const readings[] = {"2e95", "-5", "inf", "nan", "1e6", "87.4"};
    static const int want[] = {-1, -1, -1, -1, -1, 87};
    for (size_t i = 0; i < sizeof readings / sizeof readings[0]; i++) {
        static gpu_inventory inv;
        gpu_inventory_init(&inv, "smi");
        char csv[300];
        snprintf(csv, sizeof csv, "0, 00000000:41:00.0, GPU-6c22e95d, NVIDIA A100-SXM4-80GB, 81920, 3127, [N/A], 38, "
                                  "%s, 8.0, 535.129.03, Enabled, Enabled, 92.00.45.00.03\n", readings[i]);
        jerr e = {0};
        assert_int_equal(backend_smi_parse_query(csv, &inv, &e), 0);
        assert_int_equal(inv.n, 1);
        assert_int_equal(inv.gpu[0].power_w, want[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_cc_leading_zero),
        cmocka_unit_test(test_wfparse_text_without_nul),
        cmocka_unit_test(test_wfparse_merge_chain),
        cmocka_unit_test(test_wfparse_keys_and_anchors_as_before),
        cmocka_unit_test(test_smi_power_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
