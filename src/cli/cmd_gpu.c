/* The "rnx gpu" commands: list, show, topo. Simulated GPUs say so on every line that could be
 * mistaken for real hardware. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/parse.h"
#include "../common/util.h"
#include "client.h"
#include "print.h"
#include "cli.h"
#include "cmd_gpu.h"
#include "gres_conf.h"

static const char gpu_help[] =
    "Usage: rnx gpu <command> [--json]\n"
    "\n"
    "Commands:\n"
    "  list            every GPU: memory, utilization, temperature, state, the job holding it\n"
    "  show GPU        one GPU in detail (GPU is an index or a UUID)\n"
    "  topo            the interconnect matrix (NV# = NVLink count, PIX/PXB/PHB/NODE/SYS = PCIe path)\n"
    "  drain GPU       admins: no new jobs on it; the running ones finish (--force: stop them now)\n"
    "  offline GPU     admins: out of service (refused while jobs run on it, unless --force)\n"
    "  online GPU      admins: back in service (--force: even while a reset is pending)\n"
    "  gres-conf       Slurm's gres.conf lines for this node's GPUs (rnx gpu gres-conf --help)\n"
    "\n"
    "--json prints the API's objects (docs/api.md, \"GPUs\").\n";

static const char topo_legend[] =
    "Legend:\n"
    "  X    = self\n"
    "  NV#  = connected by # NVLinks (through NVSwitch: every pair alike)\n"
    "  PIX  = at most one PCIe switch between them\n"
    "  PXB  = several PCIe switches, not through the host bridge\n"
    "  PHB  = through a PCIe host bridge (one CPU)\n"
    "  NODE = between host bridges of one NUMA node\n"
    "  SYS  = across the CPU interconnect (QPI/UPI/Infinity Fabric) between NUMA nodes\n"
    "  ?    = the discovery backend could not tell\n";

static int fetch(const rnx_ctx *ctx, const char *path, json_t **out)
{
    rnx_client *c = client_new(&ctx->target);
    jerr e = {0};
    int rc = client_request(c, "GET", path, NULL, out, &e);
    client_free(c);
    return rc < 0 ? rnx_fail("%s", e.msg) : RNX_OK;
}

/* The first lines of every text output: which backend, and a warning for simulations. */
static void banner(json_t *inv)
{
    json_t *gpus = json_object_get(inv, "gpus");
    const char *drv = jstr(inv, "driver_version"), *cuda = jstr(inv, "cuda_driver_version");
    if (json_is_true(json_object_get(inv, "simulated")))
        print_textf(stdout, "SIMULATED GPUs (gpu.fixture): none of these devices exists on this machine.\n");
    if (!json_array_size(gpus)) {
        print_textf(stdout, "No GPUs available.\n");
        json_t *att = json_object_get(inv, "attempts");
        for (size_t i = 0; i < json_array_size(att); i++) {
            json_t *a = json_array_get(att, i);
            const char *err = jstr(a, "error");
            print_textf(stdout, "  %s: %s\n", jstr(a, "backend") ? jstr(a, "backend") : "?",
                        err ? err : "no GPU found");
        }
        print_textf(stdout, "Check that the NVIDIA driver is loaded (nvidia-smi on the host) and the daemon's log.\n");
        return;
    }
    print_textf(stdout, "%zu GPU%s, found by the %s backend; driver %s, CUDA %s\n", json_array_size(gpus),
                json_array_size(gpus) == 1 ? "" : "s", jstr(inv, "backend") ? jstr(inv, "backend") : "?",
                drv ? drv : "unknown", cuda ? cuda : "unknown");
    json_t *gv = json_object_get(inv, "gvisor");
    if (json_is_object(gv)) {
        const char *v = jstr(gv, "runsc_version");
        if (!json_is_true(json_object_get(gv, "available")))
            print_textf(stdout, "Under gVisor: no (gVisor is not available here; rnx --version says why)\n");
        else if (json_is_true(json_object_get(gv, "nvproxy")))
            print_textf(stdout, "Under gVisor: through nvproxy (runsc %s)\n", v ? v : "?");
        else
            print_textf(stdout, "Under gVisor: refused (runsc %s has no nvproxy)\n", v ? v : "?");
    }
}

static void mem_cell(json_t *g, char *out, size_t n)
{
    int64_t used, total;
    bool hu = jint(g, "memory_used_mb", &used), ht = jint(g, "memory_total_mb", &total);
    if (ht)
        snprintf(out, n, hu ? "%lld / %lld MiB" : "? / %lld MiB", hu ? (long long)used : (long long)total,
                 (long long)total);
    else
        snprintf(out, n, "unknown");
}

