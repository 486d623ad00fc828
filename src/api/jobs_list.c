/* GET /v1/jobs, streamed, written JOBS_LIST_SLICE at a time by libmicrohttpd's reader, one slice
 * per turn of the loop: a listing of 30,000 jobs held the loop 10.9 s in one piece (issue 25),
 * while now every other connection is served between slices. Each job is written as it is when
 * its slice is, and only if it still matches: a job deleted meanwhile (or whose state left the
 * one asked for) is left out. A listing of a waiting state picks its jobs when the request comes
 * (a seq each, from the table's short lists of them), each found again by its seq
 * (jobs_by_seq), and walks the arrays as below; any other walks the table in seq order up to the
 * last seq there was then (jobs_from_seq: the table may change between slices), looking at
 * JOBS_LIST_SLICE_LOOKS a slice: picking every job kept at the request cost the loop the whole table in one piece for
 * each request (40,000 ended jobs: 2.5 ms, even for a user who has none; 32 connections of one
 * such user asking again and again made another user's GET /v1/version 0.3 -> 190 ms), and
 * 8 bytes a job kept held by each connection until its answer was read. */
#include "jobs_list.h"

#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../core/array_json.h"
#include "../core/arrays.h"
#include "../core/job_json.h"
#include "../core/jobs.h"
#include "../core/job_launch.h"
#include "../core/loop.h"
#include "../core/state.h"
#include "reply.h"
#include "stream.h"

/* ~65 us a job to build and encode here: a slice costs the loop ~15 ms; all the listings
 * together write at most JOBS_LIST_TURN jobs a turn (~35 ms), however many are open */
#define JOBS_LIST_SLICE 256
#define JOBS_LIST_TURN 512
static loop_budget turn_budget = {.per_turn = JOBS_LIST_TURN};
/* and at most this many bytes of JSON: a job's can be large (env values of 128 KiB, many
 * members), and a slice is held whole until its client reads it; 256 jobs of 256 KiB made a
 * slice of 64 MiB, 8 unread listings +514 MiB and a turn of 1.48 s. A slice ends once its
 * output passes JOBS_LIST_SLICE_BYTES (after one job at least: one job may pass it alone), so
 * an unread listing holds about that plus one job; JSON is made at ~80 MB/s, so a turn's
 * JOBS_LIST_TURN_BYTES cost it ~25 ms. 128 KiB: 100 listings of 162,000 jobs sent and never
 * read held +226 KiB each (+436 KiB at 512 KiB; the rest is the connection's and its answer's
 * 64 KiB block), and one listing read whole took as long (2.3-4.6 s against 2.3-5.4, interleaved) */
#define JOBS_LIST_SLICE_BYTES (128u << 10)
#define JOBS_LIST_TURN_BYTES (2u << 20)
static loop_budget turn_bytes = {.per_turn = JOBS_LIST_TURN_BYTES};
/* jobs looked at by a walk (most not kept: another user's, an array's task): ~0.1 us each, so
 * a slice's JOBS_LIST_SLICE_LOOKS cost ~0.1 ms, the turn's JOBS_LIST_TURN_LOOKS ~1.5 ms */
#define JOBS_LIST_SLICE_LOOKS 1024
#define JOBS_LIST_TURN_LOOKS 16384
static loop_budget turn_looks = {.per_turn = JOBS_LIST_TURN_LOOKS};

typedef struct lister {
    jobs_list_filter f;
    char *gpu;
    uint64_t *seqs; /* the jobs picked at the request (a waiting state's); NULL: a walk */
    size_t n, next;
    uint64_t from, last; /* a walk's (and a waiting state's arrays'): the next seq to look at, the last to */
    size_t looked, narrays, slices, most; /* looks: jobs, arrays; slices; a slice's most */
    size_t picked;  /* a waiting state's: written */
    char *out; /* encoded, not yet handed over */
    size_t outlen, outoff, outcap;
    bool opened, closed, wrote;
    bool sliced;    /* a slice was made this turn */
    loop_task later;
    stream *st;     /* its answer (stream.h), for the next slice's wake-up */
} lister;

static bool stopping;

