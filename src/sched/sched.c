#include "sched.h"

#include <stdlib.h>

#include "placement.h"

/* Strict priority, then submission order: a job never overtakes an older one of equal
 * priority, so nothing starves behind later arrivals. */
static int before(const sched_job *a, const sched_job *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority;
    return a->seq < b->seq;
}

/* Insertion into a sorted index list; queues are short and this keeps the code allocation-free. */
static size_t eligible_order(const sched_input *in, size_t *order)
{
    size_t m = 0;
    for (size_t i = 0; i < in->n; i++) {
        if (in->jobs[i].not_before_ms > in->now_ms)
            continue;
        size_t k = m++;
        while (k > 0 && before(&in->jobs[i], &in->jobs[order[k - 1]])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    return m;
}

static int qualifies(const sched_gpu *g, uint64_t memory_mb)
{
    return g->usable && (memory_mb == 0 || (g->memory_mb >= 0 && (uint64_t)g->memory_mb >= memory_mb));
}

int sched_gpu_feasible(const sched_gpu *gpus, size_t ngpus, uint32_t count, uint64_t memory_mb, uint32_t *qualify)
{
    uint32_t q = 0;
    for (size_t i = 0; i < ngpus; i++)
        q += (uint32_t)qualifies(&gpus[i], memory_mb);
    *qualify = q;
    return q >= count ? 0 : -1;
}

/* Gang allocation: all count GPUs or none. Lowest indexes first; placement by interconnect
 * is the placement policy's job (docs/scheduler.md). */
static int pick_gpus(const sched_input *in, const uint64_t *taken, const sched_job *j, uint64_t *set)
{
    const sched_gpu *gpus = in->gpus;
    size_t ngpus = in->ngpus;
    uint32_t got = 0;
    *set = 0;
    if (j->gpu_ids) {
        for (size_t i = 0; i < ngpus && i < SCHED_GPU_MAX; i++)
            if (j->gpu_ids >> i & 1 && (!gpus[i].free || *taken >> i & 1 || !qualifies(&gpus[i], j->gpu_memory_mb)))
                return -1;
        *set = j->gpu_ids;
        return 0;
    }
    uint64_t candidates = 0;
    for (size_t i = 0; i < ngpus && i < SCHED_GPU_MAX; i++)
        if (gpus[i].free && !(*taken >> i & 1) && qualifies(&gpus[i], j->gpu_memory_mb))
            candidates |= 1ull << i;
    uint64_t busy = 0;
    for (size_t i = 0; i < ngpus && i < SCHED_GPU_MAX; i++)
        if (!gpus[i].free || *taken >> i & 1)
            busy |= 1ull << i;
    if (in->gpu_pair)
        return placement_best(in->gpu_pair, ngpus, candidates, busy, (enum placement_strategy)in->strategy,
                              j->gpu_count, set);
    for (size_t i = 0; i < ngpus && i < SCHED_GPU_MAX && got < j->gpu_count; i++)
        if (candidates >> i & 1) {
            *set |= 1ull << i;
            got++;
        }
    return got == j->gpu_count ? 0 : -1;
}

void sched_decide(const sched_input *in, sched_output *out)
{
    out->nstart = 0;
    out->next_wakeup_ms = 0;
    for (size_t i = 0; i < in->n; i++) {
        int64_t t = in->jobs[i].not_before_ms;
        if (t > in->now_ms && (out->next_wakeup_ms == 0 || t < out->next_wakeup_ms))
            out->next_wakeup_ms = t;
    }
    size_t m = eligible_order(in, out->start);
    size_t room = in->max_running == 0 ? m
                  : in->running >= in->max_running ? 0
                                                   : in->max_running - in->running;
    /* In order; a GPU job that cannot be placed now holds back every later GPU job (they
     * would take what it waits for), while jobs without GPUs go on. */
    uint64_t taken = 0;
    int gpu_blocked = 0;
    uint8_t mig_taken[SCHED_GPU_MAX * 8] = {0};
    size_t k = 0;
    for (size_t i = 0; i < m && k < room; i++) {
        const sched_job *j = &in->jobs[out->start[i]];
        uint64_t set = 0;
        int mig = -1;
        if (j->mig_profile >= 0) {
            /* the first free device of the profile; when there is none, later jobs of that
             * profile find none either, so none overtakes this one */
            for (size_t d = 0; d < in->nmigs && d < sizeof mig_taken && mig < 0; d++)
                if (in->migs[d].profile == j->mig_profile && in->migs[d].free && in->migs[d].usable && !mig_taken[d])
                    mig = (int)d;
            if (mig < 0)
                continue;
            mig_taken[mig] = 1;
        } else if (j->gpu_count) {
            if (gpu_blocked || pick_gpus(in, &taken, j, &set) < 0) {
                gpu_blocked = 1;
                continue;
            }
            taken |= set;
        }
        if (out->gpu_sets)
            out->gpu_sets[k] = set;
        if (out->mig_picks)
            out->mig_picks[k] = mig;
        out->start[k++] = out->start[i];
    }
    out->nstart = k;
}

void sched_positions(const sched_input *in, uint32_t *positions)
{
    size_t *order = malloc((in->n ? in->n : 1) * sizeof *order);
    if (!order)
        return;
    for (size_t i = 0; i < in->n; i++)
        positions[i] = 0;
    size_t m = eligible_order(in, order);
    for (size_t k = 0; k < m; k++)
        positions[order[k]] = (uint32_t)(k + 1);
    free(order);
}