/* The head of a reason: "XID 79: GPU has fallen off the bus" -> "XID 79"; at most n - 1 bytes. */
static void reason_head(const char *reason, char *out, size_t n)
{
    size_t l = strcspn(reason, ":;(");
    while (l && reason[l - 1] == ' ')
        l--;
    snprintf(out, n, "%.*s", (int)(l < 40 ? l : 40), reason);
}

/* The STATE cell of rnx gpu list: the state, why it is out of service, and HOT with its
 * temperature: "available, HOT 91C", "offline (XID 79)", "draining (drained by uid 0)". */
/* A GPU MPS-shared jobs use: how many, and how much of its memory they reserved ("2 jobs,
 * 30720 MiB reserved"); false for any other GPU. */
static bool shared_text(json_t *g, char *out, size_t n)
{
    json_t *sh = json_object_get(g, "shared");
    int64_t jobs, mb;
    if (!jint(sh, "jobs", &jobs) || !jint(sh, "reserved_mb", &mb))
        return false;
    snprintf(out, n, "%lld job%s, %lld MiB reserved", (long long)jobs, jobs == 1 ? "" : "s", (long long)mb);
    return true;
}

/* The job holding a GPU as the daemon shows it to the caller: its id, "another user's job"
 * (another user's, whose id only admins see: docs/gpu.md), or NULL when none holds it. */
static const char *holder_text(json_t *g)
{
    if (json_is_true(json_object_get(g, "another_users_job")))
        return "another user's job";
    return jstr(g, "job");
}

static void state_cell(json_t *g, char *out, size_t n)
{
    const char *st = jstr(g, "state") ? jstr(g, "state") : "?";
    const char *why = jstr(g, "state_reason") ? jstr(g, "state_reason") : jstr(g, "problem");
    char head[48] = "";
    if (why)
        reason_head(why, head, sizeof head);
    else if (!strcmp(st, "shared"))
        shared_text(g, head, sizeof head);
    size_t l = (size_t)snprintf(out, n, *head ? "%s (%s)" : "%s", st, head);
    json_t *h = json_object_get(g, "health");
    int64_t t = -1;
    if (json_is_true(json_object_get(h, "hot")) && l < n) {
        if (jint(h, "temperature_c", &t))
            snprintf(out + l, n - l, ", HOT %lldC", (long long)t);
        else
            snprintf(out + l, n - l, ", HOT");
    }
}

static int gpu_list(const rnx_ctx *ctx)
{
    json_t *inv = NULL;
    int rc = fetch(ctx, "/v1/gpus", &inv);
    if (rc)
        return rc;
    if (ctx->json) {
        print_json(inv);
        json_decref(inv);
        return RNX_OK;
    }
    banner(inv);
    json_t *gpus = json_object_get(inv, "gpus");
    bool sim = json_is_true(json_object_get(inv, "simulated"));
    if (json_array_size(gpus)) {
        static const char *const hdr[] = {"INDEX", "NAME", "MEMORY USED/TOTAL", "UTIL", "TEMP", "STATE", "JOB"};
        table *t = table_new(7, hdr);
        for (size_t i = 0; i < json_array_size(gpus); i++) {
            json_t *g = json_array_get(gpus, i);
            char idx[16], name[128], mem[64], util[16] = "-", temp[16] = "-", state[128];
            int64_t v;
            snprintf(idx, sizeof idx, "%zu", i);
            snprintf(name, sizeof name, "%s%s", jstr(g, "name") ? jstr(g, "name") : "?", sim ? " [simulated]" : "");
            mem_cell(g, mem, sizeof mem);
            if (jint(g, "utilization_pct", &v))
                snprintf(util, sizeof util, "%lld%%", (long long)v);
            if (jint(g, "temperature_c", &v))
                snprintf(temp, sizeof temp, "%lldC", (long long)v);
            state_cell(g, state, sizeof state);
            const char *cells[] = {idx, name, mem, util, temp, state, holder_text(g)};
            table_add(t, cells);
        }
        table_print(t, stdout);
        table_free(t);
    }
    json_decref(inv);
    return RNX_OK;
}

static void print_kv(const char *k, const char *v)
{
    print_textf(stdout, "%-20s %s\n", k, v && *v ? v : "unknown");
}

/* A count that may be unknown (null): "3" or "unknown". */
static const char *count_or_unknown(json_t *o, const char *key, char *buf, size_t n)
{
    int64_t v;
    if (!jint(o, key, &v))
        return "unknown";
    snprintf(buf, n, "%lld", (long long)v);
    return buf;
}

