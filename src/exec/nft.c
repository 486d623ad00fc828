/* nftables JSON for joblet's table (nft.h), and the nft process that applies it. */
#include "nft.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The names of every joblet interface: a set of wildcards, which nft (1.0.6 tested) takes in
 * JSON as in its own language: "jv*" matches every name starting with "jv". */
static json_t *joblet_ifaces(void)
{
    return json_pack("{s:[s,s]}", "set", "jb-*", "jv*");
}

static json_t *meta_match(const char *key, const char *op, json_t *right)
{
    return json_pack("{s:{s:s,s:{s:{s:s}},s:o}}", "match", "op", op, "left", "meta", "key", key, "right", right);
}

static json_t *ct_established(void)
{
    return json_pack("{s:{s:s,s:{s:{s:s}},s:[s,s]}}", "match", "op", "in", "left", "ct", "key", "state",
                     "right", "established", "related");
}

static json_t *ct_new(void)
{
    return json_pack("{s:{s:s,s:{s:{s:s}},s:s}}", "match", "op", "in", "left", "ct", "key", "state", "right", "new");
}

static json_t *ip_match(const char *field, const char *op, const nft_cidr *c)
{
    return json_pack("{s:{s:s,s:{s:{s:s,s:s}},s:{s:{s:s,s:i}}}}", "match", "op", op, "left", "payload",
                     "protocol", "ip", "field", field, "right", "prefix", "addr", c->addr, "len", c->prefix);
}

static json_t *verdict(const char *v)
{
    return json_pack("{s:n}", v);
}

static json_t *table_named(const char *name)
{
    return json_pack("{s:{s:s,s:s}}", "table", "family", "inet", "name", name);
}

static json_t *table_obj(void)
{
    return table_named(NFT_TABLE);
}

/* Appends {"add": {"rule": ...}} with the expressions given (NULL-terminated; their
 * references are taken). */
static int add_rule(json_t *cmds, const char *chain, ...)
{
    json_t *expr = json_array();
    va_list ap;
    va_start(ap, chain);
    json_t *x;
    int bad = !expr;
    while ((x = va_arg(ap, json_t *)) != NULL) {
        if (bad || json_array_append_new(expr, x) < 0) {
            bad = 1;
            json_decref(x);
        }
    }
    va_end(ap);
    if (bad) {
        json_decref(expr);
        return -1;
    }
    return json_array_append_new(cmds, json_pack("{s:{s:{s:s,s:s,s:s,s:o}}}", "add", "rule", "family", "inet",
                                                 "table", NFT_TABLE, "chain", chain, "expr", expr));
}

static int add_chain(json_t *cmds, const char *name, const char *type, const char *hook, int prio)
{
    return json_array_append_new(cmds, json_pack("{s:{s:{s:s,s:s,s:s,s:s,s:s,s:i,s:s}}}", "add", "chain",
                                                 "family", "inet", "table", NFT_TABLE, "name", name, "type",
                                                 type, "hook", hook, "prio", prio, "policy", "accept"));
}

