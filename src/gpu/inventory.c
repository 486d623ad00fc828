#include "inventory.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CPU_BITS 4096

void gpu_inventory_init(gpu_inventory *inv, const char *backend)
{
    memset(inv, 0, sizeof *inv);
    snprintf(inv->backend, sizeof inv->backend, "%s", backend);
    memset(inv->nvlink, -1, sizeof inv->nvlink);
    memset(inv->level, -1, sizeof inv->level);
    for (int i = 0; i < GPU_MAX; i++) {
        gpu_dev *g = &inv->gpu[i];
        g->minor = g->numa_node = g->ecc = g->mig_enabled = -1;
        g->memory_total_mb = g->memory_used_mb = -1;
        g->cc_major = g->cc_minor = -1;
        g->temperature_c = g->utilization_pct = g->power_w = -1;
        for (int m = 0; m < GPU_MIG_MAX; m++) {
            g->mig[m].memory_mb = -1;
            g->mig[m].gi_cap_minor = g->mig[m].ci_cap_minor = -1;
        }
    }
}

static const struct { int level; const char *name; } level_names[] = {
    {GPU_LVL_X, "X"}, {GPU_LVL_PIX, "PIX"}, {GPU_LVL_PXB, "PXB"},
    {GPU_LVL_PHB, "PHB"}, {GPU_LVL_NODE, "NODE"}, {GPU_LVL_SYS, "SYS"},
};

const char *gpu_level_name(int level)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (level_names[i].level == level)
            return level_names[i].name;
    return "";
}

int gpu_level_parse(const char *s)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (strcmp(level_names[i].name, s) == 0)
            return level_names[i].level;
    return -1;
}

int gpu_bus_normalize(const char *in, char out[16])
{
    unsigned dom, bus, dev, fn;
    char tail;
    if (sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4 || dom > 0xffff || bus > 0xff ||
        dev > 0x1f || fn > 7)
        return -1;
    snprintf(out, 16, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
    return 0;
}

static void render_cpus(const unsigned char *bits, char *out, size_t outlen)
{
    size_t n = 0;
    out[0] = 0;
    for (int c = 0; c < CPU_BITS; c++) {
        if (!bits[c])
            continue;
        int e = c;
        while (e + 1 < CPU_BITS && bits[e + 1])
            e++;
        int w = e > c ? snprintf(out + n, outlen - n, "%s%d-%d", n ? "," : "", c, e)
                      : snprintf(out + n, outlen - n, "%s%d", n ? "," : "", c);
        if (w < 0 || (size_t)w >= outlen - n)
            return;
        n += (size_t)w;
        c = e;
    }
}

int gpu_cpulist_normalize(const char *in, char *out, size_t outlen)
{
    unsigned char bits[CPU_BITS] = {0};
    const char *p = in;
    int any = 0;
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0 || a >= CPU_BITS)
            return -1;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b >= CPU_BITS)
                return -1;
            p = end;
        }
        if (*p && *p != ',' && !isspace((unsigned char)*p))
            return -1;
        for (long c = a; c <= b; c++)
            bits[c] = 1;
        any = 1;
    }
    if (!any)
        return -1;
    render_cpus(bits, out, outlen);
    return 0;
}

void gpu_cpulist_from_mask(const unsigned long *mask, int nwords, char *out, size_t outlen)
{
    unsigned char bits[CPU_BITS] = {0};
    const int wbits = (int)(8 * sizeof(unsigned long));
    for (int w = 0; w < nwords && w * wbits < CPU_BITS; w++)
        for (int b = 0; b < wbits; b++)
            if (mask[w] >> b & 1ul)
                bits[w * wbits + b] = 1;
    render_cpus(bits, out, outlen);
}

/* Devices in bus order with index = position, as NVML and CUDA_DEVICE_ORDER=PCI_BUS_ID number them;
 * the pair tables move with their devices. */
