/* JSON answers of the API (docs/api.md), shared by the routes, the /metrics route and the
 * server itself. */
#ifndef JOBLET_REPLY_H
#define JOBLET_REPLY_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdbool.h>

#include "../common/err.h"

/* What an answer needs to know of the request it answers, kept with its connection (the
 * connection's socket context, which http.c makes when the connection opens and sets at each
 * request): its method (an answer to a GET stands whether or not a commit of others' changes
 * fails) and whether its route committed its change itself. */
typedef struct reply_conn {
    char method[8];           /* "" until the first request */
    bool own_commit;
    void *owner;              /* http.c's own for the connection */
    /* http.c's: records a change answered `status` (2xx) in the audit trail, into the open
     * transaction, before the answer's commit (so that no 2xx goes out before its record is
     * committed): 0 not a change the trail records, 1 recorded, -1 recorded but its insert
     * failed (e says why; it is written again later). A call, not a name: http.c is above. */
    int (*audit)(struct MHD_Connection *c, unsigned status, jerr *e);
} reply_conn;

/* The route committed its change itself (state_commit_now) before answering: a later commit
 * of others' changes failing does not make its answer "not saved". */
void http_reply_committed(struct MHD_Connection *c);
/* Commits the database, then queues `body` (consumed) with `status`. */
enum MHD_Result http_reply_json(struct MHD_Connection *c, unsigned status, json_t *body);
/* The same for a change made in an earlier turn (a parked request's: a suspend answered once the
 * freezer is done): lost says that turn's commit failed (core/state.h state_job_unsaved), and the
 * answer is then "not saved", as a change this turn's commit cannot save is. */
enum MHD_Result http_reply_json_made_before(struct MHD_Connection *c, unsigned status, json_t *body, bool lost);
/* {"error": {"code", "message"[, "field"]}} with the error's HTTP status (500 when it has none). */
enum MHD_Result http_reply_error(struct MHD_Connection *c, const jerr *e);
/* The same answer whole (status line, headers, "Connection: close", body) in out, for a connection
 * joblet refuses before libmicrohttpd reads from it (a user past its share of connections): its
 * length, 0 when it does not fit in cap. */
size_t http_reply_error_raw(const jerr *e, char *out, size_t cap);

/* libmicrohttpd's own messages (MHD_OPTION_EXTERNAL_LOGGER of each of joblet's servers), in
 * joblet's log with its time and level, not bare on stderr: a streamed answer cut because its
 * client went away ("application error generating response": rnx job wait, a --follow its user
 * ended) is no one's error, and is said at debug; the others are warnings. */
void reply_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