/* State: the state, since when and why; HOT with the limit; whether it takes new jobs. */
static void print_state(json_t *g)
{
    const char *st = jstr(g, "state") ? jstr(g, "state") : "?";
    const char *why = jstr(g, "state_reason");
    char since[64] = "", buf[600];
    if (jstr(g, "state_since"))
        fmt_local_time(jstr(g, "state_since"), since, sizeof since);
    size_t l = (size_t)snprintf(buf, sizeof buf, "%s%s%s%s%s%s", st, *since ? " since " : "", since,
                                why ? " (" : "", why ? why : "", why ? ")" : "");
    json_t *h = json_object_get(g, "health");
    int64_t t, max;
    if (json_is_true(json_object_get(h, "hot")) && jint(h, "temperature_c", &t) && jint(h, "max_temperature_c", &max) &&
        l < sizeof buf)
        snprintf(buf + l, sizeof buf - l, ", HOT (%lld C, above gpu.max_temperature_c %lld: no new jobs until it "
                                          "cools to %lld C)", (long long)t, (long long)max, (long long)max - 5);
    print_kv("State:", buf);
    /* takes_jobs is "in service" (the scheduler may give it to a job once it is free); what the
     * user asks here is whether a new job gets it now, as docs/health.md's table says: an
     * allocated GPU no, a shared one only shared jobs (docs/gpu.md) */
    json_t *tj = json_object_get(g, "takes_jobs");
    const char *job = jstr(g, "job");
    if (!json_is_boolean(tj))
        return;
    if (json_is_true(tj) && !strcmp(st, "allocated")) {
        if (json_is_true(json_object_get(g, "another_users_job")))
            snprintf(buf, sizeof buf, "no (another user's job has it; in service: a new job gets it once that ends)");
        else
            snprintf(buf, sizeof buf, "no (job %s has it; in service: a new job gets it once that ends)",
                     job ? job : "-");
        print_kv("Takes new jobs:", buf);
    } else if (json_is_true(tj) && !strcmp(st, "shared")) {
        print_kv("Takes new jobs:", "shared jobs only (--gpu-share), while it has room; a whole-GPU job once its "
                                    "jobs end");
    } else {
        print_kv("Takes new jobs:", json_is_true(tj) ? "yes" : "no");
    }
}

/* What the health monitor last saw: the live sample, throttling, XIDs, ECC, remapped rows. A
 * GPU without a sample (a simulated one, or no NVML) shows discovery's numbers, said so. */
static void print_health(json_t *g, bool sim)
{
    json_t *h = json_object_get(g, "health");
    char buf[512], t[64], a[32], b[32], c[32], d[32];
    int64_t v;
    const char *at = json_is_object(h) ? "" : " (at discovery)";
    if (json_is_object(h)) {
        fmt_local_time(jstr(h, "sampled_at"), t, sizeof t);
        print_kv("Sampled at:", t);
    } else {
        print_kv("Sampled at:", sim ? "never (simulated GPUs have no health monitor)"
                                    : "never (no health monitor: it needs NVML and gpu.health_interval_ms)");
    }
    if (jint(g, "temperature_c", &v)) {
        snprintf(buf, sizeof buf, "%lld C%s", (long long)v, at);
        print_kv("Temperature:", buf);
    }
    if (jint(g, "utilization_pct", &v)) {
        snprintf(buf, sizeof buf, "%lld %%%s", (long long)v, at);
        print_kv("Utilization:", buf);
    }
    if (jint(g, "power_w", &v)) {
        snprintf(buf, sizeof buf, "%lld W%s", (long long)v, at);
        print_kv("Power:", buf);
    }
    json_t *names = json_object_get(h, "throttle_reason_names");
    if (json_is_array(names)) {
        size_t l = 0;
        buf[0] = 0;
        for (size_t i = 0; i < json_array_size(names) && l < sizeof buf; i++) {
            const char *nm = json_string_value(json_array_get(names, i));
            l += (size_t)snprintf(buf + l, sizeof buf - l, "%s%s", i ? ", " : "", nm ? nm : "?");
        }
        print_kv("Throttle reasons:", json_array_size(names) ? buf : "none");
    } else {
        print_kv("Throttle reasons:", "unknown");
    }
    json_t *xids = json_object_get(h, "recent_xids");
    if (!json_is_object(h)) {
        print_kv("Last XIDs:", "unknown (not watched without a health monitor)");
    } else if (!json_array_size(xids)) {
        print_kv("Last XIDs:", "none since joblet started");
    } else {
        print_textf(stdout, "Last XIDs:\n");
        for (size_t i = 0; i < json_array_size(xids); i++) {
            json_t *x = json_array_get(xids, i);
            int64_t code = 0;
            jint(x, "xid", &code);
            fmt_local_time(jstr(x, "time"), t, sizeof t);
            print_textf(stdout, "  %s  XID %-4lld %s; action: %s\n", t, (long long)code,
                        jstr(x, "meaning") ? jstr(x, "meaning") : "?", jstr(x, "action") ? jstr(x, "action") : "?");
        }
    }
    snprintf(buf, sizeof buf, "%s corrected, %s uncorrected (since the driver loaded)",
             count_or_unknown(h, "ecc_sbe_total", a, sizeof a), count_or_unknown(h, "ecc_dbe_total", b, sizeof b));
    print_kv("ECC (volatile):", jint(h, "ecc_sbe_total", &v) || jint(h, "ecc_dbe_total", &v) ? buf : "unknown");
    snprintf(buf, sizeof buf, "%s corrected, %s uncorrected (the board's lifetime)",
             count_or_unknown(h, "ecc_sbe_aggregate", a, sizeof a),
             count_or_unknown(h, "ecc_dbe_aggregate", b, sizeof b));
    print_kv("ECC (aggregate):",
             jint(h, "ecc_sbe_aggregate", &v) || jint(h, "ecc_dbe_aggregate", &v) ? buf : "unknown");
    if (jint(h, "remapped_rows_correctable", &v) || jint(h, "remapped_rows_uncorrectable", &v)) {
        json_t *pend = json_object_get(h, "remap_pending"), *fail = json_object_get(h, "remap_failure");
        snprintf(buf, sizeof buf, "%s correctable, %s uncorrectable%s%s",
                 count_or_unknown(h, "remapped_rows_correctable", c, sizeof c),
                 count_or_unknown(h, "remapped_rows_uncorrectable", d, sizeof d),
                 json_is_true(pend) ? "; a remapping waits for the GPU's next reset" : "",
                 json_is_true(fail) ? "; a remapping FAILED (the board needs service)" : "");
        print_kv("Remapped rows:", buf);
    } else {
        print_kv("Remapped rows:", "unknown");
    }
}

