/* Who opened a TCP connection to this machine from this machine: the uid the kernel gives the
 * client's socket (sock_diag: the one socket of the connection's four addresses and ports, looked
 * up by the kernel, not a walk of its tables). For a listener on loopback, where every local user's
 * connections come from 127.0.0.1: bounds per user, not per address (api/metrics_http.c). */
#ifndef JOBLET_TCPOWNER_H
#define JOBLET_TCPOWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* The connection whose client is peer and whose server end is here (the accepted socket's own
 * address): 0 and *uid, the client socket's owner, and *cgroup (when not NULL), the cgroup2 id of
 * the process that made it (0: the kernel gave none); -1 when the kernel knows no such socket (its
 * client left) or cannot be asked. An IPv4 peer whose socket is IPv6 (::ffff:a.b.c.d) is found too, and
 * a client socket bound to an interface (SO_BINDTODEVICE, an IPv6 link-local connection). */
int tcpowner_of(const struct sockaddr *peer, const struct sockaddr *here, uid_t *uid, uint64_t *cgroup);
/* The path of the cgroup2 directory whose id is id (as tcpowner_of's *cgroup: that of the
 * process that made the socket), beneath the cgroup2 mount point mount: 0, or -1 when there is
 * none (or the caller lacks CAP_DAC_READ_SEARCH). */
int tcpowner_cgroup_path(const char *mount, uint64_t id, char *out, size_t len);
/* Whether peer is one of this machine's own addresses (loopback, or an address of one of its
 * interfaces; ::ffff:a.b.c.d as a.b.c.d): a client there is a local user whose socket the kernel
 * knows while it is connected. true also when the interfaces cannot be listed. */
bool tcpowner_local(const struct sockaddr *peer);
/* Whether peer is a loopback address (127.0.0.0/8, ::1, or ::ffff:127.x.y.z). */
bool tcpowner_loopback(const struct sockaddr *peer);

#endif
