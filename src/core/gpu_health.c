/* GPU health (docs/health.md). A monitor thread of its own uses NVML (through gpu/nvml.h, the
 * binding discovery uses), waits for XID and ECC events and samples every GPU each
 * gpu.health_interval_ms; it also runs resets, which may take seconds. It never touches the
 * core's state: it writes fixed-size messages to a pipe that the event loop reads. The loop
 * side keeps the samples and counters, applies the XID policy and moves GPUs through the
 * state machine (gpu/gpu_state.c): RESETTING or OFFLINE by the policy, AVAILABLE again after a
 * passing reset and check, OFFLINE after a failing one. */
#include "gpu_health.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/thread.h"
#include "../common/util.h"
#include "../gpu/nvml.h"
#include "../gpu/xid_policy.h"
#include "audit.h"
#include "gpu_service.h"
#include "job_launch.h"
#include "state.h"

enum hm_type { HM_SAMPLE, HM_XID, HM_ECC, HM_RESET };

typedef struct hmsg {
    int type;
    int gpu;
    int64_t v[14];               /* HM_SAMPLE: the SAMPLE_* slots below, -1 not known */
    char text[160];
} hmsg;

/* What one sample carries, slot by slot (hmsg.v). */
enum {
    SAMPLE_TEMP, SAMPLE_UTIL, SAMPLE_MEM_USED, SAMPLE_POWER, SAMPLE_THROTTLE,
    SAMPLE_ECC_VOL_CORR, SAMPLE_ECC_VOL_UNC, SAMPLE_ECC_AGG_CORR, SAMPLE_ECC_AGG_UNC,
    SAMPLE_REMAP_CORR, SAMPLE_REMAP_UNC, SAMPLE_REMAP_PENDING, SAMPLE_REMAP_FAILURE,
    SAMPLE_SLOTS
};
_Static_assert(SAMPLE_SLOTS <= 14, "hmsg.v holds a sample");

static struct {
    pthread_t th;
    bool running;
    int rd, wr;                  /* the pipe: monitor -> loop */
    watch w;
    pthread_mutex_t mu;
    uint64_t reset_want;         /* GPUs to reset, set by the loop, taken by the monitor */
    bool stop;
    int interval_ms;
    int ngpu;
    char uuid[GPU_MAX][96];
    char smi[256];
    int smi_timeout_ms;
    char lib[256];
} mon = {.mu = PTHREAD_MUTEX_INITIALIZER, .rd = -1, .wr = -1};

static gpu_health samples[GPU_MAX];
static uint64_t reset_asked;     /* loop side: resets handed to the monitor, not answered yet */
static xid_policy policy;

const gpu_health *gpu_health_of(int i) { return i >= 0 && i < GPU_MAX ? &samples[i] : NULL; }

/* ---------------- the monitor thread ---------------- */

static void post(const hmsg *m)
{
    /* a pipe write of this size is atomic; a full pipe (a stalled loop) drops samples, never blocks */
    if (write(mon.wr, m, sizeof *m) < 0 && errno != EAGAIN)
        return;
}


/* nvidia-smi --gpu-reset -i N, with a time limit: 0, or -1 and why in text. */
static int run_reset(int gpu, char *text, size_t len)
{
    char idx[16];
    snprintf(idx, sizeof idx, "%d", gpu);
    char *argv[] = {mon.smi, "--gpu-reset", "-i", idx, NULL};
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0) {
        snprintf(text, len, "pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    pid_t pid;
    extern char **environ;
    int rc = posix_spawn(&pid, mon.smi, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        snprintf(text, len, "cannot run %s: %s", mon.smi, strerror(rc));
        return -1;
    }
    char buf[512] = "";
    size_t got = 0;
    int64_t deadline = mono_ms() + (mon.smi_timeout_ms > 0 ? mon.smi_timeout_ms : 10000) + 20000;
    struct pollfd p = {out[0], POLLIN, 0};
    while (mono_ms() < deadline && poll(&p, 1, 100) >= 0) {
        if (!p.revents)
            continue;
        ssize_t n = read(out[0], buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(out[0]);
    buf[got] = 0;
    int st = 0;
    pid_t w;
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && mono_ms() < deadline)
        nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        snprintf(text, len, "%s --gpu-reset -i %d did not finish in time", mon.smi, gpu);
        return -1;
    }
    /* The loop thread reaps every child on SIGCHLD (main.c) and may have taken this one's
     * status first: then nvidia-smi's own words decide. */
    if (w < 0 && errno == ECHILD)
        st = strstr(buf, "successfully reset") ? 0 : 1 << 8;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(text, len, "%s --gpu-reset -i %d failed: %.*s", mon.smi, gpu, (int)strcspn(buf, "\n"), buf);
        return -1;
    }
    return 0;
}

