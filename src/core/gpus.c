/* The daemon's view of its GPUs: discovery at start, what the API shows. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../gpu/sched_view.h"
#include "../sched/placement.h"
#include "../sched/sched.h"
#include "core.h"
#include "health.h"

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

int core_gpu_init(jerr *e)
{
    const gpu_config *gc = &C.cfg.gpu;
    if (gc->enabled == 0) {
        log_info("gpu: support disabled by configuration (gpu.enabled: false)");
        gpu_inventory_init(&C.gpu.inv, "none");
        C.gpu.attempts = json_array();
        return 0;
    }
    gpu_discover(gc, &C.gpu);
    index_migs();
    const gpu_inventory *inv = &C.gpu.inv;
    uint64_t shared_in_use = 0;
    for (size_t i = 0; i < C.njobs; i++)
        if (!job_state_terminal(C.jobs[i]->state) && C.jobs[i]->gpus.n) {
            core_gpu_reclaim(C.jobs[i]);
            if (C.jobs[i]->req.gpu_share)
                shared_in_use |= C.jobs[i]->gpu_set;
        }
    core_mps_init(shared_in_use);
    C.gpu_on = C.gpu.found && (inv->n > 0 || gc->enabled == 1);
    if (!C.gpu.found && *gc->fixture) {
        /* a simulation asked for by name and not possible is a configuration error */
        char err[400];
        gpu_discovery_errors(&C.gpu, true, err, sizeof err);
        return jerr_set(e, EINVAL, "%s", *err ? err : "gpu.fixture: cannot be read");
    }
    if (!C.gpu.found) {
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
        gpu_driver_libs_find();
    for (int i = 0; i < C.gpu.ncuda; i++)
        log_info("gpu: CUDA toolkit %s (%s) version %s: %s", C.gpu.cuda[i].path, C.gpu.cuda[i].real,
                 *C.gpu.cuda[i].version ? C.gpu.cuda[i].version : "unknown", C.gpu.cuda[i].compat);
    return 0;
}

static const char *core_gpu_owner(int i);

static void add_state(json_t *o, int i)
{
    if (i < 0 || i >= C.gpu.inv.n || i >= GPU_MAX)
        return;
    const char *holder = core_gpu_owner(i);
    const gpu_hold *h = core_gpu_hold(i);
    const gpu_report r = core_gpu_report(i);
    json_object_set_new(o, "state", json_string(gpu_state_name(r.state)));
    if (*h->reason && r.out_of_service)
        json_object_set_new(o, "state_reason", json_string(h->reason));
    const gpu_health *hh = core_gpu_health(i);
    if (hh && hh->sampled_ms) {
        json_t *x = json_object();
        for (int k = 0; k < HEALTH_XID_CODES && hh->xid[k].code; k++) {
            char c[16];
            snprintf(c, sizeof c, "%d", hh->xid[k].code);
            json_object_set_new(x, c, json_integer((json_int_t)hh->xid[k].count));
        }
        json_t *hj = json_pack("{s:i,s:i,s:i,s:i,s:b,s:I,s:I,s:o}", "temperature_c", hh->temperature_c,
                               "utilization_pct", hh->utilization_pct, "memory_used_mb", hh->memory_used_mb, "power_w",
                               hh->power_w, "hot", hh->hot, "ecc_sbe_events", (json_int_t)hh->ecc_sbe,
                               "ecc_dbe_events", (json_int_t)hh->ecc_dbe, "xid", x);
        /* what the backend could not read is null, not -1 */
        static const char *const opt_keys[] = {"throttle_reasons", "remapped_rows", "ecc_sbe_total", "ecc_dbe_total"};
        const int64_t opt_vals[] = {hh->throttle_reasons, hh->remapped_rows, hh->ecc_sbe_total, hh->ecc_dbe_total};
        for (int k = 0; k < 4; k++)
            json_object_set_new(hj, opt_keys[k], opt_vals[k] >= 0 ? json_integer(opt_vals[k]) : json_null());
        static const char *const num_keys[] = {"temperature_c", "utilization_pct", "memory_used_mb", "power_w"};
        for (int k = 0; k < 4; k++)
            if (json_integer_value(json_object_get(hj, num_keys[k])) < 0)
                json_object_set_new(hj, num_keys[k], json_null());
        json_object_set_new(o, "health", hj);
    }
    json_object_set_new(o, "takes_jobs", json_boolean(r.takes_jobs));
    json_object_set_new(o, "job", holder ? json_string(holder) : json_null());
    if (shared_n[i])
        json_object_set_new(o, "shared", json_pack("{s:i,s:I}", "jobs", shared_n[i], "reserved_mb", (json_int_t)shared_mb[i]));
    if (h->state == GS_DEGRADED)
        json_object_set_new(o, "problem", json_string(h->reason));
}

