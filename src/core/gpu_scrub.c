/* Memory scrubbing between tenants (ADR-008 "Memory Sanitization"): a released GPU is cleared
 * of processes outside jobs that still hold its device node (a descriptor a job passed out) and
 * zeroed by joblet-gpu-scrub before it is handed out again. The helper runs outside the event
 * loop's thread as a child process; its pidfd tells the loop when it is done. Until then the GPU
 * is SCRUBBING; a failure (a root process holding it, memory not zeroed) leaves it DEGRADED with
 * the helper's reason, never AVAILABLE. Each holder it killed is a record of the audit trail. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "audit.h"
#include "gpu_mps.h"
#include "gpu_service.h"
#include "gpu_scrub.h"
#include "jobs.h"
#include "state.h"


typedef struct scrub_run {
    watch w;             /* the helper's pidfd */
    pid_t pid;
    int out_fd;          /* its stdout and stderr: one line per GPU, success or why not */
    uint64_t gpus;       /* bit i = GPU i */
    char released_by[64]; /* the job that released them */
    struct scrub_run *next;
} scrub_run;

static scrub_run *runs; /* the helpers running now */

/* "<uuid>: holder killed: pid P uid U cgroup PATH comm NAME" (the helper's line, printable, one
 * word each): an audit record for GPU i, with the job whose cgroup the process was in if it was
 * in one, else the job that released the GPU (whose descriptor it most likely was). */
static void record_holder(int i, const char *line, const char *released_by)
{
    int pid;
    unsigned uid;
    char cg[256], comm[64], needle[80];
    if (sscanf(line, "%*s holder killed: pid %d uid %u cgroup %255s comm %63s", &pid, &uid, cg, comm) != 4)
        return;
    /* a job's cgroup: <...>/<cgroup.root>/user-<uid>/<job id>[/...] (exec/cgroup.h) */
    char job_id[64] = "";
    snprintf(needle, sizeof needle, "/%s/user-", core.cfg.cgroup_root);
    const char *at = strstr(cg, needle);
    if (at && (at = strchr(at + strlen(needle), '/'))) {
        snprintf(job_id, sizeof job_id, "%.*s", (int)strcspn(at + 1, "/"), at + 1);
        if (!jobs_by_id(job_id))
            *job_id = 0;
    }
    char detail[640];
    snprintf(detail, sizeof detail,
             "killed pid %d (uid %u, %s) holding the device node of the GPU job %s released; cgroup %s%s%s", pid, uid,
             comm, released_by, cg, *job_id ? ", of job " : "", job_id);
    log_warn("gpu %d: %s", i, detail);
    audit_record("holder", uid, i, *job_id ? job_id : released_by, -1, -1, detail);
}

/* The GPUs the helpers are zeroing, as gpu_service.c keeps them. */
static void publish(void)
{
    uint64_t m = 0;
    for (const scrub_run *r = runs; r; r = r->next)
        m |= r->gpus;
    gpu_service_set_scrubbing(m);
}

