/* A fake libnvidia-ml.so.1 for tests: the NVML entry points joblet's backend uses
 * (src/gpu/nvml_api.h), answering from a machine description (tests/fixtures/README.md).
 *
 *   FAKE_NVML_FIXTURE  the machine.json to serve (read by the first nvmlInit_v2)
 *   FAKE_NVML_FAIL     "call[@index]=NVML_ERROR_NAME,...", read at init: make that call fail, on
 *                      every device or only the one with that NVML index (a MIG device counts as
 *                      its parent). A call without a device (nvmlSystemGet..., nvmlInit_v2)
 *                      fails only for an entry without @index.
 *   FAKE_NVML_EVENTS   a file tests append lines to while the daemon runs, read from its start
 *                      after each first init:
 *                        xid <index> <code>      an XID event on that GPU
 *                        ecc <index> sbe|dbe     a single/double bit ECC event
 *                        temp <index> <celsius>  what nvmlDeviceGetTemperature answers from now on
 *                        ecc lines also count in nvmlDeviceGetTotalEccErrors (volatile counters);
 *                        throttle <index> <mask> what nvmlDeviceGetCurrentClocksThrottleReasons answers
 *                        remap <index> <rows>    uncorrectable remapped rows from now on
 *                        util <index> <percent>  what nvmlDeviceGetUtilizationRates answers from now on
 *                        power <index> <watts>   what nvmlDeviceGetPowerUsage answers from now on
 *                        memused <index> <MiB>   the memory nvmlDeviceGetMemoryInfo says is used
 *                        ecc_past <index> <corrected>,<uncorrected>
 *                                                ECC errors from before the driver loaded: the
 *                                                aggregate counters are these plus the volatile ones
 *                      Events are delivered by nvmlEventSetWait_v2, only for types registered for
 *                      that GPU (others are dropped, as the driver drops them); temp lines are
 *                      applied by nvmlEventSetWait_v2 and nvmlDeviceGetTemperature alike.
 *
 * Built three times from this file (tests/fakes/meson.build): complete; -DFAKE_NVML_OMIT_NUMA
 * (an older driver without nvmlDeviceGetNumaNodeId); -DFAKE_NVML_OMIT_UUID (a library lacking a
 * required symbol). Compiled with -fvisibility=hidden: only the NVML entry points are exported.
 *
 * Thread safety: init/shutdown, the event queue and the temperatures are guarded by one mutex;
 * the fixture itself is read-only between init and the last shutdown. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../../src/gpu/nvml_api.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 64
#define MAX_MIG 7 /* what nvmlDeviceGetMaxMigDeviceCount reports for every MIG-capable GPU */
#define MAX_FAILS 32
#define MAX_EVENTS 64
#define NO_INSTANCE 0xFFFFFFFFu /* event gpuInstanceId/computeInstanceId for whole-GPU events */

struct nvmlDevice_st {
    int index;       /* NVML index of the GPU (of the parent for a MIG device) */
    int mig;         /* -1 whole GPU, else the MIG device's position in the parent's "mig" list */
    json_t *j;       /* the GPU's or the MIG device's object */
    json_t *gpu;     /* the GPU's object */
    int temperature; /* guarded by S.mu: "temp" event lines change it */
    unsigned long long ecc[2];     /* guarded by S.mu: ecc lines (corrected, uncorrected) */
    unsigned long long throttle;   /* guarded by S.mu: throttle lines */
    unsigned remapped;             /* guarded by S.mu: remap lines */
    int util, power, memused;      /* guarded by S.mu: util/power/memused lines; -1 the fixture's */
    unsigned long long ecc_past[2];/* guarded by S.mu: ecc_past lines (corrected, uncorrected) */
};

struct nvmlEventSet_st {
    unsigned long long types[MAX_GPUS]; /* registered event types, by GPU index */
    struct nvmlEventSet_st *next;
};

