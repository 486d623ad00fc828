/* The nvidia-smi backend's parsers (backend_smi.c): each takes the output of one nvidia-smi
 * command (cut up in place) and fills the inventory; gpu_backend_smi (gpu.h) runs the commands
 * and calls them in this order. Declared here for their tests and the fuzz harness
 * (tests/fuzz/fuzz_gpu_smi.c). */
#ifndef JOBLET_GPU_BACKEND_SMI_H
#define JOBLET_GPU_BACKEND_SMI_H

#include "../common/err.h"
#include "inventory.h"

/* --query-gpu=... --format=csv,noheader,nounits: one GPU per line, added to inv. */
int backend_smi_parse_query(char *csv, gpu_inventory *inv, jerr *e);
/* -q: the CUDA version, each GPU's minor number, its MIG devices' ids and memory. */
int backend_smi_parse_q(char *text, gpu_inventory *inv, jerr *e);
/* -L: MIG profiles and UUIDs of the MIG devices backend_smi_parse_q found. */
void backend_smi_parse_L(char *text, gpu_inventory *inv);
/* topo -m (with_links: NVLink counts, CPU and NUMA affinity) and topo -mp (PCIe levels). */
int backend_smi_parse_topo(char *text, gpu_inventory *inv, int with_links, jerr *e);

#endif
