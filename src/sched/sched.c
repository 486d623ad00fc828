#include "sched.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"

/* Who holds what: the running jobs, the jobs started in this pass, the held GPUs. */
typedef struct room {
    uint64_t whole;                      /* GPUs with an exclusive owner, or held */
    int64_t shared_mb[SCHED_GPU_MAX];    /* sum of shared reservations on each GPU */
    uint32_t tenant[SCHED_GPU_MAX];      /* the uid its shared jobs run as (while shared_mb > 0) */
    uint8_t mig_busy[SCHED_MIG_MAX];
} room;

/* A holder of room with the time it gives it back: what the head's reservation is worked
 * out from. */
typedef struct holder {
    uint64_t gpus;
    int shared;
    uint64_t shared_mb;
    uint32_t mps_uid;
    int mig;
    int64_t end_ms;                      /* 0 = unknown */
} holder;

static size_t ngpus_of(const sched_input *in) { return in->ngpus < SCHED_GPU_MAX ? in->ngpus : SCHED_GPU_MAX; }
static size_t nmigs_of(const sched_input *in) { return in->nmigs < SCHED_MIG_MAX ? in->nmigs : SCHED_MIG_MAX; }

static void room_add(room *R, const holder *h, int sign)
{
    for (size_t g = 0; g < SCHED_GPU_MAX; g++)
        if (h->gpus >> g & 1 && h->shared) {
            R->shared_mb[g] += sign * (int64_t)h->shared_mb;
            if (sign > 0)
                R->tenant[g] = h->mps_uid; /* (the same for every shared job there: candidates) */
        }
    if (!h->shared) {
        if (sign > 0)
            R->whole |= h->gpus;
        else
            R->whole &= ~h->gpus;
    }
    if (h->mig >= 0 && h->mig < SCHED_MIG_MAX)
        R->mig_busy[h->mig] = sign > 0;
}

static holder holder_of(const sched_req *r, uint64_t set, int mig, int64_t end_ms)
{
    return (holder){set, r->shared, r->gpu_memory_mb, r->mps_uid, mig, end_ms};
}

/* Strict priority, then submission order: a job never overtakes an older one of equal
 * priority, so nothing starves behind later arrivals. */
static int before(const sched_job *a, const sched_job *b)
{
    if (a->r.priority != b->r.priority)
        return a->r.priority > b->r.priority;
    if (a->since_ms != b->since_ms)
        return a->since_ms < b->since_ms;
    return a->seq < b->seq;
}

/* A merge sort of job indexes: qsort has no context argument, and the queue may hold
 * thousands. */
static void sort_order(size_t *a, size_t n, size_t *tmp, const sched_job *jobs)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_order(a, h, tmp, jobs);
    sort_order(a + h, n - h, tmp, jobs);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = before(&jobs[a[j]], &jobs[a[i]]) ? a[j++] : a[i++];
    while (i < h)
        tmp[k++] = a[i++];
    while (j < n)
        tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

int sched_qualifies(const sched_gpu *g, const sched_req *r)
{
    if (!g->usable)
        return 0;
    if (r->shared)
        return g->mps && g->memory_mb >= 0 && (uint64_t)g->memory_mb >= r->gpu_memory_mb;
    return r->gpu_memory_mb == 0 || (g->memory_mb >= 0 && (uint64_t)g->memory_mb >= r->gpu_memory_mb);
}

/* The GPUs a request may take from room R, leaving out avoid. */
static uint64_t candidates(const sched_input *in, const room *R, const sched_req *r, uint64_t avoid)
{
    uint64_t c = 0;
    for (size_t g = 0; g < ngpus_of(in); g++) {
        const sched_gpu *G = &in->gpus[g];
        if (G->closed || !sched_qualifies(G, r) || avoid >> g & 1 || R->whole >> g & 1)
            continue;
        if (r->gpu_mask && !(r->gpu_mask >> g & 1))
            continue;
        if (r->shared ? R->shared_mb[g] + (int64_t)r->gpu_memory_mb > G->memory_mb : R->shared_mb[g] > 0)
            continue;
        if (r->shared && R->shared_mb[g] > 0 && R->tenant[g] != r->mps_uid)
            continue; /* its MPS server is another uid's */
        c |= 1ull << g;
    }
    return c;
}

