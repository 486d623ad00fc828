/* Job arrays' control (array_ctl.h). */
#include "array_ctl.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/jobreq.h"
#include "../common/log.h"
#include "../common/util.h"
#include "depend.h"
#include "job_ctl.h"
#include "job_events.h"
#include "jobs.h"
#include "state.h"
#include "submit.h"
#include "workflow.h"

/* Into the array's own history (job_events.h): "held by uid 1000: tasks 3-5, 2 of them". */
static void say(jarray *a, enum job_event ev, uid_t by, const arrayspec *tasks, const char *verb, uint64_t acted)
{
    char named[800] = ""; /* (with the rest, within an event's 1,024 bytes) */
    if (tasks) {
        arrayspec_format_cut(tasks, named, sizeof named);
        job_event_array(a, ev, (int64_t)by, "%s by uid %u: tasks %s named, %llu of them", verb, (unsigned)by, named,
                        (unsigned long long)acted);
    } else {
        job_event_array(a, ev, (int64_t)by, "%s by uid %u: %llu of its tasks", verb, (unsigned)by,
                        (unsigned long long)acted);
    }
}

/* What the tasks named are, when none could be acted on: " (those named: 2 CANCELED, 1 COMPLETED)"
 * (at most ARRAY_CTL_LOOK_MAX looked at; "" beyond, or with none named). */
static void named_states(const jarray *a, const arrayspec *tasks, char *out, size_t len)
{
    out[0] = 0;
    if (!tasks || !tasks->count || tasks->count > ARRAY_CTL_LOOK_MAX)
        return;
    uint64_t n[JS_COUNT + 1] = {0}; /* (JS_COUNT: deleted) */
    for (uint64_t k = 0; k < tasks->count; k++) {
        int s = array_ctl_task_state(a, arrayspec_task(tasks, k));
        n[s == ARRAY_CTL_DELETED ? JS_COUNT : s]++;
    }
    size_t o = (size_t)snprintf(out, len, " (those named:");
    const char *sep = " ";
    for (int s = 0; s <= JS_COUNT && o < len; s++)
        if (n[s]) {
            o += (size_t)snprintf(out + o, len - o, "%s%llu %s", sep, (unsigned long long)n[s],
                                  s == JS_COUNT ? "DELETED" : job_state_name((enum job_state)s));
            sep = ", ";
        }
    if (o + 1 < len)
        snprintf(out + o, len - o, ")");
}

int array_ctl_act(jarray *a, const arrayspec *tasks, const enum job_state *only, enum array_ctl_act act, uid_t by,
                  uint64_t *acted, jerr *e)
{
    *acted = 0;
    int64_t n = only ? arrays_cancel_unmade_in(a, tasks, *only, by, e) : arrays_cancel_unmade(a, tasks, by, e);
    if (n < 0)
        return -1;
    *acted += (uint64_t)n;
    uint64_t busy = 0;
    for (size_t i = 0; i < a->ntasks; i++) {
        job *j = a->tasks[i];
        if (!j || job_state_terminal(j->state) || (tasks && !arrayspec_has(tasks, (uint32_t)j->array_task)) ||
            (only && j->state != *only))
            continue;
        bool waiting = job_in_queue(j) || j->state == JS_PENDING || j->state == JS_HELD;
        if (act == ARRAY_CTL_CANCEL && !waiting && !job_ctl_requeuing(j)) { /* (one being requeued would wait) */
            busy++;
            continue;
        }
        /* a task stopping already is stopped, unless that stop is its requeue's: then the
         * stop ends it there (job_ctl_stop), or it would run again once the array was stopped */
        bool stopped = j->state == JS_STOPPING && !j->preempting;
        jerr je = {0};
        int rc = act == ARRAY_CTL_KILL ? job_ctl_kill(j, by, &je)
                 : act == ARRAY_CTL_STOP && !waiting ? (stopped ? 0 : job_ctl_stop(j, by, &je))
                                                     : job_ctl_cancel(j, by, &je);
        if (rc == 0)
            (*acted)++;
        else
            log_warn("array %s: task %lld: %s", a->id, (long long)j->array_task, je.msg);
    }
    depend_array_changed(a); /* ended by this (its tasks not started canceled): who waits on it */
    workflow_array_changed(a); /* a workflow's array: the jobs requiring it, the workflow's state */
    if (*acted)
        say(a, JE_STOPPING, by, tasks, act == ARRAY_CTL_CANCEL ? "canceled" : act == ARRAY_CTL_STOP ? "stopped" : "killed",
            *acted);
    if (!*acted) {
        char states[200];
        named_states(a, tasks, states, sizeof states);
        return jerr_http(e, 409, "array %s: no task %s%s%swas left to %s%s", a->id, tasks ? "named " : "",
                         only ? job_state_name(*only) : "", only ? " " : "",
                         act == ARRAY_CTL_CANCEL ? "cancel" : act == ARRAY_CTL_STOP ? "stop" : "kill",
                         busy ? " (those named run: stop them with rnx job stop)" : states);
    }
    return 0;
}

