/* Volumes (docs/volumes.md): named storage that outlives jobs, mounted into a job at
 * /volumes/NAME. */
#ifndef JOBLET_VOLUMES_H
#define JOBLET_VOLUMES_H

#include <sys/types.h>

#include "../common/err.h"
#include "../common/jobreq.h"

/* At submission: every volume the request names exists and the caller may use it that way.
 * -1, refused on field "volumes", naming the volume and what would be accepted. */
int volumes_check(const job_req *req, uid_t owner, gid_t gid, jerr *e);

#endif
