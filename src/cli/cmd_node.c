/* rnx node (cmd_node.h): the nodes in nodes.yml, and the choice of where a command's requests
 * go. nodes.yml holds private keys: it is read only when it is the user's own and no one else
 * may read or write it (as ssh treats a key), and written whole to a new file (mode 0600,
 * fsync'd) renamed over the old, under a lock on its directory, so that two rnx node commands
 * at once cannot lose each other's change. */
#include "cmd_node.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/suggest.h"
#include "../common/util.h"
#include "conn_agent.h"
#include "conn_tls.h"
#include "nodes.h"
#include "print.h"

static const char node_help[] =
    "Usage: rnx node <command> [flags]\n"
    "\n"
    "Named joblet nodes. rnx talks to a node's joblet over TLS 1.3 with a client certificate (or\n"
    "to a joblet socket on this machine). 'rnx --node NAME <command>' (or RNX_NODE=NAME) sends one\n"
    "command to a node; 'rnx node use NAME' makes it the default; with neither, rnx uses the\n"
    "local socket as always.\n"
    "\n"
    "Commands:\n"
    "  add NAME FILE.rnx.yml   add the node a node file describes ('joblet cert client' writes\n"
    "                  it on the node: its address, your user and role, the node's CA, your\n"
    "                  certificate and key); add NAME --socket PATH adds a local socket\n"
    "  list            the nodes: name, address, user, role; * marks the default\n"
    "  use NAME        make NAME the default node ('rnx node use local': the local socket again)\n"
    "  show [NAME]     a node's address, user and role, its certificate's subject, serial and\n"
    "                  expiry and its CA's subject (never the key); without NAME, the node rnx\n"
    "                  uses now\n"
    "  remove NAME     forget a node (and the default, when it was the default)\n"
    "  disconnect [NAME|--all]  end rnx's keeper of connections to a node\n"
    "\n"
    "The first command to a node starts a keeper: a small rnx process of yours that holds the\n"
    "node's TLS connection ready for the next command (as ssh's ControlPersist does), so that a\n"
    "command pays no TLS handshake. It leaves 10 minutes after the last command; 'persist: 0'\n"
    "in a node's entry (or RNX_PERSIST=0) turns it off, 'persist: 1h' keeps it longer.\n"
    "\n"
    "The nodes are kept in ~/.config/rnx/nodes.yml, or the file RNX_CONFIG names: mode 0600 in a\n"
    "0700 directory, as it holds private keys; rnx refuses to read it when others may. The\n"
    "server's certificate must be signed by the node's CA (the only CA rnx trusts for it), name\n"
    "the address dialed (a DNS name as a DNS SAN, an IP address as an IP SAN) and allow TLS\n"
    "server use; otherwise rnx says why and sends nothing.\n"
    "Run 'rnx node <command> --help' for a command's flags.\n";

static const char add_help[] =
    "Usage: rnx node add [--force] [--socket PATH] NAME [FILE.rnx.yml]\n"
    "\n"
    "Adds the node FILE.rnx.yml describes (written by 'joblet cert client' on the node) to\n"
    "nodes.yml under NAME (1 to 64 of A-Z a-z 0-9 . _ -; not 'local'). Every field is checked,\n"
    "and the key must be the certificate's. The node file holds your private key: once added,\n"
    "it is no longer needed.\n"
    "\n"
    "Flags:\n"
    "  --force         replace the node of that name, if there is one\n"
    "  --socket PATH   instead of a node file: a node that is joblet's unix socket at PATH\n"
    "  -h, --help      show this help\n";

static const char list_help[] =
    "Usage: rnx node list [--json]\n"
    "\n"
    "Lists the nodes: name, address (unix:PATH for a socket), user, role; * marks the one rnx\n"
    "uses by default ('local', the local socket, when no node is the default).\n"
    "\n"
    "Flags:\n"
    "  --json       print them as a JSON array\n"
    "  -h, --help   show this help\n";

static const char use_help[] =
    "Usage: rnx node use NAME|local\n"
    "\n"
    "Makes NAME the default node: the commands that name none (no --node, no RNX_NODE) go to it.\n"
    "'rnx node use local' makes the local socket the default again.\n"
    "\n"
    "Flags:\n"
    "  -h, --help   show this help\n";

static const char show_help[] =
    "Usage: rnx node show [--json] [NAME]\n"
    "\n"
    "Shows a node: its address, user and role, its client certificate's subject, serial number\n"
    "and expiry, and its CA's subject; never the key. Without NAME, the node rnx uses now (--node,\n"
    "RNX_NODE, the default).\n"
    "\n"
    "Flags:\n"
    "  --json       print it as a JSON object\n"
    "  -h, --help   show this help\n";

