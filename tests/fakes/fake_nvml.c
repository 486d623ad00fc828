/* A fake libnvidia-ml.so.1 for tests: the NVML entry points joblet's backend uses
 * (src/gpu/nvml_api.h), answering from a machine description (tests/fixtures/README.md).
 *
 *   FAKE_NVML_FIXTURE  the machine.json to serve (read by nvmlInit_v2)
 *   FAKE_NVML_FAIL     "call[@index]=NVML_ERROR_NAME,...": make that call fail, on every device
 *                      or only the one with that NVML index (MIG devices count as their parent)
 *   FAKE_NVML_EVENTS   a file tests append lines to while the daemon runs:
 *                        xid <index> <code>      an XID event on that GPU
 *                        ecc <index> sbe|dbe     an ECC event
 *                        temp <index> <celsius>  what nvmlDeviceGetTemperature answers from now on
 *
 * Built three times: complete; -DFAKE_NVML_OMIT_NUMA (an older driver without
 * nvmlDeviceGetNumaNodeId); -DFAKE_NVML_OMIT_UUID (a library lacking a required symbol). */
#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/gpu/nvml_api.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 64
#define MAX_MIG 7
#define MAX_FAILS 32
#define MAX_EVENTS 64

struct nvmlDevice_st {
    int index;          /* NVML index of the GPU (of the parent for a MIG device) */
    int mig;            /* -1 whole GPU, else the MIG device's position */
    json_t *j;          /* the GPU's or the MIG device's object */
    json_t *gpu;        /* the GPU's object */
    unsigned long long events; /* registered event types */
    int temperature;
};

struct nvmlEventSet_st {
    int unused;
};

static struct {
    pthread_mutex_t mu;
    int refs;
    json_t *root;
    int n;
    struct nvmlDevice_st gpus[MAX_GPUS];
    struct nvmlDevice_st migs[MAX_GPUS][MAX_MIG];
    int nmig[MAX_GPUS];
    struct { char call[64]; int index; nvmlReturn_t code; } fails[MAX_FAILS];
    int nfails;
    long events_off;
    struct nvmlEventSet_st set;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const struct { nvmlReturn_t code; const char *name, *text; } errors[] = {
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

static int error_code(const char *name, nvmlReturn_t *out)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (strcmp(errors[i].name, name) == 0) {
            *out = errors[i].code;
            return 0;
        }
    return -1;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == r)
            return errors[i].text;
    return "Unknown Error";
}

/* An injected failure for this call on this device (-1: a call without a device). */
static nvmlReturn_t injected(const char *call, int index)
{
    for (int i = 0; i < S.nfails; i++)
        if (strcmp(S.fails[i].call, call) == 0 && (S.fails[i].index < 0 || S.fails[i].index == index))
            return S.fails[i].code;
    return NVML_SUCCESS;
}

static int parse_fails(const char *spec)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || S.nfails == MAX_FAILS) {
            fprintf(stderr, "fake_nvml: FAKE_NVML_FAIL entry '%s' is not call[@index]=NVML_ERROR_NAME\n", item);
            return -1;
        }
        *eq = 0;
        char *at = strchr(item, '@');
        S.fails[S.nfails].index = -1;
        if (at) {
            *at = 0;
            S.fails[S.nfails].index = atoi(at + 1);
        }
        if (error_code(eq + 1, &S.fails[S.nfails].code) < 0 || !*item || strlen(item) >= 64) {
            fprintf(stderr, "fake_nvml: FAKE_NVML_FAIL entry '%s': unknown error '%s'\n", item, eq + 1);
            return -1;
        }
        snprintf(S.fails[S.nfails].call, sizeof S.fails[0].call, "%s", item);
        S.nfails++;
    }
    return 0;
}

static int bus_cmp(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "bus_id")),
                  json_string_value(json_object_get(*(json_t *const *)b, "bus_id")));
}

