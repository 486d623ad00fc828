/* The spec builder (spec_build.h): a job's spec from an explicit context. The environment is
 * built from nothing (the caller's own variables never leak in); limits, binds, device rules
 * and the gVisor fields come from the request, the grants and the context alone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/parse.h"
#include "../common/util.h"
#include "spec_build.h"

/* A job's host name: job- and its id's first 8 characters. */
static void job_hostname(const char *id, char *out, size_t len)
{
    snprintf(out, len, "job-%.8s", id);
}

static void add_env(char ***env, size_t *n, const char *k, const char *v)
{
    *env = xrealloc(*env, (*n + 2) * sizeof **env);
    size_t l = strlen(k) + strlen(v) + 2;
    (*env)[*n] = xmalloc(l);
    snprintf((*env)[*n], l, "%s=%s", k, v);
    (*env)[++*n] = NULL;
}

/* PATH and LD_LIBRARY_PATH: the job's own (or the default) with the GPU directories appended,
 * and first what joblet puts before it (srun's directory in a job with Slurm's variables). */
static void add_path_env(const job_req *r, const char *key, const char *dflt, const char *first, const char *extra,
                         char ***env, size_t *n)
{
    /* the job's own value, plain or secret (a name is one or the other: common/jobreq.c) */
    const char *mine = jobreq_env_get(r, false, key);
    if (!mine)
        mine = jobreq_env_get(r, true, key);
    const char *base = mine ? mine : dflt;
    if (!*extra && !*first && !mine && !*dflt)
        return;
    const char *part[] = {first, base, extra};
    char *v = xmalloc(strlen(first) + strlen(base) + strlen(extra) + 3);
    v[0] = 0;
    for (size_t i = 0; i < ARRAY_LEN(part); i++) /* the parts that are not empty, joined by ':' */
        if (*part[i])
            strcat(strcat(v, *v ? ":" : ""), part[i]);
    add_env(env, n, key, v);
    free(v);
}

/* How many CPUs the job really has, or -1 when the context cannot say (no machine given): those
 * of its cpuset (its --cpu-cores, else its GPUs' NUMA CPUs, else every CPU the machine has
 * online), at most its --max-cpu in whole CPUs (a quota of a CPU and a half keeps two busy). The
 * cpuset is what the shim writes (spec_build below), so this is what the job can count itself. */
static long long slurm_env_cpus(const spec_ctx *c, const spec_gpu *gs)
{
    const job_req *r = c->req;
    const char *set = r->cpu_cores ? r->cpu_cores : gs->cpus;
    const uint8_t *online = c->gpu.online_cpus;
    uint8_t mask[CPU_MAX / 8] = {0}; /* (none at all: the context cannot say) */
    jerr e = {0};
    if (!*set && online)
        memcpy(mask, online, sizeof mask);
    else if (*set && parse_cpu_list("cpus", set, mask, &e) < 0)
        memset(mask, 0, sizeof mask);
    else if (*set && online)
        for (size_t b = 0; b < sizeof mask; b++)
            mask[b] &= online[b];
    long long n = 0;
    for (size_t b = 0; b < sizeof mask; b++)
        n += __builtin_popcount(mask[b]);
    long long quota = r->max_cpu > 0 ? (r->max_cpu + 99) / 100 : -1;
    if (quota > 0 && (n <= 0 || quota < n))
        n = quota;
    return n > 0 ? n : -1;
}

/* What sbatch tells a job of itself (the request's slurm_env), from its request as it is when it
 * starts (rnx job update may have changed it): its id, name, the CPUs, memory and GPUs it has,
 * one node (its host name), and where it was submitted from (its uploads are in /work). Not
 * SLURM_NTASKS: with it, frameworks (PyTorch Lightning) take the job for one of srun's tasks and
 * look for SLURM_PROCID and the rest (joblet's srun sets those for its step: slurm/srun_main.c).
 * A variable the job's own environment names is left to it.
 *
 * The resources are what the job really has, however it came to have them, as Slurm tells a
 * job the allocation it got whether asked for or the partition's default: joblet-srun checks a
 * step against them. SLURM_CPUS_ON_NODE and SLURM_JOB_CPUS_PER_NODE are always there (every
 * Slurm job has CPUs), SLURM_CPUS_PER_TASK only when the job asked for CPUs (Slurm sets it for
 * -c alone, and scripts read ${SLURM_CPUS_PER_TASK:-1}), both the CPUs it has (slurm_env_cpus).
 * SLURM_MEM_PER_NODE is its memory limit, its own or jobs.default_memory_percent's; a job with
 * no limit at all (default_memory_percent 0) has none, as a Slurm job has none where memory is
 * not a resource the cluster allots. SLURM_GPUS and SLURM_GPUS_ON_NODE are the GPUs it was
 * granted, by whichever of its requests. */
