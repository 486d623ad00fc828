/* rnx's workflow file parser (src/cli/wfparse.c): wfp_parse on the fuzzer's bytes as the text
 * of "flows/wf.yaml", then wfp_explain on what the daemon could answer about it. A file that
 * parses yields a body whose every job request the API accepts as it is (jobreq_from_json):
 * the workflow parser and the daemon read requests through the same schema.
 *
 * Uploads are not read from disk here: this file stands in for src/cli/upload.c (which walks
 * directories and reads files) with an upload_add that lists an empty file of a name of its
 * own, and an upload_finish that puts the listing in the request. */
#include <time.h>

#include "cli/upload.h"
#include "cli/wfparse.h"
#include "common/jobreq.h"
#include "common/log.h"
#include "common/util.h"
#include "fuzz.h"

int upload_add(upload_set *u, const char *path, jerr *e)
{
    if (!*path)
        return jerr_set(e, 22, "--upload: needs a path");
    if (u->n == u->cap) {
        u->cap = u->cap ? 2 * u->cap : 4;
        u->ents = xrealloc(u->ents, u->cap * sizeof *u->ents);
        u->src = xrealloc(u->src, u->cap * sizeof *u->src);
    }
    char name[32];
    snprintf(name, sizeof name, "upload%zu", u->n);
    u->ents[u->n] = (jobreq_upload){.path = xstrdup(name), .type = xstrdup("file"), .mode = 0644, .has_mode = true,
                                    .size = 0};
    u->src[u->n] = (upload_src){.disk = xstrdup(path)};
    u->n++;
    u->nfiles++;
    return 0;
}

int upload_finish(upload_set *u, job_req *req, jerr *e)
{
    for (size_t i = 0; i < u->n; i++)
        jobreq_add_upload(req, &u->ents[i]);
    return 0;
}

void upload_free(upload_set *u)
{
    for (size_t i = 0; i < u->n; i++) {
        free(u->ents[i].path);
        free(u->ents[i].type);
        free(u->src[i].disk);
    }
    free(u->ents);
    free(u->src);
    *u = (upload_set){0};
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_set_level(LOG_ERR);
    return 0;
}

/* Fields the daemon's refusals name (workflow_json.c, jobreq.c), for wfp_explain. */
static const char *const fields[] = {
    "", "name", "jobs", "jobs[0]", "jobs[0].name", "jobs[0].requires[0]", "jobs[0].request",
    "jobs[0].request.command", "jobs[0].request.gpu_count", "jobs[0].request.env", "jobs[1].request.max_memory_mb",
    "jobs[1].request.uploads[0].mode", "jobs[2].request.secret_env", "jobs[99999].request.args", "jobs[x]",
    "jobs[-1].request", "jobs[18446744073709551616].request.name", "volumes[0].size_mb", "networks[0].cidr",
    "networks[0]", "networks[7].name", "networks[x]",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wfp_errors errs;
    wfp_doc *d = wfp_parse("flows/wf.yaml", (const char *)data, size, &errs);
    if (!d) {
        FUZZ_ASSERT(errs.n > 0, "refused without a message");
        wfp_errors_free(&errs);
        return 0;
    }
    FUZZ_ASSERT(errs.n == 0, "a workflow with %zu problems: %s", errs.n, errs.msg[0]);
    json_t *body = wfp_body(d);
    json_t *jobs = json_object_get(body, "jobs"), *jj;
    size_t i;
    json_array_foreach(jobs, i, jj) {
        job_req r;
        jerr e = {0};
        json_t *rq = json_object_get(jj, "request");
        char *s = json_dumps(rq, JSON_SORT_KEYS);
        FUZZ_ASSERT(jobreq_from_json(rq, &r, 0, time(NULL), &e) == 0, "job %zu: the API refuses %s: %s", i, s,
                    e.msg);
        free(s);
        jobreq_free(&r);
    }
    char out[2048];
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
        wfp_explain(d, fields[f], "refused", out, sizeof out);
    wfp_free(d);
    wfp_errors_free(&errs);
    return 0;
}
