/* core/nsscache.c without its threads (answered on the caller's thread, as in the fuzz harness):
 * a key is found again by its hash, among thousands kept; an entry returned stays as it is for the
 * rest of the loop's turn even when every key is in use (it was overwritten by the next look-up
 * of another key: a caller reading an account's groups while asking for a group saw another
 * key's answer); a later turn reuses the entry that expired first. The loop and the core state
 * are stubs: nsscache.c uses loop_turns and the configuration's admin_group only. */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/loop.h"
#include "core/nsscache.h"
#include "core/state.h"

core_state core;
static uint64_t turns;

uint64_t loop_turns(void) { return turns; }
int loop_add(watch *w)
{
    (void)w;
    return -1;
}
void loop_del(watch *w) { (void)w; }

/* uids far above any account of the machine: each answered "no such account" */
#define BASE 3900000000u
/* the account whose directory fails once (EIO), then answers */
#define FLAKY 3800000000u

static int flaky_fails = 1, flaky_calls, base_calls;

/* The look-ups nsscache.c makes, answered here: FLAKY fails flaky_fails times, then is an
 * account; every other uid is no account. */
int getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, struct passwd **out)
{
    *out = NULL;
    if (uid != FLAKY) {
        base_calls++;
        return 0;
    }
    flaky_calls++;
    if (flaky_fails > 0) {
        flaky_fails--;
        return EIO;
    }
    if (len < 32)
        return ERANGE;
    snprintf(buf, len, "flaky");
    *pw = (struct passwd){.pw_name = buf, .pw_passwd = buf + 6, .pw_uid = uid, .pw_gid = uid, .pw_gecos = buf + 6,
                          .pw_dir = buf + 6, .pw_shell = buf + 6};
    buf[6] = 0;
    *out = pw;
    return 0;
}

static void test_keys_found_and_pinned_for_the_turn(void **state)
{
    (void)state;
    const nss_entry *first = nsscache_uid(BASE, NULL, NULL);
    assert_non_null(first);
    assert_int_equal(first->key_uid, BASE);
    assert_int_equal(first->err, ENOENT);
    for (uint32_t i = 1; i < NSSCACHE_MAX; i++) {
        const nss_entry *e = nsscache_uid(BASE + i, NULL, NULL);
        assert_non_null(e);
        assert_int_equal(e->key_uid, BASE + i);
    }
    /* every key found again, the same entry (not asked again) */
    for (uint32_t i = 0; i < NSSCACHE_MAX; i += 97)
        assert_int_equal(nsscache_uid(BASE + i, NULL, NULL)->key_uid, BASE + i);
    assert_ptr_equal(nsscache_uid(BASE, NULL, NULL), first);
    /* all 4,096 in use, and all handed out this turn: a new key is refused, never put in the
     * place of one a caller may still read */
    const nss_entry *more = nsscache_group("nsscache-test-no-such-group", NULL, NULL);
    assert_non_null(more);
    assert_int_equal(more->err, EAGAIN);
    assert_int_equal(first->kind, NSS_UID);
    assert_int_equal(first->key_uid, BASE);
    /* the next turn: the place of the one that expires first (the first asked) is taken */
    turns++;
    const nss_entry *g = nsscache_group("nsscache-test-no-such-group", NULL, NULL);
    assert_non_null(g);
    assert_int_equal(g->kind, NSS_GROUP);
    assert_string_equal(g->key, "nsscache-test-no-such-group");
    assert_int_equal(g->err, ENOENT);
    assert_ptr_equal(nsscache_group("nsscache-test-no-such-group", NULL, NULL), g);
    /* and the key it held is no longer found there: asked anew (its own place, in a turn after) */
    turns++;
    const nss_entry *again = nsscache_uid(BASE, NULL, NULL);
    assert_non_null(again);
    assert_int_equal(again->kind, NSS_UID);
    assert_int_equal(again->key_uid, BASE);
    assert_int_equal(nsscache_group("nsscache-test-no-such-group", NULL, NULL)->kind, NSS_GROUP);
}

/* A failed look-up asked after a job began to wait is not taken past its time, as an answer
 * would be (nsscache_accept_since): it is asked again. (Before, a job whose owner's look-up
 * failed once held that failure for as long as it waited, never asked again.) */
static void test_a_failure_is_asked_again_for_a_waiting_job(void **state)
{
    (void)state;
    turns++;
    uint64_t since = nsscache_gen();
    uint64_t was = nsscache_accept_since(since);
    const nss_entry *e = nsscache_uid(FLAKY, NULL, NULL);
    assert_non_null(e);
    assert_int_equal(e->err, EIO);
    assert_int_equal(flaky_calls, 1);
    sleep(6); /* past a failure's 5 s */
    turns++;
    e = nsscache_uid(FLAKY, NULL, NULL);
    assert_non_null(e);
    assert_int_equal(flaky_calls, 2);
    assert_int_equal(e->err, 0);
    assert_string_equal(e->name, "flaky");
    nsscache_accept_since(was);
}

/* An answer handed out in a turn stays the answer for the rest of that turn, though its time
 * runs out meanwhile (a request's route that runs longer than what was left of it: a 1 MiB
 * workflow under the sanitizers was refused "could not be looked up now"); the next turn asks
 * again. */
static void test_an_answer_handed_out_holds_for_the_rest_of_its_turn(void **state)
{
    (void)state;
    turns++;
    const nss_entry *e = nsscache_uid(BASE - 1, NULL, NULL);
    assert_non_null(e);
    assert_int_equal(e->err, ENOENT);
    int calls = base_calls;
    sleep(6); /* past a "no such account"'s 5 s, in the same turn */
    assert_ptr_equal(nsscache_uid(BASE - 1, NULL, NULL), e);
    assert_int_equal(e->err, ENOENT);
    assert_int_equal(base_calls, calls);
    turns++;
    e = nsscache_uid(BASE - 1, NULL, NULL);
    assert_non_null(e);
    assert_int_equal(base_calls, calls + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_found_and_pinned_for_the_turn),
        cmocka_unit_test(test_a_failure_is_asked_again_for_a_waiting_job),
        cmocka_unit_test(test_an_answer_handed_out_holds_for_the_rest_of_its_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