gpu_report core_gpu_report(int i)
{
    const gpu_health *hh = core_gpu_health(i);
    return gpu_state_report(core_gpu_hold(i)->state, owner[i] != NULL, shared_n[i], *C.gpu.inv.gpu[i].problem,
                            hh && hh->hot);
}

json_t *core_gpus_json(void)
{
    json_t *o = gpu_discovery_json(&C.gpu);
    json_object_set_new(o, "enabled", json_boolean(C.gpu_on));
    json_t *gpus = json_object_get(o, "gpus");
    for (size_t i = 0; i < json_array_size(gpus); i++)
        add_state(json_array_get(gpus, i), (int)i);
    return o;
}

json_t *core_gpu_json(int index)
{
    json_t *o = gpu_dev_json(&C.gpu.inv, index);
    add_state(o, index);
    return o;
}

/* ---- jobs and their GPUs ---- */


/* A whole GPU that may be handed out: healthy, with a device node, and not in MIG mode (CUDA
 * then sees only its MIG devices, which are handed out one by one). */
static bool usable(int i)
{
    const gpu_dev *g = &C.gpu.inv.gpu[i];
    return !*g->problem && g->minor >= 0 && g->mig_enabled != 1 && core_gpu_hold(i)->state != GS_DEGRADED;
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
    for (int i = 0; i < C.gpu.inv.n; i++) {
        const gpu_dev *g = &C.gpu.inv.gpu[i];
        for (int k = 0; g->mig_enabled == 1 && k < g->nmig; k++, nmigs++) {
            int id = nmigs;
            for (int p = 0; p < nmigs && id == nmigs; p++)
                if (strcmp(migs[p].m->profile, g->mig[k].profile) == 0)
                    id = p;
            migs[nmigs] = (struct mig_slot){i, &g->mig[k], id};
        }
    }
}

static int mig_profile_id(const char *profile)
{
    for (int f = 0; f < nmigs; f++)
        if (strcmp(migs[f].m->profile, profile) == 0)
            return migs[f].profile;
    return -1;
}

int core_gpu_mig_profile(const job_req *req)
{
    return req->gpu_mig ? mig_profile_id(req->gpu_mig) : -1;
}

size_t core_gpu_sched_migs(sched_mig *out, size_t max)
{
    size_t n = 0;
    for (; n < (size_t)nmigs && n < max; n++) {
        const struct mig_slot *x = &migs[n];
        /* a simulated machine has no capability nodes to give; a real one must */
        out[n] = (sched_mig){x->profile, !*C.gpu.inv.gpu[x->gpu].problem &&
                                             (C.gpu.inv.simulated || (x->m->gi_cap_minor >= 0 && x->m->ci_cap_minor >= 0))};
    }
    return n;
}

void core_gpu_grant_mig(job *j, int flat)
{
    const gpu_mig *m = migs[flat].m;
    const gpu_dev *g = &C.gpu.inv.gpu[migs[flat].gpu];
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
    gr->simulated = C.gpu.inv.simulated;
    gr->mig = true;
    snprintf(gr->mig_profile, sizeof gr->mig_profile, "%s", m->profile);
    gr->gi = m->gi, gr->ci = m->ci, gr->gi_cap_minor = m->gi_cap_minor, gr->ci_cap_minor = m->ci_cap_minor;
    mig_owner[flat] = j;
    j->gpu_mig = flat + 1;
    j->gpu_granted_ms = now_ms();
    core_audit("allocate", j->owner_uid, migs[flat].gpu, j->id, -1, m->memory_mb, m->uuid);
    log_info("job %s: granted MIG device %s (%s, GI %d CI %d) of GPU %d%s", j->id, m->uuid, m->profile, m->gi, m->ci,
             g->index, C.gpu.inv.simulated ? " (simulated)" : "");
}