static int gpu_show(const rnx_ctx *ctx, const char *id)
{
    char path[256];
    if (strlen(id) > 128 || strchr(id, '/') || strchr(id, '?'))
        return rnx_usage("gpu show: '%.40s' is not a GPU index or UUID", id);
    snprintf(path, sizeof path, "/v1/gpus/%s", id);
    json_t *g = NULL;
    int rc = fetch(ctx, path, &g);
    if (rc)
        return rc;
    if (ctx->json) {
        print_json(g);
        json_decref(g);
        return RNX_OK;
    }
    bool sim = json_is_true(json_object_get(g, "simulated"));
    char buf[256];
    int64_t v;
    if (sim)
        print_textf(stdout, "SIMULATED GPU (gpu.fixture): this device does not exist on this machine.\n");
    jint(g, "index", &v);
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    print_kv("Index:", buf);
    print_kv("Name:", jstr(g, "name"));
    print_kv("UUID:", jstr(g, "uuid"));
    snprintf(buf, sizeof buf, "/dev/nvidia%lld", jint(g, "minor", &v) ? (long long)v : -1LL);
    print_kv("Device node:", jint(g, "minor", &v) ? buf : NULL);
    print_kv("PCI bus:", jstr(g, "bus_id"));
    mem_cell(g, buf, sizeof buf);
    print_kv("Memory:", buf);
    print_kv("Compute capability:", jstr(g, "compute_capability"));
    snprintf(buf, sizeof buf, "%lld (CPUs %s)", jint(g, "numa_node", &v) ? (long long)v : -1LL,
             jstr(g, "local_cpus") ? jstr(g, "local_cpus") : "unknown");
    print_kv("NUMA node:", buf);
    json_t *ecc = json_object_get(g, "ecc_enabled"), *mig = json_object_get(g, "mig_enabled");
    print_kv("ECC:", json_is_boolean(ecc) ? (json_is_true(ecc) ? "enabled" : "disabled") : NULL);
    print_kv("MIG mode:", json_is_boolean(mig) ? (json_is_true(mig) ? "enabled" : "disabled") : "not supported or unknown");
    print_kv("VBIOS:", jstr(g, "vbios"));
    print_state(g);
    print_kv("Job:", holder_text(g) ? holder_text(g) : "-");
    char shared[64];
    if (shared_text(g, shared, sizeof shared))   /* the tenants, whom no one Job: line names */
        print_kv("Shared:", shared);
    if (jstr(g, "problem"))
        print_kv("Problem:", jstr(g, "problem"));
    print_health(g, sim);
    json_t *links = json_object_get(g, "nvlinks");
    if (!json_is_array(links)) {
        print_kv("NVLinks:", "unknown (this discovery backend cannot see them)");
    } else if (!json_array_size(links)) {
        print_kv("NVLinks:", "none");
    } else {
        print_textf(stdout, "NVLinks:\n");
        for (size_t i = 0; i < json_array_size(links); i++) {
            json_t *l = json_array_get(links, i);
            int64_t n = 0;
            jint(l, "link", &n);
            print_textf(stdout, "  link %-2lld %-8s %-7s %s\n", (long long)n,
                        json_is_true(json_object_get(l, "active")) ? "active" : "inactive",
                        jstr(l, "remote_type") ? jstr(l, "remote_type") : "?",
                        jstr(l, "remote_bus") ? jstr(l, "remote_bus") : "");
        }
    }
    json_t *insts = json_object_get(g, "mig");
    if (json_array_size(insts)) {
        print_textf(stdout, "MIG devices:\n");
        for (size_t i = 0; i < json_array_size(insts); i++) {
            json_t *m = json_array_get(insts, i);
            int64_t gi = 0, ci = 0, mem = -1, gcap = -1, ccap = -1;
            jint(m, "gi", &gi);
            jint(m, "ci", &ci);
            jint(m, "memory_mb", &mem);
            jint(m, "gi_cap_minor", &gcap);
            jint(m, "ci_cap_minor", &ccap);
            print_textf(stdout, "  %-8s GI %-2lld CI %-2lld %6lld MiB  caps %lld/%lld  %s\n",
                        jstr(m, "profile") ? jstr(m, "profile") : "?", (long long)gi, (long long)ci, (long long)mem,
                        (long long)gcap, (long long)ccap, jstr(m, "uuid") ? jstr(m, "uuid") : "");
        }
    }
    json_decref(g);
    return RNX_OK;
}

