/* /v1 routes (docs/api.md). Handlers validate, act on the core, and answer JSON. */
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/logframe.h"
#include "../common/parse.h"
#include "../common/util.h"
#include "../core/isolation.h"
#include "../core/connfds.h"
#include "../core/counters.h"
#include "../core/gpu_admin.h"
#include "../core/events.h"
#include "../core/gpu_json.h"
#include "../core/gpu_history.h"
#include "../core/incoming.h"
#include "../core/job_ctl.h"
#include "../core/job_freeze.h"
#include "../core/job_detail_json.h"
#include "../core/job_json.h"
#include "../core/jobs.h"
#include "../core/job_launch.h"
#include "../core/job_logs.h"
#include "../core/loop.h"
#include "../core/metrics.h"
#include "../core/nsscache.h"
#include "../core/settle.h"
#include "../core/state.h"
#include "../core/submit.h"
#include "../core/workflow.h"
#include "../core/workflow_json.h"
#include "attach.h"
#include "body.h"
#include "console.h"
#include "http.h"
#include "jobs_cp.h"
#include "jobs_exec.h"
#include "jobs_list.h"
#include "metrics_http.h"
#include "park.h"
#include "query.h"
#include "reply.h"
#include "routes_volume.h"
#include "../core/array_ctl.h"
#include "../core/jobref.h"
#include "../core/array_json.h"
#include "routes_network.h"
#include "routes_runtime.h"
#include "routes_slurm.h"
#include "stream.h"

/* What a caller who named no GPU of this machine may give instead: the indexes there are, or
 * that there is none (not "an index from 0 to -1"). */
static const char *gpu_choices(char *buf, size_t n)
{
    if (!core.gpu.inv.n)
        snprintf(buf, n, "this machine has no GPUs joblet can use");
    else
        snprintf(buf, n, "give an index from 0 to %d or a UUID (rnx gpu list)", core.gpu.inv.n - 1);
    return buf;
}

static enum MHD_Result version(request *r)
{
    return http_reply_json(r->conn, 200,
                           json_pack("{s:s,s:s,s:s,s:i,s:I,s:I,s:I,s:o}", "version", JOBLET_VERSION, "api", "v1",
                                     "cgroup_layout", cg_layout_name(core.cg.layout), "pid", (int)getpid(),
                                     "max_upload_bytes", (json_int_t)core.cfg.max_upload_bytes, "max_body_bytes",
                                     (json_int_t)core.cfg.max_body_bytes, "idle_timeout_s",
                                     (json_int_t)core.cfg.idle_timeout_s, "isolation", isolation_json()));
}

/* The connection went before a long inline listing was written: it goes (nothing was made). */
static void inline_gone(void *p)
{
    incoming *in = incoming_of(p);
    if (in)
        incoming_drop(in, "the connection closed before its files were written");
    free(p);
}

/* A job, an array or a workflow whose inline listing is written a slice per turn
 * (incoming_open_inline, incoming_open_workflow_inline): the request is parked between slices,
 * and answered once it is made and committed, as a submission is. in is NULL when the route
 * runs again (r->ctx holds its id). */
static enum MHD_Result submit_staged(request *r, incoming *in)
{
    jerr e = {0};
    if (!in && stream_client_gone(r->conn))
        return MHD_NO; /* closed: inline_gone drops what was written (nothing made) */
    if (!in && !(in = incoming_of(r->ctx->p))) {
        jerr_busy(&e, "joblet dropped this submission while its files were being written; try again");
        return http_reply_error(r->conn, &e);
    }
    job *j;
    workflow *wf;
    jarray *a;
    int rc = incoming_finish(in, &j, &wf, &a, &e);
    if (rc > 0) {
        if (!r->ctx->p) {
            r->ctx->p = xstrdup(incoming_id(in));
            r->ctx->free = inline_gone;
        }
        if (park_until_next_turn(r))
            return MHD_YES;
        /* never the rest at once: that is what the slices are for */
        incoming_drop(in, "no request may wait for the next turn");
        jerr_busy(&e, "too many requests are waiting for joblet already to write this submission's files; try "
                      "again in a moment");
        rc = -1;
    }
    free(r->ctx->p); /* made, or dropped: nothing left for inline_gone */
    r->ctx->p = NULL;
    r->ctx->free = NULL;
    if (rc < 0)
        return http_reply_error(r->conn, &e);
    http_reply_committed(r->conn); /* as a job's below (a workflow's was committed whole too) */
    if (r->made && !wf) /* a workflow's submission names no job, as workflows() below */
        snprintf(r->made, HTTP_MADE_LEN, "%s", a ? a->id : j->id);
    settle();
    state_commit();
    return http_reply_json(r->conn, 201, wf ? workflow_json(wf, false) : a ? array_json(a) : job_json(j));
}

static enum MHD_Result submit(request *r)
{
    jerr e = {0};
    if (r->ctx->p) /* back for the next slice of its files */
        return submit_staged(r, NULL);
    json_t *req = body_json(r, BODY_REQUEST, &e);
    if (!req)
        return http_reply_error(r->conn, &e);
    job_req jr;
    int rc = jobreq_from_json(req, &jr, 0, time(NULL), &e);
    json_decref(req);
    if (rc < 0)
        return http_reply_error(r->conn, &e);
    if (jobreq_uploads_streamed(&jr)) {
        /* checked now; the job is created once PUT /v1/uploads/{id} has sent the files */
        incoming *in = incoming_open_job(&jr, &r->who, &e);
        jobreq_free(&jr);
        if (!in)
            return http_reply_error(r->conn, &e);
        /* nothing of it is in the database (the upload waits in memory): a commit of others'
         * rows, or of the audit record, that fails does not make the 202 "not saved", which
         * rnx does not send again while the upload holds one of the user's slots */
        http_reply_committed(r->conn);
        return http_reply_json(r->conn, 202, incoming_json(in));
    }
    if (jr.nuploads > INCOMING_INLINE_AT_ONCE) {
        /* too many entries for one turn: written as a streamed upload's are, a slice per turn */
        incoming *in = incoming_open_inline(&jr, &r->who, &e);
        jobreq_free(&jr);
        return in ? submit_staged(r, in) : http_reply_error(r->conn, &e);
    }
    if (jr.array) {
        /* a job array (docs/batch.md): one row, its tasks made as they start */
        jarray *a = submit_array(&jr, &r->who, &e);
        jobreq_free(&jr);
        if (!a)
            return http_reply_error(r->conn, &e);
        http_reply_committed(r->conn); /* its row was committed (a later commit failing: still made) */
        if (r->made)
            snprintf(r->made, HTTP_MADE_LEN, "%s", a->id);
        settle(); /* its first tasks start, or wait with a reason */
        state_commit();
        return http_reply_json(r->conn, 201, array_json(a));
    }
    job *j = submit_job(&jr, &r->who, &e);
    jobreq_free(&jr);
    if (!j)
        return http_reply_error(r->conn, &e);
    http_reply_committed(r->conn); /* as an array's: a retry after a "not saved" would make a second job */
    if (r->made)
        snprintf(r->made, HTTP_MADE_LEN, "%s", j->id);
    settle(); /* the answer shows where it stands: started, its GPUs, or why it waits */
    state_commit(); /* the job is saved (submit_commit); what its start wrote is retried if this fails */
    return http_reply_json(r->conn, 201, job_json(j));
}

/* ?status=STATE (a listing's filter, an action's condition: scancel --state): false, with e set,
 * when it is given and names no state; *given says whether it was. */
static bool query_status(request *r, bool *given, enum job_state *want, jerr *e)
{
    const char *sf = query_get(r, "status");
    *given = sf != NULL;
    if (sf && job_state_parse(sf, want) < 0) {
        jerr_field(e, "status", "status: '%s' is not a job status; use PENDING, SCHEDULED, QUEUED, RUNNING, "
                                "STOPPING, PREEMPTED, HELD, SUSPENDED, STOPPED, COMPLETED, FAILED or CANCELED", sf);
        return false;
    }
    return true;
}

/* ?name=NAME and ?user=UID on stop, cancel and kill (Slurm's scancel -n, -u with job ids: they
 * filter the jobs named): 0 when the job (or array) id, of that name and owner, holds them; else
 * 409, left as it is (400 naming user for a uid that is not one). */