/* The GPUs shared request r could take once their shared jobs of another uid have gone (MPS
 * serves one uid: candidates). They are what such a head waits for, with no end known. */
static uint64_t after_tenants(const sched_input *in, const room *R, const sched_req *r)
{
    if (!r->shared)
        return 0;
    room T = *R;
    for (size_t g = 0; g < SCHED_GPU_MAX; g++)
        if (T.shared_mb[g] > 0 && T.tenant[g] != r->mps_uid)
            T.shared_mb[g] = 0;
    return candidates(in, &T, r, 0) & ~candidates(in, R, r, 0);
}

static uint64_t busy_of(const sched_input *in, const room *R)
{
    uint64_t b = R->whole;
    for (size_t g = 0; g < ngpus_of(in); g++)
        if (R->shared_mb[g] > 0)
            b |= 1ull << g;
    return b;
}

/* count GPUs among cand: by the placement policy when there are scores, lowest first else. */
static int choose(const sched_input *in, const room *R, uint64_t cand, unsigned count, uint64_t *set)
{
    if ((unsigned)__builtin_popcountll(cand) < count)
        return -1;
    if (in->gpu_pair)
        return placement_best(in->gpu_pair, ngpus_of(in), cand, busy_of(in, R), (enum placement_strategy)in->strategy,
                              count, set);
    *set = 0;
    for (size_t g = 0; g < ngpus_of(in) && count; g++)
        if (cand >> g & 1) {
            *set |= 1ull << g;
            count--;
        }
    return 0;
}

/* Shared jobs go first onto GPUs other shared jobs already use, fullest first: light jobs
 * share, and whole GPUs stay whole for exclusive ones. */
static int choose_shared(const sched_input *in, const room *R, uint64_t cand, unsigned count, uint64_t *set)
{
    *set = 0;
    while (count) {
        int pick = -1;
        for (size_t g = 0; g < ngpus_of(in); g++)
            if (cand >> g & 1 && !(*set >> g & 1) && R->shared_mb[g] > 0 &&
                (pick < 0 || in->gpus[g].memory_mb - R->shared_mb[g] < in->gpus[pick].memory_mb - R->shared_mb[pick]))
                pick = (int)g;
        if (pick < 0)
            break;
        *set |= 1ull << pick;
        count--;
    }
    uint64_t rest = 0;
    if (count && choose(in, R, cand & ~*set, count, &rest) < 0)
        return -1;
    *set |= rest;
    return 0;
}

static long long set_rank(const sched_input *in, uint64_t set)
{
    return in->gpu_pair ? placement_score(in->gpu_pair, ngpus_of(in), set) : 0;
}

/* Whether some set of candidates fits r at all: counting, not placing, which is what most of a
 * long queue needs to know (the best set costs a search). */
static int any_fit(const sched_input *in, const sched_req *r, uint64_t cand)
{
    if (r->gpu_ids)
        return (cand & r->gpu_ids) == r->gpu_ids;
    if (!r->single_numa)
        return (unsigned)__builtin_popcountll(cand) >= r->gpu_count;
    for (size_t g = 0; g < ngpus_of(in); g++) {
        if (!(cand >> g & 1) || in->gpus[g].numa < 0)
            continue;
        unsigned k = 0;
        for (size_t h = 0; h < ngpus_of(in); h++)
            k += cand >> h & 1 && in->gpus[h].numa == in->gpus[g].numa;
        if (k >= r->gpu_count)
            return 1;
    }
    return 0;
}

static int mig_pick(const sched_input *in, const room *R, const sched_req *r, int avoid_mig)
{
    for (size_t d = 0; d < nmigs_of(in); d++)
        if (in->migs[d].profile == r->mig_profile && in->migs[d].usable && !R->mig_busy[d] && (int)d != avoid_mig)
            return (int)d;
    return -1;
}

/* Whether r fits room R without touching avoid / avoid_mig, without choosing where. */
static int fits(const sched_input *in, const room *R, const sched_req *r, uint64_t avoid, int avoid_mig)
{
    if (r->mig_profile >= 0)
        return mig_pick(in, R, r, avoid_mig) >= 0;
    return !r->gpu_count || any_fit(in, r, candidates(in, R, r, avoid));
}

/* Where request r would go in room R without touching avoid (GPUs) or avoid_mig: 0 and the
 * set / MIG device, or -1. */
