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
#ifndef JOBLET_LOGSTREAM_H
#define JOBLET_LOGSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/err.h"
#include "job.h"

#include "../common/pull.h"

enum logstream_format { LOGSTREAM_NDJSON, LOGSTREAM_FRAMES, LOGSTREAM_RAW };

typedef struct logstream_opts {
    enum logstream_format format;
    int streams;          /* 1 stdout, 2 stderr, 3 both (raw: exactly one) */
    bool follow;          /* then go on until the job ends */
    int64_t tail;         /* only the last this many lines (of the streams asked for); -1 = all */
    int64_t since_ns;     /* only what was written at or after this time; 0 = all */
} logstream_opts;

typedef struct follower follower;

/* An ended job's one stream sent whole (raw, no tail, no since): the file itself, to send by
 * sendfile. fd is the caller's to close. */
typedef struct logstream_file {
    int fd;               /* -1: none */
    uint64_t len;
    bool capped;          /* the job reached jobs.max_log_bytes: name is the stream that did */
    const char *name;
} logstream_file;

/* A reader of j's output as o asks (checked by the route). NULL with file->fd >= 0: send that
 * file instead; NULL with e set: the job's logs cannot be read as asked (tail or since on a job
 * of the old format). */
follower *logstream_open(job *j, const logstream_opts *o, logstream_file *file, jerr *e);
void logstream_set_notify(follower *f, pull_notify_fn notify, void *arg);
/* Up to max bytes in o's format, or 0 with *st (common/pull.h). */
size_t logstream_read(follower *f, char *buf, size_t max, enum pull_state *st);
void logstream_close(follower *f);
/* How much to read at once for o's format (what the transport allocates per reader). */
size_t logstream_block(const logstream_opts *o);
/* The job ended: its followers send what is left and the end (the settle step calls it). */
void logstream_wake(job *j);
/* The job is going away (deleted, or the daemon stops): its followers end now. */
void logstream_detach(job *j);
void logstream_init(void);

#endif
