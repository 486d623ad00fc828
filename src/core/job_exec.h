/* A process run inside a running job (rnx job exec; docs/api.md, "Interactive streams: exec"):
 * one joblet-exec helper per exec (exec/exec_main.c), which plans from the job's own spec and
 * starts the process in the job's cgroup, namespaces and root, as its user, under its seccomp
 * filter, with no capabilities (under gVisor, through `runsc exec`: exec/gvisor.h). core/
 * starts the helper and hands api/attach.c the socket that carries its frames
 * (common/termframe.h); it never sees the bytes.
 *
 * Who may: the job's owner, or a role the authorization table allows (AUTHZ_OTHERS_EXEC); a
 * reader changes nothing (http.c). At most JOB_EXEC_MAX execs run in one job at once, and at most
 * limits.exec_sessions_per_user run for one user in all jobs together (not for AUTHZ_UNLIMITED). Each is
 * recorded in the job's events ("exec": who, the command) and in the audit trail. */
#ifndef JOBLET_JOB_EXEC_H
#define JOBLET_JOB_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "authz.h"
#include "job.h"

#define JOB_EXEC_MAX 8

/* Starts r's command (command, args, env on top of the job's, workdir, tty, stdin_open; the
 * rest of r is not looked at) in job j for who. 0 with *fd, the daemon's end of the helper's
 * socket (non-blocking, close-on-exec: closing it ends the exec), and *serial, the exec's number
 * (job_exec_running), or -1 with e: 403 not who's job, 409 the job is not running, 429
 * JOB_EXEC_MAX execs run in it or who's limits.exec_sessions_per_user execs run, 500 the helper
 * could not start. An exec counts until both its helper and its stream have ended:
 * held_on_job, held_of_user are the streams still open, in j and of who's, of execs whose helper
 * ended (a client that has not read what an ended helper wrote); a helper still running is
 * counted here, its stream open or not. */
int job_exec_start(job *j, const job_req *r, const caller *who, unsigned held_on_job, unsigned held_of_user, int *fd,
                   uint64_t *serial, jerr *e);
/* Whether the helper of the exec numbered serial still runs. */
bool job_exec_running(uint64_t serial);
/* How many execs run in job j now. */
unsigned job_exec_count(const job *j);
/* The daemon stops: every helper is killed (each kills its process). */
void job_exec_stop_all(void);

#endif
