/* GET and PUT /v1/jobs/{id}/archive (jobs_cp.h, docs/api.md "Copying files"). The copy
 * (core/job_cp.h) lives as long as its connection: it is the connection's route state
 * (http_ctx), freed when the connection is done, which kills a helper still at work. */
#include "jobs_cp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../core/job_cp.h"
#include "../core/jobref.h"
#include "../core/jobs.h"
#include "../core/state.h"
#include "stream.h"
#include "park.h"
#include "query.h"
#include "reply.h"

#define PREFIX "/v1/jobs/"
#define SUFFIX "/archive"

typedef struct cp_conn {
    jobcp *c;
    stream *st;               /* GET: the answer's stream, while it lives */
    bool eof;                 /* the pipe reached its end: the helper's last word decides */
    uint64_t ticket;          /* the parked request waiting for the helper's word, 0 none */
} cp_conn;

static void cp_changed(void *arg)
{
    cp_conn *cc = arg;
    if (cc->ticket) {
        uint64_t t = cc->ticket;
        cc->ticket = 0;
        park_wake(t, NULL);
    }
    if (cc->st)
        stream_wake(cc->st);
}

/* The connection is done. Its stream (freed by libmicrohttpd with the answer, which comes
 * after this) reads nothing more: the copy is gone. */
static void cp_free(void *p)
{
    cp_conn *cc = p;
    job_cp_free(cc->c);
    cc->c = NULL;
    if (!cc->st)
        free(cc);
}

/* The answer's body: the tar from the helper's pipe, then the helper's last word. */
static size_t cp_read(void *src, char *buf, size_t max, enum pull_state *st)
{
    cp_conn *cc = src;
    if (!cc->c) {
        *st = PULL_FAIL;
        return 0;
    }
    while (!cc->eof) {
        ssize_t n = read(job_cp_fd(cc->c), buf, max);
        if (n > 0)
            return (size_t)n;
        if (n == 0) {
            cc->eof = true;
            stream_wait_fd(cc->st, -1); /* the end is said on the status pipe: jobcp's change */
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN) {
            *st = PULL_FAIL;
            return 0;
        }
        *st = PULL_WAIT;
        return 0;
    }
    job_cp_info info;
    jerr e = {0};
    int rc = job_cp_result(cc->c, &info, &e);
    if (rc < 0)
        log_warn("copy out of %s cut short: %s", info.path, e.msg);
    *st = rc > 0 ? PULL_END : rc < 0 ? PULL_FAIL : PULL_WAIT;
    return 0;
}

static void cp_close(void *src)
{
    cp_conn *cc = src;
    cc->st = NULL;
    if (!cc->c) /* the connection went first */
        free(cc);
}

static cp_conn *attach(request *r, jobcp *c)
{
    cp_conn *cc = xcalloc(1, sizeof *cc);
    cc->c = c;
    r->ctx->p = cc;
    r->ctx->free = cp_free;
    job_cp_on_change(c, cp_changed, cc);
    return cc;
}

/* Waits for the helper: the route runs again when it said something or ended. wrote: the helper
 * has the archive's bytes (a PUT), so ending it now may leave part of it written. */
static enum MHD_Result wait_for_helper(request *r, cp_conn *cc, bool wrote)
{
    cc->ticket = park_ticket(r);
    if (!cc->ticket) {
        jerr e = {0};
        if (wrote) /* not a jerr_busy's "nothing was done": no Retry-After, rnx does not resend */
            jerr_http(&e, 503, "too many requests wait for joblet's work already: the copy is stopped, and what "
                               "it wrote of the archive so far stays in the job; send it again in a moment");
        else
            jerr_busy(&e, "too many requests wait for joblet's work already; try again in a moment");
        return http_reply_error(r->conn, &e);
    }
    park_wait(r);
    return MHD_YES;
}

static json_t *info_json(const job_cp_info *i)
{
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", i->mode);
    return json_pack("{s:s,s:s,s:s,s:I,s:I,s:s}", "path", i->path, "name", i->name, "type", i->type, "bytes",
                     (json_int_t)i->bytes, "entries", (json_int_t)i->entries, "mode", mode);
}

