/* GPU samples and the History page's figures (gpu_history.h). */
#include "gpu_history.h"

#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/util.h"
#include "gpus.h"
#include "gpu_health.h"
#include "state.h"

#define HISTORY_TICK_S 15             /* readings per minute: 4 */
#define MINUTE_MS 60000
#define DAY_MS 86400000LL

typedef struct acc {
    double sum[4];                    /* util, temp, mem, power */
    int n[4];
    int readings, held;
} acc;

static acc accs[GPU_MAX];
static int64_t minute_ms;             /* the minute being accumulated */
static int64_t compacted_ms;          /* when the samples were last compacted */
static int timer_fd = -1;
static watch w_timer;

static void flush_minute(void)
{
    jerr e = {0};
    for (int i = 0; i < core.gpu.inv.n && i < GPU_MAX; i++) {
        acc *a = &accs[i];
        if (!a->readings)
            continue;
        db_sample smp = {.gpu = i, .t_ms = minute_ms, .allocated = (double)a->held / a->readings};
        double *out[] = {&smp.util, &smp.temp, &smp.mem_mb, &smp.power};
        for (int k = 0; k < 4; k++)
            *out[k] = a->n[k] ? a->sum[k] / a->n[k] : -1;
        if (db_sample_add(core.db, &smp, &e) < 0) {
            log_warn("history: %s", e.msg);
            break;
        }
    }
    memset(accs, 0, sizeof accs);
}

void gpu_history_tick(int64_t now)
{
    if (!core.gpu_on || !core.gpu.inv.n || !core.db)
        return;
    int64_t minute = now / MINUTE_MS * MINUTE_MS;
    if (minute_ms && minute != minute_ms)
        flush_minute();
    minute_ms = minute;
    for (int i = 0; i < core.gpu.inv.n && i < GPU_MAX; i++) {
        acc *a = &accs[i];
        const gpu_health *h = gpu_health_of(i);
        uint64_t reserved;
        a->readings++;
        a->held += gpus_holder(i) || gpus_tenants(i, &reserved) > 0;
        if (!h || !h->sampled_ms || now - h->sampled_ms > 2 * HISTORY_TICK_S * 1000)
            continue;
        const int v[4] = {h->utilization_pct, h->temperature_c, h->memory_used_mb, h->power_w};
        for (int k = 0; k < 4; k++)
            if (v[k] >= 0) {
                a->sum[k] += v[k];
                a->n[k]++;
            }
    }
    if (now - compacted_ms > 3600000) {
        jerr e = {0};
        if (db_sample_compact(core.db, now - DAY_MS, now - (int64_t)core.cfg.history_keep_days * DAY_MS, &e) < 0)
            log_warn("history: %s", e.msg);
        compacted_ms = now;
    }
}

static void on_timer(watch *w, uint32_t events)
{
    uint64_t n;
    if (read(timer_fd, &n, sizeof n) > 0)
        gpu_history_tick(now_ms());
}

void gpu_history_start(void)
{
    if (!core.gpu_on || !core.gpu.inv.n)
        return;
    timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer_fd < 0)
        return;
    struct itimerspec t = {.it_interval = {HISTORY_TICK_S, 0}, .it_value = {1, 0}};
    timerfd_settime(timer_fd, 0, &t, NULL);
    w_timer = (watch){timer_fd, on_timer, NULL};
    loop_add(&w_timer);
}

void gpu_history_stop(void)
{
    if (minute_ms) {
        flush_minute();
        state_commit();
    }
    if (timer_fd >= 0) {
        loop_del(&w_timer);
        close(timer_fd);
        timer_fd = -1;
    }
}

/* A job's GPU time: GPUs held x the time it ran (until now for a running one). */
static double gpu_seconds(const job *j, int64_t now)
{
    if (!j->started_ms || !j->gpus.n)
        return 0;
    int64_t end = j->ended_ms ? j->ended_ms : job_state_terminal(j->state) ? j->started_ms : now;
    return end > j->started_ms ? (double)(end - j->started_ms) / 1000.0 * (double)j->gpus.n : 0;
}

/* The per-user and per-hour sums of one answer, in plain arrays: a request walks every job kept
 * (100,000 of them, any user's request), so a job costs a few additions here, not the JSON
 * objects' look-ups and allocations it cost (~0.5 s a request at 100,000 jobs before). */
