/* The "rnx runtime" commands (docs/runtimes.md): build, list, info, remove, test, import,
 * export, builds, log. A build or import is followed through its log: a progress bar on a
 * terminal, the log's lines otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/recipe.h"
#include "../common/util.h"
#include "cli.h"
#include "client.h"
#include "cmd_job.h"
#include "cmd_runtime.h"
#include "print.h"

static const char runtime_help[] =
    "Usage: rnx runtime <command> [flags]\n"
    "\n"
    "A runtime is a prepared root filesystem (Debian packages, built once) that a job runs in\n"
    "with --runtime=NAME instead of the host's /usr, /etc, /bin and /lib (docs/runtimes.md).\n"
    "\n"
    "Commands:\n"
    "  build [--replace] [--fresh] [--verbose] RECIPE.yml\n"
    "                        admins: build a runtime from a recipe (runtimes/*.yml); a recipe\n"
    "                        built before comes from the cache at once. --replace: replace a\n"
    "                        runtime of that name built from another recipe; --fresh: from the\n"
    "                        mirror even when installed or cached (newer packages)\n"
    "  list                  the installed runtimes\n"
    "  info NAME             one runtime: what it provides, its recipe, size, the jobs using it\n"
    "  remove NAME           admins: remove a runtime no job uses\n"
    "  test NAME             run the runtime's test command as a job and report its result\n"
    "  import [--replace] FILE.tar.zst\n"
    "                        admins: install a runtime exported elsewhere, checked against its\n"
    "                        manifest's hashes\n"
    "  export NAME FILE.tar.zst|-\n"
    "                        write a runtime's archive (from the build cache)\n"
    "  builds                the recent builds and imports\n"
    "  log BUILD             a build's log (followed while it runs)\n"
    "\n"
    "--json prints the API's objects (docs/api.md, \"Runtimes\"). Ctrl-C while a build is shown\n"
    "stops showing it, not the build.\n";

static rnx_client *client(const rnx_ctx *ctx) { return client_new(&ctx->target); }

static int fail(const jerr *e) { return rnx_fail("%s", e->msg); }

/* Options common to the subcommands: --json, --help, and the ones given in `extra`. */
enum { O_REPLACE = 300, O_VERBOSE, O_FOLLOW, O_NO_FOLLOW, O_FRESH };
typedef struct flags {
    bool replace, verbose, follow_set, follow, fresh;
} flags;

#define HELP_SHOWN (-100)

static int parse(rnx_ctx *ctx, int argc, char **argv, const char *cmd, flags *f)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},          {"help", no_argument, NULL, 'h'},
        {"replace", no_argument, NULL, O_REPLACE}, {"verbose", no_argument, NULL, O_VERBOSE},
        {"follow", no_argument, NULL, O_FOLLOW},   {"no-follow", no_argument, NULL, O_NO_FOLLOW},
        {"fresh", no_argument, NULL, O_FRESH},
        {0},
    };
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "hv", opts, cmd)) != -1) {
        switch (c) {
        case 'j': ctx->json = true; break;
        case 'h': fputs(runtime_help, stdout); return HELP_SHOWN;
        case O_REPLACE: f->replace = true; break;
        case O_FRESH: f->fresh = true; break;
        case 'v':
        case O_VERBOSE: f->verbose = true; break;
        case O_FOLLOW: f->follow_set = f->follow = true; break;
        case O_NO_FOLLOW: f->follow_set = true; f->follow = false; break;
        default: return RNX_USAGE;
        }
    }
    return 0;
}

/* Exactly n operands after the flags. */
static int operands(int argc, char **argv, int n, const char *usage)
{
    if (argc - optind != n)
        return rnx_usage("%s; usage: %s", argc - optind < n ? "missing operand" : "too many operands", usage);
    /* "" would be sent as GET /v1/runtimes/, answered "no route" */
    for (int i = optind; i < argc; i++)
        if (!*argv[i])
            return rnx_usage("operand %d is empty; usage: %s", i - optind + 1, usage);
    return 0;
}

