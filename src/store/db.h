/* SQLite persistence: one row per job, written on every state change. WAL mode, so a crash
 * at any instant leaves a database that opens with every committed change. */
#ifndef JOBLET_DB_H
#define JOBLET_DB_H

#include <errno.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/netaddr.h"
#include "../common/slurmcg.h"
#include "../common/err.h"
#include "../common/jobreq.h"
#include "../common/jobstate.h"
#include "../gpu/grant.h"

typedef struct db db;

/* The jerr code of db_open for a database written by a newer joblet (its schema version is
 * above the migrations this one knows): refused untouched; joblet exits with status 3. */
#define DB_NEWER_SCHEMA EPROTO

db *db_open(const char *path, jerr *e);
void db_close(db *d);
/* Says that joblet stops with everything it holds committed (no row nor history event that a
 * failed commit lost waits to be written again): the next db_open need not look through the
 * history for events of no job (what only a joblet that ended with lost rows leaves: a scan of
 * every event, ~1 s with a million), nor through every stored request for secrets not sealed
 * (what only rows from before sealing, or written by hand, hold). A row of the database's (table
 * meta), which goes with the next joblet's first commit: a joblet killed after that leaves none,
 * one killed before it wrote nothing; and a database put back from a copy says what it says. */
void db_stopped_clean(db *d);
/* A job's row: what of a job outlives a restart (core/jobs.c: job_row makes one of the
 * daemon's job, job_new the daemon's job of one). Written, it borrows its strings, request and
 * GPUs; loaded (db_load_jobs), it owns them. 0 / -1 / "" where the field says "none". */
typedef struct db_job {
    char id[37];
    uint64_t seq;
    char *name;              /* NULL none */
    enum job_state state;
    int64_t owner_uid, owner_gid, uid, gid;
    int64_t sandbox_uid;     /* gVisor: its sandbox's host uid while it runs; 0 none */
    job_req req;             /* secret values are sealed in the database (seal.h) */
    int64_t created_ms, scheduled_ms, started_ms, ended_ms;   /* 0 none (created_ms always) */
    bool has_exit;
    int exit_code;
    int signal;              /* 0 none */
    char *signal_name, *end_reason, *error;
    int64_t stopped_by;      /* uid; -1 none */
    uint64_t cpu_ns, memory_peak_bytes, io_read_bytes, io_write_bytes;
    uint64_t gpu_ms_before;   /* (its usage's: core/job.h) */
    gpu_grants gpus;         /* n 0: none */
    uint32_t preemptions;
    bool preempting;
    bool requeue_asked, requeue_hold; /* the stop under way is rnx job requeue's (--hold) */
    int64_t suspended_ms;    /* this run's time suspended, ended suspensions; 0 none */
    int64_t suspended_since_ms; /* while SUSPENDED: since when; 0 none */
    char wf_id[37];          /* "" none */
    int wf_index;
    gpu_fault gpu_fault;
    int64_t shim_pid;        /* 0 none; shim_start and init_pid go with it */
    uint64_t shim_start;
    int64_t init_pid;
    slurm_ids slurm;         /* a Slurm task's ids; set false for other jobs */
    int64_t waiter_pid;      /* a Slurm task: the process that waits for it, and its start time
                              * (stored in the slurm column's object, "waiter"); 0 none */
    uint64_t waiter_start;
    netaddr_place net;       /* where it sits on a job network (the net column); network "" none */
    char array_id[37];       /* a job array's task: its array ("" none) and task id */
    int64_t array_task;
    bool after_met;          /* its `after` held once (schema 19; core/job.h) */
    int64_t joined_ms;       /* when it last joined the queue (schema 22; core/job.h) */
    bool ended_held;         /* canceled under an admin's hold (schema 25; core/job.h) */
    int64_t log_bytes;       /* an ended job's output files' size (schema 26; core/job.h); -1 not known */
} db_job;
/* Frees what a loaded row still owns (what fn of db_load_jobs did not take), and empties it. */
void db_job_free(db_job *r);

