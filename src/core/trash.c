/* Deleted jobs' trees removed a slice per loop turn (trash.h). Each turn walks what is left of
 * the oldest tree depth first and removes entries until its slice is spent; the next turn walks
 * it again from its top, finding only what is left (each entry is removed once: a turn costs what
 * it removes, and the directories on the way down to it). The walk is rm_rf's, with a time to
 * stop (common/util.h rm_rf_some): it never leaves the tree's filesystem, never follows a link,
 * and moves a directory deeper than its bound up into the top to be removed from there. */
#include "trash.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "loop.h"

#define TRASH_SLICE_MS 20
/* entries removed at once whatever the clock says: a small tree (a job's few files) is gone before
 * its DELETE is answered even on a machine so busy that the slice's time passes meanwhile; and
 * each turn's walk makes that much headway at least */
#define TRASH_AT_LEAST 256

static char **queue; /* paths [head, n) */
static size_t head, n, cap;

static void on_turn(loop_task *t);
static loop_task task = {.fn = on_turn};

/* The slice of the loop's turn spent removing so far: removals asked by several requests of one
 * turn share it. */
static uint64_t spent_turn;
static int64_t spent_ns;

static void work(void);

/* Directories moved up into a top, numbered for all walks: a walk's new name is never one an
 * earlier walk left there (a count per walk would try each of those again, per move). */
static unsigned long moved;

void trash_remove(const char *path)
{
    /* its first TRASH_AT_LEAST entries now, whatever waits before it and whatever the clock says:
     * a small tree is gone before the answer, as it always was */
    int rc = rm_rf_some(path, mono_ns(), TRASH_AT_LEAST, &moved);
    if (rc != 0) {
        if (rc < 0) /* left for the next start's orphan sweep */
            log_warn("%s: not removed: %s", path, strerror(errno));
        return;
    }
    if (n == cap) {
        cap = cap ? cap * 2 : 16;
        queue = xrealloc(queue, cap * sizeof *queue);
    }
    queue[n++] = xstrdup(path);
    work(); /* what is left of this turn's slice */
    if (head < n)
        loop_later(&task);
}

/* The oldest path, walked until the slice ends (rm_rf_some: util.h): true when it is done with
 * (gone, or given up: left for the next start's orphan sweep). */
static bool remove_oldest(int64_t until)
{
    int rc = rm_rf_some(queue[head], until, TRASH_AT_LEAST, &moved);
    if (rc < 0)
        log_warn("%s: not removed: %s", queue[head], strerror(errno));
    return rc != 0;
}

/* The queue, worked on for what is left of this turn's slice. */
static void work(void)
{
    if (spent_turn != loop_turns())
        spent_turn = loop_turns(), spent_ns = 0;
    int64_t start = mono_ns(), until = start + (int64_t)TRASH_SLICE_MS * 1000000 - spent_ns;
    while (head < n && mono_ns() < until) {
        if (!remove_oldest(until))
            break;
        free(queue[head++]);
    }
    spent_ns += mono_ns() - start;
    if (head == n)
        head = n = 0;
}

static void on_turn(loop_task *t)
{
    (void)t;
    work();
    if (head < n)
        loop_later(&task);
}
