/* Routes of runtimes (docs/api.md, "Runtimes"): routes.c hands over every path under
 * /v1/runtimes, /v1/runtime-builds and /v1/runtime-imports. Handlers check who asks and what
 * they sent, then act through core/runtime_build.h and answer JSON.
 *
 *   GET    /v1/runtimes                       installed runtimes
 *   POST   /v1/runtimes[?replace=1&fresh=1&source=F]  admins: build from the recipe (YAML) in the body
 *   GET    /v1/runtimes/{name}                one runtime
 *   DELETE /v1/runtimes/{name}                admins: remove it (refused while jobs use it)
 *   POST   /v1/runtimes/{name}/test           run its test command as a job of the caller's
 *   GET    /v1/runtimes/{name}/export         its archive (tar.zst) from the cache
 *   POST   /v1/runtime-imports[?replace=1]    admins: install an archive (the body, streamed to disk)
 *   GET    /v1/runtime-builds                 the recent builds and imports
 *   GET    /v1/runtime-builds/{id}            one of them
 *   GET    /v1/runtime-builds/{id}/log[?follow=1]  its log, NDJSON */
#include "routes_runtime.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/recipe.h"
#include "../common/util.h"
#include "../core/connfds.h"
#include "../core/job_json.h"
#include "../core/runtime_build.h"
#include "body.h"
#include "../core/runtime_json.h"
#include "../core/runtime_log.h"
#include "../core/runtimes.h"
#include "../core/settle.h"
#include "../core/state.h"
#include "../core/submit.h"
#include "query.h"
#include "reply.h"
#include "stream.h"

static enum MHD_Result refuse(request *r, const jerr *e) { return http_reply_error(r->conn, e); }

static bool admin(request *r, const char *what, jerr *e)
{
    return authz_check(&r->who, AUTHZ_RUNTIMES, what, e) == 0;
}

static enum MHD_Result no_route(request *r)
{
    jerr e = {0};
    jerr_http(&e, 404, "no route %s %s; see docs/api.md (Runtimes)", r->method, r->path);
    return refuse(r, &e);
}

/* POST /v1/runtimes: the body is the recipe's YAML text, exactly as the file holds it (its
 * hash is the cache key). */
static enum MHD_Result build(request *r)
{
    jerr e = {0};
    if (!admin(r, "building a runtime", &e))
        return refuse(r, &e);
    if (r->body_busy) {
        body_busy_error(r, &e);
        return refuse(r, &e);
    }
    if (r->body_too_large || r->body_len > RECIPE_MAX_BYTES) {
        jerr_http(&e, 413, "recipe: a recipe is at most %d bytes", RECIPE_MAX_BYTES);
        return refuse(r, &e);
    }
    if (!r->body || !r->body_len) {
        jerr_field(&e, NULL, "recipe: the body is empty; send the recipe's YAML text (rnx runtime build RECIPE.yml)");
        return refuse(r, &e);
    }
    const char *source = query_get(r, "source");
    char src[128] = "";
    if (source) {
        const char *base = strrchr(source, '/') ? strrchr(source, '/') + 1 : source;
        snprintf(src, sizeof src, "%s", base);
        uint32_t cp;
        for (char *p = src; *p; p++) {
            size_t cl = utf8_control_len((unsigned char *)p, &cp);
            if (cl) /* a C1 control or a bidi override: as many '?' as it has bytes */
                memset(p, '?', cl), p += cl - 1;
            else if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
        }
    }
    const runtime *have = NULL;
    rt_build *b = NULL;
    unsigned how = (query_true(r, "replace") ? RTB_REPLACE : 0) | (query_true(r, "fresh") ? RTB_FRESH : 0);
    int rc = runtime_build_start(r->body, r->body_len, src, how, r->who.uid, &have, &b, &e);
    if (rc < 0)
        return refuse(r, &e);
    if (rc == 1)
        return http_reply_json(r->conn, 200, json_pack("{s:b,s:o}", "already_built", 1, "runtime", runtime_json(have, &r->who)));
    return http_reply_json(r->conn, 202, json_pack("{s:o}", "build", runtime_json_build(b)));
}

