#include "sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../gpu/gpu.h"
#include "../gpu/sched_view.h"
#include "../sched/placement.h"

#ifndef JOBLET_FIXTURE_DIR
#define JOBLET_FIXTURE_DIR "tests/fixtures"
#endif

static const char *const strategy_names[SIM_STRATEGIES] = {"topology", "pack", "spread", "firstfit"};

const char *sim_strategy_name(int s) { return s >= 0 && s < SIM_STRATEGIES ? strategy_names[s] : "?"; }

int sim_strategy_parse(const char *s)
{
    if (!strcmp(s, "firstfit"))
        return SIM_FIRSTFIT;
    return placement_strategy_parse(s);
}

int sim_machine_load(const char *arg, sim_machine *m, jerr *e)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", arg);
    struct stat st;
    if (!*arg)
        return jerr_set(e, EINVAL, "--machine: empty");
    if (strchr(arg, '/') || strstr(arg, ".json")) {
        if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode))
            snprintf(m->path, sizeof m->path, "%s/machine.json", arg);
        else
            snprintf(m->path, sizeof m->path, "%s", arg);
    } else {
        const char *dir = getenv("JOBLET_FIXTURES");
        snprintf(m->path, sizeof m->path, "%s/%s/machine.json", dir && *dir ? dir : JOBLET_FIXTURE_DIR, arg);
    }
    if (stat(m->path, &st) < 0)
        return jerr_set(e, ENOENT, "machine '%s': %s: %s (a fixture name under %s, a directory holding "
                        "machine.json, or a JSON file)", arg, m->path, strerror(errno),
                        getenv("JOBLET_FIXTURES") && *getenv("JOBLET_FIXTURES") ? getenv("JOBLET_FIXTURES")
                                                                                : JOBLET_FIXTURE_DIR);
    gpu_config c;
    gpu_config_defaults(&c);
    snprintf(c.fixture, sizeof c.fixture, "%s", m->path);
    gpu_inventory *inv = calloc(1, sizeof *inv);
    if (!inv)
        return jerr_set(e, ENOMEM, "out of memory");
    if (gpu_backend_fixture(&c, inv, e) < 0) {
        free(inv);
        return -1;
    }
    m->ngpus = (size_t)inv->n;
    gpu_sched_gpus(inv, 1, m->gpus);
    gpu_pair_scores(inv, m->pair);
    free(inv);
    uint64_t usable = 0;
    for (size_t i = 0; i < m->ngpus; i++)
        if (m->gpus[i].usable) {
            int64_t mb = m->gpus[i].memory_mb;
            if (!m->usable || mb < m->min_memory_mb)
                m->min_memory_mb = mb;
            if (!m->usable || mb > m->max_memory_mb)
                m->max_memory_mb = mb;
            m->usable++;
            usable |= 1ull << i;
        }
    for (unsigned k = 2; k <= m->usable; k++) {
        uint64_t set;
        if (placement_best(m->pair, m->ngpus, usable, 0, PLACE_TOPOLOGY, k, &set) == 0)
            m->best[k] = placement_score(m->pair, m->ngpus, set);
    }
    return 0;
}

static int64_t run_ms(const sim_job *j)
{
    return j->limit_ms && j->duration_ms > j->limit_ms ? j->limit_ms : j->duration_ms;
}

static sched_req req_of(const sim_job *j, const sim_options *o)
{
    return (sched_req){.gpu_count = j->gpus,
                       .gpu_memory_mb = j->memory_mb,
                       .mig_profile = -1,
                       .priority = j->priority,
                       .preemptible = j->preemptible,
                       .single_numa = j->single_numa,
                       .user = j->user,
                       .runtime_ms = o->exact_runtimes ? run_ms(j) : j->limit_ms};
}

int sim_check(const sim_machine *m, const sim_trace *t, const char *name, const sim_options *o, jerr *e)
{
    sched_input in = {.gpus = m->gpus, .ngpus = m->ngpus};
    for (size_t i = 0; i < t->n; i++) {
        const sim_job *j = &t->jobs[i];
        sched_req r = req_of(j, o);
        if (sched_feasible(&in, &r) < 0) {
            char mem[64] = "";
            if (j->memory_mb)
                snprintf(mem, sizeof mem, " of at least %llu MiB", (unsigned long long)j->memory_mb);
            char have[96] = "";
            if (m->usable && m->min_memory_mb == m->max_memory_mb)
                snprintf(have, sizeof have, " of %lld MiB", (long long)m->min_memory_mb);
            else if (m->usable)
                snprintf(have, sizeof have, " of %lld to %lld MiB", (long long)m->min_memory_mb,
                         (long long)m->max_memory_mb);
            char why[96] = "";
            if (m->usable < m->ngpus)
                snprintf(why, sizeof why, " (of %zu: GPUs in MIG mode or with a problem are not used)", m->ngpus);
            return jerr_set(e, EINVAL, "%s:%d: the job asks %u GPU%s%s%s; machine '%s' has %u usable GPU%s%s%s: it "
                            "could never start", name, j->line, j->gpus, j->gpus == 1 ? "" : "s", mem,
                            j->single_numa ? " on one NUMA node" : "", m->name, m->usable, m->usable == 1 ? "" : "s",
                            have, why);
        }
        if (o->max_gpus_per_user && j->gpus > o->max_gpus_per_user)
            return jerr_set(e, EINVAL, "%s:%d: the job asks %u GPUs, more than --max-gpus-per-user %u: it could "
                            "never start", name, j->line, j->gpus, o->max_gpus_per_user);
    }
    return 0;
}