int db_insert_job(db *d, const db_job *r, jerr *e);
int db_update_job(db *d, const db_job *r, jerr *e);
/* What a deleted job leaves in the History's sums (the console, GET /v1/history): added to the
 * meta table's rows "deleted.uid.<uid>.gpu_ms", "deleted.uid.<uid>.jobs" and
 * "deleted.gpu.<index>.gpu_ms" in the delete's own transaction, so that a delete rolled back
 * (the job kept) adds nothing and one committed is counted once, across restarts. */
#define DB_USAGE_GPUS 64
typedef struct db_usage {
    int64_t uid;
    int64_t gpu_ms;              /* its GPUs x its time, every run's: the owner's */
    int ngpus;                   /* its last run's GPUs (indices), each adding its part of that run's */
    int gpu[DB_USAGE_GPUS];
    int64_t gpu_ms_on[DB_USAGE_GPUS];
} db_usage;
/* The job's row and its events, both or neither; with u, its usage added (above) with them. */
int db_delete_job(db *d, const char *id, const db_usage *u, jerr *e);
/* The deleted jobs' sums: fn(per_gpu, key (a uid, or a GPU's index), gpu_ms, jobs) for each. */
int db_usage_load(db *d, void (*fn)(bool per_gpu, int64_t key, int64_t gpu_ms, int64_t jobs, void *arg), void *arg,
                  jerr *e);
/* e is a write's failure, of this file's (an EBUSY from elsewhere, a mount's, is not the
 * database's: never passed here); when another process's lock kept it out (EBUSY: a backup, a sqlite3
 * shell in a transaction), e becomes joblet's "not now, nothing was done: ask again"
 * (common/err.h jerr_busy, answered 503 with Retry-After), saying "nothing was <nothing_was>"
 * ("submitted", "created"): what the caller undid. -1 always. */
int db_busy_refusal(jerr *e, const char *nothing_was);
/* A mark in the open transaction (begun when none is): db_undo takes back every change since,
 * db_keep keeps them (the commit is still the turn's, or state_commit_now's). One at a time. */
int db_mark(db *d, jerr *e);
void db_undo(db *d);
void db_keep(db *d);
/* Whether a mark is open: what is written now may still be taken back (core/queue.c makes no
 * array task then). */
bool db_marked(const db *d);
/* The job's row as it is now: updated, or inserted when the database has none (a commit that
 * failed took its insert back: core/state.c writes such jobs again). */
int db_save_job(db *d, const db_job *r, jerr *e);
/* Calls fn for every job's row, in submission order: fn may take what the row owns (setting
 * it NULL or empty there: job_new does); what it leaves is freed after the call. Before the
 * first, count (when not NULL) is told how many rows there are, so that what fn fills can be
 * sized once. */
int db_load_jobs(db *d, void (*count)(size_t n, void *arg), void (*fn)(db_job *r, void *arg), void *arg, jerr *e);

/* A workflow's row (core/workflow.c: workflow_row, workflow_new). Written, it borrows reason
 * and doc; loaded, it owns them, as a loaded db_job. */
typedef struct db_workflow {
    char id[37];
    uint64_t seq;
    int64_t owner_uid, owner_gid;
    enum wf_state state;
    int64_t created_ms, started_ms, ended_ms;   /* 0 none (created_ms always) */
    int64_t canceled_by;     /* uid; -1 = not canceled */
    char *reason;            /* NULL none */
    json_t *doc;             /* as submitted (core/workflow.h); never NULL when loaded */
} db_workflow;
void db_workflow_free(db_workflow *r);
int db_insert_workflow(db *d, const db_workflow *r, jerr *e);
int db_update_workflow(db *d, const db_workflow *r, jerr *e);
int db_save_workflow(db *d, const db_workflow *r, jerr *e);
/* Deletes a workflow's row in the open transaction (one that ended and kept none of its jobs and
 * arrays: core/workflow.c). Its number (seq) is internal and not kept as a high water mark. */
int db_delete_workflow(db *d, const char *id, jerr *e);
/* Calls fn for every workflow's row, in submission order; fn may take what it owns, as with
 * db_load_jobs. */
