/* Runtime recipes (docs/runtimes.md): the YAML file an admin hands to `rnx runtime build`,
 * naming the Debian suite and packages a runtime's tree is built from. recipe.c reads and
 * checks one completely; every refusal names the field ("packages[2]: ...") and what would
 * be accepted. The daemon reads the recipe it was sent, the build helper the copy it builds. */
#ifndef JOBLET_RECIPE_H
#define JOBLET_RECIPE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define RECIPE_MAX_BYTES    65536   /* a recipe is a page of YAML, not a data set */
#define RECIPE_MAX_PACKAGES 500
#define RECIPE_MAX_ITEMS    64      /* components, exclude_paths, provides, env */
#define RECIPE_MAX_TEST     4096
#define RECIPE_MAX_CUSTOMIZE 16     /* customize: scripts */
#define RECIPE_MAX_SCRIPT   16384   /* bytes of one customize: script */

typedef struct recipe_provide {
    char *label;              /* "torch" */
    char *package;            /* "python3-torch": its installed version is reported */
    char *note;               /* "(CPU)", or NULL */
} recipe_provide;

typedef struct recipe_env {
    char *name, *value;
} recipe_env;

typedef struct recipe {
    char name[65];            /* the runtime's name: [A-Za-z0-9._-], at most 64, not starting with '.' */
    char version[64];
    char suite[33];           /* bookworm */
    char variant[16];         /* mmdebstrap's variant: apt (default), minbase, essential, required, ... */
    char mirror[256];         /* "" = the machine's (runtimes.mirror, then /etc/apt, then deb.debian.org) */
    char *description;        /* "" when not given */
    char **components;        /* default: main */
    size_t ncomponents;
    char **packages;          /* Debian package names, "name" or "name=version" */
    size_t npackages;
    bool recommends;          /* install Recommends too (apt's default); false unless asked */
    char **exclude;           /* dpkg path-exclude patterns; default: docs, man and info pages */
    size_t nexclude;
    bool exclude_given;
    recipe_provide *provides;
    size_t nprovides;
    recipe_env *env;
    size_t nenv;
    char *test;               /* a shell command that exits 0 when the runtime works; NULL none */
    char **customize;         /* shell scripts run in the new tree (chroot) after its packages are
                               * installed, in order, each with sh -e; a failing one fails the build */
    size_t ncustomize;
} recipe;

/* Reads text (len bytes, no NUL needed) into r. On failure r is left empty and e names the
 * field (a 400 validation error). */
int recipe_parse(const char *text, size_t len, recipe *r, jerr *e);
void recipe_free(recipe *r);

/* A Debian package name as policy allows it (lowercase letters, digits, + - .; at least two
 * characters, starting with a letter or digit), optionally followed by =VERSION. */
bool recipe_package_ok(const char *s);
/* Debian's upstream version of a package version: "1:1.24.2-1+b1" -> "1.24.2",
 * "1.13.1+dfsg-4" -> "1.13.1", "3.11.2-1+b1" -> "3.11.2". */
void recipe_upstream_version(const char *debian, char *out, size_t len);

#endif