static struct {
    pthread_mutex_t mu;
    atomic_int refs; /* nvmlInit_v2 calls not yet matched by nvmlShutdown */
    json_t *root;
    int n;
    struct nvmlDevice_st gpus[MAX_GPUS];
    struct nvmlDevice_st migs[MAX_GPUS][MAX_MIG];
    int nmig[MAX_GPUS];
    struct {
        char call[64];
        int index; /* -1: every device */
        nvmlReturn_t code;
    } fails[MAX_FAILS];
    int nfails;
    /* events, guarded by mu */
    struct nvmlEventSet_st *sets;
    nvmlEventData_t queue[MAX_EVENTS];
    int nqueue;
    long events_off; /* how far FAKE_NVML_EVENTS has been read */
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const struct {
    nvmlReturn_t code;
    const char *name, *text; /* text: nvmlErrorString's wording in NVIDIA's library */
} errors[] = {
    {NVML_SUCCESS, "NVML_SUCCESS", "Success"},
    {NVML_ERROR_UNINITIALIZED, "NVML_ERROR_UNINITIALIZED", "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "NVML_ERROR_INVALID_ARGUMENT", "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED", "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "NVML_ERROR_NO_PERMISSION", "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "NVML_ERROR_ALREADY_INITIALIZED", "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "NVML_ERROR_NOT_FOUND", "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "NVML_ERROR_INSUFFICIENT_SIZE", "Insufficient Size"},
    {NVML_ERROR_INSUFFICIENT_POWER, "NVML_ERROR_INSUFFICIENT_POWER", "Insufficient External Power"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "NVML_ERROR_DRIVER_NOT_LOADED", "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "NVML_ERROR_TIMEOUT", "Timeout"},
    {NVML_ERROR_IRQ_ISSUE, "NVML_ERROR_IRQ_ISSUE", "Interrupt request issue"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML Shared Library Not Found"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "NVML_ERROR_FUNCTION_NOT_FOUND", "Function Not Found"},
    {NVML_ERROR_CORRUPTED_INFOROM, "NVML_ERROR_CORRUPTED_INFOROM", "Corrupted infoROM"},
    {NVML_ERROR_GPU_IS_LOST, "NVML_ERROR_GPU_IS_LOST", "GPU is lost"},
    {NVML_ERROR_RESET_REQUIRED, "NVML_ERROR_RESET_REQUIRED", "GPU requires restart"},
    {NVML_ERROR_OPERATING_SYSTEM, "NVML_ERROR_OPERATING_SYSTEM", "The operating system has blocked the request."},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
     "RM has detected an NVML/RM version mismatch."},
    {NVML_ERROR_IN_USE, "NVML_ERROR_IN_USE", "In use by another client"},
    {NVML_ERROR_MEMORY, "NVML_ERROR_MEMORY", "Insufficient Memory"},
    {NVML_ERROR_NO_DATA, "NVML_ERROR_NO_DATA", "No data"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "NVML_ERROR_INSUFFICIENT_RESOURCES", "Insufficient Resources"},
    {NVML_ERROR_UNKNOWN, "NVML_ERROR_UNKNOWN", "Unknown Error"},
};

/* Every entry point of nvml_api.h, so that FAKE_NVML_FAIL cannot name a call that does not exist
 * (a typo would otherwise inject nothing and the test would pass for the wrong reason). */
static const char *const calls[] = {
#define CALL_NAME(name, ret, params) #name,
    NVML_FUNCTIONS(CALL_NAME)
#undef CALL_NAME
};

static int error_code(const char *name, nvmlReturn_t *out)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (strcmp(errors[i].name, name) == 0) {
            *out = errors[i].code;
            return 0;
        }
    return -1;
}

/* Callable before nvmlInit_v2, like NVIDIA's; unknown codes read "Unknown Error". */
EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == r)
            return errors[i].text;
    return "Unknown Error";
}

/* ---- FAKE_NVML_FAIL ---- */

/* An injected failure for this call on the device with this index (-1: a call without a device). */
static nvmlReturn_t injected(const char *call, int index)
{
    for (int i = 0; i < S.nfails; i++)
        if (strcmp(S.fails[i].call, call) == 0 && (S.fails[i].index < 0 || S.fails[i].index == index))
            return S.fails[i].code;
    return NVML_SUCCESS;
}

static int bad_fail_entry(const char *entry, const char *why)
{
    fprintf(stderr, "fake_nvml: FAKE_NVML_FAIL entry '%s': %s (want call[@index]=NVML_ERROR_NAME)\n", entry, why);
    return -1;
}

static int parse_fail_entry(char *item)
{
    char entry[256];
    snprintf(entry, sizeof entry, "%s", item);
    if (S.nfails == MAX_FAILS)
        return bad_fail_entry(entry, "too many entries");
    char *eq = strchr(item, '=');
    if (!eq)
        return bad_fail_entry(entry, "no '='");
    *eq = 0;
    int index = -1;
    char *at = strchr(item, '@');
    if (at) {
        *at = 0;
        char *end;
        errno = 0;
        long v = strtol(at + 1, &end, 10);
        if (at[1] < '0' || at[1] > '9' || *end || errno || v >= MAX_GPUS)
            return bad_fail_entry(entry, "the index is not a GPU index");
        index = (int)v;
    }
    size_t known = 0;
    while (known < sizeof calls / sizeof calls[0] && strcmp(calls[known], item) != 0)
        known++;
    if (known == sizeof calls / sizeof calls[0])
        return bad_fail_entry(entry, "not an NVML call this library implements");
    nvmlReturn_t code;
    if (error_code(eq + 1, &code) < 0 || code == NVML_SUCCESS)
        return bad_fail_entry(entry, "not an NVML error name");
    snprintf(S.fails[S.nfails].call, sizeof S.fails[0].call, "%s", item);
    S.fails[S.nfails].index = index;
    S.fails[S.nfails].code = code;
    S.nfails++;
    return 0;
}

static int parse_fails(const char *spec)
{
    char *buf = strdup(spec), *save = NULL;
    int rc = buf ? 0 : -1;
    for (char *item = buf ? strtok_r(buf, ",", &save) : NULL; item && rc == 0; item = strtok_r(NULL, ",", &save))
        rc = parse_fail_entry(item);
    free(buf);
    return rc;
}