int db_load_workflows(db *d, void (*fn)(db_workflow *r, void *arg), void *arg, jerr *e);
/* One audit record; -1 / NULL for what does not apply. */
typedef struct audit_rec {
    int64_t ts_ms;
    int64_t uid;             /* who acted (the job's owner for allocations) */
    const char *action;      /* allocate, release, scrub, state, xid, drain, offline, online, ... */
    int gpu;
    const char *gpu_uuid;
    const char *job;
    int64_t duration_ms;
    int64_t memory_mb;
    const char *detail;
    const char *person, *serial, *role, *peer; /* a caller on the TLS listener; NULL otherwise */
} audit_rec;
int db_audit(db *d, const audit_rec *a, jerr *e);
/* Deletes at most batch of the oldest audit records: those before before_ms, then those past the
 * newest max_rows. The number deleted (batch: there may be more), -1 on an error. */
int db_audit_prune(db *d, int64_t before_ms, int64_t max_rows, int batch, jerr *e);
/* Which audit records: every filter given (uid/gpu -1, job NULL: any); a page of them by record
 * id: before (> 0: ids below it) or after (> 0: ids above it), at most one of the two. */
typedef struct audit_query {
    int64_t uid, since_ms, until_ms, before, after;
    int gpu, limit;
    const char *job_id;
} audit_query;
/* The page, newest first: limit keeps the newest of the matching records (below before, or none
 * given), or, with after, the limit oldest above it (the next page towards the newest). *older
 * and *newer say whether matching records lie beyond the page's ends (beyond the cursor when the
 * page is empty). */
json_t *db_audit_query(db *d, const audit_query *q, bool *older, bool *newer, jerr *e);
/* A GPU's state out of service by UUID (state NULL: none), since when; loaded at start. */
int db_gpu_admin_set(db *d, const char *uuid, const char *state, const char *reason, int64_t since_ms, jerr *e);
int db_gpu_admin_load(db *d,
                      void (*fn)(const char *uuid, const char *state, const char *reason, int64_t since_ms, void *arg),
                      void *arg);
/* A volume's row (core/volumes.c keeps the volumes; this is only what outlives a restart). */
typedef struct db_volume {
    const char *name;
    const char *type;        /* "filesystem" or "memory" */
    int64_t size_mb;
    int64_t owner_uid, owner_gid;
    int64_t created_ms;
} db_volume;
int db_volume_insert(db *d, const db_volume *v, jerr *e);
int db_volume_delete(db *d, const char *name, jerr *e);
/* Calls fn for every volume, by name; v's strings live only during the call. */
int db_volume_load(db *d, void (*fn)(const db_volume *v, void *arg), void *arg, jerr *e);
/* A named network's row (core/networks.h); the built-in ones come from the configuration. */
typedef struct db_network {
    const char *name;
    const char *cidr;        /* "10.10.0.0/24" */
    int64_t owner_uid;
    int64_t created_ms;
} db_network;
int db_network_insert(db *d, const db_network *n, jerr *e);
int db_network_delete(db *d, const char *name, jerr *e);
/* Calls fn for every network, by name; n's strings live only during the call. */
int db_network_load(db *d, void (*fn)(const db_network *n, void *arg), void *arg, jerr *e);
/* A job's history (core/job_events.c): events numbered from 1 per job; at most `keep` are
 * kept, the oldest deleted first. Deleted with the job. */
typedef struct db_event {
    int64_t ts_ms;
    const char *event;       /* submitted, queued, granted, started, stopping, ended, ... */
    int64_t uid;             /* who acted; -1 none or joblet */
    const char *detail;      /* NULL none */
} db_event;
int db_event_add(db *d, const char *job_id, const db_event *ev, int keep, jerr *e);
/* Calls fn for each kept event, oldest first (ev's strings live only during the call);
 * *dropped: how many older ones were deleted. */
int db_event_load(db *d, const char *job_id, void (*fn)(const db_event *ev, void *arg), void *arg,
                  uint64_t *dropped, jerr *e);
/* What a job got, as JSON text written once when it happened (core/job_detail.c) and read only
 * when asked for: apart from the row every state change rewrites. */
