/* What a joblet killed at the wrong moment (kill -9 in the middle of a 10,000-job workflow's
 * submission) left on disk for jobs the database does not hold: swept once at start, after the
 * jobs are loaded and re-adopted and before the API answers. Only what is named by a job ID
 * that no job has is taken: a job directory under <state>/jobs, its /work on its owner's
 * filesystem, its gVisor bundle, its cgroup (its processes killed first). Streamed uploads an
 * earlier joblet did not finish are incoming_clean_stale's. */
#ifndef JOBLET_CORE_ORPHANS_H
#define JOBLET_CORE_ORPHANS_H

#include <stdbool.h>

/* A name that is a job ID (a UUID as uuid_v4 writes it), followed by nothing or by one of
 * the suffixes joblet adds to it ('.' and more). */
bool orphans_named_by_id(const char *name, char id[37]);

/* Sweeps what no known job owns, and runs of known jobs that no row records (a shim forked
 * before joblet was killed, its start not committed: killed, the job starts again); says in
 * the log what it removed. */
void orphans_sweep(void);

#endif
