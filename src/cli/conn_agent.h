/* rnx's keeper of TLS connections to a node: the third kind of connection (conn.h), as ssh's
 * ControlMaster and ControlPersist are to ssh. The first command to a node starts a small rnx
 * process (the keeper) for that node and that user; it holds the node's credentials and one
 * TLS connection ready (through its handshake and a first request, so the node has checked
 * rnx's certificate), hands it to the next command through a unix socket in a directory only the user can enter. The command
 * then speaks plain HTTP on a unix socket and loads no TLS at all; the keeper carries its bytes
 * into the TLS session, and when the command gives the connection back at the end of an answer
 * (conn_release) keeps it for the next command: a loop of commands makes one handshake. It leaves when no command has used it for the node's persist time
 * (nodes.h: persist, default CONN_AGENT_PERSIST_DEFAULT; 0: no keeper), when its socket file
 * is removed, or on rnx node disconnect.
 *
 * The keeper's socket: $XDG_RUNTIME_DIR/rnx/ (else /tmp/rnx-UID/), a directory of the user's
 * alone (mode 0700, refused otherwise), named by a hash of the node's name, address, CA,
 * certificate and key: a node whose certificate or address changes gets a new keeper, and the
 * old one leaves when its time is up. Only the user's own processes are served (checked on
 * each connection with SO_PEERCRED).
 *
 * Between a command and the keeper: the command sends 'c'; the keeper writes one line,
 *   "ok\n"                              a TLS connection to the node is ready; HTTP follows
 *   "err CODE\tFIELD\tMESSAGE\n"        it could not make one (CODE an errno, FIELD "" or
 *                                       ca/cert/key): what a direct dial would have said */
#ifndef JOBLET_CONN_AGENT_H
#define JOBLET_CONN_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../common/err.h"
#include "conn.h"
#include "conn_tls.h"

/* How long a keeper stays after its last command, when the node does not say (seconds). */
#define CONN_AGENT_PERSIST_DEFAULT 600u
/* Commands one keeper carries at once; more dial the node themselves. */
#define CONN_AGENT_MAX_SESSIONS 64
/* Idle connections a keeper holds at most, and how many it keeps ready while it is used (a
 * command such as run --follow uses two in a row: one for the submission, which it gives
 * back, then one for the log stream, which ends with the job). */
#define CONN_AGENT_POOL 4
#define CONN_AGENT_READY 2
/* One idle longer is closed: the node closes idle connections (its server.idle_timeout_s, 30 s
 * by default, which GET /v1/version says: the keeper's spares read it) and one it is closing must
 * never be handed out; one idle for more than two thirds of the node's time is closed too. */
#define CONN_AGENT_IDLE_MAX_S 60

/* What a command sends the keeper after the first line is framed, so that it can say where its
 * HTTP ends: each frame is a type byte and a 24-bit big-endian length, then that many bytes. */
#define CONN_AGENT_FRAME_DATA 'd'   /* bytes for the node */
#define CONN_AGENT_FRAME_SHUT 's'   /* no more bytes for the node (length 0): a TLS half-close */
#define CONN_AGENT_FRAME_KEEP 'k'   /* (length 0, the last frame) the command's last answer has
                                       been read whole: the connection may carry the next one */
#define CONN_AGENT_FRAME_MAX (1u << 20)

/* A connection to node p through its keeper, starting the keeper when there is none (it stays
 * persist_s seconds after the last command). NULL with *direct true when no keeper can serve
 * (no private directory for its socket, the keeper is full): the caller dials the node itself.
 * NULL with *direct false and e set when the keeper could not reach the node: e is what
 * conn_tls_creds_new or conn_tls_dial said. The connection's kept is set: it was made before
 * the command asked, and the node may have closed it just now (client.c retries a request that
 * got no answer at all, as on a kept-alive connection). */
conn *conn_agent_dial(const conn_tls_peer *p, unsigned persist_s, bool *direct, jerr *e);

/* The keeper of node p: its process id, 0 when there is none. */
pid_t conn_agent_pid(const conn_tls_peer *p);
/* Ends the keeper of node p (its commands in flight are cut): its process id, 0 when there
 * was none. */
pid_t conn_agent_stop(const conn_tls_peer *p);

/* The keeper itself: "rnx node keep NAME", as conn_agent_dial starts it (the listening socket
 * on descriptor 3, its instructions on 4). Returns 2 at once when started any other way. */
int conn_agent_main(int argc, char **argv);

#endif