/* Waits up to timeout_ms for one event of the set and tells the loop of it; false when none came. */
static bool take_event(const nvml_lib *n, nvmlEventSet_t set, const nvmlDevice_t *dev, unsigned timeout_ms)
{
    nvmlEventData_t ev;
    if (n->nvmlEventSetWait_v2(set, &ev, timeout_ms) != NVML_SUCCESS)
        return false;
    for (int i = 0; i < mon.ngpu; i++)
        if (dev[i] == ev.device) {
            hmsg m = {.type = ev.eventType == nvmlEventTypeXidCriticalError ? HM_XID : HM_ECC, .gpu = i};
            m.v[0] = ev.eventType == nvmlEventTypeXidCriticalError ? (int64_t)ev.eventData
                                                                   : ev.eventType == nvmlEventTypeDoubleBitEccError;
            post(&m);
        }
    return true;
}

static void *monitor(void *arg)
{
    nvmlDevice_t dev[GPU_MAX] = {0};
    nvmlEventSet_t set = NULL;
    /* the binding discovery used (gpu/nvml.h), loaded by discovery or now; without it, or with
     * an NVML that does not start, no samples and no events */
    jerr e = {0};
    const nvml_lib *n = nvml_load(mon.lib, &e);
    bool ok = n && n->nvmlInit_v2() == NVML_SUCCESS;
    if (ok) {
        unsigned count = 0;
        n->nvmlDeviceGetCount_v2(&count);
        for (unsigned k = 0; k < count; k++) {
            nvmlDevice_t d;
            char uuid[96];
            if (n->nvmlDeviceGetHandleByIndex_v2(k, &d) != NVML_SUCCESS ||
                n->nvmlDeviceGetUUID(d, uuid, sizeof uuid) != NVML_SUCCESS)
                continue;
            for (int i = 0; i < mon.ngpu; i++)
                if (!strcmp(uuid, mon.uuid[i]))
                    dev[i] = d;
        }
        if (n->nvmlEventSetCreate && n->nvmlDeviceRegisterEvents && n->nvmlEventSetWait_v2 && n->nvmlEventSetFree &&
            n->nvmlEventSetCreate(&set) == NVML_SUCCESS)
            for (int i = 0; i < mon.ngpu; i++)
                if (dev[i])
                    n->nvmlDeviceRegisterEvents(dev[i], nvmlEventTypeXidCriticalError | nvmlEventTypeSingleBitEccError |
                                                           nvmlEventTypeDoubleBitEccError, set);
    }
    int64_t next = 0;
    for (;;) {
        pthread_mutex_lock(&mon.mu);
        bool stop = mon.stop;
        uint64_t resets = mon.reset_want;
        mon.reset_want = 0;
        pthread_mutex_unlock(&mon.mu);
        if (stop)
            break;
        /* events the driver delivered before a reset are told before its result: an XID that
         * came while the GPU waited for its reset belongs to that wait, not to after it (read
         * after the reset, it would start a second drain and reset) */
        for (int k = 0; set && resets && k < 64 && take_event(n, set, dev, 0); k++)
            ;
        for (int i = 0; i < mon.ngpu; i++)
            if (resets >> i & 1) {
                hmsg m = {.type = HM_RESET, .gpu = i};
                int rc = run_reset(i, m.text, sizeof m.text);
                /* the check after a reset: the device answers, and its memory can be read */
                nvmlMemory_t mem;
                unsigned t;
                if (rc == 0 && ok && dev[i] &&
                    ((n->nvmlDeviceGetTemperature &&
                      n->nvmlDeviceGetTemperature(dev[i], NVML_TEMPERATURE_GPU, &t) != NVML_SUCCESS) ||
                     n->nvmlDeviceGetMemoryInfo(dev[i], &mem) != NVML_SUCCESS)) {
                    snprintf(m.text, sizeof m.text, "the GPU does not answer NVML after its reset");
                    rc = -1;
                }
                m.v[0] = rc == 0;
                post(&m);
            }
        int64_t now = mono_ms();
        if (now >= next && ok) {
            for (int i = 0; i < mon.ngpu; i++) {
                if (!dev[i])
                    continue;
                hmsg m = {.type = HM_SAMPLE, .gpu = i};
                for (int k = 0; k < SAMPLE_SLOTS; k++)
                    m.v[k] = -1;
                unsigned t, p;
                nvmlUtilization_t u;
                nvmlMemory_t mem;
                if (n->nvmlDeviceGetTemperature && n->nvmlDeviceGetTemperature(dev[i], NVML_TEMPERATURE_GPU, &t) == NVML_SUCCESS)
                    m.v[SAMPLE_TEMP] = t;
                if (n->nvmlDeviceGetUtilizationRates && n->nvmlDeviceGetUtilizationRates(dev[i], &u) == NVML_SUCCESS)
                    m.v[SAMPLE_UTIL] = u.gpu;
                if (n->nvmlDeviceGetMemoryInfo && n->nvmlDeviceGetMemoryInfo(dev[i], &mem) == NVML_SUCCESS)
                    m.v[SAMPLE_MEM_USED] = (int64_t)(mem.used >> 20);
                if (n->nvmlDeviceGetPowerUsage && n->nvmlDeviceGetPowerUsage(dev[i], &p) == NVML_SUCCESS)
                    m.v[SAMPLE_POWER] = p / 1000;
                unsigned long long tr, ecc;
                unsigned corr, unc, pend, fail;
                if (n->nvmlDeviceGetCurrentClocksThrottleReasons &&
                    n->nvmlDeviceGetCurrentClocksThrottleReasons(dev[i], &tr) == NVML_SUCCESS)
                    m.v[SAMPLE_THROTTLE] = (int64_t)tr;
                if (n->nvmlDeviceGetRemappedRows &&
                    n->nvmlDeviceGetRemappedRows(dev[i], &corr, &unc, &pend, &fail) == NVML_SUCCESS) {
                    m.v[SAMPLE_REMAP_CORR] = corr;
                    m.v[SAMPLE_REMAP_UNC] = unc;
                    m.v[SAMPLE_REMAP_PENDING] = pend != 0;
                    m.v[SAMPLE_REMAP_FAILURE] = fail != 0;
                }
                /* ECC counters: volatile (since the driver loaded) and aggregate (the board's
                 * lifetime, kept in its InfoROM), corrected (single-bit) and uncorrected */
                static const struct {
                    nvmlMemoryErrorType_t type;
                    nvmlEccCounterType_t counter;
                    int slot;
                } eccs[] = {
                    {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, SAMPLE_ECC_VOL_CORR},
                    {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, SAMPLE_ECC_VOL_UNC},
                    {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, SAMPLE_ECC_AGG_CORR},
                    {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, SAMPLE_ECC_AGG_UNC},
                };
                for (size_t k = 0; n->nvmlDeviceGetTotalEccErrors && k < sizeof eccs / sizeof eccs[0]; k++)
                    if (n->nvmlDeviceGetTotalEccErrors(dev[i], eccs[k].type, eccs[k].counter, &ecc) == NVML_SUCCESS)
                        m.v[eccs[k].slot] = (int64_t)ecc;
                post(&m);
            }
            next = now + mon.interval_ms;
        }
        /* wait for an event, in slices short enough that a reset request or stop is seen soon */
        int slice = (int)(next - mono_ms());
        slice = slice < 0 ? 0 : slice > 200 ? 200 : slice;
        if (set)
            take_event(n, set, dev, (unsigned)slice);
        else
            nanosleep(&(struct timespec){0, (long)slice * 1000000L}, NULL);
    }
    if (set)
        n->nvmlEventSetFree(set);
    if (ok)
        n->nvmlShutdown();
    return NULL;
}