typedef struct hist_user {
    uid_t uid;
    int jobs;
    int64_t deleted_jobs;             /* of jobs, those deleted (their sums: the database's) */
    double gpu_seconds;
} hist_user;

typedef struct hist_hour {
    int jobs;
    double wait_s;
} hist_hour;

typedef struct hist_users {
    hist_user *v;                     /* in the order first met, as the answer lists them */
    size_t n, cap;
    int *slot;                        /* open addressing: index + 1 into v, 0: free */
    size_t nslot;                     /* a power of two, at least twice n */
} hist_users;

static hist_user *hist_user_of(hist_users *u, uid_t uid)
{
    if (2 * (u->n + 1) > u->nslot) {
        size_t ns = u->nslot ? 2 * u->nslot : 64;
        int *slot = xcalloc(ns, sizeof *slot);
        for (size_t i = 0; i < u->n; i++) {
            size_t h = (u->v[i].uid * 2654435761u) & (ns - 1);
            while (slot[h])
                h = (h + 1) & (ns - 1);
            slot[h] = (int)i + 1;
        }
        free(u->slot);
        u->slot = slot;
        u->nslot = ns;
    }
    size_t h = (uid * 2654435761u) & (u->nslot - 1);
    for (; u->slot[h]; h = (h + 1) & (u->nslot - 1))
        if (u->v[u->slot[h] - 1].uid == uid)
            return &u->v[u->slot[h] - 1];
    if (u->n == u->cap) {
        u->cap = u->cap ? 2 * u->cap : 16;
        u->v = xrealloc(u->v, u->cap * sizeof *u->v);
    }
    u->v[u->n] = (hist_user){.uid = uid};
    u->slot[h] = (int)++u->n;
    return &u->v[u->n - 1];
}

void gpu_history_usage(const job *j, db_usage *u)
{
    /* in whole ms, its last run's split over its GPUs exactly (the answer's per-GPU sums are that
     * run's alone, the owner's its earlier runs' too: gpu_ms_before) */
    int64_t run_ms = (int64_t)(gpu_seconds(j, now_ms()) * 1000.0 + 0.5);
    *u = (db_usage){.uid = j->owner_uid, .gpu_ms = run_ms + (int64_t)j->usage.gpu_ms_before};
    size_t n = j->gpus.n;
    for (size_t k = 0; k < n && u->ngpus < DB_USAGE_GPUS; k++) {
        if (j->gpus.g[k].index < 0 || j->gpus.g[k].index >= GPU_MAX)
            continue;
        u->gpu[u->ngpus] = j->gpus.g[k].index;
        u->gpu_ms_on[u->ngpus++] = run_ms / (int64_t)n + ((int64_t)k < run_ms % (int64_t)n ? 1 : 0);
    }
}

/* The deleted jobs' sums (db_usage_load) into one answer's */
typedef struct hist_deleted {
    hist_users *users;
    double *gs;
    uid_t uid;
    bool all;
} hist_deleted;

static void add_deleted(bool per_gpu, int64_t key, int64_t gpu_ms, int64_t jobs, void *arg)
{
    hist_deleted *x = arg;
    if (per_gpu) {
        if (key >= 0 && key < GPU_MAX && key < core.gpu.inv.n)
            x->gs[key] += (double)gpu_ms / 1000.0;
        return;
    }
    if (key < 0 || key > UINT32_MAX || (!x->all && (uid_t)key != x->uid))
        return;
    hist_user *u = hist_user_of(x->users, (uid_t)key);
    u->gpu_seconds += (double)gpu_ms / 1000.0;
    u->jobs += (int)jobs;
    u->deleted_jobs += jobs;
}

