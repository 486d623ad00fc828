/* The job table (jobs.h). */
#include "jobs.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/idindex.h"
#include "../common/idref.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../exec/shim_status.h"
#include "qclock.h"
#include "authz.h"
#include "job_events.h"
#include "arrays.h"
#include "job_row.h"
#include "state.h"

static bool visible(const job *j, const caller *c) { return authz_may_on(c, AUTHZ_OTHERS_JOBS, j->owner_uid); }

/* the indexes' side, below */
enum jobs_idx_flag {
    IDX_KEPT = 1,     /* in the table: counted at all */
    IDX_WAITING = 2,  /* among its owner's waiting jobs */
    IDX_QUEUE = 4,    /* in ix.queue */
    IDX_ROOM = 8,     /* in ix.room */
    IDX_STATE = 16,   /* in ix.state[its idx_as] (jobs_state_listed) */
};

static void recount(job *j);
static void count_as(job *j, uint8_t want, uid_t u, uid_t s);

/* The jobs ended since jobs_take_ended last took them (each one's place + 1 in ev_ended). */
static struct {
    job **v;
    size_t n, cap;
} ended;

static void ended_add(job *j)
{
    if (j->ev_ended)
        return;
    if (ended.n == ended.cap) {
        ended.cap = ended.cap ? 2 * ended.cap : 64;
        ended.v = xrealloc(ended.v, ended.cap * sizeof *ended.v);
    }
    ended.v[ended.n++] = j;
    j->ev_ended = (int32_t)ended.n;
}

static void ended_del(job *j)
{
    if (!j->ev_ended)
        return;
    size_t at = (size_t)j->ev_ended - 1;
    job *last = ended.v[--ended.n];
    ended.v[at] = last;
    last->ev_ended = (int32_t)at + 1;
    j->ev_ended = 0;
}

job **jobs_take_ended(size_t *n)
{
    for (size_t i = 0; i < ended.n; i++)
        ended.v[i]->ev_ended = 0;
    *n = ended.n;
    ended.n = 0;
    return ended.v;
}

/* The table by id and name (common/idindex.h): what a reference may name, found without a scan;
 * and by owner and name (jobs_named): one user's jobs of a name, however many of it others have. */
static idindex by_ref, by_owner_name;

job *jobs_by_id(const char *id) { return idindex_get(&by_ref, id); }

bool jobs_offer(idref *r, const caller *who, bool task_names)
{
    unsigned long long number;
    if (idref_number(r, &number) && number < core.next_seq)
        idref_number_given(r); /* (numbers are shared by jobs and arrays) */
    job *numbered = idref_number(r, &number) ? jobs_by_seq(number) : NULL;
    if (numbered)
        idref_offer_number(r, numbered->id, job_state_name(numbered->state), visible(numbered, who), numbered);
    size_t n;
    idindex_entry *c = idindex_candidates(&by_ref, r->ref, &n);
    bool hit = false;
    for (size_t i = 0; i < n && !hit; i++) {
        job *j = c[i].obj;
        /* an array's task answers to its own id, not to its array's name */
        const char *name = task_names || !j->array_id[0] ? j->name : NULL;
        hit = idref_offer(r, j->id, name, job_state_name(j->state), job_state_terminal(j->state), j->owner_uid,
                         visible(j, who), j);
    }
    free(c);
    return hit;
}

job **jobs_named(uid_t owner, const char *name, size_t *n)
{
    size_t nc;
    idindex_entry *c = idindex_named_owned(&by_owner_name, name, (uint32_t)owner, &nc);
    job **out = nc ? xcalloc(nc, sizeof *out) : NULL;
    *n = nc;
    for (size_t i = 0; i < nc; i++)
        out[i] = c[i].obj;
    free(c);
    return out;
}

/* By id, name or unique id prefix (common/idref.h); a job the caller may not see matches
 * nothing, except that its full id is said to be another user's (rnx gpu list shows it). */
job *jobs_find(const char *ref, const caller *who, jerr *e)
{
    idref r;
    if (idref_start(&r, "job", "--name", ref, e) < 0)
        return NULL;
    jobs_offer(&r, who, true);
    return idref_result(&r, e);
}

