/* CUDA toolkits on the host: the standard locations, every /usr/local/cuda-X.Y, and
 * gpu.cuda_paths; each with its version and whether the driver can run what it builds. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/util.h"
#include "gpu.h"

static const char *const standard[] = {"/usr/local/cuda", "/opt/cuda", "/usr/lib/cuda"};

/* version.json (CUDA >= 11.1): {"cuda": {"version": "12.2.2"}}; version.txt before it:
 * "CUDA Version 10.2.89"; failing both, a cuda-X.Y directory name. */
static void toolkit_version(gpu_cuda *t)
{
    char path[600];
    snprintf(path, sizeof path, "%s/version.json", t->real);
    json_t *j = json_load_file(path, 0, NULL);
    const char *v = j ? json_string_value(json_object_get(json_object_get(j, "cuda"), "version")) : NULL;
    if (v)
        snprintf(t->version, sizeof t->version, "%s", v);
    json_decref(j);
    if (!*t->version) {
        snprintf(path, sizeof path, "%s/version.txt", t->real);
        char *txt = read_file(path, NULL);
        char ver[16];
        if (txt && sscanf(txt, "CUDA Version %15s", ver) == 1)
            snprintf(t->version, sizeof t->version, "%s", ver);
        free(txt);
    }
    if (!*t->version) {
        const char *base = strrchr(t->real, '/');
        int ma, mi;
        if (base && sscanf(base + 1, "cuda-%d.%d", &ma, &mi) == 2)
            snprintf(t->version, sizeof t->version, "%d.%d", ma, mi);
    }
    if (sscanf(t->version, "%d.%d", &t->major, &t->minor) != 2)
        t->major = t->minor = -1;
}

/* Since CUDA 11 a toolkit runs on any driver of its major version (minor version
 * compatibility, without PTX JIT of newer code); a newer major needs a newer driver. */
static void compat(gpu_cuda *t, int driver_cuda)
{
    int tk = t->major * 1000 + t->minor * 10;
    if (t->major < 0 || driver_cuda <= 0)
        snprintf(t->compat, sizeof t->compat, "unknown");
    else if (tk <= driver_cuda)
        snprintf(t->compat, sizeof t->compat, "ok");
    else if (t->major == driver_cuda / 1000 && t->major >= 11)
        snprintf(t->compat, sizeof t->compat, "minor-version");
    else
        snprintf(t->compat, sizeof t->compat, "too-new");
}

static int add(const char *path, int driver_cuda, gpu_cuda *out, int n, int max)
{
    char real[PATH_MAX];
    struct stat st;
    if (n >= max || !realpath(path, real) || stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
        return n;
    for (int i = 0; i < n; i++)
        if (strcmp(out[i].real, real) == 0)
            return n; /* /usr/local/cuda is usually a link to one of the others */
    gpu_cuda *t = &out[n];
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    snprintf(t->real, sizeof t->real, "%s", real);
    toolkit_version(t);
    compat(t, driver_cuda);
    return n + 1;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

int gpu_cuda_detect(const gpu_config *c, int driver_cuda, gpu_cuda *out, int max)
{
    int n = 0;
    char path[600];
    const char *root = strcmp(c->cuda_search_root, "/") == 0 ? "" : c->cuda_search_root;
    for (size_t i = 0; i < sizeof standard / sizeof standard[0]; i++) {
        snprintf(path, sizeof path, "%s%s", root, standard[i]);
        n = add(path, driver_cuda, out, n, max);
    }
    snprintf(path, sizeof path, "%s/usr/local", root);
    DIR *d = opendir(path);
    if (d) {
        char names[32][64];
        int nn = 0;
        struct dirent *de;
        while ((de = readdir(d)) && nn < 32)
            if (strncmp(de->d_name, "cuda-", 5) == 0 && strlen(de->d_name) < 64)
                snprintf(names[nn++], 64, "%s", de->d_name);
        closedir(d);
        qsort(names, (size_t)nn, 64, name_cmp);
        for (int i = 0; i < nn; i++) {
            char p2[700];
            snprintf(p2, sizeof p2, "%s/%s", path, names[i]);
            n = add(p2, driver_cuda, out, n, max);
        }
    }
    for (int i = 0; i < c->ncuda_paths; i++)
        n = add(c->cuda_paths[i], driver_cuda, out, n, max);
    return n;
}

json_t *gpu_cuda_json(const gpu_cuda *list, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        const gpu_cuda *t = &list[i];
        json_t *o = json_object();
        json_object_set_new(o, "path", json_string(t->path));
        json_object_set_new(o, "real_path", json_string(t->real));
        json_object_set_new(o, "version", *t->version ? json_string(t->version) : json_null());
        json_object_set_new(o, "compatibility", json_string(t->compat));
        const char *need = t->major >= 0 ? gpu_cuda_min_driver(t->major * 1000 + t->minor * 10) : NULL;
        json_object_set_new(o, "min_driver", need ? json_string(need) : json_null());
        json_array_append_new(a, o);
    }
    return a;
}
