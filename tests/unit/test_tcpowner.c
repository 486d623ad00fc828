/* tcpowner_find: the uid of the socket whose local address is the peer's, in the kernel's
 * tables' form. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "common/tcpowner.h"

static const char TCP[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 100 1 0 100 0 0 10 0\n"
    "   1: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  4701        0 101 1 0 20 4 30 10 -1\n"
    "   2: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 102 1 0 20 4 30 10 -1\n";

static const char TCP6[] =
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000001000000:C350 00000000000000000000000001000000:1F90 01 00000000:00000000 00:00000000 00000000  4702        0 200 1 0 20 4 30 10 -1\n";

static struct sockaddr_in v4(const char *ip, unsigned port)
{
    struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, ip, &s.sin_addr);
    return s;
}

static void test_v4(void **state)
{
    (void)state;
    uid_t uid = 12345;
    struct sockaddr_in p = v4("127.0.0.1", 0x9C40);
    assert_int_equal(tcpowner_find(TCP, (struct sockaddr *)&p, sizeof p, &uid), 0);
    assert_int_equal(uid, 4701); /* the client's socket, not joblet's end of it (local 1F90) */
    p = v4("127.0.0.1", 0x9C41);
    assert_int_equal(tcpowner_find(TCP, (struct sockaddr *)&p, sizeof p, &uid), -1);
    p = v4("127.0.0.2", 0x9C40);
    assert_int_equal(tcpowner_find(TCP, (struct sockaddr *)&p, sizeof p, &uid), -1);
    assert_int_equal(tcpowner_find("header only\n", (struct sockaddr *)&p, sizeof p, &uid), -1);
    assert_int_equal(tcpowner_find("", (struct sockaddr *)&p, sizeof p, &uid), -1);
}

static void test_v6(void **state)
{
    (void)state;
    uid_t uid = 0;
    struct sockaddr_in6 p = {.sin6_family = AF_INET6, .sin6_port = htons(0xC350), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    assert_int_equal(tcpowner_find(TCP6, (struct sockaddr *)&p, sizeof p, &uid), 0);
    assert_int_equal(uid, 4702);
    assert_true(tcpowner_loopback((struct sockaddr *)&p, sizeof p));
    struct sockaddr_in a = v4("10.0.0.1", 1);
    assert_false(tcpowner_loopback((struct sockaddr *)&a, sizeof a));
    a = v4("127.3.2.1", 1);
    assert_true(tcpowner_loopback((struct sockaddr *)&a, sizeof a));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v4),
        cmocka_unit_test(test_v6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
