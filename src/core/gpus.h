/* The daemon's GPUs and who holds them (gpus.c): discovery at start, grants to jobs and their
 * release (then scrub), MIG devices, and what the scheduler sees of them. */
#ifndef JOBLET_GPUS_H
#define JOBLET_GPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "../common/jobreq.h"
#include "../gpu/gpu_state.h"
#include "../sched/sched.h"
#include "job.h"

/* Discovery (gpu/discover.c), the GPUs of re-adopted jobs taken back, MPS tidied. -1 only for
 * a configuration error (a fixture asked for and unreadable). */
int gpus_init(jerr *e);

/* What the API shows for GPU i: gpu_state_report of its state, holders, problem, temperature. */
gpu_report gpus_report(int i);
/* The job holding GPU i exclusively, or NULL. Its id is for those who see its owner's jobs
 * (AUTHZ_OTHERS_JOBS); others are told that another user's job holds it (gpu_json.c). */
const job *gpus_holder(int i);
/* MPS tenants sharing GPU i, and the memory they reserved together. */
int gpus_tenants(int i, uint64_t *reserved_mb);

/* A whole GPU that may be handed out: healthy, with a device node, not in MIG mode, not
 * DEGRADED. */
bool gpus_usable(int i);
/* Why GPU i takes no new jobs now, in words that name it: GPUS_IN_SERVICE (out is "") when
 * it does; GPUS_WAITS when it will by itself (hot: until it cools; resetting: once the reset
 * passes; scrubbing); GPUS_NEEDS_ADMIN when only an admin brings it back (offline, draining,
 * degraded: 'rnx gpu online'). Holders do not count: an allocated GPU is in service. */
enum gpus_service { GPUS_IN_SERVICE, GPUS_WAITS, GPUS_NEEDS_ADMIN };
enum gpus_service gpus_out_of_service(int i, char *out, size_t len);
/* "8.0" -> 80; 0 and *cc = 0 for NULL; -1 for a malformed one. */
int gpus_cc_parse(const char *s, int *cc);
/* The scheduler's id of a MIG profile ("1g.10gb"), -1 when no GPU here has it. */
int gpus_mig_profile_id(const char *profile);
/* The scheduler's mig_profile of a request: -1 when it asks for no MIG device, INT_MAX (a profile
 * no device has: it waits, SW_UNPLACEABLE) when it asks for one of a profile this machine no
 * longer has. */
int gpus_mig_profile(const job_req *req);
/* The MIG profiles this machine has, "1g.10gb, 3g.40gb" ("" none). */
void gpus_mig_profiles(char *out, size_t len);
/* The explicit devices of a request (gpu_ids, stored as UUIDs) as scheduler bits; a UUID
 * discovery no longer finds maps to a bit past every GPU, so the job waits. */
uint64_t gpus_ids_mask(const job_req *req);
/* The GPUs of the request's type and compute capability (0: any). */
uint64_t gpus_kind_mask(const job_req *req);

/* What the scheduler gets: GPU_MAX slots; MIG devices (at most max); the placement score of
 * every pair of GPUs (placement.h), built once from discovery; GPUs not free besides their
 * holders (being scrubbed). */
void gpus_sched_view(sched_gpu *out);
size_t gpus_sched_migs(sched_mig *out, size_t max);
const int *gpus_pair_scores(void);
uint64_t gpus_held(void);

/* Grants these GPUs (bit i = GPU i), exclusively or shared as the job asked; starts MPS for a
 * GPU that gets its first shared tenant. */
int gpus_grant(job *j, uint64_t set, jerr *e);
/* GPUs someone else allocated (Slurm, for a Slurm task: slurm_task.h): the job gets them as
 * grants and holds them in joblet's view (the scheduler sees them taken, so no job of joblet's
 * gets them), but not exclusively among such jobs (the tasks of one Slurm step share theirs)
 * and they are not scrubbed after it. 409 naming the job when one of joblet's own holds one. */
int gpus_grant_given(job *j, uint64_t set, jerr *e);
/* The GPU whose device node has this minor (/dev/nvidiaN), -1 when none. */
int gpus_by_minor(int minor);
/* Grants MIG device `flat` (the index gpus_sched_migs gave). */
void gpus_grant_mig(job *j, int flat);
/* The job's GPUs go back (audited) and are scrubbed before anyone else gets them. */
void gpus_release(job *j);
/* A restarted daemon takes back the GPUs of the jobs it re-adopts, by UUID. */
void gpus_reclaim(job *j);

#endif
