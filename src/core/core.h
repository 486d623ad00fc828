/* The daemon's core: the one owner of job state. */
#ifndef JOBLET_CORE_H
#define JOBLET_CORE_H

#include <jansson.h>
#include <stdbool.h>

#include "../common/err.h"
#include "../common/parse.h"
#include "../exec/cgroup.h"
#include "../store/db.h"
#include "config.h"
#include "job.h"
#include "workflow.h"

typedef struct core {
    config cfg;
    db *db;
    cg_host cg;
    job **jobs;               /* every job known, in submission order */
    size_t njobs, cap;
    uint64_t next_seq;
    uint32_t running;         /* jobs holding a shim */
    char jobs_dir[600];
    char root_mount[600];     /* shared mount point of every job's root (see spec.h) */
    int devfilter_prog;       /* loaded eBPF device filter for the default devices, or -1 */
    char shim_path[600];
    char io_dev[32];          /* block device of jobs_dir, "" when there is none */
    char io_dev_why[256];
    uint8_t online_cpus[CPU_MAX / 8];
    int ncpus;
    uint64_t mem_total_mb;
    int inotify_fd;
    watch w_inotify;
    int64_t sched_wakeup_ms;  /* 0 = no scheduled job waiting */
    int64_t trim_at_ms;       /* when to return freed heap to the system, 0 = no need */
    gpu_discovery gpu;        /* what discovery found at start */
    bool gpu_on;              /* GPU support active: GPUs found, or gpu.enabled: true */
    struct gpu_driver_lib *driver_libs; /* the running driver's libraries (gpu_spec.c) */
    char scrub_path[600];     /* joblet-gpu-scrub, next to the shim */
    size_t ndriver_libs;
    workflow **workflows;     /* every workflow known, in submission order */
    size_t nworkflows;
    uint64_t next_wf_seq;
} core;

extern core C;

/* gpu_admin.c: one GPU's service state (gpu/gpu_state.h) and why it is not in service */
typedef struct gpu_hold {
    enum gpu_state state;     /* GS_AVAILABLE (in service), SCRUBBING, DRAINING, RESETTING, DEGRADED or OFFLINE */
    char reason[256];         /* why it is degraded, draining, resetting or offline */
} gpu_hold;
const gpu_hold *core_gpu_hold(int i);
/* The one way a GPU's state changes: the transition table (gpu_state_next) decides; a
 * transition it does not allow is logged as an error and changes nothing. reason: the new
 * reason, NULL to keep the old one. Records nothing: core_gpu_set_state does. Returns the
 * table's next state, or -1. */
int core_gpu_event(int i, enum gpu_event ev, const char *reason);
/* What the API shows for GPU i: gpu_state_report of its state, holders, problem, temperature. */
gpu_report core_gpu_report(int i);
/* gpu_scrub.c: zeroes the memory of these GPUs (bit i = GPU i) when gpu.scrub is on; they are
 * not free until it succeeds. */
void core_gpu_scrub(uint64_t gpus);
/* The GPUs a running joblet-gpu-scrub is zeroing, whatever their state. */
uint64_t core_gpu_scrub_busy(void);

/* gpus.c */
int core_gpu_init(jerr *e);
/* gpu_spec.c: the running driver's libraries, looked up once in the loader cache */
void gpu_driver_libs_find(void);
json_t *core_gpus_json(void);
json_t *core_gpu_json(int index);
int core_gpu_validate(job_req *req, jerr *e);
int core_gpu_cc_parse(const char *s, int *cc);
struct sched_gpu;
struct sched_mig;
struct sched_req;
struct sched_input;
struct sched_running;
void core_gpu_sched_view(struct sched_gpu *out);
uint64_t core_gpu_held(void);
/* Grants these GPUs (bit i = GPU i), exclusively or shared as the job asked; starts MPS for a
 * GPU that gets its first shared tenant. */
int core_gpu_grant(job *j, uint64_t set, jerr *e);
void core_gpu_release(job *j);
void core_gpu_reclaim(job *j);
uint64_t core_gpu_ids_mask(const job_req *req);
uint64_t core_gpu_kind_mask(const job_req *req);
int core_gpu_mig_profile(const job_req *req);
/* The placement score of every pair of GPUs (placement.h), built once from discovery. */
const int *core_gpu_pair_scores(void);
size_t core_gpu_sched_migs(struct sched_mig *out, size_t max);
void core_gpu_grant_mig(job *j, int flat);