static int gpu_topo(const rnx_ctx *ctx)
{
    json_t *inv = NULL;
    int rc = fetch(ctx, "/v1/gpus", &inv);
    if (rc)
        return rc;
    if (ctx->json) {
        json_t *gpus = json_object_get(inv, "gpus");
        json_t *o = json_object(), *nv = json_array(), *pcie = json_array(), *aff = json_array();
        for (size_t i = 0; i < json_array_size(gpus); i++) {
            json_t *g = json_array_get(gpus, i);
            json_array_append(nv, json_object_get(g, "nvlink_peers"));
            json_array_append(pcie, json_object_get(g, "pcie_levels"));
            json_array_append_new(aff, json_pack("{s:O,s:O}", "local_cpus", json_object_get(g, "local_cpus"),
                                                 "numa_node", json_object_get(g, "numa_node")));
        }
        json_object_set(o, "simulated", json_object_get(inv, "simulated"));
        json_object_set(o, "backend", json_object_get(inv, "backend"));
        json_object_set_new(o, "nvlink", nv);
        json_object_set_new(o, "pcie", pcie);
        json_object_set_new(o, "affinity", aff);
        print_json(o);
        json_decref(o);
        json_decref(inv);
        return RNX_OK;
    }
    banner(inv);
    json_t *gpus = json_object_get(inv, "gpus");
    size_t n = json_array_size(gpus);
    if (n) {
        print_textf(stdout, "      ");
        for (size_t j = 0; j < n; j++)
            print_textf(stdout, "GPU%-4zu", j);
        print_textf(stdout, "CPU Affinity      NUMA Affinity\n");
        for (size_t i = 0; i < n; i++) {
            json_t *g = json_array_get(gpus, i);
            json_t *nv = json_object_get(g, "nvlink_peers"), *pl = json_object_get(g, "pcie_levels");
            print_textf(stdout, "GPU%-3zu", i);
            for (size_t j = 0; j < n; j++) {
                char cell[16];
                json_t *c = json_array_get(nv, j);
                const char *lvl = json_string_value(json_array_get(pl, j));
                if (i == j)
                    snprintf(cell, sizeof cell, " X");
                else if (json_is_integer(c) && json_integer_value(c) > 0)
                    snprintf(cell, sizeof cell, "NV%lld", (long long)json_integer_value(c));
                else
                    snprintf(cell, sizeof cell, "%s", lvl ? lvl : "?");
                print_textf(stdout, "%-7s", cell);
            }
            int64_t numa = -1;
            jint(g, "numa_node", &numa);
            char numa_s[16] = "N/A";
            if (numa >= 0)
                snprintf(numa_s, sizeof numa_s, "%lld", (long long)numa);
            print_textf(stdout, "%-18s%s\n", jstr(g, "local_cpus") ? jstr(g, "local_cpus") : "N/A", numa_s);
        }
        putchar('\n');
        fputs(topo_legend, stdout);
    }
    json_decref(inv);
    return RNX_OK;
}