/* POST /v1/runtimes/{name}/test: the manifest's test as a job of the caller's, in the runtime. */
static enum MHD_Result test(request *r, const runtime *rt)
{
    jerr e = {0};
    if (!rt->m.test) {
        jerr_http(&e, 409, "runtime '%s' has no test command (its recipe has no test:)", rt->name);
        return refuse(r, &e);
    }
    char name[96];
    snprintf(name, sizeof name, "runtime-test-%s", rt->name);
    json_t *body = json_pack("{s:s,s:[s,s],s:s,s:s}", "command", "/bin/sh", "args", "-c", rt->m.test, "runtime",
                             rt->name, "name", name);
    job_req jr;
    int rc = jobreq_from_json(body, &jr, 0, time(NULL), &e);
    json_decref(body);
    if (rc < 0)
        return refuse(r, &e);
    job *j = submit_job(&jr, &r->who, &e);
    jobreq_free(&jr);
    if (!j)
        return refuse(r, &e);
    if (r->made)
        snprintf(r->made, HTTP_MADE_LEN, "%s", j->id);
    settle();
    state_commit(); /* the job is saved (submit_job); as submit's in routes.c */
    return http_reply_json(r->conn, 201, job_json(j));
}

/* GET /v1/runtimes/{name}/export: the runtime's archive, sent from the file. */
static enum MHD_Result export(request *r, const runtime *rt)
{
    jerr e = {0};
    char path[800];
    uint64_t size;
    if (runtime_build_archive(rt, path, sizeof path, &size, &e) < 0)
        return refuse(r, &e);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        jerr_sys(&e, "open %s", path);
        return refuse(r, &e);
    }
    struct MHD_Response *resp = MHD_create_response_from_fd(size, fd);
    if (!resp) {
        close(fd);
        jerr_http(&e, 500, "cannot send %s", path);
        return refuse(r, &e);
    }
    char disp[160];
    snprintf(disp, sizeof disp, "attachment; filename=\"%s.tar.zst\"", rt->name);
    MHD_add_response_header(resp, "Content-Type", "application/zstd");
    MHD_add_response_header(resp, "Content-Disposition", disp);
    enum MHD_Result ok = MHD_queue_response(r->conn, 200, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result one_runtime(request *r, const char *rest)
{
    jerr e = {0};
    char name[80];
    const char *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    const char *action = slash ? slash + 1 : "";
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), rest);
    bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST"), del = !strcmp(r->method, "DELETE");
    if (!*action && del) {
        if (!admin(r, "removing a runtime", &e) || runtime_build_remove(name, &e) < 0)
            return refuse(r, &e);
        return http_reply_json(r->conn, 200, json_pack("{s:s}", "removed", name));
    }
    const runtime *rt;
    if (runtimes_find(name, &rt, &e) < 0) {
        e.http = 404;
        return refuse(r, &e);
    }
    if (!*action && get)
        return http_reply_json(r->conn, 200, runtime_json(rt, &r->who));
    if (!strcmp(action, "test") && post)
        return test(r, rt);
    if (!strcmp(action, "export") && get)
        return export(r, rt);
    return no_route(r);
}

/* POST /v1/runtime-imports: the archive arrived in a file (routes_runtime_body). */
static enum MHD_Result import(request *r)
{
    jerr e = {0};
    if (!admin(r, "importing a runtime", &e))
        return refuse(r, &e);
    if (r->body_too_large) {
        jerr_http(&e, 413, "the archive is larger than runtimes.max_import_bytes (%llu bytes)",
                  (unsigned long long)core.cfg.runtimes_max_import_bytes);
        return refuse(r, &e);
    }
    if (r->body_fd < 0 || r->body_fd_error) {
        jerr_http(&e, 500, "the archive could not be stored: %s", r->body_fd_error ? strerror(r->body_fd_error)
                                                                                  : "no file for it");
        return refuse(r, &e);
    }
    if (!r->body_len) {
        jerr_field(&e, NULL, "archive: the body is empty; send a tar.zst as rnx runtime export writes it");
        return refuse(r, &e);
    }
    rt_build *b = runtime_build_import(r->body_fd, query_true(r, "replace"), r->who.uid, &e);
    if (!b)
        return refuse(r, &e);
    return http_reply_json(r->conn, 202, json_pack("{s:o}", "build", runtime_json_build(b)));
}