int array_ctl_signal(jarray *a, const arrayspec *tasks, const enum job_state *only, int sig, bool all, uid_t by,
                     uint64_t *acted, jerr *e)
{
    if (sig == SIGKILL)
        return array_ctl_act(a, tasks, only, ARRAY_CTL_KILL, by, acted, e);
    *acted = 0;
    for (size_t i = 0; i < a->ntasks; i++) {
        job *j = a->tasks[i];
        if (!j || job_state_terminal(j->state) || j->shim_pid <= 0 ||
            (tasks && !arrayspec_has(tasks, (uint32_t)j->array_task)) || (only && j->state != *only))
            continue;
        jerr je = {0};
        if (job_ctl_signal(j, by, sig, all, &je) == 0)
            (*acted)++;
        else
            log_warn("array %s: task %lld: %s", a->id, (long long)j->array_task, je.msg);
    }
    if (!*acted)
        return jerr_http(e, 409, "array %s: no task %s%s%sruns to be sent a signal", a->id, tasks ? "named " : "",
                         only ? job_state_name(*only) : "", only ? " " : "");
    return 0;
}

int array_ctl_run(jarray *a, const arrayspec *tasks, enum array_ctl_run act, bool hold, const caller *who,
                  uint64_t *acted, jerr *e)
{
    static const char *const verbs[] = {"suspend", "resume", "requeue"};
    *acted = 0;
    uint64_t refused = 0;
    for (size_t i = 0; i < a->ntasks; i++) {
        job *j = a->tasks[i];
        if (!j || (tasks && !arrayspec_has(tasks, (uint32_t)j->array_task)))
            continue;
        bool runs = j->state == JS_RUNNING, suspended = j->state == JS_SUSPENDED;
        if (act == ARRAY_CTL_SUSPEND ? !runs : act == ARRAY_CTL_RESUME ? !suspended : !runs && !suspended)
            continue;
        if (act == ARRAY_CTL_REQUEUE && suspended && !authz_may(who, AUTHZ_SUSPEND)) {
            refused++; /* (it would run again: its suspension, an admin's, undone) */
            continue;
        }
        jerr je = {0};
        int rc = act == ARRAY_CTL_SUSPEND  ? job_ctl_suspend(j, who->uid, &je)
                 : act == ARRAY_CTL_RESUME ? job_ctl_resume(j, who->uid, &je)
                                           : job_ctl_requeue(j, who->uid, hold, &je);
        if (rc == 0)
            (*acted)++;
        else
            log_warn("array %s: task %lld: %s", a->id, (long long)j->array_task, je.msg);
    }
    static const enum job_event evs[] = {JE_SUSPENDED, JE_RESUMED, JE_REQUEUED};
    static const char *const done[] = {"suspended", "resumed", "requeue asked"};
    if (*acted)
        say(a, evs[act], who->uid, tasks, act == ARRAY_CTL_REQUEUE && hold ? "requeue (held) asked" : done[act], *acted);
    if (!*acted)
        return jerr_http(e, refused ? 403 : 409, "array %s: no task %swas left to %s%s", a->id, tasks ? "named " : "",
                         verbs[act], refused ? " (those named are suspended, and requeuing one undoes an admin's "
                                               "suspension: root's)"
                                     : act == ARRAY_CTL_RESUME  ? " (none is SUSPENDED)"
                                     : act == ARRAY_CTL_SUSPEND ? " (none is RUNNING)"
                                                                : " (none runs or is suspended)");
    return 0;
}

