/* Runtimes (docs/runtimes.md): prepared root filesystems a job can run in instead of the
 * host's system directories. Each is a directory <runtimes.dir>/<name>/ holding rootfs/ (the
 * read-only tree: usr, etc, and the links bin, lib, ... of a merged-/usr Debian) and
 * manifest.yml (what it is and was built from). This file finds and reads them; building,
 * importing and removing them is runtime_build.c's. */
#ifndef JOBLET_RUNTIMES_H
#define JOBLET_RUNTIMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "../common/manifest.h"

typedef struct runtime {
    char name[65];
    char dir[700];            /* <runtimes.dir>/<name> */
    char root[720];           /* dir/rootfs */
    manifest m;               /* what manifest.yml says (common/manifest.h) */
    jobreq_pair *env;         /* m.env: set in every job of the runtime, before the job's own */
    size_t nenv;
    int64_t mtime_s;          /* of manifest.yml, when it was read */
    int64_t mtime_ns;
    uint64_t ino;             /* a manifest renamed into place is another file */
} runtime;

/* The directory runtimes live in (runtimes.dir, default <state_dir>/runtimes), created and made
 * 0700 root. */
int runtimes_init(jerr *e);
const char *runtimes_dir(void);
/* A runtime by name, its manifest read (again only when manifest.yml changed). Unknown: -1,
 * refused on field "runtime", naming the runtimes this machine has. */
int runtimes_find(const char *name, const runtime **out, jerr *e);
/* The names of the installed runtimes, sorted; the caller frees the list and its items. */
char **runtimes_names(size_t *n);
/* Forgets what was read of a runtime (it was removed or replaced). */
void runtimes_forget(const char *name);

#endif
