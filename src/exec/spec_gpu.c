/* What a GPU grant becomes in the job's spec (spec_gpu.h): device nodes and the device filter
 * rules that let the job open exactly them, the job's own /proc/driver/nvidia, and the
 * environment. Nothing here touches the job: the executor applies the spec (DESIGN §3.4). A
 * simulated grant (gpu.fixture) gets the environment only: no device exists behind it. What it
 * knows of the machine comes in a spec_gpu_host: no global is read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/parse.h"
#include "../common/util.h"
#include "spec_gpu.h"

#define NVIDIA_MAJOR SPEC_GPU_NVIDIA_MAJOR
#define NVIDIACTL_MINOR SPEC_GPU_NVIDIACTL_MINOR
#define NVIDIA_MODESET_MINOR 254

static spec_op *push_op(spec_gpu *g);
static int node_exists(const char *path);
static void add_mount(spec_gpu *g, const char *src, const char *dst);
static void append(char *list, size_t len, const char *item);

/* The driver's user-space libraries by capability (NVIDIA_DRIVER_CAPABILITIES), after
 * libnvidia-container's lists. Each is found through the loader cache and must be of the
 * running driver's version: a leftover library of an older driver would fail in strange ways. */
const spec_gpu_lib_name spec_gpu_lib_names[] = {
    {"utility", "libnvidia-ml.so"},         {"utility", "libnvidia-cfg.so"},
    {"compute", "libcuda.so"},              {"compute", "libcudadebugger.so"},
    {"compute", "libnvidia-opencl.so"},     {"compute", "libnvidia-gpucomp.so"},
    {"compute", "libnvidia-ptxjitcompiler.so"}, {"compute", "libnvidia-fatbinaryloader.so"},
    {"compute", "libnvidia-allocator.so"},  {"compute", "libnvidia-compiler.so"},
    {"compute", "libnvidia-nvvm.so"},       {"compute", "libnvidia-pkcs11.so"},
    {"video", "libvdpau_nvidia.so"},        {"video", "libnvidia-encode.so"},
    {"video", "libnvidia-opticalflow.so"},  {"video", "libnvcuvid.so"},
    {"graphics", "libnvidia-eglcore.so"},   {"graphics", "libnvidia-glcore.so"},
    {"graphics", "libnvidia-tls.so"},       {"graphics", "libnvidia-glsi.so"},
    {"graphics", "libnvidia-fbc.so"},       {"graphics", "libnvidia-rtcore.so"},
    {"graphics", "libnvoptix.so"},          {"graphics", "libGLX_nvidia.so"},
    {"graphics", "libEGL_nvidia.so"},       {"graphics", "libGLESv2_nvidia.so"},
    {"graphics", "libGLESv1_CM_nvidia.so"}, {"graphics", "libnvidia-glvkspirv.so"},
};
const size_t spec_gpu_nlib_names = sizeof spec_gpu_lib_names / sizeof spec_gpu_lib_names[0];
#define JOB_DRIVER_DIR "/opt/nvidia/lib"
/* where a job in a runtime finds the host's CUDA toolkit (CUDA_HOME) */
#define JOB_TOOLKIT_DIR "/opt/nvidia/cuda"

/* One call's inputs. */
typedef struct build {
    const char *id;
    const job_req *req;
    const gpu_grants *gpus;
    const spec_gpu_host *h;
} build;

static int cap_wanted(const char *caps, const char *cap)
{
    if (strstr(caps, "all"))
        return 1;
    size_t l = strlen(cap);
    for (const char *p = caps; (p = strstr(p, cap)); p += l)
        if ((p == caps || p[-1] == ',') && (p[l] == ',' || !p[l]))
            return 1;
    return 0;
}

static void set_env(spec_gpu *g, const char *name, const char *value)
{
    g->env = xrealloc(g->env, (g->nenv + 1) * sizeof *g->env);
    g->env[g->nenv++] = (jobreq_pair){xstrdup(name), xstrdup(value)};
}

/* The job's driver directory: each library read-only under its real name, with the link
 * programs load (libcuda.so.1) and the development link (libcuda.so). */