/* gpu_admin.c: GPU states (drain, offline, reset) and the audit trail */
void core_audit(const char *action, int64_t uid, int gpu, const char *job_id, int64_t duration_ms, int64_t memory_mb,
                const char *detail);
/* core_gpu_event, recorded: the log, the audit trail ("state") and, for draining, resetting
 * and offline, table gpu_admin (kept across a restart). by: the admin's uid, -1 for joblet. */
int core_gpu_set_state(int i, enum gpu_event ev, const char *reason, int64_t by);
void core_gpu_admin_load(void);
bool core_is_admin(uid_t uid, gid_t gid);
json_t *core_gpu_admin(int i, const char *action, bool force, uid_t by, jerr *e);
/* health.c */
size_t core_gpu_jobs_on(int i, job **out, size_t max);
void core_gpu_lose_jobs(int i, const char *why);
void health_reset_when_idle(void);

/* gpu_mps.c: one MPS control daemon per shared GPU */
bool core_mps_available(void);
bool core_mps_available_why(char *why, size_t len);
int core_mps_start(int gpu, jerr *e);
void core_mps_stop(int gpu);
void core_mps_pipe_dir(int gpu, char *out, size_t len);
void core_mps_init(uint64_t in_use);

/* queue.c: the scheduler's input from the daemon's state, and its decisions carried out */
void core_sched_req_of(const job_req *req, uid_t owner, struct sched_req *r);
void core_sched_req(const job *j, struct sched_req *r);
/* gpus: GPU_MAX slots; migs: GPU_MAX * GPU_MIG_MAX; run (and runmap, may be NULL): C.njobs */
void core_sched_base(struct sched_input *in, struct sched_gpu *gpus, struct sched_mig *migs, struct sched_running *run,
                     job **runmap);
void core_wait_reason(const job *j, char *out, size_t len);

/* jobs.c */
job *core_find(const char *id_or_prefix, uid_t caller, jerr *e);
void core_add(job *j);
void core_remove(job *j);
void job_free(job *j);
void job_save(job *j);
void core_schedule(void);
void core_job_dir(const job *j, char *out, size_t len);
/* Sets terminal state fields, persists, wakes followers, frees room. */
void job_finish(job *j, enum job_state st, const char *reason);
/* A preempted job's run is over: it gives back its room and waits in the queue again. */
void job_requeue(job *j);

/* job_json.c */
json_t *job_to_json(const job *j);

/* submit.c: validates a request and creates a job (and its directory with uploads). */
/* The request (typed at the API's edge) is taken over by the job; on failure it is the caller's. */
job *submit_job(job_req *req, uid_t caller_uid, gid_t caller_gid, jerr *e);
/* The two halves, for workflows (all jobs checked before any is created): */
typedef struct submit_info {
    int64_t sched_ms;         /* when it may start; 0 = now */
    uint64_t total;           /* bytes uploaded */
} submit_info;
int submit_check(job_req *req, uid_t caller_uid, submit_info *si, jerr *e);
/* limits.* for these requests together: sizes, queued jobs, the GPU request rate */
int submit_check_limits(job_req *const *reqs, size_t n, uid_t uid, bool for_workflow, jerr *e);
job *submit_create(job_req *req, uid_t caller_uid, gid_t caller_gid, const submit_info *si, jerr *e);

/* launch.c */
int launch_job(job *j, jerr *e);
void launch_adopt_all(void);
int launch_stop(job *j, uid_t by, jerr *e);
/* Stops a job to make room for `for_job`; it goes back to the queue as it was. */
void launch_preempt(job *j, const job *for_job);
void launch_forget(job *j);
void launch_init(void);
void launch_refresh(job *j);
void launch_shutdown(void);
void launch_live_usage(const job *j, job_usage *u);

/* logstream.c */
struct MHD_Connection;
struct MHD_Response;
struct MHD_Response *logstream_response(job *j, struct MHD_Connection *conn, bool follow, int streams);
void logstream_wake(job *j);
void logstream_detach(job *j);
void logstream_init(void);

#endif
