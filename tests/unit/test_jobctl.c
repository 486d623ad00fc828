/* Job control's pure pieces (docs/batch.md): where a released hold sends a job
 * (job_state_after_hold), and rnx job update's change of a stored request (jobreq_change): the
 * fields it may change, each held to the submission's schema, the rules between fields, and
 * which fields changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "common/jobreq.h"
#include "common/jobstate.h"

static const enum jobreq_id may[] = {JR_PRIORITY, JR_MAX_RUNTIME_S, JR_GPU_COUNT, JR_GPU_MEMORY_MB};
#define NOW 1800000000

static void test_after_hold(void **state)
{
    (void)state;
    assert_int_equal(job_state_after_hold(true, false, 0, 1000), JS_PENDING);
    assert_int_equal(job_state_after_hold(true, false, 5000, 1000), JS_PENDING);  /* its dependencies first */
    assert_int_equal(job_state_after_hold(false, false, 5000, 1000), JS_SCHEDULED);
    assert_int_equal(job_state_after_hold(false, false, 1000, 1000), JS_QUEUED);  /* its time has come */
    assert_int_equal(job_state_after_hold(false, false, 0, 1000), JS_QUEUED);
    /* a job that ran before (preempted, requeued) waits to run again as PREEMPTED */
    assert_int_equal(job_state_after_hold(true, true, 0, 1000), JS_PENDING);
    assert_int_equal(job_state_after_hold(false, true, 5000, 1000), JS_SCHEDULED);
    assert_int_equal(job_state_after_hold(false, true, 0, 1000), JS_PREEMPTED);
}

static void test_new_states_wait_or_hold_no_end(void **state)
{
    (void)state;
    /* neither is an end, nor in the scheduler's input */
    assert_false(job_state_terminal(JS_HELD));
    assert_false(job_state_terminal(JS_SUSPENDED));
    assert_false(job_state_waiting(JS_HELD));
    assert_false(job_state_waiting(JS_SUSPENDED));
    assert_true(job_state_terminal(JS_STOPPED));
    assert_string_equal(job_state_name(JS_HELD), "HELD");
    assert_string_equal(job_state_name(JS_SUSPENDED), "SUSPENDED");
    assert_string_equal(job_state_name(JS_CANCELED), "CANCELED");
    enum job_state s;
    assert_int_equal(job_state_parse("held", &s), 0);
    assert_int_equal(s, JS_HELD);
    assert_int_equal(job_state_parse("SUSPENDED", &s), 0);
    assert_int_equal(s, JS_SUSPENDED);
}

/* A stored request: sleep 600 on one GPU. */
static void stored(job_req *r)
{
    jerr e = {0};
    json_t *o = json_pack("{s:s,s:[s],s:i}", "command", "sleep", "args", "600", "gpu_count", 1);
    assert_int_equal(jobreq_from_json(o, r, 0, NOW, &e), 0);
    json_decref(o);
}

static int change(const job_req *cur, const char *json, job_req *out, uint64_t *changed, jerr *e)
{
    json_t *c = json_loads(json, 0, NULL);
    assert_non_null(c);
    int rc = jobreq_change(cur, c, may, sizeof may / sizeof *may, out, changed, NOW, e);
    json_decref(c);
    return rc;
}

static void test_change_applies_and_says_what_changed(void **state)
{
    (void)state;
    job_req cur, out;
    uint64_t changed;
    jerr e = {0};
    stored(&cur);
    assert_int_equal(change(&cur, "{\"priority\": 5, \"max_runtime_s\": 7200, \"gpu_count\": 1}", &out, &changed, &e), 0);
    assert_int_equal(out.priority, 5);
    assert_int_equal(out.max_runtime_s, 7200);
    assert_int_equal(out.gpu_count, 1);
    assert_string_equal(out.command, "sleep"); /* the rest as stored */
    assert_int_equal(out.nargs, 1);
    /* gpu_count was 1 already: not a change */
    assert_true(changed == ((1ull << JR_PRIORITY) | (1ull << JR_MAX_RUNTIME_S)));
    jobreq_free(&out);
    jobreq_free(&cur);
}

static void test_change_refusals(void **state)
{
    (void)state;
    job_req cur, out;
    uint64_t changed = 99;
    jerr e = {0};
    stored(&cur);
    /* a field an update may not change */
    assert_int_equal(change(&cur, "{\"command\": \"rm\"}", &out, &changed, &e), -1);
    assert_string_equal(e.field, "command");
    assert_string_equal(e.msg, "command: cannot be changed; a job's update may change priority, max_runtime_s, "
                               "gpu_count, gpu_memory_mb");
    assert_int_equal(changed, 0);
    /* the schema's own words and bounds, as at submission */
    e = (jerr){0};
    assert_int_equal(change(&cur, "{\"priority\": 5000}", &out, &changed, &e), -1);
    assert_string_equal(e.field, "priority");
    assert_non_null(strstr(e.msg, "from -1000 to 1000"));
    e = (jerr){0};
    assert_int_equal(change(&cur, "{\"max_runtime_s\": \"soon\"}", &out, &changed, &e), -1);
    assert_string_equal(e.field, "max_runtime_s");
    e = (jerr){0};
    assert_int_equal(change(&cur, "{\"gpu_count\": 65}", &out, &changed, &e), -1);
    assert_string_equal(e.field, "gpu_count");
    /* nothing, or not an object */
    e = (jerr){0};
    assert_int_equal(change(&cur, "{}", &out, &changed, &e), -1);
    assert_string_equal(e.field, "body");
    e = (jerr){0};
    assert_int_equal(change(&cur, "[1]", &out, &changed, &e), -1);
    jobreq_free(&cur);
}

