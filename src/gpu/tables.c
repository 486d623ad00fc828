/* Facts about NVIDIA products that no interface reports on every backend, as tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/* CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions" (Linux x86_64,
 * GA releases): the oldest driver each CUDA version needs. A driver supports the newest CUDA
 * whose minimum it meets; nvmlSystemGetCudaDriverVersion reports the same number. */
static const struct { int cuda; const char *min_driver; } cuda_drivers[] = {
    {13000, "580.65.06"},
    {12090, "575.51.03"},
    {12080, "570.26"},
    {12060, "560.28.03"},
    {12050, "555.42.02"},
    {12040, "550.54.14"},
    {12030, "545.23.06"},
    {12020, "535.54.03"},
    {12010, "530.30.02"},
    {12000, "525.60.13"},
    {11080, "520.61.05"},
    {11070, "515.43.04"},
    {11060, "510.39.01"},
    {11050, "495.29.05"},
    {11040, "470.42.01"},
    {11030, "465.19.01"},
    {11020, "460.27.03"},
    {11010, "455.23"},
    {11000, "450.36.06"},
    {10020, "440.33"},
    {10010, "418.39"},
    {10000, "410.48"},
};

/* Dotted versions compared number by number: "535.129.03" > "535.54.03". */
static int version_cmp(const char *a, const char *b)
{
    for (;;) {
        char *ea, *eb;
        long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);
        if (x != y)
            return x < y ? -1 : 1;
        if (*ea != '.' && *eb != '.')
            return 0;
        a = *ea == '.' ? ea + 1 : ea; /* an ended version reads as zeros */
        b = *eb == '.' ? eb + 1 : eb;
    }
}

int gpu_driver_cuda_version(const char *driver)
{
    if (!driver || !*driver || driver[0] < '0' || driver[0] > '9')
        return 0;
    for (size_t i = 0; i < sizeof cuda_drivers / sizeof cuda_drivers[0]; i++)
        if (version_cmp(driver, cuda_drivers[i].min_driver) >= 0)
            return cuda_drivers[i].cuda;
    return 0;
}

const char *gpu_cuda_min_driver(int cuda)
{
    for (size_t i = 0; i < sizeof cuda_drivers / sizeof cuda_drivers[0]; i++)
        if (cuda_drivers[i].cuda == cuda)
            return cuda_drivers[i].min_driver;
    return NULL;
}

/* CUDA programming guide, "Compute Capabilities", by the model word of the product name
 * ("NVIDIA A100-SXM4-80GB" -> A100). Only the /proc backend needs it: NVML and nvidia-smi
 * report the capability themselves. */
static const struct { const char *model; int major, minor; } cc_models[] = {
    {"GB200", 10, 0}, {"B200", 10, 0}, {"B100", 10, 0},
    {"GH200", 9, 0},  {"H200", 9, 0},  {"H100", 9, 0}, {"H800", 9, 0}, {"H20", 9, 0},
    {"L40S", 8, 9},   {"L40", 8, 9},   {"L4", 8, 9},   {"L20", 8, 9},
    {"A100", 8, 0},   {"A800", 8, 0},  {"A30", 8, 0},
    {"A40", 8, 6},    {"A10", 8, 6},   {"A10G", 8, 6}, {"A16", 8, 6}, {"A2", 8, 6},
    {"T4", 7, 5},     {"V100", 7, 0},  {"V100S", 7, 0},
    {"P100", 6, 0},   {"P40", 6, 1},   {"P4", 6, 1},
};

int gpu_name_compute_capability(const char *name, int *major, int *minor)
{
    char buf[96];
    snprintf(buf, sizeof buf, "%s", name);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        w[strcspn(w, "-")] = 0;
        for (size_t i = 0; i < sizeof cc_models / sizeof cc_models[0]; i++)
            if (strcmp(w, cc_models[i].model) == 0) {
                *major = cc_models[i].major;
                *minor = cc_models[i].minor;
                return 0;
            }
    }
    return -1;
}

void gpu_mig_profile_from_name(const char *name, char *out, size_t outlen)
{
    const char *p = strstr(name, " MIG ");
    snprintf(out, outlen, "%s", p ? p + 5 : "");
}
