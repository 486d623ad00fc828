/* Runtime recipes (recipe.h). The YAML is read with libfyaml into a document, then walked
 * against the table of keys below; nothing of a refused recipe is kept. */
#include "recipe.h"

#include <ctype.h>
#include <errno.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "parse.h"
#include "util.h"

/* The keys of a recipe, in the order a refusal lists them. */
static const char *const recipe_keys[] = {
    "name",          /* required: the runtime's name (rnx job run --runtime=NAME) */
    "version",       /* required: the recipe's own version, shown by rnx runtime list */
    "description",   /* optional: one sentence */
    "suite",         /* required: the Debian suite, e.g. bookworm */
    "mirror",        /* optional: http(s):// or file:/// URL of a Debian mirror */
    "components",    /* optional: archive components, default [main] */
    "variant",       /* optional: mmdebstrap's package set to start from, default apt */
    "packages",      /* required: Debian packages to install (their dependencies come along) */
    "recommends",    /* optional: install the packages' Recommends too; default false */
    "exclude_paths", /* optional: dpkg path-exclude patterns; default docs, man and info pages */
    "provides",      /* optional: LABEL: PACKAGE [NOTE], reported with the installed version */
    "env",           /* optional: NAME: value set in every job of the runtime */
    "test",          /* optional: a shell command that exits 0 when the runtime works */
    "customize",     /* optional: shell scripts run inside the new tree after the packages */
};

/* What `variant` accepts: mmdebstrap's names (debootstrap maps them to its own). */
static const char *const variants[] = {"apt", "minbase", "essential", "required", "important", "standard"};

/* The default exclude_paths: documentation nobody reads inside a job; copyright files stay. */
static const char *const default_exclude[] = {"/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*"};

static const char *scalar(struct fy_node *n)
{
    return n && fy_node_is_scalar(n) ? fy_node_get_scalar0(n) : NULL;
}

/* Printable text without control characters, at most max bytes. */
static bool text_ok(const char *s, size_t max)
{
    if (strlen(s) > max)
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

bool recipe_package_ok(const char *s)
{
    size_t n = strcspn(s, "=");
    if (n < 2 || n > 100 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || strchr("+-.", s[i])))
            return false;
    if (!s[n])
        return true;
    const char *v = s + n + 1;
    if (!*v || strlen(v) > 100 || !isdigit((unsigned char)*v))
        return false;
    for (; *v; v++)
        if (!(isalnum((unsigned char)*v) || strchr(".+~:-", *v)))
            return false;
    return true;
}

void recipe_upstream_version(const char *debian, char *out, size_t len)
{
    const char *colon = strchr(debian, ':');
    const char *v = colon && colon - debian < 6 ? colon + 1 : debian;
    const char *dash = strrchr(v, '-');
    size_t n = dash ? (size_t)(dash - v) : strlen(v);
    size_t cut = strcspn(v, "+~");
    if (cut < n && cut > 0)
        n = cut;
    snprintf(out, len, "%.*s", (int)n, v);
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 64 && s[0] != '.' &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static bool url_ok(const char *s)
{
    if (strncmp(s, "http://", 7) && strncmp(s, "https://", 8) && strncmp(s, "file:///", 8))
        return false;
    if (strlen(s) > 255 || strlen(s) < 9)
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f || strchr("'\"\\`<>{}|^", *p))
            return false;
    return true;
}

static bool word_ok(const char *s, size_t max, const char *extra)
{
    size_t n = strlen(s);
    if (!n || n > max)
        return false;
    for (const char *p = s; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || strchr(extra, *p)))
            return false;
    return true;
}

static bool pattern_ok(const char *s)
{
    if (s[0] != '/' || strlen(s) > 200)
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f || *p == ',' || *p == '\'' || *p == '"' || *p == '\\')
            return false;
    return true;
}

