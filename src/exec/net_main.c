/* joblet-net — the one program that changes the kernel's network state for joblet: links,
 * addresses and routes through rtnetlink (netlink.h), filtering and NAT in the nftables table
 * `inet joblet` (nft.h). joblet and the shim run it; it touches only links named jb-* (bridges)
 * and jv* (the host sides of jobs' veth pairs), and only that table and `inet joblet_flows`.
 *
 *   joblet-net job-up --netns PATH --host-if NAME --addr A.B.C.D/P --gateway G
 *                     (--bridge BR | --host-addr A.B.C.D/31) [--mtu N] [--max-bps N]
 *       A job's veth pair: NAME here, its peer made directly in the namespace at PATH as eth0.
 *       --bridge: NAME is a port of BR, up. --host-addr (isolated, point to point): NAME gets
 *       that address, up. In the job's namespace eth0 gets --addr and is up, lo is up, and the
 *       default route goes via --gateway. --max-bps (bytes/s): a tbf qdisc on NAME (what the
 *       job receives) and on eth0 inside (what it sends). On failure the pair is deleted, one
 *       line goes to stderr, exit 1. Nothing is printed on success.
 *   joblet-net apply < {"networks":[{"name","bridge","cidr","gateway"[,"owner"]}...], "isolated_cidr",
 *                       "keep_veths":[...], "prune_veths":bool, "max_flows":N}
 *       Bridges made, addressed and up; bridges of networks no longer listed removed; with
 *       prune_veths, jv* veths not in keep_veths removed; ip_forward on; the table replaced.
 *       Prints {"created":[...],"removed":[...]}.
 *   joblet-net down
 *       The table and every jb-* bridge and jv* veth removed (tests, package removal).
 *
 * JOBLET_NFT names another nft binary (tests). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/err.h"
#include "netlink.h"
#include "nft.h"

#define NET_NFT_DEFAULT "/usr/sbin/nft"
#define NET_NFT_TIMEOUT_MS 10000
#define NET_APPLY_MAX (1 << 20)   /* bytes of apply's JSON input */
#define NET_PEER_NAME "eth0"

static const char *nft_path(void)
{
    const char *p = getenv("JOBLET_NFT");
    return p && *p ? p : NET_NFT_DEFAULT;
}

static bool is_bridge_name(const char *n)
{
    return strncmp(n, "jb-", 3) == 0;
}

static bool is_veth_name(const char *n)
{
    return strncmp(n, "jv", 2) == 0;
}

/* A link name of ours: the prefix, at most 15 characters, letters, digits, '-' and '_'. */
static int check_ifname(const char *field, const char *v, const char *prefix, jerr *e)
{
    size_t len = strlen(v);
    if (strncmp(v, prefix, strlen(prefix)) != 0 || len <= strlen(prefix) || len > 15)
        return jerr_field(e, field, "%s: '%s' is not accepted: a name starting with '%s', at most 15 characters",
                          field, v, prefix);
    for (const char *p = v; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_'))
            return jerr_field(e, field, "%s: '%s' is not accepted: letters, digits, '-' and '_' only", field, v);
    return 0;
}

static uint32_t mask_of(int prefix)
{
    return prefix == 0 ? 0 : htonl(~0u << (32 - prefix));
}

/* ---- job-up ---- */

typedef struct up_args {
    const char *netns, *host_if, *bridge;
    netlink_addr addr, host_addr;
    bool has_host_addr;
    struct in_addr gateway;
    int mtu;
    unsigned long long max_bps;
} up_args;

static int parse_num(const char *field, const char *v, unsigned long long max, unsigned long long *out, jerr *e)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!*v || *end || errno || n == 0 || n > max || *v == '-')
        return jerr_field(e, field, "%s: '%s' is not accepted: a whole number from 1 to %llu", field, v, max);
    *out = n;
    return 0;
}