/* A build's log as a streamed answer (stream.h); its file counted among what connections hold
 * (core/connfds.h) while it is read. */
typedef struct build_log_src {
    rt_follower *f;
    uid_t uid;
} build_log_src;

static size_t build_log_read(void *src, char *buf, size_t max, enum pull_state *st)
{
    return runtime_log_read(((build_log_src *)src)->f, buf, max, st);
}

static void build_log_close(void *src)
{
    build_log_src *b = src;
    runtime_log_close(b->f);
    connfds_give(b->uid, CONNFDS_BUILD_LOG);
    free(b);
}

static enum MHD_Result builds(request *r, const char *rest)
{
    jerr e = {0};
    if (strcmp(r->method, "GET"))
        return no_route(r);
    if (!rest) {
        size_t n;
        rt_build *const *all = runtime_build_list(&n);
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, runtime_json_build(all[i]));
        return http_reply_json(r->conn, 200, json_pack("{s:o}", "builds", arr));
    }
    uint64_t id;
    char num[24];
    const char *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    snprintf(num, sizeof num, "%.*s", (int)(n < sizeof num ? n : sizeof num - 1), rest);
    rt_build *b = parse_u64(num, &id) == 0 && id < 1u << 31 ? runtime_build_find((unsigned)id) : NULL;
    if (!b) {
        jerr_http(&e, 404, "no runtime build '%s' (rnx runtime builds lists the recent ones)", num);
        return refuse(r, &e);
    }
    if (!slash)
        return http_reply_json(r->conn, 200, runtime_json_build(b));
    if (strcmp(slash + 1, "log"))
        return no_route(r);
    if (connfds_take(&r->who, CONNFDS_BUILD_LOG, "a build's log (rnx runtime build --follow)", &e) < 0)
        return refuse(r, &e);
    build_log_src *src = xcalloc(1, sizeof *src);
    src->f = runtime_log_open(b, query_true(r, "follow"), NULL, NULL);
    src->uid = r->who.uid;
    stream *st;
    struct MHD_Response *resp = stream_response(r->conn, 65536, build_log_read, build_log_close, src, &st);
    if (!resp) {
        build_log_close(src);
        jerr_http(&e, 500, "cannot stream the build's log");
        return refuse(r, &e);
    }
    runtime_log_set_notify(src->f, stream_wake, st);
    MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
    enum MHD_Result ok = MHD_queue_response(r->conn, 200, resp);
    MHD_destroy_response(resp);
    return ok;
}

enum MHD_Result routes_runtime(request *r)
{
    const char *p = r->path;
    if (!strcmp(p, "/v1/runtimes")) {
        if (!strcmp(r->method, "GET"))
            return http_reply_json(r->conn, 200, runtime_json_list(&r->who));
        if (!strcmp(r->method, "POST"))
            return build(r);
        return no_route(r);
    }
    if (!strncmp(p, "/v1/runtimes/", 13) && p[13])
        return one_runtime(r, p + 13);
    if (!strcmp(p, "/v1/runtime-imports") && !strcmp(r->method, "POST"))
        return import(r);
    if (!strcmp(p, "/v1/runtime-builds"))
        return builds(r, NULL);
    if (!strncmp(p, "/v1/runtime-builds/", 19) && p[19])
        return builds(r, p + 19);
    return no_route(r);
}

bool routes_runtime_body_route(const char *method, const char *path)
{
    return !strcmp(path, "/v1/runtime-imports") && !strcmp(method, "POST");
}

int routes_runtime_body(request *r, int *fd, uint64_t *max, jerr *e)
{
    if (!routes_runtime_body_route(r->method, r->path))
        return 0;
    /* refused before a byte of a large archive is read */
    if (!admin(r, "importing a runtime", e) || runtime_build_busy(e) < 0)
        return -1;
    if ((*fd = runtime_build_import_file(e)) < 0)
        return -1;
    *max = core.cfg.runtimes_max_import_bytes;
    return 1;
}
