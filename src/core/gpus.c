/* The daemon's GPUs and who holds them: discovery at start, grants and releases, and the
 * view the scheduler gets of them (gpus.h). */
#include "gpus.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../gpu/sched_view.h"
#include "../sched/placement.h"
#include "../sched/sched.h"
#include "audit.h"
#include "gpu_service.h"
#include "gpu_mps.h"
#include "gpu_scrub.h"
#include "gpu_spec.h"
#include "gpu_health.h"
#include "state.h"

/* Who holds each GPU: one exclusive owner, or MPS tenants sharing it within its memory. */
static job *owner[GPU_MAX];
/* MPS-shared GPUs: how many jobs share each, and the memory they reserved together */
static int shared_n[GPU_MAX];
static uint64_t shared_mb[GPU_MAX];
static job *mig_owner[GPU_MAX * GPU_MIG_MAX]; /* by flat MIG index (mig_at) */

static void log_gpu(const gpu_inventory *inv, int i)
{
    const gpu_dev *g = &inv->gpu[i];
    char links[96] = "links unknown";
    if (g->links_known) {
        int active = 0, sw = 0;
        for (int l = 0; l < g->nlinks; l++) {
            active += g->links[l].active;
            sw += g->links[l].active && strcmp(g->links[l].remote_type, "switch") == 0;
        }
        snprintf(links, sizeof links, "%d NVLinks%s", active, sw ? " (NVSwitch)" : "");
    }
    char mig[64] = "";
    if (g->nmig)
        snprintf(mig, sizeof mig, ", MIG with %d instances", g->nmig);
    log_info("gpu %d: %s minor %d bus %s numa %d cpus %s, %s, %lld MiB, cc %d.%d, %s%s%s%s%s", g->index, g->uuid,
             g->minor, g->bus_id, g->numa_node, *g->local_cpus ? g->local_cpus : "?", g->name,
             (long long)g->memory_total_mb, g->cc_major, g->cc_minor, links, mig, inv->simulated ? " [simulated]" : "",
             *g->problem ? "; NOT USABLE: " : "", g->problem);
}

static void index_migs(void);

int gpus_init(jerr *e)
{
    const gpu_config *gc = &core.cfg.gpu;
    if (gc->enabled == 0) {
        log_info("gpu: support disabled by configuration (gpu.enabled: false)");
        gpu_inventory_init(&core.gpu.inv, "none");
        core.gpu.attempts = json_array();
        gpu_mps_init(0); /* the pipe directories an earlier run (with GPUs) left mounted */
        return 0;
    }
    gpu_discover(gc, &core.gpu);
    index_migs();
    const gpu_inventory *inv = &core.gpu.inv;
    uint64_t shared_in_use = 0;
    for (size_t i = 0; i < core.njobs; i++)
        if (!job_state_terminal(core.jobs[i]->state) && core.jobs[i]->gpus.n) {
            gpus_reclaim(core.jobs[i]);
            if (core.jobs[i]->req.gpu_share)
                shared_in_use |= core.jobs[i]->gpu_set;
        }
    gpu_mps_init(shared_in_use);
    core.gpu_on = core.gpu.found && (inv->n > 0 || gc->enabled == 1);
    if (!core.gpu.found && *gc->fixture) {
        /* a simulation asked for by name and not possible is a configuration error */
        char err[400];
        gpu_discovery_errors(&core.gpu, true, err, sizeof err);
        return jerr_set(e, EINVAL, "%s", *err ? err : "gpu.fixture: cannot be read");
    }
    if (!core.gpu.found) {
        log_msg(gc->enabled == 1 ? LOG_WARN : LOG_INFO, "gpu: no GPU found (every backend failed; see above)%s",
                gc->enabled == 1 ? " although gpu.enabled is true" : "");
        return 0;
    }
    log_info("gpu: %d GPU%s found by the %s backend in %.1f ms%s; driver %s, CUDA %d.%d", inv->n, inv->n == 1 ? "" : "s",
             inv->backend, inv->discovery_ms, inv->simulated ? " (SIMULATED from a fixture)" : "",
             *inv->driver_version ? inv->driver_version : "unknown", inv->cuda_driver_version / 1000,
             inv->cuda_driver_version % 1000 / 10);
    for (int i = 0; i < inv->n; i++)
        log_gpu(inv, i);
    if (!inv->simulated && inv->n)
        gpu_spec_find_driver_libs();
    for (int i = 0; i < core.gpu.ncuda; i++)
        log_info("gpu: CUDA toolkit %s (%s) version %s: %s", core.gpu.cuda[i].path, core.gpu.cuda[i].real,
                 *core.gpu.cuda[i].version ? core.gpu.cuda[i].version : "unknown", core.gpu.cuda[i].compat);
    return 0;
}