/* ---------------- the loop side ---------------- */

/* Jobs holding GPU i (exclusive, shared or through one of its MIG devices). */
size_t gpu_health_jobs_on(int i, job **out, size_t max)
{
    size_t k = 0;
    for (size_t n = 0; n < core.njobs && k < max; n++) {
        job *j = core.jobs[n];
        if (!j->holds_room)
            continue;
        bool on = j->gpu_set >> i & 1;
        for (size_t x = 0; !on && x < j->gpus.n; x++)
            on = j->gpus.g[x].index == i && j->gpus.g[x].mig;
        if (on)
            out[k++] = j;
    }
    return k;
}

void gpu_health_fault_why(const gpu_fault *f, char *out, size_t len)
{
    if (f->xid)
        snprintf(out, len, "XID %d: %s", f->xid, f->meaning);
    else
        snprintf(out, len, "%s by uid %lld",
                 !strncmp(f->action, "offline", 7) ? "taken offline"
                 : !strncmp(f->action, "drain", 5) ? "drained"
                                                    : f->action,
                 (long long)f->by_uid);
}

static void fail_with(job *j, const gpu_fault *f)
{
    char why[200], msg[300];
    gpu_health_fault_why(f, why, sizeof why);
    snprintf(msg, sizeof msg, "GPU %d failed: %s", f->gpu, why);
    free(j->fail_reason);
    j->fail_reason = xstrdup(msg);
    j->gpu_fault = *f;
}

