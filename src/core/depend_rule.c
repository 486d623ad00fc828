/* The rule of dependencies (depend_rule.h). */
#include "depend_rule.h"

#include <stdio.h>

enum depend_verdict depend_rule(depend_need need, depend_seen seen)
{
    if (!seen.exists)
        return DEPEND_CANCEL;
    bool ended = job_state_terminal(seen.state);
    if (need.kind == JA_STARTED)
        return seen.started || ended ? DEPEND_GO : DEPEND_WAIT;
    if (!ended)
        return DEPEND_WAIT;
    bool ok = seen.state == JS_COMPLETED;
    switch (need.kind) {
    case JA_ANY: return DEPEND_GO;
    case JA_OK:
    case JA_CORR: /* task by task is core/depend.c's; as a whole it is ok */
        return ok ? DEPEND_GO : DEPEND_CANCEL;
    case JA_NOTOK: return ok ? DEPEND_CANCEL : DEPEND_GO;
    case DEPEND_EXACTLY: return seen.state == need.state ? DEPEND_GO : DEPEND_CANCEL;
    default: return DEPEND_CANCEL; /* a kind this version does not know can never hold */
    }
}

enum depend_verdict depend_rule_all(const depend_need *needs, const depend_seen *seen, size_t n, size_t *which)
{
    bool all = true;
    for (size_t i = 0; i < n; i++) {
        enum depend_verdict v = depend_rule(needs[i], seen[i]);
        if (v == DEPEND_CANCEL) {
            if (which)
                *which = i;
            return DEPEND_CANCEL;
        }
        all &= v == DEPEND_GO;
    }
    return all ? DEPEND_GO : DEPEND_WAIT;
}

enum depend_verdict depend_rule_any(const depend_need *needs, const depend_seen *seen, size_t n, size_t *which)
{
    bool none = true;
    for (size_t i = 0; i < n; i++) {
        enum depend_verdict v = depend_rule(needs[i], seen[i]);
        if (v == DEPEND_GO) {
            if (which)
                *which = i;
            return DEPEND_GO;
        }
        none &= v == DEPEND_CANCEL;
    }
    return none ? DEPEND_CANCEL : DEPEND_WAIT;
}

const char *depend_need_words(depend_need need, char *buf, size_t len)
{
    switch (need.kind) {
    case JA_ANY: snprintf(buf, len, "end"); break;
    case JA_OK: snprintf(buf, len, "end COMPLETED"); break;
    case JA_NOTOK: snprintf(buf, len, "end FAILED, STOPPED or CANCELED"); break;
    case JA_STARTED: snprintf(buf, len, "start"); break;
    case JA_CORR: snprintf(buf, len, "end COMPLETED, task by task"); break;
    case DEPEND_EXACTLY: snprintf(buf, len, "end %s", job_state_name((enum job_state)need.state)); break;
    default: snprintf(buf, len, "end (?)"); break;
    }
    return buf;
}
