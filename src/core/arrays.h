/* Job arrays (docs/batch.md): one request, one row and one object however many tasks it has;
 * its tasks become jobs only when the scheduler starts them (queue.c asks arrays_offer how many
 * may start now and submit_task to make each it starts), so a 100,000-task array costs what
 * one job does until its tasks run. A made task is an ordinary job that knows its array
 * (job.array, job.array_task) and sees its ids in JOBLET_ARRAY_* and SLURM_ARRAY_*. */
#ifndef JOBLET_ARRAYS_H
#define JOBLET_ARRAYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/arrayspec.h"
#include "../common/err.h"
#include "../common/idref.h"
#include "../common/jobreq.h"
#include "../common/jobstate.h"
#include "../store/db.h"
#include "authz.h"
#include "job.h"

struct workflow;

/* What the state of an array's tasks is, made or not. */
typedef struct arrays_counts {
    uint64_t n[JS_COUNT];      /* tasks by state; tasks not made count as arrays_unmade_state says, or
                                * CANCELED when canceled before they were made */
    uint64_t deleted;          /* made, ended and deleted since */
} arrays_counts;

typedef struct jarray {
    char id[37];
    uint64_t seq;              /* from the jobs' sequence: its place in the queue among jobs */
    char *name;
    uid_t owner_uid;
    gid_t owner_gid;
    job_req req;               /* every task's request (the array field in it too) */
    arrayspec *spec;           /* its task list, parsed from req.array: a block sized to its ranges
                                * (arrayspec_dup), never NULL; its throttle changes (arrays_update) */
    int64_t created_ms;
    uint64_t made;             /* the cursor: the tasks before the list's made-th place were made (or
                                * canceled before they were); the next in the list's order is there */
    arrayspec *skip;           /* tasks canceled before they were made: disjoint ranges kept as ahead's are
                                * (a run of one range of the list's tasks as one range of its step, one
                                * of step 1 also holding ids that are no task), never one of ahead's;
                                * rows saved before steps were kept have ranges of step 1 only */
    arrayspec *ahead;          /* tasks made out of the list's order, ahead of the cursor (--after=ARRAY:corr:
                                * a task whose own task completed goes before those that wait; tasks
                                * released from a whole hold one by one; disjoint ranges, a run of tasks of
                                * one range of the list made in a row kept as one range of its step, a range
                                * of step 1 also holding ids between its tasks that are no task, never one of
                                * skip's; saved as skip is; one the cursor passes is taken out when that keeps
                                * the ranges within ARRAYSPEC_MAX_RANGES) */
    /* Tasks further on whose own task ended (depend.c pushes them as each ends), to be looked at
     * by the scheduler's pass (queue.c): ready[ready_at..nready), in the order they ended; and
     * those the pass found may start (go): made before the cursor's when the cursor's waits. Not
     * saved: depend_resume_all finds them again at start, from the other array's ended tasks. */
    uint32_t *ready, ready_at, nready, ready_cap;
    uint32_t *go, ngo, go_cap;
    int64_t canceled_by;       /* uid: every task not made yet is canceled; -1 none; by joblet (why:
                                * canceled_why, kept in its row): ARRAYS_CANCELED_DEPENDENCY, its
                                * dependencies can never hold; ARRAYS_CANCELED_UNMAKEABLE, its tasks
                                * can never be made (a start that failed, as a job's start_failed) */
    char *canceled_why;
    int64_t canceled_ms;       /* when tasks not made yet were last canceled (all, or some by id; saved):
                                * the end of an array whose last tasks were never made; 0 never */
    bool held;                 /* no task of it is made while held (but those of released) */
    arrayspec *released;       /* while held: its tasks released one by one from that hold (rnx job release
                                * ID_[3-5], Slurm's scontrol release 123_[3-5]), by their places in the
                                * list (ranges of step 1, at most ARRAYS_RELEASED_MAX: what a request may
                                * keep is bounded whatever the array's size); made as room comes, as if
                                * the array were not held; a made one is split out of the hold. Saved in
                                * its row (schema 24); emptied when the array is released or held again */
    int64_t held_by;           /* while held: the uid that held it (its owner's hold, or an admin's:
                                * only an admin releases that, authz.h AUTHZ_RELEASE_ADMIN_HOLD);
                                * -1 none, or not known (a row from before schema 20) */
    job **tasks;               /* made tasks in the list's order (a task made ahead is put in its place);
                                * NULL once deleted */
    uint32_t *places;          /* each slot's place in the list (its task's), kept when its job is
                                * deleted: what a slot is found by (a run of deleted ones costs nothing) */
    size_t ntasks, cap;
    size_t nlinked;            /* slots of tasks not NULL: jobs it keeps */
    int64_t empty_since_ms;    /* when array_ctl_reap first found it ended with no job left (not saved:
                                * a restart counts jobs.keep_ended_s again); 0 not yet */
    /* The tasks whose jobs were deleted, by the state they ended in (only ended states), and the
     * highest exit code among them: Slurm keeps an array's record whole, so a FAILED task whose
     * job is deleted still makes the array FAILED (its state, exit code, `--after=ARRAY:ok`).
     * Counted when the job's row is deleted, in the same transaction, and kept in the array's row
     * (schema 20; tasks deleted before it are not known: they drop out of the counts). */
    uint64_t gone[JS_COUNT];
    int gone_exit;
    uint32_t active;           /* made tasks not ended: what %N bounds */
    bool started;              /* a task of it was launched (job_started), not just made: a task waits a
                                * loop turn or more between the two (its row committed first) */
    uint8_t wait_why;          /* why its next task waits (enum sched_wait), from the last pass */
    uint64_t pass;             /* the scheduler's pass that counted pass_runs (queue.c) */
    uint32_t pass_runs;        /* its tasks holding room, and those this pass lets start */
    uint64_t unsaved_pass;     /* the pass that found a task of its whose row is not committed yet */
    uint64_t lookup_since;     /* nsscache_gen() when its next task began to wait for its owner's
                                * account look-ups (queue.c: lookups_begin), 0 when it does not */
    /* its next task could not be made for now (queue.c: a full disk, a commit that failed; one that
     * never can be cancels the tasks left): the tries since the last warning logged, and when that
     * was (0 none since the last task made). Not saved. */
    uint32_t make_failures;
    int64_t make_warned_ms;
    /* rnx job run --array --after (core/depend.h): no task is made while it waits */
    bool waiting;
    int64_t joined_ms;         /* its submission or last release, a stamp of the queue's clock
                                * (qclock.h): its place in the queue (job.h) */
    bool after_met;            /* its `after` held once (it was let go): not decided again at a restart,
                                * tasks made or not; kept in its row, saved with the change that let it go */
    uint64_t *after_seq;       /* what it waits on, by seq (depend.c) */
    uint64_t after_removed;    /* core.removed when all of it was last seen there (depend.c) */
    uint64_t after_arrays;     /* bit k: its k-th need was linked to an array (or to nothing) */
    uint64_t *dependents;      /* the jobs and arrays that wait on it, by seq (depend.c) */
    uint32_t ndependents, dependents_cap;
    bool dependents_started;   /* its dependents were decided once it started (depend.c): the next
                                * time is its end, not each of its tasks' changes */
    uint64_t *by_task;         /* of those, the arrays that wait on it task by task (corr): told of each
                                * of its tasks as it ends (depend_task_ended) */
    uint32_t nby_task, by_task_cap;
    /* Its own tasks that wait task by task (corr: its `after` names an array so; set when that is
     * linked, arrays_corr_recount): how many of its tasks still to make (at the cursor and after
     * it, neither made ahead nor canceled) have their own task, in each array they wait on so,
     * kept and COMPLETED. Those count and list QUEUED, the rest PENDING (Slurm's PD, reason
     * Dependency): kept as such tasks end, are deleted, made or canceled (arrays_task_changed,
     * arrays_made, arrays_cancel_unmade), never by a look at every task; not saved (counted
     * again at start). A task whose id that array does not have waits for it whole: PENDING until
     * it is made. corr_told: the last tell that counted it (one tell, one count). */
    bool corr;
    uint64_t corr_ready, corr_told;
    uint32_t queue_position;
    /* a workflow's job (core/workflow.c): its tasks are not workflow jobs themselves */
    char wf_id[37];            /* "" none */
    int wf_index;              /* its place among the workflow's jobs; -1 none */
    struct workflow *wf;       /* linked at creation, or at start (workflow_resume_all) */
    bool ev_dirty;             /* its tasks changed since publish.c last looked */
    bool ev_listed;            /* in the list arrays_take_changed hands out */
    uint8_t ev_state;          /* its status + 1 as last published; 0 none */
    bool ev_canceled;          /* tasks not made were canceled: published even if its status stays
                                * (rnx job wait ID_T of one of them learns it ended) */
    /* what it counts for under its owner (arrays_unmade, arrays_jobless), as last counted */
    uint64_t ix_unmade;
    uint64_t ix_bytes;         /* its request's bytes (jobreq_bytes), once counted */
    bool ix_jobless;
    /* its counts once it ended (arrays_count_cached); counts_ok false: none kept */
    bool counts_ok;
    arrays_counts counts;
} jarray;

