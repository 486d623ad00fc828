/* joblet-gpu-scrub [--libcuda PATH] GPU-UUID[:MINOR[:MPS-PIPE-DIR]]... — clear a GPU of every
 * process outside its jobs and zero its memory between tenants (ADR "Memory Sanitization"):
 * joblet runs it on every GPU a job releases, before the GPU is handed out again, and marks the
 * GPU DEGRADED instead of AVAILABLE when it fails.
 *
 * Holders first (when MINOR is given): a job may have passed its descriptor of
 * /dev/nvidia<MINOR> (195:MINOR) to a process outside it (SCM_RIGHTS over a unix socket), and
 * that process would keep raw driver access to the GPU the next job gets. Every process other
 * than this one holding the node (a descriptor in any thread's table, or a mapping; holders.h)
 * is judged:
 *   - effective uid not 0: a user reaches a GPU through a job, so it got the descriptor from one
 *     (or opened the host's node, 0666 by the driver's default, outside joblet: docs/gpu.md);
 *     killed (SIGKILL through a pidfd, after checking that the process the pidfd names still
 *     holds the node and is still unprivileged, so a reused pid is never hit), and waited for;
 *     each one is a line on stdout, which joblet records in the audit trail:
 *       GPU-...: holder killed: pid <P> uid <U> cgroup <path|-> comm <name>
 *   - root running nvidia-persistenced or nv-hostengine (DCGM): they hold every GPU's node by
 *     design and run no tenant's code; left alone; so is nvidia-persistenced running as the
 *     account nvidia-persistenced (`--user nvidia-persistenced`: Debian's and NVIDIA's units
 *     start it so), a system account no tenant's process runs as;
 *   - joblet's own MPS control daemon (root) and server (its tenant's uid: nvidia-cuda-mps-server)
 *     of this GPU, CUDA_MPS_PIPE_DIRECTORY=MPS-PIPE-DIR, told to quit just before: waited for
 *     (10 s); a server still there then is judged as any other;
 *   - joblet itself (this helper's parent: its NVML health monitor holds every node) is no holder;
 *   - any other root process (an admin's nvidia-smi, a root job outside joblet): never killed;
 *     given 2 s to end by itself, then the GPU is not scrubbed and fails (DEGRADED), the reason
 *     naming the process.
 * The scan is repeated until it finds nobody to kill (a killed holder may have passed the
 * descriptor on), at most 5 times. What the scans cost is a line on stdout, which joblet logs at
 * debug level (a descriptor table shared by many threads is read once: holders.h):
 *   joblet-gpu-scrub: GPU-...: holder scan: <R> rounds, <T> descriptor tables read, <MS> ms Not seen: a descriptor in flight, sent and not yet received
 * (it sits in a socket's queue, in no process's table).
 *
 * Then for each GPU: a context on the CUDA device with that UUID; as much of its free memory as the
 * driver will hand out, in chunks of 1 GiB halved on out-of-memory down to 2 MiB; each chunk set
 * to zero; one cuCtxSynchronize (memsets run asynchronously, so their errors may only show
 * there); every chunk freed; the context destroyed. What the allocator cannot hand out (pieces
 * under 2 MiB, the driver's reserves) stays unscrubbed, hence "at least 90% of free memory".
 *
 * One line per GPU, the last one about it: on stdout when it was scrubbed,
 *   GPU-...: scrubbed <N> MiB of <F> MiB free
 * on stderr when it was not (the first failure only: after a sticky error every later call
 * fails too),
 *   GPU-...: <call>: <CUDA_ERROR_NAME> (<code>): <cuGetErrorString's text>
 *   GPU-...: no CUDA device has this UUID[ (CUDA device <n>: <call>: ...)]  (one could not be read)
 *   GPU-...: scrubbed only <N> MiB of <F> MiB free (less than 90%)
 *   GPU-...: /dev/nvidia<M> is held by root process <P> (<comm>, <exe>): not killed, not scrubbed
 *   GPU-...: holder pid <P> (uid <U>) did not exit within 10 s of SIGKILL
 * Exit: 0 every GPU scrubbed; 1 some GPU not (the others are still scrubbed); 2 bad usage, or
 * the library or one of its symbols missing.
 *
 * libcuda.so.1 is opened with dlopen, never linked, so joblet installs and runs without a driver.
 * It is never dlclosed: libcuda is not safe to unload, and the process ends right after. */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pwd.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cuda_api.h"