/* ---- the fixture ---- */

static int parse_bus(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
    return s && sscanf(s, "%x:%x:%x.%x", dom, bus, dev, fn) == 4 ? 0 : -1;
}

static int bus_cmp(const void *a, const void *b)
{
    return strcasecmp(json_string_value(json_object_get(*(json_t *const *)a, "bus_id")),
                      json_string_value(json_object_get(*(json_t *const *)b, "bus_id")));
}

static nvmlReturn_t bad_fixture(json_t *root, const char *path, const char *why)
{
    fprintf(stderr, "fake_nvml: %s: %s\n", path, why);
    json_decref(root);
    return NVML_ERROR_DRIVER_NOT_LOADED;
}

/* The first nvmlInit_v2: read the fixture and FAKE_NVML_FAIL, lay out the handles. */
static nvmlReturn_t load(void)
{
    const char *path = getenv("FAKE_NVML_FIXTURE");
    if (!path || !*path) {
        fprintf(stderr, "fake_nvml: FAKE_NVML_FIXTURE is not set\n");
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        fprintf(stderr, "fake_nvml: cannot read %s: %s (line %d)\n", path, je.text, je.line);
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    json_t *gpus = json_object_get(root, "gpus");
    if (!json_is_array(gpus))
        return bad_fixture(root, path, "no \"gpus\" list");
    const char *init_error = json_string_value(json_object_get(json_object_get(root, "nvml"), "init_error"));
    nvmlReturn_t r;
    if (init_error) { /* the machine's driver cannot be used: init fails as the fixture says */
        if (error_code(init_error, &r) < 0 || r == NVML_SUCCESS)
            return bad_fixture(root, path, "nvml.init_error is not an NVML error name");
        json_decref(root);
        return r;
    }
    if (!json_is_string(json_object_get(root, "driver_version")))
        return bad_fixture(root, path, "driver_version is null but nvml.init_error is not set");
    if (json_array_size(gpus) > MAX_GPUS)
        return bad_fixture(root, path, "more GPUs than the fake supports (64)");
    json_t *sorted[MAX_GPUS];
    int n = (int)json_array_size(gpus);
    for (int i = 0; i < n; i++) {
        json_t *g = json_array_get(gpus, (size_t)i);
        unsigned d0, d1, d2, d3;
        if (parse_bus(json_string_value(json_object_get(g, "bus_id")), &d0, &d1, &d2, &d3) < 0)
            return bad_fixture(root, path, "a GPU without a bus_id like 0000:18:00.0");
        if (json_array_size(json_object_get(g, "mig")) > MAX_MIG)
            return bad_fixture(root, path, "a GPU with more than 7 MIG devices");
        sorted[i] = g;
    }
    S.nfails = 0;
    const char *fail = getenv("FAKE_NVML_FAIL");
    if (fail && parse_fails(fail) < 0) {
        json_decref(root);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if ((r = injected("nvmlInit_v2", -1)) != NVML_SUCCESS) {
        json_decref(root);
        return r;
    }
    /* NVML numbers GPUs in PCI bus order (the fixture's "index" follows the same rule) */
    qsort(sorted, (size_t)n, sizeof sorted[0], bus_cmp);
    for (int i = 0; i < n; i++) {
        json_t *g = sorted[i], *mig = json_object_get(g, "mig");
        S.gpus[i] = (struct nvmlDevice_st){
            .index = i, .mig = -1, .j = g, .gpu = g, .temperature = (int)json_number_value(json_object_get(g, "temperature_c")),
            .util = -1, .power = -1, .memused = -1};
        S.nmig[i] = (int)json_array_size(mig);
        for (int m = 0; m < S.nmig[i]; m++)
            S.migs[i][m] = (struct nvmlDevice_st){.index = i, .mig = m, .j = json_array_get(mig, (size_t)m), .gpu = g};
    }
    S.n = n;
    S.root = root;
    S.nqueue = 0;
    S.events_off = 0;
    return NVML_SUCCESS;
}

/* Reference counted like NVIDIA's: every successful nvmlInit_v2 needs its nvmlShutdown, and only
 * the first one reads the environment. */
EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    pthread_mutex_lock(&S.mu);
    nvmlReturn_t r = S.refs == 0 ? load() : NVML_SUCCESS;
    if (r == NVML_SUCCESS)
        S.refs++;
    pthread_mutex_unlock(&S.mu);
    return r;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    pthread_mutex_lock(&S.mu);
    nvmlReturn_t r = NVML_SUCCESS;
    if (S.refs == 0) {
        r = NVML_ERROR_UNINITIALIZED;
    } else if (--S.refs == 0) {
        while (S.sets) { /* event sets the caller did not free die with the library's state */
            struct nvmlEventSet_st *next = S.sets->next;
            free(S.sets);
            S.sets = next;
        }
        json_decref(S.root);
        S.root = NULL;
        S.n = 0;
    }
    pthread_mutex_unlock(&S.mu);
    return r;
}

/* ---- helpers for the device calls ---- */

/* The checks every device call starts with: initialised, a handle, no injected failure. */
static void scan_events(void);

#define ENTER(call, dev)                                                                                 \
    do {                                                                                                 \
        if (!S.refs)                                                                                     \
            return NVML_ERROR_UNINITIALIZED;                                                             \
        if (!(dev))                                                                                      \
            return NVML_ERROR_INVALID_ARGUMENT;                                                          \
        nvmlReturn_t inj_ = injected(call, (dev)->index);                                                \
        if (inj_ != NVML_SUCCESS)                                                                        \
            return inj_;                                                                                 \
    } while (0)
/* Calls that have no meaning on a MIG device handle answer Not Supported there, as NVML does. */
#define WHOLE_GPU_ONLY(dev)                                                                              \
    do {                                                                                                 \
        if ((dev)->mig >= 0)                                                                             \
            return NVML_ERROR_NOT_SUPPORTED;                                                             \
    } while (0)
/* Calls without a device. */
#define ENTER_SYSTEM(call)                                                                               \
    do {                                                                                                 \
        if (!S.refs)                                                                                     \
            return NVML_ERROR_UNINITIALIZED;                                                             \
        nvmlReturn_t inj_ = injected(call, -1);                                                          \
        if (inj_ != NVML_SUCCESS)                                                                        \
            return inj_;                                                                                 \
    } while (0)

/* NVML's string calls: the whole string and its NUL, or Insufficient Size and nothing written. */
static nvmlReturn_t copy_str(char *out, unsigned len, const char *s)
{
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!s)
        return NVML_ERROR_NOT_SUPPORTED;
    size_t n = strlen(s) + 1;
    if (n > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, n);
    return NVML_SUCCESS;
}