static void slurm_env(const spec_ctx *c, const spec_gpu *gs, char ***env, size_t *n)
{
    const job_req *r = c->req;
    char cpus[24] = "", task_cpus[24] = "", mem[24] = "", gpus[24] = "", host[16], num[24] = "";
    job_hostname(c->id, host, sizeof host);
    /* Slurm's ids are numbers, and scripts count on it (MASTER_PORT=$((10000 + SLURM_JOB_ID %
     * 50000))): the job's number, never given twice (JOB_ID keeps joblet's id) */
    if (c->number)
        snprintf(num, sizeof num, "%llu", (unsigned long long)c->number);
    long long ncpus = slurm_env_cpus(c, gs);
    if (ncpus > 0)
        snprintf(cpus, sizeof cpus, "%lld", ncpus);
    if (r->max_cpu > 0 || r->cpu_cores)
        snprintf(task_cpus, sizeof task_cpus, "%s", cpus);
    if (r->max_memory_mb > 0)
        snprintf(mem, sizeof mem, "%lld", (long long)r->max_memory_mb);
    if (c->gpus && c->gpus->n)
        snprintf(gpus, sizeof gpus, "%zu", c->gpus->n);
    const char *vars[][2] = {
        {"SLURM_JOB_ID", num},           {"SLURM_JOBID", num},        {"SLURM_JOB_NAME", r->name ? r->name : ""},
        {"SLURM_SUBMIT_DIR", "/work"},   {"SLURM_NNODES", "1"},         {"SLURM_JOB_NUM_NODES", "1"},
        {"SLURM_CPUS_ON_NODE", cpus},    {"SLURM_JOB_CPUS_PER_NODE", cpus}, {"SLURM_CPUS_PER_TASK", task_cpus},
        {"SLURM_MEM_PER_NODE", mem},     {"SLURM_GPUS", gpus},          {"SLURM_GPUS_ON_NODE", gpus},
        {"SLURM_JOB_NODELIST", host},    {"SLURM_NODELIST", host},      {"SLURMD_NODENAME", host},
    };
    for (size_t i = 0; i < ARRAY_LEN(vars); i++)
        if (*vars[i][1] && !jobreq_env_get(r, false, vars[i][0]) && !jobreq_env_get(r, true, vars[i][0]))
            add_env(env, n, vars[i][0], vars[i][1]);
}

/* The job's environment, from nothing: the runtime's variables, the defaults, PATH and
 * LD_LIBRARY_PATH, JOB_ID, the GPU's variables, then the job's own and its secrets. */
static char **job_env(const spec_ctx *c, const spec_gpu *gs)
{
    char **env = xcalloc(1, sizeof *env);
    size_t n = 0;
    const job_req *r = c->req;
    /* the runtime's variables first; the job's own of the same name win */
    for (size_t i = 0; i < c->nruntime_env; i++) {
        const jobreq_pair *p = &c->runtime_env[i];
        if (!jobreq_env_get(r, false, p->name) && !jobreq_env_get(r, true, p->name) && strcmp(p->name, "PATH") &&
            strcmp(p->name, "LD_LIBRARY_PATH"))
            add_env(&env, &n, p->name, p->value);
    }
    static const char *const defaults[][2] = {{"HOME", "/work"}, {"LANG", "C.UTF-8"}};
    for (size_t i = 0; i < ARRAY_LEN(defaults); i++)
        if (!jobreq_env_get(r, false, defaults[i][0]) && !jobreq_env_get(r, true, defaults[i][0]))
            add_env(&env, &n, defaults[i][0], defaults[i][1]);
    /* a secret PATH is extended as a plain one is (the toolkit's bin a GPU job gets, srun's dir) */
    add_path_env(r, "PATH", SPEC_BUILD_DEFAULT_PATH, r->slurm_env && c->srun ? SPEC_BUILD_SRUN_DIR : "",
                 gs->path_add, &env, &n);
    add_path_env(r, "LD_LIBRARY_PATH", "", "", gs->ld_add, &env, &n);
    /* a terminal's type, as docker run -t gives it, unless the job names its own */
    if (r->tty && !jobreq_env_get(r, false, "TERM") && !jobreq_env_get(r, true, "TERM"))
        add_env(&env, &n, "TERM", "xterm");
    add_env(&env, &n, "JOB_ID", c->id);
    if (r->slurm_env)
        slurm_env(c, gs, &env, &n);
    for (size_t i = 0; i < c->ngiven_env; i++)
        if (!jobreq_env_get(r, false, c->given_env[i].name) && !jobreq_env_get(r, true, c->given_env[i].name))
            add_env(&env, &n, c->given_env[i].name, c->given_env[i].value);
    for (size_t i = 0; i < gs->nenv; i++)
        add_env(&env, &n, gs->env[i].name, gs->env[i].value);
    for (size_t i = 0; i < r->nenv; i++) {
        const char *name = r->env[i].name;
        if (!strcmp(name, "PATH") || !strcmp(name, "LD_LIBRARY_PATH"))
            continue;
        /* NVIDIA's two variables were read as the request (common/jobreq.c): the job sees what
         * it got, the GPU spec's values, or "void" when it got none (a --gpu-optional job run
         * without) unless what was given says so already */
        bool nvidia = !strcmp(name, "NVIDIA_VISIBLE_DEVICES") || !strcmp(name, "NVIDIA_DRIVER_CAPABILITIES");
        if (nvidia && c->gpus->n)
            continue;
        const char *v = r->env[i].value;
        bool none = !*v || !strcmp(v, "void") || !strcmp(v, "none");
        add_env(&env, &n, name, nvidia && !strcmp(name, "NVIDIA_VISIBLE_DEVICES") && !none ? "void" : v);
    }
    for (size_t i = 0; i < r->nsecret_env; i++)
        if (strcmp(r->secret_env[i].name, "PATH") && strcmp(r->secret_env[i].name, "LD_LIBRARY_PATH"))
            add_env(&env, &n, r->secret_env[i].name, r->secret_env[i].value);
    return env;
}

