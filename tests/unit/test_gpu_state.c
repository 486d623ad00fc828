#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gpu/gpu_state.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

#define AV GS_AVAILABLE
#define SC GS_SCRUBBING
#define DR GS_DRAINING
#define RS GS_RESETTING
#define DG GS_DEGRADED
#define OF GS_OFFLINE

/* The transition table as docs/health.md describes it, written out again: a change to
 * src/gpu/gpu_state.c that is not made here too fails. */
static const struct {
    enum gpu_state from;
    enum gpu_event ev;
    enum gpu_state to;
} rows[] = {
    {AV, GE_SCRUB_START, SC}, {DR, GE_SCRUB_START, DR}, {RS, GE_SCRUB_START, RS}, {OF, GE_SCRUB_START, OF},
    {SC, GE_SCRUB_OK, AV},    {DR, GE_SCRUB_OK, DR},    {RS, GE_SCRUB_OK, RS},    {OF, GE_SCRUB_OK, OF},
    {SC, GE_SCRUB_FAIL, DG},  {AV, GE_SCRUB_FAIL, DG},  {DR, GE_SCRUB_FAIL, DG},  {RS, GE_SCRUB_FAIL, RS},
    {OF, GE_SCRUB_FAIL, OF},

    {AV, GE_ADMIN_DRAIN, DR}, {SC, GE_ADMIN_DRAIN, DR}, {DR, GE_ADMIN_DRAIN, DR}, {DG, GE_ADMIN_DRAIN, DR},
    {AV, GE_ADMIN_OFFLINE, OF}, {SC, GE_ADMIN_OFFLINE, OF}, {DR, GE_ADMIN_OFFLINE, OF},
    {RS, GE_ADMIN_OFFLINE, OF}, {DG, GE_ADMIN_OFFLINE, OF}, {OF, GE_ADMIN_OFFLINE, OF},
    {AV, GE_ADMIN_ONLINE, AV}, {SC, GE_ADMIN_ONLINE, SC}, {DR, GE_ADMIN_ONLINE, AV},
    {RS, GE_ADMIN_ONLINE, AV}, {DG, GE_ADMIN_ONLINE, AV}, {OF, GE_ADMIN_ONLINE, AV},

    {AV, GE_XID_DRAIN_RESET, RS}, {SC, GE_XID_DRAIN_RESET, RS}, {DR, GE_XID_DRAIN_RESET, RS},
    {DG, GE_XID_DRAIN_RESET, RS}, {OF, GE_XID_DRAIN_RESET, OF},
    {AV, GE_XID_RESET, RS}, {SC, GE_XID_RESET, RS}, {DR, GE_XID_RESET, RS}, {RS, GE_XID_RESET, RS},
    {DG, GE_XID_RESET, RS}, {OF, GE_XID_RESET, OF},
    {AV, GE_XID_OFFLINE, OF}, {SC, GE_XID_OFFLINE, OF}, {DR, GE_XID_OFFLINE, OF}, {RS, GE_XID_OFFLINE, OF},
    {DG, GE_XID_OFFLINE, OF}, {OF, GE_XID_OFFLINE, OF},

    {RS, GE_RESET_DONE, AV}, {AV, GE_RESET_DONE, AV}, {SC, GE_RESET_DONE, SC}, {DR, GE_RESET_DONE, DR},
    {DG, GE_RESET_DONE, DG}, {OF, GE_RESET_DONE, OF},
    {RS, GE_RESET_FAILED, OF}, {AV, GE_RESET_FAILED, OF}, {SC, GE_RESET_FAILED, OF}, {DR, GE_RESET_FAILED, OF},
    {DG, GE_RESET_FAILED, OF}, {OF, GE_RESET_FAILED, OF},

    {AV, GE_RESTORE_DRAINING, DR}, {AV, GE_RESTORE_RESETTING, RS}, {AV, GE_RESTORE_OFFLINE, OF},
    {AV, GE_RESTORE_DEGRADED, DG},
};

static int row_of(enum gpu_state s, enum gpu_event ev)
{
    for (size_t i = 0; i < N(rows); i++)
        if (rows[i].from == s && rows[i].ev == ev)
            return (int)i;
    return -1;
}

/* Every row is accepted with its next state; every other (state, event) pair is refused and
 * leaves *next alone. The shown-only states (allocated, shared, unusable) accept nothing. */
