/* Unit tests for src/cli/wfparse.c: workflow files (YAML) into the body of POST /v1/workflows.
 * Each malformed file must be refused with the exact message, at the exact line and column;
 * the seed's pipeline and the examples must convert to the expected JSON; the daemon's error
 * fields must map back onto the YAML that set them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/wfparse.h"

#ifndef JOBLET_SOURCE_ROOT
#error "JOBLET_SOURCE_ROOT must name the source tree (tests/unit/meson.build sets it)"
#endif

/* Parses text as the file "wf.yaml" (uploads relative to the current directory). */
static wfp_doc *parse(const char *text, wfp_errors *errs) { return wfp_parse("wf.yaml", text, strlen(text), errs); }

/* The file must be refused, and its first problem must read exactly want. Returns the
 * number of problems, for the cases that check there is only one. */
static size_t refused(const char *text, const char *want)
{
    wfp_errors errs;
    wfp_doc *d = parse(text, &errs);
    if (d) {
        wfp_free(d);
        fail_msg("accepted, but should be refused with: %s\n--- file ---\n%s", want, text);
    }
    assert_true(errs.n >= 1);
    if (strcmp(errs.msg[0], want) != 0)
        fail_msg("wrong message\n  want: %s\n  got:  %s\n--- file ---\n%s", want, errs.msg[0], text);
    size_t n = errs.n + errs.dropped;
    wfp_errors_free(&errs);
    return n;
}

#define REFUSED_ONCE(text, want) assert_int_equal(refused((text), (want)), 1)

static json_t *must_parse(const char *path, const char *text, wfp_doc **out)
{
    wfp_errors errs;
    wfp_doc *d = wfp_parse(path, text, strlen(text), &errs);
    if (!d)
        fail_msg("refused: %s", errs.n ? errs.msg[0] : "(no message)");
    *out = d;
    return wfp_body(d);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 20);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* A JSON text equal to v (ignoring key order). */
static void assert_json(json_t *v, const char *want_text)
{
    json_error_t je;
    json_t *want = json_loads(want_text, 0, &je);
    if (!want)
        fail_msg("bad expected JSON: %s: %s", je.text, want_text);
    if (!json_equal(v, want)) {
        char *got = json_dumps(v, JSON_INDENT(1));
        fail_msg("JSON differs\n  want: %s\n  got:  %s", want_text, got);
    }
    json_decref(want);
}

/* ---- the seed's pipeline ------------------------------------------------------------- */

static const char seed[] =
    "jobs:\n"
    "  data-preprocessing:\n"
    "    command: \"python3\"\n"
    "    args: [\"preprocess.py\"]\n"
    "    runtime: \"python-3.11-ml\"\n"
    "    resources:\n"
    "      max_memory: 4096\n"
    "      max_cpu: 200\n"
    "  model-training:\n"
    "    command: \"python3\"\n"
    "    args: [\"train.py\", \"--epochs\", \"100\"]\n"
    "    runtime: \"python-3.11-ml\"\n"
    "    requires:\n"
    "      - data-preprocessing: \"COMPLETED\"\n"
    "    resources:\n"
    "      max_memory: 16384\n"
    "      max_cpu: 800\n"
    "      gpu_count: 2          # Request 2 GPUs\n"
    "      gpu_memory_mb: 8192   # 8GB minimum per GPU\n"
    "  model-evaluation:\n"
    "    command: \"python3\"\n"
    "    args: [\"evaluate.py\"]\n"
    "    runtime: \"python-3.11-ml\"\n"
    "    requires:\n"
    "      - model-training: \"COMPLETED\"\n"
    "    resources:\n"
    "      max_memory: 8192\n"
    "      gpu_count: 1\n"
    "      gpu_memory_mb: 4096\n";

static const char seed_jobs[] =
    "[{\"name\": \"data-preprocessing\", \"requires\": [],"
    "  \"request\": {RT \"name\": \"data-preprocessing\", \"command\": \"python3\", \"args\": [\"preprocess.py\"],"
    "              \"max_cpu\": 200, \"max_memory_mb\": 4096}},"
    " {\"name\": \"model-training\", \"requires\": [{\"job\": \"data-preprocessing\", \"status\": \"COMPLETED\"}],"
    "  \"request\": {RT \"name\": \"model-training\", \"command\": \"python3\", \"args\": [\"train.py\", \"--epochs\", \"100\"],"
    "              \"max_cpu\": 800, \"max_memory_mb\": 16384, \"gpu_count\": 2, \"gpu_memory_mb\": 8192}},"
    " {\"name\": \"model-evaluation\", \"requires\": [{\"job\": \"model-training\", \"status\": \"COMPLETED\"}],"
    "  \"request\": {RT \"name\": \"model-evaluation\", \"command\": \"python3\", \"args\": [\"evaluate.py\"],"
    "              \"max_memory_mb\": 8192, \"gpu_count\": 1, \"gpu_memory_mb\": 4096}}]";

/* seed_jobs with "RT" replaced by rt. */
static char *seed_jobs_with(const char *rt)
{
    char *out = calloc(1, sizeof seed_jobs + 3 * strlen(rt) + 1), *o = out;
    for (const char *p = seed_jobs; *p;)
        if (p[0] == 'R' && p[1] == 'T') {
            o = stpcpy(o, rt);
            p += 2;
        } else {
            *o++ = *p++;
        }
    return out;
}

static void test_seed_with_runtime(void **state)
{
    wfp_doc *d;
    json_t *body = must_parse("pipelines/ml-training-pipeline.yaml", seed, &d);
    assert_string_equal(json_string_value(json_object_get(body, "name")), "ml-training-pipeline");
    assert_true(json_is_null(json_object_get(body, "description")));
    assert_string_equal(json_string_value(json_object_get(body, "source")), "pipelines/ml-training-pipeline.yaml");
    assert_string_equal(json_string_value(json_object_get(body, "yaml")), seed);
    char *want = seed_jobs_with("\"runtime\": \"python-3.11-ml\",");
    assert_json(json_object_get(body, "jobs"), want);
    free(want);
    assert_int_equal(json_object_size(body), 5);
    wfp_free(d);
}

static void test_seed_without_runtime(void **state)
{
    /* the seed file with its runtime lines removed */
    char text[sizeof seed], *o = text;
    for (const char *p = seed; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = (size_t)(nl - p) + 1;
        if (!strstr(p, "runtime:") || strstr(p, "runtime:") > nl) {
            memcpy(o, p, n);
            o += n;
        }
        p += n;
    }
    *o = 0;
    wfp_doc *d;
    json_t *body = must_parse("seed.yaml", text, &d);
    char *want = seed_jobs_with("");
    assert_json(json_object_get(body, "jobs"), want);
    free(want);
    assert_string_equal(json_string_value(json_object_get(body, "name")), "seed");
    wfp_free(d);
}

/* ---- the examples -------------------------------------------------------------------- */

static json_t *example(const char *name, wfp_doc **d)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/%s", JOBLET_SOURCE_ROOT, name);
    char *text = slurp(path);
    wfp_errors errs;
    *d = wfp_parse_file(path, &errs);
    if (!*d)
        fail_msg("%s refused: %s", name, errs.n ? errs.msg[0] : "?");
    json_t *body = wfp_body(*d);
    assert_string_equal(json_string_value(json_object_get(body, "yaml")), text);
    assert_string_equal(json_string_value(json_object_get(body, "source")), path);
    free(text);
    return body;
}

