/* The pure scheduler: given the waiting jobs, the running ones and the GPUs, decide which
 * start now, which are preempted, and what the head of the queue holds. No syscalls, no clock
 * of its own (the caller passes "now"), deterministic: the daemon, the tests and the simulator
 * run the same code. docs/scheduler.md tells the rules in words. */
#ifndef JOBLET_SCHED_H
#define JOBLET_SCHED_H

#include <stddef.h>
#include <stdint.h>

#define SCHED_GPU_MAX 64
#define SCHED_MIG_MAX 512

/* What a job asks for. Model and compute-capability filters arrive as gpu_mask: which GPUs
 * are of the right kind is the caller's knowledge, the choice among them is ours. */
typedef struct sched_req {
    uint32_t gpu_count;      /* GPUs, all granted at once or none */
    uint64_t gpu_memory_mb;  /* exclusive: minimum memory of each; shared: reservation on each */
    uint64_t gpu_mask;       /* GPUs of the right model / capability; 0 = any */
    uint64_t gpu_ids;        /* exactly these GPUs (bit i = GPU i); 0 = any gpu_count of them */
    int shared;              /* MPS: shares GPUs with other shared jobs within their memory
                              * (gpu_memory_mb > 0 is the caller's to ensure) */
    uint32_t mps_uid;        /* shared: the uid its processes run as. NVIDIA MPS serves one uid
                              * at a time: a client of another uid waits until every client of
                              * the server's uid has gone. So a GPU's shared jobs all run as one
                              * uid, and one of another uid waits for the GPU to be given up */
    int mig_profile;         /* one MIG device of this profile (an id the caller assigns); -1 none */
    int single_numa;         /* all its GPUs on one NUMA node */
    int32_t priority;        /* higher first */
    int preemptible;         /* may be stopped and re-queued for a job of higher priority */
    uint32_t user;           /* the owner, for per-user limits */
    int64_t runtime_ms;      /* upper bound on its run time (max_runtime); 0 = unknown */
} sched_req;

typedef struct sched_job {
    uint64_t seq;            /* submission order */
    int64_t not_before_ms;   /* --schedule time; 0 = now */
    sched_req r;
    int64_t since_ms;        /* since when it waits in the queue (its submission, --schedule time or
                              * release: core/queue.c); among equal priorities the earlier goes
                              * first, then the lower seq; 0 for all: seq alone */
} sched_job;

/* A job holding room now. */
typedef struct sched_running {
    uint64_t seq;
    sched_req r;
    uint64_t gpus;           /* GPUs it holds (whole, or shared with r.gpu_memory_mb on each) */
    int mig;                 /* index into migs; -1 none */
    int64_t end_ms;          /* when it ends at the latest (start + runtime); 0 = unknown */
    int stopping;            /* on its way out (stopped, preempted): its room is coming back */
} sched_running;

/* One MIG device (a compute instance of a GPU in MIG mode): an allocatable unit of its own. */
typedef struct sched_mig {
    int profile;             /* the caller's id for "1g.10gb", ... */
    int usable;
} sched_mig;

/* One GPU as the scheduler sees it; who holds it comes from the running jobs. */
typedef struct sched_gpu {
    int usable;              /* healthy and known well enough to hand out */
    int closed;              /* takes no new jobs for now (draining, too hot) */
    int64_t memory_mb;       /* total; -1 unknown (then it satisfies no memory request) */
    int numa;                /* NUMA node; -1 unknown */
    int mps;                 /* can be shared through MPS */
} sched_gpu;

typedef struct sched_input {
    const sched_job *jobs;   /* jobs that have not started, any order */
    size_t n;
    const sched_running *running;
    size_t nrunning;
    int64_t now_ms;
    uint32_t max_running;    /* 0 = no limit */
    uint32_t max_gpus_per_user; /* GPUs (or MIG devices) one user may hold at once; 0 = no limit */
    uint32_t max_running_per_user; /* jobs of one user (user 0, root, excepted) running at once;
                                    * 0 = no limit */
    const sched_gpu *gpus;   /* by index */
    size_t ngpus;
    uint64_t held;           /* GPUs out of use for now without a job (scrubbing, resetting) */
    const sched_mig *migs;
    size_t nmigs;
    const int *gpu_pair;     /* ngpus x ngpus placement scores (placement.h); NULL: lowest indexes */
    int strategy;            /* enum placement_strategy */
} sched_input;

