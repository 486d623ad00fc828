/* What joblet does about an XID (NVIDIA's driver error codes, "XID Errors" in NVIDIA's GPU
 * deployment guide): a pure table lookup, overridable from gpu.xid_policy. */
#ifndef JOBLET_XID_POLICY_H
#define JOBLET_XID_POLICY_H

#include <stddef.h>

enum xid_action {
    XA_APP,          /* an application's own error: the GPU is healthy, nothing to do */
    XA_RESTART_JOB,  /* the jobs on the GPU lost their work: re-queue (preemptible) or fail them */
    XA_DRAIN_RESET,  /* no new jobs; when the running ones have finished, reset and check */
    XA_RESET,        /* stop the jobs on it now (re-queue or fail), then reset and check */
    XA_OFFLINE,      /* stop the jobs on it; out of service until an admin brings it online */
};

typedef struct xid_rule {
    int xid;
    enum xid_action action;
    const char *meaning;
} xid_rule;

#define XID_OVERRIDES_MAX 32
typedef struct xid_policy {
    xid_rule over[XID_OVERRIDES_MAX]; /* from gpu.xid_policy, looked at before the table */
    int n;
} xid_policy;

const char *xid_action_name(enum xid_action a);
/* "79=offline,13=app,94=restart_job": 0, or -1 with err naming the bad item. */
int xid_policy_parse(xid_policy *p, const char *spec, char *err, size_t errlen);
/* The action for an XID, and what the XID means (never NULL). Unknown XIDs: XA_APP. */
enum xid_action xid_policy_action(const xid_policy *p, int xid, const char **meaning);

#endif
