/* Deleted jobs' trees removed off the loop (trash.h). A tree's first TRASH_AT_LEAST entries go in
 * the request's turn (a job's few files are gone before its DELETE is answered); what is left is
 * handed to one thread of the daemon's own, which removes the trees one after the other, oldest
 * first, as redis's background threads free and unlink what would hold its loop. The walk is
 * rm_rf's (common/util.h rm_rf_some): it never leaves the tree's filesystem, never follows a
 * link, and moves a directory deeper than its bound up into the top to be removed from there.
 *
 * Why a thread and not a slice per loop turn (as before): what a removal costs is not all in
 * the entries the walk counts. The kernel keeps each name unlinked from a directory as a
 * negative dentry, and the directory's own rmdir frees them all at once (shrink_dcache_parent):
 * a flat directory of 40,000 entries made that one rmdir 30-130 ms, 80,000 entries 80-175 ms, in
 * one turn of the loop whatever its slice. On the thread it holds no one's request. */
#include "trash.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/thread.h"
#include "../common/util.h"

/* entries removed on the loop, in the request's turn, whatever the clock says: a small tree (a
 * job's few files) is gone before its DELETE is answered even on a machine so busy that any
 * time would pass meanwhile */
#define TRASH_AT_LEAST 256

/* The trees the thread has still to remove, [head, n): the loop appends, the thread takes. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char **queue;
    size_t head, n, cap;
    bool started; /* the thread runs (made at the first tree it is handed) */
} q = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Directories moved up into a top, numbered for all walks of one walker: a walk's new name is
 * never one an earlier walk of it left there (a count per walk would try each of those again,
 * per move). The loop's and the thread's own: a name the other left is taken, EEXIST, and the
 * next tried. */
static unsigned long moved_loop, moved_thread;

static void *remover(void *arg)
{
    (void)arg;
    /* housekeeping at the jobs' own priority: the loop (server.cpu_priority) comes first */
    setpriority(PRIO_PROCESS, (id_t)gettid(), 0);
    for (;;) {
        pthread_mutex_lock(&q.mu);
        while (q.head == q.n)
            pthread_cond_wait(&q.cv, &q.mu);
        char *path = q.queue[q.head]; /* stays queued (and reachable) until removed */
        pthread_mutex_unlock(&q.mu);
        if (rm_rf_some(path, 0, 0, &moved_thread) < 0) /* left for the next start's orphan sweep */
            log_warn("%s: not removed: %s", path, strerror(errno));
        pthread_mutex_lock(&q.mu);
        q.head++;
        if (q.head == q.n)
            q.head = q.n = 0;
        pthread_mutex_unlock(&q.mu);
        free(path);
    }
    return NULL;
}

void trash_remove(const char *path)
{
    int rc = rm_rf_some(path, mono_ns(), TRASH_AT_LEAST, &moved_loop);
    if (rc != 0) {
        if (rc < 0) /* left for the next start's orphan sweep */
            log_warn("%s: not removed: %s", path, strerror(errno));
        return;
    }
    pthread_mutex_lock(&q.mu);
    if (!q.started) {
        int err = thread_start(NULL, remover, NULL);
        if (err) {
            pthread_mutex_unlock(&q.mu);
            /* never seen: what is left waits for the next start's orphan sweep */
            log_err("%s: not removed now: no thread to remove it (%s)", path, strerror(err));
            return;
        }
        q.started = true;
    }
    if (q.n == q.cap) {
        /* the thread is past q.head: what it took stays where it is until it says so */
        q.cap = q.cap ? q.cap * 2 : 16;
        q.queue = xrealloc(q.queue, q.cap * sizeof *q.queue);
    }
    q.queue[q.n++] = xstrdup(path);
    pthread_cond_signal(&q.cv);
    pthread_mutex_unlock(&q.mu);
}
