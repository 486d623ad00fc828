/* A job as the daemon's core owns it. Only the event-loop thread touches these. */
#ifndef JOBLET_JOB_H
#define JOBLET_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/jobreq.h"
#include "../common/jobstate.h"
#include "../common/netaddr.h"
#include "../common/slurmcg.h"
#include "../gpu/grant.h"
#include "loop.h"

struct follower;
struct job_term_waiter;

typedef struct job_usage {
    uint64_t cpu_ns, memory_peak_bytes, io_read_bytes, io_write_bytes;
    uint64_t pids_current;    /* live only: 0 once the job has ended */
    uint64_t gpu_ms_before;   /* GPU time of its earlier runs (GPUs held x each run's time, ms): a
                               * requeued or preempted run's, an ended job's put back (jobs.c) */
} job_usage;

typedef struct job {
    char id[37];
    uint64_t seq;
    char *name;
    enum job_state state;
    uid_t owner_uid;
    gid_t owner_gid;
    uid_t uid;
    gid_t gid;
    uid_t sandbox_uid;        /* gVisor: the host uid its sandbox runs as while it runs (one of
                               * jobs.uid_range_start's, submit_free_uid); 0 = none */
    /* The validated submission (command, args, env, secret_env, limits, upload list without
     * content), typed once at the API's edge. Persisted as JSON; secret values leave the
     * daemon only in the shim's spec. */
    job_req req;
    int64_t created_ms, scheduled_ms, started_ms, ended_ms;
    bool has_exit;
    int exit_code;
    int signal;               /* 0 = none */
    char *signal_name;
    char *end_reason;
    int64_t stopped_by;       /* uid, -1 = none */
    char *error;
    job_usage usage;
    gpu_grants gpus;          /* GPUs granted (kept after the job ends, for its history); none: n 0 */
    uint64_t gpu_set;         /* the same as scheduler bits, while held */
    int gpu_mig;              /* flat MIG device index + 1 while held; 0 none */
    uint32_t preemptions;     /* how many times it was preempted */
    bool preempting;          /* being stopped to make room: goes back to the queue, not to an end */
    bool requeue_asked;       /* ... because rnx job requeue asked it (job_ctl.c); both kept in its row */
    bool requeue_hold;        /* ... and it waits HELD (requeue --hold) */
    int64_t suspended_ms;     /* this run's time SUSPENDED, suspensions ended (not counted against
                               * its run-time limit: its shim's clock stands still meanwhile) */
    int64_t suspended_since_ms; /* while SUSPENDED: since when; 0 none */
    char *fail_reason;        /* being stopped because its GPU failed: it ends FAILED with this */
    gpu_fault gpu_fault;      /* which GPU failed it, how, by whom: set with fail_reason, kept (and
                               * stored) once it ended FAILED with gpu_error, dropped otherwise */
    int64_t gpu_granted_ms;   /* when its GPUs were granted, for the audit's durations */
    /* Its workflow, when it is one of a workflow's jobs. */
    char wf_id[37];           /* "" none */
    int wf_index;             /* its place among the workflow's jobs */
    struct workflow *wf;
    /* Its job array, when it is one of an array's tasks (core/arrays.h). */
    char array_id[37];        /* "" none */
    int64_t array_task;       /* its task id (JOBLET_ARRAY_TASK_ID) */
    struct jarray *array;
    bool array_active;        /* counted among the array's tasks not ended (its %N) */
    bool array_gone;          /* its row is being deleted: counted in its array's gone (arrays.h) */
    /* Its dependencies, rnx job run --after (core/depend.h): the seq of each job req.after
     * names (0: gone), while it is PENDING; and the seqs of the PENDING jobs that wait on it. */
    uint64_t *after_seq;
    uint64_t after_removed;   /* core.removed when every job it waits on was last seen there (depend.c) */
    /* its `after` held once (it was let go, or they held while it was HELD): never decided again,
     * by a restart or a release (Slurm: a dependency satisfied is gone), whatever becomes of the
     * jobs it named; false again when `rnx job update --after` gives it new ones. Kept in its row. */
    int64_t joined_ms;        /* when it last joined the queue: its submission (not an array's
                               * task's, which has its array's place until it ran; 0 for rows older
                               * than that), its release from a hold or by its dependencies (--after,
                               * a workflow's requires), a change of its --schedule; a stamp of
                               * the queue's clock, which never goes back (qclock.h). Its
                               * place among equal priorities is from then, or from its --schedule
                               * time, whichever is later (queue.c): a job banked held or far ahead
                               * and released or moved to now at will went before everyone who
                               * came meanwhile, the GPUs reserved for them included */
    bool after_met;
    bool ended_held;          /* canceled (stopped, killed) while another uid than its owner held it:
                               * an admin's hold, which only an admin releases (job_ctl.h); its
                               * owner's requeue of it once ended is likewise an admin's to allow
                               * (job_ctl_may_requeue), cleared when it is requeued */
    int64_t log_bytes;        /* ended: its output files' size on disk, which its owner's log
                               * budget counts for it (statedisk.c output_bytes); -1 not known (not
                               * ended, or a row from before schema 26): its files are looked at */
    uint64_t *dependents;
    uint32_t ndependents, dependents_cap;
    /* --singleton, while it waits: the seq of the job that held its name when it was last
     * decided (0: none then) */
    uint64_t single_holder;
    bool single_listed;       /* in core/depend.c's index of waiting singleton jobs */
    /* Execution, while a shim is alive. */
    pid_t shim_pid;
    uint64_t shim_start;
    pid_t init_pid;
    uint16_t signals_queued;  /* signals queued to its shim that it may not have taken yet
                               * (job_launch_signal); in memory only */
    bool holds_room;          /* counted in core.running */
    bool gated;               /* its shim waits for joblet's word that the start is committed
                               * (job_launch.c: go_committed) */
    bool unwatched;           /* running on after a restart, its shim not watched yet: joblet had too
                               * few descriptors free for its pidfd (job_launch.c: unwatched) */
    bool dir_pending;         /* its directory and /work are still to be made (job_dirs.h) */
    uint32_t queue_position;  /* 1-based among jobs waiting for room, set by the scheduler (queue.c) */
    uint8_t wait_why;         /* enum sched_wait, set by the scheduler (queue.c) */
    uint64_t lookup_since;    /* nsscache_gen() when it began to wait for its owner's account
                               * look-ups (queue.c: lookups_begin), 0 when it does not */
    uint8_t ev_wait;          /* wait_why + 1 last recorded in its history (job_events.h); 0 none */
    watch w_pid;              /* pidfd of the shim: readable when it exits */
    watch w_notify;           /* the shim's start notification */
    /* A Slurm task (core/slurm_task.h); slurm.set false for every other job. */
    slurm_ids slurm;
    char *cg2_made;           /* a cgroup2 directory joblet made for its device filter alone (the
                               * rest of its cgroups are Slurm's): removed when its shim exits */
    watch w_waiter;           /* pidfd of the process waiting for it (the Slurm task): its end
                               * kills the job; fd -1 none */
    pid_t waiter_pid;         /* and its start time: a restarted joblet watches it again */
    uint64_t waiter_start;
    netaddr_place net;        /* where it sits on a job network while it runs (core/networks.h);
                               * network "" none. Kept in its row: a restarted joblet keeps it */
    struct follower *followers;
    uint32_t copies;          /* copies out of it or into it (rnx job cp) whose helper still runs:
                               * it is not deleted meanwhile (job_cp.c; job_ctl.c delete_row) */
    struct job_term_waiter *term_waiters; /* attachers waiting for its terminal (job_term.h) */
    int inotify_wd;
    uint8_t settle;           /* enum job_settle: what the settle step still owes this job */
    uint32_t ev_sig;          /* its state and queue place + 1 as last published (publish.c); 0 none
                               * (set to 0: published again at the next turn, while it is live) */
    int32_t ev_ended;         /* its place + 1 among the jobs ended since the last publish (jobs.c); 0 none */
    bool ev_news;             /* its history grew since it was last published (job_events.c): published
                               * again, its state the same (a signal, an update, an attach), so that a
                               * console's page of it is redrawn (publish.c) */
    uint8_t db_mark;          /* enum state_db_mark: its row in the open transaction, or lost with one (state.h) */
    /* What the job table's indexes count it as, as of its last jobs_index (jobs.h) */
    uint8_t idx_flags;        /* enum jobs_idx_flag (jobs.c) */
    uint64_t idx_bytes;       /* its request's bytes (jobreq_bytes), counted while it is kept */
    uid_t idx_uid, idx_sandbox; /* the uids of jobs.uid_range_start's range it holds; 0 none */
    uint32_t idx_queue, idx_room; /* its place in the list of jobs in the queue, of jobs holding room */
    uint8_t idx_as;           /* the state whose list it is in (PENDING or HELD: jobs_in_state) */
    uint32_t idx_state;       /* its place in that list */
} job;

/* What a change of a job leaves to the settle step (settle.c), besides the scheduler. */
enum job_settle {
    JOB_SETTLE_RELEASE = 1 << 0,   /* its run is over: its GPUs go back (and are scrubbed) */
    JOB_SETTLE_WAKE = 1 << 1,      /* it ended: its log followers get the end */
    JOB_SETTLE_WORKFLOW = 1 << 2,  /* it started or ended: its workflow decides its dependents */
};

/* Waiting for the scheduler: not started, and no shim on its way. */
static inline bool job_in_queue(const job *j) { return job_state_waiting(j->state) && j->shim_pid == 0; }
/* Waits to run again after a run that was preempted or requeued (jobs.c: job_requeue; its
 * end_reason describes that run until the next starts): PREEMPTED when its turn comes. */
static inline bool job_ran_before(const job *j) { return j->preemptions && j->end_reason; }
/* Launched: it has a shim, or ran (what `--after=ID:started`, Slurm's after:, waits for). */
static inline bool job_started(const job *j) { return j->started_ms > 0 || j->shim_pid > 0; }

#endif
