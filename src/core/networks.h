/* Job networks (docs/networks.md). A job's network is none (loopback only, the default), host,
 * or one of joblet's:
 *   - "isolated": the job's own veth pair, a /31 from network.isolated_cidr (the host side one
 *     end, the job the other), NAT to the outside, no path to other jobs or the host;
 *   - "bridge": the built-in bridge network (network.bridge_cidr): its jobs reach each other by
 *     address and by name, the outside through NAT;
 *   - a named network (rnx network create NAME --cidr=...): the same on a bridge of its own,
 *     owned by who made it; only the owner's jobs (and those of roles allowed AUTHZ_OTHERS_
 *     NETWORKS) join it.
 *
 * Who does what: this file keeps the networks (named ones in the database), gives each job an
 * address when it starts (kept in the job's row: a restarted joblet keeps it taken) and takes it
 * back when it ends, and keeps the networks' hosts files current (jobs by name and id: the file
 * a job of the network sees as /etc/hosts): a named network's one, of all its jobs; bridge's one
 * per owner with jobs on it, of that owner's jobs only (names are scoped to their owner, as
 * nobody's job on a shared network should decide what another user's jobs find under a name;
 * others' jobs stay reachable by address). The kernel's side, bridges and the one
 * nftables table `inet joblet`, is joblet-net's (exec/net_main.c), run here on every change of
 * networks ("apply") and at start, where it also removes what a crash left (veths of jobs that
 * are gone); a job's own veth is made by its shim with the same program. */
#ifndef JOBLET_NETWORKS_H
#define JOBLET_NETWORKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "../common/netaddr.h"
#include "../exec/spec.h"
#include "authz.h"
#include "job.h"
#include "loop.h"

/* One hosts file and the jobs it lists (networks.c). */
typedef struct network_hosts network_hosts;

typedef struct network {
    char name[NETADDR_NAME_MAX + 1];
    char bridge[NETADDR_IFNAME_MAX + 1]; /* its Linux bridge; "" for isolated */
    netaddr_cidr cidr;
    uint32_t gateway;          /* a bridge network's: the bridge's address (first host) */
    bool builtin;              /* bridge and isolated: from the configuration, never removed */
    uid_t owner_uid;           /* a named network's maker */
    int64_t created_ms;
    uint32_t njobs;            /* jobs placed on it now: members[0..njobs) */
    job **members;             /* (so that what a job's start or end rewrites, and a list, grows
                                * with the network's jobs, not with every job joblet keeps) */
    uint32_t cap;
    uint8_t *used;             /* one bit per address of cidr: taken (jobs, gateway, ends) */
    uint32_t cursor;           /* where the next search for a free address starts */
    network_hosts **hosts;     /* its hosts files (bridge networks): a named network's one,
                                * <state>/networks/<name>.hosts; bridge's one per owner with jobs
                                * on it, <state>/networks/bridge.owners/<uid>.hosts */
    uint32_t nhosts, hosts_cap;
} network;

/* At start, after the jobs are loaded and before they are re-adopted: the built-in networks
 * from the configuration, the named ones from the database, the addresses of jobs not yet ended
 * taken again, the hosts files written, and joblet-net apply run with pruning (bridges of
 * networks that are gone, veths of jobs that are gone). When the kernel's side cannot be made
 * (no nft, no veth support), joblet runs without networks: jobs asking for one are refused with
 * why. */
int networks_init(jerr *e);
/* Whether networks work here; why not otherwise. */
bool networks_available(const char **why);

/* At submission: the request's network exists and the caller may use it (none and host need
 * nothing here). 404 an unknown name, 403 another user's network, 503 networks unavailable. */
int networks_check(const job_req *r, const caller *c, jerr *e);
/* The same for a job submitted at submitted_ms that is to run again (a requeue of an ended
 * job): also the network it was checked for then, not one made again under its name since
 * (as networks_place asks at its launch), else 409. */
int networks_check_again(const job_req *r, const caller *c, int64_t submitted_ms, jerr *e);
/* The same for a job whose network is one its workflow declares and creates before submitting
 * it (a dry run: rnx workflow validate, or before the network is made): every check of
 * networks_check but that the network exists and the caller may use it, which
 * networks_precheck checks for the workflow (today: that networks work here). */
int networks_check_declared(const job_req *r, jerr *e);
/* At launch: an address for the job on its request's network (none for none and host: *out
 * stays NULL), recorded in j->net; *out a spec_net the caller frees (networks_spec_free). The
 * network gone since submission, or full: the job cannot start (error names it). */
int networks_place(job *j, spec_net **out, jerr *e);
/* How many more jobs network `name` can give an address now: its free addresses (isolated: its
 * free pairs); UINT32_MAX for none, host, or a network that is not there (networks_place says why
 * at launch). The scheduler's pass offers no more jobs on it than that (core/queue.c). */
uint32_t networks_room(const char *name);
void networks_spec_free(spec_net *n);
/* The job ended: its address back, its name out of its hosts file. */
void networks_release(job *j);

/* Named networks: make (the bridge and rules through joblet-net; the row committed before the
 * answer), and remove (refused while a job not yet ended names it). */
int networks_create(const char *name, const char *cidr, const caller *c, jerr *e);
int networks_remove(const char *name, const caller *c, jerr *e);
/* A network a workflow declares (its jobs' network: {name, cidr}), changing nothing: 0 with
 * *exists false when networks_create(name, cidr, c) would make it now, 0 with *exists true when
 * it exists already as one c may use with those same addresses; else -1: on field "name" or
 * "cidr" (networks_create's refusals), 409 when it exists otherwise (another's, other
 * addresses, built in), 429 c's share used up, 503 networks unavailable. */
int networks_precheck(const char *name, const char *cidr, const caller *c, bool *exists, jerr *e);
/* For listing: every network, built-in first; n set to how many. */
const network *const *networks_all(size_t *n);
/* Whether c may see and use network n. */
bool networks_visible(const network *n, const caller *c);

#endif
