/* rtnetlink through libmnl (netlink.h). Each request is one message with NLM_F_ACK, answered
 * by the kernel's ack or error on the same socket; dumps are read until NLMSG_DONE. */
#include "netlink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/netaddr.h"

/* Big enough for one datagram of a dump (the kernel fills up to 32 KiB when the reader can
 * take it); requests are far smaller. */
#define NETLINK_BUF 32768

struct netlink {
    struct mnl_socket *sk;
    unsigned portid;
    unsigned seq;
    int nsfd;             /* the namespace of a handle from netlink_open_in, else -1 */
    char nspath[256];
    char buf[NETLINK_BUF];
};

/* A bound rtnetlink socket in the namespace this thread is in. */
static struct mnl_socket *socket_here(jerr *e)
{
    struct mnl_socket *sk = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
    if (!sk || mnl_socket_bind(sk, 0, MNL_SOCKET_AUTOPID) < 0) {
        jerr_sys(e, "netlink: opening a rtnetlink socket");
        if (sk)
            mnl_socket_close(sk);
        return NULL;
    }
    /* Errors come back as the bare error code, without the request echoed. */
    int one = 1;
    mnl_socket_setsockopt(sk, NETLINK_CAP_ACK, &one, sizeof one);
    return sk;
}

/* The socket in the namespace nsfd (-1: this thread's): setns there and back, since a socket
 * stays in the namespace it was made in. */
static struct mnl_socket *socket_in(int nsfd, const char *nspath, jerr *e)
{
    if (nsfd < 0)
        return socket_here(e);
    int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0) {
        jerr_sys(e, "netlink: opening this thread's network namespace");
        return NULL;
    }
    struct mnl_socket *sk = NULL;
    if (setns(nsfd, CLONE_NEWNET) < 0) {
        jerr_sys(e, "netlink: entering the network namespace %s", nspath);
    } else {
        sk = socket_here(e);
        if (setns(self, CLONE_NEWNET) < 0) {
            jerr_sys(e, "netlink: going back to the own network namespace from %s", nspath);
            if (sk)
                mnl_socket_close(sk);
            sk = NULL;
        }
    }
    close(self);
    return sk;
}

static netlink *open_handle(int nsfd, const char *nspath, jerr *e)
{
    netlink *nl = calloc(1, sizeof *nl);
    if (!nl) {
        jerr_sys(e, "netlink: allocating a handle");
        return NULL;
    }
    nl->nsfd = nsfd;
    snprintf(nl->nspath, sizeof nl->nspath, "%s", nspath);
    nl->sk = socket_in(nsfd, nspath, e);
    if (!nl->sk) {
        free(nl);
        return NULL;
    }
    nl->portid = mnl_socket_get_portid(nl->sk);
    nl->seq = 1;
    return nl;
}

netlink *netlink_open(jerr *e)
{
    return open_handle(-1, "", e);
}

netlink *netlink_open_in(const char *nspath, jerr *e)
{
    int target = open(nspath, O_RDONLY | O_CLOEXEC);
    if (target < 0) {
        jerr_sys(e, "netlink: opening the network namespace %s", nspath);
        return NULL;
    }
    netlink *nl = open_handle(target, nspath, e);
    if (!nl)
        close(target);
    return nl;
}

void netlink_close(netlink *nl)
{
    if (!nl)
        return;
    mnl_socket_close(nl->sk);
    if (nl->nsfd >= 0)
        close(nl->nsfd);
    free(nl);
}

/* A dump cut short (NLM_F_DUMP_INTR: the links or addresses changed meanwhile, as they do
 * while jobs start) leaves the rest of it queued on the socket: a new socket replaces it and
 * the dump is asked again. */
static int reopen(netlink *nl)
{
    jerr ignored = {0};
    struct mnl_socket *sk = socket_in(nl->nsfd, nl->nspath, &ignored);
    if (!sk)
        return -1;
    mnl_socket_close(nl->sk);
    nl->sk = sk;
    nl->portid = mnl_socket_get_portid(sk);
    return 0;
}

static struct nlmsghdr *msg_start(netlink *nl, uint16_t type, uint16_t flags)
{
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(nl->buf);
    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = NLM_F_REQUEST | flags;
    nlh->nlmsg_seq = ++nl->seq;
    return nlh;
}

/* Sends nlh and reads the answers until the ack, the error or NLMSG_DONE; cb sees each data
 * message. inexact: a dump the kernel marks interrupted (NLM_F_DUMP_INTR) is read to its end
 * all the same, not failed with EINTR. 0, or -1 with errno the kernel's. */