static void sort_by_bus(gpu_inventory *inv)
{
    int order[GPU_MAX];
    for (int i = 0; i < inv->n; i++)
        order[i] = i;
    for (int i = 1; i < inv->n; i++)
        for (int j = i; j > 0 && strcmp(inv->gpu[order[j - 1]].bus_id, inv->gpu[order[j]].bus_id) > 0; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    static gpu_dev devs[GPU_MAX]; /* discovery runs on one thread at a time */
    signed char nv[GPU_MAX][GPU_MAX], lv[GPU_MAX][GPU_MAX];
    for (int i = 0; i < inv->n; i++) {
        devs[i] = inv->gpu[order[i]];
        for (int j = 0; j < inv->n; j++) {
            nv[i][j] = inv->nvlink[order[i]][order[j]];
            lv[i][j] = inv->level[order[i]][order[j]];
        }
    }
    for (int i = 0; i < inv->n; i++) {
        inv->gpu[i] = devs[i];
        inv->gpu[i].index = i;
        for (int j = 0; j < inv->n; j++) {
            inv->nvlink[i][j] = nv[i][j];
            inv->level[i][j] = lv[i][j];
        }
    }
}

static int switch_links(const gpu_dev *g)
{
    int n = 0;
    for (int l = 0; l < g->nlinks; l++)
        n += g->links[l].active && strcmp(g->links[l].remote_type, "switch") == 0;
    return n;
}

void gpu_inventory_finish(gpu_inventory *inv)
{
    sort_by_bus(inv);
    for (int i = 0; i < inv->n; i++) {
        inv->level[i][i] = GPU_LVL_X;
        inv->nvlink[i][i] = 0;
    }
    /* NVLink pair counts from per-link remote ids: direct links count one each; on NVSwitch
     * systems every pair of switch-attached GPUs is as connected as the lesser of the two. */
    for (int i = 0; i < inv->n; i++) {
        const gpu_dev *a = &inv->gpu[i];
        if (!a->links_known)
            continue;
        for (int j = 0; j < inv->n; j++) {
            const gpu_dev *b = &inv->gpu[j];
            if (i == j || !b->links_known)
                continue;
            int direct = 0;
            for (int l = 0; l < a->nlinks; l++)
                direct += a->links[l].active && strcmp(a->links[l].remote_type, "gpu") == 0 &&
                          strcmp(a->links[l].remote_bus, b->bus_id) == 0;
            int sa = switch_links(a), sb = switch_links(b);
            int via_switch = sa && sb ? (sa < sb ? sa : sb) : 0;
            inv->nvlink[i][j] = (signed char)(direct + via_switch);
        }
    }
}

int gpu_find(const gpu_inventory *inv, const char *s)
{
    /* an index is digits only: strtol alone would take "-0", "+1" and " 1" for GPUs 0 and 1 */
    size_t nd = strspn(s, "0123456789");
    if (nd && !s[nd]) {
        long v = nd <= 9 ? strtol(s, NULL, 10) : -1;
        return v >= 0 && v < inv->n ? (int)v : -1;
    }
    for (int i = 0; i < inv->n; i++)
        if (strcasecmp(inv->gpu[i].uuid, s) == 0)
            return i;
    return -1;
}

static json_t *int_or_null(long long v)
{
    return v < 0 ? json_null() : json_integer(v);
}

static json_t *str_or_null(const char *s)
{
    return *s ? json_string(s) : json_null();
}

static json_t *bool_or_null(int v)
{
    return v < 0 ? json_null() : json_boolean(v);
}

json_t *gpu_dev_json(const gpu_inventory *inv, int i)
{
    const gpu_dev *g = &inv->gpu[i];
    json_t *o = json_object();
    char cc[16] = "";
    if (g->cc_major >= 0)
        snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
    json_object_set_new(o, "index", json_integer(g->index));
    json_object_set_new(o, "minor", int_or_null(g->minor));
    json_object_set_new(o, "uuid", str_or_null(g->uuid));
    json_object_set_new(o, "bus_id", str_or_null(g->bus_id));
    json_object_set_new(o, "name", str_or_null(g->name));
    json_object_set_new(o, "vbios", str_or_null(g->vbios));
    json_object_set_new(o, "memory_total_mb", int_or_null(g->memory_total_mb));
    json_object_set_new(o, "memory_used_mb", int_or_null(g->memory_used_mb));
    json_object_set_new(o, "compute_capability", str_or_null(cc));
    json_object_set_new(o, "numa_node", json_integer(g->numa_node));
    json_object_set_new(o, "local_cpus", str_or_null(g->local_cpus));
    json_object_set_new(o, "local_cores", str_or_null(g->local_cores));
    json_object_set_new(o, "ecc_enabled", bool_or_null(g->ecc));
    json_object_set_new(o, "mig_enabled", bool_or_null(g->mig_enabled));
    json_object_set_new(o, "temperature_c", int_or_null(g->temperature_c));
    json_object_set_new(o, "utilization_pct", int_or_null(g->utilization_pct));
    json_object_set_new(o, "power_w", int_or_null(g->power_w));
    json_object_set_new(o, "simulated", json_boolean(inv->simulated));
    json_object_set_new(o, "problem", str_or_null(g->problem));
    if (g->links_known) {
        json_t *links = json_array();
        for (int l = 0; l < g->nlinks; l++) {
            const gpu_link *k = &g->links[l];
            json_t *lo = json_object();
            json_object_set_new(lo, "link", json_integer(k->link));
            json_object_set_new(lo, "active", json_boolean(k->active));
            json_object_set_new(lo, "remote_type", json_string(k->remote_type));
            json_object_set_new(lo, "remote_bus", str_or_null(k->remote_bus));
            json_array_append_new(links, lo);
        }
        json_object_set_new(o, "nvlinks", links);
    } else {
        json_object_set_new(o, "nvlinks", json_null());
    }
    json_t *mig = json_array();
    for (int m = 0; m < g->nmig; m++) {
        const gpu_mig *x = &g->mig[m];
        json_t *mo = json_object();
        json_object_set_new(mo, "gi", json_integer(x->gi));
        json_object_set_new(mo, "ci", json_integer(x->ci));
        json_object_set_new(mo, "profile", str_or_null(x->profile));
        json_object_set_new(mo, "uuid", str_or_null(x->uuid));
        json_object_set_new(mo, "memory_mb", int_or_null(x->memory_mb));
        json_object_set_new(mo, "gi_cap_minor", int_or_null(x->gi_cap_minor));
        json_object_set_new(mo, "ci_cap_minor", int_or_null(x->ci_cap_minor));
        json_array_append_new(mig, mo);
    }
    json_object_set_new(o, "mig", mig);
    json_t *nv = json_array(), *pcie = json_array();
    for (int j = 0; j < inv->n; j++) {
        json_array_append_new(nv, int_or_null(inv->nvlink[i][j]));
        json_array_append_new(pcie, inv->level[i][j] < 0 ? json_null() : json_string(gpu_level_name(inv->level[i][j])));
    }
    json_object_set_new(o, "nvlink_peers", nv);
    json_object_set_new(o, "pcie_levels", pcie);
    return o;
}

json_t *gpu_inventory_json(const gpu_inventory *inv)
{
    json_t *o = json_object();
    char cuda[16] = "";
    if (inv->cuda_driver_version > 0)
        snprintf(cuda, sizeof cuda, "%d.%d", inv->cuda_driver_version / 1000, inv->cuda_driver_version % 1000 / 10);
    json_object_set_new(o, "backend", json_string(inv->backend));
    json_object_set_new(o, "simulated", json_boolean(inv->simulated));
    json_object_set_new(o, "driver_version", str_or_null(inv->driver_version));
    json_object_set_new(o, "cuda_driver_version", str_or_null(cuda));
    json_object_set_new(o, "discovery_ms", json_real(inv->discovery_ms));
    json_t *gpus = json_array();
    for (int i = 0; i < inv->n; i++)
        json_array_append_new(gpus, gpu_dev_json(inv, i));
    json_object_set_new(o, "gpus", gpus);
    return o;
}
