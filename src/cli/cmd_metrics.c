/* "rnx job metrics ID": a job's usage samples (GET /v1/jobs/{id}/metrics), one line each, until
 * the job ends or --count samples were printed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/util.h"
#include "client.h"
#include "print.h"
#include "cli.h"
#include "cmd_metrics.h"

static const char metrics_help[] =
    "Usage: rnx job metrics [--interval S] [--count N] [--json] ID\n"
    "\n"
    "Prints a usage sample of job ID every S seconds until the job ends (its final totals are the\n"
    "last line), or until N samples were printed. Columns:\n"
    "  CPU      cores busy since the previous sample (100% = one core)\n"
    "  MEMORY   memory the job's cgroup uses now; PEAK the most it used\n"
    "  READ     bytes read from, WRITE bytes written to block devices, in all\n"
    "  PIDS     processes and threads\n"
    "  GPUS     per GPU: index:utilization memory used/total (from the health monitor; '-' unknown)\n"
    "\n"
    "Flags:\n"
    "  --interval S   seconds between samples, e.g. 1, 0.5 or 500ms (default 1)\n"
    "  --count N      stop after N samples\n"
    "  --json         print each sample as the API's object, one per line (NDJSON)\n"
    "\n"
    "ID is a job's full id, its name (--name) when no other job of yours has it, or a unique\n"
    "prefix of its id.\n";

static bool terminal(const char *status)
{
    return status && (!strcmp(status, "STOPPED") || !strcmp(status, "COMPLETED") || !strcmp(status, "FAILED") ||
                      !strcmp(status, "CANCELED"));
}

static void bytes_cell(json_t *s, const char *key, char *out, size_t len)
{
    int64_t v;
    if (jint(s, key, &v))
        fmt_bytes((uint64_t)v, out, len);
    else
        snprintf(out, len, "-");
}

static void gpus_cell(json_t *s, char *out, size_t len)
{
    json_t *gpus = json_object_get(s, "gpus");
    size_t l = 0;
    out[0] = 0;
    for (size_t i = 0; i < json_array_size(gpus) && l < len; i++) {
        json_t *g = json_array_get(gpus, i);
        int64_t idx = -1, util, used, total;
        jint(g, "index", &idx);
        char u[16] = "-", m[64] = "-";
        if (jint(g, "utilization_pct", &util))
            snprintf(u, sizeof u, "%lld%%", (long long)util);
        bool hu = jint(g, "memory_used_mb", &used), ht = jint(g, "memory_total_mb", &total);
        if (ht)
            snprintf(m, sizeof m, hu ? "%lld/%lldMiB" : "-/%lldMiB", hu ? (long long)used : (long long)total,
                     (long long)total);
        l += (size_t)snprintf(out + l, len - l, "%s%lld:%s %s", l ? "  " : "", (long long)idx, u, m);
    }
    if (!out[0])
        snprintf(out, len, "-");
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

enum { O_INTERVAL = 256, O_COUNT };

int cmd_job_metrics(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"interval", required_argument, NULL, O_INTERVAL},
                                         {"count", required_argument, NULL, O_COUNT},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    double interval = 1;
    uint64_t count = 0;
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, "rnx job metrics")) != -1) {
        switch (c) {
        case 'h': fputs(metrics_help, stdout); return RNX_OK;
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
    const char *usage = "rnx job metrics [--interval S] [--count N] [--json] ID";
    int n = argc - optind;
    if (n == 0)
        return rnx_usage("job metrics: missing ID; usage: %s", usage);
    if (n > 1)
        return rnx_usage("job metrics: expected one ID, got %d arguments ('%s' ...); usage: %s", n, argv[optind + 1],
                         usage);
    if (!*argv[optind])
        return rnx_usage("job metrics: the ID is empty; usage: %s", usage);
    rnx_client *cl = client_new(&ctx->target);
    char *esc = client_escape(cl, argv[optind]), *path;
    if (asprintf(&path, "/v1/jobs/%s/metrics", esc) < 0)
        abort();
    free(esc);
    int rc = RNX_OK;
    uint64_t prev_cpu = 0;
    int64_t prev_ns = 0;
    for (uint64_t k = 0; !count || k < count; k++) {
        if (k)
            sleep_s(interval);
        json_t *s = NULL;
        jerr e = {0};
        if (client_request(cl, "GET", path, NULL, &s, &e) < 0) {
            rc = rnx_fail("%s", e.msg);
            break;
        }
        int64_t at = mono_ns(), cpu = 0;
        jint(s, "cpu_ns", &cpu);
        const char *status = jstr(s, "status");
        if (ctx->json) {
            char *t = json_dumps(s, JSON_COMPACT);
            printf("%s\n", t ? t : "{}"); /* --json: the data, exact */
            free(t);
        } else {
            if (k == 0)
                print_textf(stdout, "%-19s  %-9s  %7s  %9s  %9s  %9s  %9s  %5s  %s\n", "TIME", "STATUS", "CPU",
                            "MEMORY", "PEAK", "READ", "WRITE", "PIDS", "GPUS");
            char when[32], cpus[16] = "-", mem[24], peak[24], rd[24], wr[24], gpus[512], pids[16] = "-";
            fmt_local_time(jstr(s, "time"), when, sizeof when);
            bool running = json_is_true(json_object_get(s, "running"));
            if (k && running && at > prev_ns && (uint64_t)cpu >= prev_cpu)
                snprintf(cpus, sizeof cpus, "%.1f%%", (double)((uint64_t)cpu - prev_cpu) * 100.0 / (double)(at - prev_ns));
            bytes_cell(s, "memory_bytes", mem, sizeof mem);
            bytes_cell(s, "memory_peak_bytes", peak, sizeof peak);
            bytes_cell(s, "io_read_bytes", rd, sizeof rd);
            bytes_cell(s, "io_write_bytes", wr, sizeof wr);
            int64_t p;
            if (running && jint(s, "pids", &p))
                snprintf(pids, sizeof pids, "%lld", (long long)p);
            gpus_cell(s, gpus, sizeof gpus);
            print_textf(stdout, "%-19s  %-9s  %7s  %9s  %9s  %9s  %9s  %5s  %s\n", when, status ? status : "?", cpus,
                        mem, peak, rd, wr, pids, gpus);
        }
        prev_cpu = (uint64_t)cpu;
        prev_ns = at;
        bool done = terminal(status);
        json_decref(s);
        if (fflush(stdout) != 0 || ferror(stdout) || done)
            break;
    }
    free(path);
    client_free(cl);
    return rc;
}