static int place(const sched_input *in, const room *R, const sched_req *r, uint64_t avoid, int avoid_mig,
                 uint64_t *set, int *mig)
{
    *set = 0;
    *mig = -1;
    if (r->mig_profile >= 0)
        return (*mig = mig_pick(in, R, r, avoid_mig)) >= 0 ? 0 : -1;
    if (!r->gpu_count)
        return 0;
    uint64_t cand = candidates(in, R, r, avoid);
    if (!any_fit(in, r, cand))
        return -1;
    if (r->gpu_ids) {
        if ((cand & r->gpu_ids) != r->gpu_ids)
            return -1;
        *set = r->gpu_ids;
        return 0;
    }
    if (!r->single_numa)
        return r->shared ? choose_shared(in, R, cand, r->gpu_count, set) : choose(in, R, cand, r->gpu_count, set);
    /* one NUMA node: the best set of each node, and the best of those */
    int found = -1;
    long long best = 0;
    uint64_t seen = 0;
    for (size_t g = 0; g < ngpus_of(in); g++) {
        if (!(cand >> g & 1) || seen >> g & 1 || in->gpus[g].numa < 0)
            continue;
        uint64_t node = 0;
        for (size_t h = g; h < ngpus_of(in); h++)
            if (cand >> h & 1 && in->gpus[h].numa == in->gpus[g].numa)
                node |= 1ull << h;
        seen |= node;
        uint64_t s;
        if ((r->shared ? choose_shared(in, R, node, r->gpu_count, &s) : choose(in, R, node, r->gpu_count, &s)) < 0)
            continue;
        long long k = set_rank(in, s);
        if (found < 0 || k > best) {
            found = 0;
            best = k;
            *set = s;
        }
    }
    return found;
}

static void room_now(const sched_input *in, room *R)
{
    memset(R, 0, sizeof *R);
    R->whole = in->held;
    for (size_t k = 0; k < in->nrunning; k++) {
        const sched_running *x = &in->running[k];
        holder h = holder_of(&x->r, x->gpus, x->mig, x->end_ms);
        room_add(R, &h, 1);
    }
}

int sched_fits_now(const sched_input *in, const sched_req *r, uint64_t *set, int *mig)
{
    room R;
    room_now(in, &R);
    return place(in, &R, r, 0, -1, set, mig);
}

uint64_t sched_held_by_other_uids(const sched_input *in, const sched_req *r)
{
    room R;
    room_now(in, &R);
    return after_tenants(in, &R, r) & (r->gpu_ids ? r->gpu_ids : ~0ull);
}

int sched_feasible(const sched_input *in, const sched_req *r)
{
    sched_input open = *in;
    sched_gpu g[SCHED_GPU_MAX];
    for (size_t i = 0; i < ngpus_of(in); i++) {
        g[i] = in->gpus[i];
        g[i].closed = 0;
    }
    open.gpus = g;
    room R;
    memset(&R, 0, sizeof R);
    return fits(&open, &R, r, 0, -1) ? 0 : -1;
}

void sched_best_scores(const sched_input *in, const sched_req *r, long *best, long *best_free)
{
    *best = *best_free = 0;
    if (!in->gpu_pair || r->mig_profile >= 0 || !r->gpu_count)
        return;
    sched_req q = *r;
    q.gpu_ids = 0;
    sched_input t = *in;
    t.strategy = PLACE_TOPOLOGY;
    room R;
    uint64_t set;
    int mig;
    room_now(&t, &R);
    *best_free = place(&t, &R, &q, 0, -1, &set, &mig) == 0 ? placement_score(t.gpu_pair, ngpus_of(&t), set) : -1;
    sched_gpu g[SCHED_GPU_MAX];
    for (size_t i = 0; i < ngpus_of(in); i++) {
        g[i] = in->gpus[i];
        g[i].closed = 0;
    }
    t.gpus = g;
    memset(&R, 0, sizeof R);
    *best = place(&t, &R, &q, 0, -1, &set, &mig) == 0 ? placement_score(t.gpu_pair, ngpus_of(&t), set) : -1;
}

static int cmp_holder_end(const void *a, const void *b)
{
    const holder *x = a, *y = b;
    if (x->end_ms == y->end_ms)
        return 0;
    if (!x->end_ms)
        return 1;
    if (!y->end_ms)
        return -1;
    return x->end_ms < y->end_ms ? -1 : 1;
}

