/* The cgroup manager on v1 and hybrid hosts: limits, statistics and the device list on the v1
 * controllers; on hybrid hosts the cgroup2 tree carries the eBPF device filter and counts CPU
 * time (it has no controller of its own to limit with). */
#include "cgroup_v1.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_fs.h"
#include "cgroup_v2.h"

static int write_u64(const char *dir, const char *file, uint64_t v, jerr *e)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return cg_write(dir, file, buf, e);
}

static char *read_trimmed(const char *dir, const char *file, jerr *e)
{
    char *s = cg_read(dir, file);
    if (!s) {
        jerr_sys(e, "read %s/%s", dir, file);
        return NULL;
    }
    s[strcspn(s, "\n")] = 0;
    return s;
}

/* ---- parent ---- */

/* A new v1 cpuset starts with no cpus and no mems, and no task can join it until both are set. */
static int fill_cpuset_from(const char *parent, const char *dir, const char *file, jerr *e)
{
    char *mine = read_trimmed(dir, file, e);
    if (!mine)
        return -1;
    bool empty = !mine[0];
    free(mine);
    if (!empty)
        return 0;
    char *theirs = read_trimmed(parent, file, e);
    if (!theirs)
        return -1;
    int rc = theirs[0] ? cg_write(dir, file, theirs, e)
                       : jerr_set(e, ENOSPC, "%s/%s is empty, so %s cannot inherit it", parent, file, dir);
    free(theirs);
    return rc;
}

static int prepare_cpuset(const char *mnt, const char *root, jerr *e)
{
    char parent[PATH_MAX], dir[PATH_MAX], comps[64];
    snprintf(comps, sizeof comps, "%s", root);
    snprintf(dir, sizeof dir, "%s", mnt);
    char *save = NULL;
    for (char *c = strtok_r(comps, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        memcpy(parent, dir, sizeof parent);
        int n = snprintf(dir, sizeof dir, "%s/%s", parent, c);
        if (n < 0 || (size_t)n >= sizeof dir)
            return jerr_set(e, ENAMETOOLONG, "cgroup path %s/%s is too long", mnt, root);
        if (fill_cpuset_from(parent, dir, "cpuset.mems", e) < 0 ||
            fill_cpuset_from(parent, dir, "cpuset.cpus", e) < 0)
            return -1;
    }
    /* the kernel then seeds each new job cgroup from us, so entering one can never hit an empty set */
    return cg_write(dir, "cgroup.clone_children", "1", e);
}

static int prepare_parent(const cg_host *h, jerr *e)
{
    if (!h->v1[CGC_CPUSET][0])
        return 0;
    return prepare_cpuset(h->v1[CGC_CPUSET], h->root, e);
}

/* ---- limits ---- */

static int need_v1(const cg_job *j, enum cg_ctrl c, const char *ctrl, const char *limit, jerr *e)
{
    if (j->v1_path[c][0])
        return 0;
    return jerr_set(e, ENOTSUP, "%s needs the cgroup v1 \"%s\" controller, which is not mounted on this host",
                    limit, ctrl);
}

static int set_cpu(const cg_job *j, uint32_t pct, jerr *e)
{
    char what[64];
    snprintf(what, sizeof what, "the CPU limit (%u%%)", pct);
    if (need_v1(j, CGC_CPU, "cpu", what, e) < 0)
        return -1;
    const char *dir = j->v1_path[CGC_CPU];
    if (write_u64(dir, "cpu.cfs_period_us", CG_CPU_PERIOD_US, e) < 0)
        return -1;
    return write_u64(dir, "cpu.cfs_quota_us", (uint64_t)pct * CG_CPU_PERIOD_US / 100, e);
}

static int set_memory(const cg_job *j, uint64_t mem, uint64_t swap, jerr *e)
{
    char what[64];
    snprintf(what, sizeof what, "the memory limit (%llu bytes)", (unsigned long long)mem);
    if (need_v1(j, CGC_MEMORY, "memory", what, e) < 0)
        return -1;
    const char *dir = j->v1_path[CGC_MEMORY];
    /* a cgroup just made: memsw is unlimited, so the RAM limit goes first and memsw (RAM +
     * swap) after it, never below it; without swap accounting memsw is absent (ENOENT) and
     * only the RAM limit can be set */
    if (write_u64(dir, "memory.limit_in_bytes", mem, e) < 0)
        return -1;
    /* v1 charges a socket's buffers to its cgroup only once memory.kmem.tcp.limit_in_bytes is
     * set (v2 charges them to memory.max): before, a job of 64 MB queued 1 GiB on 100 loopback
     * TCP pairs, counted nowhere but in the machine's net.ipv4.tcp_mem (2.2 GiB here), past which
     * every TCP socket of the host is refused memory. Its sockets' bound is its memory's, as on
     * v2 (absent on a kernel without it: ENOENT) */
    if (write_u64(dir, "memory.kmem.tcp.limit_in_bytes", mem, NULL) < 0 && errno != ENOENT)
        return jerr_sys(e, "write \"%llu\" to %s/memory.kmem.tcp.limit_in_bytes", (unsigned long long)mem, dir);
    uint64_t total = swap > UINT64_MAX - mem ? UINT64_MAX : mem + swap;
    if (total == UINT64_MAX || write_u64(dir, "memory.memsw.limit_in_bytes", total, NULL) == 0 || errno == ENOENT)
        return 0;
    return jerr_sys(e, "write \"%llu\" to %s/memory.memsw.limit_in_bytes", (unsigned long long)total, dir);
}

static int set_pids(const cg_job *j, uint64_t max, jerr *e)
{
    char what[64];
    snprintf(what, sizeof what, "the process limit (%llu)", (unsigned long long)max);
    if (need_v1(j, CGC_PIDS, "pids", what, e) < 0)
        return -1;
    return write_u64(j->v1_path[CGC_PIDS], "pids.max", max, e);
}

static int set_io(const cg_job *j, const char *dev, uint64_t bps, jerr *e)
{
    char what[96], v[64];
    snprintf(what, sizeof what, "the I/O limit (%llu bytes/s on %s)", (unsigned long long)bps, dev);
    if (need_v1(j, CGC_BLKIO, "blkio", what, e) < 0)
        return -1;
    const char *dir = j->v1_path[CGC_BLKIO];
    snprintf(v, sizeof v, "%s %llu", dev, (unsigned long long)bps);
    if (cg_write(dir, "blkio.throttle.read_bps_device", v, e) < 0)
        return -1;
    return cg_write(dir, "blkio.throttle.write_bps_device", v, e);
}

static int write_or_inherit(const char *dir, const char *file, const char *value, jerr *e)
{
    if (value[0])
        return cg_write(dir, file, value, e);
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash)
        *slash = 0;
    char *theirs = read_trimmed(parent, file, e);
    if (!theirs)
        return -1;
    int rc = theirs[0] ? cg_write(dir, file, theirs, e)
                       : jerr_set(e, ENOSPC, "%s/%s is empty, so %s cannot inherit it", parent, file, dir);
    free(theirs);
    return rc;
}

