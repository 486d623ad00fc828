/* Unit tests for src/cli/nodes.c: node files (what `joblet cert client` writes), nodes.yml
 * (what rnx node keeps) and the addresses in them. tests/integration/test_rnx_nodes.py drives
 * the same through rnx node and TLS connections to a node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/nodes.h"

/* Not real keys: the parser checks the PEM's shape, GnuTLS its contents (rnx node add). */
#define CERT "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2VydA==\nAbCd+/9=\n-----END CERTIFICATE-----\n"
#define KEY "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"

/* Indents a PEM by two spaces, as a literal block under a key. */
static void indent2(char *out, size_t cap, const char *pem)
{
    size_t o = 0;
    for (const char *line = pem; *line && o < cap - 1;) {
        size_t l = strcspn(line, "\n");
        o += (size_t)snprintf(out + o, cap - o, "  %.*s\n", (int)l, line);
        line += l + (line[l] == '\n');
    }
}

/* A node file with address addr and one line replaced: key (e.g. "role") set to the raw
 * text value (NULL: the line left out). */
static char *node_file(const char *addr, const char *key, const char *value)
{
    static char buf[8192];
    char ca[1024], cert[1024], k[1024];
    indent2(ca, sizeof ca, CERT);
    indent2(cert, sizeof cert, CERT);
    indent2(k, sizeof k, KEY);
    const char *vals[][2] = {{"address", addr}, {"user", "alice"}, {"role", "developer"}};
    size_t o = (size_t)snprintf(buf, sizeof buf, "# written by joblet cert client\n");
    for (size_t i = 0; i < 3; i++) {
        const char *v = key && !strcmp(key, vals[i][0]) ? value : vals[i][1];
        if (v)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s: %s\n", vals[i][0], v);
    }
    const char *pems[][2] = {{"ca", ca}, {"cert", cert}, {"key", k}};
    for (size_t i = 0; i < 3; i++) {
        bool mine = key && !strcmp(key, pems[i][0]);
        if (mine && !value)
            continue;
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s: %s%s", pems[i][0], mine ? value : "|\n",
                              mine ? "\n" : pems[i][1]);
    }
    return buf;
}

static int parse(const char *text, nodes_entry *n, jerr *e)
{
    memset(e, 0, sizeof *e);
    return nodes_entry_parse(text, strlen(text), n, e);
}