/* The GPUs that could ever be part of r's set: the ones it named, or those on a NUMA node that
 * can hold all of it. */
static uint64_t useful(const sched_input *in, const sched_req *r)
{
    if (r->gpu_ids)
        return r->gpu_ids;
    if (!r->single_numa)
        return ~0ull;
    room empty;
    memset(&empty, 0, sizeof empty);
    uint64_t all = candidates(in, &empty, r, 0), keep = 0;
    for (size_t g = 0; g < ngpus_of(in); g++) {
        if (!(all >> g & 1) || in->gpus[g].numa < 0)
            continue;
        uint64_t node = 0;
        for (size_t h = 0; h < ngpus_of(in); h++)
            if (all >> h & 1 && in->gpus[h].numa == in->gpus[g].numa)
                node |= 1ull << h;
        if ((unsigned)__builtin_popcountll(node) >= r->gpu_count)
            keep |= node;
    }
    return keep;
}

/* The head's reservation (EASY backfilling): free the holders in the order they end at the
 * latest until the head fits; what it gets then is reserved, and when is the shadow time.
 * Holders on their way out end "now". When no known end makes it fit, every free GPU it could
 * use is reserved: any of them may be the one it waits for. */
static void reserve(const sched_input *in, const room *R, const sched_req *r, holder *hs, size_t nh, uint64_t *res,
                    int *res_mig, int64_t *shadow)
{
    qsort(hs, nh, sizeof *hs, cmp_holder_end);
    room T = *R;
    for (size_t k = 0; k < nh && hs[k].end_ms; k++) {
        room_add(&T, &hs[k], -1);
        if (k + 1 < nh && hs[k + 1].end_ms == hs[k].end_ms)
            continue;
        uint64_t set;
        int mig;
        if (place(in, &T, r, 0, -1, &set, &mig) == 0) {
            *res = set;
            *res_mig = mig;
            *shadow = hs[k].end_ms;
            return;
        }
    }
    *shadow = 0;
    *res_mig = -1;
    /* (a shared head: the GPUs other uids' shared jobs hold too, or a stream of their later jobs
     * would keep it off them for ever) */
    *res = r->mig_profile >= 0 ? 0 : (candidates(in, R, r, 0) | after_tenants(in, R, r)) & useful(in, r);
}

/* Whether a GPU is free now that another job could be given (usable, open, nobody's). */
static bool any_free(const sched_input *in, const room *R)
{
    uint64_t busy = busy_of(in, R);
    for (size_t g = 0; g < ngpus_of(in); g++)
        if (in->gpus[g].usable && !in->gpus[g].closed && !(busy >> g & 1))
            return true;
    return false;
}

/* Whether r would fit once every holder with a known end has ended: no known time makes it fit
 * when it does not. One placement, no sort (reserve's worst case). */
static bool fits_at_known_end(const sched_input *in, const room *R, const sched_req *r, const holder *hs, size_t nh)
{
    room T = *R;
    for (size_t k = 0; k < nh; k++)
        if (hs[k].end_ms)
            room_add(&T, &hs[k], -1);
    uint64_t set;
    int mig;
    return place(in, &T, r, 0, -1, &set, &mig) == 0;
}

/* Lowest priority first, then the most recently submitted (a stand-in for "started last": a
 * re-queued job keeps its place, so it counts as older than it runs). */
static int victim_before(const sched_running *a, const sched_running *b)
{
    if (a->r.priority != b->r.priority)
        return a->r.priority < b->r.priority;
    return a->seq > b->seq;
}

/* Preemptible running jobs of lower priority whose room lets the head fit (with the room of
 * jobs already on their way out): taken in victim_before order until it fits, then every one
 * the head can do without is put back. That loses the least work, not always the fewest jobs
 * (docs/scheduler.md). 0 and the victims, or -1 when preempting would not help. */
