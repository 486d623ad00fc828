/* rnx gpu gres-conf's lines (cli/gres_conf.c) for the fixture machines, from the inventory as
 * GET /v1/gpus shows it, with each GPU's Slurm cores from a CPU topology (gpu/cputopo.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "fixture_load.h"
#include "cli/gres_conf.h"
#include "gpu/cputopo.h"

/* What the lines must be, from the fixtures' machine.json: minors, bus order, local_cpus and
 * NVLinks (18 per H100 to the NVSwitches; 12 per A100 bridge pair; none for a T4). */
#define GOLDEN_DGX_H100 "# gres.conf for dgx01 from joblet's GPU discovery, SIMULATED GPUs (gpu.fixture); GPUs in PCI bus order\n" \
    "NodeName=dgx01 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia0 Cores=0-55 Links=-1,18,18,18,18,18,18,18\n" \
    "NodeName=dgx01 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia1 Cores=0-55 Links=18,-1,18,18,18,18,18,18\n" \
    "NodeName=dgx01 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia2 Cores=0-55 Links=18,18,-1,18,18,18,18,18\n" \
    "NodeName=dgx01 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia3 Cores=0-55 Links=18,18,18,-1,18,18,18,18\n" \
    "NodeName=dgx01 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia4 Cores=56-111 Links=18,18,18,18,-1,18,18,18\n" \
    "NodeName=dgx01 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia5 Cores=56-111 Links=18,18,18,18,18,-1,18,18\n" \
    "NodeName=dgx01 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia6 Cores=56-111 Links=18,18,18,18,18,18,-1,18\n" \
    "NodeName=dgx01 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia7 Cores=56-111 Links=18,18,18,18,18,18,18,-1\n"
#define GOLDEN_A100_PCIE "# gres.conf for n1 from joblet's GPU discovery, SIMULATED GPUs (gpu.fixture); GPUs in PCI bus order\n" \
    "NodeName=n1 Name=gpu Type=nvidia_a100-pcie-40gb File=/dev/nvidia0 Cores=0-31 Links=-1,12,0,0\n" \
    "NodeName=n1 Name=gpu Type=nvidia_a100-pcie-40gb File=/dev/nvidia1 Cores=0-31 Links=12,-1,0,0\n" \
    "NodeName=n1 Name=gpu Type=nvidia_a100-pcie-40gb File=/dev/nvidia3 Cores=32-63 Links=0,0,-1,12\n" \
    "NodeName=n1 Name=gpu Type=nvidia_a100-pcie-40gb File=/dev/nvidia2 Cores=32-63 Links=0,0,12,-1\n"
#define GOLDEN_MIXED "# gres.conf for n2 from joblet's GPU discovery, SIMULATED GPUs (gpu.fixture); GPUs in PCI bus order\n" \
    "NodeName=n2 Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia0 Cores=0-31 Links=-1,12,0,0\n" \
    "NodeName=n2 Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia1 Cores=0-31 Links=12,-1,0,0\n" \
    "NodeName=n2 Name=gpu Type=tesla_t4 File=/dev/nvidia2 Cores=0-31 Links=0,0,-1,0\n" \
    "NodeName=n2 Name=gpu Type=tesla_t4 File=/dev/nvidia3 Cores=0-31 Links=0,0,0,-1\n"


/* Linux's numbering on x86: the first thread of every core (socket by socket), then the second
 * threads in the same order; CPUs 0 and sockets*cores share core 0. */
static void x86_topology(gpu_cputopo *t, int sockets, int cores, int threads)
{
    static int pkg[CPUTOPO_MAX], die[CPUTOPO_MAX], core[CPUTOPO_MAX];
    int n = sockets * cores * threads;
    for (int c = 0; c < n; c++) {
        pkg[c] = c % (sockets * cores) / cores;
        die[c] = 0;
        core[c] = c % cores;
    }
    gpu_cputopo_from_ids(t, n, pkg, die, core);
}

/* The lines for a fixture, as rnx prints them. */
static char *lines(const char *fixture, const gpu_cputopo *t, const char *node, enum gres_conf_format fmt)
{
    static gpu_inventory inv;
    assert_int_equal(load_fixture(fixture, &inv), 0);
    if (t)
        gpu_cputopo_apply(t, &inv);
    json_t *o = gpu_inventory_json(&inv);
    char *buf = NULL, err[256] = "";
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = gres_conf_write(o, node, fmt, f, err, sizeof err);
    fclose(f);
    json_decref(o);
    if (rc < 0) {
        free(buf);
        return strdup(err);
    }
    return buf;
}

static void test_type_names(void **s)
{
    (void)s;
    char t[96];
    gres_conf_type("NVIDIA H100 80GB HBM3", t, sizeof t);
    assert_string_equal(t, "nvidia_h100_80gb_hbm3");
    gres_conf_type("Tesla V100-SXM2-16GB", t, sizeof t);
    assert_string_equal(t, "tesla_v100-sxm2-16gb");
    gres_conf_type("Odd: Name,With=Marks", t, sizeof t);
    assert_string_equal(t, "odd__name_with_marks");
    assert_int_equal(gres_conf_format_parse("gres.conf"), GRES_CONF_GRES);
    assert_int_equal(gres_conf_format_parse("slurm.conf"), GRES_CONF_SLURM);
    assert_int_equal(gres_conf_format_parse("yaml"), -1);
    assert_true(gres_conf_node_name_ok("gpu-node01.rack_2"));
    assert_false(gres_conf_node_name_ok(""));
    assert_false(gres_conf_node_name_ok("a b"));
    assert_false(gres_conf_node_name_ok("n1,n2"));
}

