/* rnx: the command-line client of joblet. Global flags, dispatch, help and --version;
 * the commands live in cmd_*.c, what they share in cli.c. */
#include "print.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "cmd_completion.h"
#include "cmd_console.h"
#include "cmd_gpu.h"
#include "cmd_job.h"
#include "cmd_monitor.h"
#include "cmd_node.h"
#include "cmd_volume.h"
#include "cmd_network.h"
#include "cmd_runtime.h"
#include "cmd_workflow.h"

#ifndef JOBLET_VERSION
#define JOBLET_VERSION "dev"
#endif

static const char global_help[] =
    "rnx - run and manage jobs on a joblet daemon\n"
    "\n"
    "Usage:\n"
    "  rnx [--node NAME|--socket PATH] [--json] job <command> [flags] [args...]\n"
    "  rnx [--node NAME|--socket PATH] [--json] workflow <command> [flags] [args...]\n"
    "  rnx [--node NAME|--socket PATH] [--json] gpu list|show GPU|topo|drain GPU|offline GPU|online GPU|gres-conf\n"
    "  rnx [--node NAME|--socket PATH] [--json] audit [flags]\n"
    "  rnx [--node NAME|--socket PATH] [--json] monitor status|watch\n"
    "  rnx [--node NAME|--socket PATH] [--json] volume create|list|remove [flags] [NAME]\n"
    "  rnx [--node NAME|--socket PATH] [--json] network create|list|remove [flags] [NAME]\n"
    "  rnx [--node NAME|--socket PATH] [--json] runtime build|list|info|remove|test|import|export|builds|log\n"
    "  rnx [--node NAME|--socket PATH] console [--port N]\n"
    "  rnx [--json] node add|list|use|show|remove [flags] [NAME]\n"
    "  rnx completion bash|zsh\n"
    "  rnx --version\n"
    "  rnx --help\n"
    "\n"
    "Global flags:\n"
    "  --node NAME     send the command to the node NAME (rnx node list), over TLS with your client\n"
    "                  certificate (default: $RNX_NODE, else the default node of 'rnx node use',\n"
    "                  else the local socket); 'local' is the local socket. The nodes are kept in\n"
    "                  ~/.config/rnx/nodes.yml, or the file $RNX_CONFIG names\n"
    "  --socket PATH   the daemon's unix socket on this machine (default: $JOBLET_SOCKET, else\n"
    "                  " RNX_DEFAULT_SOCKET "); not with --node\n"
    "  --json          print the API's JSON objects instead of text\n"
    "  --version       print this client's version and the daemon's\n"
    "  -h, --help      show this help\n"
    "\n"
    "Commands:\n"
    "  job run         run a command as a job\n"
    "  job batch       submit a batch script written for Slurm, as sbatch does\n"
    "  job list        list jobs\n"
    "  job status      show one job in detail\n"
    "  job log         print a job's output, following it until the job ends\n"
    "  job stop        stop a running job (cancels one that has not started)\n"
    "  job kill        SIGKILL to every process of a job at once (--signal=SIG: send SIG)\n"
    "  job cancel      cancel a job that is waiting to start\n"
    "  job delete      remove a finished job and its output\n"
    "  job delete-all  remove every finished job\n"
    "  job metrics     a job's CPU, memory, I/O and GPU use, sampled until it ends\n"
    "  job cp          copy files out of a job (ID:PATH DEST) or into it (SRC ID:PATH)\n"
    "  workflow run    check a workflow file (YAML: jobs and their dependencies) and submit it\n"
    "  workflow validate  check a workflow file without submitting it\n"
    "  workflow list   list workflows\n"
    "  workflow status a workflow's state and its jobs\n"
    "  workflow cancel cancel a workflow\n"
    "  gpu list        the machine's GPUs, their state and the jobs holding them\n"
    "  gpu show        one GPU in detail\n"
    "  gpu topo        the GPU interconnect matrix (NVLink, PCIe, NUMA)\n"
    "  gpu drain|offline|online GPU   admins: take a GPU out of service and back\n"
    "  gpu gres-conf   Slurm's gres.conf lines for this node's GPUs, from discovery\n"
    "  audit           admins: the audit trail of GPU allocations, states and admin actions\n"
    "  monitor status  the host, jobs by state and every GPU (watch: redrawn every few seconds)\n"
    "  volume create NAME --size=SIZE [--type=filesystem|memory]   storage that outlives jobs\n"
    "  volume list     your volumes: size, use, type, owner, jobs using them\n"
    "  volume remove NAME   remove a volume and its data\n"
    "  network create NAME --cidr=A.B.C.D/P   a job network of your own (docs/networks.md)\n"
    "  network list    networks: cidr, jobs and addresses in use\n"
    "  network remove NAME  remove a network no job uses\n"
    "  runtime list    prepared root filesystems jobs run in with --runtime (build, info, test, ...:\n"
    "                  rnx runtime --help)\n"
    "  console         the web console in your browser, through a proxy on 127.0.0.1 (prints its URL)\n"
    "  node add|list|use|show|remove   named remote nodes (TLS, client certificates): rnx node --help\n"
    "  completion bash|zsh   print the shell completion script: source <(rnx completion bash)\n"
    "\n"
    "Run 'rnx job <command> --help' (or 'rnx workflow <command> --help') for a command's flags.\n"
    "\n"
    "Exit status: 0 on success, 1 when joblet refused or something failed, 2 for a bad command\n"
    "line; 'rnx job run --follow' exits with the job's exit code, 'rnx workflow run --follow' with 0\n"
    "when the workflow COMPLETED and 1 otherwise. A request joblet answers busy (503 with\n"
    "Retry-After: nothing was done) is sent again for up to 60 s, said once on stderr.\n";

