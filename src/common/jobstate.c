#include "jobstate.h"

#include <string.h>
#include <strings.h>

static const char *const job_names[JS_COUNT] = {"PENDING",   "SCHEDULED", "QUEUED",    "RUNNING", "STOPPING",
                                                "PREEMPTED", "HELD",      "SUSPENDED", "STOPPED", "COMPLETED",
                                                "FAILED",    "CANCELED"};

const char *job_state_name(enum job_state s) { return job_names[s]; }

int job_state_parse(const char *s, enum job_state *out)
{
    for (int i = JS_PENDING; s && i < JS_COUNT; i++)
        if (strcasecmp(s, job_names[i]) == 0) {
            *out = (enum job_state)i;
            return 0;
        }
    return -1;
}

enum job_state job_state_after_hold(bool deps_pending, bool ran_before, int64_t not_before_ms, int64_t now_ms)
{
    if (deps_pending)
        return JS_PENDING;
    if (not_before_ms > now_ms)
        return JS_SCHEDULED;
    return ran_before ? JS_PREEMPTED : JS_QUEUED;
}

static const char *const wf_names[] = {"PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELED"};

const char *wf_state_name(enum wf_state s) { return wf_names[s]; }

int wf_state_parse(const char *s, enum wf_state *out)
{
    for (int i = WF_PENDING; s && i <= WF_CANCELED; i++)
        if (!strcmp(s, wf_names[i])) {
            *out = (enum wf_state)i;
            return 0;
        }
    return -1;
}