enum { JS_FUTURE, JS_WAITING, JS_RUNNING, JS_DONE };

typedef struct jstate {
    int state;
    unsigned machine;
    uint64_t set;
    int64_t start, end;        /* the current run */
    int64_t ran_ms;            /* in finished and cut-short runs */
    int64_t done_ms;
} jstate;

typedef struct simctx {
    const sim_machine *m;
    const sim_trace *t;
    const sim_options *o;
    sim_result *r;
    jstate *st;
    uint64_t *seq;             /* by job: its place in submission order */
    size_t *wait, nwait;       /* waiting jobs, any order (the scheduler sorts) */
    size_t *run, nrun;         /* running jobs, all machines */
    double score_sum;
    /* scratch for one sched_decide */
    sched_job *sj;
    sched_running *sr;
    size_t *rmap, *start, *preempt;
    uint64_t *sets;
    int *picks;
    uint8_t *gone;
} simctx;

static int cmp_submit(const void *a, const void *b, void *arg)
{
    const sim_job *J = arg;
    const sim_job *x = &J[*(const size_t *)a], *y = &J[*(const size_t *)b];
    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* Offers the waiting jobs to machine mi until it neither starts nor preempts anything more.
 * Preempted jobs stop at once and wait again, to run from the start. */
static void offer(simctx *c, unsigned mi, int64_t now)
{
    const sim_machine *m = c->m;
    for (int pass = 0; pass < 1000 && c->nwait; pass++) {
        size_t nr = 0;
        for (size_t k = 0; k < c->nrun; k++) {
            size_t j = c->run[k];
            if (c->st[j].machine != mi)
                continue;
            const sim_job *J = &c->t->jobs[j];
            sched_req rq = req_of(J, c->o);
            c->sr[nr] = (sched_running){.seq = c->seq[j], .r = rq, .gpus = c->st[j].set, .mig = -1,
                                        .end_ms = rq.runtime_ms ? c->st[j].start + rq.runtime_ms : 0};
            c->rmap[nr++] = k;
        }
        for (size_t w = 0; w < c->nwait; w++)
            c->sj[w] = (sched_job){.seq = c->seq[c->wait[w]], .r = req_of(&c->t->jobs[c->wait[w]], c->o)};
        sched_input in = {.jobs = c->sj, .n = c->nwait, .running = c->sr, .nrunning = nr, .now_ms = now,
                          .max_gpus_per_user = c->o->max_gpus_per_user, .gpus = m->gpus, .ngpus = m->ngpus,
                          .gpu_pair = c->o->strategy == SIM_FIRSTFIT ? NULL : m->pair,
                          .strategy = c->o->strategy == SIM_FIRSTFIT ? PLACE_TOPOLOGY : c->o->strategy};
        sched_output out = {.start = c->start, .gpu_sets = c->sets, .mig_picks = c->picks, .preempt = c->preempt};
        sched_decide(&in, &out);
        c->r->decisions++;
        memset(c->gone, 0, c->nwait);
        for (size_t s = 0; s < out.nstart; s++) {
            size_t j = c->wait[out.start[s]];
            jstate *S = &c->st[j];
            c->gone[out.start[s]] = 1;
            S->state = JS_RUNNING;
            S->machine = mi;
            S->set = out.gpu_sets[s];
            S->start = now;
            S->end = now + run_ms(&c->t->jobs[j]);
            c->run[c->nrun++] = j;
            int k = __builtin_popcountll(S->set);
            if (k >= 2 && m->best[k] > 0) {
                c->score_sum += (double)placement_score(m->pair, m->ngpus, S->set) / (double)m->best[k];
                c->r->scored++;
            }
        }
        size_t nw = 0;
        for (size_t w = 0; w < c->nwait; w++)
            if (!c->gone[w])
                c->wait[nw++] = c->wait[w];
        c->nwait = nw;
        if (!out.npreempt)
            break;
        /* victims: mark, then drop from run (indexes in rmap refer to run before removal) */
        for (size_t p = 0; p < out.npreempt; p++) {
            size_t k = c->rmap[out.preempt[p]];
            size_t j = c->run[k];
            jstate *S = &c->st[j];
            S->ran_ms += now - S->start;
            c->r->lost_gpu_ms += (now - S->start) * __builtin_popcountll(S->set);
            c->r->preemptions++;
            S->state = JS_WAITING;
            S->set = 0;
            c->wait[c->nwait++] = j;
        }
        size_t n2 = 0;
        for (size_t k = 0; k < c->nrun; k++)
            if (c->st[c->run[k]].state == JS_RUNNING)
                c->run[n2++] = c->run[k];
        c->nrun = n2;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least 95 % of the values at or below it. */
static int64_t p95(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
    return v[(95 * n + 99) / 100 - 1];
}

int sim_run(const sim_machine *m, const sim_trace *t, const sim_options *o, sim_result *r, jerr *e)
{
    memset(r, 0, sizeof *r);
    r->jobs = t->n;
    r->gpus_total = m->usable * o->machines;
    r->score = -1;
    size_t n = t->n;
    simctx c = {.m = m, .t = t, .o = o, .r = r};
    size_t *order = malloc(n * sizeof *order);
    int64_t *waits = malloc(n * sizeof *waits), *comps = malloc(n * sizeof *comps);
    c.st = calloc(n, sizeof *c.st);
    c.seq = malloc(n * sizeof *c.seq);
    c.wait = malloc(n * sizeof *c.wait);
    c.run = malloc(n * sizeof *c.run);
    c.sj = malloc(n * sizeof *c.sj);
    c.sr = malloc(n * sizeof *c.sr);
    c.rmap = malloc(n * sizeof *c.rmap);
    c.start = malloc(n * sizeof *c.start);
    c.preempt = malloc(n * sizeof *c.preempt);
    c.sets = malloc(n * sizeof *c.sets);
    c.picks = malloc(n * sizeof *c.picks);
    c.gone = malloc(n);
    int rc = -1;
    if (!order || !waits || !comps || !c.st || !c.seq || !c.wait || !c.run || !c.sj || !c.sr || !c.rmap ||
        !c.start || !c.preempt || !c.sets || !c.picks || !c.gone) {
        jerr_set(e, ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, n, sizeof *order, cmp_submit, t->jobs);
    for (size_t i = 0; i < n; i++)
        c.seq[order[i]] = i + 1;

    size_t next = 0;
    int64_t t0 = t->jobs[order[0]].submit_ms, last = t0, last_end = t0;
    while (next < n || c.nrun || c.nwait) {
        int64_t now = INT64_MAX;
        if (next < n)
            now = t->jobs[order[next]].submit_ms;
        for (size_t k = 0; k < c.nrun; k++)
            if (c.st[c.run[k]].end < now)
                now = c.st[c.run[k]].end;
        if (now == INT64_MAX) {
            jerr_set(e, EDEADLK, "trace line %d: the job waits with nothing running and nothing left to come "
                     "(a scheduler bug)", t->jobs[c.wait[0]].line);
            goto out;
        }
        /* the state since the last event held until now */
        int64_t dt = now - last, busy = 0;
        for (size_t k = 0; k < c.nrun; k++)
            busy += __builtin_popcountll(c.st[c.run[k]].set);
        r->busy_gpu_ms += busy * dt;
        if (c.nwait) {
            r->queued_ms += dt;
            r->stranded_gpu_ms += ((int64_t)r->gpus_total - busy) * dt;
        }
        size_t nr = 0;
        for (size_t k = 0; k < c.nrun; k++) {
            size_t j = c.run[k];
            if (c.st[j].end != now) {
                c.run[nr++] = j;
                continue;
            }
            c.st[j].state = JS_DONE;
            c.st[j].ran_ms += now - c.st[j].start;
            c.st[j].done_ms = now;
            last_end = now;
            if (t->jobs[j].limit_ms && t->jobs[j].duration_ms > t->jobs[j].limit_ms)
                r->killed_at_limit++;
        }
        c.nrun = nr;
        while (next < n && t->jobs[order[next]].submit_ms == now) {
            c.st[order[next]].state = JS_WAITING;
            c.wait[c.nwait++] = order[next++];
        }
        for (unsigned mi = 0; mi < o->machines && c.nwait; mi++)
            offer(&c, mi, now);
        last = now;
    }

    double wsum = 0, csum = 0;
    for (size_t i = 0; i < n; i++) {
        const jstate *S = &c.st[i];
        comps[i] = S->done_ms - t->jobs[i].submit_ms;
        waits[i] = comps[i] - S->ran_ms;
        wsum += (double)waits[i];
        csum += (double)comps[i];
    }
    r->makespan_ms = last_end - t0;
    r->wait_avg_ms = wsum / (double)n;
    r->completion_avg_ms = csum / (double)n;
    r->wait_p95_ms = p95(waits, n);
    r->wait_max_ms = waits[n - 1];
    r->completion_p95_ms = p95(comps, n);
    double cap = (double)r->gpus_total;
    r->utilization = r->makespan_ms ? (double)r->busy_gpu_ms / (cap * (double)r->makespan_ms) : 0;
    r->stranded = r->makespan_ms ? (double)r->stranded_gpu_ms / (cap * (double)r->makespan_ms) : 0;
    r->fragmentation = r->queued_ms ? (double)r->stranded_gpu_ms / (cap * (double)r->queued_ms) : 0;
    if (r->scored)
        r->score = c.score_sum / (double)r->scored;
    rc = 0;
out:
    free(order), free(waits), free(comps), free(c.st), free(c.seq), free(c.wait), free(c.run), free(c.sj);
    free(c.sr), free(c.rmap), free(c.start), free(c.preempt), free(c.sets), free(c.picks), free(c.gone);
    return rc;
}