static int talk_as(netlink *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data, bool inexact)
{
    unsigned seq = nlh->nlmsg_seq;
    if (mnl_socket_sendto(nl->sk, nlh, nlh->nlmsg_len) < 0)
        return -1;
    for (;;) {
        ssize_t n = mnl_socket_recvfrom(nl->sk, nl->buf, sizeof nl->buf);
        if (n < 0)
            return -1;
        int left = (int)n;
        for (struct nlmsghdr *m = (struct nlmsghdr *)(void *)nl->buf; inexact && mnl_nlmsg_ok(m, left);
             m = mnl_nlmsg_next(m, &left))
            m->nlmsg_flags &= (uint16_t)~NLM_F_DUMP_INTR;
        int r = mnl_cb_run(nl->buf, (size_t)n, seq, nl->portid, cb, data);
        if (r <= MNL_CB_STOP)
            return r < 0 ? -1 : 0;
    }
}

static int talk(netlink *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
    return talk_as(nl, nlh, cb, data, false);
}

/* A dump asked this many times, interrupted each time, is taken as it comes the next time. */
#define DUMP_EXACT_TRIES 20

/* talk() for a dump request built by make(nl, data): asked again on a fresh socket when the
 * kernel says it was interrupted; reset(data) forgets what the cut-short attempt gathered. Links
 * that never stop changing (jobs starting and ending by the hundred, on a loaded machine whose
 * reads of a long dump are far apart) can interrupt every try: the last is taken whole though
 * the kernel marks it, and may miss a link made or show one removed meanwhile, which every
 * caller copes with (a link made that exists, a link removed that is gone: that link's own
 * answer says so). */
static int dump(netlink *nl, struct nlmsghdr *(*make)(netlink *), mnl_cb_t cb, void *data, void (*reset)(void *))
{
    for (int attempt = 0;; attempt++) {
        if (talk_as(nl, make(nl), cb, data, attempt == DUMP_EXACT_TRIES) == 0)
            return 0;
        int saved = errno;
        if (saved != EINTR || attempt == DUMP_EXACT_TRIES)
            return -1;
        reset(data);
        if (reopen(nl) < 0) {
            errno = saved;
            return -1;
        }
    }
}

static void put_ifname(struct nlmsghdr *nlh, const char *name)
{
    mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
}

static int check_name(const char *name, const char *what, jerr *e)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len >= IFNAMSIZ)
        return jerr_set(e, EINVAL, "netlink: %s: the link name '%s' must be 1 to %d characters",
                        what, name ? name : "", IFNAMSIZ - 1);
    return 0;
}

int netlink_veth_create(netlink *nl, const char *host_name, const char *peer_name, int peer_netns_fd,
                        int mtu, jerr *e)
{
    if (check_name(host_name, "creating a veth pair", e) < 0 || check_name(peer_name, "creating a veth pair", e) < 0)
        return -1;
    struct nlmsghdr *nlh = msg_start(nl, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    put_ifname(nlh, host_name);
    if (mtu > 0)
        mnl_attr_put_u32(nlh, IFLA_MTU, (uint32_t)mtu);
    struct nlattr *linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
    mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
    struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
    struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
    /* The peer's attributes follow its own ifinfomsg, as in a RTM_NEWLINK of its own. */
    struct ifinfomsg *pifi = mnl_nlmsg_put_extra_header(nlh, sizeof *pifi);
    pifi->ifi_family = AF_UNSPEC;
    put_ifname(nlh, peer_name);
    mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)peer_netns_fd);
    if (mtu > 0)
        mnl_attr_put_u32(nlh, IFLA_MTU, (uint32_t)mtu);
    mnl_attr_nest_end(nlh, peer);
    mnl_attr_nest_end(nlh, data);
    mnl_attr_nest_end(nlh, linkinfo);
    if (talk(nl, nlh, NULL, NULL) < 0)
        return jerr_sys(e, "netlink: creating the veth pair %s (peer %s in another namespace)", host_name, peer_name);
    return 0;
}

int netlink_bridge_create(netlink *nl, const char *name, jerr *e)
{
    if (check_name(name, "creating a bridge", e) < 0)
        return -1;
    struct nlmsghdr *nlh = msg_start(nl, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    put_ifname(nlh, name);
    struct nlattr *linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
    mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "bridge");
    mnl_attr_nest_end(nlh, linkinfo);
    if (talk(nl, nlh, NULL, NULL) < 0)
        return jerr_sys(e, "netlink: creating the bridge %s", name);
    return 0;
}

