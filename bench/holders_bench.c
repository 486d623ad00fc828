/* joblet-gpu-scrub's holder scan of one process (src/gpu/holders.c): a child of THREADS threads
 * sharing one descriptor table of FDS descriptors (of /dev/null), none of them the node looked
 * for (/dev/full's device number), so that every table is read to the end, as for any process
 * that is no holder. Prints the median and the slowest of ROUNDS scans and the tables each read.
 * Usage: build/bench/holders_bench [threads [fds [rounds]]] (default 1000 1000 5). */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu/holders.h"

static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static pid_t start(int threads, int fds)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        exit(1);
    pid_t pid = fork();
    if (pid < 0)
        exit(1);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(pfd[0]);
        struct rlimit rl = {(rlim_t)fds + 64, (rlim_t)fds + 64};
        setrlimit(RLIMIT_NOFILE, &rl);
        for (int i = 0; i < fds; i++)
            if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0)
                _exit(2);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        for (int i = 1; i < threads; i++) {
            pthread_t t;
            if (pthread_create(&t, &attr, idle, NULL) != 0)
                _exit(3);
        }
        if (write(pfd[1], "r", 1) != 1)
            _exit(4);
        idle(NULL);
    }
    close(pfd[1]);
    char c;
    if (read(pfd[0], &c, 1) != 1) {
        fprintf(stderr, "holders_bench: the child could not start %d threads of %d descriptors\n", threads, fds);
        exit(1);
    }
    close(pfd[0]);
    return pid;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1000, fds = argc > 2 ? atoi(argv[2]) : 1000,
        rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (threads < 1 || fds < 0 || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "usage: holders_bench [threads [fds [rounds]]]\n");
        return 2;
    }
    struct stat st;
    if (stat("/dev/full", &st) != 0) {
        perror("/dev/full");
        return 1;
    }
    pid_t pid = start(threads, fds);
    double ms[1000];
    unsigned long tables = 0;
    for (int r = 0; r < rounds; r++) {
        gpu_holder h;
        unsigned long before = holders_tables_read();
        double t0 = now_ms();
        if (holders_find_one(pid, st.st_rdev, &h))
            fprintf(stderr, "holders_bench: the child holds /dev/full?\n");
        ms[r] = now_ms() - t0;
        tables = holders_tables_read() - before;
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    qsort(ms, (size_t)rounds, sizeof *ms, cmp);
    printf("%d threads x %d descriptors: median %.1f ms, slowest %.1f ms of %d scans; %lu tables read a scan\n",
           threads, fds, ms[rounds / 2], ms[rounds - 1], rounds, tables);
    return 0;
}
