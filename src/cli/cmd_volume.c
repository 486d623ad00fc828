/* The "rnx volume" commands: create, list, remove (docs/volumes.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/parse.h"
#include "../common/util.h"
#include "cli.h"
#include "client.h"
#include "cmd_volume.h"
#include "print.h"

static const char volume_help[] =
    "Usage: rnx volume <command> [flags] [--json]\n"
    "\n"
    "Commands:\n"
    "  create NAME --size=SIZE [--type=filesystem|memory]\n"
    "                  a volume of SIZE (64MB, 1GB; plain numbers are MB):\n"
    "                    filesystem  an ext4 image on disk, its size a hard limit; kept until removed,\n"
    "                                through restarts and reboots (the default; 16 MB or more)\n"
    "                    memory      a tmpfs; gone when the last job using it ends, and on reboot\n"
    "                  Creating a volume that exists as asked (same owner, type and size) does nothing.\n"
    "  list            your volumes (admins: every volume): size, use, type, owner, jobs using it\n"
    "  remove NAME     remove a volume and its data (refused while a job not yet ended uses it)\n"
    "\n"
    "A job mounts volumes with 'rnx job run --volume=NAME' (read-write) or '--volume=NAME:ro' at\n"
    "/volumes/NAME; a workflow job with 'volumes: [NAME, NAME:ro]'. A volume is its owner's: only\n"
    "they, root and admins (server.admin_group) may use or remove it.\n"
    "--json prints the API's objects (docs/api.md, \"Volumes\").\n";

/* The API's fields and the words the command line has for them. */
static const struct {
    const char *field, *label;
} labels[] = {
    {"size_mb", "--size"},
    {"type", "--type"},
    {"name", ""},          /* the message says which name */
};

/* A refusal from the daemon ("size_mb: ...") worded as typed ("--size: ..."). */
static int server_error(const jerr *e)
{
    for (size_t i = 0; i < ARRAY_LEN(labels); i++) {
        size_t kl = strlen(labels[i].field);
        if (!strcmp(e->field, labels[i].field) && !strncmp(e->msg, labels[i].field, kl) && e->msg[kl] == ':')
            return rnx_fail("%s%s", labels[i].label, e->msg + kl + (*labels[i].label ? 0 : 2));
    }
    return rnx_fail("%s", e->msg);
}

static int call(const rnx_ctx *ctx, const char *method, const char *path, json_t *body, json_t **out)
{
    rnx_client *c = client_new(&ctx->target);
    jerr e = {0};
    int rc = client_request(c, method, path, body, out, &e);
    client_free(c);
    return rc < 0 ? server_error(&e) : RNX_OK;
}

/* "12.0 MB (22%)" of what the volume's files can use. */
static void used_cell(json_t *v, char *out, size_t len)
{
    int64_t used, cap;
    if (!jint(v, "used_bytes", &used) || !jint(v, "capacity_bytes", &cap)) {
        snprintf(out, len, "-");
        return;
    }
    char b[32];
    fmt_bytes((uint64_t)used, b, sizeof b);
    snprintf(out, len, "%s (%lld%%)", b, cap > 0 ? (long long)(used * 100 / cap) : 0ll);
}

/* State and lifetime in a few words: "being created", "unavailable: why", the memory note. */
static void note_cell(json_t *v, char *out, size_t len)
{
    const char *state = jstr(v, "state"), *type = jstr(v, "type");
    if (state && !strcmp(state, "creating"))
        snprintf(out, len, "being created");
    else if (state && !strcmp(state, "unavailable"))
        snprintf(out, len, "unavailable: %s", jstr(v, "error") ? jstr(v, "error") : "?");
    else if (type && !strcmp(type, "memory"))
        snprintf(out, len, "gone when its last job ends, and on reboot");
    else
        snprintf(out, len, "kept until removed");
}

static int volume_list(const rnx_ctx *ctx)
{
    json_t *o = NULL;
    int rc = call(ctx, "GET", "/v1/volumes", NULL, &o);
    if (rc)
        return rc;
    json_t *vols = json_object_get(o, "volumes");
    if (ctx->json) {
        print_json(vols);
        json_decref(o);
        return RNX_OK;
    }
    if (!json_array_size(vols)) {
        print_textf(stdout, "No volumes. Create one: rnx volume create NAME --size=1GB [--type=memory]\n");
        json_decref(o);
        return RNX_OK;
    }
    static const char *const hdr[] = {"NAME", "TYPE", "SIZE", "USED", "OWNER", "JOBS", "LIFETIME"};
    table *t = table_new(7, hdr);
    size_t i;
    json_t *v;
    json_array_foreach(vols, i, v)
    {
        char size[32] = "-", used[48], owner[64], jobs[96], note[600];
        int64_t mb;
        if (jint(v, "size_mb", &mb))
            fmt_mb((uint64_t)mb, size, sizeof size);
        used_cell(v, used, sizeof used);
        fmt_owner(v, owner, sizeof owner);
        note_cell(v, note, sizeof note);
        json_t *js = json_object_get(v, "jobs");
        int64_t n = (int64_t)json_array_size(js);
        jint(v, "jobs_count", &n);
        size_t o2 = (size_t)snprintf(jobs, sizeof jobs, "%lld", (long long)n);
        for (size_t k = 0; k < json_array_size(js) && k < 2; k++)
            o2 += (size_t)snprintf(jobs + o2, sizeof jobs - o2, "%s%.8s", k ? ", " : " (",
                                   json_string_value(json_array_get(js, k)));
        if (json_array_size(js))
            o2 += (size_t)snprintf(jobs + o2, sizeof jobs - o2, "%s)", n > 2 ? ", ..." : "");
        int64_t na = 0; /* arrays whose tasks not made yet will mount it */
        if (jint(v, "arrays_count", &na) && na > 0 && o2 < sizeof jobs)
            snprintf(jobs + o2, sizeof jobs - o2, " + %lld arra%s to come", (long long)na, na == 1 ? "y" : "ys");
        const char *cells[] = {jstr(v, "name"), jstr(v, "type"), size, used, owner, jobs, note};
        table_add(t, cells);
    }
    table_print(t, stdout);
    table_free(t);
    json_decref(o);
    return RNX_OK;
}

