/* Parked requests (park.c): a route that must wait for work the loop finishes later (a volume
 * being formatted) suspends its connection instead of answering, and runs again when that work
 * is done. */
#ifndef JOBLET_PARK_H
#define JOBLET_PARK_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../core/nsscache.h"
#include "http.h"
#include "stream.h"

/* Each connection's place, inside http.c's state of it (zeroed with it). */
typedef struct park_slot {
    uint64_t ticket;           /* 0: not parked */
    struct MHD_Connection *conn;
    stream_held hold;          /* while suspended (stream.h) */
    bool suspended, resumed;
    jerr *error;               /* the wait failed: this is the answer */
    uint64_t tally;            /* the route's own count across its parked runs (DELETE /v1/jobs) */
    uid_t uid;                 /* whose request holds the ticket */
    char account[256];         /* ... when who asks is not settled yet (a TLS connection whose
                                * person's account is being looked up: uid -1), the account:
                                * counted as that account's, not as one user's for them all */
    bool for_account;          /* parked by http.c for the caller's account: its route has not run */
    bool on_lookup;            /* its ticket waits on account look-ups (core/nsscache.h): taken back
                                * from them when it is woken or the connection goes */
    unsigned lookups;          /* ... how many of them are not answered yet: woken at the last */
    unsigned lookup_waits;     /* the request's waits on look-ups so far (park.c: a bound) */
    uint64_t since;            /* nsscache_gen() when the request began (nsscache_accept_since) */
    char named[37];            /* the full id of the job the parked route acted on: its rerun
                                * names that job, not the request's reference again (a name
                                * may pass to another job meanwhile); cleared by a new request */
    struct park_slot *next;
} park_slot;

/* For a route: take a ticket first (0 when too many requests wait already: answer 503), hand
 * it to the work, then either answer at once as usual (the ticket lapses) or call park_wait
 * and return MHD_YES: the connection is suspended with nothing answered. park_wake(ticket,
 * NULL) resumes it and the route runs again from the start, with the same body and
 * r->resumed set; park_wake(ticket, e) answers e instead. A ticket that lapsed, or whose client
 * went away, is ignored. */
uint64_t park_ticket(request *r);
void park_wait(request *r);
void park_wake(uint64_t ticket, const jerr *e);
/* park_wake as a callback of the work (core/volumes.h's volumes_done_fn): arg is the ticket. */
void park_wake_fn(void *arg, const jerr *e);
/* Parks the request until the next turn of the loop: for a route that does its work a slice per
 * turn. false when no ticket is left (the route then does the rest now). */
bool park_until_next_turn(request *r);

/* The account or group (core/nsscache.h: kind, and uid or name) a route needs, when known now;
 * else the request parks until it is answered, and the route runs again (NULL, e untouched), or
 * NULL with a 503 in e when no ticket is left (or the request waited on look-ups
 * PARK_LOOKUP_WAITS times already). A request whose caller is not settled yet (http.c:
 * a TLS connection waiting for its person's account, uid -1) holds a ticket of that account's
 * (PARK_PER_USER of them), not of one user shared by every such connection. */
const nss_entry *park_for_account(request *r, enum nss_kind kind, uid_t uid, const char *name, jerr *e);
/* Whether uid's account, and what its requests may need with it, are known now (core/account.h's
 * account_known); else the request parks until one is answered, and runs again (false, e
 * untouched), or false with a 503 in e when no ticket is left. for_account: the rerun is not the
 * route's own (http.c: the caller's, before its route runs). */
bool park_for_account_known(request *r, uid_t uid, bool for_account, jerr *e);
/* The callback of a look-up a request parked on (core/nsscache.h's nsscache_fn): arg the ticket.
 * A request parked on several (its account and require_gvisor's groups, asked at once) runs
 * again once the last is answered. */
void park_wake_lookup(void *arg);

/* For http.c: whether the connection comes back from a wait (and the error that is then its
 * answer), once; after the route ran, a ticket it did not wait on lapses; the connection is
 * done; the server stops (every suspended connection is resumed with e). */
bool park_resumed(park_slot *s, const jerr **error);
void park_lapse(park_slot *s);
void park_forget(park_slot *s);
void park_wake_all(const jerr *e);

#endif
