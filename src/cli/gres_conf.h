/* Slurm's gres.conf lines (and slurm.conf's Gres=) from joblet's GPU discovery, as GET
 * /v1/gpus describes it: rnx gpu gres-conf (docs/slurm.md, "gres.conf from discovery"). */
#ifndef JOBLET_GRES_CONF_H
#define JOBLET_GRES_CONF_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#define GRES_CONF_ROW_MAX 512 /* 32 GPUs x "-1," and counts */

enum gres_conf_format {
    GRES_CONF_GRES,  /* gres.conf: one NodeName=... Name=gpu line per GPU */
    GRES_CONF_SLURM, /* slurm.conf: NodeName=... Gres=gpu:TYPE:N[,...] */
};

/* "gres.conf" or "slurm.conf"; -1 otherwise. */
int gres_conf_format_parse(const char *s);
/* Slurm's GPU type of a model name, as its NVML autodetection makes it (gpu_common.c,
 * gpu_common_underscorify_tolower): lower case, spaces to '_' ("NVIDIA H100 80GB HBM3" ->
 * "nvidia_h100_80gb_hbm3"); also ':', ',' and '=', which gres.conf cannot carry, to '_'. */
void gres_conf_type(const char *model, char *out, size_t outlen);
/* A node name Slurm accepts: letters, digits, '-', '_' and '.', 1 to 64 of them. */
int gres_conf_node_name_ok(const char *s);
/* Writes the lines for node `node` from inv (GET /v1/gpus's object) to out. GPUs go in index
 * order (PCI bus order: NVML's, and the order Slurm's Links= sort restores); File= is each
 * GPU's /dev/nvidia<minor>; Cores= its local_cores; Links= its NVLink counts with -1 for
 * itself. What discovery could not see is left out, with a '#' comment saying so. -1 with
 * why in err when there is no GPU to describe. */
int gres_conf_write(json_t *inv, const char *node, enum gres_conf_format fmt, FILE *out, char *err, size_t errlen);

#endif
