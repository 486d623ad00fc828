/* The pure scheduler under random load, on every fixture machine with GPUs: jobs are submitted,
 * finish, fail, are cancelled, preempted and re-queued, GPUs are drained, held, degraded, limits
 * change; after every operation sched_decide runs on a virtual clock, its starts and preemptions
 * are applied, and an independent checker (nothing here calls sched.c to reach a verdict) holds
 * the result against the rules:
 *   - no GPU held by two exclusive jobs, or by an exclusive and a shared one; shared reservations
 *     on a GPU sum to at most its memory; a MIG device has one job at most;
 *   - each start got exactly what it asked for on usable, open, unheld GPUs (count, memory,
 *     kind mask, explicit ids, one NUMA node), or one free usable MIG device of its profile;
 *   - starts come in priority-then-submission order, and one behind the head either avoids the
 *     head's reservation or ends by the shadow time;
 *   - no job left waiting (for anything but its time, a job slot or its user's limit) fits the
 *     free, open, qualifying room outside the head's reservation; why[] and position[] agree
 *     with the job's situation; UNPLACEABLE exactly when it fits no machine state;
 *   - the shadow time is the first end of a holder at which the head fits, and it fits its
 *     reservation then, whatever started behind it; with no known end, every free GPU the head
 *     could use is reserved;
 *   - preemption victims are preemptible, of lower priority, not already stopping, each of
 *     them needed, and enough; no preemption when the stopping jobs already make room, none
 *     when no set of victims would.
 * Seeds are fixed: a failure reproduces; it prints the operation and the state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "fixture_load.h"

#include "gpu/gpu.h"
#include "gpu/sched_view.h"
#include "sched/placement.h"
#include "sched/sched.h"

#define OPS 100000
#define QCAP 40   /* waiting jobs at most */
#define CAP 256   /* waiting + running at most */

typedef struct croom {
    int excl[SCHED_GPU_MAX];      /* exclusive holders (a held GPU counts as one) */
    int nsh[SCHED_GPU_MAX];       /* shared holders */
    int64_t shmb[SCHED_GPU_MAX];  /* their reservations */
    uint32_t tenant[SCHED_GPU_MAX]; /* the uid they run as (the last one added) */
    int mixed[SCHED_GPU_MAX];     /* shared holders of two uids were added (never allowed) */
    int migb[SCHED_MIG_MAX];
} croom;

typedef struct stats {
    long starts, backfills, backfills_in_reservation, preempt_passes, victims, requeued, heads, shadows,
        unplaceable, user_limited, max_running, shared_starts, mig_starts, numa_starts, ids_starts, mask_starts,
        waiting_for_stopping;
} stats;

typedef struct sim {
    const char *name;
    uint64_t rng;
    size_t ngpus, nmigs;
    sched_gpu gpus[SCHED_GPU_MAX];
    sched_mig migs[SCHED_MIG_MAX];
    int pair[GPU_MAX * GPU_MAX];
    int strategy;
    uint64_t kinds[8];
    int nkinds;
    int profiles[SCHED_MIG_MAX];
    int nprofiles;
    int64_t mem_min, mem_max;
    sched_job q[CAP];
    size_t nq;
    sched_running run[CAP];
    size_t nr;
    uint64_t held;
    uint64_t next_seq;
    int64_t now;
    uint32_t max_running, max_per_user;
    long op;
    const char *opname;
    stats st;
} sim;

static uint64_t rnd64(sim *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rnd(sim *s, uint32_t n) { return n ? (uint32_t)(rnd64(s) % n) : 0; }

/* ---- the state, printed when a check fails ---- */

static void dump_req(const sched_req *r)
{
    fprintf(stderr, "count=%u mem=%llu mask=%#llx ids=%#llx shared=%d mig=%d numa1=%d prio=%d pre=%d user=%u rt=%lld",
            r->gpu_count, (unsigned long long)r->gpu_memory_mb, (unsigned long long)r->gpu_mask,
            (unsigned long long)r->gpu_ids, r->shared, r->mig_profile, r->single_numa, r->priority, r->preemptible,
            r->user, (long long)r->runtime_ms);
}

static void dump(const sim *s, const sched_output *o)
{
    fprintf(stderr, "== %s, operation %ld (%s), now %lld, max_running %u, max_gpus_per_user %u, held %#llx\n", s->name,
            s->op, s->opname, (long long)s->now, s->max_running, s->max_per_user, (unsigned long long)s->held);
    for (size_t g = 0; g < s->ngpus; g++)
        fprintf(stderr, "gpu %zu: usable=%d closed=%d mem=%lld numa=%d mps=%d\n", g, s->gpus[g].usable, s->gpus[g].closed,
                (long long)s->gpus[g].memory_mb, s->gpus[g].numa, s->gpus[g].mps);
    for (size_t d = 0; d < s->nmigs; d++)
        fprintf(stderr, "mig %zu: profile=%d usable=%d\n", d, s->migs[d].profile, s->migs[d].usable);
    for (size_t k = 0; k < s->nr; k++) {
        const sched_running *x = &s->run[k];
        fprintf(stderr, "running[%zu] seq=%llu gpus=%#llx mig=%d end=%lld stopping=%d ", k, (unsigned long long)x->seq,
                (unsigned long long)x->gpus, x->mig, (long long)x->end_ms, x->stopping);
        dump_req(&x->r);
        fprintf(stderr, "\n");
    }
    for (size_t i = 0; i < s->nq; i++) {
        fprintf(stderr, "job[%zu] seq=%llu not_before=%lld ", i, (unsigned long long)s->q[i].seq,
                (long long)s->q[i].not_before_ms);
        dump_req(&s->q[i].r);
        if (o && o->why)
            fprintf(stderr, " -> why=%u pos=%u", o->why[i], o->position[i]);
        fprintf(stderr, "\n");
    }
    if (o) {
        fprintf(stderr, "head=%ld reserved=%#llx shadow=%lld wakeup=%lld starts:", o->head,
                (unsigned long long)o->reserved, (long long)o->shadow_ms, (long long)o->next_wakeup_ms);
        for (size_t k = 0; k < o->nstart; k++)
            fprintf(stderr, " %zu->%#llx/%d", o->start[k], (unsigned long long)o->gpu_sets[k], o->mig_picks[k]);
        fprintf(stderr, " preempt:");
        for (size_t k = 0; k < o->npreempt; k++)
            fprintf(stderr, " %zu", o->preempt[k]);
        fprintf(stderr, "\n");
    }
}

static const sim *cur_sim;
static const sched_output *cur_out;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            dump(cur_sim, cur_out);                                                                                    \
            fprintf(stderr, "CHECK FAILED (%s:%d): %s: ", __FILE__, __LINE__, #cond);                                 \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
            fail();                                                                                                    \
        }                                                                                                              \
    } while (0)