/* The place of seq in the table: where it is, or where it would go. */
static size_t by_seq(uint64_t seq)
{
    size_t lo = 0, hi = core.njobs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (core.jobs[mid]->seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

job *jobs_from_seq(uint64_t seq)
{
    size_t i = by_seq(seq);
    return i < core.njobs ? core.jobs[i] : NULL;
}

job *jobs_by_seq(uint64_t seq)
{
    job *j = jobs_from_seq(seq);
    return j && j->seq == seq ? j : NULL;
}

void jobs_reserve(size_t n)
{
    if (core.njobs + n > core.cap) {
        core.cap = core.njobs + n;
        core.jobs = xrealloc(core.jobs, core.cap * sizeof *core.jobs);
    }
    idindex_reserve(&by_ref, core.njobs + n);
    idindex_reserve(&by_owner_name, core.njobs + n);
}

void jobs_add(job *j)
{
    if (core.njobs == core.cap) {
        core.cap = core.cap ? core.cap * 2 : 256;
        core.jobs = xrealloc(core.jobs, core.cap * sizeof *core.jobs);
    }
    size_t at = core.njobs && core.jobs[core.njobs - 1]->seq > j->seq ? by_seq(j->seq) : core.njobs; /* in order */
    memmove(&core.jobs[at + 1], &core.jobs[at], (core.njobs - at) * sizeof *core.jobs);
    core.jobs[at] = j;
    core.njobs++;
    if (j->seq >= core.next_seq)
        core.next_seq = j->seq + 1;
    j->idx_flags = 0;
    j->idx_uid = j->idx_sandbox = 0;
    recount(j);
    idindex_add(&by_ref, j, j->id, j->name, j->seq);
    idindex_add_owned(&by_owner_name, j, j->id, j->name, (uint32_t)j->owner_uid, j->seq);
}

size_t jobs_seq_place(uint64_t seq) { return by_seq(seq); }

void jobs_remove(job *j) { jobs_remove_many(&j, 1); }

static int place_order(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return a < b ? -1 : a > b;
}

void jobs_remove_many(job **v, size_t n)
{
    size_t *at = n > 1 ? xcalloc(n, sizeof *at) : NULL, one, m = 0;
    if (!at)
        at = &one;
    for (size_t k = 0; k < n; k++) {
        job *j = v[k];
        core.removed++;
        if (j->idx_flags & IDX_KEPT)
            count_as(j, 0, 0, 0);
        ended_del(j);
        state_forget_job(j);
        for (size_t i = 0; i < core.nchanged; i++)
            if (core.changed[i] == j) {
                memmove(&core.changed[i], &core.changed[i + 1], (core.nchanged - i - 1) * sizeof *core.changed);
                core.nchanged--;
                break;
            }
        size_t i = by_seq(j->seq);
        if (i < core.njobs && core.jobs[i] == j) {
            idindex_del(&by_ref, j, j->id, j->name);
            idindex_del_owned(&by_owner_name, j, j->id, j->name, (uint32_t)j->owner_uid);
            at[m++] = i;
        }
    }
    /* one compaction: the runs between the places taken out move down, each once */
    if (m > 1)
        qsort(at, m, sizeof *at, place_order);
    size_t to = m ? at[0] : 0;
    for (size_t k = 0; k < m; k++) {
        size_t from = at[k] + 1, end = k + 1 < m ? at[k + 1] : core.njobs;
        memmove(&core.jobs[to], &core.jobs[from], (end - from) * sizeof *core.jobs);
        to += end - from;
    }
    core.njobs -= m;
    if (at != &one)
        free(at);
}

void jobs_mark(job *j, unsigned settle)
{
    if (!j->settle) {
        if (core.nchanged == core.changed_cap) {
            core.changed_cap = core.changed_cap ? core.changed_cap * 2 : 64;
            core.changed = xrealloc(core.changed, core.changed_cap * sizeof *core.changed);
        }
        core.changed[core.nchanged++] = j;
    }
    j->settle |= (uint8_t)settle;
    jobs_index(j);
    state_want(WANT_JOBS);
}

job **jobs_take_changed(size_t *n)
{
    /* handed over as a fresh array: the settle step's work may mark jobs again */
    *n = core.nchanged;
    if (!core.nchanged)
        return NULL;
    job **list = core.changed;
    core.changed = NULL;
    core.nchanged = core.changed_cap = 0;
    return list;
}

job *job_new(db_job *r)
{
    job *j = xcalloc(1, sizeof *j);
    memcpy(j->id, r->id, sizeof j->id);
    j->seq = r->seq;
    j->name = r->name;
    j->state = r->state;
    j->owner_uid = (uid_t)r->owner_uid;
    j->owner_gid = (gid_t)r->owner_gid;
    j->uid = (uid_t)r->uid;
    j->gid = (gid_t)r->gid;
    j->sandbox_uid = (uid_t)r->sandbox_uid;
    j->req = r->req;
    j->created_ms = r->created_ms;
    j->scheduled_ms = r->scheduled_ms;
    j->started_ms = r->started_ms;
    j->ended_ms = r->ended_ms;
    j->has_exit = r->has_exit;
    j->exit_code = r->exit_code;
    j->signal = r->signal;
    j->signal_name = r->signal_name;
    j->end_reason = r->end_reason;
    j->error = r->error;
    j->stopped_by = r->stopped_by;
    j->usage = (job_usage){.cpu_ns = r->cpu_ns, .memory_peak_bytes = r->memory_peak_bytes,
                           .io_read_bytes = r->io_read_bytes, .io_write_bytes = r->io_write_bytes,
                           .gpu_ms_before = r->gpu_ms_before};
    j->gpus = r->gpus;
    j->preemptions = r->preemptions;
    j->preempting = r->preempting;
    j->requeue_asked = r->requeue_asked;
    j->requeue_hold = r->requeue_hold;
    j->suspended_ms = r->suspended_ms;
    j->suspended_since_ms = r->suspended_since_ms;
    j->after_met = r->after_met;
    j->joined_ms = r->joined_ms;
    j->ended_held = r->ended_held;
    j->log_bytes = r->log_bytes;
    qclock_seen(j->created_ms);
    qclock_seen(j->joined_ms);
    memcpy(j->wf_id, r->wf_id, sizeof j->wf_id);
    j->wf_index = r->wf_index;
    j->gpu_fault = r->gpu_fault;
    j->shim_pid = (pid_t)r->shim_pid;
    j->shim_start = r->shim_start;
    j->waiter_pid = (pid_t)r->waiter_pid;
    j->net = r->net;
    memcpy(j->array_id, r->array_id, sizeof j->array_id);
    j->array_task = r->array_task;
    j->waiter_start = r->waiter_start;
    j->init_pid = (pid_t)r->init_pid;
    /* the event loop's: nothing watched yet */
    j->w_pid.fd = -1;
    j->w_notify.fd = -1;
    j->w_waiter.fd = -1;
    j->inotify_wd = -1;
    j->slurm = r->slurm;
    /* the job has the row's strings, request and GPUs now */
    r->name = r->signal_name = r->end_reason = r->error = NULL;
    r->req = (job_req){0};
    r->gpus = (gpu_grants){0};
    return j;
}

void job_free(job *j)
{
    if (!j)
        return;
    free(j->name);
    jobreq_free(&j->req);
    free(j->signal_name);
    free(j->end_reason);
    free(j->error);
    free(j->fail_reason);
    free(j->cg2_made);
    free(j->after_seq);
    free(j->dependents);
    grant_list_free(&j->gpus);
    free(j);
}

/* ---- the table's indexes (jobs.h) ---- */

/* A list of jobs with each one's place in it kept in the job (at slot, an offset in job). */
typedef struct jlist {
    job **v;
    size_t n, cap;
    size_t slot;
    bool sorted;      /* in seq order */
} jlist;

static struct {
    struct owner {
        uid_t uid;
        jobs_user_count c;
    } *owners;        /* by uid */
    size_t nowners, owners_cap;
    jlist queue, room;
    jlist state[JS_COUNT]; /* by state, of the states jobs_state_listed names */
    uint32_t *held;   /* per uid of the range: the unfinished jobs holding it */
    uint64_t held_start, held_size;
    uint64_t held_sum;     /* the sum of held's counts (verify: what it does not look at is zero) */
    uint32_t *held_check;  /* verify's own counts, zero between its calls (made at its first) */
} ix = {.queue = {.slot = offsetof(job, idx_queue), .sorted = true},
        .room = {.slot = offsetof(job, idx_room), .sorted = true}};

static uint32_t *slot_of(const jlist *l, job *j) { return (uint32_t *)(void *)((char *)j + l->slot); }

static void jlist_add(jlist *l, job *j)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    if (l->n && l->v[l->n - 1]->seq > j->seq)
        l->sorted = false;
    *slot_of(l, j) = (uint32_t)l->n;
    l->v[l->n++] = j;
}

static void jlist_del(jlist *l, job *j)
{
    uint32_t at = *slot_of(l, j);
    job *last = l->v[--l->n];
    if (at != l->n) {
        l->v[at] = last;
        *slot_of(l, last) = at;
        l->sorted = false;
    }
}

static int by_seq_cmp(const void *a, const void *b)
{
    uint64_t x = (*(job *const *)a)->seq, y = (*(job *const *)b)->seq;
    return x < y ? -1 : x > y;
}

static job **jlist_in_order(jlist *l, size_t *n)
{
    if (!l->sorted) {
        qsort(l->v, l->n, sizeof *l->v, by_seq_cmp);
        for (size_t i = 0; i < l->n; i++)
            *slot_of(l, l->v[i]) = (uint32_t)i;
        l->sorted = true;
    }
    *n = l->n;
    return l->v;
}

/* Where uid's counts are in ix.owners, or would be put. */
static size_t owner_at(uid_t uid)
{
    size_t lo = 0, hi = ix.nowners;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix.owners[mid].uid < uid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct owner *owner_of(uid_t uid)
{
    size_t lo = owner_at(uid);
    if (lo < ix.nowners && ix.owners[lo].uid == uid)
        return &ix.owners[lo];
    if (ix.nowners == ix.owners_cap) {
        ix.owners_cap = ix.owners_cap ? ix.owners_cap * 2 : 16;
        ix.owners = xrealloc(ix.owners, ix.owners_cap * sizeof *ix.owners);
    }
    memmove(&ix.owners[lo + 1], &ix.owners[lo], (ix.nowners - lo) * sizeof *ix.owners);
    ix.nowners++;
    ix.owners[lo] = (struct owner){.uid = uid};
    return &ix.owners[lo];
}

/* The range's uids as the table holds them (made for the configured range at first use), and
 * the lists by state (their place in the job, at the same slot of each). */
static void ix_ready(void)
{
    if (ix.held)
        return;
    for (size_t s = 0; s < JS_COUNT; s++)
        ix.state[s] = (jlist){.slot = offsetof(job, idx_state), .sorted = true};
    ix.held_start = core.cfg.uid_range_start;
    ix.held_size = core.cfg.uid_range_size ? core.cfg.uid_range_size : 1;
    ix.held = xcalloc(ix.held_size, sizeof *ix.held);
}

static uint32_t *held_at(uid_t uid)
{
    return uid && uid >= ix.held_start && uid - ix.held_start < ix.held_size ? &ix.held[uid - ix.held_start] : NULL;
}

/* Not the ended states: they are most of the jobs kept, so a scan is about the size of their
 * listing, while a list of them would be re-sorted (jlist_in_order) at each listing after jobs
 * ended out of order or were deleted: O(n log n) on the loop for 100,000 kept. The waiting
 * ones are few (limits.max_queued_per_user). */
bool jobs_state_listed(enum job_state s) { return s == JS_PENDING || s == JS_HELD; }

/* What the job should count as, from its state, shim and room. */
static uint8_t flags_of(const job *j)
{
    bool queue = job_in_queue(j);
    bool waiting = queue || j->state == JS_PENDING || j->state == JS_HELD;
    return (uint8_t)(IDX_KEPT | (waiting ? IDX_WAITING : 0) | (queue ? IDX_QUEUE : 0) | (j->holds_room ? IDX_ROOM : 0) |
                     (jobs_state_listed(j->state) ? IDX_STATE : 0));
}

static uid_t held_uid(const job *j, uid_t uid) { return !job_state_terminal(j->state) && held_at(uid) ? uid : 0; }

/* Counts j as `want` (0: not at all) holding uids u and s, where it counted as before. */
static void count_as(job *j, uint8_t want, uid_t u, uid_t s)
{
    uint8_t had = j->idx_flags, diff = had ^ want;
    if (diff & (IDX_KEPT | IDX_WAITING)) {
        jobs_user_count *c = &owner_of(j->owner_uid)->c;
        if (diff & IDX_KEPT) {
            c->kept += want & IDX_KEPT ? 1 : (uint64_t)-1;
            /* (a kept job's command, args and env never change: counted once, when it comes) */
            uint64_t bytes = want & IDX_KEPT ? jobreq_bytes(&j->req) : 0;
            c->bytes = c->bytes - j->idx_bytes + bytes;
            j->idx_bytes = bytes;
        }
        if (diff & IDX_WAITING)
            c->waiting += want & IDX_WAITING ? 1 : (uint64_t)-1;
    }
    if (diff & IDX_QUEUE)
        (want & IDX_QUEUE ? jlist_add : jlist_del)(&ix.queue, j);
    if (diff & IDX_ROOM)
        (want & IDX_ROOM ? jlist_add : jlist_del)(&ix.room, j);
    /* (from one listed state to another, HELD to PENDING or PENDING to CANCELED: no flag changes) */
    if ((diff & IDX_STATE) || (want & IDX_STATE && j->idx_as != j->state)) {
        if (had & IDX_STATE)
            jlist_del(&ix.state[j->idx_as], j);
        if (want & IDX_STATE) {
            j->idx_as = (uint8_t)j->state;
            jlist_add(&ix.state[j->state], j);
        }
    }
    if (j->idx_uid != u || j->idx_sandbox != s) {
        uint32_t *h;
        if ((h = held_at(j->idx_uid)))
            (*h)--, ix.held_sum--;
        if ((h = held_at(j->idx_sandbox)))
            (*h)--, ix.held_sum--;
        if ((h = held_at(u)))
            (*h)++, ix.held_sum++;
        if ((h = held_at(s)))
            (*h)++, ix.held_sum++;
        j->idx_uid = u;
        j->idx_sandbox = s;
    }
    j->idx_flags = want;
}

static void recount(job *j)
{
    ix_ready();
    count_as(j, flags_of(j), held_uid(j, j->uid), held_uid(j, j->sandbox_uid));
}

void jobs_index(job *j)
{
    if (j->idx_flags & IDX_KEPT)
        recount(j);
}

void jobs_index_rebuild(void)
{
    /* (held: made zero by ix_ready's calloc, whose pages are not touched; a memset of a fresh
     * one would make the range's 256 KiB resident at start for nothing) */
    bool fresh = !ix.held;
    ix_ready();
    for (size_t i = 0; i < ix.nowners; i++)
        ix.owners[i].c = (jobs_user_count){0};
    ix.queue.n = ix.room.n = 0;
    ix.queue.sorted = ix.room.sorted = true;
    for (size_t s = 0; s < JS_COUNT; s++) {
        ix.state[s].n = 0;
        ix.state[s].sorted = true;
    }
    if (!fresh)
        memset(ix.held, 0, ix.held_size * sizeof *ix.held);
    ix.held_sum = 0;
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        j->idx_flags = 0;
        j->idx_bytes = 0;
        j->idx_uid = j->idx_sandbox = 0;
        recount(j);
    }
}

void jobs_index_free(void)
{
    idindex_free(&by_ref);
    idindex_free(&by_owner_name);
    free(ix.owners);
    free(ix.queue.v);
    free(ix.room.v);
    for (size_t s = 0; s < JS_COUNT; s++)
        free(ix.state[s].v);
    memset(ix.state, 0, sizeof ix.state); /* (made again by ix_ready, as held) */
    free(ix.held);
    free(ix.held_check);
    ix.held_check = NULL;
    ix.held_sum = 0;
    ix.owners = NULL;
    ix.queue.v = ix.room.v = NULL;
    ix.held = NULL;
    free(ended.v);
    ended.v = NULL;
    ended.n = ended.cap = 0;
    ix.nowners = ix.owners_cap = ix.queue.n = ix.queue.cap = ix.room.n = ix.room.cap = 0;
}

/* At log level debug: the indexes against a scan of the table; a difference is a bug (a change
 * of a job that reached none of jobs_index's callers) and stops the daemon, so the tests that
 * run it at that level find it. */
static void verify(const char *where)
{
    static int64_t last_ns, ids_ns;
    if (!state_check_due(&last_ns, core.njobs))
        return;
    /* (the id indexes change only as a job comes or goes: each job looked up in them at most
     * once a second with more than a few hundred kept, their sizes at every check) */
    bool ids = state_check_due(&ids_ns, core.njobs > 256 ? SIZE_MAX : 0);
    ix_ready();
    char what[300] = "";
    size_t nq = 0, nr = 0, ns[JS_COUNT] = {0};
    uint64_t kept = 0, held_sum = 0;
    /* the range's uids held, counted again: in held_check, at the uids the jobs hold (O(jobs),
     * not O(range): a calloc and a compare of the range's 256 KiB at every use was most of a
     * debug daemon's CPU with a few thousand jobs kept); each such uid's count compared, and the
     * sums, so that a count held where no job holds it shows too */
    if (!ix.held_check)
        ix.held_check = xcalloc(ix.held_size, sizeof *ix.held_check);
    uint32_t *held = ix.held_check;
    /* each owner's counts, counted again in the same walk (by ix.owners' order) */
    jobs_user_count *owned = xcalloc(ix.nowners ? ix.nowners : 1, sizeof *owned);
    for (size_t i = 0; i < core.njobs && !what[0]; i++) {
        job *j = core.jobs[i];
        uint8_t want = flags_of(j);
        size_t o = owner_at(j->owner_uid);
        if (o < ix.nowners && ix.owners[o].uid == j->owner_uid) {
            owned[o].kept++;
            owned[o].waiting += (want & IDX_WAITING) != 0;
            owned[o].bytes += jobreq_bytes(&j->req);
        } else {
            snprintf(what, sizeof what, "job %s is not counted under its owner, uid %u", j->id,
                     (unsigned)j->owner_uid);
        }
        nq += (want & IDX_QUEUE) != 0;
        nr += (want & IDX_ROOM) != 0;
        ns[j->state] += (want & IDX_STATE) != 0;
        uint32_t *h;
        if ((h = held_at(held_uid(j, j->uid))))
            held[h - ix.held]++, held_sum++;
        if ((h = held_at(held_uid(j, j->sandbox_uid))))
            held[h - ix.held]++, held_sum++;
        if (what[0]) {
            /* (its owner's count, above) */
        } else if (j->idx_flags != want)
            snprintf(what, sizeof what, "job %s (%s, shim %d, room %d) counted as %#x, is %#x", j->id,
                     job_state_name(j->state), (int)j->shim_pid, j->holds_room, j->idx_flags, want);
        else if ((want & IDX_QUEUE && (j->idx_queue >= ix.queue.n || ix.queue.v[j->idx_queue] != j)) ||
                 (want & IDX_ROOM && (j->idx_room >= ix.room.n || ix.room.v[j->idx_room] != j)))
            snprintf(what, sizeof what, "job %s is not at its place in the queue's or the room's list", j->id);
        else if (want & IDX_STATE && (j->idx_as != j->state || j->idx_state >= ix.state[j->state].n ||
                                      ix.state[j->state].v[j->idx_state] != j))
            snprintf(what, sizeof what, "job %s (%s) is not at its place in the list of its state (listed as %s)",
                     j->id, job_state_name(j->state), job_state_name((enum job_state)j->idx_as));
        else if (ids && (idindex_get(&by_ref, j->id) != j || idindex_get(&by_owner_name, j->id) != j))
            snprintf(what, sizeof what, "job %s is not found by its id", j->id);
    }
    if (!what[0] && (by_ref.n != core.njobs || by_owner_name.n != core.njobs))
        snprintf(what, sizeof what, "%zu jobs found by id, %zu by owner and name; %zu in the table", by_ref.n,
                 by_owner_name.n, core.njobs);
    for (size_t o = 0; o < ix.nowners && !what[0]; o++) {
        jobs_user_count c = owned[o];
        kept += c.kept;
        if (c.kept != ix.owners[o].c.kept || c.waiting != ix.owners[o].c.waiting || c.bytes != ix.owners[o].c.bytes)
            snprintf(what, sizeof what, "uid %u: %llu kept, %llu waiting counted; %llu, %llu in the table",
                     (unsigned)ix.owners[o].uid, (unsigned long long)ix.owners[o].c.kept,
                     (unsigned long long)ix.owners[o].c.waiting, (unsigned long long)c.kept,
                     (unsigned long long)c.waiting);
    }
    free(owned);
    if (!what[0] && kept != core.njobs)
        snprintf(what, sizeof what, "%llu jobs counted under their owners; %zu in the table", (unsigned long long)kept,
                 core.njobs);
    if (!what[0] && (nq != ix.queue.n || nr != ix.room.n))
        snprintf(what, sizeof what, "%zu in the queue, %zu holding room listed; %zu, %zu in the table", ix.queue.n,
                 ix.room.n, nq, nr);
    for (size_t s = 0; s < JS_COUNT && !what[0]; s++)
        if (ns[s] != ix.state[s].n)
            snprintf(what, sizeof what, "%zu %s listed; %zu in the table", ix.state[s].n,
                     job_state_name((enum job_state)s), ns[s]);
    /* each uid a job holds, compared; then held_check made zero again where the first loop
     * counted (every job up to where it stopped) */
    for (int zero = 0; zero < 2; zero++)
        for (size_t i = 0; i < core.njobs; i++) {
            job *j = core.jobs[i];
            const uid_t u[2] = {held_uid(j, j->uid), held_uid(j, j->sandbox_uid)};
            for (size_t k = 0; k < 2; k++) {
                uint32_t *h = held_at(u[k]);
                if (!h)
                    continue;
                if (zero)
                    held[h - ix.held] = 0;
                else if (!what[0] && held[h - ix.held] != *h)
                    snprintf(what, sizeof what, "uid %u: held by %u jobs counted; %u in the table", (unsigned)u[k],
                             (unsigned)*h, (unsigned)held[h - ix.held]);
            }
        }
    if (!what[0] && held_sum != ix.held_sum)
        snprintf(what, sizeof what, "%llu uids held counted in the range; %llu in the table",
                 (unsigned long long)ix.held_sum, (unsigned long long)held_sum);
    if (what[0]) {
        log_err("jobs: the table's indexes differ from a scan (%s): %s", where, what);
        abort();
    }
}

jobs_user_count jobs_user(uid_t owner)
{
    verify("a user's jobs");
    return owner_of(owner)->c;
}

job **jobs_queued(size_t *n)
{
    verify("the queue");
    return jlist_in_order(&ix.queue, n);
}

job **jobs_holding_room(size_t *n)
{
    verify("the jobs holding room");
    return jlist_in_order(&ix.room, n);
}

job **jobs_in_state(enum job_state s, size_t *n)
{
    verify("the jobs of a state");
    ix_ready();
    if (!jobs_state_listed(s)) {
        *n = 0; /* (the caller's mistake: said, rather than a list missing jobs of s) */
        log_err("jobs: no list of the %s jobs is kept", job_state_name(s));
        return NULL;
    }
    return jlist_in_order(&ix.state[s], n);
}

/* root's shared-GPU jobs' uid (jobs_run_uid): the range's last, when it has more than one */
static uid_t shared_gpu_uid(void) { return (uid_t)(core.cfg.uid_range_start + core.cfg.uid_range_size - 1); }

uid_t jobs_run_uid(uid_t submitter, const job_req *req, uint64_t seq)
{
    if (submitter)
        return submitter;
    return req->gpu_share ? shared_gpu_uid() : jobs_free_uid(seq);
}

/* uids given to jobs still being made (jobs_uid_reserve): few (one per job of an upload being
 * written), so a list */
static uid_t *reserved;
static size_t nreserved;

void jobs_uid_reserve(uid_t uid, bool hold)
{
    if (hold) {
        reserved = xrealloc(reserved, (nreserved + 1) * sizeof *reserved);
        reserved[nreserved++] = uid;
        return;
    }
    for (size_t i = 0; i < nreserved; i++)
        if (reserved[i] == uid) {
            reserved[i] = reserved[--nreserved];
            return;
        }
}

static bool uid_reserved(uid_t uid)
{
    for (size_t i = 0; i < nreserved; i++)
        if (reserved[i] == uid)
            return true;
    return false;
}

uid_t jobs_free_uid(uint64_t from)
{
    verify("a free uid");
    ix_ready();
    for (uint64_t k = 0; k < core.cfg.uid_range_size; k++) {
        uid_t uid = (uid_t)(core.cfg.uid_range_start + (from + k) % core.cfg.uid_range_size);
        if (uid == shared_gpu_uid() && core.cfg.uid_range_size > 1)
            continue;
        uint32_t *h = held_at(uid);
        if ((!h || !*h) && !uid_reserved(uid))
            return uid;
    }
    /* every uid busy: share, never root's shared-GPU uid (jobs_run_uid: kept for those jobs) */
    uint64_t given = core.cfg.uid_range_size > 1 ? core.cfg.uid_range_size - 1 : 1;
    return (uid_t)(core.cfg.uid_range_start + from % given);
}

void jobs_dir_of(const job *j, char *out, size_t len) { snprintf(out, len, "%s/%s", core.jobs_dir, j->id); }

int job_save(job *j)
{
    jerr e = {0};
    jobs_index(j);
    state_wrote_job(j);
    db_job row;
    if (db_update_job(core.db, job_row(j, &row), &e) < 0) {
        log_err("job %s: not saved: %s", j->id, e.msg);
        return -1;
    }
    return 0;
}

/* The run is over: its room is free now, its GPUs in the settle step. */
static void give_back_room(job *j)
{
    if (j->holds_room && core.running > 0)
        core.running--;
    j->holds_room = false;
    jobs_mark(j, JOB_SETTLE_RELEASE);
    state_want(WANT_SCHEDULE);
}

/* The run that is over: its GPU time (GPUs held x its time) goes to what its earlier runs held
 * (usage.gpu_ms_before), before the next run's grants replace its GPUs; its records are removed
 * (the next run's shim writes them afresh). /work and the logs carry on (a checkpoint the job wrote
 * to /work is there when it runs again). */
static void clear_run(job *j)
{
    if (j->gpus.n && j->started_ms > 0 && j->ended_ms > j->started_ms)
        j->usage.gpu_ms_before += (uint64_t)(j->ended_ms - j->started_ms) * j->gpus.n;
    grant_list_free(&j->gpus); /* it holds none while it waits; the log keeps what it had */
    j->shim_pid = 0;
    j->init_pid = 0;
    j->sandbox_uid = 0; /* its gVisor sandbox's uid is the run's: free while it waits */
    j->has_exit = false;
    j->signal = 0;
    free(j->signal_name);
    j->signal_name = NULL;
    j->ended_ms = 0;
    j->started_ms = 0;
    j->log_bytes = -1; /* (its next run writes more) */
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    shim_record_clear(dir);
    j->ev_wait = 0;
}

/* What a run held, given back, and its records: the job waits (job_requeue, job_unstart). */
static void back_to_wait(job *j)
{
    give_back_room(j);
    clear_run(j);
}

void job_unstart(job *j)
{
    back_to_wait(j);
    /* a task of a held array waits held, as job_requeue has it (its array held while this start
     * waited for its commit: the task was not among those waiting then) */
    if (j->array && arrays_task_held(j->array, (uint32_t)j->array_task) && job_state_waiting(j->state) &&
        j->state != JS_HELD) {
        j->state = JS_HELD;
        j->stopped_by = j->array->held_by;
    }
    job_save(j);
}

void job_run_used(const job *j, char *d, size_t len)
{
    size_t l = 0;
    *d = 0;
    if (!j->started_ms || j->ended_ms < j->started_ms)
        return;
    double ran = (double)(j->ended_ms - j->started_ms) / 1000.0;
    l += (size_t)snprintf(d, len, "ran %.1f s, CPU %.2f s, memory peak %.1f MiB, read %.1f MiB, written %.1f MiB",
                          ran, (double)j->usage.cpu_ns / 1e9, (double)j->usage.memory_peak_bytes / 1048576.0,
                          (double)j->usage.io_read_bytes / 1048576.0, (double)j->usage.io_write_bytes / 1048576.0);
    if (j->gpus.n && l < len)
        snprintf(d + l, len - l, ", %.1f GPU-seconds", ran * (double)j->gpus.n);
}

void job_requeue(job *j)
{
    char used[300];
    job_run_used(j, used, sizeof used); /* (the run's records go next) */
    back_to_wait(j);
    /* a task of a held array waits held, as its array's other waiting tasks are (docs/batch.md:
     * "those waiting are held too"), whether requeued or preempted; released with its array */
    /* (not one released from the array's hold one by one: it was split out of it) */
    bool array_held = j->array && arrays_task_held(j->array, (uint32_t)j->array_task);
    j->state = j->requeue_hold || array_held ? JS_HELD : JS_PREEMPTED;
    if (j->requeue_asked && !j->requeue_hold)
        j->stopped_by = -1;
    /* who holds it: its array's holder (-1 not known), unless an admin's requeue --hold held the
     * task itself (an owner's --hold does not make an admin's hold of the array theirs to release) */
    bool admin_hold = j->requeue_hold && j->stopped_by >= 0 && (uid_t)j->stopped_by != j->owner_uid;
    if (array_held && !admin_hold)
        j->stopped_by = j->array->held_by;
    j->preempting = false;
    j->preemptions++;
    free(j->end_reason);
    j->end_reason = xstrdup(j->requeue_asked ? "requeued" : "preempted");
    j->requeue_asked = j->requeue_hold = false;
    job_save(j);
    const char *how = array_held ? "held, as its array is held, until the array is released"
                      : j->state == JS_HELD ? "held until released" : "waiting in the queue again";
    job_event(j, JE_REQUEUED, -1, "run %u ended%s%s; %s", j->preemptions, *used ? ": " : "", used, how);
    log_info("job %s %s (run %u ended); %s", j->id, job_state_name(j->state), j->preemptions, how);
}

bool jobs_uid_taken(const job *j)
{
    verify("a uid taken");
    ix_ready();
    if (uid_reserved(j->uid))
        return true;
    uint32_t *h = held_at(j->uid);
    /* (root's shared-GPU jobs share their uid: jobs_run_uid) */
    return h && *h > (j->idx_uid == j->uid ? 1u : 0u) && !(j->req.gpu_share && j->uid == shared_gpu_uid());
}

void job_rewait(job *j)
{
    clear_run(j);
    j->exit_code = 0;
    free(j->error);
    j->error = NULL;
    free(j->end_reason);
    j->end_reason = NULL; /* (not job_ran_before: it was not stopped halfway, it ended) */
    free(j->fail_reason);
    j->fail_reason = NULL;
    j->gpu_fault = (gpu_fault){0};
    j->usage = (job_usage){.gpu_ms_before = j->usage.gpu_ms_before}; /* the next run's */
    j->suspended_ms = j->suspended_since_ms = 0;
    j->stopped_by = -1;
    j->preempting = j->requeue_asked = j->requeue_hold = false;
    j->single_holder = 0;
    j->preemptions++;
}

/* "STOPPED (stopped), signal SIGTERM; stopped by uid 0", "FAILED (start_failed): why" */
static void record_end(job *j)
{
    char d[900];
    size_t l = (size_t)snprintf(d, sizeof d, "%s", job_state_name(j->state));
    if (j->end_reason && l < sizeof d)
        l += (size_t)snprintf(d + l, sizeof d - l, " (%s)", j->end_reason);
    if (j->has_exit && l < sizeof d)
        l += (size_t)snprintf(d + l, sizeof d - l, ", exit code %d", j->exit_code);
    if (j->signal && l < sizeof d)
        l += (size_t)snprintf(d + l, sizeof d - l, ", signal %s", j->signal_name ? j->signal_name : "?");
    bool by = j->stopped_by >= 0 && (j->state == JS_STOPPED || j->state == JS_CANCELED);
    if (by && l < sizeof d)
        l += (size_t)snprintf(d + l, sizeof d - l, "; %s by uid %lld", j->state == JS_STOPPED ? "stopped" : "canceled",
                              (long long)j->stopped_by);
    if (j->error && l < sizeof d)
        snprintf(d + l, sizeof d - l, ": %s", j->error);
    job_event_at(j, j->ended_ms, JE_ENDED, by ? j->stopped_by : -1, "%s", d);
}

void job_finish(job *j, enum job_state st, const char *reason)
{
    j->state = st;
    if (reason) {
        free(j->end_reason);
        j->end_reason = xstrdup(reason);
    }
    if (!j->ended_ms)
        j->ended_ms = now_ms();
    give_back_room(j);
    /* The last running job ended: a second later, if still idle, the memory of the busy
     * period goes back to the system (main.c). */
    if (core.running == 0)
        core.trim_at_ms = now_ms() + 1000;
    j->init_pid = 0;
    ended_add(j);
    job_save(j);
    record_end(j);
    jobs_mark(j, JOB_SETTLE_WAKE | JOB_SETTLE_WORKFLOW);
    char ec[32] = "";
    if (j->has_exit)
        snprintf(ec, sizeof ec, ", exit code %d", j->exit_code);
    log_info("job %s %s (%s%s)", j->id, job_state_name(st), reason ? reason : "", ec);
}

bool jobs_init_alive(const job *j)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)j->init_pid);
    char *s = j->init_pid > 0 ? read_file(path, NULL) : NULL;
    bool ok = s && strstr(s, j->id);
    free(s);
    return ok;
}