static int query_owner_name(request *r, const char *what, const char *id, const char *name, uid_t owner, jerr *e)
{
    const char *nf = query_get(r, "name"), *uf = query_get(r, "user");
    uint64_t uid = 0;
    if (uf && (parse_u64(uf, &uid) < 0 || uid > UINT32_MAX - 1))
        return jerr_field(e, "user", "user: '%s' is not a uid; give a number, e.g. 1000", uf);
    if (nf && (!name || strcmp(name, nf)))
        return name ? jerr_http(e, 409, "%s %s is named '%.128s', not '%.128s': left as it is", what, id, name, nf)
                    : jerr_http(e, 409, "%s %s has no name, and '%.128s' was asked for: left as it is", what, id, nf);
    if (uf && owner != (uid_t)uid)
        return jerr_http(e, 409, "%s %s is uid %u's, not uid %s's: left as it is", what, id, (unsigned)owner, uf);
    return 0;
}

/* ?fields=id,status,...: the keys of each listed job (and array) as a mask, or e says which is
 * not one (core/job_json.h). */
static void list_fields(const char *ff, uint64_t *keys, jerr *e)
{
    *keys = 0;
    for (const char *p = ff;; p++) {
        size_t n = strcspn(p, ",");
        int k = job_json_key(p, n);
        if (k < 0) {
            char all[1024];
            job_json_key_list(all, sizeof all);
            if (!n)
                jerr_field(e, "fields", "fields: an empty name in '%.200s'; give keys of a job, comma-separated: %s",
                           ff, all);
            else
                jerr_field(e, "fields", "fields: '%.*s' is not a key of a job; use some of: %s", (int)(n > 64 ? 64 : n),
                           p, all);
            return;
        }
        *keys |= 1ull << k;
        p += n;
        if (!*p)
            return;
    }
}

/* GET /v1/jobs[?status=S][&user=UID][&gpu=INDEX|UUID][&since=RFC3339][&fields=K,K]: the
 * caller's jobs (root: all), oldest first, those matching every filter given; with fields, each
 * only with those keys (rnx job list asks for the columns it prints). */
static enum MHD_Result list(request *r)
{
    const char *uf = query_get(r, "user"), *gf = query_get(r, "gpu"), *tf = query_get(r, "since");
    const char *ff = query_get(r, "fields");
    uint64_t keys = JOB_JSON_ALL;
    enum job_state want = JS_QUEUED;
    bool by_state = false;
    uint64_t uid = 0;
    time_t since = 0;
    int gk = gf ? gpu_find(&core.gpu.inv, gf) : -1;
    const char *guuid = gk >= 0 ? core.gpu.inv.gpu[gk].uuid : gf;   /* else a MIG device's UUID */
    jerr e = {0};
    static const char *const filters[] = {"status", "user", "gpu", "since", "expand", "fields", NULL};
    const char *unknown = query_unknown(r, filters);
    if (unknown) /* ?stauts=RUNNING answered every job, as if no filter had been asked for */
        jerr_field(&e, unknown, "%.64s: GET /v1/jobs has no filter '%.64s'; it takes status, user, gpu, since, "
                                "expand and fields", unknown, unknown);
    else if (!query_status(r, &by_state, &want, &e))
        ; /* (e says why) */
    else if (uf && (parse_u64(uf, &uid) < 0 || uid > UINT32_MAX - 1))
        jerr_field(&e, "user", "user: '%s' is not a uid; give a number, e.g. 1000", uf);
    else if (uf && !authz_may_on(&r->who, AUTHZ_OTHERS_JOBS, (uid_t)uid))
        jerr_http(&e, 403, "user: you see only your own jobs (uid %u); uid %s's jobs are shown to root",
                  (unsigned)r->who.uid, uf);
    else if (gf && gk < 0 && (strncmp(gf, "MIG-", 4) || strlen(gf) > 96))
        jerr_field(&e, "gpu", "gpu: '%.40s' is not a GPU of this machine; give an index or a UUID (rnx gpu list)", gf);
    else if (tf && parse_rfc3339(tf, &since) < 0)
        jerr_field(&e, "since", "since: '%s' is not a time; give RFC 3339, e.g. 2026-11-22T15:00:00Z", tf);
    else if (ff)
        list_fields(ff, &keys, &e);
    if (e.msg[0])
        return http_reply_error(r->conn, &e);
    jobs_list_filter lf = {.who = r->who, .by_user = uf != NULL, .user = (uid_t)uid, .by_state = by_state,
                           .state = want, .by_gpu = gf != NULL, .gpu_uuid = guuid, .since_ms = (int64_t)since * 1000,
                           .expand = query_true(r, "expand"), .keys = keys};
    return jobs_list_reply(r->conn, &lf);
}

/* DELETE /v1/jobs deletes at most DELETE_SLICE jobs per turn of the loop (their rows in one
 * commit, then their directories and /work: ~0.7 ms each), and all the requests together at
 * most DELETE_TURN; between slices the request is parked, so deleting 10,000 jobs never holds the
 * loop long, however many ask at once. The answer comes when all are gone, and counts them. */
#define DELETE_SLICE 48
#define DELETE_TURN 64
static loop_budget delete_budget = {.per_turn = DELETE_TURN};

/* The answer to a delete-all that stops short: what the slices before deleted (committed) and
 * why the rest was not. */
static enum MHD_Result delete_all_stopped(request *r, jerr *e)
{
    if (r->park->tally) {
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "%s", e->msg);
        jerr_http(e, e->http, "%llu jobs were deleted, then: %s", (unsigned long long)r->park->tally, msg);
        e->code = 0; /* something was done: not a jerr_busy's "nothing was, ask again" (no Retry-After) */
    }
    r->park->tally = 0;
    return http_reply_error(r->conn, e);
}

static enum MHD_Result delete_all(request *r)
{
    bool more = true;
    while (more) {
        jerr e = {0};
        size_t n = 0, quota = (size_t)loop_budget_take(&delete_budget, DELETE_SLICE);
        if (quota && job_ctl_delete_ended(&r->who, NULL, quota, &n, &more, &e) < 0)
            return delete_all_stopped(r, &e);
        loop_budget_return(&delete_budget, quota - n);
        r->park->tally += n;
        if (!more)
            break;
        if (park_until_next_turn(r))
            return MHD_YES;
        /* never the rest at once: that is what the slices are for */
        jerr_busy(&e, "too many requests are waiting for joblet already to go on with the rest now; "
                      "try again in a moment (rnx job delete-all)");
        return delete_all_stopped(r, &e);
    }
    jerr e = {0};
    if (array_ctl_reap(&r->who, 0, now_ms(), &e) < 0) /* arrays every task of which ended and went */
        return delete_all_stopped(r, &e);
    size_t n = r->park->tally;
    r->park->tally = 0;
    http_reply_committed(r->conn); /* each slice, and the arrays' deletes, committed before they went */
    return http_reply_json(r->conn, 200, json_pack("{s:I}", "deleted", (json_int_t)n));
}

/* An RFC 3339 time, with its fraction of a second, in ns since the epoch (clamped to what an
 * int64 of ns holds: 1677 to 2262). */
