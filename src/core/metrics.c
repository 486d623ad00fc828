/* Metrics and monitoring (docs/metrics.md). The Prometheus text is built from the core's own
 * state on the loop thread at each scrape: GPUs (inventory, state, last health sample,
 * holders), running jobs (their cgroup statistics, read now), job counts, and the daemon's
 * counters and histograms kept here. A value the backend cannot see (-1) is left out rather
 * than exported as a number. */
#include "metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/jsonx.h"
#include "../common/promtext.h"
#include "../common/util.h"
#include "connfds.h"
#include "counters.h"
#include "depend.h"
#include "events.h"
#include "gpu_json.h"
#include "gpus.h"
#include "gpu_health.h"
#include "job_detail.h"
#include "job_events.h"
#include "job_launch.h"
#include "loop.h"
#include "state.h"

#define MIB 1048576.0

/* ---- what the host and the daemon are ---- */

static uint64_t meminfo_kb(const char *text, const char *key)
{
    const char *p = text ? strstr(text, key) : NULL;
    unsigned long long v;
    return p && sscanf(p + strlen(key), " %llu", &v) == 1 ? (uint64_t)v : 0;
}

/* Seconds since the epoch when this process started, from /proc (0 unknown). */
static double daemon_start_s(void)
{
    static double at;
    if (at > 0)
        return at;
    char *stat = read_file("/proc/stat", NULL);
    const char *bt = stat ? strstr(stat, "\nbtime ") : NULL;
    unsigned long long boot = 0;
    if (bt)
        sscanf(bt + 7, "%llu", &boot);
    free(stat);
    uint64_t ticks = proc_start_time(getpid());
    long hz = sysconf(_SC_CLK_TCK);
    if (boot && ticks && hz > 0)
        at = (double)boot + (double)ticks / (double)hz;
    return at;
}

static void count_jobs(uint64_t counts[JS_CANCELED + 1], uint64_t *queue)
{
    memset(counts, 0, (JS_CANCELED + 1) * sizeof *counts);
    *queue = 0;
    for (size_t i = 0; i < core.njobs; i++) {
        const job *j = core.jobs[i];
        if ((unsigned)j->state <= JS_CANCELED)
            counts[j->state]++;
        /* waiting for room, as queue_position counts; not a job waiting for its time */
        *queue += job_in_queue(j) && j->state != JS_SCHEDULED;
    }
}

static bool job_live(const job *j)
{
    return j->state == JS_RUNNING || j->state == JS_STOPPING || j->state == JS_SUSPENDED;
}

/* Statistics of a running job's cgroup, read now; false when it has none (any more). */
static bool job_stats(const job *j, cg_stats *st)
{
    *st = (cg_stats){0};
    if (!job_live(j))
        return false;
    cg_host uh;
    cg_job cg;
    job_detail_cgroup(j, &uh, &cg);
    return cg_read_stats(&cg, st) == 0;
}

static int ngpus(void) { return core.gpu.inv.n < GPU_MAX ? core.gpu.inv.n : GPU_MAX; }

static const gpu_health *sample_of(int i)
{
    const gpu_health *h = gpu_health_of(i);
    return h && h->sampled_ms ? h : NULL;
}

/* ---- GET /metrics ---- */

static const char *const gpu_states[] = {"available", "allocated", "shared",    "scrubbing", "draining",
                                         "degraded",  "resetting", "offline",   "unusable"};

typedef struct gview {
    gpu_report r;             /* its state and whether it takes jobs (gpus_report) */
    const char *state;
    const gpu_health *h;      /* NULL: never sampled */
    prom_buf l;               /* gpu, uuid, name[, simulated] */
    job **jobs;
    size_t njobs;
} gview;

/* A family's HELP and TYPE lines, written before its first sample only (a family without a
 * sample is left out). */
typedef struct fam {
    const char *name, *type, *help;
    bool shown;
} fam;

static fam F(const char *name, const char *type, const char *help)
{
    return (fam){.name = name, .type = type, .help = help};
}

static void fam_head(prom_buf *b, fam *f)
{
    if (!f->shown)
        prom_family(b, f->name, f->type, f->help);
    f->shown = true;
}

static void fam_put(prom_buf *b, fam *f, const char *labels, double v)
{
    fam_head(b, f);
    prom_sample(b, f->name, labels, v);
}

static void fam_put_u(prom_buf *b, fam *f, const char *labels, uint64_t v)
{
    fam_head(b, f);
    prom_sample_u(b, f->name, labels, v);
}

