/* joblet-runtime-build — builds, imports and removes runtimes for joblet (docs/runtimes.md).
 * joblet starts it as a child and watches it from its event loop (core/runtime_build.c); it
 * is the only program that runs mmdebstrap, tar and zstd for the daemon.
 *
 *   joblet-runtime-build build  --dir DIR --tool PATH --mirror URL [--cache-dir D --cache-keep N]
 *                               [--source NAME] [--fresh]
 *       DIR holds recipe.yml; makes DIR/rootfs and DIR/manifest.yml, from the cache when it
 *       has this recipe's archive (<D>/<recipe sha256>.tar.zst), else with the tool (mmdebstrap
 *       or debootstrap) from the mirror (always with --fresh), then runs the recipe's customize:
 *       scripts in the tree, and then stores the archive in the cache.
 *   joblet-runtime-build import --dir DIR [--cache-dir D --cache-keep N]
 *       the archive (tar.zst of manifest.yml, recipe.yml, rootfs/) on stdin, extracted into DIR
 *       and checked against its manifest: recipe.yml against recipe_sha256, rootfs/ against
 *       rootfs_sha256 (common/digest.h).
 *   joblet-runtime-build remove PATH...
 *       removes trees (a runtime that was removed or replaced, a failed build).
 *
 * build and import run in a sandbox of their own (exec/sandbox.h). Progress goes to stdout as
 * "joblet: ..." lines between the tool's own (core's progress table reads them); the result
 * goes to fd 3 as one line, "ok NAME" or "error WHY". The exit status is 0 or 1 as well, but
 * joblet reaps its children from a SIGCHLD handler too, so the line is what it relies on. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/digest.h"
#include "../common/err.h"
#include "../common/manifest.h"
#include "../common/recipe.h"
#include "../common/util.h"
#include "sandbox.h"

#define STATUS_FD 3

extern char **environ;

typedef struct opts {
    const char *dir, *tool, *mirror, *cache_dir, *source;
    const char *cache_shown;  /* the cache as the host names it (inside, it is /tmp/cache) */
    bool fresh;               /* from the mirror, not from the cache (which it then replaces) */
    unsigned cache_keep;
} opts;

static int64_t t0_ms;

/* The result line on fd 3; the exit status follows it. */
__attribute__((format(printf, 2, 3))) static int report(bool ok, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '\n')
            *p = ' ';
    fflush(stdout);
    dprintf(STATUS_FD, "%s %s\n", ok ? "ok" : "error", msg);
    return ok ? 0 : 1;
}

/* The tools' environment: nothing of joblet's own; proxies pass through. */
static void clean_env(void)
{
    static const char *const keep[] = {"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"};
    char *saved[ARRAY_LEN(keep)] = {0};
    for (size_t i = 0; i < ARRAY_LEN(keep); i++)
        if (getenv(keep[i]))
            saved[i] = xstrdup(getenv(keep[i]));
    clearenv();
    setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1);
    setenv("LC_ALL", "C.UTF-8", 1);
    setenv("HOME", "/root", 1);
    setenv("TMPDIR", "/tmp", 1);
    setenv("DEBIAN_FRONTEND", "noninteractive", 1);
    for (size_t i = 0; i < ARRAY_LEN(keep); i++)
        if (saved[i]) {
            setenv(keep[i], saved[i], 1);
            free(saved[i]);
        }
}

/* Runs argv inside the box; its output goes to the log. 0 when it exited 0. */
static int run(char *const argv[], int in_fd, int out_fd, const char *what, char *why, size_t len)
{
    jerr e = {0};
    int st = sandbox_run(argv, environ, in_fd, out_fd, &e);
    if (st < 0)
        snprintf(why, len, "%s", e.msg);
    else if (st == 127)
        snprintf(why, len, "%s could not be started (is it installed?)", what);
    else if (st > 128)
        snprintf(why, len, "%s was killed by signal %d", what, st - 128);
    else if (st != 0)
        snprintf(why, len, "%s failed (exit status %d); its messages are above", what, st);
    return st == 0 ? 0 : -1;
}

/* argv[0]'s output (to a file in the box's private /tmp, so no pipe can fill up), at most
 * cap bytes, NUL-terminated; NULL when it failed. */