static int time_ns(const char *s, int64_t *ns)
{
    time_t t;
    if (parse_rfc3339(s, &t) < 0)
        return -1;
    if (t >= INT64_MAX / 1000000000 || t <= INT64_MIN / 1000000000) {
        *ns = t > 0 ? INT64_MAX : INT64_MIN;
        return 0;
    }
    int64_t frac = 0, scale = 100000000;
    if (s[19] == '.')
        for (const char *p = s + 20; *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac += scale * (*p - '0');
    *ns = (int64_t)t * 1000000000 + frac;
    return 0;
}

/* GET /v1/jobs/{id}/logs's options (docs/api.md): stream, follow, tail, since, and the form
 * (?format=, else the Accept header, else NDJSON). */
static int log_options(request *r, job_logs_opts *o, jerr *e)
{
    const char *s = query_get(r, "stream"), *fmt = query_get(r, "format"), *tail = query_get(r, "tail"),
               *since = query_get(r, "since");
    const char *accept = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    *o = (job_logs_opts){.format = JOB_LOGS_NDJSON, .streams = 3, .follow = query_true(r, "follow"), .tail = -1,
                         .reader = r->who.uid};
    static const char *const known[] = {"stream", "format", "tail", "since", "follow", NULL};
    const char *unknown = query_unknown(r, known);
    if (unknown) /* ?tial=10 answered the whole log */
        return jerr_field(e, unknown, "%.64s: GET /v1/jobs/ID/logs has no option '%.64s'; it takes stream, follow, "
                                      "tail, since and format", unknown, unknown);
    if (s && !strcmp(s, "stdout"))
        o->streams = 1;
    else if (s && !strcmp(s, "stderr"))
        o->streams = 2;
    else if (s && strcmp(s, "all") && strcmp(s, "both"))
        return jerr_field(e, "stream", "stream: '%s' is not accepted; use stdout, stderr or all", s);
    if (fmt && !strcmp(fmt, "frames"))
        o->format = JOB_LOGS_FRAMES;
    else if (fmt && !strcmp(fmt, "raw"))
        o->format = JOB_LOGS_RAW;
    else if (fmt && strcmp(fmt, "ndjson"))
        return jerr_field(e, "format", "format: '%s' is not accepted; use ndjson, frames or raw", fmt);
    else if (!fmt && accept && strstr(accept, LOGFRAME_CTYPE))
        o->format = JOB_LOGS_FRAMES;
    else if (!fmt && accept && strstr(accept, "application/octet-stream"))
        o->format = JOB_LOGS_RAW;
    if (o->format == JOB_LOGS_RAW && o->streams == 3)
        return jerr_field(e, "stream", "stream: raw output is one stream's bytes; add stream=stdout or stream=stderr");
    uint64_t n;
    if (tail && strcmp(tail, "all")) {
        if (parse_u64(tail, &n) < 0 || n > INT64_MAX)
            return jerr_field(e, "tail", "tail: '%s' is not a number of lines; give 0 or more, or all", tail);
        o->tail = (int64_t)n;
    }
    if (since && time_ns(since, &o->since_ns) < 0)
        return jerr_field(e, "since", "since: '%s' is not a time; give RFC 3339, e.g. 2026-11-22T15:00:00.5Z", since);
    return 0;
}

/* A job's output as an answer (core/job_logs.h): an ended job's one stream whole by sendfile,
 * else streamed (stream.h). NULL with e set when it cannot be read as asked. Its files are taken
 * from the connections' count first (core/connfds.h): 2 a stream read (its .data and .idx), the
 * one file sent whole until the request ends. */
typedef struct logs_src {
    follower *f;
    uid_t uid;
    unsigned fds;            /* taken from the connections' count (connfds_take) */
} logs_src;

static size_t logs_read(void *src, char *buf, size_t max, enum pull_state *st)
{
    return job_logs_read(((logs_src *)src)->f, buf, max, st);
}

static void logs_close(void *src)
{
    logs_src *ls = src;
    if (ls->f)
        job_logs_close(ls->f);
    connfds_give(ls->uid, ls->fds);
    free(ls);
}

static void logs_file_done(void *src) { logs_close(src); }

static struct MHD_Response *logs_response(job *j, request *req, const job_logs_opts *o, jerr *e)
{
    logs_src *ls = xcalloc(1, sizeof *ls);
    ls->uid = req->who.uid;
    ls->fds = CONNFDS_LOG_STREAM * ((o->streams & 1) + (o->streams >> 1 & 1));
    if (connfds_take(&req->who, ls->fds, o->follow ? "a log follower" : "a log reader", e) < 0) {
        free(ls);
        return NULL;
    }
    job_logs_file file;
    follower *f = job_logs_open(j, o, &file, e);
    struct MHD_Response *r;
    if (!f && file.fd < 0) {
        logs_close(ls);
        return NULL;
    }
    if (!f) {
        connfds_give(ls->uid, ls->fds - 1); /* the one file, held until the request ends */
        ls->fds = 1;
        r = MHD_create_response_from_fd_at_offset64(file.len, file.fd, 0); /* it closes fd */
        if (!r) {
            close(file.fd);
            logs_close(ls);
            jerr_http(e, 500, "cannot send job %s's output", j->id);
            return NULL;
        }
        req->ctx->p = ls;
        req->ctx->free = logs_file_done;
        if (file.capped)
            MHD_add_response_header(r, "X-Joblet-Log-Capped", file.name);
        MHD_add_response_header(r, "Content-Type", "application/octet-stream");
        return r;
    }
    ls->f = f;
    stream *st;
    r = stream_response(req->conn, job_logs_block(o), logs_read, logs_close, ls, &st);
    if (!r) {
        logs_close(ls);
        jerr_http(e, 500, "cannot stream job %s's output", j->id);
        return NULL;
    }
    job_logs_set_notify(f, stream_wake, st);
    MHD_add_response_header(r, "Content-Type", o->format == JOB_LOGS_NDJSON ? "application/x-ndjson"
                                               : o->format == JOB_LOGS_FRAMES ? LOGFRAME_CTYPE
                                                                              : "application/octet-stream");
    return r;
}

/* POST /v1/jobs/{array}/update: the fields a job's update may change, and array_throttle (its %N;
 * 0 for none, Slurm's ArrayTaskThrottle). */
static int array_update(request *r, jarray *a, uint64_t *acted, jerr *e)
{
    json_t *body = body_json(r, BODY_SMALL, e);
    if (!body)
        return -1;
    if (!json_is_object(body) || !json_object_size(body)) {
        json_decref(body);
        char may[256] = "";
        for (size_t i = 0, n = 0; i < job_ctl_update_nfields && n < sizeof may; i++)
            n += (size_t)snprintf(may + n, sizeof may - n, "%s, ", jobreq_fields[job_ctl_update_fields[i]].key);
        return jerr_field(e, "body", "body: must be an object of the fields to change: %sarray_throttle", may);
    }
    /* an array's dependencies decide when its tasks are made, and its tasks made wait for nothing
     * (submit_task): an update cannot give them new ones honestly, nor a start time to tasks
     * already made; cancel it and submit it again */
    static const char *const whole[] = {"after", "after_any", "schedule_at"};
    for (size_t i = 0; i < sizeof whole / sizeof *whole; i++)
        if (json_object_get(body, whole[i])) {
            json_decref(body);
            return jerr_field(e, whole[i], "%s: array %s: an array's %s cannot change once it is submitted (its "
                                           "tasks are made by it); cancel the array and submit it again", whole[i],
                              a->id, i == 2 ? "start time" : "dependencies");
        }
    json_t *t = json_object_get(body, "array_throttle");
    bool has_throttle = t != NULL;
    json_int_t throttle = t && json_is_integer(t) ? json_integer_value(t) : -1;
    if (has_throttle && arrayspec_throttle_check(throttle, json_is_integer(t), "array_throttle", NULL, e) < 0) {
        json_decref(body);
        return -1;
    }
    json_object_del(body, "array_throttle");
    job_req nr;
    uint64_t changed = 0;
    /* the other fields as a job's update reads them; none: the array's request as it is */
    int rc = json_object_size(body) || !has_throttle
                 ? jobreq_change(&a->req, body, job_ctl_update_fields, job_ctl_update_nfields, &nr, &changed,
                                 time(NULL), e)
                 : jobreq_apply(&a->req, &a->req, 0, &nr, &changed, e);
    json_decref(body);
    if (rc < 0)
        return -1;
    if (has_throttle && (uint32_t)throttle != a->spec->throttle) {
        arrayspec now;
        arrayspec_copy(&now, a->spec);
        now.throttle = (uint32_t)throttle;
        char text[2048];
        arrayspec_format(&now, true, text, sizeof text);
        jobreq_set_str(&nr, JR_ARRAY, text);
        changed |= 1ull << JR_ARRAY;
    }
    rc = array_ctl_update(a, &r->who, &nr, changed, acted, e);
    jobreq_free(&nr);
    return rc;
}

/* The answer to an act on an array or tasks of it: the array and how many it acted on; for tasks
 * named, "named" (their list) and "went": which of them went from what state to what (l: looked
 * at before the act; array_ctl.h), so that rnx says which task was held, canceled, left running. */
static enum MHD_Result array_acted(request *r, jarray *a, const arrayspec *tasks, uint64_t acted, array_ctl_look *l)
{
    array_ctl_went *went; /* (as the act left them: before what the loop does next) */
    size_t n = array_ctl_look_after(a, l, &went);
    array_ctl_look_free(l);
    settle();
    json_t *o = json_pack("{s:o,s:I}", "array", array_json(a), "acted", (json_int_t)acted);
    if (tasks) {
        char named[ARRAYSPEC_TEXT_MAX];
        arrayspec_format(tasks, false, named, sizeof named);
        json_object_set_new(o, "named", json_string(named));
        if (n) {
            json_t *list = json_array();
            for (size_t i = 0; i < n; i++)
                json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "tasks", went[i].tasks, "was",
                                                      array_ctl_state_name(went[i].was), "now",
                                                      array_ctl_state_name(went[i].now)));
            json_object_set_new(o, "went", list);
        }
    }
    array_ctl_went_free(went, n);
    return http_reply_json(r->conn, 200, o);
}

