/* Unit tests for src/core/depend_rule.c, the one rule of dependencies between jobs (rnx job run
 * --after and workflows alike): every kind of need against every state of the job depended on,
 * a deleted job, and several needs together (cancel wins, all must go). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/depend_rule.h"

static depend_seen seen(enum job_state st, bool started) { return (depend_seen){.exists = true, .started = started, .state = st}; }
static depend_need need(int kind) { return (depend_need){.kind = (uint8_t)kind}; }

static void test_each_kind_against_each_state(void **state)
{
    (void)state;
    /* W wait, G go, C cancel; states in enum order, with started as a running job has it */
    static const struct {
        int kind;
        const char *want; /* PENDING SCHEDULED QUEUED RUNNING STOPPING PREEMPTED STOPPED COMPLETED FAILED CANCELED */
    } rows[] = {
        {JA_ANY,     "WWWWWWGGGG"},
        {JA_OK,      "WWWWWWCGCC"},
        {JA_NOTOK,   "WWWWWWGCGG"},
        {JA_STARTED, "WWWGGGGGGG"},
        {JA_CORR,    "WWWWWWCGCC"}, /* as a whole (a job's, or no task of the same id): ok */
    };
    static const enum job_state states[] = {JS_PENDING, JS_SCHEDULED, JS_QUEUED, JS_RUNNING, JS_STOPPING,
                                            JS_PREEMPTED, JS_STOPPED, JS_COMPLETED, JS_FAILED, JS_CANCELED};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
            enum job_state s = states[i];
            bool started = s == JS_RUNNING || s == JS_STOPPING || s == JS_PREEMPTED;
            enum depend_verdict v = depend_rule(need(rows[r].kind), seen(s, started));
            char got = v == DEPEND_GO ? 'G' : v == DEPEND_CANCEL ? 'C' : 'W';
            if (got != rows[r].want[i])
                fail_msg("%s against %s: %c, want %c", jobreq_after_state_name(rows[r].kind), job_state_name(s), got,
                         rows[r].want[i]);
        }
}

static void test_started_before_it_ended(void **state)
{
    (void)state;
    /* a job that ended without ever starting (canceled while queued) releases `started` */
    assert_int_equal(depend_rule(need(JA_STARTED), seen(JS_CANCELED, false)), DEPEND_GO);
    assert_int_equal(depend_rule(need(JA_STARTED), seen(JS_QUEUED, false)), DEPEND_WAIT);
}

static void test_exactly_one_state(void **state)
{
    (void)state;
    depend_need failed = {.kind = DEPEND_EXACTLY, .state = JS_FAILED};
    assert_int_equal(depend_rule(failed, seen(JS_FAILED, true)), DEPEND_GO);
    assert_int_equal(depend_rule(failed, seen(JS_CANCELED, false)), DEPEND_CANCEL);
    assert_int_equal(depend_rule(failed, seen(JS_RUNNING, true)), DEPEND_WAIT);
}

static void test_deleted_cancels(void **state)
{
    (void)state;
    depend_seen gone = {.exists = false};
    for (int k = JA_ANY; k <= JA_CORR; k++)
        assert_int_equal(depend_rule(need(k), gone), DEPEND_CANCEL);
    assert_int_equal(depend_rule((depend_need){.kind = DEPEND_EXACTLY, .state = JS_COMPLETED}, gone), DEPEND_CANCEL);
}

static void test_all_together(void **state)
{
    (void)state;
    depend_need n[3] = {need(JA_OK), need(JA_ANY), need(JA_NOTOK)};
    depend_seen s[3] = {seen(JS_COMPLETED, true), seen(JS_RUNNING, true), seen(JS_FAILED, true)};
    size_t which = 99;
    assert_int_equal(depend_rule_all(n, s, 3, &which), DEPEND_WAIT);
    s[1] = seen(JS_STOPPED, true);
    assert_int_equal(depend_rule_all(n, s, 3, &which), DEPEND_GO);
    /* one that can never hold cancels, even while another still runs; which names it */
    s[1] = seen(JS_RUNNING, true);
    s[2] = seen(JS_COMPLETED, true);
    assert_int_equal(depend_rule_all(n, s, 3, &which), DEPEND_CANCEL);
    assert_int_equal(which, 2);
    assert_int_equal(depend_rule_all(n, s, 0, &which), DEPEND_GO);
}

static void test_words(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(depend_need_words(need(JA_OK), b, sizeof b), "end COMPLETED");
    assert_string_equal(depend_need_words(need(JA_NOTOK), b, sizeof b), "end FAILED, STOPPED or CANCELED");
    assert_string_equal(depend_need_words(need(JA_ANY), b, sizeof b), "end");
    assert_string_equal(depend_need_words(need(JA_STARTED), b, sizeof b), "start");
    assert_string_equal(depend_need_words(need(JA_CORR), b, sizeof b), "end COMPLETED, task by task");
    assert_string_equal(depend_need_words((depend_need){.kind = DEPEND_EXACTLY, .state = JS_FAILED}, b, sizeof b),
                        "end FAILED");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_kind_against_each_state),
        cmocka_unit_test(test_started_before_it_ended),
        cmocka_unit_test(test_exactly_one_state),
        cmocka_unit_test(test_deleted_cancels),
        cmocka_unit_test(test_all_together),
        cmocka_unit_test(test_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