static void test_example_pipeline(void **state)
{
    wfp_doc *d;
    json_t *body = example("ml-training-pipeline.yaml", &d);
    assert_string_equal(json_string_value(json_object_get(body, "name")), "ml-training-pipeline");
    json_t *jobs = json_object_get(body, "jobs");
    assert_int_equal(json_array_size(jobs), 3);
    /* the seed's structure and resources (its max_cpu sized for 2 CPUs), with shell commands and no runtime */
    for (size_t i = 0; i < 3; i++) {
        json_t *j = json_array_get(jobs, i), *req = json_object_get(j, "request");
        assert_null(json_object_get(j, "runtime"));
        assert_string_equal(json_string_value(json_object_get(req, "command")), "sh");
        json_object_del(req, "args");
    }
    assert_json(jobs,
                "[{\"name\": \"data-preprocessing\", \"requires\": [],"
                "  \"request\": {\"name\": \"data-preprocessing\", \"command\": \"sh\", \"max_cpu\": 100, \"max_memory_mb\": 4096}},"
                " {\"name\": \"model-training\", \"requires\": [{\"job\": \"data-preprocessing\", \"status\": \"COMPLETED\"}],"
                "  \"request\": {\"name\": \"model-training\", \"command\": \"sh\", \"max_cpu\": 200, \"max_memory_mb\": 16384,"
                "               \"gpu_count\": 2, \"gpu_memory_mb\": 8192}},"
                " {\"name\": \"model-evaluation\", \"requires\": [{\"job\": \"model-training\", \"status\": \"COMPLETED\"}],"
                "  \"request\": {\"name\": \"model-evaluation\", \"command\": \"sh\", \"max_memory_mb\": 8192, \"gpu_count\": 1,"
                "               \"gpu_memory_mb\": 4096}}]");
    wfp_free(d);
}

static void test_example_diamond(void **state)
{
    wfp_doc *d;
    json_t *body = example("diamond.yaml", &d);
    assert_string_equal(json_string_value(json_object_get(body, "name")), "diamond");
    assert_string_equal(json_string_value(json_object_get(body, "description")),
                        "fetch, two transforms in parallel, a report that needs both");
    assert_json(json_object_get(body, "jobs"),
                "[{\"name\": \"fetch\", \"requires\": [],"
                "  \"request\": {\"name\": \"fetch\", \"command\": \"sh\", \"args\": [\"-c\", \"echo fetching; sleep 1\"]}},"
                " {\"name\": \"transform-left\", \"requires\": [{\"job\": \"fetch\", \"status\": \"COMPLETED\"}],"
                "  \"request\": {\"name\": \"transform-left\", \"command\": \"sh\", \"args\": [\"-c\", \"echo left; sleep 2\"]}},"
                " {\"name\": \"transform-right\", \"requires\": [{\"job\": \"fetch\", \"status\": \"COMPLETED\"}],"
                "  \"request\": {\"name\": \"transform-right\", \"command\": \"sh\", \"args\": [\"-c\", \"echo right; sleep 2\"]}},"
                " {\"name\": \"report\", \"requires\": [{\"job\": \"transform-left\", \"status\": \"COMPLETED\"},"
                "                                      {\"job\": \"transform-right\", \"status\": \"COMPLETED\"}],"
                "  \"request\": {\"name\": \"report\", \"command\": \"sh\", \"args\": [\"-c\", \"echo both transforms are done\"]}}]");
    wfp_free(d);
}

static void test_example_fan_out_fan_in(void **state)
{
    wfp_doc *d;
    json_t *body = example("fan-out-fan-in.yaml", &d);
    json_t *jobs = json_object_get(body, "jobs");
    assert_int_equal(json_array_size(jobs), 7);
    /* the shards share settings through the anchor and "<<"; each has its own args */
    for (size_t i = 1; i <= 4; i++) {
        json_t *j = json_array_get(jobs, i), *req = json_object_get(j, "request");
        char name[16], arg[4];
        snprintf(name, sizeof name, "shard-%zu", i - 1);
        snprintf(arg, sizeof arg, "%zu", i - 1);
        assert_string_equal(json_string_value(json_object_get(j, "name")), name);
        assert_json(json_object_get(j, "requires"), "[{\"job\": \"split\", \"status\": \"COMPLETED\"}]");
        json_t *ups = json_object_get(req, "uploads");
        assert_int_equal(json_array_size(ups), 1);
        json_t *u = json_array_get(ups, 0);
        assert_string_equal(json_string_value(json_object_get(u, "path")), "shard.sh");
        assert_string_equal(json_string_value(json_object_get(u, "type")), "file");
        /* the listing: the file's size, its bytes sent after the request */
        assert_null(json_object_get(u, "content_b64"));
        assert_true(json_integer_value(json_object_get(u, "size")) > 0);
        assert_int_equal(wfp_job_uploads(d, i)->nfiles, 1);
        json_object_del(req, "uploads");
        char want[512];
        snprintf(want, sizeof want,
                 "{\"name\": \"%s\", \"command\": \"sh\", \"args\": [\"shard.sh\", \"%s\"], \"max_memory_mb\": 1024,"
                 " \"max_runtime_s\": 600, \"gpu_count\": 1}",
                 name, arg);
        assert_json(req, want);
    }
    assert_json(json_object_get(json_array_get(jobs, 5), "requires"),
                "[{\"job\": \"shard-0\", \"status\": \"COMPLETED\"}, {\"job\": \"shard-1\", \"status\": \"COMPLETED\"},"
                " {\"job\": \"shard-2\", \"status\": \"COMPLETED\"}, {\"job\": \"shard-3\", \"status\": \"COMPLETED\"}]");
    assert_json(json_object_get(json_array_get(jobs, 6), "requires"), "[{\"job\": \"merge\", \"status\": \"CANCELED\"}]");
    wfp_free(d);
}

/* ---- every key, converted ------------------------------------------------------------ */

