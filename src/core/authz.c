/* The authorization table (authz.h). */
#include "authz.h"

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "../common/util.h"
#include "state.h"

#define R(x) (1u << (x))
#define AT_LEAST_MAINTAINER (R(ROLE_MAINTAINER) | R(ROLE_ADMIN))
#define RUNS_THE_MACHINE (R(ROLE_OPERATOR) | R(ROLE_ADMIN))

/* operation            roles that may                       who it is for, in a refusal */
static const struct {
    unsigned roles;
    const char *who;
} table[AUTHZ_N] = {
    [AUTHZ_OTHERS_JOBS] = {AT_LEAST_MAINTAINER, "root"},
    [AUTHZ_OTHERS_VOLUMES] = {RUNS_THE_MACHINE, "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_GPU_SERVICE] = {RUNS_THE_MACHINE, "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_AUDIT] = {RUNS_THE_MACHINE, "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_METRICS] = {RUNS_THE_MACHINE | R(ROLE_MAINTAINER),
                       "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_RUNTIMES] = {RUNS_THE_MACHINE, "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_HISTORY_ALL] = {RUNS_THE_MACHINE | R(ROLE_MAINTAINER),
                           "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_UNLIMITED] = {R(ROLE_ADMIN), "root"},
};

static const char *const role_names[ROLE_N] = {"reader", "developer", "operator", "maintainer", "admin"};

const char *authz_role_name(enum authz_role r) { return r < ROLE_N ? role_names[r] : "?"; }

/* A member of server.admin_group, as primary group or listed member. */
static bool in_admin_group(uid_t uid, gid_t gid)
{
    if (!*core.cfg.admin_group)
        return false;
    struct group *g = getgrnam(core.cfg.admin_group);
    if (!g)
        return false;
    if (g->gr_gid == gid)
        return true;
    struct passwd *pw = getpwuid(uid);
    for (char **m = g->gr_mem; pw && m && *m; m++)
        if (!strcmp(*m, pw->pw_name))
            return true;
    return false;
}

caller authz_local(uid_t uid, gid_t gid)
{
    enum authz_role role = uid == 0 ? ROLE_ADMIN : in_admin_group(uid, gid) ? ROLE_OPERATOR : ROLE_DEVELOPER;
    return (caller){.uid = uid, .gid = gid, .role = role, .via = CALLER_UNIX};
}

bool authz_may(const caller *c, enum authz_op op) { return op < AUTHZ_N && (table[op].roles & R(c->role)); }

bool authz_may_on(const caller *c, enum authz_op op, uid_t owner) { return c->uid == owner || authz_may(c, op); }

int authz_check(const caller *c, enum authz_op op, const char *what, jerr *e)
{
    if (authz_may(c, op))
        return 0;
    bool group = strstr(table[op].who, "server.admin_group") != NULL;
    return jerr_http(e, 403, "%s is for %s%s%s%s; you are uid %u (%s)", what, table[op].who, group ? " (" : "",
                     group ? (*core.cfg.admin_group ? core.cfg.admin_group : "not set") : "", group ? ")" : "",
                     (unsigned)c->uid, authz_role_name(c->role));
}