static void test_change_keeps_the_rules_between_fields(void **state)
{
    (void)state;
    job_req cur, out;
    uint64_t changed;
    jerr e = {0};
    json_t *o = json_pack("{s:s,s:b}", "command", "sleep", "gpu_all", 1);
    assert_int_equal(jobreq_from_json(o, &cur, 0, NOW, &e), 0);
    json_decref(o);
    /* every GPU, and a count: refused in the words a submission's would be */
    assert_int_equal(change(&cur, "{\"gpu_count\": 2}", &out, &changed, &e), -1);
    assert_string_equal(e.msg, "gpu_all: asks for every GPU; do not also give gpu_count or gpu_ids");
    jobreq_free(&cur);
    /* a GPU's memory for a job that asks for no GPU */
    o = json_pack("{s:s}", "command", "sleep");
    assert_int_equal(jobreq_from_json(o, &cur, 0, NOW, &e), 0);
    json_decref(o);
    e = (jerr){0};
    assert_int_equal(change(&cur, "{\"gpu_memory_mb\": 4096}", &out, &changed, &e), -1);
    assert_string_equal(e.field, "gpu_memory_mb");
    jobreq_free(&cur);
}

/* rnx job update --after=none and --schedule=now: null (and [] for after) takes the field out. */
static void test_change_takes_after_and_schedule_out(void **state)
{
    (void)state;
    static const enum jobreq_id ids[] = {JR_PRIORITY, JR_AFTER, JR_SCHEDULE_AT};
    job_req cur, out;
    uint64_t changed;
    jerr e = {0};
    json_t *o = json_pack("{s:s,s:[{s:s,s:s}],s:s}", "command", "sleep", "after", "job", "abc", "state", "ok",
                          "schedule_at", "2030-01-01T00:00:00Z");
    assert_int_equal(jobreq_from_json(o, &cur, 0, NOW, &e), 0);
    json_decref(o);
    static const char *const clear[] = {"{\"after\": []}", "{\"after\": null}"};
    for (size_t i = 0; i < 2; i++) {
        json_t *c = json_loads(clear[i], 0, NULL);
        assert_int_equal(jobreq_change(&cur, c, ids, 3, &out, &changed, NOW, &e), 0);
        json_decref(c);
        assert_int_equal(out.nafter, 0);
        assert_false(jobreq_has(&out, JR_AFTER));
        assert_true(changed == 1ull << JR_AFTER);
        assert_non_null(out.schedule_at); /* the rest as stored */
        jobreq_free(&out);
    }
    json_t *c = json_loads("{\"schedule_at\": null, \"after\": [{\"job\": \"def\"}]}", 0, NULL);
    assert_int_equal(jobreq_change(&cur, c, ids, 3, &out, &changed, NOW, &e), 0);
    json_decref(c);
    assert_null(out.schedule_at);
    assert_int_equal(out.schedule_ms, 0);
    assert_int_equal(out.nafter, 1);
    assert_string_equal(out.after[0].job, "def");
    assert_int_equal(out.after[0].state, JA_ANY);
    assert_true(changed == ((1ull << JR_AFTER) | (1ull << JR_SCHEDULE_AT)));
    jobreq_free(&out);
    /* null is no value for any other field; after and schedule_at are checked as at submission */
    static const char *const bad[][2] = {{"{\"priority\": null}", "priority"},
                                         {"{\"after\": \"abc\"}", "after"},
                                         {"{\"after\": [{\"job\": \"a:b\"}]}", "after"},
                                         {"{\"schedule_at\": \"2020-01-01T00:00:00Z\"}", "schedule_at"}};
    for (size_t i = 0; i < 4; i++) {
        e = (jerr){0};
        c = json_loads(bad[i][0], 0, NULL);
        assert_int_equal(jobreq_change(&cur, c, ids, 3, &out, &changed, NOW, &e), -1);
        json_decref(c);
        assert_string_equal(e.field, bad[i][1]);
        assert_int_equal(changed, 0);
    }
    assert_non_null(strstr(e.msg, "in the past"));
    json_t *v = json_null(), *empty = json_array(), *one = json_pack("[{s:s}]", "job", "x");
    assert_true(jobreq_change_clears(JR_AFTER, v) && jobreq_change_clears(JR_AFTER, empty));
    assert_true(jobreq_change_clears(JR_SCHEDULE_AT, v));
    assert_true(jobreq_change_clears(JR_MAX_RUNTIME_S, v)); /* (Slurm's TimeLimit=UNLIMITED) */
    assert_false(jobreq_change_clears(JR_AFTER, one) || jobreq_change_clears(JR_SCHEDULE_AT, empty));
    assert_false(jobreq_change_clears(JR_MAX_RUNTIME_S, empty));
    assert_false(jobreq_change_clears(JR_PRIORITY, v));
    json_decref(v);
    json_decref(empty);
    json_decref(one);
    jobreq_free(&cur);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_after_hold),
        cmocka_unit_test(test_new_states_wait_or_hold_no_end),
        cmocka_unit_test(test_change_applies_and_says_what_changed),
        cmocka_unit_test(test_change_refusals),
        cmocka_unit_test(test_change_keeps_the_rules_between_fields),
        cmocka_unit_test(test_change_takes_after_and_schedule_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
