/* The queue: one pass of the pure scheduler over the daemon's jobs and GPUs, its decisions
 * carried out (starts, preemptions), and why a job waits, in words (queue.h). */
#include "queue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../gpu/sched_view.h"
#include "../sched/placement.h"
#include "../sched/sched.h"
#include "account.h"
#include "arrays.h"
#include "counters.h"
#include "depend.h"
#include "gpus.h"
#include "isolation.h"
#include "job_detail.h"
#include "job_events.h"
#include "jobs.h"
#include "cmdcheck.h"
#include "job_launch.h"
#include "networks.h"
#include "nsscache.h"
#include "sched_input.h"
#include "state.h"
#include "submit.h"
#include "workflow.h"

/* how long a job whose owner's account could not be looked up at its start waits to be tried again */
#define ACCOUNT_RETRY_MS 5000
/* A launch's descriptors (JOB_LAUNCH_FDS) are checked free before anything is looked up,
 * granted or made (an array's task), else the job waits (SW_FILES), tried again in
 * FILES_RETRY_MS, and no other launch of the pass tries. */
#define FILES_RETRY_MS 1000
static bool files_short;        /* this pass found too few: no other launch tries (schedule) */
static bool files_short_before; /* the pass before did: warned once per spell */
static int64_t files_retry_ms;  /* when the pass comes again for them, 0 none */

/* Whether a launch (or an array's task, made to start) must wait for descriptors; who: the
 * job's or array's id, for the spell's one warning. While a running job's shim is not watched
 * (job_launch_unwatched: joblet restarted with too few descriptors free), its pidfd goes first:
 * launched meanwhile, new jobs would take the descriptors it waits for. */
static bool launch_files_short(const char *who)
{
    if (!files_short && !job_launch_unwatched() && fds_available(JOB_LAUNCH_FDS))
        return false;
    if (!files_short && !files_short_before)
        log_warn("job %s waits: joblet has fewer than %d descriptors free for its launch (its open-file limit; log "
                 "followers, connections): jobs wait, tried again every %d s",
                 who, JOB_LAUNCH_FDS, FILES_RETRY_MS / 1000);
    files_short = true;
    files_retry_ms = now_ms() + FILES_RETRY_MS;
    return true;
}

/* What the last pass decided for the head of the queue, for wait reasons. */
static struct {
    char head[37];
    uid_t head_owner;
    uint64_t reserved;
    int64_t shadow_ms;
    size_t npreempt;
} last_pass;

static void schedule(void);

/* The account look-ups a job's start, or an array task's making, needs (its owner's account,
 * isolation.require_gvisor's groups): every one asked at once (account_known), and an answer to
 * one asked since it began to wait counts however long it took (nsscache_accept_since: with
 * server.account_cache_s shorter than a slow directory's answer, asked one after the other,
 * each expired before the next came, and the job waited for ever). *since: the job's or the
 * array's lookup_since; lookups_end is given what lookups_begin returned. */
typedef struct lookups {
    uint64_t gen, was;
} lookups;

static lookups lookups_begin(uint64_t since, uid_t owner)
{
    lookups l = {.gen = nsscache_gen(), .was = nsscache_accept_since(since)};
    (void)account_known(owner, NULL, NULL);
    return l;
}

static void lookups_end(lookups l, uint64_t *since, bool waits)
{
    nsscache_accept_since(l.was);
    if (!waits)
        *since = 0;
    else if (!*since)
        *since = l.gen;
}

/* How many jobs hold room: the size of sched_input_base's running list. */
static size_t room_now(void)
{
    size_t n;
    jobs_holding_room(&n);
    return n;
}
static void wait_reason_in(const job *j, const sched_input *in, char *out, size_t len);

/* How the set just granted scores against the best there is for the request: with every GPU
 * free, and with what was free just before it (its own set included). */
static void placed(job *j, uint64_t set)
{
    job_placement_score sc = {-1, -1, -1};
    if (set) {
        sched_gpu gpus[GPU_MAX];
        sched_mig migs[GPU_MAX * GPU_MIG_MAX];
        sched_running *run = xcalloc(room_now() + 1, sizeof *run);
        sched_input in;
        sched_req r;
        sched_input_base(&in, gpus, migs, run, NULL);
        sched_input_req(j, &r);
        sched_best_scores(&in, &r, &sc.best, &sc.best_free);
        sc.score = in.gpu_pair ? placement_score(in.gpu_pair, in.ngpus, set) : -1;
        if (sc.score > sc.best) /* beyond 16 candidates the search is greedy: never "better than best" */
            sc.best = sc.score;
        free(run);
    }
    job_detail_placed(j, &sc);
}

/* Each waiting job's reason, into its history when it is a new one (job_events.h). The text
 * is worked out only then: a long queue that keeps its reasons costs a byte compare a job. */