static nvmlReturn_t load(void)
{
    const char *path = getenv("FAKE_NVML_FIXTURE");
    json_error_t je;
    if (!path) {
        fprintf(stderr, "fake_nvml: FAKE_NVML_FIXTURE is not set\n");
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    json_t *root = json_load_file(path, 0, &je);
    if (!root || !json_is_array(json_object_get(root, "gpus"))) {
        fprintf(stderr, "fake_nvml: cannot read %s: %s\n", path, root ? "no gpus list" : je.text);
        json_decref(root);
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    const char *init_error = json_string_value(json_object_get(json_object_get(root, "nvml"), "init_error"));
    nvmlReturn_t r;
    if (init_error) {
        if (error_code(init_error, &r) < 0)
            r = NVML_ERROR_UNKNOWN;
        json_decref(root);
        return r;
    }
    const char *fail = getenv("FAKE_NVML_FAIL");
    S.nfails = 0;
    if (fail && parse_fails(fail) < 0) {
        json_decref(root);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if ((r = injected("nvmlInit_v2", -1)) != NVML_SUCCESS) {
        json_decref(root);
        return r;
    }
    /* NVML numbers GPUs in PCI bus order */
    json_t *gpus = json_object_get(root, "gpus");
    json_t *sorted[MAX_GPUS];
    S.n = (int)(json_array_size(gpus) < MAX_GPUS ? json_array_size(gpus) : MAX_GPUS);
    for (int i = 0; i < S.n; i++)
        sorted[i] = json_array_get(gpus, (size_t)i);
    qsort(sorted, (size_t)S.n, sizeof sorted[0], bus_cmp);
    for (int i = 0; i < S.n; i++) {
        json_t *g = sorted[i];
        S.gpus[i] = (struct nvmlDevice_st){i, -1, g, g, 0, (int)json_integer_value(json_object_get(g, "temperature_c"))};
        json_t *mig = json_object_get(g, "mig");
        S.nmig[i] = (int)(json_array_size(mig) < MAX_MIG ? json_array_size(mig) : MAX_MIG);
        for (int m = 0; m < S.nmig[i]; m++)
            S.migs[i][m] = (struct nvmlDevice_st){i, m, json_array_get(mig, (size_t)m), g, 0, 0};
    }
    S.root = root;
    S.events_off = 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    pthread_mutex_lock(&S.mu);
    nvmlReturn_t r = NVML_SUCCESS;
    if (S.refs == 0)
        r = load();
    if (r == NVML_SUCCESS)
        S.refs++;
    pthread_mutex_unlock(&S.mu);
    return r;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    pthread_mutex_lock(&S.mu);
    nvmlReturn_t r = NVML_SUCCESS;
    if (S.refs == 0)
        r = NVML_ERROR_UNINITIALIZED;
    else if (--S.refs == 0) {
        json_decref(S.root);
        S.root = NULL;
    }
    pthread_mutex_unlock(&S.mu);
    return r;
}

/* The checks every device call starts with. */
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
#define WHOLE_GPU_ONLY(dev)                                                                              \
    do {                                                                                                 \
        if ((dev)->mig >= 0)                                                                             \
            return NVML_ERROR_NOT_SUPPORTED;                                                             \
    } while (0)

static nvmlReturn_t copy_str(char *out, unsigned len, const char *s)
{
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!s)
        return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(s) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

static json_t *field(nvmlDevice_t d, const char *k)
{
    json_t *v = json_object_get(d->j, k);
    return v && !json_is_null(v) ? v : NULL;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!S.refs)
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t r = injected("nvmlSystemGetDriverVersion", -1);
    return r ? r : copy_str(version, length, json_string_value(json_object_get(S.root, "driver_version")));
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    if (!S.refs)
        return NVML_ERROR_UNINITIALIZED;
    if (!v)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = injected("nvmlSystemGetCudaDriverVersion_v2", -1);
    *v = (int)json_integer_value(json_object_get(S.root, "cuda_driver_version"));
    return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!S.refs)
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = injected("nvmlDeviceGetCount_v2", -1);
    *count = (unsigned)S.n;
    return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (!S.refs)
        return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= (unsigned)S.n)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = injected("nvmlDeviceGetHandleByIndex_v2", (int)index);
    if (r)
        return r;
    *device = &S.gpus[index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor)
{
    ENTER("nvmlDeviceGetMinorNumber", d);
    WHOLE_GPU_ONLY(d);
    if (!minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    *minor = (unsigned)json_integer_value(field(d, "minor"));
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OMIT_UUID
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length)
{
    ENTER("nvmlDeviceGetUUID", d);
    return copy_str(uuid, length, json_string_value(field(d, "uuid")));
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length)
{
    ENTER("nvmlDeviceGetName", d);
    char buf[160];
    const char *parent = json_string_value(json_object_get(d->gpu, "name"));
    if (d->mig >= 0) /* as the driver names MIG devices: "<GPU> MIG <profile>" */
        snprintf(buf, sizeof buf, "%s MIG %s", parent, json_string_value(field(d, "profile")));
    else
        snprintf(buf, sizeof buf, "%s", parent);
    return copy_str(name, length, buf);
}

static int parse_bus(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
    return s && sscanf(s, "%x:%x:%x.%x", dom, bus, dev, fn) == 4 ? 0 : -1;
}

static nvmlReturn_t fill_pci(const char *bus_id, nvmlPciInfo_t *pci, const char *device_id)
{
    unsigned dom, bus, dev, fn;
    if (parse_bus(bus_id, &dom, &bus, &dev, &fn) < 0)
        return NVML_ERROR_UNKNOWN;
    memset(pci, 0, sizeof *pci);
    /* NVML's spellings: 8-digit domain and upper-case hex in busId, 4 digits in busIdLegacy */
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", dom, bus, dev, fn);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", dom, bus, dev, fn);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = device_id ? (unsigned)strtoul(device_id, NULL, 16) : 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
    ENTER("nvmlDeviceGetPciInfo_v3", d);
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    return fill_pci(json_string_value(json_object_get(d->gpu, "bus_id")), pci,
                    json_string_value(json_object_get(d->gpu, "pci_device_id")));
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *mem)
{
    ENTER("nvmlDeviceGetMemoryInfo", d);
    if (!mem)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long total = (unsigned long long)json_integer_value(field(d, d->mig >= 0 ? "memory_mb" : "memory_total_mb"));
    unsigned long long used = d->mig >= 0 ? 0 : (unsigned long long)json_integer_value(field(d, "memory_used_mb"));
    mem->total = total << 20;
    mem->used = used << 20;
    mem->free = mem->total - mem->used;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
    ENTER("nvmlDeviceGetCudaComputeCapability", d);
    if (!major || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    const char *cc = json_string_value(json_object_get(d->gpu, "compute_capability"));
    return cc && sscanf(cc, "%d.%d", major, minor) == 2 ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

#ifndef FAKE_NVML_OMIT_NUMA
EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t d, unsigned int *node)
{
    ENTER("nvmlDeviceGetNumaNodeId", d);
    WHOLE_GPU_ONLY(d);
    if (!node)
        return NVML_ERROR_INVALID_ARGUMENT;
    json_int_t n = json_integer_value(field(d, "numa_node"));
    if (n < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *node = (unsigned)n;
    return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t d, unsigned int size, unsigned long *set)
{
    ENTER("nvmlDeviceGetCpuAffinity", d);
    WHOLE_GPU_ONLY(d);
    if (!set || !size)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(set, 0, size * sizeof *set);
    const char *p = json_string_value(field(d, "local_cpus"));
    if (!p)
        return NVML_ERROR_NOT_SUPPORTED;
    const unsigned bits = 8 * sizeof(unsigned long);
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b; c++)
            if ((unsigned long)c / bits < size)
                set[(unsigned long)c / bits] |= 1ul << ((unsigned long)c % bits);
        p = *end == ',' ? end + 1 : end;
        if (p == end && *p)
            break;
    }
    return NVML_SUCCESS;
}

static json_t *link_of(nvmlDevice_t d, unsigned link)
{
    json_t *l;
    size_t i;
    json_array_foreach(json_object_get(d->gpu, "nvlinks"), i, l) if (json_integer_value(json_object_get(l, "link")) ==
                                                                   (json_int_t)link) return l;
    return NULL;
}

#define LINK_ENTER(call, d, link, l)                                                                     \
    ENTER(call, d);                                                                                      \
    WHOLE_GPU_ONLY(d);                                                                                   \
    if ((link) >= NVML_NVLINK_MAX_LINKS)                                                                 \
        return NVML_ERROR_INVALID_ARGUMENT;                                                              \
    json_t *l = link_of(d, link);                                                                        \
    if (!l)                                                                                              \
        return NVML_ERROR_NOT_SUPPORTED

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, nvmlEnableState_t *active)
{
    LINK_ENTER("nvmlDeviceGetNvLinkState", d, link, l);
    if (!active)
        return NVML_ERROR_INVALID_ARGUMENT;
    *active = json_is_true(json_object_get(l, "active")) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link, nvmlPciInfo_t *pci)
{
    LINK_ENTER("nvmlDeviceGetNvLinkRemotePciInfo_v2", d, link, l);
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    return fill_pci(json_string_value(json_object_get(l, "remote_bus")), pci, NULL);
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned int link,
                                                         nvmlIntNvLinkDeviceType_t *type)
{
    LINK_ENTER("nvmlDeviceGetNvLinkRemoteDeviceType", d, link, l);
    if (!type)
        return NVML_ERROR_INVALID_ARGUMENT;
    const char *t = json_string_value(json_object_get(l, "remote_type"));
    *type = !t                        ? NVML_NVLINK_DEVICE_TYPE_UNKNOWN
            : !strcmp(t, "gpu")       ? NVML_NVLINK_DEVICE_TYPE_GPU
            : !strcmp(t, "switch")    ? NVML_NVLINK_DEVICE_TYPE_SWITCH
            : !strcmp(t, "ibmnpu")    ? NVML_NVLINK_DEVICE_TYPE_IBMNPU
                                      : NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    return NVML_SUCCESS;
}

