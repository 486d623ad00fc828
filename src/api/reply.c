/* JSON answers of the API: every route's, the /metrics route's errors, and the server's own
 * (a caller whose credentials cannot be read). */
#include "reply.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../core/audit.h"
#include "../core/state.h"

static reply_conn *of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void http_reply_committed(struct MHD_Connection *c)
{
    reply_conn *rc = of(c);
    if (rc)
        rc->own_commit = true;
}

/* A request that reads only: its answer stands whether or not a commit of others' changes fails. */
static bool reads_only(const reply_conn *rc)
{
    return rc && (!strcmp(rc->method, "GET") || !strcmp(rc->method, "HEAD"));
}

/* retry: the answer is a jerr_busy's (common/err.h): nothing was done, ask again after a second.
 * lost: the change answered was made in an earlier turn whose commit failed (its rows wait to be
 * written again: core/state.h), so this answer's commit does not save it. */
static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *body, bool retry, bool lost)
{
    /* libmicrohttpd may send this answer within the current MHD_run, before the loop's turn
     * ends: what it describes is committed first. A change that could not be committed is
     * never answered 2xx: the routes that create take their change back first (submit_commit,
     * workflow_create); any other answers that it is not saved. */
    jerr ce = {0}, ae = {0};
    const reply_conn *rc = of(c);
    bool change = status >= 200 && status < 300 && !reads_only(rc);
    /* the audit record of a change goes into the same commit (the route's own commit came
     * first: then the record is kept until one takes it, core/audit.c) */
    int audited = change && rc && rc->audit ? rc->audit(c, status, &ae) : 0;
    bool failed = state_commit_now(&ce) < 0;
    if (!failed && audited < 0)
        ce = ae, failed = true;
    bool commit_failed = failed; /* (the audit record's fate: committed unless this commit failed) */
    if (!failed && lost && change)
        failed = jerr_http(&ce, 503, "joblet's database could not be written when it was done; it is written "
                                     "again once it can be") < 0;
    if (failed && change && !(rc && rc->own_commit)) {
        if (audited && commit_failed) {
            char note[64];
            snprintf(note, sizeof note, " (answered %d: not saved then)", ce.http ? ce.http : 500);
            audit_change_note(note);
        }
        json_decref(body);
        char msg[sizeof ce.msg];
        snprintf(msg, sizeof msg, "%s", ce.msg);
        /* done, only not saved: not the refusal's "try again" */
        size_t ml = strlen(msg), al = strlen(STATE_COMMIT_AGAIN);
        if (ml >= al && !strcmp(msg + ml - al, STATE_COMMIT_AGAIN))
            msg[ml - al] = 0;
        jerr_http(&ce, ce.http, "not saved: %s (what was asked is done in this joblet, but would not outlive a restart "
                                "until the database can be written again)", msg);
        ce.code = 0; /* done: not a jerr_busy's "ask again" */
        return http_reply_error(c, &ce);
    }
    char *t = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!t) {
        /* Only an internal fault gets here (jansson refused a value): answer, don't crash. */
        status = 500;
        t = xstrdup("{\"error\":{\"code\":\"internal\",\"message\":\"joblet could not encode its answer\"}}");
    }
    size_t n = strlen(t);
    t[n] = '\n';
    struct MHD_Response *r = MHD_create_response_from_buffer(n + 1, t, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    /* RFC 9110's "not now, ask again after": rnx does (cli/client.c) */
    if (retry)
        MHD_add_response_header(r, "Retry-After", "1");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok; /* counted when the request is done (http.c) */
}

enum MHD_Result http_reply_json(struct MHD_Connection *c, unsigned status, json_t *body)
{
    return reply_json(c, status, body, false, false);
}

enum MHD_Result http_reply_json_made_before(struct MHD_Connection *c, unsigned status, json_t *body, bool lost)
{
    return reply_json(c, status, body, false, lost);
}

/* {"error": {...}} of e. */
static json_t *error_body(const jerr *e)
{
    char msg[sizeof e->msg], field[sizeof e->field];
    snprintf(msg, sizeof msg, "%s", e->msg);
    snprintf(field, sizeof field, "%s", e->field);
    utf8_sanitize(msg);
    utf8_sanitize(field);
    json_t *err = json_pack("{s:s,s:s}", "code", jerr_code_name(e), "message", msg);
    if (field[0])
        json_object_set_new(err, "field", json_string(field));
    return json_pack("{s:o}", "error", err);
}

enum MHD_Result http_reply_error(struct MHD_Connection *c, const jerr *e)
{
    unsigned status = e->http ? (unsigned)e->http : 500;
    return reply_json(c, status, error_body(e), status == 503 && e->code == EAGAIN, false);
}

size_t http_reply_error_raw(const jerr *e, char *out, size_t cap)
{
    unsigned status = e->http ? (unsigned)e->http : 500;
    json_t *body = error_body(e);
    char *t = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!t)
        return 0;
    const char *phrase = MHD_get_reason_phrase_for(status);
    int n = snprintf(out, cap, "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s"
                               "Connection: close\r\n\r\n%s\n",
                     status, phrase && *phrase ? phrase : "Error", strlen(t) + 1,
                     status == 503 && e->code == EAGAIN ? "Retry-After: 1\r\n" : "", t);
    free(t);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

void reply_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[600];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = 0;
    if (strstr(msg, "application error generating response"))
        log_debug("http: %s", msg);
    else
        log_warn("http: %s", msg);
}
