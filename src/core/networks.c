/* Job networks: networks.h. */
#include "networks.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../store/db.h"
#include "arrays.h"
#include "state.h"

/* The built-in ones, then named ones; at most NETWORKS_MAX in all. */
#define NETWORKS_MAX 1024
/* joblet-net apply: bridges and the nftables table (a few ms; the bound is for a hung kernel) */
#define APPLY_TIMEOUT_MS 20000

static network *nets[NETWORKS_MAX];
static size_t nnets;
static bool available;
static char why_not[512];
static netaddr_cidr user_pool; /* network.user_pool (AUTHZ_NETWORK_ADDRESSES) */
/* A user who is not an admin holds at most this fraction of network.user_pool's addresses. */
#define NETWORKS_POOL_SHARES 16
static char helper[600];
static char resolv_path[700];
static char dir[600]; /* <state>/networks */

bool networks_available(const char **why)
{
    if (why)
        *why = why_not;
    return available;
}

const network *const *networks_all(size_t *n)
{
    *n = nnets;
    return (const network *const *)nets;
}

static network *find(const char *name)
{
    for (size_t i = 0; i < nnets; i++)
        if (!strcmp(nets[i]->name, name))
            return nets[i];
    return NULL;
}

bool networks_visible(const network *n, const caller *c)
{
    return n->builtin || authz_may_on(c, AUTHZ_OTHERS_NETWORKS, n->owner_uid);
}

static bool is_isolated(const network *n) { return !n->bridge[0]; }

