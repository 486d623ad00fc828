/* A runtime's manifest.yml (manifest.c): what the tree is and what it was built from. Written
 * by the build helper after a build, read by the daemon (runtimes.c) and by the helper when it
 * checks an imported archive. docs/runtimes.md lists the keys. */
#ifndef JOBLET_MANIFEST_H
#define JOBLET_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "recipe.h"

typedef struct manifest {
    char name[65];
    char version[64];
    char architecture[32];    /* dpkg's architecture of the tree: amd64 */
    char suite[33];
    char mirror[256];         /* where its packages came from */
    char builder[64];         /* "mmdebstrap 1.3.5" */
    char recipe[128];         /* the recipe's file name as the admin gave it */
    char recipe_sha256[72];   /* of the recipe's text: the cache key */
    char rootfs_sha256[72];   /* of the tree (digest_tree): what an import is checked against */
    char built_at[40];        /* RFC 3339, UTC */
    char *description;
    char **provides;          /* "python 3.11.2", "torch 1.13.1 (CPU)" */
    size_t nprovides;
    char **packages;          /* the recipe's packages */
    size_t npackages;
    recipe_env *env;
    size_t nenv;
    char *test;               /* NULL: none */
    uint64_t size_bytes;      /* disk use of rootfs/ */
    uint64_t installed_packages;
} manifest;

/* Reads path; -1 with e set when it cannot be read or is not a manifest (no name). */
int manifest_read(const char *path, manifest *m, jerr *e);
/* Writes m to path atomically. */
int manifest_write(const char *path, const manifest *m, jerr *e);
void manifest_free(manifest *m);

#endif