static void record_waits(job **map, size_t n)
{
    sched_gpu gpus[GPU_MAX];
    sched_mig migs[GPU_MAX * GPU_MIG_MAX];
    sched_running *run = NULL;
    sched_input in;
    for (size_t i = 0; i < n; i++) {
        job *j = map[i];
        if (!j || !job_in_queue(j) || j->wait_why == SW_STARTS || j->wait_why == SW_SCHEDULED ||
            !job_event_wait_is_new(j, j->wait_why))
            continue;
        if (!run) {
            run = xcalloc(room_now() + 1, sizeof *run);
            sched_input_base(&in, gpus, migs, run, NULL);
        }
        char why[400];
        wait_reason_in(j, &in, why, sizeof why);
        job_event(j, JE_QUEUED, -1, "%s", why);
    }
    free(run);
}

void queue_run(void)
{
    int64_t t0 = mono_ns();
    schedule();
    counters_schedule((double)(mono_ns() - t0) / 1e9);
}

/* How many of an array's tasks this pass is offered: what its %N and what is left allow
 * (arrays_offer), and of those, when its tasks wait task by task, the ones at the cursor whose
 * own task ended as they need (depend_tasks_ready), then those further on that the pass found
 * may go (a->go, by_task). */
static uint64_t passes; /* the scheduler's passes: which one counted an array's pass_runs */

static uint32_t offer(const jarray *a)
{
    /* none while a task it made waits for its row to be committed, nor while commits fail, nor
     * while a request's changes may still be taken back (settle inside it: db_undo would take
     * the task's row with them) */
    if (a->unsaved_pass == passes || state_unsaved() || db_marked(core.db))
        return 0;
    uint32_t n = arrays_offer(a, a->pass == passes ? a->pass_runs : 0), head = depend_tasks_ready(a, n);
    if (!a->ngo || head == n)
        return head;
    /* those of go that the cursor reached meanwhile are among the head's already: not twice (one
     * offered for nothing would take room from others in the pass, or be preempted for) */
    uint32_t at_head[64], nhead = head ? arrays_upcoming(a, at_head, head < 64 ? head : 64) : 0, more = 0;
    for (uint32_t i = 0; i < a->ngo; i++) {
        bool dup = false;
        for (uint32_t k = 0; k < nhead && !dup; k++)
            dup = at_head[k] == a->go[i];
        more += !dup;
    }
    return head + (more < n - head ? more : n - head);
}

/* The task an offered entry that starts is made as: the cursor's when it may go, else the next
 * of those further on that may (task by task, their own task completed first). */
/* Since when a job (or an array) waits in the queue, for its place among equal priorities
 * (sched_job.since_ms): its submission, its --schedule time or its last joining (a release from
 * a hold, a new --schedule: job.h), whichever is latest, as Slurm counts a job's age from when it
 * became eligible and gives a released job a new place. */
static int64_t queue_since(int64_t created_ms, int64_t scheduled_ms, int64_t joined_ms)
{
    int64_t t = created_ms > scheduled_ms ? created_ms : scheduled_ms;
    return t > joined_ms ? t : joined_ms;
}

/* The jobs a pass starts on each network: no more than it has free addresses (networks_room),
 * counted among those the scheduler lets start, in its order; the others wait (SW_NET_FULL) as
 * for any room they lack, instead of starting, finding no address and failing (one user's jobs
 * filling bridge failed every other user's there). Counted as they start, not as they are
 * offered: jobs that would not start this pass (scheduled for later, waiting for GPUs) took the
 * addresses from those that could. A GPU job that waits so is still given its GPUs by each pass's
 * plan, and what is behind it plans around them, until an address frees. */
#define QUEUE_NET_MAX 64
typedef struct queue_net {
    const char *name;
    uint32_t left;
} queue_net;

/* Whether one more job on network `name` may be offered this pass (and counts it if so). */
static bool net_take(queue_net *qn, size_t *nqn, const char *name)
{
    if (!name || !strcmp(name, "none") || !strcmp(name, "host"))
        return true;
    for (size_t i = 0; i < *nqn; i++)
        if (!strcmp(qn[i].name, name)) {
            if (!qn[i].left)
                return false;
            if (qn[i].left != UINT32_MAX)
                qn[i].left--;
            return true;
        }
    uint32_t room = networks_room(name);
    if (*nqn == QUEUE_NET_MAX) /* (more networks in one pass than counted: the launch decides) */
        return true;
    qn[(*nqn)++] = (queue_net){name, room == 0 || room == UINT32_MAX ? room : room - 1};
    return room > 0;
}

/* 0, or 1 when t was taken from go (not made, it is put back: arrays_go_again); -1 none. */
static int pick_task(jarray *a, uint32_t *t)
{
    if (a->held) /* (offered only its tasks released from the hold one by one: arrays_offer) */
        return arrays_released_next(a, t);
    if (depend_tasks_ready(a, 1) == 1 && arrays_next(a, t) == 0)
        return 0;
    return arrays_go_take(a, t) < 0 ? -1 : 1;
}

/* How often a task that could not be made for now is warned of, at most: the pass tries again
 * each time it comes, which may be many times a second. */
#define QUEUE_MAKE_WARN_MS 60000
/* ... and how soon it is tried again at the latest: a pass comes when something asks for one (a
 * job's end, a request, a commit, an account look-up answered), and the one that failed may be
 * the last (the array's tasks all ended, nobody asking): the array then waited QUEUED for ever,
 * its owner's account known again long since. As a job waits for its owner's account
 * (ACCOUNT_RETRY_MS). The pass's earliest such time, 0 none (schedule). */