static void test_every_pair(void **state)
{
    int accepted = 0;
    for (int s = 0; s < GS_COUNT; s++)
        for (int ev = 0; ev < GE_COUNT; ev++) {
            enum gpu_state next = GS_COUNT;
            int rc = gpu_state_next((enum gpu_state)s, (enum gpu_event)ev, &next);
            int r = row_of((enum gpu_state)s, (enum gpu_event)ev);
            if (r >= 0) {
                if (rc != 0)
                    fail_msg("%s + %s refused; the table says %s", gpu_state_name((enum gpu_state)s),
                             gpu_event_name((enum gpu_event)ev), gpu_state_name(rows[r].to));
                assert_int_equal(next, rows[r].to);
                accepted++;
            } else {
                if (rc != -1)
                    fail_msg("%s + %s accepted (-> %s); not in the table", gpu_state_name((enum gpu_state)s),
                             gpu_event_name((enum gpu_event)ev), gpu_state_name(next));
                assert_int_equal(next, GS_COUNT);
            }
        }
    assert_int_equal(accepted, N(rows));
    /* no row twice */
    for (size_t i = 0; i < N(rows); i++)
        assert_int_equal(row_of(rows[i].from, rows[i].ev), (int)i);
    /* out of range */
    enum gpu_state next;
    assert_int_equal(gpu_state_next(GS_COUNT, GE_ADMIN_ONLINE, &next), -1);
    assert_int_equal(gpu_state_next(GS_AVAILABLE, GE_COUNT, &next), -1);
}

/* What the design promises, whatever the table's details: admins can always take a GPU
 * offline and bring it back; nothing but an admin brings an offline GPU back in service;
 * a failed reset never leaves a GPU in service; a failed scrub never makes one available. */
static void test_invariants(void **state)
{
    static const enum gpu_state service[] = {GS_AVAILABLE, GS_SCRUBBING, GS_DRAINING,
                                             GS_RESETTING, GS_DEGRADED,  GS_OFFLINE};
    for (size_t i = 0; i < N(service); i++) {
        enum gpu_state n;
        assert_int_equal(gpu_state_next(service[i], GE_ADMIN_OFFLINE, &n), 0);
        assert_int_equal(n, GS_OFFLINE);
        assert_int_equal(gpu_state_next(service[i], GE_ADMIN_ONLINE, &n), 0);
        assert_true(n == GS_AVAILABLE || n == GS_SCRUBBING);
        assert_int_equal(gpu_state_next(service[i], GE_XID_OFFLINE, &n), 0);
        assert_int_equal(n, GS_OFFLINE);
        assert_int_equal(gpu_state_next(service[i], GE_RESET_FAILED, &n), 0);
        assert_int_equal(n, GS_OFFLINE);
        if (gpu_state_next(service[i], GE_SCRUB_FAIL, &n) == 0)
            assert_true(n != GS_AVAILABLE && n != GS_SCRUBBING);
    }
    for (int ev = 0; ev < GE_COUNT; ev++) {
        enum gpu_state n;
        if (ev != GE_ADMIN_ONLINE && gpu_state_next(GS_OFFLINE, (enum gpu_event)ev, &n) == 0)
            assert_int_equal(n, GS_OFFLINE);
    }
}

static void test_names(void **state)
{
    static const char *const want[GS_COUNT] = {"available", "allocated", "shared",   "scrubbing", "draining",
                                               "resetting", "degraded",  "offline", "unusable"};
    for (int s = 0; s < GS_COUNT; s++) {
        assert_string_equal(gpu_state_name((enum gpu_state)s), want[s]);
        enum gpu_state back = GS_COUNT;
        assert_int_equal(gpu_state_parse(want[s], &back), 0);
        assert_int_equal(back, s);
    }
    enum gpu_state x = GS_COUNT;
    assert_int_equal(gpu_state_parse("in service", &x), -1);
    assert_int_equal(gpu_state_parse("Draining", &x), -1);
    assert_int_equal(gpu_state_parse("", &x), -1);
    assert_int_equal(gpu_state_parse(NULL, &x), -1);
    assert_int_equal(x, GS_COUNT);
    assert_string_equal(gpu_state_name(GS_COUNT), "unknown");
    for (int ev = 0; ev < GE_COUNT; ev++) {
        assert_non_null(gpu_event_name((enum gpu_event)ev));
        assert_string_not_equal(gpu_event_name((enum gpu_event)ev), "unknown event");
    }
}

static void test_admin_actions(void **state)
{
    static const struct { const char *name; enum gpu_event ev; } a[] = {
        {"drain", GE_ADMIN_DRAIN}, {"offline", GE_ADMIN_OFFLINE}, {"online", GE_ADMIN_ONLINE}};
    for (size_t i = 0; i < N(a); i++) {
        enum gpu_event ev = GE_COUNT;
        assert_int_equal(gpu_admin_action_parse(a[i].name, &ev), 0);
        assert_int_equal(ev, a[i].ev);
        assert_string_equal(gpu_admin_action_name(ev), a[i].name);
    }
    enum gpu_event ev = GE_COUNT;
    assert_int_equal(gpu_admin_action_parse("reset", &ev), -1);
    assert_int_equal(gpu_admin_action_parse("available", &ev), -1);
    assert_int_equal(gpu_admin_action_parse(NULL, &ev), -1);
    assert_int_equal(ev, GE_COUNT);
    assert_null(gpu_admin_action_name(GE_XID_RESET));
}