#include "holders.h"

#define CHUNK_MAX (1ull << 30) /* few calls for 80+ GiB, yet little left over once it halves */
#define CHUNK_MIN (2ull << 20) /* the driver's allocation granularity for large allocations */
#define MIN_COVERAGE_PCT 90
#define UUID_SIZE 41 /* "GPU-" + 36 + NUL */
#define MiB (1ull << 20)
#define NVIDIA_MAJOR 195
#define HOLDER_ROUNDS 5
#define HOLDER_WAIT_MS 10000
#define ROOT_GRACE_MS 2000
#define HOLDER_LINES_MAX 32

static int holder_lines; /* "holder killed" lines printed by this run */
static int scan_rounds;   /* holder scans of the GPU being cleared, and their time */
static double scan_ms;

static struct {
#define CUDA_POINTER(name, ret, params) ret(*name) params;
    CUDA_FUNCTIONS(CUDA_POINTER)
#undef CUDA_POINTER
} cu;

typedef struct scrub {
    struct chunk {
        CUdeviceptr p;
        size_t n;
    } *c; /* live allocations */
    size_t n, cap;
    size_t zeroed; /* bytes memset to 0 (only certain once cuCtxSynchronize succeeded) */
    char why[256]; /* the first failure, empty while there is none */
} scrub;

/* Resolve every entry point; a missing one is named, since it says which driver is too old. */
static int load(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "joblet-gpu-scrub: cannot load %s: %s\n", lib, dlerror());
        return -1;
    }
#define CUDA_RESOLVE(name, ret, params)                                                             \
    if (!(*(void **)&cu.name = dlsym(h, #name))) {                                                 \
        fprintf(stderr, "joblet-gpu-scrub: %s does not export %s (%s)\n", lib, #name,              \
                "not libcuda, or a driver before R470");                                           \
        return -1;                                                                                 \
    }
    CUDA_FUNCTIONS(CUDA_RESOLVE)
#undef CUDA_RESOLVE
    return 0;
}

/* "call: CUDA_ERROR_NAME (code): text"; the code stays readable for codes this driver lacks. */
static void describe(char *buf, size_t len, const char *call, CUresult r)
{
    const char *name = NULL, *text = NULL;
    if (cu.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "unknown CUresult";
    if (cu.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text)
        text = "no description";
    snprintf(buf, len, "%s: %s (%d): %s", call, name, (int)r, text);
}

static int failed(scrub *s, const char *call, CUresult r)
{
    if (!*s->why)
        describe(s->why, sizeof s->why, call, r);
    return -1;
}

/* nvidia-smi's spelling, which is also what NVML and joblet use. */
static void format_uuid(const CUuuid *u, char *out)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, UUID_SIZE, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* The device whose UUID is `want` (in any letter case), with its UUID as the driver spells it;
 * -1 with the reason in why. A device that cannot be read is skipped, so that one broken GPU
 * does not keep the others from being scrubbed, and named only if `want` is not found. */
static int find_device(const char *want, int count, CUdevice *dev, char *uuid, char *why, size_t len)
{
    char broken[200] = "";
    for (int i = 0; i < count; i++) {
        CUuuid u;
        CUresult r = cu.cuDeviceGet(dev, i);
        const char *call = "cuDeviceGet";
        if (r == CUDA_SUCCESS) {
            r = cu.cuDeviceGetUuid_v2(&u, *dev);
            call = "cuDeviceGetUuid_v2";
        }
        if (r != CUDA_SUCCESS) {
            if (!*broken) {
                char what[160];
                describe(what, sizeof what, call, r);
                snprintf(broken, sizeof broken, " (CUDA device %d: %s)", i, what);
            }
            continue;
        }
        format_uuid(&u, uuid);
        if (strcasecmp(uuid, want) == 0)
            return 0;
    }
    snprintf(why, len, "no CUDA device has this UUID%s", broken);
    return -1;
}

static int keep(scrub *s, CUdeviceptr p, size_t n)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 128;
        struct chunk *c = realloc(s->c, cap * sizeof *c);
        if (!c)
            return -1;
        s->c = c;
        s->cap = cap;
    }
    s->c[s->n++] = (struct chunk){p, n};
    return 0;
}

