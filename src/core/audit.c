/* The audit trail (audit.h). */
#include "audit.h"

#include "../common/log.h"
#include "../common/util.h"
#include "state.h"

void audit_record(const char *action, int64_t uid, int gpu, const char *job_id, int64_t duration_ms, int64_t memory_mb,
                  const char *detail)
{
    const char *uuid = gpu >= 0 && gpu < core.gpu.inv.n ? core.gpu.inv.gpu[gpu].uuid : NULL;
    audit_rec a = {now_ms(), uid, action, gpu, uuid, job_id, duration_ms, memory_mb, detail};
    jerr e = {0};
    if (db_audit(core.db, &a, &e) < 0)
        log_err("%s", e.msg);
}
