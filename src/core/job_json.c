#include <stdio.h>
#include <string.h>

#include "../common/jsonx.h"
#include "../common/util.h"
#include "job_json.h"
#include "arrays.h"
#include "job_ctl.h"
#include "job_freeze.h"
#include "gpu_spec.h"
#include "jobs.h"
#include "depend.h"
#include "job_launch.h"
#include "queue.h"
#include "state.h"
#include "workflow.h"
#include "workfs.h"

static json_t *int_or_null(const job_req *r, enum jobreq_id f, int64_t v)
{
    return jobreq_has(r, f) ? json_integer(v) : json_null();
}

/* The request's limits (the table's fields with a limit label), null where not set. */
static json_t *limits_json(const job_req *r)
{
    json_t *l = json_object();
    for (int i = 0; i < JR_N; i++) {
        const jobreq_field *f = &jobreq_fields[i];
        if (!f->limit)
            continue;
        const char *text = f->kind == JK_TEXT ? *(char *const *)((const char *)r + f->off) : NULL;
        json_object_set_new(l, f->key, f->kind == JK_INT ? int_or_null(r, (enum jobreq_id)i,
                                                                        *(const int64_t *)((const char *)r + f->off))
                                       : text ? json_string(text) : json_null());
    }
    return l;
}

/* A field of the request as the API shows it (secrets masked), or dflt when not given. */
static json_t *field_or(const job_req *r, enum jobreq_id f, json_t *dflt)
{
    if (!jobreq_has(r, f))
        return dflt;
    json_decref(dflt);
    job_req one = *r;
    one.has = 1ull << f;
    json_t *o = jobreq_to_json(&one, 0);
    json_t *v = json_incref(json_object_get(o, jobreq_fields[f].key));
    json_decref(o);
    return v;
}

/* Where a GPU job's GPUs are and what CPUs it runs on: the NUMA nodes and CPU lists the
 * inventory gives for its GPUs, and what it is pinned to on this host (null: not pinned, and
 * why). NULL for a job without GPUs. */
static json_t *gpu_locality_json(const job *j)
{
    if (!j->gpus.n)
        return NULL;
    json_t *nodes = json_array(), *o = json_object();
    char gpu_cpus[1024] = "";
    bool known = true;
    uint64_t seen = 0;
    for (size_t i = 0; i < j->gpus.n; i++) {
        const gpu_grant *gr = &j->gpus.g[i];
        int k = gpu_find(&core.gpu.inv, *gr->parent_uuid ? gr->parent_uuid : gr->uuid);
        if (k < 0 || core.gpu.inv.gpu[k].numa_node < 0 || !*core.gpu.inv.gpu[k].local_cpus) {
            known = false;
            continue;
        }
        int node = core.gpu.inv.gpu[k].numa_node;
        if (node < 64 && !(seen >> node & 1)) {
            seen |= 1ull << node;
            json_array_append_new(nodes, json_integer(node));
            size_t l = strlen(gpu_cpus);
            snprintf(gpu_cpus + l, sizeof gpu_cpus - l, "%s%s", l ? "," : "", core.gpu.inv.gpu[k].local_cpus);
        }
    }
    json_object_set_new(o, "numa_nodes", known ? nodes : (json_decref(nodes), json_null()));
    json_object_set_new(o, "gpu_cpus", known && *gpu_cpus ? json_string(gpu_cpus) : json_null());
    char cpus[256] = "", mems[64] = "";
    const char *why = NULL;
    if (j->req.cpu_cores) {
        snprintf(cpus, sizeof cpus, "%s", j->req.cpu_cores);
        why = "--cpu-cores";
    } else if (j->gpus.g[0].simulated) {
        why = "simulated GPUs: their CPU lists describe another machine, so the job is not pinned";
    } else {
        gpu_spec_locality(j, cpus, sizeof cpus, mems, sizeof mems);
        if (!*cpus)
            why = known ? "none of its GPUs' CPUs is online on this host" : "the GPUs' locality is unknown";
        else
            why = "the CPUs and memory of its GPUs' NUMA nodes";
    }
    json_object_set_new(o, "cpus", *cpus ? json_string(cpus) : json_null());
    json_object_set_new(o, "mems", *mems ? json_string(mems) : json_null());
    json_object_set_new(o, "pinning", json_string(why));
    return o;
}

