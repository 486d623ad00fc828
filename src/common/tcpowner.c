/* Who opened a local TCP connection (tcpowner.h). */
#include "tcpowner.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The peer as the table prints a local address: each 32-bit word of the address as the host
 * reads it from memory, in hex ("0100007F" for 127.0.0.1 here), then ':' and the port. */
static int want_of(const struct sockaddr *peer, socklen_t len, uint32_t w[4], int *nw, unsigned *port)
{
    if (peer->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)(const void *)peer;
        memcpy(&w[0], &s->sin_addr, 4);
        *nw = 1;
        *port = ntohs(s->sin_port);
        return 0;
    }
    if (peer->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)(const void *)peer;
        memcpy(w, &s->sin6_addr, 16);
        *nw = 4;
        *port = ntohs(s->sin6_port);
        return 0;
    }
    return -1;
}

int tcpowner_find(const char *table, const struct sockaddr *peer, socklen_t len, uid_t *uid)
{
    uint32_t w[4];
    int nw;
    unsigned port;
    if (want_of(peer, len, w, &nw, &port) < 0)
        return -1;
    const char *line = strchr(table, '\n'); /* (the first line names the columns) */
    while (line && *++line) {
        /* "  12: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000 ..." */
        const char *p = strchr(line, ':');
        const char *next = strchr(line, '\n');
        if (!p || (next && p > next))
            break;
        p++;
        while (*p == ' ')
            p++;
        bool same = true;
        for (int k = 0; k < nw; k++) {
            char hex[9];
            memcpy(hex, p + 8 * k, 8);
            hex[8] = 0;
            char *end;
            unsigned long v = strtoul(hex, &end, 16);
            if (*end || (uint32_t)v != w[k])
                same = false;
        }
        const char *colon = p + 8 * nw;
        unsigned lport, st;
        unsigned long luid;
        char rem[64];
        if (same && *colon == ':' && sscanf(colon + 1, "%x %63s %x %*s %*s %*s %lu", &lport, rem, &st, &luid) == 4 &&
            lport == port) {
            *uid = (uid_t)luid;
            return 0;
        }
        line = next;
    }
    return -1;
}

int tcpowner_of(const struct sockaddr *peer, socklen_t len, uid_t *uid)
{
    const char *path = peer->sa_family == AF_INET6 ? "/proc/net/tcp6" : "/proc/net/tcp";
    size_t n;
    char *text = read_file(path, &n);
    if (!text)
        return -1;
    int rc = tcpowner_find(text, peer, len, uid);
    free(text);
    return rc;
}

bool tcpowner_loopback(const struct sockaddr *peer, socklen_t len)
{
    if (peer->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
        return (ntohl(((const struct sockaddr_in *)(const void *)peer)->sin_addr.s_addr) >> 24) == 127;
    if (peer->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)peer)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}