#define QUEUE_MAKE_RETRY_MS ACCOUNT_RETRY_MS
static int64_t make_retry_ms;

/* Task t of a could not be made (submit_task failed with e); true when the array's tasks left were
 * canceled for it. A refusal for good (a 4xx-class one, 429 aside: its volume gone or another, its
 * stored request no longer valid, a check that waiting does not pass) is one every task would get,
 * all being made from the array's request: the tasks left are canceled with the reason, once, so
 * the array ends (rnx job status ARRAY says why, rnx job wait ARRAY returns) instead of being
 * tried at every pass for ever. Another (a full disk, a commit that failed, a limit) may pass:
 * tried again at the next passes, the warning logged at most once in QUEUE_MAKE_WARN_MS with the
 * number of tries since. */
static bool make_failed(jarray *a, uint32_t t, const jerr *e)
{
    if (e->http >= 400 && e->http < 500 && e->http != 429 && e->code != EAGAIN) {
        char why[sizeof e->msg + 100];
        snprintf(why, sizeof why, "canceled: its task %u could not be made: %s", t, e->msg);
        log_err("array %s: task %u could not be made, and none of its tasks can be: %s; its tasks left are canceled",
                a->id, t, e->msg);
        arrays_cancel_by_joblet(a, ARRAYS_CANCELED_UNMAKEABLE, why);
        depend_array_changed(a); /* ended (unless tasks it made still run): who waits on it */
        workflow_array_changed(a); /* a workflow's array: the jobs requiring it, the workflow's state */
        return true;
    }
    if (e->code == EINPROGRESS)
        return false; /* its owner's account is being looked up: the pass comes again once it is answered */
    if (!make_retry_ms)
        make_retry_ms = now_ms() + QUEUE_MAKE_RETRY_MS;
    a->make_failures++;
    int64_t now = mono_ns() / 1000000;
    if (a->make_warned_ms && now - a->make_warned_ms < QUEUE_MAKE_WARN_MS)
        return false;
    log_warn("array %s: its task %u could not be made (%u tr%s since the last warning): %s; tried again as the "
             "scheduler passes (every %d s at the latest), warned of at most once a minute", a->id, t,
             a->make_failures, a->make_failures == 1 ? "y" : "ies", e->msg[0] ? e->msg : "no reason given",
             QUEUE_MAKE_RETRY_MS / 1000);
    a->make_warned_ms = now ? now : 1;
    a->make_failures = 0;
    return false;
}

/* A task of a was made: a warning of tasks that could not be made is over. */
static void make_done(jarray *a)
{
    if (!a->make_warned_ms)
        return;
    log_info("array %s: its tasks are made again (%u more tries failed since the last warning)", a->id,
             a->make_failures);
    a->make_warned_ms = 0;
    a->make_failures = 0;
}

/* What became of a task canceled task by task: left for the cursor's turn, left to be tried
 * again (its making failed for now: make_failed), canceled, or the array's tasks left all. */
enum task_canceled { TASK_LEFT, TASK_AGAIN, TASK_CANCELED, TASK_ALL };

/* Task t, whose own task can never end as it needs, canceled. One whose own task ran is made and
 * canceled, its reason in its status as Slurm shows it; one whose own task never ran is canceled
 * before it is made (no job, *unmade), as that task was. Left for the cursor's turn when it is
 * ahead of the cursor and ahead has no room for it. */
static enum task_canceled cancel_task(jarray *a, uint32_t t, enum depend_task_end end, const char *why, bool *unmade)
{
    if (end == DEPEND_TASK_ALL) {
        log_info("array %s: %s: its tasks left are canceled", a->id, why);
        arrays_cancel_dependency(a, why);
        depend_array_changed(a); /* ended: who waits on it is decided in turn */
        return TASK_ALL;
    }
    jerr e = {0};
    arrayspec one = {.n = 1, .r = {{t, t, 1}}, .count = 1, .min = t, .max = t};
    /* (a save that failed left it in skip all the same, for the commit's retry to write: it is
     * canceled then, never made too) */
    if (end == DEPEND_TASK_UNMADE && (arrays_cancel_unmade(a, &one, 0, &e) >= 0 || arrayspec_has(arrays_skip(a), t))) {
        log_info("array %s: task %u canceled before it was made: %s", a->id, t, why);
        *unmade = true;
        return TASK_CANCELED;
    }
    if (!arrays_ahead_ok(a, t))
        return TASK_LEFT;
    lookups l = lookups_begin(a->lookup_since, a->owner_uid);
    job *j = submit_task(a, t, &e);
    lookups_end(l, &a->lookup_since, !j && e.http == 503);
    if (!j) /* (to be canceled: one that can never be made cancels the array's tasks left) */
        return make_failed(a, t, &e) ? TASK_ALL : TASK_AGAIN;
    make_done(a);
    depend_cancel(j, why);
    return TASK_CANCELED;
}