/* drain / offline / online: the GPU's state afterwards and the jobs it touched. */
static int gpu_admin(const rnx_ctx *ctx, const char *action, const char *id, bool force)
{
    char path[256];
    if (strlen(id) > 128 || strchr(id, '/') || strchr(id, '?'))
        return rnx_usage("gpu %s: '%.40s' is not a GPU index or UUID", action, id);
    snprintf(path, sizeof path, "/v1/gpus/%s/%s", id, action);
    rnx_client *c = client_new(&ctx->target);
    jerr e = {0};
    json_t *g = NULL, *body = json_pack("{s:b}", "force", force);
    int rc = client_request(c, "POST", path, body, &g, &e);
    json_decref(body);
    client_free(c);
    if (rc < 0)
        return rnx_fail("gpu %s %s: %s", action, id, e.msg);
    if (ctx->json) {
        print_json(g);
        json_decref(g);
        return RNX_OK;
    }
    int64_t idx = -1;
    jint(g, "index", &idx);
    print_textf(stdout, "GPU %lld: %s", (long long)idx, jstr(g, "state") ? jstr(g, "state") : "?");
    if (jstr(g, "state_reason"))
        print_textf(stdout, " (%s)", jstr(g, "state_reason"));
    print_textf(stdout, "; %s\n", jstr(g, "note") ? jstr(g, "note") : "");
    json_t *aff = json_object_get(g, "jobs_affected");
    print_textf(stdout, "jobs on it: %s", json_array_size(aff) ? "" : "none");
    for (size_t i = 0; i < json_array_size(aff); i++)
        print_textf(stdout, "%s%s", i ? ", " : "", json_string_value(json_array_get(aff, i)));
    putchar('\n');
    json_decref(g);
    return RNX_OK;
}

static const char gres_help[] =
    "Usage: rnx gpu gres-conf [--node-name=NAME] [--format=gres.conf|slurm.conf]\n"
    "\n"
    "Prints Slurm's gres.conf lines for the node's GPUs from joblet's discovery: one line per GPU,\n"
    "in PCI bus order, with Type= from the model (as Slurm's NVML autodetection names it), File=\n"
    "/dev/nvidia<minor>, Cores= the GPU's NUMA-local cores as Slurm numbers them, and Links= the\n"
    "NVLink counts to each other GPU (-1: itself). See docs/slurm.md.\n"
    "\n"
    "  --node-name=NAME  the Slurm node name (default: the daemon's slurm.node_name, else its\n"
    "                    short host name)\n"
    "  --format=FORMAT   gres.conf (default), or slurm.conf: the node's Gres=gpu:TYPE:N\n";

/* rnx gpu gres-conf: the lines on stdout, nothing else there. */
static int gpu_gres_conf(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"node-name", required_argument, NULL, 'n'},
                                         {"format", required_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    const char *node = NULL;
    int fmt = GRES_CONF_GRES, c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, "rnx gpu gres-conf")) != -1) {
        if (c == 'h') {
            fputs(gres_help, stdout);
            return RNX_OK;
        } else if (c == 'n') {
            if (!gres_conf_node_name_ok(optarg))
                return rnx_usage("gpu gres-conf: --node-name: '%.80s' is not a Slurm node name (1 to 64 letters, "
                                 "digits, '-', '_' or '.')", optarg);
            node = optarg;
        } else if (c == 'f') {
            if ((fmt = gres_conf_format_parse(optarg)) < 0)
                return rnx_usage("gpu gres-conf: --format: '%.80s' is not a format; accepted: gres.conf, slurm.conf",
                                 optarg);
        } else
            return RNX_USAGE;
    }
    if (optind < argc)
        return rnx_usage("gpu gres-conf: takes no arguments, got '%s'", argv[optind]);
    json_t *inv = NULL;
    int rc = fetch(ctx, "/v1/gpus", &inv);
    if (rc)
        return rc;
    if (!node)
        node = jstr(json_object_get(inv, "slurm"), "node_name");
    if (!node || !gres_conf_node_name_ok(node)) {
        json_decref(inv);
        return rnx_fail("gpu gres-conf: the daemon gave no usable Slurm node name; give one with --node-name");
    }
    char err[256];
    rc = gres_conf_write(inv, node, (enum gres_conf_format)fmt, stdout, err, sizeof err);
    json_decref(inv);
    return rc < 0 ? rnx_fail("gpu gres-conf: %s", err) : RNX_OK;
}

/* The flags of rnx gpu, which may come before or after the command word: -1 after --help
 * (printed), RNX_USAGE on a bad flag, 0 otherwise. */