/* A list of scalars into *out, each checked with ok(); refusals name key[i]. */
static int read_list(struct fy_node *n, const char *key, size_t max, bool (*ok)(const char *),
                     const char *accepted, char ***out, size_t *nout, jerr *e)
{
    if (!fy_node_is_sequence(n))
        return jerr_field(e, key, "%s: must be a list (YAML '- item' lines or [a, b]) of %s", key, accepted);
    void *it = NULL;
    struct fy_node *item;
    size_t i = 0;
    while ((item = fy_node_sequence_iterate(n, &it))) {
        char field[64];
        snprintf(field, sizeof field, "%s[%zu]", key, i);
        const char *s = scalar(item);
        if (!s)
            return jerr_field(e, field, "%s: must be a single value: %s", field, accepted);
        if (!ok(s))
            return jerr_field(e, field, "%s: '%.120s' is not accepted; give %s", field, s, accepted);
        if (++i > max)
            return jerr_field(e, key, "%s: at most %zu items", key, max);
        for (size_t k = 0; k < *nout; k++)
            if (!strcmp((*out)[k], s))
                return jerr_field(e, field, "%s: '%.120s' is listed twice", field, s);
        *out = xrealloc(*out, (*nout + 1) * sizeof **out);
        (*out)[(*nout)++] = xstrdup(s);
    }
    return 0;
}

static bool component_ok(const char *s) { return word_ok(s, 32, "-/"); }
static bool package_item_ok(const char *s) { return recipe_package_ok(s); }

/* provides: LABEL: PACKAGE [NOTE] */
static int read_provides(struct fy_node *n, recipe *r, jerr *e)
{
    if (!fy_node_is_mapping(n))
        return jerr_field(e, "provides", "provides: must be a mapping of LABEL: PACKAGE [NOTE], e.g. "
                                         "'torch: python3-torch (CPU)'");
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
        const char *label = scalar(fy_node_pair_key(p)), *val = scalar(fy_node_pair_value(p));
        char field[120];
        snprintf(field, sizeof field, "provides.%.64s", label ? label : "?");
        if (!label || !*label || !text_ok(label, 64))
            return jerr_field(e, "provides", "provides: each label must be text of 1 to 64 characters, e.g. numpy");
        if (!val)
            return jerr_field(e, field, "%s: must be a Debian package name, optionally followed by a note, e.g. "
                                        "'python3-torch (CPU)'", field);
        char pkg[128];
        size_t pn = strcspn(val, " \t");
        snprintf(pkg, sizeof pkg, "%.*s", (int)(pn < sizeof pkg ? pn : sizeof pkg - 1), val);
        const char *note = val + pn;
        while (*note == ' ' || *note == '\t')
            note++;
        if (pn >= sizeof pkg || strchr(pkg, '=') || !recipe_package_ok(pkg))
            return jerr_field(e, field, "%s: '%.120s' does not start with a Debian package name (lowercase letters, "
                                        "digits, + - .), e.g. 'python3-torch (CPU)'", field, val);
        if (!text_ok(note, 64))
            return jerr_field(e, field, "%s: the note after the package must be at most 64 characters of text", field);
        if (r->nprovides == RECIPE_MAX_ITEMS)
            return jerr_field(e, "provides", "provides: at most %d entries", RECIPE_MAX_ITEMS);
        r->provides = xrealloc(r->provides, (r->nprovides + 1) * sizeof *r->provides);
        r->provides[r->nprovides++] = (recipe_provide){xstrdup(label), xstrdup(pkg), *note ? xstrdup(note) : NULL};
    }
    return 0;
}

