/* Small file helpers of the cgroup code (cgroup.c, cgroup_v1.c, cgroup_v2.c): control files
 * by directory and name, numbers and flat keyed files. */
#include "cgroup_fs.h"

#include <ctype.h>
#include <errno.h>
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

int cg_read_u64(const char *dir, const char *file, uint64_t *out)
{
    char *s = cg_read(dir, file);
    if (!s)
        return -1;
    int rc = cg_parse_num(s, out);
    free(s);
    return rc;
}

int cg_read_keyed(const char *dir, const char *file, const char *key, uint64_t *out)
{
    char *s = cg_read(dir, file);
    if (!s)
        return -1;
    size_t klen = strlen(key);
    int rc = -1;
    char *save = NULL;
    for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, key, klen) && line[klen] == ' ') {
            rc = cg_parse_num(line + klen + 1, out);
            break;
        }
    }
    free(s);
    return rc;
}