/* /v1/jobs/{array}[/action] and /v1/jobs/{array}_{tasks}[/action] (docs/api.md "Job arrays"):
 * the array as one object, its tasks not made yet as the array's, made ones as jobs. */
#define ARRAY_DELETE_SLICE 256
#define ARRAY_SHOW_MAX 1000
#define ARRAY_SHOW_BYTES (16u << 20)
static enum MHD_Result one_array(request *r, jarray *a, const arrayspec *tasks, const char *action)
{
    jerr e = {0};
    bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST"), del = !strcmp(r->method, "DELETE");
    if (!*action && get) {
        if (!tasks) {
            json_t *o = array_json(a);
            if (query_true(r, "detail"))
                json_object_set_new(o, "detail", array_json_detail(a));
            return http_reply_json(r->conn, 200, o);
        }
        if (tasks->count == 1) {
            bool made;
            const job *tj = arrays_task(a, tasks->r[0].lo, &made);
            if (made && !tj) /* (its job deleted: jobs.keep_ended_s, before its array goes) */
                return http_reply_error(r->conn, (jerr_http(&e, 404, "no job %.8s_%u: task %u of array %s ended and "
                                                                     "was deleted", a->id, tasks->r[0].lo,
                                                            tasks->r[0].lo, a->id), &e));
            json_t *o = array_task_json(a, tasks->r[0].lo);
            if (query_true(r, "detail")) {
                /* a task not made yet has no request or history of its own: the array's, said so */
                json_t *d = array_json_detail(a);
                json_object_set_new(d, "of_array", json_string(a->id));
                json_object_set_new(o, "detail", d);
            }
            return http_reply_json(r->conn, 200, o);
        }
        /* at most ARRAY_SHOW_MAX tasks, and no more once their requests (each up to the body's
         * size) pass ARRAY_SHOW_BYTES: one answer, made in one loop turn, stays bounded */
        json_t *list = json_array();
        uint64_t k = 0, bytes = 0;
        for (; k < tasks->count && k < ARRAY_SHOW_MAX && bytes <= ARRAY_SHOW_BYTES; k++) {
            uint32_t t = arrayspec_task(tasks, k);
            bool made;
            job *j = arrays_task(a, t, &made);
            if (j) {
                json_array_append_new(list, job_json(j));
                bytes += jobreq_bytes(&j->req) + 2048;
            } else if (arrayspec_has(a->spec, t) && !made) {
                json_array_append_new(list, array_task_json(a, t)); /* (its request is the array's) */
                bytes += 512;
            }
        }
        return http_reply_json(r->conn, 200, json_pack("{s:o,s:o,s:b}", "array", array_json(a), "tasks", list,
                                                       "truncated", k < tasks->count));
    }
    if (!*action && del) {
        if (tasks)
            return http_reply_error(r->conn, (jerr_http(&e, 400, "an array is deleted whole (rnx job delete %.8s), "
                                                                 "once every task ended", a->id), &e));
        char full[sizeof a->id];
        snprintf(full, sizeof full, "%s", a->id);
        size_t n;
        bool more;
        if (array_ctl_delete(a, ARRAY_DELETE_SLICE, &n, &more, &e) < 0)
            return http_reply_error(r->conn, &e);
        http_reply_committed(r->conn);
        return http_reply_json(r->conn, 200, json_pack("{s:s,s:I,s:b}", "deleted", full, "tasks", (json_int_t)n,
                                                       "more", more));
    }
    int sig;
    enum job_state only = JS_QUEUED;
    bool by_state = false;
    bool acts = post && (!strcmp(action, "stop") || !strcmp(action, "cancel") || !strcmp(action, "kill"));
    if (acts && (!query_status(r, &by_state, &only, &e) || /* (?status holds for a signal's kill too) */
                 query_owner_name(r, "array", a->id, a->name, a->owner_uid, &e) < 0))
        return http_reply_error(r->conn, &e);
    /* a signal asked for without its value is refused (parse_signal), never taken for a kill */
    if (!strcmp(action, "kill") && post && query_has(r, "signal")) {
        uint64_t acted;
        if (parse_signal("signal", query_get(r, "signal"), &sig, &e) < 0)
            return http_reply_error(r->conn, &e);
        /* tasks named: each one's state in the answer (those running were sent it; the others say
         * why not: not started, ended), as a cancel's answer says which went how */
        array_ctl_look l;
        array_ctl_look_before(a, tasks, &l);
        if (array_ctl_signal(a, tasks, by_state ? &only : NULL, sig, query_true(r, "all"), r->who.uid, &acted, &e) <
            0) {
            array_ctl_look_free(&l);
            return http_reply_error(r->conn, &e);
        }
        return array_acted(r, a, tasks, acted, &l);
    }
    if (acts) {
        enum array_ctl_act act = !strcmp(action, "stop")   ? ARRAY_CTL_STOP
                                 : !strcmp(action, "kill") ? ARRAY_CTL_KILL
                                                           : ARRAY_CTL_CANCEL;
        uint64_t acted;
        array_ctl_look l;
        array_ctl_look_before(a, tasks, &l);
        if (array_ctl_act(a, tasks, by_state ? &only : NULL, act, r->who.uid, &acted, &e) < 0) {
            array_ctl_look_free(&l);
            return http_reply_error(r->conn, &e);
        }
        return array_acted(r, a, tasks, acted, &l);
    }
    if ((!strcmp(action, "hold") || !strcmp(action, "release")) && post) {
        uint64_t acted;
        array_ctl_look l;
        array_ctl_look_before(a, tasks, &l);
        if (array_ctl_hold(a, tasks, !strcmp(action, "hold"), &r->who, &acted, &e) < 0) {
            array_ctl_look_free(&l);
            return http_reply_error(r->conn, &e);
        }
        return array_acted(r, a, tasks, acted, &l);
    }
    if ((!strcmp(action, "suspend") || !strcmp(action, "resume") || !strcmp(action, "requeue")) && post) {
        /* Slurm's scontrol suspend|resume|requeue ARRAY: each task it names that can be */
        bool suspend = !strcmp(action, "suspend"), resume = !strcmp(action, "resume");
        if ((suspend || resume) &&
            authz_check(&r->who, AUTHZ_SUSPEND, suspend ? "suspending a job (its GPUs stay held)" : "resuming a job",
                        &e) < 0)
            return http_reply_error(r->conn, &e);
        uint64_t acted;
        array_ctl_look l;
        array_ctl_look_before(a, tasks, &l);
        if (array_ctl_run(a, tasks, suspend ? ARRAY_CTL_SUSPEND : resume ? ARRAY_CTL_RESUME : ARRAY_CTL_REQUEUE,
                          query_true(r, "hold"), &r->who, &acted, &e) < 0) {
            array_ctl_look_free(&l);
            return http_reply_error(r->conn, &e);
        }
        return array_acted(r, a, tasks, acted, &l);
    }
    if (!strcmp(action, "update") && post) {
        if (tasks)
            return http_reply_error(r->conn, (array_ctl_update_tasks(a, tasks, &e), &e));
        uint64_t acted;
        if (array_update(r, a, &acted, &e) < 0)
            return http_reply_error(r->conn, &e);
        settle();
        return http_reply_json(r->conn, 200, json_pack("{s:o,s:I}", "array", array_json(a), "acted",
                                                       (json_int_t)acted));
    }
    jobref_not_a_job(a, tasks, r->method, action, &e);
    return http_reply_error(r->conn, &e);
}

/* An error to answer once a job's freezer is done (job_freeze_wait). */
typedef struct late_error {
    uint64_t ticket;
    jerr e;
} late_error;

static void late_error_fn(void *arg, const jerr *unused)
{
    (void)unused;
    late_error *l = arg;
    park_wake(l->ticket, &l->e);
    free(l);
}