json_t *nft_render(const nft_plan *p)
{
    json_t *cmds = json_array();
    if (!cmds)
        return NULL;
    int bad = 0;
    /* add + delete + add: the table is replaced whether it existed or not, in one transaction. */
    bad |= json_array_append_new(cmds, json_pack("{s:o}", "add", table_obj()));
    bad |= json_array_append_new(cmds, json_pack("{s:o}", "delete", table_obj()));
    bad |= json_array_append_new(cmds, json_pack("{s:o}", "add", table_obj()));

    /* forward: priority filter (0) */
    bad |= add_chain(cmds, "forward", "filter", "forward", 0);
    bad |= add_rule(cmds, "forward", ct_established(), verdict("accept"), NULL);
    /* Within one bridge: with br_netfilter loaded (Docker loads it; net.bridge.bridge-nf-call-*
     * = 1), bridged frames go through this hook too, with the bridge as both interfaces. Jobs
     * of one network reach each other. */
    for (size_t i = 0; i < p->n; i++)
        bad |= add_rule(cmds, "forward", meta_match("iifname", "==", json_string(p->nets[i].bridge)),
                        meta_match("oifname", "==", json_string(p->nets[i].bridge)), verdict("accept"), NULL);
    bad |= add_rule(cmds, "forward", meta_match("iifname", "==", joblet_ifaces()),
                    meta_match("oifname", "==", joblet_ifaces()), verdict("drop"), NULL);
    bad |= add_rule(cmds, "forward", meta_match("oifname", "==", joblet_ifaces()), verdict("drop"), NULL);

    /* input: nothing of the host's own is open to jobs, only answers to what it started. */
    bad |= add_chain(cmds, "input", "filter", "input", 0);
    bad |= add_rule(cmds, "input", meta_match("iifname", "==", joblet_ifaces()), ct_established(),
                    verdict("accept"), NULL);
    bad |= add_rule(cmds, "input", meta_match("iifname", "==", joblet_ifaces()), verdict("drop"), NULL);

    /* output: the host routes to every network, so without this any local user's socket (or a job
     * of theirs on --network=host) opened connections to every user's jobs. Answers to what jobs
     * started pass, root's connections (admins, joblet's own) and a named network's owner's into
     * its bridge; no one else's new ones. Only new ones: packets no socket sent (ICMP errors,
     * resets) are not new. */
    bad |= add_chain(cmds, "output", "filter", "output", 0);
    bad |= add_rule(cmds, "output", meta_match("oifname", "==", joblet_ifaces()), ct_established(),
                    verdict("accept"), NULL);
    bad |= add_rule(cmds, "output", meta_match("oifname", "==", joblet_ifaces()),
                    meta_match("skuid", "==", json_integer(0)), verdict("accept"), NULL);
    for (size_t i = 0; i < p->n; i++)
        if (p->nets[i].has_owner)
            bad |= add_rule(cmds, "output", meta_match("oifname", "==", json_string(p->nets[i].bridge)),
                            meta_match("skuid", "==", json_integer((json_int_t)p->nets[i].owner)),
                            verdict("accept"), NULL);
    bad |= add_rule(cmds, "output", meta_match("oifname", "==", joblet_ifaces()), ct_new(), verdict("drop"), NULL);

    /* postrouting: priority srcnat (100) */
    bad |= add_chain(cmds, "postrouting", "nat", "postrouting", 100);
    for (size_t i = 0; i < p->n; i++)
        bad |= add_rule(cmds, "postrouting", ip_match("saddr", "==", &p->nets[i].cidr),
                        ip_match("daddr", "!=", &p->nets[i].cidr), verdict("masquerade"), NULL);
    if (p->isolated)
        bad |= add_rule(cmds, "postrouting", ip_match("saddr", "==", &p->iso), verdict("masquerade"), NULL);
    if (bad) {
        json_decref(cmds);
        return NULL;
    }
    return json_pack("{s:o}", "nftables", cmds);
}

/* nft's text, not JSON: the set is added again at each apply, and the kernel takes that only with
 * the flags it has (dynamic), which nft 1.0.6's JSON cannot say. The set is named by its bound
 * (flows_1024): each element carries the ct count expression it was made with, the rule's bound at
 * that time, and keeps it while its address has connections; in one set for every bound, a
 * network.max_flows_per_job changed (a restart) reached no address that held a connection. */
