#include "gpu_state.h"

#include <stddef.h>
#include <string.h>

static const char *const state_names[GS_COUNT] = {
    [GS_AVAILABLE] = "available", [GS_ALLOCATED] = "allocated", [GS_SHARED] = "shared",
    [GS_SCRUBBING] = "scrubbing", [GS_DRAINING] = "draining",   [GS_RESETTING] = "resetting",
    [GS_DEGRADED] = "degraded",   [GS_OFFLINE] = "offline",     [GS_UNUSABLE] = "unusable",
};

static const char *const event_names[GE_COUNT] = {
    [GE_SCRUB_START] = "scrub start",
    [GE_SCRUB_OK] = "scrub passed",
    [GE_SCRUB_FAIL] = "scrub failed",
    [GE_ADMIN_DRAIN] = "admin drain",
    [GE_ADMIN_OFFLINE] = "admin offline",
    [GE_ADMIN_ONLINE] = "admin online",
    [GE_XID_DRAIN_RESET] = "XID drain_reset",
    [GE_XID_RESET] = "XID reset",
    [GE_XID_OFFLINE] = "XID offline",
    [GE_RESET_DONE] = "reset passed",
    [GE_RESET_FAILED] = "reset failed",
    [GE_RESTORE_DRAINING] = "restored as draining",
    [GE_RESTORE_RESETTING] = "restored as resetting",
    [GE_RESTORE_OFFLINE] = "restored as offline",
    [GE_RESTORE_DEGRADED] = "restored as degraded",
};

/* Every transition a GPU may make, and why. Only the service states appear: allocated, shared
 * and unusable are what gpu_state_report shows, never stored. A (state, event) pair that is
 * not here is refused: the state stays, and the caller logs it as an error.
 *
 * Abbreviations in the comments: "the helper" is joblet-gpu-scrub; "forced online" is an
 * admin's rnx gpu online --force while a reset was under way. */
