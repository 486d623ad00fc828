/* Small file helpers of the cgroup code (cgroup.c, cgroup_v1.c, cgroup_v2.c): control files
 * by directory and name, numbers and flat keyed files. */
#include "cgroup_fs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/util.h"

int cg_file_path(char *out, size_t outlen, const char *dir, const char *file)
{
    int n = snprintf(out, outlen, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= outlen) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int cg_write(const char *dir, const char *file, const char *value, jerr *e)
{
    char path[PATH_MAX];
    if (cg_file_path(path, sizeof path, dir, file) < 0)
        return jerr_sys(e, "cgroup path %s/%s", dir, file);
    if (write_string(path, value) < 0)
        return jerr_sys(e, "write \"%s\" to %s", value, path);
    return 0;
}

bool cg_has_file(const char *dir, const char *file)
{
    char path[PATH_MAX];
    return cg_file_path(path, sizeof path, dir, file) == 0 && access(path, F_OK) == 0;
}

char *cg_read(const char *dir, const char *file)
{
    char path[PATH_MAX];
    if (cg_file_path(path, sizeof path, dir, file) < 0)
        return NULL;
    return read_file(path, NULL);
}

int cg_parse_num(const char *s, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || (*end && !isspace((unsigned char)*end)))
        return -1;
    *out = v;
    return 0;
}

/* A control file into buf (NUL-terminated): its length, or -1 (errno); len - 1 when it may not
 * have fit. The numbers and keyed files read at every job's end are read this way, not through
 * read_file: its malloc of a page-sized buffer makes glibc consolidate the heap the shim inherited
 * from its zygote, writing to pages all over it, each a copy-on-write fault (docs/performance.md). */
static ssize_t read_small(const char *dir, const char *file, char *buf, size_t len)
{
    char path[PATH_MAX];
    if (cg_file_path(path, sizeof path, dir, file) < 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n < len - 1) {
        ssize_t r = read(fd, buf + n, len - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

int cg_read_u64(const char *dir, const char *file, uint64_t *out)
{
    char buf[64];
    ssize_t n = read_small(dir, file, buf, sizeof buf);
    if (n < 0 || (size_t)n == sizeof buf - 1) /* (no number is that long) */
        return -1;
    return cg_parse_num(buf, out);
}

static int keyed_in(char *s, const char *key, uint64_t *out)
{
    size_t klen = strlen(key);
    char *save = NULL;
    for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (!strncmp(line, key, klen) && line[klen] == ' ')
            return cg_parse_num(line + klen + 1, out);
    return -1;
}

int cg_read_keyed(const char *dir, const char *file, const char *key, uint64_t *out)
{
    char buf[4096];
    ssize_t n = read_small(dir, file, buf, sizeof buf);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof buf - 1)
        return keyed_in(buf, key, out);
    char *s = cg_read(dir, file); /* a file longer than the buffer (memory.stat on a big machine) */
    if (!s)
        return -1;
    int rc = keyed_in(s, key, out);
    free(s);
    return rc;
}
