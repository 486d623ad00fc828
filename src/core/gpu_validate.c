/* What this machine says of a GPU request whose form the schema (common/jobreq.c) checked:
 * the kind, the MIG profile and the named devices exist, and the request can ever be placed
 * here (gpu_validate.h). */
#include "gpu_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"
#include "../gpu/sched_view.h"
#include "../sched/sched.h"
#include "gpu_service.h"
#include "gpu_mps.h"
#include "gpus.h"
#include "sched_input.h"
#include "state.h"

/* gpu_ids: indexes or UUIDs, as `docker --gpus device=`; stored as UUIDs, which do not move. */
static int resolve_ids(job_req *req, uint64_t *count, jerr *e)
{
    if (!req->ngpu_ids)
        return 0;
    char **uuids = xcalloc(req->ngpu_ids + 1, sizeof *uuids);
    uint64_t seen = 0;
    int rc = 0;
    char why[400];
    for (size_t i = 0; i < req->ngpu_ids && rc == 0; i++) {
        const char *id = req->gpu_ids[i];
        int k = gpu_find(&core.gpu.inv, id);
        if (k < 0) {
            rc = jerr_field(e, "gpu_ids", "gpu_ids: no GPU '%.64s' on this machine; give an index from 0 to %d or a "
                                          "UUID (rnx gpu list)", id, core.gpu.inv.n - 1);
        } else if (seen >> k & 1) {
            rc = jerr_field(e, "gpu_ids", "gpu_ids: GPU %d is listed twice", k);
        } else if (*core.gpu.inv.gpu[k].problem) {
            rc = jerr_field(e, "gpu_ids", "gpu_ids: GPU %d cannot be used: %s", k, core.gpu.inv.gpu[k].problem);
        } else if (gpus_out_of_service(k, why, sizeof why) == GPUS_NEEDS_ADMIN) {
            /* offline, draining, degraded: named, with since when and why (hot and resetting
             * GPUs come back by themselves: the job waits, and its wait_reason says so) */
            rc = jerr_field(e, "gpu_ids", "gpu_ids: %s", why);
        } else if (!gpus_usable(k)) {
            rc = jerr_field(e, "gpu_ids", "gpu_ids: GPU %d cannot be used: %s", k,
                            core.gpu.inv.gpu[k].minor < 0 ? "it has no device node"
                                                          : "it is in MIG mode; ask for one of its MIG devices (--gpu-mig)");
        } else {
            seen |= 1ull << k;
            uuids[i] = core.gpu.inv.gpu[k].uuid;
        }
    }
    if (rc == 0 && *count && *count != req->ngpu_ids)
        rc = jerr_field(e, "gpu_ids", "gpu_ids: names %zu GPU%s but gpu_count asks for %llu; give one or the other",
                        req->ngpu_ids, req->ngpu_ids == 1 ? "" : "s", (unsigned long long)*count);
    if (rc == 0) {
        *count = req->ngpu_ids;
        jobreq_set_list(req, JR_GPU_IDS, uuids, req->ngpu_ids); /* stored as UUIDs, which do not move */
    }
    free(uuids);
    return rc;
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

/* Which field makes a request of the GPUs' kind impossible, for the refusal to name what the
 * user typed (--gpu-memory=100GB is a --gpu-memory problem, not a --gpu one): gpu_memory_mb when
 * the GPUs of the kind without it would be enough, else gpu_cc or gpu_type when only one of them
 * is given, else gpu_count. */
static const char *kind_blame(const job_req *req, const sched_req *r, const sched_gpu *gv, uint32_t count)
{
    if (r->gpu_memory_mb && !r->shared) {
        sched_req any = *r;
        any.gpu_memory_mb = 0;
        uint32_t q = 0;
        for (int i = 0; i < core.gpu.inv.n; i++)
            q += sched_qualifies(&gv[i], &any) && (!any.gpu_mask || any.gpu_mask >> i & 1);
        if (q >= count)
            return "gpu_memory_mb";
    }
    if (req->gpu_cc && !req->gpu_type)
        return "gpu_cc";
    if (req->gpu_type && !req->gpu_cc)
        return "gpu_type";
    return req->ngpu_ids ? "gpu_ids" : "gpu_count";
}

/* What the machine decides of gpu_type and gpu_share (the schema checked their form). */
static int check_sched_fields(const job_req *req, jerr *e)
{
    const char *type = req->gpu_type;
    if (type && (!*type || !gpu_kind_mask(&core.gpu.inv, type, 0))) {
        char have[300] = "";
        for (int i = 0; i < core.gpu.inv.n; i++) {
            size_t l = strlen(have);
            if (!strstr(have, core.gpu.inv.gpu[i].name))
                snprintf(have + l, sizeof have - l, "%s%s", l ? ", " : "", core.gpu.inv.gpu[i].name);
        }
        return jerr_field(e, "gpu_type", "gpu_type: no GPU of type '%.40s' on this machine; %s%s", type,
                          *have ? "it has " : "it has no GPU", have);
    }
    if (req->gpu_share) {
        char why[300];
        if (!gpu_mps_available_why(why, sizeof why))
            return jerr_field(e, "gpu_share", "gpu_share: GPU sharing needs NVIDIA MPS, which is not available: %s", why);
    }
    return 0;
}

/* For a refusal of whole GPUs: the GPUs in MIG mode, which are handed out only as their MIG
 * devices (docs/gpu.md), and the profiles to ask for instead ("" when no GPU is in MIG mode):
 * without it, "this machine has 0 usable GPUs" beside rnx gpu list's "available" GPU puzzles. */
static void mig_hint(char *out, size_t len)
{
    char ids[120] = "";
    int n = 0;
    size_t l = 0;
    for (int i = 0; i < core.gpu.inv.n; i++)
        if (core.gpu.inv.gpu[i].mig_enabled == 1 && l < sizeof ids)
            l += (size_t)snprintf(ids + l, sizeof ids - l, "%s%d", n++ ? "," : "", i);
    out[0] = 0;
    if (!n)
        return;
    char have[300];
    gpus_mig_profiles(have, sizeof have);
    snprintf(out, len, "; GPU%s %s %s in MIG mode, handed out only as %s MIG devices: ask for one with gpu_mig%s%s",
             n == 1 ? "" : "s", ids, n == 1 ? "is" : "are", n == 1 ? "its" : "their", *have ? " (" : "",
             *have ? have : "");
    if (*have)
        snprintf(out + strlen(out), len - strlen(out), ")");
}

/* What the machine says of a GPU request whose form the schema checked: the kind, profile
 * and devices exist, and the request can ever be placed here. Fills gpu_count (gpu_all: the
 * usable GPUs of the kind), stores gpu_ids as UUIDs, and runs a --gpu-optional job that the
 * machine cannot serve without GPUs (gpu_degraded says why). */
int gpu_validate(job_req *req, jerr *e)
{
    uint64_t count = (uint64_t)req->gpu_count, mem = (uint64_t)req->gpu_memory_mb;
    bool want_all = req->gpu_all, has_ids = req->ngpu_ids > 0, opt = req->gpu_optional;
    const char *mig = req->gpu_mig;
    if (mig) {
        if (gpus_mig_profile_id(mig) < 0) {
            char have[300];
            gpus_mig_profiles(have, sizeof have);
            return jerr_field(e, "gpu_mig", "gpu_mig: no MIG device with profile '%.40s' on this machine; %s%s", mig,
                              *have ? "it has " : "it has no GPU in MIG mode", have);
        }
        /* a profile this machine has, but whose devices are all unusable, can never run */
        sched_mig mv[GPU_MAX * GPU_MIG_MAX];
        size_t nm = gpus_sched_migs(mv, GPU_MAX * GPU_MIG_MAX), usable_n = 0;
        for (size_t f = 0; f < nm; f++)
            usable_n += mv[f].profile == gpus_mig_profile_id(mig) && mv[f].usable;
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
    const char *blame = NULL;   /* the field a refusal names: the one that made the request impossible */
    if (!core.gpu_on || core.gpu.inv.n == 0) {
        gpu_discovery_errors(&core.gpu, false, why, sizeof why);
        char msg[700];
        snprintf(msg, sizeof msg,
                 "No GPUs available: this machine has no GPU joblet can use (%s). Check that nvidia-smi works on "
                 "the host, the daemon's 'gpu:' log lines, and gpu.enabled in its configuration",
                 core.cfg.gpu.enabled == 0 ? "GPU support is disabled by gpu.enabled: false" : *why ? why : "none found");
        if (!opt)
            return jerr_field(e, "gpu_count", "gpu_count: %s", msg);
        snprintf(why, sizeof why, "%.399s", msg);
    } else {
        if (has_ids && resolve_ids(req, &count, e) < 0)
            return -1;
        sched_gpu gv[GPU_MAX];
        sched_mig mv[GPU_MAX * GPU_MIG_MAX];
        sched_running *run = xcalloc(core.njobs + 1, sizeof *run);
        sched_input in;
        sched_input_base(&in, gv, mv, run, NULL);
        req->gpu_count = (int64_t)(want_all ? 1 : count);
        req->has |= 1ull << JR_GPU_COUNT;
        sched_req r;
        sched_input_req_of(req, 0, &r);
        /* the GPUs of the right kind, memory and sharing, all NUMA nodes together */
        uint32_t q = 0;
        for (int i = 0; i < core.gpu.inv.n; i++)
            q += sched_qualifies(&gv[i], &r) && (!r.gpu_mask || r.gpu_mask >> i & 1);
        char kind[200] = "";
        describe_kind(req, &r, kind, sizeof kind);
        if (want_all) {
            count = q;
            r.gpu_count = q;
            if (!q) {
                char hint[300];
                mig_hint(hint, sizeof hint);
                snprintf(why, sizeof why, "no usable GPU%s on this machine%s", kind, hint);
                blame = "gpu_all";
            }
        }
        if (!*why && sched_feasible(&in, &r) < 0) {
            if (q >= count && r.single_numa)
                snprintf(why, sizeof why, "asks for %llu GPU%s%s on one NUMA node; no NUMA node of this machine has "
                                          "that many (allow cross_numa, or ask for fewer)",
                         (unsigned long long)count, count == 1 ? "" : "s", kind);
            else if (*kind) {
                blame = kind_blame(req, &r, gv, (uint32_t)count);
                snprintf(why, sizeof why, "asks for %llu GPU%s%s; this machine has %u such GPU%s of %d%s",
                         (unsigned long long)count, count == 1 ? "" : "s", kind, q, q == 1 ? "" : "s", core.gpu.inv.n,
                         mem && !r.shared ? " (Insufficient GPU memory: see rnx gpu list)" : " (rnx gpu list)");
            } else {
                char hint[300];
                mig_hint(hint, sizeof hint);
                snprintf(why, sizeof why, "asks for %llu GPU%s; this machine has %u usable GPU%s (rnx gpu list)%s",
                         (unsigned long long)count, count == 1 ? "" : "s", q, q == 1 ? "" : "s", hint);
            }
        }
        free(run);
        for (size_t i = 0; !*why && has_ids && mem && i < req->ngpu_ids; i++) {
            int k = gpu_find(&core.gpu.inv, req->gpu_ids[i]);
            if (core.gpu.inv.gpu[k].memory_total_mb < 0 || (uint64_t)core.gpu.inv.gpu[k].memory_total_mb < mem) {
                snprintf(why, sizeof why, "GPU %d has %lld MB, less than gpu_memory_mb %llu", k,
                         (long long)core.gpu.inv.gpu[k].memory_total_mb, (unsigned long long)mem);
                blame = "gpu_memory_mb";
            }
        }
        if (!blame)
            blame = has_ids ? "gpu_ids" : "gpu_count";
        if (*why && !opt)
            return jerr_field(e, blame, "%s: %s", blame, why);
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