static int gpu_flags(rnx_ctx *ctx, int argc, char **argv, const char *cmd, bool group, bool *force)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
                                         {"force", no_argument, NULL, 'f'}, {0}};
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, group ? "+h" : "h", opts, cmd)) != -1) {
        if (c == 'h') {
            fputs(gpu_help, stdout);
            return -1;
        }
        if (c == 'f')
            *force = true;
        else if (c == 'j')
            ctx->json = true;
        else
            return RNX_USAGE;
    }
    return 0;
}

int cmd_gpu(rnx_ctx *ctx, int argc, char **argv)
{
    bool force = false;
    int rc = gpu_flags(ctx, argc, argv, "rnx gpu", true, &force);
    if (rc)
        return rc < 0 ? RNX_OK : rc;
    if (optind >= argc)
        return rnx_usage("gpu: missing command (list, show, topo, drain, offline, online, gres-conf); see 'rnx gpu --help'");
    const char *name = argv[optind];
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    if (strcmp(name, "gres-conf") == 0)
        return gpu_gres_conf(ctx, sub_argc, sub_argv);
    char cmd[32];
    snprintf(cmd, sizeof cmd, "rnx gpu %.20s", name);
    rc = gpu_flags(ctx, sub_argc, sub_argv, cmd, false, &force);
    if (rc)
        return rc < 0 ? RNX_OK : rc;
    bool admin = !strcmp(name, "drain") || !strcmp(name, "offline") || !strcmp(name, "online");
    if (force && !admin)
        return rnx_usage("gpu %s: --force is for drain, offline and online", name);
    int nargs = sub_argc - optind;
    argv = sub_argv;
    optind--; /* argv[optind + 1] is the first operand below */
    if (strcmp(name, "list") == 0 || strcmp(name, "topo") == 0) {
        if (nargs)
            return rnx_usage("gpu %s: takes no arguments, got '%s'", name, argv[optind + 1]);
        return name[0] == 'l' ? gpu_list(ctx) : gpu_topo(ctx);
    }
    /* "" would be sent as GET /v1/gpus/, answered "no route" */
    if (nargs == 1 && !argv[optind + 1][0] && (admin || strcmp(name, "show") == 0))
        return rnx_usage("gpu %s: the GPU is empty; give an index or a UUID (rnx gpu list)", name);
    if (strcmp(name, "show") == 0) {
        if (nargs != 1)
            return rnx_usage("gpu show: expected one GPU (an index or a UUID); usage: rnx gpu show [--json] GPU");
        return gpu_show(ctx, argv[optind + 1]);
    }
    if (admin) {
        if (nargs != 1)
            return rnx_usage("gpu %s: expected one GPU (an index or a UUID); usage: rnx gpu %s [--force] GPU", name,
                             name);
        return gpu_admin(ctx, name, argv[optind + 1], force);
    }
    if (strcmp(name, "help") == 0) {
        fputs(gpu_help, stdout);
        return RNX_OK;
    }
    return rnx_unknown_command(name, "rnx gpu",
                               (const char *const[]){"list", "show", "topo", "drain", "offline", "online", "gres-conf", "help"},
                               8);
}

static const char audit_help[] =
    "Usage: rnx audit [--user USER|UID] [--gpu GPU] [--job ID] [--since TIME] [--until TIME] [--limit N] [--json]\n"
    "\n"
    "The audit trail (admins: root or server.admin_group), newest first: every GPU allocation and\n"
    "release (who, which job, how long, how much memory), scrub, state change, XID, and admin action.\n"
    "\n"
    "  --user USER|UID  records of that user (a name or a uid)\n"
    "  --gpu GPU        records of that GPU (an index or a UUID)\n"
    "  --job ID         records of that job (an id or a prefix of one)\n"
    "  --since TIME     records at or after TIME\n"
    "  --until TIME     records at or before TIME\n"
    "  --limit N        the newest N records that match (1 to 100000; default 10000)\n"
    "  --json           the records as the API's JSON array\n"
    "\n"
    "TIME is RFC 3339: 2026-11-22T15:00:00Z, 2026-11-22T16:00:00+01:00, 2026-11-22T15:00:00.250Z;\n"
    "or a duration, that long ago, as rnx job list --since takes: 30min, 2h, 1d.\n";