/* Tasks named in a hold that are not made yet: made now, each a job of its own, HELD (as Slurm's
 * `scontrol hold 123_5` splits the task out of the array's record), so that the array's other
 * tasks go on and that one waits until released. Not while the array waits for its dependencies
 * (a task made waits for nothing: released, it would run before them), nor a task that waits
 * for its own task (--after=ARRAY:corr, the same), nor while the array is held or canceled
 * whole (its tasks are held, or never made, with it). At most ARRAY_CTL_HOLD_MAKE at once, checked
 * before anything is done: each becomes a job (the array's others cost nothing until they run).
 * The number of such tasks named, or -1 with e set. */
#define ARRAY_CTL_HOLD_MAKE 1000
static int64_t unmade_named(jarray *a, const arrayspec *tasks, uint32_t *out, jerr *e)
{
    int64_t n = 0;
    /* range by range of those named (arrayspec_task(tasks, k) looks through the ranges before k's:
     * a list of 256 ranges cost 256 looks a task) */
    for (size_t q = 0; q < tasks->n; q++) {
        for (uint64_t k = 0, c = arrayspec_range_count(&tasks->r[q]); k < c; k++) {
            uint32_t t = tasks->r[q].lo + (uint32_t)k * tasks->r[q].step;
            bool made;
            if (arrayspec_index(a->spec, t) < 0 || (arrays_task(a, t, &made), made) ||
                arrayspec_has(arrays_skip(a), t))
                continue;
            /* one that waits for its own task (--after=ARRAY:corr) waits as a task not made: made now,
             * it would wait for nothing, and run once released whatever its own task did */
            char why[300];
            enum depend_task_end end;
            if (depend_tasks_by_task(a) && depend_task_verdict(a, t, &end, why, sizeof why) != DEPEND_GO)
                return jerr_http(e, 409, "array %s: task %u is not made until its own task lets it go (%s); hold the "
                                         "whole array meanwhile", a->id, t,
                                 *why ? why : "it waits task by task");
            if (n == ARRAY_CTL_HOLD_MAKE)
                return jerr_http(e, 409, "array %s: more than %d of the tasks named are not started yet; name at most %d "
                                         "of them at once, or hold the whole array", a->id, ARRAY_CTL_HOLD_MAKE,
                                 ARRAY_CTL_HOLD_MAKE);
            out[n++] = t;
        }
    }
    if (n && (a->waiting || a->held || arrays_canceled(a)))
        return jerr_http(e, 409, "array %s: tasks not started yet are %s", a->id,
                         arrays_canceled(a) ? "canceled with the array"
                         : a->held         ? "held with the whole array already"
                                           : "made only once the jobs it waits for have ended (hold the whole "
                                             "array meanwhile)");
    /* all of them or none: found midway, those before it were held and the rest left to run, the
     * hold answered as done */
    uint32_t bad;
    if (n && !arrays_ahead_ok_all(a, out, (size_t)n, &bad))
        return jerr_http(e, 409, "tasks: array %s: task %u cannot be held before it starts: the tasks kept out of "
                                 "the list's order are too scattered already (at most %d ranges are kept; hold the "
                                 "whole array, or name fewer ranges); none was held",
                         a->id, bad, ARRAYSPEC_MAX_RANGES);
    return n;
}

/* Each of the n tasks made and held (unmade_named found them); the number done, and e set when
 * one could not be (its account being looked up, the room of tasks kept out of order full). */
static uint64_t hold_unmade(jarray *a, const uint32_t *ts, int64_t n, uid_t by, jerr *e)
{
    uint64_t done = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t t = ts[i];
        if (!arrays_ahead_ok(a, t)) {
            jerr_http(e, 409, "tasks: array %s: task %u cannot be held before it starts: the tasks kept out of the "
                              "list's order are too scattered already (at most %d ranges are kept; hold the whole "
                              "array, or name fewer ranges)", a->id, t, ARRAYSPEC_MAX_RANGES);
            break;
        }
        job *j = submit_task(a, t, e);
        if (!j) {
            char why[sizeof e->msg];
            snprintf(why, sizeof why, "%s", e->msg);
            jerr_http(e, e->http ? e->http : 500, "task %u could not be made to be held: %s", t, why);
            break;
        }
        jerr he = {0};
        if (job_ctl_hold(j, by, &he) < 0) { /* (a task just made waits in the queue: not refused) */
            log_err("array %s: task %u made to be held, but: %s", a->id, t, he.msg);
            *e = he;
            break;
        }
        done++;
    }
    return done;
}

