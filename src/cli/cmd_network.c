/* The "rnx network" commands: create, list, remove (docs/networks.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"
#include "cli.h"
#include "client.h"
#include "cmd_network.h"
#include "print.h"

static const char network_help[] =
    "Usage: rnx network <command> [flags] [--json]\n"
    "\n"
    "Commands:\n"
    "  create NAME --cidr=A.B.C.D/P   a network of your own on a bridge of its own (/16 to /30):\n"
    "                  its jobs reach each other by address and by name (/etc/hosts), the\n"
    "                  outside through NAT, and nothing on other networks or the host; the\n"
    "                  addresses within network.user_pool (10.218.0.0/15 by default) unless\n"
    "                  you are an admin: --cidr=10.218.10.0/24\n"
    "  list            the networks you may use: cidr, jobs and addresses in use\n"
    "  remove NAME     remove a network (refused while a job not yet ended names it)\n"
    "\n"
    "A job joins one with 'rnx job run --network=NAME'; 'isolated' (its own link, NAT out, no\n"
    "other job) and 'bridge' (the shared default network) are always there, as are 'none'\n"
    "(loopback only, the default) and 'host'. A workflow job: 'network: NAME'.\n"
    "--json prints the API's objects (docs/api.md, \"Networks\").\n";

static int call(const rnx_ctx *ctx, const char *method, const char *path, json_t *body, json_t **out)
{
    rnx_client *c = client_new(&ctx->target);
    jerr e = {0};
    int rc = client_request(c, method, path, body, out, &e);
    client_free(c);
    if (rc < 0 && !strcmp(e.field, "cidr") && !strncmp(e.msg, "cidr:", 5))
        return rnx_fail("--cidr:%s", e.msg + 5);
    return rc < 0 ? rnx_fail("%s", e.msg) : RNX_OK;
}

static int network_list(const rnx_ctx *ctx)
{
    json_t *o = NULL;
    int rc = call(ctx, "GET", "/v1/networks", NULL, &o);
    if (rc)
        return rc;
    json_t *nets = json_object_get(o, "networks");
    if (ctx->json) {
        print_json(o);
        json_decref(o);
        return RNX_OK;
    }
    if (!json_is_true(json_object_get(o, "available")))
        print_textf(stderr, "rnx: job networks are not available on this machine: %s\n",
                    jstr(o, "why") ? jstr(o, "why") : "?");
    static const char *const hdr[] = {"NAME", "MODE", "CIDR", "JOBS", "ADDRESSES", "OWNER"};
    table *t = table_new(6, hdr);
    size_t i;
    json_t *n;
    json_array_foreach(nets, i, n)
    {
        char jobs[160], addrs[64], owner[64];
        int64_t nj = 0, used = 0, all = 0;
        jint(n, "jobs_count", &nj);
        jint(n, "addresses_in_use", &used);
        jint(n, "addresses", &all);
        json_t *js = json_object_get(n, "jobs");
        size_t o2 = (size_t)snprintf(jobs, sizeof jobs, "%lld", (long long)nj);
        for (size_t k = 0; k < json_array_size(js) && k < 2; k++) {
            json_t *j = json_array_get(js, k);
            o2 += (size_t)snprintf(jobs + o2, sizeof jobs - o2, "%s%.8s %s", k ? ", " : " (", jstr(j, "id"),
                                   jstr(j, "address") ? jstr(j, "address") : "?");
        }
        if (json_array_size(js))
            snprintf(jobs + o2, sizeof jobs - o2, "%s)", nj > 2 ? ", ..." : "");
        snprintf(addrs, sizeof addrs, "%lld of %lld", (long long)used, (long long)all);
        if (json_is_true(json_object_get(n, "builtin")))
            snprintf(owner, sizeof owner, "built in");
        else
            fmt_owner(n, owner, sizeof owner);
        const char *cells[] = {jstr(n, "name"), jstr(n, "mode"), jstr(n, "cidr"), jobs, addrs, owner};
        table_add(t, cells);
    }
    table_print(t, stdout);
    table_free(t);
    json_decref(o);
    return RNX_OK;
}

static int network_create(const rnx_ctx *ctx, const char *name, const char *cidr)
{
    if (!cidr)
        return rnx_usage("network create: --cidr is required, e.g. rnx network create %s --cidr=10.218.10.0/24 "
                         "(within network.user_pool, 10.218.0.0/15 by default, unless you are an admin)", name);
    json_t *body = json_pack("{s:s,s:s}", "name", name, "cidr", cidr);
    json_t *v = NULL;
    int rc = call(ctx, "POST", "/v1/networks", body, &v);
    json_decref(body);
    if (rc)
        return rc;
    if (ctx->json)
        print_json(v);
    else
        print_textf(stdout, "network %s created: %s on bridge %s (gateway %s); jobs join it with --network=%s\n", name,
                    jstr(v, "cidr") ? jstr(v, "cidr") : "?", jstr(v, "bridge") ? jstr(v, "bridge") : "?",
                    jstr(v, "gateway") ? jstr(v, "gateway") : "?", name);
    json_decref(v);
    return RNX_OK;
}

static int network_remove(const rnx_ctx *ctx, const char *name)
{
    rnx_client *c = client_new(&ctx->target);
    char *esc = client_escape(c, name);
    client_free(c);
    char path[512];
    snprintf(path, sizeof path, "/v1/networks/%s", esc);
    free(esc);
    json_t *o = NULL;
    int rc = call(ctx, "DELETE", path, NULL, &o);
    if (rc)
        return rc;
    if (ctx->json)
        print_json(o);
    else
        print_textf(stdout, "network %s removed\n", name);
    json_decref(o);
    return RNX_OK;
}

int cmd_network(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"cidr", required_argument, NULL, 'c'},
                                         {0}};
    const char *cidr = NULL;
    const char *cmd = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    char label[48];
    snprintf(label, sizeof label, "rnx network%s%.20s", cmd ? " " : "", cmd ? cmd : "");
    const char *operands[3];
    size_t nops = 0;
    optind = 0;
    for (;;) {
        int c = rnx_getopt(argc, argv, "h", opts, label);
        if (c == -1) {
            if (optind >= argc)
                break;
            if (nops < ARRAY_LEN(operands))
                operands[nops] = argv[optind];
            nops++;
            optind++;
            continue;
        }
        switch (c) {
        case 'j': ctx->json = true; break;
        case 'h': fputs(network_help, stdout); return RNX_OK;
        case 'c': cidr = optarg; break;
        default: return RNX_USAGE;
        }
    }
    if (!nops)
        return rnx_usage("network: missing command (create, list, remove); see 'rnx network --help'");
    if (nops > ARRAY_LEN(operands))
        return rnx_usage("network %s: too many arguments; see 'rnx network --help'", operands[0]);
    const char *name = operands[0];
    int nargs = (int)nops - 1;
    const char *const *args = operands + 1;
    /* "" would be sent as DELETE /v1/networks/, answered "no route" */
    for (int i = 0; i < nargs; i++)
        if (!*args[i])
            return rnx_usage("network %s: NAME is empty; %s", name,
                             !strcmp(name, "create") ? "name the new network, e.g. rnx network create n1 --cidr=CIDR"
                                                     : "give a network's name (rnx network list)");
    bool create = !strcmp(name, "create");
    if (!create && cidr)
        return rnx_usage("network %s: --cidr is for 'rnx network create'", name);
    if (!strcmp(name, "list") || !strcmp(name, "ls")) {
        if (nargs)
            return rnx_usage("network list: takes no arguments, got '%s'", args[0]);
        return network_list(ctx);
    }
    if (create) {
        if (nargs != 1)
            return rnx_usage("network create: expected one NAME; usage: rnx network create NAME --cidr=A.B.C.D/P");
        return network_create(ctx, args[0], cidr);
    }
    if (!strcmp(name, "remove") || !strcmp(name, "rm")) {
        if (nargs != 1)
            return rnx_usage("network remove: expected one NAME; usage: rnx network remove NAME");
        return network_remove(ctx, args[0]);
    }
    if (!strcmp(name, "help")) {
        fputs(network_help, stdout);
        return RNX_OK;
    }
    return rnx_unknown_command(name, "rnx network",
                               (const char *const[]){"create", "list", "ls", "remove", "rm", "help"}, 6);
}
