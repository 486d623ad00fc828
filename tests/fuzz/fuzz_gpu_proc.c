/* The /proc backend's parsers of GPU discovery (src/gpu/backend_proc.c): the driver version
 * from /proc/driver/nvidia/version and a GPU's /proc/driver/nvidia/gpus/<bus>/information
 * (read from a memfd), then what discovery derives from them: the compute capability by
 * model name, the inventory's JSON. */
#include <string.h>

#include "common/log.h"
#include "fuzz.h"
#include "gpu/backend_proc.h"
#include "gpu/gpu.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_set_level(LOG_ERR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gpu_inventory inv; /* 100 KB: not on the stack */
    gpu_inventory_init(&inv, "proc");
    char *text = fuzz_strndup(data, size);
    if (backend_proc_driver_version(text, inv.driver_version, sizeof inv.driver_version) == 0) {
        FUZZ_ASSERT(strspn(inv.driver_version, "0123456789.") == strlen(inv.driver_version),
                    "version '%s'", inv.driver_version);
        inv.cuda_driver_version = gpu_driver_cuda_version(inv.driver_version);
    }
    free(text);

    int fd = fuzz_memfd(data, size);
    char path[64];
    fuzz_fd_path(fd, path, sizeof path);
    gpu_dev *g = &inv.gpu[0];
    if (backend_proc_read_information(path, g) == 0) {
        FUZZ_ASSERT(memchr(g->uuid, 0, sizeof g->uuid) && memchr(g->name, 0, sizeof g->name) &&
                        memchr(g->vbios, 0, sizeof g->vbios) && memchr(g->bus_id, 0, sizeof g->bus_id),
                    "a string without its NUL");
        gpu_name_compute_capability(g->name, &g->cc_major, &g->cc_minor);
        inv.n = 1;
        gpu_inventory_finish(&inv);
        json_decref(gpu_inventory_json(&inv));
    }
    close(fd);
    return 0;
}
