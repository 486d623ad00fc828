/* The table of jobs and the changes of one job's own state: found, added, saved, finished,
 * re-queued. What a change means elsewhere (GPUs back, log followers, workflows, the
 * scheduler) is left to the settle step: job_finish and job_requeue only mark the job
 * (job.settle, core.changed) and ask for it (state_want). */
#ifndef JOBLET_JOBS_H
#define JOBLET_JOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/idref.h"
#include "../store/db.h"
#include "authz.h"
#include "job.h"

/* Among the jobs the caller may see (root sees all): by full id, else by number (Slurm's job
 * id), else by name (exactly one job of that name), else by unique id prefix. 404 when
 * nothing matches; 409 naming the candidates (short id and state) when several do. */
job *jobs_find(const char *ref, const caller *who, jerr *e);
/* The job whose full id is id, whoever may see it, or NULL. */
job *jobs_by_id(const char *id);
/* Offers r (common/idref.h) the jobs it can name, in the table's order, as the caller may see
 * them (the one whose number r is, first): true when one is the answer. task_names: an
 * array's task answers to its array's name too (jobs_find), or only to its id (a reference
 * that arrays are offered first: array_ctl.h). */
bool jobs_offer(idref *r, const caller *who, bool task_names);
/* Every job of owner named name (an array's tasks bear its name), in no particular order: from
 * the index by owner and name, never a scan of every job kept nor of other users' jobs of that
 * name (a singleton's check costs only its owner's). Freed by the caller; NULL and *n 0 when none. */
job **jobs_named(uid_t owner, const char *name, size_t *n);
void jobs_add(job *j);
/* Room for n more jobs, made at once (the start, before it adds every loaded job). */
void jobs_reserve(size_t n);
/* The job of this seq, or NULL: the table is in seq order (jobs are added in it, loaded in it),
 * so a binary search. */
job *jobs_by_seq(uint64_t seq);
/* The job of the lowest seq at or after seq; NULL when none (a walk in seq order that the
 * table's changes between its steps do not upset: api/jobs_list.c). */
job *jobs_from_seq(uint64_t seq);
/* The place in core.jobs of the job of the lowest seq at or after seq (core.njobs when none): a
 * walk in seq order that goes on from there in a later loop turn (core/retention.c) finds its
 * place again by a binary search, whatever was added or removed between. */
size_t jobs_seq_place(uint64_t seq);
/* Out of the table and of the settle step's list; the caller frees it. */
void jobs_remove(job *j);
/* The same for n distinct jobs at once: the table compacted once (a slice of deletes costs one
 * move of the jobs after the first of them, not one per job). */
void jobs_remove_many(job **v, size_t n);
/* A uid of the range jobs.uid_range_start gives out (root's jobs, gVisor sandboxes) that no
 * unfinished job holds, as its uid or its sandbox's: the first free one from the range's
 * place `from` on (modulo its size). Never the range's last when it has more than one (root's
 * shared-GPU jobs', jobs_run_uid), not even when every other is busy: then shared with the
 * job at `from` among the others. */
uid_t jobs_free_uid(uint64_t from);
/* A uid jobs_free_uid gave to a job not made yet (root's job whose uploads are being written,
 * owned by it already: core/incoming.c) is not given again until it is let go (hold false),
 * once the job holds it itself or was never made. */
void jobs_uid_reserve(uid_t uid, bool hold);
/* The uid a job submitted by `submitter` runs as: the submitter's; for root's jobs a free uid of the
 * range (jobs_free_uid from seq), except a job sharing a GPU (gpu_share), which runs as the
 * range's last uid, never given out otherwise. NVIDIA MPS serves one uid at a time (the
 * scheduler puts a GPU's shared jobs of one uid together: sched.h mps_uid), so root's shared
 * jobs share one uid to share a GPU, as a user's own jobs do. */
uid_t jobs_run_uid(uid_t submitter, const job_req *req, uint64_t seq);
void jobs_dir_of(const job *j, char *out, size_t len);

/* Indexes of the table, kept as jobs change so that a submission and a scheduler pass cost
 * O(1) or O(waiting), not O(kept jobs): per owner, the jobs kept and those waiting (in the
 * queue, PENDING or HELD: limits.max_queued_per_user); the jobs in the queue (job_in_queue) and
 * those holding room; the jobs of each state neither of those lists is about (PENDING, HELD and
 * the ended ones), so that a listing by state looks at the jobs of that state alone; the range's
 * uids that unfinished jobs hold. A job is counted anew by jobs_index, which jobs_add,
 * jobs_remove, jobs_mark and job_save call: every change of its state, shim or room is followed
 * by one of them before the loop turn ends. At log level debug every use checks the indexes
 * against a full scan and aborts on a difference (a change that skipped them). */
