/* Job arrays as JSON (array_json.h). */
#include "array_json.h"

#include <stdio.h>

#include "../common/jsonx.h"
#include "../common/util.h"
#include "../sched/sched.h"
#include "depend.h"
#include "job_detail_json.h"
#include "job_json.h"
#include "workflow.h"

/* Why its next task waits, in a few words (the scheduler's reason for that task). */
static const char *wait_words(const jarray *a, char *buf, size_t len)
{
    if (a->held && arrays_released(a)->n && arrays_released_left(a, NULL, 1)) {
        char tasks[64];
        arrays_released_format(a, tasks, sizeof tasks);
        snprintf(buf, len, "held, but for its tasks %s released from the hold: they start as room comes", tasks);
        return buf;
    }
    if (a->held)
        return "held";
    if (!a->ix_unmade) /* none left to make (what the scheduler's pass last said of it is old) */
        return NULL;
    if (a->spec->throttle && a->pass_runs >= a->spec->throttle) { /* (as the scheduler's last pass counted) */
        snprintf(buf, len, "its %%%u: %u of its tasks run, the most it may at once", a->spec->throttle, a->pass_runs);
        return buf;
    }
    const char *by_task = depend_tasks_describe(a, buf, len);
    if (by_task)
        return by_task;
    switch (a->wait_why) {
    case SW_SCHEDULED: return "its --schedule time has not come";
    case SW_MAX_RUNNING: return "jobs.max_running jobs run, or as many as joblet's open-file limit allows";
    case SW_USER_LIMIT: return "its owner holds limits.max_gpus_per_user GPUs";
    case SW_USER_RUNNING: return "its owner runs limits.max_running_per_user jobs";
    case SW_HEAD: case SW_PREEMPTING: return "first in line: too few free GPUs";
    case SW_HEAD_HELD: return "first in line: the GPUs it can use are all held";
    case SW_FILES: return "joblet has too few descriptors free for a launch (its open-file limit); tried again each second";
    case SW_NET_FULL: return "its network has no free address: all are taken by the jobs on it";
    case SW_RESERVED: case SW_NO_ROOM: return "too few free GPUs";
    case SW_UNPLACEABLE: return "too few usable GPUs of its kind";
    case SW_UNSAVED:
        return "joblet's database cannot be written: no more of its tasks are made until it can (is the state "
               "filesystem full?)";
    default: return NULL;
    }
}

static void ref_of(const jarray *a, char *out, size_t len)
{
    char spec[2048];
    arrayspec_format(a->spec, true, spec, sizeof spec);
    snprintf(out, len, "%.8s_[%s]", a->id, spec);
}

/* Why the array's next task waits (its "wait"): its cancel, its hold, its dependencies or the
 * scheduler's reason; NULL when nothing is said. words and deps hold what it is made of. */
static const char *array_why(const jarray *a, char *words, size_t wlen, char *deps, size_t dlen)
{
    const char *why = wait_words(a, words, wlen);
    if (a->canceled_by == ARRAYS_CANCELED_DEPENDENCY)
        why = a->canceled_why ? a->canceled_why : "canceled: its dependencies could never hold";
    else if (a->canceled_by == ARRAYS_CANCELED_UNMAKEABLE)
        why = a->canceled_why ? a->canceled_why : "canceled: its tasks could not be made";
    else if (a->held)
        ; /* (held first, as a job held while PENDING: what it waits for is its `after`) */
    else if (a->waiting && a->wf_id[0] && !a->req.nafter)
        why = "waiting for the jobs it requires in its workflow to end as it needs";
    else if (a->waiting) {
        depend_describe_req(&a->req, a->after_seq, deps, dlen);
        why = deps;
    }
    return why;
}

