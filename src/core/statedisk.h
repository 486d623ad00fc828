/* Room on the state filesystem (the state directory's disk: the database, job directories and
 * output, the owners' /work images, volumes). joblet keeps jobs.state_reserve of it free for its
 * database: growth that users ask for (a job, a workflow, an upload, a volume, a runtime
 * build) is refused below it, and the shims stop writing job output below half of it
 * (exec/logwriter.h), so that the state changes of jobs already running can still be saved. */
#ifndef JOBLET_CORE_STATEDISK_H
#define JOBLET_CORE_STATEDISK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "job.h"

/* Bytes free on the state filesystem for joblet (root), UINT64_MAX when it cannot be read. */
uint64_t statedisk_free(void);

/* 0 when the state filesystem keeps jobs.state_reserve free after `need` more bytes; else -1
 * and a 507 naming what was refused (`what`: "new jobs", "this upload", ...), the room left
 * and the reserve. jobs.state_reserve 0: never refused. */
int statedisk_room(uint64_t need, const char *what, jerr *e);

/* ---- each user's log budget (jobs.max_log_bytes_per_user; exec/logwriter.h: log_budget) ----
 * <state>/logbudget/<uid>, one file per owner (root's jobs: one owner), shared with the shims. */

/* At start, once the jobs are loaded: every owner's budget set to jobs.max_log_bytes_per_user,
 * and what their jobs' output files hold on disk counted as used. */
void statedisk_budgets_init(void);
/* The owner's budget file for a job's spec, made when missing: 0 and its path, or -1 when
 * there is none (jobs.max_log_bytes_per_user 0, or it cannot be made: said in the log). */
int statedisk_budget_path(uid_t owner, char *out, size_t len);
/* The job is being deleted: what its output files hold is given back to its owner's budget. */
void statedisk_budget_release(const job *j);

#endif
