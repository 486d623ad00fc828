/* Placement decision time: one sched_decide pass over 1,000 queued GPU jobs, on machines of
 * 8, 16 and 64 GPUs (NVLinked groups of 4 or 8 over two NUMA nodes, half the GPUs busy), as
 * the daemon runs it after every job event. Prints p50 and p99 over many passes.
 * Target (issue 5): p99 <= 1 ms at 8 GPUs. Usage: build/bench/placement_bench [passes] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sched/placement.h"
#include "sched/sched.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void run(int ngpus, int passes)
{
    int *pair = calloc((size_t)ngpus * ngpus, sizeof *pair);
    sched_gpu gpus[64];
    int group = ngpus >= 16 ? 8 : 4;
    enum { NJOBS = 1000 };
    static sched_running running[64];
    size_t nrunning = 0;
    for (int i = 0; i < ngpus; i++) {
        gpus[i] = (sched_gpu){.usable = 1, .memory_mb = 81920, .numa = i < ngpus / 2 ? 0 : 1, .mps = 1};
        for (int j = 0; j < ngpus; j++)
            pair[i * ngpus + j] = i == j ? 0
                                         : placement_pair_score(i / group == j / group ? 2 : 0,
                                                                (i < ngpus / 2) == (j < ngpus / 2) ? 40 : 50,
                                                                (i < ngpus / 2) == (j < ngpus / 2));
        /* about a third busy, scattered, each by a one-GPU job; half of them with a known end */
        if ((i * 7) % 3 == 0)
            running[nrunning++] = (sched_running){.seq = (uint64_t)i + 1, .r = {.gpu_count = 1, .mig_profile = -1},
                                                  .gpus = 1ull << i, .mig = -1, .end_ms = i % 2 ? 5000 + i : 0};
    }
    static sched_job jobs[NJOBS];
    static size_t start[NJOBS], preempt[64];
    static uint64_t sets[NJOBS];
    static int picks[NJOBS];
    static uint8_t why[NJOBS];
    static uint32_t pos[NJOBS];
    /* a mixed queue: sizes 1..n/2, priorities, some with run-time limits (backfill candidates) */
    for (int k = 0; k < NJOBS; k++)
        jobs[k] = (sched_job){.seq = (uint64_t)k + 100,
                              .r = {.gpu_count = (uint32_t)(1 + k % (ngpus / 2)), .mig_profile = -1, .priority = k % 5,
                                    .runtime_ms = k % 3 ? 0 : 1000 * (1 + k % 7), .user = (uint32_t)(k % 10)}};
    double *t = malloc(sizeof *t * (size_t)passes);
    for (int p = 0; p < passes; p++) {
        sched_input in = {.jobs = jobs, .n = NJOBS, .running = running, .nrunning = nrunning, .now_ms = 1000,
                          .gpus = gpus, .ngpus = (size_t)ngpus, .gpu_pair = pair, .strategy = PLACE_TOPOLOGY};
        sched_output out = {.start = start, .gpu_sets = sets, .mig_picks = picks, .preempt = preempt, .why = why,
                            .position = pos};
        double t0 = now_us();
        sched_decide(&in, &out);
        t[p] = now_us() - t0;
    }
    qsort(t, (size_t)passes, sizeof *t, cmp);
    printf("%3d GPUs, %d queued jobs: p50 %8.1f us  p99 %8.1f us  max %8.1f us\n", ngpus, NJOBS, t[passes / 2],
           t[passes * 99 / 100], t[passes - 1]);
    free(t);
    free(pair);
}

int main(int argc, char **argv)
{
    int passes = argc > 1 ? atoi(argv[1]) : 1000;
    run(8, passes);
    run(16, passes);
    run(64, passes);
    return 0;
}
