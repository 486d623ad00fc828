/* Who opened a local TCP connection (tcpowner.h). */
#include "tcpowner.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The addresses as inet_diag takes them: four 32-bit words in network order (IPv4: the first);
 * an IPv4 one as IPv6's ::ffff:a.b.c.d when mapped. */
static void diag_addr(const struct sockaddr *s, bool mapped, __be32 out[4], __be16 *port)
{
    memset(out, 0, 16);
    if (s->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)s;
        if (mapped) {
            out[2] = htonl(0xffff);
            out[3] = a->sin_addr.s_addr;
        } else
            out[0] = a->sin_addr.s_addr;
        *port = a->sin_port;
    } else {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)s;
        memcpy(out, &a->sin6_addr, 16);
        *port = a->sin6_port;
    }
}

/* One exact look-up of the client's socket of family fam, bound to interface ifindex (0: to
 * none); 0 with *uid and *cgroup (0 when the kernel gave none), or -1. */
static int ask(int fd, int fam, unsigned ifindex, const struct sockaddr *peer, const struct sockaddr *here, uid_t *uid,
               uint64_t *cgroup)
{
    bool mapped = fam == AF_INET6 && peer->sa_family == AF_INET;
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req = {.nlh = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST,
                     .nlmsg_seq = 1},
             .r = {.sdiag_family = (__u8)fam, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u}};
    /* the client's socket: its source is the peer, its destination here */
    diag_addr(peer, mapped, req.r.id.idiag_src, &req.r.id.idiag_sport);
    diag_addr(here, mapped, req.r.id.idiag_dst, &req.r.id.idiag_dport);
    req.r.id.idiag_if = ifindex;
    req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl k = {.nl_family = AF_NETLINK};
    if (sendto(fd, &req, sizeof req, 0, (struct sockaddr *)&k, sizeof k) < 0)
        return -1;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    char buf[8192] __attribute__((aligned(4)));
    if (poll(&pf, 1, 1000) <= 0)
        return -1;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    for (struct nlmsghdr *h = (struct nlmsghdr *)(void *)buf; n > 0 && NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
        if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            *uid = (uid_t)m->idiag_uid;
            *cgroup = 0;
            /* its attributes: the cgroup2 id of the process that made the socket */
            size_t alen = h->nlmsg_len - NLMSG_LENGTH(sizeof *m);
            for (struct rtattr *a = (struct rtattr *)(void *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen))
                if (a->rta_type == INET_DIAG_CGROUP_ID && RTA_PAYLOAD(a) >= sizeof(uint64_t))
                    memcpy(cgroup, RTA_DATA(a), sizeof(uint64_t));
            return 0;
        }
        if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE)
            break;
    }
    return -1;
}

/* The look-up of the client's socket for each family it may have (an IPv4 peer: an IPv4 socket,
 * or an IPv6 one reaching an IPv4 address), bound to interface ifindex. */
static int ask_families(int fd, unsigned ifindex, const struct sockaddr *peer, const struct sockaddr *here, uid_t *uid,
                        uint64_t *cgroup)
{
    int rc = ask(fd, peer->sa_family, ifindex, peer, here, uid, cgroup);
    if (rc < 0 && peer->sa_family == AF_INET)
        rc = ask(fd, AF_INET6, ifindex, peer, here, uid, cgroup);
    return rc;
}

int tcpowner_of(const struct sockaddr *peer, const struct sockaddr *here, uid_t *uid, uint64_t *cgroup)
{
    uint64_t cg_unused;
    if (!cgroup)
        cgroup = &cg_unused;
    if ((peer->sa_family != AF_INET && peer->sa_family != AF_INET6) || peer->sa_family != here->sa_family)
        return -1;
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0)
        return -1;
    int rc = ask_families(fd, 0, peer, here, uid, cgroup);
    if (rc < 0 && tcpowner_local(peer)) {
        /* The kernel matches a socket bound to an interface (SO_BINDTODEVICE, which any user may
         * set; an IPv6 link-local connection is bound to its scope's) only when asked with that
         * interface: ask with each. Only for a client at one of the machine's own addresses (a
         * socket of this machine's has one): one from elsewhere costs no round trip per interface
         * (a host with many jobs' veths has hundreds). */
        struct if_nameindex *ifs = if_nameindex();
        for (struct if_nameindex *i = ifs; i && i->if_index && rc < 0; i++)
            rc = ask_families(fd, i->if_index, peer, here, uid, cgroup);
        if (ifs)
            if_freenameindex(ifs);
    }
    close(fd);
    return rc;
}

static bool same_address(const struct sockaddr *a, const struct sockaddr *b)
{
    __be32 x[4], y[4];
    __be16 port;
    diag_addr(a, a->sa_family == AF_INET, x, &port); /* IPv4 as ::ffff:a.b.c.d, to compare with either */
    diag_addr(b, b->sa_family == AF_INET, y, &port);
    return memcmp(x, y, sizeof x) == 0;
}

int tcpowner_cgroup_path(const char *mount, uint64_t id, char *out, size_t len)
{
    /* a cgroup2 directory's file handle is its id (the kernfs node's) */
    struct {
        struct file_handle fh;
        uint64_t id;
    } h = {.fh = {.handle_bytes = sizeof(uint64_t), .handle_type = 0xfe /* FILEID_KERNFS */}};
    memcpy(h.fh.f_handle, &id, sizeof id);
    int mfd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (mfd < 0)
        return -1;
    int fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(mfd);
    if (fd < 0)
        return -1;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, len - 1);
    close(fd);
    if (n < 0 || (size_t)n >= len - 1)
        return -1;
    out[n] = 0;
    return 0;
}

bool tcpowner_local(const struct sockaddr *peer)
{
    if (tcpowner_loopback(peer))
        return true;
    if (peer->sa_family != AF_INET && peer->sa_family != AF_INET6)
        return false;
    struct ifaddrs *all;
    if (getifaddrs(&all) < 0)
        return true; /* cannot tell: the caller's cautious answer */
    bool found = false;
    for (struct ifaddrs *i = all; i && !found; i = i->ifa_next)
        if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
            found = same_address(peer, i->ifa_addr);
    freeifaddrs(all);
    return found;
}

bool tcpowner_loopback(const struct sockaddr *peer)
{
    if (peer->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)(const void *)peer)->sin_addr.s_addr) >> 24) == 127;
    if (peer->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)peer)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}
