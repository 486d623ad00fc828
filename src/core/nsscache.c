/* Account look-ups off the loop (nsscache.h). Resolver threads take look-ups from a queue and
 * hand each answer back through a pipe the loop watches; the loop alone reads and writes the
 * kept entries, so they need no lock. */
#include "nsscache.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/thread.h"
#include "../common/util.h"
#include "loop.h"
#include "state.h"

/* A slow directory holds one thread per key it is slow for; the others go on answering */
#define NSS_THREADS 4

typedef struct nss_waiter {
    nsscache_fn fn;
    void *arg;
    struct nss_waiter *next;
} nss_waiter;

/* One look-up handed to a thread: the key in, the answer out (in e), freed by the loop. */
typedef struct nss_job {
    nss_entry e;
    char admin_group[64];
    struct nss_job *next;
    struct nss_job *out_prev, *out_next; /* in res.out (the loop thread's alone) */
} nss_job;

static struct {
    bool running;
    int rd, wr;
    watch w;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    nss_job *head, *tail; /* waiting for a thread */
    /* every one asked of a thread and not read back yet (the loop thread's list): at joblet's
     * exit one may still be in a thread's hands (a slow NSS source: not joined) or in the pipe,
     * and stays reachable so, not freed under that thread (LeakSanitizer reported the one in the
     * pipe as a leak: local run 161) */
    nss_job *out;
    bool stop;
} res = {.rd = -1, .wr = -1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static nss_entry *entries[NSSCACHE_MAX];
static size_t nentries;
/* the kept keys by a hash of the key, chained through nss_entry.hnext: a request's look-up
 * looks at one chain, not at every key kept (4,096 of them, every request) */
#define NSS_BUCKETS (2 * NSSCACHE_MAX)
static nss_entry *buckets[NSS_BUCKETS];
static int64_t ttl_ms = 60000;
static nss_entry busy = {.err = EAGAIN};
static size_t nasking;
static nss_entry *asking; /* the entries asking, through nss_entry.anext: those with waiters among them */
static uint64_t gen = 1;  /* the latest look-up asked (the first is 2: 0 means none in nsscache_accept_since) */
static uint64_t accept_after; /* nsscache_accept_since: 0 none */

bool nsscache_none(int err) { return err == ENOENT || err == ESRCH || err == EBADF || err == EPERM; }

static long buf_size(int which)
{
    long n = sysconf(which);
    return n > 0 ? n : 16384;
}

/* server.admin_group, asked with a uid's account (even one without an account: its gid may be
 * the group's): its gid, and whether it lists the account's name. */
static void resolve_admin(nss_job *j)
{
    nss_entry *e = &j->e;
    int rc;
    struct group grb, *g = NULL;
    long gn = buf_size(_SC_GETGR_R_SIZE_MAX);
    char *gbuf = xmalloc((size_t)gn);
    while ((rc = getgrnam_r(j->admin_group, &grb, gbuf, (size_t)gn, &g)) == ERANGE && gn < (1l << 24))
        gbuf = xrealloc(gbuf, (size_t)(gn *= 2));
    if (!rc && g) {
        e->admin_known = true;
        e->admin_gid = g->gr_gid;
        for (char **m = g->gr_mem; !e->err && m && *m && !e->admin_lists; m++)
            e->admin_lists = !strcmp(*m, e->name);
    }
    free(gbuf);
}

/* The look-up itself, on a resolver thread (or the caller's, when not started): reentrant calls. */
static void resolve(nss_job *j)
{
    nss_entry *e = &j->e;
    struct passwd pwb, *pw = NULL;
    long pn = buf_size(_SC_GETPW_R_SIZE_MAX);
    char *pbuf = xmalloc((size_t)pn);
    int rc;
    e->err = 0;
    if (e->kind == NSS_GROUP) {
        struct group grb, *g = NULL;
        long gn = buf_size(_SC_GETGR_R_SIZE_MAX);
        char *gbuf = xmalloc((size_t)gn);
        while ((rc = getgrnam_r(e->key, &grb, gbuf, (size_t)gn, &g)) == ERANGE && gn < (1l << 24))
            gbuf = xrealloc(gbuf, (size_t)(gn *= 2));
        e->err = rc ? (nsscache_none(rc) ? ENOENT : rc) : g ? 0 : ENOENT;
        if (!e->err)
            e->gid = g->gr_gid;
        free(gbuf);
        free(pbuf);
        return;
    }
    if (e->kind == NSS_UID)
        while ((rc = getpwuid_r(e->key_uid, &pwb, pbuf, (size_t)pn, &pw)) == ERANGE && pn < (1l << 24))
            pbuf = xrealloc(pbuf, (size_t)(pn *= 2));
    else
        while ((rc = getpwnam_r(e->key, &pwb, pbuf, (size_t)pn, &pw)) == ERANGE && pn < (1l << 24))
            pbuf = xrealloc(pbuf, (size_t)(pn *= 2));
    e->err = rc ? (nsscache_none(rc) ? ENOENT : rc) : pw ? 0 : ENOENT;
    if (e->err || strlen(pw->pw_name) >= sizeof e->name) {
        e->err = e->err ? e->err : ENOENT; /* (a name longer than any joblet pins) */
        if (e->kind == NSS_UID && j->admin_group[0] && nsscache_none(e->err))
            resolve_admin(j);
        free(pbuf);
        return;
    }
    e->uid = pw->pw_uid;
    e->gid = pw->pw_gid;
    snprintf(e->name, sizeof e->name, "%s", pw->pw_name);
    if (e->kind == NSS_UID) {
        /* its groups, however many: its login group and those that list it */
        int ng = 64;
        e->groups = xcalloc((size_t)ng, sizeof *e->groups);
        if (getgrouplist(e->name, e->gid, e->groups, &ng) < 0) {
            free(e->groups);
            e->groups = xcalloc((size_t)ng + 1, sizeof *e->groups);
            if (getgrouplist(e->name, e->gid, e->groups, &ng) < 0) {
                e->groups[0] = e->gid;
                ng = 1;
            }
        }
        e->ngroups = ng;
        if (j->admin_group[0])
            resolve_admin(j);
    }
    free(pbuf);
}

static void *resolver(void *unused)
{
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&res.mu);
        while (!res.head && !res.stop)
            pthread_cond_wait(&res.cv, &res.mu);
        if (res.stop) {
            pthread_mutex_unlock(&res.mu);
            return NULL;
        }
        nss_job *j = res.head;
        res.head = j->next;
        if (!res.head)
            res.tail = NULL;
        pthread_mutex_unlock(&res.mu);
        resolve(j);
        /* a pointer's write to a pipe is atomic; the loop frees it */
        while (write(res.wr, &j, sizeof j) < 0 && errno == EINTR)
            ;
    }
}