static char *capture(char *const argv[], size_t cap, char *why, size_t len)
{
    char path[] = "/tmp/joblet-capture-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(why, len, "a file in /tmp: %s", strerror(errno));
        return NULL;
    }
    unlink(path);
    char *out = NULL;
    if (run(argv, -1, fd, argv[0], why, len) == 0) {
        out = xmalloc(cap + 1);
        ssize_t n = pread(fd, out, cap, 0);
        out[n > 0 ? n : 0] = 0;
    }
    close(fd);
    return out;
}

static char *join(char *const *items, size_t n, const char *sep)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(items[i]) + strlen(sep);
    char *s = xcalloc(1, len);
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(s, sep);
        strcat(s, items[i]);
    }
    return s;
}

typedef struct argv_b {
    char *v[128];
    size_t n;
} argv_b;

static void arg(argv_b *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(argv_b *a, const char *fmt, ...)
{
    if (a->n >= ARRAY_LEN(a->v) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&a->v[a->n], fmt, ap) < 0)
        abort();
    va_end(ap);
    a->v[++a->n] = NULL;
}

static void argv_free(argv_b *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    a->n = 0;
}

/* The tool's first line of --version: "mmdebstrap 1.3.5". */
static void tool_version(const char *tool, char *out, size_t len)
{
    char why[256];
    char *const argv[] = {(char *)tool, "--version", NULL};
    char *v = capture(argv, 256, why, sizeof why);
    const char *base = strrchr(tool, '/') ? strrchr(tool, '/') + 1 : tool;
    if (v && *v)
        snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
    else
        snprintf(out, len, "%s", base);
    if (!strchr(out, ' ') || strncmp(out, base, strlen(base))) { /* debootstrap prints only its version */
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%s %s", base, v && *v ? out : "");
        snprintf(out, len, "%s", tmp);
    }
    free(v);
}

/* The tool, from the mirror, into dir/rootfs. */
static int run_tool(const opts *o, const recipe *r, char *why, size_t len)
{
    argv_b a = {0};
    const char *base = strrchr(o->tool, '/') ? strrchr(o->tool, '/') + 1 : o->tool;
    char *comps = join(r->components, r->ncomponents, ","), *pkgs = join(r->packages, r->npackages, ",");
    arg(&a, "%s", o->tool);
    if (!strcmp(base, "debootstrap")) {
        for (size_t i = 0; i < r->npackages; i++)
            if (strchr(r->packages[i], '=')) {
                snprintf(why, len, "packages[%zu]: '%s': debootstrap cannot install a given version; install "
                         "mmdebstrap (apt-get install mmdebstrap) or leave the version out", i, r->packages[i]);
                free(comps), free(pkgs), argv_free(&a);
                return -1;
            }
        /* debootstrap's variants: minbase is the smallest it has; the others are its default */
        if (!strcmp(r->variant, "apt") || !strcmp(r->variant, "minbase") || !strcmp(r->variant, "essential"))
            arg(&a, "--variant=minbase");
        arg(&a, "--components=%s", comps);
        arg(&a, "--include=%s", pkgs);
    } else {
        arg(&a, "--verbose");
        arg(&a, "--mode=root");
        arg(&a, "--format=directory");
        arg(&a, "--variant=%s", r->variant);
        arg(&a, "--components=%s", comps);
        arg(&a, "--include=%s", pkgs);
        for (size_t i = 0; i < r->nexclude; i++)
            arg(&a, "--dpkgopt=path-exclude=%s", r->exclude[i]);
        if (r->nexclude) /* licences stay, as Debian asks */
            arg(&a, "--dpkgopt=path-include=/usr/share/doc/*/copyright");
        arg(&a, "--aptopt=Acquire::Retries \"3\"");
        arg(&a, "--aptopt=APT::Install-Recommends \"%s\"", r->recommends ? "true" : "false");
    }
    arg(&a, "%s", r->suite);
    arg(&a, "%s/rootfs", o->dir);
    arg(&a, "%s", o->mirror);
    int rc = run(a.v, -1, -1, base, why, len);
    free(comps), free(pkgs), argv_free(&a);
    return rc;
}

