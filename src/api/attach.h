/* POST /v1/jobs/{id}/attach (docs/api.md, "Interactive streams"): the connection is upgraded
 * (101, Upgrade: tcp) and becomes a two-way stream of frames (common/termframe.h) between the
 * client and the job's shim (exec/shim_term.h), relayed on the loop: both sockets non-blocking,
 * a bounded buffer each way, a client that reads slowly only fills its own buffer (and then
 * its shim drops output for it alone, saying so). On the unix socket and the TLS listeners
 * alike (over TLS joblet reads and writes the upgraded connection's TLS session itself: tls.h). */
#ifndef JOBLET_API_ATTACH_H
#define JOBLET_API_ATTACH_H

#include <microhttpd.h>
#include <stdbool.h>

#include "../core/job.h"
#include "http.h"

/* The route, once j is found: checks (core/job_term.h), then answers 101 or an error. */
enum MHD_Result attach_route(request *r, job *j);
/* Whether the request asks to switch protocols: "Upgrade: tcp" and "Connection: ... upgrade". */
bool attach_asks_upgrade(struct MHD_Connection *c);
/* The exec streams open now whose helper has ended (a client that has not read what it wrote
 * yet): in job j, and of uid's, for job_exec_start's bounds (which count running helpers). */
void attach_exec_held(const job *j, uid_t uid, unsigned *on_job, unsigned *of_user);
/* Answers 101 and relays the connection to sfd, a socket that speaks the framing already (the
 * helper of the exec numbered serial: jobs_exec.c), which it takes, with the fds taken from the
 * connections' count for it (core/connfds.h), given back at the stream's end. */
enum MHD_Result attach_upgrade_fd(request *r, job *j, int sfd, uint64_t serial, unsigned fds);
/* The server stops: every attached connection is closed (libmicrohttpd stops only without
 * upgraded connections left open). */
void attach_stop_all(void);

#endif
