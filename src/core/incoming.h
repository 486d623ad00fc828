/* Submissions whose uploads follow the request (docs/api.md, "Streamed uploads").
 *
 * A POST /v1/jobs (or /v1/workflows) whose files declare a size and carry no content is
 * checked completely, as any submission (the schema, the machine, the limits), and answered
 * 202 with an upload id. All that exists then is an empty directory of its own per job,
 * <jobs>/.incoming-<id>-<k>/work (root's, 0700 above work/). PUT /v1/uploads/<id> then sends
 * every file's bytes in listing order (a workflow's jobs in their order); they are written as
 * they arrive, so no file is ever held in memory. Once the last byte is there, the job (or the
 * workflow) is created from what was checked and the directory becomes the job's. Anything
 * else - a PUT that fails, a connection lost midway, no PUT or no byte for
 * jobs.upload_timeout_s, the daemon stopping - removes the directory, and no job exists.
 *
 * Bounds: server.max_uploads open at once, limits.uploads_per_user per user; each holds its
 * checked request (at most server.max_body_bytes of JSON) and one open file. The bytes
 * declared are bounded by jobs.max_upload_bytes for each job and for a workflow's together,
 * and no more than was declared is ever written. */
#ifndef JOBLET_INCOMING_H
#define JOBLET_INCOMING_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "authz.h"
#include "job.h"
#include "workflow.h"

typedef struct incoming incoming;
/* An inline listing of more entries than this (a workflow's jobs' together) is staged
 * (incoming_open_inline, incoming_open_workflow_inline); a shorter one is written in its
 * submission's turn (a few ms at most). */
#define INCOMING_INLINE_AT_ONCE 256

/* A job request with streamed files (jobreq_uploads_streamed): checked as submit_job checks
 * it, then waiting for its bytes. Takes req over on success; NULL with e set otherwise
 * (429 limits.uploads_per_user, 503 server.max_uploads, or the submission's refusal). */
incoming *incoming_open_job(job_req *req, const caller *who, jerr *e);
/* A job request whose listing carries its files (content_b64) and is too long to write in one
 * turn of the loop: checked and staged as a streamed one (its files written into its own
 * directory, the job made once all are there), but no PUT sends them: the caller's request
 * calls incoming_finish at each turn until it is done, and drops it if its client goes. */
incoming *incoming_open_inline(job_req *req, const caller *who, jerr *e);
/* An upload still open, by its id (the caller's own: no check of its owner), or NULL. */
incoming *incoming_of(const char *id);
const char *incoming_id(const incoming *in);
/* The same for a workflow: every job checked (workflow_prepare); takes b over on success. */
incoming *incoming_open_workflow(wf_body *b, const caller *who, jerr *e);
/* A workflow whose jobs' listings carry their files and together are too long to write in one
 * turn: staged as incoming_open_inline stages a job's (the workflow and its jobs made once every
 * job's entries are there). */
incoming *incoming_open_workflow_inline(wf_body *b, const caller *who, jerr *e);
/* The 202 answer: {"upload": {"id", "path", "bytes", "files", "timeout_s"}}. */
json_t *incoming_json(const incoming *in);

/* PUT /v1/uploads/<id>: the caller's upload waiting for its bytes, or NULL (404 unknown or
 * expired or another user's, 409 already being sent). */
incoming *incoming_find(const char *id, uid_t uid, jerr *e);
uint64_t incoming_bytes(const incoming *in);
/* A PUT sends the bytes: from now on the connection's own idle timeout watches it. */
void incoming_attach(incoming *in);
/* The next bytes of the body, written where the listing says; -1 when they cannot be (a
 * disk error, more bytes than declared): the caller drops it. The entries without bytes on the
 * way are made a slice of the loop's turn at a time (all uploads sharing it), each given to
 * the uid its job will run as: 1 when the slice ended first, *taken bytes written; the caller
 * gives the rest again at the next turn. 0: all *taken. */
int incoming_write(incoming *in, const char *data, size_t len, size_t *taken, jerr *e);
/* The body ended: every declared byte there? Then the job (*j), the workflow (*wf) or the job
 * array (*a) is created. 1 when entries are still to be made (the slice of this turn is spent):
 * call again at the next turn; otherwise in is freed either way; -1 with e set when nothing was
 * created. */
int incoming_finish(incoming *in, job **j, workflow **wf, struct jarray **a, jerr *e);
/* Removes what was written and frees it; why goes to the log. */
void incoming_drop(incoming *in, const char *why);

/* Uploads that no PUT is sending are dropped jobs.upload_timeout_s after their 202 answer. */
int64_t incoming_next_deadline(void);   /* ms, 0 = none */
void incoming_expire(int64_t now_ms);
/* Each request an upload still waiting for its bytes holds (a workflow's, each of its jobs'):
 * fn(r, its upload's id, its owner, arg). Checked at its POST, it becomes a job (or an array)
 * once its bytes came, unchecked then: what it names (a runtime) stays while it waits. */
void incoming_each_req(void (*fn)(const job_req *r, const char *id, uid_t owner, void *arg), void *arg);
/* At shutdown: every upload dropped. */
void incoming_drop_all(void);
/* At start: what an earlier joblet left of unfinished uploads (<jobs>/.incoming-*) removed. */
void incoming_clean_stale(void);

#endif