static const char disconnect_help[] =
    "Usage: rnx node disconnect [NAME | --all]\n"
    "\n"
    "Ends rnx's keeper of connections to a node (without NAME, the node rnx uses now); commands\n"
    "it carries are cut. The next command to the node starts a new one (unless its persist is 0).\n"
    "\n"
    "Flags:\n"
    "  --all        the keepers of every node in nodes.yml\n"
    "  -h, --help   show this help\n";

static const char remove_help[] =
    "Usage: rnx node remove NAME\n"
    "\n"
    "Removes a node from nodes.yml; when it was the default, the local socket is the default again.\n"
    "\n"
    "Flags:\n"
    "  -h, --help   show this help\n";

/* ---- nodes.yml ---------------------------------------------------------------------------- */

/* nodes.yml's path: $RNX_CONFIG, else ~/.config/rnx/nodes.yml (*own_dir: rnx's own directory,
 * which it keeps at 0700). -1 when there is no home to find it in. */
static int conf_path(char *out, size_t cap, bool *own_dir)
{
    const char *env = getenv("RNX_CONFIG");
    *own_dir = false;
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return 0;
    }
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(geteuid());
        home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !*home)
        return -1;
    snprintf(out, cap, "%s/.config/rnx/nodes.yml", home);
    *own_dir = true;
    return 0;
}

/* Reads nodes.yml at path into conf (empty when there is no such file). -1 with e when it
 * cannot be used: unreadable, not the user's, open to others, not valid. */
static int conf_read(const char *path, nodes_conf *conf, jerr *e)
{
    memset(conf, 0, sizeof *conf);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : jerr_sys(e, "%s", path);
    struct stat st;
    int rc = -1;
    char *text = NULL;
    if (fstat(fd, &st) < 0) {
        jerr_sys(e, "%s", path);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        jerr_set(e, EINVAL, "%s: not a regular file", path);
        goto out;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        jerr_set(e, EPERM, "%s: belongs to uid %u, not to you (uid %u): rnx reads its nodes (and keys) only from "
                 "a file of yours", path, (unsigned)st.st_uid, (unsigned)geteuid());
        goto out;
    }
    if (st.st_mode & 077) {
        jerr_set(e, EPERM, "%s: its permissions %04o let others %s it, and it holds private keys: rnx will not use "
                 "it until only you can (chmod 600 %s)", path, (unsigned)(st.st_mode & 07777),
                 st.st_mode & 044 ? "read" : "change", path);
        goto out;
    }
    if (st.st_size > NODES_FILE_MAX) {
        jerr_set(e, EFBIG, "%s: larger than %u MiB: not rnx's nodes file", path, NODES_FILE_MAX >> 20);
        goto out;
    }
    size_t len = 0, cap = (size_t)st.st_size + 1;
    text = xmalloc(cap);
    for (;;) {
        if (len + 1 >= cap) {
            if (cap > NODES_FILE_MAX) {
                jerr_set(e, EFBIG, "%s: larger than %u MiB", path, NODES_FILE_MAX >> 20);
                goto out;
            }
            text = xrealloc(text, cap *= 2);
        }
        ssize_t n = read(fd, text + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            jerr_sys(e, "%s", path);
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    text[len] = 0;
    if (nodes_conf_parse(text, len, conf, e) < 0) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        snprintf(e->msg, sizeof e->msg, "%s: %s", path, why);
        goto out;
    }
    rc = 0;
out:
    if (text) {
        explicit_bzero(text, strlen(text));
        free(text);
    }
    close(fd);
    return rc;
}

/* nodes.yml's directory, made (0700) when missing and locked; its descriptor, -1 with e. */
static int conf_lock(const char *path, bool own_dir, jerr *e)
{
    char copy[PATH_MAX], *dir;
    snprintf(copy, sizeof copy, "%s", path);
    dir = dirname(copy);
    struct stat st;
    if (stat(dir, &st) < 0) {
        if (errno != ENOENT)
            return jerr_sys(e, "%s", dir);
        if (mkdir_p(dir, 0700, e) < 0)
            return -1;
    } else if (own_dir && st.st_uid == geteuid() && (st.st_mode & 077) && chmod(dir, 0700) < 0) {
        return jerr_sys(e, "chmod 700 %s", dir);
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return jerr_sys(e, "%s", dir);
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR) {
            jerr_sys(e, "locking %s", dir);
            close(fd);
            return -1;
        }
    return fd;
}

/* Writes conf to path: a new file of mode 0600 in the same directory (dirfd), renamed over it. */
static int conf_write(const char *path, int dirfd, const nodes_conf *conf, jerr *e)
{
    char *text = nodes_conf_render(conf), tmp[PATH_MAX + 16];
    size_t len = strlen(text);
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int rc = -1, fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        jerr_sys(e, "creating %s", tmp);
        goto out;
    }
    if (fchmod(fd, 0600) < 0 || write_all(fd, text, len) != len || fsync(fd) < 0) {
        jerr_sys(e, "writing %s", tmp);
        close(fd);
        unlink(tmp);
        goto out;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) {
        jerr_sys(e, "writing %s", path);
        unlink(tmp);
        goto out;
    }
    fsync(dirfd);
    rc = 0;
out:
    explicit_bzero(text, len);
    free(text);
    return rc;
}

