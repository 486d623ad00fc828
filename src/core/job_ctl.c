/* What a user asks of a job (job_ctl.h). */
#include "job_ctl.h"
#include "arrays.h"
#include "depend.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "../common/util.h"
#include "qclock.h"
#include "events.h"
#include "gpu_history.h"
#include "job_events.h"
#include "job_freeze.h"
#include "jobs.h"
#include "submit.h"
#include "job_launch.h"
#include "job_logs.h"
#include "job_term.h"
#include "networks.h"
#include "settle.h"
#include "state.h"
#include "statedisk.h"
#include "workflow.h"
#include "workfs.h"

/* How a refusal names j: "job ID", and an array's task as its owner knows it, "task 7 of array
 * 3f2a1b2c (job ID)": rnx job cancel sweep_7 was answered by a job id its owner never saw, and of
 * several refused, which one was not said. One buffer (the loop thread's): one use a message. */
static const char *named(const job *j)
{
    static char buf[sizeof j->id + 64];
    if (j->array_id[0])
        snprintf(buf, sizeof buf, "task %lld of array %.8s (job %s)", (long long)j->array_task, j->array_id, j->id);
    else
        snprintf(buf, sizeof buf, "job %s", j->id);
    return buf;
}

/* Frozen (true) or thawed: its shim's clock for the run-time limit stands still before the
 * freeze and runs again after the thaw, so no moment frozen counts against the limit; the
 * shim's clock runs again if the freezer refuses. */
static int freeze(job *j, bool frozen, jerr *e)
{
    if (frozen && job_launch_runtime(j, job_launch_runtime_s(&j->req), true, e) < 0)
        return -1;
    if (job_freeze_ask(j, frozen, e) < 0) {
        jerr ignored = {0};
        if (frozen)
            job_launch_runtime(j, job_launch_runtime_s(&j->req), false, &ignored);
        return -1;
    }
    if (!frozen && job_launch_runtime(j, job_launch_runtime_s(&j->req), false, e) < 0)
        log_warn("job %s: resumed, but %s; its time limit waits", j->id, e->msg);
    return 0;
}

int64_t job_ctl_suspended_ms(const job *j)
{
    int64_t t = j->suspended_ms;
    /* (a run that ended frozen, its shim killed: until its end; back in the queue: not since) */
    if (j->suspended_since_ms > 0) {
        int64_t until = j->state == JS_SUSPENDED ? now_ms() : j->ended_ms;
        if (until > j->suspended_since_ms)
            t += until - j->suspended_since_ms;
    }
    return t;
}

/* A suspended job is thawed before it is stopped: its processes must run to hear SIGTERM. */
static int thaw_to_stop(job *j, uid_t by, jerr *e)
{
    if (j->state != JS_SUSPENDED)
        return 0;
    if (job_launch_thaw(j, e) < 0)
        return -1;
    job_event(j, JE_RESUMED, (int64_t)by, "thawed by uid %u to be stopped", (unsigned)by);
    job_save(j);
    return 0;
}

/* A stop asked while the job is being stopped to go back to the queue (a requeue, a
 * preemption): it ends there, as Slurm's scancel of a job being requeued does. Refused, or taken
 * as done (an array's stop), the job ran again after its owner stopped it. The shim has its
 * SIGTERM already (SIGKILL after the grace period): only what its end does changes. */
static int stop_requeue(job *j, uid_t by)
{
    j->preempting = j->requeue_asked = j->requeue_hold = false;
    j->stopped_by = by;
    job_event(j, JE_STOPPING, (int64_t)by, "by uid %u: the stop under way for its requeue now ends it (it does "
                                           "not go back to the queue)", (unsigned)by);
    job_save(j);
    log_info("job %s: stopped by uid %u while being requeued; it ends", j->id, (unsigned)by);
    return 0;
}

/* A waiting job canceled (stopped, killed) by by: CANCELED, who did it kept; one another uid
 * than its owner held (an admin's hold) says so (ended_held), which its requeue asks for. */
static void cancel_waiting(job *j, uid_t by)
{
    if (j->state == JS_HELD && j->stopped_by >= 0 && (uid_t)j->stopped_by != j->owner_uid)
        j->ended_held = true;
    j->stopped_by = by;
    job_finish(j, JS_CANCELED, "canceled");
}

int job_ctl_stop(job *j, uid_t by, jerr *e)
{
    if (j->state == JS_STOPPING && j->preempting)
        return stop_requeue(j, by);
    if (job_state_terminal(j->state) || j->state == JS_STOPPING)
        return jerr_http(e, 409, "%s is %s; only a running job can be stopped", named(j), job_state_name(j->state));
    if (thaw_to_stop(j, by, e) < 0)
        return -1;
    if (job_in_queue(j) || j->state == JS_PENDING || j->state == JS_HELD) {
        cancel_waiting(j, by);
        return 0;
    }
    return job_launch_stop(j, by, e);
}

int job_ctl_kill(job *j, uid_t by, jerr *e)
{
    if (job_state_terminal(j->state))
        return jerr_http(e, 409, "%s is %s; only a running job can be killed", named(j), job_state_name(j->state));
    if (thaw_to_stop(j, by, e) < 0)
        return -1;
    if (job_in_queue(j) || j->state == JS_PENDING || j->state == JS_HELD) {
        cancel_waiting(j, by);
        return 0;
    }
    return job_launch_kill(j, by, e);
}

