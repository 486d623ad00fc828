/* src/slurm/gresconf.c: the GPUs of a Slurm task as device nodes, from gres.conf's File= list
 * of its node and Slurm's positions in it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "slurm/gresconf.h"

static void test_expand(void **state)
{
    char *out[16];
    assert_int_equal(gresconf_expand("/dev/nvidia[0-2]", out, 16), 3);
    assert_string_equal(out[0], "/dev/nvidia0");
    assert_string_equal(out[2], "/dev/nvidia2");
    for (int i = 0; i < 3; i++)
        free(out[i]);
    assert_int_equal(gresconf_expand("node[01-02,7],x", out, 16), 4);
    assert_string_equal(out[0], "node01");
    assert_string_equal(out[1], "node02");
    assert_string_equal(out[2], "node7"); /* each range its own width, as Slurm's hostlist */
    assert_string_equal(out[3], "x");
    for (int i = 0; i < 4; i++)
        free(out[i]);
    assert_int_equal(gresconf_expand("/dev/nvidia[3-1]", out, 16), -1);
    assert_int_equal(gresconf_expand("/dev/nvidia[a]", out, 16), -1);
    assert_int_equal(gresconf_expand("/dev/nvidia[0-20]", out, 4), -1);
}

static const char CONF[] = "# two nodes on one host, two GPUs each\n"
                           "NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia[0-1]\n"
                           "NodeName=n2 Name=gpu File=/dev/nvidia2,/dev/nvidia3   # the rest\n"
                           "Name=mps Count=100\n"
                           "NodeName=n[1-2] Name=gpu File=/dev/nvidia7\n";

static void test_node_files_and_positions(void **state)
{
    char *files[GRESCONF_MAX], why[256];
    const char *picked[GRESCONF_MAX];
    int n = gresconf_gpu_files(CONF, "n2", files, why, sizeof why);
    assert_int_equal(n, 3);
    assert_string_equal(files[0], "/dev/nvidia2");
    assert_string_equal(files[1], "/dev/nvidia3");
    assert_string_equal(files[2], "/dev/nvidia7");
    assert_int_equal(gresconf_pick(files, n, "0,2", picked, why, sizeof why), 2);
    assert_string_equal(picked[0], "/dev/nvidia2");
    assert_string_equal(picked[1], "/dev/nvidia7");
    assert_int_equal(gresconf_pick(files, n, "1-2", picked, why, sizeof why), 2);
    assert_string_equal(picked[0], "/dev/nvidia3");
    assert_int_equal(gresconf_pick(files, n, "3", picked, why, sizeof why), -1);
    assert_non_null(strstr(why, "past the 3 GPU files"));
    assert_int_equal(gresconf_pick(files, n, "", picked, why, sizeof why), 0);
    for (int i = 0; i < n; i++)
        free(files[i]);
    n = gresconf_gpu_files(CONF, "n1", files, why, sizeof why);
    assert_int_equal(n, 3);
    assert_string_equal(files[1], "/dev/nvidia1");
    for (int i = 0; i < n; i++)
        free(files[i]);
    assert_int_equal(gresconf_gpu_files("Name=gpu File=/dev/nvidia[x]\n", "n1", files, why, sizeof why), -1);
    assert_non_null(strstr(why, "line 1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_node_files_and_positions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
