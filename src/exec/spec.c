#include "spec.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/util.h"

/* The JSON names of enum spec_op_kind, in its order. */
static const char *const op_names[] = {"devnode", "tmpfs", "file", "symlink", "readonly"};

static json_t *strv_json(char **v)
{
    json_t *a = json_array();
    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

static json_t *given_json(const cg_given *g)
{
    json_t *v1 = json_object();
    for (int c = 0; c < CGC_N; c++)
        if (g->v1[c][0])
            json_object_set_new(v1, cg_ctrl_name((enum cg_ctrl)c), json_string(g->v1[c]));
    json_t *o = json_pack("{s:o}", "v1", v1);
    if (g->unified[0])
        json_object_set_new(o, "unified", json_string(g->unified));
    if (g->freezer[0])
        json_object_set_new(o, "freezer", json_string(g->freezer));
    return o;
}

int spec_to_fd(const job_spec *s, jerr *e)
{
    json_t *lim = json_pack("{s:i,s:I,s:I,s:I,s:I,s:s,s:s,s:s}", "cpu_pct", (int)s->limits.cpu_pct, "mem_bytes",
                            (json_int_t)s->limits.mem_bytes, "swap_bytes", (json_int_t)s->limits.swap_bytes,
                            "pids_max", (json_int_t)s->limits.pids_max, "io_bps", (json_int_t)s->limits.io_bps,
                            "io_dev", s->limits.io_dev, "cpus", s->limits.cpus, "mems", s->limits.mems);
    json_t *devs = json_array();
    for (size_t i = 0; i < s->ndevices; i++) {
        char t[2] = {s->devices[i].type, 0};
        json_array_append_new(devs, json_pack("{s:s,s:I,s:I,s:s}", "type", t, "major",
                                              (json_int_t)s->devices[i].major, "minor",
                                              (json_int_t)s->devices[i].minor, "access", s->devices[i].access));
    }
    json_t *mnts = json_array();
    for (size_t i = 0; i < s->nmounts; i++)
        json_array_append_new(mnts, json_pack("{s:s,s:s,s:b}", "src", s->mounts[i].src, "dst", s->mounts[i].dst,
                                              "rw", s->mounts[i].rw));
    json_t *ops = json_array();
    for (size_t i = 0; i < s->nops; i++) {
        const spec_op *x = &s->ops[i];
        json_array_append_new(ops, json_pack("{s:s,s:s?,s:s,s:s?,s:I,s:I}", "op", op_names[x->kind], "src", x->src,
                                             "dst", x->dst, "data", x->data, "major", (json_int_t)x->major, "minor",
                                             (json_int_t)x->minor));
    }
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:s,s:I,s:I,s:b,s:I,s:I,s:I,s:s,s:o,s:o,s:o,s:o}", "id", s->id,
                          "job_dir", s->job_dir, "work_dir", s->work_dir, "root_mount", s->root_mount, "hostname", s->hostname, "argv", strv_json(s->argv), "env",
                          strv_json(s->env), "workdir", s->workdir, "uid", (json_int_t)s->uid, "gid", (json_int_t)s->gid,
                          "net_host", s->net_host, "max_runtime_s", (json_int_t)s->max_runtime_s,
                          "stop_grace_s", (json_int_t)s->stop_grace_s, "tmp_size_mb",
                          (json_int_t)s->tmp_size_mb, "cgroup_root", s->cgroup_root, "limits", lim, "devices",
                          devs, "mounts", mnts, "ops", ops);
    if (o && s->net)
        json_object_set_new(o, "net", json_pack("{s:s,s:s,s:s,s:s?,s:s,s:s?,s:s,s:s?,s:s?,s:I}", "network", s->net->network,
                                                "helper", s->net->helper, "host_if", s->net->host_if, "bridge",
                                                s->net->bridge, "addr", s->net->addr, "host_addr", s->net->host_addr,
                                                "gateway", s->net->gateway, "hosts_file", s->net->hosts_file,
                                                "resolv_file", s->net->resolv_file, "max_bps",
                                                (json_int_t)s->net->max_bps));
    if (o && s->ptys_max)
        json_object_set_new(o, "ptys_max", json_integer((json_int_t)s->ptys_max));
    if (o && s->kernel_aio)
        json_object_set_new(o, "kernel_aio", json_true());
    if (o && s->user_procs_max)
        json_object_set_new(o, "user_procs_max", json_integer((json_int_t)s->user_procs_max));
    if (o && s->nofile_soft) {
        json_object_set_new(o, "nofile_soft", json_integer((json_int_t)s->nofile_soft));
        json_object_set_new(o, "nofile_hard", json_integer((json_int_t)s->nofile_hard));
    }
    if (o)
        json_object_set_new(o, "owner_uid", json_integer((json_int_t)s->owner_uid));
    if (o && s->user_tasks_max)
        json_object_set_new(o, "user_tasks_max", json_integer((json_int_t)s->user_tasks_max));
    if (o && s->log_max_bytes)
        json_object_set_new(o, "log_max_bytes", json_integer((json_int_t)s->log_max_bytes));
    if (o && s->warn_signal) {
        json_object_set_new(o, "warn_signal", json_integer(s->warn_signal));
        json_object_set_new(o, "warn_s", json_integer((json_int_t)s->warn_s));
    }
    if (o && s->log_budget[0])
        json_object_set_new(o, "log_budget", json_string(s->log_budget));
    if (o && s->log_floor)
        json_object_set_new(o, "log_floor", json_integer((json_int_t)s->log_floor));
    if (o && s->cgroup_given)
        json_object_set_new(o, "cgroup_given", given_json(s->cgroup_given));
    if (o && s->step_hook)
        json_object_set_new(o, "step_hook", json_string(s->step_hook));
    if (o && s->stdio_given)
        json_object_set_new(o, "stdio_given", json_true());
    if (o && s->ngroups) {
        json_t *g = json_array();
        for (size_t i = 0; i < s->ngroups; i++)
            json_array_append_new(g, json_integer((json_int_t)s->groups[i]));
        json_object_set_new(o, "groups", g);
    }
    if (o && (s->tty || s->stdin_open))
        json_object_set_new(o, "terminal", json_pack("{s:b,s:b,s:I}", "tty", s->tty, "stdin", s->stdin_open,
                                                     "attach_wait_s", (json_int_t)s->attach_wait_s));
    if (o && s->system_root && *s->system_root)
        json_object_set_new(o, "system_root", json_string(s->system_root));
    if (o && s->work_copy_from && *s->work_copy_from)
        json_object_set_new(o, "work_copy_from", json_string(s->work_copy_from));
    if (o && s->runsc && *s->runsc)
        json_object_set_new(o, "gvisor", json_pack("{s:s,s:s,s:s,s:b,s:s?,s:I}", "runsc", s->runsc, "root",
                                                   s->runsc_root ? s->runsc_root : "", "platform",
                                                   s->runsc_platform ? s->runsc_platform : "ptrace", "nvproxy",
                                                   s->runsc_nvproxy, "cdi_devices", s->cdi_devices, "sandbox_uid",
                                                   (json_int_t)s->runsc_sandbox_uid));
    if (!o)
        return jerr_set(e, EINVAL, "cannot encode the job spec");
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!txt)
        return jerr_set(e, ENOMEM, "cannot encode the job spec");
    /* In memory, not in the job's directory: it is read once, by a shim started right after;
     * its secret environment values never reach the disk; and a file would cost an inode
     * allocation per job (~0.1 ms on ext4 when many were freed recently). */
    int fd = memfd_create("joblet-spec", MFD_CLOEXEC);
    if (fd < 0) {
        free(txt);
        return jerr_sys(e, "memfd for the job spec");
    }
    size_t len = strlen(txt);
    if (write_all(fd, txt, len) != len) {
        jerr_sys(e, "write the job spec");
        free(txt);
        close(fd);
        return -1;
    }
    free(txt);
    return fd;
}

