/* A fake libcuda.so.1 for tests: the CUDA driver entry points joblet-gpu-scrub uses
 * (src/gpu/cuda_api.h), with device memory simulated for the GPUs of a machine description
 * (tests/fixtures/README.md).
 *
 *   FAKE_NVML_FIXTURE     the machine.json, read by the first cuInit. The devices are its "gpus"
 *                         in bus_id order; each starts with memory_total_mb - memory_used_mb free.
 *                         A machine whose driver cannot be used (nvml.init_error set or
 *                         driver_version null) or that has no GPU fails cuInit with
 *                         CUDA_ERROR_NO_DEVICE, as libcuda does.
 *   CUDA_VISIBLE_DEVICES  read by cuInit as CUDA reads it (indices or GPU UUIDs, a unique prefix
 *                         will do; the list ends at the first entry naming no device), so a test
 *                         can tell whether the caller cleared it. CUDA_DEVICE_ORDER is not: the
 *                         devices are always in PCI bus order.
 *   FAKE_CUDA_FAIL        "call[@GPU-uuid]=CUDA_ERROR_NAME,...", read by cuInit: make that call
 *                         fail, on every device or only that one. Calls without a device (cuInit,
 *                         cuDeviceGetCount) fail only for an entry without @; calls in a context
 *                         fail by the context's device, cuMemFree_v2 by the allocation's.
 *   FAKE_CUDA_LOG         a file to append one line to for each device-level action that
 *                         succeeded, so a test can check that every byte promised zeroed was:
 *                           ctx <uuid>                              cuCtxCreate_v2
 *                           alloc <uuid> <bytes> <ptr>              cuMemAlloc_v2
 *                           memset <uuid> <bytes> <value> <ptr>     cuMemsetD8_v2
 *                           sync <uuid>                             cuCtxSynchronize
 *                           free <uuid> <bytes> <ptr>               cuMemFree_v2
 *                           ctxdestroy <uuid>                       cuCtxDestroy_v2
 *                         (<ptr> in hex with 0x; cuCtxDestroy_v2 gives back what the context
 *                         still held, as the driver does, without "free" lines.)
 *
 * Memory is accounted for honestly but never backed: cuMemAlloc_v2 fails with
 * CUDA_ERROR_OUT_OF_MEMORY when the request (rounded up to the 2 MiB granularity) exceeds what the
 * device still has free; pointers are unique addresses in a range no host memory uses; and
 * cuMemsetD8_v2 and cuMemFree_v2 check theirs against the live allocations
 * (CUDA_ERROR_INVALID_VALUE otherwise).
 *
 * Single-threaded, like the tool: one current context per process rather than per thread, and no
 * context stack (destroying the current context leaves none current). Compiled with
 * -fvisibility=hidden: only the CUDA entry points are exported. */
#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../src/gpu/cuda_api.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 64
#define MAX_FAILS 32
#define MAX_CTX 64
#define GRANULE (2ull << 20)       /* what the driver rounds allocations up to */
#define PTR_BASE 0x7f0000000000ull /* fake device addresses start here */
#define UUID_SIZE 41               /* "GPU-" + 36 + NUL */

struct gpu {
    char uuid[UUID_SIZE];
    CUuuid bytes;
    unsigned long long total, free; /* bytes; free shrinks with every allocation */
};

struct CUctx_st {
    int dev;
};

struct alloc {
    CUdeviceptr p;
    size_t n;                   /* as requested */
    unsigned long long charged; /* n rounded up to GRANULE: what the device lost */
    int dev;
    CUcontext ctx;
};

static struct {
    int inited;
    int n;
    struct gpu gpus[MAX_GPUS]; /* the visible devices, by ordinal */
    struct {
        char call[40];
        char uuid[UUID_SIZE]; /* empty: every device */
        CUresult code;
    } fails[MAX_FAILS];
    int nfails;
    CUcontext ctxs[MAX_CTX]; /* live contexts */
    int nctx;
    CUcontext current;
    struct alloc *allocs;
    size_t nalloc, cap;
    CUdeviceptr next; /* the next fake address to hand out */
} S;

static const struct {
    CUresult code;
    const char *name, *text; /* text: cuGetErrorString's wording in NVIDIA's driver */
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};
#define NERRORS (sizeof errors / sizeof errors[0])

/* Every entry point of cuda_api.h, so that FAKE_CUDA_FAIL cannot name a call that does not exist
 * (a typo would otherwise inject nothing and the test would pass for the wrong reason). */
static const char *const calls[] = {
#define CALL_NAME(name, ret, params) #name,
    CUDA_FUNCTIONS(CALL_NAME)
#undef CALL_NAME
};

/* ---- errors ---- */

