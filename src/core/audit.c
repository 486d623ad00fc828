/* The audit trail (audit.h). */
#include "audit.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "state.h"

/* Refusals recorded one by one: at most AUDIT_REFUSED_PER_WINDOW a source (a TLS peer's address,
 * a local uid) in a window of AUDIT_WINDOW_MS; those past it are counted, and the count is one
 * record when the window ends. Sources are kept in a table of AUDIT_SOURCES (one whose window
 * ended makes room, its count recorded first); past it, while every window in it is open, the
 * other sources share one bound (overflow). */
#define AUDIT_REFUSED_PER_WINDOW 10
#define AUDIT_WINDOW_MS 60000
#define AUDIT_SOURCES 256
/* The trail's size: pruned at most AUDIT_PRUNE_BATCH records a turn, every AUDIT_PRUNE_EVERY_MS
 * and after each AUDIT_PRUNE_INSERTS records (audit.keep_days, audit.max_rows). */
#define AUDIT_PRUNE_BATCH 5000
#define AUDIT_PRUNE_EVERY_MS 3600000
#define AUDIT_PRUNE_INSERTS 256
#define DAY_MS 86400000LL

typedef struct refusals {
    char source[64];          /* "" unused */
    int64_t since_ms;         /* the window's start */
    unsigned written, held;   /* recorded in the window; past the bound, not */
    caller last;              /* who was refused last (the count's record names them) */
    char why[200];            /* and why */
} refusals;

static refusals sources[AUDIT_SOURCES];
static int64_t flush_at_ms;   /* the earliest window's end with refusals held; 0 none */
static int64_t prune_at_ms;   /* the next prune; 0: at the first tick */
static unsigned inserted;     /* records since the last prune */

static void insert(const audit_rec *a)
{
    jerr e = {0};
    if (db_audit(core.db, a, &e) < 0)
        log_err("%s", e.msg);
    else if (++inserted >= AUDIT_PRUNE_INSERTS)
        prune_at_ms = 1;      /* due now */
}

void audit_record(const char *action, int64_t uid, int gpu, const char *job_id, int64_t duration_ms, int64_t memory_mb,
                  const char *detail)
{
    const char *uuid = gpu >= 0 && gpu < core.gpu.inv.n ? core.gpu.inv.gpu[gpu].uuid : NULL;
    audit_rec a = {.ts_ms = now_ms(), .uid = uid, .action = action, .gpu = gpu, .gpu_uuid = uuid, .job = job_id,
                   .duration_ms = duration_ms, .memory_mb = memory_mb, .detail = detail};
    insert(&a);
}

static void record_caller(const char *action, const caller *c, const char *job_id, const char *detail, int64_t ts)
{
    bool tls = c->via == CALLER_TLS;
    audit_rec a = {.ts_ms = ts, .uid = c->uid == (uid_t)-1 ? -1 : (int64_t)c->uid, .action = action, .gpu = -1,
                   .job = job_id, .duration_ms = -1, .memory_mb = -1, .detail = detail};
    if (tls) {
        a.person = c->person[0] ? c->person : NULL;
        a.serial = c->serial[0] ? c->serial : NULL;
        a.role = c->person[0] ? authz_role_name(c->role) : NULL; /* known once the certificate passed */
        a.peer = c->peer[0] ? c->peer : NULL;
    }
    insert(&a);
}

/* the refusals a source's window held, as one record; the window is over */
static void flush_one(refusals *r)
{
    if (r->held) {
        char detail[400];
        snprintf(detail, sizeof detail, "%u more refusals from %s in the minute since their first, not recorded "
                 "one by one (at most %d a minute a source); the last: %s", r->held, r->source,
                 AUDIT_REFUSED_PER_WINDOW, r->why);
        record_caller("refused", &r->last, NULL, detail, now_ms());
    }
    r->held = r->written = 0;
}

/* where a refusal comes from: a TLS peer's address without its port (an IPv6 one's /64, what one
 * host holds), else the local uid */
