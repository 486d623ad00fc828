/* Unit tests for src/exec/nft.c, the nftables JSON of joblet's table, and nft_run with stand-in
 * nft programs (shell scripts: one that keeps its input, one that fails as nft does, one that
 * hangs); and netlink_parse_cidr (src/exec/netlink.c), which reads every address joblet-net
 * is given. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec/netlink.h"
#include "exec/nft.h"

static const nft_net two_nets[] = {
    {.bridge = "jb-bridge", .cidr = {"10.217.0.0", 16}},
    {.bridge = "jb-ml", .cidr = {"10.218.4.0", 24}, .has_owner = true, .owner = 1000},
};

/* The commands of a batch whose verb is verb and whose object is kind, in order. */
static size_t count_cmds(json_t *cmds, const char *verb, const char *kind, const char *chain)
{
    size_t n = 0, i;
    json_t *c;
    json_array_foreach(cmds, i, c) {
        json_t *obj = json_object_get(json_object_get(c, verb), kind);
        if (!obj)
            continue;
        if (chain && strcmp(json_string_value(json_object_get(obj, "chain")), chain) != 0)
            continue;
        n++;
    }
    return n;
}

static json_t *rule_at(json_t *cmds, const char *chain, size_t k)
{
    size_t i;
    json_t *c;
    json_array_foreach(cmds, i, c) {
        json_t *r = json_object_get(json_object_get(c, "add"), "rule");
        if (r && !strcmp(json_string_value(json_object_get(r, "chain")), chain) && k-- == 0)
            return r;
    }
    return NULL;
}

/* The rule rendered back as nft JSON text, for comparing with what nft itself prints. */
static char *expr_text(json_t *rule)
{
    return json_dumps(json_object_get(rule, "expr"), JSON_COMPACT);
}