int job_ctl_signal(job *j, uid_t by, int sig, bool all, jerr *e)
{
    if (sig == SIGKILL)
        return job_ctl_kill(j, by, e);
    if (job_state_terminal(j->state))
        return jerr_http(e, 409, "%s is %s; only a running job can be sent a signal", named(j),
                         job_state_name(j->state));
    if (j->shim_pid <= 0)
        return jerr_http(e, 409, "%s is %s and has not started; only a running job can be sent a signal "
                                 "(rnx job cancel cancels it)", named(j), job_state_name(j->state));
    return job_launch_signal(j, by, sig, all, e);
}

int job_ctl_cancel(job *j, uid_t by, jerr *e)
{
    /* being stopped to go back to the queue (a requeue's, a preemption's stop): it would wait
     * there once stopped, so the cancel is for it, as Slurm's scancel of a job being requeued;
     * the stop under way ends it instead */
    if (job_ctl_requeuing(j))
        return stop_requeue(j, by);
    /* launched (its shim is starting it) while still QUEUED, SCHEDULED or PREEMPTED until the shim
     * says it runs: out of the queue, a stop's to end (as job_ctl_update takes it for running),
     * and said so by what it is, not by the state that a cancel would take */
    if (!job_in_queue(j) && job_state_waiting(j->state))
        return jerr_http(e, 409, "%s is starting (its shim was launched; it shows %s until it runs): a cancel "
                                 "takes only a job not launched yet; use stop (rnx job stop %.8s)",
                         named(j), job_state_name(j->state), j->id);
    if (!job_in_queue(j) && j->state != JS_PENDING && j->state != JS_HELD)
        return jerr_http(e, 409, "%s is %s; only a pending, scheduled, queued, preempted or held job can be canceled%s",
                         named(j), job_state_name(j->state), job_state_terminal(j->state) ? "" : " (use stop)");
    cancel_waiting(j, by);
    return 0;
}

/* Its row deleted, in the open transaction; an array's task: the state it ended in kept in its
 * array's row, in the same transaction (arrays_task_deleting; kept_rows undoes it). */
static int delete_row(job *j, jerr *e)
{
    /* its /work is being read or written by a copy's helper: removed under it, a copy out would
     * end short but whole to its reader, and one in would leave files in a tree being removed */
    if (j->copies)
        return jerr_http(e, 409, "%s: a copy out of it or into it (rnx job cp) is under way; delete it once that "
                                 "ends", named(j));
    /* what its end still owes (its GPUs back, its workflow told) is done before it goes */
    if (j->settle)
        settle();
    db_usage u;
    gpu_history_usage(j, &u); /* (what it leaves in the History's sums: gpu_history.h) */
    if (db_delete_job(core.db, j->id, &u, e) < 0) {
        log_err("%s", e->msg);
        return db_busy_refusal(e, "deleted"); /* another process's lock (a backup): a moment later it may go */
    }
    arrays_task_deleting(j);
    return 0;
}

/* The deletes of these rows were not committed (rolled back): the jobs stay, counted as before. */
static void kept_rows(job **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        arrays_task_kept(v[i]);
}

/* Their rows' delete committed: the jobs go from memory and disk, out of the table at once
 * (jobs_remove_many: one compaction for a slice of them). */
static void delete_rest(job **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        job *j = v[i];
        char dir[700];
        jobs_dir_of(j, dir, sizeof dir);
        job_logs_detach(j);
        job_term_wake(j); /* (an ended job's waiters heard at its end already) */
        job_launch_forget(j);
        job_events_forget(j->id);
        workflow_forget_job(j);
        arrays_forget_task(j);
        networks_release(j); /* (given back at its end already, unless it is deleted before the settle step) */
        statedisk_budget_release(j);
        workfs_remove_later(j->owner_uid, dir); /* a large tree over the next turns */
        char ev[80];
        snprintf(ev, sizeof ev, "{\"id\":\"%s\"}", j->id);
        events_publish("job_deleted", j->owner_uid, ev);
    }
    jobs_remove_many(v, n);
    for (size_t i = 0; i < n; i++)
        job_free(v[i]);
    if (n)
        core.trim_at_ms = now_ms() + 1000;
}

/* The delete is committed before anything else goes: a delete the database did not take
 * leaves the job whole, in memory and on disk, and says why (507 when the disk is full). */
static int commit_delete(jerr *e)
{
    if (state_commit_now(e) == 0)
        return 0;
    char msg[sizeof e->msg];
    snprintf(msg, sizeof msg, "%s", e->msg);
    return jerr_http(e, e->http, "nothing was deleted: %s", msg);
}

int job_ctl_delete(job *j, jerr *e)
{
    if (!job_state_terminal(j->state))
        return jerr_http(e, 409, "%s is %s; stop or cancel it before deleting it", named(j), job_state_name(j->state));
    if (delete_row(j, e) < 0)
        return -1;
    if (commit_delete(e) < 0) {
        kept_rows(&j, 1);
        return -1;
    }
    delete_rest(&j, 1);
    return 0;
}