/* s (allocated) with fmt's text appended; s NULL: a new string */
static char *cat(char *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *cat(char *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    size_t have = s ? strlen(s) : 0;
    s = xrealloc(s, have + (size_t)(n < 0 ? 0 : n) + 1);
    s[have] = 0;
    va_start(ap, fmt);
    if (n > 0)
        vsnprintf(s + have, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* --- addresses: one bit per address of the network ------------------------------------ */

static bool bit(const network *n, uint32_t off) { return n->used[off >> 3] & (1u << (off & 7)); }
static void set_bit(network *n, uint32_t off, bool on)
{
    if (on)
        n->used[off >> 3] |= (uint8_t)(1u << (off & 7));
    else
        n->used[off >> 3] &= (uint8_t)~(1u << (off & 7));
}

static network_hosts *hosts_new(network *n, uid_t owner_uid);

static network *net_new(const char *name, const netaddr_cidr *cidr, bool isolated, bool builtin)
{
    network *n = xcalloc(1, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->cidr = *cidr;
    n->builtin = builtin;
    uint64_t size = netaddr_cidr_size(cidr);
    n->used = xcalloc((size_t)((size + 7) / 8), 1);
    if (!isolated) {
        netaddr_bridge_name(name, n->bridge, sizeof n->bridge);
        n->gateway = cidr->base + 1;
        /* the network's own address, its gateway (the bridge) and its broadcast */
        set_bit(n, 0, true);
        set_bit(n, 1, true);
        set_bit(n, (uint32_t)(size - 1), true);
    }
    /* where the search for a free address starts: anywhere, drawn afresh at each start of
     * joblet, which keeps no cursor across a restart: from the first address each time, an address
     * given back just before the restart would be given again at once (a peer's connection, an ARP
     * cache, a DNS answer would still name the job that had it) */
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
        r = (uint32_t)now_ms();
    n->cursor = size > 4 ? 2 + (uint32_t)(r % (size - 3)) : 2;
    if (!isolated && !builtin)
        hosts_new(n, 0); /* a named network's one file, there from its start (bridge's: per owner) */
    return n;
}

static void hosts_free(network_hosts *h);

static void net_free(network *n)
{
    if (!n)
        return;
    for (uint32_t i = 0; i < n->nhosts; i++)
        hosts_free(n->hosts[i]);
    free(n->hosts);
    free(n->used);
    free(n->members);
    free(n);
}

/* The next free address (isolated: the next free pair, host side first) from the cursor on. */
static int take(network *n, uint32_t *off)
{
    uint32_t size = (uint32_t)netaddr_cidr_size(&n->cidr);
    uint32_t step = is_isolated(n) ? 2 : 1;
    for (uint32_t k = 0; k < size; k += step) {
        uint32_t o = (n->cursor + k) % size;
        if (is_isolated(n))
            o &= ~1u;
        if (bit(n, o) || (is_isolated(n) && bit(n, o + 1)))
            continue;
        set_bit(n, o, true);
        if (is_isolated(n))
            set_bit(n, o + 1, true);
        n->cursor = (o + step) % size;
        *off = is_isolated(n) ? o + 1 : o; /* the job's: the second of the pair */
        return 0;
    }
    return -1;
}

static void give_back(network *n, uint32_t addr)
{
    uint32_t off = addr - n->cidr.base;
    if (!netaddr_cidr_contains(&n->cidr, addr))
        return;
    if (is_isolated(n)) {
        set_bit(n, off & ~1u, false);
        set_bit(n, off | 1u, false);
    } else if (off > 1 && off < netaddr_cidr_size(&n->cidr) - 1) {
        set_bit(n, off, false);
    }
}

/* j appended to a list of jobs (members, n of them, room for cap); out of it. */
static void list_add(job ***members, uint32_t *n, uint32_t *cap, job *j)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        *members = xrealloc(*members, *cap * sizeof **members);
    }
    (*members)[(*n)++] = j;
}

static bool list_remove(job **members, uint32_t *n, const job *j)
{
    for (uint32_t i = 0; i < *n; i++)
        if (members[i] == j) {
            members[i] = members[--*n];
            return true;
        }
    return false;
}

static void hosts_join(network *n, job *j);
static void hosts_leave(network *n, const job *j);

static void join(network *n, job *j)
{
    list_add(&n->members, &n->njobs, &n->cap, j);
    hosts_join(n, j);
}

static void leave(network *n, const job *j)
{
    if (list_remove(n->members, &n->njobs, j))
        hosts_leave(n, j);
}

/* --- hosts files ------------------------------------------------------------------------ */

/* One hosts file: the jobs it lists, by hostname, name and id. A named network has one, of all
 * its jobs (its owner's, and those of roles allowed AUTHZ_OTHERS_NETWORKS). bridge, every user's,
 * has one per owner with jobs on it, of that owner's jobs only, made with the owner's first job
 * there and forgotten (its file listing none) with their last: names are scoped to their owner (a job of another user's
 * named redis never stands for redis in this owner's jobs, which find their own redis, or DNS's),
 * and no job sees another user's job ids, as on Docker's default bridge, where containers find
 * each other by address only. */
struct network_hosts {
    network *net;
    uid_t owner_uid; /* bridge's: whose jobs; a named network's: 0, unused */
    uint32_t njobs, cap;
    job **members;
    char path[760];
    loop_task later; /* its rewrite after jobs came or went: once, at the next turn */
};

/* Whether a network's hosts files are one per owner: bridge's (the built-in bridge network). */
static bool per_owner(const network *n) { return n->builtin && !is_isolated(n); }

static void on_hosts_later(loop_task *t);

static network_hosts *hosts_new(network *n, uid_t owner_uid)
{
    network_hosts *h = xcalloc(1, sizeof *h);
    h->net = n;
    h->owner_uid = owner_uid;
    if (per_owner(n))
        snprintf(h->path, sizeof h->path, "%s/%s.owners/%u.hosts", dir, n->name, (unsigned)owner_uid);
    else
        snprintf(h->path, sizeof h->path, "%s/%s.hosts", dir, n->name);
    h->later.fn = on_hosts_later;
    h->later.data = h;
    if (n->nhosts == n->hosts_cap) {
        n->hosts_cap = n->hosts_cap ? n->hosts_cap * 2 : 4;
        n->hosts = xrealloc(n->hosts, n->hosts_cap * sizeof *n->hosts);
    }
    n->hosts[n->nhosts++] = h;
    return h;
}

static void hosts_free(network_hosts *h)
{
    loop_later_cancel(&h->later);
    free(h->members);
    free(h);
}

/* The hosts file that lists j (bridge: its owner's), made when make; NULL when there is none.
 * A look through bridge's owners with jobs on it: it grows with those, not with the jobs. */
static network_hosts *hosts_of(network *n, uid_t owner_uid, bool make)
{
    if (is_isolated(n))
        return NULL;
    if (!per_owner(n))
        return n->nhosts ? n->hosts[0] : make ? hosts_new(n, 0) : NULL;
    for (uint32_t i = 0; i < n->nhosts; i++)
        if (n->hosts[i]->owner_uid == owner_uid)
            return n->hosts[i];
    return make ? hosts_new(n, owner_uid) : NULL;
}

/* Whether a job's name may stand in a hosts file: letters, digits, '-', '.', '_' only, and none
 * that would pass for another: localhost and ip6-*, a job's hostname (job-<8 hex>), an id (36 of
 * hex and dashes). */
static bool host_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 63 || s[0] == '-' || s[0] == '.' ||
        strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") != n)
        return false;
    if (!strcasecmp(s, "localhost") || !strncasecmp(s, "ip6-", 4) ||
        (n == 36 && strspn(s, "0123456789abcdefABCDEF-") == n))
        return false;
    return !(n == 12 && !strncasecmp(s, "job-", 4) && strspn(s + 4, "0123456789abcdefABCDEF") == 8);
}

/* Members' positions by their names (case folded), for listed_names. */
static int by_name(const void *a, const void *b, void *arg)
{
    job *const *m = arg;
    return strcasecmp(m[*(const uint32_t *)a]->name, m[*(const uint32_t *)b]->name);
}

/* Which of a hosts file's jobs stand under their name in it: listed[i] for members[i] (freed by
 * the caller). An acceptable name no job of another owner in the file also has: on a named
 * network an admin's job may join (AUTHZ_OTHERS_NETWORKS), it cannot take the name the owner's
 * job is found by (it is then nobody's). bridge's files are one owner's each, where a name,
 * one with a dot too (a domain: pypi.org), stands as on that owner's named network: it decides
 * what that owner's jobs find, nobody else's. Sorted once: n log n for a file of n jobs. */
static bool *listed_names(const network_hosts *h)
{
    bool *listed = xcalloc(h->njobs + 1, sizeof *listed);
    uint32_t *at = xcalloc(h->njobs + 1, sizeof *at), k = 0;
    for (uint32_t i = 0; i < h->njobs; i++)
        if (h->members[i]->name && host_name_ok(h->members[i]->name))
            at[k++] = i;
    qsort_r(at, k, sizeof *at, by_name, h->members);
    for (uint32_t a = 0, b; a < k; a = b) {
        const job *first = h->members[at[a]];
        bool one_owner = true;
        for (b = a + 1; b < k && !strcasecmp(h->members[at[b]]->name, first->name); b++)
            one_owner = one_owner && h->members[at[b]]->owner_uid == first->owner_uid;
        for (uint32_t m = a; m < b; m++)
            listed[at[m]] = one_owner;
    }
    free(at);
    return listed;
}

/* The file's jobs, one line each: address, hostname (job-<8 hex>), its name when it is one, its
 * id. Rewritten in place (the jobs bind this very file: a rename would leave them the old one),
 * longest content first then truncated, so a reader never sees it empty. */
static void hosts_write(const network_hosts *h)
{
    size_t cap = 4096, len = 0;
    char *buf = xmalloc(cap), whose[40] = "";
    if (per_owner(h->net) && h->owner_uid != (uid_t)-1)
        snprintf(whose, sizeof whose, " (uid %u's jobs only)", (unsigned)h->owner_uid);
    len += (size_t)snprintf(buf, cap,
                            "# joblet network %s%s: its jobs by name and id, kept current by joblet\n"
                            "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
                            h->net->name, whose);
    bool *listed = listed_names(h);
    for (uint32_t i = 0; i < h->njobs; i++) {
        const job *j = h->members[i];
        char addr[20], line[300];
        netaddr_format(j->net.addr, addr, sizeof addr);
        const char *name = listed[i] ? j->name : NULL;
        int k = snprintf(line, sizeof line, "%s\tjob-%.8s%s%s %s\n", addr, j->id, name ? " " : "", name ? name : "", j->id);
        if (k < 0 || (size_t)k >= sizeof line)
            continue;
        if (len + (size_t)k + 1 > cap) {
            cap = (len + (size_t)k + 1) * 2;
            buf = xrealloc(buf, cap);
        }
        memcpy(buf + len, line, (size_t)k);
        len += (size_t)k;
    }
    free(listed);
    int fd = open(h->path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || pwrite(fd, buf, len, 0) != (ssize_t)len || ftruncate(fd, (off_t)len) < 0)
        log_warn("network %s: cannot write %s: %s", h->net->name, h->path, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(buf);
}

/* A hosts file after a job came or went: rewritten once at the next loop turn, however many
 * came and went in this one (a rewrite is the file's every job: one per start and end made n
 * starts cost n^2, ~1-3 ms a start at 10,000 jobs). A job starting now finds those before it
 * there; the others find it from the next turn on, as they found it only once it started. Only
 * the files of the owners whose jobs came or went are rewritten (bridge: one per owner). */
static void on_hosts_later(loop_task *t) { hosts_write(t->data); }

/* j placed on n: in its hosts file (bridge: its owner's, made now and written at once with j
 * alone, for j's start to bind it; a later turn's rewrite adds those that came since). */
static void hosts_join(network *n, job *j)
{
    if (is_isolated(n))
        return;
    bool made = per_owner(n) && !hosts_of(n, j->owner_uid, false);
    network_hosts *h = hosts_of(n, j->owner_uid, true);
    list_add(&h->members, &h->njobs, &h->cap, j);
    if (made)
        hosts_write(h);
    else
        loop_later(&h->later);
}

/* j gone from n: out of its hosts file. bridge's file of an owner whose last job there left is
 * rewritten now, listing no job, and forgotten; the file stays (a job's shim that a joblet
 * killed with -9 forked may still bind it after the next start), made current again in place by
 * the owner's next job there. */
static void hosts_leave(network *n, const job *j)
{
    network_hosts *h = hosts_of(n, j->owner_uid, false);
    if (!h || !list_remove(h->members, &h->njobs, j))
        return;
    if (h->njobs || !per_owner(n)) {
        loop_later(&h->later);
        return;
    }
    hosts_write(h);
    uint32_t at = 0;
    while (n->hosts[at] != h)
        at++;
    n->hosts[at] = n->hosts[--n->nhosts];
    hosts_free(h);
}

/* The resolvers jobs on networks get: network.dns, else the host's /etc/resolv.conf without
 * nameservers on its loopback (unreachable from a job's namespace: systemd-resolved's
 * 127.0.0.53), else systemd-resolved's upstream list. */
static void resolv_write(void)
{
    char *out = xstrdup("# joblet: the resolvers of jobs on networks (network.dns, else the host's)\n");
    if (core.cfg.net_dns[0]) {
        char list[256];
        snprintf(list, sizeof list, "%s", core.cfg.net_dns);
        char *save = NULL;
        for (char *a = strtok_r(list, ", ", &save); a; a = strtok_r(NULL, ", ", &save))
            out = cat(out, "nameserver %s\n", a);
    } else {
        const char *srcs[] = {"/etc/resolv.conf", "/run/systemd/resolve/resolv.conf"};
        for (size_t s = 0; s < 2; s++) {
            char *txt = read_file(srcs[s], NULL);
            bool any = false;
            char *acc = xstrdup("");
            char *save = NULL;
            for (char *l = txt ? strtok_r(txt, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
                char ns[64];
                if (sscanf(l, " nameserver %63s", ns) == 1) {
                    if (!strncmp(ns, "127.", 4) || !strcmp(ns, "::1"))
                        continue;
                    any = true;
                }
                acc = cat(acc, "%s\n", l);
            }
            free(txt);
            if (any) {
                out = cat(out, "%s", acc);
                free(acc);
                break;
            }
            free(acc);
        }
    }
    jerr e = {0};
    if (write_file_atomic(resolv_path, out, strlen(out), 0644, &e) < 0)
        log_warn("networks: %s", e.msg);
    free(out);
}

/* --- the kernel's side: joblet-net apply ------------------------------------------------ */

static int apply(bool prune, jerr *e)
{
    json_t *in = json_object(), *list = json_array(), *keep = json_array();
    json_object_set_new(in, "max_flows", json_integer((json_int_t)core.cfg.net_max_flows_per_job));
    for (size_t i = 0; i < nnets; i++) {
        const network *n = nets[i];
        char cidr[40], gw[20];
        netaddr_cidr_format(&n->cidr, cidr, sizeof cidr);
        if (is_isolated(n)) {
            json_object_set_new(in, "isolated_cidr", json_string(cidr));
            continue;
        }
        netaddr_format(n->gateway, gw, sizeof gw);
        json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "name", n->name, "bridge", n->bridge, "cidr", cidr, "gateway", gw);
        /* a named network's owner may connect into it from the host (their shell, their job on
         * --network=host); no other user but root may (nft.h's output chain) */
        if (!n->builtin)
            json_object_set_new(o, "owner", json_integer((json_int_t)n->owner_uid));
        json_array_append_new(list, o);
    }
    for (size_t i = 0; i < nnets; i++)
        for (uint32_t k = 0; k < nets[i]->njobs; k++)
            json_array_append_new(keep, json_string(nets[i]->members[k]->net.host_if));
    json_object_set_new(in, "networks", list);
    json_object_set_new(in, "keep_veths", keep);
    json_object_set_new(in, "prune_veths", json_boolean(prune));
    char *txt = json_dumps(in, JSON_COMPACT);
    json_decref(in);
    char out[2048];
    char *argv[] = {helper, "apply", NULL};
    int st = run_input(helper, argv, txt, strlen(txt), APPLY_TIMEOUT_MS, out, sizeof out);
    free(txt);
    if (st < 0)
        return jerr_set(e, errno == ETIMEDOUT ? ETIMEDOUT : EIO, "%s apply: %s", helper,
                        errno == ETIMEDOUT ? "did not finish in time" : strerror(errno));
    size_t len = strlen(out);
    while (len && out[len - 1] == '\n')
        out[--len] = 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return jerr_set(e, EIO, "%s apply failed: %s", helper, len ? out : "(no message)");
    if (len && strcmp(out, "{\"created\":[],\"removed\":[]}"))
        log_info("networks: %s", out);
    return 0;
}

/* The first apply since start, with pruning (what a crash left); then only on changes. A
 * failure leaves networks unavailable, saying why, until joblet restarts. */
static bool applied;
static int ensure_applied(jerr *e)
{
    if (applied)
        return 0;
    if (!available)
        return jerr_http(e, 503, "job networks are not available on this machine: %s", why_not);
    if (apply(true, e) < 0) {
        available = false;
        snprintf(why_not, sizeof why_not, "%s", e->msg);
        log_warn("job networks are not available: %s; jobs asking for one are refused", why_not);
        return -1;
    }
    applied = true;
    return 0;
}

/* Whether c overlaps a route of the host's (its LANs, other bridges: Docker's, podman's) other
 * than a default route and joblet's own links; *what says which. A job network there would
 * take those addresses from the host. */
static bool host_overlap(const netaddr_cidr *c, char *what, size_t len)
{
    FILE *f = fopen("/proc/net/route", "re");
    if (!f)
        return false;
    char line[512];
    bool hit = false;
    while (!hit && fgets(line, sizeof line, f)) {
        char ifname[64];
        unsigned dst, gw, flags, refcnt, use, metric, mask;
        if (sscanf(line, "%63s %x %x %x %u %u %u %x", ifname, &dst, &gw, &flags, &refcnt, &use, &metric, &mask) != 8 ||
            !mask || !strncmp(ifname, "jb-", 3) || !strncmp(ifname, "jv", 2))
            continue;
        /* /proc/net/route prints each address as the number its network-order bytes make here */
        uint32_t d = ntohl(dst), m = ntohl(mask);
        int prefix = __builtin_popcount(m);
        netaddr_cidr r = {d & m, prefix};
        if (netaddr_cidr_overlap(c, &r)) {
            char rc[40];
            netaddr_cidr_format(&r, rc, sizeof rc);
            snprintf(what, len, "the host's route %s on %s", rc, ifname);
            hit = true;
        }
    }
    fclose(f);
    return hit;
}

/* --- start --------------------------------------------------------------------------------- */

/* A network's removal is committed before joblet-net takes its bridge away: this file, made
 * before the commit and removed once an apply succeeded, tells the next start to reconcile
 * (apply with pruning) though no network is left in the database (a kill -9 between the two left
 * the bridge, its route and its rules). Not a look at the host's jb-* links: another joblet on
 * the host (a second state directory, the tests') has its own, which pruning would take. */
static char pending_path[760];

static void pending_set(bool on)
{
    if (!on) {
        unlink(pending_path);
        return;
    }
    int fd = open(pending_path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0)
        close(fd);
    else
        log_warn("%s: %s (a kill -9 before the bridge is removed leaves it until the next change)", pending_path,
                 strerror(errno));
}

/* Whether all of c lies in network.user_pool. */
static bool in_user_pool(const netaddr_cidr *c)
{
    return c->prefix >= user_pool.prefix && netaddr_cidr_contains(&user_pool, c->base);
}

static void load_one(const db_network *r, void *arg)
{
    (void)arg;
    netaddr_cidr c;
    jerr e = {0};
    if (nnets >= NETWORKS_MAX || find(r->name) || netaddr_cidr_parse("cidr", r->cidr, &c, &e) < 0) {
        log_warn("network %s in the database is not taken back: %s", r->name, e.msg[0] ? e.msg : "a duplicate");
        return;
    }
    network *n = net_new(r->name, &c, false, false);
    n->owner_uid = (uid_t)r->owner_uid;
    n->created_ms = r->created_ms;
    nets[nnets++] = n;
    /* made before network.user_pool held (or the pool changed since): kept, said once a start */
    if (r->owner_uid != 0 && !in_user_pool(&c))
        log_warn("network %s (%s) of uid %lld lies outside network.user_pool (%s): its route on the host wins over "
                 "the default route for those addresses; an admin may remove it (rnx network remove %s)",
                 r->name, r->cidr, (long long)r->owner_uid, core.cfg.net_user_pool, r->name);
}

/* At start, once bridge's files of owners with jobs there are written: those of owners with no
 * job on bridge left, rewritten in place listing no job (not removed: a shim that a joblet
 * killed with -9 forked may bind its owner's still, and its addresses are others' from now on).
 * And so is bridge.hosts, the one file of every user's jobs that a joblet before per-owner files
 * kept, which the jobs it started bind. */
static void owners_sweep(network *bridge, const char *owners)
{
    DIR *d = opendir(owners);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char *end = NULL;
        if (de->d_name[0] == '.')
            continue;
        unsigned long uid = strtoul(de->d_name, &end, 10);
        if (de->d_name[0] < '0' || de->d_name[0] > '9' || strcmp(end, ".hosts") || uid > UINT32_MAX ||
            hosts_of(bridge, (uid_t)uid, false))
            continue;
        network_hosts none = {.net = bridge, .owner_uid = (uid_t)uid};
        snprintf(none.path, sizeof none.path, "%s/%s", owners, de->d_name);
        hosts_write(&none);
    }
    if (d)
        closedir(d);
    network_hosts old = {.net = bridge, .owner_uid = (uid_t)-1}; /* (of no one owner: none said) */
    snprintf(old.path, sizeof old.path, "%s/bridge.hosts", dir);
    if (access(old.path, F_OK) == 0)
        hosts_write(&old);
}

int networks_init(jerr *e)
{
    snprintf(dir, sizeof dir, "%s/networks", core.cfg.state_dir);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return jerr_sys(e, "mkdir %s", dir);
    snprintf(resolv_path, sizeof resolv_path, "%s/resolv.conf", dir);
    snprintf(pending_path, sizeof pending_path, "%s/apply-pending", dir);
    if (core.cfg.net_helper[0]) {
        snprintf(helper, sizeof helper, "%s", core.cfg.net_helper);
    } else {
        const char *slash = strrchr(core.shim_path, '/');
        int at = slash ? (int)(slash + 1 - core.shim_path) : 0;
        snprintf(helper, sizeof helper, "%.*sjoblet-net", at, core.shim_path);
    }
    netaddr_cidr bc, ic;
    if (netaddr_cidr_parse("network.bridge_cidr", core.cfg.net_bridge_cidr, &bc, e) < 0 ||
        netaddr_cidr_parse("network.isolated_cidr", core.cfg.net_isolated_cidr, &ic, e) < 0 ||
        netaddr_cidr_parse("network.user_pool", core.cfg.net_user_pool, &user_pool, e) < 0)
        return -1;
    if (netaddr_cidr_overlap(&bc, &ic))
        return jerr_set(e, EINVAL, "network.bridge_cidr %s and network.isolated_cidr %s overlap", core.cfg.net_bridge_cidr,
                        core.cfg.net_isolated_cidr);
    nets[nnets++] = net_new("bridge", &bc, false, true);
    nets[nnets++] = net_new("isolated", &ic, true, true);
    char owners[700];
    snprintf(owners, sizeof owners, "%s/bridge.owners", dir);
    if (mkdir(owners, 0755) < 0 && errno != EEXIST)
        return jerr_sys(e, "mkdir %s", owners);
    if (db_network_load(core.db, load_one, NULL, e) < 0)
        return -1;
    /* the addresses of jobs not yet ended, taken again */
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        if (!j->net.network[0])
            continue;
        network *n = find(j->net.network);
        if (job_state_terminal(j->state) || !n || !netaddr_cidr_contains(&n->cidr, j->net.addr)) {
            j->net = (netaddr_place){0};
            continue;
        }
        uint32_t off = j->net.addr - n->cidr.base;
        set_bit(n, off, true);
        if (is_isolated(n))
            set_bit(n, off & ~1u, true);
        join(n, j);
    }
    resolv_write();
    for (size_t i = 0; i < nnets; i++)
        for (uint32_t k = 0; k < nets[i]->nhosts; k++) {
            loop_later_cancel(&nets[i]->hosts[k]->later); /* written now: not again at the first turn */
            hosts_write(nets[i]->hosts[k]);
        }
    owners_sweep(nets[0], owners);
    char what[160] = "";
    if (host_overlap(&bc, what, 80) || host_overlap(&ic, what + 80, 80)) {
        bool iso = !what[0];
        snprintf(why_not, sizeof why_not, "network.%s_cidr %s overlaps %s; choose addresses the host does not use",
                 iso ? "isolated" : "bridge", iso ? core.cfg.net_isolated_cidr : core.cfg.net_bridge_cidr,
                 iso ? what + 80 : what);
        log_warn("job networks are not available: %s; jobs asking for one are refused", why_not);
        return 0;
    }
    if (access(helper, X_OK) < 0) {
        snprintf(why_not, sizeof why_not, "%s: %s (network.helper)", helper, strerror(errno));
        log_warn("job networks are not available: %s; jobs asking for one are refused", why_not);
        return 0;
    }
    available = true;
    /* The kernel's side is made when first needed (a job on a network, a network made), so a
     * joblet whose jobs never use one never touches the host's links or nftables; with
     * networks or jobs on them in the database, or links of joblet's left (a network removed
     * from the database and joblet killed before its apply), now: what a crash left is
     * reconciled */
    bool need = nnets > 2 || access(pending_path, F_OK) == 0;
    for (size_t i = 0; i < nnets && !need; i++)
        need = nets[i]->njobs > 0;
    jerr ae = {0};
    if (need && ensure_applied(&ae) < 0)
        log_warn("job networks: %s", ae.msg);
    else if (need)
        pending_set(false);
    return 0;
}

