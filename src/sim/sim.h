/* The scheduler simulator: replays a trace through the real scheduler (sched_decide) on one
 * fixture machine, or N identical ones, with a virtual clock. docs/simulator.md has the rules
 * and the metric definitions. */
#ifndef JOBLET_SIM_H
#define JOBLET_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "../gpu/inventory.h"
#include "../sched/sched.h"
#include "trace.h"

/* placement_strategy values, and one of our own: no pair scores (gpu_pair NULL), so the
 * scheduler takes the lowest free indexes. */
#define SIM_FIRSTFIT 3
#define SIM_STRATEGIES 4
const char *sim_strategy_name(int s);
int sim_strategy_parse(const char *s); /* -1 unknown */

typedef struct sim_machine {
    char name[512];            /* as given on the command line */
    char path[1024];           /* the machine.json read */
    size_t ngpus;              /* GPUs in the fixture */
    unsigned usable;           /* of them usable (healthy, not in MIG mode) */
    int64_t min_memory_mb, max_memory_mb; /* over usable GPUs */
    sched_gpu gpus[GPU_MAX];
    int pair[GPU_MAX * GPU_MAX];
    long best[GPU_MAX + 1];    /* best placement score of k GPUs on the empty machine */
} sim_machine;

/* arg: a fixture name (tests/fixtures/<name>/machine.json, or under $JOBLET_FIXTURES), a
 * directory holding machine.json, or a JSON file. */
int sim_machine_load(const char *arg, sim_machine *m, jerr *e);

typedef struct sim_options {
    int strategy;              /* placement_strategy or SIM_FIRSTFIT */
    unsigned machines;         /* identical machines, >= 1 */
    uint32_t max_gpus_per_user; /* per machine; 0 none */
    int exact_runtimes;        /* the scheduler is told each job's true run time */
} sim_options;

typedef struct sim_result {
    size_t jobs;
    unsigned gpus_total;
    int64_t makespan_ms;       /* last end - first submit */
    int64_t busy_gpu_ms;       /* GPU-time held by jobs, preempted runs included */
    int64_t queued_ms;         /* time during which at least one job waited */
    int64_t stranded_gpu_ms;   /* GPU-time left free while at least one job waited */
    int64_t lost_gpu_ms;       /* GPU-time of runs cut short by preemption */
    double utilization;        /* busy / (gpus_total * makespan) */
    double fragmentation;      /* stranded / (gpus_total * queued): free share while jobs wait */
    double stranded;           /* stranded / (gpus_total * makespan) */
    double wait_avg_ms, completion_avg_ms;
    int64_t wait_p95_ms, completion_p95_ms, wait_max_ms;
    double score;              /* mean over multi-GPU starts of score / best score of that size; -1 none */
    size_t scored;             /* multi-GPU starts */
    size_t preemptions, killed_at_limit, decisions;
} sim_result;

/* Every job fits the machine empty (and the per-user limit): else an error naming the line. */
int sim_check(const sim_machine *m, const sim_trace *t, const char *name, const sim_options *o, jerr *e);
int sim_run(const sim_machine *m, const sim_trace *t, const sim_options *o, sim_result *r, jerr *e);

#endif