static int parse_up(int argc, char **argv, up_args *a, jerr *e)
{
    const char *addr = NULL, *gw = NULL, *host_addr = NULL;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        if (i + 1 >= argc)
            return jerr_field(e, k, "%s needs a value", k);
        const char *v = argv[++i];
        unsigned long long n;
        if (!strcmp(k, "--netns"))
            a->netns = v;
        else if (!strcmp(k, "--host-if"))
            a->host_if = v;
        else if (!strcmp(k, "--addr"))
            addr = v;
        else if (!strcmp(k, "--gateway"))
            gw = v;
        else if (!strcmp(k, "--bridge"))
            a->bridge = v;
        else if (!strcmp(k, "--host-addr"))
            host_addr = v;
        else if (!strcmp(k, "--mtu")) {
            if (parse_num(k, v, 65535, &n, e) < 0 || (n < 68 && jerr_field(e, k, "--mtu: at least 68") < 0))
                return -1;
            a->mtu = (int)n;
        } else if (!strcmp(k, "--max-bps")) {
            if (parse_num(k, v, 1ull << 40, &n, e) < 0)
                return -1;
            a->max_bps = n;
        } else
            return jerr_field(e, k, "unknown option %s: accepted are --netns, --host-if, --addr, --gateway, "
                                    "--bridge, --host-addr, --mtu, --max-bps", k);
    }
    if (!a->netns || !a->host_if || !addr || !gw)
        return jerr_field(e, "", "job-up needs --netns, --host-if, --addr and --gateway");
    if (check_ifname("--host-if", a->host_if, "jv", e) < 0)
        return -1;
    if (netlink_parse_cidr(addr, &a->addr) < 0 || a->addr.prefix == 0 || a->addr.prefix > 31)
        return jerr_field(e, "--addr", "--addr: '%s' is not accepted: an IPv4 address with a prefix 1..31 (A.B.C.D/P)", addr);
    if (inet_pton(AF_INET, gw, &a->gateway) != 1)
        return jerr_field(e, "--gateway", "--gateway: '%s' is not accepted: an IPv4 address", gw);
    if ((a->bridge != NULL) == (host_addr != NULL))
        return jerr_field(e, "--bridge", "job-up needs exactly one of --bridge and --host-addr");
    if (a->bridge && check_ifname("--bridge", a->bridge, "jb-", e) < 0)
        return -1;
    if (host_addr) {
        if (netlink_parse_cidr(host_addr, &a->host_addr) < 0 || a->host_addr.prefix == 0)
            return jerr_field(e, "--host-addr", "--host-addr: '%s' is not accepted: an IPv4 address with a prefix (A.B.C.D/31)",
                              host_addr);
        a->has_host_addr = true;
    }
    return 0;
}

/* tbf on both ends: the host side's egress is what the job receives, eth0's (inside) what it
 * sends. The bucket holds 20 ms of the rate (at least 16 full frames), the queue twice that. */
static int shape(netlink *host, int host_idx, netlink *job, int eth0_idx, const up_args *a, jerr *e)
{
    unsigned long long burst = a->max_bps / 50;
    if (burst < 16 * 1514)
        burst = 16 * 1514;
    if (burst > UINT32_MAX / 2)
        burst = UINT32_MAX / 2;
    if (netlink_tbf_set(host, a->host_if, host_idx, a->max_bps, (uint32_t)burst, (uint32_t)(burst * 2), e) < 0)
        return -1;
    return netlink_tbf_set(job, NET_PEER_NAME, eth0_idx, a->max_bps, (uint32_t)burst, (uint32_t)(burst * 2), e);
}