/* --- jobs ---------------------------------------------------------------------------------- */

static bool named(const job_req *r)
{
    return r->network && strcmp(r->network, "none") && strcmp(r->network, "host");
}

int networks_check_declared(const job_req *r, jerr *e)
{
    (void)r; /* a named network: any job may ask for one */
    if (!available)
        return jerr_http(e, 503, "network: job networks are not available on this machine: %s", why_not);
    return 0;
}

int networks_check(const job_req *r, const caller *c, jerr *e)
{
    if (!named(r)) /* max_netbps without a link of the job's own: jobreq_check */
        return 0;
    const network *n = find(r->network);
    if (!n || !networks_visible(n, c))
        return jerr_field(e, "network", "network: no network '%s'; use none, host, isolated, bridge or one that "
                          "rnx network list shows, or make it first: rnx network create %s --cidr=10.218.10.0/24 (in a "
                          "workflow: network: {name: %s, cidr: 10.218.10.0/24})", r->network, r->network, r->network);
    if (!available)
        return jerr_http(e, 503, "network: job networks are not available on this machine: %s", why_not);
    return 0;
}

/* n was made after a job submitted at submitted_ms was checked for its name: removed and made
 * again since (maybe by someone else), another network (the built-in ones are never remade). */
static bool remade_since(const network *n, int64_t submitted_ms)
{
    return !n->builtin && n->created_ms > submitted_ms;
}

