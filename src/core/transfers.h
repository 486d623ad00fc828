/* Streamed transfers open at once: uploads (incoming.h) and copies in and out of jobs
 * (job_cp.h) take the same room, server.max_uploads on the machine and
 * limits.uploads_per_user for each user, so that a user who stalls them holds only their own
 * share and the daemon's processes, pipes and files stay bounded. */
#ifndef JOBLET_CORE_TRANSFERS_H
#define JOBLET_CORE_TRANSFERS_H

#include <sys/types.h>

#include "../common/err.h"

/* Whether uid may open one more: 503 when the machine's are all taken, 429 when uid's are. */
int transfers_check(uid_t uid, jerr *e);
/* One more of uid's is open; one of uid's has ended. */
void transfers_add(uid_t uid);
void transfers_remove(uid_t uid);

#endif
