/* PUT /v1/uploads/{id} (uploads.h, docs/api.md "Streamed uploads"). */
#include "uploads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/parse.h"
#include "../common/util.h"
#include "../core/array_json.h"
#include "../core/incoming.h"
#include "../core/job_json.h"
#include "../core/loop.h"
#include "../core/settle.h"
#include "../core/state.h"
#include "../core/workflow_json.h"
#include "pace.h"
#include "reply.h"
#include "stream.h"

#define PREFIX "/v1/uploads/"
/* After a failure, a body without a length (chunked) is read this far past what was declared,
 * for the client to get the answer; then the connection is closed. */
#define DISCARD_SLACK (1u << 20)

struct put_state {
    incoming *in;             /* NULL once dropped */
    bool failed;
    jerr err;                 /* why, answered when the body ends */
    bool sized;               /* the body has a Content-Length (equal to what was declared) */
    uint64_t seen;            /* bytes of the body so far */
    uint64_t declared;
    pace pace;                /* a byte per timeout does not keep it (pace.h) */
    struct MHD_Connection *conn;
    /* the listing's entries without bytes are made a slice per turn (incoming_write): the
     * connection waits, suspended, for the next turn, its unwritten bytes left with
     * libmicrohttpd, which gives them again */
    stream_held hold;
    loop_task next_turn;
    size_t given_back;        /* bytes of the body handed back: not new when they come again */
    bool again;               /* uploads_end waits for the next turn (the body is all in) */
    bool waited;              /* joblet made the client wait for its entries: a new pace window */
};

static void on_next_turn(loop_task *t) { stream_release(&((put_state *)t->data)->hold); }

static void wait_next_turn(put_state *p)
{
    stream_hold(&p->hold, p->conn, NULL, NULL);
    loop_later(&p->next_turn);
}

static void put_free(put_state *p)
{
    loop_later_cancel(&p->next_turn);
    stream_forget(&p->hold);
    free(p);
}

bool uploads_is_put(const char *method, const char *url)
{
    return !strcmp(method, "PUT") && !strncmp(url, PREFIX, strlen(PREFIX));
}

enum MHD_Result uploads_begin(struct MHD_Connection *c, const char *url, uid_t uid, put_state **out)
{
    jerr e = {0};
    *out = NULL;
    incoming *in = incoming_find(url + strlen(PREFIX), uid, &e);
    if (!in)
        return http_reply_error(c, &e);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t len = 0;
    if (cl && (parse_u64(cl, &len) < 0 || len != incoming_bytes(in))) {
        /* refused before any byte is read; the upload still waits for a PUT that is right */
        jerr_http(&e, 400, "Content-Length %.40s is not the %llu bytes the upload's files declare", cl,
                  (unsigned long long)incoming_bytes(in));
        return http_reply_error(c, &e);
    }
    put_state *p = xcalloc(1, sizeof *p);
    p->in = in;
    p->sized = cl != NULL;
    p->declared = incoming_bytes(in);
    p->conn = c;
    p->next_turn = (loop_task){.fn = on_next_turn, .data = p};
    pace_start(&p->pace);
    incoming_attach(in);
    /* a client that stops sending is dropped after this long; MHD's timer, on the loop */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned int)core.cfg.upload_timeout_s);
    *out = p;
    return MHD_YES;
}

enum MHD_Result uploads_data(put_state *p, const char *data, size_t *len)
{
    size_t n = *len, fresh = n > p->given_back ? n - p->given_back : 0;
    *len = 0;
    p->given_back = 0;
    if (p->waited && stream_client_gone(p->conn))
        return MHD_NO; /* its bytes were all in libmicrohttpd's hands: gone, uploads_abort drops it */
    if (p->waited) {
        /* the turns joblet spent on this listing's entries, its bytes held back meanwhile, are
         * not the client's to count against it (as a copy's pipe that was full: pace.h) */
        pace_start(&p->pace);
        p->waited = false;
    }
    p->seen += fresh;
    /* past the declared bytes (a chunked body, refused but read on up to DISCARD_SLACK), what is
     * to come is not known: "none left" would start a new window at each byte */
    uint64_t left = p->seen <= p->declared ? p->declared - p->seen : PACE_UNKNOWN;
    if (!pace_ok(&p->pace, fresh, left, core.cfg.upload_timeout_s)) {
        if (p->in) {
            char why[160];
            snprintf(why, sizeof why, "fewer than %u bytes came in jobs.upload_timeout_s (%llu s): the connection is "
                                      "closed", PACE_FLOOR, (unsigned long long)core.cfg.upload_timeout_s);
            incoming_drop(p->in, why);
            p->in = NULL;
        }
        p->failed = true;
        return MHD_NO;
    }
    if (p->failed)
        return p->sized || p->seen <= p->declared + DISCARD_SLACK ? MHD_YES : MHD_NO;
    size_t taken;
    int rc = incoming_write(p->in, data, n, &taken, &p->err);
    if (rc < 0) {
        /* the answer waits for the end of the body; the files go now */
        p->failed = true;
        incoming_drop(p->in, p->err.msg);
        p->in = NULL;
    } else if (rc > 0) {
        *len = p->given_back = n - taken;
        p->waited = true;
        wait_next_turn(p);
    }
    return MHD_YES;
}

enum MHD_Result uploads_end(struct MHD_Connection *c, put_state *p, bool *done)
{
    if (p->again && stream_client_gone(c)) {
        *done = false;
        return MHD_NO; /* the client went while the entries after its last file were made: uploads_abort */
    }
    jerr e = p->err;
    job *j = NULL;
    workflow *wf = NULL;
    jarray *a = NULL;
    int rc = p->failed ? -1 : incoming_finish(p->in, &j, &wf, &a, &e);
    *done = rc <= 0;
    if (rc > 0) {
        p->again = true;
        wait_next_turn(p); /* its entries left to make; libmicrohttpd calls again once resumed */
        return MHD_YES;
    }
    put_free(p);
    if (rc < 0)
        return http_reply_error(c, &e);
    /* committed whole by incoming_finish (submit_commit, workflow_create): a later commit of
     * others' rows or of its audit record failing leaves it made, as a submission's 201 */
    http_reply_committed(c);
    settle(); /* the answer shows where it stands, as a submission's does */
    state_commit();
    return http_reply_json(c, 201, wf ? workflow_json(wf, false) : a ? array_json(a) : job_json(j));
}

void uploads_abort(put_state *p, enum MHD_RequestTerminationCode why)
{
    if (p->in)
        incoming_drop(p->in, why == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED
                                 ? "no byte came for jobs.upload_timeout_s"
                                 : "the connection closed before every byte arrived");
    put_free(p);
}
