#include "sched_view.h"

#include <string.h>

#include "../sched/placement.h"

void gpu_pair_scores(const gpu_inventory *inv, int *pair)
{
    for (int i = 0; i < inv->n; i++)
        for (int j = 0; j < inv->n; j++)
            pair[i * inv->n + j] =
                i == j ? 0
                       : placement_pair_score(inv->nvlink[i][j], inv->level[i][j],
                                              inv->gpu[i].numa_node >= 0 && inv->gpu[i].numa_node == inv->gpu[j].numa_node);
}

void gpu_sched_gpus(const gpu_inventory *inv, int mps, sched_gpu *out)
{
    for (int i = 0; i < inv->n; i++) {
        const gpu_dev *g = &inv->gpu[i];
        out[i] = (sched_gpu){!*g->problem && g->minor >= 0 && g->mig_enabled != 1, 0, g->memory_total_mb, g->numa_node, mps};
    }
}

size_t gpu_sched_migs(const gpu_inventory *inv, sched_mig *out, int *gpu_of, size_t max)
{
    size_t n = 0;
    const gpu_mig *first[SCHED_MIG_MAX];
    for (int i = 0; i < inv->n; i++) {
        const gpu_dev *g = &inv->gpu[i];
        for (int k = 0; g->mig_enabled == 1 && k < g->nmig && n < max && n < SCHED_MIG_MAX; k++, n++) {
            int id = (int)n;
            for (size_t p = 0; p < n && id == (int)n; p++)
                if (strcmp(first[p]->profile, g->mig[k].profile) == 0)
                    id = out[p].profile;
            first[n] = &g->mig[k];
            /* a simulated machine has no capability nodes to give; a real one must */
            out[n] = (sched_mig){id, !*g->problem && (inv->simulated ||
                                                      (g->mig[k].gi_cap_minor >= 0 && g->mig[k].ci_cap_minor >= 0))};
            if (gpu_of)
                gpu_of[n] = i;
        }
    }
    return n;
}

uint64_t gpu_kind_mask(const gpu_inventory *inv, const char *type, int cc)
{
    uint64_t m = 0;
    for (int i = 0; i < inv->n && i < SCHED_GPU_MAX; i++) {
        const gpu_dev *g = &inv->gpu[i];
        if (type && *type && !strcasestr(g->name, type))
            continue;
        if (cc && (g->cc_major < 0 || g->cc_major * 10 + (g->cc_minor < 0 ? 0 : g->cc_minor) < cc))
            continue;
        m |= 1ull << i;
    }
    return m;
}
