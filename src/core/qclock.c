/* The queue's clock (qclock.h). */
#include "qclock.h"

#include "../common/util.h"

static int64_t qclock_last; /* the latest stamp given or seen */

int64_t qclock_now(void)
{
    int64_t t = now_ms();
    if (t > qclock_last)
        qclock_last = t;
    return qclock_last;
}

void qclock_seen(int64_t ms)
{
    if (ms > qclock_last)
        qclock_last = ms;
}