/* An array whose tasks wait task by task (--after=ARRAY:corr), before the pass. Its next tasks
 * whose own task can never end as they need are canceled, so the ones after them may go. Then
 * the tasks further on whose own task ended (depend.c queued each as it ended,
 * arrays_ready_push): one that may go is offered to this pass ahead of the cursor (a->go), one
 * that never can is canceled now, one that still waits (another of its needs) is dropped, to be
 * queued again when that one ends. At most a pass's worth of each a turn, O(64 x ranges):
 * what waits at the cursor costs nothing more, and no pass looks at every task of a big array. */
static bool by_task(jarray *a)
{
    bool unmade = false, more = false;
    for (int i = 0; !a->held && !a->waiting && depend_tasks_by_task(a); i++) {
        if (i == 64) { /* a pass's worth: the rest at the next turn, which comes at once */
            more = true;
            break;
        }
        uint32_t t;
        enum depend_task_end end;
        char why[300];
        if (arrays_next(a, &t) < 0 || depend_task_verdict(a, t, &end, why, sizeof why) != DEPEND_CANCEL)
            break;
        enum task_canceled c = cancel_task(a, t, end, why, &unmade);
        if (c == TASK_ALL)
            return false;
        if (c == TASK_LEFT || c == TASK_AGAIN)
            break;
    }
    arrays_go_prune(a); /* (only what can be made is offered, and ready is not kept behind the rest) */
    for (int i = 0; !a->held && !a->waiting && !arrays_canceled(a) && a->ngo < 64 && depend_tasks_by_task(a); i++) {
        if (i == 64) {
            more = true;
            break;
        }
        uint32_t t;
        enum depend_task_end end;
        char why[300];
        if (arrays_ready_pop(a, &t) < 0)
            break;
        enum depend_verdict v = depend_task_verdict(a, t, &end, why, sizeof why);
        if (v == DEPEND_GO) {
            arrays_go_add(a, t);
        } else if (v == DEPEND_CANCEL) {
            enum task_canceled c = cancel_task(a, t, end, why, &unmade);
            if (c == TASK_ALL)
                return false;
            if (c == TASK_AGAIN) { /* (the pass that retries it comes: make_failed) */
                arrays_ready_again(a, t);
                break;
            }
        }
    }
    /* a task canceled before it was made ends no job: when it was the array's last, who waits on
     * the array is told here (a made one is told by its job's end) */
    if (unmade && arrays_ended(a))
        depend_array_changed(a);
    return more;
}

/* A job that cannot start (refused at its start, its command gone, its launch failed): FAILED
 * (start_failed), e's sentence its error. */
static void start_failed(job *j, const jerr *e)
{
    log_err("job %s: %s", j->id, e->msg);
    free(j->error);
    j->error = xstrdup(e->msg);
    j->has_exit = false;
    job_finish(j, JS_FAILED, "start_failed");
}