static char *escaped(rnx_client *c, const char *prefix, const char *name, const char *suffix)
{
    char *esc = client_escape(c, name), *p;
    if (asprintf(&p, "%s%s%s", prefix, esc, suffix) < 0)
        abort();
    free(esc);
    return p;
}

/* ---- the progress bar --------------------------------------------------------------------- */

typedef struct watcher {
    bool tty;                 /* stderr is a terminal: draw the bar */
    bool verbose;             /* print the log's lines even on a terminal */
    bool raw;                 /* --json: records as they come */
    bool drawn;               /* a bar is on the screen */
    json_t *end;
    char *tail[20];           /* the last lines, shown when the build fails on a terminal */
    size_t ntail;
    char bad[160];
} watcher;

static int term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 80;
}

static void bar_clear(watcher *w)
{
    if (w->drawn) {
        fputs("\r\033[K", stderr);
        w->drawn = false;
    }
}

static void bar_draw(watcher *w, const char *label, int percent)
{
    int width = 30;
    char cells[64];
    int full = percent * width / 100;
    for (int i = 0; i < width; i++)
        cells[i] = i < full ? '#' : '.';
    cells[width] = 0;
    char line[512], *shown = text_escape(label);
    snprintf(line, sizeof line, "[%s] %3d%%  %s", cells, percent, shown); /* escaped before it is cut */
    free(shown);
    int max = term_width() - 1;
    if ((int)strlen(line) > max)
        line[max] = 0;
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    w->drawn = true;
}

static void keep_tail(watcher *w, const char *line)
{
    if (w->ntail == sizeof w->tail / sizeof *w->tail) {
        free(w->tail[0]);
        memmove(w->tail, w->tail + 1, (w->ntail - 1) * sizeof *w->tail);
        w->ntail--;
    }
    w->tail[w->ntail++] = xstrdup(line);
}

