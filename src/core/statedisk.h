/* Room on the state filesystem (the state directory's disk: the database, job directories and
 * output, the owners' /work images, volumes). joblet keeps jobs.state_reserve of it free for its
 * database: growth that users ask for (a job, a workflow, an upload, a volume, a runtime
 * build) is refused below it, and the shims stop writing job output below half of it
 * (exec/logwriter.h), so that the state changes of jobs already running can still be saved. */
#ifndef JOBLET_CORE_STATEDISK_H
#define JOBLET_CORE_STATEDISK_H

#include <stdint.h>

#include "../common/err.h"

/* Bytes free on the state filesystem for joblet (root), UINT64_MAX when it cannot be read. */
uint64_t statedisk_free(void);

/* 0 when the state filesystem keeps jobs.state_reserve free after `need` more bytes; else -1
 * and a 507 naming what was refused (`what`: "new jobs", "this upload", ...), the room left
 * and the reserve. jobs.state_reserve 0: never refused. */
int statedisk_room(uint64_t need, const char *what, jerr *e);

#endif
