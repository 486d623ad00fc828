/* IPv4 addresses and networks of job networks (docs/networks.md), pure: parsing, formatting,
 * the names of the links joblet makes, and where one job sits on a network (its address and
 * its host-side link), which the jobs' rows keep (store/db.h) and the spec carries; and a
 * listener's numeric HOST:PORT (metrics.listen). */
#ifndef JOBLET_NETADDR_H
#define JOBLET_NETADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "err.h"

/* The longest network name (rnx network create NAME): [a-z0-9][a-z0-9_.-]*. */
#define NETADDR_NAME_MAX 32
/* Link names: IFNAMSIZ less its NUL. */
#define NETADDR_IFNAME_MAX 15

/* A network's addresses: base/prefix, base with no host bits. Host byte order. */
typedef struct netaddr_cidr {
    uint32_t base;
    int prefix;
} netaddr_cidr;

/* "10.1.2.3/24" -> its address and prefix (0..32; host bits allowed: an interface's address).
 * -1 when it is not that: a dotted quad, '/', one or two digits (no sign, no leading zero). */
int netaddr_with_prefix(const char *s, uint32_t *addr, int *prefix);
/* "10.10.0.0/24" -> cidr. Refused (naming field): not a dotted quad, a prefix outside 8..30,
 * host bits set ("10.10.0.1/24": say 10.10.0.0/24). */
int netaddr_cidr_parse(const char *field, const char *s, netaddr_cidr *out, jerr *e);
/* The same for a named network's addresses (rnx network create, a workflow's {name, cidr}):
 * its prefix NETADDR_NAMED_MIN to NETADDR_NAMED_MAX, said as such whichever side it misses. */
#define NETADDR_NAMED_MIN 16
#define NETADDR_NAMED_MAX 30
int netaddr_named_cidr_parse(const char *field, const char *s, netaddr_cidr *out, jerr *e);
void netaddr_cidr_format(const netaddr_cidr *c, char *out, size_t len);
/* a.b.c.d */
void netaddr_format(uint32_t addr, char *out, size_t len);
int netaddr_parse(const char *s, uint32_t *out);
bool netaddr_cidr_contains(const netaddr_cidr *c, uint32_t addr);
bool netaddr_cidr_overlap(const netaddr_cidr *a, const netaddr_cidr *b);
/* Hosts of the network: 2^(32-prefix). */
uint64_t netaddr_cidr_size(const netaddr_cidr *c);

/* A listener's address, "127.0.0.1:9464", "[::1]:9464", "0.0.0.0:9464" (numeric: no name is
 * looked up), into a socket address; refused naming field (metrics.listen) and what is wrong. */
int netaddr_hostport(const char *field, const char *hp, struct sockaddr_storage *ss, socklen_t *len, jerr *e);

/* Whether name is a network name ([a-z0-9][a-z0-9_.-]{0,31}). */
bool netaddr_name_ok(const char *name);
/* The Linux bridge of network name: "jb-NAME" when that fits in a link name and has no '.',
 * else "jb-", its first 6 characters ('.' as '_') and 6 hex digits of a hash of the whole. */
void netaddr_bridge_name(const char *name, char *out, size_t len);
/* A job's host-side veth: "jv" and the first 12 hex digits of its id (dashes left out). */
void netaddr_veth_name(const char *job_id, char *out, size_t len);

/* Where a job sits on a network: what it was given when it started, kept in its row so a
 * restarted joblet gives the address to nobody else while the job lives. */
typedef struct netaddr_place {
    char network[NETADDR_NAME_MAX + 1]; /* "" none (network none or host) */
    uint32_t addr;                      /* the job's eth0 address */
    char host_if[NETADDR_IFNAME_MAX + 1];
} netaddr_place;

#endif
