/* Ended jobs deleted jobs.keep_ended_s after their end (retention.h).
 *
 * A shared machine's history grows by every job ever run: each kept job costs the daemon's
 * memory (~1.5 KiB), its database row and events, its log files, and one of its owner's
 * limits.max_jobs_per_user. Slurm's controller forgets a job MinJobAge after its end; here an
 * admin sets how long an ended job stays, and joblet deletes it then exactly as `rnx job
 * delete` does (its row, events, directory, logs, its owner's log budget given back), oldest
 * first, one slice a loop turn: what the loop does per turn stays bounded however much history
 * is due at once (a daemon started after months down, a new setting).
 *
 * A task of an array is kept until its whole array ended, and a workflow's job until its
 * workflow ended: a sweep's or a pipeline's history goes whole, not task by task under a
 * running one. A job or array a waiting job or array names in its `after` is kept until that
 * waiter is decided (depend_named): deleted, it would cancel the waiter though it went as needed.
 * An array with no job left (every task deleted, or canceled before any ran)
 * goes keep_ended_s after it is first found so. */
#include "retention.h"

#include "../common/log.h"
#include "../common/util.h"
#include "array_ctl.h"
#include "authz.h"
#include "config.h"
#include "job_ctl.h"
#include "state.h"

#define RETENTION_SLICE 48             /* jobs deleted in one turn (rnx job delete-all's slice) */
#define RETENTION_EVERY_MS (60 * 1000) /* between passes that found nothing more to delete */

static int64_t due_ms = 1;  /* the first pass at the first turn */
static uint64_t deleted;    /* by the passes since the last line logged */

int64_t retention_due_ms(void)
{
    return core.cfg.keep_ended_s ? due_ms : 0;
}

/* The next pass after one that found nothing more: a minute, or sooner for a short keep (a
 * job kept 2 s goes within 1 s of that). */
static int64_t next_pass(int64_t now, int64_t keep_ms)
{
    int64_t every = keep_ms / 2 < RETENTION_EVERY_MS ? keep_ms / 2 : RETENTION_EVERY_MS;
    return now + (every < 1000 ? 1000 : every);
}

void retention_tick(int64_t now)
{
    if (!core.cfg.keep_ended_s || now < due_ms)
        return;
    int64_t keep_ms = (int64_t)core.cfg.keep_ended_s * 1000;
    caller joblet = authz_local(0, 0); /* every user's jobs */
    size_t n = 0;
    bool more = false;
    jerr e = {0};
    if (job_ctl_delete_ended(&joblet, now - keep_ms, RETENTION_SLICE, &n, &more, &e) < 0) {
        /* a full disk (507) or another process's lock: nothing of the slice went; again later */
        log_warn("jobs.keep_ended_s: ended jobs could not be deleted: %s", e.msg);
        due_ms = next_pass(now, keep_ms);
        return;
    }
    deleted += n;
    if (more) {
        due_ms = now; /* the next turn: one slice a turn */
        return;
    }
    if (array_ctl_reap(&joblet, keep_ms, now, &e) < 0)
        log_warn("jobs.keep_ended_s: arrays with no job left could not be deleted: %s", e.msg);
    if (deleted)
        log_info("jobs.keep_ended_s: %llu jobs deleted, ended more than %llu s ago", (unsigned long long)deleted,
                 (unsigned long long)core.cfg.keep_ended_s);
    deleted = 0;
    due_ms = next_pass(now, keep_ms);
}
