/* The shim's records of a job's run, which survive a kill -9 of the daemon: its start line
 * ("<init pid> <start ms>", shim.h SHIM_STARTED) once the command runs, replaced at the end by
 * how the job ended (a JSON object, SHIM_STATUS). Both live in one extended attribute of the
 * job's directory, SHIM_RECORD_XATTR, replaced whole each time (as a rename would be, and a
 * reader sees one or the other, never a mix): setting it creates no inode, where a file costs
 * one, and on ext4 without a journal a new inode costs 0.1-1 ms when many were freed in the
 * last minutes. Where the attribute cannot be set (a file system without trusted attributes,
 * a value too big for it, a joblet without CAP_SYS_ADMIN in the host's user namespace), the
 * record is the file of that name in the directory, written atomically; the reader takes
 * either, as it does the files of a shim from before the attribute. The daemon reads the end
 * record once, typed, when the shim exits or when a restarted daemon finds the job over. */
#ifndef JOBLET_SHIM_STATUS_H
#define JOBLET_SHIM_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHIM_RECORD_XATTR "trusted.joblet.run"

typedef struct shim_status {
    bool has_exit;
    int exit_code;
    int signal;                   /* 0 none */
    char signal_name[32];
    char error[512];              /* "" none */
    uint64_t cpu_ns, memory_peak_bytes, io_read_bytes, io_write_bytes;
    int64_t started_at_ms, ended_at_ms;
    char end_reason[32];          /* "" when the shim wrote none */
    int64_t log_bytes;            /* the job's output files' size then (logwriter.h
                                   * log_files_bytes); -1 when the record says none */
} shim_status;

/* Records the start line (name SHIM_STARTED) or the end (SHIM_STATUS) of the job whose
 * directory is dir (open as dirfd): in the attribute, else, and from then on for this run
 * (*files set), in the file of that name, atomically (the end's file replaces the start's).
 * 0, or -1 with the reason in err. */
int shim_record_write(int dirfd, const char *dir, const char *name, const char *txt, size_t len, bool *files,
                      char *err, size_t errlen);

/* The record of that kind (SHIM_STARTED or SHIM_STATUS) of the job whose directory is dir:
 * the attribute's when it holds that kind, else the file's. malloc'd text; NULL none. */
char *shim_record_read(const char *dir, const char *name);

/* Removes both kinds of record, attribute and files: a requeued job's next run writes its
 * own. */
void shim_record_clear(const char *dir);

/* The end record of the job whose directory is dir: 0, or -1 when there is none or it is not
 * a status record. */
int shim_status_read(const char *dir, shim_status *st);

#endif