int array_ctl_hold(jarray *a, const arrayspec *tasks, bool hold, const caller *who, uint64_t *acted, jerr *e)
{
    *acted = 0;
    uid_t by = who->uid;
    uint32_t *unmade = NULL;
    int64_t nunmade = 0;
    /* an array an admin holds whole: its tasks too are an admin's to release (as a task held so is,
     * job_ctl.h), refused before anything is let go */
    if (!hold && a->held && a->held_by >= 0 && (uid_t)a->held_by != a->owner_uid) {
        char what[200];
        snprintf(what, sizeof what, "releasing %s array %s, held by uid %lld (an admin's hold; its owner releases "
                                    "only its own holds)", tasks ? "tasks of" : "", a->id, (long long)a->held_by);
        if (authz_check(who, AUTHZ_RELEASE_ADMIN_HOLD, what, e) < 0)
            return -1;
    }
    /* of an array held whole, tasks not made yet released from that hold one by one (Slurm's
     * scontrol release 123_[3-5] splits them out of the array's record), or held with it again:
     * kept as ranges of its list's places (arrays.h: released), bounded whatever its size; its
     * whole hold again (rnx job hold ID) holds those released too */
    uint64_t apart = 0;
    if (a->held && tasks && !arrays_ended(a) && !arrays_canceled(a)) {
        if (!hold && depend_tasks_by_task(a))
            return jerr_http(e, 409, "array %s: its tasks wait task by task for their own tasks (--after=ARRAY:corr): "
                                     "they are released only with the whole array (rnx job release %.8s)", a->id, a->id);
        if ((!hold || arrays_released(a)->n) && arrays_released_set(a, tasks, !hold, &apart, e) < 0)
            return -1;
    } else if (a->held && !tasks && hold && arrays_released(a)->n) {
        uint64_t n = arrays_released_left(a, NULL, UINT64_MAX);
        if (arrays_set_held(a, true, by, e) < 0) /* (held as it was, by whom it was; none apart now) */
            return -1;
        (*acted)++;
        job_event_array(a, JE_HELD, (int64_t)by, "held whole again by uid %u: its %llu tasks not made yet that were "
                        "released from the hold one by one are held with it", (unsigned)by, (unsigned long long)n);
    }
    *acted += apart;
    if (hold && tasks && !apart) {
        unmade = xcalloc(ARRAY_CTL_HOLD_MAKE, sizeof *unmade);
        if ((nunmade = unmade_named(a, tasks, unmade, e)) < 0) {
            free(unmade);
            return -1;
        }
    }
    bool whole = !tasks && a->held != hold && !arrays_ended(a) && !arrays_canceled(a);
    if (whole) {
        if (arrays_set_held(a, hold, by, e) < 0)
            return -1;
        (*acted)++;
        log_info("array %s %s by uid %u", a->id, hold ? "held" : "released", (unsigned)by);
        job_event_array(a, hold ? JE_HELD : JE_RELEASED, (int64_t)by, hold ? "held by uid %u: no task is made until "
                        "it is released" : "hold released by uid %u", (unsigned)by);
        if (!hold)
            depend_array_released(a); /* (what it waits for ended as it cannot need while it was held) */
    }
    jerr refused = {0}; /* a task whose hold is an admin's, when it is all that was named */
    for (size_t i = 0; i < a->ntasks; i++) {
        job *j = a->tasks[i];
        if (!j || (tasks && !arrayspec_has(tasks, (uint32_t)j->array_task)))
            continue;
        bool can = hold ? job_in_queue(j) || j->state == JS_PENDING || (job_ctl_requeuing(j) && !j->requeue_hold)
                        : j->state == JS_HELD || (job_ctl_requeuing(j) && j->requeue_hold);
        jerr je = {0};
        if (can && (hold ? job_ctl_hold(j, by, &je) : job_ctl_release(j, who, &je)) == 0)
            (*acted)++;
        else if (can && je.http == 403 && !refused.http)
            refused = je;
    }
    jerr made = {0}; /* why a task not made yet could not be held */
    if (nunmade)
        *acted += hold_unmade(a, unmade, nunmade, by, &made);
    free(unmade);
    if (tasks && *acted) /* (the whole array's is said above) */
        say(a, hold ? JE_HELD : JE_RELEASED, by, tasks, hold ? "held" : "released", *acted);
    /* one not held: said, even when others were (answered as done, the owner would take a task
     * named, left to run, for held) */
    if (made.msg[0]) {
        if (*acted)
            jerr_http(e, made.http ? made.http : 500, "array %s: %llu of the tasks named held, not all: %s; those "
                                                      "after it were not held either",
                      a->id, (unsigned long long)*acted, made.msg);
        else
            *e = made;
        return -1;
    }
    if (!*acted && refused.http) {
        *e = refused;
        return -1;
    }
    if (!*acted)
        return jerr_http(e, 409, "array %s: no task %swas %s", a->id, tasks ? "named " : "",
                         hold ? "waiting to be held" : "held to be released");
    return 0;
}

