/* Unit tests for src/common/jobreq.c, the one job request schema: every field of its table
 * accepted and refused, from the API's JSON and from text (a flag's value, a YAML scalar),
 * with the exact sentence; the rules between fields; the JSON it writes read back as the same
 * request; what only the daemon may store; a message worded for another surface. */
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

#include "common/jobreq.h"

/* 2026-05-28T20:26:40Z: what "now" is for the checks of schedule_at. */
#define NOW ((time_t)1780000000)


/* The field rnx job run's flag sets (rnx's getopt table is built from the same rows). */
static const jobreq_field *by_flag(const char *flag)
{
    for (int i = 0; i < JR_N; i++)
        if (jobreq_fields[i].flag && !strcmp(jobreq_fields[i].flag, flag))
            return &jobreq_fields[i];
    return NULL;
}
static json_t *json_of(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
    if (!v)
        fail_msg("bad JSON in the test: %s: %s", je.text, text);
    return v;
}

static void assert_json_eq(json_t *got, const char *want_text, const char *what)
{
    json_t *want = json_of(want_text);
    if (!json_equal(got, want)) {
        char *g = got ? json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        fail_msg("%s: JSON differs\n  want: %s\n  got:  %s", what, want_text, g ? g : "(nothing)");
    }
    json_decref(want);
}

static void assert_msg(const jerr *e, const char *field, const char *msg, const char *what)
{
    if (strcmp(e->msg, msg) != 0)
        fail_msg("%s: wrong message\n  want: %s\n  got:  %s", what, msg, e->msg);
    if (strcmp(e->field, field) != 0)
        fail_msg("%s: wrong field: want '%s', got '%s' (%s)", what, field, e->field, e->msg);
    assert_int_equal(e->http, 400);
}

/* ---- every field of the table ------------------------------------------------------------ */

/* One row per field. The JSON legs send {"command": "x", <ctx>, key: value}; ctx holds what
 * the field needs to be accepted alone (a GPU for a GPU qualifier). The text legs set the field
 * from text on a request that has ctx and a command. */
typedef struct field_case {
    enum jobreq_id id;
    const char *ctx;          /* more of the request, as JSON members ("" for none) */
    int flags;                /* JOBREQ_FROM_DB for the daemon's own fields */
    const char *text_ok;      /* accepted as text; NULL: the field is not given as text */
    const char *text_value;   /* what the text becomes in the request's JSON */
    const char *json_ok;      /* accepted over the API (a JSON value) */
    const char *json_value;   /* what it becomes in the request's JSON */
    const char *text_bad;     /* refused as text */
    const char *text_msg;
    const char *json_bad;     /* refused over the API */
    const char *json_msg;     /* NULL: not refused, but left out of the request */
} field_case;

#define GPU1 "\"gpu_count\": 1, "
#define CAPS "must be a list of GPU indexes or UUIDs (rnx gpu list)"
#define SIZE_MB "is not a size of at least %s MB; use megabytes (4096) or a unit: 4096MB, 8GB"
#define CPU_PCT "must be a CPU percentage from 1 up: a whole number, 100 = one core (e.g. 50, 250)"
#define DURATION                                                                                                   \
    "must be a duration from 1 second to 315360000 seconds (ten years): 90, 30s, 30min, 2h30m, 1d, or Slurm's "     \
    "H:MIN:SEC, D-H[:MIN[:SEC]]"
#define DRIVER_CAPS "use compute, utility, video, graphics, display, compat32 or all"

static const field_case cases[] = {
    {JR_COMMAND, "", 0, "python3", "\"python3\"", "\"/bin/sh\"", "\"/bin/sh\"",
     "", "command: is empty; give the program to run",
     "5", "command: must be a string"},
    {JR_ARGS, "", 0, "a,b", "[\"a\", \"b\"]", "[\"-c\", \"\", \"x y\"]", "[\"-c\", \"\", \"x y\"]",
     NULL, NULL,
     "[\"a\", 1]", "args: must be a list of strings of at most 131072 bytes each"},
    {JR_NAME, "", 0, "train", "\"train\"", "\"n-1\"", "\"n-1\"",
     "", "name: is empty; it must be a non-empty name of at most 128 bytes",
     "7", "name: must be a string"},
    {JR_ENV, "", 0, NULL, NULL, "{\"A\": \"1\", \"B_2\": \"\"}", "{\"A\": \"1\", \"B_2\": \"\"}",
     NULL, NULL,
     "{\"1A\": \"x\"}", "env: '1A' is not a valid variable name; use letters, digits and '_', not starting with a digit"},
    {JR_SECRET_ENV, "", 0, NULL, NULL, "{\"TOKEN\": \"s3\"}", "{\"TOKEN\": \"s3\"}",
     NULL, NULL,
     "[\"TOKEN=1\"]", "secret_env: must be an object of NAME: value strings"},
    {JR_WORKDIR, "", 0, "/work/src", "\"/work/src\"", "\"/\"", "\"/\"",
     "rel/dir", "workdir: 'rel/dir' must be an absolute path without '..' (e.g. /work/src)",
     "\"/a/../b\"", "workdir: '/a/../b' must be an absolute path without '..' (e.g. /work/src)"},
    {JR_NETWORK, "", 0, "none", "\"none\"", "\"host\"", "\"host\"",
     "no/such", "network: 'no/such' is not accepted; use none (loopback only), host, isolated, bridge or a network's name",
     "\"A1\"", "network: 'A1' is not accepted; use none (loopback only), host, isolated, bridge or a network's name"},
    {JR_MAX_CPU, "", 0, "50%", "50", "250", "250",
     "0", "max_cpu: '0' " CPU_PCT,
     "\"lots\"", "max_cpu: 'lots' " CPU_PCT},
    {JR_MAX_MEMORY_MB, "", 0, "8GB", "8192", "4", "4",
     "3", "max_memory_mb: '3' is not a size of at least 4 MB; use megabytes (4096) or a unit: 4096MB, 8GB",
     "3.5", "max_memory_mb: '3.5' is not a size of at least 4 MB; use megabytes (4096) or a unit: 4096MB, 8GB"},
    {JR_MAX_IOBPS, "", 0, "10MB", "10485760", "1", "1",
     "0", "max_iobps: '0' is not a rate of at least 1 byte per second; use 1048576, 512K, 10MB, 1G",
     "-1", "max_iobps: '-1' is not a rate of at least 1 byte per second; use 1048576, 512K, 10MB, 1G"},
    {JR_CPU_CORES, "", 0, "3,0-1", "\"0-1,3\"", "\"2,1\"", "\"1-2\"",
     "3-1", "cpu_cores: '3-1' is not a CPU list; use ranges and commas, e.g. 0-3 or 1,3,5",
     "\"a\"", "cpu_cores: 'a' is not a CPU list; use ranges and commas, e.g. 0-3 or 1,3,5"},
    {JR_MAX_RUNTIME_S, "", 0, "2h30m", "9000", "315360000", "315360000",
     "0", "max_runtime_s: '0' " DURATION,
     "315360001", "max_runtime_s: '315360001' " DURATION},
    {JR_SCHEDULE_AT, "", 0, "2030-01-02T03:04:05+01:00", "\"2030-01-02T02:04:05.000Z\"", "\"2030-01-02T03:04:05Z\"",
     "\"2030-01-02T03:04:05Z\"",
     "2020-01-01T00:00:00Z", "schedule_at: '2020-01-01T00:00:00Z' is in the past",
     "\"tomorrow\"", "schedule_at: 'tomorrow' is not an RFC 3339 time (2026-11-22T15:04:05Z)"},
    {JR_UPLOADS, "", 0, NULL, NULL,
     "[{\"path\": \"d\", \"type\": \"dir\", \"mode\": 493}, {\"path\": \"d/a.txt\", \"content_b64\": \"aGkK\"},"
     " {\"path\": \"l\", \"type\": \"symlink\", \"target\": \"d\"}]",
     "[{\"path\": \"d\", \"type\": \"dir\", \"mode\": 493}, {\"path\": \"d/a.txt\", \"type\": \"file\","
     " \"content_b64\": \"aGkK\"}, {\"path\": \"l\", \"type\": \"symlink\", \"target\": \"d\"}]",
     NULL, NULL,
     "[{\"path\": \"../x\"}]", "uploads: '../x' must not contain empty, '.' or '..' parts"},
    {JR_GPU_COUNT, "", 0, "2", "2", "64", "64",
     "-1", "gpu_count: '-1' must be a number of GPUs from 0 to 64, or all",
     "65", "gpu_count: '65' must be a number of GPUs from 0 to 64, or all"},
    /* (the API takes a unit's forms as a string, as its refusal's sentence names them) */
    {JR_GPU_MEMORY_MB, GPU1, 0, "16GB", "16384", "\"16GB\"", "16384",
     "0", "gpu_memory_mb: '0' is not a size of at least 1 MB; use megabytes (4096) or a unit: 4096MB, 8GB",
     "\"16XB\"", "gpu_memory_mb: '16XB' is not a size of at least 1 MB; use megabytes (4096) or a unit: 4096MB, 8GB"},
    {JR_GPU_ALL, "", 0, "yes", "true", "true", "true",
     "all", "gpu_all: 'all' must be true or false",
     "1", "gpu_all: '1' must be true or false"},
    {JR_GPU_IDS, "", 0, "0,GPU-5f3b", "[\"0\", \"GPU-5f3b\"]", "[\"1\"]", "[\"1\"]",
     "", "gpu_ids: '' " CAPS,
     "[]", "gpu_ids: " CAPS},
    {JR_GPU_CAPS, GPU1, 0, "compute,utility,compute", "\"compute,utility\"", "\"all\"", "\"all\"",
     "warp", "gpu_caps: 'warp' is not a driver capability; " DRIVER_CAPS,
     "\",\"", "gpu_caps: ',' is not a list of driver capabilities; " DRIVER_CAPS},
    {JR_GPU_OPTIONAL, GPU1, 0, "true", "true", "false", "false",
     "maybe", "gpu_optional: 'maybe' must be true or false",
     "\"true\"", "gpu_optional: 'true' must be true or false"},
    {JR_GPU_MIG, "", 0, "1g.10gb", "\"1g.10gb\"", "\"3g.40gb\"", "\"3g.40gb\"",
     "", "gpu_mig: is empty; it must be a MIG profile, e.g. 1g.10gb (rnx gpu show lists them)",
     "1", "gpu_mig: must be a string"},
    {JR_PRIORITY, "", 0, "-1000", "-1000", "1000", "1000",
     "5000", "priority: '5000' must be a whole number from -1000 to 1000 (higher runs first; default 0)",
     "-1001", "priority: '-1001' must be a whole number from -1000 to 1000 (higher runs first; default 0)"},
    {JR_GPU_TYPE, GPU1, 0, "H100", "\"H100\"", "\"A100-SXM4-80GB\"", "\"A100-SXM4-80GB\"",
     "", "gpu_type: is empty; it must be a GPU model, e.g. H100 (rnx gpu list shows the names)",
     "true", "gpu_type: must be a string"},
    {JR_GPU_CC, GPU1, 0, "8", "\"8.0\"", "\"9.0\"", "\"9.0\"",
     "8.75", "gpu_cc: '8.75' is not a compute capability; give MAJOR.MINOR, e.g. 8.0 or 9.0",
     "8.0", "gpu_cc: a number (8.0), not a string; give it as a string: \"8.0\""},
    {JR_GPU_SHARE, GPU1 "\"gpu_memory_mb\": 1024, ", 0, "yes", "true", "true", "true",
     "maybe", "gpu_share: 'maybe' must be true or false",
     "null", NULL /* null is "not given": accepted */},
    {JR_CROSS_NUMA, GPU1, 0, "no", "false", "true", "true",
     "maybe", "cross_numa: 'maybe' must be yes or no (true or false)",
     "1", "cross_numa: '1' must be yes or no (true or false)"},
    {JR_PREEMPTIBLE, "", 0, "TRUE", "true", "false", "false",
     "1", "preemptible: '1' must be true or false",
     "[]", "preemptible: 'a list' must be true or false"},
    {JR_RUNTIME, "", 0, "python-3.11-ml", "\"python-3.11-ml\"", "\"python-3.11\"", "\"python-3.11\"",
     "", "runtime: is empty; it must be a runtime's name, e.g. python-3.11-ml (rnx runtime list)",
     "3", "runtime: must be a string"},
    /* text: one item per --volume (or YAML list item), appended */
    {JR_VOLUMES, "", 0, "data-lake:ro", "[\"data-lake:ro\"]", "[\"a\", \"b:ro\", \"c:rw\"]",
     "[\"a\", \"b:ro\", \"c:rw\"]",
     "a/b", "volumes: 'a/b' must be a list of volume names, each NAME or NAME:ro (rnx volume list), at most 32",
     "[\"a\", \"a:ro\"]", "volumes: volume 'a' is listed twice"},
    {JR_ISOLATION, "", 0, "gvisor", "\"gvisor\"", "\"native\"", "\"native\"",
     "kvm", "isolation: 'kvm' is not accepted; use native or gvisor",
     "1", "isolation: '1' is not accepted; use native or gvisor"},
    /* text: one item per --device, appended */
    {JR_DEVICES, "", 0, "nvidia.com/gpu=1", "[\"nvidia.com/gpu=1\"]", "[\"nvidia.com/gpu=0\", \"nvidia.com/gpu=all\"]",
     "[\"nvidia.com/gpu=0\", \"nvidia.com/gpu=all\"]",
     "nvidia.com/gpu=x", "devices: 'nvidia.com/gpu=x' must be a list of CDI device names: nvidia.com/gpu=INDEX, =UUID "
     "or =all, at most 64",
     "[\"nvidia.com/gpu=0\", \"nvidia.com/gpu=0\"]", "devices: device 'nvidia.com/gpu=0' is listed twice"},
    {JR_TTY, "", 0, "yes", "true", "false", "false",
     "maybe", "tty: 'maybe' must be true or false",
     "1", "tty: '1' must be true or false"},
    {JR_STDIN, "", 0, "true", "true", "false", "false",
     "2", "stdin: '2' must be true or false",
     "\"yes\"", "stdin: 'yes' must be true or false"},
    {JR_MAX_NETBPS, "\"network\": \"bridge\", ", 0, "10MB", "10485760", "1024", "1024",
     "fast", "max_netbps: 'fast' is not a rate of at least 1024 bytes per second; use 1048576, 512K, 10MB, 1G",
     "1000", "max_netbps: '1000' is not a rate of at least 1024 bytes per second; use 1048576, 512K, 10MB, 1G"},
    /* normalised: the step's end is the last id it reaches */
    {JR_ARRAY, "", 0, "0-99%8", "\"0-99%8\"", "\"0-15:4,20\"", "\"0-12:4,20\"",
     "5-3", "array: '5-3': a range runs from a lower id to a higher one, both at most 4000000",
     "\"1,1\"", "array: '1,1' names a task twice (ranges from 1 and from 1 overlap); name each task once"},
    {JR_AFTER, "", 0, "a1b2:ok,train", "[{\"job\": \"a1b2\", \"state\": \"ok\"}, {\"job\": \"train\", \"state\": \"any\"}]",
     "[{\"job\": \"x\"}]", "[{\"job\": \"x\", \"state\": \"any\"}]",
     "a:done", "after: 'a:done' is not ID[:STATE] (STATE ok, notok, any, started or corr; ID a job's id, number, unique id "
     "prefix or name) nor Slurm's afterok:ID[:ID...] (afternotok, afterany, after, aftercorr) nor singleton",
     "[{\"job\": \"x\", \"state\": \"done\"}]", "after[0].state: must be ok, notok, any, started or corr"},
    {JR_SINGLETON, "\"name\": \"train\", ", 0, "true", "true", "false", "false",
     "maybe", "singleton: 'maybe' must be true or false",
     "1", "singleton: '1' must be true or false"},
    {JR_AFTER_ANY, "\"after\": [{\"job\": \"a\"}, {\"job\": \"b\"}], ", 0, "true", "true", "false", "false",
     "maybe", "after_any: 'maybe' must be true or false",
     "1", "after_any: '1' must be true or false"},
    {JR_HOLD, "", 0, "yes", "true", "false", "false",
     "maybe", "hold: 'maybe' must be true or false",
     "1", "hold: '1' must be true or false"},
    {JR_SLURM_ENV, "", 0, "yes", "true", "false", "false",
     "maybe", "slurm_env: 'maybe' must be true or false",
     "1", "slurm_env: '1' must be true or false"},
    {JR_SIGNAL, "\"max_runtime_s\": 600, ", 0, "B:usr1@90", "\"SIGUSR1@90\"", "\"TERM\"", "\"SIGTERM@60\"",
     "STOP@9", "signal: STOP would stop the job's processes behind joblet's back; rnx job suspend freezes a job (and "
     "resume thaws it)",
     "\"KILL@5\"", "signal: SIGKILL before the run-time limit is a shorter limit; give that as max_runtime, or a "
     "signal the job can catch (USR1, TERM)"},
    /* the daemon's own fields are read from what it stored, where a value this version refuses
     * is left out (and logged), the job kept: json_msg NULL */
    {JR_PIDS_MAX, "", JOBREQ_FROM_DB, "512", "512", "0", "0",
     "-1", "pids_max: '-1' must be a whole number",
     "\"x\"", NULL},
    {JR_GPU_DEGRADED, "", JOBREQ_FROM_DB, "asks for 8 GPUs", "\"asks for 8 GPUs\"", "\"no GPU\"", "\"no GPU\"",
     NULL, NULL,
     "1", NULL},
    {JR_MAX_LOG_BYTES, "", JOBREQ_FROM_DB, "1048576", "1048576", "1073741824", "1073741824",
     "-5", "max_log_bytes: '-5' must be a whole number",
     "\"lots\"", NULL},
    {JR_USER_PIDS_MAX, "", JOBREQ_FROM_DB, "4096", "4096", "100", "100",
     "-1", "user_pids_max: '-1' must be a whole number",
     "true", NULL},
    {JR_MEMORY_DEFAULT, "", JOBREQ_FROM_DB, "yes", "true", "false", "false",
     "maybe", "memory_default: 'maybe' must be true or false",
     "1", NULL},
    {JR_VOLUME_PINS, "", JOBREQ_FROM_DB, "data:1000:1732000000000", "\"data:1000:1732000000000\"",
     "\"a:0:1,b:4341:2\"", "\"a:0:1,b:4341:2\"",
     NULL, NULL,
     "1", NULL},
    {JR_ACCOUNT_PIN, "", JOBREQ_FROM_DB, "alice:1000", "\"alice:1000\"",
     "\"bob\"", "\"bob\"",
     NULL, NULL,
     "1", NULL},
};

