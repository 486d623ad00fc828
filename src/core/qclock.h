/* The queue's clock: the stamps that order jobs of equal priority (core/queue.c, queue_since:
 * a job's submission, its release, a new --schedule). They are wall-clock milliseconds that
 * never go back: a clock stepped back by Δ (an NTP step, an admin's `date`) would otherwise let
 * every job that joins afterwards go before those that joined in the last Δ. A stamp is the
 * wall clock, or a millisecond past the latest stamp given or loaded when the clock is not past
 * it: each stamp is later than every one before, so a clock stepped back keeps first come, first
 * served (a stamp only equal to the last would let an older job's seq put it first).
 * Stamps are kept in the jobs' and arrays' rows (joined_ms), so a restart goes on from them. */
#ifndef JOBLET_QCLOCK_H
#define JOBLET_QCLOCK_H

#include <stdint.h>

/* A stamp for now: later than every one given or seen. */
int64_t qclock_now(void);

/* A stamp loaded from the database (a job's or array's creation or joining): later ones are
 * never before it. */
void qclock_seen(int64_t ms);

#endif
