/* Ended jobs deleted jobs.keep_ended_s after their end (retention.h).
 *
 * A shared machine's history grows by every job ever run: each kept job costs the daemon's
 * memory (~1.5 KiB), its database row and events, its log files, and one of its owner's
 * limits.max_jobs_per_user. Slurm's controller forgets a job MinJobAge after its end; here an
 * admin sets how long an ended job stays, and joblet deletes it then exactly as `rnx job
 * delete` does (its row, events, directory, logs, its owner's log budget given back), in
 * submission order (seq: the table's order, not the order they ended in), one slice a loop turn:
 * what the loop does per turn stays bounded however much history is due at once (a daemon started
 * after months down, a new setting). A pass (its turns until one finds nothing more) walks the
 * table once: each turn goes on after the last job the turn before looked at (a cursor by seq)
 * and looks at RETENTION_LOOKS jobs at most, so 100,000 jobs kept ahead of those due (waiting,
 * running, an array's still going) are looked at once a pass, not once a turn. What waiters name
 * is collected once a pass, and again in a turn after a link was made (depend_named_gen).
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
#include "depend.h"
#include "job_ctl.h"
#include "state.h"

#define RETENTION_SLICE 48             /* jobs deleted in one turn (rnx job delete-all's slice) */
#define RETENTION_LOOKS 4096           /* jobs looked at in one turn, at most */
#define RETENTION_EVERY_MS (60 * 1000) /* between passes that found nothing more to delete */

static int64_t due_ms = 1;  /* the first pass at the first turn */
static uint64_t deleted;    /* by the passes since the last line logged */

/* The pass under way: where its next turn goes on (0: a pass starts), and what waiters named
 * when it was collected (named_gen: depend_named_gen then). */
static uint64_t pass_seq;
static depend_named named;
static uint64_t named_gen;
static bool named_set;

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

/* The pass is over (or given up): the next starts from the first job, with what waiters name
 * then. */
static void pass_end(int64_t now, int64_t keep_ms)
{
    pass_seq = 0;
    depend_named_free(&named);
    named_set = false;
    due_ms = next_pass(now, keep_ms);
}

void retention_tick(int64_t now)
{
    if (!core.cfg.keep_ended_s || now < due_ms)
        return;
    int64_t keep_ms = (int64_t)core.cfg.keep_ended_s * 1000;
    caller joblet = authz_local(0, 0); /* every user's jobs */
    if (!named_set || named_gen != depend_named_gen()) {
        /* (a job named by a waiter made since the set was collected is never deleted by it) */
        depend_named_free(&named);
        depend_named_collect(&named);
        named_gen = depend_named_gen();
        named_set = true;
    }
    job_ctl_walk walk = {.ended_before_ms = now - keep_ms, .named = &named, .next_seq = pass_seq,
                         .max_looks = RETENTION_LOOKS};
    size_t n = 0;
    bool more = false;
    jerr e = {0};
    if (job_ctl_delete_ended(&joblet, &walk, RETENTION_SLICE, &n, &more, &e) < 0) {
        /* a full disk (507) or another process's lock: nothing of the slice went; again later */
        log_warn("jobs.keep_ended_s: ended jobs could not be deleted: %s", e.msg);
        pass_end(now, keep_ms);
        return;
    }
    log_debug("jobs.keep_ended_s: a turn looked at %zu jobs from seq %llu, deleted %zu%s", walk.looked,
              (unsigned long long)pass_seq, n, more ? "; more next turn" : "; the pass is done");
    deleted += n;
    if (more) {
        pass_seq = walk.next_seq;
        due_ms = now; /* the next turn: one slice a turn */
        return;
    }
    if (array_ctl_reap(&joblet, keep_ms, now, &e) < 0)
        log_warn("jobs.keep_ended_s: arrays with no job left could not be deleted: %s", e.msg);
    if (deleted)
        log_info("jobs.keep_ended_s: %llu jobs deleted, ended more than %llu s ago", (unsigned long long)deleted,
                 (unsigned long long)core.cfg.keep_ended_s);
    deleted = 0;
    pass_end(now, keep_ms);
}
