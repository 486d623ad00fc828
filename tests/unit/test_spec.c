/* Unit tests for src/exec/spec.c: the job spec joblet writes into a memfd (spec_to_fd) and
 * the shim reads from its fd 5 (spec_load_fd). Every field must come back as it was written,
 * the secret environment included; a spec that is empty (joblet withdrew it from a zygote
 * that answered too late), cut short, too large or malformed must give an error that says
 * so, never a crash, a leak or a half-read spec. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "exec/spec.h"

static char *argv_full[] = {"/bin/sh", "-c", "echo \"$TOKEN\" | tr a-z A-Z; printf '%s\\n' 'ü €'", "",
                            "arg with\nnewline and \"quotes\" and \\backslash", NULL};
/* env as joblet builds it: the request's env, then its secret_env, in one list */
static char *env_full[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
                           "HOME=/work",
                           "EMPTY=",
                           "UNICODE=日本語 ✓",
                           "CTRL=\x01\x1f\t\r\n",
                           "TOKEN=s3cr3t=with=equals and spaces \"q\" \\ /", /* secret_env */
                           "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                           NULL};
static cg_dev_rule devices_full[] = {
    {'c', 195, 0, "rw"},
    {'c', 195, 255, "rw"},
    {'c', 508, -1, "rwm"}, /* any minor */
    {'b', -1, -1, "r"},
};
static spec_mount mounts_full[] = {
    {"/usr/lib/x86_64-linux-gnu/nvidia", "/usr/lib/x86_64-linux-gnu/nvidia", false},
    {"/data/scratch space/ü", "/scratch", true},
};
static spec_op ops_full[] = {
    {SPEC_DEVNODE, "/dev/nvidia0", "/dev/nvidia0", NULL, 195, 0},
    {SPEC_TMPFS, NULL, "/proc/driver/nvidia", NULL, 0, 0},
    {SPEC_FILE, NULL, "/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54\n", 0, 0},
    {SPEC_FILE, NULL, "/proc/driver/nvidia/empty", "", 0, 0},
    {SPEC_SYMLINK, "libcuda.so.550.54", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", NULL, 0, 0},
    {SPEC_READONLY, NULL, "/proc/driver/nvidia", NULL, 0, 0},
};

#define ID "0b5f0c1e-8a4e-4f7e-9a51-3c1d2e4f5a6b"

static job_spec full_spec(void)
{
    job_spec s = {
        .id = ID,
        .job_dir = "/var/lib/joblet/jobs/" ID,
        .work_dir = "/var/lib/joblet/work/1000/" ID,
        .root_mount = "/run/joblet/root",
        .hostname = "job-0b5f0c1e",
        .argv = argv_full,
        .env = env_full,
        .workdir = "/work/sub dir",
        .uid = 1000,
        .gid = 1001,
        .net_host = true,
        .max_runtime_s = 86400 * 365,
        .stop_grace_s = 7,
        .tmp_size_mb = 512,
        .cgroup_root = "joblet.slice/jobs",
        .limits = {.cpu_pct = 250,
                   .mem_bytes = (8ull << 30) + 1,
                   .swap_bytes = 1ull << 30,
                   .pids_max = 4096,
                   .io_bps = 10485760,
                   .io_dev = "259:0",
                   .cpus = "0-3,8,10-11",
                   .mems = "0"},
        .devices = devices_full,
        .ndevices = sizeof devices_full / sizeof devices_full[0],
        .mounts = mounts_full,
        .nmounts = sizeof mounts_full / sizeof mounts_full[0],
        .ops = ops_full,
        .nops = sizeof ops_full / sizeof ops_full[0],
    };
    return s;
}

static void assert_str_or_null_equal(const char *a, const char *b)
{
    if (!a || !b)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

static void assert_strv_equal(char *const *a, char *const *b)
{
    assert_non_null(a);
    assert_non_null(b);
    size_t i = 0;
    for (; a[i] && b[i]; i++)
        assert_string_equal(a[i], b[i]);
    if (a[i] || b[i])
        fail_msg("lists differ in length at %zu", i);
}

/* b (read back) has every field of a (written). */
static void assert_spec_equal(const job_spec *a, const job_spec *b)
{
    assert_string_equal(a->id, b->id);
    assert_string_equal(a->job_dir, b->job_dir);
    assert_string_equal(a->work_dir, b->work_dir);
    assert_string_equal(a->root_mount, b->root_mount);
    assert_string_equal(a->hostname, b->hostname);
    assert_strv_equal(a->argv, b->argv);
    assert_strv_equal(a->env, b->env);
    assert_string_equal(a->workdir, b->workdir);
    assert_int_equal(a->uid, b->uid);
    assert_int_equal(a->gid, b->gid);
    assert_int_equal(a->net_host, b->net_host);
    assert_true(a->max_runtime_s == b->max_runtime_s);
    assert_true(a->stop_grace_s == b->stop_grace_s);
    assert_true(a->tmp_size_mb == b->tmp_size_mb);
    assert_string_equal(a->cgroup_root, b->cgroup_root);

    assert_int_equal(a->limits.cpu_pct, b->limits.cpu_pct);
    assert_true(a->limits.mem_bytes == b->limits.mem_bytes);
    assert_true(a->limits.swap_bytes == b->limits.swap_bytes);
    assert_true(a->limits.pids_max == b->limits.pids_max);
    assert_true(a->limits.io_bps == b->limits.io_bps);
    assert_string_equal(a->limits.io_dev, b->limits.io_dev);
    assert_string_equal(a->limits.cpus, b->limits.cpus);
    assert_string_equal(a->limits.mems, b->limits.mems);

    assert_int_equal(a->ndevices, b->ndevices);
    for (size_t i = 0; i < a->ndevices; i++) {
        assert_int_equal(a->devices[i].type, b->devices[i].type);
        assert_true(a->devices[i].major == b->devices[i].major);
        assert_true(a->devices[i].minor == b->devices[i].minor);
        assert_string_equal(a->devices[i].access, b->devices[i].access);
    }
    assert_int_equal(a->nmounts, b->nmounts);
    for (size_t i = 0; i < a->nmounts; i++) {
        assert_string_equal(a->mounts[i].src, b->mounts[i].src);
        assert_string_equal(a->mounts[i].dst, b->mounts[i].dst);
        assert_int_equal(a->mounts[i].rw, b->mounts[i].rw);
    }
    assert_int_equal(a->nops, b->nops);
    for (size_t i = 0; i < a->nops; i++) {
        assert_int_equal(a->ops[i].kind, b->ops[i].kind);
        assert_str_or_null_equal(a->ops[i].src, b->ops[i].src);
        assert_string_equal(a->ops[i].dst, b->ops[i].dst);
        assert_str_or_null_equal(a->ops[i].data, b->ops[i].data);
        assert_int_equal(a->ops[i].major, b->ops[i].major);
        assert_int_equal(a->ops[i].minor, b->ops[i].minor);
    }
}

/* A spec that failed to load holds nothing (and spec_free on it is harmless). */
static void assert_spec_empty(job_spec *s)
{
    job_spec zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(s, &zero, sizeof zero);
    spec_free(s);
}

static int memfd_with(const char *txt, size_t len)
{
    int fd = memfd_create("test-spec", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, txt, len), (ssize_t)len);
    return fd;
}

/* The whole text of a spec fd. */
static char *fd_text(int fd, size_t *len)
{
    off_t end = lseek(fd, 0, SEEK_END);
    assert_true(end > 0);
    char *t = malloc((size_t)end + 1);
    assert_non_null(t);
    assert_int_equal(pread(fd, t, (size_t)end, 0), end);
    t[end] = 0;
    *len = (size_t)end;
    return t;
}

/* ---- round trips ------------------------------------------------------------------- */

static void test_round_trip_full(void **state)
{
    (void)state;
    job_spec in = full_spec(), out;
    jerr e = {0};
    int fd = spec_to_fd(&in, &e);
    assert_true(fd >= 0);
    assert_int_equal(spec_load_fd(&out, fd, &e), 0);
    assert_spec_equal(&in, &out);
    spec_free(&out);
    close(fd);
}

/* No devices, mounts, ops or environment; limits all "unlimited". */
static void test_round_trip_minimal(void **state)
{
    (void)state;
    char *argv[] = {"true", NULL}, *env[] = {NULL};
    job_spec in = {.id = "x", .job_dir = "/j", .work_dir = "/w", .root_mount = "/r", .hostname = "h", .argv = argv, .env = env,
                   .workdir = "/", .cgroup_root = "joblet"};
    job_spec out;
    jerr e = {0};
    int fd = spec_to_fd(&in, &e);
    assert_true(fd >= 0);
    assert_int_equal(spec_load_fd(&out, fd, &e), 0);
    assert_spec_equal(&in, &out);
    assert_null(out.env[0]);
    assert_int_equal(out.uid, 0);
    assert_false(out.net_host);
    spec_free(&out);
    close(fd);
}

/* Extremes of the numeric fields: what does not fit JSON's int64 still round-trips bit for bit,
 * and an id of the full 36 characters is kept whole. */
static void test_round_trip_extremes(void **state)
{
    (void)state;
    job_spec in = full_spec(), out;
    in.uid = 4294967294u; /* above INT_MAX: (int) casts must not break it */
    in.gid = 2147483648u;
    in.max_runtime_s = UINT64_MAX;
    in.limits.mem_bytes = UINT64_MAX - 1;
    in.limits.cpu_pct = UINT32_MAX;
    cg_dev_rule dev = {'c', INT32_MAX, 0, "m"};
    in.devices = &dev;
    in.ndevices = 1;
    spec_op op = {SPEC_DEVNODE, "/dev/x", "/dev/x", NULL, UINT32_MAX, 1048575};
    in.ops = &op;
    in.nops = 1;
    memset(in.limits.cpus, '1', sizeof in.limits.cpus - 1); /* the longest that fits */
    jerr e = {0};
    int fd = spec_to_fd(&in, &e);
    assert_true(fd >= 0);
    assert_int_equal(spec_load_fd(&out, fd, &e), 0);
    assert_spec_equal(&in, &out);
    spec_free(&out);
    close(fd);
}

/* A job in delegated cgroups (cgroup.h) with a step hook: both read back as written; absent,
 * both are NULL (the shim makes the cgroups; no hold). */
static void test_round_trip_delegated_and_hook(void **state)
{
    (void)state;
    job_spec in = full_spec(), out;
    in.limits = (cg_limits){0};
    cg_given g = {.unified = "/sys/fs/cgroup/unified/slurm/job_7/step_0/task_0"};
    snprintf(g.v1[CGC_MEMORY], sizeof g.v1[CGC_MEMORY], "/sys/fs/cgroup/memory/slurm/uid_1000/job_7/step_0");
    snprintf(g.v1[CGC_PIDS], sizeof g.v1[CGC_PIDS], "/sys/fs/cgroup/pids/slurm/job_7");
    snprintf(g.freezer, sizeof g.freezer, "/sys/fs/cgroup/freezer/slurm/uid_1000/job_7/step_0");
    in.cgroup_given = &g;
    in.step_hook = "/usr/libexec/joblet/net-hook";
    gid_t groups[] = {27, 4242, 100};
    in.groups = groups;
    in.ngroups = 3;
    jerr e = {0};
    int fd = spec_to_fd(&in, &e);
    assert_true(fd >= 0);
    assert_int_equal(spec_load_fd(&out, fd, &e), 0);
    close(fd);
    assert_spec_equal(&in, &out);
    assert_non_null(out.cgroup_given);
    assert_memory_equal(out.cgroup_given, &g, sizeof g);
    assert_string_equal(out.step_hook, in.step_hook);
    assert_int_equal(out.ngroups, 3);
    assert_memory_equal(out.groups, groups, sizeof groups);
    spec_free(&out);

    in = full_spec();
    fd = spec_to_fd(&in, &e);
    assert_int_equal(spec_load_fd(&out, fd, &e), 0);
    close(fd);
    assert_null(out.cgroup_given);
    assert_null(out.step_hook);
    assert_null(out.groups);
    assert_int_equal(out.ngroups, 0);
    spec_free(&out);
}

/* What reaches the shim is a memfd (no file: the secret environment never touches a disk),
 * close-on-exec, its offset left at the end by the write; the reader does not depend on the
 * offset and can read it again. */
static void test_memfd(void **state)
{
    (void)state;
    job_spec in = full_spec(), out;
    jerr e = {0};
    int fd = spec_to_fd(&in, &e);
    assert_true(fd >= 0);
    assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = 0;
    assert_true(strncmp(target, "/memfd:joblet-spec", 18) == 0);
    size_t len;
    char *txt = fd_text(fd, &len);
    assert_true(lseek(fd, 0, SEEK_CUR) == (off_t)len);
    assert_non_null(strstr(txt, "s3cr3t=with=equals"));
    assert_int_equal(strlen(txt), len); /* JSON, no NUL in it */
    free(txt);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(spec_load_fd(&out, fd, &e), 0);
        assert_spec_equal(&in, &out);
        spec_free(&out);
    }
    close(fd);
}

/* ---- refusals ---------------------------------------------------------------------- */

/* The writer refuses a spec it cannot encode instead of writing a broken one. */
static void test_writer_refuses_null_strings(void **state)
{
    (void)state;
    job_spec in = full_spec();
    in.root_mount = NULL;
    jerr e = {0};
    assert_int_equal(spec_to_fd(&in, &e), -1);
    assert_int_equal(e.code, EINVAL);
    assert_non_null(strstr(e.msg, "job spec"));
}

/* A late zygote finds the spec joblet withdrew (ftruncate to 0): the shim must not start
 * the job, and must say why. */
static void test_withdrawn_spec(void **state)
{
    (void)state;
    job_spec in = full_spec(), out;
    jerr e = {0};
    int fd = spec_to_fd(&in, &e);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_int_equal(spec_load_fd(&out, fd, &e), -1);
    assert_int_equal(e.code, EINVAL);
    /* what the job's status.json will say: not a JSON parser's "'[' or '{' expected" */
    assert_true(strncmp(e.msg, "the job spec is empty", 21) == 0);
    assert_non_null(strstr(e.msg, "not started"));
    assert_spec_empty(&out);
    close(fd);
}

/* Cut anywhere (a spec half-written or half-withdrawn): an error, never part of a spec. */
static void test_truncated_spec(void **state)
{
    (void)state;
    job_spec in = full_spec(), out;
    jerr e = {0};
    int fd = spec_to_fd(&in, &e);
    assert_true(fd >= 0);
    size_t len;
    char *txt = fd_text(fd, &len);
    close(fd);
    for (size_t cut = 1; cut < len; cut++) {
        fd = memfd_with(txt, cut);
        memset(&e, 0, sizeof e);
        if (spec_load_fd(&out, fd, &e) != -1)
            fail_msg("a spec cut at %zu of %zu bytes was accepted", cut, len);
        assert_true(strncmp(e.msg, "cannot read the job spec", 24) == 0);
        assert_spec_empty(&out);
        close(fd);
    }
    free(txt);
}

/* More than SPEC_MAX_BYTES: refused without reading it (the memfd is sparse here). */
static void test_oversized_spec(void **state)
{
    (void)state;
    job_spec in = full_spec(), out;
    jerr e = {0};
    int fd = spec_to_fd(&in, &e);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, SPEC_MAX_BYTES + 1), 0);
    assert_int_equal(spec_load_fd(&out, fd, &e), -1);
    assert_int_equal(e.code, EFBIG);
    assert_non_null(strstr(e.msg, "job spec is larger than 64 MiB"));
    assert_spec_empty(&out);

    /* Below it, size alone is no reason to refuse: a spec followed by 1 MiB of blanks loads. */
    assert_int_equal(ftruncate(fd, 0), 0);
    close(fd);
    fd = spec_to_fd(&in, &e);
    assert_true(fd >= 0);
    size_t pad = 1 << 20;
    char *blanks = malloc(pad);
    assert_non_null(blanks);
    memset(blanks, ' ', pad);
    assert_int_equal(write(fd, blanks, pad), (ssize_t)pad);
    free(blanks);
    assert_int_equal(spec_load_fd(&out, fd, &e), 0);
    assert_spec_equal(&in, &out);
    spec_free(&out);
    close(fd);
}