int networks_check_again(const job_req *r, const caller *c, int64_t submitted_ms, jerr *e)
{
    if (networks_check(r, c, e) < 0)
        return -1;
    const network *n = named(r) ? find(r->network) : NULL;
    if (n && remade_since(n, submitted_ms))
        return jerr_http(e, 409, "network %s was removed and made again since the job was submitted: it is "
                                 "another", r->network);
    return 0;
}

void networks_spec_free(spec_net *s)
{
    if (!s)
        return;
    free(s->network);
    free(s->helper);
    free(s->host_if);
    free(s->bridge);
    free(s->addr);
    free(s->host_addr);
    free(s->gateway);
    free(s->hosts_file);
    free(s->resolv_file);
    free(s);
}

uint32_t networks_room(const char *name)
{
    if (!name || !strcmp(name, "none") || !strcmp(name, "host"))
        return UINT32_MAX;
    const network *n = find(name);
    if (!n)
        return UINT32_MAX;
    uint64_t size = netaddr_cidr_size(&n->cidr);
    /* every job on it holds one address (isolated: a pair); bridges keep three of their own */
    uint64_t cap = is_isolated(n) ? size / 2 : size > 3 ? size - 3 : 0;
    return cap > n->njobs ? (uint32_t)(cap - n->njobs) : 0;
}

