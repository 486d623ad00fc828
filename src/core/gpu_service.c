/* GPU service states (gpu_service.h). draining, resetting, offline and degraded outlive a
 * restart (table gpu_admin): a GPU whose scrub failed stays out of service after one. */
#include "gpu_service.h"

#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "audit.h"
#include "state.h"

static gpu_service holds[GPU_MAX]; /* zero: every GPU starts in service (GS_AVAILABLE) */
static uint64_t scrubbing;      /* bit i: a scrub helper is zeroing GPU i */
static gpu_service stored[GPU_MAX]; /* what table gpu_admin holds for it; state GS_AVAILABLE: no row */
static uint64_t written; /* bit i: its row was written in the open transaction */
static uint64_t lost;    /* bit i: stored[i] may not be what the table holds (a statement or the commit failed) */

static bool kept(enum gpu_state s)
{
    return s == GS_DRAINING || s == GS_OFFLINE || s == GS_RESETTING || s == GS_DEGRADED;
}

/* Table gpu_admin follows the state: a row while it is in a kept state, with its reason, none
 * otherwise; written only when that changes (not on every scrub of a GPU in service), or when
 * a failure may have taken the row back: a drain answered "not saved" and asked again must
 * write it again, not find it already written. */
static void store(int i)
{
    gpu_service want = holds[i];
    if (!kept(want.state))
        want = (gpu_service){GS_AVAILABLE, "", 0};
    uint64_t bit = (uint64_t)1 << i;
    if (!(lost & bit) && want.state == stored[i].state && !strcmp(want.reason, stored[i].reason))
        return;
    jerr e = {0};
    if (db_gpu_admin_set(core.db, core.gpu.inv.gpu[i].uuid, want.state == GS_AVAILABLE ? NULL : gpu_state_name(want.state),
                         want.reason, want.since_ms, &e) < 0) {
        log_err("gpu %d: table gpu_admin not written (tried again later): %s", i, e.msg);
        lost |= bit;
        return;
    }
    stored[i] = want;
    lost &= ~bit;
    written |= bit;
}

void gpu_service_committed(bool ok)
{
    if (!ok)
        lost |= written;
    written = 0;
}

bool gpu_service_unsaved(void) { return lost != 0; }

void gpu_service_resync(void)
{
    for (int i = 0; i < core.gpu.inv.n && i < GPU_MAX; i++)
        if (lost >> i & 1)
            store(i);
}

const gpu_service *gpu_service_get(int i) { return &holds[i]; }

uint64_t gpu_service_scrubbing(void) { return scrubbing; }

void gpu_service_set_scrubbing(uint64_t gpus)
{
    scrubbing = gpus;
    state_want(WANT_GPUS); /* a GPU waiting for its reset waited for the helper too */
}

int gpu_service_event(int i, enum gpu_event ev, const char *reason)
{
    gpu_service *h = &holds[i];
    enum gpu_state next;
    if (gpu_state_next(h->state, ev, &next) < 0) {
        log_err("gpu %d: %s is not a transition the GPU state machine allows from %s; it stays %s", i,
                gpu_event_name(ev), gpu_state_name(h->state), gpu_state_name(h->state));
        return -1;
    }
    if (next != h->state)
        h->since_ms = now_ms();
    h->state = next;
    if (reason)
        snprintf(h->reason, sizeof h->reason, "%s", reason);
    /* back in service while the helper still zeroes its memory: nobody gets it until it is done */
    if (next == GS_AVAILABLE && scrubbing >> i & 1)
        gpu_service_event(i, GE_SCRUB_START, NULL);
    store(i);
    state_want(WANT_GPUS | WANT_SCHEDULE);
    return (int)h->state;
}

int gpu_service_set(int i, enum gpu_event ev, const char *reason, int64_t by)
{
    /* what it was, as the audit trail has always said it: "in service" unless out of it */
    gpu_report r = gpu_state_report(holds[i].state, false, 0, *core.gpu.inv.gpu[i].problem, false);
    const char *old = r.state == GS_UNUSABLE || r.out_of_service ? gpu_state_name(r.state) : "in service";
    int next = gpu_service_event(i, ev, reason ? reason : "");
    if (next < 0)
        return -1;
    const char *state = gpu_state_name((enum gpu_state)next);
    char detail[400];
    snprintf(detail, sizeof detail, "%s -> %s%s%s", old, state, reason ? ": " : "", reason ? reason : "");
    log_info("gpu %d: %s", i, detail);
    audit_record("state", by, i, NULL, -1, -1, detail);
    return 0;
}

static void restore(const char *uuid, const char *state, const char *reason, int64_t since_ms, void *arg)
{
    int i = gpu_find(&core.gpu.inv, uuid);
    if (i < 0)
        return;
    enum gpu_state s;
    enum gpu_event ev = GE_COUNT;
    if (gpu_state_parse(state, &s) == 0)
        ev = s == GS_DRAINING    ? GE_RESTORE_DRAINING
             : s == GS_RESETTING ? GE_RESTORE_RESETTING
             : s == GS_OFFLINE   ? GE_RESTORE_OFFLINE
             : s == GS_DEGRADED  ? GE_RESTORE_DEGRADED
                                 : GE_COUNT;
    if (ev == GE_COUNT) {
        log_err("gpu %d: table gpu_admin says '%s', not a state kept across a restart; it stays in service", i, state);
        return;
    }
    /* what the table holds is what it will hold: no write back */
    stored[i] = (gpu_service){.state = s, .since_ms = since_ms};
    snprintf(stored[i].reason, sizeof stored[i].reason, "%s", reason ? reason : "");
    if (gpu_service_event(i, ev, reason ? reason : "") >= 0) {
        if (holds[i].state == s && since_ms > 0)
            holds[i].since_ms = since_ms; /* it has been so since before the restart */
        log_info("gpu %d: %s (%s), as before the restart", i, state, holds[i].reason);
    }
}

void gpu_service_load(void)
{
    /* its rows' fate at each commit (state.h): written again after a failed one */
    static const state_rows rows = {.committed = gpu_service_committed, .unsaved = gpu_service_unsaved,
                                    .resync = gpu_service_resync};
    static bool registered;
    if (!registered)
        state_rows_register(&rows);
    registered = true;
    db_gpu_admin_load(core.db, restore, NULL);
}