static int on_build_line(const char *text, size_t len, void *ud)
{
    watcher *w = ud;
    if (w->raw) {
        fwrite(text, 1, len, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    json_error_t je;
    json_t *rec = json_loadb(text, len, 0, &je);
    if (!json_is_object(rec)) {
        snprintf(w->bad, sizeof w->bad, "joblet sent a log record that is not a JSON object: %.60s", text);
        json_decref(rec);
        return -1;
    }
    if (json_is_true(json_object_get(rec, "end"))) {
        if (!w->end)
            w->end = json_incref(rec);
        json_decref(rec);
        return 0;
    }
    const char *line = jstr(rec, "line"), *phase = jstr(rec, "phase");
    int64_t pct = 0;
    jint(rec, "percent", &pct);
    if (!w->raw && line) {
        keep_tail(w, line);
        if (!w->tty || w->verbose) {
            bar_clear(w);
            print_textf(stdout, "%s\n", line);
            fflush(stdout);
        }
        if (w->tty)
            bar_draw(w, phase ? phase : "", (int)pct);
    }
    json_decref(rec);
    return 0;
}

/* Follows build `id` (or import: what) until it ends; 0 when it succeeded. */
static int watch_build(const rnx_ctx *ctx, rnx_client *c, int64_t id, bool verbose, const char *what)
{
    watcher w = {.tty = isatty(STDERR_FILENO) && !ctx->json, .verbose = verbose, .raw = ctx->json};
    char path[96];
    snprintf(path, sizeof path, "/v1/runtime-builds/%lld/log?follow=1", (long long)id);
    jerr e = {0};
    int r = client_stream(c, path, on_build_line, &w, &e);
    bar_clear(&w);
    int rc = RNX_OK;
    if (r < 0) {
        if (w.bad[0])
            rc = rnx_fail("%s", w.bad);
        else
            rc = rnx_fail("%s while following build %lld; it goes on: rnx runtime log %lld", e.msg, (long long)id,
                          (long long)id);
    } else if (!w.end) {
        rc = rnx_fail("the log of build %lld ended before the build did; see rnx runtime builds", (long long)id);
    } else {
        const char *state = jstr(w.end, "state"), *err = jstr(w.end, "error"), *name = jstr(w.end, "name");
        if (!state || strcmp(state, "succeeded")) {
            if (w.tty && !w.verbose && !ctx->json) {
                print_textf(stderr, "The last lines of its log (rnx runtime log %lld has all):\n", (long long)id);
                for (size_t i = 0; i < w.ntail; i++)
                    print_textf(stderr, "  %s\n", w.tail[i]);
            }
            rc = rnx_fail("%s %lld%s%s failed: %s", what, (long long)id, name ? " of " : "", name ? name : "",
                          err ? err : "no reason given");
        }
    }
    for (size_t i = 0; i < w.ntail; i++)
        free(w.tail[i]);
    json_decref(w.end);
    return rc;
}

/* One line on a runtime: "python-3.11 1: 201.3 MB, python 3.11.2". */
static void summary(json_t *rt, const char *verb)
{
    char size[32];
    int64_t bytes = 0;
    jint(rt, "size_bytes", &bytes);
    fmt_bytes((uint64_t)bytes, size, sizeof size);
    json_t *prov = json_object_get(rt, "provides");
    print_textf(stdout, "%s %s %s: %s", jstr(rt, "name") ? jstr(rt, "name") : "?",
                jstr(rt, "version") ? jstr(rt, "version") : "", verb, size);
    for (size_t i = 0; i < json_array_size(prov); i++)
        print_textf(stdout, "%s%s", i ? ", " : "; ", json_string_value(json_array_get(prov, i)));
    print_textf(stdout, "\n");
}

/* After a build or import: what is installed now. */
static int show_result(const rnx_ctx *ctx, rnx_client *c, int64_t id, const char *verb)
{
    json_t *b = NULL, *rt = NULL;
    jerr e = {0};
    char path[64];
    snprintf(path, sizeof path, "/v1/runtime-builds/%lld", (long long)id);
    if (client_request(c, "GET", path, NULL, &b, &e) < 0)
        return fail(&e);
    const char *name = jstr(b, "name");
    int64_t ms = 0;
    jint(b, "elapsed_ms", &ms);
    char *rpath = name ? escaped(c, "/v1/runtimes/", name, "") : NULL;
    int rc = RNX_OK;
    if (!rpath || client_request(c, "GET", rpath, NULL, &rt, &e) < 0) {
        rc = rpath ? fail(&e) : rnx_fail("build %lld has no runtime name", (long long)id);
    } else if (!ctx->json) {
        char how[96];
        snprintf(how, sizeof how, "%s in %.1f s%s", verb, (double)ms / 1000,
                 json_is_true(json_object_get(b, "from_cache")) ? " (from the cache)" : "");
        summary(rt, how);
    }
    free(rpath);
    json_decref(b);
    json_decref(rt);
    return rc;
}

/* ---- build -------------------------------------------------------------------------------- */

static int rt_build(rnx_ctx *ctx, int argc, char **argv)
{
    flags f = {0};
    int rc = parse(ctx, argc, argv, "rnx runtime build", &f);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if ((rc = operands(argc, argv, 1, "rnx runtime build [--replace] [--fresh] [--verbose] RECIPE.yml")))
        return rc;
    const char *file = argv[optind];
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        rc = rnx_fail("%s: %s", file, strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > RECIPE_MAX_BYTES) {
        close(fd);
        return rnx_fail("%s: %s", file, S_ISREG(st.st_mode) ? "a recipe is at most 65536 bytes" : "not a file");
    }
    char *text = xmalloc((size_t)st.st_size + 1);
    ssize_t n = read(fd, text, (size_t)st.st_size);
    close(fd);
    if (n != st.st_size) {
        free(text);
        return rnx_fail("%s: could not read it whole", file);
    }
    rnx_client *c = client(ctx);
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    char *path = escaped(c, "/v1/runtimes?source=", base, f.replace && f.fresh ? "&replace=1&fresh=1" : f.replace ? "&replace=1" : f.fresh ? "&fresh=1" : "");
    json_t *ans = NULL;
    jerr e = {0};
    if (client_request_raw(c, "POST", path, "application/yaml", text, (size_t)n, &ans, &e) < 0) {
        /* a refusal about the recipe names the file too */
        rc = e.http == 400 ? rnx_fail("%s: %s", file, e.msg) : fail(&e);
        goto out;
    }
    if (json_is_true(json_object_get(ans, "already_built"))) {
        if (ctx->json)
            print_json(ans);
        else
            summary(json_object_get(ans, "runtime"), "is built already from this recipe (nothing to do)");
        rc = RNX_OK;
        goto out;
    }
    int64_t id;
    json_t *b = json_object_get(ans, "build");
    if (!jint(b, "id", &id)) {
        rc = rnx_fail("joblet's answer has no build id");
        goto out;
    }
    if (isatty(STDERR_FILENO) && !ctx->json)
        print_textf(stderr, "building %s (build %lld); Ctrl-C stops watching, not the build\n",
                    jstr(b, "name") ? jstr(b, "name") : "?", (long long)id);
    rc = watch_build(ctx, c, id, f.verbose, "build");
    if (rc == RNX_OK)
        rc = show_result(ctx, c, id, "built");
out:
    json_decref(ans);
    free(path);
    free(text);
    client_free(c);
    return rc;
}

/* ---- import / export ---------------------------------------------------------------------- */

typedef struct xfer {
    const char *label;
    bool tty;
    int last;
} xfer;

static void on_xfer(uint64_t done, uint64_t total, void *ud)
{
    xfer *x = ud;
    if (!x->tty || !total)
        return;
    int pct = (int)(done * 100 / total);
    if (pct == x->last)
        return;
    x->last = pct;
    char label[128], d[32], t[32];
    fmt_bytes(done, d, sizeof d);
    fmt_bytes(total, t, sizeof t);
    snprintf(label, sizeof label, "%s %s of %s", x->label, d, t);
    watcher w = {0};
    bar_draw(&w, label, pct);
}

static int rt_import(rnx_ctx *ctx, int argc, char **argv)
{
    flags f = {0};
    int rc = parse(ctx, argc, argv, "rnx runtime import", &f);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if ((rc = operands(argc, argv, 1, "rnx runtime import [--replace] FILE.tar.zst")))
        return rc;
    const char *file = argv[optind];
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        rc = rnx_fail("%s: %s", file, fd < 0 || errno ? strerror(errno) : "not a file");
        if (fd >= 0)
            close(fd);
        return rc;
    }
    rnx_client *c = client(ctx);
    client_account_ready(c); /* (its role is decided before the archive is sent) */
    xfer x = {"uploading", isatty(STDERR_FILENO) && !ctx->json, -1};
    json_t *ans = NULL;
    jerr e = {0};
    int64_t id;
    if (client_post_file(c, f.replace ? "/v1/runtime-imports?replace=1" : "/v1/runtime-imports", "application/zstd", fd,
                      (uint64_t)st.st_size, on_xfer, &x, &ans, &e) < 0) {
        if (x.tty)
            fputs("\r\033[K", stderr);
        rc = fail(&e);
    } else if (!jint(json_object_get(ans, "build"), "id", &id)) {
        if (x.tty)
            fputs("\r\033[K", stderr);
        rc = rnx_fail("joblet's answer has no build id");
    } else {
        if (x.tty)
            fputs("\r\033[K", stderr);
        rc = watch_build(ctx, c, id, f.verbose, "import");
        if (rc == RNX_OK)
            rc = show_result(ctx, c, id, "imported");
    }
    close(fd);
    json_decref(ans);
    client_free(c);
    return rc;
}

static int rt_export(rnx_ctx *ctx, int argc, char **argv)
{
    flags f = {0};
    int rc = parse(ctx, argc, argv, "rnx runtime export", &f);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if ((rc = operands(argc, argv, 2, "rnx runtime export NAME FILE.tar.zst|-")))
        return rc;
    const char *name = argv[optind], *file = argv[optind + 1];
    bool to_stdout = !strcmp(file, "-");
    if (to_stdout && isatty(STDOUT_FILENO))
        return rnx_usage("rnx runtime export: not writing an archive to a terminal; give a file name");
    /* a directory as FILE would be found only at the rename, once the whole archive came */
    struct stat st;
    if (!to_stdout && stat(file, &st) == 0 && S_ISDIR(st.st_mode))
        return rnx_usage("rnx runtime export: %s is a directory; give the archive's file name (e.g. %s/%s.tar.zst)",
                         file, file, name);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.part", file);
    int fd = to_stdout ? STDOUT_FILENO : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) /* (FILE is the name the user knows; the .part is rnx's own) */
        return rnx_fail("%s: %s (rnx writes it as %s, renamed once complete)", file, strerror(errno), tmp);
    rnx_client *c = client(ctx);
    char *path = escaped(c, "/v1/runtimes/", name, "/export");
    xfer x = {"downloading", isatty(STDERR_FILENO), -1};
    jerr e = {0};
    if (client_download(c, path, fd, on_xfer, &x, &e) < 0) {
        rc = fail(&e);
        if (!to_stdout)
            unlink(tmp);
    } else if (!to_stdout && (fsync(fd) < 0 || rename(tmp, file) < 0)) {
        rc = rnx_fail("%s: %s", file, strerror(errno));
        unlink(tmp);
    }
    if (x.tty)
        fputs("\r\033[K", stderr);
    if (!to_stdout)
        close(fd);
    if (rc == RNX_OK && !to_stdout && !ctx->json)
        print_textf(stdout, "%s: runtime %s (rnx runtime import %s installs it on another machine)\n", file, name,
                    file);
    free(path);
    client_free(c);
    return rc;
}