gpu_report gpus_report(int i)
{
    const gpu_health *hh = gpu_health_of(i);
    return gpu_state_report(gpu_service_get(i)->state, owner[i] != NULL, shared_n[i], *core.gpu.inv.gpu[i].problem,
                            hh && hh->hot);
}

enum gpus_service gpus_out_of_service(int i, char *out, size_t len)
{
    out[0] = 0;
    const gpu_service *h = gpu_service_get(i);
    const gpu_health *hh = gpu_health_of(i);
    char since[48] = "";
    if (h->since_ms > 0) {
        char t[40];
        format_ms(h->since_ms, t, sizeof t);
        snprintf(since, sizeof since, " since %s", t);
    }
    switch (h->state) {
    case GS_OFFLINE:
    case GS_DRAINING:
    case GS_DEGRADED:
        snprintf(out, len, "GPU %d is %s%s (%s): it cannot be granted until an admin runs 'rnx gpu online %d'", i,
                 gpu_state_name(h->state), since, *h->reason ? h->reason : "no reason recorded", i);
        return GPUS_NEEDS_ADMIN;
    case GS_RESETTING:
        snprintf(out, len, "GPU %d is resetting%s (%s): it takes jobs again once its reset and the check after it "
                           "pass", i, since, *h->reason ? h->reason : "no reason recorded");
        return GPUS_WAITS;
    default: break;
    }
    if (hh && hh->hot) {
        snprintf(out, len, "GPU %d is hot (%d C, above gpu.max_temperature_c %u): it takes jobs again once it has "
                           "cooled to %d C", i, hh->temperature_c, core.cfg.max_temperature_c,
                 (int)core.cfg.max_temperature_c - 5);
        return GPUS_WAITS;
    }
    if (h->state == GS_SCRUBBING || gpu_service_scrubbing() >> i & 1) {
        snprintf(out, len, "GPU %d is being scrubbed (its memory zeroed after its last job)", i);
        return GPUS_WAITS;
    }
    return GPUS_IN_SERVICE;
}

/* ---- jobs and their GPUs ---- */

/* A whole GPU that may be handed out: healthy, with a device node, and not in MIG mode (CUDA
 * then sees only its MIG devices, which are handed out one by one). */
bool gpus_usable(int i)
{
    const gpu_dev *g = &core.gpu.inv.gpu[i];
    return !*g->problem && g->minor >= 0 && g->mig_enabled != 1 && gpu_service_get(i)->state != GS_DEGRADED;
}

/* MIG devices of GPUs in MIG mode, flattened in GPU then instance order, with the scheduler's
 * id of each one's profile (the flat index of the first device that has it). Built once when
 * discovery is done: the inventory does not change while the daemon runs. */
static struct mig_slot {
    int gpu;
    const gpu_mig *m;
    int profile;
} migs[GPU_MAX * GPU_MIG_MAX];
static int nmigs;

static void index_migs(void)
{
    nmigs = 0;
    for (int i = 0; i < core.gpu.inv.n; i++) {
        const gpu_dev *g = &core.gpu.inv.gpu[i];
        for (int k = 0; g->mig_enabled == 1 && k < g->nmig; k++, nmigs++) {
            int id = nmigs;
            for (int p = 0; p < nmigs && id == nmigs; p++)
                if (strcmp(migs[p].m->profile, g->mig[k].profile) == 0)
                    id = p;
            migs[nmigs] = (struct mig_slot){i, &g->mig[k], id};
        }
    }
}