static void fam_put_with(prom_buf *b, fam *f, const char *labels, const char *key, const char *value, double v)
{
    fam_head(b, f);
    prom_sample_with(b, f->name, labels, key, value, v);
}

static void gpu_metrics(prom_buf *b)
{
    int n = ngpus();
    if (n <= 0)
        return;
    const gpu_inventory *inv = &core.gpu.inv;
    gview *gv = xcalloc((size_t)n, sizeof *gv);
    for (int i = 0; i < n; i++) {
        gview *g = &gv[i];
        g->r = gpus_report(i);
        g->state = gpu_state_name(g->r.state);
        g->h = sample_of(i);
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        prom_label(&g->l, "gpu", idx);
        prom_label(&g->l, "uuid", inv->gpu[i].uuid);
        prom_label(&g->l, "name", inv->gpu[i].name);
        if (inv->simulated)
            prom_label(&g->l, "simulated", "true");
        g->jobs = xcalloc(core.njobs + 1, sizeof *g->jobs);
        g->njobs = gpu_health_jobs_on(i, g->jobs, core.njobs);
    }

    fam f = F("joblet_gpu_info", "gauge", "A GPU joblet manages, always 1; its bus id and compute capability as labels");
    for (int i = 0; i < n; i++) {
        const gpu_dev *d = &inv->gpu[i];
        prom_buf l = {0};
        prom_printf(&l, "%s", gv[i].l.p);
        prom_label(&l, "bus_id", d->bus_id);
        char cc[16] = "";
        if (d->cc_major >= 0)
            snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
        prom_label(&l, "compute_capability", cc);
        prom_label(&l, "driver_version", inv->driver_version);
        prom_label(&l, "backend", inv->backend);
        fam_put(b, &f, l.p, 1);
        prom_free(&l);
    }

    f = F("joblet_gpu_memory_total_bytes", "gauge", "Memory of the GPU");
    for (int i = 0; i < n; i++)
        if (inv->gpu[i].memory_total_mb >= 0)
            fam_put(b, &f, gv[i].l.p, (double)inv->gpu[i].memory_total_mb * MIB);
    f = F("joblet_gpu_memory_used_bytes", "gauge", "GPU memory in use at the last health sample");
    for (int i = 0; i < n; i++)
        if (gv[i].h && gv[i].h->memory_used_mb >= 0)
            fam_put(b, &f, gv[i].l.p, gv[i].h->memory_used_mb * MIB);
    f = F("joblet_gpu_utilization_ratio", "gauge",
              "Fraction of the last sample period in which a kernel ran on the GPU (NVML utilization.gpu / 100)");
    for (int i = 0; i < n; i++)
        if (gv[i].h && gv[i].h->utilization_pct >= 0)
            fam_put(b, &f, gv[i].l.p, gv[i].h->utilization_pct / 100.0);
    f = F("joblet_gpu_temperature_celsius", "gauge", "GPU core temperature at the last health sample");
    for (int i = 0; i < n; i++)
        if (gv[i].h && gv[i].h->temperature_c >= 0)
            fam_put(b, &f, gv[i].l.p, gv[i].h->temperature_c);
    f = F("joblet_gpu_power_watts", "gauge", "GPU power draw at the last health sample");
    for (int i = 0; i < n; i++)
        if (gv[i].h && gv[i].h->power_w >= 0)
            fam_put(b, &f, gv[i].l.p, gv[i].h->power_w);
    f = F("joblet_gpu_hot", "gauge",
              "1 while the GPU is above gpu.max_temperature_c and takes no new jobs, else 0");
    for (int i = 0; i < n; i++)
        if (gv[i].h)
            fam_put(b, &f, gv[i].l.p, gv[i].h->hot);
    f = F("joblet_gpu_last_sample_timestamp_seconds", "gauge", "When the health monitor last sampled the GPU");
    for (int i = 0; i < n; i++)
        if (gv[i].h)
            fam_put(b, &f, gv[i].l.p, (double)gv[i].h->sampled_ms / 1000.0);
    f = F("joblet_gpu_ecc_errors_total", "counter",
              "ECC error events the health monitor received since joblet started, by type (sbe corrected, dbe "
              "uncorrected)");
    for (int i = 0; i < n; i++)
        if (gv[i].h) {
            fam_put_with(b, &f, gv[i].l.p, "type", "sbe", (double)gv[i].h->ecc_sbe);
            fam_put_with(b, &f, gv[i].l.p, "type", "dbe", (double)gv[i].h->ecc_dbe);
        }
    f = F("joblet_gpu_ecc_volatile_errors_total", "counter",
              "The driver's volatile ECC error counters (since the driver loaded or the GPU was reset), by type");
    for (int i = 0; i < n; i++)
        if (gv[i].h) {
            if (gv[i].h->ecc_sbe_total >= 0)
                fam_put_with(b, &f, gv[i].l.p, "type", "sbe", (double)gv[i].h->ecc_sbe_total);
            if (gv[i].h->ecc_dbe_total >= 0)
                fam_put_with(b, &f, gv[i].l.p, "type", "dbe", (double)gv[i].h->ecc_dbe_total);
        }
    f = F("joblet_gpu_remapped_rows", "gauge", "Memory rows the GPU has remapped (corrected and uncorrectable)");
    for (int i = 0; i < n; i++)
        if (gv[i].h && gv[i].h->remapped_rows >= 0)
            fam_put(b, &f, gv[i].l.p, (double)gv[i].h->remapped_rows);
    f = F("joblet_gpu_throttle_reasons", "gauge", "NVML clocks-throttle reasons bit mask at the last sample");
    for (int i = 0; i < n; i++)
        if (gv[i].h && gv[i].h->throttle_reasons >= 0)
            fam_put(b, &f, gv[i].l.p, (double)gv[i].h->throttle_reasons);
    f = F("joblet_gpu_xid_errors_total", "counter",
              "XID errors the health monitor received since joblet started, by XID code (\"other\" past the first "
              "codes seen)");
    for (int i = 0; i < n; i++) {
        const gpu_health *h = gv[i].h;
        for (int k = 0; h && k < GPU_HEALTH_XID_CODES && h->xid[k].code; k++) {
            char code[16];
            snprintf(code, sizeof code, "%d", h->xid[k].code);
            fam_put_with(b, &f, gv[i].l.p, "xid", code, (double)h->xid[k].count);
        }
        if (h && h->xid_other)
            fam_put_with(b, &f, gv[i].l.p, "xid", "other", (double)h->xid_other);
    }

    f = F("joblet_gpu_state", "gauge",
              "1 for the GPU's current state (docs/health.md), 0 for the others");
    for (int i = 0; i < n; i++) {
        bool known = false;
        for (size_t s = 0; s < ARRAY_LEN(gpu_states); s++) {
            bool on = gv[i].state && !strcmp(gv[i].state, gpu_states[s]);
            known |= on;
            fam_put_with(b, &f, gv[i].l.p, "state", gpu_states[s], on);
        }
        if (!known) /* a state this list does not know yet: still shown */
            fam_put_with(b, &f, gv[i].l.p, "state", gv[i].state ? gv[i].state : "unknown", 1);
    }
    f = F("joblet_gpu_takes_jobs", "gauge", "1 when the scheduler may hand the GPU to a new job, else 0");
    for (int i = 0; i < n; i++)
        fam_put(b, &f, gv[i].l.p, gv[i].r.takes_jobs);
    f = F("joblet_gpu_jobs", "gauge",
              "Jobs holding the GPU: exclusively, sharing it through MPS, or through one of its MIG devices");
    for (int i = 0; i < n; i++)
        fam_put_u(b, &f, gv[i].l.p, gv[i].njobs);
    f = F("joblet_gpu_allocated", "gauge", "1 for each job that holds the GPU (label job_id)");
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < gv[i].njobs; k++)
            fam_put_with(b, &f, gv[i].l.p, "job_id", gv[i].jobs[k]->id, 1);

    for (int i = 0; i < n; i++) {
        prom_free(&gv[i].l);
        free(gv[i].jobs);
    }
    free(gv);
}

