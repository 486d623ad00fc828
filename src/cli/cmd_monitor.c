/* "rnx monitor status|watch": the host, the daemon's jobs and every GPU (GET /v1/monitor). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/util.h"
#include "client.h"
#include "print.h"
#include "cli.h"
#include "cmd_monitor.h"

static const char monitor_help[] =
    "Usage: rnx monitor status [--json]\n"
    "       rnx monitor watch [--interval S] [--count N] [--json]\n"
    "\n"
    "Commands:\n"
    "  status   the host (CPUs, load, memory, uptime), jobs by state, and every GPU: its state,\n"
    "           utilization, memory, temperature, power and the jobs holding it\n"
    "  watch    the same every S seconds: redrawn in place on a terminal, one line per sample\n"
    "           otherwise (for logs and pipes)\n"
    "\n"
    "Flags:\n"
    "  --interval S   seconds between samples, e.g. 2, 0.5 or 500ms (default 2; watch only)\n"
    "  --count N      stop after N samples (default: until interrupted; watch only)\n"
    "  --json         the API's object (GET /v1/monitor); watch prints one per line (NDJSON)\n"
    "\n"
    "GPU values come from the daemon's health monitor; '-' is a value the driver does not report\n"
    "or a GPU that has not been sampled (simulated GPUs never are). Prometheus can scrape the\n"
    "same figures from GET /metrics (docs/metrics.md).\n";

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static double num(json_t *o, const char *key, bool *known)
{
    json_t *v = json_object_get(o, key);
    *known = json_is_number(v);
    return json_number_value(v);
}

/* "2 running, 1 queued, 10 completed" from the counts by state; "none" when all are 0. */
static void jobs_line(json_t *m, char *out, size_t len)
{
    json_t *jobs = json_object_get(m, "jobs");
    static const char *const order[] = {"RUNNING", "STOPPING", "QUEUED", "PREEMPTED", "SCHEDULED", "PENDING",
                                        "HELD", "SUSPENDED", "COMPLETED", "FAILED", "STOPPED", "CANCELED"};
    size_t l = 0;
    out[0] = 0;
    for (size_t i = 0; i < ARRAY_LEN(order) && l < len; i++) {
        int64_t n;
        if (!jint(jobs, order[i], &n) || n == 0)
            continue;
        char lower[16];
        size_t k = 0;
        for (; order[i][k] && k < sizeof lower - 1; k++)
            lower[k] = (char)(order[i][k] | 0x20);
        lower[k] = 0;
        l += (size_t)snprintf(out + l, len - l, "%s%lld %s", l ? ", " : "", (long long)n, lower);
    }
    if (!out[0])
        snprintf(out, len, "none");
}

static void host_line(json_t *m, char *out, size_t len)
{
    json_t *h = json_object_get(m, "host");
    char mem[64] = "memory unknown", up[32] = "?", total[24], avail[24];
    int64_t t, a, u, cpus = 0;
    if (jint(h, "memory_total_bytes", &t) && jint(h, "memory_available_bytes", &a)) {
        fmt_bytes((uint64_t)t, total, sizeof total);
        fmt_bytes((uint64_t)a, avail, sizeof avail);
        snprintf(mem, sizeof mem, "memory %s available of %s", avail, total);
    }
    if (jint(h, "uptime_s", &u))
        fmt_elapsed_ms(u * 1000, up, sizeof up);
    jint(h, "cpus", &cpus);
    json_t *load = json_object_get(h, "load");
    char ld[48] = "load unknown";
    if (json_array_size(load) == 3)
        snprintf(ld, sizeof ld, "load %.2f %.2f %.2f", json_number_value(json_array_get(load, 0)),
                 json_number_value(json_array_get(load, 1)), json_number_value(json_array_get(load, 2)));
    snprintf(out, len, "%s, %lld CPUs, %s, %s, up %s", jstr(h, "hostname") ? jstr(h, "hostname") : "?",
             (long long)cpus, ld, mem, up);
}

/* The GPU's cells, "-" for what is not known. From the GPU's top-level telemetry, as `rnx gpu
 * list` and the console read it: the last health sample's where the monitor has sampled, what
 * discovery read otherwise (a simulated GPU's fixture values, say); "health" alone would leave
 * them "-" until the first sample, and always with health sampling off. */