/* A dump's or a get's link messages → netlink_link. */
static int link_attr_cb(const struct nlattr *attr, void *data)
{
    const struct nlattr **tb = data;
    int type = mnl_attr_get_type(attr);
    if (type <= IFLA_MAX)
        tb[type] = attr;
    return MNL_CB_OK;
}

static int info_attr_cb(const struct nlattr *attr, void *data)
{
    const struct nlattr **tb = data;
    int type = mnl_attr_get_type(attr);
    if (type <= IFLA_INFO_MAX)
        tb[type] = attr;
    return MNL_CB_OK;
}

static void link_from_msg(const struct nlmsghdr *nlh, netlink_link *l)
{
    const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
    const struct nlattr *tb[IFLA_MAX + 1] = {0};
    mnl_attr_parse(nlh, sizeof *ifi, link_attr_cb, tb);
    memset(l, 0, sizeof *l);
    l->ifindex = ifi->ifi_index;
    if (tb[IFLA_IFNAME])
        snprintf(l->name, sizeof l->name, "%s", mnl_attr_get_str(tb[IFLA_IFNAME]));
    if (tb[IFLA_LINKINFO]) {
        const struct nlattr *info[IFLA_INFO_MAX + 1] = {0};
        mnl_attr_parse_nested(tb[IFLA_LINKINFO], info_attr_cb, info);
        if (info[IFLA_INFO_KIND])
            snprintf(l->kind, sizeof l->kind, "%s", mnl_attr_get_str(info[IFLA_INFO_KIND]));
    }
}

static int link_one_cb(const struct nlmsghdr *nlh, void *data)
{
    if (nlh->nlmsg_type == RTM_NEWLINK)
        link_from_msg(nlh, data);
    return MNL_CB_OK;
}

int netlink_link_index(netlink *nl, const char *name, jerr *e)
{
    netlink_link l;
    return netlink_link_get(nl, name, &l, e);
}

int netlink_link_get(netlink *nl, const char *name, netlink_link *out, jerr *e)
{
    if (check_name(name, "looking up a link", e) < 0)
        return -1;
    struct nlmsghdr *nlh = msg_start(nl, RTM_GETLINK, NLM_F_ACK);
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    put_ifname(nlh, name);
    /* Only what is needed to name it: no statistics. */
    mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
    netlink_link l = {.ifindex = 0};
    if (talk(nl, nlh, link_one_cb, &l) < 0)
        return jerr_sys(e, "netlink: looking up the link %s", name);
    if (l.ifindex <= 0)
        return jerr_set(e, ENODEV, "netlink: looking up the link %s: no answer", name);
    *out = l;
    return l.ifindex;
}

static int setlink(netlink *nl, int ifindex, int master, bool up)
{
    struct nlmsghdr *nlh = msg_start(nl, RTM_NEWLINK, NLM_F_ACK);
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = ifindex;
    if (up) {
        ifi->ifi_flags = IFF_UP;
        ifi->ifi_change = IFF_UP;
    }
    if (master >= 0)
        mnl_attr_put_u32(nlh, IFLA_MASTER, (uint32_t)master);
    return talk(nl, nlh, NULL, NULL);
}

int netlink_link_set_master(netlink *nl, const char *name, int ifindex, int master_ifindex, jerr *e)
{
    if (setlink(nl, ifindex, master_ifindex, false) < 0)
        return jerr_sys(e, "netlink: setting the master of %s (index %d) to index %d", name, ifindex, master_ifindex);
    return 0;
}

int netlink_link_set_up(netlink *nl, const char *name, int ifindex, jerr *e)
{
    if (setlink(nl, ifindex, -1, true) < 0)
        return jerr_sys(e, "netlink: setting %s (index %d) up", name, ifindex);
    return 0;
}

int netlink_link_del(netlink *nl, const char *name, jerr *e)
{
    if (check_name(name, "deleting a link", e) < 0)
        return -1;
    struct nlmsghdr *nlh = msg_start(nl, RTM_DELLINK, NLM_F_ACK);
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    put_ifname(nlh, name);
    if (talk(nl, nlh, NULL, NULL) < 0)
        return jerr_sys(e, "netlink: deleting the link %s", name);
    return 0;
}

typedef struct link_vec {
    netlink_link *v;
    size_t n, cap;
    bool nomem;
} link_vec;