static void add_driver_libs(const build *b, spec_gpu *g)
{
    const char *caps = b->req->gpu_caps ? b->req->gpu_caps : "compute,utility";
    int any = 0;
    for (size_t i = 0; i < b->h->nlibs; i++) {
        const spec_gpu_lib *d = &b->h->libs[i];
        if (!cap_wanted(caps, d->cap))
            continue;
        const char *base = strrchr(d->lib.real, '/') ? strrchr(d->lib.real, '/') + 1 : d->lib.real;
        char dst[700], link[300];
        snprintf(dst, sizeof dst, JOB_DRIVER_DIR "/%s", base);
        add_mount(g, d->lib.real, dst);
        if (strcmp(d->lib.soname, base) != 0) {
            snprintf(link, sizeof link, JOB_DRIVER_DIR "/%s", d->lib.soname);
            spec_op *o = push_op(g);
            o->kind = SPEC_SYMLINK;
            o->src = xstrdup(base);
            o->dst = xstrdup(link);
        }
        if (strcmp(d->lib.prefix, d->lib.soname) != 0 && strcmp(d->lib.prefix, base) != 0) {
            snprintf(link, sizeof link, JOB_DRIVER_DIR "/%s", d->lib.prefix);
            spec_op *o = push_op(g);
            o->kind = SPEC_SYMLINK;
            o->src = xstrdup(d->lib.soname);
            o->dst = xstrdup(link);
        }
        any = 1;
    }
    if (any)
        append(g->ld_add, sizeof g->ld_add, JOB_DRIVER_DIR);
}

int spec_gpu_char_major(const char *proc_root, const char *name)
{
    char path[512], line[128];
    snprintf(path, sizeof path, "%s/devices", proc_root);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int major = -1, in_char = 0;
    while (fgets(line, sizeof line, f)) {
        char dev[64];
        int m;
        if (strncmp(line, "Character devices:", 18) == 0)
            in_char = 1;
        else if (strncmp(line, "Block devices:", 14) == 0)
            in_char = 0;
        else if (in_char && sscanf(line, "%d %63s", &m, dev) == 2 && strcmp(dev, name) == 0)
            major = m;
    }
    fclose(f);
    return major;
}

static spec_op *push_op(spec_gpu *g)
{
    g->ops = xrealloc(g->ops, (g->nops + 1) * sizeof *g->ops);
    memset(&g->ops[g->nops], 0, sizeof *g->ops);
    return &g->ops[g->nops++];
}

static void add_node(spec_gpu *g, const char *host, const char *dst, int major, int minor)
{
    spec_op *o = push_op(g);
    o->kind = SPEC_DEVNODE;
    o->src = xstrdup(host);
    o->dst = xstrdup(dst);
    o->major = (uint32_t)major;
    o->minor = (uint32_t)minor;
    g->rules = xrealloc(g->rules, (g->nrules + 1) * sizeof *g->rules);
    g->rules[g->nrules++] = (cg_dev_rule){'c', major, minor, "rw"};
}

static void add_file(spec_gpu *g, const char *dst, char *content /* taken */)
{
    spec_op *o = push_op(g);
    o->kind = SPEC_FILE;
    o->dst = xstrdup(dst);
    o->data = content;
}

static void add_simple(spec_gpu *g, enum spec_op_kind kind, const char *dst)
{
    spec_op *o = push_op(g);
    o->kind = kind;
    o->dst = xstrdup(dst);
}

/* The driver's params with ModifyDeviceFiles: 0, so that nothing in the job (a CUDA library
 * calling nvidia-modprobe) tries to create device nodes: the job has exactly the ones given. */
static char *params_without_modify(const char *proc_root)
{
    char path[512];
    snprintf(path, sizeof path, "%s/driver/nvidia/params", proc_root);
    char *in = read_file(path, NULL);
    size_t cap = (in ? strlen(in) : 0) + 64, n = 0;
    char *out = xmalloc(cap);
    int seen = 0;
    out[0] = 0;
    for (char *save = NULL, *line = in ? strtok_r(in, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "ModifyDeviceFiles:", 18) == 0) {
            line = "ModifyDeviceFiles: 0";
            seen = 1;
        }
        n += (size_t)snprintf(out + n, cap - n, "%s\n", line);
    }
    if (!seen)
        snprintf(out + n, cap - n, "ModifyDeviceFiles: 0\n");
    free(in);
    return out;
}

static int node_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

static void add_mount(spec_gpu *g, const char *src, const char *dst)
{
    g->mounts = xrealloc(g->mounts, (g->nmounts + 1) * sizeof *g->mounts);
    g->mounts[g->nmounts++] = (spec_mount){xstrdup(src), xstrdup(dst), false};
}

static void append(char *list, size_t len, const char *item)
{
    size_t l = strlen(list);
    snprintf(list + l, len - l, "%s%s", l ? ":" : "", item);
}

