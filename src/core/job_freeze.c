/* A job's cgroup freezer, asked and watched (job_freeze.h). */
#include "job_freeze.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../exec/cgroup.h"
#include "job_detail.h"
#include "jobs.h"
#include "loop.h"

enum {
    FIRST_MS = 1000,   /* looked at every TICK_MS this long after it is asked; waiters answered then */
    TICK_MS = 10,
    NUDGE_MS = 50,     /* a v1 freezer still FREEZING is asked again this often in its first second */
    SLOW_MS = 1000,    /* then every second */
    WARN_MS = 10000,   /* still not done: said in joblet's log, once */
};

typedef struct waiter {
    job_freeze_done_fn fn;
    void *arg;
    struct waiter *next;
} waiter;

/* A job whose freezer was asked and has not said so yet: by id (a job may go meanwhile). */
typedef struct watched {
    char id[37];
    bool want;
    bool warned;
    int64_t asked_ms, nudged_ms, next_ms;
    waiter *waiters;
} watched;

static watched *list;
static size_t nlist, cap;
static int timer_fd = -1;
static watch w_timer;

static void answer(watched *w)
{
    waiter *x = w->waiters;
    w->waiters = NULL;
    while (x) {
        waiter *next = x->next;
        x->fn(x->arg, NULL);
        free(x);
        x = next;
    }
}

static void cgroup_of(const job *j, cg_job *cg)
{
    cg_host uh;
    job_detail_cgroup(j, &uh, cg);
}

/* One look at w: true when it is done with (the freezer says so, or the job's run is over). */
static bool look(watched *w, int64_t now)
{
    job *j = jobs_by_id(w->id);
    /* (what was asked holds no more: the job was thawed to be stopped, or its run ended and
     * another may have begun; a freeze asked of this run is never asked of the next) */
    if (!j || j->shim_pid <= 0 || j->state != (w->want ? JS_SUSPENDED : JS_RUNNING))
        return true;
    cg_job cg;
    cgroup_of(j, &cg);
    int f = cg_frozen(&cg);
    if (f < 0 || f == (int)w->want) {
        if (w->want && now - w->asked_ms >= FIRST_MS)
            j->ev_sig = 0;   /* its event again (publish.c): it said "freezing" since the answer */
        return true;
    }
    if (w->want && now - w->nudged_ms >= NUDGE_MS) {
        cg_freeze(&cg, true, NULL);   /* (v1: FREEZING until asked again; v2: no change) */
        w->nudged_ms = now;
    }
    if (now - w->asked_ms >= WARN_MS && !w->warned) {
        w->warned = true;
        log_warn("job %s: its cgroup is not %s %d s after it was asked: a process of it cannot stop yet "
                 "(still watched)", j->id, w->want ? "frozen" : "thawed", WARN_MS / 1000);
    }
    return false;
}

static void arm(void)
{
    struct itimerspec t = {0};
    if (nlist) {
        int64_t now = mono_ms(), next = list[0].next_ms;
        for (size_t i = 1; i < nlist; i++)
            if (list[i].next_ms < next)
                next = list[i].next_ms;
        int64_t d = next > now ? next - now : 1;
        t.it_value.tv_sec = d / 1000;
        t.it_value.tv_nsec = (long)(d % 1000) * 1000000L;
    }
    if (timer_fd >= 0)
        timerfd_settime(timer_fd, 0, &t, NULL);
}

static void on_timer(watch *wt, uint32_t events)
{
    (void)wt;
    (void)events;
    uint64_t n;
    if (read(timer_fd, &n, sizeof n) < 0 && errno != EAGAIN)
        return;
    int64_t now = mono_ms();
    size_t keep = 0;
    for (size_t i = 0; i < nlist; i++) {
        watched *w = &list[i];
        if (w->next_ms <= now) {
            if (look(w, now)) {
                answer(w);
                continue;
            }
            if (now - w->asked_ms >= FIRST_MS)
                answer(w);   /* (after a second: what the freezer says then; still watched) */
            w->next_ms = now + (now - w->asked_ms < FIRST_MS ? TICK_MS : SLOW_MS);
        }
        list[keep++] = *w;
    }
    nlist = keep;
    arm();
}

static watched *find(const char *id)
{
    for (size_t i = 0; i < nlist; i++)
        if (!strcmp(list[i].id, id))
            return &list[i];
    return NULL;
}

/* j's freezer asked for want just now: watched from now on (one entry per job: a thaw asked
 * while a freeze is watched replaces it; who waited for the freeze is answered at once). */
static void watch_job(const job *j, bool want)
{
    if (timer_fd < 0) {
        timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (timer_fd < 0) {
            log_warn("job %s: cannot watch its freezer (timerfd: %s); its suspend is answered at once",
                     j->id, strerror(errno));
            return;
        }
        w_timer = (watch){timer_fd, on_timer, NULL};
        if (loop_add(&w_timer) < 0) {
            log_warn("job %s: cannot watch its freezer (epoll: %s); its suspend is answered at once", j->id,
                     strerror(errno));
            close(timer_fd);
            timer_fd = -1;
            return;
        }
    }
    watched *w = find(j->id);
    if (w)
        answer(w);
    else {
        if (nlist == cap) {
            cap = cap ? 2 * cap : 8;
            list = xrealloc(list, cap * sizeof *list);
        }
        w = &list[nlist++];
        memset(w, 0, sizeof *w);
        snprintf(w->id, sizeof w->id, "%s", j->id);
    }
    int64_t now = mono_ms();
    w->want = want;
    w->warned = false;
    w->asked_ms = w->nudged_ms = now;
    w->next_ms = now + TICK_MS;
    arm();
}

int job_freeze_ask(job *j, bool frozen, jerr *e)
{
    cg_job cg;
    cgroup_of(j, &cg);
    jerr ce = {0};
    if (cg_freeze(&cg, frozen, &ce) < 0)
        return jerr_http(e, ce.code == ENOTSUP ? 501 : 500, "cannot %s job %s: %s", frozen ? "suspend" : "resume",
                         j->id, ce.msg);
    if (cg_frozen(&cg) != (int)frozen)
        watch_job(j, frozen);
    else {
        watched *w = find(j->id);
        if (w) {
            answer(w);
            w->want = frozen;      /* (done: the next look ends its watch) */
            w->next_ms = mono_ms();
            arm();
        }
    }
    return 0;
}

int job_freeze_state(const job *j)
{
    cg_job cg;
    cgroup_of(j, &cg);
    return cg_frozen(&cg);
}

bool job_freeze_wait(const job *j, job_freeze_done_fn fn, void *arg)
{
    watched *w = find(j->id);
    if (!w)
        return false;
    waiter *x = xcalloc(1, sizeof *x);
    *x = (waiter){fn, arg, w->waiters};
    w->waiters = x;
    return true;
}

bool job_freeze_pending(const job *j, bool *frozen)
{
    const watched *w = nlist ? find(j->id) : NULL;
    if (w && frozen)
        *frozen = w->want;
    return w != NULL;
}