int array_ctl_update(jarray *a, const caller *who, job_req *req, uint64_t changed, uint64_t *acted, jerr *e)
{
    *acted = 0;
    if (arrays_ended(a) || arrays_canceled(a))
        return jerr_http(e, 409, "array %s %s; nothing of it is left to update", a->id,
                         arrays_canceled(a) ? "was canceled" : "has ended");
    if ((changed >> JR_PRIORITY & 1) && req->priority > a->req.priority &&
        authz_check(who, AUTHZ_RAISE_PRIORITY, "raising an array's priority (its owner may lower it)", e) < 0)
        return -1;
    if ((changed >> JR_MAX_RUNTIME_S & 1) && !jobreq_has(&a->req, JR_MAX_RUNTIME_S) &&
        !jobreq_has(req, JR_MAX_RUNTIME_S))
        changed &= ~(1ull << JR_MAX_RUNTIME_S); /* (none taken out of none) */
    /* its running tasks' limits raised or taken away: refused before anything changes, rather
     * than the array's request changed and those tasks left as they were */
    for (size_t i = 0; i < a->ntasks && (changed >> JR_MAX_RUNTIME_S & 1); i++)
        if (a->tasks[i] && !job_state_terminal(a->tasks[i]->state) &&
            job_ctl_may_raise_runtime(a->tasks[i], req, who, e) < 0)
            return -1;
    if (!changed)
        return 0;
    if (submit_check_change(req, a->owner_uid, a->owner_gid, changed, e) < 0)
        return -1;
    uint64_t task_fields = changed & ~(1ull << JR_ARRAY);
    char was[2048], what[512];
    arrayspec_format(a->spec, true, was, sizeof was);
    job_ctl_say_changes(&a->req, req, task_fields, what, sizeof what); /* (before arrays_update takes req) */
    if (arrays_update(a, req, e) < 0) /* the tasks made from now on */
        return -1;
    (*acted)++;
    /* its tasks made and not ended, as `rnx job update` would change each: a waiting one every
     * field, a running, suspended or starting one its time limit only (the rest holds until it
     * ends) */
    for (size_t i = 0; i < a->ntasks && task_fields; i++) {
        job *j = a->tasks[i];
        if (!j || job_state_terminal(j->state))
            continue;
        bool running = job_ctl_update_runs(j);
        bool waiting = job_in_queue(j) || j->state == JS_PENDING || j->state == JS_HELD;
        uint64_t f = running ? task_fields & 1ull << JR_MAX_RUNTIME_S : waiting ? task_fields : 0;
        if (!f)
            continue;
        job_req nr;
        uint64_t ch;
        jerr je = {0};
        if (jobreq_apply(&j->req, &a->req, f, &nr, &ch, &je) < 0 || job_ctl_update(j, who, &nr, ch, &je) < 0)
            log_warn("array %s: task %lld keeps its request: %s", a->id, (long long)j->array_task, je.msg);
        else if (ch)
            (*acted)++;
        jobreq_free(&nr);
    }
    char now[2048];
    arrayspec_format(a->spec, true, now, sizeof now);
    job_event_array(a, JE_UPDATED, (int64_t)who->uid, "by uid %u: %s%s%s%s%s; %llu of its tasks made so far changed with it",
                    (unsigned)who->uid, strcmp(was, now) ? was : "", strcmp(was, now) ? " -> " : "",
                    strcmp(was, now) ? now : "", strcmp(was, now) && *what ? ", " : "", what,
                    (unsigned long long)(*acted - 1));
    log_info("array %s updated by uid %u (%s%s%s); %llu of its tasks made so far changed with it", a->id,
             (unsigned)who->uid, was, strcmp(was, now) ? " -> " : "", strcmp(was, now) ? now : "",
             (unsigned long long)(*acted - 1));
    return 0;
}