/* A field of the device's object; NULL when absent or null. */
static json_t *field(nvmlDevice_t d, const char *k)
{
    json_t *v = json_object_get(d->j, k);
    return v && !json_is_null(v) ? v : NULL;
}

static json_int_t gpu_int(nvmlDevice_t d, const char *k, json_int_t missing)
{
    json_t *v = json_object_get(d->gpu, k);
    return json_is_integer(v) ? json_integer_value(v) : missing;
}

/* ---- system ---- */

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    ENTER_SYSTEM("nvmlSystemGetDriverVersion");
    const char *v = json_string_value(json_object_get(S.root, "driver_version"));
    return v ? copy_str(version, length, v) : NVML_ERROR_DRIVER_NOT_LOADED;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    ENTER_SYSTEM("nvmlSystemGetCudaDriverVersion_v2");
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    json_t *v = json_object_get(S.root, "cuda_driver_version");
    if (!json_is_integer(v))
        return NVML_ERROR_DRIVER_NOT_LOADED;
    *cudaDriverVersion = (int)json_integer_value(v);
    return NVML_SUCCESS;
}

/* ---- devices ---- */

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    ENTER_SYSTEM("nvmlDeviceGetCount_v2");
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = (unsigned)S.n;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (!S.refs)
        return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= (unsigned)S.n)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = injected("nvmlDeviceGetHandleByIndex_v2", (int)index);
    if (r != NVML_SUCCESS)
        return r;
    *device = &S.gpus[index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    ENTER("nvmlDeviceGetMinorNumber", device);
    if (!minorNumber)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device); /* MIG devices are reached through nvidia-caps, not /dev/nvidia<minor> */
    json_t *m = field(device, "minor");
    if (!json_is_integer(m))
        return NVML_ERROR_NOT_SUPPORTED;
    *minorNumber = (unsigned)json_integer_value(m);
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OMIT_UUID
/* A MIG handle answers its own "MIG-..." UUID. */
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    ENTER("nvmlDeviceGetUUID", device);
    return copy_str(uuid, length, json_string_value(field(device, "uuid")));
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    ENTER("nvmlDeviceGetName", device);
    const char *parent = json_string_value(json_object_get(device->gpu, "name"));
    if (device->mig < 0)
        return copy_str(name, length, parent);
    /* the driver names a MIG device "<GPU name> MIG <profile>" */
    const char *profile = json_string_value(field(device, "profile"));
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE * 2];
    snprintf(buf, sizeof buf, "%s MIG %s", parent ? parent : "", profile ? profile : "");
    return copy_str(name, length, buf);
}

static nvmlReturn_t fill_pci(const char *bus_id, nvmlPciInfo_t *pci, const char *device_id)
{
    unsigned dom, bus, dev, fn;
    if (parse_bus(bus_id, &dom, &bus, &dev, &fn) < 0)
        return NVML_ERROR_UNKNOWN;
    memset(pci, 0, sizeof *pci);
    /* NVML's spellings: 8-digit domain and upper-case hex in busId, 4-digit domain in busIdLegacy */
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", dom, bus, dev, fn);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", dom, bus, dev, fn);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = device_id ? (unsigned)strtoul(device_id, NULL, 16) : 0; /* device << 16 | vendor */
    return NVML_SUCCESS;
}

