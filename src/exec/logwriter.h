/* On-disk job output, two files per stream, written by the job's shim and read by joblet:
 *
 *   <stream>.data  the job's bytes, exactly as it wrote them (nothing added, nothing split)
 *   <stream>.idx   one 32-byte entry (log_index_entry, host byte order) per piece the shim
 *                  read from the job's pipe: when, where the piece ends in .data, and a
 *                  sequence number shared by both streams of the job, which orders stdout
 *                  against stderr exactly as the shim received them
 *
 * The index is what a reader trusts: bytes of .data past the last entry's end are not yet
 * committed (or were written by a write cut short: the next entry's end covers them). Replay
 * is thus large reads of .data (or sendfile of it when one stream is asked for), with no work
 * per line; the time of a line is that of the piece it ends in.
 *
 * Jobs from before this format have one file per stream, <stream>.log, one record per line:
 *     <unix time in ns> SP <F|P> SP <bytes of the line without its newline> LF
 * (F = a newline followed, P = it did not); log_parse_record reads them. */
#ifndef JOBLET_LOGWRITER_H
#define JOBLET_LOGWRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One piece of a stream, as the index holds it. */
typedef struct log_index_entry {
    int64_t ts_ns;       /* CLOCK_REALTIME when the shim read it */
    uint64_t end;        /* offset in .data just past its bytes (it starts at the previous end) */
    uint64_t seq;        /* 1, 2, ... across both streams of the job */
    uint32_t flags;      /* LOG_IDX_* */
    uint32_t reserved;   /* 0 */
} log_index_entry;
_Static_assert(sizeof(log_index_entry) == 32, "the index entry is 32 bytes on disk");

/* The stream reached its cap (jobs.max_log_bytes) here: the rest of it was discarded. With
 * one of the next two as well, what was reached was not the stream's own cap but: */
#define LOG_IDX_CAPPED 1u
#define LOG_IDX_USER_CAPPED 2u   /* the owner's budget: their jobs' output together (jobs.max_log_bytes_per_user) */
#define LOG_IDX_DISK_LOW 4u      /* the floor: the state filesystem had less free than half jobs.state_reserve */

/* One user's budget for the output of all of their jobs (jobs.max_log_bytes_per_user): the
 * start of the file <state>/logbudget/<uid>, mapped shared by joblet and by the shim of each
 * of that user's jobs. A shim adds what it writes (data and index) to `used` atomically before
 * writing, and stops the stream where `cap` would be passed; joblet sets both at start (from
 * the files on disk) and takes off what a deleted job held. */
typedef struct log_budget {
    uint64_t magic;          /* LOG_BUDGET_MAGIC */
    uint64_t cap;
    uint64_t used;
} log_budget;
#define LOG_BUDGET_MAGIC 0x314742746c626f6aull   /* "jobltBG1" */
#define LOG_BUDGET_FILE_SIZE 4096
/* How many bytes a stream writes between two looks at the free room of its filesystem. */
#define LOG_FLOOR_CHECK_BYTES (4u << 20)

typedef struct logw {
    int data_fd, idx_fd;    /* -1 until the first byte: a job that writes nothing creates nothing */
    int dirfd;
    char data_name[24], idx_name[24];
    uint64_t end;           /* bytes in .data */
    uint64_t idx_bytes;     /* bytes in .idx */
    uint64_t last_seq;      /* the last entry's sequence number an earlier run left (0: none) */
    uint64_t cap;           /* .data and .idx together at most this; 0 = no cap */
    bool capped;            /* the cap was reached: the rest of the stream is discarded */
    log_budget *budget;     /* the owner's, shared; NULL none */
    uint64_t floor;         /* free bytes under which the stream stops; 0 = none */
    uint64_t unchecked;     /* bytes written since the free room was last looked at */
    bool checked;           /* it was looked at once */
} logw;

/* stream: "stdout" or "stderr" (the files' names). cap: the most bytes the two files may hold
 * together, 0 = none; files an earlier run of the job left (a requeue) are appended to, counted
 * in the cap, and their last sequence number is last_seq (the caller's next pieces follow it). Once a piece would pass it, the whole lines of it that fit are kept, an
 * entry flagged LOG_IDX_CAPPED follows, and the rest of the stream is dropped (the job is
 * never blocked: its pipe is still read). */
void logw_init(logw *w, int dirfd, const char *stream, uint64_t cap);
/* Appends one piece read from the job: its bytes to .data, then its entry to .idx. */
int logw_feed(logw *w, const char *data, size_t n, int64_t ts_ns, uint64_t seq);
/* The limits beyond the stream's own cap (LOG_IDX_USER_CAPPED, LOG_IDX_DISK_LOW): the owner's
 * budget (NULL: none) and the free-room floor of the directory's filesystem (0: none), looked
 * at before the first piece and then every LOG_FLOOR_CHECK_BYTES. */
void logw_limits(logw *w, log_budget *budget, uint64_t floor);

/* What a job's output files in directory dirfd hold on disk, in bytes: both streams' .data and
 * .idx, and the old format's .log files (a job kept from before them): what its owner's log
 * budget counts for it. Each name looked up in the directory (fstatat), none walked whole: the
 * shim says it in its end record, and a start sums it for every job kept (core/statedisk.c). */
uint64_t log_files_bytes(int dirfd);

/* The note a reader shows where a stream was capped (cap: the stream's jobs.max_log_bytes). */
int log_cap_note(char *out, size_t outlen, const char *stream, uint64_t cap);
/* The note for an entry's flags (LOG_IDX_*): the stream's cap (cap), its owner's budget
 * (user_cap), or the state filesystem's floor. */
int log_stop_note(char *out, size_t outlen, const char *stream, uint32_t flags, uint64_t cap, uint64_t user_cap);

/* ---- the old format (read only) ---- */

typedef struct log_record {
    int64_t ts_ns;
    bool newline;        /* F */
    const char *data;
    size_t len;
} log_record;

/* Parses one record at buf[0..n). Returns bytes consumed, 0 when the record is incomplete
 * (the writer has not finished it yet), -1 when the bytes are not a record. */
long log_parse_record(const char *buf, size_t n, log_record *r);

#endif
