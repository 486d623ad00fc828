/* Directories of deleted jobs, removed a slice per loop turn (trash.h). A job's directory may
 * hold GBs of logs and its /work many files: removing thousands in one request held the loop
 * for seconds (delete-all of 3,000 jobs: 2 s). Each turn removes directories for at most
 * TRASH_SLICE_MS (at least one), then queues itself again. */
#include "trash.h"

#include <stdlib.h>
#include <string.h>

#include "../common/util.h"
#include "loop.h"
#include "workfs.h"

#define TRASH_SLICE_MS 20

typedef struct item {
    uid_t owner;
    char *dir;
} item;

static item *items;
static size_t head, n, cap; /* a ring: items[head .. head + n) */
static void on_turn(loop_task *t);
static loop_task task = {.fn = on_turn};

void trash_add(uid_t owner, const char *job_dir)
{
    if (n == cap) {
        size_t ncap = cap ? cap * 2 : 64;
        item *grown = xcalloc(ncap, sizeof *grown);
        for (size_t i = 0; i < n; i++)
            grown[i] = items[(head + i) % cap];
        free(items);
        items = grown, cap = ncap, head = 0;
    }
    items[(head + n++) % cap] = (item){owner, xstrdup(job_dir)};
    loop_later(&task);
}

/* Removes the oldest; false when none is left. */
static bool take_one(void)
{
    if (!n)
        return false;
    item it = items[head];
    head = (head + 1) % cap;
    n--;
    workfs_remove(it.owner, it.dir);
    free(it.dir);
    return true;
}

static void on_turn(loop_task *t)
{
    (void)t;
    int64_t until = mono_ns() + (int64_t)TRASH_SLICE_MS * 1000000;
    while (take_one() && mono_ns() < until)
        ;
    if (n)
        loop_later(&task);
}

void trash_drain(void)
{
    loop_later_cancel(&task);
    while (take_one())
        ;
    free(items);
    items = NULL;
    head = cap = 0;
}

size_t trash_pending(void) { return n; }