/* Always written, even without a request: an empty v1 cpuset would refuse every task. */
static int set_cpuset(const cg_job *j, const char *cpus, const char *mems, jerr *e)
{
    const char *dir = j->v1_path[CGC_CPUSET];
    if (!dir[0]) {
        if (!cpus[0] && !mems[0])
            return 0;
        char what[128];
        snprintf(what, sizeof what, "the cpuset (cpus \"%.40s\", mems \"%.40s\")", cpus, mems);
        return need_v1(j, CGC_CPUSET, "cpuset", what, e);
    }
    if (write_or_inherit(dir, "cpuset.mems", mems, e) < 0)
        return -1;
    return write_or_inherit(dir, "cpuset.cpus", cpus, e);
}

static int apply_limits(const cg_job *j, const cg_limits *l, jerr *e)
{
    if (l->cpu_pct && set_cpu(j, l->cpu_pct, e) < 0)
        return -1;
    if (l->mem_bytes && set_memory(j, l->mem_bytes, l->swap_bytes, e) < 0)
        return -1;
    if (l->pids_max && set_pids(j, l->pids_max, e) < 0)
        return -1;
    if (l->io_bps && set_io(j, l->io_dev, l->io_bps, e) < 0)
        return -1;
    return set_cpuset(j, l->cpus, l->mems, e);
}

/* ---- devices ---- */

static void format_num(char *out, size_t outlen, int64_t v)
{
    if (v < 0)
        snprintf(out, outlen, "*");
    else
        snprintf(out, outlen, "%lld", (long long)v);
}

int cgv1_set_devices(const char *dir, const cg_dev_rule *rules, size_t n, jerr *e)
{
    if (cg_write(dir, "devices.deny", "a", e) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char maj[24], min[24], line[64];
        format_num(maj, sizeof maj, rules[i].major);
        format_num(min, sizeof min, rules[i].minor);
        snprintf(line, sizeof line, "%c %s:%s %.3s", rules[i].type, maj, min, rules[i].access);
        if (cg_write(dir, "devices.allow", line, e) < 0)
            return -1;
    }
    return 0;
}

/* ---- statistics ---- */

/* blkio.throttle.io_service_bytes: "MAJ:MIN Read N" ... per device, then "Total N". */
static void read_blkio(const char *dir, cg_stats *s)
{
    char *text = cg_read(dir, "blkio.throttle.io_service_bytes");
    if (!text)
        return;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char dev[32], op[16];
        unsigned long long v;
        if (sscanf(line, "%31s %15s %llu", dev, op, &v) != 3 || !strchr(dev, ':'))
            continue;
        if (!strcmp(op, "Read"))
            s->io_read_bytes += v;
        else if (!strcmp(op, "Write"))
            s->io_write_bytes += v;
    }
    free(text);
}