static const struct transition {
    enum gpu_state from;
    enum gpu_event ev;
    enum gpu_state to;
} table[] = {
    /* ---- memory scrubbing between tenants (gpu_scrub.c) ---- */
    {GS_AVAILABLE, GE_SCRUB_START, GS_SCRUBBING},   /* released: nobody gets it until it is zeroed */
    {GS_DRAINING, GE_SCRUB_START, GS_DRAINING},     /* released while draining: zeroed all the same, still draining */
    {GS_RESETTING, GE_SCRUB_START, GS_RESETTING},   /* released while waiting for a reset: the reset waits for the helper */
    {GS_OFFLINE, GE_SCRUB_START, GS_OFFLINE},       /* its jobs were stopped as it went offline: zeroed, still offline */
    {GS_SCRUBBING, GE_SCRUB_OK, GS_AVAILABLE},      /* clean: back in service */
    {GS_DRAINING, GE_SCRUB_OK, GS_DRAINING},        /* clean; the drain stands */
    {GS_RESETTING, GE_SCRUB_OK, GS_RESETTING},      /* clean; now it can be reset */
    {GS_OFFLINE, GE_SCRUB_OK, GS_OFFLINE},          /* clean; still offline */
    {GS_SCRUBBING, GE_SCRUB_FAIL, GS_DEGRADED},     /* another tenant's data may be left: never handed out */
    {GS_AVAILABLE, GE_SCRUB_FAIL, GS_DEGRADED},     /* the helper could not even be started: the same */
    {GS_DRAINING, GE_SCRUB_FAIL, GS_DEGRADED},      /* worse than draining: an admin must bring it back */
    {GS_RESETTING, GE_SCRUB_FAIL, GS_RESETTING},    /* the reset and its check decide (the reason says why) */
    {GS_OFFLINE, GE_SCRUB_FAIL, GS_OFFLINE},        /* out of service already (the reason says why) */

    /* ---- admins: rnx gpu drain|offline|online (gpu_admin.c) ---- */
    {GS_AVAILABLE, GE_ADMIN_DRAIN, GS_DRAINING},    /* no new jobs; running ones finish (or --force stops them) */
    {GS_SCRUBBING, GE_ADMIN_DRAIN, GS_DRAINING},    /* the helper finishes; then it stays draining */
    {GS_DRAINING, GE_ADMIN_DRAIN, GS_DRAINING},     /* again, e.g. with --force to stop the running jobs now */
    {GS_DEGRADED, GE_ADMIN_DRAIN, GS_DRAINING},     /* takes no jobs either way; online brings it back as before */
    /* not from RESETTING or OFFLINE: the API answers 409, bring it online first */
    {GS_AVAILABLE, GE_ADMIN_OFFLINE, GS_OFFLINE},   /* refused by the API while jobs run, unless --force */
    {GS_SCRUBBING, GE_ADMIN_OFFLINE, GS_OFFLINE},
    {GS_DRAINING, GE_ADMIN_OFFLINE, GS_OFFLINE},
    {GS_RESETTING, GE_ADMIN_OFFLINE, GS_OFFLINE},   /* a reset under way still finishes; it stays offline */
    {GS_DEGRADED, GE_ADMIN_OFFLINE, GS_OFFLINE},
    {GS_OFFLINE, GE_ADMIN_OFFLINE, GS_OFFLINE},     /* again: a new reason */
    {GS_AVAILABLE, GE_ADMIN_ONLINE, GS_AVAILABLE},  /* nothing to undo */
    {GS_SCRUBBING, GE_ADMIN_ONLINE, GS_SCRUBBING},  /* in service already; the helper is not cut short */
    {GS_DRAINING, GE_ADMIN_ONLINE, GS_AVAILABLE},
    {GS_RESETTING, GE_ADMIN_ONLINE, GS_AVAILABLE},  /* the API asks for --force: the reset is skipped */
    {GS_DEGRADED, GE_ADMIN_ONLINE, GS_AVAILABLE},   /* the admin vouches for it */
    {GS_OFFLINE, GE_ADMIN_ONLINE, GS_AVAILABLE},

    /* ---- the XID policy (gpu_health.c, xid_policy.c) ---- */
    {GS_AVAILABLE, GE_XID_DRAIN_RESET, GS_RESETTING}, /* no new jobs; reset once the running ones end */
    {GS_SCRUBBING, GE_XID_DRAIN_RESET, GS_RESETTING}, /* reset once the helper is done */
    {GS_DRAINING, GE_XID_DRAIN_RESET, GS_RESETTING},  /* the reset brings it back in service */
    {GS_DEGRADED, GE_XID_DRAIN_RESET, GS_RESETTING},  /* the reset and its check decide */
    {GS_OFFLINE, GE_XID_DRAIN_RESET, GS_OFFLINE},     /* offline waits for an admin, not for a reset */
    /* not from RESETTING: already waiting for its reset (gpu_health.c does not send it then) */
    {GS_AVAILABLE, GE_XID_RESET, GS_RESETTING},     /* its jobs are stopped; reset once idle */
    {GS_SCRUBBING, GE_XID_RESET, GS_RESETTING},
    {GS_DRAINING, GE_XID_RESET, GS_RESETTING},
    {GS_RESETTING, GE_XID_RESET, GS_RESETTING},     /* another fatal XID: one reset will do (a new reason) */
    {GS_DEGRADED, GE_XID_RESET, GS_RESETTING},
    {GS_OFFLINE, GE_XID_RESET, GS_OFFLINE},         /* offline waits for an admin, not for a reset */
    {GS_AVAILABLE, GE_XID_OFFLINE, GS_OFFLINE},     /* fallen off the bus: a person must look */
    {GS_SCRUBBING, GE_XID_OFFLINE, GS_OFFLINE},
    {GS_DRAINING, GE_XID_OFFLINE, GS_OFFLINE},
    {GS_RESETTING, GE_XID_OFFLINE, GS_OFFLINE},     /* a reset under way still finishes; it stays offline */
    {GS_DEGRADED, GE_XID_OFFLINE, GS_OFFLINE},
    {GS_OFFLINE, GE_XID_OFFLINE, GS_OFFLINE},

    /* ---- the reset's outcome (gpu_health.c) ---- */
    {GS_RESETTING, GE_RESET_DONE, GS_AVAILABLE},    /* reset and checked: back in service */
    {GS_AVAILABLE, GE_RESET_DONE, GS_AVAILABLE},    /* forced online meanwhile: nothing to change */
    {GS_SCRUBBING, GE_RESET_DONE, GS_SCRUBBING},    /* forced online, used and released meanwhile */
    {GS_DRAINING, GE_RESET_DONE, GS_DRAINING},      /* drained after it was forced online: the drain stands */
    {GS_DEGRADED, GE_RESET_DONE, GS_DEGRADED},      /* a scrub failed after it was forced online: still degraded */
    {GS_OFFLINE, GE_RESET_DONE, GS_OFFLINE},        /* taken offline meanwhile (admin, XID 79): stays offline */
    {GS_RESETTING, GE_RESET_FAILED, GS_OFFLINE},    /* a GPU that cannot be reset needs a person */
    {GS_AVAILABLE, GE_RESET_FAILED, GS_OFFLINE},    /* even if forced online meanwhile */
    {GS_SCRUBBING, GE_RESET_FAILED, GS_OFFLINE},
    {GS_DRAINING, GE_RESET_FAILED, GS_OFFLINE},
    {GS_DEGRADED, GE_RESET_FAILED, GS_OFFLINE},
    {GS_OFFLINE, GE_RESET_FAILED, GS_OFFLINE},      /* a new reason: the failed reset */

    /* ---- a restart: what table gpu_admin kept (gpu_admin.c); every GPU starts in service ---- */
    {GS_AVAILABLE, GE_RESTORE_DRAINING, GS_DRAINING},
    {GS_AVAILABLE, GE_RESTORE_RESETTING, GS_RESETTING}, /* reset once idle, as before the restart */
    {GS_AVAILABLE, GE_RESTORE_OFFLINE, GS_OFFLINE},
    {GS_AVAILABLE, GE_RESTORE_DEGRADED, GS_DEGRADED}, /* never zeroed: not handed out until an admin vouches */
};