static int link_dump_cb(const struct nlmsghdr *nlh, void *data)
{
    link_vec *lv = data;
    if (nlh->nlmsg_type != RTM_NEWLINK)
        return MNL_CB_OK;
    if (lv->n == lv->cap) {
        size_t cap = lv->cap ? lv->cap * 2 : 16;
        netlink_link *v = realloc(lv->v, cap * sizeof *v);
        if (!v) {
            lv->nomem = true;
            return MNL_CB_OK;
        }
        lv->v = v;
        lv->cap = cap;
    }
    link_from_msg(nlh, &lv->v[lv->n++]);
    return MNL_CB_OK;
}

static struct nlmsghdr *link_dump_msg(netlink *nl)
{
    struct nlmsghdr *nlh = msg_start(nl, RTM_GETLINK, NLM_F_DUMP);
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
    ifi->ifi_family = AF_UNSPEC;
    mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
    return nlh;
}

static void link_vec_reset(void *data)
{
    ((link_vec *)data)->n = 0;
}

int netlink_link_list(netlink *nl, netlink_link **out, size_t *n, jerr *e)
{
    link_vec lv = {0};
    if (dump(nl, link_dump_msg, link_dump_cb, &lv, link_vec_reset) < 0) {
        free(lv.v);
        return jerr_sys(e, "netlink: listing the links");
    }
    if (lv.nomem) {
        free(lv.v);
        return jerr_set(e, ENOMEM, "netlink: listing the links: out of memory");
    }
    *out = lv.v;
    *n = lv.n;
    return 0;
}

static int addr_msg(netlink *nl, uint16_t type, uint16_t flags, int ifindex, netlink_addr a)
{
    struct nlmsghdr *nlh = msg_start(nl, type, flags | NLM_F_ACK);
    struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof *ifa);
    ifa->ifa_family = AF_INET;
    ifa->ifa_prefixlen = (unsigned char)a.prefix;
    ifa->ifa_scope = RT_SCOPE_UNIVERSE;
    ifa->ifa_index = (unsigned)ifindex;
    mnl_attr_put(nlh, IFA_LOCAL, sizeof a.addr, &a.addr);
    mnl_attr_put(nlh, IFA_ADDRESS, sizeof a.addr, &a.addr);
    if (type == RTM_NEWADDR && a.prefix < 31) {
        /* The subnet's broadcast address, as `ip addr add ... brd +` gives it. */
        uint32_t mask = a.prefix == 0 ? 0 : htonl(~0u << (32 - a.prefix));
        struct in_addr brd = {.s_addr = a.addr.s_addr | ~mask};
        mnl_attr_put(nlh, IFA_BROADCAST, sizeof brd, &brd);
    }
    return talk(nl, nlh, NULL, NULL);
}

int netlink_addr_add(netlink *nl, const char *name, int ifindex, netlink_addr a, jerr *e)
{
    if (addr_msg(nl, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, ifindex, a) < 0 && errno != EEXIST) {
        char s[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a.addr, s, sizeof s);
        return jerr_sys(e, "netlink: adding the address %s/%d to %s", s, a.prefix, name);
    }
    return 0;
}

int netlink_addr_del(netlink *nl, const char *name, int ifindex, netlink_addr a, jerr *e)
{
    if (addr_msg(nl, RTM_DELADDR, 0, ifindex, a) < 0) {
        char s[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a.addr, s, sizeof s);
        return jerr_sys(e, "netlink: removing the address %s/%d from %s", s, a.prefix, name);
    }
    return 0;
}

typedef struct addr_vec {
    int ifindex;
    netlink_addr *v;
    size_t n, cap;
    bool nomem;
} addr_vec;

static int addr_attr_cb(const struct nlattr *attr, void *data)
{
    const struct nlattr **tb = data;
    int type = mnl_attr_get_type(attr);
    if (type <= IFA_MAX)
        tb[type] = attr;
    return MNL_CB_OK;
}

static int addr_dump_cb(const struct nlmsghdr *nlh, void *data)
{
    addr_vec *av = data;
    if (nlh->nlmsg_type != RTM_NEWADDR)
        return MNL_CB_OK;
    const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
    if (ifa->ifa_family != AF_INET || (int)ifa->ifa_index != av->ifindex)
        return MNL_CB_OK;
    const struct nlattr *tb[IFA_MAX + 1] = {0};
    mnl_attr_parse(nlh, sizeof *ifa, addr_attr_cb, tb);
    const struct nlattr *at = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
    if (!at || mnl_attr_get_payload_len(at) != sizeof(struct in_addr))
        return MNL_CB_OK;
    if (av->n == av->cap) {
        size_t cap = av->cap ? av->cap * 2 : 4;
        netlink_addr *v = realloc(av->v, cap * sizeof *v);
        if (!v) {
            av->nomem = true;
            return MNL_CB_OK;
        }
        av->v = v;
        av->cap = cap;
    }
    netlink_addr *a = &av->v[av->n++];
    memcpy(&a->addr, mnl_attr_get_payload(at), sizeof a->addr);
    a->prefix = ifa->ifa_prefixlen;
    return MNL_CB_OK;
}