static void on_scrub_exit(watch *w, uint32_t events)
{
    scrub_run *r = w->data;
    int st = 0;
    while (waitpid(r->pid, &st, 0) < 0 && errno == EINTR)
        ;
    /* The helper prints "<uuid>: scrubbed ..." for each GPU it zeroed and "<uuid>: <why>" for
     * each it could not; a GPU it says nothing about (it crashed) failed too. */
    static char out[65536]; /* (verdicts: one line a GPU; holder lines: 32 at most, scrub_main.c) */
    size_t len = 0;
    ssize_t n;
    while (len < sizeof out - 1 && (n = read(r->out_fd, out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = 0;
    const char *more = strstr(out, "joblet-gpu-scrub: more holders killed");
    if (more)
        log_warn("%.*s: the audit trail has a record of the first ones only", (int)strcspn(more, "\n"), more);
    /* what its holder scans cost, a line a GPU (scrub_main.c) */
    for (const char *p = out; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0)) {
        size_t l = strcspn(p, "\n");
        if (strncmp(p, "joblet-gpu-scrub: ", 18) == 0 && memmem(p, l, ": holder scan: ", 15))
            log_debug("%.*s", (int)l, p);
    }
    for (scrub_run **p = &runs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    publish();
    for (int i = 0; i < GPU_MAX; i++) {
        if (!(r->gpus >> i & 1))
            continue;
        const char *uuid = core.gpu.inv.gpu[i].uuid, *line = NULL;
        for (char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
            if (strncasecmp(p, uuid, strlen(uuid)) == 0 && p[strlen(uuid)] == ':') {
                if (strncmp(p + strlen(uuid), ": holder killed: ", 17) == 0)
                    record_holder(i, p, r->released_by);
                else
                    line = p; /* the verdict: the last other line */
            }
        bool ok = line && strncmp(line + strlen(uuid), ": scrubbed ", 11) == 0;
        if (ok) {
            int next = gpu_service_event(i, GE_SCRUB_OK, NULL);
            if (next == GS_AVAILABLE)
                log_info("gpu %d: memory scrubbed, available again", i);
            else
                log_info("gpu %d: memory scrubbed; it stays %s", i, gpu_state_name(gpu_service_get(i)->state));
            audit_record("scrub", -1, i, NULL, -1, core.gpu.inv.gpu[i].memory_total_mb, "memory zeroed");
            continue;
        }
        char why[256];
        if (line)
            snprintf(why, sizeof why, "memory scrub failed: %.*s", (int)strcspn(line, "\n"), line);
        else
            snprintf(why, sizeof why, "memory scrub failed: joblet-gpu-scrub %s %d",
                     WIFEXITED(st) ? "exited" : "was killed by signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        /* DEGRADED; a GPU resetting or offline stays so (gpu_state.c) */
        if (gpu_service_event(i, GE_SCRUB_FAIL, why) == GS_DEGRADED)
            log_err("gpu %d: %s; it stays DEGRADED until an admin brings it back", i, why);
        else
            log_err("gpu %d: %s; it stays %s", i, why, gpu_state_name(gpu_service_get(i)->state));
        audit_record("scrub", -1, i, NULL, -1, -1, why);
    }
    loop_del(w);
    close(w->fd);
    close(r->out_fd);
    free(r);
}

void gpu_scrub_start(uint64_t gpus, const char *released_by)
{
    const gpu_inventory *inv = &core.gpu.inv;
    if (!core.cfg.gpu.scrub || inv->simulated || !gpus)
        return;
    const char *argv[GPU_MAX + 5];
    static char args[GPU_MAX][800]; /* <uuid>:<minor>:<MPS pipe directory> (scrub_main.c) */
    int a = 0;
    argv[a++] = core.scrub_path;
    argv[a++] = "--libcuda";
    argv[a++] = core.cfg.gpu.libcuda;
    for (int i = 0; i < inv->n; i++)
        if (gpus >> i & 1) {
            char pipe_dir[600];
            gpu_mps_pipe_dir(i, pipe_dir, sizeof pipe_dir);
            if (inv->gpu[i].minor >= 0)
                snprintf(args[i], sizeof args[i], "%s:%d:%s", inv->gpu[i].uuid, inv->gpu[i].minor, pipe_dir);
            else
                snprintf(args[i], sizeof args[i], "%s", inv->gpu[i].uuid);
            argv[a++] = args[i];
        }
    argv[a] = NULL;
    pid_t pid;
    int pidfd, out;
    if (spawn_piped(core.scrub_path, (char *const *)argv, &pid, &pidfd, &out) < 0)
        goto failed;
    scrub_run *r = xcalloc(1, sizeof *r);
    *r = (scrub_run){{pidfd, on_scrub_exit, r}, pid, out, gpus, "", runs};
    snprintf(r->released_by, sizeof r->released_by, "%s", released_by);
    runs = r;
    publish();
    loop_add(&r->w);
    for (int i = 0; i < inv->n; i++)
        if (gpus >> i & 1)
            gpu_service_event(i, GE_SCRUB_START, NULL);
    return;
failed:;
    char why[256];
    snprintf(why, sizeof why, "memory scrub could not start: %s: %s", core.scrub_path, strerror(errno));
    for (int i = 0; i < inv->n; i++)
        if (gpus >> i & 1) {
            gpu_service_event(i, GE_SCRUB_FAIL, why);
            log_err("gpu %d: %s", i, why);
        }
}
