/* A workflow file (YAML, docs/workflows.md) into the body of POST /v1/workflows, checked
 * before anything is sent: every problem is reported as "FILE:LINE:COL: message", and a file
 * with any problem yields no body at all. The parse keeps where each key was written, so that
 * the daemon's refusals (which name a JSON field such as "jobs[1].request.gpu_count") can be
 * shown at the line of the YAML that asked for it. */
#ifndef JOBLET_WFPARSE_H
#define JOBLET_WFPARSE_H

#include <jansson.h>
#include <stddef.h>

#include "upload.h"

/* At most this many problems are reported for one file; the rest are counted. */
#define WFP_MAX_ERRORS 20
/* The daemon stores the file's text with the workflow and refuses more than this. */
#define WFP_MAX_BYTES (1u << 20)

typedef struct wfp_errors {
    char *msg[WFP_MAX_ERRORS];   /* "FILE:LINE:COL: message", in the order found */
    size_t n;                    /* messages kept */
    size_t dropped;              /* problems found beyond WFP_MAX_ERRORS */
} wfp_errors;

typedef struct wfp_doc wfp_doc;

/* Parses and checks the text of a workflow file. path is the file's name as the user gave it:
 * it prefixes every message, becomes the workflow's "source", names the workflow when the file
 * has no name: key, and its directory is where relative uploads are looked for (and read).
 * Returns NULL with errs filled (at least one message) when the file is not a valid workflow. */
wfp_doc *wfp_parse(const char *path, const char *text, size_t len, wfp_errors *errs);

/* Reads path and parses it. A file that cannot be read gives one message "PATH: <why>". */
wfp_doc *wfp_parse_file(const char *path, wfp_errors *errs);

/* The POST /v1/workflows body (borrowed: valid until wfp_free). */
json_t *wfp_body(const wfp_doc *d);
/* Its jobs, in the body's order, and the files each uploads (listed in the body; their bytes
 * go in this order after a 202 answer, upload_submit). */
size_t wfp_njobs(const wfp_doc *d);
const upload_set *wfp_job_uploads(const wfp_doc *d, size_t i);

/* An API error about the workflow (its "field" and "message") as the user should read it:
 * "FILE:LINE:COL: message" at the YAML that set the field, with the request field's name
 * worded as the file's key by the request schema (max_memory_mb -> max_memory, env ->
 * environment, ...). A field the file has no place for is shown at the job (or at 1:1 for the
 * whole file). */
void wfp_explain(const wfp_doc *d, const char *field, const char *msg, char *out, size_t outlen);

void wfp_free(wfp_doc *d);
void wfp_errors_free(wfp_errors *errs);

#endif
