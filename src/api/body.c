/* Request bodies as JSON (body.h). */
#include "body.h"

#include "../common/jsonscan.h"
#include "../core/state.h"

/* The bounds of each kind of body. jansson takes 40 (a number) to 230 (an empty object) bytes
 * for each value it builds, so these, not the body's byte limit alone, bound what a request
 * can make joblet hold. The largest legitimate body is a job's upload listing: at most 100,000
 * entries (docs/api.md), each an object of path, type, mode and size (or content_b64, or
 * target): up to 100,000 objects and 700,000 values, which jansson holds in ~80 MB (the daemon
 * peaks at ~130 MB taking one). The worst body within these bounds measured peaks at ~160 MB
 * (800,000 values, each an empty string in an object member); without them a 16 MB body of
 * "[{},{},…]" took 1.2 GB. */
static const jsonscan_limits limits[] = {
    [BODY_REQUEST] = {
        .depth = 32,              /* a workflow's jobs[].request.uploads[] nests 5 deep */
        .members = 10000,         /* env and secret_env maps: 10,000 variables */
        .elements = 131072,       /* the upload listing's own bound (100,000) answers first */
        .string_bytes = 1 << 20,  /* a workflow's yaml (1 MiB, workflow_json.c); args, env: 128 KiB */
        .long_key = "content_b64",/* an inline upload: bounded by server.max_body_bytes only */
        .values = 800000,         /* a listing of 100,000 entries with every field, and the rest */
        .containers = 131072,     /* 100,000 entries, a workflow's jobs and their parts */
        .fits = "a job's upload listing of 100,000 entries fits",
    },
    [BODY_SMALL] = {
        .depth = 4, .members = 16, .elements = 16, .string_bytes = 4096, .values = 64, .containers = 8,
    },
};

void body_busy_error(const request *r, jerr *e)
{
    if (r->body_busy_share)
        jerr_http(e, 429, "the request bodies your connections are sending hold more than the %llu MiB one user may "
                          "(a quarter of joblet's buffer for bodies, or one server.max_body_bytes); finish or close "
                          "them first, or send files as a streamed upload (docs/api.md)",
                  (unsigned long long)(r->body_busy_share >> 20));
    else
        jerr_busy(e, "joblet is already receiving other large requests; try again in a moment");
}

json_t *body_json(const request *r, body_kind kind, jerr *e)
{
    if (r->body_busy) {
        body_busy_error(r, e);
        return NULL;
    }
    if (r->body_too_large) {
        jerr_http(e, 413, "the request body is larger than %llu bytes (server.max_body_bytes); send files as a "
                          "streamed upload (docs/api.md)", (unsigned long long)core.cfg.max_body_bytes);
        return NULL;
    }
    if (!r->body || !r->body_len) {
        jerr_field(e, NULL, "the request body is not valid JSON: empty body");
        return NULL;
    }
    return jsonscan_load(r->body, r->body_len, &limits[kind], e);
}