/* {"command": "x", <ctx> "<key>": <value>} */
static json_t *body_with(const field_case *c, const char *value)
{
    char text[2048];
    snprintf(text, sizeof text, "{\"command\": \"x\", %s\"%s\": %s}", c->ctx, jobreq_fields[c->id].key, value);
    return json_of(text);
}

/* The request's value of the case's field, in the request's own JSON. */
static json_t *value_in(const job_req *r, const field_case *c)
{
    json_t *all = jobreq_to_json(r, JOBREQ_JSON_SECRETS);
    json_t *v = json_incref(json_object_get(all, jobreq_fields[c->id].key));
    json_decref(all);
    return v;
}

/* The typed member the table says the field lives in, as JSON (the kinds held in place). */
static json_t *typed(const job_req *r, enum jobreq_id id)
{
    const jobreq_field *f = &jobreq_fields[id];
    const char *p = (const char *)r + f->off;
    switch (f->kind) {
    case JK_TEXT: return json_string(*(char *const *)p);
    case JK_INT: return json_integer(*(const int64_t *)p);
    case JK_BOOL: return json_boolean(*(const bool *)p);
    default: return NULL;
    }
}

/* A refusal's sentence is shown as it is written (jobreq_accepts copies it), so it holds no
 * printf escape: an empty --array once said "%%N" to the user. */
static void test_accepts_sentences_are_shown_as_written(void **state)
{
    for (int i = 0; i < JR_N; i++) {
        char acc[300];
        jobreq_accepts(&jobreq_fields[i], acc, sizeof acc);
        if (strstr(acc, "%%"))
            fail_msg("%s: its sentence shows a printf escape: %s", jobreq_fields[i].key, acc);
    }
    job_req r;
    jerr e = {0};
    json_t *b = json_pack("{s:s,s:s}", "command", "x", "array", "");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
    assert_msg(&e, "array", "array: '' is not a task list; use Slurm's form: 0-99, 1,3,7, 0-15:4, and %N to run at "
                            "most N at once", "array");
    json_decref(b);
}

static void test_every_field_has_a_case(void **state)
{
    bool seen[JR_N] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_false(seen[cases[i].id]);
        seen[cases[i].id] = true;
    }
    for (int i = 0; i < JR_N; i++)
        if (!seen[i])
            fail_msg("jobreq_fields[%d] (%s) has no case", i, jobreq_fields[i].key);
}

static void test_fields_from_json(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const field_case *c = &cases[i];
        const char *key = jobreq_fields[c->id].key;
        job_req r;
        jerr e = {0};
        json_t *b = body_with(c, c->json_ok);
        if (jobreq_from_json(b, &r, c->flags, NOW, &e) < 0)
            fail_msg("%s: %s refused: %s", key, c->json_ok, e.msg);
        if (!jobreq_has(&r, c->id))
            fail_msg("%s: %s accepted but not in the request", key, c->json_ok);
        json_t *v = value_in(&r, c);
        assert_json_eq(v, c->json_value, key);
        json_t *t = typed(&r, c->id);
        if (t)
            assert_json_eq(t, c->json_value, key);
        json_decref(t);
        json_decref(v);
        jobreq_free(&r);
        json_decref(b);

        b = body_with(c, c->json_bad);
        memset(&e, 0, sizeof e);
        int rc = jobreq_from_json(b, &r, c->flags, NOW, &e);
        if (!c->json_msg) {
            assert_int_equal(rc, 0);
            assert_false(jobreq_has(&r, c->id));
            assert_string_equal(r.command, "x");
            jobreq_free(&r);
        } else {
            if (rc == 0)
                fail_msg("%s: %s accepted", key, c->json_bad);
            assert_msg(&e, key, c->json_msg, key);
            /* refused: nothing is left in the request */
            assert_int_equal(r.has, 0);
            assert_null(r.command);
        }
        json_decref(b);
    }
}

static void test_fields_from_text(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const field_case *c = &cases[i];
        const jobreq_field *f = &jobreq_fields[c->id];
        if (!c->text_ok)
            continue;
        job_req r;
        jerr e = {0};
        /* (the field itself absent: null is "not given"; command is there to be replaced) */
        json_t *ctx = body_with(c, c->id == JR_COMMAND ? "\"x\"" : "null");
        assert_int_equal(jobreq_from_json(ctx, &r, c->flags, NOW, &e), 0);
        if (jobreq_set_text(&r, f, c->text_ok, NOW, &e) < 0)
            fail_msg("%s: '%s' refused: %s", f->key, c->text_ok, e.msg);
        if (jobreq_check(&r, &e) < 0)
            fail_msg("%s: '%s' then refused as a whole: %s", f->key, c->text_ok, e.msg);
        json_t *v = value_in(&r, c);
        assert_json_eq(v, c->text_value, f->key);
        json_t *t = typed(&r, c->id);
        if (t)
            assert_json_eq(t, c->text_value, f->key);
        json_decref(t);
        json_decref(v);
        /* the request it makes is one the API takes, and reads the same */
        json_t *out = jobreq_to_json(&r, JOBREQ_JSON_SECRETS);
        job_req back;
        if (jobreq_from_json(out, &back, c->flags, NOW, &e) < 0)
            fail_msg("%s: the API refuses what '%s' made: %s", f->key, c->text_ok, e.msg);
        json_t *again = jobreq_to_json(&back, JOBREQ_JSON_SECRETS);
        assert_true(json_equal(out, again));
        json_decref(again);
        json_decref(out);
        jobreq_free(&back);

        if (c->text_bad) {
            memset(&e, 0, sizeof e);
            bool had = jobreq_has(&r, c->id);
            if (jobreq_set_text(&r, f, c->text_bad, NOW, &e) == 0)
                fail_msg("%s: '%s' accepted", f->key, c->text_bad);
            assert_msg(&e, f->key, c->text_msg, f->key);
            assert_int_equal(jobreq_has(&r, c->id), had);   /* a refused value changes nothing */
        }
        jobreq_free(&r);
        json_decref(ctx);
    }
}