/* A tree the tool made without /etc/hosts (mmdebstrap makes none) gets Debian's default one:
 * what a chroot of it expects, and the file each job's own /etc/hosts is bound over (under
 * gVisor, which cannot lay a file into a read-only directory, the only way a job in the
 * runtime gets one; exec/mounts.c). Before customize:, which may change it. */
static int default_hosts(const opts *o, char *why, size_t len)
{
    static const char text[] = "127.0.0.1\tlocalhost\n"
                               "::1\t\tlocalhost ip6-localhost ip6-loopback\n"
                               "ff02::1\t\tip6-allnodes\n"
                               "ff02::2\t\tip6-allrouters\n";
    char path[1200];
    snprintf(path, sizeof path, "%s/rootfs/etc/hosts", o->dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST)
        return 0;
    ssize_t w = fd < 0 ? -1 : write(fd, text, sizeof text - 1);
    int err = errno;
    if (fd >= 0)
        close(fd);
    if (w != (ssize_t)sizeof text - 1) {
        snprintf(why, len, "cannot write the tree's /etc/hosts: %s", strerror(w < 0 ? err : EIO));
        return -1;
    }
    return 0;
}

/* The recipe's customize: scripts, in order, each as `sh -e` chrooted into the new tree (like
 * a Dockerfile's RUN), with the box's own /proc mounted there meanwhile (its PID namespace:
 * the build's processes only). Their output goes to the log; the first that fails fails the
 * build, named. Inside the box only: nothing here runs on the host's root. */
static int customize(const opts *o, const recipe *r, char *why, size_t len)
{
    if (!r->ncustomize)
        return 0;
    char rootfs[1200], proc[1300];
    snprintf(rootfs, sizeof rootfs, "%s/rootfs", o->dir);
    snprintf(proc, sizeof proc, "%s/proc", rootfs);
    if ((mkdir(proc, 0555) < 0 && errno != EEXIST) ||
        mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        snprintf(why, len, "customize: cannot mount /proc in the tree: %s", strerror(errno));
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < r->ncustomize && rc == 0; i++) {
        char name[32];
        snprintf(name, sizeof name, "customize[%zu]", i);
        printf("joblet: customizing the tree: %s of %zu\n", name, r->ncustomize);
        fflush(stdout);
        /* sh -e: a failing command ends the script; $0 is the field, so sh's own messages name it */
        char *const argv[] = {"chroot", rootfs, "/bin/sh", "-ec", r->customize[i], name, NULL};
        rc = run(argv, -1, -1, name, why, len);
    }
    if (umount2(proc, MNT_DETACH) < 0 && rc == 0) {
        snprintf(why, len, "customize: cannot unmount /proc from the tree: %s", strerror(errno));
        rc = -1;
    }
    return rc;
}

/* What dpkg says is installed in the tree: the count, the tree's architecture, and each
 * provides entry with its package's upstream version. */
static int read_packages(const opts *o, const recipe *r, manifest *m, char *why, size_t len)
{
    char admindir[1200];
    snprintf(admindir, sizeof admindir, "--admindir=%s/rootfs/var/lib/dpkg", o->dir);
    char *const argv[] = {"dpkg-query", admindir, "-W", "-f", "${db:Status-Abbrev}\t${Package}\t${Version}\t${Architecture}\n",
                          NULL};
    char *list = capture(argv, 8u << 20, why, len);
    if (!list)
        return -1;
    for (char *save = NULL, *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *f[4] = {0};
        int nf = 0;
        for (char *s2 = NULL, *t = strtok_r(line, "\t", &s2); t && nf < 4; t = strtok_r(NULL, "\t", &s2))
            f[nf++] = t;
        if (nf < 4 || strncmp(f[0], "ii", 2))
            continue;
        m->installed_packages++;
        if (!strcmp(f[1], "dpkg"))
            snprintf(m->architecture, sizeof m->architecture, "%s", f[3]);
        for (size_t i = 0; i < r->nprovides; i++)
            if (!strcmp(r->provides[i].package, f[1])) {
                char up[64], entry[256];
                recipe_upstream_version(f[2], up, sizeof up);
                snprintf(entry, sizeof entry, "%s %s%s%s", r->provides[i].label, up, r->provides[i].note ? " " : "",
                         r->provides[i].note ? r->provides[i].note : "");
                m->provides[i] = xstrdup(entry);
            }
    }
    free(list);
    for (size_t i = 0; i < r->nprovides; i++)
        if (!m->provides[i]) {
            snprintf(why, len, "provides.%s: the package '%s' is not installed in the tree; add it to packages",
                     r->provides[i].label, r->provides[i].package);
            return -1;
        }
    if (!m->installed_packages) {
        snprintf(why, len, "dpkg lists no installed package in %s/rootfs", o->dir);
        return -1;
    }
    return 0;
}

