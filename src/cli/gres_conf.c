/* gres.conf from discovery (gres_conf.h). Slurm 22.05 numbers a node's GPUs in the order of
 * gres.conf's lines (common_node_config_load); with AutoDetect it sorts them by File= and then
 * by the position of -1 in Links= (gres_gpu.c, _sort_gpu_by_links_order). Writing the lines in
 * PCI bus order with Links= indexed the same way makes both orders the bus order, which is
 * NVML's and CUDA_DEVICE_ORDER=PCI_BUS_ID's. */
#include "gres_conf.h"

#include <ctype.h>
#include <string.h>

int gres_conf_format_parse(const char *s)
{
    if (!strcmp(s, "gres.conf"))
        return GRES_CONF_GRES;
    if (!strcmp(s, "slurm.conf"))
        return GRES_CONF_SLURM;
    return -1;
}

void gres_conf_type(const char *model, char *out, size_t outlen)
{
    size_t n = 0;
    for (const char *p = model; *p && n + 1 < outlen; p++) {
        char c = (char)tolower((unsigned char)*p);
        out[n++] = isspace((unsigned char)c) || c == ':' || c == ',' || c == '=' ? '_' : c;
    }
    out[n] = 0;
}

int gres_conf_node_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64)
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
            return 0;
    return 1;
}

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* The GPU's row of link counts, or NULL with *why when discovery could not tell. */
static int links_row(json_t *g, size_t i, size_t n, char *out, size_t outlen)
{
    json_t *row = json_object_get(g, "nvlink_peers");
    if (!json_is_array(row) || json_array_size(row) != n)
        return -1;
    size_t len = 0;
    out[0] = 0;
    for (size_t j = 0; j < n; j++) {
        json_t *v = json_array_get(row, j);
        long long c = j == i ? -1 : json_is_integer(v) ? json_integer_value(v) : -2;
        if (c < -1)
            return -1;
        int w = snprintf(out + len, outlen - len, "%s%lld", j ? "," : "", c);
        if (w < 0 || (size_t)w >= outlen - len)
            return -1;
        len += (size_t)w;
    }
    return 0;
}

static int write_slurm_conf(json_t *gpus, const char *node, FILE *out)
{
    char types[32][96];
    int counts[32], nt = 0;
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        char t[96];
        gres_conf_type(str(g, "name") ? str(g, "name") : "gpu", t, sizeof t);
        int k = 0;
        while (k < nt && strcmp(types[k], t))
            k++;
        if (k == nt && nt < 32) {
            snprintf(types[nt], sizeof types[nt], "%s", t);
            counts[nt++] = 0;
        }
        if (k < nt)
            counts[k]++;
    }
    fprintf(out, "NodeName=%s Gres=", node);
    for (int k = 0; k < nt; k++)
        fprintf(out, "%sgpu:%s:%d", k ? "," : "", types[k], counts[k]);
    fputc('\n', out);
    return 0;
}

int gres_conf_write(json_t *inv, const char *node, enum gres_conf_format fmt, FILE *out, char *err, size_t errlen)
{
    json_t *gpus = json_object_get(inv, "gpus");
    size_t n = json_array_size(gpus);
    if (!n) {
        snprintf(err, errlen, "no GPU was discovered on this node: nothing for Slurm to schedule");
        return -1;
    }
    if (fmt == GRES_CONF_SLURM)
        return write_slurm_conf(gpus, node, out);
    /* the device nodes' directory as joblet uses it (gpu.dev_root), so File= names what exists */
    const char *dev_root = str(inv, "dev_root") && str(inv, "dev_root")[0] == '/' ? str(inv, "dev_root") : "/dev";
    int simulated = json_is_true(json_object_get(inv, "simulated"));
    const char *backend = str(inv, "backend");
    fprintf(out, "# gres.conf for %s from joblet's GPU discovery%s%s%s%s; GPUs in PCI bus order\n", node,
            backend && *backend ? " (backend " : "", backend && *backend ? backend : "", backend && *backend ? ")" : "",
            simulated ? ", SIMULATED GPUs (gpu.fixture)" : "");
    /* Links= on every line or on none: Slurm orders by it when all have it */
    int links_ok = 1;
    char row[GRES_CONF_ROW_MAX];
    for (size_t i = 0; i < n; i++)
        if (links_row(json_array_get(gpus, i), i, n, row, sizeof row) < 0)
            links_ok = 0;
    if (!links_ok)
        fprintf(out, "# no Links=: the discovery backend could not see every GPU's NVLinks\n");
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        char type[96];
        gres_conf_type(str(g, "name") ? str(g, "name") : "gpu", type, sizeof type);
        json_t *minor = json_object_get(g, "minor");
        if (!json_is_integer(minor)) {
            fprintf(out, "# GPU %zu (%s): its device minor is unknown, so it has no File=; left out\n", i,
                    str(g, "bus_id") ? str(g, "bus_id") : "?");
            continue;
        }
        if (json_is_true(json_object_get(g, "mig_enabled")))
            fprintf(out, "# GPU %zu is in MIG mode: this line gives Slurm the whole GPU; its MIG devices are not "
                         "described\n", i);
        const char *cores = str(g, "local_cores");
        if (!cores || !*cores)
            fprintf(out, "# GPU %zu: no Cores=: its CPUs' cores are unknown on this machine\n", i);
        fprintf(out, "NodeName=%s Name=gpu Type=%s File=%s/nvidia%lld", node, type, dev_root,
                (long long)json_integer_value(minor));
        if (cores && *cores)
            fprintf(out, " Cores=%s", cores);
        if (links_ok && links_row(g, i, n, row, sizeof row) == 0)
            fprintf(out, " Links=%s", row);
        fputc('\n', out);
    }
    return 0;
}
