/* Threads of the daemon's own that leave every signal to the loop thread (signalfd, core/loop.c):
 * a new thread inherits its creator's signal mask, so it is made with every signal blocked, and
 * a signal sent to joblet is never taken by a resolver, a monitor or an HTTP thread (where its
 * default action would end the daemon, or the loop would never see it). */
#ifndef JOBLET_THREAD_H
#define JOBLET_THREAD_H

#include <pthread.h>
#include <signal.h>

/* A thread running fn(arg) with every signal blocked: 0, or pthread_create's error number.
 * Joinable, its id in *th, when th is not NULL; detached when th is NULL. The caller's mask is
 * as it was on return. */
int thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* For threads made by a library (libmicrohttpd's): every signal blocked in the calling thread,
 * its mask before in *old, until thread_unblock(old); the threads made in between block them
 * all. */
void thread_block_all(sigset_t *old);
void thread_unblock(const sigset_t *old);

#endif
