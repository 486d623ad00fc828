/* HTTP/JSON client for the joblet API, over its unix socket or over TLS to a remote node. */
#ifndef JOBLET_CLIENT_H
#define JOBLET_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "conn.h"
#include "conn_tls.h"

typedef struct rnx_client rnx_client;

/* Where rnx sends its requests: the local daemon's socket, or a node (rnx node, cmd_node.h). */
typedef struct client_target {
    const char *socket;        /* the daemon's unix socket; NULL: node, over TLS */
    conn_tls_peer node;
    unsigned persist_s;        /* a node: how long its keeper stays after a command (conn_agent.h);
                                  0: no keeper, each command dials the node */
} client_target;

/* Opens no connection yet: each request dials the socket; a node is reached through its keeper
 * (conn_agent.h), or dialed with a full TLS handshake when it has none (the node's credentials
 * are read at the first); a command's later requests go on the same connection. t's strings
 * are copied. */
rnx_client *client_new(const client_target *t);
void client_free(rnx_client *c);

/* A connection to where c sends its requests (rnx console carries a browser's bytes through
 * it). NULL with e set, its message naming the socket or the node and why. */
conn *client_connect(rnx_client *c, jerr *e);
/* "joblet at /run/joblet/joblet.sock", "node gpu-1 (gpu-1.example.com:7443)". */
const char *client_where(const rnx_client *c);

/* Asks joblet who this is (GET /v1/whoami, the answer dropped): a request waits there while
 * joblet looks up the caller's account (its role: server.admin_group), so that a request it
 * decides on before its body (a runtime import, a copy into a job) then finds it known. */
void client_account_ready(rnx_client *c);
/* One request. body (may be NULL) is sent as JSON. On a 2xx answer returns 0 and sets *out
 * to the parsed body (NULL for an empty one; caller decrefs). Otherwise returns -1 with e set:
 *   e->http  the HTTP status, 0 when no answer came (e.g. the daemon is not running)
 *   e->field the API error's "field", "" when none
 *   e->msg   the API error's message, or what went wrong on the way */
int client_request(rnx_client *c, const char *method, const char *path, json_t *body,
                   json_t **out, jerr *e);
/* e is joblet's "not now, nothing was done: ask again" (a 503 with Retry-After, common/err.h
 * jerr_busy) and *waited_s (0 at a request's first attempt) is under a minute: says so on
 * stderr at the first, sleeps the pause joblet asked for (1-10 s), adds it to *waited_s and
 * returns true (ask again); false otherwise. client_request and client_request_raw ask again
 * themselves; a caller whose request is more than one call (a submission and then its files)
 * asks again with this. */
bool client_busy_again(rnx_client *c, const jerr *e, int *waited_s);
/* Whether the caller sees other users' jobs and workflows in the lists (GET /v1/whoami's
 * sees_all_jobs: root) into *all; false when joblet does not say (an older daemon: 404). -1
 * with e on any other failure (not reached, a certificate refused, busy): the command stops
 * there, not asking again for its list. */
int client_sees_all_jobs(rnx_client *c, bool *all, jerr *e);

/* Fills buf with up to cap bytes of a body: how many, 0 at its end, -1 with e set to stop. */
typedef long (*client_source_fn)(void *ud, char *buf, size_t cap, jerr *e);

/* PUT path with a body of exactly len bytes taken from src in pieces (256 KiB; nothing more is
 * held), then the answer as client_request gives it, also when joblet answers before taking
 * the whole body (a refusal at the headers). When src fails, the connection is closed before
 * the body is complete (joblet then drops what it received) and src's error is returned. */
int client_upload(rnx_client *c, const char *path, uint64_t len, client_source_fn src, void *ud, json_t **out,
                  jerr *e);
/* The same with a body of another type (a recipe's YAML): len bytes of body, sent as they are. */
int client_request_raw(rnx_client *c, const char *method, const char *path, const char *ctype, const char *body,
                       size_t len, json_t **out, jerr *e);

