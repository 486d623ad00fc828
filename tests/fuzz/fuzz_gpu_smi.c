/* The nvidia-smi backend's parsers of GPU discovery (src/gpu/backend_smi.c). The input is the
 * output of the five commands, separated by NUL bytes, in the order gpu_backend_smi runs them:
 * --query-gpu, -q, -L, topo -m, topo -mp. Each parser runs on one inventory as the backend
 * runs them (stopping where it stops), then the inventory is finished and shown as JSON. */
#include <string.h>

#include "common/log.h"
#include "fuzz.h"
#include "gpu/backend_smi.h"
#include "gpu/gpu.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_set_level(LOG_ERR);
    return 0;
}

static void check_strings(const gpu_inventory *inv)
{
    FUZZ_ASSERT(inv->n >= 0 && inv->n <= GPU_MAX, "%d GPUs", inv->n);
    for (int i = 0; i < inv->n; i++) {
        const gpu_dev *g = &inv->gpu[i];
        FUZZ_ASSERT(g->nmig >= 0 && g->nmig <= GPU_MIG_MAX, "GPU %d: %d MIG devices", i, g->nmig);
        FUZZ_ASSERT(memchr(g->local_cpus, 0, sizeof g->local_cpus), "GPU %d: local_cpus without its NUL", i);
        for (int m = 0; m < g->nmig; m++)
            FUZZ_ASSERT(memchr(g->mig[m].uuid, 0, sizeof g->mig[m].uuid) &&
                            memchr(g->mig[m].profile, 0, sizeof g->mig[m].profile),
                        "GPU %d MIG %d: a string without its NUL", i, m);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gpu_inventory inv;
    gpu_inventory_init(&inv, "smi");
    char *out[5] = {0};
    for (int i = 0; i < 5; i++)
        out[i] = fuzz_next(&data, &size, 0);
    jerr e = {0};
    int rc = out[0] ? backend_smi_parse_query(out[0], &inv, &e) : 0;
    if (rc == 0 && inv.n > 0 && out[1])
        rc = backend_smi_parse_q(out[1], &inv, &e);
    if (rc == 0 && inv.n > 0 && out[2])
        backend_smi_parse_L(out[2], &inv);
    if (rc == 0 && inv.n > 0 && out[3])
        rc = backend_smi_parse_topo(out[3], &inv, 1, &e);
    if (rc == 0 && inv.n > 0 && out[4])
        rc = backend_smi_parse_topo(out[4], &inv, 0, &e);
    if (rc < 0)
        FUZZ_ASSERT(e.msg[0], "refused without a message");
    check_strings(&inv);
    if (rc == 0) {
        gpu_inventory_finish(&inv);
        json_decref(gpu_inventory_json(&inv));
    }
    for (int i = 0; i < 5; i++)
        free(out[i]);
    return 0;
}