/* gpu_ids: indexes or UUIDs, as `docker --gpus device=`; stored as UUIDs, which do not move. */
static int resolve_ids(job_req *req, uint64_t *count, jerr *e)
{
    if (!req->ngpu_ids)
        return 0;
    char **uuids = xcalloc(req->ngpu_ids + 1, sizeof *uuids);
    uint64_t seen = 0;
    int rc = 0;
    for (size_t i = 0; i < req->ngpu_ids && rc == 0; i++) {
        const char *id = req->gpu_ids[i];
        int k = gpu_find(&C.gpu.inv, id);
        if (k < 0) {
            rc = jerr_field(e, "gpu_ids", "gpu_ids: no GPU '%.64s' on this machine; give an index from 0 to %d or a "
                                          "UUID (rnx gpu list)", id, C.gpu.inv.n - 1);
        } else if (seen >> k & 1) {
            rc = jerr_field(e, "gpu_ids", "gpu_ids: GPU %d is listed twice", k);
        } else if (!usable(k)) {
            rc = jerr_field(e, "gpu_ids", "gpu_ids: GPU %d cannot be used: %s", k,
                              *C.gpu.inv.gpu[k].problem ? C.gpu.inv.gpu[k].problem
                              : core_gpu_hold(k)->state == GS_DEGRADED
                                  ? core_gpu_hold(k)->reason
                                  : "it is in MIG mode; ask for one of its MIG devices (--gpu-mig)");
        } else {
            seen |= 1ull << k;
            uuids[i] = C.gpu.inv.gpu[k].uuid;
        }
    }
    if (rc == 0 && *count && *count != req->ngpu_ids)
        rc = jerr_field(e, "gpu_ids", "gpu_ids: names %zu GPUs but gpu_count asks for %llu; give one or the other",
                        req->ngpu_ids, (unsigned long long)*count);
    if (rc == 0) {
        *count = req->ngpu_ids;
        jobreq_set_list(req, JR_GPU_IDS, uuids, req->ngpu_ids); /* stored as UUIDs, which do not move */
    }
    free(uuids);
    return rc;
}

/* "8.0" -> 80; 0 and *cc = 0 for NULL. */
int core_gpu_cc_parse(const char *s, int *cc)
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

static void describe_kind(const job_req *req, const sched_req *r, char *out, size_t len)
{
    size_t l = 0;
    const char *type = req->gpu_type, *cc = req->gpu_cc;
    out[0] = 0;
    if (type)
        l += (size_t)snprintf(out + l, len - l, " of type %s", type);
    if (cc && l < len)
        l += (size_t)snprintf(out + l, len - l, " with compute capability %s or more", cc);
    if (r->gpu_memory_mb && l < len)
        snprintf(out + l, len - l, r->shared ? " with %llu MB to share on each" : " with at least %llu MB each",
                 (unsigned long long)r->gpu_memory_mb);
}

/* What the machine decides of gpu_type and gpu_share (the schema checked their form). */
static int check_sched_fields(const job_req *req, jerr *e)
{
    const char *type = req->gpu_type;
    if (type && (!*type || !gpu_kind_mask(&C.gpu.inv, type, 0))) {
        char have[300] = "";
        for (int i = 0; i < C.gpu.inv.n; i++) {
            size_t l = strlen(have);
            if (!strstr(have, C.gpu.inv.gpu[i].name))
                snprintf(have + l, sizeof have - l, "%s%s", l ? ", " : "", C.gpu.inv.gpu[i].name);
        }
        return jerr_field(e, "gpu_type", "gpu_type: no GPU of type '%.40s' on this machine; %s%s", type,
                          *have ? "it has " : "it has no GPU", have);
    }
    if (req->gpu_share) {
        char why[300];
        if (!core_mps_available_why(why, sizeof why))
            return jerr_field(e, "gpu_share", "gpu_share: GPU sharing needs NVIDIA MPS, which is not available: %s", why);
    }
    return 0;
}

