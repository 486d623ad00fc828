#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libfyaml.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/netaddr.h"
#include "../common/parse.h"
#include "../exec/shim_term.h"
#include "../gpu/xid_policy.h"
#include "../sched/placement.h"

void config_defaults(config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->state_dir, sizeof c->state_dir, "/var/lib/joblet");
    snprintf(c->socket, sizeof c->socket, "/run/joblet/joblet.sock");
    c->socket_mode = 0666;
    c->log_level = LOG_INFO;
    /* Above the ranges container tools hand out (systemd-nspawn picks below 1879048192,
     * subuid ranges start at 100000): no other process on the host runs with these uids. */
    c->uid_range_start = 2000000000;
    c->uid_range_size = 65536;
    c->max_running = 0;
    c->max_upload_bytes = 256ull << 20;
    c->upload_timeout_s = 30;
    c->max_body_bytes = 16ull << 20;
    c->max_conns = 4096;          /* and never more than half the descriptors (api/http.c) */
    c->max_conns_per_user = 64;   /* of the 4096: no user locks the others out */
    c->cpu_priority = 10;         /* nice -10 for the loop and the zygote, 0 for all they start */
    c->account_cache_s = 60;      /* an account removed, a group left, counts within a minute */
    c->idle_timeout_s = 30;       /* a connection that sends nothing (a half request) does not stay */
    c->max_uploads = 32;
    c->limits.uploads_per_user = 4;
    /* one request of one user made 10,000 jobs, and every request that walks the jobs grew with
     * them (issue 25): a user's waiting jobs and kept jobs are bounded by default */
    c->limits.max_queued_per_user = 1000;
    c->limits.max_jobs_per_user = 10000;
    c->limits.max_request_bytes_per_user = 1ull << 30; /* 10,000 jobs of 15 MiB of env each were 150 GiB held */
    c->limits.max_running_per_user = 64; /* more wait QUEUED: one user's jobs do not fill the host */
    c->stop_grace_s = 10;
    c->attach_wait_s = 60;         /* a terminal job nobody attached to starts anyway */
    c->max_attachers = 8;          /* one types, the others watch */
    c->limits.attach_per_user = 16;
    c->limits.exec_per_user = 16;
    c->pids_max = 1024;
    c->max_log_bytes = 1ull << 30; /* 1 GiB per stream: a runaway job cannot fill the disk */
    c->max_pids_per_user = 4096;   /* a user's jobs cannot take the host's pid space (pid_max 32768) */
    c->default_memory_pct = 75;    /* no job takes the whole host's memory unless it asks */
    c->work_quota = 20ull << 30;   /* each user's jobs' /work together: a job cannot fill the host's disk */
    c->state_reserve = 256ull << 20; /* kept free for the database: a full disk cannot lose an acknowledged change */
    c->max_log_bytes_per_user = 16ull << 30; /* one user's jobs' output together: one user cannot fill the disk */
    c->tmp_size_mb = 1024;
    /* the kernel's ptys are one pool of the machine's (kernel.pty.max 4096, less pty.reserve
     * 1024 kept for the host's own devpts: 3072 for every job together), counted in no cgroup:
     * one job opened all of them. 8 a job: a user's running jobs hold 512 at most (64 x 8) */
    c->ptys_max = 8;
    snprintf(c->cgroup_root, sizeof c->cgroup_root, "joblet");
    c->favor_dynmods = 1;
    gpu_config_defaults(&c->gpu);
    snprintf(c->mps_control, sizeof c->mps_control, "/usr/bin/nvidia-cuda-mps-control");
    c->health_interval_ms = 1000;
    c->max_temperature_c = 85;
    c->volumes_max_per_user = 16;
    /* a quarter of the host's memory (memory volumes together: half), a quarter of the disk
     * under volumes.dir: no user's volumes take what every other user's need */
    c->volumes_memory_pct_per_user = 25;
    c->volumes_disk_pct_per_user = 25;
    snprintf(c->isolation_default, sizeof c->isolation_default, "native");
    c->events_max_streams_per_user = 16;
    c->events_max_streams = 256;
    c->history_keep_days = 30;
    c->audit_keep_days = 365;
    c->audit_max_rows = 1000000;
    snprintf(c->remote.pki_dir, sizeof c->remote.pki_dir, "/etc/joblet/pki");
    c->remote.handshake_timeout_s = 10;
    c->remote.max_pending = 256;
    c->remote.handshakes_per_s = 20;
    c->remote.handshakes_total_per_s = 100;
    c->runtimes_cache_keep = 4;
    c->runtimes_build_timeout_s = 3600;
    c->runtimes_max_import_bytes = 16ull << 30;
    snprintf(c->net_bridge_cidr, sizeof c->net_bridge_cidr, "10.217.0.0/16");
    snprintf(c->net_isolated_cidr, sizeof c->net_isolated_cidr, "10.216.0.0/16");
    snprintf(c->net_user_pool, sizeof c->net_user_pool, "10.218.0.0/15");
    c->net_max_per_user = 8;
    /* the host's conntrack table is the machine's (nf_conntrack_max: 65536 to 262144 by the
     * memory), its own connections too: a user's 64 running jobs hold 65536 entries at most */
    c->net_max_flows_per_job = 1024;
    c->slurm_drain = -1;
    snprintf(c->slurm_scontrol, sizeof c->slurm_scontrol, "/usr/bin/scontrol");
    c->slurm_timeout_s = 10;
    c->slurm_retry_s = 30;
}

