/* The part of NVIDIA's CUDA driver API that joblet-gpu-scrub uses, declared from NVIDIA's public
 * CUDA Driver API reference (docs.nvidia.com/cuda/cuda-driver-api). cuda.h comes with the CUDA
 * toolkit, which joblet does not need to build, and joblet never links libcuda: the tool resolves
 * each symbol with dlsym, and tests/fakes/fake_cuda.c implements these same declarations.
 *
 * Names are the symbols libcuda.so.1 exports, not cuda.h's macros: cuda.h maps cuCtxCreate to
 * cuCtxCreate_v2, cuMemAlloc to cuMemAlloc_v2 and so on (the _v2 entry points take 64-bit sizes
 * and pointers; the unsuffixed ones are the CUDA 3.1 ABI, kept only for old binaries).
 * Numeric values are NVIDIA's; do not renumber. */
#ifndef JOBLET_CUDA_API_H
#define JOBLET_CUDA_API_H

#include <stddef.h>

/* cuda.h makes CUdeviceptr 32 bits wide on 32-bit targets; joblet supports only LP64 ones. */
_Static_assert(sizeof(void *) == 8, "CUdeviceptr is declared for 64-bit targets only");

typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_ECC_UNCORRECTABLE = 214,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    CUDA_ERROR_UNKNOWN = 999,
} CUresult;

typedef int CUdevice;                   /* an ordinal, 0 .. cuDeviceGetCount() - 1 */
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr; /* a device address (unified with the host's on LP64) */

/* The 16 bytes behind nvidia-smi's "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

/* Every entry point the tool resolves, as X(name, return, params). The tool's dlsym table and
 * the fake library's list of injectable calls are both generated from this one list.
 * cuGetErrorName/cuGetErrorString may be called before cuInit and leave *pStr NULL (and return
 * CUDA_ERROR_INVALID_VALUE) for a code the driver does not know. cuDeviceGetUuid_v2 (R470 / CUDA
 * 11.4 and later) differs from cuDeviceGetUuid only for MIG devices, where it answers the MIG
 * instance's UUID. */
#define CUDA_FUNCTIONS(X) \
    X(cuInit, CUresult, (unsigned int Flags)) \
    X(cuGetErrorName, CUresult, (CUresult error, const char **pStr)) \
    X(cuGetErrorString, CUresult, (CUresult error, const char **pStr)) \
    X(cuDeviceGetCount, CUresult, (int *count)) \
    X(cuDeviceGet, CUresult, (CUdevice *device, int ordinal)) \
    X(cuDeviceGetUuid_v2, CUresult, (CUuuid *uuid, CUdevice dev)) \
    X(cuCtxCreate_v2, CUresult, (CUcontext *pctx, unsigned int flags, CUdevice dev)) \
    X(cuCtxDestroy_v2, CUresult, (CUcontext ctx)) \
    X(cuCtxSynchronize, CUresult, (void)) \
    X(cuMemGetInfo_v2, CUresult, (size_t *freeBytes, size_t *totalBytes)) \
    X(cuMemAlloc_v2, CUresult, (CUdeviceptr *dptr, size_t bytesize)) \
    X(cuMemFree_v2, CUresult, (CUdeviceptr dptr)) \
    X(cuMemsetD8_v2, CUresult, (CUdeviceptr dstDevice, unsigned char uc, size_t N))

#define CUDA_DECLARE(name, ret, params) ret name params;
CUDA_FUNCTIONS(CUDA_DECLARE)
#undef CUDA_DECLARE

#endif
