/* On-disk job output: one file per stream (stdout.log, stderr.log), one record per line:
 *
 *     <unix time in ns> SP <F|P> SP <bytes of the line without its newline> LF
 *
 * F = the job wrote a newline after the line; P = it did not (a partial line flushed at
 * LOGW_LINE_MAX bytes or at end of stream). The job's bytes are stored unchanged; the
 * record's own LF is never part of the data, so any byte but LF round-trips. A write cut
 * short (disk full) can leave one shortened record or a line that is not a record; the writer
 * ends it with an LF before its next record, and readers skip lines that are not records. */
#ifndef JOBLET_LOGWRITER_H
#define JOBLET_LOGWRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOGW_LINE_MAX 16384

typedef struct logw {
    int fd;                 /* -1 until the first byte: a job that writes nothing creates nothing */
    int dirfd;
    const char *name;
    size_t len;
    uint64_t bytes_written;
    uint64_t cap;           /* the file's most bytes (jobs.max_log_bytes); 0 = no cap */
    bool capped;            /* the cap was reached: the rest of the stream is discarded */
    bool torn;              /* a failed write left the file's last record without its LF */
    char line[LOGW_LINE_MAX];
} logw;

/* cap: the most bytes the file may hold, the closing record included; 0 = no cap. Once a
 * record would pass it, the writer appends one record saying so and drops the rest of the
 * stream (the job is never blocked: its pipe is still read). */
void logw_init(logw *w, int dirfd, const char *name, uint64_t cap);
/* Room kept under the cap for the record that says it was reached. */
#define LOGW_CAP_NOTE_MAX 200
/* Splits data into records stamped with ts_ns and appends them with one write(). */
int logw_feed(logw *w, const char *data, size_t n, int64_t ts_ns);
/* Writes a pending partial line (end of stream). */
int logw_flush(logw *w, int64_t ts_ns);

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