/* POST /v1/jobs/{id}/{hold,release,suspend,resume,requeue,update} (docs/api.md "Job control"). */
static enum MHD_Result job_control(request *r, job *j, const char *action)
{
    jerr e = {0};
    int rc;
    if (!strcmp(action, "suspend") || !strcmp(action, "resume")) {
        if (r->resumed) /* (back from the wait below: done, and saved if the turn it was done in was) */
            return http_reply_json_made_before(r->conn, 200, job_json(j), state_job_unsaved(j));
        if (authz_check(&r->who, AUTHZ_SUSPEND, !strcmp(action, "suspend") ? "suspending a job (its GPUs stay held)"
                                                                           : "resuming a job", &e) < 0)
            return http_reply_error(r->conn, &e);
        rc = !strcmp(action, "suspend") ? job_ctl_suspend(j, r->who.uid, &e) : job_ctl_resume(j, r->who.uid, &e);
        /* answered once the freezer says it is done (or after a second: job_freeze.h), as
         * docker pause is; the loop goes on meanwhile. Without a ticket left: at once. */
        uint64_t ticket = rc == 0 ? park_ticket(r) : 0;
        if (ticket && job_freeze_wait(j, park_wake_fn, (void *)(uintptr_t)ticket)) {
            snprintf(r->park->named, sizeof r->park->named, "%s", j->id);
            settle();
            park_wait(r);
            return MHD_YES;
        }
    } else if (!strcmp(action, "hold"))
        rc = job_ctl_hold(j, r->who.uid, &e);
    else if (!strcmp(action, "release"))
        rc = job_ctl_release(j, &r->who, &e);
    else if (!strcmp(action, "requeue")) {
        /* a suspended job requeued runs again: its suspension (an admin's) undone */
        if (j->state == JS_SUSPENDED &&
            authz_check(&r->who, AUTHZ_SUSPEND, "requeuing a suspended job (it would run again: its suspension, "
                                                "an admin's, undone)", &e) < 0)
            return http_reply_error(r->conn, &e);
        if (job_ctl_may_requeue(j, &r->who, &e) < 0)
            return http_reply_error(r->conn, &e);
        /* an ended job runs again as its owner: what the owner may do now (the account, its
         * groups, isolation.require_gvisor) is known before the requeue decides (an admin's
         * requeue of another's job waits for the owner's look-up as the owner's own would) */
        if (job_state_terminal(j->state)) {
            /* the same job when the request runs again (park.h): its name may be another's by
             * then (a job of that name started meanwhile, which a name of an action prefers) */
            snprintf(r->park->named, sizeof r->park->named, "%s", j->id);
            if (!park_for_account_known(r, j->owner_uid, false, &e))
                return e.msg[0] ? http_reply_error(r->conn, &e) : MHD_YES;
        }
        rc = job_ctl_requeue(j, r->who.uid, query_true(r, "hold"), &e);
        /* a suspended job thawed for it whose requeue failed is frozen again (job_ctl.c): its
         * error is answered once the freezer says so, or after a second, as a suspend is (the
         * wake answers the error: the route does not run again) */
        uint64_t ticket = rc < 0 && j->state == JS_SUSPENDED ? park_ticket(r) : 0;
        late_error *l = ticket ? xmalloc(sizeof *l) : NULL;
        if (l) {
            *l = (late_error){ticket, e};
            if (job_freeze_wait(j, late_error_fn, l)) {
                snprintf(r->park->named, sizeof r->park->named, "%s", j->id);
                settle();
                park_wait(r);
                return MHD_YES;
            }
            free(l);
        }
    }
    else {
        json_t *body = body_json(r, BODY_SMALL, &e);
        if (!body)
            return http_reply_error(r->conn, &e);
        if (json_object_get(body, "array_throttle")) {
            json_decref(body);
            return http_reply_error(r->conn, (jerr_field(&e, "array_throttle", "array_throttle: job %s is not a job "
                                                         "array; only an array has a %%N to change", j->id), &e));
        }
        job_req nr;
        uint64_t changed;
        rc = jobreq_change(&j->req, body, job_ctl_update_fields, job_ctl_update_nfields, &nr, &changed, time(NULL), &e);
        json_decref(body);
        if (rc == 0) {
            rc = job_ctl_update(j, &r->who, &nr, changed, &e);
            jobreq_free(&nr);
        }
    }
    if (rc < 0)
        return http_reply_error(r->conn, &e);
    settle();
    return http_reply_json(r->conn, 200, job_json(j));
}

/* Which jobs a name resolves among for this request (common/idref.h; docs/cli.md "Naming a
 * job"): the actions that apply only to a job not ended, among those not ended (a name shared
 * with an ended job, as jobs are kept once they end, is the running one's: docker kill NAME,
 * scancel --name); a delete, which applies only to an ended job, among the ended ones; reading
 * (status, logs, metrics, files) among all, unless ?live=1 asks for a status as those actions
 * resolve the name (rnx job attach reads the job's terminal kind before it attaches). */
static enum idref_want one_job_wants(request *r, const char *action)
{
    const char *method = r->method;
    if (!strcmp(method, "GET") && !*action && query_true(r, "live"))
        return IDREF_LIVE;
    static const char *const live[] = {"stop", "cancel", "kill",    "hold",   "release",
                                       "suspend", "resume", "requeue", "update"};
    if (!strcmp(action, "attach") || !strcmp(action, "exec"))
        return IDREF_LIVE;
    if (!strcmp(method, "DELETE") && !*action)
        return IDREF_ENDED;
    if (strcmp(method, "POST"))
        return IDREF_ANY;
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
        if (!strcmp(action, live[i]))
            return IDREF_LIVE;
    return IDREF_ANY;
}

/* POST /v1/jobs/ID/stop, cancel, kill, hold, release, suspend, resume, requeue read their
 * options from the query alone: a body with fields ({"signal": "USR1"} to kill) or a query key
 * the action does not read (?sig=USR1) would be dropped and the action done as if unasked
 * (SIGKILL for the USR1 asked): refused, naming what each takes. 0, or -1 with e set. An empty
 * body, or {}, is no option. */
static int action_options_known(request *r, const char *action, jerr *e)
{
    static const char *const pick[] = {"status", "name", "user", NULL};
    static const char *const kill[] = {"status", "name", "user", "signal", "all", NULL};
    static const char *const requeue[] = {"hold", NULL};
    static const char *const none[] = {NULL};
    static const struct {
        const char *action;
        const char *const *keys;
        const char *says;
    } actions[] = {
        {"stop", pick, "?status=STATE, ?name=NAME, ?user=UID"},
        {"cancel", pick, "?status=STATE, ?name=NAME, ?user=UID"},
        {"kill", kill, "?signal=SIG, ?all=1, ?status=STATE, ?name=NAME, ?user=UID"},
        {"hold", none, NULL},
        {"release", none, NULL},
        {"suspend", none, NULL},
        {"resume", none, NULL},
        {"requeue", requeue, "?hold=1"},
    };
    if (strcmp(r->method, "POST"))
        return 0;
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        if (strcmp(action, actions[i].action))
            continue;
        const char *takes = actions[i].says;
        const char *k = query_unknown(r, actions[i].keys);
        if (k && !takes)
            return jerr_field(e, k, "%.64s: POST /v1/jobs/ID/%s takes no options (no query, no body)", k, action);
        if (k)
            return jerr_field(e, k, "%.64s: POST /v1/jobs/ID/%s has no query option '%.64s'; it takes %s", k, action,
                              k, takes);
        if (r->body_len == 0 && !r->body_too_large && !r->body_busy)
            return 0;
        json_t *body = body_json(r, BODY_SMALL, e);
        if (!body)
            return -1;
        const char *first = json_is_object(body) ? json_object_iter_key(json_object_iter(body)) : NULL;
        bool empty = json_is_object(body) && !first;
        char key[72];
        snprintf(key, sizeof key, "%.64s", first ? first : "");
        json_decref(body);
        if (empty)
            return 0;
        bool an_option = false;
        for (const char *const *o = actions[i].keys; *o; o++)
            an_option |= !strcmp(*o, key);
        if (an_option)
            return jerr_field(e, key, "%s: POST /v1/jobs/ID/%s reads no request body; its options go in the query "
                                      "(%s): ?%s=...", key, action, takes, key);
        if (!takes)
            return jerr_field(e, *key ? key : NULL, "%s%sPOST /v1/jobs/ID/%s takes no options (no query, no body: "
                                                   "send none, or {})", key, *key ? ": " : "", action);
        if (*key)
            return jerr_field(e, key, "%s: POST /v1/jobs/ID/%s reads no request body, and has no option '%s'; its "
                                      "options go in the query: %s", key, action, key, takes);
        return jerr_field(e, NULL, "POST /v1/jobs/ID/%s reads no request body (send none, or {}); its options go in "
                                   "the query: %s", action, takes);
    }
    return 0;
}