static char **job_argv(const job_req *r)
{
    char **argv = xcalloc(r->nargs + 2, sizeof *argv);
    argv[0] = xstrdup(r->command);
    for (size_t i = 0; i < r->nargs; i++)
        argv[i + 1] = xstrdup(r->args[i]);
    return argv;
}

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

/* gVisor: the shim renders the spec as an OCI bundle for runsc (exec/gvisor.h). */
static int add_gvisor(const spec_ctx *c, job_spec *s, jerr *e)
{
    const spec_gvisor *gv = &c->gvisor;
    if (s->tty || s->stdin_open) /* (refused at submission: core/isolation.c) */
        return jerr_field(e, s->tty ? "tty" : "stdin", "%s: a terminal is made by joblet's own init, which a gVisor "
                          "job does not have", s->tty ? "tty" : "stdin");
    s->runsc = dup_or_null(gv->runsc);
    s->runsc_root = dup_or_null(gv->root);
    s->runsc_platform = dup_or_null(gv->platform);
    s->runsc_nvproxy = c->gpus->n > 0 && gv->nvproxy;
    s->runsc_sandbox_uid = c->sandbox_uid;
    /* the granted GPUs by their CDI names (joblet cdi generate names each by UUID) */
    char cdi[2048] = "";
    size_t n = 0;
    for (size_t i = 0; i < c->gpus->n && n < sizeof cdi; i++)
        n += (size_t)snprintf(cdi + n, sizeof cdi - n, "%snvidia.com/gpu=%s", i ? "," : "", c->gpus->g[i].uuid);
    s->cdi_devices = cdi[0] ? xstrdup(cdi) : NULL;
    /* the kvm platform: the sandbox (in the job's cgroup) opens /dev/kvm */
    if (gv->platform && !strcmp(gv->platform, "kvm")) {
        s->devices = xrealloc(s->devices, (s->ndevices + 1) * sizeof *s->devices);
        s->devices[s->ndevices++] = (cg_dev_rule){'c', 10, 232, "rw"};
    }
    if (!gv->available)
        return jerr_set(e, ENOENT, "the job asks for gVisor, which this machine no longer has: %s",
                        gv->why ? gv->why : "");
    return 0;
}

