/* joblet-sim: replays a job trace through the real scheduler on a simulated machine and prints
 * what each placement strategy makes of it (docs/simulator.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static void usage(FILE *f)
{
    fputs("usage: joblet-sim --machine NAME|DIR|FILE [options] TRACE.csv|-\n"
          "Replays a job trace through joblet's scheduler with a virtual clock and prints, per\n"
          "placement strategy, utilization, wait and completion times, makespan and fragmentation.\n"
          "\n"
          "  -m, --machine M          fixture machine: a name under tests/fixtures (or $JOBLET_FIXTURES),\n"
          "                           a directory holding machine.json, or a JSON file\n"
          "  -n, --machines N         N identical machines (default 1; 1 to 64)\n"
          "  -s, --strategy LIST      comma-separated: topology, pack, spread, firstfit, or all (default)\n"
          "      --max-gpus-per-user N  GPUs one user may hold at once on one machine (default: no limit)\n"
          "      --exact-runtimes     tell the scheduler each job's true run time (default: only the\n"
          "                           trace's limit column, as the daemon knows only max_runtime_s)\n"
          "      --json               JSON instead of a table\n"
          "  -h, --help\n"
          "\n"
          "Trace columns: submit, duration, gpus[, memory_mb, priority, user, limit, preemptible,\n"
          "single_numa]; "
          "times in seconds. Exit status: 0 done, 1 bad trace or machine, 2 bad usage.\n",
          f);
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *s == '-' || *end || errno || v < lo || v > hi)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* 12.3s, 4.5m, 6.7h */
static const char *human(double ms, char *buf, size_t len)
{
    double s = ms / 1000.0;
    if (s < 120)
        snprintf(buf, len, "%.1fs", s);
    else if (s < 7200)
        snprintf(buf, len, "%.1fm", s / 60);
    else
        snprintf(buf, len, "%.2fh", s / 3600);
    return buf;
}

static json_t *result_json(int strategy, const sim_result *r)
{
    return json_pack("{s:s, s:f, s:f, s:I, s:I, s:f, s:I, s:I, s:f, s:f, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                     "strategy", sim_strategy_name(strategy), "utilization", r->utilization, "wait_avg_ms",
                     r->wait_avg_ms, "wait_p95_ms", (json_int_t)r->wait_p95_ms, "wait_max_ms",
                     (json_int_t)r->wait_max_ms, "completion_avg_ms", r->completion_avg_ms, "completion_p95_ms",
                     (json_int_t)r->completion_p95_ms, "makespan_ms", (json_int_t)r->makespan_ms, "fragmentation",
                     r->fragmentation, "stranded", r->stranded, "placement_score",
                     r->score < 0 ? json_null() : json_real(r->score), "multi_gpu_starts", (json_int_t)r->scored,
                     "busy_gpu_ms", (json_int_t)r->busy_gpu_ms, "queued_ms", (json_int_t)r->queued_ms,
                     "stranded_gpu_ms", (json_int_t)r->stranded_gpu_ms, "preemptions", (json_int_t)r->preemptions,
                     "lost_gpu_ms", (json_int_t)r->lost_gpu_ms, "killed_at_limit", (json_int_t)r->killed_at_limit,
                     "decisions", (json_int_t)r->decisions);
}