/* ---- the independent checker ---- */

static int units(const sched_req *r) { return r->mig_profile >= 0 ? 1 : (int)r->gpu_count; }

/* GPU g is of the kind r asks for (usable; open unless ignore_closed). */
static int c_qualifies(const sim *s, size_t g, const sched_req *r, int ignore_closed)
{
    const sched_gpu *G = &s->gpus[g];
    if (!G->usable || (G->closed && !ignore_closed))
        return 0;
    if (r->gpu_mask && !(r->gpu_mask >> g & 1))
        return 0;
    if (r->shared)
        return G->mps && G->memory_mb >= 0 && (int64_t)r->gpu_memory_mb <= G->memory_mb;
    return r->gpu_memory_mb == 0 || (G->memory_mb >= 0 && (int64_t)r->gpu_memory_mb <= G->memory_mb);
}

/* GPU g would have room for shared request r in c once its shared jobs of another uid have gone
 * (MPS serves one uid at a time): what a shared head waits for. */
static int c_room_after_tenants(const sim *s, const croom *c, size_t g, const sched_req *r)
{
    return r->shared && !c->excl[g] && c->nsh[g] > 0 && c->tenant[g] != r->mps_uid &&
           (int64_t)r->gpu_memory_mb <= s->gpus[g].memory_mb;
}

/* GPU g has room for r in c. */
static int c_room(const sim *s, const croom *c, size_t g, const sched_req *r)
{
    if (c->excl[g])
        return 0;
    if (r->shared)
        return c->shmb[g] + (int64_t)r->gpu_memory_mb <= s->gpus[g].memory_mb &&
               (c->nsh[g] == 0 || c->tenant[g] == r->mps_uid);
    return c->nsh[g] == 0;
}

static void c_add(croom *c, const sched_req *r, uint64_t gpus, int mig, int sign)
{
    for (size_t g = 0; g < SCHED_GPU_MAX; g++)
        if (gpus >> g & 1) {
            if (r->shared) {
                if (sign > 0) {
                    c->mixed[g] |= c->nsh[g] > 0 && c->tenant[g] != r->mps_uid;
                    c->tenant[g] = r->mps_uid;
                }
                c->nsh[g] += sign;
                c->shmb[g] += sign * (int64_t)r->gpu_memory_mb;
            } else {
                c->excl[g] += sign;
            }
        }
    if (mig >= 0)
        c->migb[mig] += sign;
}

static void c_now(const sim *s, croom *c)
{
    memset(c, 0, sizeof *c);
    for (size_t g = 0; g < s->ngpus; g++)
        if (s->held >> g & 1)
            c->excl[g]++;
    for (size_t k = 0; k < s->nr; k++)
        c_add(c, &s->run[k].r, s->run[k].gpus, s->run[k].mig, 1);
}

/* Whether r fits room c without touching avoid; with all_free, on the whole machine empty and
 * open (c unused). */
static int c_fits(const sim *s, const croom *c, const sched_req *r, uint64_t avoid, int all_free)
{
    if (r->mig_profile >= 0) {
        for (size_t d = 0; d < s->nmigs; d++)
            if (s->migs[d].profile == r->mig_profile && s->migs[d].usable && (all_free || !c->migb[d]))
                return 1;
        return 0;
    }
    if (!r->gpu_count)
        return 1;
    uint64_t ok = 0;
    for (size_t g = 0; g < s->ngpus; g++)
        if (!(avoid >> g & 1) && c_qualifies(s, g, r, all_free) && (all_free || c_room(s, c, g, r)))
            ok |= 1ull << g;
    if (r->gpu_ids)
        return (r->gpu_ids & ~ok) == 0;
    if (r->single_numa) {
        for (size_t g = 0; g < s->ngpus; g++) {
            if (!(ok >> g & 1) || s->gpus[g].numa < 0)
                continue;
            uint32_t n = 0;
            for (size_t h = 0; h < s->ngpus; h++)
                n += ok >> h & 1 && s->gpus[h].numa == s->gpus[g].numa;
            if (n >= r->gpu_count)
                return 1;
        }
        return 0;
    }
    return (uint32_t)__builtin_popcountll(ok) >= r->gpu_count;
}

