/* common/marklist.c: each object marked is listed once, whatever how often it is marked; one
 * removed (freed while listed) is gone; keep drops what its predicate refuses; take hands out
 * what was marked with every flag cleared, so the next turn's marks start a new list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "common/marklist.h"

typedef struct obj {
    int id;
    bool listed;
    bool gone;
} obj;

static bool not_gone(const void *o) { return !((const obj *)o)->gone; }

static int has(void **v, size_t n, const obj *o)
{
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += v[i] == o;
    return k;
}

static void test_marks_once_removes_keeps_and_takes(void **state)
{
    (void)state;
    obj o[100] = {0};
    marklist l = MARKLIST_INIT(obj, listed);
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 100; i++) {
            o[i].id = i;
            if (i % 2 == 0)
                marklist_add(&l, &o[i]);
        }
    assert_int_equal(l.n, 50);
    marklist_remove(&l, &o[10]);
    marklist_remove(&l, &o[11]); /* never listed: nothing */
    assert_int_equal(l.n, 49);
    assert_false(o[10].listed);
    o[20].gone = o[22].gone = true;
    marklist_keep(&l, not_gone);
    assert_int_equal(l.n, 47);
    size_t n;
    void **v = marklist_take(&l, &n);
    assert_int_equal(n, 47);
    assert_int_equal(l.n, 0);
    for (int i = 0; i < 100; i++) {
        bool want = i % 2 == 0 && i != 10 && i != 20 && i != 22;
        assert_int_equal(has(v, n, &o[i]), want ? 1 : 0);
        if (want)
            assert_false(o[i].listed);
    }
    free(v);
    /* a new list after the take: marked again, listed again */
    marklist_add(&l, &o[4]);
    marklist_add(&l, &o[4]);
    v = marklist_take(&l, &n);
    assert_int_equal(n, 1);
    assert_ptr_equal(v[0], &o[4]);
    free(v);
    v = marklist_take(&l, &n);
    assert_int_equal(n, 0);
    free(v);
    marklist_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marks_once_removes_keeps_and_takes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
