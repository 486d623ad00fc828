/* How a job ended, as its shim records it in <job dir>/status.json (the shim owns the file, so
 * it survives a kill -9 of the daemon): read once, typed, by the daemon when the shim exits
 * or when a restarted daemon finds the job over. */
#ifndef JOBLET_SHIM_STATUS_H
#define JOBLET_SHIM_STATUS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct shim_status {
    bool has_exit;
    int exit_code;
    int signal;                   /* 0 none */
    char signal_name[32];
    char error[512];              /* "" none */
    uint64_t cpu_ns, memory_peak_bytes, io_read_bytes, io_write_bytes;
    int64_t started_at_ms, ended_at_ms;
    char end_reason[32];          /* "" when the shim wrote none */
} shim_status;

/* 0, or -1 when the file is missing or not a status record. */
int shim_status_read(const char *path, shim_status *st);

#endif