static int before(const sched_job *a, const sched_job *b)
{
    if (a->r.priority != b->r.priority)
        return a->r.priority > b->r.priority;
    return a->since_ms != b->since_ms ? a->since_ms < b->since_ms : a->seq < b->seq;
}

/* Checks one decision, then applies it: victims stop, starts run. */
static void check_and_apply(sim *s, sched_output *o)
{
    const size_t nq = s->nq, nr = s->nr;
    const int64_t now = s->now;
    cur_sim = s;
    cur_out = o;

    /* the order, and wakeup */
    size_t order[CAP], m = 0;
    long rank[CAP];
    int64_t wake = 0;
    for (size_t i = 0; i < nq; i++) {
        rank[i] = -1;
        if (s->q[i].not_before_ms > now) {
            wake = wake == 0 || s->q[i].not_before_ms < wake ? s->q[i].not_before_ms : wake;
            CHECK(o->why[i] == SW_SCHEDULED && o->position[i] == 0, "job %zu waits for its time", i);
            continue;
        }
        size_t p = m++;
        while (p > 0 && before(&s->q[i], &s->q[order[p - 1]])) {
            order[p] = order[p - 1];
            p--;
        }
        order[p] = i;
    }
    for (size_t k = 0; k < m; k++)
        rank[order[k]] = (long)k;
    CHECK(o->next_wakeup_ms == wake, "next_wakeup %lld, want %lld", (long long)o->next_wakeup_ms, (long long)wake);

    const long head = o->head;
    CHECK(head >= -1 && head < (long)nq, "head %ld of %zu jobs", head, nq);
    const long hrank = head >= 0 ? rank[head] : (long)CAP;
    const sched_req *hr = head >= 0 ? &s->q[head].r : NULL;
    if (head >= 0) {
        CHECK(rank[head] >= 0, "head %ld is not due yet", head);
        CHECK(o->why[head] == SW_HEAD || o->why[head] == SW_PREEMPTING, "head's why %u", o->why[head]);
    } else {
        CHECK(o->reserved == 0 && o->shadow_ms == 0, "no head, no reservation");
    }

    /* starts */
    croom c, at_head;
    c_now(s, &c);
    int started[CAP] = {0}, snap = 0, user_started[64] = {0};
    long prev = -1;
    CHECK(o->nstart <= m, "%zu starts of %zu eligible jobs", o->nstart, m);
    CHECK(o->nstart == 0 || !s->max_running || nr + o->nstart <= s->max_running, "max_running exceeded");
    for (size_t k = 0; k < o->nstart; k++) {
        size_t ji = o->start[k];
        CHECK(ji < nq && rank[ji] >= 0 && !started[ji], "start %zu: job %zu", k, ji);
        started[ji] = 1;
        CHECK(rank[ji] > prev, "start %zu: job %zu out of priority order", k, ji);
        prev = rank[ji];
        CHECK(o->why[ji] == SW_STARTS && o->position[ji] == 0, "job %zu starts: why %u position %u", ji, o->why[ji],
              o->position[ji]);
        if (!snap && rank[ji] > hrank) {
            at_head = c;
            snap = 1;
        }
        const sched_req *r = &s->q[ji].r;
        uint64_t set = o->gpu_sets[k];
        int mig = o->mig_picks[k];
        if (r->mig_profile >= 0) {
            CHECK(set == 0 && mig >= 0 && (size_t)mig < s->nmigs, "job %zu: MIG pick %d", ji, mig);
            CHECK(s->migs[mig].profile == r->mig_profile && s->migs[mig].usable && !c.migb[mig],
                  "job %zu: MIG device %d is not a free usable one of profile %d", ji, mig, r->mig_profile);
            s->st.mig_starts++;
        } else {
            CHECK(mig == -1, "job %zu: MIG pick %d without a profile", ji, mig);
            if (r->gpu_count == 0) {
                CHECK(set == 0, "job %zu asked for no GPU, got %#llx", ji, (unsigned long long)set);
            } else {
                CHECK(s->ngpus == 64 || (set >> s->ngpus) == 0, "job %zu: no such GPU in %#llx", ji,
                      (unsigned long long)set);
                if (r->gpu_ids)
                    CHECK(set == r->gpu_ids, "job %zu: got %#llx, asked for exactly %#llx", ji,
                          (unsigned long long)set, (unsigned long long)r->gpu_ids);
                CHECK((uint32_t)__builtin_popcountll(set) == r->gpu_count, "job %zu: %d GPUs for %u", ji,
                      __builtin_popcountll(set), r->gpu_count);
                CHECK((set & s->held) == 0, "job %zu got a held GPU", ji);
                int numa = -2;
                for (size_t g = 0; g < s->ngpus; g++) {
                    if (!(set >> g & 1))
                        continue;
                    CHECK(c_qualifies(s, g, r, 0), "job %zu: GPU %zu is not of its kind, or not usable and open", ji, g);
                    CHECK(c_room(s, &c, g, r), "job %zu: GPU %zu has no room for it", ji, g);
                    if (r->single_numa) {
                        CHECK(s->gpus[g].numa >= 0 && (numa == -2 || numa == s->gpus[g].numa),
                              "job %zu: GPUs on more than one NUMA node", ji);
                        numa = s->gpus[g].numa;
                    }
                }
                s->st.shared_starts += r->shared;
                s->st.numa_starts += r->single_numa;
                s->st.ids_starts += r->gpu_ids != 0;
                s->st.mask_starts += r->gpu_mask != 0;
            }
        }
        if (rank[ji] > hrank) {
            int ends_first = r->runtime_ms > 0 && o->shadow_ms > 0 && now + r->runtime_ms <= o->shadow_ms;
            CHECK((set & o->reserved) == 0 || ends_first,
                  "job %zu overtakes the head on its reserved GPUs (%#llx) and ends after the shadow", ji,
                  (unsigned long long)(set & o->reserved));
            s->st.backfills++;
            s->st.backfills_in_reservation += (set & o->reserved) != 0;
        }
        if (units(r) && r->user < 64)
            user_started[r->user] = 1;
        c_add(&c, r, set, mig, 1);
        s->st.starts++;
    }
    if (!snap)
        at_head = c;

    /* the room after the pass: never oversubscribed */
    for (size_t g = 0; g < s->ngpus; g++) {
        CHECK(c.excl[g] <= 1, "GPU %zu: %d exclusive holders", g, c.excl[g]);
        CHECK(!(c.excl[g] && c.nsh[g]), "GPU %zu: exclusive and shared holders", g);
        CHECK(!c.mixed[g], "GPU %zu: shared holders of two uids (MPS serves one)", g);
        CHECK(c.nsh[g] == 0 || c.shmb[g] <= s->gpus[g].memory_mb, "GPU %zu: %lld MB shared of %lld", g,
              (long long)c.shmb[g], (long long)s->gpus[g].memory_mb);
    }
    for (size_t d = 0; d < s->nmigs; d++)
        CHECK(c.migb[d] <= 1, "MIG device %zu: %d holders", d, c.migb[d]);

    /* per-user limit: final holdings of users that started something */
    int64_t final_units[64] = {0};
    for (size_t k = 0; k < nr; k++)
        if (s->run[k].r.user < 64)
            final_units[s->run[k].r.user] += s->run[k].mig >= 0 ? 1 : __builtin_popcountll(s->run[k].gpus);
    for (size_t k = 0; k < o->nstart; k++) {
        const sched_req *r = &s->q[o->start[k]].r;
        if (r->user < 64)
            final_units[r->user] += units(r);
    }
    for (uint32_t u = 0; u < 64; u++)
        CHECK(!s->max_per_user || !user_started[u] || final_units[u] <= s->max_per_user,
              "user %u holds %lld of %u after the pass", u, (long long)final_units[u], s->max_per_user);

    /* the jobs left waiting */
    uint32_t waiting = 0;
    long max_running_rank = -1;
    for (size_t k = 0; k < m; k++) {
        size_t ji = order[k];
        if (started[ji])
            continue;
        const sched_req *r = &s->q[ji].r;
        unsigned w = o->why[ji];
        CHECK((w >= SW_MAX_RUNNING && w <= SW_UNPLACEABLE) || w == SW_HEAD_HELD, "job %zu waits with why %u", ji, w);
        CHECK(o->position[ji] == ++waiting, "job %zu: position %u, want %u", ji, o->position[ji], waiting);
        int feasible = c_fits(s, NULL, r, 0, 1);
        CHECK((w == SW_UNPLACEABLE) == !feasible || w == SW_MAX_RUNNING || w == SW_USER_LIMIT,
              "job %zu: why %u, fits an empty machine: %d", ji, w, feasible);
        switch (w) {
        case SW_MAX_RUNNING:
            CHECK(s->max_running && nr + o->nstart >= s->max_running, "job %zu: MAX_RUNNING with %zu+%zu of %u", ji,
                  nr, o->nstart, s->max_running);
            if (max_running_rank < 0)
                max_running_rank = (long)k;
            s->st.max_running++;
            break;
        case SW_USER_LIMIT:
            CHECK(s->max_per_user && units(r) && r->user < 64 && final_units[r->user] + units(r) > s->max_per_user,
                  "job %zu: USER_LIMIT, user %u holds %lld", ji, r->user, (long long)final_units[r->user]);
            s->st.user_limited++;
            break;
        case SW_HEAD:
        case SW_PREEMPTING:
            CHECK((long)ji == head, "job %zu: why %u but the head is %ld", ji, w, head);
            break;
        case SW_HEAD_HELD: /* a head before the one with the reservation, reserving nothing */
            CHECK((long)ji != head && rank[ji] < hrank && r->mig_profile < 0, "job %zu: HEAD_HELD at rank %ld, the "
                  "head %ld at %ld", ji, rank[ji], head, hrank);
            break;
        case SW_RESERVED:
        case SW_NO_ROOM:
            CHECK(head >= 0 && rank[ji] > hrank, "job %zu: why %u and not behind the head", ji, w);
            break;
        case SW_UNPLACEABLE:
            s->st.unplaceable++;
            break;
        }
        if (w == SW_MAX_RUNNING || w == SW_USER_LIMIT)
            continue;
        int behind = head >= 0 && rank[ji] > hrank;
        int ends_first = r->runtime_ms > 0 && o->shadow_ms > 0 && now + r->runtime_ms <= o->shadow_ms;
        uint64_t avoid = behind && !ends_first ? o->reserved : 0;
        CHECK(!c_fits(s, &c, r, avoid, 0), "job %zu (why %u) waits but fits the free room outside %#llx", ji, w,
              (unsigned long long)avoid);
    }
    if (max_running_rank >= 0)
        CHECK(prev < 0 || rank[o->start[o->nstart - 1]] < max_running_rank, "a job started after one out of slots");

    /* the head: its reservation, and preemption */
    int victim[CAP] = {0};
    CHECK(o->npreempt == 0 || (head >= 0 && o->why[head] == SW_PREEMPTING), "%zu victims without a preempting head",
          o->npreempt);
    for (size_t v = 0; v < o->npreempt; v++) {
        size_t x = o->preempt[v];
        CHECK(x < nr && !victim[x], "victim %zu", x);
        victim[x] = 1;
        CHECK(!s->run[x].stopping, "victim %zu is already stopping", x);
        CHECK(s->run[x].r.preemptible, "victim %zu is not preemptible", x);
        CHECK(s->run[x].r.priority < hr->priority, "victim %zu: priority %d, head's %d", x, s->run[x].r.priority,
              hr->priority);
    }
    if (head >= 0) {
        uint64_t all = s->ngpus == 64 ? ~0ull : (1ull << s->ngpus) - 1;
        s->st.heads++;
        CHECK(!c_fits(s, &at_head, hr, 0, 0), "the head fitted when its turn came");
        croom cs = at_head, cv;
        for (size_t k = 0; k < nr; k++)
            if (s->run[k].stopping)
                c_add(&cs, &s->run[k].r, s->run[k].gpus, s->run[k].mig, -1);
        cv = cs;
        for (size_t v = 0; v < o->npreempt; v++)
            c_add(&cv, &s->run[o->preempt[v]].r, s->run[o->preempt[v]].gpus, s->run[o->preempt[v]].mig, -1);
        if (o->why[head] == SW_PREEMPTING) {
            CHECK(o->shadow_ms == now, "preempting: shadow %lld", (long long)o->shadow_ms);
            CHECK(c_fits(s, &cv, hr, all & ~o->reserved, 0), "the head does not fit its reservation once the victims "
                                                              "and the stopping jobs are gone");
            if (o->npreempt == 0) {
                s->st.waiting_for_stopping++;
            } else {
                CHECK(!c_fits(s, &cs, hr, 0, 0), "victims, though the stopping jobs make room enough");
                for (size_t v = 0; v < o->npreempt; v++) {
                    const sched_running *x = &s->run[o->preempt[v]];
                    croom t = cv;
                    c_add(&t, &x->r, x->gpus, x->mig, 1);
                    CHECK(!c_fits(s, &t, hr, 0, 0), "victim %zu is not needed", o->preempt[v]);
                }
                s->st.preempt_passes++;
                s->st.victims += (long)o->npreempt;
            }
        } else {
            CHECK(!c_fits(s, &cs, hr, 0, 0), "HEAD though the stopping jobs make room");
            croom ca = cs;
            for (size_t k = 0; k < nr; k++) {
                const sched_running *x = &s->run[k];
                if (!x->stopping && x->r.preemptible && x->r.priority < hr->priority)
                    c_add(&ca, &x->r, x->gpus, x->mig, -1);
            }
            CHECK(!c_fits(s, &ca, hr, 0, 0), "no preemption, though stopping every lower-priority job would help");
            if (o->shadow_ms > 0) {
                /* at the shadow time, every holder that ends by then is gone: the head fits on
                 * its reserved GPUs, whatever started behind it */
                croom t;
                memset(&t, 0, sizeof t);
                for (size_t g = 0; g < s->ngpus; g++)
                    t.excl[g] += s->held >> g & 1;
                for (size_t k = 0; k < nr; k++) {
                    const sched_running *x = &s->run[k];
                    if (!x->stopping && !(x->end_ms && x->end_ms <= o->shadow_ms))
                        c_add(&t, &x->r, x->gpus, x->mig, 1);
                }
                for (size_t k = 0; k < o->nstart; k++) {
                    const sched_req *r = &s->q[o->start[k]].r;
                    if (!(r->runtime_ms && now + r->runtime_ms <= o->shadow_ms))
                        c_add(&t, r, o->gpu_sets[k], o->mig_picks[k], 1);
                }
                CHECK(c_fits(s, &t, hr, all & ~o->reserved, 0), "the head does not fit its reservation at the shadow");
                /* and the shadow is the first time it fits: when a holder ends (a job running,
                 * or started ahead of the head in this pass); before that, it fits nowhere */
                int is_end = 0;
                croom e = at_head;
                for (size_t k = 0; k < nr; k++) {
                    const sched_running *x = &s->run[k];
                    int64_t end = x->stopping ? now : x->end_ms;
                    is_end |= end == o->shadow_ms;
                    if (end && end < o->shadow_ms)
                        c_add(&e, &x->r, x->gpus, x->mig, -1);
                }
                for (size_t k = 0; k < o->nstart && rank[o->start[k]] < hrank; k++) {
                    const sched_req *r = &s->q[o->start[k]].r;
                    is_end |= r->runtime_ms && now + r->runtime_ms == o->shadow_ms;
                    if (r->runtime_ms && now + r->runtime_ms < o->shadow_ms)
                        c_add(&e, r, o->gpu_sets[k], o->mig_picks[k], -1);
                }
                CHECK(is_end, "the shadow is no holder's end");
                CHECK(!c_fits(s, &e, hr, 0, 0), "the head fits before the shadow");
                s->st.shadows++;
            } else {
                /* no known end makes it fit: the free GPUs it could use are all reserved (any of
                 * them may be one it gets), and they stay free */
                for (size_t g = 0; g < s->ngpus; g++) {
                    uint32_t node = 0; /* open GPUs of its kind on g's NUMA node */
                    for (size_t h = 0; h < s->ngpus; h++)
                        node += s->gpus[g].numa >= 0 && s->gpus[h].numa == s->gpus[g].numa && c_qualifies(s, h, hr, 0);
                    int kind = hr->mig_profile < 0 && c_qualifies(s, g, hr, 0) && (!hr->gpu_ids || hr->gpu_ids >> g & 1) &&
                               (!hr->single_numa || node >= hr->gpu_count);
                    int usable_now = kind && c_room(s, &at_head, g, hr);
                    CHECK(!usable_now || o->reserved >> g & 1, "GPU %zu, free and of use to the head, is not reserved",
                          g);
                    /* a shared head: also the GPUs it waits for other uids' shared jobs to leave */
                    CHECK(!(kind && c_room_after_tenants(s, &at_head, g, hr)) || o->reserved >> g & 1,
                          "GPU %zu, of use to the shared head once another uid's shared jobs leave, is not reserved", g);
                    if (o->reserved >> g & 1)
                        CHECK(c_qualifies(s, g, hr, 0) && (c_room(s, &c, g, hr) || c_room_after_tenants(s, &c, g, hr)),
                              "reserved GPU %zu is of no use to the head now", g);
                }
            }
        }
    }

    /* apply: the victims stop, the starts run */
    for (size_t v = 0; v < o->npreempt; v++)
        s->run[o->preempt[v]].stopping = 1;
    for (size_t k = 0; k < o->nstart; k++) {
        const sched_job *j = &s->q[o->start[k]];
        s->run[s->nr++] = (sched_running){j->seq, j->r, o->gpu_sets[k], o->mig_picks[k],
                                          j->r.runtime_ms ? now + j->r.runtime_ms : 0, 0};
    }
    size_t n = 0;
    for (size_t i = 0; i < nq; i++)
        if (!started[i])
            s->q[n++] = s->q[i];
    s->nq = n;
    cur_out = NULL;
}

