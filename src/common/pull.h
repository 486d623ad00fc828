/* The contract of a pull source: something a streamed answer reads a piece at a time (a job's
 * log, the event feed, a build's log, a copy's pipe), whatever carries it (api/stream.h). A
 * source's read gives bytes, or none with what that means; a source that has none now calls
 * its notify when it may have some (or has ended). No transport is known here. */
#ifndef JOBLET_PULL_H
#define JOBLET_PULL_H

/* What a read that gave no bytes means. */
enum pull_state {
    PULL_WAIT,                /* nothing now: notify is called when there may be more */
    PULL_END,                 /* the whole of it was read */
    PULL_FAIL,                /* it ends cut short (the reader must be able to tell) */
};

/* Called by a source, on the loop, when a read may give something again. */
typedef void (*pull_notify_fn)(void *arg);

#endif