/* "isolation: native (default); gvisor: runsc VERSION, platform P, nvproxy no" or why not. */
static void print_isolation(json_t *iso)
{
    json_t *m;
    size_t i;
    if (!json_is_object(iso))
        return;
    const char *dflt = json_string_value(json_object_get(iso, "default"));
    json_array_foreach(json_object_get(iso, "modes"), i, m) {
        const char *name = json_string_value(json_object_get(m, "name"));
        if (!name)
            continue;
        bool is_default = dflt && !strcmp(dflt, name);
        print_textf(stdout, "isolation %s%s: ", name, is_default ? " (default)" : "");
        if (!json_is_true(json_object_get(m, "available"))) {
            const char *why = json_string_value(json_object_get(m, "why"));
            print_textf(stdout, "not available: %s\n", why ? why : "?");
        } else if (!strcmp(name, "gvisor")) {
            const char *ver = json_string_value(json_object_get(m, "version"));
            const char *plat = json_string_value(json_object_get(m, "platform"));
            print_textf(stdout, "available: runsc %s, platform %s, GPUs %s\n", ver ? ver : "?", plat ? plat : "?",
                        json_is_true(json_object_get(m, "nvproxy")) ? "through nvproxy"
                                                                    : "refused (this runsc has no nvproxy)");
            const char *fault = json_string_value(json_object_get(m, "fault"));
            if (fault)
                print_textf(stdout, "  known fault of this runsc: %s\n", fault);
        } else {
            print_textf(stdout, "available\n");
        }
    }
}