json_t *gpu_history_json(uid_t uid, bool all, int hours)
{
    int64_t now = now_ms(), since = now - (int64_t)hours * 3600000;
    int64_t first_hour = since / 3600000 * 3600000;
    size_t nhours = now >= first_hour ? (size_t)((now - first_hour) / 3600000) + 1 : 0;
    hist_hour *per_hour = xcalloc(nhours ? nhours : 1, sizeof *per_hour);
    hist_users users = {0};
    json_t *per_gpu = json_array();
    double gs[GPU_MAX] = {0};
    for (size_t i = 0; i < core.njobs; i++) {
        const job *j = core.jobs[i];
        double s = gpu_seconds(j, now);
        for (size_t k = 0; k < j->gpus.n; k++)
            if (j->gpus.g[k].index >= 0 && j->gpus.g[k].index < GPU_MAX)
                gs[j->gpus.g[k].index] += s / (double)j->gpus.n;
        if (!all && j->owner_uid != uid)
            continue;
        hist_user *u = hist_user_of(&users, j->owner_uid);
        /* its earlier runs' too (requeued, preempted: jobs.c), which no GPU's own sum has: their
         * GPUs were given back, and the grants kept are its last run's */
        u->gpu_seconds += s + (double)j->usage.gpu_ms_before / 1000.0;
        u->jobs++;
        /* an hour from the first to now's (a start after now, the clock stepped back, is in none) */
        if (j->started_ms >= since && j->started_ms / 3600000 * 3600000 - first_hour < (int64_t)nhours * 3600000) {
            hist_hour *h = &per_hour[(j->started_ms / 3600000 * 3600000 - first_hour) / 3600000];
            int64_t from = j->scheduled_ms > j->created_ms ? j->scheduled_ms : j->created_ms;
            h->jobs++;
            h->wait_s += (double)(j->started_ms > from ? j->started_ms - from : 0) / 1000.0;
        }
    }
    /* the jobs deleted since (rnx job delete, jobs.keep_ended_s): their sums, kept in the database */
    jerr de = {0};
    hist_deleted del = {&users, gs, uid, all};
    if (core.db && db_usage_load(core.db, add_deleted, &del, &de) < 0)
        log_warn("history: the deleted jobs' sums are left out: %s", de.msg);
    for (int i = 0; i < core.gpu.inv.n && i < GPU_MAX; i++)
        json_array_append_new(per_gpu, json_pack("{s:i,s:f}", "index", i, "gpu_seconds", gs[i]));
    json_t *per_user = json_array(), *jph = json_array(), *qw = json_array();
    for (size_t i = 0; i < users.n; i++)
        json_array_append_new(per_user, json_pack("{s:I,s:f,s:i,s:I}", "uid", (json_int_t)users.v[i].uid,
                                                  "gpu_seconds", users.v[i].gpu_seconds, "jobs", users.v[i].jobs,
                                                  "deleted_jobs", (json_int_t)users.v[i].deleted_jobs));
    free(users.v);
    free(users.slot);
    for (size_t h = 0; h < nhours; h++) {
        if (!per_hour[h].jobs)
            continue;
        json_int_t t = (json_int_t)(first_hour + (int64_t)h * 3600000);
        json_array_append_new(jph, json_pack("{s:I,s:i}", "t", t, "jobs", per_hour[h].jobs));
        json_array_append_new(qw, json_pack("{s:I,s:f,s:i}", "t", t, "mean_s", per_hour[h].wait_s / per_hour[h].jobs,
                                            "jobs", per_hour[h].jobs));
    }
    free(per_hour);
    jerr e = {0};
    json_t *series = core.db ? db_sample_series(core.db, since, hours > 48 ? 3600000 : 600000, &e) : NULL;
    json_t *util = json_array();
    for (size_t i = 0; i < json_array_size(series); i++) {
        json_t *p = json_array_get(series, i), *u = json_object_get(p, "util_pct");
        double pct = json_is_real(u) ? json_real_value(u) : json_real_value(json_object_get(p, "allocated_pct"));
        json_array_append_new(util, json_pack("{s:O,s:f,s:O,s:s}", "t", json_object_get(p, "t"), "pct", pct,
                                              "allocated_pct", json_object_get(p, "allocated_pct"), "of",
                                              json_is_real(u) ? "utilization" : "allocation"));
    }
    json_decref(series);
    json_t *o = json_pack("{s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:I}", "hours", hours, "keep_days",
                          (int)core.cfg.history_keep_days, "per_user", per_user, "per_gpu", per_gpu, "jobs_per_hour",
                          jph, "queue_wait", qw, "utilization", util, "sample_rows",
                          (json_int_t)(core.db ? db_sample_rows(core.db) : 0));
    jx_set_time_or_null(o, "since", since);
    return o;
}
