/* A job's history (job_events.c): what happened to it, when and by whom — submitted, queued
 * with each new reason it waits for, its GPUs granted, started, stopped, preempted, ended —
 * kept in the database (at most JOB_EVENTS_MAX per job, the oldest dropped and counted) so
 * that it outlives a kill -9 of joblet. `rnx job status --detail` shows it (docs/api.md). The
 * state changes record them: jobs.c, job_launch.c, queue.c, submit.c, workflow.c, job_detail.c;
 * attaches to its terminal: job_term.c. */
#ifndef JOBLET_JOB_EVENTS_H
#define JOBLET_JOB_EVENTS_H

#include <stdint.h>

#include "job.h"

#define JOB_EVENTS_MAX 64

enum job_event {
    JE_SUBMITTED,   /* by its owner; when it is scheduled for later, until when */
    JE_PENDING,     /* a workflow's job, or one with --after (core/depend.h), waits for the jobs it depends on */
    JE_RELEASED,    /* ... and they ended as it needs */
    JE_QUEUED,      /* waits for room: each new reason (queue.c) */
    JE_GRANTED,     /* its GPUs (or MIG device), with the placement's score */
    JE_STARTED,     /* its command runs: the pid */
    JE_STOPPING,    /* asked to stop: by whom, with which signal */
    JE_PREEMPTED,   /* stopped to make room for a job of higher priority */
    JE_REQUEUED,    /* its preempted run ended: back in the queue */
    JE_RESTARTED,   /* joblet restarted while the job had not ended */
    JE_ENDED,       /* its end: state, reason, exit code or signal, by whom */
    JE_ATTACHED,    /* a client attached to its terminal: who, typing or watching (job_term.c) */
    JE_DETACHED,    /* ... and left: who, why (detached, idle, the job's end) */
    JE_EXEC,        /* a process run inside it (rnx job exec): by whom, the command */
    JE_HELD,        /* held (rnx job hold): by whom, the state it had (a released hold: JE_RELEASED) */
    JE_UPDATED,     /* its request changed (rnx job update): by whom, "priority 0 -> 5" */
    JE_SUSPENDED,   /* frozen (rnx job suspend): by whom, the GPUs it keeps */
    JE_RESUMED,     /* thawed (rnx job resume, or to be stopped) */
    JE_SIGNALED,    /* a signal sent to its processes (rnx job kill --signal, or --signal's warning) */
};

/* The event's name as the API spells it ("submitted", ...). */
const char *job_event_name(enum job_event ev);

/* Records an event now (at_ms: at that time), by uid (-1: joblet or nobody), with a detail
 * in words (printf), in the open transaction; kept until a commit takes it, and written again
 * when a failed commit rolled it back. A database error is logged, never fatal. */
void job_event(job *j, enum job_event ev, int64_t uid, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* An array's history, under its id as a job's (an array is one row, and a job only for each task
 * made): who held, released, updated, suspended, requeued or stopped it, which its tasks not made
 * yet cannot say. Deleted with the array's row (db_array_delete). */
void job_event_array(const struct jarray *a, enum job_event ev, int64_t uid, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void job_event_at(job *j, int64_t at_ms, enum job_event ev, int64_t uid, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A job or an array deleted: its events a failed commit lost are not written again (its rows,
 * events included, are deleted in the open transaction). */
void job_events_forget(const char *id);

/* Kept events looked at to write again those a failed commit lost, or to forget a deleted job's
 * (GET /metrics: joblet_event_kept_looks_total): it grows with the turns and the events lost,
 * not with each new event times the events kept. */
uint64_t job_events_looked(void);

/* Whether the job's reason to wait (enum sched_wait) is new since the last JE_QUEUED recorded
 * for it in this run of joblet; marks it recorded. A new run (started, requeued) forgets it. */
int job_event_wait_is_new(job *j, uint8_t why);

#endif