int nft_render_flows(uint32_t max_flows, char *out, size_t len)
{
    int n;
    if (!max_flows)
        n = snprintf(out, len, "add table inet %s\ndelete table inet %s\n", NFT_FLOWS_TABLE, NFT_FLOWS_TABLE);
    else
        n = snprintf(out, len,
                     "add table inet %1$s\n"
                     "add set inet %1$s flows_%2$u { type ipv4_addr; size 65535; flags dynamic; }\n"
                     /* before joblet's forward chain (priority 0): a drop here is final */
                     "add chain inet %1$s forward { type filter hook forward priority -1; policy accept; }\n"
                     "flush chain inet %1$s forward\n"
                     "add rule inet %1$s forward iifname { \"jb-*\", \"jv*\" } ct state new "
                     "add @flows_%2$u { ip saddr ct count over %2$u } drop\n",
                     NFT_FLOWS_TABLE, (unsigned)max_flows);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

json_t *nft_render_delete(void)
{
    return json_pack("{s:[{s:o},{s:o},{s:o},{s:o}]}", "nftables", "add", table_obj(), "delete", table_obj(), "add",
                     table_named(NFT_FLOWS_TABLE), "delete", table_named(NFT_FLOWS_TABLE));
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int run_input(const char *nft, const char *text, bool json, int timeout_ms, jerr *e)
{
    /* The batch goes in as a memory file on stdin: no pipe to feed while nft runs. */
    int in = memfd_create("joblet-nft", MFD_CLOEXEC);
    size_t len = strlen(text);
    if (in < 0 || write(in, text, len) != (ssize_t)len || lseek(in, 0, SEEK_SET) < 0) {
        if (in >= 0)
            close(in);
        return jerr_sys(e, "nft: writing the batch to a memory file");
    }
    int errp[2];
    if (pipe2(errp, O_CLOEXEC) < 0) {
        close(in);
        return jerr_sys(e, "nft: making a pipe for its messages");
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(in);
        close(errp[0]);
        close(errp[1]);
        return jerr_sys(e, "nft: starting %s", nft);
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (dup2(in, 0) < 0 || dup2(devnull >= 0 ? devnull : errp[1], 1) < 0 || dup2(errp[1], 2) < 0)
            _exit(126);
        if (json)
            execl(nft, nft, "-j", "-f", "-", (char *)NULL);
        else
            execl(nft, nft, "-f", "-", (char *)NULL);
        dprintf(2, "cannot run %s: %s\n", nft, strerror(errno));
        _exit(127);
    }
    close(in);
    close(errp[1]);
    char msg[1024];
    size_t used = 0;
    long deadline = now_ms() + timeout_ms;
    int timed_out = 0;
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pfd = {.fd = errp[0], .events = POLLIN};
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            timed_out = r == 0;
            break;
        }
        char chunk[512];
        ssize_t n = read(errp[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t take = (size_t)n < sizeof msg - 1 - used ? (size_t)n : sizeof msg - 1 - used;
        memcpy(msg + used, chunk, take);
        used += take;
    }
    close(errp[0]);
    msg[used] = 0;
    if (timed_out)
        kill(pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (timed_out)
        return jerr_set(e, ETIMEDOUT, "nft: %s did not finish within %d ms and was killed", nft, timeout_ms);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    /* nft's first line that says something; JSON input errors come as "Error: ..." */
    char *line = msg;
    while (*line == '\n' || *line == ' ')
        line++;
    line[strcspn(line, "\n")] = 0;
    if (WIFSIGNALED(st))
        return jerr_set(e, EIO, "nft: %s was killed by signal %d", nft, WTERMSIG(st));
    return jerr_set(e, EIO, "nft: %s failed (exit %d): %s", nft, WEXITSTATUS(st), *line ? line : "no message");
}

int nft_run(const char *nft, const json_t *batch, int timeout_ms, jerr *e)
{
    char *text = json_dumps(batch, JSON_COMPACT);
    if (!text)
        return jerr_set(e, ENOMEM, "nft: rendering the batch: out of memory");
    int rc = run_input(nft, text, true, timeout_ms, e);
    free(text);
    return rc;
}

int nft_run_text(const char *nft, const char *text, int timeout_ms, jerr *e)
{
    return run_input(nft, text, false, timeout_ms, e);
}
