/* /proc + sysfs backend: what the kernel module itself publishes, so it works with no NVIDIA
 * library at all (a broken or mismatched userspace driver). It cannot see memory size, ECC or
 * NVLink; those stay unknown. Compute capability comes from the model table, the CUDA version
 * from the driver table. */
#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "backend_proc.h"
#include "gpu.h"

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    size_t i = 0;
    while (isspace((unsigned char)s[i]))
        i++;
    memmove(s, s + i, n - i + 1);
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 ..." and the open
 * module's "... Open Kernel Module for x86_64  535.129.03  Release Build ...". */
int backend_proc_driver_version(const char *text, char *out, size_t outlen)
{
    const char *p = strstr(text, "Module");
    if (!p)
        return -1;
    for (p += 6; *p && *p != '\n'; p++) {
        if (isdigit((unsigned char)*p) && (p[-1] == ' ' || p[-1] == '\t')) {
            size_t n = strspn(p, "0123456789.");
            if (memchr(p, '.', n) && n < outlen) {
                snprintf(out, outlen, "%.*s", (int)n, p);
                return 0;
            }
        }
    }
    return -1;
}

int backend_proc_read_information(const char *path, gpu_dev *g)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    int have_uuid = 0, have_bus = 0, have_minor = 0;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = 0;
        char *k = line, *v = colon + 1;
        trim(k);
        trim(v);
        if (strcmp(k, "Model") == 0)
            snprintf(g->name, sizeof g->name, "%s", v);
        else if (strcmp(k, "GPU UUID") == 0)
            have_uuid = snprintf(g->uuid, sizeof g->uuid, "%s", v) > 0;
        else if (strcmp(k, "Video BIOS") == 0 && strcmp(v, "??.??.??.??.??") != 0) {
            /* the module prints hex digits in lower case, NVML and nvidia-smi in upper case */
            snprintf(g->vbios, sizeof g->vbios, "%s", v);
            for (char *c = g->vbios; *c; c++)
                *c = (char)toupper((unsigned char)*c);
        }
        else if (strcmp(k, "Bus Location") == 0)
            have_bus = gpu_bus_normalize(v, g->bus_id) == 0;
        else if (strcmp(k, "Device Minor") == 0)
            have_minor = sscanf(v, "%d", &g->minor) == 1;
    }
    fclose(f);
    return have_uuid && have_bus && have_minor ? 0 : -1;
}

/* MIG instances that exist: <proc>/driver/nvidia/capabilities/gpu<minor>/mig/gi<g>/ci<c>. */
static void read_mig(const char *proc_root, gpu_dev *g)
{
    char path[512];
    snprintf(path, sizeof path, "%s/driver/nvidia/capabilities/gpu%d/mig", proc_root, g->minor);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    int gis[16], ngi = 0;
    while ((de = readdir(d)) && ngi < 16)
        if (sscanf(de->d_name, "gi%d", &gis[ngi]) == 1)
            ngi++;
    closedir(d);
    for (int a = 1; a < ngi; a++) /* readdir order is arbitrary; NVML lists by instance id */
        for (int b = a; b > 0 && gis[b - 1] > gis[b]; b--) {
            int t = gis[b];
            gis[b] = gis[b - 1];
            gis[b - 1] = t;
        }
    for (int i = 0; i < ngi; i++) {
        char gpath[600];
        snprintf(gpath, sizeof gpath, "%s/gi%d", path, gis[i]);
        DIR *gd = opendir(gpath);
        if (!gd)
            continue;
        int cis[8], nci = 0;
        while ((de = readdir(gd)) && nci < 8)
            if (sscanf(de->d_name, "ci%d", &cis[nci]) == 1)
                nci++;
        closedir(gd);
        for (int a = 1; a < nci; a++)
            for (int b = a; b > 0 && cis[b - 1] > cis[b]; b--) {
                int t = cis[b];
                cis[b] = cis[b - 1];
                cis[b - 1] = t;
            }
        for (int c = 0; c < nci && g->nmig < GPU_MIG_MAX; c++) {
            g->mig[g->nmig].gi = gis[i];
            g->mig[g->nmig].ci = cis[c];
            g->nmig++;
        }
    }
    if (g->nmig)
        g->mig_enabled = 1;
}

int gpu_backend_proc(const gpu_config *c, gpu_inventory *inv, jerr *e)
{
    char path[512];
    snprintf(path, sizeof path, "%s/driver/nvidia/version", c->proc_root);
    char *ver = read_file(path, NULL);
    if (!ver)
        return jerr_set(e, ENOENT, "/proc: %s does not exist: the NVIDIA kernel module is not loaded", path);
    if (backend_proc_driver_version(ver, inv->driver_version, sizeof inv->driver_version) < 0)
        log_warn("gpu: /proc: cannot read a driver version in %s", path);
    free(ver);
    inv->cuda_driver_version = gpu_driver_cuda_version(inv->driver_version);

    snprintf(path, sizeof path, "%s/driver/nvidia/gpus", c->proc_root);
    DIR *d = opendir(path);
    if (!d)
        return jerr_set(e, ENOENT, "/proc: cannot list %s", path);
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (inv->n == GPU_MAX) {
            log_warn("gpu: /proc lists more than %d GPUs; joblet manages the first %d", GPU_MAX, GPU_MAX);
            break;
        }
        gpu_dev *g = &inv->gpu[inv->n];
        char info[800];
        snprintf(info, sizeof info, "%s/%s/information", path, de->d_name);
        if (backend_proc_read_information(info, g) < 0) {
            rc = jerr_set(e, EIO, "/proc: %s lacks GPU UUID, Bus Location or Device Minor", info);
            break;
        }
        if (gpu_name_compute_capability(g->name, &g->cc_major, &g->cc_minor) < 0)
            log_warn("gpu: /proc: compute capability of '%s' is not in joblet's model table", g->name);
        gpu_sysfs_locality(c->sys_root, g);
        read_mig(c->proc_root, g);
        gpu_mig_cap_minors(c->proc_root, g);
        inv->n++;
    }
    closedir(d);
    if (rc < 0)
        return -1;
    gpu_inventory_finish(inv);
    if (gpu_sysfs_levels(c->sys_root, inv) < 0)
        log_warn("gpu: /proc: some PCIe paths are missing under %s/bus/pci/devices; those pairs are unknown",
                 c->sys_root);
    return 0;
}