static int job_up(const up_args *a, jerr *e)
{
    int nsfd = open(a->netns, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0)
        return jerr_sys(e, "job-up: opening the network namespace %s", a->netns);
    netlink *host = netlink_open(e);
    if (!host) {
        close(nsfd);
        return -1;
    }
    netlink *job = NULL;
    int rc = -1;
    if (netlink_veth_create(host, a->host_if, NET_PEER_NAME, nsfd, a->mtu, e) < 0) {
        if (e->code == EEXIST)
            jerr_set(e, EEXIST, "netlink: creating the veth pair %s: the name %s is taken here, or %s in %s",
                     a->host_if, a->host_if, NET_PEER_NAME, a->netns);
        close(nsfd);
        netlink_close(host);
        return -1;
    }
    close(nsfd);

    int host_idx = netlink_link_index(host, a->host_if, e);
    if (host_idx < 0)
        goto out;
    if (a->bridge) {
        int br = netlink_link_index(host, a->bridge, e);
        if (br < 0 || netlink_link_set_master(host, a->host_if, host_idx, br, e) < 0)
            goto out;
    } else if (netlink_addr_add(host, a->host_if, host_idx, a->host_addr, e) < 0) {
        goto out;
    }
    if (netlink_link_set_up(host, a->host_if, host_idx, e) < 0)
        goto out;

    job = netlink_open_in(a->netns, e);
    if (!job)
        goto out;
    int eth0 = netlink_link_index(job, NET_PEER_NAME, e);
    int lo = eth0 < 0 ? -1 : netlink_link_index(job, "lo", e);
    if (eth0 < 0 || lo < 0 || netlink_addr_add(job, NET_PEER_NAME, eth0, a->addr, e) < 0 ||
        netlink_link_set_up(job, NET_PEER_NAME, eth0, e) < 0 || netlink_link_set_up(job, "lo", lo, e) < 0 ||
        netlink_route_add_default(job, NET_PEER_NAME, eth0, a->gateway, e) < 0)
        goto out;
    if (a->max_bps && shape(host, host_idx, job, eth0, a, e) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0) {
        /* The pair goes with its host side, eth0 inside included. */
        jerr ignored = {0};
        netlink_link_del(host, a->host_if, &ignored);
    }
    netlink_close(job);
    netlink_close(host);
    return rc;
}

/* ---- apply ---- */

typedef struct apply_net {
    const char *name;
    nft_net n;
    netlink_addr gateway;   /* the bridge's own address: gateway/prefix */
} apply_net;

typedef struct apply_req {
    apply_net *nets;
    size_t n;
    bool isolated;
    nft_cidr iso;
    uint32_t max_flows; /* connections one job's address has at once (nft_render_flows); 0 none */
    json_t *keep;      /* array of strings */
    bool prune;
} apply_req;

static int parse_cidr_field(const char *field, const char *v, nft_cidr *out, netlink_addr *raw, jerr *e)
{
    netlink_addr a;
    if (!v || netlink_parse_cidr(v, &a) < 0 || a.prefix < 8 || a.prefix > 30)
        return jerr_field(e, field, "%s: '%s' is not accepted: an IPv4 subnet A.B.C.D/P with P from 8 to 30", field,
                          v ? v : "(not a string)");
    a.addr.s_addr &= mask_of(a.prefix);
    inet_ntop(AF_INET, &a.addr, out->addr, sizeof out->addr);
    out->prefix = a.prefix;
    if (raw)
        *raw = a;
    return 0;
}

