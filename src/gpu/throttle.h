/* NVML's clocks-throttle reasons (nvmlDeviceGetCurrentClocksThrottleReasons, a bit mask) as
 * names: a pure table, from nvml.h's nvmlClocksThrottleReason* constants. The names are the
 * API's ("sw_power_cap"); nvidia-smi -q prints the same reasons as "SW Power Cap". */
#ifndef JOBLET_THROTTLE_H
#define JOBLET_THROTTLE_H

#include <stddef.h>
#include <stdint.h>

/* The names of the bits set in mask, in bit order, at most max; a bit the table does not know
 * is named by its value ("0x400", written to unknown[], which must hold max * 24 bytes).
 * Returns how many were written. */
size_t throttle_names(uint64_t mask, const char **out, size_t max, char *unknown);

#endif
