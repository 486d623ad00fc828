/* Threads made with every signal blocked: see thread.h. */
#include "thread.h"

#include <stddef.h>

void thread_block_all(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

void thread_unblock(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

int thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
    pthread_t id;
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc != 0)
        return rc;
    if (!th)
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t old;
    thread_block_all(&old);
    rc = pthread_create(th ? th : &id, &attr, fn, arg);
    thread_unblock(&old);
    pthread_attr_destroy(&attr);
    return rc;
}
