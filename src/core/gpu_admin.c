/* GPU states, changed by admins, the XID policy and memory scrubs through the state machine
 * (gpu/gpu_state.c), and the audit trail (docs/health.md). drain: no new jobs, the running
 * ones finish. offline: out of service. online: back to AVAILABLE. draining, resetting and
 * offline outlive a restart (table gpu_admin). */
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

static gpu_hold holds[GPU_MAX]; /* zero: every GPU starts in service (GS_AVAILABLE) */

const gpu_hold *core_gpu_hold(int i) { return &holds[i]; }

int core_gpu_event(int i, enum gpu_event ev, const char *reason)
{
    gpu_hold *h = &holds[i];
    enum gpu_state next;
    if (gpu_state_next(h->state, ev, &next) < 0) {
        log_err("gpu %d: %s is not a transition the GPU state machine allows from %s; it stays %s", i,
                gpu_event_name(ev), gpu_state_name(h->state), gpu_state_name(h->state));
        return -1;
    }
    h->state = next;
    if (reason)
        snprintf(h->reason, sizeof h->reason, "%s", reason);
    /* back in service while the helper still zeroes its memory: nobody gets it until it is done */
    if (next == GS_AVAILABLE && core_gpu_scrub_busy() >> i & 1)
        core_gpu_event(i, GE_SCRUB_START, NULL);
    return (int)next;
}

int core_gpu_set_state(int i, enum gpu_event ev, const char *reason, int64_t by)
{
    /* what it was, as the audit trail has always said it: "in service" unless out of it */
    gpu_report r = core_gpu_report(i);
    const char *old = r.state == GS_UNUSABLE || r.out_of_service ? gpu_state_name(r.state) : "in service";
    int next = core_gpu_event(i, ev, reason ? reason : "");
    if (next < 0)
        return -1;
    const char *state = gpu_state_name((enum gpu_state)next);
    bool keep = next == GS_DRAINING || next == GS_OFFLINE || next == GS_RESETTING;
    jerr e = {0};
    if (db_gpu_admin_set(C.db, C.gpu.inv.gpu[i].uuid, keep ? state : NULL, reason, &e) < 0)
        log_err("%s", e.msg);
    char detail[400];
    snprintf(detail, sizeof detail, "%s -> %s%s%s", old, state, reason ? ": " : "", reason ? reason : "");
    log_info("gpu %d: %s", i, detail);
    core_audit("state", by, i, NULL, -1, -1, detail);
    return 0;
}

static void restore(const char *uuid, const char *state, const char *reason, void *arg)
{
    int i = gpu_find(&C.gpu.inv, uuid);
    if (i < 0)
        return;
    enum gpu_state s;
    enum gpu_event ev = GE_COUNT;
    if (gpu_state_parse(state, &s) == 0)
        ev = s == GS_DRAINING    ? GE_RESTORE_DRAINING
             : s == GS_RESETTING ? GE_RESTORE_RESETTING
             : s == GS_OFFLINE   ? GE_RESTORE_OFFLINE
                                 : GE_COUNT;
    if (ev == GE_COUNT) {
        log_err("gpu %d: table gpu_admin says '%s', not a state kept across a restart; it stays in service", i, state);
        return;
    }
    if (core_gpu_event(i, ev, reason ? reason : "") >= 0)
        log_info("gpu %d: %s (%s), as before the restart", i, state, holds[i].reason);
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
    enum gpu_event ev;
    if (gpu_admin_action_parse(action, &ev) < 0) {
        jerr_http(e, 404, "no GPU action '%s': use drain, offline or online", action);
        return NULL;
    }
    job *js[64];
    size_t n = core_gpu_jobs_on(i, js, 64);
    const gpu_hold *h = core_gpu_hold(i);
    enum gpu_state next;
    if (gpu_state_next(h->state, ev, &next) < 0) {
        /* drain: not while offline or resetting */
        jerr_http(e, 409, "GPU %d is %s (%s); bring it online first", i, gpu_state_name(h->state), h->reason);
        return NULL;
    }
    char reason[160];
    snprintf(reason, sizeof reason, "%s by uid %u", ev == GE_ADMIN_DRAIN ? "drained" : ev == GE_ADMIN_OFFLINE ? "taken offline" : "brought online", (unsigned)by);
    if (ev == GE_ADMIN_OFFLINE && n && !force) {
        char ids[200] = "";
        for (size_t k = 0; k < n && strlen(ids) < 150; k++)
            snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%.8s", k ? ", " : "", js[k]->id);
        jerr_http(e, 409, "GPU %d runs %zu job%s (%s): drain it and wait, or --force to stop %s", i, n,
                  n == 1 ? "" : "s", ids, n == 1 ? "it" : "them");
        return NULL;
    }
    if (ev == GE_ADMIN_ONLINE && h->state == GS_RESETTING && !force) {
        jerr_http(e, 409, "GPU %d is waiting for or in a reset (%s); --force to bring it online anyway", i, h->reason);
        return NULL;
    }
    core_gpu_set_state(i, ev, reason, by);
    const char *note;
    if (ev == GE_ADMIN_DRAIN) {
        if (force)
            core_gpu_lose_jobs(i, reason);
        note = n == 0 ? "no job runs on it; it takes no new ones"
               : force ? "its jobs were stopped (preemptible ones re-queued)"
                       : "its running jobs finish; it takes no new ones";
    } else if (ev == GE_ADMIN_OFFLINE) {
        if (n)
            core_gpu_lose_jobs(i, reason);
        note = n ? "its jobs were stopped (preemptible ones re-queued)" : "out of service";
    } else {
        note = "back in service";
    }
    json_t *affected = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(affected, json_string(js[k]->id));
    char detail[300];
    snprintf(detail, sizeof detail, "%s%s; %zu job%s on it", gpu_admin_action_name(ev), force ? " --force" : "", n,
             n == 1 ? "" : "s");
    core_audit(gpu_admin_action_name(ev), by, i, NULL, -1, -1, detail);
    health_reset_when_idle();
    core_schedule();
    json_t *o = core_gpu_json(i);
    json_object_set_new(o, "jobs_affected", affected);
    json_object_set_new(o, "note", json_string(note));
    return o;
}
