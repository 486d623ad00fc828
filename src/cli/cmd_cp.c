/* rnx job cp: files out of a job and into it (cmd_cp.h). What goes over the socket is a tar
 * stream (libarchive), read or written a piece at a time: a copy of any size holds a few
 * hundred KiB here. Where the copy lands follows cp and docker cp:
 *   DEST is a directory          the copy goes into it, under its own name
 *   DEST does not exist          the copy is made as DEST (its parent must exist)
 *   DEST is a file               a file replaces it; a directory is refused
 * Only files, directories and symlinks are written, never device nodes, hard links or
 * set-user-ID bits (a root rnx must not make a job's setuid file root's), never above the
 * destination (no "..", no absolute names, no symlink on the way). */
#include "cmd_cp.h"

#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/util.h"
#include "client.h"
#include "print.h"

static const char cp_help[] =
    "Usage: rnx job cp [-L] [-q] ID:PATH DEST\n"
    "       rnx job cp [-L] [-q] SRC ID:PATH\n"
    "\n"
    "Copies files and directories out of a job and into it, as the job's user, in the job's own\n"
    "root: while a job runs anywhere in it (/work, /tmp, ...), once it has ended (and for a\n"
    "gVisor job) its /work only. A directory is copied with everything below it; symlinks are\n"
    "copied as symlinks. DEST '-' writes a tar to stdout; SRC '-' extracts a tar from stdin into\n"
    "the directory PATH. A copy into a job is bounded like uploads (jobs.max_upload_bytes).\n"
    "\n"
    "Where it lands: into DEST when DEST is a directory; as DEST when DEST does not exist (its\n"
    "parent must); a file replaces the file DEST. The same inside the job for ID:PATH.\n"
    "\n"
    "Flags:\n"
    "  -L, --follow-link   follow a symlink at the source path (what lies below is copied as is)\n"
    "  -q, --quiet         no progress and no summary on stderr\n"
    "  -h, --help          this help\n"
    "\n"
    "A local path with ':' in it is written with a '/' before the ':' (./a:b).\n";

/* ---- libarchive, loaded for a copy only ------------------------------------------------- */

/* rnx links nothing it does not need on every run: libarchive and what it brings (libxml2,
 * libcrypto, the compressors: 14 more shared objects) cost ~2 ms of loading per rnx start,
 * which every `rnx job run` would pay (docs/performance.md). `job cp` opens it when it runs;
 * the prototypes are archive.h's, so a call through the table is checked as a direct one. */
#define LIBARCHIVE_FUNCS \
    X(archive_entry_copy_pathname) \
    X(archive_entry_filetype) \
    X(archive_entry_free) \
    X(archive_entry_hardlink) \
    X(archive_entry_new) \
    X(archive_entry_pathname) \
    X(archive_entry_perm) \
    X(archive_entry_set_gname) \
    X(archive_entry_set_perm) \
    X(archive_entry_set_uname) \
    X(archive_entry_size) \
    X(archive_entry_sourcepath) \
    X(archive_error_string) \
    X(archive_read_data) \
    X(archive_read_data_block) \
    X(archive_read_data_skip) \
    X(archive_read_disk_descend) \
    X(archive_read_disk_new) \
    X(archive_read_disk_open) \
    X(archive_read_disk_set_behavior) \
    X(archive_read_disk_set_symlink_physical) \
    X(archive_read_free) \
    X(archive_read_new) \
    X(archive_read_next_header) \
    X(archive_read_next_header2) \
    X(archive_read_open) \
    X(archive_read_support_format_tar) \
    X(archive_set_error) \
    X(archive_write_close) \
    X(archive_write_data) \
    X(archive_write_data_block) \
    X(archive_write_disk_new) \
    X(archive_write_disk_set_options) \
    X(archive_write_finish_entry) \
    X(archive_write_free) \
    X(archive_write_header) \
    X(archive_write_new) \
    X(archive_write_open) \
    X(archive_write_set_bytes_in_last_block) \
    X(archive_write_set_format_option) \
    X(archive_write_set_format_pax_restricted)