static int pick_victims(const sched_input *in, const room *R, const sched_job *head, size_t *out, size_t *nout)
{
    size_t *cand = malloc((in->nrunning ? in->nrunning : 1) * sizeof *cand);
    size_t nc = 0;
    if (!cand)
        return -1;
    for (size_t k = 0; k < in->nrunning; k++) {
        const sched_running *x = &in->running[k];
        if (x->stopping || !x->r.preemptible || x->r.priority >= head->r.priority)
            continue;
        size_t p = nc++;
        while (p > 0 && victim_before(x, &in->running[cand[p - 1]])) {
            cand[p] = cand[p - 1];
            p--;
        }
        cand[p] = k;
    }
    room T = *R;
    uint64_t set;
    int mig, fit = -1;
    size_t used = 0;
    while (used < nc && fit < 0) {
        const sched_running *x = &in->running[cand[used++]];
        holder h = holder_of(&x->r, x->gpus, x->mig, 0);
        room_add(&T, &h, -1);
        fit = place(in, &T, &head->r, 0, -1, &set, &mig);
    }
    if (fit < 0) {
        free(cand);
        return -1;
    }
    /* Put back every victim the head can do without, the most valuable first. */
    uint8_t *keep = calloc(used ? used : 1, 1);
    for (size_t v = used; v-- > 0;) {
        const sched_running *x = &in->running[cand[v]];
        holder h = holder_of(&x->r, x->gpus, x->mig, 0);
        room_add(&T, &h, 1);
        if (place(in, &T, &head->r, 0, -1, &set, &mig) == 0)
            keep[v] = 1;
        else
            room_add(&T, &h, -1);
    }
    *nout = 0;
    for (size_t v = 0; v < used; v++)
        if (keep && !keep[v])
            out[(*nout)++] = cand[v];
    free(keep);
    free(cand);
    return *nout ? 0 : -1;
}

static uint64_t user_holds(const sched_input *in, const uint32_t *su, const uint32_t *sn, size_t ns, uint32_t user)
{
    uint64_t n = 0;
    for (size_t k = 0; k < in->nrunning; k++)
        if (in->running[k].r.user == user)
            n += in->running[k].mig >= 0 ? 1 : (uint64_t)__builtin_popcountll(in->running[k].gpus);
    for (size_t k = 0; k < ns; k++)
        if (su[k] == user)
            n += sn[k];
    return n;
}

static uint32_t units(const sched_req *r) { return r->mig_profile >= 0 ? 1 : r->gpu_count; }

/* Jobs of user running, and starting in this pass. */
static uint64_t user_runs(const sched_input *in, const uint32_t *su, size_t ns, uint32_t user)
{
    uint64_t n = 0;
    for (size_t k = 0; k < in->nrunning; k++)
        n += in->running[k].r.user == user;
    for (size_t k = 0; k < ns; k++)
        n += su[k] == user;
    return n;
}