/* skip, ahead and released are each kept as a block sized to its ranges (arrayspec_dup), NULL
 * when empty (a plain array keeps none of them); read through these (the empty list for NULL),
 * written in arrays.c only. */
static inline const arrayspec *arrays_skip(const jarray *a) { return a->skip ? a->skip : &arrayspec_empty; }
static inline const arrayspec *arrays_ahead(const jarray *a) { return a->ahead ? a->ahead : &arrayspec_empty; }
static inline const arrayspec *arrays_released(const jarray *a) { return a->released ? a->released : &arrayspec_empty; }

#define ARRAYS_CANCELED_DEPENDENCY (-2)
#define ARRAYS_CANCELED_UNMAKEABLE (-3)
static inline bool arrays_canceled(const jarray *a) { return a->canceled_by != -1; }
/* Whether a task of it was made (in the list's order or ahead of it). */
static inline bool arrays_made_any(const jarray *a) { return a->made > 0 || arrays_ahead(a)->n > 0; }
/* Whether a task of it was launched: the array started, for `--after=ARRAY:started` and a
 * workflow's state. (After a restart, as its tasks kept say: tasks deleted are not counted.) */
static inline bool arrays_started(const jarray *a) { return a->started; }

/* A request with an array field, checked (submit.c: submit_array): the array made and its row
 * written (the caller commits), or NULL with e set. The request is taken over on success. */
