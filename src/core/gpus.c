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
        if (!job_state_terminal(C.jobs[i]->state) && C.jobs[i]->gpus) {
            core_gpu_reclaim(C.jobs[i]);
            if (json_is_true(json_object_get(C.jobs[i]->req, "gpu_share")))
                shared_in_use |= C.jobs[i]->gpu_set;
        }
    core_mps_init(shared_in_use);
    C.gpu_on = C.gpu.found && (inv->n > 0 || gc->enabled == 1);
    if (!C.gpu.found && *gc->fixture) {
        /* a simulation asked for by name and not possible is a configuration error */
        json_t *a = json_array_get(C.gpu.attempts, 0);
        const char *err = json_string_value(json_object_get(a, "error"));
        return jerr_set(e, EINVAL, "%s", err ? err : "gpu.fixture: cannot be read");
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

int core_gpu_mig_profile(const json_t *req)
{
    const char *p = json_string_value(json_object_get(req, "gpu_mig"));
    return p ? mig_profile_id(p) : -1;
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
    json_decref(j->gpus);
    j->gpus = json_array();
    json_array_append_new(
        j->gpus, json_pack("{s:i,s:s,s:s,s:i,s:s,s:s,s:I,s:b,s:{s:s,s:i,s:i,s:i,s:i}}", "index", g->index, "uuid",
                           m->uuid, "parent_uuid", g->uuid, "minor", g->minor, "bus_id", g->bus_id, "name", name,
                           "memory_mb", (json_int_t)m->memory_mb, "simulated", C.gpu.inv.simulated, "mig", "profile",
                           m->profile, "gi", m->gi, "ci", m->ci, "gi_cap_minor", m->gi_cap_minor, "ci_cap_minor",
                           m->ci_cap_minor));
    mig_owner[flat] = j;
    j->gpu_mig = flat + 1;
    j->gpu_granted_ms = now_ms();
    core_audit("allocate", j->owner_uid, migs[flat].gpu, j->id, -1, m->memory_mb, m->uuid);
    log_info("job %s: granted MIG device %s (%s, GI %d CI %d) of GPU %d%s", j->id, m->uuid, m->profile, m->gi, m->ci,
             g->index, C.gpu.inv.simulated ? " (simulated)" : "");
}

static const char *const cap_names[] = {"compute", "utility", "video", "graphics", "display", "compat32", NULL};

/* "compute,utility" or "all": the NVIDIA_DRIVER_CAPABILITIES names, checked and normalized. */
static int check_caps(json_t *req, jerr *e)
{
    const char *caps = NULL;
    if (jx_str(req, "gpu_caps", &caps, e) < 0)
        return -1;
    if (!caps)
        return 0;
    char buf[256], norm[256] = "";
    if (strlen(caps) >= sizeof buf)
        return jerr_field(e, "gpu_caps", "gpu_caps: too long");
    snprintf(buf, sizeof buf, "%s", caps);
    for (char *save = NULL, *c = strtok_r(buf, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        int ok = strcmp(c, "all") == 0;
        for (size_t i = 0; !ok && cap_names[i]; i++)
            ok = strcmp(c, cap_names[i]) == 0;
        if (!ok)
            return jerr_field(e, "gpu_caps", "gpu_caps: '%s' is not a driver capability; use compute, utility, video, "
                                             "graphics, display, compat32 or all", c);
        size_t l = strlen(norm);
        if (!strstr(norm, c))
            snprintf(norm + l, sizeof norm - l, "%s%s", l ? "," : "", c);
    }
    if (!*norm)
        return jerr_field(e, "gpu_caps", "gpu_caps: empty; use e.g. compute,utility");
    json_object_set_new(req, "gpu_caps", json_string(norm));
    return 0;
}

/* gpu_ids: indexes or UUIDs, as `docker --gpus device=`; stored as UUIDs, which do not move. */
static int resolve_ids(json_t *req, uint64_t *count, jerr *e)
{
    json_t *ids = json_object_get(req, "gpu_ids"), *v;
    if (!ids || json_is_null(ids))
        return 0;
    if (!json_is_array(ids) || !json_array_size(ids))
        return jerr_field(e, "gpu_ids", "gpu_ids: must be a list of GPU indexes or UUIDs (rnx gpu list)");
    json_t *uuids = json_array();
    size_t i;
    uint64_t seen = 0;
    json_array_foreach(ids, i, v)
    {
        const char *id = json_string_value(v);
        int k = id ? gpu_find(&C.gpu.inv, id) : -1;
        if (k < 0) {
            json_decref(uuids);
            return jerr_field(e, "gpu_ids", "gpu_ids: no GPU '%.64s' on this machine; give an index from 0 to %d or a "
                                            "UUID (rnx gpu list)", id ? id : "(not a string)", C.gpu.inv.n - 1);
        }
        if (seen >> k & 1) {
            json_decref(uuids);
            return jerr_field(e, "gpu_ids", "gpu_ids: GPU %d is listed twice", k);
        }
        if (!usable(k)) {
            json_decref(uuids);
            return jerr_field(e, "gpu_ids", "gpu_ids: GPU %d cannot be used: %s", k,
                              *C.gpu.inv.gpu[k].problem ? C.gpu.inv.gpu[k].problem
                              : core_gpu_hold(k)->state == GS_DEGRADED
                                  ? core_gpu_hold(k)->reason
                                  : "it is in MIG mode; ask for one of its MIG devices (--gpu-mig)");
        }
        seen |= 1ull << k;
        json_array_append_new(uuids, json_string(C.gpu.inv.gpu[k].uuid));
    }
    if (*count && *count != json_array_size(uuids)) {
        json_decref(uuids);
        return jerr_field(e, "gpu_ids", "gpu_ids: names %zu GPUs but gpu_count asks for %llu; give one or the other",
                          json_array_size(ids), (unsigned long long)*count);
    }
    *count = json_array_size(uuids);
    json_object_set_new(req, "gpu_ids", uuids);
    return 0;
}

/* NVIDIA's container convention: NVIDIA_VISIBLE_DEVICES=void or none means no GPU at all. */
static bool env_says_no_gpu(json_t *req)
{
    const char *v = json_string_value(json_object_get(json_object_get(req, "env"), "NVIDIA_VISIBLE_DEVICES"));
    return v && (!strcmp(v, "void") || !strcmp(v, "none"));
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

static void describe_kind(const json_t *req, const sched_req *r, char *out, size_t len)
{
    size_t l = 0;
    const char *type = json_string_value(json_object_get(req, "gpu_type"));
    const char *cc = json_string_value(json_object_get(req, "gpu_cc"));
    out[0] = 0;
    if (type)
        l += (size_t)snprintf(out + l, len - l, " of type %s", type);
    if (cc && l < len)
        l += (size_t)snprintf(out + l, len - l, " with compute capability %s or more", cc);
    if (r->gpu_memory_mb && l < len)
        snprintf(out + l, len - l, r->shared ? " with %llu MB to share on each" : " with at least %llu MB each",
                 (unsigned long long)r->gpu_memory_mb);
}

/* The scheduler's fields: gpu_type, gpu_cc, gpu_share, cross_numa, preemptible. */
static int check_sched_fields(json_t *req, bool asked, uint64_t mem, jerr *e)
{
    const char *type = NULL, *cc = NULL;
    if (jx_str(req, "gpu_type", &type, e) < 0 || jx_str(req, "gpu_cc", &cc, e) < 0)
        return -1;
    static const char *const bools[] = {"gpu_share", "cross_numa", "preemptible"};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = json_object_get(req, bools[i]);
        if (v && !json_is_boolean(v))
            return jerr_field(e, bools[i], "%s: must be true or false", bools[i]);
    }
    int ccv;
    if (core_gpu_cc_parse(cc, &ccv) < 0)
        return jerr_field(e, "gpu_cc", "gpu_cc: '%.20s' is not a compute capability; give MAJOR.MINOR, e.g. 8.0 or 9.0",
                          cc);
    bool share = json_is_true(json_object_get(req, "gpu_share"));
    bool numa = json_object_get(req, "cross_numa") != NULL;
    if (!asked && (type || cc || share || numa)) {
        const char *f = type ? "gpu_type" : cc ? "gpu_cc" : share ? "gpu_share" : "cross_numa";
        return jerr_field(e, f, "%s: qualifies a GPU request, but the job asks for no GPU; add gpu_count (--gpu=N)", f);
    }
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
    if (share) {
        if (json_integer_value(json_object_get(req, "gpu_count")) > 1 || json_array_size(json_object_get(req, "gpu_ids")) > 1)
            return jerr_field(e, "gpu_share", "gpu_share: a shared job gets one GPU (each shared GPU has its own MPS "
                                              "server, and a CUDA process talks to one); ask for gpu_count 1");
        if (!mem)
            return jerr_field(e, "gpu_share", "gpu_share: a shared GPU needs a memory reservation; add gpu_memory_mb "
                                              "(--gpu-memory)");
        if (json_object_get(req, "gpu_all"))
            return jerr_field(e, "gpu_share", "gpu_share: cannot be combined with gpu_all");
        char why[300];
        if (!core_mps_available_why(why, sizeof why))
            return jerr_field(e, "gpu_share", "gpu_share: GPU sharing needs NVIDIA MPS, which is not available: %s", why);
    }
    return 0;
}

int core_gpu_validate(json_t *req, jerr *e)
{
    uint64_t count = 0, mem = 0;
    json_t *all = json_object_get(req, "gpu_all"), *opt = json_object_get(req, "gpu_optional");
    if (jx_u64(req, "gpu_count", 0, GPU_MAX, &count, e) < 0)
        return jerr_field(e, "gpu_count", "gpu_count: must be a whole number of GPUs from 0 to %d", GPU_MAX);
    if (jx_u64(req, "gpu_memory_mb", 1, 1ull << 30, &mem, e) < 0)
        return jerr_field(e, "gpu_memory_mb", "gpu_memory_mb: must be a size in MB from 1 (e.g. 8GB, 4096MB, 4096)");
    if ((all && !json_is_boolean(all)) || (opt && !json_is_boolean(opt)))
        return jerr_field(e, all && !json_is_boolean(all) ? "gpu_all" : "gpu_optional", "%s: must be true or false",
                          all && !json_is_boolean(all) ? "gpu_all" : "gpu_optional");
    if (check_caps(req, e) < 0)
        return -1;
    bool want_all = json_is_true(all), has_ids = json_object_get(req, "gpu_ids") != NULL;
    const char *mig = NULL;
    if (jx_str(req, "gpu_mig", &mig, e) < 0)
        return -1;
    if (mig) {
        if (count || want_all || has_ids || mem)
            return jerr_field(e, "gpu_mig", "gpu_mig: asks for one MIG device; do not also give gpu_count, gpu_ids, "
                                            "gpu_all or gpu_memory_mb (the profile says its memory)");
        if (env_says_no_gpu(req))
            return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES asks for no GPU, but the job also asks for a "
                                        "MIG device; drop one of the two");
        if (json_is_true(json_object_get(req, "gpu_share")) || json_object_get(req, "gpu_type") ||
            json_object_get(req, "gpu_cc"))
            return jerr_field(e, "gpu_mig", "gpu_mig: a MIG device is its own slice of a GPU; do not also give "
                                            "gpu_share, gpu_type or gpu_cc");
        if (check_sched_fields(req, true, mem, e) < 0)
            return -1;
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
    if (want_all && (count || has_ids))
        return jerr_field(e, "gpu_all", "gpu_all: asks for every GPU; do not also give gpu_count or gpu_ids");
    bool asked = count || want_all || has_ids;
    if (check_sched_fields(req, asked, mem, e) < 0)
        return -1;
    if (asked && env_says_no_gpu(req))
        return jerr_field(e, "env", "env: NVIDIA_VISIBLE_DEVICES=%s asks for no GPU, but the job also asks for GPUs; "
                                    "drop one of the two",
                          json_string_value(json_object_get(json_object_get(req, "env"), "NVIDIA_VISIBLE_DEVICES")));
    if (!asked) {
        if (mem || json_object_get(req, "gpu_caps") || json_is_true(opt))
            return jerr_field(e, mem ? "gpu_memory_mb" : json_is_true(opt) ? "gpu_optional" : "gpu_caps",
                              "%s: qualifies a GPU request, but the job asks for no GPU; add gpu_count (--gpu=N)",
                              mem ? "gpu_memory_mb" : json_is_true(opt) ? "gpu_optional" : "gpu_caps");
        return 0;
    }
    char why[400] = "";
    if (!C.gpu_on || C.gpu.inv.n == 0) {
        json_t *a;
        size_t i;
        json_array_foreach(C.gpu.attempts, i, a)
        {
            const char *err = json_string_value(json_object_get(a, "error"));
            size_t l = strlen(why);
            snprintf(why + l, sizeof why - l, "%s%s", l ? "; " : "", err ? err : "no GPU found");
        }
        char msg[700];
        snprintf(msg, sizeof msg,
                 "No GPUs available: this machine has no GPU joblet can use (%s). Check that nvidia-smi works on "
                 "the host, the daemon's 'gpu:' log lines, and gpu.enabled in its configuration",
                 C.cfg.gpu.enabled == 0 ? "GPU support is disabled by gpu.enabled: false" : *why ? why : "none found");
        if (!json_is_true(opt))
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
        sched_req r;
        json_object_set_new(req, "gpu_count", json_integer((json_int_t)(want_all ? 1 : count)));
        core_sched_req_json(req, 0, &r);
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
        if (!*why && has_ids && mem)
            for (size_t i = 0; i < json_array_size(json_object_get(req, "gpu_ids")); i++) {
                int k = gpu_find(&C.gpu.inv, json_string_value(json_array_get(json_object_get(req, "gpu_ids"), i)));
                if (C.gpu.inv.gpu[k].memory_total_mb < 0 || (uint64_t)C.gpu.inv.gpu[k].memory_total_mb < mem)
                    snprintf(why, sizeof why, "GPU %d has %lld MB, less than gpu_memory_mb %llu", k,
                             (long long)C.gpu.inv.gpu[k].memory_total_mb, (unsigned long long)mem);
            }
        if (*why && !json_is_true(opt))
            return jerr_field(e, has_ids ? "gpu_ids" : "gpu_count", "%s: %s", has_ids ? "gpu_ids" : "gpu_count", why);
    }
    if (*why) {
        /* --gpu-optional: run without, and say so in the job's status */
        json_object_set_new(req, "gpu_count", json_integer(0));
        json_object_del(req, "gpu_ids");
        json_object_set_new(req, "gpu_degraded", json_string(why));
        return 0;
    }
    json_object_set_new(req, "gpu_count", json_integer((json_int_t)count));
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

uint64_t core_gpu_kind_mask(const json_t *req)
{
    const char *type = json_string_value(json_object_get(req, "gpu_type"));
    int cc = 0;
    core_gpu_cc_parse(json_string_value(json_object_get(req, "gpu_cc")), &cc);
    return (type || cc) ? gpu_kind_mask(&C.gpu.inv, type, cc) | (1ull << (SCHED_GPU_MAX - 1)) : 0;
}

static json_t *grant_json(int i)
{
    const gpu_dev *g = &C.gpu.inv.gpu[i];
    return json_pack("{s:i,s:s,s:i,s:s,s:s,s:I,s:b}", "index", g->index, "uuid", g->uuid, "minor", g->minor, "bus_id",
                     g->bus_id, "name", g->name, "memory_mb", (json_int_t)g->memory_total_mb, "simulated",
                     C.gpu.inv.simulated);
}

/* The memory a job has of GPU i: its reservation when shared, the whole GPU else. */
static int64_t gpu_audit_mb(const job *j, int i)
{
    if (json_is_true(json_object_get(j->req, "gpu_share")))
        return json_integer_value(json_object_get(j->req, "gpu_memory_mb"));
    return C.gpu.inv.gpu[i].memory_total_mb;
}

int core_gpu_grant(job *j, uint64_t set, jerr *e)
{
    bool shared = json_is_true(json_object_get(j->req, "gpu_share"));
    uint64_t mb = (uint64_t)json_integer_value(json_object_get(j->req, "gpu_memory_mb"));
    for (int i = 0; shared && i < C.gpu.inv.n; i++)
        if (set >> i & 1 && shared_n[i] == 0 && core_mps_start(i, e) < 0)
            return -1;
    json_decref(j->gpus);
    j->gpus = json_array();
    for (int i = 0; i < C.gpu.inv.n; i++)
        if (set >> i & 1) {
            json_t *g = grant_json(i);
            if (shared) {
                shared_n[i]++;
                shared_mb[i] += mb;
                json_object_set_new(g, "shared_mb", json_integer((json_int_t)mb));
            } else {
                owner[i] = j;
            }
            json_array_append_new(j->gpus, g);
        }
    j->gpu_set = set;
    j->gpu_granted_ms = now_ms();
    for (int i = 0; i < C.gpu.inv.n; i++)
        if (set >> i & 1)
            core_audit("allocate", j->owner_uid, i, j->id, -1, gpu_audit_mb(j, i), shared ? "shared (MPS)" : NULL);
    char *list = json_dumps(j->gpus, JSON_COMPACT);
    log_info("job %s: granted %zu %sGPU%s%s: %s", j->id, json_array_size(j->gpus), shared ? "shared " : "",
             json_array_size(j->gpus) == 1 ? "" : "s", C.gpu.inv.simulated ? " (simulated)" : "", list ? list : "");
    free(list);
    return 0;
}

/* The explicit devices of a job (gpu_ids, stored as UUIDs) as scheduler bits. A UUID that
 * discovery no longer finds maps to a bit past every GPU, so the job waits rather than run
 * on something else. */
uint64_t core_gpu_ids_mask(const json_t *req)
{
    json_t *ids = json_object_get(req, "gpu_ids"), *v;
    uint64_t mask = 0;
    size_t i;
    json_array_foreach(ids, i, v)
    {
        int k = gpu_find(&C.gpu.inv, json_string_value(v) ? json_string_value(v) : "");
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
    if (json_is_true(json_object_get(j->req, "gpu_share")))
        for (int i = 0; i < C.gpu.inv.n; i++)
            if (j->gpu_set >> i & 1 && shared_n[i] > 0) {
                shared_mb[i] -= (uint64_t)json_integer_value(json_object_get(j->req, "gpu_memory_mb"));
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
    json_t *g;
    size_t k;
    json_array_foreach(j->gpus, k, g)
    {
        const char *uuid = json_string_value(json_object_get(g, "uuid"));
        int i = uuid ? gpu_find(&C.gpu.inv, uuid) : -1;
        for (int f = 0; uuid && f < nmigs; f++)
            if (strcmp(migs[f].m->uuid, uuid) == 0) {
                mig_owner[f] = j;
                j->gpu_mig = f + 1;
                i = GPU_MAX; /* found, as a MIG device */
            }
        if (i == GPU_MAX)
            continue;
        if (i < 0) {
            log_warn("job %s held GPU %s, which discovery no longer finds", j->id, uuid ? uuid : "?");
            continue;
        }
        j->gpu_set |= 1ull << i;
        if (json_object_get(g, "shared_mb")) {
            shared_n[i]++;
            shared_mb[i] += (uint64_t)json_integer_value(json_object_get(g, "shared_mb"));
        } else {
            owner[i] = j;
        }
    }
}

static const char *core_gpu_owner(int i)
{
    return i >= 0 && i < GPU_MAX && owner[i] ? owner[i]->id : NULL;
}
