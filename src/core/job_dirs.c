/* Job directories made ahead of need (job_dirs.h). The queue is worked on at the start of a loop
 * turn for at most JOB_DIRS_SLICE_MS (at least one directory), then the task queues itself again:
 * a request that makes thousands of jobs costs the loop their bookkeeping only, and the
 * filesystem's work is spread over the turns that follow. */
#include "job_dirs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "jobs.h"
#include "loop.h"
#include "state.h"
#include "workfs.h"

#define JOB_DIRS_SLICE_MS 20

/* A queue in a ring: items [head, head + n). */
typedef struct ring {
    void *items;
    size_t size, head, n, cap;
} ring;

static void *ring_at(ring *r, size_t i) { return (char *)r->items + ((r->head + i) % r->cap) * r->size; }

static void ring_push(ring *r, const void *item)
{
    if (r->n == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 64;
        char *grown = xcalloc(ncap, r->size);
        for (size_t i = 0; i < r->n; i++)
            memcpy(grown + i * r->size, ring_at(r, i), r->size);
        free(r->items);
        r->items = grown, r->cap = ncap, r->head = 0;
    }
    memcpy(ring_at(r, r->n++), item, r->size);
}

static bool ring_pop(ring *r, void *item)
{
    if (!r->n)
        return false;
    memcpy(item, ring_at(r, 0), r->size);
    r->head = (r->head + 1) % r->cap;
    r->n--;
    return true;
}

static ring to_make = {.size = sizeof(uint64_t)}; /* job seqs */

static void on_turn(loop_task *t);
static loop_task task = {.fn = on_turn};

int job_dirs_ensure(job *j, jerr *e)
{
    char dir[700], work[800];
    jobs_dir_of(j, dir, sizeof dir);
    if (mkdir(dir, 0700) < 0) {
        if (errno != EEXIST)
            return jerr_sys(e, "create %s", dir);
        if (!j->dir_pending)
            return 0; /* made at submission, or by an earlier call */
    }
    if (workfs_make(j->owner_uid, dir, work, sizeof work, e) < 0) {
        if (e->code != EEXIST)
            return -1;
        *e = (jerr){0};
    }
    if (chown(work, j->uid, j->gid) < 0)
        return jerr_sys(e, "chown %s", work);
    j->dir_pending = false;
    return 0;
}

void job_dirs_recheck(job *j)
{
    if (job_state_waiting(j->state) || j->state == JS_PENDING)
        j->dir_pending = true;
}

void job_dirs_defer(job *j)
{
    j->dir_pending = true;
    ring_push(&to_make, &j->seq);
    loop_later(&task);
}

static bool make_one(void)
{
    uint64_t seq;
    if (!ring_pop(&to_make, &seq))
        return false;
    job *j = jobs_by_seq(seq);
    if (!j || !j->dir_pending) /* deleted, or launched (made then) */
        return true;
    jerr e = {0};
    if (job_dirs_ensure(j, &e) < 0) /* its launch will try again, and fail with this if it must */
        log_warn("job %s: its directory: %s", j->id, e.msg);
    return true;
}

static void on_turn(loop_task *t)
{
    (void)t;
    int64_t until = mono_ns() + (int64_t)JOB_DIRS_SLICE_MS * 1000000;
    while (make_one() && mono_ns() < until)
        ;
    if (to_make.n)
        loop_later(&task);
}