int networks_place(job *j, spec_net **out, jerr *e)
{
    *out = NULL;
    if (!named(&j->req))
        return 0;
    /* the network checked at submission (networks_check): one made after it under that name
     * (removed and made again, maybe by someone else) is another. An array's task is made long
     * after the array was submitted and checked: the array's time is the submission's. And the
     * owner must still be one who may use it. */
    network *n = find(j->req.network);
    int64_t submitted_ms = j->array ? j->array->created_ms : j->created_ms;
    caller owner = authz_local(j->owner_uid, j->owner_gid);
    if (!n || (remade_since(n, submitted_ms) && !j->net.network[0]) || !networks_visible(n, &owner))
        return jerr_set(e, ENOENT, "network %s is gone (removed since the job was submitted)", j->req.network);
    if (ensure_applied(e) < 0)
        return -1;
    if (j->net.network[0] && strcmp(j->net.network, n->name))
        networks_release(j);
    if (!j->net.network[0]) {
        uint32_t off;
        if (take(n, &off) < 0) {
            char cidr[40];
            netaddr_cidr_format(&n->cidr, cidr, sizeof cidr);
            return jerr_set(e, ENOSPC, "network %s (%s) has no free address: %u jobs on it", n->name, cidr, n->njobs);
        }
        snprintf(j->net.network, sizeof j->net.network, "%s", n->name);
        j->net.addr = n->cidr.base + off;
        netaddr_veth_name(j->id, j->net.host_if, sizeof j->net.host_if);
        join(n, j);
    }
    spec_net *s = xcalloc(1, sizeof *s);
    char a[40], gw[20];
    s->network = xstrdup(n->name);
    s->helper = xstrdup(helper);
    s->host_if = xstrdup(j->net.host_if);
    netaddr_format(j->net.addr, a, sizeof a);
    if (is_isolated(n)) {
        char ha[20];
        netaddr_format(j->net.addr - 1, ha, sizeof ha);
        snprintf(gw, sizeof gw, "%s", ha);
        s->host_addr = cat(NULL, "%s/31", ha);
        s->addr = cat(NULL, "%s/31", a);
    } else {
        netaddr_format(n->gateway, gw, sizeof gw);
        s->bridge = xstrdup(n->bridge);
        s->addr = cat(NULL, "%s/%d", a, n->cidr.prefix);
        s->hosts_file = xstrdup(hosts_of(n, j->owner_uid, true)->path); /* (joined: there) */
    }
    s->gateway = xstrdup(gw);
    s->resolv_file = xstrdup(resolv_path);
    s->max_bps = (uint64_t)j->req.max_netbps;
    *out = s;
    return 0;
}

