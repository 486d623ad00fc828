/* The machine's CPU cores as Slurm numbers them, and each GPU's local CPUs as those cores
 * (gres.conf's Cores=, docs/slurm.md). Slurm's core ids are abstract: the cores ordered by
 * package, then within it by their first CPU (hwloc's logical order, which slurmd's
 * xcpuinfo_mac_to_abs follows), whatever the kernel's CPU numbering; with hyperthreads,
 * CPUs 0 and 112 of a DGX H100 are both core 0. */
#ifndef JOBLET_GPU_CPUTOPO_H
#define JOBLET_GPU_CPUTOPO_H

#include <stddef.h>

#include "inventory.h"

#define CPUTOPO_MAX 4096 /* CPU ids, as the cpu lists of inventory.c */

typedef struct gpu_cputopo {
    int ncpus;                /* highest CPU id seen + 1 */
    short core[CPUTOPO_MAX];  /* Slurm's core index of CPU c; -1 not present; -2 offline */
    int ncores;
} gpu_cputopo;

/* From the ids the kernel gives each CPU (pkg[c], die[c], core[c]; pkg[c] == -1: CPU c is
 * not present, -2: present but offline, as slurmd's hwloc does not see it), in ncpus CPUs. */
void gpu_cputopo_from_ids(gpu_cputopo *t, int ncpus, const int *pkg, const int *die, const int *core);
/* From <sys_root>/devices/system/cpu/cpuN/topology; -1 when there is none to read. */
int gpu_cputopo_read(const char *sys_root, gpu_cputopo *t);
/* A cpu list ("0-55,112-167") as Slurm's core list ("0-55"), offline CPUs left out; -1 (and
 * "") when a CPU of it is not in t, none of it is online, or the list is not one. */
int gpu_cputopo_cores(const gpu_cputopo *t, const char *cpulist, char *out, size_t outlen);
/* Fills every GPU's local_cores from its local_cpus. */
void gpu_cputopo_apply(const gpu_cputopo *t, gpu_inventory *inv);

#endif
