/* The account a job was submitted by, pinned in its request and checked again at its start
 * (account.h). */
#include "account.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/util.h"
#include "nsscache.h"
#include "state.h"

/* Whether gid is one of the account's groups, as the look-up found them (nsscache.h). */
static bool has_group(const nss_entry *a, gid_t gid)
{
    if (a->gid == gid)
        return true;
    for (int i = 0; i < a->ngroups; i++)
        if (a->groups[i] == gid)
            return true;
    return false;
}

/* The account uid submits as, pinned in the request (account_pin): its name, and gid when it is
 * one of the account's groups (as sg or newgrp gives it); none for a uid without an account. */
int account_pin(job_req *req, uid_t uid, gid_t gid, jerr *e)
{
    const nss_entry *a = nsscache_uid(uid, NULL, NULL);
    if (!a || (a->err && !nsscache_none(a->err)))
        /* (the API waits for the caller's account before a route runs: not known now means it
         * expired meanwhile, or the look-up failed) a job is not pinned to an account that
         * could not be confirmed, nor left unpinned (never checked again) */
        return jerr_busy(e, "uid %u's account could not be looked up%s%s: try again", (unsigned)uid,
                         a ? ": " : " now", a ? strerror(a->err) : "");
    char pin[300];
    if (a->err || strchr(a->name, ':')) {
        jobreq_set_str(req, JR_ACCOUNT_PIN, NULL);
        return 0;
    }
    if (has_group(a, gid))
        snprintf(pin, sizeof pin, "%s:%u", a->name, (unsigned)gid);
    else
        snprintf(pin, sizeof pin, "%s", a->name);
    jobreq_set_str(req, JR_ACCOUNT_PIN, pin);
    return 0;
}

int account_verify(const job_req *req, uid_t owner, gid_t gid, jerr *e)
{
    /* asked off the loop (nsscache.h): the job waits (503) until it is answered, the scheduler
     * running again then; known, the owner's role at the start (authz_local:
     * server.admin_group) is its account's as kept too */
    const nss_entry *a = nsscache_uid(owner, NULL, NULL);
    const char *pin = req->account_pin;
    char name[300];
    snprintf(name, sizeof name, "%s", pin ? pin : "");
    char *colon = strchr(name, ':');
    if (colon)
        *colon = 0;
    if (!a) {
        jerr_busy(e, "the account%s%s%s (uid %u) that submitted the job is being looked up", *name ? " '" : "",
                  name, *name ? "'" : "", (unsigned)owner);
        e->code = EINPROGRESS; /* (not a failure: nothing to warn of) */
        return -1;
    }
    if (!pin || !*pin)
        return 0;
    if (a->err || strcmp(a->name, name)) {
        if (!a->err)
            return jerr_http(e, 403, "the account '%s' that submitted the job is gone: uid %u is account '%s' now; "
                                     "the job does not run as another account",
                             name, (unsigned)owner, a->name);
        /* not found; else the lookup failed (a directory service away): the job does not run as
         * an account it cannot confirm */
        if (!nsscache_none(a->err))
            return jerr_http(e, 503, "the account '%s' (uid %u) that submitted the job could not be looked up: %s",
                             name, (unsigned)owner, strerror(a->err));
        return jerr_http(e, 403, "the account '%s' (uid %u) that submitted the job is gone", name,
                         (unsigned)owner);
    }
    if (colon && !has_group(a, gid))
        return jerr_http(e, 403, "account '%s' (uid %u) is no longer a member of group %u, which the job was submitted "
                                 "with; the job does not run with it (submit it again)",
                         name, (unsigned)owner, (unsigned)gid);
    return 0;
}

