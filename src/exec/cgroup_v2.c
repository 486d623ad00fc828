/* The cgroup manager on cgroup2-only hosts: limits and statistics on a cgroup2 directory, the
 * eBPF device filter attached to it. */
#include "cgroup_v2.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpfdev.h"
#include "cgroup_fs.h"

static const char *const wanted_ctrls[] = { "cpu", "memory", "pids", "io", "cpuset" };

/* One controller per write: a batch is refused whole when any single name is unavailable.
 * Failures are left for the limits to report, since only a job that asks for one needs it. */
static void enable_controllers(const char *dir)
{
    for (size_t i = 0; i < sizeof wanted_ctrls / sizeof wanted_ctrls[0]; i++) {
        char v[16];
        snprintf(v, sizeof v, "+%s", wanted_ctrls[i]);
        cg_write(dir, "cgroup.subtree_control", v, NULL);
    }
}

static int prepare_parent(const char *unified, const char *root, jerr *e)
{
    char dir[PATH_MAX], comps[64];
    snprintf(comps, sizeof comps, "%s", root);
    size_t len = (size_t)snprintf(dir, sizeof dir, "%s", unified);
    enable_controllers(dir);
    char *save = NULL;
    for (char *c = strtok_r(comps, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        int n = snprintf(dir + len, sizeof dir - len, "/%s", c);
        if (n < 0 || (size_t)n >= sizeof dir - len)
            return jerr_set(e, ENAMETOOLONG, "cgroup path %s/%s is too long", unified, root);
        len += (size_t)n;
        enable_controllers(dir);
    }
    return 0;
}

static bool has_word(const char *list, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += wl)
        if ((p == list || p[-1] == ' ') && (p[wl] == 0 || p[wl] == ' ' || p[wl] == '\n'))
            return true;
    return false;
}

static int need_ctrl(const char *dir, const char *ctrl, const char *limit, jerr *e)
{
    char *have = cg_read(dir, "cgroup.controllers");
    if (have && has_word(have, ctrl)) {
        free(have);
        return 0;
    }
    if (have)
        have[strcspn(have, "\n")] = 0;
    jerr_set(e, ENOTSUP, "%s needs the cgroup v2 \"%s\" controller, which is not enabled for %s "
             "(cgroup.controllers: \"%s\"); the parent's cgroup.subtree_control must offer it",
             limit, ctrl, dir, have ? have : "unreadable");
    free(have);
    return -1;
}

static int write_u64(const char *dir, const char *file, uint64_t v, jerr *e)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return cg_write(dir, file, buf, e);
}

static int set_cpu(const char *dir, uint32_t pct, jerr *e)
{
    char what[64], v[48];
    snprintf(what, sizeof what, "the CPU limit (%u%%)", pct);
    if (need_ctrl(dir, "cpu", what, e) < 0)
        return -1;
    snprintf(v, sizeof v, "%llu %u", (unsigned long long)pct * CG_CPU_PERIOD_US / 100, CG_CPU_PERIOD_US);
    return cg_write(dir, "cpu.max", v, e);
}

static int set_memory(const char *dir, uint64_t mem, uint64_t swap, jerr *e)
{
    char what[64];
    snprintf(what, sizeof what, "the memory limit (%llu bytes)", (unsigned long long)mem);
    if (need_ctrl(dir, "memory", what, e) < 0 || write_u64(dir, "memory.max", mem, e) < 0)
        return -1;
    /* absent (ENOENT) when the kernel does not account swap; then there is no swap limit to set */
    if (write_u64(dir, "memory.swap.max", swap, NULL) == 0 || errno == ENOENT)
        return 0;
    return jerr_sys(e, "write \"%llu\" to %s/memory.swap.max", (unsigned long long)swap, dir);
}

static int set_pids(const char *dir, uint64_t max, jerr *e)
{
    char what[64];
    snprintf(what, sizeof what, "the process limit (%llu)", (unsigned long long)max);
    if (need_ctrl(dir, "pids", what, e) < 0)
        return -1;
    return write_u64(dir, "pids.max", max, e);
}

static int set_io(const char *dir, const char *dev, uint64_t bps, jerr *e)
{
    char what[96], v[128];
    snprintf(what, sizeof what, "the I/O limit (%llu bytes/s on %s)", (unsigned long long)bps, dev);
    if (need_ctrl(dir, "io", what, e) < 0)
        return -1;
    snprintf(v, sizeof v, "%s rbps=%llu wbps=%llu", dev, (unsigned long long)bps, (unsigned long long)bps);
    return cg_write(dir, "io.max", v, e);
}