void jobs_index(job *j);
/* Everything counted again from the table: at start, once the jobs are re-adopted (a re-adopted
 * job holds room unsaved). */
void jobs_index_rebuild(void);
void jobs_index_free(void);
typedef struct jobs_user_count {
    uint64_t kept, waiting;
    uint64_t bytes;   /* the requests of the jobs kept (jobreq_bytes): limits.max_request_bytes_per_user */
} jobs_user_count;
jobs_user_count jobs_user(uid_t owner);
/* The jobs in the queue, and the jobs holding room, each in seq order; valid until the next
 * change of a job (jobs_index). */
job **jobs_queued(size_t *n);
job **jobs_holding_room(size_t *n);
/* Whether the table keeps a list of the jobs in state s: PENDING and HELD (of the others, those
 * of the queue and of jobs holding room are those two lists: a QUEUED job may be running unheard,
 * job_launch_refresh; the ended ones are most of the jobs kept, and a listing of them scans). */
bool jobs_state_listed(enum job_state s);
/* The jobs in state s, a listed one, in seq order; valid until the next change of a job. */
job **jobs_in_state(enum job_state s, size_t *n);
/* The jobs that ended (job_finish) since the last call; valid until the next change of a job.
 * With the lists above, every job whose state, wait or queue place may have changed since
 * (publish.c: the console's and rnx job wait's events, without a scan of every job kept). */
job **jobs_take_ended(size_t *n);
/* Whether j's init pid is still the job's own process: a pid reused since would not be in its
 * cgroup. Ask after opening a pidfd of it, so that the answer holds for that pidfd. */
bool jobs_init_alive(const job *j);
/* Marks work for the settle step (enum job_settle bits) and asks for it. */
void jobs_mark(job *j, unsigned settle);
/* The jobs marked since the last call, in order; their marks are the caller's to clear.
 * The array is valid until the next jobs_mark. */
job **jobs_take_changed(size_t *n);

/* The daemon's job made of a row (read from the database at start, or a new submission's):
 * it takes the row's strings, request and GPUs, leaving the row empty; the event loop's fields
 * (watches, inotify) start as none. job_free frees it. */
job *job_new(db_job *r);
void job_free(job *j);
/* Writes the job to the database (committed at the end of the loop turn, or before an API
 * answer). 0, or -1 with the database's error (also logged). */
int job_save(job *j);
/* Sets the terminal state, persists, gives back its room; GPUs, followers and its workflow
 * follow in the settle step. */
void job_finish(job *j, enum job_state st, const char *reason);
/* A preempted job's run is over: it gives back its room and waits in the queue again. */
void job_requeue(job *j);
/* What the job's run that ended used, for the history that outlives its fields (a requeue's
 * event: the next run's usage replaces them; sacct --duplicates' per-run lines): "ran 6.0 s, CPU
 * 5.91 s, memory peak 412.3 MiB, read 1.2 MiB, written 0.0 MiB, 12.0 GPU-seconds", each part
 * that it has; "" for a run that never started. */
void job_run_used(const job *j, char *d, size_t len);
/* Whether j's uid, one of jobs.uid_range_start's (a job of root's), is held by another job not
 * ended, or by one being made: an ended job of root's put back in the queue would share it with
 * that job (its processes, its files). False for a user's own uid and for root's shared-GPU jobs'. */
bool jobs_uid_taken(const job *j);
/* An ended job made to run again (rnx job requeue of an ended job: job_ctl.c): its run's records
 * go as a requeued run's do (end record, exit code, signal, error, end reason, times, usage, GPUs:
 * their time added to usage.gpu_ms_before), stopped_by -1, its runs counted (preemptions) one
 * more. Its waiting state is the caller's to set, and to save. */
void job_rewait(job *j);
/* A start that ran nothing (exec/shim.h: SHIM_NOT_RUN, joblet killed before its commit let the
 * command run): the job gives back its room and GPUs and waits as it did before that start, no
 * run counted. */
void job_unstart(job *j);

#endif
