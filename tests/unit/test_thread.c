/* thread_start and thread_block_all (common/thread.c): the threads they make block every
 * signal (those the C library keeps for itself aside), joinable or detached, and the caller's
 * own mask is as it was. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>

#include "common/thread.h"

static sem_t done;
static bool all_blocked;

/* Whether every signal a program may block is blocked in the calling thread: the standard ones
 * but SIGKILL and SIGSTOP, and SIGRTMIN..SIGRTMAX (glibc keeps 32 and 33 for itself, never
 * blocked). */
static bool blocks_all(void)
{
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP && !sigismember(&now, s))
            return false;
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
        if (!sigismember(&now, s))
            return false;
    return true;
}

/* What a thread's mask is; arg, when not NULL, is posted once it is known (a detached thread). */
static void *look(void *arg)
{
    all_blocked = blocks_all();
    if (arg)
        sem_post(arg);
    return NULL;
}

/* The calling thread's mask: only SIGUSR1 blocked, as the test sets it. */
static bool mask_is_usr1(void)
{
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    return sigismember(&now, SIGUSR1) && !sigismember(&now, SIGTERM) && !sigismember(&now, SIGINT);
}

static void set_usr1(void)
{
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGUSR1);
    pthread_sigmask(SIG_SETMASK, &m, NULL);
}

static void test_a_joinable_thread_blocks_every_signal(void **state)
{
    (void)state;
    set_usr1();
    all_blocked = false;
    pthread_t th;
    assert_int_equal(thread_start(&th, look, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(all_blocked);
    assert_true(mask_is_usr1());
}

static void test_a_detached_thread_blocks_every_signal(void **state)
{
    (void)state;
    set_usr1();
    all_blocked = false;
    assert_int_equal(thread_start(NULL, look, &done), 0);
    sem_wait(&done);
    assert_true(all_blocked);
    assert_true(mask_is_usr1());
}

static void test_threads_made_between_block_and_unblock_block_every_signal(void **state)
{
    (void)state;
    set_usr1();
    sigset_t old;
    thread_block_all(&old);
    assert_true(blocks_all());
    pthread_t th;
    all_blocked = false;
    assert_int_equal(pthread_create(&th, NULL, look, NULL), 0);
    thread_unblock(&old);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(all_blocked);
    assert_true(mask_is_usr1());
}

int main(void)
{
    sem_init(&done, 0, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_joinable_thread_blocks_every_signal),
        cmocka_unit_test(test_a_detached_thread_blocks_every_signal),
        cmocka_unit_test(test_threads_made_between_block_and_unblock_block_every_signal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