static void test_bad_fd(void **state)
{
    (void)state;
    job_spec out;
    jerr e = {0};
    int fd = memfd_create("closed", MFD_CLOEXEC);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(spec_load_fd(&out, fd, &e), -1);
    assert_int_equal(e.code, EBADF);
    assert_non_null(strstr(e.msg, "job spec"));
    assert_spec_empty(&out);
}

static void load_bad(const char *txt, const char *why)
{
    job_spec out;
    jerr e = {0};
    int fd = memfd_with(txt, strlen(txt));
    int rc = spec_load_fd(&out, fd, &e);
    close(fd);
    if (rc != -1) {
        spec_free(&out);
        fail_msg("accepted a spec with %s: %s", why, txt);
    }
    if (e.code != EINVAL || !strstr(e.msg, "job spec"))
        fail_msg("spec with %s: code %d, message '%s'", why, e.code, e.msg);
    assert_spec_empty(&out);
}

/* A spec that is well-formed but for one thing. */
#define SPEC_HEAD "{\"id\":\"" ID "\",\"job_dir\":\"/j\",\"work_dir\":\"/w\",\"root_mount\":\"/r\",\"hostname\":\"h\",\"workdir\":\"/\","
#define SPEC_TAIL "\"uid\":1000,\"gid\":1000,\"net_host\":false,\"max_runtime_s\":0,\"stop_grace_s\":0,\"tmp_size_mb\":0," \
                  "\"cgroup_root\":\"joblet\",\"limits\":{},\"devices\":[],\"mounts\":[]"

