/* The daemon's one state (state.h). */
#include "state.h"

#include "../common/log.h"

core_state core;

void state_commit(void)
{
    jerr e = {0};
    if (db_flush(core.db, &e) < 0)
        log_err("%s", e.msg);
}