/* ---- the operations ---- */

static sched_req gen_req(sim *s)
{
    sched_req r;
    memset(&r, 0, sizeof r);
    r.mig_profile = -1;
    r.priority = (int32_t)rnd(s, 4);
    r.preemptible = rnd(s, 2);
    r.user = rnd(s, 4);
    r.runtime_ms = rnd(s, 10) < 6 ? 500 + rnd(s, 30000) : 0;
    if (s->nmigs && rnd(s, 10) < 7) {
        r.mig_profile = rnd(s, 50) ? s->profiles[rnd(s, (uint32_t)s->nprofiles)] : 99; /* 99: no such device */
        return r;
    }
    if (rnd(s, 20) == 0)
        return r; /* no GPU */
    uint32_t n = (uint32_t)s->ngpus;
    r.gpu_count = 1 + rnd(s, n);
    if (rnd(s, 3))
        r.gpu_count = 1 + rnd(s, r.gpu_count);
    if (rnd(s, 100) < 18) {
        r.shared = 1;
        r.mps_uid = r.user % 3; /* (no draw: three tenants among the users) */
        r.gpu_count = rnd(s, 4) || n < 2 ? 1 : 2;
        static const int div[] = {8, 4, 3, 2, 1};
        r.gpu_memory_mb = (uint64_t)(s->mem_max / div[rnd(s, 5)]) + 1;
        r.gpu_memory_mb -= rnd(s, 100); /* one draw a statement: the order is the same in every build */
    } else if (rnd(s, 100) < 25) {
        int64_t choice[] = {1000, s->mem_min, s->mem_max, s->mem_max + 1};
        r.gpu_memory_mb = (uint64_t)choice[rnd(s, 4)];
    }
    uint32_t x = rnd(s, 100);
    if (x < 10) {
        while ((uint32_t)__builtin_popcountll(r.gpu_ids) < r.gpu_count)
            r.gpu_ids |= 1ull << rnd(s, n);
    } else if (x < 25) {
        r.single_numa = 1;
    }
    x = rnd(s, 100);
    if (x < 10 && s->nkinds)
        r.gpu_mask = s->kinds[rnd(s, (uint32_t)s->nkinds)];
    else if (x < 15) {
        r.gpu_mask = rnd64(s) & ((1ull << n) - 1);
        r.gpu_mask |= 1ull << rnd(s, n);
    }
    return r;
}