int gpu_state_next(enum gpu_state s, enum gpu_event ev, enum gpu_state *next)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].from == s && table[i].ev == ev) {
            *next = table[i].to;
            return 0;
        }
    return -1;
}

const char *gpu_state_name(enum gpu_state s)
{
    return (unsigned)s < GS_COUNT ? state_names[s] : "unknown";
}

int gpu_state_parse(const char *name, enum gpu_state *s)
{
    for (int i = 0; name && i < GS_COUNT; i++)
        if (strcmp(name, state_names[i]) == 0) {
            *s = (enum gpu_state)i;
            return 0;
        }
    return -1;
}

const char *gpu_event_name(enum gpu_event ev)
{
    return (unsigned)ev < GE_COUNT ? event_names[ev] : "unknown event";
}

static const struct {
    const char *name;
    enum gpu_event ev;
} admin_actions[] = {{"drain", GE_ADMIN_DRAIN}, {"offline", GE_ADMIN_OFFLINE}, {"online", GE_ADMIN_ONLINE}};

int gpu_admin_action_parse(const char *action, enum gpu_event *ev)
{
    for (size_t i = 0; action && i < sizeof admin_actions / sizeof admin_actions[0]; i++)
        if (strcmp(action, admin_actions[i].name) == 0) {
            *ev = admin_actions[i].ev;
            return 0;
        }
    return -1;
}

const char *gpu_admin_action_name(enum gpu_event ev)
{
    for (size_t i = 0; i < sizeof admin_actions / sizeof admin_actions[0]; i++)
        if (admin_actions[i].ev == ev)
            return admin_actions[i].name;
    return NULL;
}

gpu_report gpu_state_report(enum gpu_state service, bool exclusive, int tenants, bool problem, bool hot)
{
    gpu_report r = {service, false, false};
    r.out_of_service = service == GS_DRAINING || service == GS_RESETTING || service == GS_DEGRADED ||
                       service == GS_OFFLINE;
    if (problem)
        r.state = GS_UNUSABLE;
    else if (!r.out_of_service)
        r.state = exclusive ? GS_ALLOCATED : tenants > 0 ? GS_SHARED : service;
    /* an allocated or shared GPU still "takes jobs": it is in service, jobs wait for it */
    r.takes_jobs = !problem && service == GS_AVAILABLE && !hot;
    return r;
}

bool gpu_state_hot(bool was_hot, int temperature_c, int max_c)
{
    if (!was_hot)
        return temperature_c > max_c;
    return !(temperature_c >= 0 && temperature_c <= max_c - 5);
}
