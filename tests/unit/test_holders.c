/* holders_find_one (src/gpu/holders.c) against the real kernel: a child process of many threads
 * holds /dev/full (a character device nobody here holds otherwise, standing for a GPU's node)
 * or not, in the table its threads share or in one a thread made its own with
 * unshare(CLONE_FILES). The holder is found wherever it is, and each distinct descriptor table
 * is read once (holders_tables_read) when the kernel has kcmp; without kcmp, every thread's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/holders.h"

#define THREADS 50

static dev_t node; /* /dev/full's device number */

/* What a child's threads do: thread `holder` (0 = none; the leader is thread 0 and never
 * holds) opens the node, after making its table its own when holder_unshares; threads
 * 1..unshared make their table their own; the leader
 * makes its own after the threads are made when leader_unshares (so the node opened by a thread
 * afterwards is in the table the others share, not in the leader's). */
typedef struct {
    int holder, unshared;
    bool holder_unshares, leader_unshares;
} plan;

static plan the_plan;
static atomic_int ready;
static atomic_int leader_done;

static void *thread_main(void *arg)
{
    int i = (int)(long)arg;
    if ((i <= the_plan.unshared || (i == the_plan.holder && the_plan.holder_unshares)) &&
        unshare(CLONE_FILES) != 0)
        _exit(3);
    while (the_plan.leader_unshares && !atomic_load(&leader_done))
        usleep(1000);
    if (i == the_plan.holder && open("/dev/full", O_PATH | O_CLOEXEC) < 0)
        _exit(4);
    atomic_fetch_add(&ready, 1);
    for (;;)
        pause();
    return NULL;
}

/* A child process run to the plan, every thread in place: its pid. */
static pid_t start(plan p)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the test, even when an assertion fails */
        close(pfd[0]);
        the_plan = p;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        for (long i = 1; i <= THREADS; i++) {
            pthread_t t;
            if (pthread_create(&t, &attr, thread_main, (void *)i) != 0)
                _exit(2);
        }
        if (p.leader_unshares && unshare(CLONE_FILES) != 0)
            _exit(3);
        atomic_store(&leader_done, 1);
        while (atomic_load(&ready) < THREADS)
            usleep(1000);
        if (write(pfd[1], "r", 1) != 1)
            _exit(5);
        close(pfd[1]);
        for (;;)
            pause();
    }
    close(pfd[1]);
    char c;
    assert_int_equal(read(pfd[0], &c, 1), 1);
    close(pfd[0]);
    return pid;
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static bool have_kcmp(void)
{
    return syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILES, 0, 0) == 0;
}

/* Found or not, and the tables read to tell. */
static bool scan(pid_t pid, unsigned long *tables)
{
    unsigned long before = holders_tables_read();
    gpu_holder h;
    bool found = holders_find_one(pid, node, &h);
    *tables = holders_tables_read() - before;
    if (found)
        assert_int_equal(h.pid, pid);
    return found;
}

static int setup(void **state)
{
    (void)state;
    struct stat st;
    if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode))
        return -1;
    node = st.st_rdev;
    return 0;
}

static void test_threads_sharing_one_table_read_it_once(void **state)
{
    (void)state;
    pid_t pid = start((plan){0});
    unsigned long tables;
    assert_false(scan(pid, &tables));
    assert_int_equal(tables, have_kcmp() ? 1 : THREADS + 1);
    stop(pid);
}

static void test_a_thread_holding_the_node_in_a_table_of_its_own_is_found(void **state)
{
    (void)state;
    /* thread 37 of 50 alone holds it, in a table only it has: the leader's table and its own are
     * read, the 49 other threads share the leader's (1 when the kernel lists thread 37 before
     * the leader: pids wrapped) */
    pid_t pid = start((plan){.holder = 37, .holder_unshares = true});
    unsigned long tables;
    assert_true(scan(pid, &tables));
    if (have_kcmp())
        assert_in_range(tables, 1, 2);
    stop(pid);
    /* the same thread holding it in the table all share */
    pid = start((plan){.holder = 37});
    assert_true(scan(pid, &tables));
    assert_true(tables <= 38);
    if (have_kcmp())
        assert_int_equal(tables, 1);
    stop(pid);
}

static void test_only_distinct_tables_are_read(void **state)
{
    (void)state;
    /* threads 1..10 unshared, 40 share the leader's: 11 distinct tables, none holding */
    pid_t pid = start((plan){.unshared = 10});
    unsigned long tables;
    assert_false(scan(pid, &tables));
    assert_int_equal(tables, have_kcmp() ? 11 : THREADS + 1);
    stop(pid);
}

static void test_a_leader_with_a_table_of_its_own_does_not_hide_the_others(void **state)
{
    (void)state;
    /* the leader made its table its own; a thread then opened the node into the table the 50
     * threads share: read after the leader's (2 tables; 1 when pids wrapped) */
    pid_t pid = start((plan){.holder = 50, .leader_unshares = true});
    unsigned long tables;
    assert_true(scan(pid, &tables));
    if (have_kcmp())
        assert_in_range(tables, 1, 2);
    stop(pid);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_sharing_one_table_read_it_once),
        cmocka_unit_test(test_a_thread_holding_the_node_in_a_table_of_its_own_is_found),
        cmocka_unit_test(test_only_distinct_tables_are_read),
        cmocka_unit_test(test_a_leader_with_a_table_of_its_own_does_not_hide_the_others),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