jarray *arrays_create(job_req *req, uid_t uid, gid_t gid, jerr *e);
/* The array is job index of workflow wf (id wf_id): linked, the row saved; waiting: no task is
 * made until the workflow's engine releases it (arrays_release_wait). */
void arrays_set_workflow(jarray *a, struct workflow *wf, const char *wf_id, int index, bool waiting);
/* Takes back an array arrays_create made whose commit failed: out of the list, freed. */
void arrays_undo(jarray *a);
/* The tasks not made yet of the user's arrays (waiting, for limits.max_queued_per_user). */
uint64_t arrays_unmade(uid_t uid);
/* The bytes of those tasks' requests (each its array's jobreq_bytes): limits.max_request_bytes_per_user. */
uint64_t arrays_unmade_bytes(uid_t uid);
/* The user's ended arrays that keep no job (every task canceled before it was made, or their
 * jobs deleted): each counts one kept job for limits.max_jobs_per_user, as its row stays.
 * Both are counted per owner as arrays change (every change of an array in this file recounts
 * it), so a submission's limit check costs O(log owners), not O(arrays + task slots); at log
 * level debug each call checks the counts against a scan of every array and aborts on a
 * difference (a change that skipped them). */
uint64_t arrays_jobless(uid_t uid);

/* The scheduler's side (queue.c). How many of a's tasks could start in this pass: none while
 * held or canceled, at most its %N less runs (its tasks that hold room, and those the pass lets
 * start: a task made and held, or waiting again, takes no place, as in Slurm), at most what is
 * left. */
