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

gid_t *account_groups(const struct passwd *pw, int *n)
{
    int ng = 64;
    gid_t *groups = xcalloc((size_t)ng, sizeof *groups);
    if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &ng) < 0) {
        /* more than fit: ng says how many there are */
        free(groups);
        groups = xcalloc((size_t)ng + 1, sizeof *groups);
        if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &ng) < 0) {
            groups[0] = pw->pw_gid;
            ng = 1;
        }
    }
    *n = ng;
    return groups;
}

bool account_has_group(const struct passwd *pw, gid_t gid)
{
    if (pw->pw_gid == gid)
        return true;
    int ng;
    gid_t *groups = account_groups(pw, &ng);
    bool found = false;
    for (int i = 0; i < ng && !found; i++)
        found = groups[i] == gid;
    free(groups);
    return found;
}

/* The account uid submits as, pinned in the request (account_pin): its name, and gid when it is
 * one of the account's groups (as sg or newgrp gives it); none for a uid without an account. */
void account_pin(job_req *req, uid_t uid, gid_t gid)
{
    struct passwd *pw = getpwuid(uid);
    char pin[300];
    if (!pw || strlen(pw->pw_name) > 255 || strchr(pw->pw_name, ':')) {
        jobreq_set_str(req, JR_ACCOUNT_PIN, NULL);
        return;
    }
    if (account_has_group(pw, gid))
        snprintf(pin, sizeof pin, "%s:%u", pw->pw_name, (unsigned)gid);
    else
        snprintf(pin, sizeof pin, "%s", pw->pw_name);
    jobreq_set_str(req, JR_ACCOUNT_PIN, pin);
}

int account_verify(const job_req *req, uid_t owner, gid_t gid, jerr *e)
{
    const char *pin = req->account_pin;
    if (!pin || !*pin)
        return 0;
    char name[300];
    snprintf(name, sizeof name, "%s", pin);
    char *colon = strchr(name, ':');
    if (colon)
        *colon = 0;
    errno = 0;
    struct passwd *pw = getpwuid(owner);
    int err = errno;
    if (!pw || strcmp(pw->pw_name, name)) {
        if (pw)
            return jerr_http(e, 403, "the account '%s' that submitted the job is gone: uid %u is account '%s' now; "
                                     "the job does not run as another account",
                             name, (unsigned)owner, pw->pw_name);
        /* not found is 0, ENOENT, ESRCH, EBADF or EPERM (getpwuid(3)); else the lookup failed
         * (a directory service away): the job does not run as an account it cannot confirm */
        if (err && err != ENOENT && err != ESRCH && err != EBADF && err != EPERM)
            return jerr_http(e, 503, "the account '%s' (uid %u) that submitted the job could not be looked up: %s",
                             name, (unsigned)owner, strerror(err));
        return jerr_http(e, 403, "the account '%s' (uid %u) that submitted the job is gone", name,
                         (unsigned)owner);
    }
    if (colon && !account_has_group(pw, gid))
        return jerr_http(e, 403, "account '%s' (uid %u) is no longer a member of group %u, which the job was submitted "
                                 "with; the job does not run with it (submit it again)",
                         name, (unsigned)owner, (unsigned)gid);
    return 0;
}

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
    gid_t *groups = pw ? account_groups(pw, &ng) : NULL;
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