int array_ctl_update_tasks(const jarray *a, const arrayspec *tasks, jerr *e)
{
    if (tasks->count != 1) {
        char list[256];
        arrayspec_format_cut(tasks, list, sizeof list);
        return jerr_http(e, 400, "tasks [%s] of array %s: an array is updated whole (rnx job update %.8s), or one "
                                 "task made at a time by its own id (rnx job update %.8s_%u)", list, a->id, a->id,
                         a->id, tasks->r[0].lo);
    }
    uint32_t t = tasks->r[0].lo;
    int s = array_ctl_task_state(a, t);
    if (s == ARRAY_CTL_DELETED || s == (int)JS_CANCELED)
        return jerr_http(e, 409, "task %u of array %s %s: nothing of it is left to update", t, a->id,
                         s == ARRAY_CTL_DELETED ? "ended and its job was deleted" : "was canceled before it started");
    /* held apart (unmade_named): not while the array is held or waits, whole or task by task */
    char apart[200] = "";
    if (!a->held && !a->waiting && !depend_tasks_by_task(a))
        snprintf(apart, sizeof apart, ", or hold the task first (rnx job hold %.8s_%u makes it a job of its own, "
                                      "HELD), update it by its id, then release it", a->id, t);
    return jerr_http(e, 409, "task %u of array %s has not started yet: it has no request of its own (it is made, "
                             "from the array's, when the scheduler starts it), and nothing was changed; update the "
                             "array whole (rnx job update %.8s: every task not started gets it)%s", t, a->id, a->id,
                     apart);
}

/* An array's delete is committed before anything of it goes, as a job's (job_ctl.c): one the
 * database did not take leaves the array whole, in memory and on disk, and says why (507 when
 * the disk is full); a restart would bring back an array answered deleted. tasks: its tasks'
 * jobs deleted (committed) before. */
static int commit_delete(size_t tasks, jerr *e)
{
    if (state_commit_now(e) == 0)
        return 0;
    char msg[sizeof e->msg];
    snprintf(msg, sizeof msg, "%s", e->msg);
    if (tasks) { /* something was done: not a jerr_busy's "nothing was, ask again" (no Retry-After) */
        jerr_http(e, e->http, "%zu of its tasks' jobs were deleted, but not the array: %s", tasks, msg);
        e->code = 0;
        return -1;
    }
    return jerr_http(e, e->http, "no array was deleted: %s", msg);
}

int array_ctl_delete(jarray *a, size_t max, size_t *deleted, bool *more, jerr *e)
{
    *deleted = 0;
    *more = false;
    if (!arrays_ended(a))
        return jerr_http(e, 409, "array %s has tasks not ended; stop or cancel it before deleting it (rnx job cancel %.8s)",
                         a->id, a->id);
    size_t n = 0;
    job **v = xcalloc(max + 1, sizeof *v);
    for (size_t i = 0; i < a->ntasks && n < max; i++)
        if (a->tasks[i])
            v[n++] = a->tasks[i];
    int rc = n ? job_ctl_delete_many(v, n, e) : 0;
    free(v);
    if (rc < 0)
        return -1;
    *deleted = n;
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i]) {
            *more = true;
            return 0;
        }
    if (arrays_delete_row(a, e) < 0) /* busy ("ask again") only when no task's job went with it */
        return n ? -1 : db_busy_refusal(e, "deleted");
    if (commit_delete(n, e) < 0)
        return -1;
    workflow_forget_array(a); /* (a workflow's: dropped once it keeps nothing) */
    job_events_forget(a->id);
    arrays_delete_rest(a);
    return 0;
}