/* customize: a list of scripts, each text (newlines and tabs allowed) of a bounded size. */
static int read_customize(struct fy_node *n, recipe *r, jerr *e)
{
    static const char accepted[] = "a list of shell scripts (YAML '- |' blocks), each 1 to 16384 bytes of "
                                   "UTF-8 text, run in the new tree after its packages are installed";
    if (!fy_node_is_sequence(n))
        return jerr_field(e, "customize", "customize: must be %s", accepted);
    void *it = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(n, &it))) {
        char field[32];
        snprintf(field, sizeof field, "customize[%zu]", r->ncustomize);
        if (r->ncustomize == RECIPE_MAX_CUSTOMIZE)
            return jerr_field(e, "customize", "customize: at most %d scripts", RECIPE_MAX_CUSTOMIZE);
        size_t len = 0;
        const char *s = fy_node_is_scalar(item) ? fy_node_get_scalar(item, &len) : NULL;
        if (!s)
            return jerr_field(e, field, "%s: must be a single script (text), not a list or mapping; customize is %s",
                              field, accepted);
        bool blank = true;
        for (size_t i = 0; i < len; i++)
            if (!isspace((unsigned char)s[i]))
                blank = false;
        if (blank || len > RECIPE_MAX_SCRIPT)
            return jerr_field(e, field, "%s: %zu bytes%s; each script is 1 to %d bytes of text", field, len,
                              blank ? " of blanks" : "", RECIPE_MAX_SCRIPT);
        if (memchr(s, 0, len) || !utf8_valid(s, len))
            return jerr_field(e, field, "%s: is not UTF-8 text (it holds a NUL byte or invalid UTF-8)", field);
        for (size_t i = 0; i < len; i++)
            if (((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7f)
                return jerr_field(e, field, "%s: holds control character 0x%02x at byte %zu; only newlines and "
                                            "tabs are accepted", field, (unsigned char)s[i], i);
        r->customize = xrealloc(r->customize, (r->ncustomize + 1) * sizeof *r->customize);
        char *copy = xmalloc(len + 1);
        memcpy(copy, s, len);
        copy[len] = 0;
        r->customize[r->ncustomize++] = copy;
    }
    if (!r->ncustomize)
        return jerr_field(e, "customize", "customize: is an empty list; leave the key out, or give %s", accepted);
    return 0;
}

static int read_env(struct fy_node *n, recipe *r, jerr *e)
{
    if (!fy_node_is_mapping(n))
        return jerr_field(e, "env", "env: must be a mapping of NAME: value, e.g. 'PYTHONDONTWRITEBYTECODE: \"1\"'");
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
        const char *k = scalar(fy_node_pair_key(p)), *v = scalar(fy_node_pair_value(p));
        if (!k || !env_key_valid(k))
            return jerr_field(e, "env", "env: '%.64s' is not a variable name (letters, digits and _, not starting "
                                        "with a digit)", k ? k : "?");
        char field[80];
        snprintf(field, sizeof field, "env.%.64s", k);
        if (!v || !text_ok(v, 4096))
            return jerr_field(e, field, "%s: must be a single line of text of at most 4096 bytes", field);
        if (r->nenv == RECIPE_MAX_ITEMS)
            return jerr_field(e, "env", "env: at most %d variables", RECIPE_MAX_ITEMS);
        r->env = xrealloc(r->env, (r->nenv + 1) * sizeof *r->env);
        r->env[r->nenv++] = (recipe_env){xstrdup(k), xstrdup(v)};
    }
    return 0;
}

/* A scalar key into a fixed buffer, checked. */
static int read_word(struct fy_node *v, const char *key, char *dst, size_t len, bool (*ok)(const char *),
                     const char *accepted, jerr *e)
{
    const char *s = scalar(v);
    if (!s)
        return jerr_field(e, key, "%s: must be a single value: %s", key, accepted);
    if (strlen(s) >= len || !ok(s))
        return jerr_field(e, key, "%s: '%.120s' is not accepted; give %s", key, s, accepted);
    snprintf(dst, len, "%s", s);
    return 0;
}

static bool version_ok(const char *s) { return *s && text_ok(s, 63) && !strchr(s, ' '); }
static bool suite_ok(const char *s) { return word_ok(s, 32, "-"); }
static bool variant_ok(const char *s)
{
    for (size_t i = 0; i < ARRAY_LEN(variants); i++)
        if (!strcmp(s, variants[i]))
            return true;
    return false;
}