static void test_malformed(void **state)
{
    (void)state;
    /* the well-formed base, so that each refusal below is for its one defect */
    {
        const char *ok = SPEC_HEAD "\"argv\":[\"true\"],\"env\":[]," SPEC_TAIL ",\"ops\":[]}";
        job_spec out;
        jerr e = {0};
        int fd = memfd_with(ok, strlen(ok));
        assert_int_equal(spec_load_fd(&out, fd, &e), 0);
        assert_string_equal(out.argv[0], "true");
        spec_free(&out);
        close(fd);
    }
    load_bad("not json", "no JSON");
    load_bad("{\"argv\":[\"true\"]", "an unclosed object");
    load_bad("{} {}", "two objects");
    load_bad("[]", "an array");
    load_bad("null", "null");
    load_bad("{}", "nothing in it");
    load_bad(SPEC_HEAD "\"env\":[]," SPEC_TAIL ",\"ops\":[]}", "no argv");
    load_bad(SPEC_HEAD "\"argv\":[],\"env\":[]," SPEC_TAIL ",\"ops\":[]}", "an empty argv");
    load_bad(SPEC_HEAD "\"argv\":\"true\",\"env\":[]," SPEC_TAIL ",\"ops\":[]}", "argv a string");
    load_bad(SPEC_HEAD "\"argv\":[\"true\"]," SPEC_TAIL ",\"ops\":[]}", "no env");
    load_bad(SPEC_HEAD "\"argv\":[\"true\"],\"env\":{}," SPEC_TAIL ",\"ops\":[]}", "env an object");
    load_bad(SPEC_HEAD "\"argv\":[\"true\"],\"env\":[],\"limits\":[],\"uid\":1,\"gid\":1}", "limits an array");
    load_bad(SPEC_HEAD "\"argv\":[\"tr\\u0000ue\"],\"env\":[]," SPEC_TAIL ",\"ops\":[]}", "a NUL in argv");
    load_bad(SPEC_HEAD "\"argv\":[\"true\"],\"env\":[]," SPEC_TAIL ",\"ops\":[{\"op\":\"format\",\"dst\":\"/\"}]}",
             "an unknown op");
    load_bad(SPEC_HEAD "\"argv\":[\"true\"],\"env\":[]," SPEC_TAIL ",\"ops\":[{\"op\":\"tmpfs\"}]}", "an op with no dst");
    load_bad(SPEC_HEAD "\"argv\":[\"true\"],\"env\":[]," SPEC_TAIL
                       ",\"ops\":[{\"op\":\"tmpfs\",\"dst\":\"/a\",\"src\":\"x\",\"data\":\"y\"},"
                       "{\"op\":\"symlink\",\"src\":\"t\",\"dst\":\"rel\"}]}",
             "an op with a relative dst after a good one");
}