/* Called as a large body goes out or comes in: bytes so far, of total (0 when unknown). */
typedef void (*client_progress_cb)(uint64_t done, uint64_t total, void *ud);

/* POST path with size bytes read from fd as the body of type ctype (never all in memory);
 * answer as client_request, asked again on a busy answer as it is when fd can be read again
 * from where it stood (a file, not a pipe). */
int client_post_file(rnx_client *c, const char *path, const char *ctype, int fd, uint64_t size,
                     client_progress_cb cb, void *ud, json_t **out, jerr *e);
/* GET path and write a 2xx answer's body to out_fd as it comes. Errors as client_request. */
int client_download(rnx_client *c, const char *path, int out_fd, client_progress_cb cb, void *ud, jerr *e);

/* Called once per line of an NDJSON answer, without the newline. Return 0 to go on, -1 to
 * stop reading (client_stream then returns -1 with e->code = ECANCELED). */
typedef int (*client_line_cb)(const char *line, size_t len, void *ud);

/* GET path and feed each line of a 2xx answer to cb as it arrives. Errors as client_request;
 * a connection lost after the answer began gives e->code = ECONNRESET. */
int client_stream(rnx_client *c, const char *path, client_line_cb cb, void *ud, jerr *e);

/* Called with each piece of a streamed answer's body as it arrives (any size). Return 0 to go
 * on, -1 to stop reading (e->code = ECANCELED). */
typedef int (*client_bytes_cb)(const char *p, size_t n, void *ud);

/* GET path asking for the type accept, and feed a 2xx answer's body to cb as it arrives (a
 * binary stream: the framed logs). Errors as client_stream. */
int client_stream_bytes(rnx_client *c, const char *path, const char *accept, client_bytes_cb cb, void *ud, jerr *e);

/* A body read or written a piece at a time (rnx job cp's tar streams, never whole in memory). */
typedef struct client_body client_body;
/* GET path asking for accept: on a 2xx answer, its body to read with client_body_read (NULL
 * and e set as client_request does otherwise). */
client_body *client_get_body(rnx_client *c, const char *path, const char *accept, jerr *e);
/* The answer's header name (case-insensitive) copied into out; false when it has none. */
bool client_body_header(const client_body *b, const char *name, char *out, size_t len);
/* Up to cap bytes of the body: how many, 0 at its end, -1 with e set when the connection
 * broke before the end (the body is cut short). */
long client_body_read(client_body *b, char *buf, size_t cap, jerr *e);
/* PUT path with a body of type ctype sent in pieces (chunked), of a length not known ahead. */
client_body *client_put_body(rnx_client *c, const char *path, const char *ctype, jerr *e);
/* One piece; -1 with e set when joblet stopped reading (it answered already: finish reads it). */
int client_body_write(client_body *b, const void *p, size_t n, jerr *e);
/* The body is complete: the answer as client_request gives it. Frees b. */
int client_body_finish(client_body *b, json_t **out, jerr *e);
/* Drops the connection (a read body not read to its end, a written one given up). Frees b. */
void client_body_close(client_body *b);

/* POST path asking to switch the connection to protocol (Connection: Upgrade, Upgrade: proto;
 * docs/api.md, "Interactive streams"). On 101 the connection is the caller's (conn_close it),
 * *extra (the caller frees it) holding the *nextra bytes that came after the answer's head;
 * otherwise NULL with e set as client_request sets it. */
conn *client_upgrade(rnx_client *c, const char *path, const char *proto, char **extra, size_t *nextra, jerr *e);
/* The same with a JSON body (NULL: none), for an upgrade that says what to run (exec). */
conn *client_upgrade_with(rnx_client *c, const char *path, const char *proto, const char *json, char **extra,
                          size_t *nextra, jerr *e);

/* path segment escaped for use in a URL (job ids are passed as typed). Caller frees. */
char *client_escape(rnx_client *c, const char *s);

#endif