static int parse_apply(json_t *root, apply_req *r, jerr *e)
{
    if (!json_is_object(root))
        return jerr_field(e, "", "apply reads a JSON object on stdin");
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "networks") && strcmp(key, "isolated_cidr") && strcmp(key, "keep_veths") &&
            strcmp(key, "prune_veths") && strcmp(key, "max_flows"))
            return jerr_field(e, key, "unknown field '%s': accepted are networks, isolated_cidr, keep_veths, prune_veths, "
                                      "max_flows", key);
    }
    json_t *nets = json_object_get(root, "networks");
    if (nets && !json_is_array(nets))
        return jerr_field(e, "networks", "networks: a list of {name, bridge, cidr, gateway[, owner]}");
    r->n = json_array_size(nets);
    r->nets = calloc(r->n ? r->n : 1, sizeof *r->nets);
    if (!r->nets)
        return jerr_sys(e, "apply: allocating");
    for (size_t i = 0; i < r->n; i++) {
        json_t *o = json_array_get(nets, i);
        char f[64];
        apply_net *an = &r->nets[i];
        const char *name = json_string_value(json_object_get(o, "name"));
        const char *br = json_string_value(json_object_get(o, "bridge"));
        const char *cidr = json_string_value(json_object_get(o, "cidr"));
        const char *gw = json_string_value(json_object_get(o, "gateway"));
        snprintf(f, sizeof f, "networks[%zu].name", i);
        if (!name || !*name)
            return jerr_field(e, f, "%s: a network's name (a string)", f);
        an->name = name;
        snprintf(f, sizeof f, "networks[%zu].bridge", i);
        if (!br)
            return jerr_field(e, f, "%s: the bridge's name (a string starting with 'jb-')", f);
        if (check_ifname(f, br, "jb-", e) < 0)
            return -1;
        snprintf(an->n.bridge, sizeof an->n.bridge, "%s", br);
        snprintf(f, sizeof f, "networks[%zu].cidr", i);
        netlink_addr net;
        if (parse_cidr_field(f, cidr, &an->n.cidr, &net, e) < 0)
            return -1;
        snprintf(f, sizeof f, "networks[%zu].gateway", i);
        uint32_t m = mask_of(net.prefix);
        if (!gw || inet_pton(AF_INET, gw, &an->gateway.addr) != 1 ||
            (an->gateway.addr.s_addr & m) != net.addr.s_addr || an->gateway.addr.s_addr == net.addr.s_addr)
            return jerr_field(e, f, "%s: '%s' is not accepted: an IPv4 address inside %s/%d other than the network's own",
                              f, gw ? gw : "(not a string)", an->n.cidr.addr, an->n.cidr.prefix);
        an->gateway.prefix = net.prefix;
        /* a named network's maker (nft.h: their sockets on the host may connect into it) */
        json_t *owner = json_object_get(o, "owner");
        snprintf(f, sizeof f, "networks[%zu].owner", i);
        if (owner && (!json_is_integer(owner) || json_integer_value(owner) < 0 ||
                      json_integer_value(owner) > (json_int_t)UINT32_MAX - 1))
            return jerr_field(e, f, "%s: the uid of the network's owner (a whole number)", f);
        an->n.has_owner = owner != NULL;
        an->n.owner = owner ? (uint32_t)json_integer_value(owner) : 0;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(r->nets[j].n.bridge, an->n.bridge) || !strcmp(r->nets[j].name, an->name))
                return jerr_field(e, f, "networks[%zu]: the name or bridge of networks[%zu] again", i, j);
    }
    json_t *iso = json_object_get(root, "isolated_cidr");
    if (iso && !json_is_null(iso)) {
        if (parse_cidr_field("isolated_cidr", json_string_value(iso), &r->iso, NULL, e) < 0)
            return -1;
        r->isolated = true;
    }
    json_t *mf = json_object_get(root, "max_flows");
    if (mf && (!json_is_integer(mf) || json_integer_value(mf) < 0 || json_integer_value(mf) > 1000000))
        return jerr_field(e, "max_flows", "max_flows: the connections one job's address may have at once, 0 to 1000000");
    r->max_flows = mf ? (uint32_t)json_integer_value(mf) : 0;
    r->keep = json_object_get(root, "keep_veths");
    if (r->keep && !json_is_array(r->keep))
        return jerr_field(e, "keep_veths", "keep_veths: a list of link names");
    for (size_t i = 0; i < json_array_size(r->keep); i++)
        if (!json_is_string(json_array_get(r->keep, i)))
            return jerr_field(e, "keep_veths", "keep_veths[%zu]: a link name (a string)", i);
    json_t *prune = json_object_get(root, "prune_veths");
    if (prune && !json_is_boolean(prune))
        return jerr_field(e, "prune_veths", "prune_veths: true or false");
    r->prune = json_is_true(prune);
    return 0;
}

static bool kept(const apply_req *r, const char *name)
{
    for (size_t i = 0; i < json_array_size(r->keep); i++)
        if (!strcmp(json_string_value(json_array_get(r->keep, i)), name))
            return true;
    return false;
}

static const netlink_link *find_link(const netlink_link *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return &v[i];
    return NULL;
}

