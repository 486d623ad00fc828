/* Walks --upload paths into the uploads[] array of POST /v1/jobs. Everything is read here,
 * before any request is sent, so a bad path fails the command with nothing submitted. */
#include "upload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/b64.h"
#include "../common/jsonx.h"
#include "../common/util.h"

void upload_init(upload_set *u)
{
    memset(u, 0, sizeof *u);
    u->entries = json_array();
}

void upload_free(upload_set *u)
{
    json_decref(u->entries);
    for (size_t i = 0; i < u->nnames; i++) {
        free(u->names[i]);
        free(u->sources[i]);
    }
    free(u->names);
    free(u->sources);
    memset(u, 0, sizeof *u);
}

static int sys_error(jerr *e, const char *path)
{
    return jerr_set(e, errno, "--upload: %s: %s", path, strerror(errno));
}

static const char *kind_name(mode_t m)
{
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

/* Job-side paths travel as JSON strings, which must be UTF-8. */
static int check_text(const char *disk, const char *s, const char *what, jerr *e)
{
    if (utf8_valid(s, strlen(s)))
        return 0;
    return jerr_set(e, EILSEQ, "--upload: %s: %s is not valid UTF-8, which the API cannot carry", disk, what);
}

static char *join(const char *dir, const char *name)
{
    size_t l = strlen(dir);
    char *out;
    if (asprintf(&out, "%s%s%s", dir, l && dir[l - 1] == '/' ? "" : "/", name) < 0)
        abort();
    return out;
}

/* Reads a whole regular file; O_NOFOLLOW/O_NONBLOCK keep a file swapped for a symlink or a
 * FIFO after the stat from being followed or blocking. */
static char *slurp(const char *disk, bool follow, size_t *len, jerr *e)
{
    int fd = open(disk, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW));
    if (fd < 0) {
        sys_error(e, disk);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        sys_error(e, disk);
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        jerr_set(e, EINVAL, "--upload: %s: changed from a file to something else while being read", disk);
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *data = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            data = xrealloc(data, cap);
        }
        ssize_t r = read(fd, data + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            sys_error(e, disk);
            free(data);
            close(fd);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return data;
}

static int add_file(upload_set *u, const char *disk, const char *rel, mode_t mode, bool follow, jerr *e)
{
    size_t len;
    char *data = slurp(disk, follow, &len, e);
    if (!data)
        return -1;
    char *b64 = b64_encode(data, len);
    free(data);
    if (!b64)
        abort();
    json_t *o = json_pack("{s:s, s:s, s:i, s:s}", "path", rel, "type", "file", "mode", (int)(mode & 07777),
                          "content_b64", b64);
    free(b64);
    json_array_append_new(u->entries, o);
    u->bytes += len;
    u->nfiles++;
    return 0;
}

static int add_symlink(upload_set *u, const char *disk, const char *rel, jerr *e)
{
    char target[PATH_MAX];
    ssize_t n = readlink(disk, target, sizeof target - 1);
    if (n < 0)
        return sys_error(e, disk);
    target[n] = 0;
    if (check_text(disk, target, "the link's target", e) < 0)
        return -1;
    json_array_append_new(u->entries, json_pack("{s:s, s:s, s:s}", "path", rel, "type", "symlink", "target", target));
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_entry(upload_set *u, const char *disk, const char *rel, const struct stat *st, bool top, jerr *e);

/* The directory entry first, then its contents in name order (stable across runs). */
static int add_dir(upload_set *u, const char *disk, const char *rel, mode_t mode, jerr *e)
{
    json_array_append_new(u->entries, json_pack("{s:s, s:s, s:i}", "path", rel, "type", "dir", "mode",
                                                 (int)(mode & 07777)));
    DIR *d = opendir(disk);
    if (!d)
        return sys_error(e, disk);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(de->d_name);
    }
    int ret = errno ? sys_error(e, disk) : 0;
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n && ret == 0; i++) {
        char *cdisk = join(disk, names[i]);
        char *crel = join(rel, names[i]);
        struct stat cst;
        if (lstat(cdisk, &cst) < 0)
            ret = sys_error(e, cdisk);
        else
            ret = add_entry(u, cdisk, crel, &cst, false, e);
        free(cdisk);
        free(crel);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return ret;
}

static int add_entry(upload_set *u, const char *disk, const char *rel, const struct stat *st, bool top, jerr *e)
{
    if (check_text(disk, rel, "the name", e) < 0)
        return -1;
    if (S_ISDIR(st->st_mode))
        return add_dir(u, disk, rel, st->st_mode, e);
    if (S_ISREG(st->st_mode))
        return add_file(u, disk, rel, st->st_mode, top, e);
    if (S_ISLNK(st->st_mode))
        return add_symlink(u, disk, rel, e);
    return jerr_set(e, EINVAL, "--upload: %s: is %s; only files, directories and symlinks can be uploaded", disk,
                    kind_name(st->st_mode));
}

/* The name the job sees: the last component of path ("/a/data/" -> "data"). "." and ".."
 * have no name of their own, so the directory's real name is used. */
static char *top_name(const char *path, jerr *e)
{
    char *copy = xstrdup(path);
    size_t l = strlen(copy);
    while (l > 1 && copy[l - 1] == '/')
        copy[--l] = 0;
    const char *slash = strrchr(copy, '/');
    const char *base = slash ? slash + 1 : copy;
    if (*base && strcmp(base, ".") != 0 && strcmp(base, "..") != 0) {
        char *out = xstrdup(base);
        free(copy);
        return out;
    }
    free(copy);
    char *real = realpath(path, NULL);
    if (!real) {
        sys_error(e, path);
        return NULL;
    }
    slash = strrchr(real, '/');
    char *out = slash && slash[1] ? xstrdup(slash + 1) : NULL;
    free(real);
    if (!out)
        jerr_set(e, EINVAL, "--upload: %s: cannot upload the root directory; name what is inside it", path);
    return out;
}

/* Refuses a second upload landing on a name already taken by an earlier --upload. */
static int claim_name(upload_set *u, const char *name, const char *path, jerr *e)
{
    for (size_t i = 0; i < u->nnames; i++)
        if (strcmp(u->names[i], name) == 0)
            return jerr_set(e, EEXIST, "--upload: %s and %s would both be '%s' in the job", u->sources[i], path,
                            name);
    u->names = xrealloc(u->names, (u->nnames + 1) * sizeof *u->names);
    u->sources = xrealloc(u->sources, (u->nnames + 1) * sizeof *u->sources);
    u->names[u->nnames] = xstrdup(name);
    u->sources[u->nnames] = xstrdup(path);
    u->nnames++;
    return 0;
}

int upload_add(upload_set *u, const char *path, jerr *e)
{
    struct stat st;
    if (!*path)
        return jerr_set(e, EINVAL, "--upload: needs a path");
    /* stat, not lstat: a symlink named on the command line stands for its target */
    if (stat(path, &st) < 0)
        return sys_error(e, path);
    char *name = top_name(path, e);
    if (!name)
        return -1;
    int ret = claim_name(u, name, path, e);
    if (ret == 0)
        ret = add_entry(u, path, name, &st, true, e);
    free(name);
    return ret;
}
