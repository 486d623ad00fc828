/* IPv4 networks of job networks: netaddr.h. */
#include "netaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int netaddr_parse(const char *s, uint32_t *out)
{
    struct in_addr a;
    if (inet_pton(AF_INET, s, &a) != 1)
        return -1;
    *out = ntohl(a.s_addr);
    return 0;
}

void netaddr_format(uint32_t addr, char *out, size_t len)
{
    snprintf(out, len, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255, (addr >> 8) & 255, addr & 255);
}

static uint32_t mask_of(int prefix) { return prefix <= 0 ? 0 : prefix >= 32 ? 0xffffffffu : ~((1u << (32 - prefix)) - 1); }

int netaddr_with_prefix(const char *s, uint32_t *addr, int *prefix)
{
    char buf[16];
    const char *slash = s ? strchr(s, '/') : NULL;
    if (!slash || (size_t)(slash - s) >= sizeof buf)
        return -1;
    memcpy(buf, s, (size_t)(slash - s));
    buf[slash - s] = 0;
    const char *p = slash + 1;
    size_t n = strlen(p);
    if (netaddr_parse(buf, addr) < 0 || n < 1 || n > 2 || strspn(p, "0123456789") != n || (n == 2 && p[0] == '0'))
        return -1;
    *prefix = atoi(p);
    return *prefix <= 32 ? 0 : -1;
}

int netaddr_cidr_parse(const char *field, const char *s, netaddr_cidr *out, jerr *e)
{
    uint32_t a;
    int prefix;
    if (netaddr_with_prefix(s, &a, &prefix) < 0)
        return jerr_field(e, field, "%s: '%.40s' is not an IPv4 network; give ADDRESS/PREFIX (e.g. 10.10.0.0/24)", field, s);
    if (prefix < 8 || prefix > 30)
        return jerr_field(e, field, "%s: prefix /%d is outside /8../30 (a network needs room for a gateway and jobs)",
                          field, prefix);
    if (a & ~mask_of(prefix)) {
        char base[20];
        netaddr_format(a & mask_of(prefix), base, sizeof base);
        return jerr_field(e, field, "%s: '%.40s' has host bits set; did you mean %s/%d?", field, s, base, prefix);
    }
    out->base = a;
    out->prefix = prefix;
    return 0;
}

int netaddr_named_cidr_parse(const char *field, const char *s, netaddr_cidr *out, jerr *e)
{
    uint32_t a;
    int prefix;
    if (netaddr_with_prefix(s, &a, &prefix) == 0 && (prefix < NETADDR_NAMED_MIN || prefix > NETADDR_NAMED_MAX))
        return jerr_field(e, field, "%s: /%d is %s than a named network may be (/%d to /%d%s)", field, prefix,
                          prefix < NETADDR_NAMED_MIN ? "larger" : "smaller", NETADDR_NAMED_MIN, NETADDR_NAMED_MAX,
                          prefix > NETADDR_NAMED_MAX ? ": room for a gateway and jobs" : "");
    return netaddr_cidr_parse(field, s, out, e);
}

void netaddr_cidr_format(const netaddr_cidr *c, char *out, size_t len)
{
    char a[20];
    netaddr_format(c->base, a, sizeof a);
    snprintf(out, len, "%s/%d", a, c->prefix);
}

bool netaddr_cidr_contains(const netaddr_cidr *c, uint32_t addr) { return (addr & mask_of(c->prefix)) == c->base; }

bool netaddr_cidr_overlap(const netaddr_cidr *a, const netaddr_cidr *b)
{
    int p = a->prefix < b->prefix ? a->prefix : b->prefix;
    return (a->base & mask_of(p)) == (b->base & mask_of(p));
}

uint64_t netaddr_cidr_size(const netaddr_cidr *c) { return 1ull << (32 - c->prefix); }

bool netaddr_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (!n || n > NETADDR_NAME_MAX || !strchr("abcdefghijklmnopqrstuvwxyz0123456789", name[0]))
        return false;
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

void netaddr_bridge_name(const char *name, char *out, size_t len)
{
    /* a name of only a-z 0-9 _ - that fits is the bridge's own; else (long, or with a '.', which
     * joblet-net does not take in a link's name) its first characters and a hash of the whole */
    if (strlen(name) + 3 <= NETADDR_IFNAME_MAX && !strchr(name, '.')) {
        snprintf(out, len, "jb-%s", name);
        return;
    }
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    char head[7];
    snprintf(head, sizeof head, "%.6s", name);
    for (char *c = head; *c; c++)
        if (*c == '.')
            *c = '_';
    snprintf(out, len, "jb-%s%06x", head, h & 0xffffff);
}

void netaddr_veth_name(const char *job_id, char *out, size_t len)
{
    char hex[13];
    size_t n = 0;
    for (const char *c = job_id; *c && n < 12; c++)
        if (*c != '-')
            hex[n++] = *c;
    hex[n] = 0;
    snprintf(out, len, "jv%s", hex);
}

int netaddr_hostport(const char *field, const char *hp, struct sockaddr_storage *ss, socklen_t *len, jerr *e)
{
    char host[64];
    const char *port;
    memset(ss, 0, sizeof *ss);
    if (hp[0] == '[') {
        const char *end = strchr(hp, ']');
        if (!end || end[1] != ':' || (size_t)(end - hp - 1) >= sizeof host)
            return jerr_set(e, EINVAL, "%s: '%s' is not [IPv6]:PORT, e.g. [::1]:9464", field, hp);
        snprintf(host, sizeof host, "%.*s", (int)(end - hp - 1), hp + 1);
        port = end + 2;
    } else {
        const char *colon = strrchr(hp, ':');
        if (!colon)
            return jerr_set(e, EINVAL, "%s: '%s' has no port; give HOST:PORT, e.g. 127.0.0.1:9464", field, hp);
        if (memchr(hp, ':', (size_t)(colon - hp)))
            return jerr_set(e, EINVAL, "%s: '%s': put an IPv6 address in brackets, e.g. [::1]:9464", field, hp);
        if ((size_t)(colon - hp) >= sizeof host)
            return jerr_set(e, EINVAL, "%s: '%s': the host is too long", field, hp);
        snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
        port = colon + 1;
    }
    char *end;
    errno = 0;
    unsigned long p = strtoul(port, &end, 10);
    if (!*port || *end || errno || p < 1 || p > 65535 || *port == '+' || *port == '-')
        return jerr_set(e, EINVAL, "%s: '%s': the port must be a number from 1 to 65535", field, hp);
    if (!*host)
        return jerr_set(e, EINVAL, "%s: '%s' has no host; give a numeric address, e.g. 127.0.0.1:%lu "
                                   "(0.0.0.0:%lu listens on every interface)", field, hp, p, p);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)p);
        *len = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)p);
        *len = sizeof *v6;
    } else {
        return jerr_set(e, EINVAL, "%s: '%s' is not a numeric IP address (joblet does not look up "
                                   "names); use e.g. 127.0.0.1:%lu or [::1]:%lu", field, host, p, p);
    }
    return 0;
}