static void schedule(void)
{
    int64_t lookup_retry_ms = 0; /* a job whose owner's account could not be looked up: when again */
    files_retry_ms = 0;
    files_short = false;
    make_retry_ms = 0;
    size_t n = 0, narr, nqueued;
    /* first, as it makes and ends jobs: tasks that wait task by task and never can go */
    /* (a copy: making and canceling tasks takes arrays off the list as this pass goes) */
    jarray **open = arrays_open(&narr), **arrs = xcalloc(narr + 1, sizeof *arrs);
    if (narr)
        memcpy(arrs, open, narr * sizeof *arrs);
    bool more_canceled = false;
    for (size_t i = 0; i < narr; i++)
        if (arrs[i]->after_seq)
            more_canceled |= by_task(arrs[i]);
    /* the jobs in the queue, in seq order: their list (jobs.h), not a scan of every job kept */
    job **queued = jobs_queued(&nqueued);
    n = nqueued;
    /* An array's %N bounds its tasks that hold room (counted here from the jobs holding room,
     * bounded by the machine): a task made before and let go again (requeued, held then
     * released, preempted) starts only while fewer run, and takes its place before the
     * array's new tasks (arrays_offer, after it). */
    uint64_t pass = ++passes;
    size_t nroom, nback = 0;
    job **room = jobs_holding_room(&nroom), **back = xcalloc(nqueued + 1, sizeof *back);
    for (size_t i = 0; i < nroom; i++) {
        jarray *a = room[i]->array;
        if (a && a->spec->throttle) {
            a->pass_runs = a->pass == pass ? a->pass_runs + 1 : 1;
            a->pass = pass;
        }
    }
    /* a job array's tasks not made yet: as many entries as could start in this pass, each
     * made into a job only if it starts (arrays.h) */
    for (size_t i = 0; i < narr; i++)
        n += offer(arrs[i]);
    sched_job *sj = xcalloc(n + 1, sizeof *sj);
    job **map = xcalloc(n + 1, sizeof *map);
    jarray **amap = xcalloc(n + 1, sizeof *amap);
    size_t k = 0;
    for (size_t i = 0; i < nqueued; i++) {
        job *j = queued[i];
        jarray *a = j->array;
        if (j->array_id[0] && (j->db_mark & STATE_DB_NEW)) {
            /* a task whose first row is not committed yet (made this turn, or a commit failed):
             * one that ran unrecorded would be made and run again after a crash; its array
             * makes no more until it is (offer) */
            j->wait_why = SW_UNSAVED;
            j->queue_position = 0;
            back[nback++] = j;
            if (a)
                a->unsaved_pass = pass;
            continue;
        }
        if (job_launch_tidying(j)) {
            /* requeued: its run before is still being tidied up (its shim's end asks a pass) */
            j->wait_why = SW_TIDYING;
            j->queue_position = 0;
            back[nback++] = j;
            continue;
        }
        if (a && a->spec->throttle) {
            if (a->pass != pass)
                a->pass = pass, a->pass_runs = 0;
            if (a->pass_runs >= a->spec->throttle) {
                j->wait_why = SW_ARRAY_THROTTLE;
                j->queue_position = 0;
                back[nback++] = j;
                continue;
            }
            a->pass_runs++;
        }
        /* a task made and not started yet keeps its array's place (seq), ahead of the array's
         * tasks still to make (a stable order puts jobs first among equals); one that ran and
         * waits again has its own, as a requeued job does */
        bool own = !a || job_ran_before(j);
        sj[k] = (sched_job){.seq = own ? j->seq : a->seq, .not_before_ms = j->scheduled_ms,
                            .since_ms = own ? queue_since(j->created_ms, j->scheduled_ms, j->joined_ms)
                                            : queue_since(a->created_ms,
                                                          a->req.schedule_ms > j->scheduled_ms ? a->req.schedule_ms
                                                                                               : j->scheduled_ms,
                                                          a->joined_ms > j->joined_ms ? a->joined_ms : j->joined_ms)};
        sched_input_req(j, &sj[k].r);
        map[k++] = j;
    }
    size_t arr_offered = 0, arr_started = 0;
    for (size_t i = 0; i < narr; i++) {
        jarray *a = arrs[i];
        a->wait_why = state_unsaved() ? SW_UNSAVED : SW_STARTS; /* (commits fail: no task is made, offer) */
        a->queue_position = 0;
        if (a->pass != pass) /* none of its tasks holds room: what its status says (array_json.c) */
            a->pass = pass, a->pass_runs = 0;
        for (uint32_t c = offer(a); c > 0; c--) {
            sj[k] = (sched_job){.seq = a->seq, .not_before_ms = a->req.schedule_ms,
                                .since_ms = queue_since(a->created_ms, a->req.schedule_ms, a->joined_ms)};
            sched_input_req_of(&a->req, a->owner_uid, &sj[k].r);
            amap[k++] = a;
            arr_offered++;
        }
    }
    n = k; /* (less the tasks held back for their array's %N) */
    sched_gpu gpus[GPU_MAX];
    sched_mig migs[GPU_MAX * GPU_MIG_MAX];
    sched_running *run = xcalloc(room_now() + 1, sizeof *run);
    job **runmap = xcalloc(room_now() + 1, sizeof *runmap);
    sched_input in;
    sched_input_base(&in, gpus, migs, run, runmap);
    in.jobs = sj;
    in.n = n;
    size_t *start = xcalloc(n + 1, sizeof *start), *preempt = xcalloc(in.nrunning + 1, sizeof *preempt);
    uint64_t *sets = xcalloc(n + 1, sizeof *sets);
    int *picks = xcalloc(n + 1, sizeof *picks);
    uint8_t *why = xcalloc(n + 1, 1);
    uint32_t *pos = xcalloc(n + 1, sizeof *pos);
    sched_output out = {.start = start, .gpu_sets = sets, .mig_picks = picks, .preempt = preempt, .why = why,
                        .position = pos};
    sched_decide(&in, &out);
    for (size_t i = 0; i < n; i++) {
        if (!map[i]) {
            /* an array: why its first task that does not start now waits */
            if (why[i] != SW_STARTS && amap[i]->wait_why == SW_STARTS) {
                amap[i]->wait_why = why[i];
                amap[i]->queue_position = pos[i];
            }
            continue;
        }
        map[i]->queue_position = pos[i];
        map[i]->wait_why = why[i];
        /* Jobs whose time has come but which wait for room are QUEUED, not SCHEDULED. */
        if (map[i]->state == JS_SCHEDULED && sj[i].not_before_ms <= in.now_ms) {
            map[i]->state = job_state_after_hold(false, job_ran_before(map[i]), 0, 0);
            job_save(map[i]);
        }
    }
    snprintf(last_pass.head, sizeof last_pass.head, "%s",
             out.head < 0 ? "" : map[out.head] ? map[out.head]->id : amap[out.head]->id);
    last_pass.head_owner = out.head < 0 ? 0 : map[out.head] ? map[out.head]->owner_uid : amap[out.head]->owner_uid;
    last_pass.reserved = out.reserved;
    last_pass.shadow_ms = out.shadow_ms;
    last_pass.npreempt = out.npreempt;
    /* (the head may be an array's task not made yet: the array is named) */
    const job *hj = out.head >= 0 ? map[out.head] : NULL;
    const jarray *ha = out.head >= 0 && !hj ? amap[out.head] : NULL;
    for (size_t v = 0; v < out.npreempt; v++)
        job_launch_preempt(runmap[preempt[v]], hj ? hj->id : ha ? ha->id : NULL,
                           hj ? hj->req.priority : ha ? ha->req.priority : 0);
    queue_net qn[QUEUE_NET_MAX];
    size_t nqn = 0;
    for (k = 0; k < out.nstart; k++) {
        job *j = map[start[k]];
        jerr e = {0};
        if (!j && !net_take(qn, &nqn, amap[start[k]]->req.network)) {
            if (amap[start[k]]->wait_why == SW_STARTS)
                amap[start[k]]->wait_why = SW_NET_FULL;
            continue;
        }
        if (!j && launch_files_short(amap[start[k]]->id)) {
            amap[start[k]]->wait_why = SW_FILES; /* (made only to start: not while it cannot) */
            continue;
        }
        if (!j) {
            /* An array's task: made now, as it starts, and started by the first pass after the
             * turn's commit has its row (a task that ran is never made again after a crash, nor
             * its number given twice; one the database cannot take waits instead of running
             * unrecorded). The commit is the turn's, not one here: settle may run inside a
             * request whose change must commit, or be undone, whole. */
            jarray *a = amap[start[k]];
            uint32_t t;
            int from = pick_task(a, &t);
            if (from < 0)
                continue; /* (one offered ahead was made or canceled meanwhile) */
            lookups l = lookups_begin(a->lookup_since, a->owner_uid);
            j = submit_task(a, t, &e);
            lookups_end(l, &a->lookup_since, !j && e.http == 503);
            if (!j) {
                /* for good: its tasks left canceled; else tried again later (the cursor's and a
                 * released one are where they were; one taken from go goes back first) */
                if (!make_failed(a, t, &e) && from == 1)
                    arrays_go_again(a, t);
                continue;
            }
            make_done(a);
            arr_started++; /* (one not made does not make the next pass come at once) */
            j->wait_why = SW_UNSAVED;
            j->queue_position = 0;
            a->unsaved_pass = passes;
            state_want_after_commit(WANT_SCHEDULE);
            continue;
        }
        /* --singleton: let go when no job of its name ran; one without singleton may have started
         * since (it does not wait): PENDING again until that one ends */
        if (depend_single_blocked(j))
            continue;
        /* descriptors for its checks and launch, before anything is looked up or granted */
        if (launch_files_short(j->id)) {
            j->wait_why = SW_FILES;
            continue;
        }
        /* its network's free addresses, counted among those that start (one of them each) */
        if (!j->net.network[0] && !net_take(qn, &nqn, j->req.network)) {
            j->wait_why = SW_NET_FULL;
            continue;
        }
        /* What its owner may do now, checked at submission maybe long ago (the account and
         * group, isolation.require_gvisor; job_launch.c checks them again): a lookup that failed
         * (503: a directory service away) leaves it waiting, tried again in ACCOUNT_RETRY_MS; a
         * refusal ends it, before anything is granted */
        lookups l = lookups_begin(j->lookup_since, j->owner_uid);
        int checked = account_verify(&j->req, j->owner_uid, j->owner_gid, &e) < 0 ||
                              isolation_recheck(&j->req, j->owner_uid, j->owner_gid, &e) < 0
                          ? -1
                          : 0;
        lookups_end(l, &j->lookup_since, checked < 0 && e.http == 503);
        if (checked < 0) {
            if (e.http == 503) {
                j->wait_why = SW_ACCOUNT_LOOKUP;
                lookup_retry_ms = now_ms() + ACCOUNT_RETRY_MS;
                if (e.code != EINPROGRESS) /* (being looked up: the pass comes again once answered) */
                    log_warn("job %s waits: %s", j->id, e.msg);
                e = (jerr){0};
                continue;
            }
            start_failed(j, &e);
            continue;
        }
        /* The command was found at submission; what the job waited for since may have taken it
         * away (its runtime rebuilt without it, a package removed): looked up again before
         * anything is granted, so a job that cannot start never holds a GPU. A few stat()s. */
        if (cmdcheck_resolve(&j->req, &e) < 0) {
            start_failed(j, &e);
            continue;
        }
        bool granted = !sets[k] || gpus_grant(j, sets[k], &e) == 0;
        if (granted && picks[k] >= 0)
            gpus_grant_mig(j, picks[k]);
        if (granted && (sets[k] || picks[k] >= 0))
            placed(j, sets[k]); /* where it went and why, for its history (job_detail.h) */
        if (!granted || job_launch_job(j, &e) < 0)
            start_failed(j, &e);
    }
    core.sched_wakeup_ms = out.next_wakeup_ms;
    if (lookup_retry_ms && (!core.sched_wakeup_ms || lookup_retry_ms < core.sched_wakeup_ms))
        core.sched_wakeup_ms = lookup_retry_ms;
    if (make_retry_ms && (!core.sched_wakeup_ms || make_retry_ms < core.sched_wakeup_ms))
        core.sched_wakeup_ms = make_retry_ms;
    if (files_retry_ms && (!core.sched_wakeup_ms || files_retry_ms < core.sched_wakeup_ms))
        core.sched_wakeup_ms = files_retry_ms;
    files_short_before = files_short;
    /* tasks left to cancel task by task: at the next turn (they end no job to ask for a pass) */
    if (more_canceled)
        core.sched_wakeup_ms = now_ms();
    /* every array task offered started: more may start at the next turn (a pass makes at most
     * ARRAYS_PER_PASS of an array's tasks, so one turn of the loop stays short) */
    if (arr_started && arr_started == arr_offered)
        for (size_t i = 0; i < narr; i++)
            if (offer(arrs[i])) {
                core.sched_wakeup_ms = now_ms();
                break;
            }
    record_waits(map, n);
    record_waits(back, nback);
    free(start), free(preempt), free(sets), free(picks), free(why), free(pos);
    free(sj), free(map), free(amap), free(run), free(runmap), free(arrs), free(back);
}