static void gpu_cells(json_t *g, char util[16], char mem[48], char temp[16], char power[16])
{
    bool k1, k2;
    double v = num(g, "utilization_pct", &k1);
    snprintf(util, 16, k1 ? "%.0f%%" : "-", v);
    v = num(g, "temperature_c", &k1);
    snprintf(temp, 16, k1 ? "%.0fC" : "-", v);
    v = num(g, "power_w", &k1);
    snprintf(power, 16, k1 ? "%.0fW" : "-", v);
    double used = num(g, "memory_used_mb", &k1), total = num(g, "memory_total_mb", &k2);
    if (k2)
        snprintf(mem, 48, k1 ? "%.0f / %.0f MiB" : "- / %.0f MiB", k1 ? used : total, total);
    else
        snprintf(mem, 48, "-");
}

static void jobs_cell(json_t *g, char *out, size_t len)
{
    json_t *jobs = json_object_get(g, "jobs");
    size_t l = 0;
    out[0] = 0;
    for (size_t i = 0; i < json_array_size(jobs) && l < len; i++) {
        const char *id = json_string_value(json_array_get(jobs, i));
        l += (size_t)snprintf(out + l, len - l, "%s%.8s", l ? "," : "", id ? id : "?");
    }
    /* another user's jobs are counted, not named (docs/gpu.md, "Who sees what") */
    json_int_t others = json_integer_value(json_object_get(g, "other_users_jobs"));
    if (others && l < len)
        snprintf(out + l, len - l, "%s%lld other user%s job%s", l ? "," : "", (long long)others,
                 others == 1 ? "'s" : "s'", others == 1 ? "" : "s");
    if (!out[0])
        snprintf(out, len, "-");
}

static void print_status(json_t *m)
{
    char line[512];
    host_line(m, line, sizeof line);
    print_textf(stdout, "Host:    %s\n", line);
    json_t *d = json_object_get(m, "daemon");
    int64_t pid = 0, up;
    char upt[32] = "?";
    jint(d, "pid", &pid);
    if (jint(d, "uptime_s", &up))
        fmt_elapsed_ms(up * 1000, upt, sizeof upt);
    print_textf(stdout, "joblet:  %s (pid %lld), up %s\n", jstr(d, "version") ? jstr(d, "version") : "?",
                (long long)pid, upt);
    jobs_line(m, line, sizeof line);
    int64_t q = 0, maxr = 0;
    jint(m, "queue_length", &q);
    jint(m, "max_running", &maxr);
    char lim[48] = "no limit";
    if (maxr)
        snprintf(lim, sizeof lim, "at most %lld at once", (long long)maxr);
    print_textf(stdout, "Jobs:    %s; %lld waiting for room (jobs.max_running: %s)\n", line, (long long)q, lim);
    json_t *gi = json_object_get(m, "gpu"), *gpus = json_object_get(m, "gpus");
    bool sim = json_is_true(json_object_get(gi, "simulated"));
    if (!json_array_size(gpus)) {
        print_textf(stdout, "GPUs:    none%s\n",
                    json_is_true(json_object_get(gi, "enabled")) ? "" : " (GPU support is off or no GPU was found)");
        return;
    }
    print_textf(stdout, "GPUs:    %zu%s, %s backend, driver %s\n", json_array_size(gpus),
                sim ? " SIMULATED (gpu.fixture): none of these devices exists" : "",
                jstr(gi, "backend") ? jstr(gi, "backend") : "?",
                jstr(gi, "driver_version") ? jstr(gi, "driver_version") : "unknown");
    static const char *const hdr[] = {"GPU", "NAME", "STATE", "UTIL", "MEMORY USED/TOTAL", "TEMP", "POWER", "JOBS"};
    table *t = table_new(8, hdr);
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        json_t *g = json_array_get(gpus, i);
        char idx[16], name[128], util[16], mem[48], temp[16], power[16], jobs[160], state[64];
        int64_t v = (int64_t)i;
        jint(g, "index", &v);
        snprintf(idx, sizeof idx, "%lld", (long long)v);
        snprintf(name, sizeof name, "%s%s", jstr(g, "name") ? jstr(g, "name") : "?", sim ? " [simulated]" : "");
        gpu_cells(g, util, mem, temp, power);
        jobs_cell(g, jobs, sizeof jobs);
        bool hot = json_is_true(json_object_get(json_object_get(g, "health"), "hot"));
        snprintf(state, sizeof state, "%s%s", jstr(g, "state") ? jstr(g, "state") : "?", hot ? " (hot)" : "");
        const char *cells[] = {idx, name, state, util, mem, temp, power, jobs};
        table_add(t, cells);
    }
    table_print(t, stdout);
    table_free(t);
}