/* The archive's three parts into dir: from a file, or from stdin when path is NULL. */
static int extract(const char *path, const char *dir, char *why, size_t len)
{
    char *const argv[] = {"tar", "--extract", "--zstd", "--file", path ? (char *)path : "-", "--directory",
                          (char *)dir, "--numeric-owner", "--same-permissions", "--same-owner",
                          "manifest.yml", "recipe.yml", "rootfs", NULL};
    return run(argv, path ? -1 : 0, -1, "tar (extracting the archive)", why, len);
}

/* dir's manifest against what is there: the recipe's and the tree's hashes. On failure m is
 * left empty. */
static int check(const char *dir, manifest *m, char *why, size_t len);
static int verify(const char *dir, manifest *m, char *why, size_t len)
{
    int rc = check(dir, m, why, len);
    if (rc < 0)
        manifest_free(m);
    return rc;
}

static int check(const char *dir, manifest *m, char *why, size_t len)
{
    char path[1200], sum[DIGEST_HEX];
    jerr e = {0};
    snprintf(path, sizeof path, "%s/manifest.yml", dir);
    if (manifest_read(path, m, &e) < 0) {
        snprintf(why, len, "the archive's manifest: %s", e.msg);
        return -1;
    }
    snprintf(path, sizeof path, "%s/recipe.yml", dir);
    size_t rlen = 0;
    char *text = read_file(path, &rlen);
    recipe r;
    if (!text) {
        snprintf(why, len, "the archive has no recipe.yml");
        return -1;
    }
    digest_sha256_hex(text, rlen, sum);
    int rc = -1;
    if (strcmp(sum, m->recipe_sha256))
        snprintf(why, len, "recipe.yml does not match the manifest: its sha256 is %s, the manifest says %s", sum,
                 m->recipe_sha256[0] ? m->recipe_sha256 : "nothing");
    else if (recipe_parse(text, rlen, &r, &e) < 0)
        snprintf(why, len, "the archive's recipe.yml: %s", e.msg);
    else {
        if (strcmp(r.name, m->name))
            snprintf(why, len, "the manifest names '%s' but its recipe '%s'", m->name, r.name);
        else
            rc = 0;
        recipe_free(&r);
    }
    free(text);
    if (rc < 0)
        return -1;
    printf("joblet: verifying the tree against the manifest's rootfs_sha256\n");
    fflush(stdout);
    snprintf(path, sizeof path, "%s/rootfs", dir);
    digest_tree_info info;
    if (digest_tree(path, sum, &info, &e) < 0) {
        snprintf(why, len, "rootfs: %s", e.msg);
        return -1;
    }
    if (strcmp(sum, m->rootfs_sha256)) {
        snprintf(why, len, "rootfs/ does not match the manifest: the tree hashes to %s, the manifest says %s", sum,
                 m->rootfs_sha256[0] ? m->rootfs_sha256 : "nothing");
        return -1;
    }
    return 0;
}

static int by_mtime_desc(const void *a, const void *b)
{
    const struct { char name[80]; int64_t t; } *x = a, *y = b;
    return x->t < y->t ? 1 : x->t > y->t ? -1 : strcmp(x->name, y->name);
}