static int read_stats_v1(const cg_job *j, cg_stats *s, bool current)
{
    const char *acct = j->v1_path[CGC_CPUACCT], *mem = j->v1_path[CGC_MEMORY];
    const char *pids = j->v1_path[CGC_PIDS], *blkio = j->v1_path[CGC_BLKIO];
    if (acct[0])
        cg_read_u64(acct, "cpuacct.usage", &s->cpu_usage_ns);
    if (mem[0]) {
        if (current)
            cg_read_u64(mem, "memory.usage_in_bytes", &s->mem_current_bytes);
        cg_read_u64(mem, "memory.max_usage_in_bytes", &s->mem_peak_bytes);
        cg_read_keyed(mem, "memory.oom_control", "oom_kill", &s->oom_kills);
    }
    if (pids[0] && current)
        cg_read_u64(pids, "pids.current", &s->pids_current);
    if (blkio[0])
        read_blkio(blkio, s);
    return 0;
}

/* ---- the v1 and hybrid managers ---- */

/* Every controller found is used, and the freezer too: without a cgroup2 tree there is no
 * cgroup.freeze, so each job gets a freezer cgroup of its own to be suspended by. */
static void use_mounts_v1(cg_host *h)
{
    h->freezer_jobs = h->freezer[0] != 0;
}

/* The v1 devices controller's list would only repeat the eBPF filter on the cgroup2 tree. */
static void use_mounts_hybrid(cg_host *h)
{
    h->v1[CGC_DEVICES][0] = 0;
}

/* On hybrid hosts the cgroup2 tree has no controllers to offer; it only carries the filter. */
static int prepare_level(const cg_host *uh, const cg_level_made *made, jerr *e)
{
    return made->v1[CGC_CPUSET] ? prepare_parent(uh, e) : 0;
}

static const char *tasks_mount(const cg_host *h)
{
    return h->v1[CGC_PIDS][0] ? h->v1[CGC_PIDS] : NULL;
}

static void trim_v1(cg_job *j, const cg_limits *l)
{
    if (!l->cpu_pct)
        j->v1_path[CGC_CPU][0] = 0;
    if (!l->cpus[0] && !l->mems[0])
        j->v1_path[CGC_CPUSET][0] = 0;
    if (!l->io_bps)
        j->v1_path[CGC_BLKIO][0] = 0;
}

/* cgroup2's cpu.stat counts CPU time on hybrid hosts too: no cpuacct cgroup needed */
static void trim_hybrid(cg_job *j, const cg_limits *l)
{
    trim_v1(j, l);
    if (j->unified_path[0])
        j->v1_path[CGC_CPUACCT][0] = 0;
}

static int read_stats_hybrid(const cg_job *j, cg_stats *s, bool current)
{
    int rc = read_stats_v1(j, s, current);
    /* without a v1 cpuacct cgroup (none made, or none mounted) cgroup2's core counts CPU time */
    if (s->cpu_usage_ns == 0 && j->unified_path[0]) {
        uint64_t usec;
        if (cg_read_keyed(j->unified_path, "cpu.stat", "usage_usec", &usec) == 0)
            s->cpu_usage_ns = usec * 1000;
    }
    return rc;
}

static int set_devices_v1(const cg_job *j, int prog, const cg_dev_rule *rules, size_t n, jerr *e)
{
    (void)prog; /* an eBPF program needs a cgroup2 directory */
    if (!j->v1_path[CGC_DEVICES][0])
        return jerr_set(e, ENOTSUP, "no device filter is possible for job %s: it has no cgroup of the v1 devices "
                        "controller (is it mounted?)", j->name);
    return cgv1_set_devices(j->v1_path[CGC_DEVICES], rules, n, e);
}

const cg_layout_ops cg_ops_v1 = {
    .layout = CG_V1,
    .use_mounts = use_mounts_v1,
    .prepare_root = prepare_parent,
    .prepare_level = prepare_level,
    .tasks_mount = tasks_mount,
    .trim = trim_v1,
    .apply_limits = apply_limits,
    .read_stats = read_stats_v1,
    .set_devices = set_devices_v1,
};

const cg_layout_ops cg_ops_hybrid = {
    .layout = CG_HYBRID,
    .use_mounts = use_mounts_hybrid,
    .prepare_root = prepare_parent,
    .prepare_level = prepare_level,
    .tasks_mount = tasks_mount,
    .trim = trim_hybrid,
    .apply_limits = apply_limits,
    .read_stats = read_stats_hybrid,
    .set_devices = cgv2_set_devices, /* the filter lives on the cgroup2 mount */
};
