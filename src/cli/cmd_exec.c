/* rnx job exec (cmd_exec.h). */
#include "cmd_exec.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/jobreq.h"
#include "../common/parse.h"
#include "client.h"
#include "cmd_term.h"

static const char exec_help[] =
    "Usage: rnx job exec [-i] [-t] [-e NAME=VALUE]... [-w DIR] ID [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND inside the running job ID, as docker exec does in a container: in the job's\n"
    "namespaces (it sees the job's processes and files), its cgroup and limits, as its user, with\n"
    "its environment, its seccomp filter and no capabilities. rnx exits with COMMAND's exit code;\n"
    "COMMAND ends when rnx does, and when the job ends. Flags go before ID.\n"
    "\n"
    "Flags:\n"
    "  -i, --interactive     your stdin to COMMAND (its end closes COMMAND's stdin)\n"
    "  -t, --tty             a terminal made inside the job; with -i your terminal is raw meanwhile\n"
    "  -e, --env NAME=VALUE  a variable on top of the job's environment (repeatable)\n"
    "  -w, --workdir DIR     the working directory (default: the job's, /work)\n"
    "  -h, --help            show this help\n"
    "\n"
    "Example:\n"
    "  rnx job exec -it train sh\n";

/* The request as the daemon reads it (POST /v1/jobs/{id}/exec), checked here by the same
 * schema first (common/jobreq.c), so a bad flag is a usage error before anything is sent. */
static int build_body(job_req *req, char **body)
{
    json_t *o = json_object(), *args = json_array(), *env = json_object();
    bool ok = true;
    ok &= !json_object_set_new(o, "command", json_string(req->command));
    for (size_t i = 0; i < req->nargs; i++)
        ok &= !json_array_append_new(args, json_string(req->args[i]));
    for (size_t i = 0; i < req->nenv; i++)
        ok &= !json_object_set_new(env, req->env[i].name, json_string(req->env[i].value));
    json_object_set_new(o, "args", args);
    json_object_set_new(o, "env", env);
    if (req->workdir)
        ok &= !json_object_set_new(o, "workdir", json_string(req->workdir));
    json_object_set_new(o, "tty", json_boolean(req->tty));
    json_object_set_new(o, "stdin", json_boolean(req->stdin_open));
    *body = ok ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!*body)
        return rnx_usage("job exec: the command, its arguments and variables must be UTF-8 text");
    return 0;
}

int cmd_job_exec(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                         {"interactive", no_argument, NULL, 'i'},
                                         {"tty", no_argument, NULL, 't'},
                                         {"env", required_argument, NULL, 'e'},
                                         {"workdir", required_argument, NULL, 'w'},
                                         {0}};
    job_req req = {0};
    jerr e = {0};
    int c, rc = RNX_USAGE;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "+hite:w:", opts, "rnx job exec")) != -1) {
        char name[256];
        const char *value;
        switch (c) {
        case 'h': fputs(exec_help, stdout); jobreq_free(&req); return RNX_OK;
        case 'i': req.stdin_open = true; break;
        case 't': req.tty = true; break;
        case 'e':
            if (rnx_env_pair("--env", optarg, name, sizeof name, &value) != 0) {
                rc = RNX_USAGE;
                goto out;
            }
            if (jobreq_add_env(&req, false, name, value, &e) < 0) {
                rc = rnx_usage("%s", e.msg);
                goto out;
            }
            break;
        case 'w':
            if (jobreq_set_text(&req, jobreq_field_by_key("workdir"), optarg, time(NULL), &e) < 0) {
                rc = rnx_usage("--workdir: %s", e.msg);
                goto out;
            }
            break;
        default: goto out;
        }
    }
    /* kubectl's habit: rnx job exec ID -- COMMAND... (no command is named "--") */
    int cmd_at = optind + 1;
    if (cmd_at < argc && !strcmp(argv[cmd_at], "--"))
        cmd_at++;
    if (argc - optind < 2 || cmd_at >= argc) {
        rc = rnx_usage("job exec: want a job and a command (rnx job exec ID sh -c 'ps'); see 'rnx job exec --help'");
        goto out;
    }
    const char *id = argv[optind];
    if (!*id) {
        rc = rnx_usage("job exec: the ID is empty; usage: rnx job exec [flags] ID COMMAND [ARGS...]");
        goto out;
    }
    if (jobreq_set_command(&req, argv[cmd_at], &e) < 0) {
        rc = rnx_usage("%s", e.msg);
        goto out;
    }
    for (int i = cmd_at + 1; i < argc; i++)
        jobreq_add_arg(&req, argv[i]);
    if (req.tty && req.stdin_open && !isatty(STDIN_FILENO)) {
        rc = rnx_usage("-t: your input is not a terminal; with a pipe or a file give -i alone (its stdout and stderr "
                       "then stay apart), or run rnx from a terminal");
        goto out;
    }
    char *body = NULL;
    if ((rc = build_body(&req, &body)) != 0)
        goto out;
    rnx_client *cl = client_new(&ctx->target);
    term_opts to = {.tty = req.tty, .stdin_open = req.stdin_open, .exec_body = body};
    rc = cmd_term_attach(cl, id, &to);
    client_free(cl);
    free(body);
out:
    jobreq_free(&req);
    return rc;
}
