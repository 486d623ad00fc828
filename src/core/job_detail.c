/* What `rnx job status --detail` adds (job_detail.h): JSON at the API's and the database's
 * edges, built from the job, the GPU inventory and the spec it was started with. */
#include "job_detail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../exec/isolate.h"
#include "job_events.h"
#include "state.h"

/* Pairs listed one by one up to this many GPUs (28 pairs); beyond, the range only. */
#define DETAIL_PAIRS_MAX_GPUS 8

static json_t *score_or_null(long v) { return v >= 0 ? json_integer(v) : json_null(); }

static const char *strategy_name(int st)
{
    static const char *const names[] = {"topology", "pack", "spread"};
    return st >= 0 && st < 3 ? names[st] : "?";
}

static void save_extra(const job *j, enum db_job_extra which, json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT);
    jerr e = {0};
    if (!text || db_job_extra_set(core.db, j->id, which, text, &e) < 0)
        log_err("job %s: its %s is not recorded: %s", j->id, which == DB_JOB_SPEC ? "spec summary" : "placement",
                text ? e.msg : "out of memory");
    free(text);
}

/* "0" / "0,1" / "?" : the NUMA nodes of the job's GPUs, and the JSON list of them. */
static json_t *numa_nodes(const job *j, char *text, size_t len)
{
    const gpu_inventory *inv = &core.gpu.inv;
    json_t *a = json_array();
    uint64_t seen = 0;
    bool unknown = false;
    size_t l = 0;
    text[0] = 0;
    for (size_t k = 0; k < j->gpus.n; k++) {
        int i = j->gpus.g[k].index;
        int node = i >= 0 && i < inv->n ? inv->gpu[i].numa_node : -1;
        if (node < 0 || node >= 64) {
            unknown = true;
            continue;
        }
        if (seen >> node & 1)
            continue;
        seen |= 1ull << node;
        json_array_append_new(a, json_integer(node));
        l += (size_t)snprintf(text + l, l < len ? len - l : 0, "%s%d", l ? ", " : "", node);
    }
    if (unknown && !seen)
        snprintf(text, len, "unknown");
    return a;
}

void job_detail_placed(job *j, const job_placement_score *sc)
{
    const gpu_inventory *inv = &core.gpu.inv;
    json_t *o = json_object();
    char nodes[128], list[GPU_MAX * 4] = "";
    json_t *idx = json_array();
    for (size_t k = 0, l = 0; k < j->gpus.n; k++) {
        json_array_append_new(idx, json_integer(j->gpus.g[k].index));
        l += (size_t)snprintf(list + l, l < sizeof list ? sizeof list - l : 0, "%s%d", k ? ", " : "",
                              j->gpus.g[k].index);
    }
    json_object_set_new(o, "gpus", idx);
    json_object_set_new(o, "numa_nodes", numa_nodes(j, nodes, sizeof nodes));
    jx_set_time_or_null(o, "granted_at", j->gpu_granted_ms ? j->gpu_granted_ms : now_ms());
    const job_req *r = &j->req;
    if (j->gpu_mig && j->gpus.n) {
        const gpu_grant *g = &j->gpus.g[0];
        json_object_set_new(o, "mig", json_pack("{s:s,s:s,s:i}", "uuid", g->uuid, "profile", g->mig_profile, "gpu",
                                                g->index));
        save_extra(j, DB_JOB_PLACEMENT, o);
        json_decref(o);
        job_event(j, JE_GRANTED, -1, "MIG device %s (%s) of GPU %d, NUMA node %s", g->uuid, g->mig_profile, g->index,
                  nodes);
        return;
    }
    /* the interconnect between the GPUs it got, pair by pair */
    json_t *links = json_array();
    int nv_min = -1, nv_max = -1, lvl_worst = -1;
    size_t n = j->gpus.n;
    for (size_t a = 0; a < n; a++)
        for (size_t b = a + 1; b < n; b++) {
            int x = j->gpus.g[a].index, y = j->gpus.g[b].index;
            if (x < 0 || y < 0 || x >= inv->n || y >= inv->n)
                continue;
            int nv = inv->nvlink[x][y], lvl = inv->level[x][y];
            if (nv >= 0) {
                nv_min = nv_min < 0 || nv < nv_min ? nv : nv_min;
                nv_max = nv > nv_max ? nv : nv_max;
            }
            if (lvl > lvl_worst)
                lvl_worst = lvl;
            if (n <= DETAIL_PAIRS_MAX_GPUS)
                json_array_append_new(links, json_pack("{s:[i,i],s:o,s:o}", "gpus", x, y, "nvlinks",
                                                       nv >= 0 ? json_integer(nv) : json_null(), "pcie",
                                                       lvl >= 0 ? json_string(gpu_level_name(lvl)) : json_null()));
        }
    json_object_set_new(o, "links", links);
    json_object_set_new(o, "nvlinks_min", nv_min >= 0 ? json_integer(nv_min) : json_null());
    json_object_set_new(o, "nvlinks_max", nv_max >= 0 ? json_integer(nv_max) : json_null());
    json_object_set_new(o, "pcie_worst", lvl_worst >= 0 ? json_string(gpu_level_name(lvl_worst)) : json_null());
    json_object_set_new(o, "score", score_or_null(sc->score));
    json_object_set_new(o, "best", score_or_null(sc->best));
    json_object_set_new(o, "best_free", score_or_null(sc->best_free));
    json_object_set_new(o, "optimal", json_boolean(sc->score >= 0 && sc->score >= sc->best));
    json_object_set_new(o, "strategy", json_string(strategy_name((int)core.cfg.gpu.strategy)));
    json_object_set_new(o, "named", json_boolean(jobreq_has(r, JR_GPU_IDS)));
    json_object_set_new(o, "shared", json_boolean(r->gpu_share));
    json_object_set_new(o, "single_numa", json_boolean(jobreq_has(r, JR_CROSS_NUMA) && !r->cross_numa));
    save_extra(j, DB_JOB_PLACEMENT, o);
    json_decref(o);
    const char *shared = r->gpu_share ? ", shared (MPS)" : "";
    if (n > 1)
        job_event(j, JE_GRANTED, -1, "GPUs %s on NUMA node%s %s%s; score %ld of best possible %ld", list,
                  strchr(nodes, ',') ? "s" : "", nodes, shared, sc->score, sc->best);
    else
        job_event(j, JE_GRANTED, -1, "GPU %s on NUMA node %s%s", list, nodes, shared);
}

