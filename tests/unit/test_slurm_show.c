/* `scontrol show node` as joblet reads it (core/slurm_show.c): drained or not, and the reason
 * without Slurm's " [user@time]" (Slurm 22.05's src/api/node_info.c prints it so). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/slurm_show.h"

static const char drained[] =
    "NodeName=n1 Arch=x86_64 CoresPerSocket=1 \n"
    "   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.10\n"
    "   AvailableFeatures=(null)\n"
    "   Gres=gpu:nvidia_h100_80gb_hbm3:8\n"
    "   NodeAddr=n1 NodeHostName=n1 Version=22.05.8\n"
    "   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
    "   Partitions=debug \n"
    "   Reason=joblet: GPU 2 offline: XID 79 [root@2026-11-28T15:00:00]\n"
    "\n";

static void test_drained_by_joblet(void **s)
{
    (void)s;
    bool d;
    char r[256];
    assert_int_equal(slurm_show_parse(drained, &d, r, sizeof r), 0);
    assert_true(d);
    assert_string_equal(r, "joblet: GPU 2 offline: XID 79");
}

static void test_idle_and_others(void **s)
{
    (void)s;
    bool d;
    char r[256];
    assert_int_equal(slurm_show_parse("NodeName=n1\n   State=MIXED ThreadsPerCore=2\n", &d, r, sizeof r), 0);
    assert_false(d);
    assert_string_equal(r, "");
    /* an admin's reason with brackets of its own keeps them; only Slurm's suffix goes */
    assert_int_equal(slurm_show_parse("   State=DOWN+DRAIN+NOT_RESPONDING Foo=1\n"
                                      "   Reason=bad fan [case 12] [alice@2026-11-28T09:00:00]\n",
                                      &d, r, sizeof r), 0);
    assert_true(d);
    assert_string_equal(r, "bad fan [case 12]");
    /* NextState= is not State=; no State= at all is not a node */
    assert_int_equal(slurm_show_parse("   NextState=RESUME\n", &d, r, sizeof r), -1);
    assert_int_equal(slurm_show_parse("slurm_load_node error: Invalid node name specified\n", &d, r, sizeof r), -1);
    assert_int_equal(slurm_show_parse("", &d, r, sizeof r), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_drained_by_joblet), cmocka_unit_test(test_idle_and_others)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