/* A change of nodes.yml: fn changes conf (RNX_OK) or says why not (its code); then it is
 * written, all under the directory's lock. */
static int conf_update(int (*fn)(nodes_conf *conf, const char *path, void *ud), void *ud)
{
    char path[PATH_MAX];
    bool own_dir;
    if (conf_path(path, sizeof path, &own_dir) < 0)
        return rnx_fail("no home directory to keep nodes in (HOME is not set): set RNX_CONFIG to a file");
    jerr e = {0};
    int dirfd = conf_lock(path, own_dir, &e);
    if (dirfd < 0)
        return rnx_fail("%s", e.msg);
    nodes_conf conf;
    int rc;
    if (conf_read(path, &conf, &e) < 0)
        rc = rnx_fail("%s", e.msg);
    else if ((rc = fn(&conf, path, ud)) == RNX_OK && conf_write(path, dirfd, &conf, &e) < 0)
        rc = rnx_fail("%s", e.msg);
    nodes_conf_free(&conf);
    close(dirfd);   /* and the lock */
    return rc;
}

/* ---- which node ---------------------------------------------------------------------------- */

/* nodes.yml as the target was chosen from: kept for the process, the target's strings are its. */
static nodes_conf loaded;
static char loaded_path[PATH_MAX];
static bool loaded_ok;

static int load(jerr *e)
{
    if (loaded_ok)
        return 0;
    bool own_dir;
    if (conf_path(loaded_path, sizeof loaded_path, &own_dir) < 0) {
        snprintf(loaded_path, sizeof loaded_path, "(no home directory: HOME is not set)");
        memset(&loaded, 0, sizeof loaded);
        loaded_ok = true;
        return 0;
    }
    if (conf_read(loaded_path, &loaded, e) < 0)
        return -1;
    loaded_ok = true;
    return 0;
}

/* source names where the path came from: "--socket", "JOBLET_SOCKET", a node's entry. */
static int socket_path_ok(const char *path, const char *source, bool quiet)
{
    struct sockaddr_un sa;
    if (!*path)
        return quiet ? RNX_USAGE : rnx_usage("%s: needs a path", source);
    if (strlen(path) >= sizeof sa.sun_path)
        return quiet ? RNX_USAGE
                     : rnx_usage("%s: '%s' is too long for a unix socket path (at most %zu bytes)", source, path,
                                 sizeof sa.sun_path - 1);
    return RNX_OK;
}

static const char *local_socket(const char **source)
{
    const char *env = getenv("JOBLET_SOCKET");
    *source = env && *env ? "JOBLET_SOCKET" : "the default socket";
    return env && *env ? env : RNX_DEFAULT_SOCKET;
}

static int to_socket(rnx_ctx *ctx, const char *path, const char *source, bool quiet)
{
    int rc = socket_path_ok(path, source, quiet);
    if (rc == RNX_OK)
        ctx->target = (client_target){.socket = path};
    return rc;
}

/* The node a name names (how it was named: source) or why not. */
static int to_node(rnx_ctx *ctx, const char *name, const char *source, bool quiet)
{
    if (!strcmp(name, NODES_LOCAL)) {
        const char *src, *path = local_socket(&src);
        return to_socket(ctx, path, src, quiet);
    }
    jerr e = {0};
    if (load(&e) < 0)
        return quiet ? RNX_FAIL : rnx_fail("%s", e.msg);
    const nodes_entry *n = nodes_conf_find(&loaded, name);
    if (!n) {
        if (quiet)
            return RNX_USAGE;
        const char **names = xcalloc(loaded.n + 1, sizeof *names);
        char list[512] = "";
        for (size_t i = 0; i < loaded.n; i++) {
            names[i] = loaded.v[i].name;
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", loaded.v[i].name);
        }
        const char *best = suggest_closest(name, names, loaded.n);
        free(names);
        int code = strcmp(source, "current") ? RNX_USAGE : RNX_FAIL;
        if (!strcmp(source, "current"))
            rnx_fail("the default node '%s' (current in %s) is not among its nodes; 'rnx node use NAME' or "
                     "'rnx node use local'", name, loaded_path);
        else if (best)
            rnx_usage("%s: no node '%s' in %s; did you mean '%s'?", source, name, loaded_path, best);
        else if (loaded.n)
            rnx_usage("%s: no node '%s' in %s (its nodes: %s); see 'rnx node list'", source, name, loaded_path, list);
        else
            rnx_usage("%s: no node '%s': there are none in %s; add one with 'rnx node add %s FILE.rnx.yml'", source,
                      name, loaded_path, name);
        return code;
    }
    if (n->socket)
        return to_socket(ctx, n->socket, name, quiet);
    ctx->target = (client_target){.node = {n->name, n->address, n->host, n->port, n->ca, n->cert, n->key},
                                  .persist_s = n->has_persist ? n->persist_s : CONN_AGENT_PERSIST_DEFAULT};
    const char *env = getenv("RNX_PERSIST");
    if (env && *env) {
        jerr pe = {0};
        if (nodes_persist_parse("RNX_PERSIST", env, &ctx->target.persist_s, &pe) < 0)
            return quiet ? RNX_USAGE : rnx_usage("%s", pe.msg);
    }
    return RNX_OK;
}

