/* POST /v1/jobs/{id}/exec (jobs_exec.h). */
#include "jobs_exec.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/jobreq.h"
#include "../core/connfds.h"
#include "../core/job_exec.h"
#include "attach.h"
#include "body.h"
#include "reply.h"

/* The fields of an exec's body: the job request's own (common/jobreq.c checks them as it does a
 * submission's, and its refusals name the field). */
static const char *const exec_fields[] = {"command", "args", "env", "workdir", "tty", "stdin"};

static int read_request(const request *r, job_req *req, jerr *e)
{
    json_t *body = body_json(r, BODY_REQUEST, e);
    if (!body)
        return -1;
    if (!json_is_object(body)) {
        json_decref(body);
        return jerr_field(e, NULL, "the exec body must be a JSON object: {\"command\": \"sh\", \"args\": [...], "
                                   "\"env\": {...}, \"workdir\": \"/work\", \"tty\": false, \"stdin\": false}");
    }
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) {
        bool known = false;
        for (size_t i = 0; i < sizeof exec_fields / sizeof *exec_fields; i++)
            known |= !strcmp(k, exec_fields[i]);
        if (!known) {
            jerr_field(e, k, "%.100s: unknown field of an exec; accepted fields: command, args, env, workdir, tty, "
                             "stdin", k);
            json_decref(body);
            return -1;
        }
    }
    int rc = jobreq_from_json(body, req, 0, time(NULL), e);
    json_decref(body);
    return rc;
}

enum MHD_Result jobs_exec_route(request *r, job *j)
{
    jerr e = {0};
    if (strcmp(r->method, "POST")) {
        jerr_http(&e, 405, "exec is POST /v1/jobs/{id}/exec with a JSON body, Connection: Upgrade and Upgrade: tcp");
        return http_reply_error(r->conn, &e);
    }
    if (!attach_asks_upgrade(r->conn)) {
        jerr_http(&e, 400, "exec switches the connection to a stream of frames: send Connection: Upgrade and "
                           "Upgrade: tcp (docs/api.md, \"Interactive streams\")");
        return http_reply_error(r->conn, &e);
    }
    job_req req;
    if (read_request(r, &req, &e) < 0)
        return http_reply_error(r->conn, &e);
    int fd;
    unsigned on_job, of_user;
    uint64_t serial;
    attach_exec_held(j, r->who.uid, &on_job, &of_user);
    /* its helper's socket and pidfd, its stream's timers (and over TLS libmicrohttpd's socket
     * pair): counted first, the stream's to give back (attach.c) */
    unsigned fds = CONNFDS_EXEC + (r->who.via == CALLER_TLS ? CONNFDS_TLS_UPGRADE : 0);
    if (connfds_take(&r->who, fds, "an exec (rnx job exec)", &e) < 0) {
        jobreq_free(&req);
        return http_reply_error(r->conn, &e);
    }
    int rc = job_exec_start(j, &req, &r->who, on_job, of_user, &fd, &serial, &e);
    jobreq_free(&req);
    if (rc < 0) {
        connfds_give(r->who.uid, fds);
        return http_reply_error(r->conn, &e);
    }
    return attach_upgrade_fd(r, j, fd, serial, fds);
}
