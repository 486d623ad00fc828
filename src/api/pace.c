/* The pace of a streamed body (pace.h). */
#include "pace.h"

#include "../common/util.h"

void pace_start(pace *p)
{
    p->start_ns = mono_ns();
    p->got = 0;
}

bool pace_ok(pace *p, uint64_t n, uint64_t left, uint64_t timeout_s)
{
    p->got += n;
    if (p->got >= PACE_FLOOR || left == 0) {
        pace_start(p);
        return true;
    }
    return mono_ns() - p->start_ns <= (int64_t)timeout_s * 1000000000LL;
}
