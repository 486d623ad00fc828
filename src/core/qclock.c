/* The queue's clock (qclock.h). */
#include "qclock.h"

#include "../common/util.h"

static int64_t qclock_last; /* the latest stamp given or seen */

int64_t qclock_now(void)
{
    /* later than every stamp before: within a clock stepped back, a job released (or moved by a
     * new --schedule) still joins after those that joined before it, not beside them, where its
     * older seq would put it first */
    int64_t t = now_ms();
    qclock_last = t > qclock_last ? t : qclock_last + 1;
    return qclock_last;
}

void qclock_seen(int64_t ms)
{
    if (ms > qclock_last)
        qclock_last = ms;
}