/* "2 GPUs with at least 40960 MB each, of type H100, on one NUMA node" */
static void describe_need(const job *j, const sched_req *r, char *out, size_t len)
{
    const char *mig = j->req.gpu_mig;
    if (mig) {
        snprintf(out, len, "a MIG device %s", mig);
        return;
    }
    size_t l = (size_t)snprintf(out, len, "%u %sGPU%s", r->gpu_count, r->shared ? "shared " : "",
                                r->gpu_count == 1 ? "" : "s");
    const char *type = j->req.gpu_type, *cc = j->req.gpu_cc;
    if (r->gpu_memory_mb && l < len)
        l += (size_t)snprintf(out + l, len - l, r->shared ? " with %llu MB free on each" : " with at least %llu MB each",
                              (unsigned long long)r->gpu_memory_mb);
    if (type && l < len)
        l += (size_t)snprintf(out + l, len - l, " of type %s", type);
    if (cc && l < len)
        l += (size_t)snprintf(out + l, len - l, " with compute capability %s or more", cc);
    if (r->gpu_ids && l < len)
        l += (size_t)snprintf(out + l, len - l, " (the ones it named)");
    if (r->single_numa && l < len)
        snprintf(out + l, len - l, " on one NUMA node");
}

/* How many GPUs (or MIG devices) this request could take now, one by one. */
static unsigned free_for(const sched_input *in, const sched_req *r)
{
    sched_req one = *r;
    unsigned n = 0;
    if (r->mig_profile >= 0) {
        for (size_t d = 0; d < in->nmigs; d++) {
            int busy = 0;
            for (size_t k = 0; k < in->nrunning; k++)
                busy |= in->running[k].mig == (int)d;
            n += in->migs[d].profile == r->mig_profile && in->migs[d].usable && !busy;
        }
        return n;
    }
    one.gpu_count = 1;
    one.single_numa = 0;
    for (size_t g = 0; g < in->ngpus; g++) {
        one.gpu_ids = 1ull << g;
        if ((!r->gpu_ids || r->gpu_ids >> g & 1) && (!r->gpu_mask || r->gpu_mask >> g & 1)) {
            uint64_t set;
            int mig;
            n += sched_fits_now(in, &one, &set, &mig) == 0;
        }
    }
    return n;
}