static bool same_key(const nss_entry *e, enum nss_kind kind, uid_t uid, const char *name)
{
    return e->kind == kind && (kind == NSS_UID ? e->key_uid == uid : !strcmp(e->key, name));
}

/* FNV-1a over the kind and the uid or name (keys come from the system's callers and the
 * configuration: a chain is at most the keys kept, NSSCACHE_MAX) */
static size_t bucket_of(enum nss_kind kind, uid_t uid, const char *name)
{
    uint64_t h = 14695981039346656037ull;
    h = (h ^ (uint64_t)kind) * 1099511628211ull;
    if (kind == NSS_UID)
        for (unsigned i = 0; i < sizeof uid; i++)
            h = (h ^ ((uint64_t)uid >> (8 * i) & 0xff)) * 1099511628211ull;
    else
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
            h = (h ^ *p) * 1099511628211ull;
    return (size_t)(h ^ (h >> 31)) & (NSS_BUCKETS - 1);
}

static nss_entry *find(enum nss_kind kind, uid_t uid, const char *name)
{
    for (nss_entry *e = buckets[bucket_of(kind, uid, name)]; e; e = e->hnext)
        if (same_key(e, kind, uid, name))
            return e;
    return NULL;
}

/* The turn an entry handed out now is kept for, as it is (loop_turns counts from 0) */
static uint64_t this_turn(void) { return loop_turns() + 1; }

/* A place for a new key, in the index: a free one, else the entry that expired first among those
 * nobody asks for, waits on, or was handed this turn (a caller may still be reading it: asking
 * for its group after its account); NULL when there is none. */