/* The defaults, for the keys whose default is none (set_key). */
static const config *config_default(void)
{
    static config def;
    static bool made;
    if (!made) {
        config_defaults(&def);
        made = true;
    }
    return &def;
}

enum kind { K_STR, K_U64, K_MODE, K_LEVEL, K_BYTES, K_TRISTATE, K_BACKENDS, K_PATHS, K_STRATEGY, K_LISTEN, K_USERS, K_NODENAME };

typedef struct key {
    const char *path;   /* "section.name" */
    enum kind kind;
    size_t off, len;    /* for strings: buffer size */
    uint64_t min, max;
} key;

#define STR(p, f) {p, K_STR, offsetof(config, f), sizeof(((config *)0)->f), 0, 0}
#define U64(p, f, lo, hi) {p, K_U64, offsetof(config, f), sizeof(((config *)0)->f), lo, hi}

static const key keys[] = {
    STR("state_dir", state_dir),
    {"log_level", K_LEVEL, offsetof(config, log_level), 0, 0, 0},
    STR("server.socket", socket),
    {"server.socket_mode", K_MODE, offsetof(config, socket_mode), 0, 0, 0},
    U64("jobs.uid_range_start", uid_range_start, 1000, 4294000000u),
    U64("jobs.uid_range_size", uid_range_size, 1, 1000000),
    U64("jobs.max_running", max_running, 0, 1000000),
    {"jobs.max_upload_bytes", K_BYTES, offsetof(config, max_upload_bytes), 8, 1, 0},
    U64("jobs.upload_timeout_s", upload_timeout_s, 1, 3600),
    {"server.max_body_bytes", K_BYTES, offsetof(config, max_body_bytes), 8, 4096, 0},
    U64("server.max_connections", max_conns, 16, 1000000),
    U64("server.max_connections_per_user", max_conns_per_user, 0, 4000),
    U64("server.cpu_priority", cpu_priority, 0, 20),
    U64("server.idle_timeout_s", idle_timeout_s, 1, 3600),
    U64("server.account_cache_s", account_cache_s, 1, 3600),
    U64("server.max_uploads", max_uploads, 1, 10000),
    U64("limits.uploads_per_user", limits.uploads_per_user, 1, 10000),
    U64("jobs.stop_grace_s", stop_grace_s, 1, 3600),
    U64("jobs.keep_ended_s", keep_ended_s, 0, 3650ull * 86400),
    U64("jobs.attach_wait_s", attach_wait_s, 0, 3600),
    U64("jobs.max_attachers", max_attachers, 1, SHIM_TERM_MAX),
    U64("jobs.terminal_idle_timeout_s", terminal_idle_s, 0, 7 * 86400),
    U64("jobs.pids_max", pids_max, 16, 4194304),
    U64("jobs.tmp_size_mb", tmp_size_mb, 1, 1u << 30),
    U64("jobs.ptys_max", ptys_max, 1, 4096),
    U64("jobs.kernel_aio", kernel_aio, 0, 1),
    {"jobs.max_log_bytes", K_BYTES, offsetof(config, max_log_bytes), 8, 0, 0},
    U64("jobs.max_pids_per_user", max_pids_per_user, 0, 4194304),
    U64("jobs.default_memory_percent", default_memory_pct, 0, 100),
    {"jobs.work_quota", K_BYTES, offsetof(config, work_quota), 8, 0, 0},
    {"jobs.state_reserve", K_BYTES, offsetof(config, state_reserve), 8, 0, 0},
    {"jobs.max_log_bytes_per_user", K_BYTES, offsetof(config, max_log_bytes_per_user), 8, 0, 0},
    STR("jobs.shim_path", shim_path),
    STR("cgroup.root", cgroup_root),
    U64("cgroup.favor_dynmods", favor_dynmods, 0, 1),
    {"gpu.enabled", K_TRISTATE, offsetof(config, gpu.enabled), 0, 0, 0},
    {"gpu.backends", K_BACKENDS, 0, 0, 0, 0},
    STR("gpu.nvml_library", gpu.nvml_library),
    STR("gpu.nvidia_smi", gpu.nvidia_smi),
    STR("gpu.proc_root", gpu.proc_root),
    STR("gpu.sys_root", gpu.sys_root),
    STR("gpu.dev_root", gpu.dev_root),
    STR("gpu.fixture", gpu.fixture),
    {"gpu.cuda_paths", K_PATHS, 0, 0, 0, 0},
    STR("gpu.cuda_search_root", gpu.cuda_search_root),
    STR("gpu.ldcache", gpu.ldcache),
    U64("gpu.scrub", gpu.scrub, 0, 1),
    {"gpu.strategy", K_STRATEGY, offsetof(config, gpu.strategy), 0, 0, 0},
    STR("gpu.libcuda", gpu.libcuda),
    {"gpu.smi_timeout_ms", K_U64, offsetof(config, gpu.smi_timeout_ms), 4, 100, 600000},
    STR("gpu.mps_control", mps_control),
    U64("limits.max_gpus_per_user", limits.max_gpus_per_user, 0, 1000000),
    U64("limits.max_queued_per_user", limits.max_queued_per_user, 0, 100000000),
    U64("limits.max_jobs_per_user", limits.max_jobs_per_user, 0, 100000000),
    /* a size like its siblings (1GB); the plain byte count of the default is one too */
    {"limits.max_request_bytes_per_user", K_BYTES, offsetof(config, limits.max_request_bytes_per_user), 8, 0, 0},
    U64("limits.gpu_requests_per_minute", limits.gpu_requests_per_minute, 0, 1000000),
    U64("limits.max_running_per_user", limits.max_running_per_user, 0, 1000000),
    U64("limits.attach_sessions_per_user", limits.attach_per_user, 0, 100000),
    U64("limits.exec_sessions_per_user", limits.exec_per_user, 0, 100000),
    STR("metrics.listen", metrics_listen),
    STR("metrics.readers", metrics_readers),
    STR("server.admin_group", admin_group),
    U64("gpu.health_interval_ms", health_interval_ms, 0, 3600000),
    U64("gpu.max_temperature_c", max_temperature_c, 30, 150),
    STR("gpu.xid_policy", xid_policy),
    STR("runtimes.dir", runtimes_dir),
    STR("runtimes.default", runtime_default),
    STR("runtimes.cache_dir", runtimes_cache_dir),
    U64("runtimes.cache_keep", runtimes_cache_keep, 0, 1000),
    STR("runtimes.mirror", runtimes_mirror),
    U64("runtimes.build_timeout_s", runtimes_build_timeout_s, 10, 86400),
    {"runtimes.max_import_bytes", K_BYTES, offsetof(config, runtimes_max_import_bytes), 8, 1, 0},
    STR("volumes.dir", volumes_dir),
    U64("volumes.max_per_user", volumes_max_per_user, 0, 256),
    U64("volumes.memory_percent_per_user", volumes_memory_pct_per_user, 0, 100),
    U64("volumes.disk_percent_per_user", volumes_disk_pct_per_user, 0, 100),
    STR("volumes.mke2fs", volumes_mke2fs),
    STR("isolation.default", isolation_default),
    STR("isolation.require_gvisor", isolation_require_gvisor),
    STR("isolation.runsc", isolation_runsc),
    STR("isolation.platform", isolation_platform),
    U64("events.max_streams_per_user", events_max_streams_per_user, 1, 4000),
    U64("events.max_streams", events_max_streams, 1, 4000),
    U64("history.keep_days", history_keep_days, 1, 3650),
    U64("audit.keep_days", audit_keep_days, 1, 36500),
    U64("audit.max_rows", audit_max_rows, 1000, 1000000000),
    {"remote.listen", K_LISTEN, 0, 0, 0, 0},
    STR("remote.pki_dir", remote.pki_dir),
    {"remote.users", K_USERS, 0, 0, 0, 0},
    U64("remote.handshake_timeout_s", remote.handshake_timeout_s, 1, 300),
    U64("remote.max_pending", remote.max_pending, 16, 100000),
    U64("remote.handshakes_per_s", remote.handshakes_per_s, 1, 100000),
    U64("remote.handshakes_total_per_s", remote.handshakes_total_per_s, 1, 100000),
    STR("network.bridge_cidr", net_bridge_cidr),
    STR("network.isolated_cidr", net_isolated_cidr),
    STR("network.user_pool", net_user_pool),
    STR("network.dns", net_dns),
    STR("network.helper", net_helper),
    U64("network.max_per_user", net_max_per_user, 0, 1024),
    U64("network.max_flows_per_job", net_max_flows_per_job, 0, 1000000),
    {"slurm.node_name", K_NODENAME, offsetof(config, slurm_node_name), sizeof(((config *)0)->slurm_node_name), 0, 0},
    {"slurm.drain", K_TRISTATE, offsetof(config, slurm_drain), 0, 0, 0},
    STR("slurm.scontrol", slurm_scontrol),
    U64("slurm.timeout_s", slurm_timeout_s, 1, 600),
    U64("slurm.retry_s", slurm_retry_s, 1, 3600),
};

