/* What a user asks of a job array or some of its tasks (array_ctl.c): stop, cancel, kill and
 * delete over many tasks, made or not (which tasks a reference names: jobref.h). The transitions
 * of each made task are job_ctl's. */
#ifndef JOBLET_ARRAY_CTL_H
#define JOBLET_ARRAY_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/arrayspec.h"
#include "../common/err.h"
#include "arrays.h"
#include "authz.h"
#include "job.h"

enum array_ctl_act { ARRAY_CTL_CANCEL, ARRAY_CTL_STOP, ARRAY_CTL_KILL };
/* The tasks named (NULL: every task), and of them only those in state *only where only is given
 * (Slurm's scancel --state: a running array's QUEUED tasks, its running ones left; the tasks not
 * made count in the state arrays_unmade_state says): those not made are canceled (no job is made
 * for them); the made ones get the act (job_ctl.h): cancel acts on those waiting, stop and kill on
 * those running too. 409 when no task was left to act on. *acted: tasks acted on. */
int array_ctl_act(jarray *a, const arrayspec *tasks, const enum job_state *only, enum array_ctl_act act, uid_t by,
                  uint64_t *acted, jerr *e);
/* rnx job kill --signal=SIG [--all] on an array (Slurm's scancel --signal): sig to each task
 * named (NULL: every task) that runs, as job_ctl_signal sends it; the others, and the tasks not
 * made, are left as they are; of them only those in state *only where only is given (?status, as
 * array_ctl_act). SIGKILL is array_ctl_act's ARRAY_CTL_KILL. 409 when no task named runs;
 * *acted: tasks signaled. */
int array_ctl_signal(jarray *a, const arrayspec *tasks, const enum job_state *only, int sig, bool all, uid_t by,
                     uint64_t *acted, jerr *e);
enum array_ctl_run { ARRAY_CTL_SUSPEND, ARRAY_CTL_RESUME, ARRAY_CTL_REQUEUE };
/* scontrol suspend|resume|requeue on an array (Slurm acts on its every task): each made task
 * named (NULL: every task) that is RUNNING is suspended, that is SUSPENDED resumed, that runs or is
 * suspended requeued (hold: held once back), as job_ctl does it; the tasks not made, and the others,
 * are left as they are. Suspending and resuming are AUTHZ_SUSPEND's (the caller's to check);
 * requeuing a suspended task is too: such tasks are left to who may not (counted in the 409).
 * Not answered once frozen, as a job's suspend is: each task's "freezing" says. 409 when no task
 * named could be; *acted: tasks acted on. */
int array_ctl_run(jarray *a, const arrayspec *tasks, enum array_ctl_run act, bool hold, const caller *who,
                  uint64_t *acted, jerr *e);
/* Holds (hold) or releases the tasks named (NULL: every task, and the array: no task is made
 * while it is held): the made ones through job_ctl_hold and job_ctl_release, those waiting or held.
 * An array held by another uid than its owner (an admin's hold) is released only by whom
 * AUTHZ_RELEASE_ADMIN_HOLD allows (403, nothing released), as a task held so is.
 * 409 when none named could be; *acted: made tasks acted on (+1 for the array itself). */
int array_ctl_hold(jarray *a, const arrayspec *tasks, bool hold, const caller *who, uint64_t *acted, jerr *e);
/* Changes the array's request to req (taken; from jobreq_change over the array's request with
 * job_ctl_update_fields, and its list's %N), changed its bits (1 << JR_x) as job_ctl_update's:
 * the tasks made from now on have it, and so have its tasks made and not ended, as job_ctl_update
 * changes a job (a waiting task every field, a running one its time limit). 409 once the array
 * ended; raising its priority is AUTHZ_RAISE_PRIORITY's. *acted: 1 for the array, +1 a task. */
int array_ctl_update(jarray *a, const caller *who, job_req *req, uint64_t changed, uint64_t *acted, jerr *e);
/* Why tasks named of a (ID_5, ID_[0-3]: none made, or several) are not updated, in e: -1. Tasks
 * not made have no request of their own (theirs is the array's until the scheduler makes them):
 * one such is 409 naming it and what is accepted instead (the array updated whole, or the task
 * held first, which makes it a job of its own, then updated by its id); one canceled before it
 * started, or whose job was deleted, 409 saying nothing is left; several, 400 (a task made is
 * updated by its own id, one at a time). (A made task named alone is its job: jobref.h.) */
int array_ctl_update_tasks(const jarray *a, const arrayspec *tasks, jerr *e);
/* Deletes at most max ended tasks' jobs, then the array when none is left: *more when some are
 * left (the caller asks again). 409 when the array has tasks not ended. */
int array_ctl_delete(jarray *a, size_t max, size_t *deleted, bool *more, jerr *e);
/* Arrays whose every task ended and was deleted (rnx job delete-all) go too, their rows' deletes
 * committed first: when that fails none goes, and the error says why (507 when the disk is full).
 * empty_for_ms 0: at once; else those found so (by a call with now) at least that long ago
 * and whose workflow ended (retention.c: an array canceled whole before any task ran is kept as
 * long as a job). */
int array_ctl_reap(const caller *who, int64_t empty_for_ms, int64_t now, jerr *e);

/* What each task named was before an act on tasks of an array and is after it, so that the
 * answer says which went how (rnx job cancel ID_[1-3]: which were canceled, which run and were
 * left running, which had ended; rnx job hold ID_4: that task 4 was held, not the array). At most
 * ARRAY_CTL_LOOK_MAX tasks named are looked at (each one's state: O(ranges) for one not made):
 * past that, none (n 0), and the answer counts only. */
#define ARRAY_CTL_LOOK_MAX 1000
#define ARRAY_CTL_DELETED (-1) /* a task made, ended, whose job was deleted */
typedef struct array_ctl_look {
    size_t n;      /* tasks looked at */
    uint32_t *ids; /* in the order named */
    int *was;      /* each one's state before: enum job_state, or ARRAY_CTL_DELETED */
} array_ctl_look;
/* One group of the tasks looked at: those that were in state was and are in state now. */
typedef struct array_ctl_went {
    int was, now;
    char *tasks; /* their ids, "2-3,7" (ascending, runs of consecutive ids as ranges) */
} array_ctl_went;
/* The state task t of a is in, as rnx job list shows it: its job's, once made (ARRAY_CTL_DELETED
 * when its job was deleted); not made: CANCELED when canceled before it started, else the state
 * arrays_unmade_task_state says (one released from its array's whole hold waits as if not held). */
int array_ctl_task_state(const jarray *a, uint32_t t);
/* Looks at the tasks named before an act (nothing when more than ARRAY_CTL_LOOK_MAX). */
void array_ctl_look_before(const jarray *a, const arrayspec *tasks, array_ctl_look *l);
/* After the act: the tasks looked at by what they were and are, in *went (the caller frees it with
 * array_ctl_went_free); the number of groups. */
size_t array_ctl_look_after(const jarray *a, const array_ctl_look *l, array_ctl_went **went);
void array_ctl_went_free(array_ctl_went *went, size_t n);
void array_ctl_look_free(array_ctl_look *l);
/* The name of a state array_ctl_task_state gives ("QUEUED", "DELETED"). */
const char *array_ctl_state_name(int s);

#endif
