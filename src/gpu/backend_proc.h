/* The /proc backend's parsers (backend_proc.c), pure but for reading the one file they are
 * given; gpu_backend_proc (gpu.h) walks /proc with them. Declared here for their tests and the
 * fuzz harness (tests/fuzz/fuzz_gpu_proc.c). */
#ifndef JOBLET_GPU_BACKEND_PROC_H
#define JOBLET_GPU_BACKEND_PROC_H

#include <stddef.h>

#include "inventory.h"

/* The driver version ("535.129.03") from the text of /proc/driver/nvidia/version: the first
 * dotted number after "Module". -1 when there is none or it does not fit out. */
int backend_proc_driver_version(const char *text, char *out, size_t outlen);
/* Fills g's model, UUID, VBIOS, bus id and minor from a GPU's
 * /proc/driver/nvidia/gpus/<bus>/information file at path; -1 when UUID, bus id or minor is
 * missing (or the file cannot be opened). */
int backend_proc_read_information(const char *path, gpu_dev *g);

#endif