/* What the machine says of a GPU request whose form the schema checked: the kind, profile
 * and devices exist, and the request can ever be placed here. Fills gpu_count (gpu_all: the
 * usable GPUs of the kind), stores gpu_ids as UUIDs, and runs a --gpu-optional job that the
 * machine cannot serve without GPUs (gpu_degraded says why). */
int core_gpu_validate(job_req *req, jerr *e)
{
    uint64_t count = (uint64_t)req->gpu_count, mem = (uint64_t)req->gpu_memory_mb;
    bool want_all = req->gpu_all, has_ids = req->ngpu_ids > 0, opt = req->gpu_optional;
    const char *mig = req->gpu_mig;
    if (mig) {
        if (mig_profile_id(mig) < 0) {
            char have[300] = "";
            for (int f = 0; f < nmigs; f++) {
                const char *pr = migs[f].m->profile;
                size_t l = strlen(have);
                if (!strstr(have, pr))
                    snprintf(have + l, sizeof have - l, "%s%s", l ? ", " : "", pr);
            }
            return jerr_field(e, "gpu_mig", "gpu_mig: no MIG device with profile '%.40s' on this machine; %s%s", mig,
                              *have ? "it has " : "it has no GPU in MIG mode", have);
        }
        /* a profile this machine has, but whose devices are all unusable, can never run */
        sched_mig mv[GPU_MAX * GPU_MIG_MAX];
        size_t nm = core_gpu_sched_migs(mv, GPU_MAX * GPU_MIG_MAX), usable_n = 0;
        for (size_t f = 0; f < nm; f++)
            usable_n += mv[f].profile == mig_profile_id(mig) && mv[f].usable;
        if (!usable_n)
            return jerr_field(e, "gpu_mig", "gpu_mig: no usable MIG device with profile '%.40s' (their capability "
                                            "nodes are unknown or their GPU has a problem: rnx gpu show)", mig);
        return 0;
    }
    bool asked = count || want_all || has_ids;
    if (!asked)
        return 0;
    if (check_sched_fields(req, e) < 0)
        return -1;
    char why[400] = "";
    if (!C.gpu_on || C.gpu.inv.n == 0) {
        gpu_discovery_errors(&C.gpu, false, why, sizeof why);
        char msg[700];
        snprintf(msg, sizeof msg,
                 "No GPUs available: this machine has no GPU joblet can use (%s). Check that nvidia-smi works on "
                 "the host, the daemon's 'gpu:' log lines, and gpu.enabled in its configuration",
                 C.cfg.gpu.enabled == 0 ? "GPU support is disabled by gpu.enabled: false" : *why ? why : "none found");
        if (!opt)
            return jerr_field(e, "gpu_count", "gpu_count: %s", msg);
        snprintf(why, sizeof why, "%.399s", msg);
    } else {
        if (has_ids && resolve_ids(req, &count, e) < 0)
            return -1;
        sched_gpu gv[GPU_MAX];
        sched_mig mv[GPU_MAX * GPU_MIG_MAX];
        sched_running *run = xcalloc(C.njobs + 1, sizeof *run);
        sched_input in;
        core_sched_base(&in, gv, mv, run, NULL);
        req->gpu_count = (int64_t)(want_all ? 1 : count);
        req->has |= 1ull << JR_GPU_COUNT;
        sched_req r;
        core_sched_req_of(req, 0, &r);
        /* the GPUs of the right kind, memory and sharing, all NUMA nodes together */
        uint32_t q = 0;
        for (int i = 0; i < C.gpu.inv.n; i++)
            q += sched_qualifies(&gv[i], &r) && (!r.gpu_mask || r.gpu_mask >> i & 1);
        char kind[200] = "";
        describe_kind(req, &r, kind, sizeof kind);
        if (want_all) {
            count = q;
            r.gpu_count = q;
            if (!q)
                snprintf(why, sizeof why, "gpu_all: no usable GPU%s on this machine", kind);
        }
        if (!*why && sched_feasible(&in, &r) < 0) {
            if (q >= count && r.single_numa)
                snprintf(why, sizeof why, "asks for %llu GPU%s%s on one NUMA node; no NUMA node of this machine has "
                                          "that many (allow cross_numa, or ask for fewer)",
                         (unsigned long long)count, count == 1 ? "" : "s", kind);
            else if (*kind)
                snprintf(why, sizeof why, "asks for %llu GPU%s%s; this machine has %u such GPU%s of %d%s",
                         (unsigned long long)count, count == 1 ? "" : "s", kind, q, q == 1 ? "" : "s", C.gpu.inv.n,
                         mem && !r.shared ? " (Insufficient GPU memory: see rnx gpu list)" : " (rnx gpu list)");
            else
                snprintf(why, sizeof why, "asks for %llu GPU%s; this machine has %u usable GPU%s (rnx gpu list)",
                         (unsigned long long)count, count == 1 ? "" : "s", q, q == 1 ? "" : "s");
        }
        free(run);
        for (size_t i = 0; !*why && has_ids && mem && i < req->ngpu_ids; i++) {
            int k = gpu_find(&C.gpu.inv, req->gpu_ids[i]);
            if (C.gpu.inv.gpu[k].memory_total_mb < 0 || (uint64_t)C.gpu.inv.gpu[k].memory_total_mb < mem)
                snprintf(why, sizeof why, "GPU %d has %lld MB, less than gpu_memory_mb %llu", k,
                         (long long)C.gpu.inv.gpu[k].memory_total_mb, (unsigned long long)mem);
        }
        if (*why && !opt)
            return jerr_field(e, has_ids ? "gpu_ids" : "gpu_count", "%s: %s", has_ids ? "gpu_ids" : "gpu_count", why);
    }
    if (*why) {
        /* --gpu-optional: run without, and say so in the job's status */
        req->gpu_count = 0;
        req->has |= 1ull << JR_GPU_COUNT;
        jobreq_set_list(req, JR_GPU_IDS, NULL, 0);
        req->has &= ~(1ull << JR_GPU_IDS);
        jobreq_set_str(req, JR_GPU_DEGRADED, why);
        return 0;
    }
    req->gpu_count = (int64_t)count;
    req->has |= 1ull << JR_GPU_COUNT;
    return 0;
}