static void test_every_key(void **state)
{
    wfp_doc *d;
    json_t *body = must_parse("all.yaml",
                              "name: everything\n"
                              "description: |\n"
                              "  every key of a job\n"
                              "jobs:\n"
                              "  first:\n"
                              "    command: /bin/true\n"
                              "  a:\n"
                              "    command: python3\n"
                              "    args: [run.py, 100, 1.50, true, ~x, 'null']\n"
                              "    network: host\n"
                              "    volumes: [data]\n"
                              "    environment: {LOG: debug, N: 8, EMPTY: \"\"}\n"
                              "    secret_environment:\n"
                              "      TOKEN: s3cr3t\n"
                              "    workdir: /work/src\n"
                              "    requires:\n"
                              "      - first: completed\n"
                              "    resources:\n"
                              "      cross_numa: no\n"
                              "      max_cpu: 150%\n"
                              "      max_memory: 2GB\n"
                              "      max_io_bps: 10MB\n"
                              "      cpu_cores: 3,0-1\n"
                              "      max_runtime: 1h30m\n"
                              "      gpu_count: 2\n"
                              "      gpu_memory_mb: 16GB\n"
                              "      gpu_type: H100\n"
                              "      gpu_cc: 9.0\n"
                              "      priority: -5\n"
                              "      preemptible: true\n"
                              "  b:\n"
                              "    command: x\n"
                              "    resources: {gpu_count: 1, gpu_share: yes, gpu_memory_mb: 4096, gpu_cc: 8}\n"
                              "  c:\n"
                              "    command: x\n"
                              "    resources: {gpu_mig: 1g.10gb, cpu_cores: 2}\n"
                              "  d:\n"
                              "    command: x\n"
                              "    resources: {gpu_count: all}\n",
                              &d);
    assert_string_equal(json_string_value(json_object_get(body, "name")), "everything");
    assert_string_equal(json_string_value(json_object_get(body, "description")), "every key of a job\n");
    assert_json(json_array_get(json_object_get(body, "jobs"), 1),
                "{\"name\": \"a\", \"requires\": [{\"job\": \"first\", \"status\": \"COMPLETED\"}],"
                " \"request\": {\"name\": \"a\", \"command\": \"python3\", \"volumes\": [\"data\"],"
                "   \"args\": [\"run.py\", \"100\", \"1.50\", \"true\", \"~x\", \"null\"],"
                "   \"env\": {\"LOG\": \"debug\", \"N\": \"8\", \"EMPTY\": \"\"}, \"secret_env\": {\"TOKEN\": \"s3cr3t\"},"
                "   \"workdir\": \"/work/src\", \"network\": \"host\", \"max_cpu\": 150, \"max_memory_mb\": 2048,"
                "   \"max_iobps\": 10485760, \"cpu_cores\": \"0-1,3\", \"max_runtime_s\": 5400, \"gpu_count\": 2,"
                "   \"gpu_memory_mb\": 16384, \"gpu_type\": \"H100\", \"gpu_cc\": \"9.0\", \"priority\": -5,"
                "   \"preemptible\": true, \"cross_numa\": false}}");
    assert_json(json_object_get(json_array_get(json_object_get(body, "jobs"), 2), "request"),
                "{\"name\": \"b\", \"command\": \"x\", \"gpu_count\": 1, \"gpu_memory_mb\": 4096, \"gpu_cc\": \"8.0\","
                " \"gpu_share\": true}");
    assert_json(json_object_get(json_array_get(json_object_get(body, "jobs"), 3), "request"),
                "{\"name\": \"c\", \"command\": \"x\", \"cpu_cores\": \"2\", \"gpu_mig\": \"1g.10gb\"}");
    assert_json(json_object_get(json_array_get(json_object_get(body, "jobs"), 4), "request"),
                "{\"name\": \"d\", \"command\": \"x\", \"gpu_all\": true}");
    wfp_free(d);
}

/* array: a job array (docs/workflows.md "Arrays in a workflow"), read by the request schema,
 * its task list refused at its line. */
static void test_array_key(void **state)
{
    wfp_doc *d;
    json_t *body = must_parse("a.yaml", "jobs:\n  prep:\n    command: x\n  sweep:\n    command: x\n"
                                        "    array: 0-9%2\n    requires: [prep: COMPLETED]\n", &d);
    assert_json(json_object_get(json_array_get(json_object_get(body, "jobs"), 1), "request"),
                "{\"name\": \"sweep\", \"command\": \"x\", \"array\": \"0-9%2\"}");
    wfp_free(d);
    wfp_errors errs;
    assert_null(parse("jobs:\n  sweep:\n    command: x\n    array: 5-2\n", &errs));
    assert_true(errs.n >= 1);
    assert_non_null(strstr(errs.msg[0], "wf.yaml:4:12: job 'sweep': array: "));
    wfp_errors_free(&errs);
}

/* Anchors, aliases and merge keys are YAML's own way to share settings. */
static void test_merge_values(void **state)
{
    wfp_doc *d;
    json_t *body = must_parse("m.yaml",
                              "jobs:\n"
                              "  a:\n"
                              "    command: x\n"
                              "    resources: &small {max_memory: 512, max_cpu: 50}\n"
                              "  b:\n"
                              "    command: y\n"
                              "    resources:\n"
                              "      <<: *small\n"
                              "      max_cpu: 100\n"
                              "  c: &job\n"
                              "    command: z\n"
                              "    args: [1]\n"
                              "  d:\n"
                              "    <<: *job\n"
                              "    args: [2]\n",
                              &d);
    json_t *jobs = json_object_get(body, "jobs");
    assert_json(json_object_get(json_array_get(jobs, 1), "request"),
                "{\"name\": \"b\", \"command\": \"y\", \"max_cpu\": 100, \"max_memory_mb\": 512}");
    assert_json(json_object_get(json_array_get(jobs, 3), "request"),
                "{\"name\": \"d\", \"command\": \"z\", \"args\": [\"2\"]}");
    wfp_free(d);
}

/* An anchor named again and again stands for its copies: a file under 1 MiB (an anchor of
 * 900 KB of args, named by 3,000 jobs) made rnx build 2.7 GB of request and take 8 GB of
 * memory. What a file stands for with its aliases written out is bounded; sharing settings
 * within it is not refused. */
static void test_aliases_written_out_are_bounded(void **state)
{
    size_t cap = 1 << 20, n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text + n, cap - n, "jobs:\n  j0:\n    command: echo\n    args: &a\n");
    for (int i = 0; i < 600; i++)
        n += (size_t)snprintf(text + n, cap - n, "      - %0990d\n", i);
    for (int i = 1; i < 2000; i++)
        n += (size_t)snprintf(text + n, cap - n, "  j%d: {command: echo, args: *a}\n", i);
    assert_true(n < WFP_MAX_BYTES);
    REFUSED_ONCE(text, "wf.yaml:1:1: with its aliases (*name) written out this file would be 1212003 values and "
                       "1135 MB; a workflow may be at most 1000000 values and 64 MB so (a request joblet takes is "
                       "smaller): name fewer large anchors, or an anchor less often");
    /* nested aliases: ten levels of ten, 10^10 values in a few hundred bytes */
    n = (size_t)snprintf(text, cap, "jobs:\n  j:\n    command: echo\n    environment:\n      L0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 10; i++)
        n += (size_t)snprintf(text + n, cap - n, "      L%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n",
                              i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    wfp_errors errs;
    assert_null(parse(text, &errs));
    assert_true(errs.n >= 1 && strstr(errs.msg[0], "with its aliases (*name) written out this file would be"));
    wfp_errors_free(&errs);
    /* shared settings a few times are as before */
    n = (size_t)snprintf(text, cap, "jobs:\n  a:\n    command: echo\n    args: &a [%0990d]\n", 1);
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(text + n, cap - n, "  b%d: {command: echo, args: *a}\n", i);
    wfp_doc *d;
    json_t *body = must_parse("s.yaml", text, &d);
    assert_int_equal(json_array_size(json_object_get(body, "jobs")), 101);
    wfp_free(d);
    free(text);
}

/* ---- malformed files: the exact message, line and column ------------------------------- */

static void test_yaml_syntax(void **state)
{
    /* libfyaml's own messages, at libfyaml's position */
    REFUSED_ONCE("jobs:\n  a: [1, 2\n", "wf.yaml:3:1: flow sequence without a closing bracket");
    REFUSED_ONCE("jobs:\n\ta:\n", "wf.yaml:2:1: tab character may not be used as indentation");
    REFUSED_ONCE("jobs:\n  a:\n    command: \"x\n", "wf.yaml:3:15: double-quoted scalar without closing quote");
}

static void test_duplicate_key(void **state)
{
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    args: [1]\n    command: y\n",
                 "wf.yaml:5:5: duplicate key 'command' (first given at line 3, column 5)");
    /* two jobs of the same name: the second is refused where it is written */
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n  a:\n    command: y\n",
                 "wf.yaml:4:3: duplicate key 'a' (first given at line 2, column 3)");
}