static char **strv_load(json_t *a)
{
    size_t n = json_array_size(a);
    char **v = xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = xstrdup(json_string_value(json_array_get(a, i)));
    return v;
}

static void copy(char *dst, size_t len, json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    snprintf(dst, len, "%s", v ? v : "");
}

static bool is_strv(json_t *a)
{
    json_t *v;
    size_t i;
    if (!json_is_array(a))
        return false;
    json_array_foreach(a, i, v) if (!json_is_string(v)) return false;
    return true;
}

/* key is absent (copy gives "") or a string that fits in size bytes. */
static bool fits(json_t *o, const char *key, size_t size)
{
    json_t *v = json_object_get(o, key);
    return !v || (json_is_string(v) && json_string_length(v) < size);
}

static bool is_abs_path(json_t *v)
{
    return json_is_string(v) && json_string_value(v)[0] == '/';
}

static size_t op_kind(json_t *x)
{
    const char *name = json_string_value(json_object_get(x, "op"));
    size_t k = 0;
    while (k < ARRAY_LEN(op_names) && (!name || strcmp(op_names[k], name)))
        k++;
    return k;
}

/* A cgroup2 path and v1 paths by controller name, each absolute and fitting; at least one. */
static int check_given(json_t *g, jerr *e)
{
    const cg_given *G = NULL;
    json_t *uni = json_object_get(g, "unified"), *v1 = json_object_get(g, "v1"), *fr = json_object_get(g, "freezer"),
           *x;
    if (!json_is_object(g) || (uni && !is_abs_path(uni)) || !fits(g, "unified", sizeof G->unified) ||
        (fr && !is_abs_path(fr)) || !fits(g, "freezer", sizeof G->freezer) || (v1 && !json_is_object(v1)))
        return jerr_set(e, EINVAL, "the job spec's cgroup_given is not an object with absolute unified and freezer "
                                   "paths and an object v1");
    const char *name;
    json_object_foreach(v1, name, x) {
        if (cg_ctrl_by_name(name) == CGC_N)
            return jerr_set(e, EINVAL, "the job spec's cgroup_given.v1 names \"%s\", which is no controller joblet "
                                       "uses", name);
        if (!is_abs_path(x) || json_string_length(x) >= sizeof G->v1[0])
            return jerr_set(e, EINVAL, "the job spec's cgroup_given.v1.%s is not an absolute path that fits", name);
    }
    if (!uni && json_object_size(v1) == 0)
        return jerr_set(e, EINVAL, "the job spec's cgroup_given names no cgroup");
    return 0;
}