/* Keeps the newest `keep` archives of the cache. */
static void evict(const char *cache, unsigned keep)
{
    DIR *d = opendir(cache);
    if (!d)
        return;
    struct { char name[80]; int64_t t; } *e = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 4096) {
        size_t l = strlen(de->d_name);
        struct stat st;
        if (l != 64 + 8 || strcmp(de->d_name + 64, ".tar.zst") || fstatat(dirfd(d), de->d_name, &st, 0) < 0)
            continue;
        e = xrealloc(e, (n + 1) * sizeof *e);
        snprintf(e[n].name, sizeof e[n].name, "%s", de->d_name);
        e[n++].t = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
    if (n)
        qsort(e, n, sizeof *e, by_mtime_desc);
    for (size_t i = keep; i < n; i++) {
        printf("joblet: the cache keeps %u archives (runtimes.cache_keep): removing %s\n", keep, e[i].name);
        unlinkat(dirfd(d), e[i].name, 0);
    }
    closedir(d);
    free(e);
}

/* dir (manifest.yml, recipe.yml, rootfs) as cache/<sha>.tar.zst, written atomically. A cache
 * that cannot be written is worth a line in the log, not a failed build. */
static void cache_store(const opts *o, const char *sha)
{
    char tmp[1200], final[1200], why[512];
    snprintf(final, sizeof final, "%s/%s.tar.zst", o->cache_dir, sha);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%s-%d", o->cache_dir, sha, (int)getpid());
    printf("joblet: writing the cache %s/%s.tar.zst\n", o->cache_shown, sha);
    fflush(stdout);
    char *const argv[] = {"tar", "--create", "--use-compress-program=zstd -T0 -3 -q", "--file", tmp, "--directory",
                          (char *)o->dir, "--numeric-owner", "manifest.yml", "recipe.yml", "rootfs", NULL};
    if (run(argv, -1, -1, "tar (writing the cache)", why, sizeof why) < 0 || rename(tmp, final) < 0) {
        printf("joblet: the cache was not written: %s\n", errno ? strerror(errno) : why);
        unlink(tmp);
        return;
    }
    evict(o->cache_dir, o->cache_keep);
}