void gpu_health_fault_restore(job *j)
{
    if (j->gpu_fault.set && !job_state_terminal(j->state) && !j->fail_reason)
        fail_with(j, &j->gpu_fault);
}

/* The jobs on a failed GPU: preemptible ones go back to the queue (and run elsewhere), the
 * others fail with the fault. */
void gpu_health_lose_jobs(int i, const gpu_fault *f)
{
    char why[200];
    gpu_health_fault_why(f, why, sizeof why);
    job *js[64];
    size_t n = gpu_health_jobs_on(i, js, 64);
    for (size_t k = 0; k < n; k++) {
        job *j = js[k];
        if (j->state == JS_STOPPING || j->preempting)
            continue;
        if (j->req.preemptible) {
            job_launch_preempt(j, NULL, 0);
            log_info("job %s: GPU %d failed (%s): re-queued", j->id, i, why);
            continue;
        }
        fail_with(j, f); /* job_launch_stop saves it: the fault outlives a restart before the job's end */
        jerr e = {0};
        if (job_launch_stop(j, (uid_t)-1, &e) < 0)
            log_err("job %s: %s", j->id, e.msg);
        j->stopped_by = -1;
    }
}

/* A GPU waiting for its reset gets it once nothing holds it any more. */
void gpu_health_reset_when_idle(void)
{
    if (!mon.running)
        return;
    uint64_t want = 0;
    for (int i = 0; i < core.gpu.inv.n; i++) {
        job *js[1];
        if (gpu_service_get(i)->state == GS_RESETTING && !(reset_asked >> i & 1) && gpu_health_jobs_on(i, js, 1) == 0 &&
            !(gpu_service_scrubbing() >> i & 1))
            want |= 1ull << i;
    }
    if (!want)
        return;
    reset_asked |= want;
    pthread_mutex_lock(&mon.mu);
    mon.reset_want |= want;
    pthread_mutex_unlock(&mon.mu);
    for (int i = 0; i < core.gpu.inv.n; i++)
        if (want >> i & 1)
            log_info("gpu %d: idle: resetting it", i);
}

static void count_xid(gpu_health *g, int code, const char *meaning, enum xid_action a)
{
    g->last_xid = code;
    g->last_xid_ms = now_ms();
    if (g->nrecent < GPU_HEALTH_RECENT_XIDS)
        g->nrecent++;
    memmove(&g->recent[1], &g->recent[0], (size_t)(g->nrecent - 1) * sizeof g->recent[0]);
    g->recent[0].ms = g->last_xid_ms;
    g->recent[0].code = code;
    g->recent[0].meaning = meaning;
    g->recent[0].action = a;
    for (int k = 0; k < GPU_HEALTH_XID_CODES; k++)
        if (g->xid[k].code == code || g->xid[k].code == 0) {
            g->xid[k].code = code;
            g->xid[k].count++;
            return;
        }
    g->xid_other++;
}