int gpus_mig_profile_id(const char *profile)
{
    for (int f = 0; f < nmigs; f++)
        if (strcmp(migs[f].m->profile, profile) == 0)
            return migs[f].profile;
    return -1;
}

int gpus_mig_profile(const job_req *req)
{
    if (!req->gpu_mig)
        return -1;
    /* a profile the machine lost since the job was accepted (its MIG layout changed, joblet
     * restarted): one no device has, so that the job waits for it, not runs without a GPU */
    int id = gpus_mig_profile_id(req->gpu_mig);
    return id >= 0 ? id : INT_MAX;
}

void gpus_mig_profiles(char *out, size_t len)
{
    out[0] = 0;
    for (int f = 0; f < nmigs; f++) {
        const char *pr = migs[f].m->profile;
        size_t l = strlen(out);
        if (!strstr(out, pr))
            snprintf(out + l, len - l, "%s%s", l ? ", " : "", pr);
    }
}

size_t gpus_sched_migs(sched_mig *out, size_t max)
{
    return gpu_sched_migs(&core.gpu.inv, out, NULL, max); /* the one rule (gpu/sched_view.h) */
}

void gpus_grant_mig(job *j, int flat)
{
    const gpu_mig *m = migs[flat].m;
    const gpu_dev *g = &core.gpu.inv.gpu[migs[flat].gpu];
    char name[160];
    snprintf(name, sizeof name, "%s MIG %s", g->name, m->profile);
    grant_list_free(&j->gpus);
    gpu_grant *gr = grant_list_add(&j->gpus);
    gr->index = g->index;
    snprintf(gr->uuid, sizeof gr->uuid, "%s", m->uuid);
    snprintf(gr->parent_uuid, sizeof gr->parent_uuid, "%s", g->uuid);
    gr->minor = g->minor;
    snprintf(gr->bus_id, sizeof gr->bus_id, "%s", g->bus_id);
    snprintf(gr->name, sizeof gr->name, "%s", name);
    gr->memory_mb = m->memory_mb;
    gr->simulated = core.gpu.inv.simulated;
    gr->mig = true;
    snprintf(gr->mig_profile, sizeof gr->mig_profile, "%s", m->profile);
    gr->gi = m->gi, gr->ci = m->ci, gr->gi_cap_minor = m->gi_cap_minor, gr->ci_cap_minor = m->ci_cap_minor;
    mig_owner[flat] = j;
    j->gpu_mig = flat + 1;
    j->gpu_granted_ms = now_ms();
    audit_record("allocate", j->owner_uid, migs[flat].gpu, j->id, -1, m->memory_mb, m->uuid);
    log_info("job %s: granted MIG device %s (%s, GI %d CI %d) of GPU %d%s", j->id, m->uuid, m->profile, m->gi, m->ci,
             g->index, core.gpu.inv.simulated ? " (simulated)" : "");
}

/* "8.0" -> 80; 0 and *cc = 0 for NULL. */
int gpus_cc_parse(const char *s, int *cc)
{
    *cc = 0;
    if (!s)
        return 0;
    unsigned ma, mi;
    char end;
    if (sscanf(s, "%2u.%1u%c", &ma, &mi, &end) != 2 || ma == 0)
        return -1;
    *cc = (int)(ma * 10 + mi);
    return 0;
}

const int *gpus_pair_scores(void)
{
    static int pair[GPU_MAX * GPU_MAX];
    static int built = -1;
    if (built != core.gpu.inv.n) {
        gpu_pair_scores(&core.gpu.inv, pair);
        built = core.gpu.inv.n;
    }
    return pair;
}

void gpus_sched_view(sched_gpu *out)
{
    if (!core.gpu.inv.n)
        return; /* no GPUs: not even a look for MPS, on every scheduling pass */
    gpu_sched_gpus(&core.gpu.inv, gpu_mps_available(), out);
    for (int i = 0; i < core.gpu.inv.n; i++) {
        const gpu_service *h = gpu_service_get(i);
        out[i].usable = gpus_usable(i) && h->state != GS_OFFLINE;
        out[i].closed = h->state == GS_DRAINING || h->state == GS_RESETTING || gpu_health_of(i)->hot;
    }
}

/* Not free besides their holders: the GPUs whose memory a helper is zeroing. */
uint64_t gpus_held(void) { return gpu_service_scrubbing(); }