int cmd_node_target(rnx_ctx *ctx, bool quiet)
{
    if (ctx->node_flag && ctx->socket_flag)
        return quiet ? RNX_USAGE
                     : rnx_usage("--node and --socket both say where to send the command; give one of them");
    if (ctx->node_flag)
        return to_node(ctx, ctx->node_flag, "--node", quiet);
    if (ctx->socket_flag)
        return to_socket(ctx, ctx->socket_flag, "--socket", quiet);
    const char *env = getenv("RNX_NODE");
    if (env && *env)
        return to_node(ctx, env, "RNX_NODE", quiet);
    env = getenv("JOBLET_SOCKET");
    if (env && *env)
        return to_socket(ctx, env, "JOBLET_SOCKET", quiet);
    jerr e = {0};
    if (load(&e) < 0)
        return quiet ? RNX_FAIL : rnx_fail("%s", e.msg);
    if (loaded.current)
        return to_node(ctx, loaded.current, "current", quiet);
    return to_socket(ctx, RNX_DEFAULT_SOCKET, "the default socket", quiet);
}

/* The name of the node rnx uses now and why: "local" for the local socket. */
static const char *chosen(const rnx_ctx *ctx, const char **why)
{
    const char *env = getenv("RNX_NODE");
    if (ctx->node_flag) {
        *why = "--node";
        return ctx->node_flag;
    }
    if (ctx->socket_flag) {
        *why = "--socket";
        return NODES_LOCAL;
    }
    if (env && *env) {
        *why = "RNX_NODE";
        return env;
    }
    env = getenv("JOBLET_SOCKET");
    if (env && *env) {
        *why = "JOBLET_SOCKET";
        return NODES_LOCAL;
    }
    *why = "the default";
    return loaded.current ? loaded.current : NODES_LOCAL;
}

void cmd_node_each(void (*fn)(const char *name, const char *desc, void *ud), void *ud)
{
    jerr e = {0};
    if (load(&e) < 0)
        return;
    const char *src;
    char desc[PATH_MAX + 8];
    snprintf(desc, sizeof desc, "unix:%s", local_socket(&src));
    fn(NODES_LOCAL, desc, ud);
    for (size_t i = 0; i < loaded.n; i++) {
        if (loaded.v[i].socket)
            snprintf(desc, sizeof desc, "unix:%s", loaded.v[i].socket);
        else
            snprintf(desc, sizeof desc, "%s", loaded.v[i].address);
        fn(loaded.v[i].name, desc, ud);
    }
}

/* ---- the commands ---------------------------------------------------------------------------- */

static conn_tls_peer peer_of(const nodes_entry *n)
{
    return (conn_tls_peer){n->name, n->address, n->host, n->port, n->ca, n->cert, n->key};
}

/* Ends the keeper of a node whose entry goes away or changes: its credentials are no longer
 * the node's. */
static void keeper_end(const nodes_entry *n)
{
    if (n && !n->socket) {
        conn_tls_peer p = peer_of(n);
        conn_agent_stop(&p);
    }
}

enum { O_FORCE = 300, O_SOCKET };

/* Flags of one subcommand: -h and what its options allow; operands after. HELP_SHOWN after --help. */
#define HELP_SHOWN (-100)
static int sub_flags(rnx_ctx *ctx, int argc, char **argv, const char *cmd, const char *help,
                     const struct option *opts, bool *force, const char **socket)
{
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, cmd)) != -1) {
        switch (c) {
        case 'h': fputs(help, stdout); return HELP_SHOWN;
        case 'j': ctx->json = true; break;
        case O_FORCE: *force = true; break;
        case O_SOCKET: *socket = optarg; break;
        default: return RNX_USAGE;
        }
    }
    return RNX_OK;
}

typedef struct add_req {
    nodes_entry ent;
    bool force;
    const char *file;
} add_req;

