/* Unit tests for `rnx job status --detail`'s text (src/cli/print_detail.c): the placement line
 * for NVLinked, mixed and PCIe-only sets, a MIG device and a set below the best; the spec's
 * devices and mounts; the events with their dropped count; user text escaped everywhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/print_detail.h"


static char *render(const char *job_json)
{
    json_error_t je;
    json_t *job = json_loads(job_json, 0, &je);
    if (!job)
        fail_msg("bad JSON in the test: %s", je.text);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    print_detail(job, f);
    fclose(f);
    json_decref(job);
    return out;
}

/* want, a run of whole lines, somewhere in out. */
static void expect_lines(const char *out, const char *want)
{
    if (!strstr(out, want))
        fail_msg("missing:\n%s\nin:\n%s", want, out);
}

#define JOB(detail) "{\"command\": \"python3\", \"args\": [\"train.py\", \"--lr\", \"0.1 0.2\"], \"detail\": " detail "}"
#define NOEVENTS "\"events\": [], \"events_dropped\": 0"
#define REQ "\"request\": {\"flags\": [\"--gpu=2\", \"--env=A=b c\"], \"uploads\": 0}"

static void test_request_and_nvlink_pair(void **state)
{
    (void)state;
    char *out = render(JOB("{" REQ ", \"placement\": {\"gpus\": [0, 1], \"numa_nodes\": [0], \"links\":"
                           " [{\"gpus\": [0, 1], \"nvlinks\": 18, \"pcie\": \"SYS\"}], \"nvlinks_min\": 18,"
                           " \"nvlinks_max\": 18, \"pcie_worst\": \"SYS\", \"score\": 18015, \"best\": 18015,"
                           " \"best_free\": 18015, \"strategy\": \"topology\"}, " NOEVENTS "}"));
    assert_string_equal(out, "Request: rnx job run --gpu=2 '--env=A=b c' python3 train.py --lr '0.1 0.2'\n"
                             "Placement: GPUs [0, 1] on NUMA node 0, NV18 between them; score 18015 of best "
                             "possible 18015 (optimal)\n"
                             "Events:\n"
                             "  none recorded\n");
    free(out);
}

static void test_mixed_links_below_the_best(void **state)
{
    (void)state;
    char *out = render(JOB("{" REQ ", \"placement\": {\"gpus\": [1, 2, 5], \"numa_nodes\": [0, 1], \"links\": ["
                           "{\"gpus\": [1, 2], \"nvlinks\": 2, \"pcie\": \"PHB\"},"
                           "{\"gpus\": [1, 5], \"nvlinks\": 2, \"pcie\": \"SYS\"},"
                           "{\"gpus\": [2, 5], \"nvlinks\": 0, \"pcie\": \"SYS\"}],"
                           " \"nvlinks_min\": 0, \"nvlinks_max\": 2, \"pcie_worst\": \"SYS\", \"score\": 4045,"
                           " \"best\": 5090, \"best_free\": 4045, \"strategy\": \"topology\", \"single_numa\": false},"
                           NOEVENTS "}"));
    expect_lines(out, "Placement: GPUs [1, 2, 5] on NUMA nodes 0, 1, NVLink 0 to 2 per pair (1-2 NV2, 1-5 NV2, "
                      "2-5 SYS); score 4045 of best possible 5090\n"
                      "  the best of the GPUs free at the time (they scored at most 4045)\n");
    free(out);
    /* free GPUs that would have scored more: held for the head of the queue */
    out = render(JOB("{" REQ ", \"placement\": {\"gpus\": [0, 1], \"numa_nodes\": [0], \"links\": [],"
                     " \"nvlinks_max\": 0, \"pcie_worst\": \"PHB\", \"score\": 35, \"best\": 2035, \"best_free\": 2035,"
                     " \"strategy\": \"topology\"}," NOEVENTS "}"));
    expect_lines(out, "Placement: GPUs [0, 1] on NUMA node 0, no NVLink; PCIe PHB between them; score 35 of best "
                      "possible 2035\n"
                      "  GPUs scoring 2035 were free, but held for the job first in line\n");
    free(out);
    out = render(JOB("{" REQ ", \"placement\": {\"gpus\": [0, 1], \"numa_nodes\": [0], \"links\": [],"
                     " \"nvlinks_max\": 1, \"nvlinks_min\": 1, \"score\": 1035, \"best\": 2035, \"best_free\": 2035,"
                     " \"strategy\": \"pack\"}," NOEVENTS "}"));
    expect_lines(out, "NV1 between them; score 1035 of best possible 2035\n"
                      "  gpu.strategy is pack (best free then: 2035)\n");
    free(out);
}