static void on_xid(int i, int code, const char *via)
{
    const char *meaning;
    enum xid_action a = xid_policy_action(&policy, code, &meaning);
    count_xid(&samples[i], code, meaning, a);
    char why[200];
    snprintf(why, sizeof why, "XID %d: %s", code, meaning);
    log_msg(a == XA_APP ? LOG_INFO : LOG_WARN, "gpu %d: %s%s; action: %s", i, why, via, xid_action_name(a));
    char detail[300];
    snprintf(detail, sizeof detail, "%s; action %s", why, xid_action_name(a));
    audit_record("xid", -1, i, NULL, -1, -1, detail);
    gpu_fault f = {.set = true, .gpu = i, .xid = code, .by_uid = -1, .ms = samples[i].last_xid_ms};
    snprintf(f.uuid, sizeof f.uuid, "%s", core.gpu.inv.gpu[i].uuid);
    snprintf(f.meaning, sizeof f.meaning, "%s", meaning);
    snprintf(f.action, sizeof f.action, "%s", xid_action_name(a));
    switch (a) {
    case XA_APP: return;
    case XA_RESTART_JOB: gpu_health_lose_jobs(i, &f); break;
    case XA_OFFLINE:
        gpu_service_set(i, GE_XID_OFFLINE, why, -1);
        gpu_health_lose_jobs(i, &f);
        break;
    case XA_RESET:
        gpu_service_set(i, GE_XID_RESET, why, -1);
        gpu_health_lose_jobs(i, &f);
        break;
    case XA_DRAIN_RESET:
        /* no new jobs; reset once the running ones end (a GPU already waiting for its reset keeps
         * its first reason) */
        if (gpu_service_get(i)->state != GS_RESETTING)
            gpu_service_set(i, GE_XID_DRAIN_RESET, why, -1);
        break;
    }
}

static void on_message(watch *w, uint32_t events)
{
    hmsg m;
    while (read(mon.rd, &m, sizeof m) == (ssize_t)sizeof m) {
        if (m.gpu < 0 || m.gpu >= core.gpu.inv.n)
            continue;
        gpu_health *g = &samples[m.gpu];
        switch (m.type) {
        case HM_SAMPLE: {
            g->sampled_ms = now_ms();
            g->temperature_c = (int)m.v[SAMPLE_TEMP];
            g->utilization_pct = (int)m.v[SAMPLE_UTIL];
            g->memory_used_mb = (int)m.v[SAMPLE_MEM_USED];
            g->power_w = (int)m.v[SAMPLE_POWER];
            g->throttle_reasons = m.v[SAMPLE_THROTTLE];
            g->remapped_correctable = m.v[SAMPLE_REMAP_CORR];
            g->remapped_uncorrectable = m.v[SAMPLE_REMAP_UNC];
            g->remapped_rows = m.v[SAMPLE_REMAP_CORR] < 0 ? -1 : m.v[SAMPLE_REMAP_CORR] + m.v[SAMPLE_REMAP_UNC];
            g->remap_pending = (int)m.v[SAMPLE_REMAP_PENDING];
            g->remap_failure = (int)m.v[SAMPLE_REMAP_FAILURE];
            g->ecc_sbe_total = m.v[SAMPLE_ECC_VOL_CORR];
            g->ecc_dbe_total = m.v[SAMPLE_ECC_VOL_UNC];
            g->ecc_sbe_aggregate = m.v[SAMPLE_ECC_AGG_CORR];
            g->ecc_dbe_aggregate = m.v[SAMPLE_ECC_AGG_UNC];
            int max = (int)core.cfg.max_temperature_c;
            /* 5 degrees of hysteresis: a GPU at the limit does not flap in and out of service */
            bool hot = gpu_state_hot(g->hot, g->temperature_c, max);
            if (hot && !g->hot) {
                g->hot = true;
                char d[120];
                snprintf(d, sizeof d, "%d C, above gpu.max_temperature_c %d: no new jobs until it cools", g->temperature_c,
                         max);
                log_warn("gpu %d: %s", m.gpu, d);
                audit_record("hot", -1, m.gpu, NULL, -1, -1, d);
            } else if (!hot && g->hot) {
                g->hot = false;
                log_info("gpu %d: cooled to %d C: takes jobs again", m.gpu, g->temperature_c);
                audit_record("cooled", -1, m.gpu, NULL, -1, -1, NULL);
                state_want(WANT_SCHEDULE);
            }
            break;
        }
        case HM_XID: on_xid(m.gpu, (int)m.v[0], ""); break;
        case HM_ECC:
            if (m.v[0]) {
                g->ecc_dbe++;
                on_xid(m.gpu, 48, " (a double-bit ECC event)");
            } else {
                g->ecc_sbe++;
            }
            break;
        case HM_RESET:
            reset_asked &= ~(1ull << m.gpu);
            if (m.v[0]) {
                /* back in service, unless an admin or an XID took it out meanwhile (gpu_state.c) */
                enum gpu_state next;
                if (gpu_state_next(gpu_service_get(m.gpu)->state, GE_RESET_DONE, &next) == 0 && next != GS_AVAILABLE)
                    log_info("gpu %d: reset and checked; it stays %s", m.gpu, gpu_state_name(next));
                else
                    log_info("gpu %d: reset and checked: AVAILABLE", m.gpu);
                audit_record("reset", -1, m.gpu, NULL, -1, -1, "passed the check after the reset");
                gpu_service_set(m.gpu, GE_RESET_DONE, "reset and checked", -1);
            } else {
                char why[240];
                snprintf(why, sizeof why, "reset failed: %s", m.text);
                audit_record("reset", -1, m.gpu, NULL, -1, -1, why);
                gpu_service_set(m.gpu, GE_RESET_FAILED, why, -1);
            }
            break;
        }
    }
}

