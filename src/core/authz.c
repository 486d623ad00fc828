/* The authorization table (authz.h). */
#include "authz.h"

#include <stdio.h>
#include <string.h>

#include "../common/util.h"
#include "nsscache.h"
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
    [AUTHZ_OTHERS_NETWORKS] = {RUNS_THE_MACHINE, "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_NETWORK_ADDRESSES] = {RUNS_THE_MACHINE, "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_GPU_SERVICE] = {RUNS_THE_MACHINE, "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_AUDIT] = {RUNS_THE_MACHINE, "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_METRICS] = {RUNS_THE_MACHINE | R(ROLE_MAINTAINER),
                       "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_RUNTIMES] = {RUNS_THE_MACHINE, "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_HISTORY_ALL] = {RUNS_THE_MACHINE | R(ROLE_MAINTAINER),
                           "admins: root, or members of the group named by server.admin_group"},
    [AUTHZ_UNLIMITED] = {R(ROLE_ADMIN), "root"},
    [AUTHZ_CHANGE] = {R(ROLE_DEVELOPER) | RUNS_THE_MACHINE | AT_LEAST_MAINTAINER,
                      "developers, maintainers and admins (a reader's certificate only reads)"},
    /* keys typed into a job's terminal act as the job's user: only root, who may be anyone */
    [AUTHZ_OTHERS_TERMINALS] = {R(ROLE_ADMIN), "root"},
    [AUTHZ_OTHERS_EXEC] = {R(ROLE_ADMIN), "root"},
    /* files put in a running job are the job's user's to run: as exec (a maintainer reads, stops) */
    [AUTHZ_OTHERS_COPY_IN] = {R(ROLE_ADMIN), "root"},
    /* which GPUs a task may use is Slurm's word: only what slurmstepd's root said counts */
    [AUTHZ_SLURM_GPUS] = {R(ROLE_ADMIN), "root (the SPANK plugin's connection, opened in slurm_spank_task_init_privileged)"},
    /* a suspended job keeps the machine's room and GPUs: the machine's people decide (Slurm: admins) */
    [AUTHZ_SUSPEND] = {R(ROLE_ADMIN), "root"},
    [AUTHZ_RAISE_PRIORITY] = {R(ROLE_ADMIN), "root"},
    /* a running job's time limit is what the scheduler planned the machine by (backfill: the job
     * first in line waits for it to end by then), as Slurm's TimeLimit raised only by an admin;
     * a waiting job's the owner may change (submitted again, it could have any) */
    [AUTHZ_RAISE_RUNTIME] = {R(ROLE_ADMIN), "root"},
    /* an admin's hold keeps a job from running (a maintenance window, a misbehaving sweep): its
     * owner cannot undo it; those who may hold others' jobs may release it */
    [AUTHZ_RELEASE_ADMIN_HOLD] = {AT_LEAST_MAINTAINER, "root"},
    /* a task runs as its Slurm uid: only root, who may be anyone (slurmstepd's plugin) */
    [AUTHZ_OTHERS_SLURM_TASKS] = {R(ROLE_ADMIN), "root (the SPANK plugin, in slurmstepd)"},
};

static const char *const role_names[ROLE_N] = {"reader", "developer", "operator", "maintainer", "admin"};

const char *authz_role_name(enum authz_role r) { return r < ROLE_N ? role_names[r] : "?"; }

/* A member of server.admin_group, as primary group or listed member: as the account's look-up
 * found it (nsscache.h); not while it is not known, nor when it failed (the lesser role: the
 * API waits for the caller's account before a route runs, a job for its owner's before it
 * starts). */
static bool in_admin_group(uid_t uid, gid_t gid)
{
    if (!*core.cfg.admin_group)
        return false;
    const nss_entry *a = nsscache_uid(uid, NULL, NULL);
    if (!a || !a->admin_known)
        return false;
    return a->admin_gid == gid || (!a->err && a->admin_lists);
}

int authz_role_parse(const char *name)
{
    for (int r = 0; r < ROLE_N; r++)
        if (r != ROLE_OPERATOR && !strcmp(name, role_names[r])) /* operator: the local admin group's */
            return r;
    return -1;
}

const char *authz_remote_account(const char *person, bool *mapped)
{
    const char *account = person;
    *mapped = false;
    for (unsigned i = 0; i < core.cfg.remote.nusers; i++)
        if (!strcmp(core.cfg.remote.users[i].person, person)) {
            account = core.cfg.remote.users[i].account;
            *mapped = true;
        }
    return account;
}