uint64_t gpus_kind_mask(const job_req *req)
{
    const char *type = req->gpu_type;
    int cc = 0;
    gpus_cc_parse(req->gpu_cc, &cc);
    return (type || cc) ? gpu_kind_mask(&core.gpu.inv, type, cc) | (1ull << (SCHED_GPU_MAX - 1)) : 0;
}

static void grant_whole(gpu_grant *gr, int i)
{
    const gpu_dev *g = &core.gpu.inv.gpu[i];
    gr->index = g->index;
    snprintf(gr->uuid, sizeof gr->uuid, "%s", g->uuid);
    gr->minor = g->minor;
    snprintf(gr->bus_id, sizeof gr->bus_id, "%s", g->bus_id);
    snprintf(gr->name, sizeof gr->name, "%s", g->name);
    gr->memory_mb = g->memory_total_mb;
    gr->simulated = core.gpu.inv.simulated;
}

/* The memory a job has of GPU i: its reservation when shared, the whole GPU else. */
static int64_t gpu_audit_mb(const job *j, int i)
{
    return j->req.gpu_share ? j->req.gpu_memory_mb : core.gpu.inv.gpu[i].memory_total_mb;
}

int gpus_grant(job *j, uint64_t set, jerr *e)
{
    bool shared = j->req.gpu_share;
    uint64_t mb = (uint64_t)j->req.gpu_memory_mb;
    for (int i = 0; shared && i < core.gpu.inv.n; i++)
        if (set >> i & 1 && shared_n[i] == 0 && gpu_mps_start(i, e) < 0)
            return -1;
    grant_list_free(&j->gpus);
    for (int i = 0; i < core.gpu.inv.n; i++)
        if (set >> i & 1) {
            gpu_grant *g = grant_list_add(&j->gpus);
            grant_whole(g, i);
            if (shared) {
                shared_n[i]++;
                shared_mb[i] += mb;
                g->shared_mb = (int64_t)mb;
            } else {
                owner[i] = j;
            }
        }
    j->gpu_set = set;
    j->gpu_granted_ms = now_ms();
    for (int i = 0; i < core.gpu.inv.n; i++)
        if (set >> i & 1)
            audit_record("allocate", j->owner_uid, i, j->id, -1, gpu_audit_mb(j, i), shared ? "shared (MPS)" : NULL);
    char list[GPU_MAX * 120] = "";
    for (size_t k = 0; k < j->gpus.n; k++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%d %s (minor %d, bus %s)", k ? ", " : "", j->gpus.g[k].index,
                 j->gpus.g[k].uuid, j->gpus.g[k].minor, j->gpus.g[k].bus_id);
    }
    log_info("job %s: granted %zu %sGPU%s%s: %s", j->id, j->gpus.n, shared ? "shared " : "", j->gpus.n == 1 ? "" : "s",
             core.gpu.inv.simulated ? " (simulated)" : "", list);
    return 0;
}

int gpus_grant_given(job *j, uint64_t set, jerr *e)
{
    for (int i = 0; i < core.gpu.inv.n; i++) {
        if (!(set >> i & 1))
            continue;
        const job *h = owner[i];
        for (int f = 0; !h && f < GPU_MAX * GPU_MIG_MAX; f++)
            if (mig_owner[f] && migs[f].gpu == i)
                h = mig_owner[f];
        if (h || shared_n[i]) {
            /* the holder by id to its own owner only (nobody sees another user's job ids:
             * docs/gpu.md); the log has it for the admin */
            const char *by = !h ? "(shared, MPS)"
                             : h->owner_uid == j->owner_uid ? h->id : "of another user (its id is in joblet's log)";
            if (h)
                log_warn("Slurm's task %s was given GPU %d, which joblet's job %s holds: refused", j->id, i, h->id);
            return jerr_http(e, 409, "GPU %d (/dev/nvidia%d) is held by joblet's job %s: Slurm gave it to this task "
                                     "as well; keep the GPUs of gres.conf out of joblet's own jobs (docs/slurm.md)",
                             i, core.gpu.inv.gpu[i].minor, by);
        }
    }
    grant_list_free(&j->gpus);
    for (int i = 0; i < core.gpu.inv.n; i++)
        if (set >> i & 1)
            grant_whole(grant_list_add(&j->gpus), i);
    j->gpu_set = set;
    j->gpu_granted_ms = now_ms();
    for (int i = 0; i < core.gpu.inv.n; i++)
        if (set >> i & 1)
            audit_record("allocate", j->owner_uid, i, j->id, -1, 0, "Slurm's");
    return 0;
}

