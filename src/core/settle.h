/* The settle step (redis's beforeSleep): events and requests only change state and ask for
 * work (state_want, jobs_mark); this one function carries that work out, once per turn of
 * the event loop, in a fixed order:
 *   1. jobs whose run is over give their GPUs back (then scrubbed);
 *   2. the log followers of jobs that ended are told (their readers get the end);
 *   3. workflows decide the dependents of jobs that started or ended;
 *   4. the memory volumes no job left unended uses go (volumes_release);
 *   5. GPUs waiting for a reset get it once idle;
 *   6. the scheduler runs (queue.c), the only place it is run from;
 * steps 1 to 6 again while they asked for more (a start that failed ends a job), at most
 * SETTLE_ROUNDS times, then, once:
 *   7. what changed is published to the console's event streams (publish.c). */
#ifndef JOBLET_SETTLE_H
#define JOBLET_SETTLE_H

#include <stdbool.h>

/* Settles everything asked for so far. main.c runs it at the end of every loop turn; an API
 * answer that describes the new state (a submission and its GPUs) runs it before answering,
 * as it commits the database before answering. */
void settle(void);
/* Work is still asked for (settle stopped after too many rounds): the loop must not sleep. */
bool settle_pending(void);

#endif
