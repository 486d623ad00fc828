/* What a killed joblet left for jobs the database does not hold (orphans.h). */
#include "orphans.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../exec/cgroup.h"
#include "state.h"
#include "workfs.h"

bool orphans_named_by_id(const char *name, char id[37])
{
    for (int i = 0; i < 36; i++) {
        char c = name[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    if (name[36] && name[36] != '.')
        return false;
    memcpy(id, name, 36);
    id[36] = 0;
    return true;
}

static int cmp_id(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The known jobs' IDs, sorted: each name found is looked up in O(log n). */
static const char **ids;
static size_t nids;

static bool known(const char *id)
{
    return bsearch(&id, ids, nids, sizeof *ids, cmp_id) != NULL;
}

/* A name that is exactly an unknown job's ID (a /work directory). */
static bool orphan_work(const char *name)
{
    char id[37];
    return orphans_named_by_id(name, id) && !name[36] && !known(id);
}

/* Removes each entry of dir named by an unknown job's ID; how many. */
static size_t sweep_dir(const char *dir, const char *what)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char id[37], path[1200];
        if (!orphans_named_by_id(de->d_name, id) || known(id))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (rm_rf(path) < 0)
            log_warn("%s %s of job %s, which the database does not hold: not removed: %s", what, path, id,
                     strerror(errno));
        else
            n++;
    }
    closedir(d);
    return n;
}

/* The cgroups of unknown jobs in one directory of a tree: "<root>" for jobs made by a joblet
 * before users had levels, "<root>/user-<uid>" (the level h is) for the others. Their
 * processes (a shim started before its job was committed) killed, the cgroup removed from every
 * tree (cg_job_paths names them all). */
static size_t sweep_cgroup_dir(const char *dir, const cg_host *h)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char id[37];
        if (de->d_type != DT_DIR || !orphans_named_by_id(de->d_name, id) || de->d_name[36] || known(id))
            continue;
        cg_job cg;
        cg_job_paths(h, id, &cg);
        int procs = cg_nprocs(&cg);
        if (procs > 0) {
            log_warn("cgroup of job %s, which the database does not hold: %d processes killed", id, procs);
            cg_kill_all(&cg);
        }
        jerr e = {0};
        if (cg_destroy(&cg, &e) < 0)
            log_warn("cgroup of job %s, which the database does not hold: %s", id, e.msg);
        else
            n++;
    }
    closedir(d);
    return n;
}

/* One tree: the jobs' root, and each user's level under it. */
static size_t sweep_cgroup_tree(const char *tree)
{
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", tree, core.cg.root);
    size_t n = sweep_cgroup_dir(dir, &core.cg);
    DIR *d = opendir(dir);
    if (!d)
        return n;
    struct dirent *de;
    while ((de = readdir(d))) {
        unsigned uid;
        char tail[2], level[700];
        if (de->d_type != DT_DIR || sscanf(de->d_name, "user-%u%1s", &uid, tail) != 1)
            continue;
        cg_host uh;
        cg_user_host(&core.cg, uid, &uh);
        snprintf(level, sizeof level, "%s/%s", dir, de->d_name);
        n += sweep_cgroup_dir(level, &uh);
    }
    closedir(d);
    return n;
}

/* Every tree: cgroup2's, each v1 controller's and the v1 freezer's where jobs get a freezer
 * cgroup (a cgroup may be left in some only). */
static size_t sweep_cgroups(void)
{
    size_t n = core.cg.unified[0] ? sweep_cgroup_tree(core.cg.unified) : 0;
    for (int c = 0; c < CGC_N; c++)
        if (core.cg.v1[c][0])
            n += sweep_cgroup_tree(core.cg.v1[c]);
    if (core.cg.freezer_jobs)
        n += sweep_cgroup_tree(core.cg.freezer);
    return n;
}

void orphans_sweep(void)
{
    int64_t t0 = mono_ns();
    nids = core.njobs;
    ids = xcalloc(nids ? nids : 1, sizeof *ids);
    for (size_t i = 0; i < nids; i++)
        ids[i] = core.jobs[i]->id;
    qsort(ids, nids, sizeof *ids, cmp_id);
    char bundles[700];
    snprintf(bundles, sizeof bundles, "%s/runsc/bundles", core.cfg.state_dir);
    size_t dirs = sweep_dir(core.jobs_dir, "job directory");
    size_t works = workfs_sweep(orphan_work);
    size_t bun = sweep_dir(bundles, "gVisor bundle");
    size_t cgs = sweep_cgroups();
    free(ids);
    ids = NULL;
    if (dirs + works + bun + cgs)
        log_info("removed what %zu job directories, %zu /work directories, %zu gVisor bundles and %zu cgroups of jobs "
                 "the database does not hold left (a joblet killed while it created them), in %.1f ms",
                 dirs, works, bun, cgs, (double)(mono_ns() - t0) / 1e6);
}
