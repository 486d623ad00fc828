/* The part of NVIDIA's NVML API that joblet uses, declared from NVIDIA's public NVML reference
 * (docs.nvidia.com/deploy/nvml-api). nvml.h is not packaged for Debian and joblet never links
 * NVML: the backend resolves each symbol with dlsym, and tests/fakes/fake_nvml.c implements
 * these same declarations. Numeric values are NVIDIA's; do not renumber. */
#ifndef JOBLET_NVML_API_H
#define JOBLET_NVML_API_H

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

typedef enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;

/* nvmlDeviceGetTopologyCommonAncestor: the closest point two GPUs' PCIe paths share. */
typedef enum {
    NVML_TOPOLOGY_INTERNAL = 0,   /* same board (multi-GPU cards) */
    NVML_TOPOLOGY_SINGLE = 10,    /* one PCIe switch (nvidia-smi: PIX) */
    NVML_TOPOLOGY_MULTIPLE = 20,  /* several PCIe switches, no host bridge (PXB) */
    NVML_TOPOLOGY_HOSTBRIDGE = 30,/* the same host bridge (PHB) */
    NVML_TOPOLOGY_NODE = 40,      /* host bridges of one NUMA node (NODE) */
    NVML_TOPOLOGY_SYSTEM = 50,    /* across the CPU interconnect (SYS) */
} nvmlGpuTopologyLevel_t;

typedef enum {
    NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
    NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
    NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
    NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF,
} nvmlIntNvLinkDeviceType_t;

typedef enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;

#define NVML_NVLINK_MAX_LINKS 18
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

typedef struct {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "0000:18:00.0" */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;     /* device id << 16 | vendor id */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];           /* "00000000:18:00.0" */
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total; /* bytes */
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int gpu;    /* percent of time a kernel ran */
    unsigned int memory; /* percent of time memory was read or written */
} nvmlUtilization_t;

/* Health sampling. */
typedef enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 } nvmlMemoryErrorType_t;
typedef enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 } nvmlEccCounterType_t;

/* Events (health monitoring). */
#define nvmlEventTypeSingleBitEccError 0x0000000000000001LL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002LL
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData; /* the XID for XID events */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

/* Every entry point the backend resolves, as X(name, return, params). The fake library and the
 * backend's dlsym table are both generated from this one list. */
#define NVML_FUNCTIONS(X) \
    X(nvmlInit_v2, nvmlReturn_t, (void)) \
    X(nvmlShutdown, nvmlReturn_t, (void)) \
    X(nvmlErrorString, const char *, (nvmlReturn_t result)) \
    X(nvmlSystemGetDriverVersion, nvmlReturn_t, (char *version, unsigned int length)) \
    X(nvmlSystemGetCudaDriverVersion_v2, nvmlReturn_t, (int *cudaDriverVersion)) \
    X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *deviceCount)) \
    X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int index, nvmlDevice_t *device)) \
    X(nvmlDeviceGetMinorNumber, nvmlReturn_t, (nvmlDevice_t device, unsigned int *minorNumber)) \
    X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char *uuid, unsigned int length)) \
    X(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t device, char *name, unsigned int length)) \
    X(nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t *pci)) \
    X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t *memory)) \
    X(nvmlDeviceGetCudaComputeCapability, nvmlReturn_t, (nvmlDevice_t device, int *major, int *minor)) \
    X(nvmlDeviceGetNumaNodeId, nvmlReturn_t, (nvmlDevice_t device, unsigned int *node)) \
    X(nvmlDeviceGetCpuAffinity, nvmlReturn_t, \
      (nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet)) \
    X(nvmlDeviceGetNvLinkState, nvmlReturn_t, \
      (nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive)) \
    X(nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlReturn_t, \
      (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci)) \
    X(nvmlDeviceGetNvLinkRemoteDeviceType, nvmlReturn_t, \
      (nvmlDevice_t device, unsigned int link, nvmlIntNvLinkDeviceType_t *pNvLinkDeviceType)) \
    X(nvmlDeviceGetTopologyCommonAncestor, nvmlReturn_t, \
      (nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuTopologyLevel_t *pathInfo)) \
    X(nvmlDeviceGetMigMode, nvmlReturn_t, \
      (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)) \
    X(nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t, (nvmlDevice_t device, unsigned int *count)) \
    X(nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t, \
      (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)) \
    X(nvmlDeviceGetGpuInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned int *id)) \
    X(nvmlDeviceGetComputeInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned int *id)) \
    X(nvmlDeviceGetEccMode, nvmlReturn_t, \
      (nvmlDevice_t device, nvmlEnableState_t *current, nvmlEnableState_t *pending)) \
    X(nvmlDeviceGetTemperature, nvmlReturn_t, \
      (nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int *temp)) \
    X(nvmlDeviceGetUtilizationRates, nvmlReturn_t, (nvmlDevice_t device, nvmlUtilization_t *utilization)) \
    X(nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t device, unsigned int *power)) \
    X(nvmlDeviceGetCurrentClocksThrottleReasons, nvmlReturn_t, \
      (nvmlDevice_t device, unsigned long long *clocksThrottleReasons)) \
    X(nvmlDeviceGetTotalEccErrors, nvmlReturn_t, \
      (nvmlDevice_t device, nvmlMemoryErrorType_t errorType, nvmlEccCounterType_t counterType, \
       unsigned long long *eccCounts)) \
    X(nvmlDeviceGetRemappedRows, nvmlReturn_t, \
      (nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows, unsigned int *isPending, \
       unsigned int *failureOccurred)) \
    X(nvmlEventSetCreate, nvmlReturn_t, (nvmlEventSet_t *set)) \
    X(nvmlDeviceRegisterEvents, nvmlReturn_t, \
      (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)) \
    X(nvmlEventSetWait_v2, nvmlReturn_t, (nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)) \
    X(nvmlEventSetFree, nvmlReturn_t, (nvmlEventSet_t set))

#define NVML_DECLARE(name, ret, params) ret name params;
NVML_FUNCTIONS(NVML_DECLARE)
#undef NVML_DECLARE

#endif
