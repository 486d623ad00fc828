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
} nss_job;

static struct {
    bool running;
    int rd, wr;
    watch w;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    nss_job *head, *tail; /* waiting for a thread */
    bool stop;
} res = {.rd = -1, .wr = -1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static nss_entry *entries[NSSCACHE_MAX];
static size_t nentries;
static int64_t ttl_ms = 60000;
static nss_entry busy = {.err = EAGAIN};
static size_t nasking; /* entries asking: nsscache_due_ms looks at none while there are none */

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

static nss_entry *find(enum nss_kind kind, uid_t uid, const char *name)
{
    for (size_t i = 0; i < nentries; i++)
        if (same_key(entries[i], kind, uid, name))
            return entries[i];
    return NULL;
}

/* A place for a new key: a free one, else the entry that expired first among those nobody waits
 * on; NULL when every entry is being asked or waited on. */
static nss_entry *slot(void)
{
    if (nentries < NSSCACHE_MAX)
        return entries[nentries++] = xcalloc(1, sizeof(nss_entry));
    size_t best = NSSCACHE_MAX;
    for (size_t i = 0; i < nentries; i++)
        if (!entries[i]->asking && !entries[i]->waiters &&
            (best == NSSCACHE_MAX || entries[i]->expires_ms < entries[best]->expires_ms))
            best = i;
    if (best == NSSCACHE_MAX)
        return NULL;
    free(entries[best]->groups);
    memset(entries[best], 0, sizeof *entries[best]);
    return entries[best];
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

/* The answer j carries, kept in e; its waiters called. */
static void answered(nss_entry *e, nss_job *j)
{
    free(e->groups);
    nss_waiter *w = e->waiters;
    bool negative = j->e.err != 0;
    if (e->asking)
        nasking--;
    *e = j->e;
    e->asking = false;
    e->waiters = w;
    int64_t keep = negative && NSSCACHE_NEGATIVE_MS < ttl_ms ? NSSCACHE_NEGATIVE_MS : ttl_ms;
    e->expires_ms = now_ms() + keep;
    if (j->e.err && !nsscache_none(j->e.err)) {
        char uid[16];
        snprintf(uid, sizeof uid, "%u", (unsigned)e->key_uid);
        log_warn("account look-up of %s %s failed: %s (answered so for %lld ms: refused meanwhile)",
                 e->kind == NSS_UID ? "uid" : e->kind == NSS_GROUP ? "group" : "user",
                 e->kind == NSS_UID ? uid : e->key, strerror(j->e.err), (long long)keep);
    }
    free(j);
    wake(e);
}

static void on_answer(watch *w, uint32_t events)
{
    (void)w;
    (void)events;
    nss_job *j;
    while (read(res.rd, &j, sizeof j) == (ssize_t)sizeof j) {
        nss_entry *e = find(j->e.kind, j->e.key_uid, j->e.key);
        if (!e) { /* (asked entries are never reused: not reached) */
            free(j->e.groups);
            free(j);
            continue;
        }
        answered(e, j);
    }
}

static const nss_entry *lookup(enum nss_kind kind, uid_t uid, const char *name, nsscache_fn fn, void *arg)
{
    if (name && strlen(name) >= sizeof busy.key) {
        static nss_entry none = {.err = ENOENT};
        return &none;
    }
    nss_entry *e = find(kind, uid, name);
    int64_t now = now_ms();
    if (e && e->expires_ms && now < e->expires_ms)
        return e;
    if (!e) {
        e = slot();
        if (!e)
            return &busy;
        e->kind = kind;
        e->key_uid = uid;
        snprintf(e->key, sizeof e->key, "%s", name ? name : "");
    }
    if (!e->asking) {
        nss_job *j = xcalloc(1, sizeof *j);
        j->e.kind = kind;
        j->e.key_uid = uid;
        snprintf(j->e.key, sizeof j->e.key, "%s", e->key);
        snprintf(j->admin_group, sizeof j->admin_group, "%s", core.cfg.admin_group);
        e->asking = true;
        e->deadline_ms = now + NSSCACHE_DEADLINE_MS;
        nasking++;
        if (!res.running) {
            /* no threads (unit tests, the fuzz harness): asked here, answered at once */
            resolve(j);
            answered(e, j);
            return e;
        }
        pthread_mutex_lock(&res.mu);
        *(res.tail ? &res.tail->next : &res.head) = j;
        res.tail = j;
        pthread_cond_signal(&res.cv);
        pthread_mutex_unlock(&res.mu);
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
    for (size_t i = 0; nasking && i < nentries; i++)
        if (entries[i]->asking && (!due || entries[i]->deadline_ms < due))
            due = entries[i]->deadline_ms;
    return due;
}

void nsscache_tick(int64_t now)
{
    for (size_t i = 0; nasking && i < nentries; i++) {
        nss_entry *e = entries[i];
        if (!e->asking || e->deadline_ms > now)
            continue;
        /* failed for now (its thread may still answer: then that answer is kept), and its
         * waiters told; the next deadline a while on, for those who ask again meanwhile */
        char uid[16];
        snprintf(uid, sizeof uid, "%u", (unsigned)e->key_uid);
        log_warn("account look-up of %s %s: no answer in %d s (is the directory service away?); refused for %d s, "
                 "and kept when it comes", kind_name(e), e->kind == NSS_UID ? uid : e->key,
                 NSSCACHE_DEADLINE_MS / 1000, NSSCACHE_NEGATIVE_MS / 1000);
        e->err = ETIMEDOUT;
        e->expires_ms = now + NSSCACHE_NEGATIVE_MS;
        e->deadline_ms = now + NSSCACHE_DEADLINE_MS;
        wake(e);
    }
}

void nsscache_forget(nsscache_fn fn, void *arg)
{
    for (size_t i = 0; i < nentries; i++)
        for (nss_waiter **p = &entries[i]->waiters; *p;) {
            nss_waiter *w = *p;
            if (w->fn == fn && w->arg == arg) {
                *p = w->next;
                free(w);
            } else {
                p = &w->next;
            }
        }
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
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int started = 0;
    for (int i = 0; i < NSS_THREADS; i++) {
        pthread_t th;
        if (pthread_create(&th, NULL, resolver, NULL) == 0) {
            pthread_detach(th);
            started++;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
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
