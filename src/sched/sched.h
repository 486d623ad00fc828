/* The pure scheduler: given the waiting jobs and the room there is, decide which start now
 * and when to look again. No syscalls, no clock of its own: the caller passes "now". */
#ifndef JOBLET_SCHED_H
#define JOBLET_SCHED_H

#include <stddef.h>
#include <stdint.h>

typedef struct sched_job {
    uint64_t seq;            /* submission order */
    int32_t priority;        /* higher first */
    int64_t not_before_ms;   /* --schedule time; 0 = now */
    uint32_t gpu_count;      /* whole GPUs, granted all at once or not at all */
    uint64_t gpu_memory_mb;  /* minimum memory of each of them; 0 = any */
    uint64_t gpu_ids;        /* exactly these GPUs (bit i = GPU i); 0 = any gpu_count of them */
    int mig_profile;         /* one MIG device of this profile (an id the caller assigns); -1 none */
} sched_job;

/* One MIG device (a compute instance of a GPU in MIG mode): an allocatable unit of its own. */
typedef struct sched_mig {
    int profile;             /* the caller's id for "1g.10gb", ... */
    int free;
    int usable;
} sched_mig;

/* One GPU as the scheduler sees it. */
typedef struct sched_gpu {
    int usable;              /* healthy and known well enough to hand out */
    int free;                /* no job holds it */
    int64_t memory_mb;       /* total; -1 unknown (then it satisfies no memory request) */
} sched_gpu;

#define SCHED_GPU_MAX 64

typedef struct sched_input {
    const sched_job *jobs;   /* jobs that have not started, any order */
    size_t n;
    int64_t now_ms;
    uint32_t running;        /* jobs holding room now */
    uint32_t max_running;    /* 0 = no limit */
    const sched_gpu *gpus;   /* by index */
    size_t ngpus;
    const sched_mig *migs;
    size_t nmigs;
    const int *gpu_pair;     /* ngpus x ngpus placement scores (placement.h); NULL: lowest indexes */
    int strategy;            /* enum placement_strategy */
} sched_input;

typedef struct sched_output {
    size_t *start;           /* indexes into jobs[], in start order; caller provides n slots */
    size_t nstart;
    int64_t next_wakeup_ms;  /* earliest not_before still in the future; 0 = none */
    uint64_t *gpu_sets;      /* per start entry: bit i = GPU i granted; caller provides n slots */
    int *mig_picks;          /* per start entry: index into migs, -1 none; caller provides n slots */
} sched_output;

void sched_decide(const sched_input *in, sched_output *out);
/* 1-based position of jobs[i] among the eligible waiting jobs in start order (0 when it is
 * still waiting for its scheduled time). positions has n slots. */
void sched_positions(const sched_input *in, uint32_t *positions);
/* Whether a request could ever be met on these GPUs if all were free: 0 yes; otherwise the
 * number of GPUs that would qualify (fewer than asked). */
int sched_gpu_feasible(const sched_gpu *gpus, size_t ngpus, uint32_t count, uint64_t memory_mb, uint32_t *qualify);

#endif
