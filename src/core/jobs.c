/* The job table (jobs.h). */
#include "jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/idref.h"
#include "../common/log.h"
#include "../common/util.h"
#include "authz.h"
#include "job_events.h"
#include "job_row.h"
#include "state.h"

static bool visible(const job *j, const caller *c) { return authz_may_on(c, AUTHZ_OTHERS_JOBS, j->owner_uid); }

/* By id, name or unique id prefix (common/idref.h); a job the caller may not see matches
 * nothing, except that its full id is said to be another user's (rnx gpu list shows it). */
job *jobs_find(const char *ref, const caller *who, jerr *e)
{
    idref r;
    if (idref_start(&r, "job", "--name", ref, e) < 0)
        return NULL;
    for (size_t i = 0; i < core.njobs; i++) {
        job *j = core.jobs[i];
        if (idref_offer(&r, j->id, j->name, job_state_name(j->state), visible(j, who), j))
            break;
    }
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

job *jobs_by_seq(uint64_t seq)
{
    size_t i = by_seq(seq);
    return i < core.njobs && core.jobs[i]->seq == seq ? core.jobs[i] : NULL;
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
}

void jobs_remove(job *j)
{
    state_forget_job(j);
    for (size_t i = 0; i < core.nchanged; i++)
        if (core.changed[i] == j) {
            memmove(&core.changed[i], &core.changed[i + 1], (core.nchanged - i - 1) * sizeof *core.changed);
            core.nchanged--;
            break;
        }
    size_t i = by_seq(j->seq);
    if (i < core.njobs && core.jobs[i] == j) {
        memmove(&core.jobs[i], &core.jobs[i + 1], (core.njobs - i - 1) * sizeof *core.jobs);
        core.njobs--;
    }
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
                           .io_read_bytes = r->io_read_bytes, .io_write_bytes = r->io_write_bytes};
    j->gpus = r->gpus;
    j->preemptions = r->preemptions;
    j->preempting = r->preempting;
    j->requeue_asked = r->requeue_asked;
    j->requeue_hold = r->requeue_hold;
    j->suspended_ms = r->suspended_ms;
    j->suspended_since_ms = r->suspended_since_ms;
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

uid_t jobs_free_uid(uint64_t from)
{
    for (uint64_t k = 0; k < core.cfg.uid_range_size; k++) {
        uid_t uid = (uid_t)(core.cfg.uid_range_start + (from + k) % core.cfg.uid_range_size);
        bool taken = false;
        for (size_t i = 0; i < core.njobs && !taken; i++) {
            const job *o = core.jobs[i];
            taken = (o->uid == uid || o->sandbox_uid == uid) && !job_state_terminal(o->state);
        }
        if (!taken)
            return uid;
    }
    return (uid_t)(core.cfg.uid_range_start + from % core.cfg.uid_range_size); /* every uid busy: share */
}

void jobs_dir_of(const job *j, char *out, size_t len) { snprintf(out, len, "%s/%s", core.jobs_dir, j->id); }

int job_save(job *j)
{
    jerr e = {0};
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

void job_requeue(job *j)
{
    give_back_room(j);
    grant_list_free(&j->gpus); /* it holds none while it waits; the log keeps what it had */
    j->state = j->requeue_hold ? JS_HELD : JS_PREEMPTED;
    if (j->requeue_asked && !j->requeue_hold)
        j->stopped_by = -1;
    j->preempting = false;
    j->preemptions++;
    j->init_pid = 0;
    j->has_exit = false;
    j->signal = 0;
    free(j->signal_name);
    j->signal_name = NULL;
    free(j->end_reason);
    j->end_reason = xstrdup(j->requeue_asked ? "requeued" : "preempted");
    j->requeue_asked = j->requeue_hold = false;
    j->ended_ms = 0;
    j->started_ms = 0;
    /* The next run's shim writes these afresh; /work and the logs carry on (a checkpoint the
     * job wrote to /work is there when it runs again). */
    char dir[700], path[760];
    jobs_dir_of(j, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/status.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/started", dir);
    unlink(path);
    j->ev_wait = 0;
    job_save(j);
    job_event(j, JE_REQUEUED, -1, "run %u ended; waiting in the queue again", j->preemptions);
    log_info("job %s PREEMPTED (run %u ended); waiting in the queue again", j->id, j->preemptions);
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