/* Whether the job holds or held the GPU or MIG device of this UUID (a GPU's MIG devices too). */
static bool job_has_gpu(const job *j, const char *uuid)
{
    for (size_t i = 0; i < j->gpus.n; i++)
        if (!strcmp(j->gpus.g[i].uuid, uuid) || !strcmp(j->gpus.g[i].parent_uuid, uuid))
            return true;
    return false;
}

/* Whether j is one the listing keeps; its state is looked at only when it is written (a queued
 * job may have started meanwhile: job_launch_refresh). */
static bool matches(const lister *l, const job *j, bool state)
{
    if (!authz_may_on(&l->f.who, AUTHZ_OTHERS_JOBS, j->owner_uid) || (j->array_id[0] && !l->f.expand))
        return false;
    if ((l->f.by_user && j->owner_uid != l->f.user) || (l->f.since_ms && j->created_ms < l->f.since_ms) ||
        (l->gpu && !job_has_gpu(j, l->gpu)))
        return false;
    return !state || !l->f.by_state || j->state == l->f.state;
}

/* The same for a job array: it matches a state when any of its tasks is in it, made or not (as
 * squeue -t PD shows a running array's pending tasks; its line says the state of its tasks
 * together, arrays.h, and the count in each); no array matches a GPU filter (its tasks do, listed
 * with expand). */
static bool array_matches(const lister *l, const jarray *a, bool state)
{
    if (!arrays_visible(a, &l->f.who) || (l->f.by_user && a->owner_uid != l->f.user) ||
        (l->f.since_ms && a->created_ms < l->f.since_ms) || l->gpu)
        return false;
    if (!state || !l->f.by_state)
        return true;
    arrays_counts c;
    arrays_count(a, &c);
    return c.n[l->f.state] > 0;
}

static void put(lister *l, const char *s, size_t n)
{
    if (l->outlen + n > l->outcap) {
        l->outcap = (l->outlen + n) * 2;
        l->out = xrealloc(l->out, l->outcap);
    }
    memcpy(l->out + l->outlen, s, n);
    l->outlen += n;
}

/* jansson's writer: straight into l->out, no string of each job to copy. */
static int dump_put(const char *buf, size_t size, void *data)
{
    put(data, buf, size);
    return 0;
}

/* A waiting state's listing: the next array at or after its cursor up to the last seq (NULL: none
 * left). */
static jarray *next_array(const lister *l)
{
    jarray *a = l->from <= l->last ? arrays_from_seq(l->from) : NULL;
    return a && a->seq <= l->last ? a : NULL;
}

/* Whether every job the listing looks at was looked at. */
static bool done(const lister *l) { return l->seqs ? l->next == l->n && !next_array(l) : l->from > l->last; }

/* The next job or array the listing looks at (one of *j, *a set, the other NULL); false when
 * there is none left. */
static bool next_one(lister *l, job **j, jarray **a)
{
    *j = NULL;
    *a = NULL;
    if (l->seqs) {
        /* the jobs picked and the arrays walked, merged in seq order (a job deleted meanwhile:
         * neither) */
        jarray *na = next_array(l);
        uint64_t sj = l->next < l->n ? l->seqs[l->next] : UINT64_MAX, sa = na ? na->seq : UINT64_MAX;
        if (sj == UINT64_MAX && sa == UINT64_MAX)
            return false;
        if (sj < sa) {
            l->next++;
            *j = jobs_by_seq(sj);
        } else {
            l->from = sa + 1;
            *a = na;
            l->narrays++;
        }
        return true;
    }
    job *nj = jobs_from_seq(l->from);
    jarray *na = arrays_from_seq(l->from);
    uint64_t sj = nj ? nj->seq : UINT64_MAX, sa = na ? na->seq : UINT64_MAX;
    uint64_t seq = sj < sa ? sj : sa;
    if (seq > l->last) {
        l->from = l->last + 1;
        return false;
    }
    l->from = seq + 1;
    if (sj < sa) {
        *j = nj;
        l->looked++;
    } else {
        *a = na;
        l->narrays++;
    }
    return true;
}

/* The next slice of jobs into l->out: at most max of them, none more once it holds max_bytes
 * (the first is written whatever its size, so that each slice goes on), looking at no more
 * than looks. */