/* Take every chunk the device will give and zero it. */
static int fill(scrub *s)
{
    for (size_t size = CHUNK_MAX; size >= CHUNK_MIN;) {
        CUdeviceptr p;
        CUresult r = cu.cuMemAlloc_v2(&p, size);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) { /* the rest is smaller than this chunk */
            size /= 2;
            continue;
        }
        if (r != CUDA_SUCCESS)
            return failed(s, "cuMemAlloc_v2", r);
        if (keep(s, p, size) < 0) {
            cu.cuMemFree_v2(p);
            snprintf(s->why, sizeof s->why, "out of host memory for the list of allocations");
            return -1;
        }
        if ((r = cu.cuMemsetD8_v2(p, 0, size)) != CUDA_SUCCESS)
            return failed(s, "cuMemsetD8_v2", r);
        s->zeroed += size;
    }
    return 0;
}

/* Free every chunk, after a failure too: the GPU's next user must not find its memory taken. */
static void release(scrub *s)
{
    for (size_t i = 0; i < s->n; i++) {
        CUresult r = cu.cuMemFree_v2(s->c[i].p);
        if (r != CUDA_SUCCESS)
            failed(s, "cuMemFree_v2", r);
    }
    free(s->c);
    s->c = NULL;
    s->n = s->cap = 0;
}

static int verdict(const char *uuid, const scrub *s, size_t free_bytes)
{
    if (*s->why) {
        fprintf(stderr, "%s: %s\n", uuid, s->why);
        return -1;
    }
    if ((unsigned long long)s->zeroed * 100 < (unsigned long long)free_bytes * MIN_COVERAGE_PCT) {
        fprintf(stderr, "%s: scrubbed only %llu MiB of %llu MiB free (less than %d%%)\n", uuid,
                (unsigned long long)s->zeroed / MiB, (unsigned long long)free_bytes / MiB, MIN_COVERAGE_PCT);
        return -1;
    }
    printf("%s: scrubbed %llu MiB of %llu MiB free\n", uuid, (unsigned long long)s->zeroed / MiB,
           (unsigned long long)free_bytes / MiB);
    return 0;
}

/* Free memory is read inside the context, so what the context itself takes is not counted. */
static int scrub_gpu(const char *uuid, CUdevice dev)
{
    scrub s = {0};
    size_t free_bytes = 0, total_bytes = 0;
    CUcontext ctx;
    CUresult r = cu.cuCtxCreate_v2(&ctx, 0, dev); /* and makes it current */
    if (r != CUDA_SUCCESS) {
        failed(&s, "cuCtxCreate_v2", r);
        return verdict(uuid, &s, 0);
    }
    if ((r = cu.cuMemGetInfo_v2(&free_bytes, &total_bytes)) != CUDA_SUCCESS)
        failed(&s, "cuMemGetInfo_v2", r);
    else if (fill(&s) == 0 && (r = cu.cuCtxSynchronize()) != CUDA_SUCCESS)
        failed(&s, "cuCtxSynchronize", r);
    release(&s);
    if ((r = cu.cuCtxDestroy_v2(ctx)) != CUDA_SUCCESS)
        failed(&s, "cuCtxDestroy_v2", r);
    return verdict(uuid, &s, free_bytes);
}

/* Printable, one word: what a process may name itself never makes a line of its own. */
static void clean(char *s)
{
    for (; *s; s++)
        if (*s <= ' ' || *s > '~')
            *s = '?';
}

/* Daemons that hold every GPU's node by design and run no tenant's code (root only). */
static bool expected_daemon(const char *exe)
{
    static const char *names[] = {"nvidia-persistenced", "nv-hostengine"};
    const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    size_t len = strcspn(base, " "); /* "<path> (deleted)" after an upgrade */
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (len == strlen(names[i]) && strncmp(base, names[i], len) == 0)
            return true;
    return false;
}

/* The persistence daemon under its own system account (`nvidia-persistenced --user
 * nvidia-persistenced`): only root can make a process of that uid, so a tenant cannot pass as it
 * by naming a program so. */
static bool persistenced_account(const gpu_holder *h)
{
    static int looked; /* 0 not yet, 1 found, -1 no such account */
    static uid_t uid;
    if (!looked) {
        struct passwd pw, *r = NULL;
        char buf[1024];
        looked = getpwnam_r("nvidia-persistenced", &pw, buf, sizeof buf, &r) == 0 && r ? 1 : -1;
        uid = r ? r->pw_uid : (uid_t)-1;
    }
    const char *base = strrchr(h->exe, '/') ? strrchr(h->exe, '/') + 1 : h->exe;
    return looked > 0 && uid != 0 && h->euid == uid && h->uid == uid && strncmp(base, "nvidia-persistenced", 19) == 0 &&
           (!base[19] || base[19] == ' ');
}

