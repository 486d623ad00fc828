/* tcpowner_of against the real kernel: a loopback connection made here is found, its client
 * socket's owner this process's uid; one that is not there is not. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/tcpowner.h"

static void test_a_loopback_connection(void **state)
{
    (void)state;
    int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l, 4), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    struct sockaddr_in peer, here;
    len = sizeof peer;
    int s = accept(l, (struct sockaddr *)&peer, &len);
    assert_true(s >= 0);
    len = sizeof here;
    assert_int_equal(getsockname(s, (struct sockaddr *)&here, &len), 0);
    uid_t uid = (uid_t)-1;
    assert_true(tcpowner_loopback((struct sockaddr *)&peer));
    assert_int_equal(tcpowner_of((struct sockaddr *)&peer, (struct sockaddr *)&here, &uid, NULL), 0);
    assert_int_equal(uid, geteuid());
    /* the same addresses, another port: no such connection */
    peer.sin_port = htons((uint16_t)(ntohs(peer.sin_port) ^ 1));
    assert_int_equal(tcpowner_of((struct sockaddr *)&peer, (struct sockaddr *)&here, &uid, NULL), -1);
    close(s);
    close(c);
    close(l);
}

/* A client socket bound to an interface (SO_BINDTODEVICE, which any user may set) is found too:
 * the kernel matches it only when asked with that interface. */
static void test_a_bound_client(void **state)
{
    (void)state;
    int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l, 4), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    assert_int_equal(setsockopt(c, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3), 0);
    assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    struct sockaddr_in peer, here;
    len = sizeof peer;
    int s = accept(l, (struct sockaddr *)&peer, &len);
    assert_true(s >= 0);
    len = sizeof here;
    assert_int_equal(getsockname(s, (struct sockaddr *)&here, &len), 0);
    uid_t uid = (uid_t)-1;
    assert_int_equal(tcpowner_of((struct sockaddr *)&peer, (struct sockaddr *)&here, &uid, NULL), 0);
    assert_int_equal(uid, geteuid());
    close(s);
    close(c);
    close(l);
}

static void test_local(void **state)
{
    (void)state;
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.9", &a.sin_addr);
    assert_true(tcpowner_local((struct sockaddr *)&a));
    struct sockaddr_in6 b = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &b.sin6_addr);
    assert_true(tcpowner_local((struct sockaddr *)&b));
    inet_pton(AF_INET6, "2001:db8::7:7", &b.sin6_addr); /* documentation prefix: no machine's */
    assert_false(tcpowner_local((struct sockaddr *)&b));
}

static void test_loopback(void **state)
{
    (void)state;
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "10.0.0.1", &a.sin_addr);
    assert_false(tcpowner_loopback((struct sockaddr *)&a));
    inet_pton(AF_INET, "127.3.2.1", &a.sin_addr);
    assert_true(tcpowner_loopback((struct sockaddr *)&a));
    struct sockaddr_in6 b = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    assert_true(tcpowner_loopback((struct sockaddr *)&b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_loopback_connection),
        cmocka_unit_test(test_a_bound_client),
        cmocka_unit_test(test_local),
        cmocka_unit_test(test_loopback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
