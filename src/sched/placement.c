#include "placement.h"

#include <string.h>

int placement_strategy_parse(const char *s)
{
    return !strcmp(s, "topology") ? PLACE_TOPOLOGY : !strcmp(s, "pack") ? PLACE_PACK : !strcmp(s, "spread") ? PLACE_SPREAD : -1;
}

typedef struct judge {
    const int *pair;
    size_t n;
    uint64_t busy;
    enum placement_strategy st;
} judge;

/* Pair scores between the set and the busy GPUs: how close the set sits to running work. */
static long nearness(const judge *J, uint64_t set)
{
    long s = 0;
    for (size_t i = 0; i < J->n; i++)
        if (set >> i & 1)
            for (size_t j = 0; j < J->n; j++)
                if (J->busy >> j & 1)
                    s += J->pair[i * J->n + j];
    return s;
}

/* One number that orders sets under the strategy: the primary measure in the high bits
 * (an inner score stays below 2^24 up to 64 GPUs). */
static long long combine(const judge *J, long long inner, long long near)
{
    const long long hi = 1LL << 24;
    switch (J->st) {
    case PLACE_PACK: return near * hi + inner;
    case PLACE_SPREAD: return -near * hi + inner;
    default: return inner * hi + near;
    }
}

static long long rank(const judge *J, uint64_t set)
{
    return combine(J, placement_score(J->pair, J->n, set), nearness(J, set));
}

/* NVLink dominates (one link carries more than any PCIe path), PCIe levels next, NUMA last:
 * nvidia-smi's levels are 10 (one switch) to 50 (across sockets), so 60 - level ranks them. */
int placement_pair_score(int nvlinks, int pcie_level, int same_numa)
{
    int s = nvlinks > 0 ? 1000 * nvlinks : 0;
    if (pcie_level >= 0 && pcie_level <= 50)
        s += 60 - pcie_level;
    return s + (same_numa ? 5 : 0);
}

long placement_score(const int *pair, size_t n, uint64_t set)
{
    long s = 0;
    for (size_t i = 0; i < n; i++)
        if (set >> i & 1)
            for (size_t j = i + 1; j < n; j++)
                if (set >> j & 1)
                    s += pair[i * n + j];
    return s;
}

/* Among sets of equal score the one whose lowest differing index is lower: deterministic, and
 * it keeps the high end of the machine together for later jobs. */
static int better(long long s, uint64_t set, long long best_s, uint64_t best)
{
    if (s != best_s)
        return s > best_s;
    uint64_t diff = set ^ best;
    return diff && (set & diff & -diff);
}

/* Every subset of the candidates of the right size (Gosper's hack over their positions). */
static void exhaustive(const judge *J, const int *idx, unsigned m, unsigned count, uint64_t *out)
{
    long long best_s = 0;
    uint64_t best = 0;
    for (uint64_t c = (1ull << count) - 1; c < (1ull << m);) {
        uint64_t set = 0;
        for (unsigned b = 0; b < m; b++)
            if (c >> b & 1)
                set |= 1ull << idx[b];
        long long s = rank(J, set);
        if (!best || better(s, set, best_s, best)) {
            best = set;
            best_s = s;
        }
        uint64_t low = c & -c, r = c + low;
        c = (((r ^ c) >> 2) / low) | r;
    }
    *out = best;
}

/* Beyond 16 candidates: from each candidate in turn, grow the set by the GPU that adds most,
 * and keep the best of those sets (a single seed can strand a job in a broken group). */
static uint64_t grow(const judge *J, const int *idx, unsigned m, unsigned count, int seed)
{
    uint64_t set = 1ull << seed;
    while ((unsigned)__builtin_popcountll(set) < count) {
        long long best_r = 0;
        int pick = -1;
        for (unsigned a = 0; a < m; a++) {
            if (set >> idx[a] & 1)
                continue;
            /* what adding this GPU adds, weighed like rank() */
            long long inner = 0, near = 0;
            const int *row = J->pair + (size_t)idx[a] * J->n;
            for (size_t j = 0; j < J->n; j++) {
                if (set >> j & 1)
                    inner += row[j];
                if (J->busy >> j & 1)
                    near += row[j];
            }
            long long r = combine(J, inner, near);
            if (pick < 0 || r > best_r) {
                best_r = r;
                pick = idx[a];
            }
        }
        set |= 1ull << pick;
    }
    return set;
}

static void greedy(const judge *J, const int *idx, unsigned m, unsigned count, uint64_t *out)
{
    long long best_s = 0;
    uint64_t best = 0;
    for (unsigned a = 0; a < m; a++) {
        uint64_t set = grow(J, idx, m, count, idx[a]);
        long long sc = rank(J, set);
        if (!best || better(sc, set, best_s, best)) {
            best = set;
            best_s = sc;
        }
    }
    *out = best;
}

int placement_best(const int *pair, size_t n, uint64_t candidates, uint64_t busy, enum placement_strategy st,
                   unsigned count, uint64_t *out)
{
    judge J = {pair, n, busy, st};
    int idx[64];
    unsigned m = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        if (candidates >> i & 1)
            idx[m++] = (int)i;
    if (count == 0 || m < count)
        return -1;
    if (m <= 16)
        exhaustive(&J, idx, m, count, out);
    else
        greedy(&J, idx, m, count, out);
    return 0;
}