/* Both callable before cuInit; an unknown code leaves *pStr NULL, as the driver does. */
EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = NULL;
    for (size_t i = 0; i < NERRORS; i++)
        if (errors[i].code == error)
            *pStr = errors[i].name;
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = NULL;
    for (size_t i = 0; i < NERRORS; i++)
        if (errors[i].code == error)
            *pStr = errors[i].text;
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- FAKE_CUDA_LOG and FAKE_CUDA_FAIL ---- */

__attribute__((format(printf, 1, 2))) static void record(const char *fmt, ...)
{
    const char *path = getenv("FAKE_CUDA_LOG");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "ae");
    if (!f) { /* a test reading the log then fails on the missing lines */
        fprintf(stderr, "fake_cuda: cannot append to %s\n", path);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

/* An injected failure for this call on visible device dev (-1: a call without a device). */
static CUresult injected(const char *call, int dev)
{
    for (int i = 0; i < S.nfails; i++)
        if (strcmp(S.fails[i].call, call) == 0 &&
            (!*S.fails[i].uuid || (dev >= 0 && strcasecmp(S.fails[i].uuid, S.gpus[dev].uuid) == 0)))
            return S.fails[i].code;
    return CUDA_SUCCESS;
}

static int bad_fail_entry(const char *entry, const char *why)
{
    fprintf(stderr, "fake_cuda: FAKE_CUDA_FAIL entry '%s': %s (want call[@GPU-uuid]=CUDA_ERROR_NAME)\n", entry, why);
    return -1;
}

static int known_call(const char *name)
{
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (strcmp(calls[i], name) == 0)
            return 1;
    return 0;
}

static int parse_fail_entry(char *item, const struct gpu *all, int n)
{
    char entry[256];
    snprintf(entry, sizeof entry, "%s", item);
    if (S.nfails == MAX_FAILS)
        return bad_fail_entry(entry, "too many entries");
    char *eq = strchr(item, '=');
    if (!eq)
        return bad_fail_entry(entry, "no '='");
    *eq = 0;
    char *at = strchr(item, '@');
    const char *uuid = "";
    if (at) {
        *at = 0;
        uuid = at + 1;
        int found = 0;
        for (int i = 0; i < n && !found; i++)
            found = strcasecmp(all[i].uuid, uuid) == 0;
        if (!found)
            return bad_fail_entry(entry, "no GPU of the fixture has that UUID");
    }
    if (!known_call(item) || strncmp(item, "cuGetError", 10) == 0) /* those two cannot fail here */
        return bad_fail_entry(entry, "not a CUDA call this library can fail");
    size_t e = 0;
    while (e < NERRORS && strcmp(errors[e].name, eq + 1) != 0)
        e++;
    if (e == NERRORS || errors[e].code == CUDA_SUCCESS)
        return bad_fail_entry(entry, "not a CUDA error name this library knows");
    snprintf(S.fails[S.nfails].call, sizeof S.fails[0].call, "%s", item);
    snprintf(S.fails[S.nfails].uuid, sizeof S.fails[0].uuid, "%s", uuid);
    S.fails[S.nfails].code = errors[e].code;
    S.nfails++;
    return 0;
}

static int parse_fails(const char *spec, const struct gpu *all, int n)
{
    char *buf = strdup(spec), *save = NULL;
    int rc = buf ? 0 : -1;
    for (char *item = buf ? strtok_r(buf, ",", &save) : NULL; item && rc == 0; item = strtok_r(NULL, ",", &save))
        rc = parse_fail_entry(item, all, n);
    free(buf);
    return rc;
}

/* ---- the fixture ---- */

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" -> 16 bytes; dashes only where NVIDIA puts them. */
static int parse_uuid(const char *s, CUuuid *u)
{
    if (!s || strncmp(s, "GPU-", 4) != 0 || strlen(s) != UUID_SIZE - 1)
        return -1;
    const char *p = s + 4;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            if (*p++ != '-')
                return -1;
        }
        unsigned v;
        if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]) || sscanf(p, "%2x", &v) != 1)
            return -1;
        u->bytes[i] = (char)v;
        p += 2;
    }
    return 0;
}

static int bus_cmp(const void *a, const void *b)
{
    return strcasecmp(json_string_value(json_object_get(*(json_t *const *)a, "bus_id")),
                      json_string_value(json_object_get(*(json_t *const *)b, "bus_id")));
}

static int bad_fixture(const char *path, const char *why)
{
    fprintf(stderr, "fake_cuda: %s: %s\n", path, why);
    return -1;
}

