#include "xid_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVIDIA's XID catalog, as far as it decides what happens to the GPU. Application errors leave
 * it in service; memory (ECC) errors that the driver contained cost the jobs their work; those
 * it could not contain, NVLink and GSP faults need a reset; a GPU off the bus needs a person. */
static const xid_rule table[] = {
    {13, XA_APP, "graphics engine exception (an application error)"},
    {31, XA_APP, "GPU memory page fault (an application error)"},
    {43, XA_APP, "GPU stopped processing (an application error)"},
    {45, XA_APP, "preemptive cleanup after earlier errors (the application ended)"},
    {68, XA_APP, "video decoder exception (an application error)"},
    {94, XA_RESTART_JOB, "contained ECC error (the application that hit it must restart)"},
    {48, XA_RESET, "double-bit ECC error"},
    {63, XA_DRAIN_RESET, "ECC page retirement or row remapping recorded (applied at the next reset)"},
    {64, XA_DRAIN_RESET, "ECC page retirement or row remapping failure"},
    {74, XA_RESET, "NVLink error"},
    {79, XA_OFFLINE, "GPU has fallen off the bus"},
    {92, XA_DRAIN_RESET, "high single-bit ECC error rate"},
    {95, XA_RESET, "uncontained ECC error"},
    {119, XA_RESET, "GSP RPC timeout"},
    {120, XA_RESET, "GSP error"},
};

static const char *const names[] = {"app", "restart_job", "drain_reset", "reset", "offline"};

const char *xid_action_name(enum xid_action a) { return names[a]; }

int xid_policy_parse(xid_policy *p, const char *spec, char *err, size_t errlen)
{
    p->n = 0;
    if (!spec || !*spec)
        return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *item = strtok_r(buf, ", ", &save); item; item = strtok_r(NULL, ", ", &save)) {
        char *eq = strchr(item, '='), *end;
        long x = eq ? strtol(item, &end, 10) : -1;
        int a = -1;
        for (int k = 0; eq && k < (int)(sizeof names / sizeof names[0]); k++)
            if (!strcmp(eq + 1, names[k]))
                a = k;
        if (!eq || end != eq || x <= 0 || x > 100000 || a < 0) {
            snprintf(err, errlen, "gpu.xid_policy: '%s' must be XID=ACTION with ACTION one of app, restart_job, "
                                  "drain_reset, reset, offline", item);
            return -1;
        }
        if (p->n == XID_OVERRIDES_MAX) {
            snprintf(err, errlen, "gpu.xid_policy: at most %d overrides", XID_OVERRIDES_MAX);
            return -1;
        }
        p->over[p->n++] = (xid_rule){(int)x, (enum xid_action)a, NULL};
    }
    return 0;
}

enum xid_action xid_policy_action(const xid_policy *p, int xid, const char **meaning)
{
    const char *m = "not in joblet's table (treated as an application error unless gpu.xid_policy says otherwise)";
    enum xid_action a = XA_APP;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].xid == xid) {
            m = table[i].meaning;
            a = table[i].action;
        }
    for (int i = 0; p && i < p->n; i++)
        if (p->over[i].xid == xid)
            a = p->over[i].action;
    if (meaning)
        *meaning = m;
    return a;
}