static void produce(lister *l, size_t max, size_t max_bytes, size_t looks, size_t *wrote, size_t *looked)
{
    if (!l->opened) {
        put(l, "{\"jobs\":[", 9);
        l->opened = true;
    }
    size_t start = l->outlen;
    bool one = false;
    job *j;
    jarray *a;
    *wrote = *looked = 0;
    while (*wrote < max && *looked < looks && (!one || l->outlen - start < max_bytes) && next_one(l, &j, &a)) {
        (*looked)++;
        json_t *o = NULL;
        if (a && array_matches(l, a, true)) {
            o = array_json(a);
            if (l->f.keys != JOB_JSON_ALL)
                job_json_keep(o, l->f.keys);
        } else if (j && matches(l, j, false)) {
            job_launch_refresh(j);   /* (of a job the caller may see: it may read the shim's file) */
            o = matches(l, j, true) ? job_json_pick(j, l->f.keys) : NULL;
        }
        if (!o)
            continue;
        (*wrote)++;
        if (l->seqs)
            l->picked++;
        else
            l->n++; /* (a walk's count of those picked) */
        size_t before = l->outlen;
        if (l->wrote)
            put(l, ",", 1);
        if (json_dump_callback(o, dump_put, l, JSON_COMPACT) < 0)
            l->outlen = before; /* (none is: jansson fails only on memory, which xrealloc never lacks) */
        else
            l->wrote = one = true;
        json_decref(o);
    }
    l->slices++;
    l->most = *looked > l->most ? *looked : l->most;
    if (done(l)) {
        put(l, "]}\n", 3);
        l->closed = true;
        /* what a listing cost the loop, for the tests (test_hostile_joblist.py; test_scancel.py: a
         * PENDING listing among many ended jobs looks at the PENDING ones alone, its jobs picked
         * at the request) */
        log_debug("jobs: a listing%s%s looked at %zu jobs and %zu arrays, picked %zu, in %zu slices of at "
                  "most %zu", l->f.by_state ? " of " : "", l->f.by_state ? job_state_name(l->f.state) : "",
                  l->looked, l->narrays, l->seqs ? l->picked : l->n, l->slices, l->most);
    }
}

/* The next slice's turn: its stream reads again. */
static void on_later(loop_task *t)
{
    lister *l = t->data;
    if (l->st)
        stream_wake(l->st);
}

/* The listing as a pull source (common/pull.h), streamed by stream.c. */
static size_t reader(void *cls, char *buf, size_t max, enum pull_state *st)
{
    lister *l = cls;
    if (stopping) {
        *st = PULL_FAIL;
        return 0;
    }
    if (l->outoff == l->outlen) {
        if (l->closed) {
            *st = PULL_END;
            return 0;
        }
        l->outlen = l->outoff = 0;
        if (l->outcap > 4 * JOBS_LIST_SLICE_BYTES) {
            /* a slice made large by one big job: not kept for the next */
            free(l->out);
            l->out = NULL;
            l->outcap = 0;
        }
        /* a slice needs a share of each budget: jobs written, bytes, and jobs looked at */
        size_t quota = l->sliced ? 0 : (size_t)loop_budget_take(&turn_budget, JOBS_LIST_SLICE);
        size_t bytes = quota ? (size_t)loop_budget_take(&turn_bytes, JOBS_LIST_SLICE_BYTES) : 0;
        size_t looks = bytes ? (size_t)loop_budget_take(&turn_looks, JOBS_LIST_SLICE_LOOKS) : 0;
        if (quota && !looks) {
            loop_budget_return(&turn_budget, quota);
            loop_budget_return(&turn_bytes, bytes);
            quota = bytes = 0;
        }
        if (quota || done(l)) {
            size_t wrote, looked;
            produce(l, quota, bytes, looks, &wrote, &looked);
            loop_budget_return(&turn_budget, quota - (wrote < quota ? wrote : quota));
            loop_budget_return(&turn_bytes, bytes > l->outlen ? bytes - l->outlen : 0);
            loop_budget_return(&turn_looks, looks - (looked < looks ? looked : looks));
            l->sliced = !done(l);
        }
        if (!l->outlen) {
            /* one slice a turn, and the turn's share of all listings used up (or every job of
             * this slice went, or left the filter): the rest at the next one, other
             * connections served between; a reader never answers 0 without being woken */
            l->sliced = false;
            loop_later(&l->later);
            *st = PULL_WAIT;
            return 0;
        }
    }
    size_t n = l->outlen - l->outoff < max ? l->outlen - l->outoff : max;
    memcpy(buf, l->out + l->outoff, n);
    l->outoff += n;
    return n;
}

