/* `rnx job status --detail` (print_detail.h). Keys as print_job prints them ("Key: value",
 * docs/cli.md); a list's further lines are indented by two spaces under its key. */
#include "print_detail.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

static void key(FILE *f, const char *k) { print_textf(f, "%s ", k); }
static void indent(FILE *f) { print_textf(f, "  "); }

/* "rnx job run --gpu=2 --gpu-memory=8GB python train.py", quoted as a shell needs it */
static void print_request(FILE *f, json_t *job, json_t *req)
{
    json_t *words = json_pack("[s,s]", "job", "run");
    json_array_extend(words, json_object_get(req, "flags"));
    if (jstr(job, "command")) {
        json_t *args = json_object_get(job, "args");
        /* a command that looks like a flag is kept apart from the flags, as rnx needs it */
        if (jstr(job, "command")[0] == '-')
            json_array_append_new(words, json_string("--"));
        json_array_append_new(words, json_string(jstr(job, "command")));
        json_array_extend(words, json_is_array(args) ? args : NULL);
    }
    char *line = shell_join("rnx", words);
    key(f, "Request:");
    print_textf(f, "%s\n", line);
    free(line);
    json_decref(words);
    int64_t n;
    if (jint(req, "uploads", &n) && n > 0) {
        indent(f);
        print_textf(f, "(%lld upload%s listed under Uploads)\n", (long long)n, n == 1 ? "" : "s");
    }
}

/* "[0, 1]" */
static void int_list(json_t *a, char *out, size_t len)
{
    size_t l = (size_t)snprintf(out, len, "[");
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (l < len)
            l += (size_t)snprintf(out + l, len - l, "%s%lld", i ? ", " : "", (long long)json_integer_value(v));
    if (l < len)
        snprintf(out + l, len - l, "]");
}

/* How the GPUs are connected: "NV18 between them", "NV12 between every pair", "PIX between
 * them", "NVLink 1 to 2 between pairs (0-1 NV2, 0-2 NV1, ...)". */
static void interconnect(json_t *pl, size_t ngpus, char *out, size_t len)
{
    int64_t lo = -1, hi = -1;
    jint(pl, "nvlinks_min", &lo);
    jint(pl, "nvlinks_max", &hi);
    const char *pcie = jstr(pl, "pcie_worst");
    const char *between = ngpus == 2 ? "between them" : "between every pair";
    out[0] = 0;
    if (hi > 0 && lo == hi) {
        snprintf(out, len, "NV%lld %s", (long long)hi, between);
        return;
    }
    if (hi <= 0) {
        if (pcie)
            snprintf(out, len, "no NVLink; PCIe %s %s", pcie, ngpus == 2 ? "between them" : "at worst");
        else
            snprintf(out, len, "no NVLink %s", between);
        return;
    }
    size_t l = (size_t)snprintf(out, len, "NVLink %lld to %lld per pair", (long long)(lo < 0 ? 0 : lo), (long long)hi);
    json_t *links = json_object_get(pl, "links");
    size_t i;
    json_t *x;
    json_array_foreach(links, i, x) {
        json_t *g = json_object_get(x, "gpus");
        int64_t nv = 0;
        jint(x, "nvlinks", &nv);
        char how[32];
        if (nv > 0)
            snprintf(how, sizeof how, "NV%lld", (long long)nv);
        else
            snprintf(how, sizeof how, "%.20s", jstr(x, "pcie") ? jstr(x, "pcie") : "PCIe");
        if (l < len)
            l += (size_t)snprintf(out + l, len - l, "%s%lld-%lld %s", i ? ", " : " (",
                                  (long long)json_integer_value(json_array_get(g, 0)),
                                  (long long)json_integer_value(json_array_get(g, 1)), how);
    }
    if (i && l < len)
        snprintf(out + l, len - l, ")");
}