static void source_of(const caller *c, char *out, size_t len)
{
    if (c->via != CALLER_TLS || !c->peer[0]) {
        snprintf(out, len, "uid %u", (unsigned)c->uid);
        return;
    }
    char host[64];
    snprintf(host, sizeof host, "%s", c->peer);
    char *colon = strrchr(host, ':');
    if (colon && colon != host)
        *colon = 0;
    struct in6_addr a6;
    size_t hl = strlen(host);
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        host[hl - 1] = 0;
        if (inet_pton(AF_INET6, host + 1, &a6) == 1) {
            memset(a6.s6_addr + 8, 0, 8);
            char t[INET6_ADDRSTRLEN];
            inet_ntop(AF_INET6, &a6, t, sizeof t);
            snprintf(out, len, "%s/64", t);
            return;
        }
        host[hl - 1] = ']';
    }
    snprintf(out, len, "%s", host);
}

/* The refusals of sources past the table's AUDIT_SOURCES at once, while every window in it is
 * still open: one bound for all of them (else each new source, pushing out the oldest, came with
 * a fresh quota and every refusal was recorded one by one again). */
static refusals overflow = {.source = "other sources (more than 256 at once)"};

static bool refusal_recorded(const caller *c, const char *detail, int64_t now)
{
    char src[64];
    source_of(c, src, sizeof src);
    refusals *r = NULL, *free_slot = NULL, *ended = NULL;
    for (size_t i = 0; i < AUDIT_SOURCES && !r; i++) {
        refusals *s = &sources[i];
        if (!s->source[0])
            free_slot = free_slot ? free_slot : s;
        else if (!strcmp(s->source, src))
            r = s;
        else if (!ended && (now - s->since_ms >= AUDIT_WINDOW_MS || now < s->since_ms))
            ended = s;
    }
    if (!r && (free_slot || ended)) {
        r = free_slot ? free_slot : ended;
        if (r == ended)
            flush_one(r);
        memset(r, 0, sizeof *r);
        snprintf(r->source, sizeof r->source, "%s", src);
        r->since_ms = now;
    } else if (!r) {
        r = &overflow;
    }
    if (now - r->since_ms >= AUDIT_WINDOW_MS || now < r->since_ms) {
        flush_one(r);
        r->since_ms = now;
    }
    if (r->written < AUDIT_REFUSED_PER_WINDOW) {
        r->written++;
        return true;
    }
    r->held++;
    r->last = *c;
    snprintf(r->why, sizeof r->why, "%s", detail ? detail : "");
    if (!flush_at_ms || r->since_ms + AUDIT_WINDOW_MS < flush_at_ms)
        flush_at_ms = r->since_ms + AUDIT_WINDOW_MS;
    return false;
}

/* ---- the records of changes (audit_change) -------------------------------------------- */

/* A change's record, kept until a commit takes it: one that a failed commit rolled back (or
 * whose insert failed) is written again by state.c's resync, like a job's row. */
#define AUDIT_CHANGES_MAX 4096
typedef struct change_rec {
    caller who;
    int64_t ts_ms;
    char job[64];
    char detail[400];
    bool in_txn;              /* inserted into the open transaction */
} change_rec;

static change_rec *changes;
static size_t nchanges;

static int change_insert(change_rec *r, jerr *e)
{
    bool tls = r->who.via == CALLER_TLS;
    audit_rec a = {.ts_ms = r->ts_ms, .uid = r->who.uid == (uid_t)-1 ? -1 : (int64_t)r->who.uid, .action = "api",
                   .gpu = -1, .job = r->job[0] ? r->job : NULL, .duration_ms = -1, .memory_mb = -1,
                   .detail = r->detail};
    if (tls) {
        a.person = r->who.person[0] ? r->who.person : NULL;
        a.serial = r->who.serial[0] ? r->who.serial : NULL;
        a.role = r->who.person[0] ? authz_role_name(r->who.role) : NULL;
        a.peer = r->who.peer[0] ? r->who.peer : NULL;
    }
    if (db_audit(core.db, &a, e) < 0)
        return -1;
    r->in_txn = true;
    if (++inserted >= AUDIT_PRUNE_INSERTS)
        prune_at_ms = 1;
    return 0;
}

static void changes_committed(bool ok)
{
    size_t k = 0;
    for (size_t i = 0; i < nchanges; i++) {
        if (ok && changes[i].in_txn)
            continue; /* in the database: done */
        changes[k] = changes[i];
        changes[k++].in_txn = false; /* rolled back with its transaction */
    }
    nchanges = k;
}

static bool changes_unsaved(void)
{
    for (size_t i = 0; i < nchanges; i++)
        if (!changes[i].in_txn)
            return true;
    return false;
}