static void test_file_level(void **state)
{
    REFUSED_ONCE("", "wf.yaml:1:1: the file is empty; a workflow needs 'jobs:', a mapping of job names to jobs");
    REFUSED_ONCE("# only a comment\n",
                 "wf.yaml:1:1: the file is empty; a workflow needs 'jobs:', a mapping of job names to jobs");
    REFUSED_ONCE("- a\n- b\n",
                 "wf.yaml:1:1: the top level must be a mapping with the keys name, description and jobs; got a list");
    REFUSED_ONCE("name: x\n", "wf.yaml:1:1: no 'jobs:'; a workflow needs a mapping of job names to jobs");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n---\njobs: {}\n",
                 "wf.yaml:4:1: a workflow file holds one YAML document; a second one starts here");
    REFUSED_ONCE("jobs:\n  a:\n    command: caf\xe9\n",
                 "wf.yaml:3:17: the file is not valid UTF-8 here; a workflow file is UTF-8 text");
    wfp_errors errs;
    assert_null(wfp_parse("wf.yaml", "jobs:\0", 6, &errs));
    assert_string_equal(errs.msg[0], "wf.yaml:1:6: the file contains a NUL byte; a workflow file is text");
    wfp_errors_free(&errs);
}

static void test_top_level_keys(void **state)
{
    REFUSED_ONCE("version: 2\njobs:\n  a:\n    command: x\n",
                 "wf.yaml:1:1: unknown key 'version'; the top level takes name, description and jobs");
    REFUSED_ONCE("nmae: x\njobs:\n  a:\n    command: x\n",
                 "wf.yaml:1:1: unknown key 'nmae' (did you mean 'name'?); the top level takes name, description and jobs");
    REFUSED_ONCE("build:\n  command: make\njobs:\n  a:\n    command: x\n",
                 "wf.yaml:1:1: unknown key 'build'; it looks like a job: jobs go under 'jobs:'");
    REFUSED_ONCE("name: [x]\njobs:\n  a:\n    command: x\n", "wf.yaml:1:7: name: must be a single value, not a list");
    REFUSED_ONCE("name: ''\njobs:\n  a:\n    command: x\n", "wf.yaml:1:7: name: is empty");
    REFUSED_ONCE("description: {a: 1}\njobs:\n  a:\n    command: x\n",
                 "wf.yaml:1:14: description: must be a single value, not a mapping");
}

static void test_jobs_shape(void **state)
{
    REFUSED_ONCE("jobs:\n", "wf.yaml:1:1: jobs: has no jobs; a workflow needs at least one");
    REFUSED_ONCE("jobs: {}\n", "wf.yaml:1:7: jobs: has no jobs; a workflow needs at least one");
    REFUSED_ONCE("jobs:\n  - a:\n      command: x\n",
                 "wf.yaml:2:3: jobs: must be a mapping of job names to jobs ('NAME:' lines with 'command:' under each); "
                 "got a list");
    REFUSED_ONCE("jobs:\n  \"a b\":\n    command: x\n",
                 "wf.yaml:2:3: job name 'a b' may hold only letters, digits, '.', '_' and '-' (at most 128)");
    REFUSED_ONCE("jobs:\n  a:\n", "wf.yaml:2:3: job 'a': has no settings; a job needs at least 'command:'");
    REFUSED_ONCE("jobs:\n  build: make\n",
                 "wf.yaml:2:10: job 'build': must be a mapping of settings with at least 'command:', e.g. "
                 "'command: make'; got 'make'");
}

static void test_unknown_keys(void **state)
{
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    retries: 3\n",
                 "wf.yaml:4:5: job 'a': unknown key 'retries'; a job takes command, args, runtime, network, uploads, "
                 "volumes, environment, secret_environment, workdir, resources, requires, isolation, devices, array");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    env: {A: 1}\n",
                 "wf.yaml:4:5: job 'a': unknown key 'env' (did you mean environment?); a job takes command, args, "
                 "runtime, network, uploads, volumes, environment, secret_environment, workdir, resources, requires, isolation, devices, array");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    gpus: 2\n",
                 "wf.yaml:4:5: job 'a': unknown key 'gpus' (did you mean resources: gpu_count?); a job takes command, "
                 "args, runtime, network, uploads, volumes, environment, secret_environment, workdir, resources, requires, isolation, devices, array");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    max_memory: 4GB\n",
                 "wf.yaml:4:5: job 'a': 'max_memory' belongs under resources:");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    resources:\n      memory: 4GB\n",
                 "wf.yaml:5:7: job 'a': resources: unknown key 'memory' (did you mean 'max_memory'?); resources are "
                 "max_cpu, max_memory, max_io_bps, cpu_cores, max_runtime, gpu_count, gpu_memory_mb, gpu_mig, priority, "
                 "gpu_type, gpu_cc, gpu_share, cross_numa, preemptible, max_net_bps, signal");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    resources:\n      workdir: /x\n",
                 "wf.yaml:5:7: job 'a': resources: 'workdir' is not a resource; it belongs to the job itself, next to "
                 "command:");
}

static void test_command_and_args(void **state)
{
    REFUSED_ONCE("jobs:\n  a:\n    args: [x]\n",
                 "wf.yaml:2:3: job 'a': command: missing; give the program to run, e.g. 'command: python3'");
    REFUSED_ONCE("jobs:\n  a:\n    command:\n",
                 "wf.yaml:3:5: job 'a': command: missing; give the program to run, e.g. 'command: python3'");
    REFUSED_ONCE("jobs:\n  a:\n    command: [python3, x.py]\n",
                 "wf.yaml:3:14: job 'a': command: must be a single value, not a list");
    REFUSED_ONCE("jobs:\n  a:\n    command: \"\"\n", "wf.yaml:3:14: job 'a': command: is empty; give the program to run");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    args: \"train.py --epochs 3\"\n",
                 "wf.yaml:4:11: job 'a': args: must be a list, e.g. [\"train.py\", \"--epochs\", \"100\"]; got "
                 "'train.py --epochs 3'");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    args:\n      - ok\n      - [nested]\n",
                 "wf.yaml:6:9: job 'a': args[1]: must be a single value, not a list");
}

static void test_job_fields(void **state)
{
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: no/such\n",
                 "wf.yaml:4:14: job 'a': network: 'no/such' is not accepted; use none (loopback only), host, isolated, bridge or a network's name");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    workdir: src\n",
                 "wf.yaml:4:14: job 'a': workdir: 'src' must be an absolute path without '..' (e.g. /work/src)");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    environment:\n      9LIVES: 1\n",
                 "wf.yaml:5:7: job 'a': environment: '9LIVES' is not a valid variable name; use letters, digits and "
                 "'_', not starting with a digit");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    environment:\n      A:\n",
                 "wf.yaml:5:7: job 'a': environment: A: has no value; write A: \"\" for an empty one");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    environment: [A=1]\n",
                 "wf.yaml:4:18: job 'a': environment: must be a mapping, e.g. {LOG_LEVEL: debug}; got a list");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    environment: {A: 1}\n    secret_environment: {A: 2}\n",
                 "wf.yaml:5:26: job 'a': secret_environment: 'A' is also set as a plain variable; give each variable once");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    volumes: data\n",
                 "wf.yaml:4:14: job 'a': volumes: must be a list, e.g. [data-lake, images:ro]; got 'data'");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    runtime: {name: py}\n",
                 "wf.yaml:4:14: job 'a': runtime: must be a single value, not a mapping");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    resources: 4GB\n",
                 "wf.yaml:4:16: job 'a': resources: must be a mapping, e.g. {max_memory: 4GB}; got '4GB'");
}