static int add_change(nodes_conf *conf, const char *path, void *ud)
{
    add_req *r = ud;
    const nodes_entry *old = nodes_conf_find(conf, r->ent.name);
    if (old && !r->force)
        return rnx_fail("node add: there is a node '%s' already (%s%s); --force replaces it", r->ent.name,
                        old->socket ? "unix:" : "", old->socket ? old->socket : old->address);
    keeper_end(old);
    nodes_conf_put(conf, &r->ent);
    return RNX_OK;
}

/* "2027-05-01T00:00:00Z (in 364 days)", "... (expired 3 days ago)". */
static void expiry_text(int64_t t, char *out, size_t cap)
{
    time_t tt = (time_t)t, now = time(NULL);
    struct tm tm;
    char when[32] = "(unknown)";
    if (t > 0 && gmtime_r(&tt, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    long long days = (long long)((t - (int64_t)now) / 86400);
    if (t <= 0)
        snprintf(out, cap, "%s", when);
    else if (t < (int64_t)now)
        snprintf(out, cap, "%s (expired %lld day%s ago)", when, -days, -days == 1 ? "" : "s");
    else
        snprintf(out, cap, "%s (in %lld day%s)", when, days, days == 1 ? "" : "s");
}

static int node_add(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"force", no_argument, NULL, O_FORCE},
                                         {"socket", required_argument, NULL, O_SOCKET},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    add_req r = {0};
    const char *socket = NULL;
    int rc = sub_flags(ctx, argc, argv, "rnx node add", add_help, opts, &r.force, &socket);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    int nops = argc - optind;
    if (nops < 1 || nops != (socket ? 1 : 2))
        return rnx_usage("node add: want NAME and a node file (rnx node add NAME FILE.rnx.yml), or NAME and --socket "
                         "PATH; see 'rnx node add --help'");
    const char *name = argv[optind];
    jerr e = {0};
    if (nodes_name_check(name, &e) < 0)
        return rnx_usage("node add: %s", e.msg);
    if (socket) {
        if (!*socket || socket[0] != '/')
            return rnx_usage("node add: --socket: '%s' is not an absolute path (joblet's socket, e.g. %s)", socket,
                             RNX_DEFAULT_SOCKET);
        if (socket_path_ok(socket, "--socket", false) != RNX_OK)
            return RNX_USAGE;
        r.ent.socket = xstrdup(socket);
    } else {
        r.file = argv[optind + 1];
        int fd = open(r.file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
            rc = rnx_fail("node add: %s: %s", r.file, strerror(errno));
            if (fd >= 0)
                close(fd);
            return rc;
        }
        if (!S_ISREG(st.st_mode) || st.st_size > NODES_FILE_MAX) {
            close(fd);
            return rnx_fail("node add: %s: not a node file (%s)", r.file,
                            S_ISREG(st.st_mode) ? "larger than 4 MiB" : "not a regular file");
        }
        char *text = xmalloc((size_t)st.st_size + 1);
        size_t len = 0;
        ssize_t n;
        while (len < (size_t)st.st_size && ((n = read(fd, text + len, (size_t)st.st_size - len)) > 0 ||
                                            (n < 0 && errno == EINTR)))
            len += n > 0 ? (size_t)n : 0;
        close(fd);
        text[len] = 0;
        int pr = nodes_entry_parse(text, len, &r.ent, &e);
        explicit_bzero(text, len);
        free(text);
        if (pr < 0)
            return rnx_fail("node add: %s: %s", r.file, e.msg);
        /* GnuTLS reads them as a connection will: the CA, the certificate, the key and that the
         * key is the certificate's */
        conn_tls_peer peer = {name, r.ent.address, r.ent.host, r.ent.port, r.ent.ca, r.ent.cert, r.ent.key};
        conn_tls_creds *cr = conn_tls_creds_new(&peer, &e);
        if (!cr) {
            nodes_entry_free(&r.ent);
            return rnx_fail("node add: %s: %s", r.file, e.msg);
        }
        conn_tls_creds_free(cr);
        conn_tls_cert_info info;
        if (conn_tls_cert_info_of(r.ent.cert, &info, &e) == 0 && info.not_after > 0 && info.not_after < time(NULL)) {
            char exp[80];
            expiry_text(info.not_after, exp, sizeof exp);
            print_textf(stderr, "rnx: warning: the certificate in %s expired at %s; the node will refuse it\n", r.file,
                        exp);
        }
        if (st.st_mode & 077)
            print_textf(stderr, "rnx: note: %s holds your private key and others may read it; rnx keeps its own "
                                "copy, so you may delete it\n", r.file);
    }
    r.ent.name = xstrdup(name);
    char where[300];
    if (r.ent.socket)
        snprintf(where, sizeof where, "unix:%s", r.ent.socket);
    else
        snprintf(where, sizeof where, "%s, as %s (%s)", r.ent.address, r.ent.user, r.ent.role);
    rc = conf_update(add_change, &r);
    nodes_entry_free(&r.ent);
    if (rc == RNX_OK)
        print_textf(stdout, "node %s added: %s; use it with 'rnx --node %s ...', or 'rnx node use %s' to make it "
                            "the default\n", name, where, name, name);
    return rc;
}

static int node_list(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
    bool force = false;
    const char *socket = NULL;
    int rc = sub_flags(ctx, argc, argv, "rnx node list", list_help, opts, &force, &socket);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if (optind < argc)
        return rnx_usage("node list: takes no arguments, got '%s'", argv[optind]);
    jerr e = {0};
    if (load(&e) < 0)
        return rnx_fail("%s", e.msg);
    const char *src, *local = local_socket(&src);
    const char *current = loaded.current ? loaded.current : NODES_LOCAL;
    if (ctx->json) {
        json_t *arr = json_array();
        json_array_append_new(arr, json_pack("{s:s, s:s, s:b}", "name", NODES_LOCAL, "socket", local, "current",
                                             !strcmp(current, NODES_LOCAL)));
        for (size_t i = 0; i < loaded.n; i++) {
            const nodes_entry *n = &loaded.v[i];
            json_t *o = n->socket ? json_pack("{s:s, s:s}", "name", n->name, "socket", n->socket)
                                  : json_pack("{s:s, s:s, s:s, s:s}", "name", n->name, "address", n->address, "user",
                                              n->user, "role", n->role);
            json_object_set_new(o, "current", json_boolean(!strcmp(current, n->name)));
            json_array_append_new(arr, o);
        }
        print_json(arr);
        json_decref(arr);
        return RNX_OK;
    }
    static const char *const headers[] = {"CURRENT", "NAME", "ADDRESS", "USER", "ROLE"};
    table *t = table_new(ARRAY_LEN(headers), headers);
    char addr[PATH_MAX + 8];
    snprintf(addr, sizeof addr, "unix:%s", local);
    const char *row[] = {!strcmp(current, NODES_LOCAL) ? "*" : "", NODES_LOCAL, addr, "-", "-"};
    table_add(t, row);
    for (size_t i = 0; i < loaded.n; i++) {
        const nodes_entry *n = &loaded.v[i];
        if (n->socket)
            snprintf(addr, sizeof addr, "unix:%s", n->socket);
        else
            snprintf(addr, sizeof addr, "%s", n->address);
        const char *cells[] = {!strcmp(current, n->name) ? "*" : "", n->name, addr, n->user ? n->user : "-",
                               n->role ? n->role : "-"};
        table_add(t, cells);
    }
    table_print(t, stdout);
    table_free(t);
    return RNX_OK;
}

static int use_change(nodes_conf *conf, const char *path, void *ud)
{
    const char *name = ud;
    if (!strcmp(name, NODES_LOCAL)) {
        free(conf->current);
        conf->current = NULL;
        return RNX_OK;
    }
    if (!nodes_conf_find(conf, name)) {
        const char **names = xcalloc(conf->n + 1, sizeof *names);
        for (size_t i = 0; i < conf->n; i++)
            names[i] = conf->v[i].name;
        const char *best = suggest_closest(name, names, conf->n);
        int rc = best ? rnx_usage("node use: no node '%s' in %s; did you mean '%s'?", name, path, best)
                      : rnx_usage("node use: no node '%s' in %s; see 'rnx node list'", name, path);
        free(names);
        return rc;
    }
    free(conf->current);
    conf->current = xstrdup(name);
    return RNX_OK;
}

static int node_use(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {0}};
    bool force = false;
    const char *socket = NULL;
    int rc = sub_flags(ctx, argc, argv, "rnx node use", use_help, opts, &force, &socket);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if (argc - optind != 1)
        return rnx_usage("node use: want one NAME (or 'local'); usage: rnx node use NAME|local");
    const char *name = argv[optind];
    rc = conf_update(use_change, (void *)name);
    if (rc != RNX_OK)
        return rc;
    if (!strcmp(name, NODES_LOCAL))
        print_textf(stdout, "the local socket is the default again\n");
    else
        print_textf(stdout, "node %s is the default\n", name);
    const char *env = getenv("RNX_NODE");
    if (env && *env)
        print_textf(stderr, "rnx: note: RNX_NODE=%s is set and decides over the default\n", env);
    return RNX_OK;
}

