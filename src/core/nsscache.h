/* Account look-ups off the loop (nsscache.c): the C library's getpwuid, getpwnam, getgrnam and
 * getgrouplist ask NSS, which on a cluster is a directory service (LDAP, sssd) that may take
 * seconds to answer; asked on the loop thread, one user's slow look-up made every user's
 * requests wait. Here they are asked by resolver threads, and their answers are kept on the
 * loop for server.account_cache_s (60 s by default, at most 3600: an account removed or a
 * group left counts after that at the latest); a name or uid that has no account, and a
 * look-up that failed, are kept 5 s only (within that TTL).
 *
 * Loop thread only. A look-up not known now returns NULL and is asked of a resolver thread
 * (once per key, however many wait); fn(arg), when given, is called on the loop once it is
 * answered (or failed): a route parks its request (api/park.h) and runs again, a job waits
 * QUEUED (the scheduler runs again after every answer). A kept answer used in the last quarter
 * of its time is asked again in the background, and the kept one returned meanwhile, until its
 * own time only (a refresh that fails does not replace it): steady traffic does not wait for
 * keys every request needs (isolation.require_gvisor's groups). At most NSSCACHE_MAX keys are
 * kept, found by a hash of the key: when every one is in use (being asked, waited on, or handed
 * out this turn of the loop), an entry with err EAGAIN is returned instead, and the caller
 * refuses (503) rather than guess. An entry returned stays as it is until the loop's next turn
 * (another look-up of the same turn does not reuse it). Without nsscache_start (unit tests, the
 * fuzz harness) look-ups are made at once on the caller's thread. */
#ifndef JOBLET_NSSCACHE_H
#define JOBLET_NSSCACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define NSSCACHE_MAX 4096
#define NSSCACHE_NEGATIVE_MS 5000
/* A look-up not answered within this fails its waiters (ETIMEDOUT, kept NSSCACHE_NEGATIVE_MS):
 * a directory server that never answers holds no request, and no job's wait, for ever (a
 * suspended connection never times out by itself); its thread's late answer is still kept. */
#define NSSCACHE_DEADLINE_MS 10000

enum nss_kind { NSS_UID, NSS_USER, NSS_GROUP };

typedef struct nss_entry {
    /* the key */
    enum nss_kind kind;
    uid_t key_uid;      /* NSS_UID */
    char key[256];      /* NSS_USER, NSS_GROUP: the name */
    /* the answer: err 0 found, ENOENT no such account or group, another errno: the look-up
     * failed (a directory service away), EAGAIN: too many look-ups under way */
    int err;
    uid_t uid;          /* NSS_UID, NSS_USER: the account's uid */
    gid_t gid;          /* the account's login group; NSS_GROUP: the group's gid */
    char name[256];     /* NSS_UID, NSS_USER: the account's name */
    gid_t *groups;      /* NSS_UID: every group of the account (getgrouplist), ngroups of them */
    int ngroups;
    /* NSS_UID: server.admin_group as asked with the account: whether it exists (admin_gid its
     * gid) and lists the account's name among its members */
    bool admin_known, admin_lists;
    gid_t admin_gid;
    /* the loop's bookkeeping */
    int64_t expires_ms;   /* answered, and good until then; 0 while never answered */
    int64_t refresh_ms;   /* used from then on (while good): asked again in the background */
    uint64_t gen;         /* the look-up that answered it (nsscache_gen: later ones are greater) */
    uint64_t asked_gen;   /* the one asked last */
    bool asking;          /* handed to a resolver thread */
    int64_t deadline_ms;  /* while asking: when its waiters fail (NSSCACHE_DEADLINE_MS) */
    uint64_t handed_turn; /* the loop turn it was last returned in (+1): not reused during it */
    struct nss_waiter *waiters;
    struct nss_entry *hnext, *anext; /* its hash chain; the entries asking */
} nss_entry;

typedef void (*nsscache_fn)(void *arg);

/* Starts the resolver threads; ttl_s is server.account_cache_s. 0, or -1 with errno. */
int nsscache_start(unsigned ttl_s);
/* Stops handing them work (a thread stuck in a look-up is not waited for). */
void nsscache_stop(void);
/* When nsscache_tick has a look-up to fail next (now_ms's clock), 0 when none is under way;
 * nsscache_tick fails those past their deadline. Loop thread. */
int64_t nsscache_due_ms(void);
void nsscache_tick(int64_t now);
/* The account of uid, of name, the group of name, as known now (see above). */
const nss_entry *nsscache_uid(uid_t uid, nsscache_fn fn, void *arg);
const nss_entry *nsscache_user(const char *name, nsscache_fn fn, void *arg);
const nss_entry *nsscache_group(const char *name, nsscache_fn fn, void *arg);
/* The waiters fn(arg) of look-ups not answered yet, taken back: a request parked on several
 * (an account and require_gvisor's groups) is woken by the first answer and runs again, parking
 * anew on what is still unknown; its old waiters on the others would wake nothing. */
void nsscache_forget(nsscache_fn fn, void *arg);
/* The latest look-up asked: one asked later has a greater number. */
uint64_t nsscache_gen(void);
/* While a request runs (api/http.c, from its first call to each return), gen being
 * nsscache_gen() when it began: an answer to a look-up asked after that counts as known for it
 * even once past its time. A request that needs several keys (its caller's account, then
 * require_gvisor's groups, then a route's) would otherwise, with account_cache_s shorter than
 * a slow directory's answer, find the first key expired by the time the last is answered, and
 * park again for ever; such an answer is newer than the request, so no guess. The scheduler
 * does the same for a job, or an array's task, that waits for its owner's (core/queue.c). Such
 * an answer past its time is asked again in the background; a failure (not "no such account")
 * is not taken so, but asked again and waited for. 0: none (timers, the scheduler's other work). */
uint64_t nsscache_accept_since(uint64_t gen); /* (the former, to put back) */
/* Whether err means "there is no such account or group" (as getpwuid(3) lists them). */
bool nsscache_none(int err);

#endif
