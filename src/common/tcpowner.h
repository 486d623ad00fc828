/* Who opened a TCP connection to this machine from this machine: the uid the kernel's table of
 * TCP sockets (/proc/net/tcp, /proc/net/tcp6) gives the socket whose local address is the peer's.
 * For a listener on loopback, where every local user's connections come from 127.0.0.1: bounds
 * per user, not per address (api/metrics_http.c). */
#ifndef JOBLET_TCPOWNER_H
#define JOBLET_TCPOWNER_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

/* In one table's text (the file's whole content, NUL-ended; /proc/net/tcp's form for an IPv4
 * peer, tcp6's for an IPv6 one), the uid of the socket whose local address and port are peer's.
 * 0 and *uid, or -1 when no line has it. Pure. */
int tcpowner_find(const char *table, const struct sockaddr *peer, socklen_t len, uid_t *uid);
/* The same, from the kernel's table of the peer's family. */
int tcpowner_of(const struct sockaddr *peer, socklen_t len, uid_t *uid);
/* Whether peer is a loopback address (127.0.0.0/8, ::1, or ::ffff:127.x.y.z). */
bool tcpowner_loopback(const struct sockaddr *peer, socklen_t len);

#endif