uint32_t arrays_offer(const jarray *a, uint32_t runs);
/* The id of the next task to make in the list's order (the cursor's): 0 and *task (tasks
 * canceled before they were made, and those made ahead, are passed over), or -1 when none is
 * left. */
int arrays_next(jarray *a, uint32_t *task);
/* The ids of the next tasks to make, in order, at most max (tasks canceled before they were made
 * or made ahead passed over, looking at most a few thousand places ahead): what --after=ARRAY:corr
 * looks at (depend.h). The number found. */
uint32_t arrays_upcoming(const jarray *a, uint32_t *tasks, uint32_t max);
/* That task was made as job j (submit_task): linked, counted under %N, the row saved. The
 * cursor's task moves the cursor; another goes into ahead (arrays_ahead_ok said it fits). */
void arrays_made(jarray *a, job *j);
/* Out of the list's order (--after=ARRAY:corr). Task t (of a's list) may go as its own task
 * ended: queued for the next pass unless it is at or before the cursor (the pass looks at the
 * cursor's task anyway), made, or canceled. O(ranges). */
void arrays_ready_push(jarray *a, uint32_t t);
/* The next task queued so to look at, still not made and not canceled: 0, or -1 none. */
int arrays_ready_pop(jarray *a, uint32_t *t);
/* t, popped, could not be made for now (its owner's account being looked up, a full disk: a
 * making that may pass later): first again, no pass asked (the one that retries the making
 * comes: queue.c's make_failed). Without it, t waited for the cursor, maybe for ever. */
void arrays_ready_again(jarray *a, uint32_t t);
/* The pass found t may start: offered (a->ngo) and made by arrays_go_take; not added when ahead
 * has no room for it (it waits for the cursor). */
void arrays_go_add(jarray *a, uint32_t t);
/* Those of go that can no longer be made now taken out (canceled or made meanwhile: a cancel of
 * ID_[1-64], a hold of tasks not made; ahead full): before the pass counts go, so that it offers
 * only tasks it can make. They filled go (64) and kept the tasks behind them in ready, and a pass
 * that offered them made nothing and asked for no other: those tasks waited for an unrelated
 * event. O(go x ranges). */
void arrays_go_prune(jarray *a);
/* The next of those still to make (one made, canceled or reached by the cursor meanwhile passed
 * over): 0, or -1 none. */
int arrays_go_take(jarray *a, uint32_t *t);
/* t, taken, could not be made for now: first again, as arrays_ready_again. */
void arrays_go_again(jarray *a, uint32_t t);
/* Whether t, ahead of the cursor, can be made now out of order: the ranges of ahead with it
 * stay within ARRAYSPEC_MAX_RANGES (otherwise it waits for the cursor, as without corr). */
bool arrays_ahead_ok(const jarray *a, uint32_t t);
/* Whether the n tasks ts (none made yet, in a's list's order) can all be made now, one after the
 * other (arrays_made), each as arrays_ahead_ok allows: true, or false with *bad the first that
 * could not be. */
bool arrays_ahead_ok_all(const jarray *a, const uint32_t *ts, size_t n, uint32_t *bad);
/* A task changed state (the settle step): an ended one frees its room under %N. */
void arrays_task_changed(job *j);
/* A task's job's row is being deleted (job_ctl.c, in the delete's transaction): the state it
 * ended in is kept in the array's counts (gone) and its row saved in the same transaction; from
 * now on the job itself is not counted (it is marked array_gone). arrays_task_kept undoes it when
 * the delete is not committed (the row rolled back with it). */