/* The same value refused as text and over the API reads the same: what the surfaces rely on. */
static void test_text_and_json_refuse_alike(void **state)
{
    static const struct { enum jobreq_id id; const char *text, *json; } same[] = {
        {JR_GPU_COUNT, "-1", "-1"},         {JR_GPU_COUNT, "65", "65"},         {JR_GPU_COUNT, "two", "\"two\""},
        {JR_PRIORITY, "5000", "5000"},      {JR_PRIORITY, "-1001", "-1001"},    {JR_MAX_MEMORY_MB, "2", "2"},
        {JR_MAX_MEMORY_MB, "12XB", "\"12XB\""}, {JR_MAX_RUNTIME_S, "0", "0"}, {JR_MAX_RUNTIME_S, "soon", "\"soon\""},
        {JR_MAX_CPU, "0", "0"},             {JR_MAX_CPU, "lots", "\"lots\""},   {JR_MAX_IOBPS, "fast", "\"fast\""},
        {JR_CPU_CORES, "3-1", "\"3-1\""},   {JR_CPU_CORES, "a", "\"a\""},       {JR_CPU_CORES, "", "\"\""},
        {JR_CPU_CORES, "5000", "\"5000\""}, {JR_NETWORK, "no/such", "\"no/such\""}, {JR_NETWORK, "", "\"\""},
        {JR_WORKDIR, "rel/dir", "\"rel/dir\""}, {JR_WORKDIR, "/a/../b", "\"/a/../b\""}, {JR_WORKDIR, "", "\"\""},
        {JR_GPU_CC, "x.y", "\"x.y\""},      {JR_GPU_CC, "", "\"\""},            {JR_GPU_CAPS, "warp", "\"warp\""},
        {JR_GPU_CAPS, "", "\"\""},          {JR_GPU_MIG, "", "\"\""},           {JR_NAME, "", "\"\""},
        {JR_SCHEDULE_AT, "2020-01-01T00:00:00Z", "\"2020-01-01T00:00:00Z\""},
        {JR_SCHEDULE_AT, "2026-13-01T00:00:00Z", "\"2026-13-01T00:00:00Z\""},
        {JR_SCHEDULE_AT, "", "\"\""},       {JR_CROSS_NUMA, "maybe", "\"maybe\""},
        {JR_SCHEDULE_AT, "9999-01-01T00:00:00Z", "\"9999-01-01T00:00:00Z\""},
        {JR_PREEMPTIBLE, "maybe", "\"maybe\""}, {JR_COMMAND, "", "\"\""},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        const jobreq_field *f = &jobreq_fields[same[i].id];
        job_req r = {0}, r2;
        jerr et = {0}, ej = {0};
        char text[512];
        snprintf(text, sizeof text, "{\"command\": \"x\", \"gpu_count\": 1, \"%s\": %s}", f->key, same[i].json);
        json_t *b = json_of(text);
        if (jobreq_set_text(&r, f, same[i].text, NOW, &et) == 0)
            fail_msg("%s: '%s' accepted as text", f->key, same[i].text);
        if (jobreq_from_json(b, &r2, 0, NOW, &ej) == 0)
            fail_msg("%s: %s accepted over the API", f->key, same[i].json);
        if (strcmp(et.msg, ej.msg) || strcmp(et.field, ej.field))
            fail_msg("%s: text and API disagree\n  text: [%s] %s\n  API:  [%s] %s", f->key, et.field, et.msg, ej.field,
                     ej.msg);
        jobreq_free(&r);
        json_decref(b);
    }
}

/* ---- text: units, switches, lists ----------------------------------------------------------- */

static void test_text_units(void **state)
{
    static const struct { enum jobreq_id id; const char *text; long long want; } ok[] = {
        {JR_MAX_MEMORY_MB, "4096", 4096},   {JR_MAX_MEMORY_MB, "4096MB", 4096}, {JR_MAX_MEMORY_MB, "1TB", 1 << 20},
        {JR_MAX_MEMORY_MB, "2g", 2048},     {JR_MAX_IOBPS, "512K", 512 << 10}, {JR_MAX_IOBPS, "1G", 1 << 30},
        {JR_MAX_RUNTIME_S, "90", 90},       {JR_MAX_RUNTIME_S, "30min", 1800}, {JR_MAX_RUNTIME_S, "1d", 86400},
        {JR_MAX_CPU, "250", 250},           {JR_MAX_CPU, "100%", 100},         {JR_PRIORITY, "-5", -5},
        {JR_GPU_MEMORY_MB, "1GB", 1024},
        /* Slurm's time limits, as sbatch --time and scontrol update TimeLimit= take them */
        {JR_MAX_RUNTIME_S, "2:00:00", 7200}, {JR_MAX_RUNTIME_S, "90:30", 5430}, {JR_MAX_RUNTIME_S, "1-0", 86400},
        {JR_MAX_RUNTIME_S, "1-12:30", 131400}, {JR_MAX_RUNTIME_S, "2-0:0:5", 172805},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        job_req r = {0};
        jerr e = {0};
        const jobreq_field *f = &jobreq_fields[ok[i].id];
        if (jobreq_set_text(&r, f, ok[i].text, NOW, &e) < 0)
            fail_msg("%s: '%s' refused: %s", f->key, ok[i].text, e.msg);
        assert_int_equal(*(int64_t *)((char *)&r + f->off), ok[i].want);
        jobreq_free(&r);
    }
    /* a unit that would pass the range in another unit is still checked in the API's */
    static const struct { enum jobreq_id id; const char *text, *msg; } bad[] = {
        {JR_MAX_MEMORY_MB, "3MB", "max_memory_mb: '3MB' is not a size of at least 4 MB; use megabytes (4096) or a unit: "
                                  "4096MB, 8GB"},
        {JR_MAX_MEMORY_MB, "99999999999TB", "max_memory_mb: '99999999999TB' is not a size of at least 4 MB; use "
                                            "megabytes (4096) or a unit: 4096MB, 8GB"},
        {JR_MAX_RUNTIME_S, "3651d", "max_runtime_s: '3651d' " DURATION},
        {JR_MAX_RUNTIME_S, "3651-0", "max_runtime_s: '3651-0' " DURATION},
        {JR_MAX_RUNTIME_S, "0:00", "max_runtime_s: '0:00' " DURATION},       /* Slurm's none: a limit is left out */
        {JR_MAX_RUNTIME_S, "UNLIMITED", "max_runtime_s: 'UNLIMITED' " DURATION},
        {JR_MAX_RUNTIME_S, "1:2:3:4", "max_runtime_s: '1:2:3:4' " DURATION},
        {JR_MAX_RUNTIME_S, "1-", "max_runtime_s: '1-' " DURATION},
        {JR_MAX_CPU, "%", "max_cpu: '%' " CPU_PCT},
        {JR_MAX_CPU, "0%", "max_cpu: '0%' " CPU_PCT},
        {JR_PRIORITY, "1e3", "priority: '1e3' must be a whole number from -1000 to 1000 (higher runs first; default 0)"},
        {JR_PRIORITY, " 5", "priority: ' 5' must be a whole number from -1000 to 1000 (higher runs first; default 0)"},
        {JR_GPU_COUNT, "99999999999999999999", "gpu_count: '99999999999999999999' must be a number of GPUs from 0 to "
                                               "64, or all"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        job_req r = {0};
        jerr e = {0};
        const jobreq_field *f = &jobreq_fields[bad[i].id];
        if (jobreq_set_text(&r, f, bad[i].text, NOW, &e) == 0)
            fail_msg("%s: '%s' accepted", f->key, bad[i].text);
        assert_msg(&e, f->key, bad[i].msg, f->key);
        assert_int_equal(r.has, 0);
        jobreq_free(&r);
    }
}

static void test_text_gpus_all_and_schedule(void **state)
{
    job_req r = {0};
    jerr e = {0};
    /* --gpu=all, gpu_count: all */
    assert_int_equal(jobreq_set_text(&r, by_flag("--gpu"), "ALL", NOW, &e), 0);
    assert_true(r.gpu_all);
    assert_true(jobreq_has(&r, JR_GPU_ALL));
    assert_false(jobreq_has(&r, JR_GPU_COUNT));
    /* a delay: from now, to the millisecond */
    assert_int_equal(jobreq_set_text(&r, by_flag("--schedule"), "30min", NOW, &e), 0);
    assert_string_equal(r.schedule_at, "2026-05-28T20:56:40.000Z");
    assert_int_equal(r.schedule_ms, ((int64_t)NOW + 1800) * 1000);
    /* a time: as the API reads it, kept in one form */
    assert_int_equal(jobreq_set_text(&r, by_flag("--schedule"), "2026-05-28T23:00:00.250+02:00", NOW, &e), 0);
    assert_string_equal(r.schedule_at, "2026-05-28T21:00:00.250Z");
    assert_int_equal(r.schedule_ms, 1780002000250);
    /* (a time within 5 s of now is not "in the past": clocks differ a little) */
    assert_int_equal(jobreq_set_text(&r, &jobreq_fields[JR_SCHEDULE_AT], "2026-05-28T20:26:36Z", NOW, &e), 0);
    static const struct { const char *text, *msg; } bad[] = {
        {"yesterday", "schedule_at: 'yesterday' is neither a delay (30s, 30min, 2h30m) nor an RFC 3339 time "
                      "(2026-11-22T15:04:05Z)"},
        {"0s", "schedule_at: '0s' is neither a delay (30s, 30min, 2h30m) nor an RFC 3339 time (2026-11-22T15:04:05Z)"},
        {"3651d", "schedule_at: '3651d' is more than ten years away"},
        {"2026-05-28T20:26:34Z", "schedule_at: '2026-05-28T20:26:34Z' is in the past"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        assert_int_equal(jobreq_set_text(&r, &jobreq_fields[JR_SCHEDULE_AT], bad[i].text, NOW, &e), -1);
        assert_msg(&e, "schedule_at", bad[i].msg, bad[i].text);
    }
    assert_string_equal(r.schedule_at, "2026-05-28T20:26:36.000Z");
    /* env and uploads are not text */
    assert_int_equal(jobreq_set_text(&r, &jobreq_fields[JR_ENV], "A=1", NOW, &e), -1);
    assert_msg(&e, "env", "env: cannot be given as text", "env");
    jobreq_free(&r);
}

static void test_env(void **state)
{
    job_req r = {0};
    jerr e = {0};
    assert_int_equal(jobreq_add_env(&r, false, "A", "1", &e), 0);
    assert_int_equal(jobreq_add_env(&r, true, "T", "s", &e), 0);
    assert_string_equal(jobreq_env_get(&r, false, "A"), "1");
    assert_null(jobreq_env_get(&r, true, "A"));
    assert_int_equal(jobreq_add_env(&r, false, "A", "2", &e), -1);
    assert_msg(&e, "env", "env: 'A' is given twice", "twice");
    assert_int_equal(jobreq_add_env(&r, true, "A", "2", &e), -1);
    assert_msg(&e, "secret_env", "secret_env: 'A' is also set as a plain variable; give each variable once", "both");
    assert_int_equal(jobreq_add_env(&r, false, "T", "2", &e), -1);
    assert_msg(&e, "secret_env", "secret_env: 'T' is also set as a plain variable; give each variable once", "both");
    assert_int_equal(jobreq_add_env(&r, true, "A-B", "2", &e), -1);
    assert_msg(&e, "secret_env",
               "secret_env: 'A-B' is not a valid variable name; use letters, digits and '_', not starting with a digit",
               "name");
    char *big = calloc(1, 128 * 1024 + 2);
    memset(big, 'v', 128 * 1024 + 1);
    assert_int_equal(jobreq_add_env(&r, false, "BIG", big, &e), -1);
    assert_msg(&e, "env", "env: BIG: longer than 131072 bytes", "big");
    free(big);
    assert_int_equal(r.nenv, 1);
    assert_int_equal(r.nsecret_env, 1);
    /* over the API: the same words; a variable in both objects */
    job_req x;
    json_t *b = json_of("{\"command\": \"x\", \"env\": {\"A\": \"1\"}, \"secret_env\": {\"A\": \"2\"}}");
    assert_int_equal(jobreq_from_json(b, &x, 0, NOW, &e), -1);
    assert_msg(&e, "secret_env", "secret_env: 'A' is also set as a plain variable; give each variable once", "api");
    json_decref(b);
    b = json_of("{\"secret_env\": {\"A\": \"2\"}, \"command\": \"x\", \"env\": {\"B\": \"1\", \"A\": \"1\"}}");
    assert_int_equal(jobreq_from_json(b, &x, 0, NOW, &e), -1);
    assert_msg(&e, "secret_env", "secret_env: 'A' is also set as a plain variable; give each variable once",
               "api, secret_env first");
    json_decref(b);
    /* the other refusals of a variable, over the API in the words -e and environment: use */
    b = json_of("{\"command\": \"x\", \"secret_env\": {\"A-B\": \"2\"}}");
    assert_int_equal(jobreq_from_json(b, &x, 0, NOW, &e), -1);
    assert_msg(&e, "secret_env",
               "secret_env: 'A-B' is not a valid variable name; use letters, digits and '_', not starting with a digit",
               "api name");
    json_decref(b);
    big = calloc(1, 128 * 1024 + 2);
    memset(big, 'v', 128 * 1024 + 1);
    b = json_pack("{s:s, s:{s:s}}", "command", "x", "env", "BIG", big);
    free(big);
    assert_int_equal(jobreq_from_json(b, &x, 0, NOW, &e), -1);
    assert_msg(&e, "env", "env: BIG: longer than 131072 bytes", "api big");
    json_decref(b);
    /* an empty object sets no variable: the field is not given, as with no -e */
    b = json_of("{\"command\": \"x\", \"env\": {}, \"secret_env\": {}}");
    assert_int_equal(jobreq_from_json(b, &x, 0, NOW, &e), 0);
    assert_false(jobreq_has(&x, JR_ENV));
    assert_false(jobreq_has(&x, JR_SECRET_ENV));
    jobreq_free(&x);
    json_decref(b);
    jobreq_free(&r);
}

/* gpu_count 0 is no GPU, as leaving it out: accepted from text and JSON alike, and a GPU
 * qualifier beside it is refused as beside no gpu_count. */
static void test_gpu_count_zero(void **state)
{
    const jobreq_field *f = by_flag("--gpu");
    job_req r = {0};
    jerr e = {0};
    assert_int_equal(jobreq_set_command(&r, "x", &e), 0);
    assert_int_equal(jobreq_set_text(&r, f, "0", NOW, &e), 0);
    assert_true(jobreq_has(&r, JR_GPU_COUNT));
    assert_int_equal(r.gpu_count, 0);
    assert_false(r.gpu_all);
    assert_int_equal(jobreq_check(&r, &e), 0);
    json_t *out = jobreq_to_json(&r, 0);
    assert_json_eq(out, "{\"command\": \"x\", \"gpu_count\": 0}", "text 0");
    job_req back;
    assert_int_equal(jobreq_from_json(out, &back, 0, NOW, &e), 0);
    assert_int_equal(back.has, r.has);
    assert_int_equal(back.gpu_count, 0);
    jobreq_free(&back);
    json_decref(out);
    assert_int_equal(jobreq_set_text(&r, by_flag("--gpu-type"), "H100", NOW, &e), 0);
    memset(&e, 0, sizeof e);
    assert_int_equal(jobreq_check(&r, &e), -1);
    assert_msg(&e, "gpu_type", "gpu_type: qualifies a GPU request, but the job asks for no GPU; add gpu_count", "text");
    jobreq_free(&r);
    static const char *const bodies[] = {
        "{\"command\": \"x\", \"gpu_count\": 0, \"gpu_type\": \"H100\"}",
        "{\"command\": \"x\", \"gpu_count\": 0, \"gpu_share\": true, \"gpu_memory_mb\": 10}",
    };
    static const char *const fields[] = {"gpu_type", "gpu_share"};
    for (size_t i = 0; i < 2; i++) {
        json_t *b = json_of(bodies[i]);
        char want[200];
        memset(&e, 0, sizeof e);
        assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
        snprintf(want, sizeof want, "%s: qualifies a GPU request, but the job asks for no GPU; add gpu_count", fields[i]);
        assert_msg(&e, fields[i], want, bodies[i]);
        json_decref(b);
    }
    /* a MIG device beside gpu_count 0 asks for that device alone */
    json_t *b = json_of("{\"command\": \"x\", \"gpu_count\": 0, \"gpu_mig\": \"1g.10gb\"}");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), 0);
    jobreq_free(&r);
    json_decref(b);
}