json_t *array_json(const jarray *a)
{
    arrays_counts c;
    arrays_count(a, &c);
    json_t *counts = json_object();
    for (int s = 0; s < JS_COUNT; s++)
        if (c.n[s])
            json_object_set_new(counts, job_state_name((enum job_state)s), json_integer((json_int_t)c.n[s]));
    char spec[2048], ref[2100];
    arrayspec_format(a->spec, true, spec, sizeof spec);
    ref_of(a, ref, sizeof ref);
    char words[200], deps[600];
    const char *why = array_why(a, words, sizeof words, deps, sizeof deps);
    json_t *args = json_array();
    for (size_t i = 0; i < a->req.nargs; i++)
        json_array_append_new(args, json_string(a->req.args[i]));
    json_t *arr = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:b,s:o,s:o}", "spec", spec, "ref", ref, "tasks",
                            (json_int_t)a->spec->count, "throttle", (json_int_t)a->spec->throttle, "min",
                            (json_int_t)a->spec->min, "max", (json_int_t)a->spec->max, "made",
                            (json_int_t)(a->made + arrays_ahead(a)->count),
                            "counts", counts, "deleted", (json_int_t)c.deleted, "held", a->held, "canceled_by",
                            a->canceled_by >= 0 ? json_integer(a->canceled_by) : json_null(), "wait",
                            why ? json_string(why) : json_null());
    if (a->held && arrays_released(a)->n) { /* its tasks released from the hold one by one (made or not) */
        char rel[1024];
        arrays_released_format(a, rel, sizeof rel);
        json_object_set_new(arr, "released", json_string(rel));
    } else
        json_object_set_new(arr, "released", json_null());
    json_t *o = json_pack("{s:s,s:s,s:o?,s:s,s:I,s:s,s:o,s:o,s:o}", "id", a->id, "kind", "array", "name",
                          a->name ? json_string(a->name) : NULL, "status", job_state_name(arrays_state(a, &c)),
                          "owner_uid", (json_int_t)a->owner_uid, "command", a->req.command ? a->req.command : "",
                          "args", args, "request", jobreq_to_json(&a->req, 0), "array", arr);
    json_object_set_new(o, "number", json_integer((json_int_t)a->seq)); /* its tasks' SLURM_ARRAY_JOB_ID */
    json_object_set_new(o, "after", job_json_after(&a->req, a->after_seq));
    json_object_set_new(o, "after_any", json_boolean(a->req.after_any));
    /* a workflow's job (docs/workflows.md "Arrays in a workflow") */
    const workflow *wf = a->wf;
    json_object_set_new(o, "workflow", wf && a->wf_index >= 0 && (size_t)a->wf_index < wf->n
                                           ? json_pack("{s:s,s:O?,s:s}", "id", wf->id, "name",
                                                       json_object_get(wf->doc, "name"), "job",
                                                       wf->jobs[a->wf_index].name)
                                           : json_null());
    jx_set_time_or_null(o, "created_at", a->created_ms);
    /* its run: from its first task's start to its last task's end (once every task ended), or to
     * the cancel of its last tasks when they were never made */
    int64_t started = 0, ended = a->canceled_ms;
    for (size_t i = 0; i < a->ntasks; i++) {
        const job *t = a->tasks[i];
        if (t && t->started_ms > 0 && (!started || t->started_ms < started))
            started = t->started_ms;
        if (t && t->ended_ms > ended)
            ended = t->ended_ms;
    }
    jx_set_time_or_null(o, "started_at", started);
    jx_set_time_or_null(o, "ended_at", arrays_ended(a) ? ended : 0);
    int ec = arrays_exit_code(a, &c);
    json_object_set_new(o, "exit_code", ec >= 0 ? json_integer(ec) : json_null());
    return o;
}

json_t *array_task_json(const jarray *a, uint32_t t)
{
    char id[64];
    snprintf(id, sizeof id, "%.8s_%u", a->id, t);
    bool canceled = arrays_canceled(a) || arrayspec_has(arrays_skip(a), t);
    /* what its array waits for (its --after, its --schedule, its hold, its %N): it was "as room
     * comes" whatever held it */
    char words[200], deps[600], reason[800];
    bool alone = canceled && !arrays_canceled(a); /* (canceled by name: ID_7, ID_[3-5]) */
    const char *why = alone ? NULL : array_why(a, words, sizeof words, deps, sizeof deps);
    enum job_state st = canceled ? JS_CANCELED : arrays_unmade_task_state(a, t);
    enum depend_task_end end;
    if (!canceled && a->corr && !a->waiting && !a->held && st == JS_PENDING) {
        /* its own: what its own task is (the array's words are of the next task in the list) */
        enum depend_verdict v = depend_task_verdict(a, t, &end, deps, sizeof deps);
        snprintf(reason, sizeof reason, "not started yet%s: %s", v == DEPEND_CANCEL ? ", to be canceled" : "", deps);
    } else if (!canceled && a->corr && !a->waiting && !a->held && st == JS_QUEUED)
        snprintf(reason, sizeof reason, "not started yet: its own task completed; %s",
                 a->spec->throttle && a->pass_runs >= a->spec->throttle
                     ? "it starts as room comes under the array's %N"
                     : "it starts as room comes");
    else if (why)
        snprintf(reason, sizeof reason, "%s (its array: %s)", canceled ? "canceled before it started" : "not started yet",
                 why);
    else
        snprintf(reason, sizeof reason, "%s",
                 canceled ? "canceled before it started" : "not started yet: the array's tasks start as room comes");
    return json_pack("{s:s,s:s,s:s,s:{s:s,s:I,s:s,s:I},s:b,s:s}", "id", id, "kind", "task", "status",
                     job_state_name(st), "array", "id", a->id, "task",
                     (json_int_t)t, "ref", id, "number", (json_int_t)a->seq, "made", 0, "wait_reason", reason);
}

json_t *array_json_detail(const jarray *a)
{
    json_t *o = json_object();
    json_object_set_new(o, "request", job_detail_json_request(&a->req));
    job_detail_json_events(o, a->id);
    return o;
}
