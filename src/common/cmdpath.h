/* Paths of a job's command as the job sees them (core/cmdcheck.c): joined to the working
 * directory and normalised, split along PATH, and placed in the job's tree. Pure. */
#ifndef JOBLET_CMDPATH_H
#define JOBLET_CMDPATH_H

#include <stdbool.h>
#include <stddef.h>

/* base/path (path alone when absolute) with "//", "." and ".." taken out, as the job's own
 * root would read it without symlinks; "/.." is "/". -1 when it does not fit in out. */
int cmdpath_normalize(const char *base, const char *path, char *out, size_t n);
/* What follows "dir/" in path ("" when path is dir), or NULL when path is not beneath dir. */
const char *cmdpath_under(const char *path, const char *dir);
/* Whether path is one of dirs (NULL-terminated) or beneath one. */
bool cmdpath_in_dirs(const char *path, const char *const *dirs);
/* The next entry of a PATH list into dir (an empty entry is ".", as execvp reads it); the rest
 * of the list, or NULL once list is used up. An entry too long for dir is cut short. */
const char *cmdpath_next(const char *list, char *dir, size_t n);

#endif