static void list_gpus(uint64_t set, char *out, size_t len)
{
    size_t l = 0;
    out[0] = 0;
    for (int g = 0; g < SCHED_GPU_MAX && l < len; g++)
        if (set >> g & 1)
            l += (size_t)snprintf(out + l, len - l, "%s%d", l ? "," : "", g);
}

void queue_wait_reason(const job *j, char *out, size_t len)
{
    sched_gpu gpus[GPU_MAX];
    sched_mig migs[GPU_MAX * GPU_MIG_MAX];
    sched_running *run = xcalloc(room_now() + 1, sizeof *run);
    sched_input in;
    sched_input_base(&in, gpus, migs, run, NULL);
    wait_reason_in(j, &in, out, len);
    free(run);
}

/* The reason in words, against the input of this moment (in: GPUs, running jobs). */
static void wait_reason_in(const job *j, const sched_input *inp, char *out, size_t len)
{
    const sched_input in = *inp;
    out[0] = 0;
    sched_req r;
    sched_input_req(j, &r);
    char need[200], gl[100], when[64] = "";
    describe_need(j, &r, need, sizeof need);
    if (last_pass.shadow_ms > 0) {
        time_t t = (time_t)(last_pass.shadow_ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, " by %Y-%m-%dT%H:%M:%SZ at the latest", &tm);
    }
    list_gpus(last_pass.reserved, gl, sizeof gl);
    /* the head is named to its owner's jobs only: another user learns no id of someone else's */
    char head[64];
    if (last_pass.head_owner == j->owner_uid)
        snprintf(head, sizeof head, "job %.8s", last_pass.head);
    else
        snprintf(head, sizeof head, "a job of another user");
    unsigned nfree = free_for(&in, &r);
    switch ((enum sched_wait)j->wait_why) {
    case SW_STARTS:
    case SW_SCHEDULED: break;
    case SW_MAX_RUNNING:
        if (core.cfg.max_running && core.cfg.max_running == state_max_running())
            snprintf(out, len, "waits for room: %u jobs run, jobs.max_running is %u", core.running, core.cfg.max_running);
        else
            snprintf(out, len, "waits for room: %u jobs run, as many as joblet's open-file limit allows (%u at most "
                               "under ulimit -n %llu)", core.running, core.files_max_running,
                     (unsigned long long)core.nofile_hard);
        break;
    case SW_USER_LIMIT: {
        uint64_t held = 0;
        for (size_t k = 0; k < in.nrunning; k++)
            if (in.running[k].r.user == r.user)
                held += in.running[k].mig >= 0 ? 1 : (uint64_t)__builtin_popcountll(in.running[k].gpus);
        snprintf(out, len, "needs %s; its owner's jobs hold %llu GPU%s and limits.max_gpus_per_user is %u", need,
                 (unsigned long long)held, held == 1 ? "" : "s", core.cfg.limits.max_gpus_per_user);
        break;
    }
    case SW_USER_RUNNING: {
        unsigned runs = 0;
        for (size_t k = 0; k < in.nrunning; k++)
            runs += in.running[k].r.user == r.user;
        snprintf(out, len, "waits for room: its owner (uid %u) runs %u jobs and limits.max_running_per_user is %u",
                 (unsigned)r.user, runs, core.cfg.limits.max_running_per_user);
        break;
    }
    case SW_HEAD: {
        bool one = __builtin_popcountll(last_pass.reserved) == 1;
        snprintf(out, len, "needs %s; %u free; first in line%s%s%s", need, nfree, !*gl ? "" : one ? ": GPU " : ": GPUs ",
                 gl, !*gl ? "" : one ? " is reserved for it" : " are reserved for it");
        if (*when && strlen(out) < len)
            snprintf(out + strlen(out), len - strlen(out), ", which has room for it%s", when);
        break;
    }
    case SW_PREEMPTING:
        snprintf(out, len, "needs %s; first in line: lower-priority preemptible jobs are being stopped for it", need);
        break;
    case SW_HEAD_HELD:
        snprintf(out, len, "needs %s; %u free; first in line, but none of the free GPUs is one it can use: it goes "
                           "first when one of its own frees, and reserves nothing meanwhile (the next job in line "
                           "that does not fit holds the reservation)", need, nfree);
        break;
    case SW_RESERVED:
        snprintf(out, len, "needs %s; it would fit, but only on %s%s reserved for %s, first in line%s", need,
                 *gl ? (__builtin_popcountll(last_pass.reserved) == 1 ? "GPU " : "GPUs ") : "room", gl, head,
                 r.runtime_ms ? " (it could still run when that job's room comes)"
                              : " (a job with --max-runtime that ends in time may use them meanwhile)");
        break;
    case SW_NO_ROOM:
        snprintf(out, len, "needs %s; %u free; behind %s, first in line", need, nfree, head);
        break;
    case SW_UNPLACEABLE:
        snprintf(out, len, "needs %s; too few such GPUs are usable now (rnx gpu list shows which are degraded or "
                           "offline)", need);
        break;
    case SW_UNSAVED:
        snprintf(out, len, j->db_mark & STATE_DB_STALE
                               ? "made while joblet's database could not be written; it starts once its row is (is "
                                 "the state filesystem full?)"
                               : "made just now; it starts once its row is saved");
        break;
    case SW_ACCOUNT_LOOKUP:
        snprintf(out, len, "its owner's account (uid %u) is being looked up at its start, or could not be (is the "
                           "directory service away?); tried again every %d s", (unsigned)j->owner_uid,
                 ACCOUNT_RETRY_MS / 1000);
        break;
    case SW_TIDYING:
        snprintf(out, len, "its run before is still being tidied up (its cgroups, its sandbox): it starts once "
                           "that run's shim has ended");
        break;
    case SW_FILES:
        snprintf(out, len, "joblet has too few descriptors free for its launch now (its open-file limit, ulimit -n; "
                           "log followers and connections hold them): tried again every %d s", FILES_RETRY_MS / 1000);
        break;
    case SW_NET_FULL:
        snprintf(out, len, "waits for an address on network %s: all it has are taken by the jobs on it (or starting "
                           "now)", j->req.network ? j->req.network : "?");
        break;
    case SW_ARRAY_THROTTLE:
        if (j->array)
            snprintf(out, len, "waits for its array's %%%u: %u of its tasks run", j->array->spec->throttle,
                     j->array->pass_runs);
        break;
    }
    /* a GPU it named that is out of service says why, and whether it comes back by itself */
    bool for_gpus = j->wait_why == SW_HEAD || j->wait_why == SW_HEAD_HELD || j->wait_why == SW_NO_ROOM ||
                    j->wait_why == SW_RESERVED || j->wait_why == SW_UNPLACEABLE;
    size_t l = strlen(out);
    if (for_gpus && r.shared && l + 1 < len && sched_held_by_other_uids(&in, &r))
        snprintf(out + l, len - l, "; a shared GPU takes the jobs of one uid at a time (NVIDIA MPS serves one "
                                   "user at once), and a shared GPU it could use serves another's");
    for (int i = 0; for_gpus && i < core.gpu.inv.n; i++) {
        char why[400];
        if (r.gpu_ids >> i & 1 && gpus_out_of_service(i, why, sizeof why) != GPUS_IN_SERVICE) {
            snprintf(out, len, "needs %s; %s", need, why);
            break;
        }
    }
}