void networks_release(job *j)
{
    if (!j->net.network[0])
        return;
    network *n = find(j->net.network);
    if (n) {
        give_back(n, j->net.addr);
        leave(n, j);
    }
    j->net = (netaddr_place){0};
}

/* --- named networks -------------------------------------------------------------------- */

/* The name and addresses of a network to make, read and checked; 0 with *nc, or -1 on field
 * "name" or "cidr". Not whether the name is taken. */
static int check_new(const char *name, const char *cidr, netaddr_cidr *nc, jerr *e)
{
    if (!netaddr_name_ok(name))
        return jerr_field(e, "name", "name: '%.40s' is not a network name: 1 to %d of a-z 0-9 _ . - starting with a "
                          "letter or digit", name, NETADDR_NAME_MAX);
    if (netaddr_named_cidr_parse("cidr", cidr, nc, e) < 0)
        return -1;
    /* addresses that are nobody's to route on a bridge: the host's loopback, "this network",
     * link-local (a cloud's metadata service), multicast and reserved; no route shows them */
    static const struct {
        netaddr_cidr c;
        const char *what;
    } special[] = {{{0x00000000u, 8}, "'this network' (0.0.0.0/8)"},
                   {{0x7f000000u, 8}, "loopback (127.0.0.0/8)"},
                   {{0xa9fe0000u, 16}, "link-local (169.254.0.0/16)"},
                   {{0xe0000000u, 4}, "multicast (224.0.0.0/4)"},
                   {{0xf0000000u, 4}, "reserved (240.0.0.0/4)"}};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        if (netaddr_cidr_overlap(nc, &special[i].c))
            return jerr_field(e, "cidr", "cidr: %s overlaps %s addresses, which no job network may use", cidr,
                              special[i].what);
    return 0;
}