int authz_remote(const char *person, enum authz_role role, caller *out, jerr *e)
{
    bool mapped;
    const char *account = authz_remote_account(person, &mapped);
    /* the account of the same name, unless remote.users gives it to another person: two
     * people on one account would own each other's jobs (config.c refuses two mappings onto
     * one account; this is the same rule for the name that is not mapped) */
    for (unsigned i = 0; !mapped && i < core.cfg.remote.nusers; i++)
        if (!strcmp(core.cfg.remote.users[i].account, account))
            return jerr_http(e, 403, "%s has a certificate of this node's CA, but remote.users maps %s onto the "
                                     "account '%s': one account per person; map %s to an account of their own "
                                     "(docs/remote.md)", person, core.cfg.remote.users[i].person, account, person);
    const nss_entry *pw = nsscache_user(account, NULL, NULL);
    if (!pw) /* asked off the loop: the API waits (authz_remote_account) */
        return jerr_busy(e, "%s's account '%s' is being looked up: ask again", person, account);
    if (pw->err && !nsscache_none(pw->err))
        return jerr_http(e, 503, "%s's account '%s' could not be looked up: %s", person, account, strerror(pw->err));
    if (pw->err && mapped)
        return jerr_http(e, 403, "%s has a certificate of this node's CA, but no local account: remote.users maps %s "
                                 "to the account '%s', and there is no user '%s' here (docs/remote.md)", person, person,
                         account, account);
    if (pw->err)
        return jerr_http(e, 403, "%s has a certificate of this node's CA, but no local account: there is no user '%s',"
                                 " and remote.users does not map %s to another account (make the account, or add "
                                 "'%s: ACCOUNT' to remote.users; docs/remote.md)", person, account, person, person);
    if (pw->uid == 0 && !mapped)
        return jerr_http(e, 403, "%s would act as root: a certificate acts as root only when remote.users maps it to "
                                 "root explicitly (docs/remote.md)", person);
    *out = (caller){.uid = pw->uid, .gid = pw->gid, .role = role, .via = CALLER_TLS};
    snprintf(out->person, sizeof out->person, "%s", person);
    return 0;
}

caller authz_local(uid_t uid, gid_t gid)
{
    enum authz_role role = uid == 0 ? ROLE_ADMIN : in_admin_group(uid, gid) ? ROLE_OPERATOR : ROLE_DEVELOPER;
    return (caller){.uid = uid, .gid = gid, .role = role, .via = CALLER_UNIX};
}

bool authz_local_known(uid_t uid)
{
    return uid == 0 || !*core.cfg.admin_group || nsscache_uid(uid, NULL, NULL);
}

_Static_assert(AUTHZ_N <= 64, "ops_of keeps the operations in 64 bits");

/* The operations role r may do, as a set. */
static uint64_t ops_of(enum authz_role r)
{
    uint64_t set = 0;
    for (int op = 0; op < AUTHZ_N; op++)
        if (table[op].roles & R(r))
            set |= 1ull << op;
    return set;
}

caller authz_as_account(const caller *who)
{
    caller local = authz_local(who->uid, who->gid);
    if (who->via != CALLER_TLS)
        return local;
    /* the role that may the most of what both may (each role may a different set: the one
     * whose set is the largest within both's) */
    uint64_t both = ops_of(who->role) & ops_of(local.role);
    enum authz_role best = ROLE_READER;
    int most = -1;
    for (int r = 0; r < ROLE_N; r++) {
        uint64_t set = ops_of((enum authz_role)r);
        if ((set & ~both) == 0 && __builtin_popcountll(set) > most) {
            most = __builtin_popcountll(set);
            best = (enum authz_role)r;
        }
    }
    caller c = *who;
    c.role = best;
    return c;
}

/* "maintainer, admin": the certificate roles that may do op. */
static const char *roles_of(enum authz_op op)
{
    static char out[AUTHZ_N][64];
    if (!out[op][0]) {
        size_t n = 0;
        for (int r = 0; r < ROLE_N; r++)
            if (r != ROLE_OPERATOR && (table[op].roles & R(r)))
                n += (size_t)snprintf(out[op] + n, sizeof out[op] - n, "%s%s", n ? ", " : "", role_names[r]);
    }
    return out[op];
}

bool authz_may(const caller *c, enum authz_op op) { return op < AUTHZ_N && (table[op].roles & R(c->role)); }

bool authz_may_on(const caller *c, enum authz_op op, uid_t owner) { return c->uid == owner || authz_may(c, op); }

int authz_check(const caller *c, enum authz_op op, const char *what, jerr *e)
{
    if (authz_may(c, op))
        return 0;
    if (c->via == CALLER_TLS) /* the local words (root, the admin group) mean nothing to a certificate */
        return jerr_http(e, 403, "%s is for the roles %s; your certificate (%s) is a %s's", what, roles_of(op),
                         c->person, authz_role_name(c->role));
    bool group = strstr(table[op].who, "server.admin_group") != NULL;
    return jerr_http(e, 403, "%s is for %s%s%s%s; you are uid %u (%s)", what, table[op].who, group ? " (" : "",
                     group ? (*core.cfg.admin_group ? core.cfg.admin_group : "not set") : "", group ? ")" : "",
                     (unsigned)c->uid, authz_role_name(c->role));
}