/* Everything spec_load_fd takes from o, checked before it takes any. joblet wrote the spec,
 * so a defect is a bug or a joblet and a shim of different versions; either way the job must
 * not start with a default in place of what is missing: uid 0, an empty id (which names the
 * cgroup root), a cpuset list cut short. Lists that are absent are empty. */
static int check(json_t *o, jerr *e)
{
    if (!json_is_object(o))
        return jerr_set(e, EINVAL, "the job spec is not a JSON object");
    static const char *const strings[] = {"id", "job_dir", "work_dir", "root_mount", "hostname", "workdir", "cgroup_root"};
    for (size_t i = 0; i < ARRAY_LEN(strings); i++)
        if (!json_is_string(json_object_get(o, strings[i])))
            return jerr_set(e, EINVAL, "the job spec has no %s (a string)", strings[i]);
    json_t *sys = json_object_get(o, "system_root");
    if (sys && (!json_is_string(sys) || json_string_value(sys)[0] != '/'))
        return jerr_set(e, EINVAL, "the job spec's system_root is not an absolute path");
    json_t *wcf = json_object_get(o, "work_copy_from");
    if (wcf && (!json_is_string(wcf) || json_string_value(wcf)[0] != '/'))
        return jerr_set(e, EINVAL, "the job spec's work_copy_from is not an absolute path");
    size_t idlen = json_string_length(json_object_get(o, "id"));
    if (idlen == 0 || idlen >= sizeof ((job_spec *)NULL)->id)
        return jerr_set(e, EINVAL, "the job spec's id has %zu characters", idlen);
    json_t *argv = json_object_get(o, "argv");
    if (!is_strv(argv) || json_array_size(argv) == 0 || !is_strv(json_object_get(o, "env")))
        return jerr_set(e, EINVAL, "the job spec's argv (not empty) and env must be lists of strings");
    static const char *const ids[] = {"uid", "gid"};
    for (size_t i = 0; i < ARRAY_LEN(ids); i++) {
        json_t *v = json_object_get(o, ids[i]);
        /* (uid_t)-1 would mean "unchanged" to setresuid: the job would keep root */
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= (json_int_t)UINT32_MAX)
            return jerr_set(e, EINVAL, "the job spec's %s is not a user or group id", ids[i]);
    }
    json_t *lim = json_object_get(o, "limits");
    const cg_limits *L = NULL;
    if (!json_is_object(lim) || !fits(lim, "io_dev", sizeof L->io_dev) || !fits(lim, "cpus", sizeof L->cpus) ||
        !fits(lim, "mems", sizeof L->mems))
        return jerr_set(e, EINVAL, "the job spec's limits are missing or do not fit (io_dev, cpus, mems)");
    json_t *devs = json_object_get(o, "devices"), *mnts = json_object_get(o, "mounts");
    json_t *ops = json_object_get(o, "ops"), *x;
    if ((devs && !json_is_array(devs)) || (mnts && !json_is_array(mnts)) || (ops && !json_is_array(ops)))
        return jerr_set(e, EINVAL, "the job spec's devices, mounts and ops must be lists");
    size_t i;
    json_array_foreach(devs, i, x) {
        const char *t = json_string_value(json_object_get(x, "type"));
        if (!t || (strcmp(t, "c") && strcmp(t, "b")) || !fits(x, "access", sizeof ((cg_dev_rule *)NULL)->access))
            return jerr_set(e, EINVAL, "job spec: devices[%zu] is not a c or b rule with access rwm", i);
    }
    json_array_foreach(mnts, i, x) {
        if (!json_is_string(json_object_get(x, "src")) || !is_abs_path(json_object_get(x, "dst")))
            return jerr_set(e, EINVAL, "job spec: mounts[%zu] has no src or no absolute dst", i);
    }
    json_array_foreach(ops, i, x) {
        if (op_kind(x) == ARRAY_LEN(op_names) || !is_abs_path(json_object_get(x, "dst")))
            return jerr_set(e, EINVAL, "job spec: ops[%zu] is not a known step with an absolute dst", i);
    }
    json_t *cgg = json_object_get(o, "cgroup_given");
    if (cgg && check_given(cgg, e) < 0)
        return -1;
    json_t *hook = json_object_get(o, "step_hook");
    if (hook && !is_abs_path(hook))
        return jerr_set(e, EINVAL, "the job spec's step_hook is not an absolute path");
    json_t *gv = json_object_get(o, "gvisor"), *term = json_object_get(o, "terminal");
    if (term && !json_is_object(term))
        return jerr_set(e, EINVAL, "the job spec's terminal is not an object");
    if (gv && term)
        return jerr_set(e, EINVAL, "the job spec has a terminal and gvisor: a terminal is made by joblet's own init, "
                                   "which a gVisor job does not have");
    json_t *groups = json_object_get(o, "groups");
    if (groups && (!json_is_array(groups) || json_array_size(groups) > SPEC_GROUPS_MAX))
        return jerr_set(e, EINVAL, "the job spec's groups is not a list of at most %d group ids", SPEC_GROUPS_MAX);
    for (size_t k = 0; k < json_array_size(groups); k++) {
        json_t *g = json_array_get(groups, k);
        if (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) > (json_int_t)UINT32_MAX - 1)
            return jerr_set(e, EINVAL, "the job spec's groups[%zu] is not a group id", k);
    }
    bool stdio = json_is_true(json_object_get(o, "stdio_given"));
    if (stdio && (gv || term))
        return jerr_set(e, EINVAL, "the job spec has stdio_given and %s: given stdio goes straight to joblet's own "
                                   "init's command", gv ? "gvisor" : "a terminal");
    if (gv && hook)
        return jerr_set(e, EINVAL, "the job spec has a step_hook and gvisor: a step hook holds joblet's own init, "
                                   "which a gVisor job does not have");
    if (gv && (!is_abs_path(json_object_get(gv, "runsc")) || !is_abs_path(json_object_get(gv, "root")) ||
               !json_is_string(json_object_get(gv, "platform"))))
        return jerr_set(e, EINVAL, "the job spec's gvisor has no absolute runsc and root, or no platform");
    return 0;
}

