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
} sched_job;

typedef struct sched_input {
    const sched_job *jobs;   /* jobs that have not started, any order */
    size_t n;
    int64_t now_ms;
    uint32_t running;        /* jobs holding room now */
    uint32_t max_running;    /* 0 = no limit */
} sched_input;

typedef struct sched_output {
    size_t *start;           /* indexes into jobs[], in start order; caller provides n slots */
    size_t nstart;
    int64_t next_wakeup_ms;  /* earliest not_before still in the future; 0 = none */
} sched_output;

void sched_decide(const sched_input *in, sched_output *out);
/* 1-based position of jobs[i] among the eligible waiting jobs in start order (0 when it is
 * still waiting for its scheduled time). positions has n slots. */
void sched_positions(const sched_input *in, uint32_t *positions);

#endif