int gpus_by_minor(int minor)
{
    for (int i = 0; i < core.gpu.inv.n; i++)
        if (core.gpu.inv.gpu[i].minor == minor)
            return i;
    return -1;
}

/* The explicit devices of a job (gpu_ids, stored as UUIDs) as scheduler bits. A UUID that
 * discovery no longer finds maps to a bit past every GPU, so the job waits rather than run
 * on something else. */
uint64_t gpus_ids_mask(const job_req *req)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < req->ngpu_ids; i++) {
        int k = gpu_find(&core.gpu.inv, req->gpu_ids[i]);
        mask |= 1ull << (k >= 0 ? k : SCHED_GPU_MAX - 1);
    }
    return mask;
}

void gpus_release(job *j)
{
    uint64_t freed = 0;
    for (int i = 0; i < GPU_MAX; i++)
        if (owner[i] == j) {
            owner[i] = NULL;
            freed |= 1ull << i;
        }
    if (j->req.gpu_share)
        for (int i = 0; i < core.gpu.inv.n; i++)
            if (j->gpu_set >> i & 1 && shared_n[i] > 0) {
                shared_mb[i] -= (uint64_t)j->req.gpu_memory_mb;
                /* the last tenant gone: its MPS server goes, and the GPU is scrubbed like any */
                if (--shared_n[i] == 0) {
                    gpu_mps_stop(i);
                    freed |= 1ull << i;
                }
            }
    if (j->gpu_set || j->gpu_mig) {
        int64_t held = j->gpu_granted_ms ? now_ms() - j->gpu_granted_ms : -1;
        for (int i = 0; i < core.gpu.inv.n; i++)
            if (j->gpu_set >> i & 1)
                audit_record("release", j->owner_uid, i, j->id, held, gpu_audit_mb(j, i), NULL);
        if (j->gpu_mig)
            audit_record("release", j->owner_uid, migs[j->gpu_mig - 1].gpu, j->id, held,
                       migs[j->gpu_mig - 1].m->memory_mb, migs[j->gpu_mig - 1].m->uuid);
    }
    j->gpu_set = 0;
    j->gpu_mig = 0;
    gpu_scrub_start(freed, j->id);
    for (int f = 0; f < GPU_MAX * GPU_MIG_MAX; f++)
        if (mig_owner[f] == j)
            mig_owner[f] = NULL;
    state_want(WANT_GPUS);
}

/* A restarted daemon takes back the GPUs of the jobs it re-adopts, by UUID. */
void gpus_reclaim(job *j)
{
    for (size_t k = 0; k < j->gpus.n; k++) {
        const gpu_grant *g = &j->gpus.g[k];
        const char *uuid = g->uuid;
        int i = gpu_find(&core.gpu.inv, uuid);
        for (int f = 0; f < nmigs; f++)
            if (strcmp(migs[f].m->uuid, uuid) == 0) {
                mig_owner[f] = j;
                j->gpu_mig = f + 1;
                i = GPU_MAX; /* found, as a MIG device */
            }
        if (i == GPU_MAX)
            continue;
        if (i < 0) {
            log_warn("job %s held GPU %s, which discovery no longer finds", j->id, uuid);
            continue;
        }
        j->gpu_set |= 1ull << i;
        if (g->shared_mb >= 0) {
            shared_n[i]++;
            shared_mb[i] += (uint64_t)g->shared_mb;
        } else {
            owner[i] = j;
        }
    }
}

const job *gpus_holder(int i)
{
    return i >= 0 && i < GPU_MAX ? owner[i] : NULL;
}

int gpus_tenants(int i, uint64_t *reserved_mb)
{
    *reserved_mb = shared_mb[i];
    return shared_n[i];
}
