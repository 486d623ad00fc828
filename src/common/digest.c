/* SHA-256 of bytes and of directory trees (digest.h). The tree walk uses *at() calls on
 * directory fds opened with O_NOFOLLOW, so a link inside the tree cannot lead it outside. */
#include "digest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util.h"

#define TREE_MAX_DEPTH 256

static void hex(const uint8_t *d, char out[DIGEST_HEX])
{
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

void digest_sha256_hex(const void *data, size_t len, char out[DIGEST_HEX])
{
    struct sha256_ctx c;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&c);
    sha256_update(&c, len, data);
    sha256_digest(&c, sizeof d, d);
    hex(d, out);
}

/* Feeds the rest of fd to c; -1 on a read error (errno set). */
static int feed_fd(struct sha256_ctx *c, int fd, char *buf, size_t cap)
{
    for (;;) {
        ssize_t n = read(fd, buf, cap);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        sha256_update(c, (size_t)n, (const uint8_t *)buf);
    }
}

int digest_file(const char *path, char out[DIGEST_HEX], jerr *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return jerr_sys(e, "%s", path);
    struct sha256_ctx c;
    sha256_init(&c);
    char *buf = xmalloc(1 << 17);
    int rc = feed_fd(&c, fd, buf, 1 << 17);
    free(buf);
    close(fd);
    if (rc < 0)
        return jerr_sys(e, "read %s", path);
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(&c, sizeof d, d);
    hex(d, out);
    return 0;
}

typedef struct walk {
    struct sha256_ctx c;
    char *buf;                /* file contents pass through here */
    size_t cap;
    char path[4096];          /* relative, "./usr/bin" */
    digest_tree_info info;
    struct { dev_t dev; ino_t ino; } *seen; /* inodes with more than one link, counted once */
    size_t nseen, capseen;
    jerr *e;
} walk;

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void count_disk(walk *w, const struct stat *st)
{
    if (st->st_nlink > 1 && !S_ISDIR(st->st_mode)) {
        for (size_t i = 0; i < w->nseen; i++)
            if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino)
                return;
        if (w->nseen == w->capseen) {
            w->capseen = w->capseen ? w->capseen * 2 : 64;
            w->seen = xrealloc(w->seen, w->capseen * sizeof *w->seen);
        }
        w->seen[w->nseen].dev = st->st_dev;
        w->seen[w->nseen++].ino = st->st_ino;
    }
    w->info.disk_bytes += (uint64_t)st->st_blocks * 512;
}

static int entry(walk *w, int dfd, const char *name, int depth);

/* The entries of directory fd (taken over), sorted, each hashed. */
static int walk_dir(walk *w, int fd, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return jerr_sys(w->e, "open %s", w->path);
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(de->d_name);
    }
    int rc = 0;
    if (errno)
        rc = jerr_sys(w->e, "read the directory %s", w->path);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = entry(w, dirfd(d), names[i], depth);
        free(names[i]);
    }
    free(names);
    closedir(d);
    return rc;
}

static int entry(walk *w, int dfd, const char *name, int depth)
{
    size_t plen = strlen(w->path);
    if (plen + 1 + strlen(name) >= sizeof w->path)
        return jerr_set(w->e, ENAMETOOLONG, "%s/%s: path too long", w->path, name);
    snprintf(w->path + plen, sizeof w->path - plen, "/%s", name);
    struct stat st;
    int rc = 0;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = jerr_sys(w->e, "stat %s", w->path);
        goto out;
    }
    char type = S_ISREG(st.st_mode) ? 'f' : S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l'
              : S_ISCHR(st.st_mode) ? 'c' : S_ISBLK(st.st_mode) ? 'b' : S_ISFIFO(st.st_mode) ? 'p' : 's';
    char head[4300];
    int hn = snprintf(head, sizeof head, "%c %04o %u %u %s\n", type, (unsigned)(st.st_mode & 07777),
                      (unsigned)st.st_uid, (unsigned)st.st_gid, w->path);
    sha256_update(&w->c, (size_t)hn, (const uint8_t *)head);
    w->info.entries++;
    count_disk(w, &st);
    if (type == 'f') {
        int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            rc = jerr_sys(w->e, "open %s", w->path);
            goto out;
        }
        hn = snprintf(head, sizeof head, "%llu\n", (unsigned long long)st.st_size);
        sha256_update(&w->c, (size_t)hn, (const uint8_t *)head);
        if (feed_fd(&w->c, fd, w->buf, w->cap) < 0)
            rc = jerr_sys(w->e, "read %s", w->path);
        close(fd);
    } else if (type == 'l') {
        char target[4096];
        ssize_t n = readlinkat(dfd, name, target, sizeof target);
        if (n < 0 || (size_t)n >= sizeof target) {
            rc = n < 0 ? jerr_sys(w->e, "readlink %s", w->path) : jerr_set(w->e, ENAMETOOLONG, "%s: link too long", w->path);
            goto out;
        }
        sha256_update(&w->c, (size_t)n, (const uint8_t *)target);
        sha256_update(&w->c, 1, (const uint8_t *)"\n");
    } else if (type == 'c' || type == 'b') {
        hn = snprintf(head, sizeof head, "%u:%u\n", major(st.st_rdev), minor(st.st_rdev));
        sha256_update(&w->c, (size_t)hn, (const uint8_t *)head);
    } else if (type == 'd') {
        if (depth >= TREE_MAX_DEPTH) {
            rc = jerr_set(w->e, ELOOP, "%s: more than %d directories deep", w->path, TREE_MAX_DEPTH);
            goto out;
        }
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        rc = fd < 0 ? jerr_sys(w->e, "open %s", w->path) : walk_dir(w, fd, depth + 1);
    }
out:
    w->path[plen] = 0;
    return rc;
}

int digest_tree(const char *root, char out[DIGEST_HEX], digest_tree_info *info, jerr *e)
{
    walk *w = xcalloc(1, sizeof *w);
    w->cap = 1 << 17;
    w->buf = xmalloc(w->cap);
    w->e = e;
    snprintf(w->path, sizeof w->path, ".");
    sha256_init(&w->c);
    int rc;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        rc = jerr_sys(e, "open %s", root);
    else
        rc = walk_dir(w, fd, 0);
    if (rc == 0) {
        uint8_t d[SHA256_DIGEST_SIZE];
        sha256_digest(&w->c, sizeof d, d);
        hex(d, out);
        if (info)
            *info = w->info;
    }
    free(w->seen);
    free(w->buf);
    free(w);
    return rc;
}