static void test_mig_and_single_gpu(void **state)
{
    (void)state;
    char *out = render(JOB("{" REQ ", \"placement\": {\"gpus\": [3], \"numa_nodes\": [1], \"mig\": {\"uuid\":"
                           " \"MIG-1234\", \"profile\": \"1g.10gb\", \"gpu\": 3}}," NOEVENTS "}"));
    expect_lines(out, "Placement: MIG device MIG-1234 (1g.10gb) of GPU 3 on NUMA node 1\n");
    free(out);
    out = render(JOB("{" REQ ", \"placement\": {\"gpus\": [6], \"numa_nodes\": [], \"shared\": true}," NOEVENTS "}"));
    expect_lines(out, "Placement: GPU [6] on NUMA node unknown, shared through MPS\n");
    free(out);
}

static void test_spec(void **state)
{
    (void)state;
    char *out = render(JOB("{" REQ ", \"spec\": {\"uid\": 1000, \"gid\": 100, \"network\": \"none (loopback only)\","
                           " \"devices\": [{\"path\": \"/dev/null\", \"standard\": true},"
                           " {\"path\": \"/dev/nvidia3\", \"standard\": false}],"
                           " \"mounts\": [{\"path\": \"/usr\", \"source\": \"/usr\", \"mode\": \"ro\"},"
                           " {\"path\": \"/tmp\", \"source\": \"tmpfs, 64 MB\", \"mode\": \"rw\"},"
                           " {\"path\": \"/volumes/d\\u001b[2J\", \"source\": \"/v/d\", \"mode\": \"rw\"}],"
                           " \"env\": [\"PATH\", \"X\"], \"secret_env\": [\"TOKEN\"],"
                           " \"limits\": {\"cpu_pct\": 150, \"memory_bytes\": 1073741824, \"cpus\": \"0-3\","
                           " \"stop_grace_s\": 10}, \"rlimits\": {\"nproc\": 4096}}," NOEVENTS "}"));
    expect_lines(out, "Devices: /dev/nvidia3\n"
                      "  standard: /dev/null\n"
                      "Mounts: /usr (ro, from /usr)\n"
                      "  /tmp (rw, tmpfs, 64 MB)\n"
                      "  /volumes/d\\x1b[2J (rw, from /v/d)\n"
                      "Env names: PATH, X\n"
                      "Secret names: TOKEN (values never shown)\n"
                      "Runs as: uid 1000, gid 100, network none (loopback only)\n"
                      "Cgroup limits: cpu 150%, memory 1.0 GB, CPUs 0-3\n"
                      "Other limits: stop grace 10s, RLIMIT_NPROC 4096\n");
    free(out);
}

static void test_events(void **state)
{
    (void)state;
    char *out = render(JOB("{" REQ ", \"events\": ["
                           "{\"time\": \"2026-01-02T03:04:05.678Z\", \"event\": \"submitted\", \"uid\": 0, \"detail\":"
                           " \"by uid 0\"},"
                           "{\"time\": \"2026-01-02T03:04:06.000Z\", \"event\": \"ended\", \"uid\": null, \"detail\":"
                           " \"FAILED (exit): \\u001b]0;x\\u0007\\nforged\"}], \"events_dropped\": 3}"));
    expect_lines(out, "Events:\n"
                      "  (3 older events dropped)\n"
                      "  2026-01-02 03:04:05  submitted  by uid 0\n"
                      "  2026-01-02 03:04:06  ended      FAILED (exit): \\x1b]0;x\\x07\\nforged\n");
    free(out);
    /* no detail: nothing */
    out = render("{\"command\": \"x\"}");
    assert_string_equal(out, "");
    free(out);
}

int main(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_and_nvlink_pair),
        cmocka_unit_test(test_mixed_links_below_the_best),
        cmocka_unit_test(test_mig_and_single_gpu),
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
