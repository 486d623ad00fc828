/* Finding and reading runtimes (runtimes.h). A manifest is read once (common/manifest.c) and
 * kept until its file changes, so a job's start costs a stat(), not a parse. */
#include "runtimes.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "../common/util.h"
#include "state.h"

static char dir_path[600];
static runtime **cache;
static size_t ncache;

const char *runtimes_dir(void) { return dir_path; }

int runtimes_init(jerr *e)
{
    if (core.cfg.runtimes_dir[0])
        snprintf(dir_path, sizeof dir_path, "%s", core.cfg.runtimes_dir);
    else
        snprintf(dir_path, sizeof dir_path, "%s/runtimes", core.cfg.state_dir);
    /* root's alone, as volumes.dir: the trees hold setuid-root programs (Debian's su, newgrp),
     * which a host user who reached them would run as root, outside any job; jobs get the tree
     * through the mounts their shim makes as root */
    if (mkdir_p(dir_path, 0700, e) < 0)
        return -1;
    if (chmod(dir_path, 0700) < 0)
        return jerr_sys(e, "chmod 0700 %s (runtimes.dir)", dir_path);
    return 0;
}

static void runtime_free(runtime *r)
{
    if (!r)
        return;
    manifest_free(&r->m);
    for (size_t i = 0; i < r->nenv; i++)
        free(r->env[i].name), free(r->env[i].value);
    free(r->env);
    free(r);
}

void runtimes_forget(const char *name)
{
    for (size_t i = 0; i < ncache; i++)
        if (!strcmp(cache[i]->name, name)) {
            runtime_free(cache[i]);
            cache[i] = cache[--ncache];
            return;
        }
}

/* manifest.yml into r; -1 and why when it cannot be read or names another runtime. */
static int read_manifest(runtime *r, const char *path, jerr *e)
{
    jerr me = {0};
    if (manifest_read(path, &r->m, &me) < 0)
        return jerr_set(e, EINVAL, "runtime '%s': %s", r->name, me.msg);
    if (strcmp(r->m.name, r->name))
        return jerr_set(e, EINVAL, "runtime '%s': %s names '%s'", r->name, path, r->m.name);
    r->env = xcalloc(r->m.nenv ? r->m.nenv : 1, sizeof *r->env);
    for (size_t i = 0; i < r->m.nenv; i++)
        r->env[r->nenv++] = (jobreq_pair){xstrdup(r->m.env[i].name), xstrdup(r->m.env[i].value)};
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char **runtimes_names(size_t *n)
{
    *n = 0;
    char **names = NULL;
    DIR *d = opendir(dir_path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char m[1200];
        struct stat st;
        snprintf(m, sizeof m, "%s/%s/manifest.yml", dir_path, de->d_name);
        if (de->d_name[0] == '.' || !jobreq_volume_name_ok(de->d_name, strlen(de->d_name)) || stat(m, &st) < 0)
            continue;
        names = xrealloc(names, (*n + 1) * sizeof *names);
        names[(*n)++] = xstrdup(de->d_name);
    }
    if (d)
        closedir(d);
    if (*n)
        qsort(names, *n, sizeof *names, by_name);
    return names;
}

static int unknown(const char *name, jerr *e)
{
    size_t n;
    char **names = runtimes_names(&n);
    char have[600] = "";
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(have);
        if (l < sizeof have - 80)
            snprintf(have + l, sizeof have - l, "%s%s", l ? ", " : "", names[i]);
        free(names[i]);
    }
    free(names);
    if (!n)
        return jerr_field(e, "runtime", "runtime: no runtime '%.64s' on this machine; it has none yet (an admin "
                                        "builds one: rnx runtime build runtimes/python-3.11-ml.yml)", name);
    return jerr_field(e, "runtime", "runtime: no runtime '%.64s' on this machine; it has %s (rnx runtime list)", name,
                      have);
}

int runtimes_find(const char *name, const runtime **out, jerr *e)
{
    if (!jobreq_volume_name_ok(name, strlen(name)))
        return unknown(name, e);
    char m[800];
    snprintf(m, sizeof m, "%s/%s/manifest.yml", dir_path, name);
    struct stat st, rs;
    runtime *have = NULL;
    for (size_t i = 0; i < ncache; i++)
        if (!strcmp(cache[i]->name, name))
            have = cache[i];
    if (stat(m, &st) < 0) {
        if (have)
            runtimes_forget(name);
        return unknown(name, e);
    }
    if (have && have->mtime_s == (int64_t)st.st_mtime && have->mtime_ns == (int64_t)st.st_mtim.tv_nsec &&
        have->ino == (uint64_t)st.st_ino) {
        *out = have;
        return 0;
    }
    runtime *r = xcalloc(1, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->dir, sizeof r->dir, "%s/%s", dir_path, name);
    snprintf(r->root, sizeof r->root, "%s/rootfs", r->dir);
    r->mtime_s = (int64_t)st.st_mtime;
    r->mtime_ns = (int64_t)st.st_mtim.tv_nsec;
    r->ino = (uint64_t)st.st_ino;
    if (read_manifest(r, m, e) < 0 || (stat(r->root, &rs) < 0 && jerr_sys(e, "runtime '%s': %s", name, r->root) < 0)) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        log_err("%s", why);
        jerr_field(e, "runtime", "runtime: '%.64s' is installed but broken: %s", name, why);
        runtime_free(r);
        return -1;
    }
    if (have)
        runtimes_forget(name);
    cache = xrealloc(cache, (ncache + 1) * sizeof *cache);
    cache[ncache++] = r;
    *out = r;
    return 0;
}
