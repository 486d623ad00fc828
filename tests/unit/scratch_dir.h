/* A fresh directory for one unit test's files (cmocka setup/teardown), under $TMPDIR or /tmp:
 * the tests of the shim's log files and records make theirs here. Header-only, for tests. */
#ifndef JOBLET_TESTS_SCRATCH_DIR_H
#define JOBLET_TESTS_SCRATCH_DIR_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct scratch_dir {
    char dir[64];
    int dirfd; /* open on dir */
} scratch_dir;

/* Makes d's directory, named after the test: 0, or -1 (nothing left made). */
static inline int scratch_dir_make(scratch_dir *d, const char *test)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(d->dir, sizeof d->dir, "%s/%.24s.XXXXXX", tmp && strlen(tmp) < 30 ? tmp : "/tmp", test);
    d->dirfd = -1;
    if (!mkdtemp(d->dir))
        return -1;
    d->dirfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->dirfd < 0) {
        rmdir(d->dir);
        return -1;
    }
    return 0;
}

/* Removes the files named (those a test may have made) and the directory. */
static inline void scratch_dir_remove(scratch_dir *d, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        unlinkat(d->dirfd, names[i], 0);
    close(d->dirfd);
    rmdir(d->dir);
}

#endif