/* The full spec's JSON with the value at path ("limits.cpus", "devices.0.type") replaced by
 * value (stolen), or removed when value is NULL; loaded: 0 or -1. */
static int load_edited(const char *path, json_t *value, jerr *e, job_spec *out)
{
    job_spec in = full_spec();
    int fd = spec_to_fd(&in, e);
    assert_true(fd >= 0);
    size_t len;
    char *txt = fd_text(fd, &len);
    close(fd);
    json_t *root = json_loadb(txt, len, 0, NULL);
    assert_non_null(root);
    free(txt);
    char key[64];
    snprintf(key, sizeof key, "%s", path);
    json_t *parent = root;
    char *k = key, *dot;
    while ((dot = strchr(k, '.'))) {
        *dot = 0;
        parent = json_is_array(parent) ? json_array_get(parent, strtoul(k, NULL, 10)) : json_object_get(parent, k);
        assert_non_null(parent);
        k = dot + 1;
    }
    if (json_is_array(parent))
        assert_int_equal(value ? json_array_set_new(parent, strtoul(k, NULL, 10), value)
                               : json_array_remove(parent, strtoul(k, NULL, 10)),
                         0);
    else
        assert_int_equal(value ? json_object_set_new(parent, k, value) : json_object_del(parent, k), 0);
    txt = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    fd = memfd_with(txt, strlen(txt));
    free(txt);
    int rc = spec_load_fd(out, fd, e);
    close(fd);
    return rc;
}

