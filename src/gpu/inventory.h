/* What joblet knows about the machine's GPUs: one inventory, whatever backend produced it.
 * A field a backend cannot see is "unknown" (-1, "" or GPU_UNKNOWN), never a guess, so that
 * the scheduler can tell "no NVLink" from "did not look". */
#ifndef JOBLET_GPU_INVENTORY_H
#define JOBLET_GPU_INVENTORY_H

#include <jansson.h>
#include <stdint.h>

#define GPU_MAX 32
#define GPU_LINKS_MAX 18 /* NVML_NVLINK_MAX_LINKS */
#define GPU_MIG_MAX 7
#define GPU_UNKNOWN (-1)

/* PCIe common-ancestor levels, numbered as NVML's nvmlGpuTopologyLevel_t. */
enum gpu_level {
    GPU_LVL_X = 0,     /* the same device */
    GPU_LVL_PIX = 10,  /* one PCIe switch */
    GPU_LVL_PXB = 20,  /* several PCIe switches, not the host bridge */
    GPU_LVL_PHB = 30,  /* the same host bridge */
    GPU_LVL_NODE = 40, /* host bridges of one NUMA node */
    GPU_LVL_SYS = 50,  /* across sockets */
};

typedef struct gpu_link {
    int link;
    int active;
    char remote_type[8]; /* gpu, switch, ibmnpu, unknown */
    char remote_bus[16]; /* 0000:18:00.0 */
} gpu_link;

typedef struct gpu_mig {
    int gi, ci;
    char profile[32];      /* 3g.40gb; "" unknown */
    char uuid[96];         /* MIG-...; "" unknown */
    int64_t memory_mb;     /* -1 unknown */
    int gi_cap_minor;      /* /dev/nvidia-caps/nvidia-cap<N>; -1 unknown */
    int ci_cap_minor;
} gpu_mig;

typedef struct gpu_dev {
    int index;             /* NVML order: by PCI bus id */
    int minor;             /* /dev/nvidia<minor> */
    char uuid[96];
    char bus_id[16];       /* 0000:18:00.0, lower case */
    char name[96];
    char vbios[32];        /* "" unknown */
    int64_t memory_total_mb, memory_used_mb; /* MiB; -1 unknown */
    int cc_major, cc_minor;                  /* -1 unknown */
    int numa_node;         /* -1 none or unknown */
    char local_cpus[256];  /* canonical cpu list "0-19,40-59"; "" unknown */
    char local_cores[256]; /* the same as Slurm's core ids (cputopo.h); "" unknown */
    int ecc;               /* 1/0, -1 unknown or not supported */
    int mig_enabled;       /* 1/0, -1 unknown or not capable */
    int links_known;       /* the backend reported per-link NVLink state */
    int nlinks;
    gpu_link links[GPU_LINKS_MAX];
    int nmig;
    gpu_mig mig[GPU_MIG_MAX];
    int temperature_c, utilization_pct, power_w; /* last sample; -1 unknown */
    char problem[192];     /* why this GPU must not be handed out; "" when healthy */
} gpu_dev;

typedef struct gpu_inventory {
    char backend[16];      /* nvml, proc, smi, fixture */
    int simulated;         /* from a fixture: no device exists */
    char driver_version[32];
    int cuda_driver_version; /* 12020 = 12.2; 0 unknown */
    int n;
    gpu_dev gpu[GPU_MAX];
    /* Pairwise, by index. nvlink: link count, -1 unknown. level: enum gpu_level, -1 unknown. */
    signed char nvlink[GPU_MAX][GPU_MAX];
    signed char level[GPU_MAX][GPU_MAX];
    double discovery_ms;
} gpu_inventory;

void gpu_inventory_init(gpu_inventory *inv, const char *backend);
/* Sorts by bus id, renumbers index, and fills every derivable pair value (NVLink counts from
 * per-link remote bus ids, NVSwitch pairs, the diagonal). Backends call it last. */
void gpu_inventory_finish(gpu_inventory *inv);
int gpu_find(const gpu_inventory *inv, const char *index_or_uuid);

const char *gpu_level_name(int level);     /* "PIX"...; "" for unknown */
int gpu_level_parse(const char *s);        /* -1 unknown */
/* Lower-cases and shortens "00000000:18:00.0" to "0000:18:00.0"; -1 if not a bus id. */
int gpu_bus_normalize(const char *in, char out[16]);
/* Canonical cpu list ("0-3,8") from a list in any spacing/order, or from a bitmask. */
int gpu_cpulist_normalize(const char *in, char *out, size_t outlen);
void gpu_cpulist_from_mask(const unsigned long *mask, int nwords, char *out, size_t outlen);

json_t *gpu_dev_json(const gpu_inventory *inv, int i);
json_t *gpu_inventory_json(const gpu_inventory *inv);

#endif
