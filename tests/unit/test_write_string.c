/* write_string (common/util.c), the write of every cgroup control file: a write a signal
 * interrupts (EINTR) is written again, not reported. A cgroup v1 memory limit fails with EINTR
 * whenever a signal is pending as it is written, a stop signal too: a shim stopped and continued
 * (kill -STOP, a debugger's attach) as it set its job's limits ended the job start_failed,
 * "Interrupted system call" (test_hostile_update.py's test_update_reaches_a_task_whose_shim_is_
 * starting, flaky on a hybrid host). Here a pipe stands for the file: a write into a full pipe
 * waits, and a signal whose handler is not SA_RESTART ends that wait with EINTR, every time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/util.h"

static volatile sig_atomic_t handled;
static pid_t writer_tid;
static pthread_t writer;
static int pipe_r;
static bool saw_it_wait;

static void on_usr1(int sig)
{
    (void)sig;
    handled = 1;
}

/* Whether thread tid waits in write(2) now: /proc's syscall file names its syscall's number
 * first. */
static bool waits_in_write(pid_t tid)
{
    char path[64], buf[128] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    char want[16];
    int w = snprintf(want, sizeof want, "%d ", (int)SYS_write);
    return strncmp(buf, want, (size_t)w) == 0;
}

/* Once the writer waits in its write: the signal, and once its handler ran (so the write it
 * interrupted has returned), room in the pipe. The order makes the test exact: room made before
 * the interrupted write had returned could let that write through. */
static void *interrupter(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000 && !(saw_it_wait = waits_in_write(writer_tid)); i++)
        usleep(1000);
    pthread_kill(writer, SIGUSR1);
    for (int i = 0; i < 10000 && !handled; i++)
        usleep(1000);
    char buf[4096];
    while (read(pipe_r, buf, sizeof buf) > 0)
        ;
    return NULL;
}

static void test_a_write_a_signal_interrupts_is_written_again(void **state)
{
    (void)state;
    char probe[64];
    snprintf(probe, sizeof probe, "/proc/self/task/%d/syscall", (int)gettid());
    if (access(probe, R_OK) < 0)
        skip(); /* (no way to see that the write waits: the test could not be exact) */
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pipe_r = p[0];
    assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    /* full: write_string's write, of its own descriptor to the pipe, must wait */
    assert_int_equal(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
    char fill[4096];
    memset(fill, 'f', sizeof fill);
    while (write(p[1], fill, sizeof fill) > 0)
        ;
    assert_int_equal(errno, EAGAIN);
    struct sigaction sa = {.sa_handler = on_usr1}, old;
    sigemptyset(&sa.sa_mask); /* (no SA_RESTART: the wait ends with EINTR) */
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    handled = 0;
    writer_tid = gettid();
    writer = pthread_self();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, interrupter, NULL), 0);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", p[1]);
    errno = 0;
    int rc = write_string(path, "1\n");
    int err = errno;
    pthread_join(t, NULL);
    sigaction(SIGUSR1, &old, NULL);
    close(p[0]);
    close(p[1]);
    assert_true(saw_it_wait);
    assert_true(handled);
    if (rc != 0)
        fail_msg("write_string: %s (the interrupted write was not written again)", strerror(err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_write_a_signal_interrupts_is_written_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