static enum MHD_Result one_job(request *r, const char *rest)
{
    /* an id, a prefix, or a name (at most 128 bytes); tasks of an array, ID_[LIST], with a list
     * of up to ARRAYSPEC_TEXT_MAX bytes after it (what ARRAYSPEC_MAX_RANGES ranges take: Slurm's
     * scancel 123_[1,5,9,...] of 256 tasks), refused past that naming the bound */
    enum { ID_PLAIN = 160 };
    char id[ID_PLAIN + ARRAYSPEC_TEXT_MAX + 8];
    const char *slash = strchr(rest, '/');
    size_t idlen = slash ? (size_t)(slash - rest) : strlen(rest);
    const char *action = slash ? slash + 1 : "";
    jerr e = {0};
    const char *list = memmem(rest, idlen, "_[", 2);
    if (list && idlen >= sizeof id) {
        jerr_field(&e, "tasks", "tasks: the list of tasks named ('%.40s…') is %zu bytes; at most %d are read (as "
                                "many as %d ranges take): name them in ranges, 0-99 rather than 0,1,...,99",
                   rest, idlen - (size_t)(list - rest) - 3, ARRAYSPEC_TEXT_MAX, ARRAYSPEC_MAX_RANGES);
        return http_reply_error(r->conn, &e);
    }
    if (!list && idlen >= ID_PLAIN) {
        jerr_http(&e, 404, "no job '%.40s…': an id, a prefix or a name is at most 128 bytes", rest);
        return http_reply_error(r->conn, &e);
    }
    snprintf(id, sizeof id, "%.*s", (int)idlen, rest);
    if (action_options_known(r, action, &e) < 0)
        return http_reply_error(r->conn, &e);
    if (r->resumed && r->park->named[0]) /* back from a wait on this job: the same one (park.h) */
        snprintf(id, sizeof id, "%s", r->park->named);
    jobref *named = xmalloc(sizeof *named);
    if (jobref_find(id, &r->who, one_job_wants(r, action), named, &e) < 0) {
        free(named);
        return http_reply_error(r->conn, &e);
    }
    if (named->a) {
        enum MHD_Result rc = one_array(r, named->a, named->tasks_named ? &named->tasks : NULL, action);
        free(named);
        return rc;
    }
    job *j = named->j;
    free(named);
    job_launch_refresh(j);
    bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST"), del = !strcmp(r->method, "DELETE");
    if (!*action && get) {
        json_t *o = job_json(j);
        if (query_true(r, "detail"))
            json_object_set_new(o, "detail", job_detail_json(j));
        return http_reply_json(r->conn, 200, o);
    }
    if (!*action && del) {
        char full[sizeof j->id];
        snprintf(full, sizeof full, "%s", j->id);   /* the job is freed by the delete */
        if (job_ctl_delete(j, &e) < 0)
            return http_reply_error(r->conn, &e);
        http_reply_committed(r->conn); /* its delete was committed before anything went */
        return http_reply_json(r->conn, 200, json_pack("{s:s}", "deleted", full));
    }
    if (!strcmp(action, "logs") && get) {
        job_logs_opts lo;
        if (log_options(r, &lo, &e) < 0)
            return http_reply_error(r->conn, &e);
        struct MHD_Response *resp = logs_response(j, r, &lo, &e);
        if (!resp)
            return http_reply_error(r->conn, &e);
        enum MHD_Result rc = MHD_queue_response(r->conn, 200, resp);
        MHD_destroy_response(resp);
        return rc;
    }
    if (!strcmp(action, "metrics") && get)
        return http_reply_json(r->conn, 200, metrics_job_json(j));
    if (!strcmp(action, "archive"))
        return jobs_cp_route(r, j);
    if (!strcmp(action, "attach"))
        return attach_route(r, j);
    if (!strcmp(action, "exec"))
        return jobs_exec_route(r, j);
    int sig;
    if ((!strcmp(action, "stop") || !strcmp(action, "cancel") || !strcmp(action, "kill")) && post) {
        /* ?status=STATE: only while it is in that state (what a listing saw may have changed
         * since: a QUEUED job picked by rnx job stop --status=QUEUED that started meanwhile runs
         * on), a signal's kill too */
        enum job_state only;
        bool by_state;
        if (!query_status(r, &by_state, &only, &e) || query_owner_name(r, "job", j->id, j->name, j->owner_uid, &e) < 0)
            return http_reply_error(r->conn, &e);
        if (by_state && j->state != only)
            return http_reply_error(r->conn, (jerr_http(&e, 409, "job %s is %s now, not %s: left as it is", j->id,
                                                        job_state_name(j->state), job_state_name(only)), &e));
    }
    if (!strcmp(action, "kill") && post && query_has(r, "signal")) {
        /* docker kill --signal, Slurm's scancel --signal: a signal that is not SIGKILL is not a stop */
        if (parse_signal("signal", query_get(r, "signal"), &sig, &e) < 0)
            return http_reply_error(r->conn, &e);
        if (job_ctl_signal(j, r->who.uid, sig, query_true(r, "all"), &e) < 0)
            return http_reply_error(r->conn, &e);
        settle();
        return http_reply_json(r->conn, 200, job_json(j));
    }
    if ((!strcmp(action, "stop") || !strcmp(action, "cancel") || !strcmp(action, "kill")) && post) {
        int (*act)(job *, uid_t, jerr *) = !strcmp(action, "stop")   ? job_ctl_stop
                                           : !strcmp(action, "kill") ? job_ctl_kill
                                                                     : job_ctl_cancel;
        if (act(j, r->who.uid, &e) < 0)
            return http_reply_error(r->conn, &e);
        settle();
        return http_reply_json(r->conn, 200, job_json(j));
    }
    if (post && (!strcmp(action, "hold") || !strcmp(action, "release") || !strcmp(action, "suspend") ||
                 !strcmp(action, "resume") || !strcmp(action, "requeue") || !strcmp(action, "update")))
        return job_control(r, j, action);
    jerr_http(&e, 404, "no route %s %s", r->method, r->path);
    return http_reply_error(r->conn, &e);
}