int main(int argc, char **argv)
{
    enum { O_MAXUSER = 256, O_EXACT, O_JSON };
    static const struct option opts[] = {
        {"machine", required_argument, NULL, 'm'},  {"machines", required_argument, NULL, 'n'},
        {"strategy", required_argument, NULL, 's'}, {"max-gpus-per-user", required_argument, NULL, O_MAXUSER},
        {"exact-runtimes", no_argument, NULL, O_EXACT}, {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
    const char *machine = NULL, *strategies = "all";
    sim_options o = {.machines = 1};
    int json = 0, ch;
    unsigned u;
    while ((ch = getopt_long(argc, argv, "m:n:s:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'm':
            machine = optarg;
            break;
        case 'n':
            if (parse_uint(optarg, 1, 64, &o.machines) < 0) {
                fprintf(stderr, "joblet-sim: --machines: '%s' is not a whole number from 1 to 64\n", optarg);
                return 2;
            }
            break;
        case 's':
            strategies = optarg;
            break;
        case O_MAXUSER:
            if (parse_uint(optarg, 0, 4096, &u) < 0) {
                fprintf(stderr, "joblet-sim: --max-gpus-per-user: '%s' is not a whole number from 0 to 4096\n",
                        optarg);
                return 2;
            }
            o.max_gpus_per_user = u;
            break;
        case O_EXACT:
            o.exact_runtimes = 1;
            break;
        case O_JSON:
            json = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1 || !machine) {
        fprintf(stderr, "joblet-sim: %s\n", !machine ? "--machine is required" : "one trace file is required");
        usage(stderr);
        return 2;
    }
    const char *trace_path = argv[optind];

    int list[SIM_STRATEGIES], nlist = 0;
    if (!strcmp(strategies, "all")) {
        for (int s = 0; s < SIM_STRATEGIES; s++)
            list[nlist++] = s;
    } else {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", strategies);
        for (char *sv = NULL, *tok = strtok_r(buf, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv)) {
            int s = sim_strategy_parse(tok);
            if (s < 0) {
                fprintf(stderr, "joblet-sim: --strategy: unknown strategy '%s' (topology, pack, spread, firstfit, "
                        "all)\n", tok);
                return 2;
            }
            int dup = 0;
            for (int k = 0; k < nlist; k++)
                dup |= list[k] == s;
            if (!dup)
                list[nlist++] = s;
        }
        if (!nlist) {
            fprintf(stderr, "joblet-sim: --strategy: empty list\n");
            return 2;
        }
    }

    jerr e = {0};
    sim_machine *m = calloc(1, sizeof *m);
    if (!m || sim_machine_load(machine, m, &e) < 0) {
        fprintf(stderr, "joblet-sim: %s\n", m ? e.msg : "out of memory");
        free(m);
        return 1;
    }
    FILE *f = strcmp(trace_path, "-") ? fopen(trace_path, "r") : stdin;
    if (!f) {
        fprintf(stderr, "joblet-sim: %s: %s\n", trace_path, strerror(errno));
        free(m);
        return 1;
    }
    sim_trace t;
    const char *tname = strcmp(trace_path, "-") ? trace_path : "<stdin>";
    int rc = trace_read(f, tname, &t, &e);
    if (f != stdin)
        fclose(f);
    if (rc < 0 || sim_check(m, &t, tname, &o, &e) < 0) {
        fprintf(stderr, "joblet-sim: %s\n", e.msg);
        if (rc == 0)
            trace_free(&t);
        free(m);
        return 1;
    }

    sim_result res[SIM_STRATEGIES];
    for (int k = 0; k < nlist; k++) {
        sim_options ok = o;
        ok.strategy = list[k];
        if (sim_run(m, &t, &ok, &res[k], &e) < 0) {
            fprintf(stderr, "joblet-sim: %s: %s\n", sim_strategy_name(list[k]), e.msg);
            trace_free(&t);
            free(m);
            return 1;
        }
    }

    double gpu_ms = 0;
    for (size_t i = 0; i < t.n; i++)
        gpu_ms += (double)t.jobs[i].gpus * (double)t.jobs[i].duration_ms;
    if (json) {
        json_t *rs = json_array();
        for (int k = 0; k < nlist; k++)
            json_array_append_new(rs, result_json(list[k], &res[k]));
        json_t *root = json_pack("{s:s, s:I, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:b, s:I, s:o}", "trace", trace_path,
                                 "jobs", (json_int_t)t.n, "users", (json_int_t)t.nusers, "machine", m->name,
                                 "machine_path", m->path, "gpus_per_machine", (json_int_t)m->ngpus,
                                 "usable_gpus_per_machine", (json_int_t)m->usable, "machines",
                                 (json_int_t)o.machines, "gpus_total", (json_int_t)(m->usable * o.machines),
                                 "exact_runtimes", o.exact_runtimes, "max_gpus_per_user",
                                 (json_int_t)o.max_gpus_per_user, "results", rs);
        if (!root) {
            fprintf(stderr, "joblet-sim: out of memory\n");
            rc = 1;
        } else {
            json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
            putchar('\n');
            json_decref(root);
        }
    } else {
        char a[32];
        printf("trace    %s: %zu jobs, %zu users, %s GPU-time asked\n", trace_path, t.n, t.nusers,
               human(gpu_ms, a, sizeof a));
        printf("machine  %s: %u usable GPUs (of %zu) x %u machine%s = %u GPUs; runtimes known to the scheduler: "
               "%s\n",
               m->name, m->usable, m->ngpus, o.machines, o.machines == 1 ? "" : "s", m->usable * o.machines,
               o.exact_runtimes ? "exact" : "the limit column");
        printf("%-9s %6s %9s %9s %9s %9s %9s %6s %6s %7s\n", "strategy", "util", "wait avg", "wait p95", "compl avg",
               "compl p95", "makespan", "frag", "score", "preempt");
        for (int k = 0; k < nlist; k++) {
            const sim_result *r = &res[k];
            char b[6][32];
            if (r->score >= 0)
                snprintf(b[5], sizeof b[5], "%.3f", r->score);
            else
                snprintf(b[5], sizeof b[5], "-");
            printf("%-9s %5.1f%% %9s %9s %9s %9s %9s %5.1f%% %6s %7zu\n", sim_strategy_name(list[k]),
                   100 * r->utilization, human(r->wait_avg_ms, b[0], sizeof b[0]),
                   human((double)r->wait_p95_ms, b[1], sizeof b[1]), human(r->completion_avg_ms, b[2], sizeof b[2]),
                   human((double)r->completion_p95_ms, b[3], sizeof b[3]),
                   human((double)r->makespan_ms, b[4], sizeof b[4]), 100 * r->fragmentation, b[5], r->preemptions);
        }
    }
    trace_free(&t);
    free(m);
    return rc ? 1 : 0;
}
