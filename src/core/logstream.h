/* GET /v1/jobs/{id}/logs: a job's output (exec/logwriter.h) replayed from its files and, when
 * following, what the shim appends, in one of three forms:
 *   frames  common/logframe.h: the job's bytes in large frames (stream, time, length), read
 *           from .data with no work per line — what rnx uses;
 *   raw     one stream's bytes only, nothing added (sendfile for an ended job);
 *   ndjson  one JSON record per line (ts, stream, data or data_b64), then an end record — for
 *           scripts, and the form of old clients.
 * A follower with nothing to send suspends its connection; inotify on the job's directory, or
 * the job's end, resumes it. Nothing here blocks the event loop. */
#ifndef JOBLET_LOGSTREAM_H
#define JOBLET_LOGSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/err.h"
#include "job.h"

struct MHD_Connection;
struct MHD_Response;

enum logstream_format { LOGSTREAM_NDJSON, LOGSTREAM_FRAMES, LOGSTREAM_RAW };

typedef struct logstream_opts {
    enum logstream_format format;
    int streams;          /* 1 stdout, 2 stderr, 3 both (raw: exactly one) */
    bool follow;          /* then go on until the job ends */
    int64_t tail;         /* only the last this many lines (of the streams asked for); -1 = all */
    int64_t since_ns;     /* only what was written at or after this time; 0 = all */
} logstream_opts;

/* The response for a request (checked by the route); NULL with e set when the job's logs
 * cannot be read as asked (tail or since on a job of the old format). */
struct MHD_Response *logstream_response(job *j, struct MHD_Connection *conn, const logstream_opts *o, jerr *e);
/* The job ended: its followers send what is left and the end (the settle step calls it). */
void logstream_wake(job *j);
/* The job is going away (deleted, or the daemon stops): its followers end now. */
void logstream_detach(job *j);
void logstream_init(void);

#endif
