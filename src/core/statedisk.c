/* Room on the state filesystem (statedisk.h). */
#include "statedisk.h"

#include <stdio.h>
#include <sys/statvfs.h>

#include "state.h"

uint64_t statedisk_free(void)
{
    struct statvfs sv;
    if (statvfs(core.cfg.state_dir, &sv) < 0)
        return UINT64_MAX;
    return (uint64_t)sv.f_bfree * sv.f_frsize; /* joblet runs as root: the root-reserved blocks are its too */
}

int statedisk_room(uint64_t need, const char *what, jerr *e)
{
    uint64_t reserve = core.cfg.state_reserve, avail = statedisk_free();
    if (!reserve || avail == UINT64_MAX || (avail > reserve && avail - reserve >= need))
        return 0;
    char needs[64] = "";
    if (need)
        snprintf(needs, sizeof needs, " and this needs %llu MB", (unsigned long long)((need + (1u << 20) - 1) >> 20));
    return jerr_http(e, 507,
                     "%s refused: the state filesystem (%s) has %llu MB free%s, and joblet keeps jobs.state_reserve "
                     "(%llu MB) of it for its database; free space there (rnx job delete removes ended jobs and "
                     "their output) or ask the administrator",
                     what, core.cfg.state_dir, (unsigned long long)(avail >> 20), needs,
                     (unsigned long long)(reserve >> 20));
}