static void test_resources_values(void **state)
{
#define RES(line) "jobs:\n  a:\n    command: x\n    resources:\n      " line "\n"
    REFUSED_ONCE(RES("max_memory: lots"),
                 "wf.yaml:5:19: job 'a': max_memory: 'lots' is not a size of at least 4 MB; use megabytes (4096) or a "
                 "unit: 4096MB, 8GB");
    REFUSED_ONCE(RES("gpu_memory_mb: 8 GB"),
                 "wf.yaml:5:22: job 'a': gpu_memory_mb: '8 GB' is not a size of at least 1 MB; use megabytes (4096) or a "
                 "unit: 4096MB, 8GB");
    REFUSED_ONCE(RES("max_cpu: 0"),
                 "wf.yaml:5:16: job 'a': max_cpu: '0' must be a CPU percentage from 1 up: a whole number, 100 = one core "
                 "(e.g. 50, 250)");
    REFUSED_ONCE(RES("max_io_bps: fast"),
                 "wf.yaml:5:19: job 'a': max_io_bps: 'fast' is not a rate of at least 1 byte per second; use 1048576, "
                 "512K, 10MB, 1G");
    REFUSED_ONCE(RES("cpu_cores: 0-"),
                 "wf.yaml:5:18: job 'a': cpu_cores: '0-' is not a CPU list; use ranges and commas, e.g. 0-3 or 1,3,5");
    REFUSED_ONCE(RES("max_runtime: 3x"),
                 "wf.yaml:5:20: job 'a': max_runtime: '3x' must be a duration from 1 second to 315360000 seconds (ten "
                 "years): 90, 30s, 30min, 2h30m, 1d, or Slurm's H:MIN:SEC, D-H[:MIN[:SEC]]");
    REFUSED_ONCE(RES("gpu_count: 65"),
                 "wf.yaml:5:18: job 'a': gpu_count: '65' must be a number of GPUs from 0 to 64, or all");
    REFUSED_ONCE(RES("gpu_count: -1"),
                 "wf.yaml:5:18: job 'a': gpu_count: '-1' must be a number of GPUs from 0 to 64, or all");
    REFUSED_ONCE(RES("gpu_cc: 8.75"),
                 "wf.yaml:5:15: job 'a': gpu_cc: '8.75' is not a compute capability; give MAJOR.MINOR, e.g. 8.0 or 9.0");
    REFUSED_ONCE(RES("gpu_share: maybe"), "wf.yaml:5:18: job 'a': gpu_share: 'maybe' must be true or false");
    REFUSED_ONCE(RES("priority: 5000"),
                 "wf.yaml:5:17: job 'a': priority: '5000' must be a whole number from -1000 to 1000 (higher runs first; "
                 "default 0)");
    REFUSED_ONCE(RES("gpu_mig: ''"),
                 "wf.yaml:5:16: job 'a': gpu_mig: is empty; it must be a MIG profile, e.g. 1g.10gb (rnx gpu show lists "
                 "them)");
    REFUSED_ONCE(RES("max_memory:"), "wf.yaml:5:7: job 'a': max_memory: has no value; give one, or leave the key out");
    REFUSED_ONCE(RES("max_memory: [1, 2]"), "wf.yaml:5:19: job 'a': max_memory: must be a single value, not a list");
#undef RES
}

/* The rules between fields are the schema's (jobreq_check), at the value that asked for the
 * refused field, once every field of the job reads well. */
static void test_request_rules(void **state)
{
#define JOB(body) "jobs:\n  a:\n    command: x\n" body
    REFUSED_ONCE(JOB("    resources:\n      gpu_count: 1\n      gpu_share: true\n"),
                 "wf.yaml:6:18: job 'a': gpu_share: a shared GPU needs a memory reservation; add gpu_memory_mb");
    REFUSED_ONCE(JOB("    resources:\n      gpu_count: 2\n      gpu_share: yes\n      gpu_memory_mb: 4GB\n"),
                 "wf.yaml:6:18: job 'a': gpu_share: a shared job gets one GPU (each shared GPU has its own MPS server, "
                 "and a CUDA process talks to one); ask for gpu_count 1");
    REFUSED_ONCE(JOB("    resources:\n      gpu_memory_mb: 4GB\n"),
                 "wf.yaml:5:22: job 'a': gpu_memory_mb: qualifies a GPU request, but the job asks for no GPU; add "
                 "gpu_count");
    REFUSED_ONCE(JOB("    resources:\n      max_memory: 64\n      cross_numa: no\n"),
                 "wf.yaml:6:19: job 'a': cross_numa: qualifies a GPU request, but the job asks for no GPU; add gpu_count");
    REFUSED_ONCE(JOB("    resources:\n      gpu_count: 1\n      gpu_mig: 1g.10gb\n"),
                 "wf.yaml:6:16: job 'a': gpu_mig: asks for one MIG device; do not also give gpu_count, gpu_ids, gpu_all "
                 "or gpu_memory_mb (the profile says its memory)");
    REFUSED_ONCE(JOB("    resources:\n      gpu_mig: 1g.10gb\n      gpu_type: A100\n"),
                 "wf.yaml:5:16: job 'a': gpu_mig: a MIG device is its own slice of a GPU; do not also give gpu_share, "
                 "gpu_type or gpu_cc");
    REFUSED_ONCE(JOB("    environment: {NVIDIA_VISIBLE_DEVICES: none}\n    resources: {gpu_count: all}\n"),
                 "wf.yaml:4:18: job 'a': environment: NVIDIA_VISIBLE_DEVICES=none asks for no GPU, but the job also "
                 "asks for GPUs; drop one of the two");
    /* a field the job does not give is placed at its resources: */
    REFUSED_ONCE(JOB("    resources:\n      gpu_count: all\n      gpu_share: true\n      gpu_memory_mb: 1024\n"),
                 "wf.yaml:6:18: job 'a': gpu_share: cannot be combined with gpu_all");
    /* a field refused on its own is the only problem said: the rules wait for good fields */
    REFUSED_ONCE(JOB("    resources:\n      gpu_count: 65\n      gpu_share: true\n"),
                 "wf.yaml:5:18: job 'a': gpu_count: '65' must be a number of GPUs from 0 to 64, or all");
    /* (both problems of these lines are said: the bad name, and A given twice) */
    assert_int_equal(refused(JOB("    environment: {A: 1, 1B: 2}\n    secret_environment: {A: 2}\n"),
                             "wf.yaml:4:25: job 'a': environment: '1B' is not a valid variable name; use letters, "
                             "digits and '_', not starting with a digit"),
                     2);
    /* what the schema accepts, as the API takes it */
    wfp_doc *d;
    json_t *body = must_parse("r.yaml",
                              JOB("    workdir: /work/x\n    resources:\n      max_cpu: 50%\n      gpu_count: 1\n"
                                  "      gpu_share: true\n      gpu_memory_mb: 1GB\n      cross_numa: no\n"
                                  "      preemptible: no\n      priority: '-1000'\n"),
                              &d);
    assert_json(json_object_get(json_array_get(json_object_get(body, "jobs"), 0), "request"),
                "{\"name\": \"a\", \"command\": \"x\", \"workdir\": \"/work/x\", \"max_cpu\": 50, \"gpu_count\": 1,"
                " \"gpu_memory_mb\": 1024, \"gpu_share\": true, \"cross_numa\": false, \"preemptible\": false,"
                " \"priority\": -1000}");
    wfp_free(d);
#undef JOB
}