static void edited_bad(const char *path, json_t *value, const char *why)
{
    job_spec out;
    jerr e = {0};
    if (load_edited(path, value, &e, &out) != -1) {
        spec_free(&out);
        fail_msg("accepted a spec whose %s is %s", path, why);
    }
    if (e.code != EINVAL || !strstr(e.msg, "job spec"))
        fail_msg("%s %s: code %d, message '%s'", path, why, e.code, e.msg);
    assert_spec_empty(&out);
}

/* One field missing or of the wrong kind: the job must not start with a default in its
 * place (uid 0, an empty id, "" for an argument, a cpuset list cut short). */
static void test_malformed_fields(void **state)
{
    (void)state;
    static const char *const strings[] = {"id", "job_dir", "work_dir", "root_mount", "hostname", "workdir", "cgroup_root"};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        edited_bad(strings[i], NULL, "missing");
        edited_bad(strings[i], json_integer(1), "a number");
        edited_bad(strings[i], json_null(), "null");
    }
    edited_bad("id", json_string(""), "empty");
    edited_bad("id", json_string(ID "0"), "longer than an id");
    edited_bad("argv.1", json_integer(1), "a number");
    edited_bad("argv.0", json_null(), "null");
    edited_bad("env.5", json_true(), "true");
    edited_bad("env.0", json_pack("[s]", "PATH=/bin"), "a list");
    edited_bad("uid", NULL, "missing");
    edited_bad("gid", NULL, "missing");
    edited_bad("uid", json_string("1000"), "a string");
    edited_bad("uid", json_real(1000.0), "a real");
    edited_bad("uid", json_integer(-1), "-1");
    edited_bad("gid", json_integer(4294967295LL), "(gid_t)-1");
    edited_bad("uid", json_integer(4294967296LL), "too large");
    edited_bad("limits", json_array(), "a list");
    char big[300];
    memset(big, '1', sizeof big - 1);
    big[sizeof big - 1] = 0;
    edited_bad("limits.cpus", json_string(big), "too long for a cpuset list");
    edited_bad("limits.mems", json_string(big), "too long");
    edited_bad("limits.io_dev", json_string(big), "too long");
    edited_bad("limits.cpus", json_integer(3), "a number");
    edited_bad("devices", json_string("all"), "not a list");
    edited_bad("devices.0.type", json_string("a"), "not c or b");
    edited_bad("devices.0.type", NULL, "missing");
    edited_bad("devices.0.access", json_string("rwmx"), "too long");
    edited_bad("mounts", json_object(), "an object");
    edited_bad("mounts.1.src", NULL, "missing");
    edited_bad("mounts.1.dst", NULL, "missing");
    edited_bad("mounts.1.dst", json_string("scratch"), "relative");
    edited_bad("ops", json_integer(0), "not a list");
    edited_bad("ops.5.op", json_string("mount"), "unknown");
    edited_bad("ops.2.dst", json_string(""), "empty");

    edited_bad("cgroup_given", json_string("/sys/fs/cgroup/x"), "a string");
    edited_bad("cgroup_given", json_object(), "empty");
    edited_bad("cgroup_given", json_pack("{s:s}", "unified", "relative/x"), "relative");
    edited_bad("groups", json_string("27"), "not a list");
    edited_bad("groups", json_pack("[i,s]", 27, "wheel"), "a name, not an id");
    edited_bad("groups", json_pack("[i]", -1), "negative");
    json_t *many = json_array();
    for (int k = 0; k <= SPEC_GROUPS_MAX; k++)
        json_array_append_new(many, json_integer(k));
    edited_bad("groups", many, "longer than SPEC_GROUPS_MAX");
    edited_bad("cgroup_given", json_pack("{s:{s:s}}", "v1", "freezer", "/sys/fs/cgroup/freezer/x"), "a controller joblet does not use");
    edited_bad("cgroup_given", json_pack("{s:{s:i}}", "v1", "memory", 3), "a number for a path");
    char longpath[400];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = 0;
    edited_bad("cgroup_given", json_pack("{s:s}", "unified", longpath), "too long");
    edited_bad("cgroup_given", json_pack("{s:{s:s}}", "v1", "memory", longpath), "too long");
    edited_bad("cgroup_given", json_pack("{s:s,s:s}", "unified", "/sys/fs/cgroup/unified/x", "freezer", "step_0"),
               "a relative freezer");
    edited_bad("cgroup_given", json_pack("{s:s,s:s}", "unified", "/sys/fs/cgroup/unified/x", "freezer", longpath),
               "a freezer path too long");
    edited_bad("cgroup_given", json_pack("{s:s}", "freezer", "/sys/fs/cgroup/freezer/x"), "only a freezer");
    edited_bad("step_hook", json_string("hook.sh"), "relative");
    edited_bad("step_hook", json_true(), "true");

    /* What may be absent: the lists (none of them), and limits' strings ("" = no limit). */
    static const char *const optional[] = {"devices", "mounts", "ops", "limits.cpus", "limits.io_dev", "limits.mems",
                                           "net_host", "max_runtime_s"};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
        job_spec out;
        jerr e = {0};
        if (load_edited(optional[i], NULL, &e, &out) != 0)
            fail_msg("without %s: %s", optional[i], e.msg);
        spec_free(&out);
    }
    job_spec out;
    jerr e = {0};
    assert_int_equal(load_edited("limits.cpus", json_string(""), &e, &out), 0);
    assert_string_equal(out.limits.cpus, "");
    assert_int_equal(out.nops, sizeof ops_full / sizeof ops_full[0]);
    spec_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_full),
        cmocka_unit_test(test_round_trip_minimal),
        cmocka_unit_test(test_round_trip_extremes),
        cmocka_unit_test(test_round_trip_delegated_and_hook),
        cmocka_unit_test(test_memfd),
        cmocka_unit_test(test_writer_refuses_null_strings),
        cmocka_unit_test(test_withdrawn_spec),
        cmocka_unit_test(test_truncated_spec),
        cmocka_unit_test(test_oversized_spec),
        cmocka_unit_test(test_bad_fd),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_malformed_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