static int volume_create(const rnx_ctx *ctx, const char *name, const char *size, const char *type)
{
    jerr e = {0};
    uint64_t mb;
    if (!size)
        return rnx_usage("volume create: --size is required, e.g. rnx volume create %s --size=1GB", name);
    if (parse_size_mb("--size", size, &mb, &e) < 0)
        return rnx_usage("%s", e.msg);
    if (type && strcmp(type, "filesystem") && strcmp(type, "memory"))
        return rnx_usage("--type: '%s' is not a volume type; use filesystem (an ext4 image on disk, kept until "
                         "removed) or memory (a tmpfs, gone when its last job ends)", type);
    json_t *body = json_pack("{s:s,s:I,s:s}", "name", name, "size_mb", (json_int_t)mb, "type",
                             type ? type : "filesystem");
    json_t *v = NULL;
    int rc = call(ctx, "POST", "/v1/volumes", body, &v);
    json_decref(body);
    if (rc)
        return rc;
    if (ctx->json) {
        print_json(v);
    } else {
        char sz[32], cap[32] = "?";
        int64_t c;
        fmt_mb(mb, sz, sizeof sz);
        if (jint(v, "capacity_bytes", &c))
            fmt_bytes((uint64_t)c, cap, sizeof cap);
        bool made = json_is_true(json_object_get(v, "created"));
        print_textf(stdout, "volume %s %s: %s, %s (%s for files); jobs mount it with --volume=%s at /volumes/%s\n",
                    name, made ? "created" : "exists already", jstr(v, "type") ? jstr(v, "type") : "?", sz, cap, name,
                    name);
        if (jstr(v, "type") && !strcmp(jstr(v, "type"), "memory"))
            print_textf(stdout, "A memory volume is gone when the last job using it ends, and on reboot.\n");
    }
    json_decref(v);
    return RNX_OK;
}

static int volume_remove(const rnx_ctx *ctx, const char *name)
{
    rnx_client *c = client_new(&ctx->target);
    char *esc = client_escape(c, name);
    client_free(c);
    char path[512];
    snprintf(path, sizeof path, "/v1/volumes/%s", esc);
    free(esc);
    json_t *o = NULL;
    int rc = call(ctx, "DELETE", path, NULL, &o);
    if (rc)
        return rc;
    if (ctx->json)
        print_json(o);
    else
        print_textf(stdout, "volume %s removed\n", name);
    json_decref(o);
    return RNX_OK;
}

int cmd_volume(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"size", required_argument, NULL, 's'},
                                         {"type", required_argument, NULL, 't'},
                                         {0}};
    const char *size = NULL, *type = NULL;
    const char *cmd = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    char label[48];
    snprintf(label, sizeof label, "rnx volume%s%.20s", cmd ? " " : "", cmd ? cmd : "");
    /* flags anywhere among the operands: rnx volume create data --size=1GB, or --json first */
    const char *operands[3];
    size_t nops = 0;
    int c;
    optind = 0;
    for (;;) {
        c = rnx_getopt(argc, argv, "h", opts, label);
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
        case 'h': fputs(volume_help, stdout); return RNX_OK;
        case 's': size = optarg; break;
        case 't': type = optarg; break;
        default: return RNX_USAGE;
        }
    }
    if (!nops)
        return rnx_usage("volume: missing command (create, list, remove); see 'rnx volume --help'");
    if (nops > ARRAY_LEN(operands))
        return rnx_usage("volume %s: too many arguments; see 'rnx volume --help'", operands[0]);
    const char *name = operands[0];
    int nargs = (int)nops - 1;
    const char *const *args = operands + 1;
    /* "" would be sent as DELETE /v1/volumes/, answered "no route" */
    for (int i = 0; i < nargs; i++)
        if (!*args[i])
            return rnx_usage("volume %s: NAME is empty; %s", name,
                             !strcmp(name, "create") ? "name the new volume, e.g. rnx volume create data --size=1GB"
                                                     : "give a volume's name (rnx volume list)");
    bool create = !strcmp(name, "create");
    if (!create && (size || type))
        return rnx_usage("volume %s: --size and --type are for 'rnx volume create'", name);
    if (!strcmp(name, "list") || !strcmp(name, "ls")) {
        if (nargs)
            return rnx_usage("volume list: takes no arguments, got '%s'", args[0]);
        return volume_list(ctx);
    }
    if (create) {
        if (nargs != 1)
            return rnx_usage("volume create: expected one NAME; usage: rnx volume create NAME --size=SIZE "
                             "[--type=filesystem|memory]");
        return volume_create(ctx, args[0], size, type);
    }
    if (!strcmp(name, "remove") || !strcmp(name, "rm")) {
        if (nargs != 1)
            return rnx_usage("volume remove: expected one NAME; usage: rnx volume remove NAME");
        return volume_remove(ctx, args[0]);
    }
    if (!strcmp(name, "help")) {
        fputs(volume_help, stdout);
        return RNX_OK;
    }
    return rnx_unknown_command(name, "rnx volume", (const char *const[]){"create", "list", "ls", "remove", "rm", "help"},
                               6);
}