/* One bridge as its network says: made when missing, gateway/prefix its only IPv4 address, up. */
static int ensure_bridge(netlink *nl, const apply_net *an, const netlink_link *have, json_t *created, jerr *e)
{
    if (!have) {
        jerr ce = {0};
        if (netlink_bridge_create(nl, an->n.bridge, &ce) == 0)
            json_array_append_new(created, json_string(an->n.bridge));
        else if (ce.code != EEXIST) { /* (made since the dump, or missed by one that never held still) */
            *e = ce;
            return -1;
        }
    }
    netlink_link now;
    int idx = netlink_link_get(nl, an->n.bridge, &now, e);
    if (idx < 0)
        return -1;
    if (strcmp(now.kind, "bridge") != 0) /* (the dump's, or one made since it or missed by it) */
        return jerr_set(e, EEXIST, "apply: network %s: the link %s exists and is a %s, not a bridge", an->name,
                        an->n.bridge, now.kind[0] ? now.kind : "device of no kind");
    netlink_addr *addrs = NULL;
    size_t na = 0;
    if (netlink_addr_list(nl, an->n.bridge, idx, &addrs, &na, e) < 0)
        return -1;
    bool present = false;
    for (size_t i = 0; i < na; i++) {
        if (addrs[i].addr.s_addr == an->gateway.addr.s_addr && addrs[i].prefix == an->gateway.prefix) {
            present = true;
        } else if (netlink_addr_del(nl, an->n.bridge, idx, addrs[i], e) < 0) {
            if (e->code == EADDRNOTAVAIL) { /* (gone already: listed twice by a dump that never held still) */
                *e = (jerr){0};
                continue;
            }
            free(addrs);
            return -1;
        }
    }
    free(addrs);
    jerr ae = {0};
    if (!present && netlink_addr_add(nl, an->n.bridge, idx, an->gateway, &ae) < 0 &&
        ae.code != EEXIST) { /* (there after all: a dump that never held still missed it) */
        *e = ae;
        return -1;
    }
    return netlink_link_set_up(nl, an->n.bridge, idx, e);
}

static int del_link(netlink *nl, const char *name, json_t *removed, jerr *e)
{
    if (netlink_link_del(nl, name, e) < 0) {
        if (e->code == ENODEV)   /* gone meanwhile (a veth whose peer's namespace ended) */
            return 0;
        return -1;
    }
    json_array_append_new(removed, json_string(name));
    return 0;
}

/* Routing between interfaces, host-wide, as Docker and podman switch it on: the jobs' packets
 * must be forwarded to reach anything beyond their bridge or veth. */
static int enable_forwarding(jerr *e)
{
    int fd = open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return jerr_sys(e, "apply: opening /proc/sys/net/ipv4/ip_forward");
    ssize_t n = write(fd, "1", 1);
    int saved = errno;
    close(fd);
    errno = saved;
    if (n != 1)
        return jerr_sys(e, "apply: writing 1 to /proc/sys/net/ipv4/ip_forward");
    return 0;
}

static json_t *read_stdin(jerr *e)
{
    char *buf = malloc(NET_APPLY_MAX + 1);
    size_t len = 0;
    if (!buf) {
        jerr_sys(e, "apply: allocating");
        return NULL;
    }
    for (;;) {
        ssize_t n = read(0, buf + len, NET_APPLY_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            jerr_sys(e, "apply: reading stdin");
            return NULL;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > NET_APPLY_MAX) {
            free(buf);
            jerr_field(e, "", "apply: the input is over %d bytes", NET_APPLY_MAX);
            return NULL;
        }
    }
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    free(buf);
    if (!root)
        jerr_field(e, "", "apply: the input is not JSON: %s (line %d)", je.text, je.line);
    return root;
}