/* A MIG handle answers its parent's PCI location (it has none of its own). */
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    ENTER("nvmlDeviceGetPciInfo_v3", device);
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    return fill_pci(json_string_value(json_object_get(device->gpu, "bus_id")), pci,
                    json_string_value(json_object_get(device->gpu, "pci_device_id")));
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    ENTER("nvmlDeviceGetMemoryInfo", device);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    int mig = device->mig >= 0;
    json_t *total = field(device, mig ? "memory_mb" : "memory_total_mb");
    if (!json_is_integer(total))
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long used = mig ? 0 : (unsigned long long)json_integer_value(field(device, "memory_used_mb"));
    pthread_mutex_lock(&S.mu);
    scan_events();
    if (!mig && device->memused >= 0)
        used = (unsigned long long)device->memused;
    pthread_mutex_unlock(&S.mu);
    memory->total = (unsigned long long)json_integer_value(total) << 20; /* MiB -> bytes */
    memory->used = used << 20;
    memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    ENTER("nvmlDeviceGetCudaComputeCapability", device);
    if (!major || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    const char *cc = json_string_value(json_object_get(device->gpu, "compute_capability"));
    int a, b;
    if (!cc || sscanf(cc, "%d.%d", &a, &b) != 2)
        return NVML_ERROR_NOT_SUPPORTED;
    *major = a;
    *minor = b;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OMIT_NUMA
EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node)
{
    ENTER("nvmlDeviceGetNumaNodeId", device);
    if (!node)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    json_int_t n = gpu_int(device, "numa_node", -1);
    if (n < 0) /* the platform (ACPI) reports no node for the device */
        return NVML_ERROR_NOT_SUPPORTED;
    *node = (unsigned)n;
    return NVML_SUCCESS;
}
#endif

/* local_cpus ("0-55,112-167") as NVML's bitmask: CPU c is bit c % 64 of cpuSet[c / 64] (64 bits per
 * unsigned long on the LP64 targets NVML exists for). CPUs beyond cpuSetSize words are left out. */
EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet)
{
    ENTER("nvmlDeviceGetCpuAffinity", device);
    if (!cpuSet || cpuSetSize == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    const char *p = json_string_value(field(device, "local_cpus"));
    if (!p)
        return NVML_ERROR_NOT_SUPPORTED;
    memset(cpuSet, 0, cpuSetSize * sizeof *cpuSet);
    const unsigned long bits = 8 * sizeof(unsigned long);
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0)
            return NVML_ERROR_UNKNOWN; /* not a cpulist: the fixture is wrong */
        if (*end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            if (end == q || b < a)
                return NVML_ERROR_UNKNOWN;
        }
        for (long c = a; c <= b && (unsigned long)c / bits < cpuSetSize; c++)
            cpuSet[(unsigned long)c / bits] |= 1ul << ((unsigned long)c % bits);
        if (*end && *end != ',')
            return NVML_ERROR_UNKNOWN;
        p = *end ? end + 1 : end;
    }
    return NVML_SUCCESS;
}

/* ---- NVLink ---- */

static json_t *link_of(nvmlDevice_t d, unsigned link)
{
    json_t *l;
    size_t i;
    json_array_foreach(json_object_get(d->gpu, "nvlinks"), i, l)
    {
        if (json_integer_value(json_object_get(l, "link")) == (json_int_t)link)
            return l;
    }
    return NULL;
}

/* A link number past NVML_NVLINK_MAX_LINKS is an invalid argument; a link the GPU does not have
 * (fewer links than the maximum, or no NVLink at all) is Not Supported. */
#define LINK_ENTER(call, d, link, out, l)                                                                \
    ENTER(call, d);                                                                                      \
    if (!(out))                                                                                          \
        return NVML_ERROR_INVALID_ARGUMENT;                                                              \
    WHOLE_GPU_ONLY(d);                                                                                   \
    if ((link) >= NVML_NVLINK_MAX_LINKS)                                                                 \
        return NVML_ERROR_INVALID_ARGUMENT;                                                              \
    json_t *l = link_of(d, link);                                                                        \
    if (!l)                                                                                              \
    return NVML_ERROR_NOT_SUPPORTED

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive)
{
    LINK_ENTER("nvmlDeviceGetNvLinkState", device, link, isActive, l);
    *isActive = json_is_true(json_object_get(l, "active")) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci)
{
    LINK_ENTER("nvmlDeviceGetNvLinkRemotePciInfo_v2", device, link, pci, l);
    return fill_pci(json_string_value(json_object_get(l, "remote_bus")), pci, NULL);
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                         nvmlIntNvLinkDeviceType_t *pNvLinkDeviceType)
{
    LINK_ENTER("nvmlDeviceGetNvLinkRemoteDeviceType", device, link, pNvLinkDeviceType, l);
    const char *t = json_string_value(json_object_get(l, "remote_type"));
    nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    if (t && !strcmp(t, "gpu"))
        type = NVML_NVLINK_DEVICE_TYPE_GPU;
    else if (t && !strcmp(t, "switch"))
        type = NVML_NVLINK_DEVICE_TYPE_SWITCH;
    else if (t && !strcmp(t, "ibmnpu"))
        type = NVML_NVLINK_DEVICE_TYPE_IBMNPU;
    *pNvLinkDeviceType = type;
    return NVML_SUCCESS;
}