/* "ADDR:PORT" with ADDR an IPv4 address or a bracketed IPv6 one, PORT 1 to 65535. */
static bool listen_ok(const char *v)
{
    const char *colon = strrchr(v, ':');
    uint64_t port;
    if (!colon || colon == v || parse_u64(colon + 1, &port) < 0 || port < 1 || port > 65535)
        return false;
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - v), v);
    unsigned char buf[16];
    size_t n = strlen(host);
    if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
        host[n - 1] = 0;
        return inet_pton(AF_INET6, host + 1, buf) == 1;
    }
    return inet_pton(AF_INET, host, buf) == 1;
}

static void store_u(void *p, size_t len, uint64_t v)
{
    if (len == 8)
        *(uint64_t *)p = v;
    else
        *(uint32_t *)p = (uint32_t)v;
}

static int set_key(config *c, const key *k, const char *val, const char *file, jerr *e)
{
    char *p = (char *)c + k->off;
    uint64_t v;
    switch (k->kind) {
    case K_STR:
        /* "" is the default of a key whose default is none (metrics.readers: "" answers every
         * local user, server.admin_group: "" is none); the others need a value */
        if (!*val && !*((const char *)config_default() + k->off)) {
            *p = 0;
            return 0;
        }
        if (!*val || strlen(val) >= k->len)
            return jerr_set(e, EINVAL, "%s: %s: must be a non-empty string shorter than %zu characters", file,
                            k->path, k->len);
        memcpy(p, val, strlen(val) + 1);
        return 0;
    case K_U64:
        if (parse_u64(val, &v) < 0 || v < k->min || v > k->max)
            return jerr_set(e, EINVAL, "%s: %s: '%s' must be a whole number from %llu to %llu", file, k->path, val,
                            (unsigned long long)k->min, (unsigned long long)k->max);
        store_u(p, k->len, v);
        return 0;
    case K_MODE: {
        char *end;
        errno = 0;
        unsigned long m = strtoul(val, &end, 8);
        if (errno || *end || !*val || m > 0777)
            return jerr_set(e, EINVAL, "%s: %s: '%s' must be an octal mode such as \"0660\"", file, k->path, val);
        *(mode_t *)p = (mode_t)m;
        return 0;
    }
    case K_LEVEL:
        if (log_parse_level(val, (enum log_level *)p) < 0)
            return jerr_set(e, EINVAL, "%s: %s: '%s' must be one of error, warn, info, debug", file, k->path, val);
        return 0;
    case K_STRATEGY: {
        int st = placement_strategy_parse(val);
        if (st < 0)
            return jerr_set(e, EINVAL, "%s: %s: '%s' must be topology, pack or spread", file, k->path, val);
        *(int *)p = st;
        return 0;
    }
    case K_NODENAME: {
        size_t n = strlen(val);
        bool ok = n >= 1 && n < k->len;
        for (const char *q = val; ok && *q; q++)
            ok = isalnum((unsigned char)*q) || strchr("-_.", *q);
        if (!ok)
            return jerr_set(e, EINVAL, "%s: %s: '%.80s' must be a Slurm node name: 1 to %zu letters, digits, '-', "
                            "'_' or '.'", file, k->path, val, k->len - 1);
        memcpy(p, val, n + 1);
        return 0;
    }
    case K_TRISTATE:
        if (strcmp(val, "auto") == 0)
            *(int *)p = -1;
        else if (strcmp(val, "true") == 0 || strcmp(val, "yes") == 0)
            *(int *)p = 1;
        else if (strcmp(val, "false") == 0 || strcmp(val, "no") == 0)
            *(int *)p = 0;
        else
            return jerr_set(e, EINVAL, "%s: %s: '%s' must be auto, true or false", file, k->path, val);
        return 0;
    case K_BACKENDS: {
        jerr tmp = {0};
        char list[1024];
        snprintf(list, sizeof list, "%s", val);
        for (char *save = NULL, *b = strtok_r(list, ", ", &save); b; b = strtok_r(NULL, ", ", &save))
            if (gpu_config_add_backend(&c->gpu, b, &tmp) < 0)
                return jerr_set(e, EINVAL, "%s: %s", file, tmp.msg);
        return 0;
    }
    case K_PATHS:
        if (val[0] != '/' || strlen(val) >= sizeof c->gpu.cuda_paths[0])
            return jerr_set(e, EINVAL, "%s: %s: '%s' must be an absolute path shorter than %zu characters", file,
                            k->path, val, sizeof c->gpu.cuda_paths[0]);
        if (c->gpu.ncuda_paths == GPU_CUDA_PATHS_MAX)
            return jerr_set(e, EINVAL, "%s: %s: at most %d paths", file, k->path, GPU_CUDA_PATHS_MAX);
        snprintf(c->gpu.cuda_paths[c->gpu.ncuda_paths++], sizeof c->gpu.cuda_paths[0], "%s", val);
        return 0;
    case K_LISTEN:
        if (strlen(val) >= sizeof c->remote.listen[0] || !listen_ok(val))
            return jerr_set(e, EINVAL, "%s: %s: '%s' must be ADDRESS:PORT with an IP address: 0.0.0.0:7443, "
                            "10.0.0.5:7443, [::]:7443", file, k->path, val);
        if (c->remote.nlisten == REMOTE_LISTEN_MAX)
            return jerr_set(e, EINVAL, "%s: %s: at most %d addresses", file, k->path, REMOTE_LISTEN_MAX);
        snprintf(c->remote.listen[c->remote.nlisten++], sizeof c->remote.listen[0], "%s", val);
        return 0;
    case K_USERS: {
        /* "person=account", one pair of the mapping (walk) */
        const char *eq = strchr(val, '=');
        char person[65] = "", account[33] = "";
        if (eq && (size_t)(eq - val) < sizeof person)
            snprintf(person, sizeof person, "%.*s", (int)(eq - val), val);
        if (eq && strlen(eq + 1) < sizeof account)
            snprintf(account, sizeof account, "%s", eq + 1);
        if (!parse_user_name_ok(person, sizeof person) || !parse_user_name_ok(account, sizeof account))
            return jerr_set(e, EINVAL, "%s: %s: '%s' must map a certificate's name to a local account, both of "
                            "letters, digits, '.', '_', '-' (alice: alice-ml)", file, k->path, val);
        for (unsigned i = 0; i < c->remote.nusers; i++) {
            if (!strcmp(c->remote.users[i].person, person))
                return jerr_set(e, EINVAL, "%s: %s: %s is mapped twice", file, k->path, person);
            /* two people on one account would see and stop each other's jobs */
            if (!strcmp(c->remote.users[i].account, account))
                return jerr_set(e, EINVAL, "%s: %s: %s and %s both map to the account %s: each person needs an "
                                "account of their own (jobs, logs and volumes are owned by accounts)", file, k->path,
                                c->remote.users[i].person, person, account);
        }
        if (c->remote.nusers == REMOTE_USERS_MAX)
            return jerr_set(e, EINVAL, "%s: %s: at most %d people", file, k->path, REMOTE_USERS_MAX);
        struct remote_user *u = &c->remote.users[c->remote.nusers++];
        snprintf(u->person, sizeof u->person, "%s", person);
        snprintf(u->account, sizeof u->account, "%s", account);
        return 0;
    }
    case K_BYTES: {
        jerr tmp = {0};
        /* 0 is "none" for the keys that document it (jobs.max_log_bytes, jobs.work_quota) */
        if (!strcmp(val, "0"))
            v = 0;
        else if (parse_bytes(k->path, val, &v, &tmp) < 0)
            return jerr_set(e, EINVAL, "%s: %s", file, tmp.msg);
        if (v < k->min)
            return jerr_set(e, EINVAL, "%s: %s: '%s' must be at least %llu bytes", file, k->path, val,
                            (unsigned long long)k->min);
        *(uint64_t *)p = v;
        return 0;
    }
    }
    return 0;
}