static int mode_build(const opts *o)
{
    char path[1200], sha[DIGEST_HEX], why[1024] = "";
    snprintf(path, sizeof path, "%s/recipe.yml", o->dir);
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text)
        return report(false, "cannot read %s: %s", path, strerror(errno));
    digest_sha256_hex(text, len, sha);
    recipe r;
    jerr e = {0};
    int rc = recipe_parse(text, len, &r, &e);
    free(text);
    if (rc < 0)
        return report(false, "%s", e.msg);
    char builder[64];
    tool_version(o->tool, builder, sizeof builder);
    printf("joblet: building %s %s (recipe sha256 %.12s) with %s from %s %s\n", r.name, r.version, sha, builder,
           o->mirror, r.suite);
    fflush(stdout);
    manifest m = {0};
    if (o->cache_dir && o->cache_keep && !o->fresh) {
        char cached[1200];
        snprintf(cached, sizeof cached, "%s/%s.tar.zst", o->cache_dir, sha);
        if (access(cached, R_OK) == 0) {
            printf("joblet: extracting the cached build %s/%s.tar.zst\n", o->cache_shown, sha);
            fflush(stdout);
            if (extract(cached, o->dir, why, sizeof why) == 0 && verify(o->dir, &m, why, sizeof why) == 0) {
                utimensat(AT_FDCWD, cached, NULL, 0); /* used: the newest to keep */
                printf("joblet: done in %.1f s (from the cache): %s %s, %llu packages\n",
                       (double)(now_ms() - t0_ms) / 1000, m.name, m.version, (unsigned long long)m.installed_packages);
                fflush(stdout);
                rc = report(true, "%s", r.name);
                manifest_free(&m);
                recipe_free(&r);
                return rc;
            }
            printf("joblet: the cached build is unusable (%s); building from the mirror\n", why);
            fflush(stdout);
            manifest_free(&m);
            unlink(cached);
            snprintf(path, sizeof path, "%s/rootfs", o->dir);
            rm_rf(path);
            snprintf(path, sizeof path, "%s/manifest.yml", o->dir);
            unlink(path);
        }
    }
    if (run_tool(o, &r, why, sizeof why) < 0 || default_hosts(o, why, sizeof why) < 0 ||
        customize(o, &r, why, sizeof why) < 0) {
        recipe_free(&r);
        return report(false, "%s", why);
    }
    printf("joblet: listing the installed packages\n");
    fflush(stdout);
    snprintf(m.name, sizeof m.name, "%s", r.name);
    snprintf(m.version, sizeof m.version, "%s", r.version);
    snprintf(m.suite, sizeof m.suite, "%s", r.suite);
    snprintf(m.mirror, sizeof m.mirror, "%s", o->mirror);
    snprintf(m.builder, sizeof m.builder, "%s", builder);
    snprintf(m.recipe, sizeof m.recipe, "%s", o->source ? o->source : "recipe.yml");
    snprintf(m.recipe_sha256, sizeof m.recipe_sha256, "%s", sha);
    m.description = xstrdup(r.description);
    m.test = r.test ? xstrdup(r.test) : NULL;
    m.provides = xcalloc(r.nprovides ? r.nprovides : 1, sizeof *m.provides);
    m.nprovides = r.nprovides;
    m.packages = xcalloc(r.npackages, sizeof *m.packages);
    for (size_t i = 0; i < r.npackages; i++)
        m.packages[m.npackages++] = xstrdup(r.packages[i]);
    m.env = xcalloc(r.nenv ? r.nenv : 1, sizeof *m.env);
    for (size_t i = 0; i < r.nenv; i++)
        m.env[m.nenv++] = (recipe_env){xstrdup(r.env[i].name), xstrdup(r.env[i].value)};
    rc = read_packages(o, &r, &m, why, sizeof why);
    if (rc == 0) {
        printf("joblet: hashing the tree\n");
        fflush(stdout);
        snprintf(path, sizeof path, "%s/rootfs", o->dir);
        digest_tree_info info;
        if (digest_tree(path, m.rootfs_sha256, &info, &e) < 0) {
            snprintf(why, sizeof why, "%s", e.msg);
            rc = -1;
        }
        m.size_bytes = info.disk_bytes;
    }
    if (rc == 0) {
        format_ms(now_ms(), m.built_at, sizeof m.built_at);
        snprintf(path, sizeof path, "%s/manifest.yml", o->dir);
        if (manifest_write(path, &m, &e) < 0) {
            snprintf(why, sizeof why, "%s", e.msg);
            rc = -1;
        }
    }
    if (rc == 0) {
        if (o->cache_dir && o->cache_keep)
            cache_store(o, sha);
        char *prov = join(m.provides, m.nprovides, ", ");
        printf("joblet: done in %.1f s: %s %s, %llu packages, %.0f MB%s%s\n", (double)(now_ms() - t0_ms) / 1000, m.name,
               m.version, (unsigned long long)m.installed_packages, (double)m.size_bytes / 1e6, *prov ? ": " : "", prov);
        fflush(stdout);
        free(prov);
    }
    char name[sizeof r.name];
    snprintf(name, sizeof name, "%s", r.name);
    manifest_free(&m);
    recipe_free(&r);
    return rc == 0 ? report(true, "%s", name) : report(false, "%s", why);
}

/* Copies stdin (the archive) into the cache as <recipe sha256>.tar.zst, so the runtime can be
 * exported and built again from it. */
static void cache_archive(const opts *o, const char *sha)
{
    char tmp[1200], final[1200];
    snprintf(final, sizeof final, "%s/%s.tar.zst", o->cache_dir, sha);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%s-%d", o->cache_dir, sha, (int)getpid());
    int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    struct stat st;
    bool ok = out >= 0 && fstat(0, &st) == 0 && S_ISREG(st.st_mode);
    off_t in_off = 0;
    while (ok && in_off < st.st_size) {
        ssize_t n = copy_file_range(0, &in_off, out, NULL, (size_t)(st.st_size - in_off), 0);
        if (n <= 0)
            ok = false;
    }
    if (out >= 0)
        close(out);
    if (ok && rename(tmp, final) == 0) {
        printf("joblet: the archive is in the cache as %s/%s.tar.zst\n", o->cache_shown, sha);
        evict(o->cache_dir, o->cache_keep);
    } else {
        printf("joblet: the archive was not kept in the cache: %s\n", strerror(errno));
        unlink(tmp);
    }
}