typedef struct remove_req {
    const char *name;
    bool was_default;
} remove_req;

static int remove_change(nodes_conf *conf, const char *path, void *ud)
{
    remove_req *r = ud;
    r->was_default = conf->current && !strcmp(conf->current, r->name);
    keeper_end(nodes_conf_find(conf, r->name));
    if (!nodes_conf_remove(conf, r->name))
        return rnx_fail("node remove: no node '%s' in %s", r->name, path);
    return RNX_OK;
}

static int node_remove(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {0}};
    bool force = false;
    const char *socket = NULL;
    int rc = sub_flags(ctx, argc, argv, "rnx node remove", remove_help, opts, &force, &socket);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if (argc - optind != 1)
        return rnx_usage("node remove: want one NAME; usage: rnx node remove NAME");
    remove_req r = {argv[optind], false};
    if (!strcmp(r.name, NODES_LOCAL))
        return rnx_usage("node remove: 'local' is the local socket, not a node of nodes.yml");
    rc = conf_update(remove_change, &r);
    if (rc == RNX_OK)
        print_textf(stdout, "node %s removed%s\n", r.name,
                    r.was_default ? "; it was the default: the local socket is the default again" : "");
    return rc;
}

/* A certificate's lines for show (text) or object (json). */
static json_t *cert_json(const char *pem, const char *what, bool text)
{
    conn_tls_cert_info info;
    jerr e = {0};
    if (conn_tls_cert_info_of(pem, &info, &e) < 0) {
        if (text)
            print_textf(stdout, "%-9s (cannot be read: %s)\n", what, e.msg);
        return json_pack("{s:s}", "error", e.msg);
    }
    char exp[96], from[96];
    expiry_text(info.not_after, exp, sizeof exp);
    expiry_text(info.not_before, from, sizeof from);
    if (text && !strcmp(what, "cert:")) {
        print_textf(stdout, "%-9s %s\n", what, info.subject);
        print_textf(stdout, "%-9s %s\n", "serial:", info.serial);
        print_textf(stdout, "%-9s %s\n", "expires:", exp);
        print_textf(stdout, "%-9s %s\n", "issuer:", info.issuer);
    } else if (text) {
        print_textf(stdout, "%-9s %s", what, info.subject);
        if (info.count > 1)
            print_textf(stdout, " (and %zu more)", info.count - 1);
        print_textf(stdout, "\n");
    }
    char nb[32] = "", na[32] = "";
    time_t b = (time_t)info.not_before, a = (time_t)info.not_after;
    struct tm tm;
    if (gmtime_r(&b, &tm))
        strftime(nb, sizeof nb, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gmtime_r(&a, &tm))
        strftime(na, sizeof na, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "subject", info.subject, "issuer", info.issuer, "serial",
                     info.serial, "not_before", nb, "not_after", na, "certificates", (json_int_t)info.count);
}

