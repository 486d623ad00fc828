/* Workflows: jobs with dependencies (docs/workflows.md). The engine is event-driven: a job's
 * conditions are looked at when one of the jobs it depends on ends, never on a timer. */
#ifndef JOBLET_WORKFLOW_H
#define JOBLET_WORKFLOW_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "../common/err.h"
#include "../common/idref.h"
#include "../store/db.h"
#include "authz.h"
#include "job.h"
#include "volumes.h"

typedef struct wf_cond {
    size_t dep;                /* index of the job it waits for */
    enum job_state status;     /* the terminal state that job must end in */
} wf_cond;

struct jarray;

typedef struct wf_job {
    char *name;                /* its name in the workflow */
    job *j;                    /* NULL once the job was deleted; NULL for an array */
    uint64_t array_seq;        /* an array (its request's `array`): its seq (arrays_by_seq: NULL once
                                * deleted); 0 a job */
    wf_cond *conds;
    size_t nconds;
    uint32_t handled;          /* bit 1 << state: some job of the workflow requires this one to end so
                                * (workflow_add sets it; refresh asks it for each ended job) */
} wf_job;

typedef struct workflow {
    char id[37];
    uint64_t seq;
    uid_t owner_uid;
    gid_t owner_gid;
    enum wf_state state;
    bool all_ended;            /* each of its jobs and arrays ended (refresh): CANCELED is said at once,
                                * while its running jobs are still being stopped */
    uint8_t ev_state;          /* state + 1 as last published (publish.c); 0 none */
    bool ev_listed;            /* in the list workflow_take_changed hands out */
    bool gc_listed;            /* in the list workflow_drop_gone looks at */
    bool dropping;             /* workflow_drop_gone drops it (the list's compaction) */
    int64_t created_ms, started_ms, ended_ms;
    int64_t canceled_by;       /* uid; -1 = not canceled */
    char *reason;              /* why it FAILED or was CANCELED */
    /* As submitted, kept for the database and the API's answers (workflow_json.c): name,
     * description, source, yaml, jobs [{name, requires}] (requests live in the jobs
     * themselves). The engine reads the typed jobs[] instead. */
    json_t *doc;
    uint64_t text_bytes;       /* doc's name, description, source and yaml (workflow_doc_bytes) */
    wf_job *jobs;
    size_t n;
} workflow;

/* A network the workflow creates when it is missing (a job's network: {name, cidr}). */
typedef struct wf_network {
    const char *name;          /* borrowed from the body */
    const char *cidr;          /* as given ("10.10.0.0/24"), borrowed */
} wf_network;

/* A submitted workflow, its shape checked at the API's edge (workflow_json_parse). */
typedef struct wf_body {
    size_t n;
    wf_job *jobs;              /* names and conditions; no job yet */
    json_t **requests;         /* each job's request, borrowed from the body */
    json_t *doc;               /* what the workflow keeps as submitted (workflow.doc) */
    const char *name;          /* in doc */
    volume_req *volumes;       /* volumes the workflow creates when missing (names borrowed) */
    size_t nvolumes;
    wf_network *networks;      /* networks the workflow creates when missing */
    size_t nnetworks;
} wf_body;
void workflow_body_free(wf_body *b);

/* The volumes the workflow creates (its file's volumes: items with a size), each created
 * unless it exists exactly so (volumes_create). 0: all ready; VOLUMES_PENDING: some are being
 * created and done(arg, ...) is called when one of them is; -1: refused, on field
 * "volumes[i]...". */
int workflow_volumes(const wf_body *b, uid_t uid, gid_t gid, volumes_done_fn done, void *arg, jerr *e);

/* The networks the workflow creates, each made unless it exists as one the submitter may use
 * with the same addresses (networks_precheck, networks_create). Made at once; they outlive the
 * workflow. 0, or -1: refused, on field "networks[i]..." (those made before it stay). */
int workflow_networks(const wf_body *b, const caller *who, jerr *e);

/* POST /v1/workflows: every job's request is checked (the schema, the machine, the limits of
 * all together) before anything is created; an invalid workflow creates nothing. On success
 * the workflow takes b over. */
workflow *workflow_submit(wf_body *b, const caller *who, jerr *e);
/* The same checks, nothing created and no rate limit used up (POST /v1/workflows?dry_run=1,
 * rnx workflow validate, and before the volumes a workflow creates are made): 0, or -1 and the
 * refusal workflow_submit would give. The volumes and networks the workflow creates count as
 * there when they would be created (volumes_precheck, networks_precheck). */