/* Whether c may make a network of addresses nc now: no network overlaps it, nor a route of the
 * host's; c's share and joblet's bound not used up. Changes nothing. */
static int check_room(const char *cidr, const netaddr_cidr *nc, const caller *c, jerr *e)
{
    for (size_t i = 0; i < nnets; i++)
        if (netaddr_cidr_overlap(nc, &nets[i]->cidr)) {
            char oc[40];
            netaddr_cidr_format(&nets[i]->cidr, oc, sizeof oc);
            return jerr_field(e, "cidr", "cidr: %s overlaps network %s (%s)", cidr, nets[i]->name, oc);
        }
    char what[160];
    if (host_overlap(nc, what, sizeof what))
        return jerr_field(e, "cidr", "cidr: %s overlaps %s; choose addresses the host does not use", cidr, what);
    /* Outside the pool only for admins: a network's route on the host wins over its default
     * route, so a user's network over addresses the host reaches through it (its resolver, a
     * package mirror, a cloud's metadata service: no route of the host's names them) would take
     * the host's own connections there to that user's jobs. */
    if (!authz_may(c, AUTHZ_NETWORK_ADDRESSES)) {
        /* a share of the pool each: one user's two /16s were all of it, and nobody else could
         * make a network (the count of networks, network.max_per_user, bounds no addresses) */
        uint64_t share = (1ull << (32 - user_pool.prefix)) / NETWORKS_POOL_SHARES, mine = 1ull << (32 - nc->prefix);
        for (size_t i = 0; i < nnets; i++)
            if (!nets[i]->builtin && nets[i]->owner_uid == c->uid && in_user_pool(&nets[i]->cidr))
                mine += 1ull << (32 - nets[i]->cidr.prefix);
        if (in_user_pool(nc) && mine > share) {
            jerr_http(e, 429, "cidr: %s: your networks would hold %llu of network.user_pool's %llu addresses (%s); a "
                              "user holds at most %llu (1/%d of it): ask for a smaller network, or remove one",
                      cidr, (unsigned long long)mine, (unsigned long long)(1ull << (32 - user_pool.prefix)),
                      core.cfg.net_user_pool, (unsigned long long)share, NETWORKS_POOL_SHARES);
            snprintf(e->field, sizeof e->field, "cidr");
            return -1;
        }
    }
    if (!in_user_pool(nc)) {
        char act[200];
        snprintf(act, sizeof act, "cidr: %s: a network outside network.user_pool (%s)", cidr, core.cfg.net_user_pool);
        if (authz_check(c, AUTHZ_NETWORK_ADDRESSES, act, e) < 0) {
            snprintf(e->field, sizeof e->field, "cidr");
            return -1;
        }
    }
    if (!authz_may(c, AUTHZ_UNLIMITED)) {
        uint32_t mine = 0;
        for (size_t i = 0; i < nnets; i++)
            mine += !nets[i]->builtin && nets[i]->owner_uid == c->uid;
        if (mine >= core.cfg.net_max_per_user)
            return jerr_http(e, 429, "you own %u network%s, the most network.max_per_user (%u) allows; remove one "
                                     "first (rnx network remove NAME)",
                             mine, mine == 1 ? "" : "s", (unsigned)core.cfg.net_max_per_user);
    }
    if (nnets >= NETWORKS_MAX)
        return jerr_http(e, 429, "joblet keeps at most %d networks", NETWORKS_MAX);
    return 0;
}

