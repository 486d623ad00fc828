/* joblet's nftables table, `inet joblet`: rendered as one JSON batch from the networks that
 * exist, and handed to the nft binary (a separate process: libnftables is GPL-2) which applies
 * it as one transaction. The batch adds the table, deletes it and adds it again with its chains
 * and rules, so the whole table is replaced atomically whether it was there or not.
 *
 * What the table does (issue 31):
 *   forward      established/related accepted; between two joblet interfaces (jb-*, jv*)
 *                dropped, except within one bridge (seen here when br_netfilter is loaded);
 *                new connections into joblet interfaces dropped; outwards accepted.
 *   input        from joblet interfaces only established/related: no job reaches the host's
 *                own services, the gateway address included.
 *   output       into joblet interfaces: established/related, root's sockets, and on a named
 *                network its owner's; other new connections dropped. The host routes to every
 *                network, so before this any local user (or their --network=host job) reached
 *                every job of every user, on a named network as on bridge.
 *   postrouting  masquerade per network (ip saddr CIDR ip daddr != CIDR) and for the isolated
 *                pool (ip saddr POOL). */
#ifndef JOBLET_NFT_H
#define JOBLET_NFT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

#define NFT_TABLE "joblet"
/* The bound on a job address's connections at once (nft_plan's max_flows), a table of its own that
 * a new plan does not replace. The host's conntrack table is one of the machine's
 * (net.netfilter.nf_conntrack_max, the host's own connections in it too, loopback's included) and no
 * cgroup counts it: a job that sent UDP to 20,000 ports of another of its owner's jobs made 20,000
 * entries in 0.13 s, each kept 30 s, and a full table drops every new connection of the host's. The
 * set's elements (an address and its ct count, which counts its live entries) stay when a plan is
 * applied again: in the joblet table they started from 0 at each change of the networks, which any
 * user makes (a network made and removed), and the bound held for nothing. An element whose count
 * fell to 0 goes (the kernel's set GC). */
#define NFT_FLOWS_TABLE "joblet_flows"

/* An IPv4 subnet: its network address in dotted form and its prefix length. */
typedef struct nft_cidr {
    char addr[16];
    int prefix;
} nft_cidr;

typedef struct nft_net {
    char bridge[16];  /* the Linux bridge, "jb-..." */
    nft_cidr cidr;
    bool has_owner;   /* a named network: owner's sockets on the host may connect into it */
    uint32_t owner;
} nft_net;

typedef struct nft_plan {
    const nft_net *nets;
    size_t n;
    bool isolated;    /* iso holds the isolated pool */
    nft_cidr iso;
} nft_plan;

/* The batch {"nftables":[...]} that replaces the table with p's; NULL when out of memory. */
json_t *nft_render(const nft_plan *p);
/* nft's text (nft_run_text) that makes NFT_FLOWS_TABLE bound each job address to max_flows
 * connections at once, or removes it (0); -1 when out is too small. */
int nft_render_flows(uint32_t max_flows, char *out, size_t len);
/* The batch that removes the tables, whether they are there or not. */
json_t *nft_render_delete(void);
/* Runs `nft -j -f -` (nft: its absolute path) with batch on its stdin, killed after timeout_ms;
 * -1 with nft's first line of complaint in e when it fails. */
int nft_run(const char *nft, const json_t *batch, int timeout_ms, jerr *e);
/* The same with nft's text on its stdin (`nft -f -`). */
int nft_run_text(const char *nft, const char *text, int timeout_ms, jerr *e);

#endif
