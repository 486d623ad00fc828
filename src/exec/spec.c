#include "spec.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/util.h"

static json_t *strv_json(char **v)
{
    json_t *a = json_array();
    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
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
    static const char *const op_names[] = {"devnode", "tmpfs", "file", "symlink", "readonly"};
    json_t *ops = json_array();
    for (size_t i = 0; i < s->nops; i++) {
        const spec_op *x = &s->ops[i];
        json_array_append_new(ops, json_pack("{s:s,s:s?,s:s,s:s?,s:I,s:I}", "op", op_names[x->kind], "src", x->src,
                                             "dst", x->dst, "data", x->data, "major", (json_int_t)x->major, "minor",
                                             (json_int_t)x->minor));
    }
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:s,s:i,s:i,s:b,s:I,s:I,s:I,s:s,s:o,s:o,s:o,s:o}", "id", s->id,
                          "job_dir", s->job_dir, "root_mount", s->root_mount, "hostname", s->hostname, "argv", strv_json(s->argv), "env",
                          strv_json(s->env), "workdir", s->workdir, "uid", (int)s->uid, "gid", (int)s->gid,
                          "net_host", s->net_host, "max_runtime_s", (json_int_t)s->max_runtime_s,
                          "stop_grace_s", (json_int_t)s->stop_grace_s, "tmp_size_mb",
                          (json_int_t)s->tmp_size_mb, "cgroup_root", s->cgroup_root, "limits", lim, "devices",
                          devs, "mounts", mnts, "ops", ops);
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
    size_t len = strlen(txt), off = 0;
    while (off < len) {
        ssize_t w = write(fd, txt + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            jerr_sys(e, "write the job spec");
            free(txt);
            close(fd);
            return -1;
        }
        off += (size_t)w;
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

/* The whole of fd from offset 0 (the daemon's write left the shared offset at the end). */
static char *read_all(int fd, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap && !(buf = realloc(buf, cap *= 2)))
            abort();
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
    if (!txt)
        return jerr_sys(e, "read the job spec");
    json_error_t je;
    json_t *o = json_loadb(txt, len, 0, &je);
    free(txt);
    if (!o)
        return jerr_set(e, EINVAL, "cannot read the job spec: %s (line %d)", je.text, je.line);
    json_t *argv = json_object_get(o, "argv"), *env = json_object_get(o, "env");
    json_t *lim = json_object_get(o, "limits");
    if (!json_is_array(argv) || json_array_size(argv) == 0 || !json_is_array(env) || !json_is_object(lim)) {
        json_decref(o);
        return jerr_set(e, EINVAL, "the job spec is incomplete (argv, env, limits)");
    }
    copy(s->id, sizeof s->id, o, "id");
    s->job_dir = xstrdup(json_string_value(json_object_get(o, "job_dir")));
    s->root_mount = xstrdup(json_string_value(json_object_get(o, "root_mount")));
    s->hostname = xstrdup(json_string_value(json_object_get(o, "hostname")));
    s->workdir = xstrdup(json_string_value(json_object_get(o, "workdir")));
    s->cgroup_root = xstrdup(json_string_value(json_object_get(o, "cgroup_root")));
    s->argv = strv_load(argv);
    s->env = strv_load(env);
    s->uid = (uid_t)json_integer_value(json_object_get(o, "uid"));
    s->gid = (gid_t)json_integer_value(json_object_get(o, "gid"));
    s->net_host = json_is_true(json_object_get(o, "net_host"));
    s->max_runtime_s = (uint64_t)json_integer_value(json_object_get(o, "max_runtime_s"));
    s->stop_grace_s = (uint64_t)json_integer_value(json_object_get(o, "stop_grace_s"));
    s->tmp_size_mb = (uint64_t)json_integer_value(json_object_get(o, "tmp_size_mb"));
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
    static const char *const op_names[] = {"devnode", "tmpfs", "file", "symlink", "readonly"};
    json_t *ops = json_object_get(o, "ops"), *x;
    s->ops = xcalloc(json_array_size(ops) + 1, sizeof *s->ops);
    json_array_foreach(ops, i, x) {
        const char *name = json_string_value(json_object_get(x, "op")), *src, *data;
        const char *dst = json_string_value(json_object_get(x, "dst"));
        size_t k = 0;
        while (k < ARRAY_LEN(op_names) && (!name || strcmp(op_names[k], name)))
            k++;
        if (k == ARRAY_LEN(op_names) || !dst || dst[0] != '/') {
            s->nops = i;
            json_decref(o);
            spec_free(s); /* nothing half-read for the caller to use or free */
            return jerr_set(e, EINVAL, "job spec: ops[%zu] is not a known step with an absolute dst", i);
        }
        s->ops[i].kind = (enum spec_op_kind)k;
        s->ops[i].dst = xstrdup(dst);
        if ((src = json_string_value(json_object_get(x, "src"))))
            s->ops[i].src = xstrdup(src);
        if ((data = json_string_value(json_object_get(x, "data"))))
            s->ops[i].data = xstrdup(data);
        s->ops[i].major = (uint32_t)json_integer_value(json_object_get(x, "major"));
        s->ops[i].minor = (uint32_t)json_integer_value(json_object_get(x, "minor"));
    }
    s->nops = json_array_size(ops);
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
    free(s->root_mount);
    free(s->hostname);
    free(s->workdir);
    free(s->cgroup_root);
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
    memset(s, 0, sizeof *s);
}