/* The fixture's GPUs in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID), or -1. */
static int read_gpus(json_t *root, const char *path, struct gpu *out)
{
    json_t *gpus = json_object_get(root, "gpus"), *sorted[MAX_GPUS];
    if (!json_is_array(gpus))
        return bad_fixture(path, "no \"gpus\" list");
    int n = (int)json_array_size(gpus);
    if (n > MAX_GPUS)
        return bad_fixture(path, "more GPUs than the fake supports (64)");
    for (int i = 0; i < n; i++) {
        sorted[i] = json_array_get(gpus, (size_t)i);
        if (!json_is_string(json_object_get(sorted[i], "bus_id")))
            return bad_fixture(path, "a GPU without a bus_id");
    }
    qsort(sorted, (size_t)n, sizeof sorted[0], bus_cmp);
    for (int i = 0; i < n; i++) {
        const char *uuid = json_string_value(json_object_get(sorted[i], "uuid"));
        json_t *total = json_object_get(sorted[i], "memory_total_mb");
        json_int_t used = json_integer_value(json_object_get(sorted[i], "memory_used_mb")); /* absent: 0 */
        if (parse_uuid(uuid, &out[i].bytes) < 0)
            return bad_fixture(path, "a GPU whose uuid is not GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
        if (!json_is_integer(total) || used < 0 || used > json_integer_value(total))
            return bad_fixture(path, "a GPU without memory_total_mb >= memory_used_mb >= 0");
        snprintf(out[i].uuid, sizeof out[i].uuid, "%s", uuid);
        out[i].total = (unsigned long long)json_integer_value(total) << 20; /* MiB -> bytes */
        out[i].free = out[i].total - ((unsigned long long)used << 20);
    }
    return n;
}

/* One CUDA_VISIBLE_DEVICES entry: an index, or a GPU UUID or unique prefix of one; -1 if none. */
static int visible_entry(const char *e, const struct gpu *all, int n)
{
    if (isdigit((unsigned char)*e)) {
        char *end;
        long i = strtol(e, &end, 10);
        return *end || i >= n ? -1 : (int)i;
    }
    int found = -1;
    for (int i = 0; i < n; i++)
        if (strncmp(e, "GPU-", 4) == 0 && strncasecmp(all[i].uuid, e, strlen(e)) == 0) {
            if (found >= 0)
                return -1; /* ambiguous */
            found = i;
        }
    return found;
}

/* The devices CUDA_VISIBLE_DEVICES leaves visible, in its order; unset: all. */
static int visible(const struct gpu *all, int n, struct gpu *out)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    if (!env) {
        memcpy(out, all, (size_t)n * sizeof *all);
        return n;
    }
    char *buf = strdup(env), *save = NULL;
    int k = 0, taken[MAX_GPUS] = {0};
    for (char *e = buf ? strtok_r(buf, ",", &save) : NULL; e; e = strtok_r(NULL, ",", &save)) {
        int i = visible_entry(e, all, n);
        if (i < 0)
            break;
        if (!taken[i]) {
            taken[i] = 1;
            out[k++] = all[i];
        }
    }
    free(buf);
    return k;
}

static CUresult load(void)
{
    const char *path = getenv("FAKE_NVML_FIXTURE");
    if (!path || !*path) {
        fprintf(stderr, "fake_cuda: FAKE_NVML_FIXTURE is not set\n");
        return CUDA_ERROR_NO_DEVICE;
    }
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        fprintf(stderr, "fake_cuda: cannot read %s: %s (line %d)\n", path, je.text, je.line);
        return CUDA_ERROR_NO_DEVICE;
    }
    struct gpu all[MAX_GPUS];
    int n = read_gpus(root, path, all);
    int driver = json_is_string(json_object_get(root, "driver_version")) &&
                 !json_object_get(json_object_get(root, "nvml"), "init_error");
    json_decref(root);
    if (n < 0)
        return CUDA_ERROR_NO_DEVICE;
    S.nfails = 0;
    const char *fail = getenv("FAKE_CUDA_FAIL");
    if (fail && parse_fails(fail, all, n) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = injected("cuInit", -1);
    if (r != CUDA_SUCCESS)
        return r;
    S.n = driver ? visible(all, n, S.gpus) : 0;
    if (S.n == 0)
        return CUDA_ERROR_NO_DEVICE;
    S.next = PTR_BASE;
    S.inited = 1;
    return CUDA_SUCCESS;
}

/* ---- initialisation and devices ---- */

EXPORT CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0) /* the driver reserves the argument: it must be 0 */
        return CUDA_ERROR_INVALID_VALUE;
    return S.inited ? CUDA_SUCCESS : load();
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!S.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = injected("cuDeviceGetCount", -1);
    if (r == CUDA_SUCCESS)
        *count = S.n;
    return r;
}

/* What the calls naming a device start with: initialised, a device, no injected failure. */
static CUresult enter_dev(const char *call, int dev)
{
    if (!S.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= S.n)
        return CUDA_ERROR_INVALID_DEVICE;
    return injected(call, dev);
}