/* One line per sample for a log or a pipe. */
static void print_line(json_t *m)
{
    char when[32], jobs[256];
    fmt_local_time(jstr(m, "time"), when, sizeof when);
    jobs_line(m, jobs, sizeof jobs);
    json_t *h = json_object_get(m, "host"), *load = json_object_get(h, "load");
    print_textf(stdout, "%s load %.2f", when, json_number_value(json_array_get(load, 0)));
    int64_t a;
    if (jint(h, "memory_available_bytes", &a)) {
        char b[24];
        fmt_bytes((uint64_t)a, b, sizeof b);
        print_textf(stdout, " mem_available %s", b);
    }
    int64_t q = 0;
    jint(m, "queue_length", &q);
    print_textf(stdout, " | jobs: %s; %lld waiting", jobs, (long long)q);
    json_t *gpus = json_object_get(m, "gpus");
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        json_t *g = json_array_get(gpus, i);
        char util[16], mem[48], temp[16], power[16], jc[160];
        gpu_cells(g, util, mem, temp, power);
        jobs_cell(g, jc, sizeof jc);
        print_textf(stdout, " | gpu%zu %s util %s temp %s power %s jobs %s", i,
                    jstr(g, "state") ? jstr(g, "state") : "?", util, temp, power, jc);
    }
    putchar('\n');
}

enum { O_INTERVAL = 256, O_COUNT };

int cmd_monitor(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option top[] = {{"help", no_argument, NULL, 'h'}, {0}};
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "+h", top, "rnx monitor")) != -1) {
        if (c != 'h')
            return RNX_USAGE;
        fputs(monitor_help, stdout);
        return RNX_OK;
    }
    if (optind >= argc)
        return rnx_usage("monitor: missing command (status, watch); see 'rnx monitor --help'");
    const char *sub = argv[optind];
    if (!strcmp(sub, "help")) {
        fputs(monitor_help, stdout);
        return RNX_OK;
    }
    bool watch = !strcmp(sub, "watch");
    if (!watch && strcmp(sub, "status"))
        return rnx_unknown_command(sub, "rnx monitor", (const char *const[]){"status", "watch", "help"}, 3);
    argc -= optind;
    argv += optind;
    static const struct option with_watch[] = {{"interval", required_argument, NULL, O_INTERVAL},
                                               {"count", required_argument, NULL, O_COUNT},
                                               {"json", no_argument, NULL, 'j'},
                                               {"help", no_argument, NULL, 'h'},
                                               {0}};
    static const struct option status_only[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
    double interval = 2;
    uint64_t count = watch ? 0 : 1;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", watch ? with_watch : status_only,
                           watch ? "rnx monitor watch" : "rnx monitor status")) != -1) {
        switch (c) {
        case 'h': fputs(monitor_help, stdout); return RNX_OK;
        case 'j': ctx->json = true; break;
        case O_INTERVAL:
            if (rnx_interval("--interval", optarg, &interval))
                return RNX_USAGE;
            break;
        case O_COUNT:
            if (rnx_count("--count", optarg, &count))
                return RNX_USAGE;
            break;
        default: return RNX_USAGE;
        }
    }
    if (optind < argc)
        return rnx_usage("monitor %s: takes no arguments (got '%s'); see 'rnx monitor --help'", sub, argv[optind]);
    bool tty = watch && !ctx->json && isatty(STDOUT_FILENO);
    rnx_client *cl = client_new(&ctx->target);
    int rc = RNX_OK;
    for (uint64_t n = 0; !count || n < count; n++) {
        if (n)
            sleep_s(interval);
        json_t *m = NULL;
        jerr e = {0};
        if (client_request(cl, "GET", "/v1/monitor", NULL, &m, &e) < 0) {
            rc = rnx_fail("%s", e.msg);
            break;
        }
        if (ctx->json && watch) {
            char *s = json_dumps(m, JSON_COMPACT);
            printf("%s\n", s ? s : "{}"); /* --json: the data, exact */
            free(s);
        } else if (ctx->json) {
            print_json(m);
        } else if (tty) {
            char when[32];
            fmt_local_time(jstr(m, "time"), when, sizeof when);
            print_textf(stdout, "\033[H\033[2JEvery %gs: rnx monitor watch%*s%s\n\n", interval, 30, "", when);
            print_status(m);
        } else if (watch) {
            print_line(m);
        } else {
            print_status(m);
        }
        json_decref(m);
        if (fflush(stdout) != 0 || ferror(stdout))
            break; /* a closed pipe: main reports it */
    }
    client_free(cl);
    return rc;
}