enum db_job_extra { DB_JOB_PLACEMENT, DB_JOB_SPEC };
int db_job_extra_set(db *d, const char *job_id, enum db_job_extra which, const char *json_text, jerr *e);
/* The text (caller frees), or NULL when none was written. */
char *db_job_extra_get(db *d, const char *job_id, enum db_job_extra which);
/* A job array's row (core/arrays.h): what of an array outlives a restart; its tasks, once made,
 * are jobs' rows. Written, it borrows everything; loaded, its strings live only during fn's
 * call and fn may take the request (leaving it empty). */
typedef struct db_array {
    char id[37];
    uint64_t seq;
    const char *name;        /* NULL none */
    int64_t owner_uid, owner_gid;
    job_req req;             /* every task's request (secret values sealed, as jobs') */
    const char *spec;        /* the task list, "0-99%8" */
    int64_t created_ms;
    uint64_t made;           /* tasks made so far, in the list's order */
    const char *skip;        /* tasks canceled before they were made ("3-5,9"); NULL none */
    const char *ahead;       /* tasks made ahead of `made`, out of the list's order (schema 17); NULL none */
    int64_t canceled_by;     /* uid; -1 none: the whole array canceled; -2, -3 by joblet (core/arrays.h) */
    const char *canceled_why; /* joblet's: why (schema 21); NULL none or not known */
    bool held;
    int64_t held_by;         /* while held: who held it; -1 none or not known (schema 20) */
    uint64_t gone[4];        /* tasks whose jobs were deleted, by the state they ended in: STOPPED,
                              * COMPLETED, FAILED, CANCELED (schema 20; core/arrays.h) */
    int gone_exit;           /* the highest exit code among them */
    char wf_id[37];          /* "" none: the workflow whose job it is (schema 15) */
    int wf_index;            /* its place among the workflow's jobs; -1 none */
    bool after_met;          /* its `after` held once: it was let go (schema 19; core/arrays.h) */
    int64_t joined_ms;       /* when it last joined the queue (schema 22; core/arrays.h) */
    int64_t canceled_ms;     /* when tasks not made were last canceled; 0 never or not known (schema 23) */
    const char *released;    /* held: its tasks released from that hold, by place ("3-5"; schema 24); NULL none */
    const char *unreadable;  /* why its request cannot be read (a damaged row, its secret environment's
                              * sealed value or not JSON): its tasks not made yet cannot be; NULL it can */
} db_array;
int db_array_save(db *d, const db_array *a, jerr *e);
int db_array_delete(db *d, const char *id, jerr *e);
int db_array_load(db *d, void (*fn)(db_array *a, void *arg), void *arg, jerr *e);
/* GPU samples for the console's History (schema 9): one GPU's means over a minute; a value
 * below 0 is not known. */
typedef struct db_sample {
    int gpu;
    int64_t t_ms;             /* the minute's start */
    double util, temp, mem_mb, power;
    double allocated;         /* the fraction of the minute it was held by jobs */
} db_sample;
int db_sample_add(db *d, const db_sample *smp, jerr *e);
/* Minutes before hour_before_ms become hourly means; everything before drop_before_ms goes. */
int db_sample_compact(db *d, int64_t hour_before_ms, int64_t drop_before_ms, jerr *e);
/* All GPUs' means per bucket since since_ms: [{t, util_pct, allocated_pct, temperature_c, power_w, rows}]. */
json_t *db_sample_series(db *d, int64_t since_ms, int64_t bucket_ms, jerr *e);
int64_t db_sample_rows(db *d);
/* Commits what this turn of the event loop wrote (see db.c). On failure (-1; e's code ENOSPC
 * when the disk is full) the transaction is rolled back: the database holds what the last
 * commit that succeeded left, nothing of this one. */
int db_flush(db *d, jerr *e);
int db_schema_version(db *d);
/* The highest job or array number (seq) ever deleted, 0 none, in *out: the next number is above
 * it. -1 with e set when it cannot be read (joblet then does not start: it could give a number
 * twice). */
int db_high_water(db *d, uint64_t *out, jerr *e);

#endif
