/* common/idindex.c: the objects a reference can name, found by id bucket and name hash, are
 * exactly those a scan of every object would find (same objects, same order), as objects come
 * and go and the tables double; and what idref answers from them is what it answers from a scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/idindex.h"
#include "common/idref.h"

typedef struct obj {
    char id[37];
    char name[16];
    bool has_name, in, visible;
    uint64_t seq;
} obj;

#define NOBJ 3000

static obj objs[NOBJ];
static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void make_id(char *id, bool clustered)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 36; i++)
        id[i] = hex[next() % 16];
    if (clustered) /* many ids sharing leading digits: buckets with many in them */
        memcpy(id, "1a2b3", 5);
    id[8] = id[13] = id[18] = id[23] = '-';
    id[36] = 0;
}

/* What a scan of every object in the index finds for ref: by name or id prefix, seq order. */
static size_t scan(const char *ref, obj **out)
{
    size_t n = 0, len = strlen(ref);
    for (size_t i = 0; i < NOBJ; i++)
        if (objs[i].in && ((objs[i].has_name && !strcmp(objs[i].name, ref)) || !strncmp(objs[i].id, ref, len)))
            out[n++] = &objs[i];
    return n;
}

static const char *result_of(idref *r, const char *ref, obj **offered, size_t n, int *http, char *msg)
{
    jerr e = {0};
    idref_start(r, "job", "--name", ref, &e);
    for (size_t i = 0; i < n; i++)
        if (idref_offer(r, offered[i]->id, offered[i]->has_name ? offered[i]->name : NULL, "RUNNING", false, 0,
                        offered[i]->visible, offered[i]))
            break;
    obj *o = idref_result(r, &e);
    *http = o ? 200 : e.http;
    snprintf(msg, 800, "%s", e.msg);
    return o ? o->id : "";
}

static void check_ref(idindex *x, const char *ref)
{
    static obj *want[NOBJ], *got[NOBJ];
    size_t nw = scan(ref, want), ng;
    idindex_entry *c = idindex_candidates(x, ref, &ng);
    assert_int_equal(ng, nw);
    for (size_t i = 0; i < ng; i++) {
        got[i] = c[i].obj;
        assert_ptr_equal(got[i], want[i]);
    }
    free(c);
    idref a, b;
    int ha, hb;
    /* a scan offers every object; the index only those that can match: the same answer */
    static obj *all[NOBJ];
    size_t na = 0;
    for (size_t i = 0; i < NOBJ; i++)
        if (objs[i].in)
            all[na++] = &objs[i];
    char ma[800], mb[800];
    const char *ra = result_of(&a, ref, all, na, &ha, ma), *rb = result_of(&b, ref, got, ng, &hb, mb);
    assert_string_equal(ra, rb);
    assert_int_equal(ha, hb);
    assert_string_equal(ma, mb); /* the candidates an ambiguous one lists too */
}

static void test_index_matches_a_scan(void **state)
{
    (void)state;
    idindex x = {0};
    static const char *names[] = {"train", "eval", "sweep", "1a2b", "abc", "9"};
    for (uint64_t i = 0; i < NOBJ; i++) {
        obj *o = &objs[i];
        make_id(o->id, i % 7 == 0);
        o->has_name = next() % 3 != 0;
        snprintf(o->name, sizeof o->name, "%s", names[next() % 6]);
        o->visible = next() % 5 != 0;
        o->seq = i + 1;
    }
    unsigned reserved = 0;
    for (int round = 0; round < 6; round++) {
        if (round == 3) { /* room made at once for all, with half of them in: no doubling after */
            idindex_reserve(&x, NOBJ);
            reserved = x.bits;
            assert_true(NOBJ < (size_t)2 << reserved);
        }
        /* objects come (the tables double) and go */
        for (size_t i = 0; i < NOBJ; i++) {
            obj *o = &objs[i];
            bool want = round == 0 ? i < NOBJ / 2 : next() % 3 != 0;
            if (want && !o->in)
                idindex_add(&x, o, o->id, o->has_name ? o->name : NULL, o->seq);
            else if (!want && o->in)
                idindex_del(&x, o, o->id, o->has_name ? o->name : NULL);
            o->in = want;
        }
        for (size_t i = 0; i < NOBJ; i++)
            assert_ptr_equal(idindex_get(&x, objs[i].id), objs[i].in ? &objs[i] : NULL);
        for (int k = 0; k < 300; k++) {
            const obj *o = &objs[next() % NOBJ];
            char ref[40];
            size_t len = 1 + next() % 36;
            snprintf(ref, sizeof ref, "%.*s", (int)len, o->id);
            check_ref(&x, ref);
        }
        for (size_t k = 0; k < 6; k++)
            check_ref(&x, names[k]);
        static const char *others[] = {"1a2b3", "1a2b3c", "1", "f", "1a2b3-", "zz", "1a2b3c4d-", "-", "ABC"};
        for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
            check_ref(&x, others[k]);
        if (reserved)
            assert_int_equal(x.bits, reserved);
    }
    idindex_free(&x);
    assert_null(idindex_get(&x, objs[0].id));
}

