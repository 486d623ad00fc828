/* GPU states set by admins and by the XID policy, and the audit trail (docs/health.md).
 * drain: no new jobs, the running ones finish. offline: out of service. online: back to
 * AVAILABLE. States an admin set outlive a restart (table gpu_admin). */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "core.h"
#include "health.h"

void core_audit(const char *action, int64_t uid, int gpu, const char *job_id, int64_t duration_ms, int64_t memory_mb,
                const char *detail)
{
    const char *uuid = gpu >= 0 && gpu < C.gpu.inv.n ? C.gpu.inv.gpu[gpu].uuid : NULL;
    audit_rec a = {now_ms(), uid, action, gpu, uuid, job_id, duration_ms, memory_mb, detail};
    jerr e = {0};
    if (db_audit(C.db, &a, &e) < 0)
        log_err("%s", e.msg);
}

const char *core_gpu_state_name(int i)
{
    const gpu_hold *h = core_gpu_hold(i);
    if (*C.gpu.inv.gpu[i].problem)
        return "unusable";
    if (h->offline)
        return "offline";
    if (h->resetting)
        return "resetting";
    if (h->degraded)
        return "degraded";
    if (h->draining)
        return "draining";
    return NULL; /* the holder decides: allocated, shared, scrubbing, available */
}

/* state: available, draining, resetting, offline. by: the admin's uid, -1 for joblet itself. */
void core_gpu_set_state(int i, const char *state, const char *reason, int64_t by)
{
    gpu_hold *h = core_gpu_hold(i);
    char old[32];
    const char *o = core_gpu_state_name(i);
    snprintf(old, sizeof old, "%s", o ? o : "in service");
    h->draining = !strcmp(state, "draining");
    h->resetting = !strcmp(state, "resetting");
    h->offline = !strcmp(state, "offline");
    if (!strcmp(state, "available"))
        h->degraded = false;
    snprintf(h->reason, sizeof h->reason, "%s", reason ? reason : "");
    jerr e = {0};
    bool keep = h->draining || h->offline || h->resetting;
    if (db_gpu_admin_set(C.db, C.gpu.inv.gpu[i].uuid, keep ? state : NULL, reason, &e) < 0)
        log_err("%s", e.msg);
    char detail[400];
    snprintf(detail, sizeof detail, "%s -> %s%s%s", old, state, reason ? ": " : "", reason ? reason : "");
    log_info("gpu %d: %s", i, detail);
    core_audit("state", by, i, NULL, -1, -1, detail);
}

static void restore(const char *uuid, const char *state, const char *reason, void *arg)
{
    int i = gpu_find(&C.gpu.inv, uuid);
    if (i < 0)
        return;
    gpu_hold *h = core_gpu_hold(i);
    h->draining = !strcmp(state, "draining");
    h->offline = !strcmp(state, "offline");
    h->resetting = !strcmp(state, "resetting");
    snprintf(h->reason, sizeof h->reason, "%s", reason ? reason : "");
    log_info("gpu %d: %s (%s), as before the restart", i, state, h->reason);
}

void core_gpu_admin_load(void) { db_gpu_admin_load(C.db, restore, NULL); }

bool core_is_admin(uid_t uid, gid_t gid)
{
    if (uid == 0)
        return true;
    if (!*C.cfg.admin_group)
        return false;
    struct group *g = getgrnam(C.cfg.admin_group);
    if (!g)
        return false;
    if (g->gr_gid == gid)
        return true;
    struct passwd *pw = getpwuid(uid);
    for (char **m = g->gr_mem; pw && m && *m; m++)
        if (!strcmp(*m, pw->pw_name))
            return true;
    return false;
}

/* POST /v1/gpus/{gpu}/drain|offline|online: the GPU afterwards, and the jobs it touched. */
json_t *core_gpu_admin(int i, const char *action, bool force, uid_t by, jerr *e)
{
    job *js[64];
    size_t n = core_gpu_jobs_on(i, js, 64);
    gpu_hold *h = core_gpu_hold(i);
    json_t *affected = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(affected, json_string(js[k]->id));
    char reason[160];
    snprintf(reason, sizeof reason, "%s by uid %u", !strcmp(action, "drain") ? "drained" : !strcmp(action, "offline") ? "taken offline" : "brought online", (unsigned)by);
    const char *note;
    if (!strcmp(action, "drain")) {
        if (h->offline || h->resetting) {
            json_decref(affected);
            jerr_http(e, 409, "GPU %d is %s (%s); bring it online first", i, h->offline ? "offline" : "resetting",
                      h->reason);
            return NULL;
        }
        core_gpu_set_state(i, "draining", reason, by);
        if (force)
            core_gpu_lose_jobs(i, reason);
        note = n == 0 ? "no job runs on it; it takes no new ones"
               : force ? "its jobs were stopped (preemptible ones re-queued)"
                       : "its running jobs finish; it takes no new ones";
    } else if (!strcmp(action, "offline")) {
        if (n && !force) {
            char ids[200] = "";
            for (size_t k = 0; k < n && strlen(ids) < 150; k++)
                snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%.8s", k ? ", " : "", js[k]->id);
            json_decref(affected);
            jerr_http(e, 409, "GPU %d runs %zu job%s (%s): drain it and wait, or --force to stop %s", i, n,
                      n == 1 ? "" : "s", ids, n == 1 ? "it" : "them");
            return NULL;
        }
        core_gpu_set_state(i, "offline", reason, by);
        if (n)
            core_gpu_lose_jobs(i, reason);
        note = n ? "its jobs were stopped (preemptible ones re-queued)" : "out of service";
    } else {
        if (h->resetting && !force) {
            json_decref(affected);
            jerr_http(e, 409, "GPU %d is waiting for or in a reset (%s); --force to bring it online anyway", i,
                      h->reason);
            return NULL;
        }
        core_gpu_set_state(i, "available", reason, by);
        note = "back in service";
    }
    char detail[300];
    snprintf(detail, sizeof detail, "%s%s; %zu job%s on it", action, force ? " --force" : "", n, n == 1 ? "" : "s");
    core_audit(action, by, i, NULL, -1, -1, detail);
    health_reset_when_idle();
    core_schedule();
    json_t *o = core_gpu_json(i);
    json_object_set_new(o, "jobs_affected", affected);
    json_object_set_new(o, "note", json_string(note));
    return o;
}