static int walk(struct fy_node *root, recipe *r, jerr *e)
{
    if (!root || !fy_node_is_mapping(root))
        return jerr_field(e, NULL, "recipe: must be a YAML mapping of keys (name, version, suite, packages, ...)");
    bool have_name = false, have_version = false, have_suite = false, have_packages = false;
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(root, &it))) {
        const char *k = scalar(fy_node_pair_key(p));
        struct fy_node *v = fy_node_pair_value(p);
        size_t i;
        for (i = 0; k && i < ARRAY_LEN(recipe_keys); i++)
            if (!strcmp(k, recipe_keys[i]))
                break;
        if (!k || i == ARRAY_LEN(recipe_keys)) {
            char known[400] = "";
            for (size_t j = 0; j < ARRAY_LEN(recipe_keys); j++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", j ? ", " : "", recipe_keys[j]);
            return jerr_field(e, k && strlen(k) < 60 ? k : NULL, "%.60s: unknown key; a recipe takes %s",
                              k ? k : "(a key that is not text)", known);
        }
        if (!v || (fy_node_is_scalar(v) && !*fy_node_get_scalar0(v) && strcmp(k, "description")))
            return jerr_field(e, k, "%s: has no value", k);
        int rc = 0;
        if (!strcmp(k, "name")) {
            have_name = true;
            rc = read_word(v, k, r->name, sizeof r->name, name_ok,
                           "1 to 64 letters, digits, '.', '_' or '-', not starting with '.', e.g. python-3.11", e);
        } else if (!strcmp(k, "version")) {
            have_version = true;
            rc = read_word(v, k, r->version, sizeof r->version, version_ok,
                           "a version of at most 63 characters without spaces, e.g. \"1\" or 2024.1", e);
        } else if (!strcmp(k, "description")) {
            const char *s = scalar(v);
            if (!s || !text_ok(s, 511))
                rc = jerr_field(e, k, "description: must be one line of text of at most 511 bytes");
            else {
                free(r->description);
                r->description = xstrdup(s);
            }
        } else if (!strcmp(k, "suite")) {
            have_suite = true;
            rc = read_word(v, k, r->suite, sizeof r->suite, suite_ok,
                           "a Debian suite: lowercase letters, digits and '-', e.g. bookworm", e);
        } else if (!strcmp(k, "mirror")) {
            rc = read_word(v, k, r->mirror, sizeof r->mirror, url_ok,
                           "an http://, https:// or file:/// URL of a Debian mirror, e.g. http://deb.debian.org/debian",
                           e);
        } else if (!strcmp(k, "variant")) {
            rc = read_word(v, k, r->variant, sizeof r->variant, variant_ok,
                           "apt, minbase, essential, required, important or standard", e);
        } else if (!strcmp(k, "components")) {
            rc = read_list(v, k, 8, component_ok, "archive components such as main, contrib, non-free",
                           &r->components, &r->ncomponents, e);
            if (!rc && !r->ncomponents)
                rc = jerr_field(e, k, "components: must name at least one component, e.g. [main]");
        } else if (!strcmp(k, "packages")) {
            have_packages = true;
            rc = read_list(v, k, RECIPE_MAX_PACKAGES, package_item_ok,
                           "Debian package names (lowercase letters, digits, + - .; at least 2 characters), "
                           "optionally with =VERSION",
                           &r->packages, &r->npackages, e);
            if (!rc && !r->npackages)
                rc = jerr_field(e, k, "packages: must name at least one Debian package, e.g. [python3]");
        } else if (!strcmp(k, "recommends")) {
            const char *s = scalar(v);
            if (s && (!strcmp(s, "true") || !strcmp(s, "yes")))
                r->recommends = true;
            else if (s && (!strcmp(s, "false") || !strcmp(s, "no")))
                r->recommends = false;
            else
                rc = jerr_field(e, k, "recommends: must be true or false");
        } else if (!strcmp(k, "exclude_paths")) {
            r->exclude_given = true;
            rc = read_list(v, k, RECIPE_MAX_ITEMS, pattern_ok,
                           "absolute dpkg path patterns without spaces or commas, e.g. /usr/share/doc/*", &r->exclude,
                           &r->nexclude, e);
        } else if (!strcmp(k, "provides")) {
            rc = read_provides(v, r, e);
        } else if (!strcmp(k, "env")) {
            rc = read_env(v, r, e);
        } else if (!strcmp(k, "test")) {
            const char *s = scalar(v);
            if (!s || !*s || strlen(s) > RECIPE_MAX_TEST || !utf8_valid(s, strlen(s)))
                rc = jerr_field(e, k, "test: must be a shell command of 1 to %d bytes, e.g. \"python --version\"",
                                RECIPE_MAX_TEST);
            else
                r->test = xstrdup(s);
        } else if (!strcmp(k, "customize")) {
            rc = read_customize(v, r, e);
        }
        if (rc < 0)
            return -1;
    }
    const char *missing = !have_name ? "name" : !have_version ? "version" : !have_suite ? "suite"
                        : !have_packages ? "packages" : NULL;
    if (missing)
        return jerr_field(e, missing, "%s: is required; a recipe names at least name, version, suite and packages",
                          missing);
    return 0;
}