void sched_decide(const sched_input *in, sched_output *out)
{
    out->nstart = 0;
    out->npreempt = 0;
    out->next_wakeup_ms = 0;
    out->head = -1;
    out->reserved = 0;
    out->shadow_ms = 0;
    size_t m = 0;
    for (size_t i = 0; i < in->n; i++) {
        int64_t t = in->jobs[i].not_before_ms;
        if (out->why)
            out->why[i] = SW_SCHEDULED;
        if (out->position)
            out->position[i] = 0;
        if (t > in->now_ms) {
            if (out->next_wakeup_ms == 0 || t < out->next_wakeup_ms)
                out->next_wakeup_ms = t;
            continue;
        }
        out->start[m++] = i;
    }
    size_t *order = out->start; /* sorted in place; starts are written behind the read point */
    size_t *tmp = malloc((m ? m : 1) * sizeof *tmp);
    holder *hs = malloc((in->nrunning + m + 1) * sizeof *hs);
    uint32_t *su = malloc((m ? m : 1) * sizeof *su), *sn = malloc((m ? m : 1) * sizeof *sn);
    if (!tmp || !hs || !su || !sn) {
        free(tmp), free(hs), free(su), free(sn);
        return;
    }
    sort_order(order, m, tmp, in->jobs);

    room R;
    room_now(in, &R);
    size_t nh = 0;
    for (size_t k = 0; k < in->nrunning; k++) {
        const sched_running *x = &in->running[k];
        hs[nh++] = holder_of(&x->r, x->gpus, x->mig, x->stopping ? in->now_ms : x->end_ms);
    }
    size_t room_left = in->max_running == 0 ? (size_t)-1
                       : in->nrunning >= in->max_running ? 0
                                                         : in->max_running - in->nrunning;
    uint64_t reserved = 0;
    int res_mig = -1;
    int64_t shadow = 0;
    long head = -1;
    size_t ns = 0;
    uint32_t pos = 0;
    for (size_t i = 0; i < m; i++) {
        size_t ji = order[i];
        const sched_job *j = &in->jobs[ji];
        uint8_t why = SW_STARTS;
        uint64_t set = 0;
        int mig = -1;
        if (ns >= room_left)
            why = SW_MAX_RUNNING;
        else if (in->max_running_per_user && j->r.user &&
                 user_runs(in, su, ns, j->r.user) >= in->max_running_per_user)
            why = SW_USER_RUNNING;
        else if (in->max_gpus_per_user && units(&j->r) &&
                 user_holds(in, su, sn, ns, j->r.user) + units(&j->r) > in->max_gpus_per_user)
            why = SW_USER_LIMIT;
        else if (head < 0) {
            if (place(in, &R, &j->r, 0, -1, &set, &mig) < 0) {
                why = sched_feasible(in, &j->r) < 0 ? SW_UNPLACEABLE : SW_HEAD;
            }
            if (why == SW_HEAD) {
                head = (long)ji;
                /* room that jobs on their way out give back */
                room S = R;
                for (size_t k = 0; k < in->nrunning; k++)
                    if (in->running[k].stopping) {
                        holder h = holder_of(&in->running[k].r, in->running[k].gpus, in->running[k].mig, 0);
                        room_add(&S, &h, -1);
                    }
                size_t np = 0;
                if (place(in, &S, &j->r, 0, -1, &reserved, &res_mig) == 0) {
                    shadow = in->now_ms;
                    why = SW_PREEMPTING;
                } else if (out->preempt && pick_victims(in, &S, j, out->preempt, &np) == 0) {
                    out->npreempt = np;
                    for (size_t v = 0; v < np; v++) {
                        const sched_running *x = &in->running[out->preempt[v]];
                        holder h = holder_of(&x->r, x->gpus, x->mig, 0);
                        room_add(&S, &h, -1);
                    }
                    place(in, &S, &j->r, 0, -1, &reserved, &res_mig);
                    shadow = in->now_ms;
                    why = SW_PREEMPTING;
                } else if (j->r.mig_profile < 0 &&
                           !((candidates(in, &R, &j->r, 0) | after_tenants(in, &R, &j->r)) & useful(in, &j->r)) &&
                           any_free(in, &R) && !fits_at_known_end(in, &R, &j->r, hs, nh)) {
                    /* nothing free is of use to it, and no known time makes it fit (what it
                     * needs is held with no end): it would reserve nothing, so the next job that
                     * does not fit is the head, with the reservation (SW_HEAD_HELD; each such
                     * job in turn: cheap tests, no reserve) */
                    why = SW_HEAD_HELD;
                    head = -1;
                } else {
                    reserve(in, &R, &j->r, hs, nh, &reserved, &res_mig, &shadow);
                }
            }
        } else {
            /* Behind the head: only what cannot delay it. A job sure to end before the head's
             * shadow time may use the reserved room meanwhile. */
            int ends_first = j->r.runtime_ms > 0 && shadow > 0 && in->now_ms + j->r.runtime_ms <= shadow;
            if (place(in, &R, &j->r, ends_first ? 0 : reserved, ends_first ? -1 : res_mig, &set, &mig) < 0)
                why = fits(in, &R, &j->r, 0, -1)        ? SW_RESERVED
                      : sched_feasible(in, &j->r) < 0 ? SW_UNPLACEABLE
                                                      : SW_NO_ROOM;
        }
        if (out->why)
            out->why[ji] = why;
        if (why != SW_STARTS) {
            if (out->position)
                out->position[ji] = ++pos;
            continue;
        }
        holder h = holder_of(&j->r, set, mig, j->r.runtime_ms ? in->now_ms + j->r.runtime_ms : 0);
        room_add(&R, &h, 1);
        if (head < 0)
            hs[nh++] = h;
        su[ns] = j->r.user;
        sn[ns] = units(&j->r);
        if (out->gpu_sets)
            out->gpu_sets[ns] = set;
        if (out->mig_picks)
            out->mig_picks[ns] = mig;
        out->start[ns++] = ji;
    }
    out->nstart = ns;
    out->head = head;
    out->reserved = reserved;
    out->shadow_ms = shadow;
    free(tmp), free(hs), free(su), free(sn);
}