/* Whether the process behind pidfd exits within ms. */
static bool exits(int pidfd, int ms)
{
    struct pollfd p = {pidfd, POLLIN, 0};
    int r;
    while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    return r > 0;
}

/* Whether process pid is gone, or goes within ms. */
static bool gone_within(pid_t pid, int ms)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    bool gone = pidfd < 0 || exits(pidfd, ms);
    if (pidfd >= 0)
        close(pidfd);
    return gone;
}

/* joblet's MPS server of this GPU: nvidia-cuda-mps-server with this GPU's pipe directory. It runs
 * as its tenant's uid (the control daemon starts it so), and is told to quit just before the
 * scrub. The name and the variable are anyone's to take: such a process is only waited for
 * (HOLDER_WAIT_MS), then judged as any other. */
static bool mps_server(const gpu_holder *h, const char *mps_pipe)
{
    const char *base = strrchr(h->exe, '/') ? strrchr(h->exe, '/') + 1 : h->exe;
    return *mps_pipe && strcmp(h->mps_pipe, mps_pipe) == 0 && strncmp(base, "nvidia-cuda-mps-server", 22) == 0 &&
           (!base[22] || base[22] == ' ');
}

/* 1 killed (or gone by itself), 0 not ours to kill after all (it became another process, or
 * privileged, or let go), -1 it would not die (why set). */