/* Walks a mapping; prefix is "" at the top level. */
static int walk(config *c, struct fy_node *map, const char *prefix, const char *file, jerr *e)
{
    void *iter = NULL;
    struct fy_node_pair *pair;
    while ((pair = fy_node_mapping_iterate(map, &iter))) {
        struct fy_node *kn = fy_node_pair_key(pair), *vn = fy_node_pair_value(pair);
        size_t klen;
        const char *ks = fy_node_get_scalar(kn, &klen);
        if (!ks)
            return jerr_set(e, EINVAL, "%s: keys must be plain names", file);
        char path[128];
        snprintf(path, sizeof path, "%s%s%.*s", prefix, *prefix ? "." : "", (int)klen, ks);
        if (vn && fy_node_is_mapping(vn) && !strcmp(path, "remote.users")) {
            /* a mapping of names, not of settings */
            void *it = NULL;
            struct fy_node_pair *up;
            while ((up = fy_node_mapping_iterate(vn, &it))) {
                size_t pl, al;
                struct fy_node *pv = fy_node_pair_value(up);
                const char *ps = fy_node_get_scalar(fy_node_pair_key(up), &pl);
                const char *as = pv && fy_node_is_scalar(pv) ? fy_node_get_scalar(pv, &al) : NULL;
                if (!ps || !as)
                    return jerr_set(e, EINVAL, "%s: %s: each entry must be NAME: ACCOUNT", file, path);
                char pair_text[256];
                snprintf(pair_text, sizeof pair_text, "%.*s=%.*s", (int)pl, ps, (int)al, as);
                for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
                    if (!strcmp(keys[i].path, path) && set_key(c, &keys[i], pair_text, file, e) < 0)
                        return -1;
            }
            continue;
        }
        if (vn && fy_node_is_mapping(vn)) {
            if (walk(c, vn, path, file, e) < 0)
                return -1;
            continue;
        }
        const key *k = NULL;
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (strcmp(keys[i].path, path) == 0)
                k = &keys[i];
        if (!k) {
            char known[2048] = "";
            size_t n = 0;
            for (size_t i = 0; i < sizeof keys / sizeof keys[0] && n < sizeof known; i++)
                n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", keys[i].path);
            return jerr_set(e, EINVAL, "%s: unknown setting '%s'; known settings: %s", file, path, known);
        }
        size_t vlen;
        if (vn && fy_node_is_sequence(vn) && (k->kind == K_BACKENDS || k->kind == K_PATHS || k->kind == K_LISTEN)) {
            void *it = NULL;
            struct fy_node *item;
            while ((item = fy_node_sequence_iterate(vn, &it))) {
                const char *is = fy_node_is_scalar(item) ? fy_node_get_scalar(item, &vlen) : NULL;
                if (!is)
                    return jerr_set(e, EINVAL, "%s: %s: each item must be a single value", file, path);
                char val[1024];
                snprintf(val, sizeof val, "%.*s", (int)vlen, is);
                if (set_key(c, k, val, file, e) < 0)
                    return -1;
            }
            continue;
        }
        const char *vs = vn && fy_node_is_scalar(vn) ? fy_node_get_scalar(vn, &vlen) : NULL;
        if (!vs)
            return jerr_set(e, EINVAL, "%s: %s: must be a single value", file, path);
        char val[1024];
        snprintf(val, sizeof val, "%.*s", (int)vlen, vs);
        if (set_key(c, k, val, file, e) < 0)
            return -1;
    }
    return 0;
}