/* The PCIe rule of tests/fixtures/README.md, over each GPU's pci_path. */
static void host_bridge(json_t *g, char out[32])
{
    json_t *path = json_object_get(g, "pci_path");
    const char *first = json_array_size(path) ? json_string_value(json_array_get(path, 0))
                                              : json_string_value(json_object_get(g, "bus_id"));
    unsigned dom = 0, bus = 0;
    sscanf(first ? first : "", "%x:%x", &dom, &bus);
    snprintf(out, 32, "pci%04x:%02x", dom, bus);
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, nvmlGpuTopologyLevel_t *lvl)
{
    ENTER("nvmlDeviceGetTopologyCommonAncestor", a);
    ENTER("nvmlDeviceGetTopologyCommonAncestor", b);
    WHOLE_GPU_ONLY(a);
    WHOLE_GPU_ONLY(b);
    if (!lvl)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (a == b) {
        *lvl = NVML_TOPOLOGY_INTERNAL;
        return NVML_SUCCESS;
    }
    char ha[32], hb[32];
    host_bridge(a->gpu, ha);
    host_bridge(b->gpu, hb);
    if (strcmp(ha, hb) != 0) {
        json_int_t na = json_integer_value(json_object_get(a->gpu, "numa_node"));
        json_int_t nb = json_integer_value(json_object_get(b->gpu, "numa_node"));
        *lvl = na >= 0 && na == nb ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM;
        return NVML_SUCCESS;
    }
    json_t *pa = json_object_get(a->gpu, "pci_path"), *pb = json_object_get(b->gpu, "pci_path");
    size_t la = json_array_size(pa), lb = json_array_size(pb), k = 0;
    while (k < la && k < lb &&
           strcasecmp(json_string_value(json_array_get(pa, k)), json_string_value(json_array_get(pb, k))) == 0)
        k++;
    if (k == 0)
        *lvl = NVML_TOPOLOGY_HOSTBRIDGE;
    else
        *lvl = (la > lb ? la : lb) - k <= 1 ? NVML_TOPOLOGY_SINGLE : NVML_TOPOLOGY_MULTIPLE;
    return NVML_SUCCESS;
}

