/* Who is asking, and what they may do: the caller the API's edge makes for each request, and
 * the one table that decides every permission (authz.c). No other file compares a uid with 0
 * to decide what someone may do, or asks whether someone is an admin.
 *
 * Roles (docs/api.md "Who may do what"): reader ⊂ developer ⊂ maintainer ⊂ admin, and
 * operator, a developer who also runs the machine (GPU service states, the audit, runtimes,
 * metrics, everyone's volumes) without acting on others' jobs. A local account on the unix
 * socket: root is admin, the members of server.admin_group are operators, everyone else a
 * developer. A person on the TLS listener (docs/remote.md): the role their certificate names,
 * acting as the local account remote.users maps them to (by default the account of their name,
 * never root unless mapped so). */
#ifndef JOBLET_CORE_AUTHZ_H
#define JOBLET_CORE_AUTHZ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

enum authz_role { ROLE_READER, ROLE_DEVELOPER, ROLE_OPERATOR, ROLE_MAINTAINER, ROLE_ADMIN, ROLE_N };

/* Where a caller came from. */
enum caller_via { CALLER_UNIX, CALLER_TLS };

typedef struct caller {
    uid_t uid;                /* the local account it acts as: its jobs run as this uid */
    gid_t gid;
    enum authz_role role;
    enum caller_via via;
    pid_t pid;                /* CALLER_UNIX: the process that connected (SO_PEERCRED); 0 unknown */
    /* CALLER_TLS: who the certificate names, its serial (lowercase hex), where they connect from */
    char person[65];
    char serial[41];
    char peer[64];
} caller;

/* What may be asked. Each is one row of authz.c's table: the roles that may do it. */
enum authz_op {
    AUTHZ_OTHERS_JOBS,        /* see and act on jobs and workflows of other users */
    AUTHZ_OTHERS_VOLUMES,     /* use, inspect and delete volumes of other users */
    AUTHZ_OTHERS_NETWORKS,    /* see, join and remove named networks of other users */
    AUTHZ_NETWORK_ADDRESSES,  /* make a named network outside network.user_pool: a route on the host
                               * for addresses it may reach through its default route (a resolver,
                               * a mirror, a metadata service), taken over by the network's jobs */
    AUTHZ_GPU_SERVICE,        /* drain, offline, online a GPU */
    AUTHZ_AUDIT,              /* read the audit trail */
    AUTHZ_METRICS,            /* GET /metrics: every user's jobs by name */
    AUTHZ_RUNTIMES,           /* build, import, remove runtimes */
    AUTHZ_HISTORY_ALL,        /* the History page's figures of every user, and a sample on demand */
    AUTHZ_UNLIMITED,          /* per-user bounds (streams, parked requests, volumes' shares) do not apply */
    AUTHZ_CHANGE,             /* anything but reading: run, stop, delete, create (a reader may only read) */
    AUTHZ_OTHERS_TERMINALS,   /* attach to the terminal of another user's job: type as them */
    AUTHZ_OTHERS_EXEC,        /* run a process inside another user's job (rnx job exec): act as them */
    AUTHZ_OTHERS_COPY_IN,     /* copy files into another user's job (rnx job cp into it): what it may run */
    AUTHZ_SLURM_GPUS,         /* say which GPUs Slurm gave a Slurm task (the SPANK plugin's connection,
                               * opened as root before slurmstepd drops to the user) */
    AUTHZ_SUSPEND,            /* suspend and resume a running job (its room and GPUs stay held), as in Slurm */
    AUTHZ_RAISE_PRIORITY,     /* raise a job's priority above what it had (its owner may lower it) */
    AUTHZ_RAISE_RUNTIME,      /* raise or take away the time limit of a job that runs (the scheduler
                               * started it, and backfilled others, by it; its owner may lower it) */
    AUTHZ_RELEASE_ADMIN_HOLD, /* release a job or array held by another uid than its owner (an admin's
                               * hold, Slurm's JobHeldAdmin); the owner's own hold is the owner's */
    AUTHZ_OTHERS_SLURM_TASKS, /* run another uid's Slurm task in joblet (slurmstepd's root, through the
                               * SPANK plugin; on the unix socket only, where the pid is the caller's) */
    AUTHZ_N
};

/* The caller of a request on the unix socket: its peer's uid and gid, its role from them (an
 * operator's from its account as core/nsscache.h knows it: the API waits for it before a route
 * runs; not known, the lesser role). */
caller authz_local(uid_t uid, gid_t gid);
/* Whether authz_local's role for uid is settled: root's, and anyone's without server.admin_group,
 * are; else the account's look-up (core/nsscache.h) must be known now (and is asked when it is
 * not: false, until it is answered). */
bool authz_local_known(uid_t uid);
/* The identity who's job acts with when it uses what others own (their volumes, networks, jobs
 * in --after): its account's rights, and no more than who's certificate gives (a developer's
 * certificate on an account of the admin group does not reach others' volumes through a job).
 * A local caller: authz_local of its uid. What is checked with it at submission holds again when
 * the job starts, where the account's rights are checked (authz_local of the owner). */
caller authz_as_account(const caller *who);
/* A person on the TLS listener: the local account remote.users maps `person` to, else the
 * account of that name (never root unless mapped explicitly), with the role their certificate
 * names. 0, or -1 with a 403 in e saying why nobody is mapped. */
int authz_remote(const char *person, enum authz_role role, caller *out, jerr *e);
/* The local account name person acts as (remote.users, else their own name); *mapped whether
 * remote.users maps them. The account is looked up off the loop (core/nsscache.h): the API
 * waits for it before authz_remote, which answers 503 while it is not known. */
const char *authz_remote_account(const char *person, bool *mapped);
/* The role a certificate names ("developer"), -1 when it names none of them. */
int authz_role_parse(const char *name);
/* Whether c may do op. */
bool authz_may(const caller *c, enum authz_op op);
/* The same for an object owned by owner: its owner always may. */
bool authz_may_on(const caller *c, enum authz_op op, uid_t owner);
/* 0, or -1 with a 403 in e saying what op is for and who c is ("gpu drain is for ..."). what
 * names the action as the user asked for it ("gpu drain", "the audit trail"). */
int authz_check(const caller *c, enum authz_op op, const char *what, jerr *e);
/* The role's name: reader, developer, operator, maintainer, admin. */
const char *authz_role_name(enum authz_role r);

#endif
