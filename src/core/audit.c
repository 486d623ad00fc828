/* The audit trail (audit.h). */
#include "audit.h"

#include "../common/log.h"
#include "../common/util.h"
#include "state.h"

void audit_record(const char *action, int64_t uid, int gpu, const char *job_id, int64_t duration_ms, int64_t memory_mb,
                  const char *detail)
{
    const char *uuid = gpu >= 0 && gpu < core.gpu.inv.n ? core.gpu.inv.gpu[gpu].uuid : NULL;
    audit_rec a = {.ts_ms = now_ms(), .uid = uid, .action = action, .gpu = gpu, .gpu_uuid = uuid, .job = job_id,
                   .duration_ms = duration_ms, .memory_mb = memory_mb, .detail = detail};
    jerr e = {0};
    if (db_audit(core.db, &a, &e) < 0)
        log_err("%s", e.msg);
}

void audit_caller(const char *action, const caller *c, const char *job_id, const char *detail)
{
    bool tls = c->via == CALLER_TLS;
    audit_rec a = {.ts_ms = now_ms(), .uid = c->uid == (uid_t)-1 ? -1 : (int64_t)c->uid, .action = action, .gpu = -1,
                   .job = job_id, .duration_ms = -1, .memory_mb = -1, .detail = detail};
    if (tls) {
        a.person = c->person[0] ? c->person : NULL;
        a.serial = c->serial[0] ? c->serial : NULL;
        a.role = c->person[0] ? authz_role_name(c->role) : NULL; /* known once the certificate passed */
        a.peer = c->peer[0] ? c->peer : NULL;
    }
    jerr e = {0};
    if (db_audit(core.db, &a, &e) < 0)
        log_err("%s", e.msg);
}