static void job_metrics(prom_buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < core.njobs; i++)
        n += job_live(core.jobs[i]);
    if (!n)
        return;
    struct row {
        const job *j;
        prom_buf l;
        cg_stats st;
        bool ok;
    } *rows = xcalloc(n, sizeof *rows);
    size_t k = 0;
    for (size_t i = 0; i < core.njobs && k < n; i++) {
        const job *j = core.jobs[i];
        if (!job_live(j))
            continue;
        struct row *r = &rows[k++];
        r->j = j;
        prom_label(&r->l, "job_id", j->id);
        prom_label(&r->l, "job_name", j->name ? j->name : "");
        r->ok = job_stats(j, &r->st);
        if (!r->ok) { /* its cgroup is gone (the job is ending): its last known totals */
            r->st.cpu_usage_ns = j->usage.cpu_ns;
            r->st.mem_peak_bytes = j->usage.memory_peak_bytes;
            r->st.io_read_bytes = j->usage.io_read_bytes;
            r->st.io_write_bytes = j->usage.io_write_bytes;
        }
    }
    fam f = F("joblet_job_cpu_seconds_total", "counter", "CPU time the running job's processes used");
    for (k = 0; k < n; k++)
        fam_put(b, &f, rows[k].l.p, (double)rows[k].st.cpu_usage_ns / 1e9);
    f = F("joblet_job_memory_bytes", "gauge", "Memory the running job's cgroup uses now");
    for (k = 0; k < n; k++)
        if (rows[k].ok)
            fam_put_u(b, &f, rows[k].l.p, rows[k].st.mem_current_bytes);
    f = F("joblet_job_memory_peak_bytes", "gauge", "Most memory the running job's cgroup has used");
    for (k = 0; k < n; k++)
        fam_put_u(b, &f, rows[k].l.p, rows[k].st.mem_peak_bytes);
    f = F("joblet_job_io_read_bytes_total", "counter", "Bytes the running job read from block devices");
    for (k = 0; k < n; k++)
        fam_put_u(b, &f, rows[k].l.p, rows[k].st.io_read_bytes);
    f = F("joblet_job_io_write_bytes_total", "counter", "Bytes the running job wrote to block devices");
    for (k = 0; k < n; k++)
        fam_put_u(b, &f, rows[k].l.p, rows[k].st.io_write_bytes);
    f = F("joblet_job_pids", "gauge", "Processes and threads in the running job");
    for (k = 0; k < n; k++)
        if (rows[k].ok)
            fam_put_u(b, &f, rows[k].l.p, rows[k].st.pids_current);
    f = F("joblet_job_oom_kills_total", "counter", "Processes of the running job killed by its memory limit");
    for (k = 0; k < n; k++)
        if (rows[k].ok)
            fam_put_u(b, &f, rows[k].l.p, rows[k].st.oom_kills);
    f = F("joblet_job_gpus", "gauge", "GPUs (or MIG devices) the running job holds");
    for (k = 0; k < n; k++)
        fam_put_u(b, &f, rows[k].l.p, rows[k].j->gpus.n);
    for (k = 0; k < n; k++)
        prom_free(&rows[k].l);
    free(rows);
}

