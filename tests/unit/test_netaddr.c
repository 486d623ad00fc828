/* common/netaddr.c: job networks' addresses, names and the links joblet makes for them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/netaddr.h"

static void test_cidr_parse(void **state)
{
    (void)state;
    netaddr_cidr c;
    jerr e = {0};
    char out[40];
    assert_int_equal(netaddr_cidr_parse("cidr", "10.10.0.0/24", &c, &e), 0);
    assert_int_equal(c.base, 0x0a0a0000u);
    assert_int_equal(c.prefix, 24);
    netaddr_cidr_format(&c, out, sizeof out);
    assert_string_equal(out, "10.10.0.0/24");
    assert_int_equal(netaddr_cidr_size(&c), 256);
    /* refusals name the field and say what would do */
    struct {
        const char *in, *msg;
    } bad[] = {
        {"10.10.0.1/24", "cidr: '10.10.0.1/24' has host bits set; did you mean 10.10.0.0/24?"},
        {"10.10.0.0/31", "cidr: prefix /31 is outside /8../30 (a network needs room for a gateway and jobs)"},
        {"10.0.0.0/4", "cidr: prefix /4 is outside /8../30 (a network needs room for a gateway and jobs)"},
        {"10.10.0.0", "cidr: '10.10.0.0' is not an IPv4 network; give ADDRESS/PREFIX (e.g. 10.10.0.0/24)"},
        {"10.10.0.0/024", "cidr: '10.10.0.0/024' is not an IPv4 network; give ADDRESS/PREFIX (e.g. 10.10.0.0/24)"},
        {"10.10.0/24", "cidr: '10.10.0/24' is not an IPv4 network; give ADDRESS/PREFIX (e.g. 10.10.0.0/24)"},
        {"fe80::/64", "cidr: 'fe80::/64' is not an IPv4 network; give ADDRESS/PREFIX (e.g. 10.10.0.0/24)"},
        {"10.10.0.0/+8", "cidr: '10.10.0.0/+8' is not an IPv4 network; give ADDRESS/PREFIX (e.g. 10.10.0.0/24)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e = (jerr){0};
        assert_int_equal(netaddr_cidr_parse("cidr", bad[i].in, &c, &e), -1);
        assert_string_equal(e.msg, bad[i].msg);
        assert_string_equal(e.field, "cidr");
    }
    /* a named network's: /16 to /30, said so on either side (before, /31 was told /8../30, then /8
     * was refused as larger than /16) */
    e = (jerr){0};
    assert_int_equal(netaddr_named_cidr_parse("cidr", "10.218.0.0/31", &c, &e), -1);
    assert_string_equal(e.msg, "cidr: /31 is smaller than a named network may be (/16 to /30: room for a gateway and jobs)");
    e = (jerr){0};
    assert_int_equal(netaddr_named_cidr_parse("cidr", "10.0.0.0/8", &c, &e), -1);
    assert_string_equal(e.msg, "cidr: /8 is larger than a named network may be (/16 to /30)");
    e = (jerr){0};
    assert_int_equal(netaddr_named_cidr_parse("cidr", "10.218.0.1/24", &c, &e), -1);
    assert_string_equal(e.msg, "cidr: '10.218.0.1/24' has host bits set; did you mean 10.218.0.0/24?");
    assert_int_equal(netaddr_named_cidr_parse("cidr", "10.218.0.0/16", &c, &e), 0);
    assert_int_equal(netaddr_named_cidr_parse("cidr", "10.218.0.0/30", &c, &e), 0);
    /* an interface's address: host bits allowed, 0..32 */
    uint32_t a;
    int p;
    assert_int_equal(netaddr_with_prefix("10.217.3.4/16", &a, &p), 0);
    assert_int_equal(a, 0x0ad90304u);
    assert_int_equal(p, 16);
    assert_int_equal(netaddr_with_prefix("0.0.0.0/0", &a, &p), 0);
    assert_int_equal(netaddr_with_prefix("10.0.0.1/33", &a, &p), -1);
    assert_int_equal(netaddr_with_prefix(NULL, &a, &p), -1);
}

static void test_overlap(void **state)
{
    (void)state;
    netaddr_cidr a = {0x0a0a0000u, 24}, b = {0x0a0a0080u, 25}, c = {0x0a0b0000u, 16}, d = {0x0a000000u, 8};
    assert_true(netaddr_cidr_overlap(&a, &b));
    assert_true(netaddr_cidr_overlap(&b, &a));
    assert_false(netaddr_cidr_overlap(&a, &c));
    assert_true(netaddr_cidr_overlap(&c, &d));
    assert_true(netaddr_cidr_contains(&a, 0x0a0a00ffu));
    assert_false(netaddr_cidr_contains(&a, 0x0a0a0100u));
}

static void test_names(void **state)
{
    (void)state;
    char out[NETADDR_IFNAME_MAX + 1];
    assert_true(netaddr_name_ok("train"));
    assert_true(netaddr_name_ok("0-a_b.c"));
    assert_false(netaddr_name_ok(""));
    assert_false(netaddr_name_ok("Train"));
    assert_false(netaddr_name_ok("-x"));
    assert_false(netaddr_name_ok("a/b"));
    assert_false(netaddr_name_ok("abcdefghijklmnopqrstuvwxyz0123456"));  /* 33 */
    netaddr_bridge_name("train", out, sizeof out);
    assert_string_equal(out, "jb-train");
    netaddr_bridge_name("abcdefghijkl", out, sizeof out);  /* 3 + 12 = 15: fits */
    assert_string_equal(out, "jb-abcdefghijkl");
    /* too long, or a '.' (not in joblet's link names): a prefix and a hash, distinct */
    char other[NETADDR_IFNAME_MAX + 1];
    netaddr_bridge_name("abcdefghijklm", out, sizeof out);
    netaddr_bridge_name("abcdefghijkln", other, sizeof other);
    assert_int_equal(strlen(out), 15);
    assert_int_equal(strncmp(out, "jb-abcdef", 9), 0);
    assert_string_not_equal(out, other);
    netaddr_bridge_name("a.b", out, sizeof out);
    netaddr_bridge_name("a_b", other, sizeof other);
    assert_null(strchr(out, '.'));
    assert_string_not_equal(out, other);
    netaddr_veth_name("3f2a9c1e-4b7d-4e2f-9a0b-123456789abc", out, sizeof out);
    assert_string_equal(out, "jv3f2a9c1e4b7d");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cidr_parse),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