int cmd_audit(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},        {"help", no_argument, NULL, 'h'},
        {"user", required_argument, NULL, 'u'},  {"gpu", required_argument, NULL, 'g'},
        {"job", required_argument, NULL, 'J'},   {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 't'}, {"limit", required_argument, NULL, 'l'},
        {0}};
    static const char *const keys[] = {"user", "gpu", "job", "since", "until", "limit"};
    const char *vals[6] = {0};
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, "rnx audit")) != -1) {
        const char *k = strchr("ugJstl", c);
        if (c == 'h') {
            fputs(audit_help, stdout);
            return RNX_OK;
        } else if (c == 'j')
            ctx->json = true;
        else if (k && c)
            vals[k - "ugJstl"] = optarg;
        else
            return RNX_USAGE;
    }
    if (optind < argc)
        return rnx_usage("audit: unexpected argument '%s'", argv[optind]);
    /* --since 2h, --until 30min: that long ago, as rnx job list --since (a time is sent as typed;
     * what is neither, joblet refuses naming the flag) */
    char ago[2][48];
    for (int i = 3; i <= 4; i++) {
        uint64_t secs;
        time_t at;
        jerr de = {0};
        if (vals[i] && parse_rfc3339(vals[i], &at) < 0 && parse_duration(keys[i], vals[i], &secs, &de) == 0 &&
            secs <= (uint64_t)time(NULL)) {
            format_ns_us(now_ns() - (int64_t)secs * 1000000000, ago[i - 3], sizeof ago[i - 3]);
            vals[i] = ago[i - 3];
        }
    }
    char path[1024] = "/v1/audit";
    for (int i = 0; i < 6; i++) {
        if (!vals[i])
            continue;
        if (!*vals[i] || strpbrk(vals[i], "&?#/ ") || strlen(vals[i]) > 100)
            return rnx_usage("audit: --%s: '%.40s' is not a valid value", keys[i], vals[i]);
        size_t l = strlen(path);
        snprintf(path + l, sizeof path - l, "%c%s=", strchr(path, '?') ? '&' : '?', keys[i]);
        l = strlen(path);
        for (const char *p = vals[i]; *p && l + 4 < sizeof path; p++)
            l += (size_t)snprintf(path + l, sizeof path - l, *p == '+' || *p == ':' ? "%%%02X" : "%c",
                                  (unsigned char)*p);
    }
    json_t *o = NULL;
    rnx_client *cl = client_new(&ctx->target);
    jerr e = {0};
    int got = client_request(cl, "GET", path, NULL, &o, &e);
    client_free(cl);
    if (got < 0) {
        /* the server names its query key ("user: 'alice' is neither ..."): the flag the user typed */
        for (int i = 0; i < 6; i++) {
            size_t kl = strlen(keys[i]);
            if (!strcmp(e.field, keys[i]) && !strncmp(e.msg, keys[i], kl) && e.msg[kl] == ':')
                return rnx_fail("--%s", e.msg);
        }
        return rnx_fail("%s", e.msg);
    }
    if (ctx->json) {
        print_json(json_object_get(o, "records"));
        json_decref(o);
        return RNX_OK;
    }
    json_t *recs = json_object_get(o, "records"), *r;
    size_t i;
    print_textf(stdout, "%-24s %-6s %-9s %-4s %-10s %-10s %-9s %s\n", "TIME", "UID", "ACTION", "GPU", "JOB", "DURATION",
                "MEMORY", "DETAIL");
    json_array_foreach(recs, i, r)
    {
        int64_t v;
        char uid[16] = "-", gpu[8] = "-", dur[16] = "-", mem[16] = "-";
        if (jint(r, "uid", &v))
            snprintf(uid, sizeof uid, "%lld", (long long)v);
        if (jint(r, "gpu", &v))
            snprintf(gpu, sizeof gpu, "%lld", (long long)v);
        if (jint(r, "duration_ms", &v))
            snprintf(dur, sizeof dur, "%.1fs", (double)v / 1000.0);
        if (jint(r, "memory_mb", &v))
            snprintf(mem, sizeof mem, "%lldMB", (long long)v);
        /* a TLS caller's record: who it was (the certificate's person, role and serial) and from
         * where, after the detail (docs/remote.md, "The audit trail") */
        char who[400] = "";
        const char *parts[4][2] = {{"", jstr(r, "person")}, {"", jstr(r, "role")}, {"serial ", jstr(r, "serial")},
                                   {"from ", jstr(r, "peer")}};
        for (size_t k = 0, l = 0; k < 4 && l < sizeof who; k++)
            if (parts[k][1])
                l += (size_t)snprintf(who + l, sizeof who - l, "%s%s%s", l ? ", " : " (", parts[k][0], parts[k][1]);
        if (*who)
            snprintf(who + strnlen(who, sizeof who - 2), 2, ")");
        print_textf(stdout, "%-24s %-6s %-9s %-4s %-10.8s %-10s %-9s %s%s\n", jstr(r, "time") ? jstr(r, "time") : "-",
                    uid, jstr(r, "action"), gpu, jstr(r, "job") ? jstr(r, "job") : "-", dur, mem,
                    jstr(r, "detail") ? jstr(r, "detail") : "", who);
    }
    json_decref(o);
    return RNX_OK;
}
