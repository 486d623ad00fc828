/* PUT /v1/uploads/{id}: the bytes of a streamed upload (core/incoming.h), written as
 * libmicrohttpd hands them over, in pieces of its read buffer; none is kept. */
#ifndef JOBLET_UPLOADS_H
#define JOBLET_UPLOADS_H

#include <microhttpd.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct put_state put_state;

bool uploads_is_put(const char *method, const char *url);
/* At the request's headers (the only moment before the body when libmicrohttpd lets an answer
 * be queued): the upload named, its owner, the length the body declares. A refusal is
 * answered at once, and the body is never read; *out is NULL then. */
enum MHD_Result uploads_begin(struct MHD_Connection *c, const char *url, uid_t uid, put_state **out);
/* A piece of the body: written, or, after a failure, counted and dropped until the body ends
 * (the answer can only be queued then). What the turn's slice of making entries left unwritten
 * stays in *len, the connection suspended until the next turn (core/incoming.h). */
enum MHD_Result uploads_data(put_state *p, const char *data, size_t *len);
/* The body ended: the job or workflow is created (201), or the failure answered; *done, and p
 * freed. While entries are left to make, *done is false: the connection waits for the next turn,
 * and libmicrohttpd calls again (uploads_end again). */
enum MHD_Result uploads_end(struct MHD_Connection *c, put_state *p, bool *done);
/* The connection ended before the body did (closed, or idle for jobs.upload_timeout_s): what
 * was written is removed. Frees p. */
void uploads_abort(put_state *p, enum MHD_RequestTerminationCode why);

#endif