json_t *job_json_after(const job_req *r, const uint64_t *after_seq)
{
    json_t *after = json_array();
    for (size_t k = 0; k < r->nafter; k++) {
        const char *st = depend_on_state_req(r, after_seq, k);
        json_array_append_new(after, json_pack("{s:s,s:s,s:o}", "job", r->after[k].job, "state",
                                               jobreq_after_state_name(r->after[k].state), "job_state",
                                               st ? json_string(st) : json_null()));
    }
    return after;
}

/* Whether a key is asked for (job_json_pick's keys), and setting it only then: its value is
 * not even made otherwise. */
#define WANT(k) ((keys >> JOB_KEY_##k) & 1)
#define SET(k, v)                                                                                    \
    do {                                                                                             \
        if (WANT(k))                                                                                 \
            json_object_set_new(o, #k, (v));                                                         \
    } while (0)

static const char *const key_names[] = {
#define JOB_KEY_NAME(k) #k,
    JOB_JSON_KEYS(JOB_KEY_NAME)
#undef JOB_KEY_NAME
};

int job_json_key(const char *name, size_t len)
{
    for (size_t i = 0; i < ARRAY_LEN(key_names); i++)
        if (strlen(key_names[i]) == len && !memcmp(key_names[i], name, len))
            return (int)i;
    return -1;
}

void job_json_key_list(char *out, size_t outlen)
{
    size_t l = 0;
    out[0] = 0;
    for (size_t i = 0; i < ARRAY_LEN(key_names) && l < outlen; i++)
        l += (size_t)snprintf(out + l, outlen - l, "%s%s", i ? ", " : "", key_names[i]);
}

void job_json_keep(json_t *o, uint64_t keys)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, k, v) {
        int i = job_json_key(k, strlen(k));
        (void)v;
        if (i < 0 || !(keys >> i & 1))
            json_object_del(o, k);
    }
}

json_t *job_json(const job *j)
{
    return job_json_pick(j, JOB_JSON_ALL);
}

