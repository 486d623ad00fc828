#include "oci.h"

#include <stdio.h>
#include <string.h>

#include "../common/util.h"

static json_t *strv(char *const *v)
{
    json_t *a = json_array();
    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

static void add_mount(json_t *mounts, const char *dst, const char *type, const char *src, const char *const *opts)
{
    json_t *o = json_pack("{s:s,s:s,s:s}", "destination", dst, "type", type, "source", src);
    json_t *a = json_array();
    for (; opts && *opts; opts++)
        json_array_append_new(a, json_string(*opts));
    json_object_set_new(o, "options", a);
    json_array_append_new(mounts, o);
}

static void add_bind(json_t *mounts, const char *src, const char *dst, bool rw)
{
    const char *const opts[] = {"rbind", rw ? "rw" : "ro", "nosuid", "nodev", NULL};
    add_mount(mounts, dst, "bind", src, opts);
}

uint32_t oci_sandbox_runs_as(const job_spec *s) { return s->net_host ? 0 : OCI_NOBODY; }

uint32_t oci_inside_id(uint32_t id, uint32_t runs_as, uint32_t sandbox_id)
{
    if (!sandbox_id)
        return id;
    return id == runs_as ? sandbox_id : id == sandbox_id ? runs_as : id;
}

int oci_id_map(uint32_t runs_as, uint32_t sandbox_id, char *out, size_t len)
{
    if ((runs_as && runs_as != OCI_NOBODY) || !sandbox_id || sandbox_id == OCI_NOBODY || sandbox_id == UINT32_MAX)
        return -1;
    uint32_t lo = sandbox_id < runs_as ? sandbox_id : runs_as;
    uint32_t hi = sandbox_id < runs_as ? runs_as : sandbox_id;
    /* "inside outside count": [0, lo) as itself, lo <-> hi, (lo, hi) as itself, the rest up
     * to 4294967294 (4294967295 is no id) as itself */
    struct { uint32_t in, out, n; } r[] = {
        {0, 0, lo}, {lo, hi, 1}, {lo + 1, lo + 1, hi - lo - 1}, {hi, lo, 1}, {hi + 1, hi + 1, UINT32_MAX - hi - 1},
    };
    size_t used = 0;
    for (size_t i = 0; i < ARRAY_LEN(r); i++) {
        if (!r[i].n)
            continue;
        int n = snprintf(out + used, len - used, "%u %u %u\n", r[i].in, r[i].out, r[i].n);
        if (n < 0 || (size_t)n >= len - used)
            return -1;
        used += (size_t)n;
    }
    return (int)used;
}

/* The process object: the job's ids as the sandbox's user namespace names them (oci.h), no
 * capability in any set, no_new_privileges, the job's RLIMIT_NPROC. */
static json_t *process_json(const job_spec *s, char *const *argv, char *const *env, const char *cwd, bool tty)
{
    uint32_t sb = (uint32_t)s->runsc_sandbox_uid, as = oci_sandbox_runs_as(s);
    json_t *user = json_pack("{s:I,s:I}", "uid", (json_int_t)oci_inside_id((uint32_t)s->uid, as, sb), "gid",
                             (json_int_t)oci_inside_id((uint32_t)s->gid, as, sb));
    json_t *rlimits = json_array();
    if (s->user_procs_max)
        json_array_append_new(rlimits, json_pack("{s:s,s:I,s:I}", "type", "RLIMIT_NPROC", "hard",
                                                 (json_int_t)s->user_procs_max, "soft",
                                                 (json_int_t)s->user_procs_max));
    if (s->nofile_soft && s->nofile_hard >= s->nofile_soft) /* (as exec/jobinit.c has it) */
        json_array_append_new(rlimits, json_pack("{s:s,s:I,s:I}", "type", "RLIMIT_NOFILE", "hard",
                                                 (json_int_t)s->nofile_hard, "soft", (json_int_t)s->nofile_soft));
    /* no capability in any set: the job's user is not root, and if it were it gets none */
    json_t *caps = json_pack("{s:[],s:[],s:[],s:[],s:[]}", "bounding", "effective", "inheritable", "permitted",
                             "ambient");
    return json_pack("{s:b,s:o,s:o,s:o,s:s,s:o,s:o,s:b}", "terminal", tty, "user", user, "args", strv(argv), "env",
                     strv(env), "cwd", cwd, "capabilities", caps, "rlimits", rlimits, "noNewPrivileges", 1);
}

json_t *oci_exec_process(const job_spec *s, char *const *argv, char *const *env, const char *cwd, bool tty)
{
    return process_json(s, argv, env, cwd, tty);
}

json_t *oci_config(const job_spec *s, const oci_inputs *in)
{
    json_t *process = process_json(s, s->argv, s->env, s->workdir, false);

    json_t *mounts = json_array();
    const char *sys = s->system_root && *s->system_root ? s->system_root : "";
    for (const char *const *d = in->sys_dirs; d && *d; d++) {
        char src[4200];
        snprintf(src, sizeof src, "%s%s", sys, *d);
        add_bind(mounts, src, *d, false);
    }
    if (in->hosts)
        add_bind(mounts, in->hosts, "/etc/hosts", false);
    if (in->hostname)
        add_bind(mounts, in->hostname, "/etc/hostname", false);
    if (in->resolv)
        add_bind(mounts, in->resolv, "/etc/resolv.conf", false);
    const char *const proc_opts[] = {"nosuid", "noexec", "nodev", NULL};
    add_mount(mounts, "/proc", "proc", "proc", proc_opts);
    char tmpsz[64];
    snprintf(tmpsz, sizeof tmpsz, "size=%llum", (unsigned long long)(s->tmp_size_mb ? s->tmp_size_mb : 64));
    const char *const tmp_opts[] = {"nosuid", "nodev", "mode=1777", tmpsz, NULL};
    add_mount(mounts, "/tmp", "tmpfs", "tmpfs", tmp_opts);
    add_bind(mounts, s->work_dir, "/work", true);
    for (size_t i = 0; i < s->nmounts; i++)
        add_bind(mounts, s->mounts[i].src, s->mounts[i].dst, s->mounts[i].rw);

    json_t *devices = json_array();
    for (size_t i = 0; i < s->nops; i++) {
        const spec_op *x = &s->ops[i];
        if (x->kind == SPEC_DEVNODE) {
            json_array_append_new(devices, json_pack("{s:s,s:s,s:I,s:I,s:i,s:i,s:i}", "path", x->dst, "type", "c",
                                                     "major", (json_int_t)x->major, "minor", (json_int_t)x->minor,
                                                     "fileMode", 0666, "uid", 0, "gid", 0));
        } else if (x->kind == SPEC_TMPFS) {
            const char *const o[] = {"nosuid", "nodev", "noexec", "size=1m", NULL};
            add_mount(mounts, x->dst, "tmpfs", "tmpfs", o);
        }
        /* SPEC_FILE, SPEC_SYMLINK, SPEC_READONLY shape the native root only: a sandbox's
         * root is read-only and served by the gofer, and nvproxy brings its own /proc/driver */
    }
    /* the device rules of the cgroup, as the runtime spec writes them: deny all, then each */
    json_t *rules = json_array();
    json_array_append_new(rules, json_pack("{s:b,s:s}", "allow", 0, "access", "rwm"));
    for (size_t i = 0; i < s->ndevices; i++) {
        char t[2] = {s->devices[i].type, 0};
        json_t *r = json_pack("{s:b,s:s,s:s}", "allow", 1, "type", t, "access", s->devices[i].access);
        if (s->devices[i].major >= 0)
            json_object_set_new(r, "major", json_integer(s->devices[i].major));
        if (s->devices[i].minor >= 0)
            json_object_set_new(r, "minor", json_integer(s->devices[i].minor));
        json_array_append_new(rules, r);
    }

    json_t *ns = json_array();
    const char *const kinds[] = {"pid", "ipc", "uts", "mount", "network"};
    for (size_t i = 0; i < ARRAY_LEN(kinds); i++) {
        bool net = !strcmp(kinds[i], "network");
        if (net && s->net_host)
            continue;
        json_t *k = json_pack("{s:s}", "type", kinds[i]);
        if (net && in->netns)
            json_object_set_new(k, "path", json_string(in->netns));
        json_array_append_new(ns, k);
    }

    json_t *resources = json_pack("{s:o}", "devices", rules);
    if (s->limits.mem_bytes)
        json_object_set_new(resources, "memory", json_pack("{s:I}", "limit", (json_int_t)s->limits.mem_bytes));
    if (s->limits.pids_max)
        json_object_set_new(resources, "pids", json_pack("{s:I}", "limit", (json_int_t)s->limits.pids_max));
    json_t *linux = json_pack("{s:o,s:o,s:o}", "namespaces", ns, "devices", devices, "resources", resources);
    if (in->cgroups_path && *in->cgroups_path)
        json_object_set_new(linux, "cgroupsPath", json_string(in->cgroups_path));

    json_t *o = json_pack("{s:s,s:o,s:{s:s,s:b},s:s,s:o,s:o}", "ociVersion", "1.0.2", "process", process, "root",
                          "path", in->rootfs, "readonly", 1, "hostname", s->hostname, "mounts", mounts, "linux",
                          linux);
    json_t *ann = json_object();
    json_object_set_new(ann, "org.joblet.job-id", json_string(s->id));
    if (s->cdi_devices && *s->cdi_devices)
        /* as the CDI specification's annotations name them: cdi.k8s.io/<key>: the devices */
        json_object_set_new(ann, "cdi.k8s.io/joblet", json_string(s->cdi_devices));
    json_object_set_new(o, "annotations", ann);
    return o;
}
