/* Thin typed wrappers over libmnl for the rtnetlink requests joblet-net makes (links,
 * addresses, routes, qdiscs). A netlink handle talks to the network namespace it was opened in:
 * netlink_open_in opens one in another namespace (setns there and back on this thread) and
 * every request made with it acts in that namespace.
 * Every failing call fills the jerr with the operation and the link it was about, and returns -1. */
#ifndef JOBLET_NETLINK_H
#define JOBLET_NETLINK_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

typedef struct netlink netlink;

/* One link of a dump: its name, its kind ("veth", "bridge", "" for none) and its index. */
typedef struct netlink_link {
    char name[16];
    char kind[16];
    int ifindex;
} netlink_link;

/* An IPv4 address with its prefix length. */
typedef struct netlink_addr {
    struct in_addr addr;
    int prefix;
} netlink_addr;

/* A handle on the caller's own network namespace. */
netlink *netlink_open(jerr *e);
/* A handle on the namespace at nspath (/proc/PID/ns/net, /proc/PID/fd/N, /run/netns/NAME). */
netlink *netlink_open_in(const char *nspath, jerr *e);
void netlink_close(netlink *nl);

/* A veth pair: host_name here (mtu when > 0), its peer made directly in the namespace whose
 * fd is peer_netns_fd and named peer_name there. */
int netlink_veth_create(netlink *nl, const char *host_name, const char *peer_name, int peer_netns_fd,
                        int mtu, jerr *e);
/* A bridge named name (down until netlink_link_set_up). */
int netlink_bridge_create(netlink *nl, const char *name, jerr *e);
/* The index of the link called name; -1 with e->code ENODEV when there is none. */
int netlink_link_index(netlink *nl, const char *name, jerr *e);
/* The same, and the link as a dump shows it (its kind) in *out. */
int netlink_link_get(netlink *nl, const char *name, netlink_link *out, jerr *e);
int netlink_link_set_master(netlink *nl, const char *name, int ifindex, int master_ifindex, jerr *e);
int netlink_link_set_up(netlink *nl, const char *name, int ifindex, jerr *e);
/* Deletes the link called name (a veth's peer goes with it); -1 with e->code ENODEV when there
 * is none. */
int netlink_link_del(netlink *nl, const char *name, jerr *e);
/* Every link of the namespace, in a malloc'd array (*out, *n); free() it. */
int netlink_link_list(netlink *nl, netlink_link **out, size_t *n, jerr *e);

/* Adds a.addr/a.prefix to the link; EEXIST when it is there already counts as done. */
int netlink_addr_add(netlink *nl, const char *name, int ifindex, netlink_addr a, jerr *e);
int netlink_addr_del(netlink *nl, const char *name, int ifindex, netlink_addr a, jerr *e);
/* The IPv4 addresses of one link, in a malloc'd array; free() it. */
int netlink_addr_list(netlink *nl, const char *name, int ifindex, netlink_addr **out, size_t *n, jerr *e);
/* The default route of the main table via gw, out of the link ifindex. */
int netlink_route_add_default(netlink *nl, const char *name, int ifindex, struct in_addr gw, jerr *e);

/* A tbf qdisc as the link's root qdisc: its egress bounded to rate bytes/s, with a burst of
 * burst bytes and at most limit bytes queued. */
int netlink_tbf_set(netlink *nl, const char *name, int ifindex, uint64_t rate, uint32_t burst,
                    uint32_t limit, jerr *e);

/* "10.1.2.3/24" → a; -1 when it is not an IPv4 address with a prefix 0..32. */
int netlink_parse_cidr(const char *s, netlink_addr *a);

#endif