/* A CUdevice is its ordinal, as in NVIDIA's driver. */
EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = enter_dev("cuDeviceGet", ordinal);
    if (r != CUDA_SUCCESS)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult r = enter_dev("cuDeviceGetUuid_v2", dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    *uuid = S.gpus[dev].bytes;
    return CUDA_SUCCESS;
}

/* ---- contexts ---- */

static int live_ctx(CUcontext ctx)
{
    for (int i = 0; i < S.nctx; i++)
        if (S.ctxs[i] == ctx)
            return i;
    return -1;
}

/* What the calls in the current context start with; *dev: the context's device. */
static CUresult enter_ctx(const char *call, int *dev)
{
    if (!S.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!S.current)
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = S.current->dev;
    return injected(call, *dev);
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult r = enter_dev("cuCtxCreate_v2", dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx || flags > 0xFF) /* 0xFF: CU_CTX_FLAGS_MASK */
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx = S.nctx < MAX_CTX ? calloc(1, sizeof *ctx) : NULL;
    if (!ctx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx->dev = dev;
    S.ctxs[S.nctx++] = ctx;
    S.current = ctx; /* a new context is made current */
    record("ctx %s", S.gpus[dev].uuid);
    *pctx = ctx;
    return CUDA_SUCCESS;
}

static void drop_alloc(size_t i)
{
    S.gpus[S.allocs[i].dev].free += S.allocs[i].charged;
    S.allocs[i] = S.allocs[--S.nalloc];
}

/* An injected failure leaves the context alive, as a failed destroy would. */
EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    if (!S.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    int i = live_ctx(ctx);
    if (i < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = injected("cuCtxDestroy_v2", ctx->dev);
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t a = S.nalloc; a-- > 0;)
        if (S.allocs[a].ctx == ctx)
            drop_alloc(a);
    record("ctxdestroy %s", S.gpus[ctx->dev].uuid);
    if (S.current == ctx)
        S.current = NULL;
    S.ctxs[i] = S.ctxs[--S.nctx];
    free(ctx);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    int dev;
    CUresult r = enter_ctx("cuCtxSynchronize", &dev);
    if (r == CUDA_SUCCESS)
        record("sync %s", S.gpus[dev].uuid);
    return r;
}

/* ---- memory ---- */

EXPORT CUresult cuMemGetInfo_v2(size_t *freeBytes, size_t *totalBytes)
{
    int dev;
    CUresult r = enter_ctx("cuMemGetInfo_v2", &dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!freeBytes || !totalBytes)
        return CUDA_ERROR_INVALID_VALUE;
    *freeBytes = S.gpus[dev].free;
    *totalBytes = S.gpus[dev].total;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    int dev;
    CUresult r = enter_ctx("cuMemAlloc_v2", &dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!dptr || bytesize == 0) /* the driver refuses a 0-byte allocation */
        return CUDA_ERROR_INVALID_VALUE;
    if (bytesize > S.gpus[dev].free)
        return CUDA_ERROR_OUT_OF_MEMORY;
    unsigned long long charged = (bytesize + GRANULE - 1) / GRANULE * GRANULE;
    if (charged > S.gpus[dev].free)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (S.nalloc == S.cap) {
        size_t cap = S.cap ? 2 * S.cap : 256;
        struct alloc *a = realloc(S.allocs, cap * sizeof *a);
        if (!a)
            return CUDA_ERROR_OUT_OF_MEMORY;
        S.allocs = a;
        S.cap = cap;
    }
    S.allocs[S.nalloc++] = (struct alloc){S.next, bytesize, charged, dev, S.current};
    S.gpus[dev].free -= charged;
    *dptr = S.next;
    S.next += charged;
    record("alloc %s %zu 0x%llx", S.gpus[dev].uuid, bytesize, *dptr);
    return CUDA_SUCCESS;
}

/* Only an allocation's own base address frees it, as with the driver. */
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    if (!S.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    size_t i = 0;
    while (i < S.nalloc && S.allocs[i].p != dptr)
        i++;
    if (i == S.nalloc)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = injected("cuMemFree_v2", S.allocs[i].dev);
    if (r != CUDA_SUCCESS)
        return r;
    record("free %s %zu 0x%llx", S.gpus[S.allocs[i].dev].uuid, S.allocs[i].n, dptr);
    drop_alloc(i);
    return CUDA_SUCCESS;
}

/* The range must lie inside one live allocation (of any context: addresses are unified). */
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    int dev;
    CUresult r = enter_ctx("cuMemsetD8_v2", &dev);
    if (r != CUDA_SUCCESS || N == 0)
        return r;
    for (size_t i = 0; i < S.nalloc; i++) {
        const struct alloc *a = &S.allocs[i];
        if (dstDevice >= a->p && N <= a->n && dstDevice - a->p <= a->n - N) {
            record("memset %s %zu %u 0x%llx", S.gpus[a->dev].uuid, N, (unsigned)uc, dstDevice);
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}