/* Why a job that has not started waits. */
enum sched_wait {
    SW_STARTS,               /* it starts now */
    SW_SCHEDULED,            /* its --schedule time has not come */
    SW_MAX_RUNNING,          /* jobs.max_running jobs run */
    SW_USER_LIMIT,           /* its owner holds max_gpus_per_user GPUs */
    SW_HEAD,                 /* first in line: too few free GPUs; the room it needs is reserved */
    SW_PREEMPTING,           /* first in line: lower-priority jobs are being stopped for it */
    SW_RESERVED,             /* would fit, but only on room reserved for the head */
    SW_NO_ROOM,              /* too few free GPUs, behind the head */
    SW_UNPLACEABLE,          /* too few usable GPUs of its kind even if all were free (one is
                              * degraded or offline): waits for one to come back, blocking none */
    SW_USER_RUNNING,         /* its owner runs max_running_per_user jobs */
    SW_ARRAY_THROTTLE,       /* an array's task made before (requeued, released): its array's %N
                              * of tasks run (core/queue.c: kept out of the scheduler's input) */
    SW_UNSAVED,              /* an array's task whose row is not committed yet (made this turn, or
                              * while the database could not be written): it starts once it is
                              * (core/queue.c, likewise) */
    SW_HEAD_HELD,            /* first in line (or after others so), but none of the free GPUs
                              * is of use to it and no known time makes it fit (what it needs is
                              * held with no end: --gpu-ids of a busy GPU, its owner's own job):
                              * it reserves nothing, and the next job that does not fit is the
                              * head, with the reservation (a head that reserved nothing let small
                              * jobs behind take every GPU that freed, a big job behind it waiting
                              * for ever). It still goes first when what it needs frees */
    SW_NET_FULL,             /* its network has no free address for it now (core/queue.c: kept
                              * out of the scheduler's input; a job that started without one
                              * failed) */
    SW_ACCOUNT_LOOKUP,       /* its owner's account could not be looked up at its start (a
                              * directory service away: core/queue.c, core/account.h); tried again */
    SW_TIDYING,              /* requeued (after its end, or stopped to go back): the shim of its
                              * run before still tidies up what is named after the job (its
                              * cgroups, its gVisor sandbox), which a new run would be made in and
                              * killed with (core/queue.c: kept out of the scheduler's input; it
                              * goes once that shim has ended) */
    SW_FILES,                /* joblet has too few descriptors free for its launch now (log
                              * followers, connections, helpers hold them): set by core/queue.c
                              * on a job the pass would start; tried again each second */
};

typedef struct sched_output {
    size_t *start;           /* indexes into jobs[], in start order; caller provides n slots */
    size_t nstart;
    uint64_t *gpu_sets;      /* per start entry: bit i = GPU i granted; caller provides n slots */
    int *mig_picks;          /* per start entry: index into migs, -1 none; caller provides n slots */
    size_t *preempt;         /* indexes into running[] to stop now; caller provides nrunning slots */
    size_t npreempt;
    int64_t next_wakeup_ms;  /* earliest not_before still in the future; 0 = none */
    long head;               /* index into jobs[] of the job the reservation is for; -1 none (the
                              * first in line when none is SW_HEAD_HELD, else the next that does
                              * not fit) */
    uint64_t reserved;       /* GPUs reserved for the head (free now or freed by shadow_ms) */
    int64_t shadow_ms;       /* when the head will fit at the latest; 0 unknown */
    uint8_t *why;            /* per job: enum sched_wait; caller provides n slots, or NULL */
    uint32_t *position;      /* per job: 1-based place among those left waiting, 0 = starts now
                              * or waits for its time; caller provides n slots, or NULL */
} sched_output;

void sched_decide(const sched_input *in, sched_output *out);

/* Whether a request fits these GPUs when they are all free and open: 0 yes, -1 never. */
int sched_feasible(const sched_input *in, const sched_req *r);

/* Whether a request fits now beside the running jobs, ignoring any reservation: 0 and the set
 * (and MIG pick) it would get, or -1. */
int sched_fits_now(const sched_input *in, const sched_req *r, uint64_t *set, int *mig);

/* The GPUs a shared request could take now but for the shared jobs of another uid on them
 * (mps_uid: NVIDIA MPS serves one uid at a time), among those it named; 0 for an exclusive one. */
uint64_t sched_held_by_other_uids(const sched_input *in, const sched_req *r);

/* How good a placement was (rnx job status --detail): the placement score (placement.h) of the
 * best set r could get with every usable GPU free and open (*best), and with the GPUs free now
 * beside the running jobs and held ones (*best_free); -1 where there is none. Judged as the
 * topology strategy judges, whatever in->strategy is: the best-connected set. A request that
 * named its GPUs is judged for their number, as if it had not. 0 without pair scores or for a
 * MIG or GPU-less request (nothing to compare). */
void sched_best_scores(const sched_input *in, const sched_req *r, long *best, long *best_free);

/* Whether a job's GPU (or MIG) holdings would fit, all free: for tests and checkers. */
int sched_qualifies(const sched_gpu *g, const sched_req *r);

#endif