char *metrics_text(void)
{
    prom_buf b = {0};
    prom_buf l = {0};
    prom_family(&b, "joblet_build_info", "gauge", "joblet's version, always 1");
    prom_label(&l, "version", JOBLET_VERSION);
    prom_sample(&b, "joblet_build_info", l.p, 1);
    prom_free(&l);
    double start = daemon_start_s();
    if (start > 0) {
        prom_family(&b, "joblet_start_time_seconds", "gauge", "When the daemon started, in seconds since the epoch");
        prom_sample(&b, "joblet_start_time_seconds", NULL, start);
    }

    uint64_t counts[JS_CANCELED + 1], queue;
    count_jobs(counts, &queue);
    prom_family(&b, "joblet_jobs", "gauge", "Jobs the daemon knows, by state");
    for (int s = 0; s <= JS_CANCELED; s++)
        prom_sample_with(&b, "joblet_jobs", NULL, "state", job_state_name((enum job_state)s), (double)counts[s]);
    prom_family(&b, "joblet_queue_length", "gauge", "Jobs waiting for room to start (QUEUED or PREEMPTED)");
    prom_sample_u(&b, "joblet_queue_length", NULL, queue);
    prom_family(&b, "joblet_running_jobs", "gauge", "Jobs holding room: started and not yet cleaned up");
    prom_sample_u(&b, "joblet_running_jobs", NULL, core.running);
    prom_family(&b, "joblet_max_running_jobs", "gauge", "jobs.max_running; 0 means no limit");
    prom_sample_u(&b, "joblet_max_running_jobs", NULL, core.cfg.max_running);
    prom_family(&b, "joblet_max_running_jobs_files", "gauge",
                "Jobs joblet's open-file limit lets run at once (2 descriptors each); 0 means no bound");
    prom_sample_u(&b, "joblet_max_running_jobs_files", NULL, core.files_max_running);
    prom_family(&b, "joblet_connection_files", "gauge",
                "Descriptors connections hold besides their sockets (log followers, terminals, execs, copies, "
                "uploads: core/connfds.h)");
    prom_sample_u(&b, "joblet_connection_files", NULL, connfds_held());
    prom_family(&b, "joblet_max_connection_files", "gauge",
                "What joblet's open-file limit keeps for them (past it, 503); 0 means no bound");
    prom_sample_u(&b, "joblet_max_connection_files", NULL, connfds_budget() == UINT64_MAX ? 0 : connfds_budget());
    prom_family(&b, "joblet_console_streams", "gauge", "Open GET /v1/events streams (web consoles)");
    prom_sample_u(&b, "joblet_console_streams", NULL, events_streams());
    prom_family(&b, "joblet_console_events_total", "counter", "Events published to the console's streams");
    prom_sample_u(&b, "joblet_console_events_total", NULL, events_published());

    prom_family(&b, "joblet_loop_turns_total", "counter",
                "Turns of the daemon's one loop: each handles what woke it, settles, commits, then waits");
    prom_sample_u(&b, "joblet_loop_turns_total", NULL, loop_turns());
    prom_family(&b, "joblet_loop_longest_turn_seconds", "gauge",
                "The longest turn of the loop since the start: every other request waited this long");
    prom_sample(&b, "joblet_loop_longest_turn_seconds", NULL, (double)loop_longest_turn_ns() / 1e9);
    static uint64_t texts;
    prom_family(&b, "joblet_metrics_texts_total", "counter",
                "Texts of these metrics the loop built, this one included: the metrics.listen listener's "
                "scrapes share one, at most one per 100 ms or more");
    prom_sample_u(&b, "joblet_metrics_texts_total", NULL, ++texts);

    prom_family(&b, "joblet_dependency_looks_total", "counter",
                "Dependencies looked at to decide jobs and arrays that wait on others (--after): it grows with "
                "what started and ended, not with the jobs kept");
    prom_sample_u(&b, "joblet_dependency_looks_total", NULL, depend_looked());
    prom_family(&b, "joblet_event_kept_looks_total", "counter",
                "Kept history events looked at to write again those a failed commit lost (or to forget a "
                "deleted job's): it grows with the turns and the events lost, not with each new event");
    prom_sample_u(&b, "joblet_event_kept_looks_total", NULL, job_events_looked());
    counters_write(&b);

    gpu_metrics(&b);
    job_metrics(&b);
    return prom_take(&b);
}

