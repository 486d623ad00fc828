/* A job's history (job_events.h). Rows of the database's job_events table, written in the
 * same transaction as the state change they tell of. */
#include "job_events.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "arrays.h"
#include "state.h"

const char *job_event_name(enum job_event ev)
{
    static const char *const names[] = {
        [JE_SUBMITTED] = "submitted", [JE_PENDING] = "pending",   [JE_RELEASED] = "released",
        [JE_QUEUED] = "queued",       [JE_GRANTED] = "granted",   [JE_STARTED] = "started",
        [JE_STOPPING] = "stopping",   [JE_PREEMPTED] = "preempted", [JE_REQUEUED] = "requeued",
        [JE_RESTARTED] = "restarted", [JE_ENDED] = "ended",       [JE_ATTACHED] = "attached",
        [JE_DETACHED] = "detached",   [JE_EXEC] = "exec",
        [JE_HELD] = "held",           [JE_UPDATED] = "updated",   [JE_SUSPENDED] = "suspended",
        [JE_RESUMED] = "resumed",     [JE_SIGNALED] = "signaled",
    };
    return (size_t)ev < ARRAY_LEN(names) ? names[ev] : "?";
}

/* Events kept until a commit takes them: one that a failed commit rolled back (or whose insert
 * failed) is written again, before any later event (its job's history stays in order) or by
 * state.c's resync, as a job's row is; audit.c keeps its records of changes the same way. */
#define EVENTS_KEPT_MAX 65536
typedef struct kept_event {
    char id[64];
    int64_t ts_ms, uid;
    enum job_event ev;
    char *detail; /* NULL none */
    bool in_txn;  /* inserted into the open transaction */
} kept_event;

static kept_event *kept;
static size_t nkept, kept_cap, nlost; /* nlost: those not in the open transaction */
static uint64_t looked;               /* kept events looked at for lost ones: job_events_looked */

uint64_t job_events_looked(void) { return looked; }

static bool insert(kept_event *k)
{
    db_event x = {k->ts_ms, job_event_name(k->ev), k->uid, k->detail};
    jerr e = {0};
    if (db_event_add(core.db, k->id, &x, JOB_EVENTS_MAX, &e) < 0) {
        log_err("job %s: event %s not recorded (tried again after the next commit): %s", k->id, x.event, e.msg);
        return false;
    }
    k->in_txn = true;
    nlost--;
    return true;
}

/* Those a failed commit lost, into the open transaction, oldest first, until LOST_FAILS_MAX fail
 * in a row: the database takes none now (another process holds its lock, each insert fails at
 * once), and each of thousands more was a failed insert and a log line, at every resync. (One
 * whose own statement fails is passed over.) */
#define LOST_FAILS_MAX 4
static bool lost_tried; /* insert_lost ran in the open transaction */
static void insert_lost(void)
{
    lost_tried = true;
    int fails = 0;
    for (size_t i = 0; i < nkept && nlost && fails < LOST_FAILS_MAX; i++, looked++)
        if (!kept[i].in_txn)
            fails = insert(&kept[i]) ? 0 : fails + 1;
}

static void events_committed(bool ok)
{
    lost_tried = false;
    size_t k = 0;
    for (size_t i = 0; i < nkept; i++) {
        if (ok && kept[i].in_txn) {
            free(kept[i].detail);
            continue;
        }
        nlost += kept[i].in_txn;
        kept[i].in_txn = false;
        kept[k++] = kept[i];
    }
    nkept = k;
}

static bool events_unsaved(void) { return nlost > 0; }

static void events_resync(void)
{
    size_t before = nlost;
    insert_lost();
    if (before > nlost)
        log_info("job events: %zu that a failed commit lost written again", before - nlost);
}

static const state_rows event_rows = {events_committed, events_unsaved, events_resync};

static void record(const char *id, int64_t at_ms, enum job_event ev, int64_t uid, const char *fmt, va_list ap)
{
    char detail[1024];
    vsnprintf(detail, sizeof detail, fmt, ap);
    if (!core.db)
        return;
    if (!kept_cap) {
        kept_cap = 256;
        kept = xmalloc(kept_cap * sizeof *kept);
        state_rows_register(&event_rows);
    }
    /* the lost ones first, oldest first (each job's history in order: the column n counts its
     * events), once per transaction; while some stay lost, a new event waits behind them. Each
     * new event looked through every one kept for lost ones of its own job: with another
     * process holding the database's lock, 1,500 jobs canceled in one turn were 1,125,000 kept
     * events looked at (test_hostile_events), up to 65,536 x 65,536 as the list filled. */
    if (nlost && !lost_tried)
        insert_lost();
    bool in_order = !nlost;
    if (nkept == EVENTS_KEPT_MAX) {
        /* the database has taken no commit for that many events: the oldest eighth goes, in one
         * move (not the whole list moved for each new event while it stays full) */
        size_t drop = EVENTS_KEPT_MAX / 8;
        log_err("job %s: event %s and the %zu kept after it lost: more than %d events wait for the database",
                kept[0].id, job_event_name(kept[0].ev), drop - 1, EVENTS_KEPT_MAX);
        for (size_t i = 0; i < drop; i++) {
            nlost -= !kept[i].in_txn;
            free(kept[i].detail);
        }
        memmove(kept, kept + drop, (nkept - drop) * sizeof *kept);
        nkept -= drop;
    }
    if (nkept == kept_cap) {
        kept_cap *= 2;
        kept = xrealloc(kept, kept_cap * sizeof *kept);
    }
    kept_event *k = &kept[nkept++];
    *k = (kept_event){.ts_ms = at_ms > 0 ? at_ms : now_ms(), .uid = uid, .ev = ev,
                      .detail = *detail ? xstrdup(detail) : NULL};
    snprintf(k->id, sizeof k->id, "%s", id);
    nlost++;
    if (in_order)
        insert(k);
}

void job_events_forget(const char *id)
{
    if (!nlost)
        return;
    size_t k = 0;
    for (size_t i = 0; i < nkept; i++, looked++) {
        if (!kept[i].in_txn && !strcmp(kept[i].id, id)) {
            nlost--;
            free(kept[i].detail);
            continue;
        }
        kept[k++] = kept[i];
    }
    nkept = k;
}

void job_event(job *j, enum job_event ev, int64_t uid, const char *fmt, ...)
{
    j->ev_news = true;
    va_list ap;
    va_start(ap, fmt);
    record(j->id, 0, ev, uid, fmt, ap);
    va_end(ap);
}

void job_event_array(const jarray *a, enum job_event ev, int64_t uid, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(a->id, 0, ev, uid, fmt, ap);
    va_end(ap);
}

void job_event_at(job *j, int64_t at_ms, enum job_event ev, int64_t uid, const char *fmt, ...)
{
    j->ev_news = true;
    va_list ap;
    va_start(ap, fmt);
    record(j->id, at_ms, ev, uid, fmt, ap);
    va_end(ap);
}

int job_event_wait_is_new(job *j, uint8_t why)
{
    if (j->ev_wait == why + 1)
        return 0;
    j->ev_wait = (uint8_t)(why + 1);
    return 1;
}