/* Slurm's cores: hyperthread siblings are one core; a CPU the topology lacks makes it unknown. */
static void test_cores(void **s)
{
    (void)s;
    static gpu_cputopo t;
    char out[256];
    x86_topology(&t, 2, 56, 2);
    assert_int_equal(t.ncores, 112);
    assert_int_equal(gpu_cputopo_cores(&t, "0-55,112-167", out, sizeof out), 0);
    assert_string_equal(out, "0-55");
    assert_int_equal(gpu_cputopo_cores(&t, "56-111,168-223", out, sizeof out), 0);
    assert_string_equal(out, "56-111");
    assert_int_equal(gpu_cputopo_cores(&t, "0,112,57", out, sizeof out), 0);
    assert_string_equal(out, "0,57");
    assert_int_equal(gpu_cputopo_cores(&t, "0-224", out, sizeof out), -1);
    assert_string_equal(out, "");
    /* SMT switched off (nosmt): the second threads are offline, and left out */
    {
        static int pk[8], di[8], co[8];
        for (int c = 0; c < 8; c++)
            pk[c] = c < 4 ? c / 2 : -2, di[c] = 0, co[c] = c % 2;
        gpu_cputopo_from_ids(&t, 8, pk, di, co);
        assert_int_equal(t.ncores, 4);
        assert_int_equal(gpu_cputopo_cores(&t, "2-3,6-7", out, sizeof out), 0);
        assert_string_equal(out, "2-3");
        assert_int_equal(gpu_cputopo_cores(&t, "6-7", out, sizeof out), -1); /* none of it online */
    }
    /* a machine numbering siblings next to each other (0,1 = core 0): the same cores */
    static int pkg[8], die[8], core[8];
    for (int c = 0; c < 8; c++)
        pkg[c] = c / 4, die[c] = 0, core[c] = c % 4 / 2;
    gpu_cputopo_from_ids(&t, 8, pkg, die, core);
    assert_int_equal(t.ncores, 4);
    assert_int_equal(gpu_cputopo_cores(&t, "4-7", out, sizeof out), 0);
    assert_string_equal(out, "2-3");
    /* core ids that repeat on each package (and are not contiguous) are still distinct cores */
    for (int c = 0; c < 8; c++)
        pkg[c] = c % 2, die[c] = 0, core[c] = (c / 2) * 8;
    gpu_cputopo_from_ids(&t, 8, pkg, die, core);
    assert_int_equal(t.ncores, 8);
    assert_int_equal(gpu_cputopo_cores(&t, "1,3", out, sizeof out), 0); /* package 1's first two cores */
    assert_string_equal(out, "4-5");
}

static void test_dgx_h100(void **s)
{
    (void)s;
    static gpu_cputopo t;
    x86_topology(&t, 2, 56, 2);
    char *got = lines("dgx-h100", &t, "dgx01", GRES_CONF_GRES);
    assert_string_equal(got, GOLDEN_DGX_H100);
    free(got);
    got = lines("dgx-h100", &t, "dgx01", GRES_CONF_SLURM);
    assert_string_equal(got, "NodeName=dgx01 Gres=gpu:nvidia_h100_80gb_hbm3:8\n");
    free(got);
}

/* PCIe cards, NVLink bridges in pairs, and minors that are not in bus order: File= follows
 * the minor, the lines and Links= the bus order. */
static void test_a100_pcie(void **s)
{
    (void)s;
    static gpu_cputopo t;
    x86_topology(&t, 2, 32, 2);
    char *got = lines("a100-pcie-4", &t, "n1", GRES_CONF_GRES);
    assert_string_equal(got, GOLDEN_A100_PCIE);
    free(got);
}

/* Two models, two T4s on plain PCIe (no NVLink: 0), no hyperthreads; and a machine whose CPU
 * topology is unknown: no Cores=, said so. */
static void test_mixed(void **s)
{
    (void)s;
    static gpu_cputopo t;
    x86_topology(&t, 1, 32, 1);
    char *got = lines("mixed", &t, "n2", GRES_CONF_GRES);
    assert_string_equal(got, GOLDEN_MIXED);
    free(got);
    got = lines("mixed", &t, "n2", GRES_CONF_SLURM);
    assert_string_equal(got, "NodeName=n2 Gres=gpu:nvidia_a100-sxm4-40gb:2,gpu:tesla_t4:2\n");
    free(got);
    got = lines("mixed", NULL, "n2", GRES_CONF_GRES);
    assert_non_null(strstr(got, "# GPU 0: no Cores=: its CPUs' cores are unknown on this machine\n"
                                "NodeName=n2 Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia0 Links=-1,12,0,0\n"));
    free(got);
}

static void test_mig_and_none(void **s)
{
    (void)s;
    char *got = lines("a100-mig", NULL, "n3", GRES_CONF_GRES);
    assert_non_null(strstr(got, "# GPU 0 is in MIG mode: this line gives Slurm the whole GPU; its MIG devices are not "
                                "described\n"));
    free(got);
    got = lines("no-gpu", NULL, "n4", GRES_CONF_GRES);
    assert_string_equal(got, "no GPU was discovered on this node: nothing for Slurm to schedule");
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_names), cmocka_unit_test(test_cores),  cmocka_unit_test(test_dgx_h100),
        cmocka_unit_test(test_a100_pcie),  cmocka_unit_test(test_mixed), cmocka_unit_test(test_mig_and_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