/* ---- GET /v1/monitor ---- */

static double round2(double v) { return (double)(int64_t)(v * 100 + 0.5) / 100; }

static json_t *host_json(void)
{
    json_t *o = json_object();
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) == 0)
        utf8_sanitize(host);
    json_object_set_new(o, "hostname", json_string(host));
    json_object_set_new(o, "cpus", json_integer(core.ncpus));
    double load[3];
    if (getloadavg(load, 3) == 3)
        json_object_set_new(o, "load", json_pack("[f,f,f]", round2(load[0]), round2(load[1]), round2(load[2])));
    else
        json_object_set_new(o, "load", json_null());
    char *mi = read_file("/proc/meminfo", NULL);
    uint64_t total = meminfo_kb(mi, "MemTotal:"), avail = meminfo_kb(mi, "MemAvailable:");
    free(mi);
    json_object_set_new(o, "memory_total_bytes", total ? json_integer((json_int_t)(total * 1024)) : json_null());
    json_object_set_new(o, "memory_available_bytes", avail ? json_integer((json_int_t)(avail * 1024)) : json_null());
    char *up = read_file("/proc/uptime", NULL);
    double secs = 0;
    if (up && sscanf(up, "%lf", &secs) == 1)
        json_object_set_new(o, "uptime_s", json_integer((json_int_t)secs));
    else
        json_object_set_new(o, "uptime_s", json_null());
    free(up);
    return o;
}