static void test_addresses(void **state)
{
    (void)state;
    static const struct {
        const char *in, *host, *port;
    } good[] = {
        {"gpu-1.example.com:7443", "gpu-1.example.com", "7443"},
        {"10.0.0.7:7443", "10.0.0.7", "7443"},
        {"[::1]:7443", "::1", "7443"},
        {"[fd00::7]:1", "fd00::7", "1"},
        {"localhost:65535", "localhost", "65535"},
        {"a:80", "a", "80"},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char *h = NULL, *p = NULL;
        jerr e = {0};
        assert_int_equal(nodes_address_parse(good[i].in, &h, &p, &e), 0);
        assert_string_equal(h, good[i].host);
        assert_string_equal(p, good[i].port);
        free(h);
        free(p);
    }
    static const struct {
        const char *in, *says;
    } bad[] = {
        {"gpu-1", "has no port"},
        {"::1:7443", "IPv6 address in brackets"},
        {"[::1]", "is not HOST:PORT"},
        {"[::1]7443", "is not HOST:PORT"},
        {"[fe80::1%eth0]:7443", "zone"},
        {"[not-v6]:7443", "is not an IPv6 address"},
        {"10.0.0.300:7443", "is not an IPv4 address"},
        {"10.0.0:7443", "is not an IPv4 address"},
        {"gpu_1:7443", "is not a DNS name"},
        {"-gpu:7443", "is not a DNS name"},
        {"gpu..x:7443", "is not a DNS name"},
        {"gpu-1:0", "port must be a number from 1 to 65535"},
        {"gpu-1:65536", "port must be"},
        {"gpu-1:+80", "port must be"},
        {"gpu-1:", "port must be"},
        {":7443", "is not HOST:PORT"},
        {"", "has no port"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *h = NULL, *p = NULL;
        jerr e = {0};
        assert_int_equal(nodes_address_parse(bad[i].in, &h, &p, &e), -1);
        assert_null(h);
        assert_string_equal(e.field, "address");
        if (!strstr(e.msg, bad[i].says))
            fail_msg("%s: '%s' does not say '%s'", bad[i].in, e.msg, bad[i].says);
        assert_true(!strncmp(e.msg, "address: ", 9));
    }
}

static void test_names(void **state)
{
    (void)state;
    jerr e = {0};
    assert_int_equal(nodes_name_check("gpu-1", &e), 0);
    assert_int_equal(nodes_name_check("A.b_c-9", &e), 0);
    char max[NODES_NAME_MAX + 2];
    memset(max, 'a', sizeof max);
    max[NODES_NAME_MAX] = 0;
    assert_int_equal(nodes_name_check(max, &e), 0);
    max[NODES_NAME_MAX] = 'a';
    max[NODES_NAME_MAX + 1] = 0;
    assert_int_equal(nodes_name_check(max, &e), -1);
    assert_int_equal(nodes_name_check("", &e), -1);
    assert_int_equal(nodes_name_check("a b", &e), -1);
    assert_non_null(strstr(e.msg, "has ' '"));
    assert_int_equal(nodes_name_check("a/b", &e), -1);
    assert_int_equal(nodes_name_check("local", &e), -1);
    assert_non_null(strstr(e.msg, "local socket"));
    assert_string_equal(e.field, "name");
}

static void test_node_file(void **state)
{
    (void)state;
    nodes_entry n;
    jerr e;
    assert_int_equal(parse(node_file("[::1]:7443", NULL, NULL), &n, &e), 0);
    assert_null(n.name);
    assert_null(n.socket);
    assert_string_equal(n.address, "[::1]:7443");
    assert_string_equal(n.host, "::1");
    assert_string_equal(n.port, "7443");
    assert_string_equal(n.user, "alice");
    assert_string_equal(n.role, "developer");
    assert_string_equal(n.ca, CERT);
    assert_string_equal(n.cert, CERT);
    assert_string_equal(n.key, KEY);
    nodes_entry_free(&n);

    /* every field refused names the field and what it takes */
    static const struct {
        const char *key, *value, *field, *says;
    } bad[] = {
        {"address", NULL, "address", "address: missing"},
        {"address", "gpu-1", "address", "address: 'gpu-1' has no port"},
        {"user", "al ice", "user", "user: 'al ice' must be a user name"},
        {"user", "''", "user", "user: '' must be a user name"},
        {"role", "root", "role", "role: 'root' is not a role; one of reader, developer, operator, maintainer, admin"},
        {"role", "[developer]", "role", "role: must be a string, not a list"},
        {"ca", NULL, "ca", "ca: missing"},
        {"ca", "''", "ca", "ca: is empty"},
        {"ca", "|\n  hello\n", "ca", "ca: has text outside its PEM blocks"},
        {"ca", "|\n  -----BEGIN CERTIFICATE-----\n  AAAA\n", "ca", "has no -----END CERTIFICATE----- line"},
        {"cert", "|\n  -----BEGIN PRIVATE KEY-----\n  AAAA\n  -----END PRIVATE KEY-----\n", "cert",
         "cert: holds a private key"},
        {"cert", "|\n  -----BEGIN CERTIFICATE-----\n  AA*A\n  -----END CERTIFICATE-----\n", "cert", "not base64"},
        {"key", "|\n  -----BEGIN ENCRYPTED PRIVATE KEY-----\n  AAAA\n  -----END ENCRYPTED PRIVATE KEY-----\n", "key",
         "key: the key is encrypted"},
        {"key",
         "|\n  -----BEGIN RSA PRIVATE KEY-----\n  Proc-Type: 4,ENCRYPTED\n  AAAA\n  -----END RSA PRIVATE KEY-----\n",
         "key", "PEM headers"},
        {"key", "|\n  -----BEGIN CERTIFICATE-----\n  AAAA\n  -----END CERTIFICATE-----\n", "key",
         "key: holds a PEM 'CERTIFICATE' block"},
        {"key", "|\n  -----BEGIN PRIVATE KEY-----\n  AAAA\n  -----END PRIVATE KEY-----\n"
                "  -----BEGIN PRIVATE KEY-----\n  AAAA\n  -----END PRIVATE KEY-----\n", "key", "holds 2 keys"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *text = node_file("gpu-1:7443", bad[i].key, bad[i].value);
        if (parse(text, &n, &e) == 0)
            fail_msg("%s=%s was taken", bad[i].key, bad[i].value ? bad[i].value : "(none)");
        assert_string_equal(e.field, bad[i].field);
        if (!strstr(e.msg, bad[i].says))
            fail_msg("%s: '%s' does not say '%s'", bad[i].key, e.msg, bad[i].says);
    }

    /* an unknown key, a socket (nodes.yml's only), not YAML, not a mapping, a duplicate key */
    char text[8192];
    snprintf(text, sizeof text, "%sname: gpu-1\n", node_file("gpu-1:7443", NULL, NULL));
    assert_int_equal(parse(text, &n, &e), -1);
    assert_non_null(strstr(e.msg, "name: unknown key; a node has address, user, role, ca, cert, key (and persist)"));
    snprintf(text, sizeof text, "%ssocket: /run/x.sock\n", node_file("gpu-1:7443", NULL, NULL));
    assert_int_equal(parse(text, &n, &e), -1);
    assert_non_null(strstr(e.msg, "socket: unknown key"));
    assert_int_equal(parse("user: \"alice\nrole: x\n", &n, &e), -1);
    assert_non_null(strstr(e.msg, "line "));
    assert_int_equal(parse("- a\n- b\n", &n, &e), -1);
    assert_non_null(strstr(e.msg, "must be a mapping"));
    snprintf(text, sizeof text, "%suser: bob\n", node_file("gpu-1:7443", NULL, NULL));
    assert_int_equal(parse(text, &n, &e), -1);
    assert_int_equal(parse("", &n, &e), -1);
    assert_non_null(strstr(e.msg, "empty"));
    /* a file with CRLF line ends reads as the same node */
    const char *lf = node_file("gpu-1:7443", NULL, NULL);
    size_t o = 0;
    for (const char *p = lf; *p && o < sizeof text - 2; p++) {
        if (*p == '\n')
            text[o++] = '\r';
        text[o++] = *p;
    }
    text[o] = 0;
    assert_int_equal(parse(text, &n, &e), 0);
    assert_string_equal(n.key, KEY);
    assert_string_equal(n.user, "alice");
    nodes_entry_free(&n);
}

static void test_conf_round_trip(void **state)
{
    (void)state;
    nodes_conf c = {0};
    jerr e = {0};
    assert_int_equal(nodes_conf_parse("", 0, &c, &e), 0);
    assert_int_equal(c.n, 0);
    assert_null(c.current);
    assert_int_equal(nodes_conf_parse("# nothing yet\n", 14, &c, &e), 0);
    assert_int_equal(c.n, 0);

    nodes_entry a;
    assert_int_equal(parse(node_file("[::1]:7443", NULL, NULL), &a, &e), 0);
    a.name = strdup("gpu-1");
    nodes_conf_put(&c, &a);
    assert_null(a.name);
    nodes_entry s = {.name = strdup("dev"), .socket = strdup("/run/jo \"b\"\\let.sock")};
    nodes_conf_put(&c, &s);
    nodes_entry t;
    assert_int_equal(parse(node_file("10.0.0.7:1", NULL, NULL), &t, &e), 0);
    t.name = strdup("true");   /* a name YAML would read as a boolean, unquoted */
    nodes_conf_put(&c, &t);
    c.current = strdup("gpu-1");

    char *text = nodes_conf_render(&c);
    nodes_conf back = {0};
    if (nodes_conf_parse(text, strlen(text), &back, &e) < 0)
        fail_msg("%s\n%s", e.msg, text);
    assert_int_equal(back.n, 3);
    assert_string_equal(back.current, "gpu-1");
    nodes_entry *g = nodes_conf_find(&back, "gpu-1");
    assert_non_null(g);
    assert_string_equal(g->address, "[::1]:7443");
    assert_string_equal(g->host, "::1");
    assert_string_equal(g->key, KEY);
    assert_string_equal(g->cert, CERT);
    assert_string_equal(nodes_conf_find(&back, "dev")->socket, "/run/jo \"b\"\\let.sock");
    assert_string_equal(nodes_conf_find(&back, "true")->address, "10.0.0.7:1");
    char *again = nodes_conf_render(&back);
    assert_string_equal(text, again);   /* what rnx writes it reads back as it was */
    free(again);
    free(text);

    /* replacing keeps the place; removing the default clears it */
    nodes_entry r;
    assert_int_equal(parse(node_file("gpu-9:7443", NULL, NULL), &r, &e), 0);
    r.name = strdup("gpu-1");
    nodes_conf_put(&back, &r);
    assert_int_equal(back.n, 3);
    assert_string_equal(back.v[0].address, "gpu-9:7443");
    assert_true(nodes_conf_remove(&back, "gpu-1"));
    assert_null(back.current);
    assert_false(nodes_conf_remove(&back, "gpu-1"));
    assert_int_equal(back.n, 2);
    assert_null(nodes_conf_find(&back, "gpu-1"));
    nodes_conf_free(&back);
    nodes_conf_free(&c);

    /* an empty list, and no default */
    text = nodes_conf_render(&back);
    assert_non_null(strstr(text, "nodes: {}"));
    assert_int_equal(nodes_conf_parse(text, strlen(text), &back, &e), 0);
    assert_int_equal(back.n, 0);
    free(text);
}

/* persist: how long rnx's keeper of the node's connections stays (conn_agent.h) */
static void test_persist(void **state)
{
    (void)state;
    nodes_entry n;
    jerr e = {0};
    char text[8192];
    static const struct {
        const char *value;
        unsigned seconds;
    } good[] = {{"0", 0}, {"off", 0}, {"90", 90}, {"10m", 600}, {"2h", 7200}, {"7d", 604800}, {"1h30m", 5400}};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        snprintf(text, sizeof text, "%spersist: %s\n", node_file("gpu-1:7443", NULL, NULL), good[i].value);
        if (parse(text, &n, &e) < 0)
            fail_msg("persist: %s: %s", good[i].value, e.msg);
        assert_true(n.has_persist);
        assert_int_equal(n.persist_s, good[i].seconds);
        nodes_entry_free(&n);
    }
    /* absent: the entry does not say (rnx's default then) */
    assert_int_equal(parse(node_file("gpu-1:7443", NULL, NULL), &n, &e), 0);
    assert_false(n.has_persist);
    nodes_entry_free(&n);
    static const char *const bad[] = {"8d", "-1", "soon", "", "10 m", "[1]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(text, sizeof text, "%spersist: %s\n", node_file("gpu-1:7443", NULL, NULL), bad[i]);
        if (parse(text, &n, &e) == 0)
            fail_msg("persist: '%s' was taken", bad[i]);
        assert_string_equal(e.field, "persist");
        if (!strstr(e.msg, "0 or off for none") && !strstr(e.msg, "must be a string"))
            fail_msg("persist: '%s': %s", bad[i], e.msg);
    }
    /* nodes.yml keeps it, and a socket node has none */
    nodes_conf c = {0};
    snprintf(text, sizeof text, "%spersist: 1h\n", node_file("gpu-1:7443", NULL, NULL));
    assert_int_equal(parse(text, &n, &e), 0);
    n.name = strdup("gpu-1");
    nodes_conf_put(&c, &n);
    char *r = nodes_conf_render(&c);
    nodes_conf back = {0};
    assert_int_equal(nodes_conf_parse(r, strlen(r), &back, &e), 0);
    assert_true(back.v[0].has_persist);
    assert_int_equal(back.v[0].persist_s, 3600);
    free(r);
    nodes_conf_free(&back);
    nodes_conf_free(&c);
    const char *sock = "nodes:\n  dev:\n    socket: /run/j.sock\n    persist: 10m\n";
    assert_int_equal(nodes_conf_parse(sock, strlen(sock), &back, &e), -1);
    assert_non_null(strstr(e.msg, "socket alone"));
}

static void test_conf_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text, *field, *says;
    } bad[] = {
        {"currnet: a\n", "currnet", "currnet: unknown key; nodes.yml has current and nodes"},
        {"nodes: [a]\n", "nodes", "nodes: must be a mapping"},
        {"current: [a]\n", "current", "current: must be a string"},
        {"current: a b\n", "current", "current: 'a b' has ' '"},
        {"nodes:\n  a b:\n    socket: /x\n", "nodes", "nodes: a node's name: 'a b' has ' '"},
        {"nodes:\n  local:\n    socket: /x\n", "nodes", "means the local socket"},
        {"nodes:\n  a:\n    socket: x\n", "nodes.a.socket", "nodes.a.socket: 'x' is not an absolute path"},
        {"nodes:\n  a:\n    socket: /x\n    user: bob\n", "nodes.a.socket", "socket alone"},
        {"nodes:\n  a:\n    user: bob\n", "nodes.a.address", "nodes.a.address: missing"},
        {"nodes:\n  a:\n    sockett: /x\n", "nodes.a.sockett", "nodes.a.sockett: unknown key"},
        {"nodes:\n  a: /x\n", "nodes.a.", "must be a mapping"},
        {"nodes:\n  a:\n    socket: /x\n  a:\n    socket: /y\n", "", "line "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        nodes_conf c = {0};
        jerr e = {0};
        if (nodes_conf_parse(bad[i].text, strlen(bad[i].text), &c, &e) == 0)
            fail_msg("taken: %s", bad[i].text);
        assert_null(c.v);
        if (strcmp(e.field, bad[i].field))
            fail_msg("%s: field '%s', not '%s'", bad[i].text, e.field, bad[i].field);
        if (!strstr(e.msg, bad[i].says))
            fail_msg("%s: '%s' does not say '%s'", bad[i].text, e.msg, bad[i].says);
    }
    /* no default, in each way it can be written; a default naming no node is kept (rnx says so
     * when it is used, and rnx node use can still repair it) */
    static const char *const none[] = {"current:\n", "current: ~\n", "current: null\n", "current: local\n",
                                       "current: ''\n"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        nodes_conf c = {0};
        jerr e = {0};
        assert_int_equal(nodes_conf_parse(none[i], strlen(none[i]), &c, &e), 0);
        assert_null(c.current);
    }
    nodes_conf c = {0};
    jerr e = {0};
    assert_int_equal(nodes_conf_parse("current: gone\n", 14, &c, &e), 0);
    assert_string_equal(c.current, "gone");
    nodes_conf_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_node_file),
        cmocka_unit_test(test_conf_round_trip),
        cmocka_unit_test(test_persist),
        cmocka_unit_test(test_conf_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