static void test_requires(void **state)
{
#define TWO "jobs:\n  a:\n    command: x\n  b:\n    command: x\n    requires:\n"
    REFUSED_ONCE(TWO "      - a: RUNNING\n",
                 "wf.yaml:7:12: job 'b': requires: 'RUNNING' is not a state a job ends in; use COMPLETED, FAILED, "
                 "STOPPED or CANCELED");
    REFUSED_ONCE(TWO "      - a:\n",
                 "wf.yaml:7:9: job 'b': requires: no value is not a state a job ends in; use COMPLETED, FAILED, STOPPED "
                 "or CANCELED");
    REFUSED_ONCE(TWO "      - prepare: COMPLETED\n",
                 "wf.yaml:7:9: job 'b': requires 'prepare', which is not a job of this workflow; its jobs are a, b");
    REFUSED_ONCE(TWO "      - aa: COMPLETED\n",
                 "wf.yaml:7:9: job 'b': requires 'aa', which is not a job of this workflow (did you mean 'a'?)");
    REFUSED_ONCE(TWO "      - b: COMPLETED\n", "wf.yaml:7:9: job 'b': requires itself; a job cannot wait for its own end");
    REFUSED_ONCE(TWO "      - a: COMPLETED\n      - a: FAILED\n",
                 "wf.yaml:8:9: job 'b': requires 'a' twice (also at line 7); a job ends in one state, so name it once");
    REFUSED_ONCE(TWO "      - a\n",
                 "wf.yaml:7:9: job 'b': requires: 'a' needs the state it must end in: write '- a: COMPLETED'");
    REFUSED_ONCE(TWO "      - a: COMPLETED\n        c: COMPLETED\n",
                 "wf.yaml:8:9: job 'b': requires: each item is one 'JOB: STATE' pair; start another item ('- c: ...') "
                 "for 'c'");
    REFUSED_ONCE(TWO "      a: COMPLETED\n",
                 "wf.yaml:7:7: job 'b': requires: must be a list of 'JOB: STATE' items, one per line, e.g. "
                 "'- build: COMPLETED'; got a mapping");
    REFUSED_ONCE(TWO "      - [a]\n",
                 "wf.yaml:7:9: job 'b': requires: each item is one 'JOB: STATE' pair, e.g. '- build: COMPLETED'; got "
                 "a list");
#undef TWO
}

static void test_cycles(void **state)
{
    REFUSED_ONCE("jobs:\n"
                 "  a:\n    command: x\n    requires:\n      - c: COMPLETED\n"
                 "  b:\n    command: x\n    requires:\n      - a: COMPLETED\n"
                 "  c:\n    command: x\n    requires:\n      - b: COMPLETED\n",
                 "wf.yaml:9:9: job 'b': dependency cycle: a -> c -> b -> a");
    /* two jobs waiting for each other, after a job that is fine */
    REFUSED_ONCE("jobs:\n"
                 "  ok:\n    command: x\n"
                 "  x:\n    command: x\n    requires: [ok: COMPLETED, y: FAILED]\n"
                 "  y:\n    command: x\n    requires: [x: COMPLETED]\n",
                 "wf.yaml:9:16: job 'y': dependency cycle: x -> y -> x");
}

static void test_yaml_features(void **state)
{
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    resources: *nope\n",
                 "wf.yaml:4:16: the alias '*nope' names no anchor ('&nope') defined before it");
    REFUSED_ONCE("jobs:\n  a:\n    command: !env X\n", "wf.yaml:3:14: the tag '!env' is not supported in a workflow file");
    REFUSED_ONCE("jobs:\n  a:\n    <<: [1]\n    command: x\n",
                 "wf.yaml:3:10: '<<' merges mappings (an alias such as *defaults, or a list of them), not '1'");
    REFUSED_ONCE("jobs:\n  a:\n    ? [x]\n    : 1\n    command: x\n", "wf.yaml:3:7: a key must be a name, not a list");
    /* !!str makes a text of what would be a number; every value is taken as written anyway */
    wfp_doc *d;
    json_t *body = must_parse("t.yaml", "jobs:\n  a:\n    command: x\n    args: [!!str 1.0, 0x10]\n", &d);
    assert_json(json_object_get(json_object_get(json_array_get(json_object_get(body, "jobs"), 0), "request"), "args"),
                "[\"1.0\", \"0x10\"]");
    wfp_free(d);
}

static void test_many_problems_in_file_order(void **state)
{
    wfp_errors errs;
    const char *text = "jobs:\n"
                       "  a:\n"
                       "    command: x\n"
                       "    resources: {priority: 5000, max_memory: lots}\n"
                       "    network: no/such\n"
                       "  b:\n"
                       "    requires: [zz: COMPLETED]\n";
    assert_null(parse(text, &errs));
    assert_int_equal(errs.n, 5);
    assert_string_equal(errs.msg[0], "wf.yaml:4:27: job 'a': priority: '5000' must be a whole number from -1000 to 1000 "
                                     "(higher runs first; default 0)");
    assert_string_equal(errs.msg[1], "wf.yaml:4:45: job 'a': max_memory: 'lots' is not a size of at least 4 MB; use "
                                     "megabytes (4096) or a unit: 4096MB, 8GB");
    assert_string_equal(errs.msg[2], "wf.yaml:5:14: job 'a': network: 'no/such' is not accepted; use none (loopback "
                                     "only), host, isolated, bridge or a network's name");
    assert_string_equal(errs.msg[3], "wf.yaml:6:3: job 'b': command: missing; give the program to run, e.g. "
                                     "'command: python3'");
    assert_string_equal(errs.msg[4], "wf.yaml:7:16: job 'b': requires 'zz', which is not a job of this workflow; its "
                                     "jobs are a, b");
    wfp_errors_free(&errs);

    /* more than WFP_MAX_ERRORS: the rest are counted */
    char big[8192] = "jobs:\n";
    for (int i = 0; i < 30; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "  j%d:\n    args: []\n", i);
    assert_null(parse(big, &errs));
    assert_int_equal(errs.n, WFP_MAX_ERRORS);
    assert_int_equal(errs.dropped, 10);
    wfp_errors_free(&errs);
}

/* ---- uploads: relative to the file's directory, which must exist ------------------------ */