static int kill_holder(const gpu_holder *h, dev_t rdev, char *why, size_t len)
{
    int pidfd = (int)syscall(SYS_pidfd_open, h->pid, 0);
    if (pidfd < 0)
        return errno == ESRCH ? 1 : 0;
    /* the pidfd names one process for good: look at that one again before the signal */
    gpu_holder now;
    if (holders_find_one(h->pid, rdev, &now) && now.euid != 0 && now.euid != (uid_t)-1 &&
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0) {
        bool gone = exits(pidfd, HOLDER_WAIT_MS);
        close(pidfd);
        if (!gone) {
            snprintf(why, len, "holder pid %d (uid %u) did not exit within %d s of SIGKILL", (int)h->pid,
                     (unsigned)now.uid, HOLDER_WAIT_MS / 1000);
            return -1;
        }
        return 1;
    }
    close(pidfd);
    return 0;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Clears /dev/nvidia<minor> of holders outside jobs (the header's rules); 0 when the GPU may be
 * scrubbed, -1 with why when it may not. */
static int clear_holders(const char *uuid, int minor, const char *mps_pipe, char *why, size_t len)
{
    dev_t rdev = makedev(NVIDIA_MAJOR, (unsigned)minor);
    static gpu_holder h[HOLDERS_MAX];
    for (int round = 0; round < HOLDER_ROUNDS; round++) {
        double t0 = now_ms();
        int n = holders_find(rdev, h, HOLDERS_MAX), killed = 0;
        scan_ms += now_ms() - t0;
        scan_rounds++;
        gpu_holder *root = NULL;
        for (int i = 0; i < n && i < HOLDERS_MAX; i++) {
            clean(h[i].comm);
            clean(h[i].cgroup);
            if (h[i].euid == (uid_t)-1)
                continue; /* gone before it could be read */
            if (h[i].euid != 0 && mps_server(&h[i], mps_pipe) && gone_within(h[i].pid, HOLDER_WAIT_MS))
                continue; /* joblet's MPS server of this GPU (its tenant's uid), told to quit: it did */
            if (persistenced_account(&h[i]))
                continue;
            if (h[i].euid == 0) {
                if (expected_daemon(h[i].exe) || root)
                    continue;
                /* joblet's MPS server of this GPU is quitting; any other gets a moment to end
                 * by itself (a short nvidia-smi) before it costs the GPU */
                bool mps = *mps_pipe && strcmp(h[i].mps_pipe, mps_pipe) == 0;
                if (!gone_within(h[i].pid, mps ? HOLDER_WAIT_MS : ROOT_GRACE_MS))
                    root = &h[i];
                continue;
            }
            int r = kill_holder(&h[i], rdev, why, len);
            if (r < 0)
                return -1;
            if (r > 0) {
                killed++;
                /* a line each for the audit trail, at most HOLDER_LINES_MAX a run: joblet reads
                 * the output once the helper is done, so what it prints stays well within a
                 * pipe's 64 KiB (past it the helper would block for ever) */
                if (holder_lines++ < HOLDER_LINES_MAX)
                    printf("%s: holder killed: pid %d uid %u cgroup %s comm %s\n", uuid, (int)h[i].pid,
                           (unsigned)h[i].uid, *h[i].cgroup ? h[i].cgroup : "-", *h[i].comm ? h[i].comm : "-");
                else if (holder_lines == HOLDER_LINES_MAX + 1)
                    printf("joblet-gpu-scrub: more holders killed than the %d lines told\n", HOLDER_LINES_MAX);
            }
        }
        if (root) {
            clean(root->exe);
            snprintf(why, len, "/dev/nvidia%d is held by root process %d (%s, %s): not killed, not scrubbed", minor,
                     (int)root->pid, *root->comm ? root->comm : "-", *root->exe ? root->exe : "-");
            return -1;
        }
        if (!killed && n <= HOLDERS_MAX)
            return 0;
    }
    snprintf(why, len, "/dev/nvidia%d: processes holding it were still found after %d rounds of killing them", minor,
             HOLDER_ROUNDS);
    return -1;
}

/* arg: GPU-UUID[:MINOR[:MPS-PIPE-DIR]]. init_failure: why cuInit or cuDeviceGetCount failed,
 * which fails every GPU. */
static int scrub_arg(const char *arg, int count, const char *init_failure)
{
    char uuid[UUID_SIZE], why[256], want[UUID_SIZE];
    CUdevice dev;
    const char *colon = strchr(arg, ':');
    snprintf(want, sizeof want, "%.*s", colon ? (int)(colon - arg) : (int)strlen(arg), arg);
    if (colon) {
        char *end;
        long minor = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || (*end && *end != ':') || minor < 0 || minor > 254) {
            fprintf(stderr, "%s: bad device minor in %s\n", want, arg);
            return -1;
        }
        unsigned long tables = holders_tables_read();
        scan_rounds = 0;
        scan_ms = 0;
        int cleared = clear_holders(want, (int)minor, *end ? end + 1 : "", why, sizeof why);
        printf("joblet-gpu-scrub: %s: holder scan: %d rounds, %lu descriptor tables read, %.0f ms\n", want,
               scan_rounds, holders_tables_read() - tables, scan_ms);
        if (cleared < 0) {
            fprintf(stderr, "%s: %s\n", want, why);
            return -1;
        }
    }
    arg = want;
    if (init_failure) {
        fprintf(stderr, "%s: %s\n", arg, init_failure);
        return -1;
    }
    if (find_device(arg, count, &dev, uuid, why, sizeof why) < 0) {
        fprintf(stderr, "%s: %s\n", arg, why);
        return -1;
    }
    return scrub_gpu(uuid, dev);
}

int main(int argc, char **argv)
{
    const char *lib = "libcuda.so.1";
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--libcuda") == 0) {
        lib = argv[2];
        first = 3;
    }
    if (first >= argc || argv[first][0] == '-') {
        fprintf(stderr, "usage: joblet-gpu-scrub [--libcuda PATH] GPU-UUID[:MINOR[:MPS-PIPE-DIR]]...\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* stdout and stderr share joblet's pipe: lines in order */
    if (load(lib) < 0)
        return 2;
    /* Read by cuInit. Whatever joblet's own environment restricts, every GPU must be reachable.
     * The lookup is by UUID, so the order only matters for a driver message that names a device
     * number: PCI bus order is the one nvidia-smi and NVML use, not CUDA's fastest-first. */
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");

    char why[256] = "";
    int count = 0, rc = 0;
    CUresult r = cu.cuInit(0);
    if (r != CUDA_SUCCESS)
        describe(why, sizeof why, "cuInit", r);
    else if ((r = cu.cuDeviceGetCount(&count)) != CUDA_SUCCESS)
        describe(why, sizeof why, "cuDeviceGetCount", r);
    for (int i = first; i < argc; i++)
        if (scrub_arg(argv[i], count, *why ? why : NULL) < 0)
            rc = 1;
    return rc;
}