/* ---- the spec summary ---- */

static json_t *mount_json(const char *dst, const char *src, const char *mode)
{
    return json_pack("{s:s,s:s,s:s}", "path", dst, "source", src, "mode", mode);
}

void job_detail_cgroup(const job *j, cg_host *uh, cg_job *cg)
{
    cg_given g;
    jerr e = {0};
    if (j->slurm.set && j->init_pid > 0 && cg_given_of_pid(&core.cg, (pid_t)j->init_pid, &g) == 0 &&
        cg_job_given(&core.cg, j->id, &g, cg, &e) == 0)
        return;
    cg_user_job_paths(&core.cg, (uint32_t)j->owner_uid, j->id, uh, cg);
}

uid_t job_detail_sandbox_uid(const job *j)
{
    char *text = db_job_extra_get(core.db, j->id, DB_JOB_SPEC);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    json_int_t v = json_integer_value(json_object_get(o, "sandbox_uid"));
    json_decref(o);
    free(text);
    return v > 0 && v < UINT32_MAX ? (uid_t)v : 0;
}

void job_detail_spec(const job *j, const job_spec *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "uid", json_integer(s->uid));
    json_object_set_new(o, "gid", json_integer(s->gid));
    /* gVisor: the host uid its sandbox runs as (exec/oci.h); read back after a restart */
    json_object_set_new(o, "sandbox_uid", s->runsc ? json_integer(s->runsc_sandbox_uid) : json_null());
    jx_set_str_or_null(o, "hostname", s->hostname);
    jx_set_str_or_null(o, "workdir", s->workdir);
    json_object_set_new(o, "network", json_string(s->net_host ? "host" : "none (loopback only)"));
    json_object_set_new(o, "root", s->system_root && *s->system_root ? json_string(s->system_root) : json_null());
    /* device nodes: the standard ones, then what the GPU grant adds (each checked against the
     * host node's numbers when the job starts) */
    json_t *devs = json_array();
    for (size_t i = 0; mounts_dev_nodes[i]; i++)
        json_array_append_new(devs, json_pack("{s:s,s:b}", "path", mounts_dev_nodes[i], "standard", 1));
    json_array_append_new(devs, json_pack("{s:s,s:b}", "path", "/dev/pts/*", "standard", 1));
    for (size_t i = 0; i < s->nops; i++)
        if (s->ops[i].kind == SPEC_DEVNODE)
            json_array_append_new(devs, json_pack("{s:s,s:s,s:i,s:i,s:b}", "path", s->ops[i].dst, "host",
                                                  s->ops[i].src ? s->ops[i].src : "", "major", (int)s->ops[i].major,
                                                  "minor", (int)s->ops[i].minor, "standard", 0));
    json_object_set_new(o, "devices", devs);
    /* mounts, in the order the job's root is built */
    json_t *m = json_array();
    bool rt = s->system_root && *s->system_root;
    for (size_t i = 0; mounts_system_dirs[i]; i++) {
        char src[4200];
        snprintf(src, sizeof src, "%s%s", rt ? s->system_root : "", mounts_system_dirs[i]);
        if (access(src, F_OK) == 0)
            json_array_append_new(m, mount_json(mounts_system_dirs[i], src, "ro"));
    }
    json_array_append_new(m, mount_json("/work", s->work_dir ? s->work_dir : "", "rw"));
    char size[64];
    snprintf(size, sizeof size, "tmpfs, %llu MB", (unsigned long long)s->tmp_size_mb);
    json_array_append_new(m, mount_json("/tmp", size, "rw"));
    json_array_append_new(m, mount_json("/proc", "proc", "rw"));
    json_array_append_new(m, mount_json("/sys", "sysfs", "ro"));
    json_array_append_new(m, mount_json("/dev/shm", "tmpfs", "rw"));
    for (size_t i = 0; i < s->nmounts; i++)
        json_array_append_new(m, mount_json(s->mounts[i].dst, s->mounts[i].src, s->mounts[i].rw ? "rw" : "ro"));
    for (size_t i = 0; i < s->nops; i++)
        if (s->ops[i].kind == SPEC_TMPFS)
            json_array_append_new(m, mount_json(s->ops[i].dst, "tmpfs, the job's GPUs only", "ro"));
    json_object_set_new(o, "mounts", m);
    /* the environment's names; values stay in the spec (secret ones are never shown) */
    json_t *env = json_array(), *secret = json_array();
    for (char **p = s->env; p && *p; p++) {
        const char *eq = strchr(*p, '=');
        size_t l = eq ? (size_t)(eq - *p) : strlen(*p);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(l < sizeof name ? l : sizeof name - 1), *p);
        json_array_append_new(jobreq_env_get(&j->req, true, name) ? secret : env, json_string(name));
    }
    json_object_set_new(o, "env", env);
    json_object_set_new(o, "secret_env", secret);
    const cg_limits *L = &s->limits;
    json_t *lim = json_object();
    json_object_set_new(lim, "cpu_pct", L->cpu_pct ? json_integer(L->cpu_pct) : json_null());
    json_object_set_new(lim, "memory_bytes", L->mem_bytes ? json_integer((json_int_t)L->mem_bytes) : json_null());
    json_object_set_new(lim, "pids_max", L->pids_max ? json_integer((json_int_t)L->pids_max) : json_null());
    json_object_set_new(lim, "io_bps", L->io_bps ? json_integer((json_int_t)L->io_bps) : json_null());
    jx_set_str_or_null(lim, "io_device", L->io_bps && *L->io_dev ? L->io_dev : NULL);
    jx_set_str_or_null(lim, "cpus", *L->cpus ? L->cpus : NULL);
    jx_set_str_or_null(lim, "mems", *L->mems ? L->mems : NULL);
    json_object_set_new(lim, "max_runtime_s", s->max_runtime_s ? json_integer((json_int_t)s->max_runtime_s) : json_null());
    json_object_set_new(lim, "stop_grace_s", json_integer((json_int_t)s->stop_grace_s));
    json_object_set_new(lim, "log_max_bytes", s->log_max_bytes ? json_integer((json_int_t)s->log_max_bytes) : json_null());
    json_object_set_new(o, "limits", lim);
    json_object_set_new(o, "rlimits", json_pack("{s:o}", "nproc", s->user_procs_max ? json_integer((json_int_t)s->user_procs_max)
                                                                                      : json_null()));
    cg_host uh;
    cg_job cg;
    jerr ge = {0};
    /* a Slurm task's: Slurm's memory cgroup of the task (where its limits are), else joblet's */
    if (!s->cgroup_given || cg_job_given(&core.cg, j->id, s->cgroup_given, &cg, &ge) < 0)
        cg_user_job_paths(&core.cg, (uint32_t)j->owner_uid, j->id, &uh, &cg);
    else if (cg.v1_path[CGC_MEMORY][0])
        snprintf(cg.unified_path, sizeof cg.unified_path, "%s", cg.v1_path[CGC_MEMORY]);
    json_object_set_new(o, "user_tasks_max", s->user_tasks_max ? json_integer((json_int_t)s->user_tasks_max)
                                                                : json_null());
    jx_set_str_or_null(o, "cgroup", *cg.unified_path ? cg.unified_path : NULL);
    save_extra(j, DB_JOB_SPEC, o);
    json_decref(o);
}