void arrays_task_deleting(job *j);
void arrays_task_kept(job *j);
/* A task's job is being deleted (its row's delete committed). */
void arrays_forget_task(job *j);

/* Offers r the array whose number r is (common/idref.h), if one has it: that array, else NULL. */
jarray *arrays_offer_number(idref *r, const caller *who);
/* The arrays a reference can name (by name or id prefix, whoever may see them), in seq order;
 * NULL-terminated, freed by the caller. */
jarray **arrays_named(const char *ref, size_t *n);
/* The array whose full id is id, or NULL. */
jarray *arrays_by_id(const char *id);
jarray *arrays_by_seq(uint64_t seq);
/* The array of the lowest seq at or after seq; NULL when none (as jobs_from_seq). */
jarray *arrays_from_seq(uint64_t seq);
bool arrays_visible(const jarray *a, const caller *who);
/* The task of id t: its job when made (and not deleted); NULL otherwise. *made says whether it
 * was made (false: it waits, or was canceled before it was made). */
job *arrays_task(const jarray *a, uint32_t t, bool *made);
void arrays_count(const jarray *a, arrays_counts *c);
/* The state of a task not made yet (of an array not canceled): PENDING while the array waits
 * for its dependencies, HELD while held, SCHEDULED before its start time, else QUEUED (but
 * arrays_unmade_task_state). */
enum job_state arrays_unmade_state(const jarray *a);
/* The same for task t of it: one released from the array's hold waits as if it were not held;
 * one of an array not held that would be QUEUED but waits for its own task (corr: that one not
 * COMPLETED yet) is PENDING. */
enum job_state arrays_unmade_task_state(const jarray *a, uint32_t t);
/* a's `after` was linked (depend.c, at its submission and at start): corr says whether its tasks
 * wait task by task; what it keeps of them (corr_ready) counted from the arrays they wait on
 * (O(the made tasks of the first)). */
void arrays_corr_recount(jarray *a, bool corr);
/* The same, kept once the array ended (every task ended, none left to make) until it changes
 * again (a task's job deleted moves that task from its state to deleted; a change of the
 * array in this file, or of a task's state seen by arrays_task_changed, drops what was kept):
 * a workflow's step asks for an ended array's counts at every change of another of its jobs.
 * At log level debug, what was kept is checked against a count and a difference aborts. */
void arrays_count_cached(jarray *a, arrays_counts *c);
/* The highest exit code of its tasks once every task ended (at least 1 when they did not all
 * complete): what rnx job wait ARRAY exits with, as sbatch --wait; -1 while tasks are left. */
int arrays_exit_code(const jarray *a, const arrays_counts *c);
/* The array's state: RUNNING while a task runs, QUEUED while tasks wait and none runs (HELD when
 * held), once all ended: FAILED if one failed, else STOPPED if one was stopped, else CANCELED if
 * one was canceled, else COMPLETED. */
enum job_state arrays_state(const jarray *a, const arrays_counts *c);

/* Cancels tasks not made yet: all of them (tasks NULL: the array is canceled), or those of
 * tasks. The number canceled, or -1 with e set (409: too many separate ranges to keep). */
int64_t arrays_cancel_unmade(jarray *a, const arrayspec *tasks, uid_t by, jerr *e);
/* The same of those not made yet that wait in state only (rnx job cancel --status=S): of an
 * array held whole with tasks released from the hold one by one, HELD names the others and the
 * released ones' state names those; of one whose tasks wait task by task (corr), QUEUED names
 * those whose own task COMPLETED and PENDING the others (409 when they take more ranges than can
 * be kept). */
int64_t arrays_cancel_unmade_in(jarray *a, const arrayspec *tasks, enum job_state only, uid_t by, jerr *e);
/* Its dependencies hold (depend.c, or a workflow's engine): its tasks are made from now on; its
 * row is saved (with after_met, which depend.c sets first) in the open transaction. */
