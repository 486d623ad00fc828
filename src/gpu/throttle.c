/* Clocks-throttle reasons by name (throttle.h). */
#include "throttle.h"

#include <stdio.h>

/* nvml.h, "Clocks Throttle Reasons": each bit, and why the driver lowers the clocks */
static const struct {
    uint64_t bit;
    const char *name;
} reasons[] = {
    {0x1, "gpu_idle"},                    /* nothing runs: clocks drop to save power */
    {0x2, "applications_clocks_setting"}, /* nvidia-smi -ac / nvmlDeviceSetApplicationsClocks capped them */
    {0x4, "sw_power_cap"},                /* the software power limit (nvidia-smi -pl) */
    {0x8, "hw_slowdown"},                 /* hardware: too hot, or the power supply asked (halves clocks) */
    {0x10, "sync_boost"},                 /* kept in step with the other GPUs of a sync-boost group */
    {0x20, "sw_thermal_slowdown"},        /* the driver's own thermal limit (GPU or memory too hot) */
    {0x40, "hw_thermal_slowdown"},        /* the board's thermal sensor forced it down */
    {0x80, "hw_power_brake_slowdown"},    /* an external power-brake signal (the chassis' PSU) */
    {0x100, "display_clock_setting"},     /* held below the display's clock */
};

size_t throttle_names(uint64_t mask, const char **out, size_t max, char *unknown)
{
    size_t n = 0;
    for (int b = 0; b < 64 && n < max; b++) {
        uint64_t bit = 1ull << b;
        if (!(mask & bit))
            continue;
        const char *name = NULL;
        for (size_t k = 0; k < sizeof reasons / sizeof reasons[0]; k++)
            if (reasons[k].bit == bit)
                name = reasons[k].name;
        if (!name) {
            char *u = unknown + n * 24;
            snprintf(u, 24, "0x%llx", (unsigned long long)bit);
            name = u;
        }
        out[n++] = name;
    }
    return n;
}