int account_listed_known(const char *list, uid_t uid, gid_t gid, char *rule, size_t len)
{
    const nss_entry *a = nsscache_uid(uid, NULL, NULL);
    int hit = 0;
    char *items = xstrdup(list);
    for (char *save = NULL, *t = strtok_r(items, ", ", &save); t && hit != 1; t = strtok_r(NULL, ", ", &save)) {
        char *end;
        unsigned long n = strtoul(t, &end, 10);
        int here = 0;
        if (*t && !*end && n == uid) {
            here = 1;
        } else if (!a || (a->err && !nsscache_none(a->err))) {
            here = -1; /* a name or group the account may have: not known now */
        } else if (t[0] == '@') {
            const nss_entry *g = nsscache_group(t + 1, NULL, NULL);
            if (!g || (g->err && !nsscache_none(g->err)))
                here = -1;
            else
                here = !g->err && (gid == g->gid || (!a->err && has_group(a, g->gid)));
        } else {
            here = !a->err && !strcmp(t, a->name);
        }
        if (rule && (here == 1 || (here < 0 && hit == 0)))
            snprintf(rule, len, "%s", t);
        hit = here == 1 ? 1 : here < 0 ? -1 : hit;
    }
    free(items);
    return hit;
}

int account_unknown(uid_t uid, nsscache_fn fn, void *arg)
{
    /* every key asked now, not one after the other: a request parks once for them all */
    int unknown = !nsscache_uid(uid, fn, arg);
    char *items = xstrdup(core.cfg.isolation_require_gvisor);
    for (char *save = NULL, *t = strtok_r(items, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
        if (t[0] == '@')
            unknown += !nsscache_group(t + 1, fn, arg);
    free(items);
    return unknown;
}

bool account_known(uid_t uid, nsscache_fn fn, void *arg) { return account_unknown(uid, fn, arg) == 0; }

/* getpwuid_r's and getgrnam_r's buffer: as sysconf says, else 16 KiB, grown on ERANGE */
static long buf_size(int which)
{
    long n = sysconf(which);
    return n > 0 ? n : 16384;
}

bool account_listed(const char *list, uid_t uid, gid_t gid, char *rule, size_t len)
{
    char *items = xstrdup(list);
    struct passwd pwb, *pw = NULL;
    long pn = buf_size(_SC_GETPW_R_SIZE_MAX);
    char *pbuf = xmalloc((size_t)pn);
    int rc;
    while ((rc = getpwuid_r(uid, &pwb, pbuf, (size_t)pn, &pw)) == ERANGE && pn < (1l << 24))
        pbuf = xrealloc(pbuf, (size_t)(pn *= 2));
    if (rc)
        pw = NULL;
    /* the account's groups (its login group and those that list it), and the group it asks with:
     * a rule is a restriction, so a user who switched groups (sg, newgrp) is still its login
     * group's member (with gid alone, `sg other rnx job run` left an @login-group rule behind) */
    int ng = 0;
    gid_t *groups = NULL;
    if (pw) {
        ng = 64;
        groups = xcalloc((size_t)ng, sizeof *groups);
        if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &ng) < 0) {
            /* more than fit: ng says how many there are */
            free(groups);
            groups = xcalloc((size_t)ng + 1, sizeof *groups);
            if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &ng) < 0) {
                groups[0] = pw->pw_gid;
                ng = 1;
            }
        }
    }
    groups = xrealloc(groups, ((size_t)ng + 1) * sizeof *groups);
    groups[ng++] = gid;
    bool hit = false;
    for (char *save = NULL, *t = strtok_r(items, ", ", &save); t && !hit; t = strtok_r(NULL, ", ", &save)) {
        if (t[0] == '@') {
            struct group grb, *g = NULL;
            long gn = buf_size(_SC_GETGR_R_SIZE_MAX);
            char *gbuf = xmalloc((size_t)gn);
            while ((rc = getgrnam_r(t + 1, &grb, gbuf, (size_t)gn, &g)) == ERANGE && gn < (1l << 24))
                gbuf = xrealloc(gbuf, (size_t)(gn *= 2));
            for (int i = 0; !rc && g && i < ng && !hit; i++)
                hit = groups[i] == g->gr_gid;
            free(gbuf);
        } else {
            char *end;
            unsigned long n = strtoul(t, &end, 10);
            hit = (pw && !strcmp(t, pw->pw_name)) || (*t && !*end && n == uid);
        }
        if (hit && rule)
            snprintf(rule, len, "%s", t);
    }
    free(groups);
    free(pbuf);
    free(items);
    return hit;
}