/* ---- PCIe topology: the rule of tests/fixtures/README.md, over each GPU's pci_path ---- */

/* "pci<domain>:<bus of pci_path[0]>"; a GPU with an empty pci_path sits on the host bridge's bus. */
static void host_bridge(json_t *g, char out[32])
{
    json_t *path = json_object_get(g, "pci_path");
    const char *first = json_array_size(path) ? json_string_value(json_array_get(path, 0))
                                              : json_string_value(json_object_get(g, "bus_id"));
    unsigned dom = 0, bus = 0;
    if (!first || sscanf(first, "%x:%x", &dom, &bus) != 2)
        dom = bus = 0xFFFF;
    snprintf(out, 32, "pci%04x:%02x", dom, bus);
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                         nvmlGpuTopologyLevel_t *pathInfo)
{
    ENTER("nvmlDeviceGetTopologyCommonAncestor", device1);
    ENTER("nvmlDeviceGetTopologyCommonAncestor", device2);
    if (!pathInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device1);
    WHOLE_GPU_ONLY(device2);
    if (device1 == device2) {
        *pathInfo = NVML_TOPOLOGY_INTERNAL;
        return NVML_SUCCESS;
    }
    char ha[32], hb[32];
    host_bridge(device1->gpu, ha);
    host_bridge(device2->gpu, hb);
    if (strcmp(ha, hb) != 0) {
        json_int_t na = gpu_int(device1, "numa_node", -1), nb = gpu_int(device2, "numa_node", -1);
        *pathInfo = na >= 0 && na == nb ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM;
        return NVML_SUCCESS;
    }
    json_t *pa = json_object_get(device1->gpu, "pci_path"), *pb = json_object_get(device2->gpu, "pci_path");
    size_t la = json_array_size(pa), lb = json_array_size(pb), k = 0;
    while (k < la && k < lb) {
        const char *a = json_string_value(json_array_get(pa, k)), *b = json_string_value(json_array_get(pb, k));
        if (!a || !b || strcasecmp(a, b) != 0)
            break;
        k++;
    }
    if (k == 0)
        *pathInfo = NVML_TOPOLOGY_HOSTBRIDGE;
    else
        *pathInfo = (la > lb ? la : lb) - k <= 1 ? NVML_TOPOLOGY_SINGLE : NVML_TOPOLOGY_MULTIPLE;
    return NVML_SUCCESS;
}

/* ---- MIG ---- */

/* "mig_enabled": true/false on a MIG-capable GPU, null or absent on one that cannot do MIG. */
static int mig_capable(nvmlDevice_t d)
{
    return json_is_boolean(json_object_get(d->gpu, "mig_enabled"));
}

static int mig_on(nvmlDevice_t d)
{
    return json_is_true(json_object_get(d->gpu, "mig_enabled"));
}

/* The fake has no pending mode change: current == pending. */
EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
    ENTER("nvmlDeviceGetMigMode", device);
    if (!currentMode || !pendingMode)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    if (!mig_capable(device))
        return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = *pendingMode = mig_on(device) ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

/* NVML reports the largest possible count (7 on A100/H100), not how many exist now. */
EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    ENTER("nvmlDeviceGetMaxMigDeviceCount", device);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    if (!mig_capable(device))
        return NVML_ERROR_NOT_SUPPORTED;
    *count = MAX_MIG;
    return NVML_SUCCESS;
}

