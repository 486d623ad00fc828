/* A job's command resolved in the job's root at submission (docs/api.md, "command"), so that a
 * command the job cannot run is refused before anything is created or granted. */
#ifndef JOBLET_CMDCHECK_H
#define JOBLET_CMDCHECK_H

#include "../common/err.h"
#include "../common/jobreq.h"

/* Looks the command up as the job's exec will: a path with a slash against the job's working
 * directory, a name along the job's PATH (its env's, else job_launch_default_path; a GPU job's also
 * in the CUDA toolkits), in the job's root (its runtime's tree, else the host's system
 * directories the job is given) or among its uploads in /work. A name found only among the
 * uploads becomes their path (train.sh -> ./train.sh). Places the job sees but this cannot know
 * at submission (/volumes/, /opt/, /tmp/) are not checked. Not found: -1, 400 on field
 * "command" naming what exists instead (NAME3, the runtimes having NAME). Work: a few
 * stat()s per PATH entry; the runtimes are looked in only for a refusal. The runtime, when
 * given, was checked before. */
int cmdcheck_resolve(job_req *req, jerr *e);

/* Whether the job will find the directory path (absolute) in its view: /work and /tmp (its
 * own), or a directory beneath the system directories of its root (the runtime's tree, else the
 * host's). Anything else (a host path the job is not given, a runtime that is not there): false. */
bool cmdcheck_dir_visible(const job_req *req, const char *path);

#endif