/* Prints the client's version, then asks the daemon for its own. */
static int do_version(const rnx_ctx *ctx)
{
    rnx_client *c = client_new(&ctx->target);
    json_t *v = NULL;
    jerr e = {0};
    int rc = RNX_OK;
    if (client_request(c, "GET", "/v1/version", NULL, &v, &e) < 0)
        rc = RNX_FAIL;
    /* what this build made of the SPANK plugin: the Slurm release it loads into (slurm_version.h's
     * SLURM_VERSION_NUMBER, 0xMMmmuu), and whether it is where it installs */
    char release[32];
    const char *slurm_release = NULL, *slurm_plugin = NULL;
#ifdef JOBLET_SLURM_RELEASE
    snprintf(release, sizeof release, "%u.%02u.%u", (JOBLET_SLURM_RELEASE >> 16) & 0xffu,
             (JOBLET_SLURM_RELEASE >> 8) & 0xffu, JOBLET_SLURM_RELEASE & 0xffu);
    slurm_release = release;
    slurm_plugin = JOBLET_SLURM_PLUGIN;
#else
    (void)release;
#endif
    bool slurm_installed = slurm_plugin && access(slurm_plugin, F_OK) == 0;
    if (ctx->json) {
        json_t *o = json_pack("{s:s, s:O?}", "client", JOBLET_VERSION, "server", rc == RNX_OK ? v : NULL);
        json_object_set_new(o, "slurm_plugin",
                            slurm_release ? json_pack("{s:s, s:s, s:b}", "slurm_release", slurm_release, "path",
                                                      slurm_plugin, "installed", slurm_installed)
                                          : json_null());
        print_json(o);
        json_decref(o);
    } else {
        print_textf(stdout, "rnx %s\n", JOBLET_VERSION);
        if (slurm_release)
            print_textf(stdout, "Slurm plugin: built for Slurm %s (%s, %s)\n", slurm_release, slurm_plugin,
                        slurm_installed ? "installed" : "not installed");
        else
            print_textf(stdout, "Slurm plugin: not built (no slurm/spank.h)\n");
        if (rc == RNX_OK) {
            const char *sv = json_string_value(json_object_get(v, "version"));
            const char *api = json_string_value(json_object_get(v, "api"));
            const char *layout = json_string_value(json_object_get(v, "cgroup_layout"));
            print_textf(stdout, "joblet %s", sv ? sv : "(unknown version)");
            if (api || layout)
                print_textf(stdout, " (api %s, cgroup layout %s)", api ? api : "?", layout ? layout : "?");
            putchar('\n');
            print_isolation(json_object_get(v, "isolation"));
        }
    }
    if (rc != RNX_OK)
        rnx_fail("%s", e.msg);
    json_decref(v);
    client_free(c);
    return rc;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 'S'},
        {"node", required_argument, NULL, 'N'},
        {"json", no_argument, NULL, 'j'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    rnx_ctx ctx = {0};
    bool version = false, help = false;
    int c;

    optind = 0;
    while ((c = rnx_getopt(argc, argv, "+h", opts, "rnx")) != -1) {
        switch (c) {
        case 'S': ctx.socket_flag = optarg; break;
        case 'N': ctx.node_flag = optarg; break;
        case 'j': ctx.json = true; break;
        case 'V': version = true; break;
        case 'h': help = true; break;
        default: return RNX_USAGE;
        }
    }
    if (help || (optind < argc && strcmp(argv[optind], "help") == 0 && optind + 1 == argc)) {
        fputs(global_help, stdout);
        return RNX_OK;
    }
    if (ctx.node_flag && ctx.socket_flag)
        return rnx_usage("--node and --socket both say where to send the command; give one of them");
    /* rnx node and rnx completion choose (or not) for themselves: a nodes.yml in need of
     * repair must not stop the commands that repair it */
    const char *cmd = optind < argc ? argv[optind] : "";
    if (strcmp(cmd, "node") && strcmp(cmd, "completion")) {
        int rc = cmd_node_target(&ctx, false);
        if (rc != RNX_OK)
            return rc;
    }
    if (version || (optind < argc && strcmp(argv[optind], "version") == 0 && optind + 1 == argc))
        return do_version(&ctx);
    if (optind >= argc)
        return rnx_usage("missing command; usage: rnx [--node NAME|--socket PATH] [--json] job <command> ...; see "
                         "'rnx --help'");
    if (strcmp(argv[optind], "job") == 0)
        return cmd_job(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "workflow") == 0)
        return cmd_workflow(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "gpu") == 0)
        return cmd_gpu(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "audit") == 0)
        return cmd_audit(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "monitor") == 0)
        return cmd_monitor(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "volume") == 0)
        return cmd_volume(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "network") == 0)
        return cmd_network(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "runtime") == 0)
        return cmd_runtime(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "console") == 0)
        return cmd_console(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "node") == 0)
        return cmd_node(&ctx, argc - optind, argv + optind);
    if (strcmp(argv[optind], "completion") == 0)
        return cmd_completion(&ctx, argc - optind, argv + optind);
    static const char *const commands[] = {"job", "workflow", "gpu", "audit", "monitor", "volume", "network", "runtime",
                                           "console", "node", "completion", "help", "version"};
    return rnx_unknown_command(argv[optind], "rnx", commands, sizeof commands / sizeof commands[0]);
}

int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    /* a full disk or closed pipe must not pass for success */
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == RNX_OK) {
        if (errno != EPIPE)
            print_textf(stderr, "rnx: writing the output failed: %s\n", strerror(errno));
        rc = RNX_FAIL;
    }
    return rc;
}
