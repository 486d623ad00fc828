/* A response whose body is what a non-blocking pipe gives, as it comes (a copy's tar,
 * api/jobs_cp.c): nothing of it is held but what libmicrohttpd asks for. While the pipe is
 * empty the connection is suspended, and resumed when the pipe has more, when it ends, or
 * when the client hangs up. At the pipe's end the body is whole or cut short: a stream cut
 * short ends without its last chunk, so the client knows. */
#ifndef JOBLET_API_FDSTREAM_H
#define JOBLET_API_FDSTREAM_H

#include <microhttpd.h>

typedef struct fdstream fdstream;

/* At the pipe's end: 1 the body is whole, -1 it is not, 0 not known yet (fdstream_wake is
 * called when it is). */
typedef int (*fdstream_end_fn)(void *arg);
/* The stream is gone (its response freed): arg is not called again. */
typedef void (*fdstream_gone_fn)(void *arg);

/* fd stays the caller's, who keeps it open while the stream lives (until gone is called). */
struct MHD_Response *fdstream_response(struct MHD_Connection *conn, int fd, fdstream_end_fn end,
                                       fdstream_gone_fn gone, void *arg, fdstream **out);
/* Something changed for the stream's end (end may now know): it looks again. */
void fdstream_wake(fdstream *s);
/* The caller goes first: end and gone are no longer called, the stream ends cut short. */
void fdstream_detach(fdstream *s);
/* Resumes every suspended stream, cut short: the server stops. */
void fdstream_stop_all(void);

#endif