static void test_command_and_args(void **state)
{
    job_req r = {0};
    jerr e = {0};
    assert_int_equal(jobreq_set_command(&r, "", &e), -1);
    assert_msg(&e, "command", "command: is empty; give the program to run", "empty");
    char *big = calloc(1, 4098);
    memset(big, 'c', 4097);
    assert_int_equal(jobreq_set_command(&r, big, &e), -1);
    assert_msg(&e, "command", "command: longer than 4096 bytes", "long");
    free(big);
    assert_int_equal(jobreq_set_command(&r, "sh", &e), 0);
    jobreq_set_list(&r, JR_ARGS, NULL, 0);
    assert_true(jobreq_has(&r, JR_ARGS));
    jobreq_add_arg(&r, "-c");
    jobreq_add_arg(&r, "echo hi");
    json_t *j = jobreq_to_json(&r, 0);
    assert_json_eq(j, "{\"command\": \"sh\", \"args\": [\"-c\", \"echo hi\"]}", "args");
    json_decref(j);
    jobreq_free(&r);
    /* an empty list is given, not absent */
    jobreq_set_list(&r, JR_ARGS, NULL, 0);
    assert_int_equal(jobreq_set_command(&r, "true", &e), 0);
    j = jobreq_to_json(&r, 0);
    assert_json_eq(j, "{\"command\": \"true\", \"args\": []}", "no args");
    json_decref(j);
    jobreq_free(&r);
}

/* ---- the request as a whole ----------------------------------------------------------------- */

static void test_unknown_and_daemon_fields(void **state)
{
    static const char accepted[] =
        "command, args, name, env, secret_env, workdir, network, max_cpu, max_memory_mb, max_iobps, cpu_cores, "
        "max_runtime_s, schedule_at, uploads, gpu_count, gpu_memory_mb, gpu_all, gpu_ids, gpu_caps, gpu_optional, "
        "gpu_mig, priority, gpu_type, gpu_cc, gpu_share, cross_numa, preemptible, runtime, volumes, isolation, devices, tty, stdin, max_netbps, array, after, signal, singleton, slurm_env, after_any, hold";
    static const char *const bodies[] = {
        "{\"command\": \"x\", \"bogus\": 1}", "{\"command\": \"x\", \"pids_max\": 100}",
        "{\"command\": \"x\", \"gpu_degraded\": \"why\"}",
    };
    static const char *const names[] = {"bogus", "pids_max", "gpu_degraded"};
    for (size_t i = 0; i < 3; i++) {
        job_req r;
        jerr e = {0};
        char want[1024];
        json_t *b = json_of(bodies[i]);
        assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
        snprintf(want, sizeof want, "%s: unknown field in a job request; accepted fields: %s", names[i], accepted);
        assert_msg(&e, names[i], want, names[i]);
        json_decref(b);
    }
    job_req r;
    jerr e = {0};
    json_t *b = json_of("[\"x\"]");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
    assert_msg(&e, "", "the request body must be a JSON object", "array");
    json_decref(b);
    b = json_of("{\"args\": [\"a\"]}");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
    assert_msg(&e, "command", "command: missing; give the program to run", "no command");
    json_decref(b);
    b = json_of("{\"command\": null}");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
    assert_msg(&e, "command", "command: must be a string", "null command");
    json_decref(b);
    /* a variable's value that is not a string: the variable named, and what is taken */
    b = json_of("{\"command\": \"x\", \"env\": {\"A\": \"1\", \"EPOCHS\": 3}}");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
    assert_msg(&e, "env.EPOCHS", "env.EPOCHS: a number, not a string; every value of env is a string "
                                 "(\"EPOCHS\": \"1\", not 1)", "a number in env");
    json_decref(b);
    /* two refusals: the first in the table's order is said, whatever order the body has (the
     * values are found in one pass over the body's keys, then read in the table's order) */
    b = json_of("{\"priority\": \"high\", \"max_cpu\": true, \"command\": \"x\"}");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
    assert_string_equal(e.field, "max_cpu");
    json_decref(b);
    b = json_of("{\"max_cpu\": true, \"priority\": \"high\", \"command\": \"x\"}");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
    assert_string_equal(e.field, "max_cpu");
    json_decref(b);
    /* env's variables are there for secret_env's check whichever comes first */
    json_t *b1 = json_of("{\"command\": \"x\", \"env\": {\"A\": \"1\"}, \"secret_env\": {\"A\": \"2\"}}");
    json_t *b2 = json_of("{\"secret_env\": {\"A\": \"2\"}, \"command\": \"x\", \"env\": {\"A\": \"1\"}}");
    jerr e1 = {0}, e2 = {0};
    job_req r1, r2;
    int rc1 = jobreq_from_json(b1, &r1, 0, NOW, &e1), rc2 = jobreq_from_json(b2, &r2, 0, NOW, &e2);
    assert_int_equal(rc1, rc2);
    assert_string_equal(e1.msg, e2.msg);
    if (rc1 == 0)
        jobreq_free(&r1), jobreq_free(&r2);
    json_decref(b1);
    json_decref(b2);
    b = json_of("{\"command\": \"x\", \"secret_env\": {\"TOKEN\": true}}");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), -1);
    assert_msg(&e, "secret_env.TOKEN", "secret_env.TOKEN: true or false, not a string; every value of secret_env "
                                       "is a string (\"TOKEN\": \"1\", not 1)", "a boolean in secret_env");
    json_decref(b);
}

/* What the daemon stores: its own fields, the listing of what it wrote, a start time that has
 * passed, a --gpu-optional job that got no GPU; none of which a client may send. */
static void test_from_db(void **state)
{
    static const char stored[] =
        "{\"command\": \"x\", \"pids_max\": 4096, \"gpu_degraded\": \"asks for 8 GPUs; this machine has 4\","
        " \"gpu_count\": 0, \"gpu_optional\": true, \"gpu_type\": \"H100\", \"schedule_at\": \"2020-01-01T00:00:00Z\","
        " \"uploads\": [{\"path\": \"a.txt\", \"type\": \"file\", \"mode\": \"0600\", \"size\": 3}]}";
    job_req r;
    jerr e = {0};
    json_t *b = json_of(stored);
    if (jobreq_from_json(b, &r, JOBREQ_FROM_DB, NOW, &e) < 0)
        fail_msg("stored request refused: %s", e.msg);
    assert_int_equal(r.pids_max, 4096);
    assert_int_equal(r.gpu_count, 0);
    assert_int_equal(r.schedule_ms, 1577836800000);
    assert_int_equal(r.nuploads, 1);
    assert_int_equal(r.uploads[0].mode, 0600);
    assert_int_equal(r.uploads[0].size, 3);
    assert_null(r.uploads[0].content_b64);
    /* written back as it was read */
    json_t *out = jobreq_to_json(&r, JOBREQ_JSON_SECRETS);
    assert_true(json_equal(out, b));
    json_decref(out);
    jobreq_free(&r);
    /* each of these is refused from a client */
    static const struct { const char *body, *field, *msg; } api[] = {
        {"{\"command\": \"x\", \"schedule_at\": \"2020-01-01T00:00:00Z\"}", "schedule_at",
         "schedule_at: '2020-01-01T00:00:00Z' is in the past"},
        {"{\"command\": \"x\", \"uploads\": [{\"path\": \"a.txt\", \"type\": \"file\", \"mode\": 384, \"written\": 3}]}",
         "uploads[0].written",
         "uploads[0].written: unknown field in an upload; accepted fields: path, type, mode, content_b64, size, target"},
        {"{\"command\": \"x\", \"uploads\": [{\"path\": \"a.txt\", \"size\": -3}]}", "uploads[0].size",
         "uploads[0].size: must be a whole number from 0 to 9223372036854775807"},
        {"{\"command\": \"x\", \"uploads\": [{\"path\": \"a.txt\", \"mode\": \"0600\"}]}", "uploads[0].mode",
         "uploads[0].mode: must be a whole number from 0 to 4095"},
        {"{\"command\": \"x\", \"uploads\": [{\"path\": 1}]}", "uploads[0].path", "uploads[0].path: must be a string"},
        {"{\"command\": \"x\", \"uploads\": [{\"type\": \"file\"}]}", "uploads", "uploads[0]: path is required"},
        {"{\"command\": \"x\", \"uploads\": [3]}", "uploads", "uploads[0]: must be an object"},
        {"{\"command\": \"x\", \"uploads\": [{\"path\": \"l\", \"type\": \"symlink\"}]}", "uploads",
         "uploads: 'l': a symlink needs a target"},
        {"{\"command\": \"x\", \"uploads\": [{\"path\": \"a\", \"type\": \"fifo\"}]}", "uploads",
         "uploads: 'a': type 'fifo' is not one of file, dir, symlink"},
        {"{\"command\": \"x\", \"uploads\": [{\"path\": \"a\"}, {\"path\": \"a\"}]}", "uploads",
         "uploads: 'a' is listed twice"},
        {"{\"command\": \"x\", \"uploads\": [{\"path\": \"/etc/passwd\"}]}", "uploads",
         "uploads: '/etc/passwd' must be a relative path inside /work"},
        {"{\"command\": \"x\", \"uploads\": {}}", "uploads", "uploads: must be an array of {path, type, mode, content_b64}"},
    };
    for (size_t i = 0; i < sizeof api / sizeof api[0]; i++) {
        json_t *x = json_of(api[i].body);
        memset(&e, 0, sizeof e);
        if (jobreq_from_json(x, &r, 0, NOW, &e) == 0)
            fail_msg("accepted from a client: %s", api[i].body);
        assert_msg(&e, api[i].field, api[i].msg, api[i].body);
        json_decref(x);
    }
    json_decref(b);
    /* a stored field this version refuses is left out; the rest of the job is read */
    b = json_of("{\"command\": \"x\", \"priority\": 5000, \"gpu_count\": 2, \"network\": \"no/such\"}");
    memset(&e, 0, sizeof e);
    assert_int_equal(jobreq_from_json(b, &r, JOBREQ_FROM_DB, NOW, &e), 0);
    assert_false(jobreq_has(&r, JR_PRIORITY));
    assert_false(jobreq_has(&r, JR_NETWORK));
    assert_int_equal(r.gpu_count, 2);
    assert_string_equal(e.msg, "");
    jobreq_free(&r);
    json_decref(b);
    /* left out whole: not the variables, files or arguments before the one refused */
    b = json_of("{\"command\": \"x\", \"args\": [\"a\", 1], \"env\": {\"A\": \"1\", \"1B\": \"2\"},"
                " \"secret_env\": {\"S\": \"s\"}, \"gpu_count\": 1, \"gpu_ids\": [\"0\", 1],"
                " \"uploads\": [{\"path\": \"a\", \"type\": \"file\", \"mode\": \"0644\", \"size\": 1},"
                " {\"path\": \"/abs\"}]}");
    assert_int_equal(jobreq_from_json(b, &r, JOBREQ_FROM_DB, NOW, &e), 0);
    assert_false(jobreq_has(&r, JR_ARGS));
    assert_int_equal(r.nargs, 0);
    assert_false(jobreq_has(&r, JR_ENV));
    assert_int_equal(r.nenv, 0);
    assert_null(jobreq_env_get(&r, false, "A"));
    assert_false(jobreq_has(&r, JR_GPU_IDS));
    assert_int_equal(r.ngpu_ids, 0);
    assert_false(jobreq_has(&r, JR_UPLOADS));
    assert_int_equal(r.nuploads, 0);
    assert_string_equal(jobreq_env_get(&r, true, "S"), "s");
    out = jobreq_to_json(&r, JOBREQ_JSON_SECRETS);
    assert_json_eq(out, "{\"command\": \"x\", \"secret_env\": {\"S\": \"s\"}, \"gpu_count\": 1}", "left out");
    json_decref(out);
    jobreq_free(&r);
    json_decref(b);
}