static void test_render_two_networks_and_pool(void **state)
{
    (void)state;
    nft_plan p = {.nets = two_nets, .n = 2, .isolated = true, .iso = {"10.216.0.0", 16}};
    json_t *b = nft_render(&p);
    assert_non_null(b);
    /* One batch: one object holding every command, which nft applies as one transaction. */
    assert_int_equal(json_object_size(b), 1);
    json_t *cmds = json_object_get(b, "nftables");
    assert_true(json_is_array(cmds));

    /* add, delete, add of the same table first: the replacement is atomic */
    const char *verbs[] = {"add", "delete", "add"};
    for (size_t i = 0; i < 3; i++) {
        json_t *t = json_object_get(json_object_get(json_array_get(cmds, i), verbs[i]), "table");
        assert_non_null(t);
        assert_string_equal(json_string_value(json_object_get(t, "family")), "inet");
        assert_string_equal(json_string_value(json_object_get(t, "name")), "joblet");
    }
    assert_int_equal(count_cmds(cmds, "add", "table", NULL), 2);
    assert_int_equal(count_cmds(cmds, "delete", "table", NULL), 1);

    /* the three chains with their hooks */
    struct { const char *name, *type, *hook; int prio; } chains[] = {
        {"forward", "filter", "forward", 0}, {"input", "filter", "input", 0}, {"output", "filter", "output", 0},
        {"postrouting", "nat", "postrouting", 100}};
    assert_int_equal(count_cmds(cmds, "add", "chain", NULL), 4);
    for (size_t k = 0; k < 4; k++) {
        size_t i;
        json_t *c, *found = NULL;
        json_array_foreach(cmds, i, c) {
            json_t *ch = json_object_get(json_object_get(c, "add"), "chain");
            if (ch && !strcmp(json_string_value(json_object_get(ch, "name")), chains[k].name))
                found = ch;
        }
        assert_non_null(found);
        assert_string_equal(json_string_value(json_object_get(found, "table")), "joblet");
        assert_string_equal(json_string_value(json_object_get(found, "type")), chains[k].type);
        assert_string_equal(json_string_value(json_object_get(found, "hook")), chains[k].hook);
        assert_int_equal(json_integer_value(json_object_get(found, "prio")), chains[k].prio);
        assert_string_equal(json_string_value(json_object_get(found, "policy")), "accept");
    }

    /* forward: established first, one same-bridge accept per network, the two drops */
    assert_int_equal(count_cmds(cmds, "add", "rule", "forward"), 5);
    char *t = expr_text(rule_at(cmds, "forward", 0));
    assert_string_equal(t, "[{\"match\":{\"op\":\"in\",\"left\":{\"ct\":{\"key\":\"state\"}},"
                           "\"right\":[\"established\",\"related\"]}},{\"accept\":null}]");
    free(t);
    t = expr_text(rule_at(cmds, "forward", 2));
    assert_string_equal(t, "[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"iifname\"}},\"right\":\"jb-ml\"}},"
                           "{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"oifname\"}},\"right\":\"jb-ml\"}},"
                           "{\"accept\":null}]");
    free(t);
    t = expr_text(rule_at(cmds, "forward", 3));
    assert_string_equal(t, "[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"iifname\"}},"
                           "\"right\":{\"set\":[\"jb-*\",\"jv*\"]}}},"
                           "{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"oifname\"}},"
                           "\"right\":{\"set\":[\"jb-*\",\"jv*\"]}}},{\"drop\":null}]");
    free(t);
    t = expr_text(rule_at(cmds, "forward", 4));
    assert_string_equal(t, "[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"oifname\"}},"
                           "\"right\":{\"set\":[\"jb-*\",\"jv*\"]}}},{\"drop\":null}]");
    free(t);

    /* input: answers only, then drop */
    assert_int_equal(count_cmds(cmds, "add", "rule", "input"), 2);
    t = expr_text(rule_at(cmds, "input", 1));
    assert_string_equal(t, "[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"iifname\"}},"
                           "\"right\":{\"set\":[\"jb-*\",\"jv*\"]}}},{\"drop\":null}]");
    free(t);

    /* output: answers, root's, the named network's owner's into its bridge, then new ones dropped
     * (the host routes to every network: any local user reached every job before) */
    assert_int_equal(count_cmds(cmds, "add", "rule", "output"), 4);
    t = expr_text(rule_at(cmds, "output", 1));
    assert_string_equal(t, "[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"oifname\"}},"
                           "\"right\":{\"set\":[\"jb-*\",\"jv*\"]}}},"
                           "{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"skuid\"}},\"right\":0}},"
                           "{\"accept\":null}]");
    free(t);
    t = expr_text(rule_at(cmds, "output", 2));
    assert_string_equal(t, "[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"oifname\"}},\"right\":\"jb-ml\"}},"
                           "{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"skuid\"}},\"right\":1000}},"
                           "{\"accept\":null}]");
    free(t);
    t = expr_text(rule_at(cmds, "output", 3));
    assert_string_equal(t, "[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"oifname\"}},"
                           "\"right\":{\"set\":[\"jb-*\",\"jv*\"]}}},"
                           "{\"match\":{\"op\":\"in\",\"left\":{\"ct\":{\"key\":\"state\"}},\"right\":\"new\"}},"
                           "{\"drop\":null}]");
    free(t);

    /* postrouting: per network saddr CIDR daddr != CIDR, then the pool */
    assert_int_equal(count_cmds(cmds, "add", "rule", "postrouting"), 3);
    t = expr_text(rule_at(cmds, "postrouting", 1));
    assert_string_equal(t, "[{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{\"protocol\":\"ip\",\"field\":\"saddr\"}},"
                           "\"right\":{\"prefix\":{\"addr\":\"10.218.4.0\",\"len\":24}}}},"
                           "{\"match\":{\"op\":\"!=\",\"left\":{\"payload\":{\"protocol\":\"ip\",\"field\":\"daddr\"}},"
                           "\"right\":{\"prefix\":{\"addr\":\"10.218.4.0\",\"len\":24}}}},{\"masquerade\":null}]");
    free(t);
    t = expr_text(rule_at(cmds, "postrouting", 2));
    assert_string_equal(t, "[{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{\"protocol\":\"ip\",\"field\":\"saddr\"}},"
                           "\"right\":{\"prefix\":{\"addr\":\"10.216.0.0\",\"len\":16}}}},{\"masquerade\":null}]");
    free(t);

    /* nothing but the table is named: every object is in inet joblet */
    size_t i;
    json_t *c;
    json_array_foreach(cmds, i, c) {
        json_t *verb = json_object_get(c, "add") ? json_object_get(c, "add") : json_object_get(c, "delete");
        assert_non_null(verb);
        const char *k;
        json_t *obj;
        json_object_foreach(verb, k, obj) {
            assert_string_equal(json_string_value(json_object_get(obj, "family")), "inet");
            json_t *tab = json_object_get(obj, strcmp(k, "table") ? "table" : "name");
            assert_string_equal(json_string_value(tab), "joblet");
        }
    }
    json_decref(b);
}