/* The name the API shows, for combinations of service state, holders, problem and heat. */
static void test_report(void **state)
{
    enum { NONE, EXCL, SHARE };
    static const struct {
        enum gpu_state service;
        int holders;
        bool problem, hot;
        enum gpu_state shown;
        bool takes_jobs, out_of_service;
    } cases[] = {
        {GS_AVAILABLE, NONE, false, false, GS_AVAILABLE, true, false},
        {GS_AVAILABLE, EXCL, false, false, GS_ALLOCATED, true, false},
        {GS_AVAILABLE, SHARE, false, false, GS_SHARED, true, false},
        {GS_AVAILABLE, NONE, false, true, GS_AVAILABLE, false, false},   /* hot: a flag, not a state */
        {GS_AVAILABLE, EXCL, false, true, GS_ALLOCATED, false, false},
        {GS_AVAILABLE, SHARE, false, true, GS_SHARED, false, false},
        {GS_AVAILABLE, NONE, true, false, GS_UNUSABLE, false, false},    /* a problem shows first */
        {GS_AVAILABLE, EXCL, true, false, GS_UNUSABLE, false, false},
        {GS_SCRUBBING, NONE, false, false, GS_SCRUBBING, false, false},
        {GS_SCRUBBING, NONE, false, true, GS_SCRUBBING, false, false},
        {GS_SCRUBBING, SHARE, false, false, GS_SHARED, false, false},    /* holders before the scrub */
        {GS_SCRUBBING, NONE, true, false, GS_UNUSABLE, false, false},
        {GS_DRAINING, NONE, false, false, GS_DRAINING, false, true},
        {GS_DRAINING, EXCL, false, false, GS_DRAINING, false, true},     /* its running job finishes */
        {GS_DRAINING, SHARE, false, true, GS_DRAINING, false, true},
        {GS_DRAINING, EXCL, true, false, GS_UNUSABLE, false, true},      /* state_reason still says why */
        {GS_RESETTING, EXCL, false, false, GS_RESETTING, false, true},
        {GS_RESETTING, NONE, false, false, GS_RESETTING, false, true},
        {GS_DEGRADED, NONE, false, false, GS_DEGRADED, false, true},
        {GS_DEGRADED, NONE, false, true, GS_DEGRADED, false, true},
        {GS_OFFLINE, NONE, false, false, GS_OFFLINE, false, true},
        {GS_OFFLINE, EXCL, false, false, GS_OFFLINE, false, true},       /* --force: its jobs are stopping */
        {GS_OFFLINE, NONE, true, true, GS_UNUSABLE, false, true},
    };
    for (size_t i = 0; i < N(cases); i++) {
        gpu_report r = gpu_state_report(cases[i].service, cases[i].holders == EXCL,
                                        cases[i].holders == SHARE ? 2 : 0, cases[i].problem, cases[i].hot);
        if (r.state != cases[i].shown || r.takes_jobs != cases[i].takes_jobs ||
            r.out_of_service != cases[i].out_of_service)
            fail_msg("case %zu: %s, takes_jobs %d, out_of_service %d; want %s, %d, %d", i, gpu_state_name(r.state),
                     r.takes_jobs, r.out_of_service, gpu_state_name(cases[i].shown), cases[i].takes_jobs,
                     cases[i].out_of_service);
    }
}

/* Hot above the limit, cool again 5 degrees below it; an unknown temperature changes nothing. */
static void test_hot(void **state)
{
    static const struct { bool was; int t; bool now; } cases[] = {
        {false, 85, false}, {false, 86, true}, {false, -1, false}, {false, 0, false},
        {true, 86, true},   {true, 85, true},  {true, 81, true},   {true, 80, false},
        {true, 20, false},  {true, -1, true},  {true, 0, false},
    };
    for (size_t i = 0; i < N(cases); i++)
        if (gpu_state_hot(cases[i].was, cases[i].t, 85) != cases[i].now)
            fail_msg("was hot %d, %d C: want %d", cases[i].was, cases[i].t, cases[i].now);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_pair), cmocka_unit_test(test_invariants), cmocka_unit_test(test_names),
        cmocka_unit_test(test_admin_actions), cmocka_unit_test(test_report), cmocka_unit_test(test_hot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
