/* src/common/lsan_roots.c in an AddressSanitizer build: LeakSanitizer no longer scans the data of
 * gcc's sanitizer runtimes, and every other module's data is still a root. The probe
 * (lsan_roots_probe.c, built with it) ends holding blocks from its own data, from libc's data, or
 * not at all: only the last is a leak, and it is reported with the exit code asked for. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEAK_EXIT 86

/* Runs the probe with `how`; returns its exit status and whether its stderr has LeakSanitizer's
 * report in it. */
static int run_probe(const char *how, bool *reported)
{
    char path[] = "/tmp/lsan-roots-XXXXXX";
    int err = mkstemp(path);
    assert_true(err >= 0);
    unlink(path);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(err, 2);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        setenv("ASAN_OPTIONS", "detect_leaks=1:exitcode=86", 1);
        unsetenv("LSAN_OPTIONS"); /* the probe's own default: use_globals=0 */
        execl(JOBLET_LSAN_PROBE, JOBLET_LSAN_PROBE, how, (char *)NULL);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char out[8192] = "";
    ssize_t n = pread(err, out, sizeof out - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(err);
    *reported = strstr(out, "ERROR: LeakSanitizer: detected memory leaks") != NULL;
    if (*reported)
        print_message("%s: %s\n", how, out);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_held_by_the_executables_data_is_no_leak(void **state)
{
    (void)state;
    bool reported;
    assert_int_equal(run_probe("global", &reported), 0);
    assert_false(reported);
}

static void test_held_by_another_modules_data_is_no_leak(void **state)
{
    (void)state;
    bool reported;
    assert_int_equal(run_probe("libc", &reported), 0);
    assert_false(reported);
}

static void test_a_block_nothing_holds_is_reported(void **state)
{
    (void)state;
    bool reported;
    assert_int_equal(run_probe("leak", &reported), LEAK_EXIT);
    assert_true(reported);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_by_the_executables_data_is_no_leak),
        cmocka_unit_test(test_held_by_another_modules_data_is_no_leak),
        cmocka_unit_test(test_a_block_nothing_holds_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