/* A listing of links (path[i] -> target[i]), checked as the daemon checks it. */
static int links_check(size_t n, char **paths, char **targets, size_t *bad, jerr *e)
{
    jobreq_upload *ups = calloc(n, sizeof *ups);
    for (size_t i = 0; i < n; i++)
        ups[i] = (jobreq_upload){.path = paths[i], .type = targets[i] ? "symlink" : "dir", .target = targets[i]};
    int rc = jobreq_upload_links_check(ups, n, bad, e);
    free(ups);
    return rc;
}

static void free_strs(size_t n, char **a, char **b)
{
    for (size_t i = 0; i < n; i++)
        free(a[i]), free(b[i]);
    free(a), free(b);
}

/* Links that name each other: the links followed are counted in all, as the kernel's ELOOP
 * counts them, and each link is resolved once, so the check is linear in the listing. Each link
 * of the first listing names the next one twice: followed afresh, 60 of them are 2^60 walks (the
 * issue 25 request that froze the daemon for 12 s with 26); here it ends at once with ELOOP. */
static void test_upload_links_bounded(void **state)
{
    (void)state;
    enum { N = 60, WIDE = 20000 };
    char **p = calloc(WIDE + 2, sizeof *p), **t = calloc(WIDE + 2, sizeof *t);
    char buf[128];
    for (int k = 0; k < N; k++) {
        snprintf(buf, sizeof buf, "l%d", k);
        p[k] = strdup(buf);
        snprintf(buf, sizeof buf, k + 1 < N ? "l%d/../l%d" : "d", k + 1, k + 1);
        t[k] = strdup(buf);
    }
    p[N] = strdup("d");
    size_t bad = 99;
    jerr e = {0};
    assert_int_equal(links_check(N + 1, p, t, &bad, &e), -1);
    assert_string_equal(e.field, "uploads");
    assert_non_null(strstr(e.msg, "goes through too many links (more than 40)"));
    assert_int_equal(bad, 0);
    free_strs(N + 1, p, t);

    /* a chain: 40 links in all are followed, 41 are one too many (l0 -> l1 -> ... -> d) */
    for (int len = 40; len <= 41; len++) {
        p = calloc((size_t)len + 1, sizeof *p), t = calloc((size_t)len + 1, sizeof *t);
        for (int k = 0; k < len; k++) {
            snprintf(buf, sizeof buf, "l%d", k);
            p[k] = strdup(buf);
            snprintf(buf, sizeof buf, k + 1 < len ? "l%d" : "d", k + 1);
            t[k] = strdup(buf);
        }
        p[len] = strdup("d");
        jerr e2 = {0};
        assert_int_equal(links_check((size_t)len + 1, p, t, NULL, &e2), len == 40 ? 0 : -1);
        free_strs((size_t)len + 1, p, t);
    }

    /* many links through one shared link, each using it three times: all are kept, and the
     * shared one is walked once (20,000 links, not 20,000 walks of its target) */
    p = calloc(WIDE + 2, sizeof *p), t = calloc(WIDE + 2, sizeof *t);
    p[0] = strdup("d"), t[0] = NULL;
    p[1] = strdup("s"), t[1] = strdup("d/./e/../e");
    for (int k = 2; k < WIDE + 2; k++) {
        snprintf(buf, sizeof buf, "x%d", k);
        p[k] = strdup(buf);
        t[k] = strdup("s/../s/../s/f");
    }
    jerr e3 = {0};
    assert_int_equal(links_check(WIDE + 2, p, t, NULL, &e3), 0);
    /* and one of them that climbs out through the shared link is still caught */
    free(t[WIDE + 1]);
    t[WIDE + 1] = strdup("s/../../../x");
    assert_int_equal(links_check(WIDE + 2, p, t, &bad, &e3), -1);
    assert_int_equal(bad, WIDE + 1);
    assert_non_null(strstr(e3.msg, "outside the uploads"));
    free_strs(WIDE + 2, p, t);
}

/* The rules between fields: the request as a whole, and the field each refusal names. */
/* The listing's rules: directories first, one form of content, links that stay inside /work
 * (resolved through the other links listed, as the kernel would). */
static void test_upload_rules(void **state)
{
    static const struct { const char *uploads, *msg; } bad[] = {
        {"[{\"path\": \"x\", \"type\": \"symlink\", \"target\": \"/etc/shadow\"}]",
         "uploads: 'x' is a symlink to '/etc/shadow', outside the uploads; only links that stay inside /work are kept "
         "(upload the file itself instead)"},
        {"[{\"path\": \"x\", \"type\": \"symlink\", \"target\": \"..\"}]",
         "uploads: 'x' is a symlink to '..', outside the uploads; only links that stay inside /work are kept (upload "
         "the file itself instead)"},
        {"[{\"path\": \"d\", \"type\": \"dir\"}, {\"path\": \"d/x\", \"type\": \"symlink\", \"target\": \"../../etc\"}]",
         "uploads: 'd/x' is a symlink to '../../etc', outside the uploads; only links that stay inside /work are kept "
         "(upload the file itself instead)"},
        /* through another link: up goes to /work, then one more level up leaves it */
        {"[{\"path\": \"d\", \"type\": \"dir\"}, {\"path\": \"d/up\", \"type\": \"symlink\", \"target\": \"..\"},"
         " {\"path\": \"d/x\", \"type\": \"symlink\", \"target\": \"up/../shadow\"}]",
         "uploads: 'd/x' is a symlink to 'up/../shadow', outside the uploads; only links that stay inside /work are "
         "kept (upload the file itself instead)"},
        {"[{\"path\": \"a\", \"type\": \"symlink\", \"target\": \"b\"}, {\"path\": \"b\", \"type\": \"symlink\", \"target\": \"/\"},"
         " {\"path\": \"c\", \"type\": \"symlink\", \"target\": \"a/etc\"}]",
         "uploads: 'a' is a symlink to 'b', outside the uploads; only links that stay inside /work are kept (upload "
         "the file itself instead)"},
        {"[{\"path\": \"a\", \"type\": \"symlink\", \"target\": \"b/x\"}, {\"path\": \"b\", \"type\": \"symlink\", \"target\": \"a/y\"}]",
         "uploads: 'a' is a symlink to 'b/x', which goes through too many links (more than 40) or grows too long"},
        {"[{\"path\": \"d/a\", \"size\": 1}]",
         "uploads: 'd/a': its directory 'd' must be listed before it, as a directory"},
        {"[{\"path\": \"d\", \"type\": \"symlink\", \"target\": \"e\"}, {\"path\": \"d/a\"}]",
         "uploads: 'd/a': its directory 'd' must be listed before it, as a directory"},
        {"[{\"path\": \"a\", \"size\": 1}, {\"path\": \"b\", \"content_b64\": \"aGkK\"}]",
         "uploads: some files carry content_b64 and others only a size (their bytes to follow); send every file one "
         "way"},
        {"[{\"path\": \"d\", \"type\": \"dir\", \"size\": 1}]", "uploads: 'd': only a file has a size"},
        {"[{\"path\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}]",
         "uploads: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' has a name longer than 255 bytes"},
    };
    const char *last = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "{\"command\": \"x\", \"uploads\": %s}", bad[i].uploads);
        json_t *b = json_of(text);
        job_req r;
        jerr e = {0};
        const char *msg = bad[i].msg ? bad[i].msg : last;
        last = msg;
        if (jobreq_from_json(b, &r, 0, NOW, &e) == 0)
            fail_msg("accepted: %s", text);
        assert_msg(&e, "uploads", msg, text);
        json_decref(b);
    }
    static const char *const good[] = {
        /* in-tree links, dangling ones inside /work, links through links, '.' and '//' */
        "[{\"path\": \"d\", \"type\": \"dir\"}, {\"path\": \"d/f\", \"type\": \"file\", \"size\": 3},"
        " {\"path\": \"d/l\", \"type\": \"symlink\", \"target\": \"f\"},"
        " {\"path\": \"d/dangling\", \"type\": \"symlink\", \"target\": \"../elsewhere/none\"},"
        " {\"path\": \"top\", \"type\": \"symlink\", \"target\": \"./d//l\"},"
        " {\"path\": \"d/up\", \"type\": \"symlink\", \"target\": \"..\"},"
        " {\"path\": \"d/via\", \"type\": \"symlink\", \"target\": \"up/d/up/top\"}]",
        /* the JSON form as before, and an empty file with neither */
        "[{\"path\": \"a\", \"content_b64\": \"aGkK\"}, {\"path\": \"b\"}, {\"path\": \"c\", \"size\": 0}]",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text, "{\"command\": \"x\", \"uploads\": %s}", good[i]);
        json_t *b = json_of(text);
        job_req r;
        jerr e = {0};
        if (jobreq_from_json(b, &r, 0, NOW, &e) < 0)
            fail_msg("refused: %s: %s", text, e.msg);
        assert_int_equal(jobreq_uploads_streamed(&r), i == 0);
        assert_int_equal(jobreq_uploads_declared(&r), i == 0 ? 3 : 0);
        /* the request form is written back with its sizes */
        json_t *out = jobreq_to_json(&r, 0);
        assert_true(json_equal(json_object_get(out, "uploads"), json_object_get(b, "uploads")) || i == 1);
        json_decref(out);
        jobreq_free(&r);
        json_decref(b);
    }
}