/* ---- list, info, remove, test ------------------------------------------------------------- */

static int rt_list(rnx_ctx *ctx, int argc, char **argv)
{
    flags f = {0};
    int rc = parse(ctx, argc, argv, "rnx runtime list", &f);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if ((rc = operands(argc, argv, 0, "rnx runtime list")))
        return rc;
    rnx_client *c = client(ctx);
    json_t *ans = NULL;
    jerr e = {0};
    if (client_request(c, "GET", "/v1/runtimes", NULL, &ans, &e) < 0) {
        client_free(c);
        return fail(&e);
    }
    json_t *arr = json_object_get(ans, "runtimes");
    if (ctx->json) {
        print_json(arr);
    } else if (!json_array_size(arr)) {
        print_textf(stdout,
                    "No runtimes installed in %s; an admin builds one: rnx runtime build runtimes/python-3.11.yml\n",
                    jstr(ans, "dir") ? jstr(ans, "dir") : "runtimes.dir");
    } else {
        static const char *const heads[] = {"NAME", "VERSION", "SIZE", "BUILT", "JOBS", "PROVIDES"};
        table *t = table_new(6, heads);
        for (size_t i = 0; i < json_array_size(arr); i++) {
            json_t *r = json_array_get(arr, i);
            char size[32] = "-", built[40] = "-", jobs[16], name[96];
            int64_t bytes;
            if (jint(r, "size_bytes", &bytes))
                fmt_bytes((uint64_t)bytes, size, sizeof size);
            if (jstr(r, "built_at"))
                fmt_local_time(jstr(r, "built_at"), built, sizeof built);
            int64_t others = 0; /* (other users' jobs: counted, not named) */
            jint(r, "jobs_of_others", &others);
            snprintf(jobs, sizeof jobs, "%zu", json_array_size(json_object_get(r, "jobs")) + (size_t)others);
            snprintf(name, sizeof name, "%s%s", jstr(r, "name"), json_is_true(json_object_get(r, "default")) ? " (default)" : "");
            char prov[400] = "";
            json_t *p = json_object_get(r, "provides");
            for (size_t k = 0; k < json_array_size(p); k++)
                snprintf(prov + strlen(prov), sizeof prov - strlen(prov), "%s%s", k ? ", " : "",
                         json_string_value(json_array_get(p, k)));
            const char *err = jstr(r, "error");
            char *cell = cell_text(err ? err : prov, 80);
            const char *row[] = {name, jstr(r, "version"), size, built, jobs, cell};
            table_add(t, row);
            free(cell);
        }
        table_print(t, stdout);
        table_free(t);
    }
    json_decref(ans);
    client_free(c);
    return RNX_OK;
}

