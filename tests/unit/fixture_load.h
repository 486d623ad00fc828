/* The fixture machines (tests/fixtures/<name>/machine.json) loaded as the daemon's fixture
 * backend loads them, for the unit tests that run the scheduler on them. Include after cmocka.h
 * (print_error). JOBLET_FIXTURES comes from tests/unit/meson.build. */
#ifndef JOBLET_TEST_FIXTURE_LOAD_H
#define JOBLET_TEST_FIXTURE_LOAD_H

#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"

static inline int load_fixture(const char *name, gpu_inventory *inv)
{
    gpu_config c;
    gpu_config_defaults(&c);
    snprintf(c.fixture, sizeof c.fixture, "%s/%s/machine.json", JOBLET_FIXTURES, name);
    snprintf(c.proc_root, sizeof c.proc_root, "%s/%s/proc", JOBLET_FIXTURES, name);
    memset(inv, 0, sizeof *inv);
    jerr e = {0};
    if (gpu_backend_fixture(&c, inv, &e) < 0) {
        print_error("%s: %s\n", name, e.msg);
        return -1;
    }
    return 0;
}

#endif