int recipe_parse(const char *text, size_t len, recipe *r, jerr *e)
{
    memset(r, 0, sizeof *r);
    if (len > RECIPE_MAX_BYTES)
        return jerr_field(e, NULL, "recipe: %zu bytes; a recipe is at most %d bytes", len, RECIPE_MAX_BYTES);
    if (memchr(text, 0, len))
        return jerr_field(e, NULL, "recipe: is not text (it holds a NUL byte)");
    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dc);
    if (diag)
        fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_DISABLE_RECYCLING, .diag = diag};
    struct fy_document *doc = fy_document_build_from_string(&cfg, text, len);
    int rc;
    if (!doc) {
        void *it = NULL;
        struct fy_diag_error *de = diag ? fy_diag_errors_iterate(diag, &it) : NULL;
        if (de)
            rc = jerr_field(e, NULL, "recipe: not valid YAML at line %d, column %d: %s", de->line + 1, de->column + 1,
                            de->msg);
        else
            rc = jerr_field(e, NULL, "recipe: not valid YAML");
    } else {
        rc = walk(fy_document_root(doc), r, e);
        fy_document_destroy(doc);
    }
    if (diag)
        fy_diag_destroy(diag);
    if (rc < 0) {
        recipe_free(r);
        return -1;
    }
    if (!r->variant[0])
        snprintf(r->variant, sizeof r->variant, "apt");
    if (!r->description)
        r->description = xstrdup("");
    if (!r->ncomponents) {
        r->components = xcalloc(1, sizeof *r->components);
        r->components[r->ncomponents++] = xstrdup("main");
    }
    if (!r->exclude_given)
        for (size_t i = 0; i < ARRAY_LEN(default_exclude); i++) {
            r->exclude = xrealloc(r->exclude, (r->nexclude + 1) * sizeof *r->exclude);
            r->exclude[r->nexclude++] = xstrdup(default_exclude[i]);
        }
    return 0;
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

void recipe_free(recipe *r)
{
    free(r->description);
    free_list(r->components, r->ncomponents);
    free_list(r->packages, r->npackages);
    free_list(r->exclude, r->nexclude);
    for (size_t i = 0; i < r->nprovides; i++)
        free(r->provides[i].label), free(r->provides[i].package), free(r->provides[i].note);
    free(r->provides);
    for (size_t i = 0; i < r->nenv; i++)
        free(r->env[i].name), free(r->env[i].value);
    free(r->env);
    free(r->test);
    free_list(r->customize, r->ncustomize);
    memset(r, 0, sizeof *r);
}