static void submit(sim *s)
{
    sched_job j;
    j.seq = ++s->next_seq;
    j.not_before_ms = rnd(s, 12) == 0 ? s->now + 1 + rnd(s, 5000) : 0;
    /* in the queue since its submission, or its --schedule time (core/queue.c), or, now and then,
     * a time before others' (a job released from a hold keeps none of its old place, but the
     * order must hold whatever the times are) */
    j.since_ms = rnd(s, 8) == 0 ? (int64_t)rnd(s, (uint32_t)(s->now + 1)) : j.not_before_ms ? j.not_before_ms : s->now;
    j.r = gen_req(s);
    /* jobs no machine state could run: some, not a queue full of them */
    for (int k = 0; k < 3 && !c_fits(s, NULL, &j.r, 0, 1); k++)
        j.r = gen_req(s);
    s->q[s->nq++] = j;
}

static void remove_running(sim *s, size_t k) { s->run[k] = s->run[--s->nr]; }

static void step(sim *s)
{
    s->now += rnd(s, 1500);
    /* jobs end by their run time (max_runtime), but now and then one overruns a while */
    for (size_t k = 0; k < s->nr;)
        if (s->run[k].end_ms && s->run[k].end_ms <= s->now && (s->run[k].seq % 11 || s->run[k].end_ms + 5000 <= s->now))
            remove_running(s, k);
        else
            k++;
    uint32_t x = rnd(s, 100);
    if (x < 40) {
        s->opname = "submit";
        if (s->nq < QCAP && s->nq + s->nr < CAP - 1)
            submit(s);
    } else if (x < 52) {
        s->opname = "finish";
        if (s->nr)
            remove_running(s, rnd(s, (uint32_t)s->nr));
    } else if (x < 58) {
        s->opname = "fail";
        if (s->nr)
            remove_running(s, rnd(s, (uint32_t)s->nr));
    } else if (x < 63) {
        s->opname = "cancel queued";
        if (s->nq) {
            /* now and then the owner of a job that cannot run gives up */
            size_t i = rnd(s, (uint32_t)s->nq);
            for (size_t t = 0; t < s->nq && rnd(s, 2); t++)
                if (!c_fits(s, NULL, &s->q[(i + t) % s->nq].r, 0, 1)) {
                    i = (i + t) % s->nq;
                    break;
                }
            s->q[i] = s->q[--s->nq];
        }
    } else if (x < 66) {
        s->opname = "cancel running";
        if (s->nr)
            remove_running(s, rnd(s, (uint32_t)s->nr));
    } else if (x < 80) {
        s->opname = "stopped: requeue";
        size_t stop[CAP], n = 0;
        for (size_t k = 0; k < s->nr; k++)
            if (s->run[k].stopping)
                stop[n++] = k;
        if (n) {
            size_t k = stop[rnd(s, (uint32_t)n)];
            s->q[s->nq++] = (sched_job){.seq = s->run[k].seq, .r = s->run[k].r};
            remove_running(s, k);
            s->st.requeued++;
        }
    } else if (x < 84) {
        s->opname = "drain / reopen";
        size_t g = rnd(s, (uint32_t)s->ngpus);
        if (s->gpus[g].closed || rnd(s, 5) == 0) /* closed a sixth of the time */
            s->gpus[g].closed ^= 1;
    } else if (x < 85) {
        s->opname = "degrade / recover";
        /* broken a tenth of the time; the MIG machine's GPU is never usable whole */
        int *u = s->nmigs ? &s->migs[rnd(s, (uint32_t)s->nmigs)].usable : &s->gpus[rnd(s, (uint32_t)s->ngpus)].usable;
        if (!*u || rnd(s, 10) == 0)
            *u ^= 1;
    } else if (x < 88) {
        s->opname = "hold / release";
        size_t g = rnd(s, (uint32_t)s->ngpus);
        int busy = 0;
        for (size_t k = 0; k < s->nr; k++)
            busy |= (int)(s->run[k].gpus >> g & 1);
        if (s->held >> g & 1)
            s->held &= ~(1ull << g);
        else if (!busy && rnd(s, 4) == 0)
            s->held |= 1ull << g;
    } else if (x < 89) {
        s->opname = "limits";
        s->max_running = rnd(s, 3) ? 0 : 2 + rnd(s, 12);
        s->max_per_user = rnd(s, 3) ? 0 : 1 + rnd(s, (uint32_t)s->ngpus + 1);
    } else {
        s->opname = "tick";
    }
}

