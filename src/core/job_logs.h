/* GET /v1/jobs/{id}/logs: a job's output (exec/logwriter.h) replayed from its files and, when
 * following, what the shim appends, in one of three forms:
 *   frames  common/logframe.h: the job's bytes in large frames (stream, time, length), read
 *           from .data with no work per line — what rnx uses;
 *   raw     one stream's bytes only, nothing added (sendfile for an ended job);
 *   ndjson  one JSON record per line (ts, stream, data or data_b64), then an end record — for
 *           scripts, and the form of old clients.
 * A follower is a pull source (common/pull.h): with nothing to send it waits, and inotify on
 * the job's directory, or the job's end, calls its notify (api/stream.c holds the connection
 * meanwhile). Nothing here blocks the event loop. The files are read by exec/logreader.h (order,
 * since, the tail search in slices); here are the followers, the three forms and the wake-ups. */
#ifndef JOBLET_JOB_LOGS_H
#define JOBLET_JOB_LOGS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "job.h"

#include "../common/pull.h"

enum job_logs_format { JOB_LOGS_NDJSON, JOB_LOGS_FRAMES, JOB_LOGS_RAW };

typedef struct job_logs_opts {
    enum job_logs_format format;
    int streams;          /* 1 stdout, 2 stderr, 3 both (raw: exactly one) */
    bool follow;          /* then go on until the job ends */
    int64_t tail;         /* only the last this many lines (of the streams asked for); -1 = all */
    int64_t since_ns;     /* only what was written at or after this time; 0 = all */
    uid_t reader;         /* who reads: the loop turn's share of reading is split per user */
} job_logs_opts;

typedef struct follower follower;

/* An ended job's one stream sent whole (raw, no tail, no since): the file itself, to send by
 * sendfile. fd is the caller's to close. */
typedef struct job_logs_file {
    int fd;               /* -1: none */
    uint64_t len;
    bool capped;          /* the job reached jobs.max_log_bytes: name is the stream that did */
    const char *name;
} job_logs_file;

/* A reader of j's output as o asks (checked by the route). NULL with file->fd >= 0: send that
 * file instead; NULL with e set: the job's logs cannot be read as asked (tail or since on a job
 * of the old format). */
follower *job_logs_open(job *j, const job_logs_opts *o, job_logs_file *file, jerr *e);
void job_logs_set_notify(follower *f, pull_notify_fn notify, void *arg);
/* Up to max bytes in o's format, or 0 with *st (common/pull.h). */
size_t job_logs_read(follower *f, char *buf, size_t max, enum pull_state *st);
void job_logs_close(follower *f);
/* How much to read at once for o's format (what the transport allocates per reader). */
size_t job_logs_block(const job_logs_opts *o);
/* The job ended: its followers send what is left and the end (the settle step calls it). */
void job_logs_wake(job *j);
/* The job is going away (deleted, or the daemon stops): its followers end now. */
void job_logs_detach(job *j);
void job_logs_init(void);

#endif
