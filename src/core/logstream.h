/* GET /v1/jobs/{id}/logs: a job's records (exec/logwriter.h) replayed from its files as NDJSON,
 * then, when following, what the shim appends (logstream.c). A follower with nothing to send
 * suspends its connection; inotify on the job's directory, or the job's end, resumes it.
 * Nothing here blocks the event loop. */
#ifndef JOBLET_LOGSTREAM_H
#define JOBLET_LOGSTREAM_H

#include <stdbool.h>

#include "job.h"

struct MHD_Connection;
struct MHD_Response;

/* streams: 1 stdout, 2 stderr, 3 both. */
struct MHD_Response *logstream_response(job *j, struct MHD_Connection *conn, bool follow, int streams);
/* The job ended: its followers send what is left and the end (the settle step calls it). */
void logstream_wake(job *j);
/* The job is going away (deleted, or the daemon stops): its followers end now. */
void logstream_detach(job *j);
void logstream_init(void);

#endif