/* Empty values stay empty: a cgroup2 cpuset with no cpus/mems of its own uses its parent's. */
static int set_cpuset(const char *dir, const char *cpus, const char *mems, jerr *e)
{
    char what[128];
    snprintf(what, sizeof what, "the cpuset (cpus \"%.40s\", mems \"%.40s\")", cpus, mems);
    if (need_ctrl(dir, "cpuset", what, e) < 0)
        return -1;
    if (mems[0] && cg_write(dir, "cpuset.mems", mems, e) < 0)
        return -1;
    if (cpus[0] && cg_write(dir, "cpuset.cpus", cpus, e) < 0)
        return -1;
    return 0;
}

static int apply_limits_dir(const char *dir, const cg_limits *l, jerr *e)
{
    if (l->cpu_pct && set_cpu(dir, l->cpu_pct, e) < 0)
        return -1;
    if (l->mem_bytes && set_memory(dir, l->mem_bytes, l->swap_bytes, e) < 0)
        return -1;
    if (l->pids_max && set_pids(dir, l->pids_max, e) < 0)
        return -1;
    if (l->io_bps && set_io(dir, l->io_dev, l->io_bps, e) < 0)
        return -1;
    if ((l->cpus[0] || l->mems[0]) && set_cpuset(dir, l->cpus, l->mems, e) < 0)
        return -1;
    return 0;
}

/* io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N ..." per device. */
static void read_io_stat(const char *dir, cg_stats *s)
{
    char *text = cg_read(dir, "io.stat");
    if (!text)
        return;
    char *save = NULL;
    for (char *t = strtok_r(text, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
        if (!strncmp(t, "rbytes=", 7))
            s->io_read_bytes += strtoull(t + 7, NULL, 10);
        else if (!strncmp(t, "wbytes=", 7))
            s->io_write_bytes += strtoull(t + 7, NULL, 10);
    }
    free(text);
}

/* Counters of controllers that are off stay 0; memory.peak needs Linux 5.19. */
static int read_stats_dir(const char *dir, cg_stats *s, bool current)
{
    uint64_t usec;
    if (cg_read_keyed(dir, "cpu.stat", "usage_usec", &usec) < 0)
        return -1;
    s->cpu_usage_ns = usec * 1000;
    if (current)
        cg_read_u64(dir, "memory.current", &s->mem_current_bytes);
    cg_read_u64(dir, "memory.peak", &s->mem_peak_bytes);
    cg_read_keyed(dir, "memory.events", "oom_kill", &s->oom_kills);
    if (current)
        cg_read_u64(dir, "pids.current", &s->pids_current);
    read_io_stat(dir, s);
    return 0;
}

/* ---- the v2 manager ---- */

static void use_mounts(cg_host *h)
{
    (void)h; /* v2 hosts have no v1 mounts to leave out */
}

static int prepare_root(const cg_host *h, jerr *e)
{
    return prepare_parent(h->unified, h->root, e);
}

/* Whether a cgroup2 directory offers its children any controller yet. */
static bool offers_controllers(const char *dir)
{
    char *s = cg_read(dir, "cgroup.subtree_control");
    bool any = s && s[strspn(s, " \n")];
    free(s);
    return any;
}

/* A level another shim made a moment ago is prepared again, which changes nothing. */
static int prepare_level(const cg_host *uh, const cg_level_made *made, jerr *e)
{
    char dir[PATH_MAX];
    if (cg_file_path(dir, sizeof dir, uh->unified, uh->root) < 0)
        return jerr_sys(e, "cgroup path %s/%s", uh->unified, uh->root);
    if (made->unified || !offers_controllers(dir))
        enable_controllers(dir);
    return 0;
}

static const char *tasks_mount(const cg_host *h)
{
    return h->unified;
}

static void trim(cg_job *j, const cg_limits *l)
{
    (void)j, (void)l; /* one directory holds every controller */
}

static int apply_limits(const cg_job *j, const cg_limits *l, jerr *e)
{
    return apply_limits_dir(j->unified_path, l, e);
}

static int read_stats(const cg_job *j, cg_stats *s, bool current)
{
    return read_stats_dir(j->unified_path, s, current);
}

int cgv2_set_devices(const cg_job *j, int prog, const cg_dev_rule *rules, size_t n, jerr *e)
{
    if (!j->unified_path[0])
        return jerr_set(e, ENOTSUP, "no device filter is possible for job %s: it has no cgroup2 directory", j->name);
    return prog >= 0 ? bpfdev_attach_prog(j->unified_path, prog, e) : bpfdev_attach(j->unified_path, rules, n, e);
}

const cg_layout_ops cg_ops_v2 = {
    .layout = CG_V2,
    .use_mounts = use_mounts,
    .prepare_root = prepare_root,
    .prepare_level = prepare_level,
    .tasks_mount = tasks_mount,
    .trim = trim,
    .apply_limits = apply_limits,
    .read_stats = read_stats,
    .set_devices = cgv2_set_devices,
};
