/* The account a job was submitted by (account.c): its name, and its group when that was one of
 * the account's, pinned in the request at submission (job_req.account_pin, set by the daemon
 * only) and checked again when the job starts (job_launch.c) or an array's task is made
 * (submit.c), maybe long after: a job does not run for an account removed since (its uid maybe
 * another's now), nor with a group its owner has left. */
#ifndef JOBLET_ACCOUNT_H
#define JOBLET_ACCOUNT_H

#include <pwd.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"

/* The account's groups, however many: its login group and those that list it (malloc'd, *n of
 * them; at least the login group). */
gid_t *account_groups(const struct passwd *pw, int *n);
/* Whether gid is one of the account's groups: its login group or one that lists it. */
bool account_has_group(const struct passwd *pw, gid_t gid);
/* Pins uid's account (and gid, when one of its groups) in req; nothing for a uid without one. */
void account_pin(job_req *req, uid_t uid, gid_t gid);
/* At a job's start (job_launch.c) and an array's task's making (submit_task), maybe long after its
 * submission: the account that submitted it (account_pin, written by submit_check) must still be
 * the one of owner, and a gid that was one of that account's groups must still be. 403 otherwise
 * (503 when the account could not be looked up); a request without a pin (submitted by a uid with
 * no account, or stored by a joblet before pins) is not checked. */
int account_verify(const job_req *req, uid_t owner, gid_t gid, jerr *e);
/* Whether a list of users and groups ("alice, 1001, @gpu-admins": names, uids, @group) names
 * uid (by its account's name or its number) or one of its groups (the account's, and gid),
 * the item that does copied to rule (rule may be NULL). Thread-safe (the reentrant look-ups):
 * isolation.require_gvisor on the loop, metrics.readers on the metrics listener's thread. */
bool account_listed(const char *list, uid_t uid, gid_t gid, char *rule, size_t len);

#endif