static enum MHD_Result workflows(request *r, const char *rest)
{
    jerr e = {0};
    bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");
    if (!rest) {
        if (get)
            return http_reply_json(r->conn, 200, workflow_json_list(&r->who));
        if (!post)
            goto none;
        if (r->ctx->p) /* back for the next slice of its jobs' files */
            return submit_staged(r, NULL);
        json_t *body = body_json(r, BODY_REQUEST, &e);
        if (!body)
            return http_reply_error(r->conn, &e);
        wf_body wb;
        if (query_true(r, "dry_run")) {
            /* rnx workflow validate: every check of a submission, nothing created */
            int rc = workflow_json_parse(body, &wb, &e) == 0 ? workflow_check(&wb, &r->who, &e) : -1;
            size_t n = wb.n;
            workflow_body_free(&wb);
            json_decref(body);
            if (rc < 0)
                return http_reply_error(r->conn, &e);
            return http_reply_json(r->conn, 200, json_pack("{s:b,s:I}", "valid", 1, "jobs", (json_int_t)n));
        }
        /* checked whole first; then the networks it creates (at once), then the volumes,
         * which may take a while (the request is parked and this route runs again once one is
         * ready: the networks are found made then); then submitted, or its uploads awaited */
        int parsed = workflow_json_parse(body, &wb, &e);
        if (parsed == 0 && (wb.nvolumes || wb.nnetworks) && (parsed = workflow_check(&wb, &r->who, &e)) == 0) {
            /* a request that cannot wait (no park ticket left: too many wait already) is told so
             * before anything is made, not after its networks and first volumes */
            uint64_t ticket = wb.nvolumes ? park_ticket(r) : 0;
            if (!ticket && volumes_would_wait(wb.volumes, wb.nvolumes)) {
                workflow_body_free(&wb);
                json_decref(body);
                jerr_busy(&e, "too many requests are waiting for joblet already; try again in a moment");
                return http_reply_error(r->conn, &e);
            }
            if ((parsed = workflow_networks(&wb, &r->who, &e)) == 0 && wb.nvolumes)
                parsed = workflow_volumes(&wb, r->who.uid, r->who.gid, ticket ? park_wake_fn : NULL,
                                          (void *)(uintptr_t)ticket, &e);
            if (parsed == VOLUMES_PENDING) {
                workflow_body_free(&wb);
                json_decref(body);
                if (ticket) { /* (volumes_would_wait said so) */
                    park_wait(r);
                    return MHD_YES;
                }
                jerr_busy(&e, "too many requests are waiting for joblet already; try again in a moment");
                return http_reply_error(r->conn, &e);
            }
        }
        if (parsed == 0 && workflow_json_streamed(&wb)) {
            /* as a job's: checked now, created once the files have come */
            incoming *in = incoming_open_workflow(&wb, &r->who, &e);
            workflow_body_free(&wb);
            json_decref(body);
            if (!in)
                return http_reply_error(r->conn, &e);
            http_reply_committed(r->conn); /* (as a job's 202: nothing of it to commit) */
            return http_reply_json(r->conn, 202, incoming_json(in));
        }
        if (parsed == 0 && workflow_json_uploads(&wb) > INCOMING_INLINE_AT_ONCE) {
            /* its jobs' entries too many for one turn: staged as a job's long listing is */
            incoming *in = incoming_open_workflow_inline(&wb, &r->who, &e);
            workflow_body_free(&wb);
            json_decref(body);
            return in ? submit_staged(r, in) : http_reply_error(r->conn, &e);
        }
        workflow *wf = parsed == 0 ? workflow_submit(&wb, &r->who, &e) : NULL;
        workflow_body_free(&wb);
        json_decref(body);
        if (!wf)
            return http_reply_error(r->conn, &e);
        http_reply_committed(r->conn); /* committed whole (workflow_create), as a job's 201 */
        settle();
        state_commit(); /* as submit's */
        return http_reply_json(r->conn, 201, workflow_json(wf, false));
    }
    char id[160];   /* an id, a prefix or a name */
    const char *slash = strchr(rest, '/');
    size_t idlen = slash ? (size_t)(slash - rest) : strlen(rest);
    if (idlen >= sizeof id) {
        jerr_http(&e, 404, "no workflow '%.40s…': an id, a prefix or a name is shorter", rest);
        return http_reply_error(r->conn, &e);
    }
    snprintf(id, sizeof id, "%.*s", (int)idlen, rest);
    /* a name: among the workflows not ended, for a cancel (common/idref.h) */
    bool cancel = slash && !strcmp(slash + 1, "cancel") && post;
    workflow *wf = workflow_find(id, &r->who, cancel ? IDREF_LIVE : IDREF_ANY, &e);
    if (!wf)
        return http_reply_error(r->conn, &e);
    if (!slash && get)
        return http_reply_json(r->conn, 200, workflow_json(wf, true));
    if (slash && !strcmp(slash + 1, "cancel") && post) {
        if (workflow_cancel(wf, r->who.uid, &e) < 0)
            return http_reply_error(r->conn, &e);
        settle();
        return http_reply_json(r->conn, 200, workflow_json(wf, false));
    }
none:
    jerr_http(&e, 404, "no route %s %s; see docs/api.md", r->method, r->path);
    return http_reply_error(r->conn, &e);
}

/* POST /v1/gpus/{index|uuid}/{drain|offline|online}, body {"force": bool} (optional) */
static enum MHD_Result gpu_admin(request *r, const char *rest)
{
    jerr e = {0};
    char id[128];
    const char *slash = strchr(rest, '/');
    snprintf(id, sizeof id, "%.*s", (int)(slash - rest < (long)sizeof id ? slash - rest : (long)sizeof id - 1), rest);
    const char *action = slash + 1;
    enum gpu_event ev;
    if (gpu_admin_action_parse(action, &ev) < 0) {
        jerr_http(&e, 404, "no GPU action '%s': use drain, offline or online", action);
        return http_reply_error(r->conn, &e);
    }
    char what[64];
    snprintf(what, sizeof what, "gpu %s", action);
    if (authz_check(&r->who, AUTHZ_GPU_SERVICE, what, &e) < 0)
        return http_reply_error(r->conn, &e);
    int i = gpu_find(&core.gpu.inv, id);
    if (i < 0) {
        char what_to_give[96];
        jerr_http(&e, 404, "no GPU '%s': %s", id, gpu_choices(what_to_give, sizeof what_to_give));
        return http_reply_error(r->conn, &e);
    }
    bool force = false;
    if (r->body || r->body_too_large || r->body_busy) {
        json_t *b = body_json(r, BODY_SMALL, &e);
        if (!b)
            return http_reply_error(r->conn, &e);
        json_t *f = json_object_get(b, "force");
        if (!json_is_object(b) || (f && !json_is_boolean(f))) {
            json_decref(b);
            jerr_field(&e, "force", "force: must be true or false");
            return http_reply_error(r->conn, &e);
        }
        force = json_is_true(f);
        json_decref(b);
    }
    json_t *done = gpu_admin_action(i, ev, force, r->who.uid, &e);
    if (!done)
        return http_reply_error(r->conn, &e);
    settle(); /* the GPU as it is now: a job that waited for it may hold it */
    json_t *o = gpu_json_one(i, &r->who);
    json_object_update(o, done);
    json_decref(done);
    return http_reply_json(r->conn, 200, o);
}

/* GET /v1/audit?user=UID&gpu=N&job=PREFIX&since=RFC3339&until=RFC3339&limit=N&before=ID|after=ID:
 * newest first, so that limit keeps the newest records (the database orders them,
 * db_audit_query); before and after page by record id, and older/newer say whether there are
 * more either way. */
static enum MHD_Result audit(request *r)
{
    jerr e = {0};
    if (authz_check(&r->who, AUTHZ_AUDIT, "the audit trail", &e) < 0)
        return http_reply_error(r->conn, &e);
    int64_t uid = -1, since = 0, until = INT64_MAX;
    int gpu = -1, limit = 10000;
    const char *v;
    uint64_t n;
    if ((v = query_get(r, "user"))) {
        /* a name is looked up off the loop (core/nsscache.h): the request waits for it */
        const nss_entry *pw = park_for_account(r, NSS_USER, 0, v, &e);
        if (!pw)
            return e.msg[0] ? http_reply_error(r->conn, &e) : MHD_YES; /* (else parked) */
        if (pw->err && !nsscache_none(pw->err)) {
            jerr_http(&e, 503, "user: '%s' could not be looked up: %s", v, strerror(pw->err));
            return http_reply_error(r->conn, &e);
        }
        if (!pw->err)
            uid = pw->uid;
        else if (parse_u64(v, &n) == 0 && n < 4294967295u)
            uid = (int64_t)n;
        else {
            jerr_field(&e, "user", "user: '%s' is neither a user name nor a uid", v);
            return http_reply_error(r->conn, &e);
        }
    }
    if ((v = query_get(r, "gpu"))) {
        gpu = gpu_find(&core.gpu.inv, v);
        if (gpu < 0) {
            char what_to_give[96];
            jerr_field(&e, "gpu", "gpu: no GPU '%s': %s", v, gpu_choices(what_to_give, sizeof what_to_give));
            return http_reply_error(r->conn, &e);
        }
    }
    const char *keys[] = {"since", "until"};
    int64_t *outs[] = {&since, &until};
    for (int k = 0; k < 2; k++)
        if ((v = query_get(r, keys[k])) && parse_ms(v, outs[k]) < 0) {
            time_t t;
            if (parse_rfc3339(v, &t) < 0) {
                jerr_field(&e, keys[k], "%s: '%s' is not a time; give RFC 3339, e.g. 2026-11-22T15:00:00Z", keys[k], v);
                return http_reply_error(r->conn, &e);
            }
            *outs[k] = (int64_t)t * 1000;
        }
    if (since > until) {
        jerr_field(&e, "until", "until: '%s' is before since '%s'; nothing can match", query_get(r, "until"),
                   query_get(r, "since"));
        return http_reply_error(r->conn, &e);
    }
    if ((v = query_get(r, "limit"))) {
        if (parse_u64(v, &n) < 0 || n < 1 || n > 100000) {
            jerr_field(&e, "limit", "limit: must be a whole number from 1 to 100000");
            return http_reply_error(r->conn, &e);
        }
        limit = (int)n;
    }
    int64_t cursor[2] = {0, 0};
    const char *ckeys[] = {"before", "after"};
    for (int k = 0; k < 2; k++)
        if ((v = query_get(r, ckeys[k]))) {
            if (parse_u64(v, &n) < 0 || n < 1 || n > INT64_MAX / 2) {
                jerr_field(&e, ckeys[k], "%s: '%.40s' is not a record id (the id of a record of this trail)", ckeys[k], v);
                return http_reply_error(r->conn, &e);
            }
            cursor[k] = (int64_t)n;
        }
    if (cursor[0] && cursor[1]) {
        jerr_field(&e, "after", "after: give before (older records) or after (newer ones), not both");
        return http_reply_error(r->conn, &e);
    }
    audit_query aq = {.uid = uid, .gpu = gpu, .since_ms = since, .until_ms = until, .job_id = query_get(r, "job"),
                      .limit = limit, .before = cursor[0], .after = cursor[1]};
    bool older = false, newer = false;
    json_t *arr = db_audit_query(core.db, &aq, &older, &newer, &e);
    if (!arr)
        return http_reply_error(r->conn, &e);
    return http_reply_json(r->conn, 200, json_pack("{s:o,s:b,s:b}", "records", arr, "older", older, "newer", newer));
}

