/* daemon/cert.c: the checks of joblet cert's command line, which it runs before any file or
 * GnuTLS: user names, roles, the names of a server certificate (DNS name or IP address),
 * --address, and serials as an admin types them; what each refusal says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/cert.h"

static void refused(int rc, const jerr *e, const char *field, const char *says)
{
    assert_int_equal(rc, -1);
    assert_int_equal(e->http, 400); /* a usage error: joblet cert exits 2 */
    assert_string_equal(e->field, field);
    if (!strstr(e->msg, says))
        fail_msg("'%s' does not say '%s'", e->msg, says);
}

static void test_user_names(void **state)
{
    jerr e = {0};
    static const char *const ok[] = {"alice", "a", "A.b_c-d", "x1", "0day", "alice-keys", "cat",
                                     "serverless", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        assert_int_equal(cert_user_check(ok[i], &e), 0);
    refused(cert_user_check("", &e), &e, "--user", "empty");
    refused(cert_user_check("../x", &e), &e, "--user", "starts with '.'");
    refused(cert_user_check("-x", &e), &e, "--user", "starts with '-'");
    refused(cert_user_check("a/b", &e), &e, "--user", "has '/'");
    refused(cert_user_check("a b", &e), &e, "--user", "has ' '");
    refused(cert_user_check("a\nb", &e), &e, "--user", "has '\\x0a'");
    refused(cert_user_check("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &e), &e, "--user",
            "65 characters");
    /* the names of the directory's own files */
    refused(cert_user_check("ca", &e), &e, "--user", "ca.pem and ca-key.pem");
    refused(cert_user_check("server", &e), &e, "--user", "server.pem");
    refused(cert_user_check("alice-key", &e), &e, "--user", "ends in '-key'");
    refused(cert_user_check("ca-key", &e), &e, "--user", "ends in '-key'");
}

static void test_roles(void **state)
{
    jerr e = {0};
    static const char *const ok[] = {"reader", "developer", "maintainer", "admin"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        assert_int_equal(cert_role_check(ok[i], &e), 0);
    refused(cert_role_check("boss", &e), &e, "--role",
            "--role: 'boss' is not a role; use reader, developer, maintainer or admin");
    /* operator is a role of the unix socket's callers (server.admin_group), not of certificates */
    refused(cert_role_check("operator", &e), &e, "--role", "not a role");
    refused(cert_role_check("Admin", &e), &e, "--role", "not a role");
}

static void test_san_items(void **state)
{
    jerr e = {0};
    cert_san s;
    static const unsigned char v4[] = {10, 0, 0, 5}, lo6[16] = {[15] = 1};
    assert_int_equal(cert_san_parse("--san", "10.0.0.5", &s, &e), 0);
    assert_int_equal(s.kind, CERT_SAN_IP);
    assert_int_equal(s.iplen, 4);
    assert_memory_equal(s.ip, v4, 4);
    assert_int_equal(cert_san_parse("--san", "::1", &s, &e), 0);
    assert_int_equal(s.kind, CERT_SAN_IP);
    assert_int_equal(s.iplen, 16);
    assert_memory_equal(s.ip, lo6, 16);
    assert_int_equal(cert_san_parse("--san", "[::1]", &s, &e), 0);
    assert_int_equal(s.kind, CERT_SAN_IP);
    assert_string_equal(s.text, "::1");
    assert_int_equal(cert_san_parse("--san", "2001:DB8:0:0::7", &s, &e), 0);
    assert_string_equal(s.text, "2001:db8::7"); /* as inet_ntop writes it */
    static const char *const dns[] = {"node1", "node1.example.com", "a-b.c", "1node.example", "x.y.z9a"};
    for (size_t i = 0; i < sizeof dns / sizeof dns[0]; i++) {
        assert_int_equal(cert_san_parse("--san", dns[i], &s, &e), 0);
        assert_int_equal(s.kind, CERT_SAN_DNS);
        assert_string_equal(s.text, dns[i]);
    }
    refused(cert_san_parse("--san", "10.0.0", &s, &e), &e, "--san", "last label is all digits");
    refused(cert_san_parse("--san", "300.1.1.1", &s, &e), &e, "--san", "last label is all digits");
    refused(cert_san_parse("--san", "node_1", &s, &e), &e, "--san", "character other than");
    refused(cert_san_parse("--san", "*.example.com", &s, &e), &e, "--san", "character other than");
    refused(cert_san_parse("--san", "a..b", &s, &e), &e, "--san", "empty label");
    refused(cert_san_parse("--san", "-a.b", &s, &e), &e, "--san", "starts or ends with '-'");
    refused(cert_san_parse("--san", "fe80::1%eth0", &s, &e), &e, "--san", "neither an IP address nor a DNS name");
    refused(cert_san_parse("--name", "[node1]", &s, &e), &e, "--name", "only an IPv6 address goes in brackets");
    refused(cert_san_parse("--san", "", &s, &e), &e, "--san", "empty");
    char longlabel[80];
    memset(longlabel, 'a', 64);
    strcpy(longlabel + 64, ".com");
    refused(cert_san_parse("--san", longlabel, &s, &e), &e, "--san", "longer than 63");
}

static void test_addresses(void **state)
{
    jerr e = {0};
    cert_san h;
    unsigned port = 0;
    assert_int_equal(cert_address_check("node1.example.com:7443", &h, &port, &e), 0);
    assert_int_equal(h.kind, CERT_SAN_DNS);
    assert_string_equal(h.text, "node1.example.com");
    assert_int_equal(port, 7443);
    assert_int_equal(cert_address_check("10.0.0.5:1", &h, &port, &e), 0);
    assert_int_equal(h.kind, CERT_SAN_IP);
    assert_int_equal(port, 1);
    assert_int_equal(cert_address_check("[::1]:65535", &h, &port, &e), 0);
    assert_int_equal(h.kind, CERT_SAN_IP);
    assert_string_equal(h.text, "::1");
    assert_int_equal(port, 65535);
    const char *accepted = "use HOST:PORT, e.g. node1.example.com:7443, 10.0.0.5:7443 or [::1]:7443";
    static const struct {
        const char *address, *says;
    } bad[] = {
        {"node1", "has no port"},
        {"node1:", "the port must be a number from 1 to 65535"},
        {"node1:0", "the port must be a number from 1 to 65535"},
        {"node1:65536", "the port must be a number from 1 to 65535"},
        {"node1:+80", "the port must be a number from 1 to 65535"},
        {"node1:80x", "the port must be a number from 1 to 65535"},
        {":7443", "no host"},
        {"::1:7443", "IPv6 address without brackets"},
        {"[::1]7443", "no ']:PORT'"},
        {"[::1]", "no ']:PORT'"},
        {"[node1]:7443", "only an IPv6 address goes in brackets"},
        {"node_1:7443", "neither an IP address nor a DNS name"},
        {"https://node1:7443", "is a URL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        refused(cert_address_check(bad[i].address, &h, &port, &e), &e, "--address", bad[i].says);
        refused(-1, &e, "--address", accepted);
    }
}

static void test_serials(void **state)
{
    jerr e = {0};
    char hex[64];
    assert_int_equal(cert_serial_parse("3f9a0b", hex, sizeof hex, &e), 0);
    assert_string_equal(hex, "3f9a0b");
    assert_int_equal(cert_serial_parse("3F:9A:0B", hex, sizeof hex, &e), 0);
    assert_string_equal(hex, "3f9a0b");
    assert_int_equal(cert_serial_parse("7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", hex, sizeof hex, &e), 0);
    assert_string_equal(hex, "7fffffffffffffffffffffffffffffff");
    refused(cert_serial_parse("", hex, sizeof hex, &e), &e, "SERIAL", "empty serial");
    refused(cert_serial_parse("alice", hex, sizeof hex, &e), &e, "SERIAL", "'alice' is not a serial");
    refused(cert_serial_parse(":3f", hex, sizeof hex, &e), &e, "SERIAL", "not a serial");
    refused(cert_serial_parse("3f::9a", hex, sizeof hex, &e), &e, "SERIAL", "not a serial");
    refused(cert_serial_parse("3f:", hex, sizeof hex, &e), &e, "SERIAL", "not a serial");
    /* more than 20 bytes: no X.509 serial is */
    refused(cert_serial_parse("00112233445566778899aabbccddeeff0011223344", hex, sizeof hex, &e), &e, "SERIAL",
            "up to 20 bytes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_user_names), cmocka_unit_test(test_roles),   cmocka_unit_test(test_san_items),
        cmocka_unit_test(test_addresses),  cmocka_unit_test(test_serials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
