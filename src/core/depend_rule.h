/* The rule of dependencies between jobs, pure (no daemon state): given how each job depended
 * on must go and what is known of it now, whether the waiting job waits, goes (joins the
 * queue) or can never go (is CANCELED). One rule for a workflow's jobs (a condition on another
 * job of the workflow, by index: core/workflow.c) and for `rnx job run --after` (a condition
 * on any job, by id: core/depend.c); docs/batch.md, docs/workflows.md. */
#ifndef JOBLET_DEPEND_RULE_H
#define JOBLET_DEPEND_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/jobreq.h"
#include "../common/jobstate.h"

enum depend_verdict { DEPEND_WAIT, DEPEND_GO, DEPEND_CANCEL };

/* A need's kind: enum jobreq_after_state (any, ok, notok, started), or exactly one end state
 * (a workflow's `requires: - a: COMPLETED`). */
#define DEPEND_EXACTLY 16

typedef struct depend_need {
    uint8_t kind;               /* enum jobreq_after_state, or DEPEND_EXACTLY */
    uint8_t state;              /* DEPEND_EXACTLY: the enum job_state it must end in */
} depend_need;

/* What is known of the job depended on. */
typedef struct depend_seen {
    bool exists;                /* false: deleted (it can never end as needed) */
    bool started;               /* its command ran (or runs) */
    enum job_state state;
} depend_seen;

/* One dependency: GO when it holds, CANCEL when it never can any more, else WAIT. A deleted
 * job cancels; `started` holds once the job started or ended (Slurm's after: "started or was
 * cancelled"); `corr` is `ok` here (what it is for two arrays, task by task, is depend.c's). */
enum depend_verdict depend_rule(depend_need need, depend_seen seen);
/* All of them: CANCEL as soon as one cancels (*which: its index), GO when all go, else WAIT. */
enum depend_verdict depend_rule_all(const depend_need *needs, const depend_seen *seen, size_t n, size_t *which);
/* Any one of them (Slurm's '?' list): GO as soon as one goes (*which: its index), CANCEL when all
 * cancel, else WAIT. */
enum depend_verdict depend_rule_any(const depend_need *needs, const depend_seen *seen, size_t n, size_t *which);
/* What the need waits for, in words: "end COMPLETED", "end FAILED, STOPPED or CANCELED",
 * "end", "start", "end COMPLETED, task by task", "end FAILED" (exactly). */
const char *depend_need_words(depend_need need, char *buf, size_t len);

#endif