static void kv_line(const char *k, const char *v) { print_textf(stdout, "%-14s%s\n", k, v && *v ? v : "-"); }

static void print_list(const char *k, json_t *arr, const char *sep)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    for (size_t i = 0; i < json_array_size(arr); i++)
        print_textf(f, "%s%s", i ? sep : "", json_string_value(json_array_get(arr, i)));
    fclose(f);
    kv_line(k, s);
    free(s);
}

static int rt_info(rnx_ctx *ctx, int argc, char **argv)
{
    flags f = {0};
    int rc = parse(ctx, argc, argv, "rnx runtime info", &f);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if ((rc = operands(argc, argv, 1, "rnx runtime info NAME")))
        return rc;
    rnx_client *c = client(ctx);
    char *path = escaped(c, "/v1/runtimes/", argv[optind], "");
    json_t *r = NULL;
    jerr e = {0};
    if (client_request(c, "GET", path, NULL, &r, &e) < 0) {
        rc = fail(&e);
    } else if (ctx->json) {
        print_json(r);
    } else {
        char buf[512], size[32];
        int64_t v = 0, pk = 0;
        kv_line("Name:", jstr(r, "name"));
        kv_line("Version:", jstr(r, "version"));
        kv_line("Description:", jstr(r, "description"));
        print_list("Provides:", json_object_get(r, "provides"), ", ");
        jint(r, "size_bytes", &v);
        fmt_bytes((uint64_t)v, size, sizeof size);
        kv_line("Size:", size);
        kv_line("Architecture:", jstr(r, "architecture"));
        snprintf(buf, sizeof buf, "%s from %s", jstr(r, "suite") ? jstr(r, "suite") : "?",
                 jstr(r, "mirror") ? jstr(r, "mirror") : "?");
        kv_line("Debian:", buf);
        kv_line("Builder:", jstr(r, "builder"));
        jint(r, "installed_packages", &pk);
        char *pkgs = NULL;
        size_t plen = 0;
        FILE *m = open_memstream(&pkgs, &plen);
        json_t *pl = json_object_get(r, "packages");
        for (size_t i = 0; i < json_array_size(pl); i++)
            print_textf(m, "%s%s", i ? ", " : "", json_string_value(json_array_get(pl, i)));
        print_textf(m, " (%lld installed in all)", (long long)pk);
        fclose(m);
        kv_line("Packages:", pkgs);
        free(pkgs);
        if (jstr(r, "built_at"))
            fmt_local_time(jstr(r, "built_at"), buf, sizeof buf);
        kv_line("Built:", jstr(r, "built_at") ? buf : NULL);
        snprintf(buf, sizeof buf, "%s (sha256 %s)", jstr(r, "recipe") ? jstr(r, "recipe") : "?",
                 jstr(r, "recipe_sha256") ? jstr(r, "recipe_sha256") : "?");
        kv_line("Recipe:", buf);
        kv_line("Tree sha256:", jstr(r, "rootfs_sha256"));
        json_t *env = json_object_get(r, "env");
        const char *k;
        json_t *val;
        bool first = true;
        json_object_foreach(env, k, val)
        {
            snprintf(buf, sizeof buf, "%s=%s", k, json_string_value(val));
            kv_line(first ? "Environment:" : "", buf);
            first = false;
        }
        if (first)
            kv_line("Environment:", NULL);
        kv_line("Test:", jstr(r, "test"));
        kv_line("Path:", jstr(r, "path"));
        kv_line("Default:", json_is_true(json_object_get(r, "default")) ? "yes (runtimes.default)" : "no");
        json_t *jobs = json_object_get(r, "jobs");
        int64_t others = 0;
        jint(r, "jobs_of_others", &others);
        if (json_array_size(jobs))
            print_list("Jobs:", jobs, ", ");
        else if (!others)
            kv_line("Jobs:", "none");
        if (others) {
            char n[64];
            snprintf(n, sizeof n, "%lld of other users", (long long)others);
            kv_line(json_array_size(jobs) ? "" : "Jobs:", n);
        }
    }
    json_decref(r);
    free(path);
    client_free(c);
    return rc;
}