static struct nlmsghdr *addr_dump_msg(netlink *nl)
{
    struct nlmsghdr *nlh = msg_start(nl, RTM_GETADDR, NLM_F_DUMP);
    struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof *ifa);
    ifa->ifa_family = AF_INET;
    return nlh;
}

static void addr_vec_reset(void *data)
{
    ((addr_vec *)data)->n = 0;
}

int netlink_addr_list(netlink *nl, const char *name, int ifindex, netlink_addr **out, size_t *n, jerr *e)
{
    addr_vec av = {.ifindex = ifindex};
    if (dump(nl, addr_dump_msg, addr_dump_cb, &av, addr_vec_reset) < 0) {
        free(av.v);
        return jerr_sys(e, "netlink: listing the addresses of %s", name);
    }
    if (av.nomem) {
        free(av.v);
        return jerr_set(e, ENOMEM, "netlink: listing the addresses of %s: out of memory", name);
    }
    *out = av.v;
    *n = av.n;
    return 0;
}

int netlink_route_add_default(netlink *nl, const char *name, int ifindex, struct in_addr gw, jerr *e)
{
    struct nlmsghdr *nlh = msg_start(nl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
    struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof *rtm);
    rtm->rtm_family = AF_INET;
    rtm->rtm_dst_len = 0;
    rtm->rtm_table = RT_TABLE_MAIN;
    rtm->rtm_protocol = RTPROT_BOOT;
    rtm->rtm_scope = RT_SCOPE_UNIVERSE;
    rtm->rtm_type = RTN_UNICAST;
    mnl_attr_put(nlh, RTA_GATEWAY, sizeof gw, &gw);
    mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
    if (talk(nl, nlh, NULL, NULL) < 0) {
        char s[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &gw, s, sizeof s);
        return jerr_sys(e, "netlink: adding the default route via %s on %s", s, name);
    }
    return 0;
}

int netlink_tbf_set(netlink *nl, const char *name, int ifindex, uint64_t rate, uint32_t burst,
                    uint32_t limit, jerr *e)
{
    struct nlmsghdr *nlh = msg_start(nl, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK);
    struct tcmsg *tcm = mnl_nlmsg_put_extra_header(nlh, sizeof *tcm);
    tcm->tcm_family = AF_UNSPEC;
    tcm->tcm_ifindex = ifindex;
    tcm->tcm_handle = 0;
    tcm->tcm_parent = TC_H_ROOT;
    mnl_attr_put_strz(nlh, TCA_KIND, "tbf");
    struct nlattr *opts = mnl_attr_nest_start(nlh, TCA_OPTIONS);
    /* The kernel works the bucket's size in time out from TCA_TBF_BURST and the rate, so no
     * rate table and no psched ticks are computed here (linklayer ethernet: no table wanted). */
    struct tc_tbf_qopt q = {0};
    q.rate.rate = rate >= UINT32_MAX ? UINT32_MAX : (uint32_t)rate;
    q.rate.linklayer = TC_LINKLAYER_ETHERNET;
    q.limit = limit;
    mnl_attr_put(nlh, TCA_TBF_PARMS, sizeof q, &q);
    if (rate >= UINT32_MAX)
        mnl_attr_put_u64(nlh, TCA_TBF_RATE64, rate);
    mnl_attr_put_u32(nlh, TCA_TBF_BURST, burst);
    mnl_attr_nest_end(nlh, opts);
    if (talk(nl, nlh, NULL, NULL) < 0)
        return jerr_sys(e, "netlink: setting a tbf qdisc of %llu bytes/s on %s", (unsigned long long)rate, name);
    return 0;
}

int netlink_parse_cidr(const char *s, netlink_addr *a)
{
    uint32_t addr;
    int prefix;
    if (netaddr_with_prefix(s, &addr, &prefix) < 0)
        return -1;
    a->addr.s_addr = htonl(addr);
    a->prefix = prefix;
    return 0;
}