json_t *metrics_monitor_json(const caller *who)
{
    json_t *o = json_object();
    char now[40];
    format_ms(now_ms(), now, sizeof now);
    json_object_set_new(o, "time", json_string(now));
    json_object_set_new(o, "host", host_json());
    double start = daemon_start_s();
    json_object_set_new(o, "daemon", json_pack("{s:s,s:i,s:o}", "version", JOBLET_VERSION, "pid", (int)getpid(),
                                               "uptime_s", start > 0 ? json_integer((json_int_t)((double)now_ms() / 1000.0 - start))
                                                                     : json_null()));
    uint64_t counts[JS_CANCELED + 1], queue;
    count_jobs(counts, &queue);
    json_t *jc = json_object();
    for (int s = 0; s <= JS_CANCELED; s++)
        json_object_set_new(jc, job_state_name((enum job_state)s), json_integer((json_int_t)counts[s]));
    json_object_set_new(o, "jobs", jc);
    json_object_set_new(o, "queue_length", json_integer((json_int_t)queue));
    json_object_set_new(o, "running", json_integer(core.running));
    json_object_set_new(o, "max_running", json_integer(core.cfg.max_running));
    json_object_set_new(o, "max_running_files", json_integer(core.files_max_running));
    const gpu_inventory *inv = &core.gpu.inv;
    json_object_set_new(o, "gpu", json_pack("{s:b,s:s,s:b,s:s?}", "enabled", core.gpu_on, "backend", inv->backend,
                                            "simulated", inv->simulated != 0, "driver_version",
                                            *inv->driver_version ? inv->driver_version : NULL));
    json_t *gpus = json_array();
    job **on = xcalloc(core.njobs + 1, sizeof *on);
    for (int i = 0; i < ngpus(); i++) {
        json_t *g = gpu_json_one(i, who);
        size_t k = gpu_health_jobs_on(i, on, core.njobs), others = 0;
        json_t *ids = json_array();
        for (size_t x = 0; x < k; x++) {
            if (authz_may_on(who, AUTHZ_OTHERS_JOBS, on[x]->owner_uid))
                json_array_append_new(ids, json_string(on[x]->id));
            else
                others++;   /* (counted, not named: gpu_json_holder's rule) */
        }
        json_object_set_new(g, "jobs", ids);
        if (others)
            json_object_set_new(g, "other_users_jobs", json_integer((json_int_t)others));
        json_array_append_new(gpus, g);
    }
    free(on);
    json_object_set_new(o, "gpus", gpus);
    return o;
}

/* ---- GET /v1/jobs/{id}/metrics ---- */

static json_t *int_or_null(int64_t v) { return v >= 0 ? json_integer(v) : json_null(); }

json_t *metrics_job_json(const job *j)
{
    char now[40];
    format_ms(now_ms(), now, sizeof now);
    cg_stats st;
    bool live = job_stats(j, &st);
    job_usage u = j->usage;
    if (live)
        u = (job_usage){st.cpu_usage_ns, st.mem_peak_bytes, st.io_read_bytes, st.io_write_bytes, st.pids_current,
                         j->usage.gpu_ms_before};
    json_t *o = json_pack("{s:s,s:s,s:s,s:b,s:I,s:o,s:I,s:I,s:I,s:I}", "time", now, "job", j->id, "status",
                          job_state_name(j->state), "running", live, "cpu_ns", (json_int_t)u.cpu_ns, "memory_bytes",
                          live ? json_integer((json_int_t)st.mem_current_bytes) : json_null(), "memory_peak_bytes",
                          (json_int_t)u.memory_peak_bytes, "io_read_bytes", (json_int_t)u.io_read_bytes,
                          "io_write_bytes", (json_int_t)u.io_write_bytes, "pids", (json_int_t)(live ? u.pids_current : 0));
    json_object_set_new(o, "oom_kills", live ? json_integer((json_int_t)st.oom_kills) : json_null());
    json_t *gpus = json_array();
    for (size_t x = 0; x < j->gpus.n; x++) {
        const gpu_grant *g = &j->gpus.g[x];
        int idx = g->index;
        bool mig = g->mig;
        json_t *s = json_pack("{s:i,s:s,s:s,s:o}", "index", idx, "uuid", g->uuid, "name", g->name, "mig_profile",
                              mig ? json_string(g->mig_profile) : json_null());
        const gpu_health *h = idx >= 0 && idx < ngpus() ? sample_of((int)idx) : NULL;
        int64_t total = idx >= 0 && idx < ngpus() ? core.gpu.inv.gpu[idx].memory_total_mb : -1;
        if (mig) /* the health sample is the whole GPU's, shared with its other MIG devices */
            total = g->memory_mb;
        json_object_set_new(s, "utilization_pct", h && !mig ? int_or_null(h->utilization_pct) : json_null());
        json_object_set_new(s, "memory_used_mb", h && !mig ? int_or_null(h->memory_used_mb) : json_null());
        json_object_set_new(s, "memory_total_mb", int_or_null(total));
        json_object_set_new(s, "temperature_c", h ? int_or_null(h->temperature_c) : json_null());
        json_object_set_new(s, "power_w", h && !mig ? int_or_null(h->power_w) : json_null());
        json_object_set_new(s, "shared", json_boolean(j->req.gpu_share));
        json_array_append_new(gpus, s);
    }
    json_object_set_new(o, "gpus", gpus);
    return o;
}