static int apply(jerr *e)
{
    json_t *root = read_stdin(e);
    if (!root)
        return -1;
    apply_req r = {0};
    int rc = -1;
    netlink *nl = NULL;
    netlink_link *links = NULL;
    size_t nl_n = 0;
    json_t *created = json_array(), *removed = json_array();
    nft_net *nn = NULL;
    json_t *batch = NULL;
    if (parse_apply(root, &r, e) < 0)
        goto out;

    /* The filter first: no bridge is up before the rules that fence it in are. */
    nn = calloc(r.n ? r.n : 1, sizeof *nn);
    if (!nn) {
        jerr_sys(e, "apply: allocating");
        goto out;
    }
    for (size_t i = 0; i < r.n; i++)
        nn[i] = r.nets[i].n;
    nft_plan plan = {.nets = nn, .n = r.n, .isolated = r.isolated, .iso = r.iso};
    batch = nft_render(&plan);
    if (!batch) {
        jerr_set(e, ENOMEM, "apply: rendering the nftables batch: out of memory");
        goto out;
    }
    char flows[512];
    if (nft_run(nft_path(), batch, NET_NFT_TIMEOUT_MS, e) < 0)
        goto out;
    if (nft_render_flows(r.max_flows, flows, sizeof flows) < 0) {
        jerr_set(e, ENOMEM, "apply: rendering the connections' bound: too long");
        goto out;
    }
    if (nft_run_text(nft_path(), flows, NET_NFT_TIMEOUT_MS, e) < 0)
        goto out;

    if (!(nl = netlink_open(e)) || netlink_link_list(nl, &links, &nl_n, e) < 0)
        goto out;
    for (size_t i = 0; i < r.n; i++)
        if (ensure_bridge(nl, &r.nets[i], find_link(links, nl_n, r.nets[i].n.bridge), created, e) < 0)
            goto out;
    for (size_t i = 0; i < nl_n; i++) {
        const netlink_link *l = &links[i];
        bool listed = false;
        for (size_t j = 0; j < r.n; j++)
            listed |= !strcmp(r.nets[j].n.bridge, l->name);
        if (is_bridge_name(l->name) && !strcmp(l->kind, "bridge") && !listed && del_link(nl, l->name, removed, e) < 0)
            goto out;
        if (r.prune && is_veth_name(l->name) && !strcmp(l->kind, "veth") && !kept(&r, l->name) &&
            del_link(nl, l->name, removed, e) < 0)
            goto out;
    }
    if ((r.n > 0 || r.isolated) && enable_forwarding(e) < 0)
        goto out;

    json_t *summary = json_pack("{s:O,s:O}", "created", created, "removed", removed);
    char *text = summary ? json_dumps(summary, JSON_COMPACT) : NULL;
    json_decref(summary);
    if (!text) {
        jerr_set(e, ENOMEM, "apply: rendering the summary: out of memory");
        goto out;
    }
    printf("%s\n", text);
    free(text);
    rc = 0;
out:
    json_decref(batch);
    free(nn);
    free(links);
    netlink_close(nl);
    json_decref(created);
    json_decref(removed);
    free(r.nets);
    json_decref(root);
    return rc;
}

/* ---- down ---- */

static int down(jerr *e)
{
    json_t *batch = nft_render_delete();
    if (!batch)
        return jerr_set(e, ENOMEM, "down: rendering the nftables batch: out of memory");
    int rc = nft_run(nft_path(), batch, NET_NFT_TIMEOUT_MS, e);
    json_decref(batch);
    if (rc < 0)
        return -1;
    netlink *nl = netlink_open(e);
    netlink_link *links = NULL;
    size_t n = 0;
    if (!nl || netlink_link_list(nl, &links, &n, e) < 0) {
        netlink_close(nl);
        return -1;
    }
    json_t *removed = json_array();
    for (size_t i = 0; i < n && rc == 0; i++)
        if ((is_bridge_name(links[i].name) && !strcmp(links[i].kind, "bridge")) ||
            (is_veth_name(links[i].name) && !strcmp(links[i].kind, "veth")))
            rc = del_link(nl, links[i].name, removed, e);
    json_decref(removed);
    free(links);
    netlink_close(nl);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: joblet-net job-up --netns PATH --host-if NAME --addr A.B.C.D/P --gateway G "
                    "(--bridge BR | --host-addr A.B.C.D/31) [--mtu N] [--max-bps N]\n"
                    "       joblet-net apply < JSON\n"
                    "       joblet-net down\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    jerr e = {0};
    int rc;
    if (!strcmp(argv[1], "job-up")) {
        up_args a = {0};
        rc = parse_up(argc, argv, &a, &e);
        if (rc == 0)
            rc = job_up(&a, &e);
    } else if (!strcmp(argv[1], "apply") && argc == 2) {
        rc = apply(&e);
    } else if (!strcmp(argv[1], "down") && argc == 2) {
        rc = down(&e);
    } else {
        return usage();
    }
    if (rc < 0) {
        fprintf(stderr, "joblet-net %s: %s\n", argv[1], e.msg);
        return 1;
    }
    return 0;
}
