/* Request bodies as JSON (body.c): every route that reads a JSON body reads it here, scanned
 * against bounds before jansson builds anything (common/jsonscan.h, issue 14). */
#ifndef JOBLET_BODY_H
#define JOBLET_BODY_H

#include <jansson.h>

#include "../common/err.h"
#include "http.h"

/* Which bounds a route's body is held to (the table in body.c; docs/api.md, "Request bodies"). */
typedef enum body_kind {
    BODY_REQUEST,   /* POST /v1/jobs, POST /v1/workflows: job requests with their upload listings */
    BODY_SMALL,     /* POST /v1/volumes, POST /v1/gpus/{id}/{action}: a few fields */
} body_kind;

/* The request's body as JSON, or NULL with e set: 503 when other requests held the memory for
 * bodies, 413 past server.max_body_bytes or past a bound of kind (400 past the depth), 400 when
 * it is empty or not JSON. The caller owns the result. */
json_t *body_json(const request *r, body_kind kind, jerr *e);
/* The answer to a request whose body was not kept for the memory budget (r->body_busy): 503
 * when everyone's bodies held it, 429 naming the share when the caller's own did. */
void body_busy_error(const request *r, jerr *e);

#endif