static struct {
#define X(f) __typeof__(&f) f;
    LIBARCHIVE_FUNCS
#undef X
} la;

static int libarchive_load(void)
{
    void *h = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return rnx_fail("job cp needs libarchive (Debian: libarchive13): %s", dlerror());
#define X(f)                                                                                       \
    if (!(la.f = (__typeof__(&f))dlsym(h, #f)))                                                    \
        return rnx_fail("job cp: libarchive has no %s (a libarchive older than 3.6?)", #f);
    LIBARCHIVE_FUNCS
#undef X
    return RNX_OK;
}

/* "ID:PATH": a job's path when there is a ':' with no '/' before it. */
static bool job_ref(const char *s, char *id, size_t idlen, const char **path)
{
    const char *colon = strchr(s, ':');
    if (!colon || colon == s || memchr(s, '/', (size_t)(colon - s)) || (size_t)(colon - s) >= idlen)
        return false;
    snprintf(id, idlen, "%.*s", (int)(colon - s), s);
    *path = colon + 1;
    return true;
}

/* ---- progress ------------------------------------------------------------------------ */

typedef struct progress {
    bool on;                  /* stderr is a terminal and not -q */
    uint64_t done, total;
    double t0, last;
    const char *what;
} progress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void human(uint64_t b, char *out, size_t len)
{
    if (b >= 1ull << 30)
        snprintf(out, len, "%.2f GB", (double)b / (1ull << 30));
    else if (b >= 1u << 20)
        snprintf(out, len, "%.1f MB", (double)b / (1u << 20));
    else if (b >= 1u << 10)
        snprintf(out, len, "%.1f kB", (double)b / (1u << 10));
    else
        snprintf(out, len, "%llu B", (unsigned long long)b);
}

static void progress_add(progress *p, uint64_t n, bool last)
{
    p->done += n;
    if (!p->on)
        return;
    double t = now_s();
    if (!last && t - p->last < 0.25)
        return;
    p->last = t;
    char d[32], tot[32], rate[32];
    human(p->done, d, sizeof d);
    human(p->total, tot, sizeof tot);
    human(t > p->t0 ? (uint64_t)((double)p->done / (t - p->t0)) : 0, rate, sizeof rate);
    if (p->total)
        print_textf(stderr, "\r%s: %s of %s (%u%%), %s/s   ", p->what, d, tot,
                (unsigned)(p->done >= p->total ? 100 : p->done * 100 / p->total), rate);
    else
        print_textf(stderr, "\r%s: %s, %s/s   ", p->what, d, rate);
    if (last)
        fputc('\n', stderr);
}

/* ---- entries ------------------------------------------------------------------------- */

/* Renames an entry from the top name `from` to `to`: 1; 0 for an entry that is left out (a
 * FIFO, a socket, a device node: said on stderr unless quiet); -1 when it is not under `from`
 * or is a hard link (why in e). */
static int entry_take(struct archive_entry *ent, const char *from, const char *to, bool quiet, jerr *e)
{
    const char *p = la.archive_entry_pathname(ent);
    size_t fl = strlen(from);
    /* "name", "name/...", with a "./" a tar may put first */
    if (p && !strncmp(p, "./", 2))
        p += 2;
    if (!p || strncmp(p, from, fl) || (p[fl] && p[fl] != '/')) {
        snprintf(e->msg, sizeof e->msg, "the archive holds '%.200s', outside '%.200s'", p ? p : "", from);
        return -1;
    }
    mode_t t = la.archive_entry_filetype(ent);
    if (la.archive_entry_hardlink(ent)) {
        snprintf(e->msg, sizeof e->msg, "%.300s: a hard link; only files, directories and symlinks are copied", p);
        return -1;
    }
    if (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK) {
        if (!quiet)
            print_textf(stderr, "rnx: %s: not a file, directory or symlink; left out\n", p);
        return 0;
    }
    char name[PATH_MAX + 256];
    snprintf(name, sizeof name, "%s%s", to, p + fl);
    la.archive_entry_copy_pathname(ent, name);
    la.archive_entry_set_perm(ent, la.archive_entry_perm(ent) & 0777);
    return 1;
}

/* ---- out of the job ------------------------------------------------------------------ */

typedef struct reader {
    client_body *b;
    char buf[256 << 10];
    jerr e;
    bool failed;
} reader;

static la_ssize_t read_cb(struct archive *a, void *ud, const void **out)
{
    reader *r = ud;
    long n = client_body_read(r->b, r->buf, sizeof r->buf, &r->e);
    if (n < 0) {
        r->failed = true;
        la.archive_set_error(a, EIO, "%s", r->e.msg);
        return -1;
    }
    *out = r->buf;
    return n;
}

/* Where DEST puts the copy: the directory it lands in and its name there. The source's type
 * (a directory or not) is known only once joblet answered; -1 is checked again then. */
static int place(const char *dest, const char *src_name, bool src_dir, char *dir, size_t dlen, char *name,
                 size_t nlen, jerr *e)
{
    struct stat st;
    size_t n = strlen(dest);
    if (stat(dest, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(dir, dlen, "%s", dest);
        snprintf(name, nlen, "%s", src_name);
        return 0;
    }
    if (n && dest[n - 1] == '/') {
        snprintf(e->msg, sizeof e->msg, "%s: no such directory", dest);
        return -1;
    }
    if (lstat(dest, &st) == 0 && src_dir) {
        snprintf(e->msg, sizeof e->msg, "%s exists and is not a directory: a directory cannot replace it", dest);
        return -1;
    }
    char *d1 = xstrdup(dest), *d2 = xstrdup(dest);
    snprintf(dir, dlen, "%s", dirname(d1));
    snprintf(name, nlen, "%s", basename(d2));
    free(d1);
    free(d2);
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(e->msg, sizeof e->msg, "%s: no such directory (for %s)", dir, dest);
        return -1;
    }
    if (!strcmp(name, ".") || !strcmp(name, "..")) {
        snprintf(e->msg, sizeof e->msg, "%s: name a directory or a new name", dest);
        return -1;
    }
    return 0;
}

static char *archive_path(rnx_client *c, const char *id, const char *path, const char *extra)
{
    char *eid = client_escape(c, id), *epath = client_escape(c, path), *p;
    if (asprintf(&p, "/v1/jobs/%s/archive?path=%s%s", eid, epath, extra) < 0)
        abort();
    free(eid);
    free(epath);
    return p;
}

static int copy_out(rnx_client *c, const char *id, const char *path, const char *dest, bool follow, bool quiet)
{
    jerr e = {0};
    char dir[PATH_MAX], name[NAME_MAX + 1];
    bool to_stdout = !strcmp(dest, "-");
    /* the destination is checked before joblet walks the source */
    if (!to_stdout && place(dest, "x", false, dir, sizeof dir, name, sizeof name, &e) < 0)
        return rnx_fail("%s", e.msg);
    char *url = archive_path(c, id, path, follow ? "&follow=1" : "");
    client_body *b = client_get_body(c, url, "application/x-tar", &e);
    free(url);
    if (!b)
        return rnx_fail("%s", e.msg);
    char src_name[NAME_MAX + 1] = "", type[16] = "", bytes[24] = "0";
    client_body_header(b, "X-Joblet-Path-Name", src_name, sizeof src_name);
    client_body_header(b, "X-Joblet-Path-Type", type, sizeof type);
    client_body_header(b, "X-Joblet-Path-Bytes", bytes, sizeof bytes);
    progress pg = {.on = !quiet && isatty(2), .total = strtoull(bytes, NULL, 10), .t0 = now_s(), .what = path};
    int rc = RNX_OK;
    reader *r = xcalloc(1, sizeof *r);
    r->b = b;
    if (to_stdout) {
        long n;
        while ((n = client_body_read(b, r->buf, sizeof r->buf, &e)) > 0) {
            if (fwrite(r->buf, 1, (size_t)n, stdout) != (size_t)n) {
                rc = rnx_fail("writing stdout: %s", strerror(errno));
                break;
            }
            progress_add(&pg, (uint64_t)n, false);
        }
        if (n < 0)
            rc = rnx_fail("copying %s:%s: %s", id, path, e.msg);
        if (fflush(stdout) != 0 && rc == RNX_OK)
            rc = rnx_fail("writing stdout: %s", strerror(errno));
        if (pg.on)
            progress_add(&pg, 0, true);
        client_body_close(b);
        free(r);
        return rc;
    }
    if (!src_name[0] || place(dest, src_name, !strcmp(type, "dir"), dir, sizeof dir, name, sizeof name, &e) < 0) {
        client_body_close(b);
        free(r);
        return rnx_fail("%s", src_name[0] ? e.msg : "joblet did not name what it sends (an older joblet?)");
    }
    int back = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (chdir(dir) < 0) {
        client_body_close(b);
        free(r);
        if (back >= 0)
            close(back);
        return rnx_fail("%s: %s", dir, strerror(errno));
    }
    struct archive *a = la.archive_read_new(), *disk = la.archive_write_disk_new();
    /* names as their bytes: rnx runs in the C locale, where a UTF-8 name does not convert to
     * ASCII and libarchive keeps it as it came (an ARCHIVE_WARN), and one the stream marks
     * hdrcharset=BINARY is not converted at all (a reader's hdrcharset=BINARY option only
     * fails: libarchive knows no "BINARY" charset to convert from) */
    la.archive_read_support_format_tar(a);
    la.archive_write_disk_set_options(disk, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                             ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                             ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
    uint64_t files = 0;
    if (la.archive_read_open(a, r, NULL, read_cb, NULL) != ARCHIVE_OK) {
        rc = rnx_fail("copying %s:%s: %s", id, path, r->failed ? r->e.msg : la.archive_error_string(a));
        goto done;
    }
    for (;;) {
        struct archive_entry *ent;
        int h = la.archive_read_next_header(a, &ent);
        if (h == ARCHIVE_EOF)
            break;
        if (h < ARCHIVE_WARN) {
            rc = rnx_fail("copying %s:%s: %s", id, path, r->failed ? r->e.msg : la.archive_error_string(a));
            goto done;
        }
        int take = entry_take(ent, src_name, name, quiet, &e);
        if (take < 0) {
            rc = rnx_fail("copying %s:%s: %s", id, path, e.msg);
            goto done;
        }
        if (take == 0) {
            la.archive_read_data_skip(a);
            continue;
        }
        if (la.archive_write_header(disk, ent) < ARCHIVE_WARN) {
            rc = rnx_fail("%s/%s: %s", dir, la.archive_entry_pathname(ent), la.archive_error_string(disk));
            goto done;
        }
        const void *buf;
        size_t n;
        la_int64_t off;
        while ((h = la.archive_read_data_block(a, &buf, &n, &off)) == ARCHIVE_OK) {
            if (la.archive_write_data_block(disk, buf, n, off) < ARCHIVE_WARN) {
                rc = rnx_fail("%s/%s: %s", dir, la.archive_entry_pathname(ent), la.archive_error_string(disk));
                goto done;
            }
            progress_add(&pg, n, false);
        }
        if (h != ARCHIVE_EOF) {
            rc = rnx_fail("copying %s:%s: %s", id, path, r->failed ? r->e.msg : la.archive_error_string(a));
            goto done;
        }
        if (la.archive_write_finish_entry(disk) < ARCHIVE_WARN) {
            rc = rnx_fail("%s/%s: %s", dir, la.archive_entry_pathname(ent), la.archive_error_string(disk));
            goto done;
        }
        files += la.archive_entry_filetype(ent) == AE_IFREG;
    }
    if (la.archive_write_close(disk) != ARCHIVE_OK)
        rc = rnx_fail("%s: %s", dir, la.archive_error_string(disk));
done:
    if (pg.on)
        progress_add(&pg, 0, true);
    la.archive_read_free(a);
    la.archive_write_free(disk);
    client_body_close(b);
    free(r);
    if (back >= 0) {
        if (fchdir(back) < 0) { /* nothing after this needs it */
        }
        close(back);
    }
    if (rc == RNX_OK && !quiet) {
        char h[32];
        human(pg.done, h, sizeof h);
        print_textf(stderr, "copied %s:%s to %s/%s (%llu file%s, %s)\n", id, path, dir, name, (unsigned long long)files,
                files == 1 ? "" : "s", h);
    }
    return rc;
}

/* ---- into the job -------------------------------------------------------------------- */

typedef struct writer {
    client_body *b;
    jerr e;
    bool failed;
    progress *pg;
} writer;

static la_ssize_t write_cb(struct archive *a, void *ud, const void *p, size_t n)
{
    writer *w = ud;
    if (client_body_write(w->b, p, n, &w->e) < 0) {
        w->failed = true;
        la.archive_set_error(a, EPIPE, "%s", w->e.msg);
        return -1;
    }
    return (la_ssize_t)n;
}

static uint64_t walk_total;
static int walk_sum(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    if (flag == FTW_F && S_ISREG(st->st_mode))
        walk_total += (uint64_t)st->st_size;
    return 0;
}

/* The job's answer to what is at path: 1 a directory, 0 something else, -2 nothing, -1 error. */
static int remote_kind(rnx_client *c, const char *id, const char *path, jerr *e)
{
    char *url = archive_path(c, id, path, "&stat=1");
    json_t *o = NULL;
    int rc = client_request(c, "GET", url, NULL, &o, e);
    free(url);
    if (rc < 0)
        return e->http == 404 ? -2 : -1;
    const char *t = json_string_value(json_object_get(o, "type"));
    int kind = t && !strcmp(t, "dir");
    json_decref(o);
    return kind;
}

static int copy_in(rnx_client *c, const char *src, const char *id, const char *path, bool follow, bool quiet)
{
    jerr e = {0};
    bool from_stdin = !strcmp(src, "-");
    struct stat st;
    if (!from_stdin && (follow ? stat(src, &st) : lstat(src, &st)) < 0)
        return rnx_fail("%s: %s", src, strerror(errno));
    /* where it lands in the job: as for DEST on this side */
    int kind = remote_kind(c, id, path, &e);
    if (kind == -1)
        return rnx_fail("%s", e.msg);
    size_t pl = strlen(path);
    char dir[PATH_MAX], name[NAME_MAX + 1], *s1 = xstrdup(src);
    char *src_name = basename(s1);
    if (kind == 1) {
        snprintf(dir, sizeof dir, "%s", path);
        for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/'; l--)
            dir[l - 1] = 0; /* (named as "/work/": said as /work/x, not /work//x) */
        snprintf(name, sizeof name, "%s", src_name);
    } else if (from_stdin) {
        free(s1);
        return rnx_fail("%s:%s: %s; a tar from stdin goes into a directory", id, path,
                        kind == -2 ? "no such directory" : "not a directory");
    } else if (pl && path[pl - 1] == '/') {
        free(s1);
        return rnx_fail("%s:%s: no such directory", id, path);
    } else if (kind == 0 && S_ISDIR(st.st_mode)) {
        free(s1);
        return rnx_fail("%s:%s exists and is not a directory: a directory cannot replace it", id, path);
    } else {
        char *d1 = xstrdup(path), *d2 = xstrdup(path);
        snprintf(dir, sizeof dir, "%s", dirname(d1));
        snprintf(name, sizeof name, "%s", basename(d2));
        free(d1);
        free(d2);
    }
    if (!from_stdin && (!strcmp(src_name, ".") || !strcmp(src_name, "..") || !strcmp(src_name, "/"))) {
        free(s1);
        return rnx_fail("%s: name the directory itself (e.g. its full path)", src);
    }
    progress pg = {.on = !quiet && isatty(2), .t0 = now_s(), .what = src};
    walk_total = 0;
    if (!from_stdin && S_ISDIR(st.st_mode))
        nftw(src, walk_sum, 64, FTW_PHYS);
    else if (!from_stdin && S_ISREG(st.st_mode))
        walk_total = (uint64_t)st.st_size;
    pg.total = walk_total;
    /* refused here rather than after the bound's worth was sent (joblet stops reading then) */
    json_t *ver = NULL;
    jerr ve = {0};
    if (client_request(c, "GET", "/v1/version", NULL, &ver, &ve) == 0) {
        json_int_t max = json_integer_value(json_object_get(ver, "max_upload_bytes"));
        json_decref(ver);
        if (max > 0 && walk_total > (uint64_t)max) {
            free(s1);
            return rnx_fail("%s holds %llu bytes; joblet takes at most %lld into a job (jobs.max_upload_bytes)", src,
                            (unsigned long long)walk_total, (long long)max);
        }
    }
    /* a busy answer (nothing was written: common/err.h jerr_busy) is asked again as rnx asks
     * any request again, the files read again; a tar from stdin cannot be */
    int waited = 0;
again:;
    char *url = archive_path(c, id, dir, "");
    client_body *b = client_put_body(c, url, "application/x-tar", &e);
    free(url);
    if (!b) {
        free(s1);
        return rnx_fail("%s", e.msg);
    }
    writer w = {.b = b, .pg = &pg};
    int rc = RNX_OK;
    uint64_t files = 0;
    if (from_stdin) {
        char *buf = xmalloc(256 << 10);
        ssize_t n;
        while ((n = read(0, buf, 256 << 10)) > 0 || (n < 0 && errno == EINTR)) {
            if (n < 0)
                continue;
            if (client_body_write(b, buf, (size_t)n, &w.e) < 0)
                break;
            progress_add(&pg, (uint64_t)n, false);
        }
        free(buf);
    } else {
        struct archive *disk = la.archive_read_disk_new(), *tar = la.archive_write_new();
        la.archive_write_set_format_pax_restricted(tar);
        la.archive_write_set_format_option(tar, "pax", "hdrcharset", "BINARY");
        la.archive_write_set_bytes_in_last_block(tar, 1);
        la.archive_read_disk_set_symlink_physical(disk);
        la.archive_read_disk_set_behavior(disk, ARCHIVE_READDISK_NO_XATTR | ARCHIVE_READDISK_NO_ACL |
                                                 ARCHIVE_READDISK_NO_FFLAGS);
        char top[PATH_MAX];
        if (follow && realpath(src, top)) {
            /* -L: the symlink named is followed */
        } else {
            snprintf(top, sizeof top, "%s", src);
        }
        size_t tl = strlen(top);
        while (tl > 1 && top[tl - 1] == '/')
            top[--tl] = 0;
        char *buf = xmalloc(1 << 20);
        if (la.archive_write_open(tar, &w, NULL, write_cb, NULL) != ARCHIVE_OK ||
            la.archive_read_disk_open(disk, top) != ARCHIVE_OK) {
            rc = rnx_fail("%s: %s", src, w.failed ? w.e.msg : la.archive_error_string(disk));
        } else {
            for (;;) {
                struct archive_entry *ent = la.archive_entry_new();
                int h = la.archive_read_next_header2(disk, ent);
                if (h == ARCHIVE_EOF) {
                    la.archive_entry_free(ent);
                    break;
                }
                if (h < ARCHIVE_WARN) {
                    rc = rnx_fail("%s: %s", src, la.archive_error_string(disk));
                    la.archive_entry_free(ent);
                    break;
                }
                if (la.archive_entry_filetype(ent) == AE_IFDIR)
                    la.archive_read_disk_descend(disk);
                mode_t t = la.archive_entry_filetype(ent);
                if (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK) {
                    if (!quiet)
                        print_textf(stderr, "rnx: %s: not a file, directory or symlink; left out\n",
                                la.archive_entry_pathname(ent));
                    la.archive_entry_free(ent);
                    continue;
                }
                char ename[PATH_MAX + 256];
                snprintf(ename, sizeof ename, "%s%s", name, la.archive_entry_pathname(ent) + tl);
                la.archive_entry_copy_pathname(ent, ename);
                la.archive_entry_set_uname(ent, NULL);
                la.archive_entry_set_gname(ent, NULL);
                la.archive_entry_set_perm(ent, la.archive_entry_perm(ent) & 0777);
                if (la.archive_write_header(tar, ent) < ARCHIVE_WARN) {
                    if (!w.failed)
                        rc = rnx_fail("%s: %s", ename, la.archive_error_string(tar));
                    la.archive_entry_free(ent);
                    break;
                }
                if (t == AE_IFREG && la.archive_entry_size(ent) > 0) {
                    la_ssize_t n;
                    while ((n = la.archive_read_data(disk, buf, 1 << 20)) > 0) {
                        if (la.archive_write_data(tar, buf, (size_t)n) < 0)
                            break;
                        progress_add(&pg, (uint64_t)n, false);
                    }
                    if (n < 0) {
                        rc = rnx_fail("%s: %s", la.archive_entry_sourcepath(ent), la.archive_error_string(disk));
                        la.archive_entry_free(ent);
                        break;
                    }
                }
                files += t == AE_IFREG;
                la.archive_entry_free(ent);
                if (w.failed)
                    break;
            }
            if (rc == RNX_OK && !w.failed && la.archive_write_close(tar) != ARCHIVE_OK && !w.failed)
                rc = rnx_fail("%s: %s", src, la.archive_error_string(tar));
        }
        free(buf);
        la.archive_read_free(disk);
        la.archive_write_free(tar);
    }
    if (pg.on)
        progress_add(&pg, 0, true);
    json_t *ans = NULL;
    if (rc != RNX_OK) {
        client_body_close(b); /* the copy stops half way: joblet drops the rest */
    } else if (client_body_finish(b, &ans, &e) < 0) {
        if (!from_stdin && client_busy_again(c, &e, &waited)) {
            e = (jerr){0};
            pg.done = 0;
            pg.t0 = now_s();
            goto again;
        }
        rc = rnx_fail("copying %s to %s:%s: %s%s", src, id, path, e.msg,
                      w.failed && !e.http ? "; joblet stopped taking the copy part way (the job's /work full, or its "
                                            "user may not write there)" : "");
    } else if (!quiet) {
        char h[32];
        human((uint64_t)json_integer_value(json_object_get(ans, "bytes")), h, sizeof h);
        json_int_t n = json_integer_value(json_object_get(ans, "entries"));
        print_textf(stderr, "copied %s to %s:%s/%s (%lld entr%s, %s)\n", src, id, strcmp(dir, "/") ? dir : "",
                from_stdin ? "" : name, (long long)n, n == 1 ? "y" : "ies", h);
    }
    (void)files;
    json_decref(ans);
    free(s1);
    return rc;
}

int cmd_job_cp(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                         {"follow-link", no_argument, NULL, 'L'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {0}};
    bool follow = false, quiet = false;
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "hLq", opts, "rnx job cp")) != -1) {
        switch (c) {
        case 'h': fputs(cp_help, stdout); return RNX_OK;
        case 'L': follow = true; break;
        case 'q': quiet = true; break;
        default: return RNX_USAGE;
        }
    }
    if (argc - optind != 2)
        return rnx_usage("job cp: want a source and a destination, one of them ID:PATH (rnx job cp ID:/work/out .); "
                         "see 'rnx job cp --help'");
    const char *src = argv[optind], *dest = argv[optind + 1], *spath, *dpath;
    char sid[160], did[160];
    bool sj = job_ref(src, sid, sizeof sid, &spath), dj = job_ref(dest, did, sizeof did, &dpath);
    if (sj == dj)
        return rnx_usage("job cp: exactly one of '%s' and '%s' must be a job's path, ID:PATH (a local path with a "
                         "':' is written ./a:b)", src, dest);
    const char *jpath = sj ? spath : dpath;
    if (jpath[0] != '/')
        return rnx_usage("job cp: '%s' is not an absolute path in the job; e.g. %s:/work/%s", jpath, sj ? sid : did,
                         jpath);
    if (libarchive_load() != RNX_OK)
        return RNX_FAIL;
    rnx_client *cl = client_new(&ctx->target);
    int rc = sj ? copy_out(cl, sid, spath, dest, follow, quiet) : copy_in(cl, src, did, dpath, follow, quiet);
    client_free(cl);
    return rc;
}