static int rt_remove(rnx_ctx *ctx, int argc, char **argv)
{
    flags f = {0};
    int rc = parse(ctx, argc, argv, "rnx runtime remove", &f);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if ((rc = operands(argc, argv, 1, "rnx runtime remove NAME")))
        return rc;
    rnx_client *c = client(ctx);
    char *path = escaped(c, "/v1/runtimes/", argv[optind], "");
    json_t *r = NULL;
    jerr e = {0};
    if (client_request(c, "DELETE", path, NULL, &r, &e) < 0)
        rc = fail(&e);
    else if (ctx->json)
        print_json(r);
    else
        print_textf(stdout, "removed runtime %s\n", argv[optind]);
    json_decref(r);
    free(path);
    client_free(c);
    return rc;
}

static int rt_test(rnx_ctx *ctx, int argc, char **argv)
{
    flags f = {0};
    int rc = parse(ctx, argc, argv, "rnx runtime test", &f);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if ((rc = operands(argc, argv, 1, "rnx runtime test NAME")))
        return rc;
    rnx_client *c = client(ctx);
    char *path = escaped(c, "/v1/runtimes/", argv[optind], "/test");
    json_t *job = NULL;
    jerr e = {0};
    if (client_request(c, "POST", path, NULL, &job, &e) < 0) {
        rc = fail(&e);
    } else if (!jstr(job, "id")) {
        rc = rnx_fail("joblet's answer has no job id");
    } else {
        const char *id = jstr(job, "id");
        if (!ctx->json)
            print_textf(stderr, "rnx: testing runtime %s in job %.8s\n", argv[optind], id);
        rc = cmd_job_follow(ctx, c, id);
        if (!ctx->json)
            print_textf(stderr,
                        rc == 0 ? "rnx: runtime %s passed its test\n" : "rnx: runtime %s failed its test (exit %d)\n",
                        argv[optind], rc);
    }
    json_decref(job);
    free(path);
    client_free(c);
    return rc;
}

