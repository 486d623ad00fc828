/* Parked requests (park.h). libmicrohttpd calls a suspended connection's handler again once it
 * is resumed, with the body it had: the route simply runs again and finds the work done. */
#include "park.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"
#include "../core/account.h"
#include "../core/loop.h"

/* A bound, so that waiting clients cannot pile up; a user other than root holds at most
 * PARK_PER_USER of them, so that one user's waits (64 connections' worth) leave the others some */
#define PARK_MAX 64
#define PARK_PER_USER 16
/* The waits on account look-ups one request may make: its caller's account (a TLS person's,
 * then its uid's with require_gvisor's groups, asked at once), a route's own (a name it is
 * given); answers asked after it began count for it however long they took
 * (nsscache_accept_since), so more means keys taken back from the cache under pressure
 * (NSSCACHE_MAX in use): refused then (503), never a wait without end */
#define PARK_LOOKUP_WAITS 8

static park_slot *parked; /* holding a ticket */
static size_t nparked;
static uint64_t next_ticket = 1;

static void unlink_slot(park_slot *s)
{
    for (park_slot **p = &parked; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            nparked--;
            break;
        }
    s->ticket = 0;
    s->account[0] = '\0';
    s->next = NULL;
}

/* A ticket for r, counted as its user's; account: who asks is not settled yet (park.h), counted
 * as that account's (all such requests have uid -1: one account slow to look up, its person's
 * connections parked on it, left no ticket for any other person's first request). */
static uint64_t take_ticket(request *r, const char *account)
{
    park_slot *s = r->park;
    if (!s || s->ticket || nparked >= PARK_MAX)
        return 0;
    if (!authz_may(&r->who, AUTHZ_UNLIMITED)) {
        size_t mine = 0;
        for (park_slot *p = parked; p; p = p->next)
            mine += p->uid == r->who.uid && !strcmp(p->account, account ? account : "");
        if (mine >= PARK_PER_USER)
            return 0;
    }
    s->uid = r->who.uid;
    snprintf(s->account, sizeof s->account, "%s", account ? account : "");
    s->ticket = next_ticket++;
    s->conn = r->conn;
    s->next = parked;
    parked = s;
    nparked++;
    return s->ticket;
}

uint64_t park_ticket(request *r) { return take_ticket(r, NULL); }

void park_wait(request *r)
{
    r->park->suspended = true;
    stream_hold(&r->park->hold, r->conn, NULL, NULL);
}

/* A slot's waiters on look-ups not answered yet, taken back (nsscache_forget). */
static void off_lookups(park_slot *s)
{
    if (s->on_lookup && s->ticket)
        nsscache_forget(park_wake_lookup, (void *)(uintptr_t)s->ticket);
    s->on_lookup = false;
}

void park_wake(uint64_t ticket, const jerr *e)
{
    park_slot *s = parked;
    while (s && s->ticket != ticket)
        s = s->next;
    if (!s || !s->suspended)
        return;
    off_lookups(s); /* (those of another look-up it waited on too: it runs again now) */
    unlink_slot(s);
    s->suspended = false;
    s->resumed = true;
    if (e) {
        s->error = xmalloc(sizeof *s->error);
        *s->error = *e;
    }
    stream_release(&s->hold);
}

void park_wake_fn(void *arg, const jerr *e) { park_wake((uint64_t)(uintptr_t)arg, e); }

void park_wake_lookup(void *arg)
{
    uint64_t ticket = (uint64_t)(uintptr_t)arg;
    park_slot *s = parked;
    while (s && s->ticket != ticket)
        s = s->next;
    /* woken once every look-up it waits on is answered (or failed): it needs them all */
    if (s && s->suspended && s->lookups > 1) {
        s->lookups--;
        return;
    }
    park_wake(ticket, NULL);
}

/* r parks on n look-ups (its waiters on them registered), or is refused when it waited too often. */
static bool wait_lookups(request *r, int n, jerr *e)
{
    if (r->park->lookup_waits >= PARK_LOOKUP_WAITS) {
        nsscache_forget(park_wake_lookup, (void *)(uintptr_t)r->park->ticket);
        park_lapse(r->park);
        jerr_busy(e, "the account look-ups this request needs were not all kept after %d waits (too many "
                     "accounts are being looked up): try again", PARK_LOOKUP_WAITS);
        return false;
    }
    r->park->lookup_waits++;
    r->park->lookups = (unsigned)n;
    r->park->on_lookup = true;
    park_wait(r);
    return true;
}

static const nss_entry *ask(enum nss_kind kind, uid_t uid, const char *name, nsscache_fn fn, void *arg)
{
    return kind == NSS_UID ? nsscache_uid(uid, fn, arg) : kind == NSS_USER ? nsscache_user(name, fn, arg)
                                                                            : nsscache_group(name, fn, arg);
}

const nss_entry *park_for_account(request *r, enum nss_kind kind, uid_t uid, const char *name, jerr *e)
{
    const nss_entry *a = ask(kind, uid, name, NULL, NULL);
    if (a)
        return a;
    bool unsettled = r->who.via == CALLER_TLS && r->who.uid == (uid_t)-1; /* (http.c: its own account) */
    uint64_t t = take_ticket(r, unsettled && name ? name : NULL);
    if (!t) {
        jerr_busy(e, "too many requests wait already (for account look-ups among others): try again");
        return NULL;
    }
    if ((a = ask(kind, uid, name, park_wake_lookup, (void *)(uintptr_t)t)))
        return a; /* (answered meanwhile: the ticket lapses after the route) */
    wait_lookups(r, 1, e);
    return NULL;
}

bool park_for_account_known(request *r, uid_t uid, bool for_account, jerr *e)
{
    if (account_known(uid, NULL, NULL))
        return true;
    uint64_t t = park_ticket(r);
    int n = t ? account_unknown(uid, park_wake_lookup, (void *)(uintptr_t)t) : 0;
    if (n) {
        if (wait_lookups(r, n, e))
            r->park->for_account = for_account;
        return false;
    }
    park_lapse(r->park);
    if (!t) {
        jerr_busy(e, "too many requests wait already (for account look-ups among others): try again");
        return false;
    }
    return true; /* (answered meanwhile) */
}

typedef struct next_turn {
    loop_task task;
    uint64_t ticket;
} next_turn;

static void on_next_turn(loop_task *t)
{
    next_turn *nt = t->data;
    park_wake(nt->ticket, NULL); /* ignored when the client went away */
    free(nt);
}

bool park_until_next_turn(request *r)
{
    uint64_t ticket = park_ticket(r);
    if (!ticket)
        return false;
    next_turn *nt = xcalloc(1, sizeof *nt);
    nt->task = (loop_task){.fn = on_next_turn, .data = nt};
    nt->ticket = ticket;
    loop_later(&nt->task);
    park_wait(r);
    return true;
}

bool park_resumed(park_slot *s, const jerr **error)
{
    bool r = s->resumed;
    s->resumed = false;
    if (!r)
        s->named[0] = '\0'; /* a new request: what an earlier one parked on is not its */
    *error = r ? s->error : NULL;
    return r;
}

void park_lapse(park_slot *s)
{
    if (s->ticket && !s->suspended)
        unlink_slot(s);
}

void park_forget(park_slot *s)
{
    stream_forget(&s->hold);
    off_lookups(s);
    if (s->ticket)
        unlink_slot(s);
    free(s->error);
    s->error = NULL;
}

void park_wake_all(const jerr *e)
{
    for (park_slot *s = parked, *next; s; s = next) {
        next = s->next;
        if (s->suspended)
            park_wake(s->ticket, e);
    }
}
