/* A job trace for the simulator: one CSV line per job (docs/simulator.md). Strict: a field that
 * does not parse is an error naming the file, line, column and field. */
#ifndef JOBLET_SIM_TRACE_H
#define JOBLET_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/err.h"

typedef struct sim_job {
    int line;                /* line in the trace file, 1-based */
    int64_t submit_ms;
    int64_t duration_ms;     /* how long it runs once started (> 0) */
    int64_t limit_ms;        /* its declared upper bound (max_runtime_s); 0 none */
    uint32_t gpus;
    uint64_t memory_mb;      /* minimum memory of each GPU; 0 any */
    int32_t priority;
    uint32_t user;           /* index into sim_trace.users */
    int preemptible;
    int single_numa;         /* all its GPUs on one NUMA node */
} sim_job;

typedef struct sim_trace {
    sim_job *jobs;
    size_t n;
    char **users;            /* user names by id, in order of first appearance */
    size_t nusers;
} sim_trace;

/* Reads a whole trace; name is used in error messages. 0, or -1 with e filled. */
int trace_read(FILE *f, const char *name, sim_trace *t, jerr *e);
void trace_free(sim_trace *t);

#endif