int workflow_check(wf_body *b, const caller *who, jerr *e);
/* workflow_submit's two halves, for a workflow whose uploads follow (core/incoming.c): every
 * job's request read and checked (as workflow_check, and keeping what was checked), then the
 * workflow and its jobs created from it (c is consumed either way; b as by workflow_submit). */
typedef struct wf_checked {
    size_t n;
    job_req *reqs;
    struct submit_info *si;   /* submit.h */
} wf_checked;
int workflow_prepare(wf_body *b, const caller *who, wf_checked *c, jerr *e);
workflow *workflow_create(wf_body *b, wf_checked *c, uid_t uid, gid_t gid, jerr *e);
void workflow_checked_free(wf_checked *c);
/* The daemon's workflow made of a row (read from the database at start, or a new one's): it
 * takes the row's reason and doc, leaving the row without them; no jobs yet. */
workflow *workflow_new(db_workflow *r);
/* Into the daemon's list (a submitted one, or one read from the database at start). */
void workflow_add(workflow *wf);
/* The bytes of what a workflow keeps of itself besides its jobs' requests: the name,
 * description, source and YAML of its doc (up to 1 MiB and 64 KiB: kept in memory and in its
 * row as long as it is). */
uint64_t workflow_doc_bytes(const json_t *doc);
/* Those of the user's workflows kept, together: counted for limits.max_request_bytes_per_user. */
uint64_t workflow_owner_bytes(uid_t uid);
/* The workflows (workflow *) whose state may have changed since the last call (added, or refreshed to a new
 * state), each once; the caller frees the vector. The event feed publishes these alone, not
 * every workflow kept (publish.c), which no bound keeps few. */
void **workflow_take_changed(size_t *n);
/* As jobs_find: by full id, else by name (exactly one), else by unique id prefix, among the
 * workflows the caller may see; 404 / 409 naming the candidates otherwise. want
 * (common/idref.h): IDREF_LIVE, a name among those not ended (COMPLETED, FAILED, CANCELED). */
workflow *workflow_find(const char *ref, const caller *who, enum idref_want want, jerr *e);
bool workflow_visible(const workflow *wf, const caller *who);
/* Ended, each of its jobs and arrays too (a canceled one's running jobs stopped): what
 * jobs.keep_ended_s waits for before it deletes a job or array of it (retention.c). */
bool workflow_ended(const workflow *wf);
int workflow_cancel(workflow *wf, uid_t by, jerr *e);
/* Prefixes a job request's refusal with its place: "jobs[2].request.gpu_count", "job 'x': ". */
int workflow_err_in_job(jerr *e, size_t i, const char *name);
/* A job of a workflow changed state: decides its dependents, updates the workflow. */
void workflow_job_changed(job *j);
/* At start, after jobs and workflows are loaded and shims re-adopted: links jobs to their
 * workflows and decides whatever became decidable while the daemon was down. */
void workflow_resume_all(void);
/* A job of a workflow is deleted (its delete committed: job_ctl.c): the workflow no longer has
 * it, and is looked at by the next workflow_drop_gone. */
void workflow_forget_job(job *j);
/* The same for an array of a workflow, before it is freed (its delete committed: array_ctl.c). */
void workflow_forget_array(struct jarray *a);
/* Drops the workflows that ended and keep none of their jobs and arrays (each deleted), among
 * those whose job or array was deleted since the last call (all: true looks at every workflow,
 * at start): its row deleted in the open transaction, it goes from memory, its id is then not
 * found. Run at the end of a loop turn, before the commit (daemon/main.c), never inside a
 * request's route, which may hold a workflow. A delete the commit does not take leaves the row,
 * dropped again at the next start. The number dropped. */
size_t workflow_drop_gone(bool all);
/* The workflows of one owner, in submission order (GET /v1/workflows for a caller who sees only
 * its own: not a walk over every user's). */
workflow *const *workflow_of_owner(uid_t uid, size_t *n);
/* A task of a workflow's array changed state (the settle step, after arrays_task_changed): once
 * every task ended, the jobs requiring the array are decided; the workflow's state follows. */
void workflow_array_changed(struct jarray *a);
/* The workflow's job i as an array: NULL when it is a job, or its array was deleted. */
struct jarray *workflow_array(const workflow *wf, size_t i);
void workflow_free_all(void);

/* Whether j is a workflow's job with dependencies (a released hold sends it back to PENDING,
 * job_ctl.c), and the engine's decision on such a job that is PENDING again: queued once every
 * dependency ended as it needs, canceled once one cannot, else left PENDING. */
bool workflow_job_has_deps(const job *j);
void workflow_job_decide(job *j);

#endif