static void test_render_nothing(void **state)
{
    (void)state;
    nft_plan p = {0};
    json_t *b = nft_render(&p);
    json_t *cmds = json_object_get(b, "nftables");
    /* the fence stays even with no network: forward, input and output rules, no NAT */
    assert_int_equal(count_cmds(cmds, "add", "chain", NULL), 4);
    assert_int_equal(count_cmds(cmds, "add", "rule", "output"), 3);
    assert_int_equal(count_cmds(cmds, "add", "rule", "forward"), 3);
    assert_int_equal(count_cmds(cmds, "add", "rule", "input"), 2);
    assert_int_equal(count_cmds(cmds, "add", "rule", "postrouting"), 0);
    json_decref(b);
}

static void test_render_delete(void **state)
{
    (void)state;
    json_t *b = nft_render_delete();
    char *t = json_dumps(b, JSON_COMPACT);
    assert_string_equal(t, "{\"nftables\":[{\"add\":{\"table\":{\"family\":\"inet\",\"name\":\"joblet\"}}},"
                           "{\"delete\":{\"table\":{\"family\":\"inet\",\"name\":\"joblet\"}}},"
                           "{\"add\":{\"table\":{\"family\":\"inet\",\"name\":\"joblet_flows\"}}},"
                           "{\"delete\":{\"table\":{\"family\":\"inet\",\"name\":\"joblet_flows\"}}}]}");
    free(t);
    json_decref(b);
}

/* The bound on a job address's connections: the set added again (not replaced: its counts stay),
 * the chain flushed and its one rule added; 0 removes the table; too small a buffer is -1. */
static void test_render_flows(void **state)
{
    (void)state;
    char t[512];
    assert_int_equal(nft_render_flows(1024, t, sizeof t), 0);
    assert_string_equal(t, "add table inet joblet_flows\n"
                           "add set inet joblet_flows flows_1024 { type ipv4_addr; size 65535; flags dynamic; }\n"
                           "add chain inet joblet_flows forward { type filter hook forward priority -1; policy accept; }\n"
                           "flush chain inet joblet_flows forward\n"
                           "add rule inet joblet_flows forward iifname { \"jb-*\", \"jv*\" } ct state new "
                           "add @flows_1024 { ip saddr ct count over 1024 } drop\n");
    /* another bound, another set: an element keeps the bound it was made with (the kernel's
     * dynset evaluates the element's own ct count), so one set for both kept the old bound for
     * every address that had a connection when the bound changed */
    char u[512];
    assert_int_equal(nft_render_flows(100, u, sizeof u), 0);
    assert_non_null(strstr(u, "add set inet joblet_flows flows_100 {"));
    assert_non_null(strstr(u, "add @flows_100 { ip saddr ct count over 100 }"));
    assert_null(strstr(u, "flows {"));
    assert_int_equal(nft_render_flows(0, t, sizeof t), 0);
    assert_string_equal(t, "add table inet joblet_flows\ndelete table inet joblet_flows\n");
    assert_int_equal(nft_render_flows(1024, t, 40), -1);
}

