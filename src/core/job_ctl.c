/* What a user asks of a job (job_ctl.h). */
#include "job_ctl.h"
#include "arrays.h"

#include "../common/log.h"
#include "../common/util.h"
#include "events.h"
#include "jobs.h"
#include "job_launch.h"
#include "job_logs.h"
#include "job_term.h"
#include "networks.h"
#include "settle.h"
#include "state.h"
#include "statedisk.h"
#include "workflow.h"
#include "workfs.h"

int job_ctl_stop(job *j, uid_t by, jerr *e)
{
    if (job_state_terminal(j->state) || j->state == JS_STOPPING)
        return jerr_http(e, 409, "job %s is %s; only a running job can be stopped", j->id, job_state_name(j->state));
    if (job_in_queue(j) || j->state == JS_PENDING) {
        j->stopped_by = by;
        job_finish(j, JS_CANCELED, "canceled");
        return 0;
    }
    return job_launch_stop(j, by, e);
}

int job_ctl_kill(job *j, uid_t by, jerr *e)
{
    if (job_state_terminal(j->state))
        return jerr_http(e, 409, "job %s is %s; only a running job can be killed", j->id, job_state_name(j->state));
    if (job_in_queue(j) || j->state == JS_PENDING) {
        j->stopped_by = by;
        job_finish(j, JS_CANCELED, "canceled");
        return 0;
    }
    return job_launch_kill(j, by, e);
}

int job_ctl_cancel(job *j, uid_t by, jerr *e)
{
    if (!job_in_queue(j) && j->state != JS_PENDING)
        return jerr_http(e, 409, "job %s is %s; only a pending, scheduled, queued or preempted job can be canceled%s",
                         j->id, job_state_name(j->state), job_state_terminal(j->state) ? "" : " (use stop)");
    j->stopped_by = by;
    job_finish(j, JS_CANCELED, "canceled");
    return 0;
}

/* Its row deleted, in the open transaction. */
static int delete_row(job *j, jerr *e)
{
    /* what its end still owes (its GPUs back, its workflow told) is done before it goes */
    if (j->settle)
        settle();
    if (db_delete_job(core.db, j->id, e) < 0) {
        log_err("%s", e->msg);
        return -1;
    }
    return 0;
}

/* Its row's delete committed: the job goes from memory and disk. */
static void delete_rest(job *j)
{
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    job_logs_detach(j);
    job_term_wake(j); /* (an ended job's waiters heard at its end already) */
    job_launch_forget(j);
    workflow_forget_job(j);
    arrays_forget_task(j);
    networks_release(j); /* (given back at its end already, unless it is deleted before the settle step) */
    statedisk_budget_release(j);
    workfs_remove(j->owner_uid, dir);
    char ev[80];
    snprintf(ev, sizeof ev, "{\"id\":\"%s\"}", j->id);
    events_publish("job_deleted", j->owner_uid, ev);
    jobs_remove(j);
    job_free(j);
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
        return jerr_http(e, 409, "job %s is %s; stop or cancel it before deleting it", j->id, job_state_name(j->state));
    if (delete_row(j, e) < 0 || commit_delete(e) < 0)
        return -1;
    delete_rest(j);
    return 0;
}

int job_ctl_delete_many(job **v, size_t n, jerr *e)
{
    for (size_t i = 0; i < n; i++)
        if (!job_state_terminal(v[i]->state))
            return jerr_http(e, 409, "job %s is %s; stop or cancel it before deleting it", v[i]->id,
                             job_state_name(v[i]->state));
    if (db_mark(core.db, e) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (delete_row(v[i], e) < 0) {
            db_undo(core.db);
            return -1;
        }
    db_keep(core.db);
    if (commit_delete(e) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        delete_rest(v[i]);
    return 0;
}

int job_ctl_delete_ended(const caller *who, size_t max, size_t *deleted, bool *more, jerr *e)
{
    /* the rows in one transaction, then the jobs once it is committed; a row that cannot be
     * deleted takes the slice's others back with it */
    size_t n = 0;
    *deleted = 0;
    *more = false;
    settle(); /* what the ended jobs still owe, first: not in the middle of the slice */
    if (db_mark(core.db, e) < 0)
        return -1;
    job **gone = xcalloc((max < core.njobs ? max : core.njobs) + 1, sizeof *gone);
    for (size_t i = core.njobs; i-- > 0;) {
        job *j = core.jobs[i];
        if (!authz_may_on(who, AUTHZ_OTHERS_JOBS, j->owner_uid) || !job_state_terminal(j->state))
            continue;
        if (n == max) {
            *more = true;
            break;
        }
        if (delete_row(j, e) < 0) {
            db_undo(core.db);
            free(gone);
            return -1;
        }
        gone[n++] = j;
        if (i > core.njobs) /* settling what it owed ended no job, but look again from the end */
            i = core.njobs;
    }
    db_keep(core.db);
    if (n && commit_delete(e) < 0) {
        free(gone);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        delete_rest(gone[i]);
    free(gone);
    *deleted = n;
    return 0;
}
