/* common/idref.c: which object a reference names (the full id, a number, a unique name, a
 * unique id prefix), and what each refusal says. */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/idref.h"

typedef struct obj {
    const char *id, *name, *state;
    bool visible;
    unsigned owner;
} obj;

static const obj objs[] = {
    {"1a2b3c4d-0000-4000-8000-000000000001", "train", "RUNNING", true, 0},
    {"1a2b3c4d-0000-4000-8000-000000000002", "eval", "QUEUED", true, 0},
    {"9f000000-0000-4000-8000-000000000003", "dup", "COMPLETED", true, 0},
    {"9e000000-0000-4000-8000-000000000004", "dup", "FAILED", true, 0},
    {"77777777-0000-4000-8000-000000000005", "secret", "RUNNING", false, 0},
    /* a name that looks like a prefix of another of its owner's ids: the name wins */
    {"abcdef00-0000-4000-8000-000000000006", "9f", "RUNNING", true, 0},
    /* another owner's job named as the start of uid 0's ids (a decoy for one who sees both) */
    {"c0ffee00-0000-4000-8000-000000000007", "1a2b", "QUEUED", true, 1000},
    {"c0ffee00-0000-4000-8000-000000000008", "d00d", "QUEUED", true, 1000},
    {"d00d0000-0000-4000-8000-000000000009", "own", "QUEUED", true, 1000},
    /* named as another's number (objs[2]'s is 3), and as its own (11) */
    {"e0000000-0000-4000-8000-000000000010", "3", "QUEUED", true, 0},
    {"e1000000-0000-4000-8000-000000000011", "11", "QUEUED", true, 0},
    /* its id starts as numbers 14 (given, since deleted) and 140000 (never given) read */
    {"14000000-0000-4000-8000-000000000012", "x", "QUEUED", true, 0},
};
#define NOBJS (sizeof objs / sizeof objs[0])

static bool ended(const char *state) { return !strcmp(state, "COMPLETED") || !strcmp(state, "FAILED"); }

/* ref among objs, offered in order; with numbers, as jobs_find finds jobs: objs[i]'s number is
 * i + 1, offered before the others, and the five numbers after theirs were given to objects
 * deleted since. */
static const obj *resolve(const char *ref, bool numbers, jerr *e)
{
    idref r;
    if (idref_start(&r, "job", "--name", ref, e) < 0)
        return NULL;
    unsigned long long n;
    if (numbers && idref_number(&r, &n) && n <= NOBJS + 5) {
        idref_number_given(&r);
        if (n >= 1 && n <= NOBJS)
            idref_offer_number(&r, objs[n - 1].id, objs[n - 1].state, objs[n - 1].visible, (void *)&objs[n - 1]);
    }
    for (size_t i = 0; i < NOBJS; i++)
        if (idref_offer(&r, objs[i].id, objs[i].name, objs[i].state, ended(objs[i].state), objs[i].owner,
                        objs[i].visible, (void *)&objs[i]))
            break;
    return idref_result(&r, e);
}

static const obj *find(const char *ref, jerr *e) { return resolve(ref, false, e); }
static const obj *find_numbered(const char *ref, jerr *e) { return resolve(ref, true, e); }

static void test_numbers(void **state)
{
    jerr e = {0};
    assert_ptr_equal(find_numbered("2", &e), &objs[1]);
    /* number 9 (another owner's) over the id prefix 9 of objs[2] and objs[3]: a number is not
     * chosen, so no one can aim it at another's short id */
    assert_ptr_equal(find_numbered("9", &e), &objs[8]);
    assert_ptr_equal(find_numbered("1", &e), &objs[0]);
    /* named as its own number: not two of them */
    assert_ptr_equal(find_numbered("11", &e), &objs[10]);
    /* the name is still a name, and the id still the id */
    assert_ptr_equal(find_numbered("train", &e), &objs[0]);
    assert_ptr_equal(find_numbered("9e", &e), &objs[3]);
    assert_ptr_equal(find_numbered("1a2b3c4d-0000-4000-8000-000000000002", &e), &objs[1]);
    /* a number and another's name */
    assert_null(find_numbered("3", &e));
    assert_int_equal(e.http, 409);
    assert_int_equal(e.code, EEXIST);
    assert_string_equal(e.msg, "'3' is the number of job 9f000000 (COMPLETED) and the name of job e0000000 (QUEUED); "
                               "give the one's full id");
    /* one the asker may not see is no number at all: the name or prefix decides, and a miss says
     * what was looked for */
    memset(&e, 0, sizeof e);
    assert_null(find_numbered("5", &e));
    assert_int_equal(e.http, 404);
    assert_string_equal(e.msg, "no job matches '5' (by number or name; for an id that starts with these digits, give "
                               "more of it)");
    memset(&e, 0, sizeof e);
    assert_null(find_numbered("18", &e));
    assert_string_equal(e.msg, "no job matches '18' (by number, id prefix or name)"); /* (never given) */
    /* a number given (its object deleted, or another user's) is that number, not the start of
     * the asker's own id; one never given may be */
    memset(&e, 0, sizeof e);
    assert_null(find_numbered("14", &e));
    assert_int_equal(e.http, 404);
    assert_ptr_equal(find_numbered("140000", &e), &objs[11]);
    memset(&e, 0, sizeof e);
    assert_null(find_numbered("secret", &e));
    assert_string_equal(e.msg, "no job named 'secret' (a job is given by its id, its number, a unique prefix of it, or "
                               "its --name)");
    /* without numbers (workflows), 3 is a name */
    assert_ptr_equal(find("3", &e), &objs[9]);
    memset(&e, 0, sizeof e);
    assert_null(find("13", &e));
    assert_string_equal(e.msg, "no job matches '13' (by id, id prefix or name)");
}