static enum MHD_Result get(request *r, job *j)
{
    jerr e = {0};
    cp_conn *cc = r->ctx->p;
    if (!cc) {
        enum job_cp_kind kind = query_true(r, "stat") ? JOB_CP_STAT : query_true(r, "follow") ? JOB_CP_OUT_FOLLOW
                                                                                             : JOB_CP_OUT;
        jobcp *c = job_cp_start(j, kind, query_get(r, "path"), &r->who, &e);
        if (!c)
            return http_reply_error(r->conn, &e);
        cc = attach(r, c);
    }
    job_cp_info info;
    int rep = job_cp_report(cc->c, &info, &e);
    if (rep < 0)
        return http_reply_error(r->conn, &e);
    if (rep == 0)
        return wait_for_helper(r, cc, false);
    if (job_cp_fd(cc->c) < 0) /* stat */
        return http_reply_json(r->conn, 200, info_json(&info));
    struct MHD_Response *resp = stream_response(r->conn, 256 << 10, cp_read, cp_close, cc, &cc->st);
    if (!resp) {
        jerr_http(&e, 500, "no memory for the answer");
        return http_reply_error(r->conn, &e);
    }
    stream_wait_fd(cc->st, job_cp_fd(cc->c));
    char num[24], mode[8];
    MHD_add_response_header(resp, "Content-Type", "application/x-tar");
    MHD_add_response_header(resp, "X-Joblet-Path", info.path);
    MHD_add_response_header(resp, "X-Joblet-Path-Name", info.name);
    MHD_add_response_header(resp, "X-Joblet-Path-Type", info.type);
    snprintf(num, sizeof num, "%llu", (unsigned long long)info.bytes);
    MHD_add_response_header(resp, "X-Joblet-Path-Bytes", num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)info.entries);
    MHD_add_response_header(resp, "X-Joblet-Path-Entries", num);
    snprintf(mode, sizeof mode, "%04o", info.mode);
    MHD_add_response_header(resp, "X-Joblet-Path-Mode", mode);
    enum MHD_Result rc = MHD_queue_response(r->conn, 200, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result put(request *r)
{
    jerr e = {0};
    cp_conn *cc = r->ctx->p;
    if (!cc) { /* jobs_cp_body refused it, or it is not a copy's connection */
        jerr_http(&e, 500, "the copy was not started");
        return http_reply_error(r->conn, &e);
    }
    if (r->body_too_large) {
        jerr_http(&e, 413, "the archive is larger than jobs.max_upload_bytes (%llu bytes) allows",
                  (unsigned long long)core.cfg.max_upload_bytes);
        return http_reply_error(r->conn, &e);
    }
    job_cp_end_input(cc->c);
    job_cp_info info;
    int rc = job_cp_result(cc->c, &info, &e);
    if (rc < 0)
        return http_reply_error(r->conn, &e);
    if (rc == 0)
        return wait_for_helper(r, cc, true);
    return http_reply_json(r->conn, 200, info_json(&info));
}

enum MHD_Result jobs_cp_route(request *r, job *j)
{
    if (!strcmp(r->method, "GET"))
        return get(r, j);
    if (!strcmp(r->method, "PUT"))
        return put(r);
    jerr e = {0};
    jerr_http(&e, 405, "%s %s: use GET (copy out of the job) or PUT (copy into it)", r->method, r->path);
    return http_reply_error(r->conn, &e);
}

bool jobs_cp_body_route(const char *method, const char *path)
{
    size_t pl = strlen(PREFIX), sl = strlen(SUFFIX), n = strlen(path);
    /* (a longer id, or one with a '/': not /v1/jobs/{id}/archive, the routes answer it) */
    return !strcmp(method, "PUT") && !strncmp(path, PREFIX, pl) && n > pl + sl && !strcmp(path + n - sl, SUFFIX) &&
           n - pl - sl < 160 && !memchr(path + pl, '/', n - pl - sl);
}

int jobs_cp_body(request *r, int *fd, uint64_t *max, jerr *e)
{
    if (!jobs_cp_body_route(r->method, r->path))
        return 0;
    size_t pl = strlen(PREFIX), sl = strlen(SUFFIX), n = strlen(r->path);
    char id[160];
    snprintf(id, sizeof id, "%.*s", (int)(n - pl - sl), r->path + pl);
    /* named as every route names it (42, 42_7, a name, a prefix: core/jobref.h), and refused
     * here as the route would refuse it, before a body that is no upload is read */
    jobref ref;
    if (jobref_find(id, &r->who, IDREF_ANY, &ref, e) < 0)
        return -1;
    if (!ref.j)
        return jobref_not_a_job(ref.a, ref.tasks_named ? &ref.tasks : NULL, "PUT", "archive", e);
    job *j = ref.j;
    jobcp *c = job_cp_start(j, JOB_CP_IN, query_get(r, "path"), &r->who, e);
    if (!c)
        return -1;
    attach(r, c);
    *fd = fcntl(job_cp_fd(c), F_DUPFD_CLOEXEC, 0); /* http.c's to close when the body ends; job_cp_end_input closes c's */
    if (*fd < 0)
        return jerr_sys(e, "dup");
    /* the files are held to jobs.max_upload_bytes by the helper; the tar's own headers on top */
    *max = core.cfg.max_upload_bytes + core.cfg.max_upload_bytes / 8 + (16u << 20);
    return 2;
}