static void test_uploads(void **state)
{
    char dir[] = "/tmp/test_wfparse.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[256], file[300], yaml[300], data[300];
    snprintf(sub, sizeof sub, "%s/flows", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(file, sizeof file, "%s/train.py", sub);
    snprintf(data, sizeof data, "%s/data", sub);
    assert_int_equal(mkdir(data, 0755), 0);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("print('hi')\n", f);
    fclose(f);
    snprintf(yaml, sizeof yaml, "%s/flow.yaml", sub);

    wfp_doc *d;
    json_t *body = must_parse(yaml, "jobs:\n  a:\n    command: python3\n    uploads: [train.py, data/]\n", &d);
    assert_json(json_object_get(json_object_get(json_array_get(json_object_get(body, "jobs"), 0), "request"), "uploads"),
                "[{\"path\": \"train.py\", \"type\": \"file\", \"mode\": 420, \"size\": 12},"
                " {\"path\": \"data\", \"type\": \"dir\", \"mode\": 493}]");
    /* where the bytes are read from when they are sent */
    assert_int_equal(wfp_njobs(d), 1);
    const upload_set *us = wfp_job_uploads(d, 0);
    assert_int_equal(us->n, 2);
    assert_int_equal(us->bytes, 12);
    assert_string_equal(us->src[0].disk, file);
    char data_given[320];
    snprintf(data_given, sizeof data_given, "%s/", data);
    assert_string_equal(us->src[1].disk, data_given);
    wfp_free(d);

    /* a link out of the upload is refused at the uploads: key, naming it on this machine */
    char link[320];
    snprintf(link, sizeof link, "%s/pw", data);
    assert_int_equal(symlink("/etc/shadow", link), 0);
    wfp_errors errs;
    const char *text = "jobs:\n  a:\n    command: python3\n    uploads: [train.py, data/]\n";
    assert_null(wfp_parse(yaml, text, strlen(text), &errs));
    char want[600];
    snprintf(want, sizeof want, "%s:4:14: job 'a': uploads: %s/data/pw: a symlink to '/etc/shadow', outside what is "
             "uploaded; only links that stay inside the job's /work are sent (upload the file itself instead)", yaml, sub);
    assert_string_equal(errs.msg[0], want);
    wfp_errors_free(&errs);
    unlink(link);

    text = "jobs:\n  a:\n    command: python3\n    uploads:\n      - train.py\n      - nope.py\n";
    assert_null(wfp_parse(yaml, text, strlen(text), &errs));
    snprintf(want, sizeof want, "%s:6:9: job 'a': uploads: 'nope.py' does not exist (looked for %s/nope.py)", yaml, sub);
    assert_string_equal(errs.msg[0], want);
    assert_int_equal(errs.n, 1);
    wfp_errors_free(&errs);

    /* two uploads landing on the same name in the job */
    text = "jobs:\n  a:\n    command: python3\n    uploads: [train.py, ./train.py]\n";
    assert_null(wfp_parse(yaml, text, strlen(text), &errs));
    snprintf(want, sizeof want, "%s:4:25: job 'a': uploads: %s/train.py and %s/./train.py would both be 'train.py' in the job",
             yaml, sub, sub);
    assert_string_equal(errs.msg[0], want);
    wfp_errors_free(&errs);

    /* a file named without a directory: uploads are relative to the current one */
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    uploads: [surely-not-here.bin]\n",
                 "wf.yaml:4:15: job 'a': uploads: 'surely-not-here.bin' does not exist");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    uploads: train.py\n",
                 "wf.yaml:4:14: job 'a': uploads: must be a list, e.g. [train.py, data/]; got 'train.py'");

    unlink(file);
    rmdir(data);
    rmdir(sub);
    rmdir(dir);
}

static void test_read_file(void **state)
{
    wfp_errors errs;
    assert_null(wfp_parse_file("/nonexistent/wf.yaml", &errs));
    assert_string_equal(errs.msg[0], "/nonexistent/wf.yaml: No such file or directory");
    wfp_errors_free(&errs);
    assert_null(wfp_parse_file("/tmp", &errs));
    assert_string_equal(errs.msg[0], "/tmp: is a directory; give the workflow's YAML file");
    wfp_errors_free(&errs);
}

/* ---- the daemon's refusals, at the YAML that caused them ------------------------------- */

static void test_explain(void **state)
{
    wfp_doc *d;
    must_parse("p.yaml", seed, &d);
    char out[1024];
    wfp_explain(d, "jobs[1].request.gpu_count",
                "job 'model-training': gpu_count: asks for 2 GPUs; this machine has 0 usable GPUs (rnx gpu list)", out,
                sizeof out);
    assert_string_equal(out, "p.yaml:18:18: job 'model-training': gpu_count: asks for 2 GPUs; this machine has 0 usable "
                             "GPUs (rnx gpu list)");
    wfp_explain(d, "jobs[0].request.max_memory_mb",
                "job 'data-preprocessing': max_memory_mb: must be from 4 to 2048 MB (this machine's memory)", out,
                sizeof out);
    assert_string_equal(out, "p.yaml:7:19: job 'data-preprocessing': max_memory: must be from 4 to 2048 MB (this "
                             "machine's memory)");
    wfp_explain(d, "jobs[2].runtime",
                "jobs[2].runtime: runtime 'python-3.11-ml' is not available: this joblet has no runtime environments yet",
                out, sizeof out);
    assert_string_equal(out, "p.yaml:23:14: job 'model-evaluation': runtime: runtime 'python-3.11-ml' is not available: "
                             "this joblet has no runtime environments yet");
    wfp_explain(d, "jobs[1].requires[0]", "jobs[1].requires[0]: no job 'x' in this workflow", out, sizeof out);
    assert_string_equal(out, "p.yaml:14:9: job 'model-training': requires: no job 'x' in this workflow");
    /* a resource the file does not set: at the job's resources */
    wfp_explain(d, "jobs[2].request.gpu_share",
                "job 'model-evaluation': gpu_share: qualifies a GPU request, but the job asks for no GPU; add gpu_count",
                out, sizeof out);
    assert_string_equal(out, "p.yaml:27:7: job 'model-evaluation': gpu_share: qualifies a GPU request, but the job asks "
                             "for no GPU; add gpu_count");
    wfp_explain(d, "jobs[0].request.env", "job 'data-preprocessing': env: NVIDIA_VISIBLE_DEVICES asks for no GPU", out,
                sizeof out);
    assert_string_equal(out, "p.yaml:2:3: job 'data-preprocessing': environment: NVIDIA_VISIBLE_DEVICES asks for no GPU");
    /* a per-user limit names no job: the job that asks for that many GPUs */
    wfp_explain(d, "gpu_count", "gpu_count: asks for 1 GPUs; limits.max_gpus_per_user is 0", out, sizeof out);
    assert_string_equal(out, "p.yaml:28:18: job 'model-evaluation': gpu_count: asks for 1 GPUs; limits.max_gpus_per_user is 0");
    wfp_explain(d, "gpu_count", "gpu_count: asks for 2 GPUs; limits.max_gpus_per_user is 1", out, sizeof out);
    assert_string_equal(out, "p.yaml:18:18: job 'model-training': gpu_count: asks for 2 GPUs; limits.max_gpus_per_user is 1");
    wfp_explain(d, "name", "name: a workflow needs a name of 1 to 200 characters", out, sizeof out);
    assert_string_equal(out, "p.yaml:1:1: name: a workflow needs a name of 1 to 200 characters");
    wfp_explain(d, "", "the request body is not valid JSON", out, sizeof out);
    assert_string_equal(out, "p.yaml:1:1: the request body is not valid JSON");
    wfp_free(d);
}