static int mig_capable(nvmlDevice_t d)
{
    json_t *m = json_object_get(d->gpu, "mig_enabled");
    return m && json_is_boolean(m);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending)
{
    ENTER("nvmlDeviceGetMigMode", d);
    WHOLE_GPU_ONLY(d);
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!mig_capable(d))
        return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = json_is_true(json_object_get(d->gpu, "mig_enabled")) ? NVML_DEVICE_MIG_ENABLE
                                                                             : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count)
{
    ENTER("nvmlDeviceGetMaxMigDeviceCount", d);
    WHOLE_GPU_ONLY(d);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!mig_capable(d))
        return NVML_ERROR_NOT_SUPPORTED;
    *count = MAX_MIG;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig)
{
    ENTER("nvmlDeviceGetMigDeviceHandleByIndex", d);
    WHOLE_GPU_ONLY(d);
    if (!mig || !mig_capable(d) || !json_is_true(json_object_get(d->gpu, "mig_enabled")) || index >= MAX_MIG)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((int)index >= S.nmig[d->index])
        return NVML_ERROR_NOT_FOUND;
    *mig = &S.migs[d->index][index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id)
{
    ENTER("nvmlDeviceGetGpuInstanceId", d);
    if (!id)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (d->mig < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *id = (unsigned)json_integer_value(field(d, "gi"));
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id)
{
    ENTER("nvmlDeviceGetComputeInstanceId", d);
    if (!id)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (d->mig < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *id = (unsigned)json_integer_value(field(d, "ci"));
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, nvmlEnableState_t *current, nvmlEnableState_t *pending)
{
    ENTER("nvmlDeviceGetEccMode", d);
    WHOLE_GPU_ONLY(d);
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    json_t *e = field(d, "ecc_enabled");
    if (!e)
        return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = json_is_true(e) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, nvmlTemperatureSensors_t sensor, unsigned int *temp)
{
    ENTER("nvmlDeviceGetTemperature", d);
    WHOLE_GPU_ONLY(d);
    if (!temp || sensor != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&S.mu);
    *temp = (unsigned)d->temperature;
    pthread_mutex_unlock(&S.mu);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    ENTER("nvmlDeviceGetUtilizationRates", d);
    WHOLE_GPU_ONLY(d);
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* a GPU in MIG mode has no whole-GPU utilization */
    if (json_is_true(json_object_get(d->gpu, "mig_enabled")))
        return NVML_ERROR_NOT_SUPPORTED;
    u->gpu = (unsigned)json_integer_value(field(d, "utilization_pct"));
    u->memory = 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
    ENTER("nvmlDeviceGetPowerUsage", d);
    WHOLE_GPU_ONLY(d);
    if (!mw)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mw = (unsigned)json_integer_value(field(d, "power_w")) * 1000;
    return NVML_SUCCESS;
}

/* ---- events ---- */

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    if (!S.refs)
        return NVML_ERROR_UNINITIALIZED;
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    *set = &S.set;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
    ENTER("nvmlDeviceRegisterEvents", d);
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&S.mu);
    d->events |= types;
    pthread_mutex_unlock(&S.mu);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    return set ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* The next unread line of FAKE_NVML_EVENTS that makes an event; 1 when data was filled. */
static int next_event(nvmlEventData_t *data)
{
    const char *path = getenv("FAKE_NVML_EVENTS");
    FILE *f = path ? fopen(path, "re") : NULL;
    if (!f)
        return 0;
    int got = 0;
    char line[128];
    fseek(f, S.events_off, SEEK_SET);
    while (!got && fgets(line, sizeof line, f)) {
        if (!strchr(line, '\n'))
            break; /* a line still being written */
        S.events_off = ftell(f);
        char kind[8], arg[16];
        int idx;
        long long v = 0;
        if (sscanf(line, "%7s %d %15s", kind, &idx, arg) != 3 || idx < 0 || idx >= S.n)
            continue;
        struct nvmlDevice_st *d = &S.gpus[idx];
        v = atoll(arg);
        if (!strcmp(kind, "temp")) {
            d->temperature = (int)v;
        } else if (!strcmp(kind, "xid") && (d->events & nvmlEventTypeXidCriticalError)) {
            *data = (nvmlEventData_t){d, nvmlEventTypeXidCriticalError, (unsigned long long)v, 0xFFFFFFFF, 0xFFFFFFFF};
            got = 1;
        } else if (!strcmp(kind, "ecc")) {
            unsigned long long t = !strcmp(arg, "dbe") ? nvmlEventTypeDoubleBitEccError : nvmlEventTypeSingleBitEccError;
            if (d->events & t) {
                *data = (nvmlEventData_t){d, t, 0, 0xFFFFFFFF, 0xFFFFFFFF};
                got = 1;
            }
        }
    }
    fclose(f);
    return got;
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    if (!S.refs)
        return NVML_ERROR_UNINITIALIZED;
    if (!set || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    for (unsigned waited = 0;; waited += 10) {
        pthread_mutex_lock(&S.mu);
        int got = next_event(data);
        pthread_mutex_unlock(&S.mu);
        if (got)
            return NVML_SUCCESS;
        if (waited >= timeoutms)
            return NVML_ERROR_TIMEOUT;
        nanosleep(&ten_ms, NULL);
    }
}
