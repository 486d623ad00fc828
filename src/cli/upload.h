/* Turns --upload paths into the uploads[] array of a submit request. */
#ifndef JOBLET_UPLOAD_H
#define JOBLET_UPLOAD_H

#include <jansson.h>
#include <stdint.h>

#include "../common/err.h"

typedef struct upload_set {
    json_t *entries;      /* the uploads[] array, directories before their contents */
    uint64_t bytes;       /* total size of the files' contents */
    size_t nfiles;
    /* top-level names taken so far, to refuse two uploads landing on the same path */
    char **names;
    char **sources;
    size_t nnames;
} upload_set;

void upload_init(upload_set *u);
/* Adds a file, directory (recursively) or symlink. The job sees it under its last path
 * component: /a/b/x.py as x.py, /a/data/ as data/... A symlink named on the command line is
 * followed (the caller meant its target); symlinks found inside directories are sent as
 * symlinks. Returns -1 with e->msg set ("--upload: /nope: No such file or directory"). */
int upload_add(upload_set *u, const char *path, jerr *e);
void upload_free(upload_set *u);

#endif