static void test_what_is_a_number(void **state)
{
    jerr e = {0};
    idref r;
    unsigned long long n = 7;
    static const struct {
        const char *ref;
        bool numeric;
        unsigned long long n;
    } cases[] = {
        {"1", true, 1},
        {"42", true, 42},
        {"9999999999999999999", true, 9999999999999999999ull}, /* 19 digits */
        {"10000000000000000000", false, 0},                    /* 20: a prefix or a name */
        {"042", false, 0},                                     /* a leading 0: an id's prefix */
        {"0", false, 0},
        {"4a", false, 0},
        {"42_7", false, 0}, /* an array's task: the array's part is looked up on its own */
        {"-1", false, 0},
        {" 42", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(idref_start(&r, "job", "--name", cases[i].ref, &e), 0);
        assert_int_equal(idref_number(&r, &n), cases[i].numeric);
        if (cases[i].numeric)
            assert_true(n == cases[i].n);
    }
}

static void test_full_id_name_and_prefix(void **state)
{
    jerr e = {0};
    assert_ptr_equal(find("1a2b3c4d-0000-4000-8000-000000000002", &e), &objs[1]);
    assert_ptr_equal(find("train", &e), &objs[0]);
    assert_ptr_equal(find("9e", &e), &objs[3]);
    assert_ptr_equal(find("9f", &e), &objs[5]); /* the name shadows the prefix of objs[2] */
}

static void test_ambiguous(void **state)
{
    jerr e = {0};
    assert_null(find("dup", &e));
    assert_int_equal(e.http, 409);
    assert_int_equal(e.code, EEXIST);
    assert_string_equal(e.msg, "'dup' names 2 jobs: 9f000000 (COMPLETED), 9e000000 (FAILED); give one's id (or a "
                               "unique prefix of it)");
    memset(&e, 0, sizeof e);
    assert_null(find("1a2b", &e));
    assert_int_equal(e.http, 409);
    memset(&e, 0, sizeof e);
    assert_null(find("1a2b3c", &e));
    assert_string_equal(e.msg, "'1a2b3c' matches 2 jobs: 1a2b3c4d (RUNNING), 1a2b3c4d (QUEUED); type more of the id");
    /* uid 1000's job named 1a2b, the start of uid 0's ids: not the name's to win */
    memset(&e, 0, sizeof e);
    assert_null(find("1a2b", &e));
    assert_int_equal(e.http, 409);
    assert_int_equal(e.code, EEXIST);
    assert_string_equal(e.msg, "'1a2b' is the name of job c0ffee00 (QUEUED) and the start of the id of 1a2b3c4d "
                               "(RUNNING), 1a2b3c4d (QUEUED); give the one's full id (or more of it)");
    /* the same owner's name and id: the name, as docker has it */
    assert_ptr_equal(find("d00d", &e), &objs[7]);
}

static void test_others_and_none(void **state)
{
    jerr e = {0};
    /* another user's: only its full id says so; its name and prefix match nothing */
    assert_null(find("77777777-0000-4000-8000-000000000005", &e));
    assert_int_equal(e.http, 403);
    assert_non_null(strstr(e.msg, "is another user's job"));
    memset(&e, 0, sizeof e);
    assert_null(find("7777", &e));
    assert_int_equal(e.http, 404);
    assert_string_equal(e.msg, "no job matches '7777' (by id, id prefix or name)");
    memset(&e, 0, sizeof e);
    assert_null(find("secret", &e));
    assert_int_equal(e.http, 404);
    assert_string_equal(e.msg, "no job named 'secret' (a job is given by its id, a unique prefix of it, or its --name)");
    memset(&e, 0, sizeof e);
    assert_null(find("", &e));
    assert_int_equal(e.http, 404);
}

/* Jobs kept once they end, sharing names with those that run (idref_want). */
static const obj kept[] = {
    {"a0000000-0000-4000-8000-000000000001", "x", "COMPLETED", true, 0},
    {"a1000000-0000-4000-8000-000000000002", "x", "RUNNING", true, 0},
    {"b0000000-0000-4000-8000-000000000003", "two", "RUNNING", true, 0},
    {"b1000000-0000-4000-8000-000000000004", "two", "QUEUED", true, 0},
    {"b2000000-0000-4000-8000-000000000005", "two", "FAILED", true, 0},
    {"c0000000-0000-4000-8000-000000000006", "gone", "COMPLETED", true, 0},
    {"c1000000-0000-4000-8000-000000000007", "gone", "FAILED", true, 0},
    {"c2000000-0000-4000-8000-000000000008", "once", "COMPLETED", true, 0},
    /* an ended job named as the start of a running one's id: the name still shadows the prefix */
    {"d0000000-0000-4000-8000-000000000009", "e0", "COMPLETED", true, 0},
    {"e0000000-0000-4000-8000-000000000010", "y", "RUNNING", true, 0},
    {"f0000000-0000-4000-8000-000000000011", "other", "RUNNING", false, 0},
};

static const obj *find_for(const char *ref, enum idref_want want, jerr *e)
{
    idref r;
    memset(e, 0, sizeof *e);
    if (idref_start(&r, "job", "--name", ref, e) < 0)
        return NULL;
    idref_want(&r, want);
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (idref_offer(&r, kept[i].id, kept[i].name, kept[i].state, ended(kept[i].state), kept[i].owner,
                        kept[i].visible, (void *)&kept[i]))
            break;
    return idref_result(&r, e);
}

static void test_live_and_ended(void **state)
{
    jerr e;
    /* reading: the name is ambiguous, as before */
    assert_null(find_for("x", IDREF_ANY, &e));
    assert_string_equal(e.msg, "'x' names 2 jobs: a0000000 (COMPLETED), a1000000 (RUNNING); give one's id (or a "
                               "unique prefix of it)");
    /* kill x: the running one; delete x: the ended one */
    assert_ptr_equal(find_for("x", IDREF_LIVE, &e), &kept[1]);
    assert_ptr_equal(find_for("x", IDREF_ENDED, &e), &kept[0]);
    /* two not ended: both listed, the ended one counted */
    assert_null(find_for("two", IDREF_LIVE, &e));
    assert_int_equal(e.http, 409);
    assert_int_equal(e.code, EEXIST);
    assert_string_equal(e.msg, "'two' names 2 jobs not ended (and 1 ended): b0000000 (RUNNING), b1000000 (QUEUED); "
                               "give one's id (or a unique prefix of it)");
    assert_ptr_equal(find_for("two", IDREF_ENDED, &e), &kept[4]);
    /* none not ended: each ended one, with its state */
    assert_null(find_for("gone", IDREF_LIVE, &e));
    assert_int_equal(e.http, 409);
    assert_int_not_equal(e.code, EEXIST); /* "conflict", as the action's refusal of one: no id helps */
    assert_string_equal(e.msg, "'gone' names 2 jobs, each of which has ended: c0000000 (COMPLETED), c1000000 "
                               "(FAILED); this acts only on a job that has not ended");
    assert_ptr_equal(find_for("y", IDREF_ENDED, &e), &kept[9]); /* one alone: its action says why not */
    /* one alone that ended: it (the action says "job ... is COMPLETED; only a running job can be killed") */
    assert_ptr_equal(find_for("once", IDREF_LIVE, &e), &kept[7]);
    /* a name of an ended job still shadows the prefix of a running one */
    assert_ptr_equal(find_for("e0", IDREF_LIVE, &e), &kept[8]);
    /* a full id and a prefix are not narrowed */
    assert_ptr_equal(find_for("a0000000-0000-4000-8000-000000000001", IDREF_LIVE, &e), &kept[0]);
    assert_ptr_equal(find_for("a0", IDREF_LIVE, &e), &kept[0]);
    assert_ptr_equal(find_for("a1", IDREF_ENDED, &e), &kept[1]);
    /* another's (not visible) is nothing, whatever is wanted */
    assert_null(find_for("other", IDREF_LIVE, &e));
    assert_int_equal(e.http, 404);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_id_name_and_prefix),
        cmocka_unit_test(test_ambiguous),
        cmocka_unit_test(test_others_and_none),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_what_is_a_number),
        cmocka_unit_test(test_live_and_ended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