void gpu_health_start(void)
{
    for (int i = 0; i < GPU_MAX; i++)
        samples[i] = (gpu_health){.temperature_c = -1, .utilization_pct = -1, .memory_used_mb = -1, .power_w = -1,
                                  .throttle_reasons = -1, .remapped_rows = -1, .ecc_sbe_total = -1,
                                  .ecc_dbe_total = -1, .ecc_sbe_aggregate = -1, .ecc_dbe_aggregate = -1,
                                  .remapped_correctable = -1, .remapped_uncorrectable = -1, .remap_pending = -1,
                                  .remap_failure = -1};
    char err[256];
    if (xid_policy_parse(&policy, core.cfg.xid_policy, err, sizeof err) < 0)
        log_err("%s; using joblet's table alone", err);
    const gpu_inventory *inv = &core.gpu.inv;
    if (!core.gpu_on || !inv->n || !core.cfg.health_interval_ms)
        return;
    if (inv->simulated) {
        log_info("gpu: simulated GPUs: no health monitor (nothing to sample)");
        return;
    }
    if (strcmp(inv->backend, "nvml") != 0)
        log_warn("gpu: discovery used the %s backend; the health monitor tries NVML (%s) for samples and events",
                 inv->backend, core.cfg.gpu.nvml_library);
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        log_err("gpu: health monitor: pipe: %s", strerror(errno));
        return;
    }
    mon.rd = p[0];
    mon.wr = p[1];
    mon.interval_ms = (int)core.cfg.health_interval_ms;
    mon.ngpu = inv->n;
    for (int i = 0; i < inv->n; i++)
        snprintf(mon.uuid[i], sizeof mon.uuid[i], "%s", inv->gpu[i].uuid);
    snprintf(mon.smi, sizeof mon.smi, "%s", core.cfg.gpu.nvidia_smi);
    snprintf(mon.lib, sizeof mon.lib, "%s", core.cfg.gpu.nvml_library);
    mon.smi_timeout_ms = core.cfg.gpu.smi_timeout_ms;
    mon.w = (watch){mon.rd, on_message, NULL};
    loop_add(&mon.w);
    /* signals stay with the loop thread (signalfd): the monitor blocks them all */
    int rc = thread_start(&mon.th, monitor, NULL);
    if (rc != 0) {
        log_err("gpu: health monitor: %s", strerror(rc));
        return;
    }
    mon.running = true;
    log_info("gpu: health monitor every %u ms, XID/ECC events through NVML", core.cfg.health_interval_ms);
    state_want(WANT_GPUS); /* a GPU that was waiting for its reset when joblet stopped */
}

void gpu_health_stop(void)
{
    if (!mon.running)
        return;
    pthread_mutex_lock(&mon.mu);
    mon.stop = true;
    pthread_mutex_unlock(&mon.mu);
    pthread_join(mon.th, NULL);
    mon.running = false;
}
