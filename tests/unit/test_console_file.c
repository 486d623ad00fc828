/* rnx console's link file (src/cli/console_file.c): the URL HTML-escaped into the page, the
 * printed file:// address percent-encoded, the file made new, 0600, in $XDG_RUNTIME_DIR, a
 * gone console's file removed, and the file removed once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli/console_file.h"
#include "scratch_dir.h"

static void test_escapes(void **state)
{
    (void)state;
    char out[128];
    assert_int_equal(console_file_html("http://a.localhost:1/?token=ab", out, sizeof out), 30);
    assert_string_equal(out, "http://a.localhost:1/?token=ab");
    console_file_html("<a href=\"x\">'&'</a>", out, sizeof out);
    assert_string_equal(out, "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    assert_int_equal(console_file_html("&&&", out, 10), 0);      /* does not fit */
    console_file_uri("/home/a b/%x\"é.html", out, sizeof out);
    assert_string_equal(out, "file:///home/a%20b/%25x%22%C3%A9.html");
    assert_int_equal(console_file_uri("/run/user/0/x", out, 12), 0);
}

static void test_made_private_and_removed(void **state)
{
    (void)state;
    scratch_dir d;
    assert_int_equal(scratch_dir_make(&d, "console_file"), 0);
    chmod(d.dir, 0700);
    setenv("XDG_RUNTIME_DIR", d.dir, 1);
    /* a console that is gone left its file */
    pid_t gone = fork();
    if (!gone)
        _exit(0);
    waitpid(gone, NULL, 0);
    char left[128];
    snprintf(left, sizeof left, "joblet-console-%d-0123456789abcdef.html", (int)gone);
    close(openat(d.dirfd, left, O_CREAT | O_WRONLY, 0600));
    console_file f;
    char why[256];
    assert_int_equal(console_file_make(&f, "http://n.localhost:5/?token=t<", why, sizeof why), 0);
    assert_int_equal(faccessat(d.dirfd, left, F_OK, 0), -1);
    assert_true(!strncmp(f.path, d.dir, strlen(d.dir)) && f.path[strlen(d.dir)] == '/');
    struct stat st;
    assert_int_equal(lstat(f.path, &st), 0);
    assert_true(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600 && st.st_uid == geteuid());
    char page[2048] = {0};
    int fd = open(f.path, O_RDONLY);
    assert_true(read(fd, page, sizeof page - 1) > 0);
    close(fd);
    assert_non_null(strstr(page, "content=\"0;url=http://n.localhost:5/?token=t&lt;\""));
    assert_null(strstr(page, "token=t<"));
    console_file_remove(&f);
    assert_int_equal(access(f.path, F_OK), -1);
    console_file_remove(&f);   /* once */
    /* a directory others may write to is passed over; HOME unset: none, and why */
    chmod(d.dir, 0777);
    unsetenv("HOME");
    assert_int_equal(console_file_make(&f, "http://x", why, sizeof why), -1);
    assert_non_null(strstr(why, "only it may write to"));
    assert_non_null(strstr(why, "HOME is not set"));
    assert_int_equal(f.dirfd, -1);
    close(d.dirfd);
    rmdir(d.dir);
}

/* $BROWSER as Python's webbrowser module reads it: the first entry, %s or the path last */
static void test_browser_command_line(void **state)
{
    (void)state;
    char *argv[6], buf[256], why[128];
    assert_int_equal(console_file_browser_argv(NULL, "/r/f.html", argv, 6, buf, sizeof buf, why, sizeof why), 0);
    assert_string_equal(argv[0], "xdg-open");
    assert_string_equal(argv[1], "/r/f.html");
    assert_null(argv[2]);
    assert_int_equal(console_file_browser_argv("  chromium  --new-window:firefox", "/r/f.html", argv, 6, buf,
                                               sizeof buf, why, sizeof why), 0);
    assert_string_equal(argv[0], "chromium");
    assert_string_equal(argv[1], "--new-window");
    assert_string_equal(argv[2], "/r/f.html");
    assert_null(argv[3]);
    assert_int_equal(console_file_browser_argv("br --app=%s x", "/r/f.html", argv, 6, buf, sizeof buf, why,
                                               sizeof why), 0);
    assert_string_equal(argv[1], "--app=/r/f.html");
    assert_string_equal(argv[2], "x");
    assert_null(argv[3]);   /* the path was placed: not added again */
    assert_int_equal(console_file_browser_argv(":firefox", "/p", argv, 6, buf, sizeof buf, why, sizeof why), 0);
    assert_string_equal(argv[0], "xdg-open");   /* an empty first entry: as unset */
    assert_int_equal(console_file_browser_argv("  ", "/p", argv, 6, buf, sizeof buf, why, sizeof why), -1);
    assert_non_null(strstr(why, "no command"));
    assert_int_equal(console_file_browser_argv("a b c d", "/p", argv, 6, buf, sizeof buf, why, sizeof why), 0);
    assert_int_equal(console_file_browser_argv("a b c d e", "/p", argv, 6, buf, sizeof buf, why, sizeof why), -1);
    assert_non_null(strstr(why, "more than 4 words"));
    assert_int_equal(console_file_browser_argv("a %s%s%s", "/a/long/path", argv, 6, buf, 24, why, sizeof why), -1);
    assert_non_null(strstr(why, "too long"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_made_private_and_removed),
        cmocka_unit_test(test_browser_command_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