/* Whether rnx keeps a connection to node n, and for how long after a command. */
static void keeper_show(const nodes_entry *n, json_t *o, bool text)
{
    conn_tls_peer p = peer_of(n);
    unsigned persist = n->has_persist ? n->persist_s : CONN_AGENT_PERSIST_DEFAULT;
    const char *env = getenv("RNX_PERSIST");
    if (env && *env) {
        jerr e = {0};
        nodes_persist_parse("RNX_PERSIST", env, &persist, &e);
    }
    pid_t pid = conn_agent_pid(&p);
    char dur[32];
    if (persist % 3600 == 0)
        snprintf(dur, sizeof dur, "%uh", persist / 3600);
    else if (persist % 60 == 0)
        snprintf(dur, sizeof dur, "%um", persist / 60);
    else
        snprintf(dur, sizeof dur, "%us", persist);
    if (text && pid > 0)
        print_textf(stdout, "%-9s by rnx (pid %d), until %s after the last command%s\n", "kept:", (int)pid, dur,
                    persist ? "" : " (persist is 0 now: it is the keeper of before)");
    else if (text && persist)
        print_textf(stdout, "%-9s no keeper now; the next command starts one, for %s after the last command\n",
                    "kept:", dur);
    else if (text)
        print_textf(stdout, "%-9s never (persist: 0): each command makes its own TLS connection\n", "kept:");
    json_object_set_new(o, "keeper", json_pack("{s:o, s:I}", "pid", pid > 0 ? json_integer(pid) : json_null(),
                                               "persist_s", (json_int_t)persist));
}

static int node_disconnect(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"all", no_argument, NULL, 'a'}, {"help", no_argument, NULL, 'h'}, {0}};
    bool all = false;
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, "rnx node disconnect")) != -1) {
        if (c == 'h') {
            fputs(disconnect_help, stdout);
            return RNX_OK;
        }
        if (c != 'a')
            return RNX_USAGE;
        all = true;
    }
    if (argc - optind > 1 || (all && argc - optind > 0))
        return rnx_usage("node disconnect: want one NAME, or --all; usage: rnx node disconnect [NAME | --all]");
    jerr e = {0};
    if (load(&e) < 0)
        return rnx_fail("%s", e.msg);
    const char *why = "NAME";
    const char *name = all ? NULL : optind < argc ? argv[optind] : chosen(ctx, &why);
    if (name && !strcmp(name, NODES_LOCAL))
        return rnx_usage("node disconnect: %s: 'local' is the local socket: rnx keeps no connection to it", why);
    const nodes_entry *one = name ? nodes_conf_find(&loaded, name) : NULL;
    if (name && !one)
        return rnx_usage("node disconnect: %s: no node '%s' in %s; see 'rnx node list'", why, name, loaded_path);
    for (size_t i = 0; i < loaded.n; i++) {
        const nodes_entry *n = &loaded.v[i];
        if ((one && n != one) || n->socket)
            continue;
        conn_tls_peer p = peer_of(n);
        pid_t pid = conn_agent_stop(&p);
        if (pid > 0)
            print_textf(stdout, "node %s: its keeper (pid %d) has ended\n", n->name, (int)pid);
        else if (one)
            print_textf(stdout, "node %s: rnx keeps no connection to it now\n", n->name);
    }
    return RNX_OK;
}