int networks_precheck(const char *name, const char *cidr, const caller *c, bool *exists, jerr *e)
{
    netaddr_cidr nc;
    *exists = false;
    if (check_new(name, cidr, &nc, e) < 0)
        return -1;
    const network *n = find(name);
    if (!strcmp(name, "none") || !strcmp(name, "host") || (n && n->builtin))
        return jerr_http(e, 409, "network %s is joblet's own; a workflow creates networks of other names", name);
    if (n && !networks_visible(n, c))
        return jerr_http(e, 409, "network %s exists and is another user's; choose another name", name);
    if (n && (n->cidr.base != nc.base || n->cidr.prefix != nc.prefix)) {
        char has[40];
        netaddr_cidr_format(&n->cidr, has, sizeof has);
        jerr_http(e, 409, "network %s exists with cidr %s, not %s; ask for %s, or choose another name", name, has,
                  cidr, has);
        snprintf(e->field, sizeof e->field, "cidr"); /* where the file asks for other addresses */
        return -1;
    }
    if (!available)
        return jerr_http(e, 503, "job networks are not available on this machine: %s", why_not);
    if (n) {
        *exists = true;
        return 0;
    }
    return check_room(cidr, &nc, c, e);
}

int networks_create(const char *name, const char *cidr, const caller *c, jerr *e)
{
    netaddr_cidr nc;
    const network *had = netaddr_name_ok(name) ? find(name) : NULL;
    if (had && !networks_visible(had, c)) /* one name space for the host, as its bridges' (jb-NAME) */
        return jerr_http(e, 409, "network %s already exists, another user's (a network's name is the whole host's, "
                                 "as its bridge jb-%s is); choose another name", name, name);
    if (had || (netaddr_name_ok(name) && (!strcmp(name, "none") || !strcmp(name, "host"))))
        return jerr_http(e, 409, "network %s already exists (rnx network list)", name);
    if (check_new(name, cidr, &nc, e) < 0)
        return -1;
    if (check_room(cidr, &nc, c, e) < 0 || ensure_applied(e) < 0)
        return -1;
    network *n = net_new(name, &nc, false, false);
    n->owner_uid = c->uid;
    n->created_ms = now_ms();
    nets[nnets++] = n;
    char norm[40];
    netaddr_cidr_format(&nc, norm, sizeof norm);
    db_network row = {n->name, norm, n->owner_uid, n->created_ms};
    int rc = db_network_insert(core.db, &row, e) < 0 ? db_busy_refusal(e, "created") : 0;
    if (rc < 0 || state_commit_now(e) < 0 || apply(false, e) < 0) {
        jerr de = {0};
        nnets--;
        if (db_network_delete(core.db, name, &de) < 0 || state_commit_now(&de) < 0)
            log_warn("network %s: %s", name, de.msg);
        net_free(n);
        return -1;
    }
    hosts_write(n->hosts[0]);
    return 0;
}

/* "3f2a1b2c, ...": the first user of a network the caller may see, or that they are others'. */
static const char *first_user(const char *one, uint32_t using, char *out, size_t len)
{
    if (!one)
        snprintf(out, len, "%s", using == 1 ? "another user's" : "other users'");
    else
        snprintf(out, len, "%.8s%s", one, using > 1 ? ", ..." : "");
    return out;
}

int networks_remove(const char *name, const caller *c, jerr *e)
{
    network *n = find(name);
    /* (another user's is not visible: only its owner and admins, who may remove it, see it) */
    if (!n || !networks_visible(n, c))
        return jerr_http(e, 404, "no network '%.40s' (rnx network list)", name);
    if (n->builtin)
        return jerr_http(e, 409, "network %s is built in (network.%s_cidr): it cannot be removed", n->name,
                        is_isolated(n) ? "isolated" : "bridge");
    uint32_t using = 0;
    const char *one = NULL;
    char shown[40];
    for (size_t i = 0; i < core.njobs; i++) {
        const job *j = core.jobs[i];
        if (!job_state_terminal(j->state) && j->req.network && !strcmp(j->req.network, n->name)) {
            using++;
            if (!one && authz_may_on(c, AUTHZ_OTHERS_JOBS, j->owner_uid)) /* (others' are counted, not named) */
                one = j->id;
        }
    }
    if (using)
        return jerr_http(e, 409, "network %s is in use by %u job%s not yet ended (%s)", n->name, using,
                        using == 1 ? "" : "s", first_user(one, using, shown, sizeof shown));
    /* and by the tasks an array has still to make (they join it when they are made) */
    size_t nopen;
    jarray **open = arrays_open(&nopen);
    for (size_t i = 0; i < nopen; i++) {
        const jarray *a = open[i];
        if (!arrays_canceled(a) && a->req.network && !strcmp(a->req.network, n->name)) {
            using++;
            if (!one && authz_may_on(c, AUTHZ_OTHERS_JOBS, a->owner_uid))
                one = a->id;
        }
    }
    if (using)
        return jerr_http(e, 409, "network %s is named by %u job array%s with tasks still to make (%s)", n->name,
                        using, using == 1 ? "" : "s", first_user(one, using, shown, sizeof shown));
    pending_set(true);
    if (db_network_delete(core.db, n->name, e) < 0 || state_commit_now(e) < 0)
        return db_busy_refusal(e, "deleted");
    size_t at = 0;
    while (nets[at] != n)
        at++;
    memmove(&nets[at], &nets[at + 1], (nnets - at - 1) * sizeof *nets);
    nnets--;
    for (uint32_t i = 0; i < n->nhosts; i++)
        unlink(n->hosts[i]->path);
    jerr ae = {0};
    if (apply(false, &ae) < 0) /* committed: the bridge is removed at the next apply or start */
        log_warn("network %s removed, but its bridge stays until the next change or start: %s", n->name, ae.msg);
    else
        pending_set(false);
    net_free(n);
    return 0;
}