json_t *job_json_pick(const job *j, uint64_t keys)
{
    json_t *o = json_object();
    const job_req *r = &j->req;
    SET(id, json_string(j->id));
    /* its number, never given twice: SLURM_JOB_ID in a job with Slurm's variables */
    SET(number, json_integer((json_int_t)j->seq));
    if (WANT(name))
        jx_set_str_or_null(o, "name", j->name);
    SET(status, json_string(job_state_name(j->state)));
    SET(owner_uid, json_integer(j->owner_uid));
    SET(uid, json_integer(j->uid));
    SET(gid, json_integer(j->gid));
    if (WANT(command))
        jx_set_str_or_null(o, "command", r->command);
    SET(args, field_or(r, JR_ARGS, json_array()));
    SET(env, field_or(r, JR_ENV, json_object()));
    SET(secret_env, field_or(r, JR_SECRET_ENV, json_object()));
    SET(workdir, json_string(r->workdir ? r->workdir : "/work"));
    SET(network, json_string(r->network ? r->network : "none"));
    /* jobs from before isolation existed ran natively */
    SET(isolation, json_string(r->isolation ? r->isolation : "native"));
    SET(tty, json_boolean(r->tty));               /* a terminal: rnx job attach needs to know */
    SET(stdin, json_boolean(r->stdin_open));
    SET(slurm_env, json_boolean(r->slurm_env)); /* SLURM_JOB_ID... (exec/spec_build.c) */
    if (WANT(runtime))
        jx_set_str_or_null(o, "runtime", r->runtime);
    SET(volumes, field_or(r, JR_VOLUMES, json_array()));
    char host[64];
    if (WANT(hostname))
        snprintf(host, sizeof host, "job-%.8s", j->id);
    SET(hostname, json_string(host));
    SET(limits, limits_json(r));
    SET(uploads, field_or(r, JR_UPLOADS, json_array()));
    if (WANT(created_at))
        jx_set_time_or_null(o, "created_at", j->created_ms);
    if (WANT(scheduled_at))
        jx_set_time_or_null(o, "scheduled_at", j->scheduled_ms);
    if (WANT(started_at))
        jx_set_time_or_null(o, "started_at", j->started_ms);
    if (WANT(ended_at))
        jx_set_time_or_null(o, "ended_at", j->ended_ms);
    SET(exit_code, j->has_exit ? json_integer(j->exit_code) : json_null());
    SET(signal, j->signal ? json_integer(j->signal) : json_null());
    if (WANT(signal_name))
        jx_set_str_or_null(o, "signal_name", j->signal_name);
    if (WANT(end_reason))
        jx_set_str_or_null(o, "end_reason", j->end_reason);
    SET(stopped_by, j->stopped_by >= 0 ? json_integer(j->stopped_by) : json_null());
    if (WANT(error))
        jx_set_str_or_null(o, "error", j->error);
    /* which GPU failed it, the XID or the admin's command, and by whom (end_reason gpu_error) */
    json_t *fault = WANT(gpu_fault) ? gpu_fault_to_json(&j->gpu_fault) : NULL;
    SET(gpu_fault, fault ? fault : json_null());
    SET(pid, j->init_pid > 0 ? json_integer(j->init_pid) : json_null());
    SET(shim_pid, j->shim_pid > 0 ? json_integer(j->shim_pid) : json_null());
    uint32_t pos = job_in_queue(j) && j->state != JS_SCHEDULED ? j->queue_position : 0;
    SET(priority, json_integer(r->priority));
    SET(queue_position, pos ? json_integer(pos) : json_null());
    char why[600] = "";
    if (!WANT(wait_reason) && !WANT(freezing))
        ; /* (neither asked for: job_json_pick) */
    else if (job_in_queue(j) && j->state != JS_SCHEDULED)
        queue_wait_reason(j, why, sizeof why);
    else if (j->state == JS_QUEUED && j->shim_pid > 0 && (r->tty || r->stdin_open))
        snprintf(why, sizeof why, "its command starts once a client attaches to its terminal (POST "
                 "/v1/jobs/{id}/attach; rnx job run -it attaches at once), or after %llu s (jobs.attach_wait_s)",
                 (unsigned long long)core.cfg.attach_wait_s);
    else if (j->state == JS_HELD || j->state == JS_SUSPENDED)
        job_ctl_reason(j, why, sizeof why);
    else if (j->state == JS_PENDING && (r->nafter || r->singleton))
        depend_describe(j, why, sizeof why);
    bool want = false, freezing = j->state == JS_SUSPENDED && job_freeze_pending(j, &want) && want;
    if (freezing) {
        size_t n = strlen(why);
        snprintf(why + n, sizeof why - n, "; still freezing: a process of it cannot stop yet");
    }
    SET(after, job_json_after(r, j->after_seq));
    SET(after_any, json_boolean(r->after_any)); /* any one of them is enough */
    SET(preemptions, json_integer(j->preemptions));
    /* STOPPING to go back to the queue (rnx job requeue, a preemption), not to end */
    SET(requeuing, json_boolean(job_ctl_requeuing(j)));
    /* its run's time SUSPENDED in all, the suspension now included: not counted against its
     * time limit */
    SET(suspended_ms, json_integer(job_ctl_suspended_ms(j)));
    /* SUSPENDED, and the kernel has not frozen every process yet (job_freeze.h) */
    SET(freezing, json_boolean(freezing));
    /* a Slurm task (slurm_task.h): its ids as Slurm has them, and "J.S.T" as rnx shows them */
    json_t *sl = WANT(slurm) ? slurmcg_to_json(&j->slurm) : NULL;
    if (sl) {
        char t[64];
        slurmcg_text(&j->slurm, t, sizeof t);
        json_object_set_new(sl, "id", json_string(t));
    }
    SET(slurm, sl ? sl : json_null());
    SET(workflow, j->wf ? json_pack("{s:s,s:O?,s:o?}", "id", j->wf->id, "name",
                                                         json_object_get(j->wf->doc, "name"), "job",
                                                         r->name ? json_string(r->name) : NULL)
                                             : json_null());
    /* a job array's task (arrays.h): its array and task id, and the name rnx shows, ID_TASK */
    if (!WANT(array))
        ;
    else if (j->array_id[0]) {
        char ref[64];
        snprintf(ref, sizeof ref, "%.8s_%lld", j->array_id, (long long)j->array_task);
        json_t *ta = json_pack("{s:s,s:I,s:s}", "id", j->array_id, "task", (json_int_t)j->array_task, "ref", ref);
        if (j->array) /* the array's number: SLURM_ARRAY_JOB_ID */
            json_object_set_new(ta, "number", json_integer((json_int_t)j->array->seq));
        json_object_set_new(o, "array", ta);
    } else
        json_object_set_new(o, "array", json_null());
    SET(preemptible, json_boolean(r->preemptible));
    SET(wait_reason, *why ? json_string(why) : json_null());
    job_usage u = j->usage;
    if (WANT(usage) && (j->state == JS_RUNNING || j->state == JS_STOPPING || j->state == JS_SUSPENDED))
        job_launch_live_usage(j, &u);
    SET(usage, json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "cpu_ns", (json_int_t)u.cpu_ns,
                                              "memory_peak_bytes", (json_int_t)u.memory_peak_bytes,
                                              "io_read_bytes", (json_int_t)u.io_read_bytes, "io_write_bytes",
                                              (json_int_t)u.io_write_bytes, "pids_current",
                                              (json_int_t)u.pids_current, "gpu_ms_before",
                                              (json_int_t)u.gpu_ms_before));
    /* /work's bound, shared by the owner's jobs (workfs.h), and what they use of it now */
    char dir[700];
    uint64_t wsize = 0, wused = 0;
    if (WANT(work)) { /* (a stat and a statfs: not for a listing that leaves it out) */
        jobs_dir_of(j, dir, sizeof dir);
        workfs_usage(j->owner_uid, dir, &wsize, &wused);
    }
    SET(work, wsize ? json_pack("{s:I,s:I}", "quota_bytes", (json_int_t)wsize, "used_bytes",
                                                     (json_int_t)wused)
                                         : json_null());
    SET(gpus, grant_list_to_json(&j->gpus));
    json_t *loc = WANT(gpu_locality) ? gpu_locality_json(j) : NULL;
    SET(gpu_locality, loc ? loc : json_null());
    if (!WANT(gpu_request))
        return o;
    json_t *gr = json_object();
    json_object_set_new(gr, "count", int_or_null(r, JR_GPU_COUNT, r->gpu_count));
    json_object_set_new(gr, "memory_mb", int_or_null(r, JR_GPU_MEMORY_MB, r->gpu_memory_mb));
    json_object_set_new(gr, "ids", field_or(r, JR_GPU_IDS, json_null()));
    json_object_set_new(gr, "all", json_boolean(r->gpu_all));
    jx_set_str_or_null(gr, "caps", r->gpu_caps);
    json_object_set_new(gr, "optional", json_boolean(r->gpu_optional));
    jx_set_str_or_null(gr, "degraded", r->gpu_degraded);
    jx_set_str_or_null(gr, "mig", r->gpu_mig);
    jx_set_str_or_null(gr, "type", r->gpu_type);
    jx_set_str_or_null(gr, "cc", r->gpu_cc);
    json_object_set_new(gr, "share", json_boolean(r->gpu_share));
    json_object_set_new(gr, "cross_numa", json_boolean(!jobreq_has(r, JR_CROSS_NUMA) || r->cross_numa));
    SET(gpu_request, gr);
    return o;
}
