/* common/idref.c: which object a reference names (the full id, a unique name, a unique id
 * prefix), and what each refusal says. */
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
};

static const obj *find(const char *ref, jerr *e)
{
    idref r;
    if (idref_start(&r, "job", "--name", ref, e) < 0)
        return NULL;
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
        if (idref_offer(&r, objs[i].id, objs[i].name, objs[i].state, objs[i].owner, objs[i].visible,
                        (void *)&objs[i]))
            break;
    return idref_result(&r, e);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_id_name_and_prefix),
        cmocka_unit_test(test_ambiguous),
        cmocka_unit_test(test_others_and_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
