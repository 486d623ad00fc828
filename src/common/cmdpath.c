/* A job's command's paths (cmdpath.h). */
#include "cmdpath.h"

#include <stdio.h>
#include <string.h>

int cmdpath_normalize(const char *base, const char *path, char *out, size_t n)
{
    char joined[8192];
    int l = path[0] == '/' ? snprintf(joined, sizeof joined, "%s", path)
                           : snprintf(joined, sizeof joined, "%s/%s", base, path);
    if (l < 0 || (size_t)l >= sizeof joined || n < 2)
        return -1;
    size_t o = 0;
    out[o++] = '/';
    out[o] = 0;
    for (const char *p = joined; *p;) {
        while (*p == '/')
            p++;
        size_t k = strcspn(p, "/");
        if (!k)
            break;
        if (k == 1 && p[0] == '.') {
            /* nothing */
        } else if (k == 2 && p[0] == '.' && p[1] == '.') {
            while (o > 1 && out[o - 1] != '/')
                o--;
            if (o > 1)
                o--;          /* the slash before the component taken out */
            out[o] = 0;
        } else {
            if (o + (o > 1) + k + 1 > n)
                return -1;
            if (o > 1)
                out[o++] = '/';
            memcpy(out + o, p, k);
            o += k;
            out[o] = 0;
        }
        p += k;
    }
    return 0;
}

const char *cmdpath_under(const char *path, const char *dir)
{
    size_t l = strlen(dir);
    if (strncmp(path, dir, l))
        return NULL;
    if (!path[l])
        return path + l;
    return path[l] == '/' ? path + l + 1 : NULL;
}

bool cmdpath_in_dirs(const char *path, const char *const *dirs)
{
    for (size_t i = 0; dirs[i]; i++)
        if (cmdpath_under(path, dirs[i]))
            return true;
    return false;
}

const char *cmdpath_next(const char *list, char *dir, size_t n)
{
    if (!list)
        return NULL;
    size_t k = strcspn(list, ":");
    snprintf(dir, n, "%.*s", (int)(k ? k : 1), k ? list : ".");
    return list[k] ? list + k + 1 : NULL;
}
