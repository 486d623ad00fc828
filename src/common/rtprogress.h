/* How far a runtime build has come, read from its log (rtprogress.c): the daemon and every
 * follower of a build's log feed the lines through the same table, so rnx's progress bar is
 * the same whoever watches and whenever they start watching. */
#ifndef JOBLET_RTPROGRESS_H
#define JOBLET_RTPROGRESS_H

#include <stddef.h>

typedef struct rtprogress {
    int percent;              /* 0..100, never goes back */
    char phase[64];           /* "downloading packages", "installing packages", ... */
    int from, to;             /* the current phase's span of the bar (to 0: no count moves it) */
    int total;                /* packages apt said it installs ("N newly installed"), 0 before */
    int got, unpacked, set_up;/* of those, in this phase: fetched ("Get:N"), unpacked, set up */
} rtprogress;

void rtprogress_init(rtprogress *p);
/* One line of the log (without its newline). */
void rtprogress_feed(rtprogress *p, const char *line, size_t len);

#endif