static void changes_resync(void)
{
    size_t n = 0;
    for (size_t i = 0; i < nchanges; i++) {
        jerr e = {0};
        if (changes[i].in_txn)
            continue;
        if (change_insert(&changes[i], &e) < 0)
            log_err("audit: a change's record not written again: %s", e.msg);
        else
            n++;
    }
    if (n)
        log_info("audit: %zu records of changes that a failed commit lost written again", n);
}

static const state_rows change_rows = {changes_committed, changes_unsaved, changes_resync};

int audit_change(const caller *c, const char *job_id, const char *detail, jerr *e)
{
    static bool registered;
    if (!registered) {
        registered = true;
        changes = xcalloc(AUDIT_CHANGES_MAX, sizeof *changes);
        state_rows_register(&change_rows);
    }
    if (nchanges == AUDIT_CHANGES_MAX) {
        /* the database has taken no commit for AUDIT_CHANGES_MAX changes: the oldest goes */
        log_err("audit: more than %d records of changes wait for the database; the oldest (%s) is lost",
                AUDIT_CHANGES_MAX, changes[0].detail);
        memmove(changes, changes + 1, (nchanges - 1) * sizeof *changes);
        nchanges--;
    }
    change_rec *r = &changes[nchanges++];
    *r = (change_rec){.who = *c, .ts_ms = now_ms()};
    snprintf(r->job, sizeof r->job, "%s", job_id ? job_id : "");
    snprintf(r->detail, sizeof r->detail, "%s", detail ? detail : "");
    jerr ie = {0};
    if (change_insert(r, &ie) < 0) {
        log_err("audit: %s (the record is written again once the database takes it)", ie.msg);
        return jerr_http(e, 503, "joblet's database could not be saved (its audit record: %s); try again in a moment",
                         ie.msg);
    }
    return 0;
}

void audit_change_note(const char *note)
{
    if (!nchanges)
        return;
    change_rec *r = &changes[nchanges - 1];
    size_t l = strlen(r->detail);
    snprintf(r->detail + l, sizeof r->detail - l, "%s", note);
}

void audit_caller(const char *action, const caller *c, const char *job_id, const char *detail)
{
    int64_t now = now_ms();
    if (!strcmp(action, "refused") && !refusal_recorded(c, detail, now))
        return;
    record_caller(action, c, job_id, detail, now);
}

int64_t audit_due_ms(void)
{
    int64_t due = prune_at_ms ? prune_at_ms : 1;
    return flush_at_ms && flush_at_ms < due ? flush_at_ms : due;
}

void audit_tick(int64_t now)
{
    if (flush_at_ms && now >= flush_at_ms) {
        flush_at_ms = 0;
        for (size_t i = 0; i <= AUDIT_SOURCES; i++) {
            refusals *r = i < AUDIT_SOURCES ? &sources[i] : &overflow;
            if (!r->source[0] || !r->held)
                continue;
            if (now - r->since_ms >= AUDIT_WINDOW_MS || now < r->since_ms) {
                flush_one(r);
                if (r != &overflow)
                    r->source[0] = 0;
            } else if (!flush_at_ms || r->since_ms + AUDIT_WINDOW_MS < flush_at_ms) {
                flush_at_ms = r->since_ms + AUDIT_WINDOW_MS;
            }
        }
    }
    if (core.db && now >= prune_at_ms) {
        jerr e = {0};
        inserted = 0;
        int gone = db_audit_prune(core.db, now - (int64_t)core.cfg.audit_keep_days * DAY_MS,
                                  (int64_t)core.cfg.audit_max_rows, AUDIT_PRUNE_BATCH, &e);
        if (gone < 0)
            log_warn("audit: %s", e.msg);
        else if (gone)
            log_debug("audit: %d records pruned (audit.keep_days %u, audit.max_rows %llu)", gone,
                      (unsigned)core.cfg.audit_keep_days, (unsigned long long)core.cfg.audit_max_rows);
        /* a full batch: more may be left, in the next turn */
        prune_at_ms = gone == AUDIT_PRUNE_BATCH ? now : now + AUDIT_PRUNE_EVERY_MS;
    }
}

void audit_stop(void)
{
    for (size_t i = 0; i < AUDIT_SOURCES; i++)
        if (sources[i].source[0])
            flush_one(&sources[i]);
    flush_one(&overflow);
    flush_at_ms = 0;
}
