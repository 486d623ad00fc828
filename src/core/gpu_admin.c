/* What admins do to GPUs (docs/health.md): drain (no new jobs, the running ones finish),
 * offline (out of service), online (back to AVAILABLE), through the state machine
 * (gpu_service.c). */
#include "gpu_admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"
#include "audit.h"
#include "gpu_service.h"
#include "gpus.h"
#include "gpu_health.h"
#include "state.h"

json_t *gpu_admin_action(int i, enum gpu_event ev, bool force, uid_t by, jerr *e)
{
    job *js[64];
    size_t n = gpu_health_jobs_on(i, js, 64);
    const gpu_service *h = gpu_service_get(i);
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
    gpu_service_set(i, ev, reason, by);
    /* what the jobs it stops will say of their end */
    gpu_fault f = {.set = true, .gpu = i, .by_uid = by, .ms = now_ms()};
    snprintf(f.uuid, sizeof f.uuid, "%s", core.gpu.inv.gpu[i].uuid);
    snprintf(f.action, sizeof f.action, "%s --force", gpu_admin_action_name(ev));
    const char *note;
    if (ev == GE_ADMIN_DRAIN) {
        if (force)
            gpu_health_lose_jobs(i, &f);
        note = n == 0 ? "no job runs on it; it takes no new ones"
               : force ? "its jobs were stopped (preemptible ones re-queued)"
                       : "its running jobs finish; it takes no new ones";
    } else if (ev == GE_ADMIN_OFFLINE) {
        if (n)
            gpu_health_lose_jobs(i, &f);
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
    audit_record(gpu_admin_action_name(ev), by, i, NULL, -1, -1, detail);
    return json_pack("{s:o,s:s}", "jobs_affected", affected, "note", note);
}
