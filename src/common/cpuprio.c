/* joblet's own work above its jobs' (cpuprio.h). */
#include "cpuprio.h"

#include <errno.h>
#include <sched.h>
#include <sys/resource.h>

int cpuprio_raise(pid_t tid, unsigned raise, jerr *e)
{
    if (raise == 0)
        return 0;
    if (raise > 20)
        raise = 20;
    /* the flag first: a task made between the two calls must not inherit the negative nice */
    struct sched_param none = {0};
    if (sched_setscheduler(tid, SCHED_OTHER | SCHED_RESET_ON_FORK, &none) < 0)
        return jerr_sys(e, "sched_setscheduler(%d, SCHED_OTHER|SCHED_RESET_ON_FORK)", (int)tid);
    if (setpriority(PRIO_PROCESS, (id_t)tid, -(int)raise) < 0)
        return jerr_sys(e, "setpriority(%d, nice -%u)", (int)tid, raise);
    return 0;
}
