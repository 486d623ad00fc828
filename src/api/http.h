#ifndef JOBLET_HTTP_H
#define JOBLET_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../common/err.h"

typedef struct request {
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    const char *body;
    size_t body_len;
    bool body_too_large;
    bool body_busy;       /* other requests hold the memory budget for bodies: retry */
    uid_t uid;
    gid_t gid;
    bool resumed;         /* the route runs again after its request was parked (park.h) */
    struct park_slot *park; /* the connection's place among parked requests (park.c) */
} request;

/* Listens on the unix socket and serves through the daemon's event loop. */
/* How the server shares itself among local users. */
typedef struct http_limits {
    uint64_t max_body;           /* server.max_body_bytes */
    unsigned per_user;           /* server.max_connections_per_user: open at once per uid (root: none); 0 = none */
    unsigned idle_timeout_s;     /* server.idle_timeout_s: a connection that sends nothing for this long is closed */
} http_limits;
int http_start(const char *socket_path, mode_t mode, const http_limits *lim, jerr *e);
/* True when something answers on the socket: another joblet owns this state. */
bool http_socket_in_use(const char *socket_path);
void http_run(void);          /* after any event: let MHD make progress */
int http_timeout_ms(void);
void http_stop(void);

/* routes.c */
enum MHD_Result routes_dispatch(request *r);

#endif
