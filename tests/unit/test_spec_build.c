/* Unit tests for the spec builder (src/exec/spec_build.c, src/exec/spec_gpu.c): a job's spec
 * made from an explicit context, without a daemon. The machine is the dgx-h100 fixture read
 * by the /proc backend (a real machine's view: its GPUs are not simulated), with device nodes
 * in a scratch directory and the driver's libraries and CUDA toolkit given as discovery would
 * have found them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/jobreq.h"
#include "common/util.h"
#include "exec/spec_build.h"
#include "gpu/gpu.h"

#define ID "0b5f0c1e-8a4e-4f7e-9a51-3c1d2e4f5a6b"
#define FIXTURE JOBLET_FIXTURES "/dgx-h100"

/* One machine and one job, as a caller of spec_build fills them. */
typedef struct world {
    gpu_config cfg;
    gpu_inventory inv;
    char dev[64];                 /* scratch gpu.dev_root */
    uint8_t online[CPU_MAX / 8];
    spec_gpu_lib libs[3];
    gpu_cuda cuda[1];
    job_req req;
    gpu_grants gpus;
    spec_mount volume;
    spec_ctx ctx;
} world;

static void req_set(job_req *r, enum jobreq_id id, const char *text)
{
    jerr e = {0};
    const jobreq_field *f = &jobreq_fields[id];
    if (jobreq_set_text(r, f, text, time(NULL), &e) < 0)
        fail_msg("%s=%s: %s", f->flag, text, e.msg);
}

/* `rnx job run --gpu=2 -e FOO=bar -e NVIDIA_VISIBLE_DEVICES=all python3 train.py` */
static void gpu2_request(job_req *r)
{
    jerr e = {0};
    memset(r, 0, sizeof *r);
    assert_int_equal(jobreq_set_command(r, "python3", &e), 0);
    jobreq_add_arg(r, "train.py");
    req_set(r, JR_GPU_COUNT, "2");
    assert_int_equal(jobreq_add_env(r, false, "FOO", "bar", &e), 0);
    assert_int_equal(jobreq_add_env(r, false, "NVIDIA_VISIBLE_DEVICES", "all", &e), 0);
    assert_int_equal(jobreq_add_env(r, true, "TOKEN", "s3cr3t", &e), 0);
}

/* The grant core/gpus.c makes for a whole GPU of the inventory. */
static void grant(gpu_grants *gs, const gpu_inventory *inv, int i)
{
    const gpu_dev *d = &inv->gpu[i];
    gpu_grant *gr = grant_list_add(gs);
    gr->index = d->index;
    snprintf(gr->uuid, sizeof gr->uuid, "%s", d->uuid);
    gr->minor = d->minor;
    snprintf(gr->bus_id, sizeof gr->bus_id, "%s", d->bus_id);
    snprintf(gr->name, sizeof gr->name, "%s", d->name);
    gr->memory_mb = d->memory_total_mb;
    gr->simulated = inv->simulated;
    gr->shared_mb = -1;
}