/* Slots 0..max-1: a MIG device, or Not Found for an empty slot; MIG off: Invalid Argument. */
EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
    ENTER("nvmlDeviceGetMigDeviceHandleByIndex", device);
    if (!migDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    if (!mig_capable(device))
        return NVML_ERROR_NOT_SUPPORTED;
    if (!mig_on(device) || index >= MAX_MIG)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((int)index >= S.nmig[device->index])
        return NVML_ERROR_NOT_FOUND;
    *migDevice = &S.migs[device->index][index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    ENTER("nvmlDeviceGetGpuInstanceId", device);
    if (!id)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (device->mig < 0) /* only MIG device handles belong to an instance */
        return NVML_ERROR_NOT_SUPPORTED;
    *id = (unsigned)json_integer_value(field(device, "gi"));
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    ENTER("nvmlDeviceGetComputeInstanceId", device);
    if (!id)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (device->mig < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *id = (unsigned)json_integer_value(field(device, "ci"));
    return NVML_SUCCESS;
}

/* ---- state and telemetry ---- */

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current, nvmlEnableState_t *pending)
{
    ENTER("nvmlDeviceGetEccMode", device);
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    json_t *e = field(device, "ecc_enabled");
    if (!json_is_boolean(e)) /* GeForce-class boards have no ECC */
        return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = json_is_true(e) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                              unsigned int *temp)
{
    ENTER("nvmlDeviceGetTemperature", device);
    if (!temp || sensorType != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    pthread_mutex_lock(&S.mu);
    scan_events(); /* a "temp" line appended since the last call takes effect now */
    int t = device->temperature;
    pthread_mutex_unlock(&S.mu);
    *temp = t < 0 ? 0u : (unsigned)t;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    ENTER("nvmlDeviceGetUtilizationRates", device);
    if (!utilization)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    /* NVML quirk: a GPU in MIG mode has no whole-GPU utilization (Not Supported; smi shows [N/A]) */
    if (mig_on(device))
        return NVML_ERROR_NOT_SUPPORTED;
    json_t *u = field(device, "utilization_pct");
    pthread_mutex_lock(&S.mu);
    scan_events();
    int over = device->util;
    pthread_mutex_unlock(&S.mu);
    if (!json_is_number(u) && over < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    utilization->gpu = over >= 0 ? (unsigned)over : (unsigned)json_number_value(u);
    utilization->memory = 0; /* not in the fixture */
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    ENTER("nvmlDeviceGetPowerUsage", device);
    if (!power)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    json_t *w = field(device, "power_w");
    pthread_mutex_lock(&S.mu);
    scan_events();
    int over = device->power;
    pthread_mutex_unlock(&S.mu);
    if (!json_is_number(w) && over < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    /* NVML reports milliwatts */
    *power = over >= 0 ? (unsigned)over * 1000u : (unsigned)(json_number_value(w) * 1000.0 + 0.5);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *reasons)
{
    ENTER("nvmlDeviceGetCurrentClocksThrottleReasons", device);
    if (!reasons)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    pthread_mutex_lock(&S.mu);
    scan_events();
    *reasons = device->throttle;
    pthread_mutex_unlock(&S.mu);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t type,
                                                nvmlEccCounterType_t counter, unsigned long long *count)
{
    ENTER("nvmlDeviceGetTotalEccErrors", device);
    if (!count || (type != NVML_MEMORY_ERROR_TYPE_CORRECTED && type != NVML_MEMORY_ERROR_TYPE_UNCORRECTED))
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    if (!json_is_true(field(device, "ecc_enabled")))
        return NVML_ERROR_NOT_SUPPORTED; /* as the driver answers with ECC off */
    pthread_mutex_lock(&S.mu);
    scan_events();
    int unc = type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
    /* volatile: since the driver loaded; aggregate: the board's lifetime, which includes them */
    *count = device->ecc[unc] + (counter == NVML_AGGREGATE_ECC ? device->ecc_past[unc] : 0);
    pthread_mutex_unlock(&S.mu);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corr, unsigned int *unc,
                                              unsigned int *pending, unsigned int *failed)
{
    ENTER("nvmlDeviceGetRemappedRows", device);
    if (!corr || !unc || !pending || !failed)
        return NVML_ERROR_INVALID_ARGUMENT;
    WHOLE_GPU_ONLY(device);
    pthread_mutex_lock(&S.mu);
    scan_events();
    *corr = 0;
    *unc = device->remapped;
    *pending = device->remapped > 0;
    *failed = 0;
    pthread_mutex_unlock(&S.mu);
    return NVML_SUCCESS;
}

/* ---- events ---- */

/* With S.mu held: is some live set waiting for this type on GPU idx? */
static int registered(int idx, unsigned long long type)
{
    for (struct nvmlEventSet_st *s = S.sets; s; s = s->next)
        if (s->types[idx] & type)
            return 1;
    return 0;
}

/* With S.mu held: read the complete lines FAKE_NVML_EVENTS gained since the last scan, apply temp
 * lines and queue the events some set registered for. A line without its newline yet is left for
 * the next scan; so is everything after it when the queue is full. */
static void scan_events(void)
{
    const char *path = getenv("FAKE_NVML_EVENTS");
    FILE *f = path && *path ? fopen(path, "re") : NULL;
    if (!f)
        return;
    char line[256];
    if (fseek(f, S.events_off, SEEK_SET) == 0)
        while (S.nqueue < MAX_EVENTS && fgets(line, sizeof line, f) && strchr(line, '\n')) {
            S.events_off = ftell(f);
            char kind[16], arg[32];
            int idx;
            if (sscanf(line, "%15s %d %31s", kind, &idx, arg) != 3 || idx < 0 || idx >= S.n) {
                fprintf(stderr, "fake_nvml: FAKE_NVML_EVENTS: ignoring line '%.*s'\n", (int)strcspn(line, "\n"), line);
                continue;
            }
            struct nvmlDevice_st *d = &S.gpus[idx];
            nvmlEventData_t ev = {d, 0, 0, NO_INSTANCE, NO_INSTANCE};
            if (!strcmp(kind, "temp")) {
                d->temperature = atoi(arg);
                continue;
            } else if (!strcmp(kind, "throttle")) {
                d->throttle = strtoull(arg, NULL, 0);
                continue;
            } else if (!strcmp(kind, "remap")) {
                d->remapped = (unsigned)atoi(arg);
                continue;
            } else if (!strcmp(kind, "util") || !strcmp(kind, "power") || !strcmp(kind, "memused")) {
                *(kind[0] == 'u' ? &d->util : kind[0] == 'p' ? &d->power : &d->memused) = atoi(arg);
                continue;
            } else if (!strcmp(kind, "ecc_past")) {
                unsigned long long c, u;
                if (sscanf(arg, "%llu,%llu", &c, &u) == 2) {
                    d->ecc_past[0] = c;
                    d->ecc_past[1] = u;
                } else {
                    fprintf(stderr, "fake_nvml: FAKE_NVML_EVENTS: ignoring line '%.*s'\n", (int)strcspn(line, "\n"), line);
                }
                continue;
            } else if (!strcmp(kind, "xid")) {
                ev.eventType = nvmlEventTypeXidCriticalError;
                ev.eventData = strtoull(arg, NULL, 10);
            } else if (!strcmp(kind, "ecc") && (!strcmp(arg, "sbe") || !strcmp(arg, "dbe"))) {
                ev.eventType = !strcmp(arg, "dbe") ? nvmlEventTypeDoubleBitEccError : nvmlEventTypeSingleBitEccError;
                d->ecc[!strcmp(arg, "dbe")]++;
            } else {
                fprintf(stderr, "fake_nvml: FAKE_NVML_EVENTS: ignoring line '%.*s'\n", (int)strcspn(line, "\n"), line);
                continue;
            }
            if (registered(idx, ev.eventType))
                S.queue[S.nqueue++] = ev;
        }
    fclose(f);
}

static struct nvmlEventSet_st **find_set(nvmlEventSet_t set)
{
    struct nvmlEventSet_st **p = &S.sets;
    while (*p && *p != set)
        p = &(*p)->next;
    return *p ? p : NULL;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    ENTER_SYSTEM("nvmlEventSetCreate");
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlEventSet_st *s = calloc(1, sizeof *s);
    if (!s)
        return NVML_ERROR_MEMORY;
    pthread_mutex_lock(&S.mu);
    s->next = S.sets;
    S.sets = s;
    pthread_mutex_unlock(&S.mu);
    *set = s;
    return NVML_SUCCESS;
}

/* Registering on a MIG handle registers for its parent GPU. */
EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
    ENTER("nvmlDeviceRegisterEvents", device);
    const unsigned long long known =
        nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeXidCriticalError;
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (eventTypes & ~known)
        return NVML_ERROR_NOT_SUPPORTED; /* the fake only produces these */
    pthread_mutex_lock(&S.mu);
    nvmlReturn_t r = NVML_ERROR_INVALID_ARGUMENT;
    if (find_set(set)) {
        set->types[device->index] |= eventTypes;
        r = NVML_SUCCESS;
    }
    pthread_mutex_unlock(&S.mu);
    return r;
}

/* With S.mu held: take the oldest queued event this set registered for. */
static int pop_event(nvmlEventSet_t set, nvmlEventData_t *data)
{
    for (int i = 0; i < S.nqueue; i++) {
        struct nvmlDevice_st *d = S.queue[i].device;
        if (set->types[d->index] & S.queue[i].eventType) {
            *data = S.queue[i];
            memmove(&S.queue[i], &S.queue[i + 1], (size_t)(S.nqueue - i - 1) * sizeof S.queue[0]);
            S.nqueue--;
            return 1;
        }
    }
    return 0;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    ENTER_SYSTEM("nvmlEventSetFree");
    pthread_mutex_lock(&S.mu);
    struct nvmlEventSet_st **p = set ? find_set(set) : NULL;
    if (p) {
        *p = set->next;
        free(set);
        /* events no remaining set wants are dropped */
        int kept = 0;
        for (int i = 0; i < S.nqueue; i++)
            if (registered(S.queue[i].device->index, S.queue[i].eventType))
                S.queue[kept++] = S.queue[i];
        S.nqueue = kept;
    }
    pthread_mutex_unlock(&S.mu);
    return p ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls FAKE_NVML_EVENTS every 10 ms until an event for this set or timeoutms; unset: a timeout. */
EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    ENTER_SYSTEM("nvmlEventSetWait_v2");
    if (!set || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    long long deadline = now_ms() + timeoutms;
    for (;;) {
        pthread_mutex_lock(&S.mu);
        if (!find_set(set)) {
            pthread_mutex_unlock(&S.mu);
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        scan_events();
        int got = pop_event(set, data);
        pthread_mutex_unlock(&S.mu);
        if (got)
            return NVML_SUCCESS;
        long long left = deadline - now_ms();
        if (left <= 0)
            return NVML_ERROR_TIMEOUT;
        struct timespec nap = {0, (left < 10 ? left : 10) * 1000000L};
        nanosleep(&nap, NULL);
    }
}