/* ---- builds, log -------------------------------------------------------------------------- */

static int rt_builds(rnx_ctx *ctx, int argc, char **argv)
{
    flags f = {0};
    int rc = parse(ctx, argc, argv, "rnx runtime builds", &f);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if ((rc = operands(argc, argv, 0, "rnx runtime builds")))
        return rc;
    rnx_client *c = client(ctx);
    json_t *ans = NULL;
    jerr e = {0};
    if (client_request(c, "GET", "/v1/runtime-builds", NULL, &ans, &e) < 0) {
        client_free(c);
        return fail(&e);
    }
    json_t *arr = json_object_get(ans, "builds");
    if (ctx->json) {
        print_json(arr);
    } else if (!json_array_size(arr)) {
        print_textf(stdout, "No runtime builds since joblet started.\n");
    } else {
        static const char *const heads[] = {"ID", "KIND", "NAME", "STATE", "PROGRESS", "STARTED", "TOOK", "ERROR"};
        table *t = table_new(8, heads);
        for (size_t i = 0; i < json_array_size(arr); i++) {
            json_t *b = json_array_get(arr, i);
            char id[24], prog[96], started[40] = "-", took[32];
            int64_t v = 0, pct = 0, ms = 0;
            jint(b, "id", &v);
            jint(b, "percent", &pct);
            jint(b, "elapsed_ms", &ms);
            snprintf(id, sizeof id, "%lld", (long long)v);
            snprintf(prog, sizeof prog, "%lld%% %s%s", (long long)pct, jstr(b, "phase") ? jstr(b, "phase") : "",
                     json_is_true(json_object_get(b, "from_cache")) ? " (cache)" : "");
            if (jstr(b, "started_at"))
                fmt_local_time(jstr(b, "started_at"), started, sizeof started);
            fmt_elapsed_ms(ms, took, sizeof took);
            char *err = cell_text(jstr(b, "error") ? jstr(b, "error") : "", 60);
            const char *row[] = {id, jstr(b, "kind"), jstr(b, "name"), jstr(b, "state"), prog, started, took, err};
            table_add(t, row);
            free(err);
        }
        table_print(t, stdout);
        table_free(t);
    }
    json_decref(ans);
    client_free(c);
    return RNX_OK;
}

