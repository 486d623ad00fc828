/* Jobs that wait for other jobs: `rnx job run --after=ID[:STATE]` (docs/batch.md),
 * and the step shared with workflows (core/workflow.c) that releases or cancels a waiting job.
 *
 * A job with `after` starts PENDING. Each job it depends on keeps the seqs of the jobs that wait
 * on it (job.dependents), so a job that ends decides exactly those, each once: a job nobody
 * waits on costs nothing more when it ends, and 10,000 jobs waiting on one are decided in one
 * pass over that list. The rule is depend_rule.h's, the same as a workflow's.
 *
 * A job may only depend on jobs that exist when it is submitted (refs are resolved to full ids
 * then), so at submission every edge points from a newer job to an older one and no cycle can
 * form. A waiting job's `after` may be replaced later (rnx job update --after): that change is
 * refused when the job would wait for itself, directly or through others (depend_check_change).
 *
 * The dependencies live in the request (its `after`, full ids), so they outlive a kill -9 of
 * joblet: at start depend_resume_all links them again and decides every PENDING job by what
 * ended while joblet was down. Once they held, a job or an array keeps that (after_met, in its
 * row, written with the state that let it go; a HELD job's too, as they hold while it is held):
 * it is never decided again, by a restart or a release, so the jobs it named may be deleted
 * (Slurm: a dependency satisfied is gone). */
#ifndef JOBLET_DEPEND_H
#define JOBLET_DEPEND_H

#include <sys/types.h>

#include "../common/err.h"
#include "authz.h"
#include "depend_rule.h"
#include "job.h"

/* The one place a reference of `after` is resolved (a full id, a unique prefix, a name, as
 * jobs_find reads them), among the jobs the caller may see; each item's job becomes that full
 * id. A job the caller may not see is refused exactly as one that does not exist (no leak of
 * its existence): 400 on field "after". for_owner: as is the owner of a job another changes (an
 * admin's update): a refusal says whose sight it was. */
int depend_resolve(job_req *req, const caller *as, bool for_owner, jerr *e);
/* How many dependencies the decisions on waiting jobs looked at since the start, and jobs of a
 * singleton's name looked at for its holder (GET /metrics: joblet_dependency_looks_total): what
 * they cost grows with what changed, and not with how many jobs or tasks are kept (a job waiting
 * on 64 arrays looks at the one that changed and the next it still waits for; 1,000 singletons
 * let go at once look through their name's jobs once, not each). */
uint64_t depend_looked(void);
/* A new job with `after` or singleton (submit_create): PENDING, linked to the jobs it waits on, and
 * decided at once (those that ended already may release or cancel it). */
void depend_submitted(job *j);
/* j started or ended (the settle step): the jobs waiting on it are decided. Nothing to do
 * when none waits. */
void depend_job_changed(job *j);
/* The k-th job j waits on (req.after[k]), NULL when it is gone or j is not linked (not
 * PENDING since joblet started). */
const job *depend_on(const job *j, size_t k);
/* The state of the k-th thing j waits on (a job, or an array: its tasks' state together), "DELETED"
 * when it went (j not linked, one decided before joblet's start: found by its id); NULL past its
 * `after`. */
const char *depend_on_state(const job *j, size_t k);
/* The same for any request's `after` and its links (an array's). */
const char *depend_on_state_req(const job_req *req, const uint64_t *after_seq, size_t k);
/* What a PENDING job waits for, in words, for its wait_reason: "waiting for job 1a2b3c4d to
 * end COMPLETED (it is RUNNING)". */
void depend_describe(const job *j, char *out, size_t len);
/* The same for any request's `after` and its links (an array's). */
void depend_describe_req(const job_req *req, const uint64_t *after_seq, char *out, size_t len);
/* An array may wait as a job does (rnx job run --array --after): linked and decided at once; no
 * task of it is made while it waits (arrays_offer), and all are canceled when it never can go. */
void depend_array_submitted(struct jarray *a);
/* An array released from its hold (rnx job release): decided as at submission (one held is not
 * canceled while held, as a held job is not). */
void depend_array_released(struct jarray *a);
/* An array started or ended (its tasks together: the settle step, a cancel): the jobs and arrays
 * waiting on it are decided. */
void depend_array_changed(struct jarray *a);
/* Task by task (rnx job run --array --after=ARRAY:corr, Slurm's aftercorr): each task of the
 * array waits for the task of the same id of the array it names to end COMPLETED, and is canceled
 * when that one ended otherwise (a task that array does not have waits for it whole, as ok).
 * Its needs that are not task by task hold for the array as a whole first
 * (depend_array_submitted). A task whose own task ended goes at once, ahead of those before it
 * in the list that still wait (arrays_ready_push, as each ends: depend_task_ended); still bounded
 * by the array's %N, its owner's limits, hold and cancel. (A task that array does not have, and
 * one whose own task was canceled before it was made, which ends no job, go in the list's order.)
 * Whether a's tasks wait so: */
bool depend_tasks_by_task(const struct jarray *a);
/* A task of an array (j) started or ended (the settle step, before depend_array_changed): the
 * arrays waiting on that array task by task queue their task of j's id to be looked at. O(those
 * arrays); nothing when none. */
void depend_task_ended(job *j);
/* How a task that can never go is canceled: before it is made (its own task never ran either),
 * made and canceled so its reason shows in its status (its own task ran), or with every task
 * left (the array it waits on was deleted: the ends of its tasks went with it). */
