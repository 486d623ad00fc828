#ifndef JOBLET_HTTP_H
#define JOBLET_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../core/authz.h"
#include "../core/config.h"

/* A route's own state for one connection, kept from its first run to the connection's end
 * (a copy's helper, api/jobs_cp.c): free is called with p when the connection is done. */
typedef struct http_ctx {
    void *p;
    void (*free)(void *p);
} http_ctx;

typedef struct request {
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    const char *body;
    size_t body_len;
    bool body_too_large;
    bool body_busy;       /* other requests hold the memory budget for bodies: retry */
    uint64_t body_busy_share; /* ... the caller's own, this share of it; 0: everyone's (body_busy_error) */
    caller who;           /* who asks (core/authz.h): the peer's uid and gid, its role */
    bool resumed;         /* the route runs again after its request was parked (park.h) */
    struct park_slot *park; /* the connection's place among parked requests (park.c) */
    int body_fd;          /* the body went to this file (routes_body_sink), -1 when it did not */
    int body_fd_error;    /* errno of a failed write to it, 0 when none */
    http_ctx *ctx;        /* the route's state for this connection (set it once; zeroed at first) */
    char *made;           /* the id of the job a change made, for the audit trail (HTTP_MADE_LEN) */
} request;
#define HTTP_MADE_LEN 40

/* Listens on the unix socket and serves through the daemon's event loop. */
/* How the server shares itself among local users. */
typedef struct http_limits {
    uint64_t max_body;           /* server.max_body_bytes */
    unsigned max_conns;          /* server.max_connections: open at once in all (also bounded by RLIMIT_NOFILE) */
    unsigned per_user;           /* server.max_connections_per_user: open at once per uid (root: none); 0 = none */
    unsigned idle_timeout_s;     /* server.idle_timeout_s: a connection that sends nothing for this long is closed */
    unsigned servers;            /* the servers that share max_conns: the socket and remote.listen's (0: 1) */
} http_limits;
int http_start(const char *socket_path, mode_t mode, const http_limits *lim, jerr *e);
/* The certificates of remote.pki_dir, read before anything is started (none needed without
 * remote.listen): 0, or -1 with e naming the file and what is wrong. */
int http_remote_load(const remote_config *rc, jerr *e);
/* The TLS listeners of remote.listen (none: nothing), after http_start; the certificates of
 * remote.pki_dir must be right (docs/remote.md). */
int http_start_remote(const remote_config *rc, const http_limits *lim, jerr *e);
/* SIGHUP: the server's certificate, the CA and the revocation list read again (api/tls.h). */
int http_reload_remote(jerr *e);
/* True when something answers on the socket: another joblet owns this state. */
bool http_socket_in_use(const char *socket_path);
void http_run(void);          /* after any event: let MHD make progress */
int http_timeout_ms(void);
void http_stop(void);

/* routes.c */
enum MHD_Result routes_dispatch(request *r);
/* Asked before a request's body is read (r has no body yet). 0: the body is read into memory
 * as usual; 1: the route takes it as a file, too large for memory (an archive): it is written
 * to *fd (the route's, closed after the answer) up to *max bytes, and the route gets
 * r->body_fd and r->body_len; 2: the body streams into *fd, a non-blocking pipe to a process
 * (the route's), up to *max bytes: while the pipe is full the connection waits, and *fd is
 * closed when the body has ended, before the route runs (r->body_fd is then -1, r->body_len
 * what went through; r->body_fd_error EPIPE when the process stopped reading); -1: the route
 * refuses without reading it, e says why. */
int routes_body_sink(request *r, int *fd, uint64_t *max, jerr *e);
/* Whether routes_body_sink takes the body of method and path (by their form: before who asks is
 * known). */
bool routes_body_sink_route(const char *method, const char *path);

#endif
