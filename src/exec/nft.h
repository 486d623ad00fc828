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

/* An IPv4 subnet: its network address in dotted form and its prefix length. */
typedef struct nft_cidr {
    char addr[16];
    int prefix;
} nft_cidr;

typedef struct nft_net {
    char bridge[16];  /* the Linux bridge, "jb-..." */
    nft_cidr cidr;
} nft_net;

typedef struct nft_plan {
    const nft_net *nets;
    size_t n;
    bool isolated;    /* iso holds the isolated pool */
    nft_cidr iso;
    uint32_t max_flows; /* connections one job's address may open through the host at once (its
                         * conntrack entries: network.max_flows_per_job); 0 = no bound */
} nft_plan;

/* The batch {"nftables":[...]} that replaces the table with p's; NULL when out of memory. */
json_t *nft_render(const nft_plan *p);
/* The batch that removes the table, whether it is there or not. */
json_t *nft_render_delete(void);
/* Runs `nft -j -f -` (nft: its absolute path) with batch on its stdin, killed after timeout_ms;
 * -1 with nft's first line of complaint in e when it fails. */
int nft_run(const char *nft, const json_t *batch, int timeout_ms, jerr *e);

#endif