enum depend_task_end { DEPEND_TASK_UNMADE, DEPEND_TASK_MADE, DEPEND_TASK_ALL };
/* Task t's own verdict; CANCEL: why says which task and how it ended, *end how t is canceled;
 * WAIT: why says what it waits for. */
enum depend_verdict depend_task_verdict(const struct jarray *a, uint32_t t, enum depend_task_end *end, char *why,
                                        size_t len);
/* How many of the next n tasks (at most 64) in the list's order may start now: those at the
 * cursor that go, up to the first that does not (n itself when a's tasks do not wait task by
 * task). Those further on that go are the pass's (core/queue.c, a->go). */
uint32_t depend_tasks_ready(const struct jarray *a, uint32_t n);
/* What the next task waits for, in words, or NULL when it waits for no task. */
const char *depend_tasks_describe(const struct jarray *a, char *out, size_t len);
/* One at a time by name (rnx job run --singleton, Slurm's --dependency=singleton): a job with
 * singleton waits PENDING while another job of its owner and name holds the name (one that
 * started and has not ended, or another singleton let go into the queue, which goes next); the
 * waiting ones go one at a time, oldest first. Waiting jobs are found by name (an index of them,
 * common/idindex.h), and the holder among the jobs of that name (jobs_named), never by a scan of
 * every job kept. j started, ended, was held or requeued (the settle step, job_ctl): when jobs of
 * its owner wait on its name, the oldest that can go goes. */
void depend_single_changed(job *j);
/* At a singleton job's launch (core/queue.c): true when another job of its owner and name was
 * started meanwhile (one without singleton, which does not wait): it is PENDING again, with why
 * in its history, and goes when that one ends. A check made when it was released, held again as
 * it starts. */
bool depend_single_blocked(job *j);
/* What jobs.keep_ended_s (core/retention.c) keeps past its age: the jobs and arrays (by seq) that a
 * job or array still waiting names in its `after` (not decided yet, held or not; an array's tasks
 * waiting task by task). Deleted, each would cancel its waiter ("it was deleted") though it went
 * as needed (Slurm never cancels a job for a dependency purged by MinJobAge). Sorted; one pass
 * over the PENDING and HELD jobs (the table's lists of them: jobs_in_state) and the arrays kept. */
typedef struct depend_named {
    uint64_t *seq;
    size_t n;
} depend_named;
void depend_named_collect(depend_named *d);
bool depend_named_has(const depend_named *d, uint64_t seq);
void depend_named_free(depend_named *d);
/* Counts the links made (a job or an array linked to what its `after` names: a submission, rnx
 * job update --after, a requeue, the start's): a depend_named collected when it said g still
 * holds every job and array named while it says g (it may hold some named no more: their waiter
 * decided since). Retention keeps one across the turns of a pass while this stays. */
uint64_t depend_named_gen(void);
/* A PENDING job with `after` decided now (a held one released: its dependencies may have
 * ended while it was held; it is linked to them while held, restarts included). */
void depend_decide(job *j);
/* rnx job update --after (core/job_ctl.c): req, j's request with its new `after`, resolved as at
 * submission (depend_resolve, in the sight of j's owner, whoever asks: its owner by a certificate
 * within that certificate's, authz_as_account) and checked: refused for a workflow's job and an
 * array's task (409: their dependencies are the workflow's, the array's), and when j would wait
 * for itself, directly or through what the jobs named wait for (400 on field "after"), and when
 * that check would walk more than 1,000 dependencies (400 on "after", naming the bound: an
 * update's cost does not grow with the graph it names; docs/batch.md). */
int depend_check_change(const job *j, job_req *req, const caller *who, jerr *e);
/* j's `after` is about to be replaced: j is taken out of the lists of those it named (each update
 * would otherwise add to them, and each of their ends decide it once more). */
void depend_unlink(job *j);
/* j's `after` was replaced (its request holds the new one): linked and decided as a job submitted
 * so (depend_submitted: a SCHEDULED, QUEUED or PREEMPTED job waits PENDING again until they hold,
 * one that can never go is CANCELED). With none left (nor singleton), a PENDING job joins the
 * queue; a HELD one is decided when it is released. */
void depend_changed(job *j);
/* An ended job put back in the queue (rnx job requeue: job_ctl.c): the jobs and arrays still
 * waiting on it (PENDING or HELD, their `after` never held: another of their dependencies had not
 * ended as they need) are linked to it again, so that its next end decides them; those its end
 * decided already (let go or canceled) stay so. O(jobs waiting + arrays kept): no index of who
 * names an ended job is kept. */
void depend_requeued(job *j);
/* At start, after the jobs are loaded: links every PENDING (or HELD) job with `after` that never
 * held, and every waiting array, and decides them (in seq order: of singleton jobs waiting on one
 * name, the oldest goes). */
void depend_resume_all(void);
/* At exit: what the index of waiting singleton jobs holds. */
void depend_free_all(void);

/* The shared step (command-line jobs and workflows): a PENDING job's dependencies hold: it
 * joins the queue (SCHEDULED when it starts later), with `detail` in its history. */
void depend_release(job *j, const char *detail);
/* ... or one never can: CANCELED, end reason "dependency", error `why` (which decides its own
 * dependents in turn, in the settle step). */
void depend_cancel(job *j, const char *why);

#endif
