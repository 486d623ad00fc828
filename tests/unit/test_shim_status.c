/* Unit tests for src/exec/shim_status.c: the shim's records of a job's run. The start line and
 * then the end record replace each other in the job directory's attribute, or, where it cannot
 * be set (here: a test not run as root, or told to use files), in the files of their names; the
 * reader takes each kind from wherever it is, files of a shim from before included. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "exec/shim.h"
#include "exec/shim_status.h"
#include "scratch_dir.h"

#define END "{\"end_reason\":\"exit\",\"exit_code\":3,\"started_at_ms\":10,\"ended_at_ms\":20," \
            "\"usage\":{\"cpu_ns\":5,\"memory_peak_bytes\":6,\"io_read_bytes\":7,\"io_write_bytes\":8}}"

typedef scratch_dir fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || scratch_dir_make(f, "test_shim_status") < 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    static const char *const names[] = {SHIM_STARTED, SHIM_STATUS};
    scratch_dir_remove(*state, names, 2);
    free(*state);
    return 0;
}

static bool exists(const fixture *f, const char *name)
{
    return faccessat(f->dirfd, name, F_OK, 0) == 0;
}

/* Whether this process can set the attribute here (root, a file system with trusted ones). */
static bool attribute_works(const fixture *f)
{
    if (fsetxattr(f->dirfd, SHIM_RECORD_XATTR, "x", 1, 0) < 0)
        return false;
    fremovexattr(f->dirfd, SHIM_RECORD_XATTR);
    return true;
}

static void run_through(fixture *f, bool files)
{
    bool in_files = files;
    char err[300] = "";
    assert_int_equal(shim_record_write(f->dirfd, f->dir, SHIM_STARTED, "42 1000\n", 8, &in_files, err, sizeof err),
                     0);
    char *s = shim_record_read(f->dir, SHIM_STARTED);
    assert_non_null(s);
    assert_string_equal(s, "42 1000\n");
    free(s);
    shim_status st;
    assert_int_equal(shim_status_read(f->dir, &st), -1); /* a start line is no end */
    assert_int_equal(shim_record_write(f->dirfd, f->dir, SHIM_STATUS, END, strlen(END), &in_files, err, sizeof err),
                     0);
    assert_int_equal(shim_status_read(f->dir, &st), 0);
    assert_true(st.has_exit);
    assert_int_equal(st.exit_code, 3);
    assert_string_equal(st.end_reason, "exit");
    assert_int_equal(st.started_at_ms, 10);
    assert_int_equal(st.ended_at_ms, 20);
    assert_int_equal(st.io_write_bytes, 8);
    /* the end replaced the start, as the rename of a file would */
    assert_null(shim_record_read(f->dir, SHIM_STARTED));
    assert_false(exists(f, SHIM_STARTED));
    assert_int_equal(exists(f, SHIM_STATUS), in_files);
    shim_record_clear(f->dir);
    assert_null(shim_record_read(f->dir, SHIM_STATUS));
    assert_null(shim_record_read(f->dir, SHIM_STARTED));
    assert_false(exists(f, SHIM_STATUS));
}

static void test_records_in_the_attribute_or_files(void **state)
{
    fixture *f = *state;
    bool attr = attribute_works(f);
    run_through(f, false);
    if (attr) /* nothing but the attribute: no file, no new inode */
        assert_false(exists(f, SHIM_STATUS) || exists(f, SHIM_STARTED));
}

static void test_records_in_files(void **state)
{
    run_through(*state, true);
}

/* A start in the attribute and an end the attribute could not take (too big, no room): the
 * end is the file's, the attribute's start line is no end. */
static void test_an_end_in_a_file_after_a_start_in_the_attribute(void **state)
{
    fixture *f = *state;
    if (!attribute_works(f))
        skip();
    bool in_files = false;
    char err[300];
    assert_int_equal(shim_record_write(f->dirfd, f->dir, SHIM_STARTED, "42 1000\n", 8, &in_files, err, sizeof err),
                     0);
    assert_false(in_files);
    in_files = true;
    assert_int_equal(shim_record_write(f->dirfd, f->dir, SHIM_STATUS, END, strlen(END), &in_files, err, sizeof err),
                     0);
    shim_status st;
    assert_int_equal(shim_status_read(f->dir, &st), 0);
    assert_int_equal(st.exit_code, 3);
    shim_record_clear(f->dir);
    assert_null(shim_record_read(f->dir, SHIM_STARTED));
}

/* A shim from before the attribute (a joblet upgraded while its jobs ran) left files. */
static void test_files_of_an_older_shim(void **state)
{
    fixture *f = *state;
    char p[128];
    snprintf(p, sizeof p, "%s/%s", f->dir, SHIM_STATUS);
    jerr e = {0};
    assert_int_equal(write_file_opt(p, END, strlen(END), 0600, 0, &e), 0);
    shim_status st;
    assert_int_equal(shim_status_read(f->dir, &st), 0);
    assert_int_equal(st.ended_at_ms, 20);
}

/* An end record longer than a page (a long error) is read whole. */
static void test_a_long_end_record(void **state)
{
    fixture *f = *state;
    size_t n = 3000;
    char *big = xmalloc(n + 64);
    int l = snprintf(big, n + 64, "{\"end_reason\":\"start_failed\",\"exit_code\":127,\"error\":\"");
    memset(big + l, 'e', n - (size_t)l - 2);
    memcpy(big + n - 2, "\"}", 3);
    bool in_files = false;
    char err[300];
    assert_int_equal(shim_record_write(f->dirfd, f->dir, SHIM_STATUS, big, n, &in_files, err, sizeof err), 0);
    char *s = shim_record_read(f->dir, SHIM_STATUS);
    assert_non_null(s);
    assert_int_equal(strlen(s), n);
    free(s);
    shim_status st;
    assert_int_equal(shim_status_read(f->dir, &st), 0);
    assert_int_equal(strlen(st.error), sizeof st.error - 1);
    shim_record_clear(f->dir);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_records_in_the_attribute_or_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_in_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_end_in_a_file_after_a_start_in_the_attribute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_files_of_an_older_shim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_long_end_record, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
