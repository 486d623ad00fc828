/* Who opened a TCP connection to this machine from this machine: the uid the kernel gives the
 * client's socket (sock_diag: the one socket of the connection's four addresses and ports, looked
 * up by the kernel, not a walk of its tables). For a listener on loopback, where every local user's
 * connections come from 127.0.0.1: bounds per user, not per address (api/metrics_http.c). */
#ifndef JOBLET_TCPOWNER_H
#define JOBLET_TCPOWNER_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

/* The connection whose client is peer and whose server end is here (the accepted socket's own
 * address): 0 and *uid, the client socket's owner; -1 when the kernel knows no such socket (its
 * client left) or cannot be asked. An IPv4 peer whose socket is IPv6 (::ffff:a.b.c.d) is found too. */
int tcpowner_of(const struct sockaddr *peer, const struct sockaddr *here, uid_t *uid);
/* Whether peer is a loopback address (127.0.0.0/8, ::1, or ::ffff:127.x.y.z). */
bool tcpowner_loopback(const struct sockaddr *peer);

#endif