/* Settings that are read only once the daemon is set up (isolation, networks, the GPU health
 * monitor, the metrics listener), checked here so that a wrong one stops joblet like any other
 * wrong value: at once, exit 2 (which systemd does not restart), before the state directory is
 * touched. */
static int check_values(const config *c, const char *file, jerr *e)
{
    const char *d = c->isolation_default, *p = c->isolation_platform;
    if (strcmp(d, "native") && strcmp(d, "gvisor"))
        return jerr_set(e, EINVAL, "%s: isolation.default: '%s' must be native or gvisor", file, d);
    if (*p && strcmp(p, "systrap") && strcmp(p, "ptrace") && strcmp(p, "kvm"))
        return jerr_set(e, EINVAL, "%s: isolation.platform: '%s' must be systrap, ptrace or kvm", file, p);
    xid_policy xp;
    char err[400];
    if (xid_policy_parse(&xp, c->xid_policy, err, sizeof err) < 0)
        return jerr_set(e, EINVAL, "%s: %s", file, err);
    const char *cidrs[][2] = {{"network.bridge_cidr", c->net_bridge_cidr},
                              {"network.isolated_cidr", c->net_isolated_cidr},
                              {"network.user_pool", c->net_user_pool}};
    for (size_t i = 0; i < sizeof cidrs / sizeof cidrs[0]; i++) {
        netaddr_cidr nc;
        jerr ce = {0};
        if (netaddr_cidr_parse(cidrs[i][0], cidrs[i][1], &nc, &ce) < 0)
            return jerr_set(e, EINVAL, "%s: %s", file, ce.msg);
    }
    char list[sizeof c->net_dns];
    snprintf(list, sizeof list, "%s", c->net_dns);
    for (char *save = NULL, *a = strtok_r(list, ", ", &save); a; a = strtok_r(NULL, ", ", &save)) {
        unsigned char buf[16];
        if (inet_pton(AF_INET, a, buf) != 1 && inet_pton(AF_INET6, a, buf) != 1)
            return jerr_set(e, EINVAL, "%s: network.dns: '%s' must be a numeric IP address: the resolvers, "
                            "comma-separated (\"10.0.0.2, 10.0.0.3\")", file, a);
    }
    jerr me = {0};
    struct sockaddr_storage ss; /* (as metrics_listen_start parses it) */
    socklen_t sl;
    if (*c->metrics_listen && netaddr_hostport("metrics.listen", c->metrics_listen, &ss, &sl, &me) < 0)
        return jerr_set(e, EINVAL, "%s: %s", file, me.msg);
    return 0;
}

