/* JSON answers of the API (docs/api.md), shared by the routes, the /metrics route and the
 * server itself. */
#ifndef JOBLET_REPLY_H
#define JOBLET_REPLY_H

#include <jansson.h>
#include <microhttpd.h>

#include "../common/err.h"

/* The method of the request being answered, counted with each answer's status by
 * http_reply_json (counters_request). Set by routes_dispatch. */
void http_reply_method(const char *method);
/* Counts an answer a route queued itself (a streamed one), as http_reply_json counts its own. */
void http_reply_count(unsigned status);
/* The route committed its change itself (state_commit_now) before answering: a later commit
 * of others' changes failing does not make its answer "not saved". Until the next request. */
void http_reply_committed(void);
/* Commits the database, then queues `body` (consumed) with `status`. */
enum MHD_Result http_reply_json(struct MHD_Connection *c, unsigned status, json_t *body);
/* {"error": {"code", "message"[, "field"]}} with the error's HTTP status (500 when it has none). */
enum MHD_Result http_reply_error(struct MHD_Connection *c, const jerr *e);

#endif
