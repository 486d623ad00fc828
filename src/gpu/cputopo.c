/* CPU cores as Slurm numbers them (cputopo.h). */
#include "cputopo.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"

typedef struct core_key {
    int pkg_first, die, core, first; /* first: the core's lowest CPU id */
} core_key;

static int cmp_core(const void *a, const void *b)
{
    const core_key *x = a, *y = b;
    if (x->pkg_first != y->pkg_first)
        return x->pkg_first < y->pkg_first ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

void gpu_cputopo_from_ids(gpu_cputopo *t, int ncpus, const int *pkg, const int *die, const int *core)
{
    static core_key keys[CPUTOPO_MAX]; /* discovery runs on one thread at a time */
    if (ncpus > CPUTOPO_MAX)
        ncpus = CPUTOPO_MAX;
    t->ncpus = ncpus;
    t->ncores = 0;
    int nkeys = 0;
    for (int c = 0; c < ncpus; c++) {
        t->core[c] = pkg[c] == -2 ? -2 : -1;
        if (pkg[c] < 0)
            continue;
        int pkg_first = c;
        for (int d = 0; d < c; d++)
            if (pkg[d] == pkg[c]) {
                pkg_first = d;
                break;
            }
        int k = 0;
        while (k < nkeys && !(keys[k].pkg_first == pkg_first && keys[k].die == die[c] && keys[k].core == core[c]))
            k++;
        if (k == nkeys)
            keys[nkeys++] = (core_key){pkg_first, die[c], core[c], c};
    }
    qsort(keys, (size_t)nkeys, sizeof *keys, cmp_core);
    for (int c = 0; c < ncpus; c++) {
        if (pkg[c] < 0)
            continue;
        int pkg_first = c;
        for (int d = 0; d < c; d++)
            if (pkg[d] == pkg[c]) {
                pkg_first = d;
                break;
            }
        for (int k = 0; k < nkeys; k++)
            if (keys[k].pkg_first == pkg_first && keys[k].die == die[c] && keys[k].core == core[c]) {
                t->core[c] = (short)k;
                break;
            }
    }
    t->ncores = nkeys;
}

static int read_int(const char *dir, const char *name, int *v)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *s = read_file(path, &len);
    if (!s)
        return -1;
    char *end;
    long x = strtol(s, &end, 10);
    int ok = end != s && x >= -1 && x < 1 << 20;
    free(s);
    if (!ok)
        return -1;
    *v = (int)x;
    return 0;
}

int gpu_cputopo_read(const char *sys_root, gpu_cputopo *t)
{
    static int pkg[CPUTOPO_MAX], die[CPUTOPO_MAX], core[CPUTOPO_MAX];
    char dir[512];
    snprintf(dir, sizeof dir, "%s/devices/system/cpu", sys_root);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    for (int c = 0; c < CPUTOPO_MAX; c++)
        pkg[c] = -1;
    int ncpus = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        if (strncmp(de->d_name, "cpu", 3) || !de->d_name[3])
            continue;
        long c = strtol(de->d_name + 3, &end, 10);
        if (*end || c < 0 || c >= CPUTOPO_MAX)
            continue;
        char topo[800];
        snprintf(topo, sizeof topo, "%s/%s/topology", dir, de->d_name);
        int p, k, di = 0;
        if (read_int(topo, "physical_package_id", &p) < 0 || read_int(topo, "core_id", &k) < 0) {
            /* offline (its "online" says 0): no topology, and slurmd does not count it */
            char cdir[800];
            int on = 1;
            snprintf(cdir, sizeof cdir, "%s/%s", dir, de->d_name);
            if (read_int(cdir, "online", &on) == 0 && on == 0) {
                pkg[c] = -2;
                if (c + 1 > ncpus)
                    ncpus = (int)c + 1;
            }
            continue;
        }
        (void)read_int(topo, "die_id", &di); /* kernels before 5.2 have none */
        pkg[c] = p < 0 ? 0 : p;
        die[c] = di;
        core[c] = k;
        if (c + 1 > ncpus)
            ncpus = (int)c + 1;
    }
    closedir(d);
    if (!ncpus)
        return -1;
    gpu_cputopo_from_ids(t, ncpus, pkg, die, core);
    return 0;
}

int gpu_cputopo_cores(const gpu_cputopo *t, const char *cpulist, char *out, size_t outlen)
{
    static unsigned char bits[CPUTOPO_MAX];
    char canon[1024];
    int any = 0;
    out[0] = 0;
    if (!t->ncores || gpu_cpulist_normalize(cpulist, canon, sizeof canon) < 0)
        return -1;
    memset(bits, 0, sizeof bits);
    for (char *save = NULL, *r = strtok_r(canon, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
        int a, b;
        if (sscanf(r, "%d-%d", &a, &b) != 2)
            b = a = atoi(r);
        for (int c = a; c <= b; c++) {
            if (c >= t->ncpus || t->core[c] == -1)
                return -1;
            if (t->core[c] >= 0) {
                bits[t->core[c]] = 1;
                any = 1;
            }
        }
    }
    if (!any)
        return -1;
    size_t n = 0;
    for (int c = 0; c < t->ncores; c++) {
        if (!bits[c])
            continue;
        int e = c;
        while (e + 1 < t->ncores && bits[e + 1])
            e++;
        int w = e > c ? snprintf(out + n, outlen - n, "%s%d-%d", n ? "," : "", c, e)
                      : snprintf(out + n, outlen - n, "%s%d", n ? "," : "", c);
        if (w < 0 || (size_t)w >= outlen - n) {
            out[0] = 0;
            return -1;
        }
        n += (size_t)w;
        c = e;
    }
    return 0;
}

void gpu_cputopo_apply(const gpu_cputopo *t, gpu_inventory *inv)
{
    for (int i = 0; i < inv->n; i++) {
        gpu_dev *g = &inv->gpu[i];
        if (!*g->local_cpus || gpu_cputopo_cores(t, g->local_cpus, g->local_cores, sizeof g->local_cores) < 0)
            g->local_cores[0] = 0;
    }
}