static void test_check_rules(void **state)
{
    static const struct { const char *members, *field, *msg; } bad[] = {
        {"\"gpu_mig\": \"1g.10gb\", \"gpu_count\": 1", "gpu_mig",
         "gpu_mig: asks for one MIG device; do not also give gpu_count, gpu_ids, gpu_all or gpu_memory_mb (the profile "
         "says its memory)"},
        {"\"gpu_mig\": \"1g.10gb\", \"gpu_all\": true", "gpu_mig", NULL},
        {"\"gpu_mig\": \"1g.10gb\", \"gpu_ids\": [\"0\"]", "gpu_mig", NULL},
        {"\"gpu_mig\": \"1g.10gb\", \"gpu_memory_mb\": 10", "gpu_mig", NULL},
        {"\"gpu_mig\": \"1g.10gb\", \"env\": {\"NVIDIA_VISIBLE_DEVICES\": \"void\"}", "env",
         "env: NVIDIA_VISIBLE_DEVICES asks for no GPU, but the job also asks for a MIG device; drop one of the two"},
        {"\"gpu_mig\": \"1g.10gb\", \"gpu_share\": true", "gpu_mig",
         "gpu_mig: a MIG device is its own slice of a GPU; do not also give gpu_share, gpu_type or gpu_cc"},
        {"\"gpu_mig\": \"1g.10gb\", \"gpu_cc\": \"8.0\"", "gpu_mig", NULL},
        {"\"gpu_all\": true, \"gpu_count\": 2", "gpu_all",
         "gpu_all: asks for every GPU; do not also give gpu_count or gpu_ids"},
        {"\"gpu_all\": true, \"gpu_ids\": [\"0\"]", "gpu_all", NULL},
        /* a rate without a link of the job's own to shape (none is the default) */
        {"\"max_netbps\": 1048576", "max_netbps",
         "max_netbps: only a job on isolated, bridge or a named network has a link of its own to limit; this one's "
         "network is none (the default)"},
        {"\"max_netbps\": 1048576, \"network\": \"host\"", "max_netbps",
         "max_netbps: only a job on isolated, bridge or a named network has a link of its own to limit; this one's "
         "network is host"},
        {"\"gpu_type\": \"H100\"", "gpu_type",
         "gpu_type: qualifies a GPU request, but the job asks for no GPU; add gpu_count"},
        {"\"gpu_cc\": \"8.0\"", "gpu_cc", "gpu_cc: qualifies a GPU request, but the job asks for no GPU; add gpu_count"},
        {"\"gpu_share\": true", "gpu_share",
         "gpu_share: qualifies a GPU request, but the job asks for no GPU; add gpu_count"},
        {"\"cross_numa\": true", "cross_numa",
         "cross_numa: qualifies a GPU request, but the job asks for no GPU; add gpu_count"},
        {"\"gpu_memory_mb\": 10", "gpu_memory_mb",
         "gpu_memory_mb: qualifies a GPU request, but the job asks for no GPU; add gpu_count"},
        {"\"gpu_optional\": true", "gpu_optional",
         "gpu_optional: qualifies a GPU request, but the job asks for no GPU; add gpu_count"},
        {"\"gpu_caps\": \"all\"", "gpu_caps",
         "gpu_caps: qualifies a GPU request, but the job asks for no GPU; add gpu_count"},
        {"\"gpu_count\": 2, \"gpu_share\": true, \"gpu_memory_mb\": 10", "gpu_share",
         "gpu_share: a shared job gets one GPU (each shared GPU has its own MPS server, and a CUDA process talks to "
         "one); ask for gpu_count 1"},
        {"\"gpu_ids\": [\"0\", \"1\"], \"gpu_share\": true, \"gpu_memory_mb\": 10", "gpu_share", NULL},
        {"\"gpu_count\": 1, \"gpu_share\": true", "gpu_share",
         "gpu_share: a shared GPU needs a memory reservation; add gpu_memory_mb"},
        {"\"gpu_all\": true, \"gpu_share\": true, \"gpu_memory_mb\": 10", "gpu_share",
         "gpu_share: cannot be combined with gpu_all"},
        {"\"gpu_count\": 1, \"env\": {\"NVIDIA_VISIBLE_DEVICES\": \"none\"}", "env",
         "env: NVIDIA_VISIBLE_DEVICES=none asks for no GPU, but the job also asks for GPUs; drop one of the two"},
        {"\"gpu_ids\": [\"0\"], \"env\": {\"NVIDIA_VISIBLE_DEVICES\": \"void\"}", "env",
         "env: NVIDIA_VISIBLE_DEVICES=void asks for no GPU, but the job also asks for GPUs; drop one of the two"},
        /* the same GPUs in another order agree (good[] below); other GPUs, or one twice, do not */
        {"\"gpu_ids\": [\"0\", \"1\"], \"env\": {\"NVIDIA_VISIBLE_DEVICES\": \"1,2\"}", "env",
         "env: NVIDIA_VISIBLE_DEVICES=1,2 asks for those GPUs, but the job also asks for gpu_ids 0,1; drop one of the two"},
        {"\"gpu_ids\": [\"0\", \"1\"], \"env\": {\"NVIDIA_VISIBLE_DEVICES\": \"1,1\"}", "env",
         "env: NVIDIA_VISIBLE_DEVICES=1,1 asks for those GPUs, but the job also asks for gpu_ids 0,1; drop one of the two"},
        {"\"gpu_count\": 1, \"gpu_caps\": \"compute,video\", \"env\": {\"NVIDIA_DRIVER_CAPABILITIES\": \"video\"}",
         "env", "env: NVIDIA_DRIVER_CAPABILITIES=video, but the job also asks for gpu_caps compute,video; drop one of "
                "the two"},
    };
    const char *last = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "{\"command\": \"x\", %s}", bad[i].members);
        json_t *b = json_of(text);
        job_req r;
        jerr e = {0};
        const char *msg = bad[i].msg ? bad[i].msg : last;
        last = msg;
        if (jobreq_from_json(b, &r, 0, NOW, &e) == 0)
            fail_msg("accepted: %s", text);
        assert_msg(&e, bad[i].field, msg, text);
        json_decref(b);
    }
    static const char *const good[] = {
        "\"gpu_mig\": \"1g.10gb\", \"gpu_optional\": true, \"gpu_caps\": \"compute\"",
        "\"gpu_count\": 1, \"gpu_share\": true, \"gpu_memory_mb\": 10, \"gpu_cc\": \"8.0\", \"gpu_type\": \"A100\"",
        "\"gpu_count\": 2, \"gpu_ids\": [\"0\", \"1\"], \"cross_numa\": false",
        "\"gpu_all\": true, \"gpu_share\": false, \"env\": {\"NVIDIA_VISIBLE_DEVICES\": \"all\"}",
        "\"env\": {\"NVIDIA_VISIBLE_DEVICES\": \"none\"}, \"gpu_share\": false, \"preemptible\": true",
        /* the same GPUs or capabilities in another order say the same thing */
        "\"gpu_ids\": [\"1\", \"0\"], \"env\": {\"NVIDIA_VISIBLE_DEVICES\": \"0,1\"}",
        "\"gpu_count\": 1, \"gpu_caps\": \"compute,video\", \"env\": {\"NVIDIA_DRIVER_CAPABILITIES\": \"video,compute\"}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "{\"command\": \"x\", %s}", good[i]);
        json_t *b = json_of(text);
        job_req r;
        jerr e = {0};
        if (jobreq_from_json(b, &r, 0, NOW, &e) < 0)
            fail_msg("refused: %s: %s", text, e.msg);
        jobreq_free(&r);
        json_decref(b);
    }
}

static void test_check_machine(void **state)
{
    uint8_t online[CPU_MAX / 8] = {0x0f};   /* CPUs 0-3 */
    jobreq_machine m = {4, 8192, online};
    static const struct { const char *members, *field, *msg; } cases_m[] = {
        {"\"max_cpu\": 401", "max_cpu", "max_cpu: '401' must be a CPU percentage from 1 to 400: a whole number, "
                                        "100 = one core; this machine has 4 CPUs"},
        {"\"max_memory_mb\": 8193", "max_memory_mb", "max_memory_mb: '8193' is more than this machine's memory, 8192 MB"},
        {"\"cpu_cores\": \"2-5\"", "cpu_cores", "cpu_cores: CPU 4 is not online; this machine has CPUs 0-3"},
        {"\"max_cpu\": 400, \"max_memory_mb\": 8192, \"cpu_cores\": \"0-3\"", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases_m / sizeof cases_m[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"command\": \"x\", %s}", cases_m[i].members);
        json_t *b = json_of(text);
        job_req r;
        jerr e = {0};
        assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), 0);
        int rc = jobreq_check_machine(&r, &m, &e);
        if (cases_m[i].msg) {
            assert_int_equal(rc, -1);
            assert_msg(&e, cases_m[i].field, cases_m[i].msg, text);
        } else {
            assert_int_equal(rc, 0);
        }
        jobreq_free(&r);
        json_decref(b);
    }
    /* max_cpu above the machine is said in the table's words, its "up" the machine's bound: the
     * same sentence up to there, whichever side refuses */
    char acc[300];
    jobreq_accepts(&jobreq_fields[JR_MAX_CPU], acc, sizeof acc);
    const char *up = strstr(acc, " up: ");
    assert_non_null(up);
    char stem[300], tail[300];
    snprintf(stem, sizeof stem, "max_cpu: '401' %.*s to 400: ", (int)(up - acc), acc);
    snprintf(tail, sizeof tail, "%s", up + strlen(" up: "));
    *strstr(tail, " (e.g.") = 0;
    json_t *b = json_of("{\"command\": \"x\", \"max_cpu\": 401}");
    job_req r;
    jerr e = {0};
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), 0);
    assert_int_equal(jobreq_check_machine(&r, &m, &e), -1);
    assert_int_equal(strncmp(e.msg, stem, strlen(stem)), 0);
    assert_int_equal(strncmp(e.msg + strlen(stem), tail, strlen(tail)), 0);
    jobreq_free(&r);
    json_decref(b);
    /* one CPU */
    jobreq_machine one = {1, 8192, online};
    b = json_of("{\"command\": \"x\", \"max_cpu\": 101}");
    assert_int_equal(jobreq_from_json(b, &r, 0, NOW, &e), 0);
    assert_int_equal(jobreq_check_machine(&r, &one, &e), -1);
    assert_msg(&e, "max_cpu", "max_cpu: '101' must be a CPU percentage from 1 to 100: a whole number, 100 = one core; "
                              "this machine has 1 CPU", "one CPU");
    jobreq_free(&r);
    json_decref(b);
}

/* Every field a client may send, each set: written as JSON and read back, the same request. */
static const char full[] =
    "{\"command\": \"python3\", \"args\": [\"train.py\", \"--epochs\", \"3\"], \"name\": \"train\","
    " \"env\": {\"A\": \"1\", \"EMPTY\": \"\"}, \"secret_env\": {\"TOKEN\": \"s3cr3t\", \"K\": \"v\"},"
    " \"workdir\": \"/work/src\", \"network\": \"bridge\", \"max_cpu\": 150, \"max_memory_mb\": 2048,"
    " \"max_iobps\": 10485760, \"cpu_cores\": \"0-1,3\", \"max_runtime_s\": 5400,"
    " \"schedule_at\": \"2027-01-01T00:00:00.500Z\","
    " \"uploads\": [{\"path\": \"d\", \"type\": \"dir\", \"mode\": 493},"
    "             {\"path\": \"d/x.py\", \"type\": \"file\", \"mode\": 420, \"content_b64\": \"cHJpbnQoKQo=\"},"
    "             {\"path\": \"l\", \"type\": \"symlink\", \"target\": \"d/x.py\"}],"
    " \"gpu_count\": 1, \"gpu_memory_mb\": 4096, \"gpu_ids\": [\"GPU-1\"], \"gpu_caps\": \"compute,video\","
    " \"gpu_optional\": true, \"priority\": -7, \"gpu_type\": \"A100\", \"gpu_cc\": \"8.0\", \"gpu_share\": true,"
    " \"cross_numa\": false, \"preemptible\": true, \"runtime\": \"python-3.11-ml\","
    " \"volumes\": [\"data\", \"images:ro\"], \"isolation\": \"gvisor\", \"devices\": [\"nvidia.com/gpu=1\"],"
    " \"tty\": true, \"stdin\": true, \"max_netbps\": 1048576,"
    " \"after\": [{\"job\": \"a1b2c3d4\", \"state\": \"notok\"}, {\"job\": \"prep\", \"state\": \"started\"}],"
    " \"signal\": \"SIGUSR1@90\", \"singleton\": true, \"slurm_env\": true, \"hold\": true}";