static nss_entry *slot(enum nss_kind kind, uid_t uid, const char *name)
{
    nss_entry *e;
    if (nentries < NSSCACHE_MAX) {
        e = entries[nentries++] = xcalloc(1, sizeof(nss_entry));
    } else {
        size_t best = NSSCACHE_MAX;
        uint64_t turn = this_turn();
        for (size_t i = 0; i < nentries; i++)
            if (!entries[i]->asking && !entries[i]->waiters && entries[i]->handed_turn != turn &&
                (best == NSSCACHE_MAX || entries[i]->expires_ms < entries[best]->expires_ms))
                best = i;
        if (best == NSSCACHE_MAX)
            return NULL;
        e = entries[best];
        for (nss_entry **p = &buckets[bucket_of(e->kind, e->key_uid, e->key)]; *p; p = &(*p)->hnext)
            if (*p == e) {
                *p = e->hnext;
                break;
            }
        free(e->groups);
        memset(e, 0, sizeof *e);
    }
    e->kind = kind;
    e->key_uid = uid;
    snprintf(e->key, sizeof e->key, "%s", name ? name : "");
    nss_entry **b = &buckets[bucket_of(kind, uid, e->key)];
    e->hnext = *b;
    *b = e;
    return e;
}

static void asking_add(nss_entry *e)
{
    e->asking = true;
    e->anext = asking;
    asking = e;
    nasking++;
}

static void asking_del(nss_entry *e)
{
    if (!e->asking)
        return;
    for (nss_entry **p = &asking; *p; p = &(*p)->anext)
        if (*p == e) {
            *p = e->anext;
            break;
        }
    e->anext = NULL;
    e->asking = false;
    nasking--;
}

static const char *kind_name(const nss_entry *e)
{
    return e->kind == NSS_UID ? "uid" : e->kind == NSS_GROUP ? "group" : "user";
}

/* e's waiters, told it is answered (or failed), taken off it first (a waiter may ask again). */
static void wake(nss_entry *e)
{
    nss_waiter *w = e->waiters;
    e->waiters = NULL;
    state_want(WANT_SCHEDULE); /* a job that waited on it (queue.c: SW_ACCOUNT_LOOKUP) */
    size_t nw = 0;
    for (const nss_waiter *v = w; v; v = v->next)
        nw++;
    if (e->kind == NSS_UID)
        log_debug("account look-up of uid %u answered: %zu waiter%s", (unsigned)e->key_uid, nw, nw == 1 ? "" : "s");
    else
        log_debug("account look-up of %s %s answered: %zu waiter%s", kind_name(e), e->key, nw, nw == 1 ? "" : "s");
    while (w) {
        nss_waiter *next = w->next;
        w->fn(w->arg);
        free(w);
        w = next;
    }
}

/* The answer j carries, kept in e; its waiters called. A refresh (ask_of) that failed leaves a
 * kept answer still good as it is, until its time. */
static void answered(nss_entry *e, nss_job *j)
{
    asking_del(e);
    int64_t now = now_ms();
    bool failed = j->e.err && !nsscache_none(j->e.err);
    bool kept = e->expires_ms && now < e->expires_ms && (!e->err || nsscache_none(e->err));
    int64_t keep = j->e.err && NSSCACHE_NEGATIVE_MS < ttl_ms ? NSSCACHE_NEGATIVE_MS : ttl_ms;
    if (failed) {
        char uid[16];
        snprintf(uid, sizeof uid, "%u", (unsigned)e->key_uid);
        log_warn("account look-up of %s %s failed: %s (%s)", kind_name(e), e->kind == NSS_UID ? uid : e->key,
                 strerror(j->e.err), kept ? "the answer kept meanwhile still holds, until its time"
                                          : "answered so for a while: refused meanwhile");
    }
    if (failed && kept) {
        free(j->e.groups);
    } else {
        free(e->groups);
        e->err = j->e.err;
        e->uid = j->e.uid;
        e->gid = j->e.gid;
        memcpy(e->name, j->e.name, sizeof e->name);
        e->groups = j->e.groups;
        e->ngroups = j->e.ngroups;
        e->admin_known = j->e.admin_known;
        e->admin_lists = j->e.admin_lists;
        e->admin_gid = j->e.admin_gid;
        e->gen = j->e.gen;
        e->expires_ms = now + keep;
        e->refresh_ms = e->expires_ms - keep / 4;
    }
    free(j);
    wake(e);
}