const int *core_gpu_pair_scores(void)
{
    static int pair[GPU_MAX * GPU_MAX];
    static int built = -1;
    if (built != C.gpu.inv.n) {
        gpu_pair_scores(&C.gpu.inv, pair);
        built = C.gpu.inv.n;
    }
    return pair;
}

void core_gpu_sched_view(sched_gpu *out)
{
    if (!C.gpu.inv.n)
        return; /* no GPUs: not even a look for MPS, on every scheduling pass */
    gpu_sched_gpus(&C.gpu.inv, core_mps_available(), out);
    for (int i = 0; i < C.gpu.inv.n; i++) {
        const gpu_hold *h = core_gpu_hold(i);
        out[i].usable = usable(i) && h->state != GS_OFFLINE;
        out[i].closed = h->state == GS_DRAINING || h->state == GS_RESETTING || core_gpu_health(i)->hot;
    }
}

/* Not free besides their holders: the GPUs whose memory a helper is zeroing. */
uint64_t core_gpu_held(void) { return core_gpu_scrub_busy(); }

uint64_t core_gpu_kind_mask(const job_req *req)
{
    const char *type = req->gpu_type;
    int cc = 0;
    core_gpu_cc_parse(req->gpu_cc, &cc);
    return (type || cc) ? gpu_kind_mask(&C.gpu.inv, type, cc) | (1ull << (SCHED_GPU_MAX - 1)) : 0;
}

static void grant_whole(gpu_grant *gr, int i)
{
    const gpu_dev *g = &C.gpu.inv.gpu[i];
    gr->index = g->index;
    snprintf(gr->uuid, sizeof gr->uuid, "%s", g->uuid);
    gr->minor = g->minor;
    snprintf(gr->bus_id, sizeof gr->bus_id, "%s", g->bus_id);
    snprintf(gr->name, sizeof gr->name, "%s", g->name);
    gr->memory_mb = g->memory_total_mb;
    gr->simulated = C.gpu.inv.simulated;
}