static void test_empty_and_names_that_look_like_ids(void **state)
{
    (void)state;
    idindex x = {0};
    size_t n;
    assert_null(idindex_candidates(&x, "1a", &n));
    assert_int_equal(n, 0);
    static char a_id[] = "1a2b3c4d-0000-4000-8000-000000000001", b_id[] = "9f000000-0000-4000-8000-000000000003";
    int a, b;
    idindex_add(&x, &a, a_id, "9f", 2);
    idindex_add(&x, &b, b_id, NULL, 1);
    /* "9f" is a's name and the start of b's id: both, once each, b (seq 1) first */
    idindex_entry *c = idindex_candidates(&x, "9f", &n);
    assert_int_equal(n, 2);
    assert_ptr_equal(c[0].obj, &b);
    assert_ptr_equal(c[1].obj, &a);
    free(c);
    /* by name alone: a, not b whose id starts so */
    c = idindex_named_owned(&x, "9f", 0, &n);
    assert_int_equal(n, 1);
    assert_ptr_equal(c[0].obj, &a);
    free(c);
    assert_null(idindex_named_owned(&x, "9f00", 0, &n));
    assert_int_equal(n, 0);
    /* a's name that is also its own id's start: once */
    idindex_del(&x, &a, a_id, "9f");
    idindex_add(&x, &a, a_id, "1a2", 2);
    c = idindex_candidates(&x, "1a2", &n);
    assert_int_equal(n, 1);
    free(c);
    idindex_free(&x);
}

/* By owner and name (core/jobs.c's index of jobs_named, depend.c's of waiting singletons):
 * another owner's 8,000 of a name are not in the bucket one owner's 3 of it are looked up in. */
static void test_names_by_owner(void **state)
{
    (void)state;
    enum { MANY = 8000, MINE = 3 };
    idindex x = {0};
    static char owned_ids[MANY + MINE][37];
    static int owned[MANY + MINE];
    for (int i = 0; i < MANY + MINE; i++) {
        snprintf(owned_ids[i], sizeof owned_ids[i], "%08x-0000-4000-8000-%012x", (unsigned)(i * 2654435761u), (unsigned)i);
        idindex_add_owned(&x, &owned[i], owned_ids[i], "train", i < MANY ? 4961 : 4962, (uint64_t)i);
    }
    size_t n;
    idindex_entry *c = idindex_named_owned(&x, "train", 4962, &n);
    assert_int_equal(n, MINE);
    for (size_t k = 0; k < n; k++)
        assert_true(c[k].obj >= (void *)&owned[MANY]);
    free(c);
    c = idindex_named_owned(&x, "train", 4961, &n);
    assert_int_equal(n, MANY);
    free(c);
    assert_null(idindex_named_owned(&x, "train", 0, &n));
    /* the bucket looked through for 4962's: not the other owner's thousands */
    size_t buckets = (size_t)1 << x.bits;
    for (size_t b = 0; b < buckets; b++)
        for (uint32_t i = 0; i < x.by_name[b].n; i++)
            if (x.by_name[b].v[i].owner == 4962)
                assert_true(x.by_name[b].n <= MINE + 64);
    for (int i = 0; i < MANY + MINE; i++)
        idindex_del_owned(&x, &owned[i], owned_ids[i], "train", i < MANY ? 4961 : 4962);
    assert_int_equal(x.n, 0);
    assert_null(idindex_named_owned(&x, "train", 4962, &n));
    idindex_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_matches_a_scan),
        cmocka_unit_test(test_empty_and_names_that_look_like_ids),
        cmocka_unit_test(test_names_by_owner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