static void free_lister(void *cls)
{
    lister *l = cls;
    loop_later_cancel(&l->later);
    free(l->gpu);
    free(l->seqs);
    free(l->out);
    free(l);
}

/* The jobs a listing of a waiting state looks at, in seq order: asked for a state of a job in
 * the queue or holding room (the polls of clients waiting for their jobs: ?status=RUNNING),
 * those two lists of the table's indexes (core/jobs.h), merged (a QUEUED job there may be
 * running, unheard till it is written: job_launch_refresh); for PENDING and HELD the table's
 * list of that state. (Any other listing, of every job or of an ended state, most of the jobs
 * kept, walks the table: walked().) Arrays are the caller's (an array is one line, of the state
 * of its tasks together, made or not). *owned: the list is the caller's to free. */
static bool walked(const jobs_list_filter *f) { return !f->by_state || job_state_terminal(f->state); }

static job **candidates(const jobs_list_filter *f, size_t *n, bool *owned)
{
    *owned = false;
    if (jobs_state_listed(f->state))
        return jobs_in_state(f->state, n);
    *owned = true;
    /* (a job is in one of them: the queue's have no shim, the room's have one) */
    size_t nq, nr;
    job **q = jobs_queued(&nq), **r = jobs_holding_room(&nr);
    job **out = xmalloc((nq + nr + 1) * sizeof *out);
    size_t i = 0, k = 0;
    *n = 0;
    while (i < nq || k < nr)
        out[(*n)++] = k == nr || (i < nq && q[i]->seq < r[k]->seq) ? q[i++] : r[k++];
    return out;
}

static enum MHD_Result jobs_list_answer(struct MHD_Connection *conn, lister *l);

enum MHD_Result jobs_list_reply(struct MHD_Connection *conn, const jobs_list_filter *f)
{
    lister *l = xcalloc(1, sizeof *l);
    l->f = *f;
    l->gpu = f->by_gpu && f->gpu_uuid ? xstrdup(f->gpu_uuid) : NULL;
    l->later = (loop_task){.fn = on_later, .data = l};
    size_t njobs;
    bool owned;
    /* every job (a walk's) or array (a waiting state's) there is now, in seq order, looked at a
     * slice at a time */
    l->from = 0;
    l->last = core.next_seq ? core.next_seq - 1 : 0;
    if (walked(f))
        return jobs_list_answer(conn, l);
    /* a waiting state's jobs picked now, from the table's short lists of them; its arrays walked
     * (each array kept looked at here, in one piece, for each request, even one of a user who has
     * none: 10,000 arrays kept, one user's 32 connections asking ?status=RUNNING again and again
     * made another user's GET /v1/version 0.4 -> 3.8 ms, growing with the arrays kept) */
    job **jobs = candidates(f, &njobs, &owned);
    l->seqs = xmalloc((njobs + 1) * sizeof *l->seqs);
    for (size_t i = 0; i < njobs; i++)
        if (matches(l, jobs[i], false))
            l->seqs[l->n++] = jobs[i]->seq;
    l->looked = njobs;
    if (owned)
        free(jobs);
    return jobs_list_answer(conn, l);
}

/* The listing's answer queued, its body read from l (which it owns from here). */
static enum MHD_Result jobs_list_answer(struct MHD_Connection *conn, lister *l)
{
    /* what it describes is committed first, as every answer's (reply.c) */
    state_commit();
    struct MHD_Response *r = stream_response(conn, 65536, reader, free_lister, l, &l->st);
    if (!r) {
        free_lister(l);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return rc;
}

void jobs_list_stop(void)
{
    stopping = true; /* its readers end at once; stream.c lets the waiting ones go */
}