void arrays_release_wait(jarray *a);
/* ... or they never can: every task is canceled (canceled_by ARRAYS_CANCELED_DEPENDENCY, why). */
void arrays_cancel_dependency(jarray *a, const char *why);
/* Every task not made yet canceled by joblet: how is ARRAYS_CANCELED_DEPENDENCY or
 * ARRAYS_CANCELED_UNMAKEABLE (queue.c: a task refused for good, its volume gone), why says so. */
void arrays_cancel_by_joblet(jarray *a, int64_t how, const char *why);
/* No task of it is made while held (its tasks not made count HELD; but those of released); released,
 * they are again. Held again while held: those of released are held with it.
 * by: who holds it (held_by). */
int arrays_set_held(jarray *a, bool held, uid_t by, jerr *e);
/* The most ranges (of places in its list) `released` keeps: a request naming more is refused. */
#define ARRAYS_RELEASED_MAX 64
/* Whether task t waits held with its array: the array is held and t was not released from it. */
bool arrays_task_held(const jarray *a, uint32_t t);
/* Of an array held whole, the tasks named (release) released from that hold, or (!release) held
 * with it again: `released` changed and the row saved. *moved: tasks not made yet whose state
 * that changed. Refused (409, nothing changed) when `released` would need more than
 * ARRAYS_RELEASED_MAX ranges, and (400) a list of steps that cannot be kept so (a range whose
 * step is neither 1 nor the array's own there, naming more than 65,536 tasks). O(ranges x ranges)
 * however many tasks the array or the list has. */
int arrays_released_set(jarray *a, const arrayspec *tasks, bool release, uint64_t *moved, jerr *e);
/* Its tasks released from its hold and not made yet (not canceled either): how many (counted up
 * to upto at least, then no further: 1 asks whether any is, the scheduler's pass how many it may
 * take), and *first the first of them in the list's order (when not NULL and some are).
 * O(ranges x ranges), less when upto is reached early. */
uint64_t arrays_released_left(const jarray *a, uint32_t *first, uint64_t upto);
/* The next of those to make now (the scheduler's pass, while the array is held): 0 and *t, or -1
 * (none, or none that can be made out of the list's order now: arrays_ahead_ok). */
int arrays_released_next(const jarray *a, uint32_t *t);
/* The task ids `released` names ("3-5,9"), in out (cut with "..." when too long). */
void arrays_released_format(const jarray *a, char *out, size_t len);
/* The array's request replaced by req (taken when 0 is returned), saved: the tasks made from now
 * on are made from it. Its list (req->array) must name the array's tasks; its %N becomes the
 * array's (400 naming "array" otherwise). */
int arrays_update(jarray *a, job_req *req, jerr *e);
/* The array's row deleted, in the open transaction: every task it made must be deleted already
 * and none be left to make (409 otherwise). Nothing else goes until that is committed: a delete
 * the database did not take leaves the array whole (array_ctl.c). */
int arrays_delete_row(jarray *a, jerr *e);
/* Once its row's delete is committed: its uploaded files removed and the array freed. */
void arrays_delete_rest(jarray *a);
/* Whether every task ended (or was canceled before it was made). */
bool arrays_ended(const jarray *a);

/* Start: the rows read (after the jobs), tasks linked to their arrays. */
int arrays_load(jerr *e);
void arrays_free_all(void);

/* The arrays in submission order. */
jarray **arrays_all(size_t *n);
/* Those with tasks still to make (not made, not canceled), in submission order: the only ones
 * the scheduler's pass can offer a task of. */
jarray **arrays_open(size_t *n);
/* The arrays (jarray *) made, or whose tasks changed, since the last call (each once; the caller frees the
 * vector, not the arrays): publish.c looks at those alone, not at every array kept. */
void **arrays_take_changed(size_t *n);

#endif
