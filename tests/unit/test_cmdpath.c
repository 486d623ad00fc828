/* Unit tests for src/common/cmdpath.c: how submission reads a job's command's paths (joined to
 * the working directory, normalised, split along PATH, placed beneath directories). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/cmdpath.h"

static void test_normalize(void **state)
{
    (void)state;
    static const struct { const char *base, *path, *want; } cases[] = {
        {"/work", "./train.sh", "/work/train.sh"},     {"/work", "train.sh", "/work/train.sh"},
        {"/work", "/usr/bin/python3", "/usr/bin/python3"},
        {"/work/sub", "../run", "/work/run"},          {"/work", "../usr/bin/sh", "/usr/bin/sh"},
        {"/work", "../../../../bin/sh", "/bin/sh"},    {"/", "..", "/"},
        {"/work", "a//b/./c/", "/work/a/b/c"},         {"/", "/", "/"},
        {"/data", "bin/../tool", "/data/tool"},        {"/work", ".", "/work"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(cmdpath_normalize(cases[i].base, cases[i].path, out, sizeof out), 0);
        if (strcmp(out, cases[i].want))
            fail_msg("normalize('%s', '%s') = '%s', expected '%s'", cases[i].base, cases[i].path, out, cases[i].want);
    }
    /* too long for out: refused, not cut */
    char small[8];
    assert_int_equal(cmdpath_normalize("/work", "train.sh", small, sizeof small), -1);
    assert_int_equal(cmdpath_normalize("/", "/usr/bin", small, sizeof small), -1);
    assert_int_equal(cmdpath_normalize("/", "/usr/b", small, sizeof small), 0);
    assert_string_equal(small, "/usr/b");
}

static void test_under(void **state)
{
    (void)state;
    assert_string_equal(cmdpath_under("/work/train.sh", "/work"), "train.sh");
    assert_string_equal(cmdpath_under("/work", "/work"), "");
    assert_null(cmdpath_under("/workspace/x", "/work"));   /* a prefix that is not a directory */
    assert_null(cmdpath_under("/usr/bin/sh", "/work"));
    static const char *const dirs[] = {"/usr", "/bin", "/lib64", NULL};
    assert_true(cmdpath_in_dirs("/usr/local/bin/x", dirs));
    assert_true(cmdpath_in_dirs("/bin", dirs));
    assert_false(cmdpath_in_dirs("/binaries/x", dirs));
    assert_false(cmdpath_in_dirs("/lib/x", dirs));
}

static void test_next(void **state)
{
    (void)state;
    char dir[16];
    const char *p = "/usr/bin::/bin:";
    static const char *const want[] = {"/usr/bin", ".", "/bin", "."};
    size_t n = 0;
    while (p) {
        p = cmdpath_next(p, dir, sizeof dir);
        assert_true(n < 4);
        assert_string_equal(dir, want[n++]);
    }
    assert_int_equal(n, 4);
    assert_null(cmdpath_next(NULL, dir, sizeof dir));
    p = cmdpath_next("/a/very/long/directory:/b", dir, sizeof dir);  /* cut short, the rest kept */
    assert_int_equal(strlen(dir), sizeof dir - 1);
    assert_string_equal(p, "/b");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_under),
        cmocka_unit_test(test_next),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
