/* The daemon's state: what it was configured with, what it found on the machine, and every
 * job and workflow it knows. One instance, `core`, owned by the event-loop thread (loop.h):
 * nothing here needs a lock. What an event changed and the settle step must still carry out
 * (settle.h) is asked for with state_want(). */
#ifndef JOBLET_STATE_H
#define JOBLET_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/parse.h"
#include "../exec/cgroup.h"
#include "../gpu/gpu.h"
#include "../store/db.h"
#include "config.h"
#include "job.h"
#include "loop.h"

struct workflow;
struct spec_gpu_lib;

/* What the settle step (settle.c) must do at the end of this loop turn. Events set these
 * bits and change state; only the settle step acts on them. */
enum state_want {
    WANT_JOBS = 1 << 0,       /* jobs changed (jobs_take_changed lists them): GPUs back, followers,
                               * workflows, memory volumes */
    WANT_GPUS = 1 << 1,       /* a GPU's holders or state changed: a reset that waited may start */
    WANT_SCHEDULE = 1 << 2,   /* the scheduler runs */
};

typedef struct core_state {
    config cfg;
    db *db;
    cg_host cg;
    job **jobs;               /* every job known, in submission order */
    size_t njobs, cap;
    uint64_t next_seq;
    uint32_t running;         /* jobs holding a shim */
    uint64_t nofile_soft;     /* the soft open-file limit joblet was started with, jobs' own (0: not
                               * raised, theirs as inherited; daemon/main.c files_budget) */
    uint64_t nofile_hard;     /* joblet's open-file limit now (soft = hard), the jobs' hard one */
    uint32_t files_max_running; /* jobs joblet's open-file limit lets run at once (files_budget in
                               * daemon/main.c: 2 descriptors each); 0 = no bound */
    char jobs_dir[600];
    char root_mount[600];     /* shared mount point of every job's root (see spec.h) */
    int devfilter_prog;       /* loaded eBPF device filter for the default devices, or -1 */
    char shim_path[600];
    char io_dev[32];          /* block device of jobs_dir, "" when there is none */
    char io_dev_why[256];
    uint8_t online_cpus[CPU_MAX / 8];
    int ncpus;
    uint64_t mem_total_mb;
    int inotify_fd;
    watch w_inotify;
    int64_t sched_wakeup_ms;  /* 0 = no scheduled job waiting */
    int64_t trim_at_ms;       /* when to return freed heap to the system, 0 = no need */
    gpu_discovery gpu;        /* what discovery found at start */
    bool gpu_on;              /* GPU support active: GPUs found, or gpu.enabled: true */
    struct spec_gpu_lib *driver_libs; /* the running driver's libraries (gpu_spec.c) */
    char scrub_path[600];     /* joblet-gpu-scrub, next to the shim */
    char copy_path[600];      /* joblet-copy (job_cp.h), next to the shim */
    char exec_path[600];      /* joblet-exec (job_exec.h), next to the shim */
    char srun_path[600];      /* joblet-srun, bound in jobs with Slurm's variables, next to the shim */
    size_t ndriver_libs;
    struct workflow **workflows; /* every workflow known, in submission order */
    size_t nworkflows;
    struct jarray **arrays;   /* every job array known, in submission order (arrays.h) */
    size_t narrays, arrays_cap;
    uint64_t removed;         /* jobs and arrays taken out since the start (jobs_remove, an array's
                               * drop): depend.c looks for a dependency deleted only when it grew */
    uint64_t next_wf_seq;
    unsigned want;            /* enum state_want bits for the settle step */
    job **changed;            /* jobs with settle work (job.settle), in the order they changed */
    size_t nchanged, changed_cap;
} core_state;

extern core_state core;

static inline void state_want(unsigned what) { core.want |= what; }
/* Jobs that may run at once: jobs.max_running, and what joblet's open-file limit allows
 * (core.files_max_running); 0 = no limit. */
