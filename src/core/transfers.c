/* The room uploads and copies share (transfers.h). At most server.max_uploads are open, so a
 * walk of their owners is short. */
#include "transfers.h"

#include <stdlib.h>

#include "../common/util.h"
#include "state.h"

static uid_t *owners;
static size_t nopen, cap;

int transfers_check(uid_t uid, jerr *e)
{
    if (nopen >= core.cfg.max_uploads)
        return jerr_busy(e, "joblet is already receiving or sending %zu uploads and copies (server.max_uploads); "
                            "try again in a moment", nopen);
    size_t mine = 0;
    for (size_t i = 0; i < nopen; i++)
        mine += owners[i] == uid;
    if (mine >= core.cfg.limits.uploads_per_user)
        return jerr_http(e, 429, "uid %u already has %zu uploads and copies open; limits.uploads_per_user is %u: let "
                                 "one finish (or time out after jobs.upload_timeout_s, %llu s) first",
                         (unsigned)uid, mine, core.cfg.limits.uploads_per_user,
                         (unsigned long long)core.cfg.upload_timeout_s);
    return 0;
}

void transfers_add(uid_t uid)
{
    if (nopen == cap) {
        cap = cap ? cap * 2 : 16;
        owners = xrealloc(owners, cap * sizeof *owners);
    }
    owners[nopen++] = uid;
}

void transfers_remove(uid_t uid)
{
    for (size_t i = 0; i < nopen; i++)
        if (owners[i] == uid) {
            owners[i] = owners[--nopen];
            return;
        }
}