/* The whole of fd from offset 0 (the daemon's write left the shared offset at the end), or
 * NULL with errno EFBIG when it holds more than SPEC_MAX_BYTES. */
static char *read_all(int fd, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return NULL;
    if (st.st_size > SPEC_MAX_BYTES) { /* refused before any of it is read */
        errno = EFBIG;
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0; /* + 1: room to see EOF without growing */
    char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap) { /* it grew since fstat */
            if (cap > SPEC_MAX_BYTES) {
                free(buf);
                errno = EFBIG;
                return NULL;
            }
            buf = xrealloc(buf, cap *= 2);
        }
        ssize_t r = pread(fd, buf + n, cap - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return buf;
}

int spec_load_fd(job_spec *s, int fd, jerr *e)
{
    memset(s, 0, sizeof *s);
    size_t len = 0;
    char *txt = read_all(fd, &len);
    if (!txt && errno == EFBIG)
        return jerr_set(e, EFBIG, "the job spec is larger than %d MiB: refused", SPEC_MAX_BYTES >> 20);
    if (!txt)
        return jerr_sys(e, "read the job spec");
    if (len == 0) {
        /* job_launch.c empties the memfd when the zygote does not answer in time, so that a
         * shim it forks late does not run a job joblet has reported as not started. */
        free(txt);
        return jerr_set(e, EINVAL, "the job spec is empty: joblet withdrew it when the shim zygote did not answer "
                                   "in time, and the job was not started");
    }
    json_error_t je;
    json_t *o = json_loadb(txt, len, 0, &je);
    free(txt);
    if (!o)
        return jerr_set(e, EINVAL, "cannot read the job spec: %s (line %d)", je.text, je.line);
    if (check(o, e) < 0) {
        json_decref(o);
        return -1;
    }
    json_t *argv = json_object_get(o, "argv"), *env = json_object_get(o, "env");
    json_t *lim = json_object_get(o, "limits");
    copy(s->id, sizeof s->id, o, "id");
    s->job_dir = xstrdup(json_string_value(json_object_get(o, "job_dir")));
    s->work_dir = xstrdup(json_string_value(json_object_get(o, "work_dir")));
    s->root_mount = xstrdup(json_string_value(json_object_get(o, "root_mount")));
    s->hostname = xstrdup(json_string_value(json_object_get(o, "hostname")));
    s->workdir = xstrdup(json_string_value(json_object_get(o, "workdir")));
    json_t *sys = json_object_get(o, "system_root");
    s->system_root = json_is_string(sys) ? xstrdup(json_string_value(sys)) : NULL;
    json_t *wcf = json_object_get(o, "work_copy_from");
    s->work_copy_from = json_is_string(wcf) ? xstrdup(json_string_value(wcf)) : NULL;
    s->cgroup_root = xstrdup(json_string_value(json_object_get(o, "cgroup_root")));
    s->argv = strv_load(argv);
    s->env = strv_load(env);
    s->uid = (uid_t)json_integer_value(json_object_get(o, "uid"));
    s->gid = (gid_t)json_integer_value(json_object_get(o, "gid"));
    s->net_host = json_is_true(json_object_get(o, "net_host"));
    json_t *net = json_object_get(o, "net");
    if (json_is_object(net)) {
        s->net = xcalloc(1, sizeof *s->net);
        char **str[] = {&s->net->network, &s->net->helper, &s->net->host_if, &s->net->bridge, &s->net->addr,
                        &s->net->host_addr, &s->net->gateway, &s->net->hosts_file, &s->net->resolv_file};
        const char *keys[] = {"network", "helper", "host_if", "bridge", "addr", "host_addr", "gateway", "hosts_file",
                              "resolv_file"};
        for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
            json_t *v = json_object_get(net, keys[i]);
            *str[i] = json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
        }
        s->net->max_bps = (uint64_t)json_integer_value(json_object_get(net, "max_bps"));
        if (!s->net->network || !s->net->helper || !s->net->host_if || !s->net->addr || !s->net->gateway ||
            (!s->net->bridge == !s->net->host_addr)) {
            json_decref(o);
            spec_free(s);
            return jerr_set(e, EINVAL, "the job spec's net lacks a field (network, helper, host_if, addr, gateway, "
                            "and one of bridge and host_addr)");
        }
    }
    s->max_runtime_s = (uint64_t)json_integer_value(json_object_get(o, "max_runtime_s"));
    s->stop_grace_s = (uint64_t)json_integer_value(json_object_get(o, "stop_grace_s"));
    s->tmp_size_mb = (uint64_t)json_integer_value(json_object_get(o, "tmp_size_mb"));
    s->ptys_max = (uint64_t)json_integer_value(json_object_get(o, "ptys_max")); /* (0: a spec of an older joblet) */
    s->kernel_aio = json_is_true(json_object_get(o, "kernel_aio"));
    s->log_max_bytes = (uint64_t)json_integer_value(json_object_get(o, "log_max_bytes"));
    s->warn_signal = (int)json_integer_value(json_object_get(o, "warn_signal"));
    s->warn_s = (uint32_t)json_integer_value(json_object_get(o, "warn_s"));
    copy(s->log_budget, sizeof s->log_budget, o, "log_budget");
    s->log_floor = (uint64_t)json_integer_value(json_object_get(o, "log_floor"));
    s->user_procs_max = (uint64_t)json_integer_value(json_object_get(o, "user_procs_max"));
    s->nofile_soft = (uint64_t)json_integer_value(json_object_get(o, "nofile_soft"));
    s->nofile_hard = (uint64_t)json_integer_value(json_object_get(o, "nofile_hard"));
    s->owner_uid = (uid_t)json_integer_value(json_object_get(o, "owner_uid"));
    s->user_tasks_max = (uint64_t)json_integer_value(json_object_get(o, "user_tasks_max"));
    s->limits.cpu_pct = (uint32_t)json_integer_value(json_object_get(lim, "cpu_pct"));
    s->limits.mem_bytes = (uint64_t)json_integer_value(json_object_get(lim, "mem_bytes"));
    s->limits.swap_bytes = (uint64_t)json_integer_value(json_object_get(lim, "swap_bytes"));
    s->limits.pids_max = (uint64_t)json_integer_value(json_object_get(lim, "pids_max"));
    s->limits.io_bps = (uint64_t)json_integer_value(json_object_get(lim, "io_bps"));
    copy(s->limits.io_dev, sizeof s->limits.io_dev, lim, "io_dev");
    copy(s->limits.cpus, sizeof s->limits.cpus, lim, "cpus");
    copy(s->limits.mems, sizeof s->limits.mems, lim, "mems");
    json_t *devs = json_object_get(o, "devices"), *d;
    size_t i;
    s->devices = xcalloc(json_array_size(devs) + 1, sizeof *s->devices);
    json_array_foreach(devs, i, d) {
        const char *t = json_string_value(json_object_get(d, "type"));
        s->devices[i].type = t ? t[0] : 'c';
        s->devices[i].major = json_integer_value(json_object_get(d, "major"));
        s->devices[i].minor = json_integer_value(json_object_get(d, "minor"));
        copy(s->devices[i].access, sizeof s->devices[i].access, d, "access");
    }
    s->ndevices = json_array_size(devs);
    json_t *mnts = json_object_get(o, "mounts"), *m;
    s->mounts = xcalloc(json_array_size(mnts) + 1, sizeof *s->mounts);
    json_array_foreach(mnts, i, m) {
        s->mounts[i].src = xstrdup(json_string_value(json_object_get(m, "src")));
        s->mounts[i].dst = xstrdup(json_string_value(json_object_get(m, "dst")));
        s->mounts[i].rw = json_is_true(json_object_get(m, "rw"));
    }
    s->nmounts = json_array_size(mnts);
    json_t *ops = json_object_get(o, "ops"), *x;
    s->ops = xcalloc(json_array_size(ops) + 1, sizeof *s->ops);
    json_array_foreach(ops, i, x) {
        const char *src, *data;
        s->ops[i].kind = (enum spec_op_kind)op_kind(x);
        s->ops[i].dst = xstrdup(json_string_value(json_object_get(x, "dst")));
        if ((src = json_string_value(json_object_get(x, "src"))))
            s->ops[i].src = xstrdup(src);
        if ((data = json_string_value(json_object_get(x, "data"))))
            s->ops[i].data = xstrdup(data);
        s->ops[i].major = (uint32_t)json_integer_value(json_object_get(x, "major"));
        s->ops[i].minor = (uint32_t)json_integer_value(json_object_get(x, "minor"));
    }
    s->nops = json_array_size(ops);
    json_t *cgg = json_object_get(o, "cgroup_given");
    if (cgg) {
        s->cgroup_given = xcalloc(1, sizeof *s->cgroup_given);
        copy(s->cgroup_given->unified, sizeof s->cgroup_given->unified, cgg, "unified");
        copy(s->cgroup_given->freezer, sizeof s->cgroup_given->freezer, cgg, "freezer");
        json_t *v1 = json_object_get(cgg, "v1"), *path;
        const char *name;
        json_object_foreach(v1, name, path) {
            enum cg_ctrl c = cg_ctrl_by_name(name);
            snprintf(s->cgroup_given->v1[c], sizeof s->cgroup_given->v1[c], "%s", json_string_value(path));
        }
    }
    json_t *hook = json_object_get(o, "step_hook");
    s->step_hook = hook ? xstrdup(json_string_value(hook)) : NULL;
    s->stdio_given = json_is_true(json_object_get(o, "stdio_given"));
    json_t *groups = json_object_get(o, "groups");
    if (json_array_size(groups)) {
        s->ngroups = json_array_size(groups);
        s->groups = xcalloc(s->ngroups, sizeof *s->groups);
        for (size_t k = 0; k < s->ngroups; k++)
            s->groups[k] = (gid_t)json_integer_value(json_array_get(groups, k));
    }
    json_t *term = json_object_get(o, "terminal");
    s->tty = json_is_true(json_object_get(term, "tty"));
    s->stdin_open = json_is_true(json_object_get(term, "stdin"));
    s->attach_wait_s = (uint64_t)json_integer_value(json_object_get(term, "attach_wait_s"));
    json_t *gv = json_object_get(o, "gvisor");
    if (gv) {
        s->runsc = xstrdup(json_string_value(json_object_get(gv, "runsc")));
        s->runsc_root = xstrdup(json_string_value(json_object_get(gv, "root")));
        s->runsc_platform = xstrdup(json_string_value(json_object_get(gv, "platform")));
        s->runsc_nvproxy = json_is_true(json_object_get(gv, "nvproxy"));
        const char *cdi = json_string_value(json_object_get(gv, "cdi_devices"));
        s->cdi_devices = cdi ? xstrdup(cdi) : NULL;
        s->runsc_sandbox_uid = (uid_t)json_integer_value(json_object_get(gv, "sandbox_uid"));
    }
    json_decref(o);
    return 0;
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

void spec_free(job_spec *s)
{
    free(s->job_dir);
    free(s->work_dir);
    free(s->root_mount);
    free(s->hostname);
    free(s->workdir);
    free(s->system_root);
    free(s->work_copy_from);
    free(s->cgroup_root);
    free(s->cgroup_given);
    free(s->step_hook);
    free(s->groups);
    strv_free(s->argv);
    strv_free(s->env);
    free(s->devices);
    for (size_t i = 0; i < s->nmounts; i++) {
        free(s->mounts[i].src);
        free(s->mounts[i].dst);
    }
    free(s->mounts);
    for (size_t i = 0; i < s->nops; i++) {
        free(s->ops[i].src);
        free(s->ops[i].dst);
        free(s->ops[i].data);
    }
    free(s->ops);
    free(s->runsc);
    free(s->runsc_root);
    free(s->runsc_platform);
    free(s->cdi_devices);
    if (s->net) {
        char *str[] = {s->net->network, s->net->helper, s->net->host_if, s->net->bridge, s->net->addr,
                       s->net->host_addr, s->net->gateway, s->net->hosts_file, s->net->resolv_file};
        for (size_t i = 0; i < ARRAY_LEN(str); i++)
            free(str[i]);
        free(s->net);
    }
    memset(s, 0, sizeof *s);
}