static void out_del(nss_job *j)
{
    *(j->out_prev ? &j->out_prev->out_next : &res.out) = j->out_next;
    if (j->out_next)
        j->out_next->out_prev = j->out_prev;
    j->out_prev = j->out_next = NULL;
}

static void on_answer(watch *w, uint32_t events)
{
    (void)w;
    (void)events;
    nss_job *j;
    while (read(res.rd, &j, sizeof j) == (ssize_t)sizeof j) {
        out_del(j);
        nss_entry *e = find(j->e.kind, j->e.key_uid, j->e.key);
        if (!e) { /* (asked entries are never reused: not reached) */
            free(j->e.groups);
            free(j);
            continue;
        }
        answered(e, j);
    }
}

/* e asked of a resolver thread (or here, without them); false when it was answered here. */
static bool ask_of(nss_entry *e, int64_t now)
{
    nss_job *j = xcalloc(1, sizeof *j);
    j->e.kind = e->kind;
    j->e.key_uid = e->key_uid;
    snprintf(j->e.key, sizeof j->e.key, "%s", e->key);
    snprintf(j->admin_group, sizeof j->admin_group, "%s", core.cfg.admin_group);
    j->e.gen = e->asked_gen = ++gen;
    asking_add(e);
    e->deadline_ms = now + NSSCACHE_DEADLINE_MS;
    if (!res.running) {
        /* no threads (unit tests, the fuzz harness): asked here, answered at once */
        resolve(j);
        answered(e, j);
        return false;
    }
    j->out_next = res.out; /* (the loop thread's: before a thread may have it) */
    if (res.out)
        res.out->out_prev = j;
    res.out = j;
    pthread_mutex_lock(&res.mu);
    *(res.tail ? &res.tail->next : &res.head) = j;
    res.tail = j;
    pthread_cond_signal(&res.cv);
    pthread_mutex_unlock(&res.mu);
    return true;
}

static const nss_entry *lookup(enum nss_kind kind, uid_t uid, const char *name, nsscache_fn fn, void *arg)
{
    if (name && strlen(name) >= sizeof busy.key) {
        static nss_entry none = {.err = ENOENT};
        return &none;
    }
    nss_entry *e = find(kind, uid, name);
    int64_t now = now_ms();
    if (e && e->expires_ms && now < e->expires_ms) {
        /* used in its last quarter: asked again now, in the background, so that steady traffic
         * (require_gvisor's groups: every request of every user) finds the new answer in time;
         * this one meanwhile, until its own time only */
        if (now >= e->refresh_ms && !e->asking && res.running)
            ask_of(e, now);
        e->handed_turn = this_turn();
        return e;
    }
    if (e && e->expires_ms && e->handed_turn == this_turn() && (!e->err || nsscache_none(e->err))) {
        /* handed out earlier in this very turn, good then, and past its time since: the same
         * answer for the rest of the turn (a request's route runs in the turn its caller's
         * account was checked in; one that took longer than what was left of the answer's time,
         * a 1 MiB workflow under the sanitizers, failed with "could not be looked up now").
         * Asked again in the background, for the next turn. */
        if (!e->asking && res.running)
            ask_of(e, now);
        return e;
    }
    if (e && e->expires_ms && accept_after && e->gen > accept_after && (!e->err || nsscache_none(e->err))) {
        /* asked after the request that runs now began: as new as what it asked for (see
         * nsscache_accept_since), however long it took. Past its time it is asked again, in the
         * background: a job that waits on look-ups for long (another key failing) takes a fresh
         * answer at its next check, not one kept for hours. A failure is never taken so: it is
         * asked again, and waited for (a directory's outage would otherwise hold the job's
         * failure for as long as the job waits). */
        if (!e->asking && res.running)
            ask_of(e, now);
        e->handed_turn = this_turn();
        return e;
    }
    if (!e) {
        e = slot(kind, uid, name);
        if (!e)
            return &busy;
    }
    if (!e->asking && !ask_of(e, now)) {
        e->handed_turn = this_turn();
        return e;
    }
    if (fn) {
        nss_waiter *w = xcalloc(1, sizeof *w);
        *w = (nss_waiter){fn, arg, e->waiters};
        e->waiters = w;
    }
    return NULL;
}