static inline uint32_t state_max_running(void)
{
    uint32_t a = core.cfg.max_running, b = core.files_max_running;
    return !a ? b : !b ? a : a < b ? a : b;
}
/* Commits what changed since the last commit (one transaction per turn, store/db.h): run at
 * the end of every loop turn and before any API answer, so no client sees a change the
 * database does not hold (a kill -9 right after a 201 must not lose the job).
 *
 * A commit can fail (the state filesystem full, an I/O error): the transaction is rolled back
 * whole (db_flush), and what it held is then in memory only. A request's own change is taken
 * back by its route (nothing created: submit_undo, workflow_undo) or answered as not saved
 * (api/reply.c), never 2xx. The rows of jobs and workflows that background events wrote in
 * it (a start, an end) are written again, whole, by a later commit: the first retry a second
 * later, then at doubling intervals up to a minute while commits keep failing. Job history
 * events, GPU samples and audit records of a failed commit are not written again, but for the
 * records of changes made over the TLS listener (audit_change) and the removal of a memory
 * volume whose last job ended (volumes.c): registered rows (state_rows below). */
void state_commit(void);
/* When state_commit next writes again what failed commits lost (ms), 0 nothing is: the loop
 * wakes for it, so that an idle joblet does not keep them in memory alone. */
int64_t state_resync_at_ms(void);
/* Whether rows a failed commit lost wait to be written again. */
bool state_unsaved(void);
/* Rows a file above this one keeps in the database beside jobs, workflows and arrays (table
 * gpu_admin: gpu_service.c): told each commit's outcome, asked whether failed ones lost rows
 * not written again yet, and asked to write those into the open transaction (the resync). A
 * registration, not a call by name: this file is below those it serves. At most a few, made
 * once at start; r must outlive joblet's loop. */
typedef struct state_rows {
    void (*committed)(bool ok);
    bool (*unsaved)(void);
    void (*resync)(void);
} state_rows;
void state_rows_register(const state_rows *r);
/* Asks for work (state_want) once the next commit succeeds: what must not run before the rows
 * this turn wrote are in the database (an array's task made this turn starts then: queue.c). */
void state_want_after_commit(unsigned what);
/* The same, for a route whose answer depends on it: 0, or -1 with e saying why (HTTP 507
 * when the state filesystem is full, else 503, a jerr_busy's; both end in STATE_COMMIT_AGAIN,
 * which an answer that the change was done without being saved leaves out). */
int state_commit_now(jerr *e);
#define STATE_COMMIT_AGAIN "; try again in a moment"
/* Marks a job or a workflow whose row this transaction writes (jobs.c, submit.c, workflow.c),
 * so that a failed commit has it written again. state_forget_job: the job is being freed. */
enum state_db_mark { STATE_DB_TXN = 1, STATE_DB_STALE = 2, STATE_DB_NEW = 4 };
void state_wrote_job(job *j);
/* The same for a job's first row (submit.c): STATE_DB_NEW until a commit has it, so that what
 * must not run unrecorded can tell (an array's task: queue.c). */
void state_wrote_new_job(job *j);
void state_wrote_workflows(void);
/* An array's row (core/arrays.h): a failed commit has every array written again, as workflows. */
void state_wrote_arrays(void);
void state_forget_job(job *j);
/* Whether j's row is one a failed commit lost, not written again yet. */
bool state_job_unsaved(const job *j);

/* Whether an index's check against a full scan (jobs.c, arrays.c) runs now: only at log level
 * debug (the tests'); at every use while the tables hold at most STATE_CHECK_EVERY_USE_MAX objects,
 * and at most once a second (*last_ns: the caller's) on a machine keeping more, so that debug
 * logging never makes each use cost a scan of everything kept. */
#define STATE_CHECK_EVERY_USE_MAX 5000
bool state_check_due(int64_t *last_ns, size_t n);

#endif