static void print_placement(FILE *f, json_t *pl)
{
    if (!json_is_object(pl))
        return;
    json_t *gpus = json_object_get(pl, "gpus"), *nodes = json_object_get(pl, "numa_nodes");
    size_t n = json_array_size(gpus), nn = json_array_size(nodes);
    char list[512], nl[256], link[1024];
    int_list(gpus, list, sizeof list);
    int_list(nodes, nl, sizeof nl);
    char numa[300];
    if (nn == 1)
        snprintf(numa, sizeof numa, "NUMA node %lld", (long long)json_integer_value(json_array_get(nodes, 0)));
    else if (nn > 1)
        snprintf(numa, sizeof numa, "NUMA nodes %.*s", (int)strlen(nl) - 2, nl + 1);
    else
        snprintf(numa, sizeof numa, "NUMA node unknown");
    key(f, "Placement:");
    json_t *mig = json_object_get(pl, "mig");
    if (json_is_object(mig)) {
        int64_t g = -1;
        jint(mig, "gpu", &g);
        print_textf(f, "MIG device %s (%s) of GPU %lld on %s\n", jstr(mig, "uuid") ? jstr(mig, "uuid") : "?",
                    jstr(mig, "profile") ? jstr(mig, "profile") : "?", (long long)g, numa);
        return;
    }
    if (n < 2) {
        print_textf(f, "GPU %s on %s%s\n", list, numa,
                    json_is_true(json_object_get(pl, "shared")) ? ", shared through MPS" : "");
        return;
    }
    int64_t score = -1, best = -1, best_free = -1;
    jint(pl, "score", &score);
    jint(pl, "best", &best);
    jint(pl, "best_free", &best_free);
    interconnect(pl, n, link, sizeof link);
    print_textf(f, "GPUs %s on %s, %s; score %lld of best possible %lld%s\n", list, numa, link, (long long)score,
                (long long)best, score >= 0 && score >= best ? " (optimal)" : "");
    /* why it is not the best: what was free then, and the strategy */
    const char *st = jstr(pl, "strategy");
    bool named = json_is_true(json_object_get(pl, "named")), shared = json_is_true(json_object_get(pl, "shared"));
    if (score >= 0 && score < best) {
        indent(f);
        if (named)
            print_textf(f, "the job named its GPUs (--gpu-ids)\n");
        else if (best_free >= 0 && best_free < best && score >= best_free)
            print_textf(f, "the best of the GPUs free at the time (they scored at most %lld)\n", (long long)best_free);
        else if (shared)
            print_textf(f, "shared GPUs go beside other shared jobs first (best free then: %lld)\n",
                        (long long)best_free);
        else if (st && strcmp(st, "topology"))
            print_textf(f, "gpu.strategy is %s (best free then: %lld)\n", st, (long long)best_free);
        else
            print_textf(f, "GPUs scoring %lld were free, but held for the job first in line\n", (long long)best_free);
    }
    if (json_is_true(json_object_get(pl, "single_numa"))) {
        indent(f);
        print_textf(f, "on one NUMA node, as asked (--cross-numa=no)\n");
    }
}

static void print_spec(FILE *f, json_t *spec)
{
    if (!json_is_object(spec))
        return;
    size_t i;
    json_t *v;
    /* the GPU nodes and the like first, then the standard ones on one line */
    key(f, "Devices:");
    int k = 0;
    json_array_foreach(json_object_get(spec, "devices"), i, v)
        if (!json_is_true(json_object_get(v, "standard")))
            print_textf(f, "%s%s", k++ ? ", " : "", jstr(v, "path") ? jstr(v, "path") : "?");
    if (k) {
        fputc('\n', f);
        indent(f);
    }
    k = 0;
    print_textf(f, "standard: ");
    json_array_foreach(json_object_get(spec, "devices"), i, v)
        if (json_is_true(json_object_get(v, "standard")))
            print_textf(f, "%s%s", k++ ? ", " : "", jstr(v, "path") ? jstr(v, "path") : "?");
    fputc('\n', f);
    key(f, "Mounts:");
    k = 0;
    json_array_foreach(json_object_get(spec, "mounts"), i, v) {
        if (k++)
            indent(f);
        const char *src = jstr(v, "source");
        /* a host path: "from" it; else what it is (tmpfs, proc) */
        print_textf(f, "%s (%s%s%s)\n", jstr(v, "path") ? jstr(v, "path") : "?", jstr(v, "mode") ? jstr(v, "mode") : "?",
                    !src || !*src ? "" : *src == '/' ? ", from " : ", ", src ? src : "");
    }
    if (!k)
        fputc('\n', f);
    if (jstr(spec, "root")) {
        key(f, "Root:");
        print_textf(f, "%s (a runtime)\n", jstr(spec, "root"));
    }
    const char *which[] = {"env", "secret_env"}, *keys[] = {"Env names:", "Secret names:"};
    for (int w = 0; w < 2; w++) {
        json_t *names = json_object_get(spec, which[w]);
        if (!json_array_size(names) && w)
            continue;
        key(f, keys[w]);
        json_array_foreach(names, i, v)
            print_textf(f, "%s%s", i ? ", " : "", json_string_value(v) ? json_string_value(v) : "?");
        print_textf(f, "%s\n", w ? " (values never shown)" : "");
    }
    int64_t uid = -1, gid = -1;
    jint(spec, "uid", &uid);
    jint(spec, "gid", &gid);
    key(f, "Runs as:");
    print_textf(f, "uid %lld, gid %lld, network %s\n", (long long)uid, (long long)gid,
                jstr(spec, "network") ? jstr(spec, "network") : "?");
    /* gVisor: the host uid its sandbox (runsc's Sentry) runs as (docs/sandbox.md, "Host uids") */
    int64_t sandbox_uid = -1;
    if (jint(spec, "sandbox_uid", &sandbox_uid) && sandbox_uid > 0) {
        key(f, "Sandbox uid:");
        print_textf(f, "%lld (the host uid gVisor's sandbox runs as)\n", (long long)sandbox_uid);
    }
    json_t *l = json_object_get(spec, "limits");
    int64_t x;
    char b[64];
    key(f, "Cgroup limits:");
    k = 0;
    if (jint(l, "cpu_pct", &x))
        print_textf(f, "%scpu %lld%%", k++ ? ", " : "", (long long)x);
    if (jint(l, "memory_bytes", &x)) {
        fmt_bytes((uint64_t)x, b, sizeof b);
        print_textf(f, "%smemory %s", k++ ? ", " : "", b);
    }
    if (jint(l, "pids_max", &x))
        print_textf(f, "%spids %lld", k++ ? ", " : "", (long long)x);
    if (jint(l, "io_bps", &x)) {
        fmt_bytes((uint64_t)x, b, sizeof b);
        print_textf(f, "%sI/O %s/s on %s", k++ ? ", " : "", b, jstr(l, "io_device") ? jstr(l, "io_device") : "?");
    }
    if (jstr(l, "cpus"))
        print_textf(f, "%sCPUs %s", k++ ? ", " : "", jstr(l, "cpus"));
    if (jstr(l, "mems"))
        print_textf(f, "%smemory nodes %s", k++ ? ", " : "", jstr(l, "mems"));
    print_textf(f, "%s\n", k ? "" : "none");
    key(f, "Other limits:");
    k = 0;
    if (jint(l, "max_runtime_s", &x)) {
        fmt_seconds((uint64_t)x, b, sizeof b);
        print_textf(f, "%sruntime %s", k++ ? ", " : "", b);
    }
    if (jint(l, "stop_grace_s", &x)) {
        fmt_seconds((uint64_t)x, b, sizeof b);
        print_textf(f, "%sstop grace %s", k++ ? ", " : "", x ? b : "0s");
    }
    if (jint(l, "log_max_bytes", &x)) {
        fmt_bytes((uint64_t)x, b, sizeof b);
        print_textf(f, "%slogs %s per stream", k++ ? ", " : "", b);
    }
    if (jint(json_object_get(spec, "rlimits"), "nproc", &x))
        print_textf(f, "%sRLIMIT_NPROC %lld", k++ ? ", " : "", (long long)x);
    print_textf(f, "%s\n", k ? "" : "none");
    if (jstr(spec, "cgroup")) {
        key(f, "Cgroup:");
        print_textf(f, "%s\n", jstr(spec, "cgroup"));
    }
}

