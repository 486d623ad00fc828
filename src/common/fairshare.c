/* One user's take of a shared, bounded count (fairshare.h). */
#include "fairshare.h"

enum fairshare_verdict fairshare_take(const fairshare *f, uint64_t held, uint64_t mine, uint64_t n, bool admin)
{
    if (held > f->bound || n > f->bound - held)
        return FAIRSHARE_FULL;
    if (admin)
        return FAIRSHARE_OK;
    if (mine > f->share || n > f->share - mine)
        return FAIRSHARE_SHARE;
    /* into the reserve: the user's own count with the take at most floor */
    uint64_t open = f->bound > f->reserve ? f->bound - f->reserve : 0;
    if (held + n > open && mine + n > f->floor)
        return FAIRSHARE_RESERVED;
    return FAIRSHARE_OK;
}

fairshare fairshare_of(uint64_t bound, uint64_t most, uint64_t floor)
{
    uint64_t share = bound / 4;
    if (most && share > most)
        share = most;
    if (share < floor)
        share = floor;
    return (fairshare){.bound = bound, .share = share, .reserve = bound / 8, .floor = floor};
}
