/* GET /metrics: on the API's unix socket, and on an optional TCP listener for Prometheus
 * (metrics.listen, docs/metrics.md). */
#ifndef JOBLET_METRICS_HTTP_H
#define JOBLET_METRICS_HTTP_H

#include "http.h"

/* Answers GET (or HEAD) /metrics on the unix socket with the Prometheus text, to admins only
 * (403 otherwise: the text names every user's jobs); other methods get 404 as unknown routes
 * do. Loop thread, like every route. */
enum MHD_Result metrics_reply(request *r);

/* Serves GET /metrics, and nothing else (404), on "HOST:PORT": a numeric IPv4 address, or an
 * IPv6 one in brackets ("[::1]:9464"). A libmicrohttpd daemon with its own thread; it never
 * touches the core's state: each scrape asks the loop thread for the text and waits at most
 * 5 s for it (503 after that). readers (metrics.readers), when not empty: a connection from this
 * machine is answered only for root and the users and @groups it lists (403 otherwise; the kernel
 * says whose the client's socket is, and a socket made in a job's cgroup, beneath cg_mount's
 * cg_root, is the job's owner's); one from elsewhere as before. Call on the loop thread after
 * loop_init. */
int metrics_listen_start(const char *hostport, const char *readers, const char *cg_mount, const char *cg_root,
                         jerr *e);
/* Stops the listener; a scrape still waiting is answered 503 at once. Loop thread. */
void metrics_listen_stop(void);

#endif