int job_ctl_delete_many(job **v, size_t n, jerr *e)
{
    for (size_t i = 0; i < n; i++)
        if (!job_state_terminal(v[i]->state))
            return jerr_http(e, 409, "job %s is %s; stop or cancel it before deleting it", v[i]->id,
                             job_state_name(v[i]->state));
    settle(); /* what the ended jobs still owe, first: not inside the delete's savepoint */
    if (db_mark(core.db, e) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (delete_row(v[i], e) < 0) {
            db_undo(core.db);
            kept_rows(v, i);
            return -1;
        }
    db_keep(core.db);
    if (commit_delete(e) < 0) {
        kept_rows(v, n);
        return -1;
    }
    delete_rest(v, n);
    return 0;
}

/* An ended job retention.c may delete: ended before the bound, its array and workflow ended (a
 * task's workflow is its array's: a task has none of its own), no
 * job or array waiting names it, or its array, in its `after` (named), and nobody reads its log
 * (a follower: deleted under it, `rnx job log` of 30 MB read slowly ended at 0.5 MB, "run it
 * again", and again said no job), nor copies out of it or into it (rnx job cp: a copy of 200
 * files read slowly ended with 3 of them, said whole). */
static bool ended_whole_before(const job *j, int64_t before_ms, const depend_named *named)
{
    return j->ended_ms > 0 && j->ended_ms < before_ms && !j->followers && !j->copies && (!j->array || arrays_ended(j->array)) &&
           (!j->wf || workflow_ended(j->wf)) && (!j->array || !j->array->wf || workflow_ended(j->array->wf)) && !depend_named_has(named, j->seq) &&
           (!j->array || !depend_named_has(named, j->array->seq));
}

/* Rows deleted in the open transaction (the slice's others undone with it when one fails). */
static int delete_rows(job **gone, size_t n, job *j, jerr *e)
{
    if (delete_row(j, e) == 0)
        return 0;
    db_undo(core.db);
    kept_rows(gone, n);
    return -1;
}

/* retention's: from walk's cursor, at most max_looks jobs looked at */
static int walk_rows(const caller *who, job_ctl_walk *w, job **gone, size_t max, size_t *n, bool *more, jerr *e)
{
    size_t k = jobs_seq_place(w->next_seq);
    for (; k < core.njobs; k++) {
        job *j = core.jobs[k];
        if (w->looked == w->max_looks) {
            *more = true; /* (the rest, from j, next turn) */
            break;
        }
        w->looked++;
        if (!authz_may_on(who, AUTHZ_OTHERS_JOBS, j->owner_uid) || !job_state_terminal(j->state) ||
            !ended_whole_before(j, w->ended_before_ms, w->named))
            continue;
        if (*n == max) {
            *more = true; /* (j first, next turn) */
            break;
        }
        if (delete_rows(gone, *n, j, e) < 0)
            return -1;
        gone[(*n)++] = j;
        k = jobs_seq_place(j->seq); /* (settling what it owed may have changed the table) */
    }
    w->next_seq = k < core.njobs ? core.jobs[k]->seq : core.next_seq;
    return 0;
}

/* rnx job delete-all's: from the end, every ended job */
static int newest_rows(const caller *who, job **gone, size_t max, size_t *n, bool *more, jerr *e)
{
    /* (an index, not a count from the end: settling what a job owed may make jobs, an array's
     * tasks, at the end) */
    for (size_t i = core.njobs; i-- > 0;) {
        job *j = core.jobs[i];
        if (!authz_may_on(who, AUTHZ_OTHERS_JOBS, j->owner_uid) || !job_state_terminal(j->state) || j->copies)
            continue; /* (one being copied out of or into: kept, as one not ended) */
        if (*n == max) {
            *more = true;
            break;
        }
        if (delete_rows(gone, *n, j, e) < 0)
            return -1;
        gone[(*n)++] = j;
        if (i > core.njobs) /* settling what it owed ended no job, but look again from the end */
            i = core.njobs;
    }
    return 0;
}

int job_ctl_delete_ended(const caller *who, job_ctl_walk *walk, size_t max, size_t *deleted, bool *more,
                         jerr *e)
{
    /* the rows in one transaction, then the jobs once it is committed; a row that cannot be
     * deleted takes the slice's others back with it */
    size_t n = 0;
    *deleted = 0;
    *more = false;
    if (walk)
        walk->looked = 0;
    settle(); /* what the ended jobs still owe, first: not in the middle of the slice */
    if (db_mark(core.db, e) < 0)
        return -1;
    job **gone = xcalloc((max < core.njobs ? max : core.njobs) + 1, sizeof *gone);
    if ((walk ? walk_rows(who, walk, gone, max, &n, more, e) : newest_rows(who, gone, max, &n, more, e)) < 0) {
        free(gone);
        return -1;
    }
    db_keep(core.db);
    if (n && commit_delete(e) < 0) {
        kept_rows(gone, n);
        free(gone);
        return -1;
    }
    delete_rest(gone, n);
    free(gone);
    *deleted = n;
    return 0;
}

/* "HELD": the job's state as a refusal says it. */
static int refuse(job *j, const char *what, const char *only, jerr *e)
{
    return jerr_http(e, 409, "%s is %s; only %s job can be %s", named(j), job_state_name(j->state), only, what);
}

bool job_ctl_requeuing(const job *j)
{
    /* rnx job requeue's stop, or a preemption's: either way it goes back to the queue */
    return j->state == JS_STOPPING && j->preempting;
}

int job_ctl_hold(job *j, uid_t by, jerr *e)
{
    /* being stopped to go back to the queue (rnx job requeue, a preemption): it waits HELD once
     * stopped, as with requeue --hold. Refused, the hold could only be placed between the stop's
     * end and the scheduler's next pass, which starts it again in the same turn when there is
     * room: a hold its owner could not win */
    if (job_ctl_requeuing(j)) {
        if (j->requeue_hold)
            return jerr_http(e, 409, "%s is being stopped to be requeued held already", named(j));
        j->requeue_hold = true;
        j->stopped_by = by; /* who holds it (job_requeue: an admin's hold stays an admin's) */
        job_event(j, JE_HELD, (int64_t)by, "held by uid %u while being stopped to be requeued: it waits HELD "
                                          "once stopped", (unsigned)by);
        job_save(j);
        log_info("job %s: held by uid %u during its requeue's stop", j->id, (unsigned)by);
        return 0;
    }
    if (job_state_waiting(j->state) && j->shim_pid > 0)
        return jerr_http(e, 409, "job %s is being started (its shim runs); stop it, or requeue it with --hold once "
                                 "it runs", j->id);
    if (!job_in_queue(j) && j->state != JS_PENDING)
        return refuse(j, "held", "a pending, scheduled, queued or preempted", e);
    enum job_state was = j->state;
    j->state = JS_HELD;
    j->stopped_by = by; /* while HELD: who holds it */
    job_event(j, JE_HELD, (int64_t)by, "held by uid %u (was %s)", (unsigned)by, job_state_name(was));
    job_save(j);
    state_want(WANT_SCHEDULE);
    log_info("job %s HELD by uid %u (was %s)", j->id, (unsigned)by, job_state_name(was));
    /* a singleton let go and held: the next of its name may go (one still PENDING held no name:
     * nothing to decide, and 990 waiters of its name were sorted again for nothing) */
    if (was != JS_PENDING)
        depend_single_changed(j);
    return 0;
}

int job_ctl_may_release(const job *j, const caller *who, jerr *e)
{
    /* a hold made by another than the job's owner (an admin, acting on others' jobs: Slurm's
     * JobHeldAdmin) is an admin's to release; the owner's own hold (JobHeldUser) its owner's */
    if (j->state != JS_HELD)
        return 0;
    char what[200];
    /* a task of an array an admin holds whole: let go, it would run while that hold stands (its
     * own hold its owner's, made before the array's); as in Slurm, where the operator's hold
     * covers each of the array's tasks, split out or not */
    const jarray *a = j->array;
    if (a && arrays_task_held(a, (uint32_t)j->array_task) && a->held_by >= 0 && (uid_t)a->held_by != j->owner_uid) {
        snprintf(what, sizeof what, "releasing job %s, a task of array %.8s held by uid %lld (an admin's hold; its "
                                    "owner releases only its own holds)", j->id, a->id, (long long)a->held_by);
        if (authz_check(who, AUTHZ_RELEASE_ADMIN_HOLD, what, e) < 0)
            return -1;
    }
    if (j->stopped_by < 0 || (uid_t)j->stopped_by == j->owner_uid)
        return 0;
    snprintf(what, sizeof what, "releasing job %s, held by uid %lld (an admin's hold; its owner releases only "
                                "its own holds)", j->id, (long long)j->stopped_by);
    return authz_check(who, AUTHZ_RELEASE_ADMIN_HOLD, what, e);
}

int job_ctl_release(job *j, const caller *who, jerr *e)
{
    /* being stopped to be requeued held (requeue --hold, or a hold asked meanwhile): the hold is
     * taken back, and it goes back to the queue once stopped. Refused, it could be released only
     * once HELD, a moment its owner would have to watch for */
    if (job_ctl_requeuing(j) && j->requeue_hold) {
        if (j->stopped_by >= 0 && (uid_t)j->stopped_by != j->owner_uid) {
            char what[200];
            snprintf(what, sizeof what, "releasing job %s, held by uid %lld (an admin's hold; its owner releases "
                                        "only its own holds)", j->id, (long long)j->stopped_by);
            if (authz_check(who, AUTHZ_RELEASE_ADMIN_HOLD, what, e) < 0)
                return -1;
        }
        j->requeue_hold = false;
        if (!j->requeue_asked)
            j->stopped_by = -1; /* a preemption's: nobody stopped it (job_requeue resets a requeue's) */
        job_event(j, JE_RELEASED, (int64_t)who->uid, "hold released by uid %u while being stopped to be requeued: "
                                                    "it waits in the queue once stopped", (unsigned)who->uid);
        job_save(j);
        log_info("job %s: hold released by uid %u during its requeue's stop", j->id, (unsigned)who->uid);
        return 0;
    }
    if (j->state != JS_HELD)
        return refuse(j, "released", "a held", e);
    if (job_ctl_may_release(j, who, e) < 0)
        return -1;
    uid_t by = who->uid;
    /* a workflow's job, one with --after that never held (one let go before it was held, or
     * whose `after` held while it was held, is not decided again: the jobs it named may be
     * deleted since), or a singleton (it waits for its turn again): decided afresh */
    bool deps = workflow_job_has_deps(j) || (((j->req.nafter && !j->after_met) || j->req.singleton) && !j->wf);
    j->state = job_state_after_hold(deps, job_ran_before(j), j->scheduled_ms, now_ms());
    j->stopped_by = -1;
    j->joined_ms = qclock_now(); /* its place in the queue is from now (job.h) */
    j->ev_wait = 0; /* its next wait is told afresh */
    job_event(j, JE_RELEASED, (int64_t)by, "hold released by uid %u: %s", (unsigned)by, job_state_name(j->state));
    job_save(j);
    if (deps && j->wf)
        workflow_job_decide(j); /* the jobs it depends on may have ended meanwhile */
    else if (deps)
        depend_decide(j);
    state_want(WANT_SCHEDULE);
    log_info("job %s released by uid %u: %s", j->id, (unsigned)by, job_state_name(j->state));
    return 0;
}

const enum jobreq_id job_ctl_update_fields[] = {JR_PRIORITY, JR_MAX_RUNTIME_S, JR_GPU_COUNT, JR_GPU_MEMORY_MB,
                                                JR_MAX_CPU, JR_MAX_MEMORY_MB, JR_PREEMPTIBLE, JR_AFTER,
                                                JR_AFTER_ANY, JR_SCHEDULE_AT};
const size_t job_ctl_update_nfields = sizeof job_ctl_update_fields / sizeof *job_ctl_update_fields;

/* "1a2b3c4d:ok,5e6f7a8b:any", or "none". */
static size_t say_after(const job_req *r, char *out, size_t len)
{
    size_t n = 0;
    if (!r->nafter)
        return (size_t)snprintf(out, len, "none");
    for (size_t k = 0; k < r->nafter && n < len; k++)
        n += (size_t)snprintf(out + n, len - n, "%s%.8s:%s", k ? (r->after_any ? "?" : ",") : "", r->after[k].job,
                              jobreq_after_state_name(r->after[k].state));
    return n;
}

static bool same_after(const job_req *a, const job_req *b)
{
    if (a->nafter != b->nafter)
        return false;
    for (size_t k = 0; k < a->nafter; k++)
        if (a->after[k].state != b->after[k].state || strcmp(a->after[k].job, b->after[k].job))
            return false;
    return true;
}

/* "priority 0 -> 5", "after none -> 1a2b3c4d:ok", "schedule_at 2026-11-29T16:00:00Z -> none":
 * one field's change. */
static size_t say_change(const job_req *a, const job_req *b, enum jobreq_id f, char *out, size_t len)
{
    const jobreq_field *F = &jobreq_fields[f];
    if (F->kind == JK_AFTER) {
        size_t n = (size_t)snprintf(out, len, "%s ", F->key);
        n += n < len ? say_after(a, out + n, len - n) : 0;
        n += n < len ? (size_t)snprintf(out + n, len - n, " -> ") : 0;
        return n + (n < len ? say_after(b, out + n, len - n) : 0);
    }
    if (F->kind == JK_TEXT) {
        const char *x = *(char *const *)((const char *)a + F->off), *y = *(char *const *)((const char *)b + F->off);
        return (size_t)snprintf(out, len, "%s %s -> %s", F->key, x ? x : "none", y ? y : "none");
    }
    if (F->kind == JK_BOOL) {
        bool x = *(const bool *)((const char *)a + F->off), y = *(const bool *)((const char *)b + F->off);
        return (size_t)snprintf(out, len, "%s %s -> %s", F->key, x ? "true" : "false", y ? "true" : "false");
    }
    int64_t x = *(const int64_t *)((const char *)a + F->off), y = *(const int64_t *)((const char *)b + F->off);
    if (!jobreq_has(a, f) && x == 0 && F->min > 0) /* a limit not given: none */
        return (size_t)snprintf(out, len, "%s none -> %lld", F->key, (long long)y);
    if (!jobreq_has(b, f) && y == 0 && F->min > 0) /* taken away (rnx job update --max-runtime=UNLIMITED) */
        return (size_t)snprintf(out, len, "%s %lld -> none", F->key, (long long)x);
    return (size_t)snprintf(out, len, "%s %lld -> %lld", F->key, (long long)x, (long long)y);
}

bool job_ctl_runtime_raised(const job_req *cur, const job_req *req)
{
    if (!jobreq_has(cur, JR_MAX_RUNTIME_S))
        return false; /* (none: nothing is longer) */
    return !jobreq_has(req, JR_MAX_RUNTIME_S) || req->max_runtime_s > cur->max_runtime_s;
}

int job_ctl_may_raise_runtime(const job *j, const job_req *req, const caller *who, jerr *e)
{
    if (!job_ctl_update_runs(j) || !job_ctl_runtime_raised(&j->req, req))
        return 0;
    char what[200];
    snprintf(what, sizeof what, "%s the time limit of job %.8s, which runs (the scheduler started it, and others "
                                "around it, by that limit; its owner may lower it)",
             jobreq_has(req, JR_MAX_RUNTIME_S) ? "raising" : "taking away", j->id);
    return authz_check(who, AUTHZ_RAISE_RUNTIME, what, e);
}

bool job_ctl_update_runs(const job *j)
{
    return j->state == JS_RUNNING || j->state == JS_SUSPENDED || (job_state_waiting(j->state) && j->shim_pid > 0);
}

size_t job_ctl_say_changes(const job_req *a, const job_req *b, uint64_t changed, char *out, size_t len)
{
    size_t n = 0;
    *out = 0;
    for (size_t i = 0; i < job_ctl_update_nfields && n < len; i++)
        if (changed >> job_ctl_update_fields[i] & 1) {
            if (n && n + 2 < len)
                n += (size_t)snprintf(out + n, len - n, ", ");
            n += say_change(a, b, job_ctl_update_fields[i], out + n, n < len ? len - n : 0);
        }
    return n;
}

int job_ctl_update(job *j, const caller *who, job_req *req, uint64_t changed, jerr *e)
{
    bool running = job_ctl_update_runs(j);
    bool waiting = job_in_queue(j) || j->state == JS_PENDING || j->state == JS_HELD;
    /* its state in the refusals below: one still QUEUED whose shim is starting it runs already */
    const char *state = running && job_state_waiting(j->state) ? "starting" : job_state_name(j->state);
    if (!running && !waiting)
        return jerr_http(e, 409, "%s is %s; only a waiting, held, running or suspended job can be updated", named(j),
                         job_state_name(j->state));
    const uint64_t deps = 1ull << JR_AFTER | 1ull << JR_AFTER_ANY; /* the jobs, and all or any one of them */
    if (running && (changed & deps))
        return jerr_http(e, 409, "%s is %s; its dependencies (after) cannot change once it runs: those it "
                                 "was started after held then", named(j), state);
    if (running)
        for (size_t i = 0; i < job_ctl_update_nfields; i++) {
            enum jobreq_id f = job_ctl_update_fields[i];
            if (f != JR_MAX_RUNTIME_S && (changed >> f & 1))
                return jerr_http(e, 409, "%s is %s; %s cannot change once it runs (what it was started with "
                                         "holds until it ends): only max_runtime_s can",
                                 named(j), state, jobreq_fields[f].key);
        }
    if ((changed >> JR_PRIORITY & 1) && req->priority > j->req.priority &&
        authz_check(who, AUTHZ_RAISE_PRIORITY, "raising a job's priority (its owner may lower it)", e) < 0)
        return -1;
    if ((changed >> JR_MAX_RUNTIME_S & 1) && job_ctl_may_raise_runtime(j, req, who, e) < 0)
        return -1;
    if ((changed >> JR_MAX_RUNTIME_S & 1) && !jobreq_has(&j->req, JR_MAX_RUNTIME_S) &&
        !jobreq_has(req, JR_MAX_RUNTIME_S))
        changed &= ~(1ull << JR_MAX_RUNTIME_S); /* (none taken out of none) */
    /* its dependencies as a submission's (resolved in its owner's sight, no cycle), then the same
     * jobs named otherwise (a prefix, a name) are no change */
    if ((changed & deps) && waiting && depend_check_change(j, req, who, e) < 0)
        return -1;
    if ((changed >> JR_AFTER & 1) && same_after(&j->req, req))
        changed &= ~(1ull << JR_AFTER);
    if (j->req.after_any == req->after_any)
        changed &= ~(1ull << JR_AFTER_ANY);
    if ((changed >> JR_SCHEDULE_AT & 1) && !j->req.schedule_at && !req->schedule_at)
        changed &= ~(1ull << JR_SCHEDULE_AT); /* (none taken out of none) */
    if (!changed)
        return 0;
    if (waiting && submit_check_change(req, j->owner_uid, j->owner_gid, changed, e) < 0)
        return -1;
    /* (a suspended job's shim keeps its clock stopped: the new limit counts once it is resumed) */
    if (running && job_launch_runtime(j, job_launch_runtime_s(req), j->state == JS_SUSPENDED, e) < 0)
        return -1;
    char what[512];
    job_ctl_say_changes(&j->req, req, changed, what, sizeof what);
    if (changed & deps)
        depend_unlink(j); /* (linked to the new ones by depend_changed, below) */
    jobreq_free(&j->req);
    j->req = *req;
    *req = (job_req){0};
    if (changed >> JR_SCHEDULE_AT & 1) {
        /* a job in the queue waits for its new time (or none: QUEUED); a pending or held one is
         * sent by it when it is let go (depend_release, job_ctl_release) */
        j->scheduled_ms = j->req.schedule_ms;
        j->joined_ms = qclock_now(); /* its place in the queue: from now, or from its new time */
        if (j->state == JS_SCHEDULED || j->state == JS_QUEUED || j->state == JS_PREEMPTED)
            j->state = job_state_after_hold(false, job_ran_before(j), j->scheduled_ms, now_ms());
    }
    job_event(j, JE_UPDATED, (int64_t)who->uid, "by uid %u: %s", (unsigned)who->uid, what);
    job_save(j);
    if ((changed >> JR_SCHEDULE_AT & 1) && j->req.singleton)
        depend_single_changed(j); /* one sent to a later time holds its name no more (or holds it now) */
    if (changed & deps)
        depend_changed(j); /* waits again, goes, or is canceled, as a job submitted so */
    state_want(WANT_SCHEDULE);
    log_info("job %s updated by uid %u: %s", j->id, (unsigned)who->uid, what);
    return 0;
}

int job_ctl_suspend(job *j, uid_t by, jerr *e)
{
    if (j->state != JS_RUNNING || j->shim_pid <= 0)
        return refuse(j, "suspended", "a running", e);
    if (freeze(j, true, e) < 0)
        return -1;
    j->state = JS_SUSPENDED;
    j->suspended_since_ms = now_ms();
    j->stopped_by = by; /* while SUSPENDED: who suspended it */
    char why[300];
    job_ctl_reason(j, why, sizeof why);
    job_event(j, JE_SUSPENDED, (int64_t)by, "%s", why);
    job_save(j);
    log_info("job %s SUSPENDED by uid %u", j->id, (unsigned)by);
    return 0;
}

int job_ctl_resume(job *j, uid_t by, jerr *e)
{
    if (j->state != JS_SUSPENDED)
        return refuse(j, "resumed", "a suspended", e);
    int64_t since = j->suspended_since_ms;
    if (job_launch_thaw(j, e) < 0)
        return -1;
    char moved[96] = "";
    if (job_launch_runtime_s(&j->req))
        snprintf(moved, sizeof moved, "; its time limit moved by the %.1f s suspended",
                 since > 0 ? (double)(now_ms() - since) / 1000.0 : 0.0);
    job_event(j, JE_RESUMED, (int64_t)by, "resumed by uid %u%s", (unsigned)by, moved);
    job_save(j);
    log_info("job %s resumed by uid %u", j->id, (unsigned)by);
    return 0;
}

void job_ctl_resume_job(job *j)
{
    if ((j->state != JS_RUNNING && j->state != JS_SUSPENDED) || j->shim_pid <= 0 || j->w_pid.fd < 0)
        return;
    bool want = j->state == JS_SUSPENDED;
    int f = job_freeze_state(j);
    if (f < 0 || f == (int)want) {
        /* the freezer as the row says, but joblet may have died between the word that stops
         * the shim's clock and the freeze: the word again, or the limit would wait forever.
         * Told to every shim, a row without a limit too (0: none): joblet may also have died
         * between an update's word (rnx job update --max-runtime) and its commit, and the
         * shim would hold a limit no row has */
        jerr re = {0};
        if (f >= 0 && job_launch_runtime(j, job_launch_runtime_s(&j->req), want, &re) < 0)
            log_warn("job %s: at start, its run-time limit could not be told again: %s", j->id, re.msg);
        return;
    }
    jerr e = {0};
    if (freeze(j, want, &e) < 0) {
        log_err("job %s: %s at start as its row says: %s", j->id, want ? "cannot freeze it" : "cannot thaw it",
                e.msg);
        return;
    }
    job_event(j, want ? JE_SUSPENDED : JE_RESUMED, -1, "%s at joblet's start: its cgroup was %s, its row says %s",
              want ? "frozen again" : "thawed", want ? "not frozen" : "frozen", job_state_name(j->state));
    job_save(j);
    log_warn("job %s: %s at start (its %s was not recorded when joblet stopped)", j->id,
             want ? "frozen again" : "thawed", want ? "resume" : "suspend");
}

void job_ctl_resume_all(void)
{
    for (size_t i = 0; i < core.njobs; i++)
        job_ctl_resume_job(core.jobs[i]);
}

/* A suspended job thawed to be requeued, whose requeue failed: frozen again, suspended as it was
 * (since, the time suspended before, who suspended it). */
static void refreeze(job *j, int64_t since, int64_t suspended, int64_t held_by, const char *why)
{
    jerr fe = {0};
    if (j->state != JS_RUNNING || j->shim_pid <= 0 || freeze(j, true, &fe) < 0) {
        log_err("job %s: its requeue failed (%s) and it cannot be frozen again: %s; it runs", j->id, why,
                fe.msg[0] ? fe.msg : job_state_name(j->state));
        return;
    }
    j->state = JS_SUSPENDED;
    j->suspended_since_ms = since > 0 ? since : now_ms();
    j->suspended_ms = suspended;
    j->stopped_by = held_by;
    job_event(j, JE_SUSPENDED, held_by, "frozen again: the requeue it was thawed for failed (%s)", why);
    job_save(j);
    log_warn("job %s: its requeue failed (%s); SUSPENDED again", j->id, why);
}

/* "COMPLETED (exit), exit code 0, ended 2026-11-30T10:00:00.000Z": an ended run, as its
 * requeue's event keeps it */
static void say_end(const job *j, char *d, size_t len)
{
    size_t l = (size_t)snprintf(d, len, "%s", job_state_name(j->state));
    if (j->end_reason && l < len)
        l += (size_t)snprintf(d + l, len - l, " (%s)", j->end_reason);
    if (j->has_exit && l < len)
        l += (size_t)snprintf(d + l, len - l, ", exit code %d", j->exit_code);
    if (j->signal && l < len)
        l += (size_t)snprintf(d + l, len - l, ", signal %s", j->signal_name ? j->signal_name : "?");
    if (!j->started_ms && l < len)
        l += (size_t)snprintf(d + l, len - l, ", never started");
    char at[64] = "?";
    if (j->ended_ms)
        format_ms(j->ended_ms, at, sizeof at);
    if (l < len)
        l += (size_t)snprintf(d + l, len - l, ", ended %s", at);
    /* what the run used, kept here: the job's usage is the next run's (sacct's per-run lines) */
    char used[300];
    job_run_used(j, used, sizeof used);
    if (*used && l < len)
        l += (size_t)snprintf(d + l, len - l, ", %s", used);
    if (j->error && l < len)
        snprintf(d + l, len - l, ": %.300s", j->error);
}

/* Slurm's scontrol requeue of a finished batch job: back in the queue (HELD with hold) with its
 * id, history, /work and logs, its runs counted one more (docs/batch.md, "Requeue of an ended
 * job"). What its end decided stays decided: rnx job wait answered, the jobs waiting on it let
 * go or canceled; those still waiting on it (for another of their dependencies) wait for its next
 * end (depend_requeued). Refused for what its end decided whole (a workflow's state, an array's
 * counts) and for what it needs to run that is gone. */
static int requeue_ended(job *j, uid_t by, bool hold, jerr *e)
{
    const char *was = job_state_name(j->state);
    if (j->wf_id[0])
        return jerr_http(e, 409, "%s is %s, a job of workflow %.8s: the workflow's state and the jobs that "
                                 "require it were decided on its end, and are not taken back; an ended workflow's "
                                 "job is not requeued (a running one is): submit the workflow again (rnx workflow "
                                 "run ...)", named(j), was, j->wf_id);
    if (j->array_id[0])
        return jerr_http(e, 409, "job %s is %s, task %lld of array %.8s: the array's counts and state were taken "
                                 "from its end, and are not taken back; an ended task is not requeued (a running "
                                 "one is, and so are an array's running tasks: rnx job requeue %.8s): submit it "
                                 "again (rnx job run ...)", j->id, was, (long long)j->array_task, j->array_id,
                         j->array_id);
    if (j->req.nafter && !j->after_met)
        return jerr_http(e, 409, "%s is %s and ended before its dependencies (--after) held; an ended job is "
                                 "requeued only once they held (or without any): submit it again (rnx job run "
                                 "--after=...)", named(j), was);
    if (jobs_uid_taken(j))
        return jerr_http(e, 409, "%s cannot run again now: uid %u, which it ran as (one of jobs.uid_range_start's, "
                                 "its /work is owned by it), is another job's now; requeue it once that job ended, "
                                 "or submit it again", named(j), (unsigned)j->uid);
    if (submit_check_again(j, e) < 0)
        return -1;
    char end[700];
    say_end(j, end, sizeof end);
    bool single = j->req.singleton && j->name;
    job_rewait(j);
    j->ended_held = false; /* (requeued: what held it is the requeue's now) */
    /* a singleton waits for its turn again (depend_decide); its place in the queue is from now,
     * as a released job's (job.h: joined_ms), not its submission's */
    j->state = hold ? JS_HELD : job_state_after_hold(single, false, j->scheduled_ms, now_ms());
    if (hold)
        j->stopped_by = by; /* who holds it (job_ctl_release: an admin's hold stays an admin's) */
    j->joined_ms = qclock_now();
    job_event(j, JE_REQUEUED, (int64_t)by, "requeued by uid %u after its end (run %u: %s): %s", (unsigned)by,
              j->preemptions, end, hold ? "held until released" : job_state_name(j->state));
    job_save(j);
    depend_requeued(j); /* the jobs still waiting on it wait for its next end */
    if (!hold && single)
        depend_decide(j);
    state_want(WANT_SCHEDULE);
    log_info("job %s: requeued by uid %u after its end (%s): %s", j->id, (unsigned)by, end, job_state_name(j->state));
    return 0;
}

int job_ctl_may_requeue(const job *j, const caller *who, jerr *e)
{
    if (!job_state_terminal(j->state))
        return 0;
    char what[300];
    /* canceled under an admin's hold: back in the queue it would run (or wait held by its owner),
     * the release its owner was refused */
    if (j->ended_held) {
        snprintf(what, sizeof what, "requeuing job %.8s, canceled while an admin held it (an admin's hold; its owner "
                                    "releases only its own holds, and so does not requeue what ended under one)", j->id);
        if (authz_check(who, AUTHZ_RELEASE_ADMIN_HOLD, what, e) < 0)
            return -1;
    }
    if (j->req.priority <= 0)
        return 0;
    /* an admin's raise was for the run it had; its owner's requeue would keep it for every run
     * after, which no submission of theirs could ask for */
    snprintf(what, sizeof what, "priority: requeuing job %.8s, which ended, at priority %lld (above 0: it would run "
                                "again before everyone's and may preempt theirs; any user may give 0 or less, at a "
                                "new submission: rnx job run --priority=0 ...)", j->id, (long long)j->req.priority);
    if (authz_check(who, AUTHZ_RAISE_PRIORITY, what, e) < 0) {
        snprintf(e->field, sizeof e->field, "priority");
        return -1;
    }
    return 0;
}

int job_ctl_requeue(job *j, uid_t by, bool hold, jerr *e)
{
    /* A Slurm task runs in Slurm's allocation, for as long as its task process lives
     * (slurm_task.h): joblet's queue would run it again as a job of its own, outside Slurm's
     * cgroups and limits and past the step's end. Requeuing it is Slurm's. */
    if (j->slurm.set) {
        char t[64];
        slurmcg_text(&j->slurm, t, sizeof t);
        return jerr_http(e, 409, "job %s is Slurm task %s: Slurm runs it, and requeues it (scontrol requeue); "
                                 "joblet's queue would run it outside Slurm's allocation", j->id, t);
    }
    /* Slurm's scontrol requeue takes an ended batch job too (docs/batch.md, "Requeue of an
     * ended job") */
    if (job_state_terminal(j->state))
        return requeue_ended(j, by, hold, e);
    if (j->state != JS_RUNNING && j->state != JS_SUSPENDED)
        return refuse(j, "requeued", "a running, suspended or ended", e);
    if (j->preempting)
        return jerr_http(e, 409, "%s is being stopped to go back to the queue already", named(j));
    /* what a suspended job was: frozen again if the requeue fails (a refused request changes
     * nothing; its suspension is an admin's) */
    bool was_suspended = j->state == JS_SUSPENDED;
    int64_t since = j->suspended_since_ms, suspended = j->suspended_ms, held_by = j->stopped_by;
    if (thaw_to_stop(j, by, e) < 0)
        return -1;
    j->requeue_asked = true;
    j->requeue_hold = hold;
    if (job_launch_requeue(j, by, e) < 0) {
        j->requeue_asked = j->requeue_hold = false;
        if (was_suspended)
            refreeze(j, since, suspended, held_by, e->msg);
        return -1;
    }
    job_event(j, JE_REQUEUED, (int64_t)by, "requeue asked by uid %u%s: SIGTERM, SIGKILL after %llus, then back in "
                                           "the queue with its id and place", (unsigned)by, hold ? " (held)" : "",
              (unsigned long long)core.cfg.stop_grace_s);
    log_info("job %s: requeue asked by uid %u%s", j->id, (unsigned)by, hold ? " (held)" : "");
    return 0;
}

void job_ctl_reason(const job *j, char *out, size_t len)
{
    *out = 0;
    if (j->state == JS_HELD && j->array && arrays_task_held(j->array, (uint32_t)j->array_task)) {
        char by[40] = "";
        if (j->array->held_by >= 0)
            snprintf(by, sizeof by, " by uid %lld", (long long)j->array->held_by);
        snprintf(out, len, "held with its array %.8s, held%s: it waits until the array is released (rnx job release "
                           "%.8s)", j->array->id, by, j->array->id);
    } else if (j->state == JS_HELD) {
        snprintf(out, len, "held by uid %lld: it waits until released (rnx job release %.8s)", (long long)j->stopped_by,
                 j->id);
    } else if (j->state == JS_SUSPENDED) {
        size_t n = (size_t)snprintf(out, len, "suspended by uid %lld", (long long)j->stopped_by);
        for (size_t i = 0; i < j->gpus.n && n < len; i++)
            n += (size_t)snprintf(out + n, len - n, "%s%d", i ? "," : "; holds GPUs ", j->gpus.g[i].index);
        if (n < len)
            snprintf(out + n, len - n, " (rnx job resume %.8s)", j->id);
    }
}
