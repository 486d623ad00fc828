/* Deleted jobs' trees removed a slice per loop turn (trash.h). Each turn walks what is left of
 * the oldest tree depth first and removes entries until its slice is spent; the next turn walks
 * it again from its top, finding only what is left (each entry is removed once: a turn costs what
 * it removes, and the directories on the way down to it). As rm_rf (common/util.c), it never
 * leaves the tree's filesystem and never follows a link, and a directory deeper than
 * TRASH_DEPTH_MAX is moved up into the top (a rename by descriptors) to be removed from there. */
#include "trash.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "loop.h"

#define TRASH_SLICE_MS 20
#define TRASH_DEPTH_MAX 64

static char **queue; /* paths [head, n) */
static size_t head, n, cap;

static void on_turn(loop_task *t);
static loop_task task = {.fn = on_turn};

/* The slice of the loop's turn spent removing so far: removals asked by several requests of one
 * turn share it. */
static uint64_t spent_turn;
static int64_t spent_ns;

static void work(void);

void trash_remove(const char *path)
{
    if (n == cap) {
        cap = cap ? cap * 2 : 16;
        queue = xrealloc(queue, cap * sizeof *queue);
    }
    queue[n++] = xstrdup(path);
    work(); /* a small tree is gone before the answer, as it always was */
    if (head < n)
        loop_later(&task);
}

/* Directories moved up into a top, numbered for all walks: a walk's new name is never one an
 * earlier walk left there (a count per walk would try each of those again, per move). */
static unsigned long moved;

typedef struct trash_walk {
    dev_t dev;
    int top;               /* the tree's top directory */
    int64_t until;         /* the slice's end (mono_ns) */
} trash_walk;

/* Removes dfd/name and what it holds until the slice ends: 1 when it is gone (or was moved up
 * into the top), 0 when the slice ended first, -1 on an error (errno). */
static int remove_some(trash_walk *w, int dfd, const char *name, unsigned depth)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 1 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -1 : 1;
    if (st.st_dev != w->dev) {
        errno = EXDEV;
        return -1;
    }
    if (depth >= TRASH_DEPTH_MAX) {
        char to[40];
        for (;;) {
            snprintf(to, sizeof to, ".joblet-rm-%lu", moved++);
            if (renameat2(dfd, name, w->top, to, RENAME_NOREPLACE) == 0)
                return 1;
            if (errno != EEXIST)
                return errno == ENOENT ? 1 : -1;
        }
    }
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 1 : -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    int rc = 1;
    struct dirent *de;
    while (rc == 1 && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        rc = mono_ns() < w->until ? remove_some(w, fd, de->d_name, depth + 1) : 0;
    }
    int err = errno;
    closedir(d);
    errno = err;
    if (rc != 1)
        return rc;
    if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
        return 1;
    /* (a directory moved up into the top while the top was read: the next walk finds it) */
    return errno == ENOTEMPTY && depth == 0 ? 0 : -1;
}

/* The oldest path, walked until the slice ends: true when it is done with (gone, or given up). */
static bool remove_oldest(int64_t until)
{
    const char *path = queue[head];
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? true : (log_warn("%s: not removed: %s", path, strerror(errno)), true);
    trash_walk w = {.dev = st.st_dev, .top = -1, .until = until};
    int rc;
    if (S_ISDIR(st.st_mode)) {
        w.top = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (w.top < 0) {
            log_warn("%s: not removed: %s", path, strerror(errno));
            return true;
        }
    }
    rc = remove_some(&w, AT_FDCWD, path, 0);
    if (rc < 0) /* left for the next start's orphan sweep */
        log_warn("%s: not removed: %s", path, strerror(errno));
    if (w.top >= 0)
        close(w.top);
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