/* GET /v1/whoami: the caller as joblet sees it (the console shows admin actions to admins) */
static enum MHD_Result whoami(request *r)
{
    /* (known: the API waited for the caller's account before the route, http.c) */
    const nss_entry *pw = nsscache_uid(r->who.uid, NULL, NULL);
    return http_reply_json(r->conn, 200,
                           json_pack("{s:I,s:I,s:s?,s:b,s:b,s:s}", "uid", (json_int_t)r->who.uid, "gid",
                                     (json_int_t)r->who.gid, "user", pw && !pw->err ? pw->name : NULL, "admin",
                                     authz_may(&r->who, AUTHZ_GPU_SERVICE), "sees_all_jobs",
                                     authz_may(&r->who, AUTHZ_OTHERS_JOBS), "role", authz_role_name(r->who.role)));
}

/* GET /v1/history?hours=N (1 to 24 x 366, default 168): the console's History page */
static enum MHD_Result history(request *r)
{
    jerr e = {0};
    uint64_t hours = 168;
    const char *v = query_get(r, "hours");
    if (v && (parse_u64(v, &hours) < 0 || hours < 1 || hours > 24 * 366)) {
        jerr_field(&e, "hours", "hours: must be a whole number of hours from 1 to 8784");
        return http_reply_error(r->conn, &e);
    }
    bool all = authz_may(&r->who, AUTHZ_HISTORY_ALL);
    if (query_true(r, "sample") && all)
        gpu_history_tick(now_ms());   /* a reading now, for tests and for an admin who wants one */
    return http_reply_json(r->conn, 200, gpu_history_json(r->who.uid, all, (int)hours));
}

/* The event feed as a streamed answer (stream.h); libmicrohttpd's buffer per stream, which an
 * event always fits. */
#define EVENTS_BLOCK 16384
static size_t events_stream_read(void *src, char *buf, size_t max, enum pull_state *st)
{
    return events_read(src, buf, max, st);
}

static void events_stream_close(void *src) { events_unsubscribe(src); }

/* GET /v1/events: server-sent events for the console (core/events.h) */
static enum MHD_Result events(request *r)
{
    jerr e = {0};
    uint64_t last = 0;
    const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Last-Event-ID"), *field = "Last-Event-ID";
    if (!v) {
        v = query_get(r, "last_id");
        field = "last_id";
    }
    if (v && parse_u64(v, &last) < 0) {
        jerr_field(&e, field, "'%.40s' is not an event id: the id of the last event received (a whole number), "
                                   "or none for a new stream", v);
        return http_reply_error(r->conn, &e);
    }
    events_sub *sub = events_subscribe(&r->who, last, &e);
    if (!sub)
        return http_reply_error(r->conn, &e);
    stream *st;
    struct MHD_Response *resp = stream_response(r->conn, EVENTS_BLOCK, events_stream_read, events_stream_close, sub, &st);
    if (!resp) {
        events_unsubscribe(sub);
        jerr_http(&e, 500, "cannot create the event stream");
        return http_reply_error(r->conn, &e);
    }
    events_set_notify(sub, stream_wake, st);
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    state_commit();
    enum MHD_Result rc = MHD_queue_response(r->conn, 200, resp);
    MHD_destroy_response(resp);
    return rc;
}

enum MHD_Result routes_dispatch(request *r)
{
    jerr e = {0};
    const char *p = r->path;
    if (!strcmp(p, "/metrics"))
        return metrics_reply(r);
    if (!strcmp(p, "/v1/monitor") && !strcmp(r->method, "GET"))
        return http_reply_json(r->conn, 200, metrics_monitor_json(&r->who));
    if (!strcmp(p, "/v1/version") && !strcmp(r->method, "GET"))
        return version(r);
    if (!strcmp(p, "/v1/events") && !strcmp(r->method, "GET"))
        return events(r);
    if (!strcmp(p, "/v1/whoami") && !strcmp(r->method, "GET"))
        return whoami(r);
    if (!strcmp(p, "/v1/history") && !strcmp(r->method, "GET"))
        return history(r);
    enum MHD_Result crc;
    if (console_route(r, &crc))
        return crc;
    if (!strcmp(p, "/v1/jobs")) {
        if (!strcmp(r->method, "POST"))
            return submit(r);
        if (!strcmp(r->method, "GET"))
            return list(r);
        if (!strcmp(r->method, "DELETE"))
            return delete_all(r);
    }
    if (!strncmp(p, "/v1/jobs/", 9) && p[9])
        return one_job(r, p + 9);
    if (!strcmp(p, "/v1/slurm/tasks") && !strcmp(r->method, "POST"))
        return routes_slurm_task(r);
    if (!strcmp(p, "/v1/workflows"))
        return workflows(r, NULL);
    if (!strncmp(p, "/v1/workflows/", 14) && p[14])
        return workflows(r, p + 14);
    if (!strcmp(p, "/v1/gpus") && !strcmp(r->method, "GET"))
        return http_reply_json(r->conn, 200, gpu_json_all(&r->who));
    if (!strncmp(p, "/v1/gpus/", 9) && p[9] && strchr(p + 9, '/') && !strcmp(r->method, "POST"))
        return gpu_admin(r, p + 9);
    if (!strncmp(p, "/v1/volumes", 11) && (!p[11] || (p[11] == '/' && p[12])))
        return routes_volume(r, p[11] ? p + 12 : NULL);
    if (!strncmp(p, "/v1/networks", 12) && (!p[12] || (p[12] == '/' && p[13])))
        return routes_network(r, p[12] ? p + 13 : NULL);
    if (!strcmp(p, "/v1/audit") && !strcmp(r->method, "GET"))
        return audit(r);
    if (!strncmp(p, "/v1/runtime", 11) && (p[11] == 's' || p[11] == '-'))
        return routes_runtime(r);
    if (!strncmp(p, "/v1/gpus/", 9) && p[9] && !strcmp(r->method, "GET")) {
        int i = gpu_find(&core.gpu.inv, p + 9);
        if (i >= 0)
            return http_reply_json(r->conn, 200, gpu_json_one(i, &r->who));
        char what_to_give[96];
        jerr_http(&e, 404, "no GPU '%s': %s", p + 9, gpu_choices(what_to_give, sizeof what_to_give));
        return http_reply_error(r->conn, &e);
    }
    jerr_http(&e, 404, "no route %s %s; see docs/api.md", r->method, p);
    return http_reply_error(r->conn, &e);
}

bool routes_body_sink_route(const char *method, const char *path)
{
    return jobs_cp_body_route(method, path) || routes_runtime_body_route(method, path);
}

int routes_body_sink(request *r, int *fd, uint64_t *max, jerr *e)
{
    int how = jobs_cp_body(r, fd, max, e);
    return how ? how : routes_runtime_body(r, fd, max, e);
}