static void test_round_trip(void **state)
{
    json_t *b = json_of(full);
    job_req r, back;
    jerr e = {0};
    if (jobreq_from_json(b, &r, 0, NOW, &e) < 0)
        fail_msg("refused: %s", e.msg);
    /* (gpu_all and gpu_mig exclude gpu_count: test_round_trip_gpu_kinds) */
    for (int i = 0; i < JR_N; i++)
        assert_int_equal(jobreq_has(&r, i), !jobreq_fields[i].daemon_only && i != JR_GPU_ALL && i != JR_GPU_MIG && i != JR_ARRAY &&
                                                i != JR_AFTER_ANY); /* (not with singleton: test_after_text) */
    json_t *out = jobreq_to_json(&r, JOBREQ_JSON_SECRETS);
    assert_true(json_equal(out, b));
    assert_int_equal(jobreq_from_json(out, &back, 0, NOW, &e), 0);
    /* the typed request read back is the same */
    assert_int_equal(back.has, r.has);
    assert_int_equal(back.schedule_ms, r.schedule_ms);
    assert_int_equal(back.schedule_ms, 1798761600500);
    for (int i = 0; i < JR_N; i++) {
        json_t *x = typed(&r, i), *y = typed(&back, i);
        assert_true((!x && !y) || json_equal(x, y));
        json_decref(x);
        json_decref(y);
    }
    assert_int_equal(back.nargs, 3);
    assert_string_equal(back.args[1], "--epochs");
    assert_int_equal(back.nuploads, 3);
    assert_string_equal(back.uploads[2].target, "d/x.py");
    assert_false(back.uploads[2].has_mode);
    assert_int_equal(back.uploads[2].size, -1);
    assert_string_equal(jobreq_env_get(&back, true, "TOKEN"), "s3cr3t");
    json_t *again = jobreq_to_json(&back, JOBREQ_JSON_SECRETS);
    assert_true(json_equal(again, out));
    json_decref(again);
    /* as shown: the secrets masked, nothing else changed */
    json_t *shown = jobreq_to_json(&r, 0);
    assert_json_eq(json_object_get(shown, "secret_env"), "{\"TOKEN\": \"***\", \"K\": \"***\"}", "masked");
    json_object_del(shown, "secret_env");
    json_object_del(out, "secret_env");
    assert_true(json_equal(shown, out));
    json_decref(shown);
    json_decref(out);
    jobreq_free(&back);
    jobreq_free(&r);
    assert_int_equal(r.has, 0);
    json_decref(b);
}

static void test_round_trip_gpu_kinds(void **state)
{
    static const char *const bodies[] = {
        "{\"command\": \"x\", \"gpu_mig\": \"1g.10gb\", \"gpu_caps\": \"all\", \"gpu_optional\": false}",
        "{\"command\": \"x\", \"gpu_all\": true, \"gpu_type\": \"T4\", \"cross_numa\": true}",
        "{\"command\": \"x\", \"gpu_all\": false, \"gpu_share\": false, \"env\": {}}",
    };
    static const char *const written[] = {
        "{\"command\": \"x\", \"gpu_mig\": \"1g.10gb\", \"gpu_caps\": \"all\", \"gpu_optional\": false}",
        "{\"command\": \"x\", \"gpu_all\": true, \"gpu_type\": \"T4\", \"cross_numa\": true}",
        "{\"command\": \"x\", \"gpu_all\": false, \"gpu_share\": false}",   /* no variable: no env */
    };
    for (size_t i = 0; i < 3; i++) {
        json_t *b = json_of(bodies[i]);
        job_req r, back;
        jerr e = {0};
        if (jobreq_from_json(b, &r, 0, NOW, &e) < 0)
            fail_msg("refused: %s: %s", bodies[i], e.msg);
        json_t *out = jobreq_to_json(&r, 0);
        assert_json_eq(out, written[i], bodies[i]);
        assert_int_equal(jobreq_from_json(out, &back, 0, NOW, &e), 0);
        assert_int_equal(back.has, r.has);
        json_t *again = jobreq_to_json(&back, 0);
        assert_true(json_equal(again, out));
        json_decref(again);
        json_decref(out);
        jobreq_free(&back);
        jobreq_free(&r);
        json_decref(b);
    }
}

/* ---- lookups and other surfaces' words ---------------------------------------------------- */

static void test_lookups(void **state)
{
    for (int i = 0; i < JR_N; i++) {
        const jobreq_field *f = &jobreq_fields[i];
        assert_ptr_equal(jobreq_field_by_key(f->key), f);
        if (f->flag && !strchr(f->flag, '='))
            assert_ptr_equal(by_flag(f->flag), f);
        if (f->yaml && !strchr(f->yaml, ' '))
            assert_ptr_equal(jobreq_field_by_yaml(f->yaml, f->yaml_resource), f);
        /* every sentence is a whole one, its bounds filled in */
        char acc[300];
        jobreq_accepts(f, acc, sizeof acc);
        assert_null(strstr(acc, "%l"));
        assert_null(strstr(acc, "%2"));
        assert_true(strlen(acc) > 8);
    }
    assert_ptr_equal(by_flag("--gpu"), &jobreq_fields[JR_GPU_COUNT]);
    assert_ptr_equal(jobreq_field_by_yaml("gpu_count", true), &jobreq_fields[JR_GPU_COUNT]);
    assert_ptr_equal(jobreq_field_by_yaml("max_memory", true), &jobreq_fields[JR_MAX_MEMORY_MB]);
    assert_ptr_equal(jobreq_field_by_yaml("environment", false), &jobreq_fields[JR_ENV]);
    assert_null(jobreq_field_by_yaml("max_memory", false));   /* not a key of the job itself */
    assert_null(jobreq_field_by_yaml("workdir", true));
    assert_null(jobreq_field_by_key("max_memory"));
    assert_null(jobreq_field_by_key(NULL));
    char acc[300];
    jobreq_accepts(&jobreq_fields[JR_PRIORITY], acc, sizeof acc);
    assert_string_equal(acc, "must be a whole number from -1000 to 1000 (higher runs first; default 0)");
    jobreq_accepts(&jobreq_fields[JR_PRIORITY], acc, 12);
    assert_string_equal(acc, "must be a w");
}

static void test_reword(void **state)
{
    static const struct { const char *field, *msg, *label, *want; } cases_r[] = {
        {"gpu_count", "gpu_count: '65' must be a number of GPUs from 0 to 64, or all", "--gpu",
         "--gpu: '65' must be a number of GPUs from 0 to 64, or all"},
        {"max_memory_mb", "max_memory_mb: '2' is not a size", "max_memory", "max_memory: '2' is not a size"},
        {"env", "env: 'A' is given twice", "environment", "environment: 'A' is given twice"},
        {"secret_env", "secret_env: 'A' is also set", "--secret-env", "--secret-env: 'A' is also set"},
        {"uploads[2]", "uploads[2]: must be an object", "--upload", "--upload: uploads[2]: must be an object"},
        {"uploads[0].mode", "uploads[0].mode: must be a whole number", "uploads",
         "uploads: uploads[0].mode: must be a whole number"},
        /* a message that does not start with its field keeps its words */
        {"gpu_count", "No GPUs available", "--gpu", "No GPUs available"},
        {"", "the request body must be a JSON object", "--x", "the request body must be a JSON object"},
        {"bogus", "bogus: unknown field", "--bogus", "bogus: unknown field"},
        {"gpu_countx", "gpu_countx: odd", "--gpu", "gpu_countx: odd"},
        {"gpu_count", "gpu_count: '65' must be", NULL, "gpu_count: '65' must be"},
    };
    for (size_t i = 0; i < sizeof cases_r / sizeof cases_r[0]; i++) {
        jerr e = {0};
        char out[1024];
        snprintf(e.field, sizeof e.field, "%s", cases_r[i].field);
        snprintf(e.msg, sizeof e.msg, "%s", cases_r[i].msg);
        jobreq_reword(&e, cases_r[i].label, out, sizeof out);
        assert_string_equal(out, cases_r[i].want);
    }
    /* a refusal's value is quoted as a sane piece of what was typed */
    job_req r = {0};
    jerr e = {0};
    char lng[200];
    memset(lng, 'x', sizeof lng - 1);
    lng[sizeof lng - 1] = 0;
    assert_int_equal(jobreq_set_text(&r, &jobreq_fields[JR_NETWORK], lng, NOW, &e), -1);
    assert_string_equal(e.msg, "network: longer than 32 bytes");
    assert_int_equal(jobreq_set_text(&r, &jobreq_fields[JR_PRIORITY], lng, NOW, &e), -1);
    char want[300];
    snprintf(want, sizeof want, "priority: '%.76s...' must be a whole number from -1000 to 1000 (higher runs first; "
             "default 0)", lng);
    assert_string_equal(e.msg, want);
    assert_int_equal(jobreq_set_text(&r, &jobreq_fields[JR_PRIORITY], "\x01\xff", NOW, &e), -1);
    assert_null(strchr(e.msg, '\x01'));
    jobreq_free(&r);
}

/* The request as rnx job run's flags (rnx job status --detail): every field given, in the
 * table's order, in the largest exact unit, secrets masked; read back through the table, each
 * flag gives the same field. */
static void test_to_flags(void **state)
{
    json_t *b = json_of(full);
    job_req r, back = {0};
    jerr e = {0};
    if (jobreq_from_json(b, &r, 0, NOW, &e) < 0)
        fail_msg("refused: %s", e.msg);
    json_t *flags = jobreq_to_flags(&r);
    assert_json_eq(flags,
                   "[\"--name=train\", \"--env=A=1\", \"--env=EMPTY=\", \"--secret-env=TOKEN=***\", \"--secret-env=K=***\","
                   " \"--workdir=/work/src\", \"--network=bridge\", \"--max-cpu=150\", \"--max-memory=2GB\","
                   " \"--max-iobps=10MB\", \"--cpu-cores=0-1,3\", \"--max-runtime=1h30m\","
                   " \"--schedule=2027-01-01T00:00:00.500Z\", \"--upload=d/\", \"--upload=l\", \"--gpu=1\","
                   " \"--gpu-memory=4GB\", \"--gpu-ids=GPU-1\", \"--gpu-caps=compute,video\", \"--gpu-optional\","
                   " \"--priority=-7\", \"--gpu-type=A100\", \"--gpu-cc=8.0\", \"--gpu-share\", \"--cross-numa=no\","
                   " \"--preemptible\", \"--runtime=python-3.11-ml\", \"--volume=data\", \"--volume=images:ro\", \"--isolation=gvisor\", \"--device=nvidia.com/gpu=1\","
                   " \"--tty\", \"--interactive\", \"--max-netbps=1MB\", \"--after=a1b2c3d4:notok\", \"--after=prep:started\", \"--signal=SIGUSR1@90\", \"--singleton\", \"--slurm-env\", \"--hold\"]",
                   "flags");
    /* read back as rnx reads them: the same request, but for what flags cannot carry */
    size_t i;
    json_t *v;
    jobreq_set_command(&back, "python3", &e);
    json_array_foreach(flags, i, v) {
        char *flag = strdup(json_string_value(v)), *eq = strchr(flag, '=');
        const char *value = eq ? eq + 1 : "true";
        if (eq)
            *eq = 0;
        if (!strcmp(flag, "--env") || !strcmp(flag, "--secret-env")) {
            char *kv = strchr(value, '=');
            *kv = 0;
            assert_int_equal(jobreq_add_env(&back, !strcmp(flag, "--secret-env"), value, kv + 1, &e), 0);
        } else if (strcmp(flag, "--upload")) {
            const jobreq_field *f = by_flag(flag);
            if (!f)
                fail_msg("no field has the flag %s", flag);
            if (jobreq_set_text(&back, f, value, NOW, &e) < 0)
                fail_msg("%s=%s: %s", flag, value, e.msg);
        }
        free(flag);
    }
    json_t *want = jobreq_to_json(&r, 0), *got = jobreq_to_json(&back, 0);
    json_object_del(want, "args");
    json_object_del(want, "uploads");
    if (!json_equal(want, got)) {
        char *w = json_dumps(want, JSON_COMPACT), *g = json_dumps(got, JSON_COMPACT);
        fail_msg("flags read back differ\n  want: %s\n  got:  %s", w, g);
    }
    json_decref(want);
    json_decref(got);
    json_decref(flags);
    jobreq_free(&back);
    /* units: exact or not at all; a default memory limit is not the submitter's */
    job_req u = {0};
    u.max_memory_mb = 1536, u.max_iobps = 1000, u.max_runtime_s = 90061, u.gpu_memory_mb = 1 << 20;
    u.has = 1ull << JR_MAX_MEMORY_MB | 1ull << JR_MAX_IOBPS | 1ull << JR_MAX_RUNTIME_S | 1ull << JR_GPU_MEMORY_MB;
    flags = jobreq_to_flags(&u);
    assert_json_eq(flags, "[\"--max-memory=1536MB\", \"--max-iobps=1000\", \"--max-runtime=1d1h1m1s\","
                          " \"--gpu-memory=1TB\"]", "units");
    json_decref(flags);
    u.memory_default = true;
    u.has |= 1ull << JR_MEMORY_DEFAULT;
    flags = jobreq_to_flags(&u);
    assert_json_eq(flags, "[\"--max-iobps=1000\", \"--max-runtime=1d1h1m1s\", \"--gpu-memory=1TB\"]", "default");
    json_decref(flags);
    jobreq_free(&r);
    json_decref(b);
}