static int setup(void **state)
{
    world *w = calloc(1, sizeof *w);
    jerr e = {0};
    gpu_config_defaults(&w->cfg);
    snprintf(w->cfg.proc_root, sizeof w->cfg.proc_root, "%s/proc", FIXTURE);
    snprintf(w->cfg.sys_root, sizeof w->cfg.sys_root, "%s/sys", FIXTURE);
    if (gpu_backend_proc(&w->cfg, &w->inv, &e) < 0)
        fail_msg("the /proc backend on %s: %s", FIXTURE, e.msg);
    assert_int_equal(w->inv.n, 8);
    assert_false(w->inv.simulated);
    gpu2_request(&w->req);
    /* the host's nodes: nvidia-uvm and nvidia-uvm-tools exist (a character device is what is
     * checked); the GPUs' nodes are checked by the shim, not here */
    snprintf(w->dev, sizeof w->dev, "/tmp/test_spec_build.XXXXXX");
    assert_non_null(mkdtemp(w->dev));
    char p[128];
    snprintf(p, sizeof p, "%s/nvidia-uvm", w->dev);
    assert_int_equal(symlink("/dev/null", p), 0);
    snprintf(p, sizeof p, "%s/nvidia-uvm-tools", w->dev);
    assert_int_equal(symlink("/dev/null", p), 0);
    snprintf(w->cfg.dev_root, sizeof w->cfg.dev_root, "%s", w->dev);
    /* CPUs 0-3 online */
    w->online[0] = 0x0f;
    /* the driver's libraries as discovery found them in the loader cache: a graphics one too,
     * which the default capabilities (compute, utility) do not give */
    w->libs[0] = (spec_gpu_lib){"compute", {"libcuda.so", "/usr/lib/x86_64-linux-gnu/libcuda.so.535.129.03", "libcuda.so.1"}};
    w->libs[1] = (spec_gpu_lib){"utility",
                                {"libnvidia-ml.so", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.129.03", "libnvidia-ml.so.1"}};
    w->libs[2] = (spec_gpu_lib){"graphics",
                                {"libGLX_nvidia.so", "/usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.535.129.03", "libGLX_nvidia.so.0"}};
    /* one CUDA toolkit the driver can run, where the standard link points */
    snprintf(w->cuda[0].path, sizeof w->cuda[0].path, "/usr/local/cuda");
    snprintf(w->cuda[0].real, sizeof w->cuda[0].real, "/usr/local/cuda-12.2");
    snprintf(w->cuda[0].version, sizeof w->cuda[0].version, "12.2.2");
    w->cuda[0].major = 12, w->cuda[0].minor = 2;
    snprintf(w->cuda[0].compat, sizeof w->cuda[0].compat, "ok");

    grant(&w->gpus, &w->inv, 0);
    grant(&w->gpus, &w->inv, 1);
    w->volume = (spec_mount){"/var/lib/joblet/volumes/data", "/volumes/data", true};
    w->ctx = (spec_ctx){
        .id = ID,
        .req = &w->req,
        .gpus = &w->gpus,
        .uid = 60001,
        .gid = 60001,
        .owner_uid = 1000,
        .job_dir = "/var/lib/joblet/jobs/" ID,
        .work_dir = "/var/lib/joblet/jobs/" ID "/work",
        .root_mount = "/var/lib/joblet/root",
        .cgroup_root = "joblet.slice",
        .io_dev = "",
        .log_budget = "",
        .volumes = &w->volume,
        .nvolumes = 1,
        .stop_grace_s = 10,
        .tmp_size_mb = 256,
        .log_floor = 1 << 20,
        .gpu = {.dev_root = w->cfg.dev_root,
                .proc_root = w->cfg.proc_root,
                .inv = &w->inv,
                .cuda = w->cuda,
                .ncuda = 1,
                .libs = w->libs,
                .nlibs = 3,
                .online_cpus = w->online},
    };
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    char p[128];
    snprintf(p, sizeof p, "%s/nvidia-uvm", w->dev);
    unlink(p);
    snprintf(p, sizeof p, "%s/nvidia-uvm-tools", w->dev);
    unlink(p);
    rmdir(w->dev);
    jobreq_free(&w->req);
    grant_list_free(&w->gpus);
    free(w);
    return 0;
}

static const char *env_of(const job_spec *s, const char *name)
{
    size_t l = strlen(name);
    for (char **p = s->env; *p; p++)
        if (!strncmp(*p, name, l) && (*p)[l] == '=')
            return *p + l + 1;
    return NULL;
}

static const spec_op *op_at(const job_spec *s, enum spec_op_kind kind, const char *dst)
{
    for (size_t i = 0; i < s->nops; i++)
        if (s->ops[i].kind == kind && !strcmp(s->ops[i].dst, dst))
            return &s->ops[i];
    return NULL;
}

/* The same, where the test goes on to read it: fails the test when there is none. */
static const spec_op *op_must(const job_spec *s, enum spec_op_kind kind, const char *dst)
{
    const spec_op *o = op_at(s, kind, dst);
    if (!o) {
        fail_msg("no step of kind %d at %s", (int)kind, dst);
        abort();
    }
    return o;
}

static const spec_mount *mount_at(const job_spec *s, const char *dst)
{
    for (size_t i = 0; i < s->nmounts; i++)
        if (!strcmp(s->mounts[i].dst, dst))
            return &s->mounts[i];
    return NULL;
}

static const spec_mount *mount_must(const job_spec *s, const char *dst)
{
    const spec_mount *m = mount_at(s, dst);
    if (!m) {
        fail_msg("no mount at %s", dst);
        abort();
    }
    return m;
}

static bool has_rule(const job_spec *s, int major, int minor)
{
    for (size_t i = 0; i < s->ndevices; i++)
        if (s->devices[i].type == 'c' && s->devices[i].major == major && s->devices[i].minor == minor &&
            !strcmp(s->devices[i].access, "rw"))
            return true;
    return false;
}

static char *fixture_text(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/proc/%s", FIXTURE, rel);
    char *t = read_file(path, NULL);
    assert_non_null(t);
    return t;
}

/* The acceptance case of issue 27: a --gpu=2 job's devices, mounts and environment. */
static void test_gpu2_spec(void **state)
{
    world *w = *state;
    job_spec s;
    jerr e = {0};
    if (spec_build(&w->ctx, &s, &e) < 0)
        fail_msg("spec_build: %s", e.msg);

    /* the job */
    assert_string_equal(s.id, ID);
    assert_string_equal(s.hostname, "job-0b5f0c1e");
    assert_string_equal(s.argv[0], "python3");
    assert_string_equal(s.argv[1], "train.py");
    assert_null(s.argv[2]);
    assert_string_equal(s.workdir, "/work");
    assert_int_equal(s.uid, 60001);
    assert_int_equal(s.owner_uid, 1000);
    assert_null(s.runsc);
    assert_null(s.system_root);

    /* devices: the two granted GPUs' nodes (their minors), the control node and unified
     * memory (major from the fixture's /proc/devices), each allowed by a rule; no other GPU */
    const spec_op *n0 = op_must(&s, SPEC_DEVNODE, "/dev/nvidia0"), *n1 = op_must(&s, SPEC_DEVNODE, "/dev/nvidia1");
    char host[128];
    snprintf(host, sizeof host, "%s/nvidia0", w->dev);
    assert_string_equal(n0->src, host);
    assert_int_equal(n0->major, 195);
    assert_int_equal(n0->minor, w->inv.gpu[0].minor);
    assert_int_equal(n1->minor, w->inv.gpu[1].minor);
    assert_null(op_at(&s, SPEC_DEVNODE, "/dev/nvidia2"));
    assert_non_null(op_at(&s, SPEC_DEVNODE, "/dev/nvidiactl"));
    const spec_op *uvm = op_must(&s, SPEC_DEVNODE, "/dev/nvidia-uvm");
    assert_int_equal(uvm->major, 507);
    assert_non_null(op_at(&s, SPEC_DEVNODE, "/dev/nvidia-uvm-tools"));
    assert_null(op_at(&s, SPEC_DEVNODE, "/dev/nvidia-modeset"));
    assert_int_equal(s.ndevices, 5);
    assert_true(has_rule(&s, 195, 0));
    assert_true(has_rule(&s, 195, 1));
    assert_true(has_rule(&s, 195, 255));
    assert_true(has_rule(&s, 507, 0));
    assert_true(has_rule(&s, 507, 1));

    /* the job's own /proc/driver/nvidia: the driver's version, its params with
     * ModifyDeviceFiles 0, and only the granted GPUs' information */
    char *ver = fixture_text("driver/nvidia/version");
    const spec_op *f = op_must(&s, SPEC_FILE, "/proc/driver/nvidia/version");
    assert_string_equal(f->data, ver);
    free(ver);
    f = op_must(&s, SPEC_FILE, "/proc/driver/nvidia/params");
    assert_non_null(strstr(f->data, "ModifyDeviceFiles: 0\n"));
    assert_null(strstr(f->data, "ModifyDeviceFiles: 1"));
    for (int i = 0; i < 3; i++) {
        char dst[128], rel[128];
        snprintf(rel, sizeof rel, "driver/nvidia/gpus/%s/information", w->inv.gpu[i].bus_id);
        snprintf(dst, sizeof dst, "/proc/%s", rel);
        if (i == 2) {
            assert_null(op_at(&s, SPEC_FILE, dst));
            continue;
        }
        f = op_must(&s, SPEC_FILE, dst);
        char *info = fixture_text(rel);
        assert_string_equal(f->data, info);
        free(info);
    }

    /* mounts: the driver's compute and utility libraries read-only in /opt/nvidia/lib with the
     * names programs load, not the graphics one; the toolkit is under /usr, which every job
     * sees, so it is not bound; the volume last */
    const spec_mount *m = mount_must(&s, "/opt/nvidia/lib/libcuda.so.535.129.03");
    assert_string_equal(m->src, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.129.03");
    assert_false(m->rw);
    assert_non_null(mount_at(&s, "/opt/nvidia/lib/libnvidia-ml.so.535.129.03"));
    assert_null(mount_at(&s, "/opt/nvidia/lib/libGLX_nvidia.so.535.129.03"));
    assert_int_equal(s.nmounts, 3);
    assert_string_equal(s.mounts[2].dst, "/volumes/data");
    assert_true(s.mounts[2].rw);
    const spec_op *l = op_must(&s, SPEC_SYMLINK, "/opt/nvidia/lib/libcuda.so.1");
    assert_string_equal(l->src, "libcuda.so.535.129.03");
    l = op_must(&s, SPEC_SYMLINK, "/opt/nvidia/lib/libcuda.so");
    assert_string_equal(l->src, "libcuda.so.1");

    /* environment: CUDA numbers the job's GPUs 0..n-1, NVIDIA's variables name them by UUID
     * (what the request said of them is replaced), the toolkit and the libraries are found */
    char uuids[256];
    snprintf(uuids, sizeof uuids, "%s,%s", w->inv.gpu[0].uuid, w->inv.gpu[1].uuid);
    assert_string_equal(env_of(&s, "CUDA_VISIBLE_DEVICES"), "0,1");
    assert_string_equal(env_of(&s, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
    assert_string_equal(env_of(&s, "NVIDIA_VISIBLE_DEVICES"), uuids);
    assert_string_equal(env_of(&s, "NVIDIA_DRIVER_CAPABILITIES"), "compute,utility");
    assert_string_equal(env_of(&s, "CUDA_HOME"), "/usr/local/cuda");
    assert_string_equal(env_of(&s, "PATH"), SPEC_BUILD_DEFAULT_PATH ":/usr/local/cuda/bin");
    assert_string_equal(env_of(&s, "LD_LIBRARY_PATH"), "/opt/nvidia/lib:/usr/local/cuda/lib64");
    assert_string_equal(env_of(&s, "JOB_ID"), ID);
    assert_string_equal(env_of(&s, "HOME"), "/work");
    assert_string_equal(env_of(&s, "FOO"), "bar");
    assert_string_equal(env_of(&s, "TOKEN"), "s3cr3t");
    assert_null(env_of(&s, "JOBLET_GPUS_SIMULATED"));
    size_t nvis = 0;
    for (char **p = s.env; *p; p++)
        nvis += !strncmp(*p, "NVIDIA_VISIBLE_DEVICES=", 23);
    assert_int_equal(nvis, 1);

    /* pinned to the GPUs' CPUs that are online here (0-55,112-167 of the fixture; 0-3 here) */
    assert_string_equal(s.limits.cpus, "0-3");

    /* and it is a spec the shim can read */
    int fd = spec_to_fd(&s, &e);
    assert_true(fd >= 0);
    job_spec back;
    assert_int_equal(spec_load_fd(&back, fd, &e), 0);
    close(fd);
    assert_int_equal(back.nops, s.nops);
    assert_int_equal(back.ndevices, s.ndevices);
    assert_int_equal(back.nmounts, s.nmounts);
    spec_free(&back);
    spec_free(&s);
}

/* A fixture's simulated grant: the environment only, no device, no driver. */
static void test_simulated(void **state)
{
    world *w = *state;
    for (size_t i = 0; i < w->gpus.n; i++)
        w->gpus.g[i].simulated = true;
    job_spec s;
    jerr e = {0};
    assert_int_equal(spec_build(&w->ctx, &s, &e), 0);
    assert_int_equal(s.nops, 0);
    assert_int_equal(s.ndevices, 0);
    assert_int_equal(s.nmounts, 1); /* the volume */
    assert_string_equal(env_of(&s, "CUDA_VISIBLE_DEVICES"), "0,1");
    assert_string_equal(env_of(&s, "JOBLET_GPUS_SIMULATED"), "1");
    assert_string_equal(env_of(&s, "PATH"), SPEC_BUILD_DEFAULT_PATH);
    assert_null(env_of(&s, "LD_LIBRARY_PATH"));
    assert_string_equal(s.limits.cpus, "");
    spec_free(&s);
}

/* No grant: no GPU part; what the request said of NVIDIA_VISIBLE_DEVICES becomes void; a
 * runtime's variables come first and the job's own of the same name win. */
static void test_no_gpu_runtime(void **state)
{
    world *w = *state;
    grant_list_free(&w->gpus);
    jobreq_pair rt_env[] = {{"LANG", "de_DE.UTF-8"}, {"FOO", "from-runtime"}, {"PATH", "/ignored"}};
    w->ctx.system_root = "/var/lib/joblet/runtimes/py/rootfs";
    w->ctx.runtime_env = rt_env;
    w->ctx.nruntime_env = 3;
    job_spec s;
    jerr e = {0};
    assert_int_equal(spec_build(&w->ctx, &s, &e), 0);
    assert_int_equal(s.nops + s.ndevices, 0);
    assert_string_equal(s.system_root, "/var/lib/joblet/runtimes/py/rootfs");
    assert_string_equal(env_of(&s, "NVIDIA_VISIBLE_DEVICES"), "void");
    assert_null(env_of(&s, "CUDA_VISIBLE_DEVICES"));
    assert_string_equal(env_of(&s, "LANG"), "de_DE.UTF-8");
    assert_string_equal(env_of(&s, "FOO"), "bar");
    assert_string_equal(env_of(&s, "PATH"), SPEC_BUILD_DEFAULT_PATH);
    assert_string_equal(s.env[0], "LANG=de_DE.UTF-8"); /* the runtime's first */
    spec_free(&s);
}

/* gVisor asked for: the runsc fields and the GPUs' CDI names; the kvm platform's device;
 * refused, with why, where the machine has no runsc. */
static void test_gvisor(void **state)
{
    world *w = *state;
    jobreq_set_str(&w->req, JR_ISOLATION, "gvisor");
    w->ctx.sandbox_uid = 70001;
    w->ctx.gvisor = (spec_gvisor){true, NULL, "/usr/bin/runsc", "/var/lib/joblet/runsc", "kvm", true};
    job_spec s;
    jerr e = {0};
    if (spec_build(&w->ctx, &s, &e) < 0)
        fail_msg("spec_build: %s", e.msg);
    assert_string_equal(s.runsc, "/usr/bin/runsc");
    assert_string_equal(s.runsc_platform, "kvm");
    assert_true(s.runsc_nvproxy);
    assert_int_equal(s.runsc_sandbox_uid, 70001);
    char cdi[256];
    snprintf(cdi, sizeof cdi, "nvidia.com/gpu=%s,nvidia.com/gpu=%s", w->inv.gpu[0].uuid, w->inv.gpu[1].uuid);
    assert_string_equal(s.cdi_devices, cdi);
    assert_int_equal(s.ndevices, 6);
    assert_true(has_rule(&s, 10, 232));
    spec_free(&s);

    w->ctx.gvisor = (spec_gvisor){false, "runsc is not installed", NULL, NULL, NULL, false};
    assert_int_equal(spec_build(&w->ctx, &s, &e), -1);
    assert_string_equal(e.msg, "the job asks for gVisor, which this machine no longer has: runsc is not installed");
    assert_null(s.env);
    spec_free(&s);
}

/* A job with Slurm's variables is told what it really has, however it came to have it: its
 * memory limit whether it gave one or got the machine's default (a step's srun --mem is checked
 * against it), its CPUs (its cpuset, its GPUs' NUMA CPUs or the machine's, at most its quota), and
 * its GPUs. A job with no memory limit at all is told none. */
static void test_slurm_env(void **state)
{
    world *w = *state;
    job_spec s;
    jerr e = {0};
    grant_list_free(&w->gpus);
    w->req.slurm_env = true;
    w->ctx.number = 42;
    /* no limit given: the machine's default (core/submit.c sets it so), 4 CPUs online */
    w->req.max_memory_mb = 1638;
    w->req.memory_default = true;
    w->req.has |= 1ull << JR_MAX_MEMORY_MB | 1ull << JR_MEMORY_DEFAULT;
    assert_int_equal(spec_build(&w->ctx, &s, &e), 0);
    assert_string_equal(env_of(&s, "SLURM_JOB_ID"), "42");
    assert_string_equal(env_of(&s, "SLURM_MEM_PER_NODE"), "1638");
    assert_string_equal(env_of(&s, "SLURM_CPUS_ON_NODE"), "4");
    assert_string_equal(env_of(&s, "SLURM_JOB_CPUS_PER_NODE"), "4");
    assert_null(env_of(&s, "SLURM_CPUS_PER_TASK")); /* (Slurm's for -c alone) */
    assert_null(env_of(&s, "SLURM_GPUS"));
    assert_null(env_of(&s, "SLURM_GPUS_ON_NODE"));
    spec_free(&s);
    /* a quota of a CPU and a half keeps two busy; one beyond the machine has the machine's; a
     * cpuset its CPUs; the memory limit the job gave */
    static const struct {
        const char *max_cpu, *cores, *want;
    } cpus[] = {{"150", NULL, "2"}, {"800", NULL, "4"}, {NULL, "1-2", "2"}, {"100", "1-3", "1"}};
    for (size_t i = 0; i < ARRAY_LEN(cpus); i++) {
        w->req.max_cpu = 0;
        jobreq_set_str(&w->req, JR_CPU_CORES, NULL);
        if (cpus[i].max_cpu)
            req_set(&w->req, JR_MAX_CPU, cpus[i].max_cpu);
        if (cpus[i].cores)
            req_set(&w->req, JR_CPU_CORES, cpus[i].cores);
        w->req.memory_default = false;
        req_set(&w->req, JR_MAX_MEMORY_MB, "512MB");
        assert_int_equal(spec_build(&w->ctx, &s, &e), 0);
        assert_string_equal(env_of(&s, "SLURM_CPUS_ON_NODE"), cpus[i].want);
        assert_string_equal(env_of(&s, "SLURM_CPUS_PER_TASK"), cpus[i].want);
        assert_string_equal(env_of(&s, "SLURM_MEM_PER_NODE"), "512");
        spec_free(&s);
    }
    /* no memory limit at all (jobs.default_memory_percent 0): none is told; the job's own
     * variable of a name wins */
    w->req.max_memory_mb = 0;
    w->req.has &= ~(1ull << JR_MAX_MEMORY_MB);
    assert_int_equal(jobreq_add_env(&w->req, false, "SLURM_CPUS_ON_NODE", "1", &e), 0);
    assert_int_equal(spec_build(&w->ctx, &s, &e), 0);
    assert_null(env_of(&s, "SLURM_MEM_PER_NODE"));
    assert_string_equal(env_of(&s, "SLURM_CPUS_ON_NODE"), "1");
    spec_free(&s);
    /* GPUs: the granted ones; the CPUs those of their NUMA node (0-55,112-167 of the machine's
     * 224) */
    grant(&w->gpus, &w->inv, 0);
    grant(&w->gpus, &w->inv, 1);
    w->req.max_cpu = 0;
    jobreq_set_str(&w->req, JR_CPU_CORES, NULL);
    memset(w->online, 0xff, 224 / 8);
    assert_int_equal(spec_build(&w->ctx, &s, &e), 0);
    assert_string_equal(s.limits.cpus, "0-55,112-167");
    assert_string_equal(env_of(&s, "SLURM_GPUS"), "2");
    assert_string_equal(env_of(&s, "SLURM_GPUS_ON_NODE"), "2");
    assert_string_equal(env_of(&s, "SLURM_JOB_CPUS_PER_NODE"), "112");
    assert_null(env_of(&s, "SLURM_CPUS_PER_TASK"));
    spec_free(&s);
    /* without --slurm-env: none of it */
    w->req.slurm_env = false;
    assert_int_equal(spec_build(&w->ctx, &s, &e), 0);
    assert_null(env_of(&s, "SLURM_JOB_ID"));
    assert_null(env_of(&s, "SLURM_JOB_CPUS_PER_NODE"));
    spec_free(&s);
}

/* A GPU the driver no longer lists: the start fails with the path, and nothing is kept. */
static void test_gpu_gone(void **state)
{
    world *w = *state;
    snprintf(w->gpus.g[1].bus_id, sizeof w->gpus.g[1].bus_id, "0000:ff:00.0");
    job_spec s;
    jerr e = {0};
    assert_int_equal(spec_build(&w->ctx, &s, &e), -1);
    assert_int_equal(e.code, ENOENT);
    assert_non_null(strstr(e.msg, "GPU 0000:ff:00.0: "));
    assert_non_null(strstr(e.msg, "the driver no longer lists this GPU"));
    assert_null(s.env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gpu2_spec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_simulated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_gpu_runtime, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gvisor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slurm_env, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
