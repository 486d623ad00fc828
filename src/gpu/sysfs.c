/* What sysfs and /proc tell every backend: NUMA locality, PCIe paths, MIG capability minors. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/util.h"
#include "gpu.h"

void gpu_sysfs_locality(const char *sys_root, gpu_dev *g)
{
    char path[512];
    snprintf(path, sizeof path, "%s/bus/pci/devices/%s/numa_node", sys_root, g->bus_id);
    char *s = read_file(path, NULL);
    if (s)
        g->numa_node = atoi(s) < 0 ? -1 : atoi(s);
    free(s);
    snprintf(path, sizeof path, "%s/bus/pci/devices/%s/local_cpulist", sys_root, g->bus_id);
    s = read_file(path, NULL);
    if (s && gpu_cpulist_normalize(s, g->local_cpus, sizeof g->local_cpus) < 0)
        g->local_cpus[0] = 0;
    free(s);
}

/* /sys/bus/pci/devices/<bus> links to .../devices/pci0000:16/0000:16:01.0/0000:17:00.0/<bus>:
 * the first component is the host bridge, the ones between it and the device are bridges. */
int gpu_sysfs_pci_path(const char *sys_root, const char *bus, char hostbridge[32], char path[][16], int max)
{
    char link[512], target[PATH_MAX];
    snprintf(link, sizeof link, "%s/bus/pci/devices/%s", sys_root, bus);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0)
        return -1;
    target[n] = 0;
    char *p = strstr(target, "devices/pci");
    if (!p)
        return -1;
    p += strlen("devices/");
    int count = 0, first = 1;
    for (char *save = NULL, *c = strtok_r(p, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (first) {
            snprintf(hostbridge, 32, "%s", c);
            first = 0;
        } else if (strcmp(c, bus) == 0) {
            return count;
        } else if (count < max) {
            snprintf(path[count++], 16, "%s", c);
        } else {
            return -1;
        }
    }
    return -1;
}

/* The rule in tests/fixtures/README.md, which the fake NVML and the fixture generator share. */
int gpu_level_from_paths(const char *hb_a, char pa[][16], int na, int numa_a, const char *hb_b, char pb[][16],
                         int nb, int numa_b)
{
    if (strcmp(hb_a, hb_b) != 0)
        return numa_a >= 0 && numa_a == numa_b ? GPU_LVL_NODE : GPU_LVL_SYS;
    int k = 0;
    while (k < na && k < nb && strcmp(pa[k], pb[k]) == 0)
        k++;
    if (k == 0)
        return GPU_LVL_PHB;
    return (na > nb ? na : nb) - k <= 1 ? GPU_LVL_PIX : GPU_LVL_PXB;
}

int gpu_sysfs_levels(const char *sys_root, gpu_inventory *inv)
{
    char hb[GPU_MAX][32], path[GPU_MAX][8][16];
    int depth[GPU_MAX], missing = 0;
    for (int i = 0; i < inv->n; i++)
        depth[i] = gpu_sysfs_pci_path(sys_root, inv->gpu[i].bus_id, hb[i], path[i], 8);
    for (int i = 0; i < inv->n; i++)
        for (int j = 0; j < inv->n; j++) {
            if (i == j || inv->level[i][j] >= 0)
                continue;
            if (depth[i] < 0 || depth[j] < 0) {
                missing = 1;
                continue;
            }
            inv->level[i][j] = (signed char)gpu_level_from_paths(hb[i], path[i], depth[i], inv->gpu[i].numa_node,
                                                                 hb[j], path[j], depth[j], inv->gpu[j].numa_node);
        }
    return missing ? -1 : 0;
}

/* mig-minors lists every possible "gpu<minor>/gi<g>/access <N>" and ".../ci<c>/access <N>";
 * only the driver knows the numbering, so it is read, never computed. */
void gpu_mig_cap_minors(const char *proc_root, gpu_dev *g)
{
    if (!g->nmig)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s/driver/nvidia-caps/mig-minors", proc_root);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[128], want_gi[GPU_MIG_MAX][48], want_ci[GPU_MIG_MAX][48];
    for (int m = 0; m < g->nmig; m++) {
        snprintf(want_gi[m], sizeof want_gi[m], "gpu%d/gi%d/access", g->minor, g->mig[m].gi);
        snprintf(want_ci[m], sizeof want_ci[m], "gpu%d/gi%d/ci%d/access", g->minor, g->mig[m].gi, g->mig[m].ci);
    }
    while (fgets(line, sizeof line, f)) {
        char name[64];
        int minor;
        if (sscanf(line, "%63s %d", name, &minor) != 2)
            continue;
        for (int m = 0; m < g->nmig; m++) {
            if (strcmp(name, want_gi[m]) == 0)
                g->mig[m].gi_cap_minor = minor;
            if (strcmp(name, want_ci[m]) == 0)
                g->mig[m].ci_cap_minor = minor;
        }
    }
    fclose(f);
}