int spec_build(const spec_ctx *c, job_spec *out, jerr *e)
{
    const job_req *r = c->req;
    job_spec *s = out;
    spec_gpu g;
    memset(s, 0, sizeof *s);
    if (spec_gpu_build(c->id, r, c->gpus, &c->gpu, &g, e) < 0)
        return -1;
    snprintf(s->id, sizeof s->id, "%s", c->id);
    char host[64];
    job_hostname(c->id, host, sizeof host);
    s->job_dir = xstrdup(c->job_dir);
    s->work_dir = xstrdup(c->work_dir);
    s->work_copy_from = dup_or_null(c->work_copy_from);
    s->root_mount = xstrdup(c->root_mount);
    s->hostname = xstrdup(host);
    s->system_root = dup_or_null(c->system_root);
    s->argv = job_argv(r);
    s->env = job_env(c, &g);
    s->workdir = xstrdup(r->workdir ? r->workdir : "/work");
    s->uid = c->uid;
    s->gid = c->gid;
    s->net_host = r->network && !strcmp(r->network, "host");
    if (c->net && !s->net_host) {
        const spec_net *n = c->net;
        s->net = xcalloc(1, sizeof *s->net);
        *s->net = (spec_net){xstrdup(n->network), xstrdup(n->helper), xstrdup(n->host_if), dup_or_null(n->bridge),
                             xstrdup(n->addr), dup_or_null(n->host_addr), xstrdup(n->gateway),
                             dup_or_null(n->hosts_file), dup_or_null(n->resolv_file), n->max_bps};
    }
    s->max_runtime_s = (uint64_t)r->max_runtime_s;
    s->warn_signal = jobreq_signal(r, &s->warn_s);
    s->stop_grace_s = c->stop_grace_s;
    s->tmp_size_mb = c->tmp_size_mb;
    s->ptys_max = c->ptys_max;
    s->kernel_aio = c->kernel_aio;
    s->tty = r->tty;
    s->stdin_open = r->stdin_open;
    s->attach_wait_s = c->attach_wait_s;
    s->log_max_bytes = (uint64_t)r->max_log_bytes;
    snprintf(s->log_budget, sizeof s->log_budget, "%s", c->log_budget ? c->log_budget : "");
    s->log_floor = c->log_floor;
    s->user_procs_max = (uint64_t)r->user_pids_max;
    s->nofile_soft = c->nofile_soft;
    s->nofile_hard = c->nofile_hard;
    /* the user's jobs' host tasks together, root's unbounded (exec/cgroup.h) */
    s->owner_uid = c->owner_uid;
    s->user_tasks_max = c->owner_uid ? (uint64_t)r->user_pids_max : 0;
    s->cgroup_root = dup_or_null(c->cgroup_root);
    s->limits.cpu_pct = (uint32_t)r->max_cpu;
    s->limits.mem_bytes = (uint64_t)r->max_memory_mb << 20;
    s->limits.pids_max = (uint64_t)r->pids_max;
    s->limits.io_bps = (uint64_t)r->max_iobps;
    if (s->limits.io_bps)
        snprintf(s->limits.io_dev, sizeof s->limits.io_dev, "%s", c->io_dev ? c->io_dev : "");
    const char *cores = r->cpu_cores;
    snprintf(s->limits.cpus, sizeof s->limits.cpus, "%s", cores ? cores : g.cpus);
    snprintf(s->limits.mems, sizeof s->limits.mems, "%s", cores ? "" : g.mems);
    /* the GPU part's steps and device rules, taken over */
    s->ops = g.ops;
    s->nops = g.nops;
    s->devices = g.rules;
    s->ndevices = g.nrules;
    /* the GPU's binds, then the job's volumes at /volumes/NAME */
    s->mounts = g.mounts;
    s->nmounts = g.nmounts;
    /* srun, in a job with Slurm's variables (slurm/srun_main.c), where its PATH finds it first */
    if (r->slurm_env && c->srun) {
        s->mounts = xrealloc(s->mounts, (s->nmounts + 2) * sizeof *s->mounts);
        s->mounts[s->nmounts++] = (spec_mount){xstrdup(c->srun), xstrdup(SPEC_BUILD_SRUN_DIR "/srun"), false};
        s->mounts[s->nmounts++] = (spec_mount){xstrdup(c->srun), xstrdup(SPEC_BUILD_SRUN_DIR "/scontrol"), false};
    }
    if (c->nvolumes) {
        s->mounts = xrealloc(s->mounts, (s->nmounts + c->nvolumes) * sizeof *s->mounts);
        for (size_t i = 0; i < c->nvolumes; i++)
            s->mounts[s->nmounts++] =
                (spec_mount){xstrdup(c->volumes[i].src), xstrdup(c->volumes[i].dst), c->volumes[i].rw};
    }
    g.ops = NULL, g.nops = 0;
    g.rules = NULL, g.nrules = 0;
    g.mounts = NULL, g.nmounts = 0;
    spec_gpu_free(&g);
    if (r->isolation && !strcmp(r->isolation, "gvisor") && add_gvisor(c, s, e) < 0) {
        spec_free(s);
        return -1;
    }
    return 0;
}
