/* Workflows as JSON (workflow_json.c): the body of POST /v1/workflows, the document kept in
 * the database, and the API's answers. */
#ifndef JOBLET_WORKFLOW_JSON_H
#define JOBLET_WORKFLOW_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../common/err.h"
#include "workflow.h"

/* Checks the body's shape, names, conditions and dependency cycles (every error names its
 * field, e.g. "jobs[1].requires[0]"); the requests stay JSON, borrowed from body, for
 * workflow_submit. On failure b is empty. */
int workflow_json_parse(json_t *body, wf_body *b, jerr *e);
/* A workflow read from the database: its jobs' names and conditions from wf->doc. -1 (and
 * the last problem) when a stored condition no longer reads; the others are kept. */
int workflow_json_load(workflow *wf, jerr *e);
/* GET /v1/workflows/{id} (detail: with the YAML as submitted) and GET /v1/workflows. */
json_t *workflow_json(const workflow *wf, bool detail);
json_t *workflow_json_list(const caller *who);
/* The body's files follow it (a streamed upload, docs/api.md): some job lists an upload with a
 * size and no content_b64. */
bool workflow_json_streamed(const wf_body *b);
/* The entries its jobs' upload listings hold together (what a long inline listing is, measured
 * by INCOMING_INLINE_AT_ONCE, core/incoming.h). */
size_t workflow_json_uploads(const wf_body *b);

#endif