/* The memory a job has of GPU i: its reservation when shared, the whole GPU else. */
static int64_t gpu_audit_mb(const job *j, int i)
{
    return j->req.gpu_share ? j->req.gpu_memory_mb : C.gpu.inv.gpu[i].memory_total_mb;
}

int core_gpu_grant(job *j, uint64_t set, jerr *e)
{
    bool shared = j->req.gpu_share;
    uint64_t mb = (uint64_t)j->req.gpu_memory_mb;
    for (int i = 0; shared && i < C.gpu.inv.n; i++)
        if (set >> i & 1 && shared_n[i] == 0 && core_mps_start(i, e) < 0)
            return -1;
    grant_list_free(&j->gpus);
    for (int i = 0; i < C.gpu.inv.n; i++)
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
    for (int i = 0; i < C.gpu.inv.n; i++)
        if (set >> i & 1)
            core_audit("allocate", j->owner_uid, i, j->id, -1, gpu_audit_mb(j, i), shared ? "shared (MPS)" : NULL);
    char list[GPU_MAX * 120] = "";
    for (size_t k = 0; k < j->gpus.n; k++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%d %s (minor %d, bus %s)", k ? ", " : "", j->gpus.g[k].index,
                 j->gpus.g[k].uuid, j->gpus.g[k].minor, j->gpus.g[k].bus_id);
    }
    log_info("job %s: granted %zu %sGPU%s%s: %s", j->id, j->gpus.n, shared ? "shared " : "", j->gpus.n == 1 ? "" : "s",
             C.gpu.inv.simulated ? " (simulated)" : "", list);
    return 0;
}

/* The explicit devices of a job (gpu_ids, stored as UUIDs) as scheduler bits. A UUID that
 * discovery no longer finds maps to a bit past every GPU, so the job waits rather than run
 * on something else. */
uint64_t core_gpu_ids_mask(const job_req *req)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < req->ngpu_ids; i++) {
        int k = gpu_find(&C.gpu.inv, req->gpu_ids[i]);
        mask |= 1ull << (k >= 0 ? k : SCHED_GPU_MAX - 1);
    }
    return mask;
}

void core_gpu_release(job *j)
{
    uint64_t freed = 0;
    for (int i = 0; i < GPU_MAX; i++)
        if (owner[i] == j) {
            owner[i] = NULL;
            freed |= 1ull << i;
        }
    if (j->req.gpu_share)
        for (int i = 0; i < C.gpu.inv.n; i++)
            if (j->gpu_set >> i & 1 && shared_n[i] > 0) {
                shared_mb[i] -= (uint64_t)j->req.gpu_memory_mb;
                /* the last tenant gone: its MPS server goes, and the GPU is scrubbed like any */
                if (--shared_n[i] == 0) {
                    core_mps_stop(i);
                    freed |= 1ull << i;
                }
            }
    if (j->gpu_set || j->gpu_mig) {
        int64_t held = j->gpu_granted_ms ? now_ms() - j->gpu_granted_ms : -1;
        for (int i = 0; i < C.gpu.inv.n; i++)
            if (j->gpu_set >> i & 1)
                core_audit("release", j->owner_uid, i, j->id, held, gpu_audit_mb(j, i), NULL);
        if (j->gpu_mig)
            core_audit("release", j->owner_uid, migs[j->gpu_mig - 1].gpu, j->id, held,
                       migs[j->gpu_mig - 1].m->memory_mb, migs[j->gpu_mig - 1].m->uuid);
    }
    j->gpu_set = 0;
    j->gpu_mig = 0;
    core_gpu_scrub(freed);
    for (int f = 0; f < GPU_MAX * GPU_MIG_MAX; f++)
        if (mig_owner[f] == j)
            mig_owner[f] = NULL;
    health_reset_when_idle();
}

/* A restarted daemon takes back the GPUs of the jobs it re-adopts, by UUID. */
void core_gpu_reclaim(job *j)
{
    for (size_t k = 0; k < j->gpus.n; k++) {
        const gpu_grant *g = &j->gpus.g[k];
        const char *uuid = g->uuid;
        int i = gpu_find(&C.gpu.inv, uuid);
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

static const char *core_gpu_owner(int i)
{
    return i >= 0 && i < GPU_MAX && owner[i] ? owner[i]->id : NULL;
}