int array_ctl_reap(const caller *who, int64_t empty_for_ms, int64_t now, jerr *e)
{
    /* the rows in one transaction, then the arrays once it is committed; a row that cannot be
     * deleted takes the others back with it */
    size_t narr, n = 0;
    jarray **arrs = arrays_all(&narr);
    if (db_mark(core.db, e) < 0)
        return -1;
    jarray **gone = xcalloc(narr + 1, sizeof *gone);
    depend_named named = {0}; /* what retention keeps: arrays a waiting job or array names */
    if (empty_for_ms)
        depend_named_collect(&named);
    for (size_t i = 0; i < narr; i++) {
        jarray *a = arrs[i];
        if (!arrays_visible(a, who) || !arrays_ended(a) || depend_named_has(&named, a->seq))
            continue;
        if (a->nlinked) /* (a job of its is kept: arrays.h, counted as slots change) */
            continue;
        if (!a->empty_since_ms)
            a->empty_since_ms = now;
        if (empty_for_ms && (now - a->empty_since_ms < empty_for_ms || (a->wf && !workflow_ended(a->wf))))
            continue;
        if (arrays_delete_row(a, e) < 0) {
            db_undo(core.db);
            free(gone);
            depend_named_free(&named);
            return -1;
        }
        gone[n++] = a;
    }
    depend_named_free(&named);
    db_keep(core.db);
    if (n && commit_delete(0, e) < 0) {
        free(gone);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        workflow_forget_array(gone[i]);
        job_events_forget(gone[i]->id);
        arrays_delete_rest(gone[i]);
    }
    free(gone);
    return 0;
}

int array_ctl_task_state(const jarray *a, uint32_t t)
{
    bool made;
    const job *j = arrays_task(a, t, &made);
    if (j)
        return (int)j->state;
    if (made)
        return ARRAY_CTL_DELETED;
    if (arrays_canceled(a) || arrayspec_has(arrays_skip(a), t))
        return (int)JS_CANCELED;
    return (int)arrays_unmade_task_state(a, t); /* (one released from the array's whole hold: not HELD) */
}

const char *array_ctl_state_name(int s) { return s == ARRAY_CTL_DELETED ? "DELETED" : job_state_name((enum job_state)s); }

void array_ctl_look_before(const jarray *a, const arrayspec *tasks, array_ctl_look *l)
{
    *l = (array_ctl_look){0};
    if (!tasks || !tasks->count || tasks->count > ARRAY_CTL_LOOK_MAX)
        return;
    l->ids = xcalloc(tasks->count, sizeof *l->ids);
    l->was = xcalloc(tasks->count, sizeof *l->was);
    for (uint64_t k = 0; k < tasks->count; k++) {
        l->ids[l->n] = arrayspec_task(tasks, k);
        l->was[l->n] = array_ctl_task_state(a, l->ids[l->n]);
        l->n++;
    }
}

static int by_id(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

/* ids (n of them, sorted here) as "2-3,7". */
static char *ids_text(uint32_t *ids, size_t n)
{
    qsort(ids, n, sizeof *ids, by_id);
    size_t len = n * 12 + 1, o = 0;
    char *out = xmalloc(len);
    *out = 0;
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k + 1 < n && ids[k + 1] == ids[k] + 1)
            k++;
        o += (size_t)snprintf(out + o, len - o, k > i ? "%s%u-%u" : "%s%u", o ? "," : "", ids[i], ids[k]);
        i = k + 1;
    }
    return out;
}

size_t array_ctl_look_after(const jarray *a, const array_ctl_look *l, array_ctl_went **went)
{
    *went = NULL;
    if (!l->n)
        return 0;
    int *now = xcalloc(l->n, sizeof *now);
    bool *done = xcalloc(l->n, sizeof *done);
    uint32_t *ids = xcalloc(l->n, sizeof *ids);
    for (size_t i = 0; i < l->n; i++)
        now[i] = array_ctl_task_state(a, l->ids[i]);
    size_t ng = 0;
    *went = xcalloc(l->n, sizeof **went);
    /* groups in the order their first task was named: those that changed come first */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < l->n; i++) {
            if (done[i] || (pass == 0) != (l->was[i] != now[i]))
                continue;
            size_t m = 0;
            for (size_t k = i; k < l->n; k++)
                if (!done[k] && l->was[k] == l->was[i] && now[k] == now[i]) {
                    done[k] = true;
                    ids[m++] = l->ids[k];
                }
            (*went)[ng++] = (array_ctl_went){l->was[i], now[i], ids_text(ids, m)};
        }
    free(now);
    free(done);
    free(ids);
    return ng;
}

void array_ctl_went_free(array_ctl_went *went, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(went[i].tasks);
    free(went);
}

void array_ctl_look_free(array_ctl_look *l)
{
    free(l->ids);
    free(l->was);
    *l = (array_ctl_look){0};
}