static int node_show(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
    bool force = false;
    const char *socket = NULL;
    int rc = sub_flags(ctx, argc, argv, "rnx node show", show_help, opts, &force, &socket);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if (argc - optind > 1)
        return rnx_usage("node show: want at most one NAME; usage: rnx node show [NAME]");
    jerr e = {0};
    if (load(&e) < 0)
        return rnx_fail("%s", e.msg);
    const char *why = "NAME";
    const char *name = optind < argc ? argv[optind] : chosen(ctx, &why);
    const char *current = loaded.current ? loaded.current : NODES_LOCAL;
    bool is_default = !strcmp(name, current);
    if (!strcmp(name, NODES_LOCAL)) {
        const char *src, *path = ctx->socket_flag ? ctx->socket_flag : local_socket(&src);
        if (ctx->json) {
            json_t *o = json_pack("{s:s, s:s, s:b}", "name", NODES_LOCAL, "socket", path, "current", is_default);
            print_json(o);
            json_decref(o);
        } else {
            print_textf(stdout, "%-9s %s%s\n", "node:", NODES_LOCAL, is_default ? " (the default)" : "");
            print_textf(stdout, "%-9s %s\n", "socket:", path);
        }
        return RNX_OK;
    }
    const nodes_entry *n = nodes_conf_find(&loaded, name);
    if (!n)
        return rnx_usage("node show: %s: no node '%s' in %s; see 'rnx node list'", why, name, loaded_path);
    json_t *o = n->socket ? json_pack("{s:s, s:s}", "name", n->name, "socket", n->socket)
                          : json_pack("{s:s, s:s, s:s, s:s}", "name", n->name, "address", n->address, "user", n->user,
                                      "role", n->role);
    json_object_set_new(o, "current", json_boolean(is_default));
    if (!ctx->json) {
        print_textf(stdout, "%-9s %s%s\n", "node:", n->name, is_default ? " (the default)" : "");
        if (n->socket) {
            print_textf(stdout, "%-9s %s\n", "socket:", n->socket);
        } else {
            print_textf(stdout, "%-9s %s\n", "address:", n->address);
            print_textf(stdout, "%-9s %s\n", "user:", n->user);
            print_textf(stdout, "%-9s %s\n", "role:", n->role);
        }
    }
    if (!n->socket) {
        json_object_set_new(o, "cert", cert_json(n->cert, "cert:", !ctx->json));
        json_object_set_new(o, "ca", cert_json(n->ca, "ca:", !ctx->json));
        keeper_show(n, o, !ctx->json);
    }
    if (ctx->json)
        print_json(o);
    else
        print_textf(stdout, "%-9s %s\n", "file:", loaded_path);
    json_decref(o);
    return RNX_OK;
}

int cmd_node(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(rnx_ctx *, int, char **);
    } cmds[] = {{"add", node_add}, {"list", node_list}, {"use", node_use}, {"show", node_show}, {"remove", node_remove},
                 {"disconnect", node_disconnect}};
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {0}};
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "+h", opts, "rnx node")) != -1) {
        if (c != 'h')
            return RNX_USAGE;
        fputs(node_help, stdout);
        return RNX_OK;
    }
    if (optind >= argc)
        return rnx_usage("node: missing command (add, list, use, show, remove, disconnect); see 'rnx node --help'");
    const char *name = argv[optind];
    for (size_t i = 0; i < ARRAY_LEN(cmds); i++)
        if (!strcmp(name, cmds[i].name))
            return cmds[i].fn(ctx, argc - optind, argv + optind);
    if (!strcmp(name, "help")) {
        fputs(node_help, stdout);
        return RNX_OK;
    }
    if (!strcmp(name, "keep"))   /* the keeper's own process (conn_agent.h): not a command for people */
        return conn_agent_main(argc - optind, argv + optind);
    static const char *const names[] = {"add", "list", "use", "show", "remove", "disconnect", "help"};
    return rnx_unknown_command(name, "rnx node", names, ARRAY_LEN(names));
}
