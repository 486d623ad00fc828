/* The count of descriptors connections hold besides their sockets (connfds.h). The users who
 * hold some are few (each holds a connection per holder): a walk of them is short. */
#include "connfds.h"

#include <stdlib.h>

#include "../common/fairshare.h"
#include "../common/util.h"

typedef struct connfds_user {
    uid_t uid;
    uint64_t n;
} connfds_user;

static uint64_t budget = UINT64_MAX, nofile, held;
static connfds_user *users;
static size_t nusers, cap;

void connfds_set(uint64_t b, uint64_t limit)
{
    budget = b;
    nofile = limit;
}

uint64_t connfds_held(void) { return held; }
uint64_t connfds_budget(void) { return budget; }

static connfds_user *connfds_user_of(uid_t uid, bool make)
{
    for (size_t i = 0; i < nusers; i++)
        if (users[i].uid == uid)
            return &users[i];
    if (!make)
        return NULL;
    if (nusers == cap) {
        cap = cap ? cap * 2 : 16;
        users = xrealloc(users, cap * sizeof *users);
    }
    users[nusers] = (connfds_user){.uid = uid};
    return &users[nusers++];
}

int connfds_check(const caller *who, unsigned n, const char *what, jerr *e)
{
    if (budget == UINT64_MAX)
        return 0;
    const connfds_user *u = connfds_user_of(who->uid, false);
    uint64_t mine = u ? u->n : 0;
    fairshare f = fairshare_of(budget, 0, CONNFDS_FLOOR);
    switch (fairshare_take(&f, held, mine, n, authz_may(who, AUTHZ_UNLIMITED))) {
    case FAIRSHARE_OK:
        return 0;
    case FAIRSHARE_FULL:
        return jerr_busy(e, "joblet holds %llu of the %llu descriptors it keeps for what connections hold besides "
                            "their sockets (log followers, terminals, execs, copies, uploads: the connections' half of "
                            "its open-file limit, ulimit -n %llu, less server.max_connections' part), and %s needs %u: "
                            "nothing was done; try again once some end (the systemd unit sets LimitNOFILE=1048576)",
                         (unsigned long long)held, (unsigned long long)budget, (unsigned long long)nofile, what, n);
    case FAIRSHARE_SHARE:
        return jerr_http(e, 429, "uid %u holds %llu of the %llu descriptors joblet keeps for what connections hold "
                                 "besides their sockets (log followers, terminals, execs, copies, uploads; under ulimit "
                                 "-n %llu), and a user's share is a quarter of them, %llu: %s needs %u more; end some "
                                 "first", (unsigned)who->uid, (unsigned long long)mine, (unsigned long long)budget,
                         (unsigned long long)nofile, (unsigned long long)f.share, what, n);
    case FAIRSHARE_RESERVED:
        break;
    }
    return jerr_busy(e, "joblet holds %llu of the %llu descriptors it keeps for what connections hold besides their "
                        "sockets (log followers, terminals, execs, copies, uploads; under ulimit -n %llu), and the last "
                        "%llu are kept for admins and for users who hold at most %llu; uid %u holds %llu, and %s needs "
                        "%u: nothing was done; try again once some end",
                     (unsigned long long)held, (unsigned long long)budget, (unsigned long long)nofile,
                     (unsigned long long)f.reserve, (unsigned long long)f.floor, (unsigned)who->uid,
                     (unsigned long long)mine, what, n);
}

void connfds_add(uid_t uid, unsigned n)
{
    held += n;
    connfds_user_of(uid, true)->n += n;
}

int connfds_take(const caller *who, unsigned n, const char *what, jerr *e)
{
    if (connfds_check(who, n, what, e) < 0)
        return -1;
    connfds_add(who->uid, n);
    return 0;
}

void connfds_give(uid_t uid, unsigned n)
{
    held = held >= n ? held - n : 0;
    connfds_user *u = connfds_user_of(uid, false);
    if (!u)
        return;
    u->n = u->n >= n ? u->n - n : 0;
    if (!u->n)
        *u = users[--nusers];
}