/* Directories every job already sees read-only (mounts.c, system_dirs). */
static int host_visible(const char *path)
{
    static const char *const dirs[] = {"/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/etc/"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (strncmp(path, dirs[i], strlen(dirs[i])) == 0)
            return 1;
    return 0;
}

/* The CUDA toolkit a GPU job gets: /usr/local/cuda when the driver can run it (it is what the
 * admin pointed the standard link at), else the newest one it can run. Mounted read-only where
 * the host has it, PATH and LD_LIBRARY_PATH extended, CUDA_HOME set. */
static void add_toolkit(const build *b, spec_gpu *g)
{
    const gpu_cuda *best = NULL;
    const spec_gpu_host *h = b->h;
    for (int i = 0; i < h->ncuda; i++) {
        const gpu_cuda *t = &h->cuda[i];
        if (strcmp(t->compat, "ok") && strcmp(t->compat, "minor-version"))
            continue;
        size_t l = strlen(t->path), k = strlen("/usr/local/cuda");
        if (l >= k && strcmp(t->path + l - k, "/usr/local/cuda") == 0) { /* under gpu.cuda_search_root too */
            best = t;
            break;
        }
        if (!best || t->major * 1000 + t->minor > best->major * 1000 + best->minor)
            best = t;
    }
    if (!best) {
        if (h->ncuda)
            log_warn("job %s: no CUDA toolkit on this host can run on driver %s; the job gets none", b->id,
                     h->inv->driver_version);
        return;
    }
    /* In a runtime the host's /usr is not the job's (and the runtime's is read-only): the
     * toolkit goes to a directory of its own on the job's root. */
    const char *where = b->req->runtime ? JOB_TOOLKIT_DIR : best->path;
    if (b->req->runtime || !host_visible(best->real))
        add_mount(g, best->real, where);
    set_env(g, "CUDA_HOME", where);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/bin", where);
    append(g->path_add, sizeof g->path_add, dir);
    snprintf(dir, sizeof dir, "%s/lib64", where);
    append(g->ld_add, sizeof g->ld_add, dir);
}

/* A GPU job runs on the CPUs and memory of its GPUs' NUMA nodes (DMA to a remote node is
 * slow), unless it chose --cpu-cores. Only CPUs and nodes this host has count: a simulated
 * machine's CPU lists describe another machine. */
void spec_gpu_locality(const gpu_grants *gpus, const spec_gpu_host *h, char *cpus, size_t cpus_len, char *mems,
                       size_t mems_len)
{
    uint8_t want[CPU_MAX / 8] = {0}, mask[CPU_MAX / 8];
    uint64_t nodes = 0;
    int any = 0;
    cpus[0] = mems[0] = 0;
    for (size_t i = 0; i < gpus->n; i++) {
        const gpu_grant *gr = &gpus->g[i];
        int k = gpu_find(h->inv, *gr->parent_uuid ? gr->parent_uuid : gr->uuid);
        jerr e = {0};
        if (k < 0 || !*h->inv->gpu[k].local_cpus || parse_cpu_list("local_cpus", h->inv->gpu[k].local_cpus, mask, &e) < 0)
            return; /* one GPU of unknown locality: no preference at all */
        for (size_t b = 0; b < sizeof want; b++)
            want[b] |= mask[b] & h->online_cpus[b];
        int node = h->inv->gpu[k].numa_node;
        char path[64];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d", node);
        if (node >= 0 && node < 64 && access(path, F_OK) == 0)
            nodes |= 1ull << node;
    }
    for (size_t b = 0; b < sizeof want; b++)
        any |= want[b];
    if (!any)
        return;
    format_cpu_list(want, cpus, cpus_len);
    for (int n = 0; n < 64; n++)
        if (nodes >> n & 1) {
            size_t l = strlen(mems);
            snprintf(mems + l, mems_len - l, "%s%d", l ? "," : "", n);
        }
}

/* What CUDA and the NVIDIA container conventions read. Inside the job only its own GPUs
 * exist, so CUDA numbers them 0..n-1 (in bus order, which CUDA_DEVICE_ORDER makes CUDA keep),
 * and a MIG device by its UUID; NVIDIA_VISIBLE_DEVICES names them by UUID, which means the
 * same thing everywhere. */
static void add_env(const build *b, spec_gpu *g)
{
    char cuda[GPU_MAX * 100] = "", uuids[GPU_MAX * 100] = "";
    for (size_t i = 0; i < b->gpus->n; i++) {
        const char *uuid = b->gpus->g[i].uuid;
        size_t l = strlen(cuda), u = strlen(uuids);
        if (b->gpus->g[i].mig)
            snprintf(cuda + l, sizeof cuda - l, "%s%s", i ? "," : "", uuid);
        else
            snprintf(cuda + l, sizeof cuda - l, "%s%zu", i ? "," : "", i);
        snprintf(uuids + u, sizeof uuids - u, "%s%s", i ? "," : "", uuid);
    }
    const char *caps = b->req->gpu_caps;
    set_env(g, "CUDA_VISIBLE_DEVICES", cuda);
    set_env(g, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    set_env(g, "NVIDIA_VISIBLE_DEVICES", uuids);
    set_env(g, "NVIDIA_DRIVER_CAPABILITIES", caps ? caps : "compute,utility");
    if (b->gpus->n && b->gpus->g[0].simulated)
        set_env(g, "JOBLET_GPUS_SIMULATED", "1");
}

/* A shared job reaches its GPU through that GPU's MPS server: the server's pipe directory at
 * MPS's default place, its memory reservation as a hard limit, and SMs in proportion. */
#define MPS_PIPE_IN_JOB "/tmp/nvidia-mps"
static void add_mps(const build *b, spec_gpu *g)
{
    int idx = b->gpus->g[0].index;
    uint64_t mb = (uint64_t)b->req->gpu_memory_mb;
    int64_t total = idx >= 0 && idx < b->h->inv->n ? b->h->inv->gpu[idx].memory_total_mb : 0;
    char lim[64], pct[16];
    if (b->h->mps_pipe_dir) {
        g->mounts = xrealloc(g->mounts, (g->nmounts + 1) * sizeof *g->mounts);
        g->mounts[g->nmounts++] = (spec_mount){xstrdup(b->h->mps_pipe_dir), xstrdup(MPS_PIPE_IN_JOB), true};
    }
    snprintf(lim, sizeof lim, "0=%lluM", (unsigned long long)mb);
    snprintf(pct, sizeof pct, "%d", total > 0 ? (int)((mb * 100 + (uint64_t)total - 1) / (uint64_t)total) : 100);
    set_env(g, "CUDA_MPS_PIPE_DIRECTORY", MPS_PIPE_IN_JOB);
    set_env(g, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", lim);
    set_env(g, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct);
}

int spec_gpu_build(const char *id, const job_req *req, const gpu_grants *gpus, const spec_gpu_host *h, spec_gpu *g,
                   jerr *e)
{
    const build in = {id, req, gpus, h}, *b = &in;
    memset(g, 0, sizeof *g);
    size_t n = b->gpus->n;
    if (n)
        add_env(b, g);
    if (n && b->req->gpu_share)
        add_mps(b, g);
    if (!n || b->gpus->g[0].simulated)
        return 0;
    const spec_gpu_host *c = h;
    char host[512], dst[128];
    for (size_t i = 0; i < n; i++) {
        int minor = b->gpus->g[i].minor;
        snprintf(host, sizeof host, "%s/nvidia%d", c->dev_root, minor);
        snprintf(dst, sizeof dst, "/dev/nvidia%d", minor);
        add_node(g, host, dst, NVIDIA_MAJOR, minor);
    }
    snprintf(host, sizeof host, "%s/nvidiactl", c->dev_root);
    add_node(g, host, "/dev/nvidiactl", NVIDIA_MAJOR, NVIDIACTL_MINOR);
    /* Graphics and display need the modeset node too, when the host has one. */
    const char *caps = b->req->gpu_caps;
    if (caps && (cap_wanted(caps, "graphics") || cap_wanted(caps, "display"))) {
        snprintf(host, sizeof host, "%s/nvidia-modeset", c->dev_root);
        if (node_exists(host))
            add_node(g, host, "/dev/nvidia-modeset", NVIDIA_MAJOR, NVIDIA_MODESET_MINOR);
        else
            log_warn("job %s: graphics asked for, but %s does not exist", b->id, host);
    }
    /* A MIG device is reached through its parent's node plus the capability nodes of its GPU
     * and compute instances; only those caps are allowed, so no other instance can be opened. */
    int caps_major = -1;
    for (size_t i = 0; i < n; i++) {
        const gpu_grant *gr = &b->gpus->g[i];
        if (!gr->mig)
            continue;
        if (caps_major < 0 && (caps_major = spec_gpu_char_major(c->proc_root, "nvidia-caps")) < 0) {
            spec_gpu_free(g);
            return jerr_set(e, ENOENT, "MIG device %s: nvidia-caps is not in %s/devices", gr->uuid,
                            c->proc_root);
        }
        for (int k = 0; k < 2; k++) {
            int cap = k ? gr->ci_cap_minor : gr->gi_cap_minor;
            snprintf(host, sizeof host, "%s/nvidia-caps/nvidia-cap%d", c->dev_root, cap);
            snprintf(dst, sizeof dst, "/dev/nvidia-caps/nvidia-cap%d", cap);
            add_node(g, host, dst, caps_major, cap);
        }
    }
    /* Unified memory: CUDA needs it, but the module may not be loaded (or its nodes not made
     * yet) on a host that only runs nvidia-smi; a job then gets what exists, with a warning. */
    int uvm = spec_gpu_char_major(c->proc_root, "nvidia-uvm");
    static const char *const uvm_nodes[] = {"nvidia-uvm", "nvidia-uvm-tools"};
    for (int k = 0; k < 2; k++) {
        snprintf(host, sizeof host, "%s/%s", c->dev_root, uvm_nodes[k]);
        snprintf(dst, sizeof dst, "/dev/%s", uvm_nodes[k]);
        if (uvm >= 0 && node_exists(host))
            add_node(g, host, dst, uvm, k);
        else
            log_warn("job %s: %s is not available on this host (%s); CUDA programs that need unified memory "
                     "will fail", b->id, dst, uvm < 0 ? "nvidia-uvm is not in /proc/devices" : "no host node");
    }

    /* The job's /proc/driver/nvidia: only its GPUs. Mounted over the real directory when the
     * kernel has one, else over /proc/driver (a host without the module: tests, simulations). */
    char base[64];
    int over_nvidia = access("/proc/driver/nvidia", F_OK) == 0;
    snprintf(base, sizeof base, "%s", over_nvidia ? "/proc/driver/nvidia" : "/proc/driver");
    add_simple(g, SPEC_TMPFS, base);
    snprintf(host, sizeof host, "%s/driver/nvidia/version", c->proc_root);
    char *ver = read_file(host, NULL);
    if (ver)
        add_file(g, "/proc/driver/nvidia/version", ver);
    add_file(g, "/proc/driver/nvidia/params", params_without_modify(c->proc_root));
    for (size_t i = 0; i < n; i++) {
        const gpu_grant *gr = &b->gpus->g[i];
        const char *bus = gr->bus_id;
        snprintf(host, sizeof host, "%s/driver/nvidia/gpus/%s/information", c->proc_root, bus);
        char *info = read_file(host, NULL);
        if (!info) {
            spec_gpu_free(g);
            return jerr_set(e, ENOENT, "GPU %s: %s is missing: the driver no longer lists this GPU", bus, host);
        }
        snprintf(dst, sizeof dst, "/proc/driver/nvidia/gpus/%s/information", bus);
        add_file(g, dst, info);
        if (!gr->mig)
            continue;
        /* libcuda finds the capability minors of its instance here */
        int minor = gr->minor, gi = gr->gi, ci = gr->ci;
        for (int k = 0; k < 2; k++) {
            char rel[128];
            if (k)
                snprintf(rel, sizeof rel, "capabilities/gpu%d/mig/gi%d/ci%d/access", minor, gi, ci);
            else
                snprintf(rel, sizeof rel, "capabilities/gpu%d/mig/gi%d/access", minor, gi);
            snprintf(host, sizeof host, "%s/driver/nvidia/%s", c->proc_root, rel);
            char *txt = read_file(host, NULL);
            if (txt) {
                snprintf(dst, sizeof dst, "/proc/driver/nvidia/%s", rel);
                add_file(g, dst, txt);
            }
        }
    }
    add_simple(g, SPEC_READONLY, base);
    add_driver_libs(b, g);
    add_toolkit(b, g);
    if (!b->req->cpu_cores)
        spec_gpu_locality(b->gpus, h, g->cpus, sizeof g->cpus, g->mems, sizeof g->mems);
    return 0;
}

void spec_gpu_free(spec_gpu *g)
{
    for (size_t i = 0; i < g->nops; i++) {
        free(g->ops[i].src);
        free(g->ops[i].dst);
        free(g->ops[i].data);
    }
    free(g->ops);
    free(g->rules);
    for (size_t i = 0; i < g->nmounts; i++) {
        free(g->mounts[i].src);
        free(g->mounts[i].dst);
    }
    free(g->mounts);
    for (size_t i = 0; i < g->nenv; i++)
        free(g->env[i].name), free(g->env[i].value);
    free(g->env);
    memset(g, 0, sizeof *g);
}
