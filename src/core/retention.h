/* Ended jobs deleted jobs.keep_ended_s after their end, as rnx job delete-all deletes them
 * (Slurm's MinJobAge; retention.c). */
#ifndef JOBLET_RETENTION_H
#define JOBLET_RETENTION_H

#include <stdint.h>

/* When retention_tick is next due (ms since the epoch); 0: never (jobs.keep_ended_s 0). */
int64_t retention_due_ms(void);
/* One slice of the deletes, when due: called from the loop's turn. */
void retention_tick(int64_t now);

#endif