static int rt_log(rnx_ctx *ctx, int argc, char **argv)
{
    flags f = {0};
    int rc = parse(ctx, argc, argv, "rnx runtime log", &f);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if ((rc = operands(argc, argv, 1, "rnx runtime log [--no-follow] BUILD")))
        return rc;
    char *end;
    long long id = strtoll(argv[optind], &end, 10);
    if (*end || id <= 0)
        return rnx_usage("rnx runtime log: '%s' is not a build number (rnx runtime builds lists them)", argv[optind]);
    rnx_client *c = client(ctx);
    watcher w = {.raw = ctx->json};
    char path[96];
    snprintf(path, sizeof path, "/v1/runtime-builds/%lld/log%s", id, !f.follow_set || f.follow ? "?follow=1" : "");
    jerr e = {0};
    if (client_stream(c, path, on_build_line, &w, &e) < 0)
        rc = w.bad[0] ? rnx_fail("%s", w.bad) : fail(&e);
    else if (w.end && jstr(w.end, "error") && !ctx->json)
        rc = rnx_fail("build %lld failed: %s", id, jstr(w.end, "error"));
    for (size_t i = 0; i < w.ntail; i++)
        free(w.tail[i]);
    json_decref(w.end);
    client_free(c);
    return rc;
}

int cmd_runtime(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(rnx_ctx *, int, char **);
    } cmds[] = {
        {"build", rt_build},   {"list", rt_list},     {"info", rt_info},     {"remove", rt_remove},
        {"test", rt_test},     {"import", rt_import}, {"export", rt_export}, {"builds", rt_builds},
        {"log", rt_log},
    };
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(runtime_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? RNX_USAGE : RNX_OK;
    }
    for (size_t i = 0; i < ARRAY_LEN(cmds); i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].fn(ctx, argc - 1, argv + 1);
    const char *names[ARRAY_LEN(cmds) + 1];
    for (size_t i = 0; i < ARRAY_LEN(cmds); i++)
        names[i] = cmds[i].name;
    names[ARRAY_LEN(cmds)] = "help";
    return rnx_unknown_command(argv[1], "rnx runtime", names, ARRAY_LEN(names));
}
