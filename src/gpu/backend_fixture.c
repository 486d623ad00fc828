/* Fixture backend: a machine described in JSON (tests/fixtures/README.md), for demos and for
 * planning on hosts without GPUs. Everything it reports is marked simulated: no device node,
 * driver or library behind it exists. The file is checked strictly, like any other input. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/jsonx.h"
#include "gpu.h"

static const char *const machine_keys[] = {"description", "driver_version", "cuda_driver_version", "nvml", "smi",
                                           "gpus", NULL};
static const char *const gpu_keys[] = {
    "index", "minor", "uuid", "bus_id", "pci_path", "pci_device_id", "name", "vbios", "memory_total_mb",
    "memory_used_mb", "utilization_pct", "temperature_c", "power_w", "compute_capability", "numa_node",
    "local_cpus", "ecc_enabled", "nvlinks", "mig_enabled", "mig", NULL};
static const char *const link_keys[] = {"link", "active", "remote_type", "remote_bus", NULL};
static const char *const mig_keys[] = {"gi", "ci", "profile", "uuid", "memory_mb", NULL};

static int get_int(json_t *o, const char *k, int64_t lo, int64_t hi, int64_t *out, const char *where, jerr *e)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return jerr_set(e, EINVAL, "%s.%s: must be a whole number from %lld to %lld", where, k, (long long)lo,
                        (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

static int get_str(json_t *o, const char *k, char *out, size_t outlen, int required, const char *where, jerr *e)
{
    json_t *v = json_object_get(o, k);
    if ((!v || json_is_null(v)) && !required)
        return 0;
    if (!json_is_string(v) || json_string_length(v) >= outlen || (required && !json_string_length(v)))
        return jerr_set(e, EINVAL, "%s.%s: must be a string of 1 to %zu characters", where, k, outlen - 1);
    snprintf(out, outlen, "%s", json_string_value(v));
    return 0;
}

static int get_bool(json_t *o, const char *k, int *out, const char *where, jerr *e)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return jerr_set(e, EINVAL, "%s.%s: must be true, false or null", where, k);
    *out = json_is_true(v);
    return 0;
}

typedef struct pcipath {
    char hb[32];
    char path[8][16];
    int n;
} pcipath;

static int read_gpu(json_t *jg, gpu_dev *g, pcipath *pp, const char *where, jerr *e)
{
    int64_t v;
    char cc[16] = "";
    if (jx_only_keys(jg, gpu_keys, where, e) < 0 || get_str(jg, "uuid", g->uuid, sizeof g->uuid, 1, where, e) < 0 ||
        get_str(jg, "name", g->name, sizeof g->name, 1, where, e) < 0 ||
        get_str(jg, "vbios", g->vbios, sizeof g->vbios, 0, where, e) < 0 ||
        get_str(jg, "compute_capability", cc, sizeof cc, 0, where, e) < 0)
        return -1;
    char bus[32];
    if (get_str(jg, "bus_id", bus, sizeof bus, 1, where, e) < 0)
        return -1;
    if (gpu_bus_normalize(bus, g->bus_id) < 0)
        return jerr_set(e, EINVAL, "%s.bus_id: '%s' is not a PCI address like 0000:18:00.0", where, bus);
    v = -1;
    if (get_int(jg, "minor", 0, 254, &v, where, e) < 0)
        return -1;
    if (v < 0)
        return jerr_set(e, EINVAL, "%s.minor: required (the /dev/nvidia<minor> number, 0 to 254)", where);
    g->minor = (int)v;
    struct { const char *k; int64_t lo, hi; void *dst; int wide; } ints[] = {
        {"memory_total_mb", 0, 1 << 30, &g->memory_total_mb, 1}, {"memory_used_mb", 0, 1 << 30, &g->memory_used_mb, 1},
        {"utilization_pct", 0, 100, &g->utilization_pct, 0},    {"temperature_c", 0, 200, &g->temperature_c, 0},
        {"power_w", 0, 100000, &g->power_w, 0},                  {"numa_node", -1, 1023, &g->numa_node, 0},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        v = -2;
        if (get_int(jg, ints[i].k, ints[i].lo, ints[i].hi, &v, where, e) < 0)
            return -1;
        if (v == -2)
            continue;
        if (ints[i].wide)
            *(int64_t *)ints[i].dst = v;
        else
            *(int *)ints[i].dst = (int)v;
    }
    if (*cc && sscanf(cc, "%d.%d", &g->cc_major, &g->cc_minor) != 2)
        return jerr_set(e, EINVAL, "%s.compute_capability: '%s' must look like \"8.0\"", where, cc);
    char cpus[256] = "";
    if (get_str(jg, "local_cpus", cpus, sizeof cpus, 0, where, e) < 0)
        return -1;
    if (*cpus && gpu_cpulist_normalize(cpus, g->local_cpus, sizeof g->local_cpus) < 0)
        return jerr_set(e, EINVAL, "%s.local_cpus: '%s' is not a CPU list like \"0-19,40-59\"", where, cpus);
    if (get_bool(jg, "ecc_enabled", &g->ecc, where, e) < 0 || get_bool(jg, "mig_enabled", &g->mig_enabled, where, e) < 0)
        return -1;

    json_t *path = json_object_get(jg, "pci_path");
    if (path && !json_is_array(path))
        return jerr_set(e, EINVAL, "%s.pci_path: must be a list of bridge addresses", where);
    pp->n = 0;
    for (size_t i = 0; path && i < json_array_size(path); i++) {
        json_t *b = json_array_get(path, i);
        if (!json_is_string(b) || pp->n == 8 || gpu_bus_normalize(json_string_value(b), pp->path[pp->n]) < 0)
            return jerr_set(e, EINVAL, "%s.pci_path[%zu]: must be a PCI address (at most 8 bridges)", where, i);
        pp->n++;
    }
    unsigned dom = 0, b0 = 0;
    sscanf(pp->n ? pp->path[0] : g->bus_id, "%x:%x", &dom, &b0);
    snprintf(pp->hb, sizeof pp->hb, "pci%04x:%02x", dom, b0);

    json_t *links = json_object_get(jg, "nvlinks");
    if (links && !json_is_array(links))
        return jerr_set(e, EINVAL, "%s.nvlinks: must be a list", where);
    g->links_known = 1;
    for (size_t i = 0; links && i < json_array_size(links); i++) {
        char lw[96];
        snprintf(lw, sizeof lw, "%s.nvlinks[%zu]", where, i);
        json_t *jl = json_array_get(links, i);
        if (!json_is_object(jl) || g->nlinks == GPU_LINKS_MAX)
            return jerr_set(e, EINVAL, "%s: must be an object (at most %d links)", lw, GPU_LINKS_MAX);
        gpu_link *k = &g->links[g->nlinks];
        v = -1;
        char rbus[32] = "";
        if (jx_only_keys(jl, link_keys, lw, e) < 0 || get_int(jl, "link", 0, GPU_LINKS_MAX - 1, &v, lw, e) < 0 ||
            get_bool(jl, "active", &k->active, lw, e) < 0 ||
            get_str(jl, "remote_type", k->remote_type, sizeof k->remote_type, 1, lw, e) < 0 ||
            get_str(jl, "remote_bus", rbus, sizeof rbus, 0, lw, e) < 0)
            return -1;
        if (*rbus && gpu_bus_normalize(rbus, k->remote_bus) < 0)
            return jerr_set(e, EINVAL, "%s.remote_bus: '%s' is not a PCI address", lw, rbus);
        k->link = (int)v;
        g->nlinks++;
    }
    json_t *mig = json_object_get(jg, "mig");
    if (mig && !json_is_array(mig))
        return jerr_set(e, EINVAL, "%s.mig: must be a list", where);
    for (size_t i = 0; mig && i < json_array_size(mig); i++) {
        char mw[96];
        snprintf(mw, sizeof mw, "%s.mig[%zu]", where, i);
        json_t *jm = json_array_get(mig, i);
        if (!json_is_object(jm) || g->nmig == GPU_MIG_MAX)
            return jerr_set(e, EINVAL, "%s: must be an object (at most %d MIG devices)", mw, GPU_MIG_MAX);
        gpu_mig *m = &g->mig[g->nmig];
        int64_t gi = -1, ci = -1;
        if (jx_only_keys(jm, mig_keys, mw, e) < 0 || get_int(jm, "gi", 0, 14, &gi, mw, e) < 0 ||
            get_int(jm, "ci", 0, 7, &ci, mw, e) < 0 || get_int(jm, "memory_mb", 0, 1 << 30, &m->memory_mb, mw, e) < 0 ||
            get_str(jm, "profile", m->profile, sizeof m->profile, 1, mw, e) < 0 ||
            get_str(jm, "uuid", m->uuid, sizeof m->uuid, 1, mw, e) < 0)
            return -1;
        if (gi < 0 || ci < 0)
            return jerr_set(e, EINVAL, "%s: gi and ci are required", mw);
        m->gi = (int)gi;
        m->ci = (int)ci;
        g->nmig++;
    }
    return 0;
}

int gpu_backend_fixture(const gpu_config *c, gpu_inventory *inv, jerr *e)
{
    json_error_t je;
    json_t *root = json_load_file(c->fixture, JSON_REJECT_DUPLICATES, &je);
    if (!root && je.line < 1) /* not read at all (jansson gives no place): only the reason */
        return jerr_set(e, EINVAL, "gpu.fixture: %s", je.text);
    if (!root)
        return jerr_set(e, EINVAL, "gpu.fixture: %s: line %d column %d: %s", c->fixture, je.line, je.column, je.text);
    int rc = -1;
    pcipath pp[GPU_MAX];
    char where[64];
    json_t *gpus = json_object_get(root, "gpus");
    int64_t cv = 0;
    snprintf(where, sizeof where, "%s", c->fixture);
    if (!json_is_object(root) || jx_only_keys(root, machine_keys, where, e) < 0)
        goto out;
    if (!json_is_array(gpus) || json_array_size(gpus) > GPU_MAX) {
        jerr_set(e, EINVAL, "%s: gpus: must be a list of at most %d GPUs", c->fixture, GPU_MAX);
        goto out;
    }
    if (get_str(root, "driver_version", inv->driver_version, sizeof inv->driver_version, 0, where, e) < 0 ||
        get_int(root, "cuda_driver_version", 0, 99990, &cv, where, e) < 0)
        goto out;
    inv->cuda_driver_version = cv ? (int)cv : gpu_driver_cuda_version(inv->driver_version);
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        snprintf(where, sizeof where, "gpus[%zu]", i);
        json_t *jg = json_array_get(gpus, i);
        if (!json_is_object(jg)) {
            jerr_set(e, EINVAL, "%s: %s: must be an object", c->fixture, where);
            goto out;
        }
        if (read_gpu(jg, &inv->gpu[i], &pp[i], where, e) < 0) {
            char msg[sizeof e->msg];
            snprintf(msg, sizeof msg, "%s", e->msg);
            jerr_set(e, EINVAL, "%s: %s", c->fixture, msg);
            goto out;
        }
        inv->n++;
    }
    for (int i = 0; i < inv->n; i++)
        for (int j = 0; j < inv->n; j++)
            if (i != j)
                inv->level[i][j] = (signed char)gpu_level_from_paths(pp[i].hb, pp[i].path, pp[i].n, inv->gpu[i].numa_node,
                                                                     pp[j].hb, pp[j].path, pp[j].n, inv->gpu[j].numa_node);
    for (int i = 0; i < inv->n; i++)
        for (int j = i + 1; j < inv->n; j++)
            if (strcmp(inv->gpu[i].uuid, inv->gpu[j].uuid) == 0 || strcmp(inv->gpu[i].bus_id, inv->gpu[j].bus_id) == 0 ||
                inv->gpu[i].minor == inv->gpu[j].minor) {
                jerr_set(e, EINVAL, "%s: gpus[%d] and gpus[%d] share a UUID, bus id or minor", c->fixture, i, j);
                goto out;
            }
    inv->simulated = 1;
    for (int i = 0; i < inv->n; i++)
        gpu_mig_cap_minors(c->proc_root, &inv->gpu[i]);
    gpu_inventory_finish(inv);
    rc = 0;
out:
    json_decref(root);
    return rc;
}
