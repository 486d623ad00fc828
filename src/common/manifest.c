/* Runtime manifests (manifest.h). Written as plain YAML, every string double-quoted with
 * JSON-compatible escapes (valid YAML), so any text round-trips; read with libfyaml. */
#include "manifest.h"

#include <errno.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "util.h"

static const char *scalar_at(struct fy_node *root, const char *path)
{
    struct fy_node *n = fy_node_by_path(root, path, (size_t)-1, FYNWF_DONT_FOLLOW);
    return n && fy_node_is_scalar(n) ? fy_node_get_scalar0(n) : NULL;
}

static void copy(char *dst, size_t len, struct fy_node *root, const char *path)
{
    const char *s = scalar_at(root, path);
    snprintf(dst, len, "%s", s ? s : "");
}

static void list_at(struct fy_node *root, const char *path, char ***out, size_t *n)
{
    struct fy_node *l = fy_node_by_path(root, path, (size_t)-1, FYNWF_DONT_FOLLOW);
    void *it = NULL;
    struct fy_node *item;
    while (l && fy_node_is_sequence(l) && (item = fy_node_sequence_iterate(l, &it)))
        if (fy_node_is_scalar(item) && *n < 4096) {
            *out = xrealloc(*out, (*n + 1) * sizeof **out);
            (*out)[(*n)++] = xstrdup(fy_node_get_scalar0(item));
        }
}

int manifest_read(const char *path, manifest *m, jerr *e)
{
    memset(m, 0, sizeof *m);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_DISABLE_RECYCLING};
    struct fy_document *doc = fy_document_build_from_file(&cfg, path);
    if (!doc)
        return jerr_set(e, EINVAL, "%s cannot be read as YAML", path);
    struct fy_node *root = fy_document_root(doc);
    int rc = 0;
    if (!root || !fy_node_is_mapping(root) || !scalar_at(root, "/name")) {
        rc = jerr_set(e, EINVAL, "%s is not a runtime manifest: it has no name", path);
        goto out;
    }
    copy(m->name, sizeof m->name, root, "/name");
    copy(m->version, sizeof m->version, root, "/version");
    copy(m->architecture, sizeof m->architecture, root, "/architecture");
    copy(m->suite, sizeof m->suite, root, "/suite");
    copy(m->mirror, sizeof m->mirror, root, "/mirror");
    copy(m->builder, sizeof m->builder, root, "/builder");
    copy(m->recipe, sizeof m->recipe, root, "/recipe");
    copy(m->recipe_sha256, sizeof m->recipe_sha256, root, "/recipe_sha256");
    copy(m->rootfs_sha256, sizeof m->rootfs_sha256, root, "/rootfs_sha256");
    copy(m->built_at, sizeof m->built_at, root, "/built_at");
    const char *s = scalar_at(root, "/description");
    m->description = xstrdup(s ? s : "");
    s = scalar_at(root, "/test");
    m->test = s && *s ? xstrdup(s) : NULL;
    uint64_t v;
    if ((s = scalar_at(root, "/size_bytes")) && parse_u64(s, &v) == 0)
        m->size_bytes = v;
    if ((s = scalar_at(root, "/installed_packages")) && parse_u64(s, &v) == 0)
        m->installed_packages = v;
    list_at(root, "/provides", &m->provides, &m->nprovides);
    list_at(root, "/packages", &m->packages, &m->npackages);
    struct fy_node *env = fy_node_by_path(root, "/env", (size_t)-1, FYNWF_DONT_FOLLOW);
    void *it = NULL;
    struct fy_node_pair *p;
    while (env && fy_node_is_mapping(env) && (p = fy_node_mapping_iterate(env, &it))) {
        struct fy_node *k = fy_node_pair_key(p), *val = fy_node_pair_value(p);
        if (!k || !val || !fy_node_is_scalar(k) || !fy_node_is_scalar(val) || !env_key_valid(fy_node_get_scalar0(k))) {
            rc = jerr_set(e, EINVAL, "%s: env must map NAME to a string", path);
            goto out;
        }
        m->env = xrealloc(m->env, (m->nenv + 1) * sizeof *m->env);
        m->env[m->nenv++] = (recipe_env){xstrdup(fy_node_get_scalar0(k)), xstrdup(fy_node_get_scalar0(val))};
    }
out:
    fy_document_destroy(doc);
    if (rc < 0)
        manifest_free(m);
    return rc;
}

/* s as a YAML double-quoted scalar. */
static void quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void kv(FILE *f, const char *key, const char *val)
{
    fprintf(f, "%s: ", key);
    quoted(f, val);
    fputc('\n', f);
}

static void list(FILE *f, const char *key, char *const *items, size_t n)
{
    fprintf(f, "%s:%s\n", key, n ? "" : " []");
    for (size_t i = 0; i < n; i++) {
        fputs("  - ", f);
        quoted(f, items[i]);
        fputc('\n', f);
    }
}

int manifest_write(const char *path, const manifest *m, jerr *e)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return jerr_sys(e, "open_memstream");
    fprintf(f, "# written by joblet-runtime-build; docs/runtimes.md\n");
    kv(f, "name", m->name);
    kv(f, "version", m->version);
    kv(f, "description", m->description);
    list(f, "provides", m->provides, m->nprovides);
    kv(f, "architecture", m->architecture);
    kv(f, "suite", m->suite);
    kv(f, "mirror", m->mirror);
    kv(f, "builder", m->builder);
    list(f, "packages", m->packages, m->npackages);
    fprintf(f, "installed_packages: %llu\n", (unsigned long long)m->installed_packages);
    fprintf(f, "env:%s\n", m->nenv ? "" : " {}");
    for (size_t i = 0; i < m->nenv; i++) {
        fprintf(f, "  %s: ", m->env[i].name);
        quoted(f, m->env[i].value);
        fputc('\n', f);
    }
    if (m->test)
        kv(f, "test", m->test);
    kv(f, "recipe", m->recipe);
    kv(f, "recipe_sha256", m->recipe_sha256);
    kv(f, "rootfs_sha256", m->rootfs_sha256);
    fprintf(f, "size_bytes: %llu\n", (unsigned long long)m->size_bytes);
    kv(f, "built_at", m->built_at);
    if (fclose(f) != 0) {
        free(text);
        return jerr_sys(e, "format %s", path);
    }
    int rc = write_file_atomic(path, text, len, 0644, e);
    free(text);
    return rc;
}

void manifest_free(manifest *m)
{
    free(m->description);
    for (size_t i = 0; i < m->nprovides; i++)
        free(m->provides[i]);
    free(m->provides);
    for (size_t i = 0; i < m->npackages; i++)
        free(m->packages[i]);
    free(m->packages);
    for (size_t i = 0; i < m->nenv; i++)
        free(m->env[i].name), free(m->env[i].value);
    free(m->env);
    free(m->test);
    memset(m, 0, sizeof *m);
}
