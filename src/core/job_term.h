/* A job's terminal, the daemon's side (docs/api.md, "Interactive streams"): who may attach, the
 * connection to the job's shim (exec/shim_term.h: it listens on SHIM_ATTACH in the job's
 * directory once it has said "T"), and the attachers that wait until it does (a job still in
 * the queue, or whose shim is starting). core/ hands api/attach.c a connected socket and never
 * sees the bytes. */
#ifndef JOBLET_JOB_TERM_H
#define JOBLET_JOB_TERM_H

#include <stddef.h>

#include "../common/err.h"
#include "authz.h"
#include "job.h"

typedef struct job_term_waiter {
    void (*fn)(void *arg);   /* called once, when the job's terminal may take clients or the job ended */
    void *arg;
    job *j;                  /* the job waited on; NULL when not waiting */
    struct job_term_waiter *next;
} job_term_waiter;

/* 0 when who may attach to j's terminal, else -1 with e: 403 not theirs (authz.c:
 * AUTHZ_OTHERS_TERMINALS), 409 the job has no terminal or has ended. */
int job_term_check(const job *j, const caller *who, jerr *e);
/* Whether one more client may attach to j: on_job clients are attached to it now, of_user by
 * who's uid to any job. 0, or -1 with e: 429 naming the bound exceeded (jobs.max_attachers,
 * limits.attach_sessions_per_user; the latter not for a role the authorization table leaves
 * unbounded: AUTHZ_UNLIMITED). */
int job_term_admit(const job *j, const caller *who, size_t on_job, size_t of_user, jerr *e);
/* who in words, for the other attachers' terminals: "uid 1000", or a certificate's person
 * "alice (uid 1000)". */
void job_term_who(const caller *who, char *out, size_t len);
/* An attach to job id began (who types, or watches) or ended (why: "detached", ...): recorded in
 * the job's events (JE_ATTACHED, JE_DETACHED) and the audit trail (actions "attach", "detach"). */
void job_term_attached(const char *id, const caller *who, bool types);
void job_term_detached(const char *id, const caller *who, const char *why);
/* A non-blocking connection to j's shim: 1 with *fd; 0 when the shim does not take clients
 * yet (wait with job_term_wait); -1 with e (the job ended: 409; the shim's socket is full: 503). */
int job_term_connect(job *j, int *fd, jerr *e);
/* w->fn(w->arg) once j's shim says it takes clients, or j ends or is deleted. */
void job_term_wait(job *j, job_term_waiter *w, void (*fn)(void *arg), void *arg);
void job_term_unwait(job_term_waiter *w);
/* Calls (and forgets) every waiter of j: its shim takes clients ("T"), it ended, or it goes. */
void job_term_wake(job *j);
/* For an attacher whose job ended before its terminal was up: the code rnx exits with (as rnx
 * job run --follow's: the exit code, 128 + a signal, else 1) and a sentence why. */
int job_term_exit_code(const job *j);
void job_term_why(const job *j, char *out, size_t len);

#endif