/* Each GPU's latest health sample; a GPU the monitor has not sampled (a simulated one, a machine
 * without NVML) says so rather than print an empty line ending in "now". */
static void print_gpu_usage(FILE *f, json_t *job, json_t *usage)
{
    json_t *gpus = json_object_get(usage, "gpus");
    size_t i;
    json_t *g;
    if (!json_array_size(gpus))
        return;
    bool sim = json_is_true(json_object_get(json_array_get(json_object_get(job, "gpus"), 0), "simulated"));
    json_array_foreach(gpus, i, g) {
        int64_t idx = -1, util, used, total, temp, power;
        bool any = false;
        jint(g, "index", &idx);
        i ? indent(f) : key(f, "GPU usage:");
        print_textf(f, "GPU %lld:", (long long)idx);
        if (jint(g, "utilization_pct", &util)) {
            print_textf(f, " %lld%% busy,", (long long)util);
            any = true;
        }
        if (jint(g, "memory_used_mb", &used) && jint(g, "memory_total_mb", &total)) {
            print_textf(f, " %lld of %lld MB,", (long long)used, (long long)total);
            any = true;
        }
        if (jint(g, "temperature_c", &temp)) {
            print_textf(f, " %lld C,", (long long)temp);
            any = true;
        }
        if (jint(g, "power_w", &power)) {
            print_textf(f, " %lld W,", (long long)power);
            any = true;
        }
        if (any)
            print_textf(f, " now\n");
        else
            print_textf(f, " %s\n", sim ? "not sampled (simulated GPUs have no health monitor)"
                                         : "not sampled (no health monitor: it needs NVML and gpu.health_interval_ms)");
    }
}

static void print_events(FILE *f, json_t *d)
{
    json_t *evs = json_object_get(d, "events");
    int64_t dropped = 0;
    jint(d, "events_dropped", &dropped);
    print_textf(f, "Events:\n");
    if (dropped > 0)
        print_textf(f, "  (%lld older event%s dropped)\n", (long long)dropped, dropped == 1 ? "" : "s");
    if (!json_array_size(evs))
        print_textf(f, "  none recorded\n");
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        char t[64];
        fmt_local_time(jstr(e, "time"), t, sizeof t);
        print_textf(f, "  %s  %-10s %s\n", t, jstr(e, "event") ? jstr(e, "event") : "?",
                    jstr(e, "detail") ? jstr(e, "detail") : "");
    }
}

void print_detail(json_t *job, FILE *f)
{
    json_t *d = json_object_get(job, "detail");
    if (!json_is_object(d))
        return;
    if (jstr(d, "of_array"))
        print_textf(f, "Detail:       the array's (%s): this task is not started yet, so it has no request or events "
                       "of its own\n", jstr(d, "of_array"));
    print_request(f, job, json_object_get(d, "request"));
    print_placement(f, json_object_get(d, "placement"));
    print_spec(f, json_object_get(d, "spec"));
    print_gpu_usage(f, job, json_object_get(d, "usage"));
    print_events(f, d);
}