/* volumes: items with a size are volumes the workflow creates when missing (docs/volumes.md) */
static void test_volumes_to_create(void **state)
{
    wfp_doc *d;
    json_t *body = must_parse("v.yaml",
                              "jobs:\n"
                              "  a:\n"
                              "    command: x\n"
                              "    volumes:\n"
                              "      - data\n"
                              "      - cache:2GB\n"
                              "      - {name: scratch, size: 64MB, type: memory}\n"
                              "      - {name: ref, read_only: true}\n"
                              "  b:\n"
                              "    command: x\n"
                              "    volumes: [\"cache:ro\", {name: scratch, size: 64, type: memory}]\n",
                              &d);
    assert_json(json_object_get(body, "volumes"),
                "[{\"name\": \"cache\", \"size_mb\": 2048, \"type\": \"filesystem\"},"
                " {\"name\": \"scratch\", \"size_mb\": 64, \"type\": \"memory\"}]");
    assert_json(json_object_get(json_object_get(json_array_get(json_object_get(body, "jobs"), 0), "request"), "volumes"),
                "[\"data\", \"cache\", \"scratch\", \"ref:ro\"]");
    assert_json(json_object_get(json_object_get(json_array_get(json_object_get(body, "jobs"), 1), "request"), "volumes"),
                "[\"cache:ro\", \"scratch\"]");
    char out[1024];
    wfp_explain(d, "volumes[1].size_mb", "volume 'scratch': size: 64 MB of memory volumes is more than ...", out,
                sizeof out);
    assert_string_equal(out, "v.yaml:7:9: volume 'scratch': size: 64 MB of memory volumes is more than ...");
    wfp_free(d);
    /* no volume to create: no volumes key in the body */
    body = must_parse("v.yaml", "jobs:\n  a:\n    command: x\n    volumes: [data, \"img:ro\"]\n", &d);
    assert_null(json_object_get(body, "volumes"));
    wfp_free(d);
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    volumes: [k:1GB]\n  b:\n    command: x\n    volumes: [k:2GB]\n",
                 "wf.yaml:7:15: job 'b': volumes: volume 'k' is asked for with another size or type at line 4; give it "
                 "once, or alike");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    volumes: [{name: q, size: 1GB, color: red}]\n",
                 "wf.yaml:4:36: job 'a': volumes: unknown key 'color'; a volume item takes name, size, type and "
                 "read_only");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    volumes: [{size: 1GB}]\n",
                 "wf.yaml:4:15: job 'a': volumes: an item written as a mapping needs a name: {name: scratch, size: 1GB}");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    volumes: [{name: z, type: memory}]\n",
                 "wf.yaml:4:31: job 'a': volumes: type: is for a volume the workflow creates; give its size too");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    volumes: [\"k:1zz\"]\n",
                 "wf.yaml:4:15: job 'a': volumes: 'k:1zz': size: '1zz' is not a size; use megabytes (4096) or a unit: "
                 "4096MB, 8GB");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    volumes: [{name: w, size: 1GB, read_only: maybe}]\n",
                 "wf.yaml:4:47: job 'a': volumes: read_only: must be true or false, not 'maybe'");
}

/* network: {name, cidr} is a network the workflow creates when missing (docs/networks.md) */
static void test_networks_to_create(void **state)
{
    wfp_doc *d;
    json_t *body = must_parse("n.yaml",
                              "jobs:\n"
                              "  server:\n"
                              "    command: x\n"
                              "    network: {name: ntwf, cidr: 10.236.0.0/24}\n"
                              "  client:\n"
                              "    command: x\n"
                              "    network: ntwf\n"
                              "  other:\n"
                              "    command: x\n"
                              "    network:\n"
                              "      name: ntwf\n"
                              "      cidr: 10.236.0.0/24\n"
                              "  plain:\n"
                              "    command: x\n"
                              "    network: {name: bridge}\n",
                              &d);
    assert_json(json_object_get(body, "networks"), "[{\"name\": \"ntwf\", \"cidr\": \"10.236.0.0/24\"}]");
    json_t *jobs = json_object_get(body, "jobs");
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(jobs, i), "request"),
                                                              "network")), "ntwf");
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(jobs, 3), "request"),
                                                           "network")), "bridge");
    /* the daemon's refusals about it, at the file's line: its cidr, or the mapping */
    char out[1024];
    wfp_explain(d, "networks[0].cidr", "network 'ntwf': cidr: 10.236.0.0/24 overlaps network x (10.236.0.0/16)", out,
                sizeof out);
    assert_string_equal(out, "n.yaml:4:33: network 'ntwf': cidr: 10.236.0.0/24 overlaps network x (10.236.0.0/16)");
    wfp_explain(d, "networks[0]", "network ntwf exists with cidr 10.9.0.0/24, not 10.236.0.0/24", out, sizeof out);
    assert_string_equal(out, "n.yaml:4:14: network ntwf exists with cidr 10.9.0.0/24, not 10.236.0.0/24");
    wfp_free(d);
    /* no network to create: no networks key in the body */
    body = must_parse("n.yaml", "jobs:\n  a:\n    command: x\n    network: train\n", &d);
    assert_null(json_object_get(body, "networks"));
    wfp_free(d);
    /* one name, two cidrs: refused at the second, naming the first's line */
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: {name: n1, cidr: 10.236.0.0/24}\n"
                 "  b:\n    command: x\n    network: {name: n1, cidr: 10.236.1.0/24}\n",
                 "wf.yaml:7:31: job 'b': network: network 'n1' is asked for with cidr 10.236.0.0/24 at line 4; give "
                 "its cidr once, or alike");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: {name: n1, cidr: 10.236.0/24}\n",
                 "wf.yaml:4:31: job 'a': network: cidr: '10.236.0/24' is not an IPv4 network; give ADDRESS/PREFIX (e.g. 10.10.0.0/24)");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: {name: n1, cidr: 10.236.0.1/24}\n",
                 "wf.yaml:4:31: job 'a': network: cidr: '10.236.0.1/24' has host bits set; did you mean "
                 "10.236.0.0/24?");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: {name: n1, cidr: 10.0.0.0/31}\n",
                 "wf.yaml:4:31: job 'a': network: cidr: /31 is smaller than a named network may be (/16 to /30: room "
                 "for a gateway and jobs)");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: {name: n1, cidr: 10.0.0.0/8}\n",
                 "wf.yaml:4:31: job 'a': network: cidr: /8 is larger than a named network may be (/16 to /30)");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: {name: n1, cidr: 10.236.0.0/24, mtu: 9000}\n",
                 "wf.yaml:4:46: job 'a': network: unknown key 'mtu'; a network written as a mapping takes name and "
                 "cidr: {name: train, cidr: 10.218.10.0/24}");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: {cidr: 10.236.0.0/24}\n",
                 "wf.yaml:4:14: job 'a': network: a network written as a mapping needs a name: {name: train, cidr: "
                 "10.218.10.0/24}");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: {name: bridge, cidr: 10.236.0.0/24}\n",
                 "wf.yaml:4:35: job 'a': network: cidr: is for a network the workflow creates; 'bridge' is joblet's "
                 "own: leave cidr out");
    REFUSED_ONCE("jobs:\n  a:\n    command: x\n    network: {name: Bad_Name, cidr: 10.236.0.0/24}\n",
                 "wf.yaml:4:14: job 'a': network: 'Bad_Name' is not accepted; use none (loopback only), host, "
                 "isolated, bridge or a network's name");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_with_runtime),
        cmocka_unit_test(test_seed_without_runtime),
        cmocka_unit_test(test_example_pipeline),
        cmocka_unit_test(test_example_diamond),
        cmocka_unit_test(test_example_fan_out_fan_in),
        cmocka_unit_test(test_every_key),
        cmocka_unit_test(test_merge_values),
        cmocka_unit_test(test_aliases_written_out_are_bounded),
        cmocka_unit_test(test_yaml_syntax),
        cmocka_unit_test(test_duplicate_key),
        cmocka_unit_test(test_file_level),
        cmocka_unit_test(test_top_level_keys),
        cmocka_unit_test(test_jobs_shape),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_array_key),
        cmocka_unit_test(test_command_and_args),
        cmocka_unit_test(test_job_fields),
        cmocka_unit_test(test_resources_values),
        cmocka_unit_test(test_request_rules),
        cmocka_unit_test(test_requires),
        cmocka_unit_test(test_cycles),
        cmocka_unit_test(test_yaml_features),
        cmocka_unit_test(test_many_problems_in_file_order),
        cmocka_unit_test(test_uploads),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_volumes_to_create),
        cmocka_unit_test(test_networks_to_create),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
