/* The account a job was submitted by (account.c): its name, and its group when that was one of
 * the account's, pinned in the request at submission (job_req.account_pin, set by the daemon
 * only) and checked again when the job starts (job_launch.c) or an array's task is made
 * (submit.c), maybe long after: a job does not run for an account removed since (its uid maybe
 * another's now), nor with a group its owner has left. */
#ifndef JOBLET_ACCOUNT_H
#define JOBLET_ACCOUNT_H

#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "nsscache.h"

/* Pins uid's account (and gid, when one of its groups) in req; nothing for a uid without one.
 * The account as nsscache.h knows it: 503 when it is not known now or its look-up failed. */
int account_pin(job_req *req, uid_t uid, gid_t gid, jerr *e);
/* At a job's start (job_launch.c) and an array's task's making (submit_task), maybe long after its
 * submission: the account that submitted it (account_pin, written by submit_check) must still be
 * the one of owner, and a gid that was one of that account's groups must still be. 403 otherwise
 * (503 when the account could not be looked up); a request without a pin (submitted by a uid with
 * no account, or stored by a joblet before pins) is not checked. The account as kept by the
 * look-ups off the loop (nsscache.h: at most server.account_cache_s old, as a request sees it):
 * 503 while it is being looked up (the scheduler runs again once it is answered). */
int account_verify(const job_req *req, uid_t owner, gid_t gid, jerr *e);
/* Whether a list of users and groups ("alice, 1001, @gpu-admins": names, uids, @group) names
 * uid (by its account's name or its number) or one of its groups (the account's, and gid),
 * the item that does copied to rule (rule may be NULL). Asks NSS itself (reentrant look-ups), so
 * for threads other than the loop: metrics.readers on the metrics listener's thread. */
bool account_listed(const char *list, uid_t uid, gid_t gid, char *rule, size_t len);
/* account_listed on the loop, from what nsscache.h knows: 1 when the list names uid or one of
 * its groups (the item copied to rule), 0 when not, -1 when an item could name it but the
 * account or group is not known now or its look-up failed (the item in rule): refuse, or
 * wait, rather than guess. */
int account_listed_known(const char *list, uid_t uid, gid_t gid, char *rule, size_t len);
/* How many of uid's account and the groups (@group) of isolation.require_gvisor are not known
 * now (nsscache.h): every one of those is asked at once, and fn(arg) is registered on each, so
 * called that many times as they are answered (ask again then). account_known: none. What the
 * API waits for before a route runs. */
int account_unknown(uid_t uid, nsscache_fn fn, void *arg);
bool account_known(uid_t uid, nsscache_fn fn, void *arg);

#endif