/* issue 26: a refusal of a request built from flags names the flags, not the API's fields */
static void test_flag_words(void **state)
{
    (void)state;
    char s[200];
    snprintf(s, sizeof s, "devices: do not also give gpu_count, gpu_all, gpu_mig or gpu_ids");
    jobreq_flag_words(s, sizeof s);
    assert_string_equal(s, "devices: do not also give --gpu, --gpu=all, --gpu-mig or --gpu-ids");
    /* whole names only, never inside a configuration key or a longer word; a full stop ends one */
    snprintf(s, sizeof s, "gpu_counts jobs.max_cpu max_cpu.x xgpu_ids less than gpu_memory_mb. name env");
    jobreq_flag_words(s, sizeof s);
    assert_string_equal(s, "gpu_counts jobs.max_cpu max_cpu.x xgpu_ids less than --gpu-memory. name env");
    /* longer than the buffer: cut, still a string */
    char small[12];
    snprintf(small, sizeof small, "a gpu_mig b");
    jobreq_flag_words(small, sizeof small);
    assert_string_equal(small, "a --gpu-mig");
}

/* issue 26: every field with a flag of its own documents it (rnx job run --help, rnx(1) and
 * completion are made from these) */
static void test_every_flag_has_help(void **state)
{
    (void)state;
    for (int i = 0; i < JR_N; i++) {
        const jobreq_field *f = &jobreq_fields[i];
        if (!f->flag || strchr(f->flag, '='))
            continue;
        assert_false(f->daemon_only);
        assert_non_null(f->help);
        assert_true(strlen(f->help) > 8);
        /* a switch has no value; every other flag names its value */
        bool sw = f->kind == JK_BOOL && i != JR_CROSS_NUMA;
        assert_true(sw == (f->metavar == NULL));
    }
}

/* --after's text, as rnx reads --after and --dependency (Slurm's spelling): ID[:STATE] items,
 * Slurm's STATE:ID[:ID...], a comma list, repeated flags adding up, and the refusals. */
static void test_after_text(void **state)
{
    static const struct {
        const char *text, *json;
    } ok[] = {
        {"12ab", "[{\"job\": \"12ab\", \"state\": \"any\"}]"},
        {"12ab:ok", "[{\"job\": \"12ab\", \"state\": \"ok\"}]"},
        {"a:notok,b:started,c", "[{\"job\": \"a\", \"state\": \"notok\"}, {\"job\": \"b\", \"state\": \"started\"},"
                                " {\"job\": \"c\", \"state\": \"any\"}]"},
        {"afterok:1:2", "[{\"job\": \"1\", \"state\": \"ok\"}, {\"job\": \"2\", \"state\": \"ok\"}]"},
        {"afterany:7,afternotok:8", "[{\"job\": \"7\", \"state\": \"any\"}, {\"job\": \"8\", \"state\": \"notok\"}]"},
        {"after:9", "[{\"job\": \"9\", \"state\": \"started\"}]"},
        {"afterok", "[{\"job\": \"afterok\", \"state\": \"any\"}]"},   /* a job named so */
        /* task by task (an array after an array) */
        {"aftercorr:sweep", "[{\"job\": \"sweep\", \"state\": \"corr\"}]"},
        {"sweep:corr,prep:ok", "[{\"job\": \"sweep\", \"state\": \"corr\"}, {\"job\": \"prep\", \"state\": \"ok\"}]"},
    };
    const jobreq_field *f = by_flag("--after");
    assert_non_null(f);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        job_req r = {0};
        jerr e = {0};
        if (jobreq_set_text(&r, f, ok[i].text, NOW, &e) < 0)
            fail_msg("'%s' refused: %s", ok[i].text, e.msg);
        json_t *j = jobreq_to_json(&r, 0);
        assert_json_eq(json_object_get(j, "after"), ok[i].json, ok[i].text);
        /* as flags, read back: the same */
        json_t *flags = jobreq_to_flags(&r);
        job_req back = {0};
        for (size_t k = 0; k < json_array_size(flags); k++) {
            const char *fl = json_string_value(json_array_get(flags, k));
            assert_int_equal(strncmp(fl, "--after=", 8), 0);
            assert_int_equal(jobreq_set_text(&back, f, fl + 8, NOW, &e), 0);
        }
        json_t *jb = jobreq_to_json(&back, 0);
        assert_true(json_equal(jb, j));
        json_decref(jb), json_decref(flags), json_decref(j);
        jobreq_free(&back);
        jobreq_free(&r);
    }
    /* Slurm's '?': any one of them, a flag of its own in the request; its flags read back the
     * same (one --after), and a second --after, of either kind, is refused */
    {
        job_req r = {0};
        jerr e = {0};
        assert_int_equal(jobreq_set_text(&r, f, "afterok:1:2?afternotok:3?b:started", NOW, &e), 0);
        assert_true(r.after_any && jobreq_has(&r, JR_AFTER_ANY));
        json_t *j = jobreq_to_json(&r, 0);
        assert_json_eq(json_object_get(j, "after"), "[{\"job\": \"1\", \"state\": \"ok\"}, {\"job\": \"2\", "
                       "\"state\": \"ok\"}, {\"job\": \"3\", \"state\": \"notok\"}, {\"job\": \"b\", \"state\": "
                       "\"started\"}]", "any");
        assert_true(json_is_true(json_object_get(j, "after_any")));
        json_t *flags = jobreq_to_flags(&r);
        assert_json_eq(flags, "[\"--after=1:ok?2:ok?3:notok?b:started\"]", "any flags");
        job_req back = {0};
        assert_int_equal(jobreq_set_text(&back, f, "1:ok?2:ok?3:notok?b:started", NOW, &e), 0);
        json_t *jb = jobreq_to_json(&back, 0);
        assert_true(json_equal(jb, j));
        assert_int_equal(jobreq_check(&back, &e), -1); /* (no command) */
        json_decref(jb), json_decref(flags), json_decref(j);
        jobreq_free(&back);
        assert_int_equal(jobreq_set_text(&r, f, "c", NOW, &e), -1);
        assert_string_equal(e.msg, "after: a '?' list (any one of) is the job's only dependency: give it in one "
                                   "--after, without singleton");
        jobreq_free(&r);
        job_req two = {0};
        assert_int_equal(jobreq_set_text(&two, f, "c", NOW, &e), 0);
        assert_int_equal(jobreq_set_text(&two, f, "a?b", NOW, &e), -1);
        jobreq_free(&two);
        /* the rules between fields, for the API's form */
        static const struct {
            const char *json, *msg;
        } rules[] = {
            {"{\"command\": \"x\", \"after_any\": true}",
             "after_any: true says any one of after's jobs is enough, and the job waits for none; give after"},
            {"{\"command\": \"x\", \"after_any\": true, \"after\": [{\"job\": \"a\", \"state\": \"corr\"}]}",
             "after_any: after[0] is task by task (corr), which is for all of an array's tasks, not one of a list"},
            {"{\"command\": \"x\", \"name\": \"n\", \"singleton\": true, \"after_any\": true, \"after\": "
             "[{\"job\": \"a\"}]}", "after_any: not with singleton (it would be one more of the list)"},
        };
        for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
            json_t *b = json_of(rules[i].json);
            job_req x;
            jerr xe = {0};
            int rc = jobreq_from_json(b, &x, 0, NOW, &xe);
            if (rc == 0) {
                rc = jobreq_check(&x, &xe);
                jobreq_free(&x);
            }
            assert_int_equal(rc, -1);
            assert_string_equal(xe.msg, rules[i].msg);
            json_decref(b);
        }
    }
    /* Slurm's singleton: a field of its own, beside the jobs it waits for; a job named so is
     * singleton:any (how jobreq_to_flags writes one) */
    {
        job_req r = {0};
        jerr e = {0};
        assert_int_equal(jobreq_set_text(&r, f, "afterok:prep,singleton", NOW, &e), 0);
        assert_true(r.singleton && jobreq_has(&r, JR_SINGLETON));
        assert_int_equal(r.nafter, 1);
        assert_string_equal(r.after[0].job, "prep");
        jobreq_free(&r);
        job_req n = {0};
        assert_int_equal(jobreq_set_text(&n, f, "singleton:any", NOW, &e), 0);
        assert_false(n.singleton);
        assert_int_equal(n.nafter, 1);
        assert_string_equal(n.after[0].job, "singleton");
        jobreq_free(&n);
    }
    /* repeated: they add up; bounded */
    job_req r = {0};
    jerr e = {0};
    char ref[16];
    for (int i = 0; i < JOBREQ_AFTER_MAX; i++) {
        snprintf(ref, sizeof ref, "j%d", i);
        assert_int_equal(jobreq_set_text(&r, f, ref, NOW, &e), 0);
    }
    assert_int_equal(r.nafter, JOBREQ_AFTER_MAX);
    assert_int_equal(jobreq_set_text(&r, f, "one-more", NOW, &e), -1);
    assert_string_equal(e.field, "after");
    assert_string_equal(e.msg, "after: more than 64 jobs to wait for; at most 64");
    jobreq_free(&r);
    static const char *const bad[] = {"", "a:", ":ok", "a,,b", "a:ok:ok", "afterok:", "afterok:1::2", "a b", "a?b,c",
                                      "aftercorr:", "a:corr:ok", "a?b:corr", "a?singleton", "a??b", "?a",
                                      "afterok:1a2b+5", "after:1:2+10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        job_req x = {0};
        jerr xe = {0};
        if (jobreq_set_text(&x, f, bad[i], NOW, &xe) == 0)
            fail_msg("'%s' accepted", bad[i]);
        assert_string_equal(xe.field, "after");
        assert_int_equal(strncmp(xe.msg, "after: ", 7), 0);
        jobreq_free(&x);
    }
    /* over the API: the object's form, each member checked */
    static const struct {
        const char *json, *msg;
    } jbad[] = {
        {"[\"a\"]", "after[0]: must be an object {\"job\": ID, \"state\": ok|notok|any|started|corr} (job: a job's "
                    "id, number, unique id prefix or name)"},
        {"[{\"job\": \"a\", \"when\": 1}]", "after[0]: unknown field 'when'; accepted: job, state"},
        {"[{\"job\": \"a:b\"}]", "after[0].job: 'a:b' is not a job's id, id prefix or name (1 to 128 bytes, no ':', "
                                  "',', '?', space or control character)"},
        {"{}", "after: must be a list of at most 64 {job, state}: a job's id, number, unique id prefix or name, and ok, notok, "
               "any (the default), started or corr"},
    };
    for (size_t i = 0; i < sizeof jbad / sizeof jbad[0]; i++) {
        char body[300];
        snprintf(body, sizeof body, "{\"command\": \"x\", \"after\": %s}", jbad[i].json);
        json_t *b = json_of(body);
        job_req x;
        jerr xe = {0};
        assert_int_equal(jobreq_from_json(b, &x, 0, NOW, &xe), -1);
        assert_string_equal(xe.field, "after");
        assert_string_equal(xe.msg, jbad[i].msg);
        json_decref(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field_has_a_case),
        cmocka_unit_test(test_accepts_sentences_are_shown_as_written),
        cmocka_unit_test(test_after_text),
        cmocka_unit_test(test_fields_from_json),
        cmocka_unit_test(test_fields_from_text),
        cmocka_unit_test(test_text_and_json_refuse_alike),
        cmocka_unit_test(test_text_units),
        cmocka_unit_test(test_text_gpus_all_and_schedule),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_gpu_count_zero),
        cmocka_unit_test(test_command_and_args),
        cmocka_unit_test(test_unknown_and_daemon_fields),
        cmocka_unit_test(test_from_db),
        cmocka_unit_test(test_upload_rules),
        cmocka_unit_test(test_upload_links_bounded),
        cmocka_unit_test(test_check_rules),
        cmocka_unit_test(test_check_machine),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_round_trip_gpu_kinds),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_reword),
        cmocka_unit_test(test_to_flags),
        cmocka_unit_test(test_flag_words),
        cmocka_unit_test(test_every_flag_has_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