/* Whether the file holds no YAML document (libfyaml builds none of it): only blank lines and
 * comments, as an emptied /etc/joblet/joblet.yml or one with every setting commented out; 0 when
 * it holds something, -1 (errno) when it cannot be read. */
static int config_blank(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[1024];
    bool blank = true, start = true;
    errno = 0;
    while (blank && fgets(line, sizeof line, f)) {
        /* (a line longer than the buffer goes on in the next read: only its start is looked at) */
        const char *p = line + strspn(line, " \t\r\n");
        if (start)
            blank = !*p || *p == '#';
        start = strchr(line, '\n') != NULL;
    }
    int err = ferror(f) ? (errno ? errno : EIO) : 0; /* (a directory: EISDIR) */
    fclose(f);
    if (err)
        return errno = err, -1;
    return blank;
}

int config_load(config *c, const char *path, jerr *e)
{
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET};
    struct fy_document *doc = NULL;
    /* an empty file is no settings, all defaults (libfyaml builds no document of it, and said
     * "cannot parse" of an emptied or all-commented joblet.yml) */
    int blank = config_blank(path);
    if (blank < 0)
        return jerr_set(e, errno, "%s: cannot read this file: %s", path, strerror(errno));
    if (!blank && !(doc = fy_document_build_from_file(&cfg, path)))
        return jerr_set(e, EINVAL, "%s: cannot parse this YAML file", path);
    struct fy_node *root = doc ? fy_document_root(doc) : NULL;
    if (root && fy_node_is_null(root))
        root = NULL; /* "---" alone: a document of no settings */
    int rc = 0;
    if (root && !fy_node_is_mapping(root))
        rc = jerr_set(e, EINVAL, "%s: the top level must be a mapping of settings", path);
    else if (root)
        rc = walk(c, root, "", path, e);
    if (rc == 0)
        rc = check_values(c, path, e);
    if (doc)
        fy_document_destroy(doc);
    return rc;
}