int64_t nsscache_due_ms(void)
{
    int64_t due = 0;
    for (const nss_entry *e = asking; e; e = e->anext)
        if (!due || e->deadline_ms < due)
            due = e->deadline_ms;
    return due;
}

void nsscache_tick(int64_t now)
{
    for (nss_entry *e = asking; e; e = e->anext) {
        if (e->deadline_ms > now)
            continue;
        if (e->expires_ms > now && (!e->err || nsscache_none(e->err))) {
            /* a refresh that is slow: the answer kept holds until its time, then fails */
            e->deadline_ms = e->expires_ms;
            continue;
        }
        /* failed for now (its thread may still answer: then that answer is kept), and its
         * waiters told; the next deadline a while on, for those who ask again meanwhile */
        char uid[16];
        snprintf(uid, sizeof uid, "%u", (unsigned)e->key_uid);
        log_warn("account look-up of %s %s: no answer in %d s (is the directory service away?); refused for %d s, "
                 "and kept when it comes", kind_name(e), e->kind == NSS_UID ? uid : e->key,
                 NSSCACHE_DEADLINE_MS / 1000, NSSCACHE_NEGATIVE_MS / 1000);
        e->err = ETIMEDOUT;
        e->gen = e->asked_gen; /* (the answer of that look-up, for those who waited on it) */
        e->expires_ms = now + NSSCACHE_NEGATIVE_MS;
        e->refresh_ms = e->expires_ms; /* (it is being asked still) */
        e->deadline_ms = now + NSSCACHE_DEADLINE_MS;
        wake(e);
    }
}

void nsscache_forget(nsscache_fn fn, void *arg)
{
    for (nss_entry *e = asking; e; e = e->anext) /* (only entries asking have waiters) */
        for (nss_waiter **p = &e->waiters; *p;) {
            nss_waiter *w = *p;
            if (w->fn == fn && w->arg == arg) {
                *p = w->next;
                free(w);
            } else {
                p = &w->next;
            }
        }
}

uint64_t nsscache_gen(void) { return gen; }

uint64_t nsscache_accept_since(uint64_t g)
{
    uint64_t was = accept_after;
    accept_after = g;
    return was;
}

const nss_entry *nsscache_uid(uid_t uid, nsscache_fn fn, void *arg) { return lookup(NSS_UID, uid, NULL, fn, arg); }

const nss_entry *nsscache_user(const char *name, nsscache_fn fn, void *arg)
{
    return lookup(NSS_USER, 0, name, fn, arg);
}

const nss_entry *nsscache_group(const char *name, nsscache_fn fn, void *arg)
{
    return lookup(NSS_GROUP, 0, name, fn, arg);
}

int nsscache_start(unsigned ttl_s)
{
    ttl_ms = (int64_t)(ttl_s ? ttl_s : 60) * 1000;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    /* the threads' end blocks: an answer is never dropped (the loop drains the pipe every turn) */
    fcntl(p[1], F_SETFL, 0);
    res.rd = p[0];
    res.wr = p[1];
    res.w = (watch){res.rd, on_answer, NULL};
    if (loop_add(&res.w) < 0)
        return -1;
    /* signals stay with the loop thread (signalfd): the resolvers block them all */
    int started = 0;
    for (int i = 0; i < NSS_THREADS; i++)
        if (thread_start(NULL, resolver, NULL) == 0)
            started++;
    if (!started) {
        errno = EAGAIN;
        return -1;
    }
    res.running = true;
    return 0;
}

void nsscache_stop(void)
{
    if (!res.running)
        return;
    pthread_mutex_lock(&res.mu);
    res.stop = true;
    pthread_cond_broadcast(&res.cv);
    pthread_mutex_unlock(&res.mu);
    loop_del(&res.w);
    res.running = false;
}