/* A stand-in nft: a shell script in a temporary directory. */
static char dir[64];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/joblet-test-nft-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void script(const char *name, const char *body, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    assert_int_equal(chmod(path, 0700), 0);
}

static void test_run_passes_batch_on_stdin(void **state)
{
    (void)state;
    char nft[128], body[256], out[128];
    snprintf(out, sizeof out, "%s/got", dir);
    snprintf(body, sizeof body, "[ \"$1 $2 $3\" = '-j -f -' ] || exit 9\ncat > '%s'", out);
    script("nft-ok", body, nft, sizeof nft);
    json_t *b = nft_render_delete();
    jerr e = {0};
    assert_int_equal(nft_run(nft, b, 5000, &e), 0);
    char *want = json_dumps(b, JSON_COMPACT);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    char got[512] = {0};
    assert_true(fread(got, 1, sizeof got - 1, f) > 0);
    fclose(f);
    assert_string_equal(got, want);
    free(want);
    json_decref(b);
}

static void test_run_failure_names_nft_message(void **state)
{
    (void)state;
    char nft[128];
    script("nft-bad", "cat >/dev/null\necho 'Error: Could not process rule: No such file or directory' >&2\nexit 1", nft,
           sizeof nft);
    json_t *b = nft_render_delete();
    jerr e = {0};
    assert_int_equal(nft_run(nft, b, 5000, &e), -1);
    assert_non_null(strstr(e.msg, "exit 1"));
    assert_non_null(strstr(e.msg, "Error: Could not process rule"));
    json_decref(b);

    jerr e2 = {0};
    b = nft_render_delete();
    assert_int_equal(nft_run("/nonexistent/nft", b, 5000, &e2), -1);
    assert_non_null(strstr(e2.msg, "cannot run /nonexistent/nft"));
    json_decref(b);
}

static void test_run_timeout_kills(void **state)
{
    (void)state;
    char nft[128];
    script("nft-hang", "exec sleep 30", nft, sizeof nft);
    json_t *b = nft_render_delete();
    jerr e = {0};
    assert_int_equal(nft_run(nft, b, 200, &e), -1);
    assert_int_equal(e.code, ETIMEDOUT);
    assert_non_null(strstr(e.msg, "within 200 ms"));
    json_decref(b);
}

static void test_parse_cidr(void **state)
{
    (void)state;
    netlink_addr a;
    assert_int_equal(netlink_parse_cidr("10.217.3.4/16", &a), 0);
    assert_int_equal(a.prefix, 16);
    assert_int_equal(a.addr.s_addr, htonl(0x0ad90304));
    assert_int_equal(netlink_parse_cidr("0.0.0.0/0", &a), 0);
    assert_int_equal(netlink_parse_cidr("192.0.2.1/32", &a), 0);
    const char *bad[] = {"10.0.0.1", "10.0.0.1/", "10.0.0.1/33", "10.0.0.1/-1", "10.0.0.1/1a", "10.0.0/8",
                         "300.0.0.1/8", "10.0.0.1/008", "fe80::1/64", "/8", "", "10.0.0.1/8/8"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(netlink_parse_cidr(bad[i], &a), -1);
    assert_int_equal(netlink_parse_cidr(NULL, &a), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_two_networks_and_pool),
        cmocka_unit_test(test_render_nothing),
        cmocka_unit_test(test_render_delete),
        cmocka_unit_test(test_render_flows),
        cmocka_unit_test_setup_teardown(test_run_passes_batch_on_stdin, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_run_failure_names_nft_message, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_run_timeout_kills, setup_dir, teardown_dir),
        cmocka_unit_test(test_parse_cidr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
