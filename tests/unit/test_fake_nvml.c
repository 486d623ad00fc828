/* Unit tests for the fake libnvidia-ml.so.1 (tests/fakes/fake_nvml.c): it is dlopen()ed and driven
 * through dlsym'd entry points, as joblet's NVML backend does, against machine.json files written to
 * a temporary directory.
 *
 *   test_fake_nvml <libnvidia-ml.so.1> <libnvidia-ml-legacy.so.1> <libnvidia-ml-nouuid.so.1>
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu/nvml_api.h"

/* The library's entry points, one pointer each (NULL when it does not export it). */
typedef struct {
#define NVML_FIELD(name, ret, params) ret(*name) params;
    NVML_FUNCTIONS(NVML_FIELD)
#undef NVML_FIELD
} nvml_lib;

static const char *lib_path[3]; /* complete, legacy, nouuid */
static void *lib_handle[3];
static nvml_lib libs[3];
static nvml_lib *N = &libs[0]; /* the complete library */
static char dir[64];
static char fx_main[128], fx_other[128], fx_broken[128], fx_invalid[128], fx_events[128];

static int resolve(void *h, nvml_lib *n)
{
    int found = 0;
#define NVML_RESOLVE(name, ret, params)                                                                  \
    {                                                                                                    \
        void *p = dlsym(h, #name);                                                                       \
        memcpy(&n->name, &p, sizeof p);                                                                  \
        found += p != NULL;                                                                              \
    }
    NVML_FUNCTIONS(NVML_RESOLVE)
#undef NVML_RESOLVE
    return found;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void append_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A 4-GPU two-socket machine, listed out of bus order (NVML sorts by bus id):
 *   0 18:00.0 and 1 1a:00.0: socket 0, one PCIe switch (PIX), 4 active NVLinks to each other + 1 idle
 *   2 af:00.0 and 3 b1:00.0: socket 1, two root ports of one host bridge (PHB), NVSwitch links;
 *   2 is in MIG mode with two MIG devices, 3 is MIG-capable with MIG off, 1 cannot do MIG. */
static const char MAIN_JSON[] =
    "{\"driver_version\": \"535.129.03\", \"cuda_driver_version\": 12020, \"gpus\": [\n"
    " {\"index\": 3, \"minor\": 0, \"uuid\": \"GPU-33333333-3333-3333-3333-333333333333\", \"bus_id\": \"0000:b1:00.0\",\n"
    "  \"pci_path\": [\"0000:ae:02.0\"], \"pci_device_id\": \"0x20b210de\", \"name\": \"NVIDIA A100-SXM4-80GB\",\n"
    "  \"memory_total_mb\": 81920, \"memory_used_mb\": 0, \"utilization_pct\": 7, \"temperature_c\": 40,\n"
    "  \"power_w\": 90, \"compute_capability\": \"8.0\", \"numa_node\": 1, \"local_cpus\": \"32-63\",\n"
    "  \"ecc_enabled\": false, \"mig_enabled\": false, \"mig\": [],\n"
    "  \"nvlinks\": [" /* 8 switch links */
    "{\"link\": 0, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c5:00.0\"},"
    "{\"link\": 1, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c5:00.0\"},"
    "{\"link\": 2, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c5:00.0\"},"
    "{\"link\": 3, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c5:00.0\"},"
    "{\"link\": 4, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c6:00.0\"},"
    "{\"link\": 5, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c6:00.0\"},"
    "{\"link\": 6, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c6:00.0\"},"
    "{\"link\": 7, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c6:00.0\"}]},\n"
    " {\"index\": 2, \"minor\": 1, \"uuid\": \"GPU-22222222-2222-2222-2222-222222222222\", \"bus_id\": \"0000:af:00.0\",\n"
    "  \"pci_path\": [\"0000:ae:01.0\"], \"pci_device_id\": \"0x20b210de\", \"name\": \"NVIDIA A100-SXM4-80GB\",\n"
    "  \"memory_total_mb\": 81920, \"memory_used_mb\": 3127, \"utilization_pct\": 0, \"temperature_c\": 38,\n"
    "  \"power_w\": 87, \"compute_capability\": \"8.0\", \"numa_node\": 1, \"local_cpus\": \"32-63\",\n"
    "  \"ecc_enabled\": true, \"mig_enabled\": true,\n"
    "  \"mig\": [{\"gi\": 1, \"ci\": 0, \"profile\": \"3g.40gb\", \"uuid\": \"MIG-74f695d7-0bba-be2d-9106-aa8c60cc81d0\",\n"
    "           \"memory_mb\": 40192},\n"
    "          {\"gi\": 5, \"ci\": 2, \"profile\": \"2g.20gb\", \"uuid\": \"MIG-39bf3f47-50de-7e25-ba37-b27991b82681\",\n"
    "           \"memory_mb\": 19968}],\n"
    "  \"nvlinks\": [" /* 6 switch links, one of them idle */
    "{\"link\": 0, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c5:00.0\"},"
    "{\"link\": 1, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c5:00.0\"},"
    "{\"link\": 2, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c5:00.0\"},"
    "{\"link\": 3, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c6:00.0\"},"
    "{\"link\": 4, \"active\": true, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c6:00.0\"},"
    "{\"link\": 5, \"active\": false, \"remote_type\": \"switch\", \"remote_bus\": \"0000:c6:00.0\"}]},\n"
    " {\"index\": 0, \"minor\": 2, \"uuid\": \"GPU-00000000-0000-0000-0000-000000000000\", \"bus_id\": \"0000:18:00.0\",\n"
    "  \"pci_path\": [\"0000:16:01.0\", \"0000:17:00.0\"], \"pci_device_id\": \"0x20b510de\",\n"
    "  \"name\": \"NVIDIA A100 80GB PCIe\", \"memory_total_mb\": 81920, \"memory_used_mb\": 1024,\n"
    "  \"utilization_pct\": 42, \"temperature_c\": 35, \"power_w\": 71.5, \"compute_capability\": \"8.0\",\n"
    "  \"numa_node\": 0, \"local_cpus\": \"0-3,64-65,130\", \"ecc_enabled\": true, \"mig_enabled\": false, \"mig\": [],\n"
    "  \"nvlinks\": ["
    "{\"link\": 0, \"active\": true, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:1a:00.0\"},"
    "{\"link\": 1, \"active\": true, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:1a:00.0\"},"
    "{\"link\": 2, \"active\": true, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:1a:00.0\"},"
    "{\"link\": 3, \"active\": true, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:1a:00.0\"},"
    "{\"link\": 4, \"active\": false, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:1a:00.0\"}]},\n"
    " {\"index\": 1, \"minor\": 3, \"uuid\": \"GPU-11111111-1111-1111-1111-111111111111\", \"bus_id\": \"0000:1a:00.0\",\n"
    "  \"pci_path\": [\"0000:16:01.0\", \"0000:17:04.0\"], \"pci_device_id\": \"0x1eb810de\", \"name\": \"Tesla T4\",\n"
    "  \"memory_total_mb\": 15360, \"memory_used_mb\": 0, \"utilization_pct\": 3, \"temperature_c\": 30,\n"
    "  \"power_w\": 9, \"compute_capability\": \"7.5\", \"numa_node\": 0, \"local_cpus\": \"0-31\",\n"
    "  \"ecc_enabled\": null, \"mig_enabled\": null, \"mig\": [],\n"
    "  \"nvlinks\": ["
    "{\"link\": 0, \"active\": true, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:18:00.0\"},"
    "{\"link\": 1, \"active\": true, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:18:00.0\"},"
    "{\"link\": 2, \"active\": true, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:18:00.0\"},"
    "{\"link\": 3, \"active\": true, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:18:00.0\"},"
    "{\"link\": 4, \"active\": false, \"remote_type\": \"gpu\", \"remote_bus\": \"0000:18:00.0\"}]}\n"
    "]}\n";

/* The levels the main machine does not show: MULTIPLE (0-1), NODE (0-2), SYSTEM for a GPU
 * without a NUMA node (2-3); no NVLink at all. */
static const char OTHER_JSON[] =
    "{\"driver_version\": \"550.54.15\", \"cuda_driver_version\": 12040, \"gpus\": [\n"
    " {\"bus_id\": \"0000:05:00.0\", \"pci_path\": [\"0000:00:01.0\", \"0000:03:00.0\", \"0000:04:00.0\"], \"numa_node\": 0,\n"
    "  \"name\": \"G\", \"uuid\": \"GPU-a\"},\n"
    " {\"bus_id\": \"0000:0a:00.0\", \"pci_path\": [\"0000:00:01.0\", \"0000:03:00.0\", \"0000:04:08.0\", \"0000:08:00.0\",\n"
    "  \"0000:09:00.0\"], \"numa_node\": 0, \"name\": \"G\", \"uuid\": \"GPU-b\"},\n"
    " {\"bus_id\": \"0000:41:00.0\", \"pci_path\": [\"0000:40:01.0\"], \"numa_node\": 0, \"name\": \"G\", \"uuid\": \"GPU-c\"},\n"
    " {\"bus_id\": \"0000:81:00.0\", \"pci_path\": [\"0000:80:01.0\"], \"numa_node\": -1, \"name\": \"G\", \"uuid\": \"GPU-d\"}\n"
    "]}\n";

static const char BROKEN_JSON[] = "{\"driver_version\": \"535.129.03\", \"cuda_driver_version\": 12020,\n"
                                  " \"nvml\": {\"init_error\": \"NVML_ERROR_LIB_RM_VERSION_MISMATCH\"}, \"gpus\": []}\n";

static int group_setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fake_nvml.XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    snprintf(fx_main, sizeof fx_main, "%s/main.json", dir);
    snprintf(fx_other, sizeof fx_other, "%s/other.json", dir);
    snprintf(fx_broken, sizeof fx_broken, "%s/broken.json", dir);
    snprintf(fx_invalid, sizeof fx_invalid, "%s/invalid.json", dir);
    snprintf(fx_events, sizeof fx_events, "%s/events", dir);
    write_file(fx_main, MAIN_JSON);
    write_file(fx_other, OTHER_JSON);
    write_file(fx_broken, BROKEN_JSON);
    write_file(fx_invalid, "{\"gpus\": [\n");
    for (int i = 0; i < 3; i++) {
        lib_handle[i] = dlopen(lib_path[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib_handle[i]) {
            fprintf(stderr, "%s\n", dlerror());
            return -1;
        }
        resolve(lib_handle[i], &libs[i]);
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    const char *files[] = {fx_main, fx_other, fx_broken, fx_invalid, fx_events};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    rmdir(dir);
    for (int i = 0; i < 3; i++)
        if (lib_handle[i])
            dlclose(lib_handle[i]);
    return 0;
}

/* Every test starts uninitialised with only FAKE_NVML_FIXTURE=main set, whatever the last left. */
static int setup(void **state)
{
    (void)state;
    setenv("FAKE_NVML_FIXTURE", fx_main, 1);
    unsetenv("FAKE_NVML_FAIL");
    unsetenv("FAKE_NVML_EVENTS");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++)
        if (libs[i].nvmlShutdown)
            while (libs[i].nvmlShutdown() == NVML_SUCCESS)
                ;
    return 0;
}

/* Runs nvmlInit_v2 of lib with stderr captured into err (NUL-terminated). */
static nvmlReturn_t init_capturing(nvml_lib *lib, char *err, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w+");
    assert_non_null(f);
    dup2(fileno(f), 2);
    nvmlReturn_t r = lib->nvmlInit_v2();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(err, 1, size - 1, f);
    err[n] = 0;
    fclose(f);
    unlink(path);
    return r;
}

static nvmlDevice_t handle(unsigned i)
{
    nvmlDevice_t d = NULL;
    assert_int_equal(N->nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
    assert_non_null(d);
    return d;
}

static nvmlDevice_t mig_handle(nvmlDevice_t gpu, unsigned i)
{
    nvmlDevice_t d = NULL;
    assert_int_equal(N->nvmlDeviceGetMigDeviceHandleByIndex(gpu, i, &d), NVML_SUCCESS);
    assert_non_null(d);
    return d;
}

/* ---- init ---- */

static void test_symbols(void **state)
{
    (void)state;
    nvml_lib l;
    assert_int_equal(resolve(lib_handle[0], &l), 35);
    assert_int_equal(resolve(lib_handle[1], &l), 34);
    assert_null(l.nvmlDeviceGetNumaNodeId); /* an older driver */
    assert_non_null(l.nvmlDeviceGetUUID);
    assert_int_equal(resolve(lib_handle[2], &l), 34);
    assert_null(l.nvmlDeviceGetUUID);
    assert_non_null(l.nvmlDeviceGetNumaNodeId);
    /* only NVML's names leave the library */
    assert_null(dlsym(lib_handle[0], "error_code"));
    assert_null(dlsym(lib_handle[0], "S"));
    /* the variants otherwise work */
    unsigned n = 0;
    assert_int_equal(libs[1].nvmlInit_v2(), NVML_SUCCESS);
    assert_int_equal(libs[1].nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
    assert_int_equal(n, 4);
    assert_int_equal(libs[2].nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t d;
    unsigned node = 9;
    assert_int_equal(libs[2].nvmlDeviceGetHandleByIndex_v2(2, &d), NVML_SUCCESS);
    assert_int_equal(libs[2].nvmlDeviceGetNumaNodeId(d, &node), NVML_SUCCESS);
    assert_int_equal(node, 1);
}

static void test_uninitialized(void **state)
{
    (void)state;
    unsigned n;
    nvmlDevice_t d;
    char buf[96];
    nvmlEventSet_t set;
    assert_int_equal(N->nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(N->nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(N->nvmlSystemGetDriverVersion(buf, sizeof buf), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(N->nvmlEventSetCreate(&set), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(N->nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    /* nvmlErrorString needs no init */
    assert_string_equal(N->nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized");

    /* a handle kept past the last shutdown is refused again */
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    d = handle(0);
    assert_int_equal(N->nvmlShutdown(), NVML_SUCCESS);
    assert_int_equal(N->nvmlDeviceGetUUID(d, buf, sizeof buf), NVML_ERROR_UNINITIALIZED);
}

static void test_refcount(void **state)
{
    (void)state;
    unsigned n;
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    /* the second init reads nothing: a broken fixture now does not matter */
    setenv("FAKE_NVML_FIXTURE", fx_invalid, 1);
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    assert_int_equal(N->nvmlShutdown(), NVML_SUCCESS);
    assert_int_equal(N->nvmlDeviceGetCount_v2(&n), NVML_SUCCESS); /* still one reference */
    assert_int_equal(n, 4);
    assert_int_equal(N->nvmlShutdown(), NVML_SUCCESS);
    assert_int_equal(N->nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(N->nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

static void test_init_failures(void **state)
{
    (void)state;
    char err[1024];
    unsigned n;
    unsetenv("FAKE_NVML_FIXTURE");
    assert_int_equal(init_capturing(N, err, sizeof err), NVML_ERROR_DRIVER_NOT_LOADED);
    assert_string_equal(err, "fake_nvml: FAKE_NVML_FIXTURE is not set\n");

    setenv("FAKE_NVML_FIXTURE", "/nonexistent/machine.json", 1);
    assert_int_equal(init_capturing(N, err, sizeof err), NVML_ERROR_DRIVER_NOT_LOADED);
    assert_non_null(strstr(err, "fake_nvml: "));
    assert_non_null(strstr(err, "/nonexistent/machine.json"));
    assert_non_null(strchr(err, '\n'));
    assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1); /* one line */

    setenv("FAKE_NVML_FIXTURE", fx_invalid, 1);
    assert_int_equal(init_capturing(N, err, sizeof err), NVML_ERROR_DRIVER_NOT_LOADED);
    assert_int_equal(strncmp(err, "fake_nvml: ", 11), 0);

    /* the fixture's own init error, by name */
    setenv("FAKE_NVML_FIXTURE", fx_broken, 1);
    assert_int_equal(N->nvmlInit_v2(), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
    assert_string_equal(N->nvmlErrorString(NVML_ERROR_LIB_RM_VERSION_MISMATCH),
                        "RM has detected an NVML/RM version mismatch.");
    /* none of these left a reference behind */
    assert_int_equal(N->nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(N->nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

static void test_error_strings(void **state)
{
    (void)state;
    static const struct { nvmlReturn_t r; const char *s; } want[] = {
        {NVML_SUCCESS, "Success"},
        {NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument"},
        {NVML_ERROR_NOT_SUPPORTED, "Not Supported"},
        {NVML_ERROR_NO_PERMISSION, "Insufficient Permissions"},
        {NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size"},
        {NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"},
        {NVML_ERROR_TIMEOUT, "Timeout"},
        {NVML_ERROR_GPU_IS_LOST, "GPU is lost"},
        {NVML_ERROR_OPERATING_SYSTEM, "The operating system has blocked the request."},
        {NVML_ERROR_INSUFFICIENT_RESOURCES, "Insufficient Resources"},
        {NVML_ERROR_UNKNOWN, "Unknown Error"},
        {(nvmlReturn_t)22, "Unknown Error"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_string_equal(N->nvmlErrorString(want[i].r), want[i].s);
}

/* ---- devices ---- */

static void test_counts_and_strings(void **state)
{
    (void)state;
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    unsigned n = 0, minor;
    assert_int_equal(N->nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
    assert_int_equal(n, 4);
    assert_int_equal(N->nvmlDeviceGetCount_v2(NULL), NVML_ERROR_INVALID_ARGUMENT);
    nvmlDevice_t d;
    assert_int_equal(N->nvmlDeviceGetHandleByIndex_v2(4, &d), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlDeviceGetHandleByIndex_v2(0, NULL), NVML_ERROR_INVALID_ARGUMENT);

    /* indices follow the bus ids, not the order of the fixture's list */
    static const char *uuids[] = {"GPU-00000000-0000-0000-0000-000000000000", "GPU-11111111-1111-1111-1111-111111111111",
                                  "GPU-22222222-2222-2222-2222-222222222222", "GPU-33333333-3333-3333-3333-333333333333"};
    static const unsigned minors[] = {2, 3, 1, 0};
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    for (unsigned i = 0; i < 4; i++) {
        d = handle(i);
        assert_int_equal(N->nvmlDeviceGetUUID(d, buf, sizeof buf), NVML_SUCCESS);
        assert_string_equal(buf, uuids[i]);
        assert_int_equal(N->nvmlDeviceGetMinorNumber(d, &minor), NVML_SUCCESS);
        assert_int_equal(minor, minors[i]);
    }
    assert_ptr_equal(handle(1), handle(1)); /* handles are stable */

    /* strings: exactly strlen + 1 fits, one byte less does not and writes nothing */
    d = handle(1);
    memset(buf, 'x', sizeof buf);
    assert_int_equal(N->nvmlDeviceGetName(d, buf, 8), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(buf[0], 'x');
    assert_int_equal(N->nvmlDeviceGetName(d, buf, 9), NVML_SUCCESS);
    assert_string_equal(buf, "Tesla T4");
    assert_int_equal(N->nvmlDeviceGetUUID(d, buf, 40), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(N->nvmlDeviceGetUUID(d, NULL, 96), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlDeviceGetUUID(NULL, buf, sizeof buf), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlDeviceGetMinorNumber(d, NULL), NVML_ERROR_INVALID_ARGUMENT);

    char ver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    assert_int_equal(N->nvmlSystemGetDriverVersion(ver, sizeof ver), NVML_SUCCESS);
    assert_string_equal(ver, "535.129.03");
    assert_int_equal(N->nvmlSystemGetDriverVersion(ver, 10), NVML_ERROR_INSUFFICIENT_SIZE);
    int cuda = 0;
    assert_int_equal(N->nvmlSystemGetCudaDriverVersion_v2(&cuda), NVML_SUCCESS);
    assert_int_equal(cuda, 12020);
    assert_int_equal(N->nvmlSystemGetCudaDriverVersion_v2(NULL), NVML_ERROR_INVALID_ARGUMENT);
}

static void test_properties(void **state)
{
    (void)state;
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t g0 = handle(0), g1 = handle(1), g2 = handle(2), g3 = handle(3);

    nvmlMemory_t mem;
    assert_int_equal(N->nvmlDeviceGetMemoryInfo(g0, &mem), NVML_SUCCESS);
    assert_true(mem.total == 81920ull << 20 && mem.used == 1024ull << 20 && mem.free == 80896ull << 20);
    assert_int_equal(N->nvmlDeviceGetMemoryInfo(g0, NULL), NVML_ERROR_INVALID_ARGUMENT);

    int major = 0, minor = 0;
    assert_int_equal(N->nvmlDeviceGetCudaComputeCapability(g1, &major, &minor), NVML_SUCCESS);
    assert_true(major == 7 && minor == 5);

    unsigned node = 99;
    assert_int_equal(N->nvmlDeviceGetNumaNodeId(g0, &node), NVML_SUCCESS);
    assert_int_equal(node, 0);
    assert_int_equal(N->nvmlDeviceGetNumaNodeId(g3, &node), NVML_SUCCESS);
    assert_int_equal(node, 1);

    /* "0-3,64-65,130": 64 CPUs per word; a short buffer gets the words that fit */
    unsigned long set[4];
    assert_int_equal(N->nvmlDeviceGetCpuAffinity(g0, 4, set), NVML_SUCCESS);
    assert_true(set[0] == 0xful && set[1] == 0x3ul && set[2] == 0x4ul && set[3] == 0);
    memset(set, 0xff, sizeof set);
    assert_int_equal(N->nvmlDeviceGetCpuAffinity(g0, 1, set), NVML_SUCCESS);
    assert_true(set[0] == 0xful && set[1] == ~0ul);
    assert_int_equal(N->nvmlDeviceGetCpuAffinity(g2, 1, set), NVML_SUCCESS);
    assert_true(set[0] == 0xffffffff00000000ul);
    assert_int_equal(N->nvmlDeviceGetCpuAffinity(g2, 1, NULL), NVML_ERROR_INVALID_ARGUMENT);

    nvmlEnableState_t cur, pend;
    assert_int_equal(N->nvmlDeviceGetEccMode(g0, &cur, &pend), NVML_SUCCESS);
    assert_true(cur == NVML_FEATURE_ENABLED && pend == NVML_FEATURE_ENABLED);
    assert_int_equal(N->nvmlDeviceGetEccMode(g3, &cur, &pend), NVML_SUCCESS);
    assert_true(cur == NVML_FEATURE_DISABLED && pend == NVML_FEATURE_DISABLED);
    assert_int_equal(N->nvmlDeviceGetEccMode(g1, &cur, &pend), NVML_ERROR_NOT_SUPPORTED); /* null */

    unsigned t = 0, mw = 0;
    assert_int_equal(N->nvmlDeviceGetTemperature(g0, NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
    assert_int_equal(t, 35);
    assert_int_equal(N->nvmlDeviceGetPowerUsage(g0, &mw), NVML_SUCCESS);
    assert_int_equal(mw, 71500);
    assert_int_equal(N->nvmlDeviceGetPowerUsage(g3, &mw), NVML_SUCCESS);
    assert_int_equal(mw, 90000);
    nvmlUtilization_t u;
    assert_int_equal(N->nvmlDeviceGetUtilizationRates(g0, &u), NVML_SUCCESS);
    assert_int_equal(u.gpu, 42);
    /* a GPU in MIG mode has no whole-GPU utilization */
    assert_int_equal(N->nvmlDeviceGetUtilizationRates(g2, &u), NVML_ERROR_NOT_SUPPORTED);

    /* the other machine: no NUMA node */
    assert_int_equal(N->nvmlShutdown(), NVML_SUCCESS);
    setenv("FAKE_NVML_FIXTURE", fx_other, 1);
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    assert_int_equal(N->nvmlDeviceGetNumaNodeId(handle(3), &node), NVML_ERROR_NOT_SUPPORTED);
    char ver[80];
    assert_int_equal(N->nvmlSystemGetDriverVersion(ver, sizeof ver), NVML_SUCCESS);
    assert_string_equal(ver, "550.54.15");
}

static void test_pci(void **state)
{
    (void)state;
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    nvmlPciInfo_t p;
    assert_int_equal(N->nvmlDeviceGetPciInfo_v3(handle(0), &p), NVML_SUCCESS);
    assert_string_equal(p.busId, "00000000:18:00.0");
    assert_string_equal(p.busIdLegacy, "0000:18:00.0");
    assert_true(p.domain == 0 && p.bus == 0x18 && p.device == 0);
    assert_int_equal(p.pciDeviceId, 0x20b510de);
    assert_int_equal(N->nvmlDeviceGetPciInfo_v3(handle(2), &p), NVML_SUCCESS);
    assert_string_equal(p.busId, "00000000:AF:00.0"); /* upper-case hex, as NVML */
    assert_string_equal(p.busIdLegacy, "0000:AF:00.0");
    assert_int_equal(p.bus, 0xaf);
    assert_int_equal(p.pciDeviceId, 0x20b210de);
    assert_int_equal(N->nvmlDeviceGetPciInfo_v3(handle(2), NULL), NVML_ERROR_INVALID_ARGUMENT);
}

/* ---- topology ---- */

static void check_levels(unsigned n, const nvmlGpuTopologyLevel_t *want)
{
    for (unsigned a = 0; a < n; a++)
        for (unsigned b = 0; b < n; b++) {
            nvmlGpuTopologyLevel_t l = (nvmlGpuTopologyLevel_t)-1;
            assert_int_equal(N->nvmlDeviceGetTopologyCommonAncestor(handle(a), handle(b), &l), NVML_SUCCESS);
            if (l != want[a * n + b])
                fail_msg("GPU %u - GPU %u: level %d, want %d", a, b, l, want[a * n + b]);
        }
}

static void test_topology(void **state)
{
    (void)state;
#define X NVML_TOPOLOGY_INTERNAL
#define PIX NVML_TOPOLOGY_SINGLE
#define PXB NVML_TOPOLOGY_MULTIPLE
#define PHB NVML_TOPOLOGY_HOSTBRIDGE
#define NODE NVML_TOPOLOGY_NODE
#define SYS NVML_TOPOLOGY_SYSTEM
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    static const nvmlGpuTopologyLevel_t two_socket[16] = {
        X,   PIX, SYS, SYS,
        PIX, X,   SYS, SYS,
        SYS, SYS, X,   PHB,
        SYS, SYS, PHB, X,
    };
    check_levels(4, two_socket);
    nvmlGpuTopologyLevel_t l;
    assert_int_equal(N->nvmlDeviceGetTopologyCommonAncestor(handle(0), handle(1), NULL), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlDeviceGetTopologyCommonAncestor(handle(0), NULL, &l), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlShutdown(), NVML_SUCCESS);

    setenv("FAKE_NVML_FIXTURE", fx_other, 1);
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    static const nvmlGpuTopologyLevel_t other[16] = {
        X,    PXB,  NODE, SYS,
        PXB,  X,    NODE, SYS,
        NODE, NODE, X,    SYS, /* numa -1 is never the same node */
        SYS,  SYS,  SYS,  X,
    };
    check_levels(4, other);
#undef X
#undef PIX
#undef PXB
#undef PHB
#undef NODE
#undef SYS
}

/* ---- NVLink ---- */

/* Active links of a whose remote is GPU b (the README's nvlink(A, B) for GPU links). */
static int gpu_links(nvmlDevice_t a, nvmlDevice_t b)
{
    nvmlPciInfo_t pb, remote;
    assert_int_equal(N->nvmlDeviceGetPciInfo_v3(b, &pb), NVML_SUCCESS);
    int n = 0;
    for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
        nvmlEnableState_t on;
        nvmlIntNvLinkDeviceType_t type;
        nvmlReturn_t r = N->nvmlDeviceGetNvLinkState(a, l, &on);
        if (r == NVML_ERROR_NOT_SUPPORTED)
            continue;
        assert_int_equal(r, NVML_SUCCESS);
        assert_int_equal(N->nvmlDeviceGetNvLinkRemoteDeviceType(a, l, &type), NVML_SUCCESS);
        assert_int_equal(N->nvmlDeviceGetNvLinkRemotePciInfo_v2(a, l, &remote), NVML_SUCCESS);
        n += on == NVML_FEATURE_ENABLED && type == NVML_NVLINK_DEVICE_TYPE_GPU && !strcmp(remote.busId, pb.busId);
    }
    return n;
}

static int switch_links(nvmlDevice_t a)
{
    int n = 0;
    for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
        nvmlEnableState_t on;
        nvmlIntNvLinkDeviceType_t type;
        if (N->nvmlDeviceGetNvLinkState(a, l, &on) != NVML_SUCCESS)
            continue;
        assert_int_equal(N->nvmlDeviceGetNvLinkRemoteDeviceType(a, l, &type), NVML_SUCCESS);
        n += on == NVML_FEATURE_ENABLED && type == NVML_NVLINK_DEVICE_TYPE_SWITCH;
    }
    return n;
}

static void test_nvlink(void **state)
{
    (void)state;
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t g[4] = {handle(0), handle(1), handle(2), handle(3)};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            assert_int_equal(gpu_links(g[a], g[b]), gpu_links(g[b], g[a]));
    assert_int_equal(gpu_links(g[0], g[1]), 4); /* link 4 is idle */
    assert_int_equal(gpu_links(g[0], g[2]), 0);
    assert_int_equal(switch_links(g[2]), 5);
    assert_int_equal(switch_links(g[3]), 8);

    nvmlEnableState_t on;
    nvmlPciInfo_t p;
    nvmlIntNvLinkDeviceType_t type;
    assert_int_equal(N->nvmlDeviceGetNvLinkState(g[0], 4, &on), NVML_SUCCESS);
    assert_int_equal(on, NVML_FEATURE_DISABLED);
    assert_int_equal(N->nvmlDeviceGetNvLinkRemotePciInfo_v2(g[3], 4, &p), NVML_SUCCESS);
    assert_string_equal(p.busId, "00000000:C6:00.0");
    assert_int_equal(N->nvmlDeviceGetNvLinkRemoteDeviceType(g[3], 4, &type), NVML_SUCCESS);
    assert_int_equal(type, NVML_NVLINK_DEVICE_TYPE_SWITCH);
    /* a link the GPU lacks, a link past the maximum */
    assert_int_equal(N->nvmlDeviceGetNvLinkState(g[0], 5, &on), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetNvLinkState(g[0], 17, &on), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetNvLinkState(g[0], NVML_NVLINK_MAX_LINKS, &on), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlDeviceGetNvLinkRemotePciInfo_v2(g[0], 99, &p), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlDeviceGetNvLinkState(g[0], 0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlShutdown(), NVML_SUCCESS);

    /* a machine without NVLink */
    setenv("FAKE_NVML_FIXTURE", fx_other, 1);
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    assert_int_equal(N->nvmlDeviceGetNvLinkState(handle(0), 0, &on), NVML_ERROR_NOT_SUPPORTED);
}

/* ---- MIG ---- */

static void test_mig(void **state)
{
    (void)state;
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t t4 = handle(1), a100 = handle(2), off = handle(3), m;
    unsigned cur = 9, pend = 9, max = 0, id;

    assert_int_equal(N->nvmlDeviceGetMigMode(a100, &cur, &pend), NVML_SUCCESS);
    assert_true(cur == NVML_DEVICE_MIG_ENABLE && pend == NVML_DEVICE_MIG_ENABLE);
    assert_int_equal(N->nvmlDeviceGetMigMode(off, &cur, &pend), NVML_SUCCESS);
    assert_true(cur == NVML_DEVICE_MIG_DISABLE && pend == NVML_DEVICE_MIG_DISABLE);
    assert_int_equal(N->nvmlDeviceGetMigMode(t4, &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetMaxMigDeviceCount(t4, &max), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetMaxMigDeviceCount(a100, &max), NVML_SUCCESS);
    assert_int_equal(max, 7);

    /* enumerate as the backend does: every slot up to the maximum, empty ones Not Found */
    int found = 0;
    for (unsigned i = 0; i < max; i++) {
        nvmlReturn_t r = N->nvmlDeviceGetMigDeviceHandleByIndex(a100, i, &m);
        assert_int_equal(r, i < 2 ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND);
        found += r == NVML_SUCCESS;
    }
    assert_int_equal(found, 2);
    assert_int_equal(N->nvmlDeviceGetMigDeviceHandleByIndex(a100, 7, &m), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlDeviceGetMigDeviceHandleByIndex(off, 0, &m), NVML_ERROR_INVALID_ARGUMENT);

    m = mig_handle(a100, 1);
    char buf[96];
    assert_int_equal(N->nvmlDeviceGetName(m, buf, sizeof buf), NVML_SUCCESS);
    assert_string_equal(buf, "NVIDIA A100-SXM4-80GB MIG 2g.20gb");
    assert_int_equal(N->nvmlDeviceGetName(mig_handle(a100, 0), buf, sizeof buf), NVML_SUCCESS);
    assert_string_equal(buf, "NVIDIA A100-SXM4-80GB MIG 3g.40gb");
    assert_int_equal(N->nvmlDeviceGetUUID(m, buf, sizeof buf), NVML_SUCCESS);
    assert_string_equal(buf, "MIG-39bf3f47-50de-7e25-ba37-b27991b82681");
    nvmlMemory_t mem;
    assert_int_equal(N->nvmlDeviceGetMemoryInfo(m, &mem), NVML_SUCCESS);
    assert_true(mem.total == 19968ull << 20 && mem.used == 0 && mem.free == mem.total);
    assert_int_equal(N->nvmlDeviceGetGpuInstanceId(m, &id), NVML_SUCCESS);
    assert_int_equal(id, 5);
    assert_int_equal(N->nvmlDeviceGetComputeInstanceId(m, &id), NVML_SUCCESS);
    assert_int_equal(id, 2);
    assert_int_equal(N->nvmlDeviceGetGpuInstanceId(a100, &id), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetComputeInstanceId(a100, &id), NVML_ERROR_NOT_SUPPORTED);

    /* what makes no sense on a MIG handle */
    nvmlEnableState_t on;
    nvmlGpuTopologyLevel_t l;
    nvmlDevice_t mm;
    assert_int_equal(N->nvmlDeviceGetMinorNumber(m, &id), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetNvLinkState(m, 0, &on), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetTopologyCommonAncestor(m, off, &l), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetMigMode(m, &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetMaxMigDeviceCount(m, &max), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N->nvmlDeviceGetMigDeviceHandleByIndex(m, 0, &mm), NVML_ERROR_NOT_SUPPORTED);
}

/* ---- FAKE_NVML_FAIL ---- */

static void test_fail_injection(void **state)
{
    (void)state;
    setenv("FAKE_NVML_FAIL", "nvmlDeviceGetMemoryInfo@2=NVML_ERROR_GPU_IS_LOST,"
                             "nvmlSystemGetDriverVersion=NVML_ERROR_UNKNOWN,"
                             "nvmlDeviceGetTemperature=NVML_ERROR_NO_PERMISSION", 1);
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    unsetenv("FAKE_NVML_FAIL"); /* read at init only */
    nvmlMemory_t mem;
    unsigned t;
    char ver[80];
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(N->nvmlDeviceGetMemoryInfo(handle(i), &mem), i == 2 ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS);
        assert_int_equal(N->nvmlDeviceGetTemperature(handle(i), NVML_TEMPERATURE_GPU, &t), NVML_ERROR_NO_PERMISSION);
    }
    /* a MIG device counts as its parent */
    assert_int_equal(N->nvmlDeviceGetMemoryInfo(mig_handle(handle(2), 0), &mem), NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(N->nvmlSystemGetDriverVersion(ver, sizeof ver), NVML_ERROR_UNKNOWN);
    assert_int_equal(N->nvmlShutdown(), NVML_SUCCESS);

    /* the next first init reads the (now unset) variable again */
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    assert_int_equal(N->nvmlDeviceGetMemoryInfo(handle(2), &mem), NVML_SUCCESS);
    assert_int_equal(N->nvmlShutdown(), NVML_SUCCESS);

    /* init itself, and a device index the machine does not have (never matches) */
    setenv("FAKE_NVML_FAIL", "nvmlDeviceGetUUID@9=NVML_ERROR_UNKNOWN,nvmlInit_v2=NVML_ERROR_DRIVER_NOT_LOADED", 1);
    assert_int_equal(N->nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
    unsigned n;
    assert_int_equal(N->nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);

    /* malformed specs: init fails and says which entry */
    static const char *bad[] = {
        "nvmlDeviceGetUUID",                                        /* no = */
        "nvmlDeviceGetUUID=NVML_ERROR_NOPE",                        /* unknown error */
        "nvmlDeviceGetUUID=NVML_SUCCESS",                           /* not an error */
        "nvmlDeviceGetUUId=NVML_ERROR_UNKNOWN",                     /* unknown call */
        "nvmlDeviceGetUUID@x=NVML_ERROR_UNKNOWN",                   /* index not a number */
        "nvmlDeviceGetUUID@=NVML_ERROR_UNKNOWN",                    /* empty index */
        "nvmlDeviceGetUUID@-1=NVML_ERROR_UNKNOWN",                  /* negative index */
        "nvmlDeviceGetCount_v2=NVML_ERROR_UNKNOWN,=NVML_ERROR_UNKNOWN", /* second entry lacks a call */
    };
    char err[1024];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("FAKE_NVML_FAIL", bad[i], 1);
        assert_int_equal(init_capturing(N, err, sizeof err), NVML_ERROR_INVALID_ARGUMENT);
        const char *entry = strrchr(bad[i], ',') ? strrchr(bad[i], ',') + 1 : bad[i];
        char want[256];
        snprintf(want, sizeof want, "fake_nvml: FAKE_NVML_FAIL entry '%s'", entry);
        if (strncmp(err, want, strlen(want)) != 0)
            fail_msg("spec '%s': stderr '%s'", bad[i], err);
        assert_int_equal(N->nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    }
}

/* ---- events ---- */

struct writer {
    const char *path, *text;
    int delay_ms;
};

static void *write_later(void *arg)
{
    struct writer *w = arg;
    struct timespec ts = {w->delay_ms / 1000, (long)(w->delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    append_file(w->path, w->text);
    return NULL;
}

struct waiter {
    nvmlEventSet_t set;
    nvmlEventData_t ev;
    nvmlReturn_t r;
};

static void *wait_in_thread(void *arg)
{
    struct waiter *w = arg;
    w->r = N->nvmlEventSetWait_v2(w->set, &w->ev, 5000);
    return NULL;
}

static long long ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_events(void **state)
{
    (void)state;
    write_file(fx_events, "xid 1 13\n"); /* before registration: dropped */
    setenv("FAKE_NVML_EVENTS", fx_events, 1);
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t g0 = handle(0), g1 = handle(1);
    nvmlEventSet_t set = NULL;
    nvmlEventData_t ev;
    assert_int_equal(N->nvmlEventSetCreate(&set), NVML_SUCCESS);
    assert_non_null(set);
    assert_int_equal(N->nvmlEventSetWait_v2(set, &ev, 0), NVML_ERROR_TIMEOUT);
    assert_int_equal(N->nvmlDeviceRegisterEvents(g1, nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError, set),
                     NVML_SUCCESS);

    /* nothing new: a timeout after about timeoutms */
    long long t0 = ms_now();
    assert_int_equal(N->nvmlEventSetWait_v2(set, &ev, 60), NVML_ERROR_TIMEOUT);
    assert_true(ms_now() - t0 >= 55);

    /* a line appended while waiting: the XID on GPU 1; GPU 0's XID (not registered) is dropped */
    struct writer w = {fx_events, "xid 0 48\ntemp 1 91\nxid 1 79\n", 50};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, write_later, &w), 0);
    memset(&ev, 0, sizeof ev);
    t0 = ms_now();
    assert_int_equal(N->nvmlEventSetWait_v2(set, &ev, 5000), NVML_SUCCESS);
    assert_true(ms_now() - t0 < 4000);
    pthread_join(th, NULL);
    assert_ptr_equal(ev.device, g1);
    assert_true(ev.eventType == nvmlEventTypeXidCriticalError);
    assert_true(ev.eventData == 79);
    unsigned t;
    assert_int_equal(N->nvmlDeviceGetTemperature(g1, NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
    assert_int_equal(t, 91);
    assert_int_equal(N->nvmlEventSetWait_v2(set, &ev, 20), NVML_ERROR_TIMEOUT);

    /* ECC: only the registered type; a half-written line waits for its newline */
    append_file(fx_events, "ecc 1 sbe\necc 1 dbe\nxid 1 9");
    assert_int_equal(N->nvmlEventSetWait_v2(set, &ev, 100), NVML_SUCCESS);
    assert_true(ev.eventType == nvmlEventTypeDoubleBitEccError && ev.device == g1);
    assert_int_equal(N->nvmlEventSetWait_v2(set, &ev, 30), NVML_ERROR_TIMEOUT);
    append_file(fx_events, "4\n");
    assert_int_equal(N->nvmlEventSetWait_v2(set, &ev, 100), NVML_SUCCESS);
    assert_true(ev.eventType == nvmlEventTypeXidCriticalError && ev.eventData == 94);

    /* temp lines take effect without anyone waiting */
    append_file(fx_events, "temp 0 77\n");
    assert_int_equal(N->nvmlDeviceGetTemperature(g0, NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
    assert_int_equal(t, 77);

    /* a monitoring thread waits while this one queries and the test appends */
    struct waiter wt = {set, {0}, NVML_ERROR_UNKNOWN};
    assert_int_equal(pthread_create(&th, NULL, wait_in_thread, &wt), 0);
    for (int i = 0; i < 20; i++) {
        nvmlMemory_t mem;
        assert_int_equal(N->nvmlDeviceGetTemperature(g1, NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
        assert_int_equal(N->nvmlDeviceGetMemoryInfo(g0, &mem), NVML_SUCCESS);
        if (i == 10)
            append_file(fx_events, "temp 1 60\nxid 1 31\n");
        struct timespec ms = {0, 2000000};
        nanosleep(&ms, NULL);
    }
    pthread_join(th, NULL);
    assert_int_equal(wt.r, NVML_SUCCESS);
    assert_true(wt.ev.device == g1 && wt.ev.eventData == 31);

    assert_int_equal(N->nvmlEventSetWait_v2(set, NULL, 0), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N->nvmlEventSetFree(set), NVML_SUCCESS);
    assert_int_equal(N->nvmlEventSetFree(set), NVML_ERROR_INVALID_ARGUMENT); /* already freed */
    assert_int_equal(N->nvmlShutdown(), NVML_SUCCESS);

    /* no FAKE_NVML_EVENTS: waiting just times out */
    unsetenv("FAKE_NVML_EVENTS");
    assert_int_equal(N->nvmlInit_v2(), NVML_SUCCESS);
    assert_int_equal(N->nvmlEventSetCreate(&set), NVML_SUCCESS);
    assert_int_equal(N->nvmlDeviceRegisterEvents(handle(0), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    assert_int_equal(N->nvmlEventSetWait_v2(set, &ev, 20), NVML_ERROR_TIMEOUT);
    assert_int_equal(N->nvmlEventSetFree(set), NVML_SUCCESS);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s LIBNVIDIA-ML LEGACY NOUUID\n", argv[0]);
        return 2;
    }
    for (int i = 0; i < 3; i++)
        lib_path[i] = argv[i + 1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_symbols, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uninitialized, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refcount, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counts_and_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_properties, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pci, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topology, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nvlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mig, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_injection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