static int mode_import(const opts *o)
{
    char why[1024] = "";
    printf("joblet: extracting the archive\n");
    fflush(stdout);
    if (lseek(0, 0, SEEK_SET) < 0 && errno != ESPIPE)
        return report(false, "the archive: %s", strerror(errno));
    if (extract(NULL, o->dir, why, sizeof why) < 0)
        return report(false, "the archive could not be extracted (it must be a tar.zst holding manifest.yml, "
                             "recipe.yml and rootfs/, as rnx runtime export writes it): %s", why);
    manifest m;
    if (verify(o->dir, &m, why, sizeof why) < 0)
        return report(false, "refused: %s", why);
    if (o->cache_dir && o->cache_keep)
        cache_archive(o, m.recipe_sha256);
    printf("joblet: done in %.1f s: %s %s, %llu packages, %.0f MB\n", (double)(now_ms() - t0_ms) / 1000, m.name,
           m.version, (unsigned long long)m.installed_packages, (double)m.size_bytes / 1e6);
    fflush(stdout);
    int rc = report(true, "%s", m.name);
    manifest_free(&m);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: joblet-runtime-build build --dir DIR --tool PATH --mirror URL [--cache-dir DIR "
                    "--cache-keep N] [--source NAME]\n"
                    "       joblet-runtime-build import --dir DIR [--cache-dir DIR --cache-keep N]  < ARCHIVE.tar.zst\n"
                    "       joblet-runtime-build remove PATH...\n"
                    "joblet runs it; see docs/runtimes.md.\n");
    return 2;
}

int main(int argc, char **argv)
{
    t0_ms = now_ms();
    if (argc < 2)
        return usage();
    const char *mode = argv[1];
    if (!strcmp(mode, "remove")) {
        int rc = 0;
        for (int i = 2; i < argc; i++)
            if (rm_rf(argv[i]) < 0) {
                fprintf(stderr, "joblet-runtime-build: remove %s: %s\n", argv[i], strerror(errno));
                rc = 1;
            }
        return rc;
    }
    if (strcmp(mode, "build") && strcmp(mode, "import"))
        return usage();
    static const struct option lo[] = {
        {"dir", required_argument, NULL, 'd'},       {"tool", required_argument, NULL, 't'},
        {"mirror", required_argument, NULL, 'm'},    {"cache-dir", required_argument, NULL, 'c'},
        {"cache-keep", required_argument, NULL, 'k'}, {"source", required_argument, NULL, 's'},
        {"fresh", no_argument, NULL, 'f'},
        {0},
    };
    opts o = {0};
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'd': o.dir = optarg; break;
        case 't': o.tool = optarg; break;
        case 'm': o.mirror = optarg; break;
        case 'c': o.cache_dir = optarg; break;
        case 'k': o.cache_keep = (unsigned)strtoul(optarg, NULL, 10); break;
        case 's': o.source = optarg; break;
        case 'f': o.fresh = true; break;
        default: return usage();
        }
    }
    if (!o.dir || (!strcmp(mode, "build") && (!o.tool || !o.mirror)))
        return usage();
    if (fcntl(STATUS_FD, F_GETFD) < 0) {
        fprintf(stderr, "joblet-runtime-build: fd 3 (the result) is not open; joblet runs this program\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* a build outlives nothing: not joblet (the next joblet removes what is left), not its keeper */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
        return report(false, "joblet went away");
    clean_env();
    jerr e = {0};
    sandbox_cfg box = {.hostname = "joblet-build", .tmp_size_mb = 1024, .fsize_max = 16ull << 30, .nofile = 65536,
                       .nice = 10};
    /* inside, the work and the cache are under the box's own /tmp */
    box.keep[box.nkeep++] = (sandbox_keep){o.dir, "work"};
    o.dir = "/tmp/work";
    o.cache_shown = o.cache_dir;
    if (o.cache_dir && o.cache_keep) {
        box.keep[box.nkeep++] = (sandbox_keep){o.cache_dir, "cache"};
        o.cache_dir = "/tmp/cache";
    }
    if (sandbox_enter(&box, &e) < 0) {
        /* _exit: after unshare(CLONE_NEWPID) a sanitizer's exit-time helper process would be
         * PID 1 of a namespace its parent is not in, and hang */
        report(false, "the build sandbox: %s", e.msg);
        _exit(1);
    }
    return !strcmp(mode, "build") ? mode_build(&o) : mode_import(&o);
}