static void decide(sim *s)
{
    static size_t start[CAP], pre[CAP];
    static uint64_t sets[CAP];
    static int picks[CAP];
    static uint8_t why[CAP];
    static uint32_t pos[CAP];
    memset(why, 0xee, sizeof why);
    memset(pos, 0xee, sizeof pos);
    sched_input in;
    memset(&in, 0, sizeof in);
    in.jobs = s->q;
    in.n = s->nq;
    in.running = s->run;
    in.nrunning = s->nr;
    in.now_ms = s->now;
    in.max_running = s->max_running;
    in.max_gpus_per_user = s->max_per_user;
    in.gpus = s->gpus;
    in.ngpus = s->ngpus;
    in.held = s->held;
    in.migs = s->migs;
    in.nmigs = s->nmigs;
    in.gpu_pair = s->pair;
    in.strategy = s->strategy;
    sched_output o = {start, 0, sets, picks, pre, 0, 0, -1, 0, 0, why, pos};
    sched_decide(&in, &o);
    check_and_apply(s, &o);
}


static void run_fixture(const char *name, uint64_t seed, int strategy)
{
    static gpu_inventory inv;
    static sim s;
    assert_int_equal(load_fixture(name, &inv), 0);
    assert_true(inv.n > 0);
    memset(&s, 0, sizeof s);
    s.name = name;
    s.rng = seed;
    s.ngpus = (size_t)inv.n;
    s.now = 1000000;
    s.strategy = strategy;
    gpu_sched_gpus(&inv, 1, s.gpus);
    for (size_t g = 0; g < s.ngpus; g++)
        s.gpus[g].mps = g % 3 != 1; /* some GPUs without MPS */
    gpu_pair_scores(&inv, s.pair);
    s.nmigs = gpu_sched_migs(&inv, s.migs, NULL, SCHED_MIG_MAX);
    for (size_t d = 0; d < s.nmigs; d++) {
        int seen = 0;
        for (int p = 0; p < s.nprofiles; p++)
            seen |= s.profiles[p] == s.migs[d].profile;
        if (!seen)
            s.profiles[s.nprofiles++] = s.migs[d].profile;
    }
    static const char *const types[] = {"A100", "T4", "H100", "V100"};
    for (size_t t = 0; t < 4; t++) {
        uint64_t k = gpu_kind_mask(&inv, types[t], 0);
        if (k)
            s.kinds[s.nkinds++] = k;
    }
    uint64_t k = gpu_kind_mask(&inv, "", 80);
    if (k)
        s.kinds[s.nkinds++] = k;
    s.mem_min = s.mem_max = -1;
    for (size_t g = 0; g < s.ngpus; g++) {
        if (s.gpus[g].memory_mb < 0)
            continue;
        if (s.mem_min < 0 || s.gpus[g].memory_mb < s.mem_min)
            s.mem_min = s.gpus[g].memory_mb;
        if (s.gpus[g].memory_mb > s.mem_max)
            s.mem_max = s.gpus[g].memory_mb;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (s.op = 0; s.op < OPS; s.op++) {
        step(&s);
        decide(&s);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const stats *st = &s.st;
    print_message("%-14s %.2fs: %ld starts (%ld behind the head, %ld of them on reserved GPUs; %ld shared, %ld MIG, "
                  "%ld single-NUMA, %ld by id, %ld by kind), %ld heads (%ld with a shadow), %ld preemptions of %ld "
                  "jobs, %ld waits for stopping jobs, %ld requeued; waiting: %ld unplaceable, %ld at the user limit, "
                  "%ld out of slots\n",
                  name, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, st->starts,
                  st->backfills, st->backfills_in_reservation, st->shared_starts, st->mig_starts, st->numa_starts,
                  st->ids_starts, st->mask_starts, st->heads, st->shadows, st->preempt_passes, st->victims,
                  st->waiting_for_stopping, st->requeued, st->unplaceable, st->user_limited, st->max_running);
    /* the run went through every path it is meant to */
    assert_true(st->starts > 1000);
    assert_true(st->backfills > 100);
    assert_true(st->heads > 1000);
    assert_true(st->shadows > 100);
    assert_true(st->preempt_passes > 100);
    assert_true(st->waiting_for_stopping > 10);
    assert_true(st->requeued > 100);
    assert_true(st->unplaceable > 100);
    assert_true(st->user_limited > 100);
    assert_true(st->max_running > 100);
    if (s.nmigs) {
        assert_true(st->mig_starts > 1000);
    } else {
        assert_true(st->backfills_in_reservation > 10);
        assert_true(st->shared_starts > 100);
        assert_true(st->numa_starts > 100);
        assert_true(st->ids_starts > 100);
        assert_true(st->mask_starts > 100);
    }
}

static void test_dgx_h100(void **state) { run_fixture("dgx-h100", 0x1001, PLACE_TOPOLOGY); }
static void test_dgx1_v100(void **state) { run_fixture("dgx1-v100", 0x1002, PLACE_PACK); }
static void test_a100_pcie_4(void **state) { run_fixture("a100-pcie-4", 0x1003, PLACE_SPREAD); }
static void test_a100_mig(void **state) { run_fixture("a100-mig", 0x1004, PLACE_TOPOLOGY); }
static void test_mixed(void **state) { run_fixture("mixed", 0x1005, PLACE_TOPOLOGY); }
static void test_broken_driver(void **state) { run_fixture("broken-driver", 0x1006, PLACE_PACK); }

/* With an argument, only the test of that name (test_mixed, ...). */
int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx_h100),   cmocka_unit_test(test_dgx1_v100), cmocka_unit_test(test_a100_pcie_4),
        cmocka_unit_test(test_a100_mig),   cmocka_unit_test(test_mixed),     cmocka_unit_test(test_broken_driver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
