/* Unit tests of the runtimes' pure parts (docs/runtimes.md): recipes and their refusals,
 * Debian upstream versions, the machine's mirror from APT's sources, build progress read from a
 * real mmdebstrap log, manifests written and read back, and tree hashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/aptsrc.h"
#include "common/digest.h"
#include "common/manifest.h"
#include "common/recipe.h"
#include "common/rtprogress.h"
#include "common/util.h"

static const char good[] = "name: python-3.11\n"
                           "version: \"1\"\n"
                           "description: Python\n"
                           "suite: bookworm\n"
                           "packages: [python3, python-is-python3]\n"
                           "provides:\n"
                           "  python: python3\n"
                           "  torch: python3-torch (CPU)\n"
                           "env:\n"
                           "  PYTHONUNBUFFERED: \"1\"\n"
                           "test: python --version\n"
                           "customize:\n"
                           "  - |\n"
                           "    set -u\n"
                           "    echo one\n"
                           "  - \"echo\\ttwo\"\n";

static void test_recipe_good(void **state)
{
    (void)state;
    recipe r;
    jerr e = {0};
    assert_int_equal(recipe_parse(good, strlen(good), &r, &e), 0);
    assert_string_equal(r.name, "python-3.11");
    assert_string_equal(r.version, "1");
    assert_string_equal(r.suite, "bookworm");
    assert_string_equal(r.variant, "apt");        /* default */
    assert_string_equal(r.mirror, "");            /* the machine's */
    assert_int_equal(r.ncomponents, 1);
    assert_string_equal(r.components[0], "main");
    assert_int_equal(r.npackages, 2);
    assert_string_equal(r.packages[1], "python-is-python3");
    assert_int_equal(r.nexclude, 3);              /* docs, man, info by default */
    assert_int_equal(r.nprovides, 2);
    assert_string_equal(r.provides[1].label, "torch");
    assert_string_equal(r.provides[1].package, "python3-torch");
    assert_string_equal(r.provides[1].note, "(CPU)");
    assert_null(r.provides[0].note);
    assert_int_equal(r.nenv, 1);
    assert_string_equal(r.env[0].value, "1");
    assert_string_equal(r.test, "python --version");
    assert_int_equal(r.ncustomize, 2);
    assert_string_equal(r.customize[0], "set -u\necho one\n"); /* a block, newlines kept */
    assert_string_equal(r.customize[1], "echo\ttwo");
    recipe_free(&r);

    const char none[] = "name: x1\nversion: 2\nsuite: bookworm\npackages: [python3=3.11.2-1+b1]\nexclude_paths: []\n";
    assert_int_equal(recipe_parse(none, strlen(none), &r, &e), 0);
    assert_int_equal(r.nexclude, 0);
    assert_string_equal(r.packages[0], "python3=3.11.2-1+b1");
    assert_null(r.test);
    assert_int_equal(r.ncustomize, 0);
    recipe_free(&r);
}

/* Each bad recipe: the field the refusal names and words it must say. */
static const struct {
    const char *text, *field, *says;
} bad[] = {
    {"version: 1\nsuite: bookworm\npackages: [a1]\n", "name", "name: is required"},
    {"name: x\nsuite: bookworm\npackages: [a1]\n", "version", "version: is required"},
    {"name: x\nversion: 1\npackages: [a1]\n", "suite", "suite: is required"},
    {"name: x\nversion: 1\nsuite: bookworm\n", "packages", "packages: is required"},
    {"name: .x\nversion: 1\nsuite: bookworm\npackages: [a1]\n", "name", "not starting with '.'"},
    {"name: a/b\nversion: 1\nsuite: bookworm\npackages: [a1]\n", "name", "'a/b' is not accepted"},
    {"name: x\nversion: 1\nsuite: Bookworm\npackages: [a1]\n", "suite", "a Debian suite"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [python3, Python3]\n", "packages[1]", "'Python3' is not accepted"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [python3, python3]\n", "packages[1]", "listed twice"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: python3\n", "packages", "must be a list"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: []\n", "packages", "at least one"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\nmirror: ftp://x\n", "mirror", "http://, https:// or file:///"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\nvariant: huge\n", "variant", "apt, minbase"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\npacakges: [b1]\n", "pacakges", "unknown key"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\nprovides: [a1]\n", "provides", "LABEL: PACKAGE"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\nprovides:\n  torch: Torch\n", "provides.torch",
     "Debian package name"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\nenv:\n  1X: y\n", "env", "not a variable name"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\nexclude_paths: [usr/share]\n", "exclude_paths[0]",
     "absolute dpkg path patterns"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ntest: [a]\n", "test", "shell command"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ncustomize: echo hi\n", "customize",
     "must be a list of shell scripts"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ncustomize: []\n", "customize", "empty list"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ncustomize: [echo, [a]]\n", "customize[1]",
     "must be a single script"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ncustomize: [echo, \"  \"]\n", "customize[1]",
     "1 to 16384 bytes"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ncustomize: [\"echo \\0\"]\n", "customize[0]",
     "NUL byte"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ncustomize: [\"echo \\e\"]\n", "customize[0]",
     "control character 0x1b"},
    {"name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ncustomize:\n", "customize", "has no value"},
    {"name: [x\n", "", "not valid YAML at line"},
    {"- a\n- b\n", "", "must be a YAML mapping"},
};

static void test_recipe_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        recipe r;
        jerr e = {0};
        int rc = recipe_parse(bad[i].text, strlen(bad[i].text), &r, &e);
        if (rc != -1 || strcmp(e.field, bad[i].field) || !strstr(e.msg, bad[i].says) || e.http != 400)
            fail_msg("recipe %zu: rc %d, field '%s' (want '%s'), message '%s' (want '%s')", i, rc, e.field,
                     bad[i].field, e.msg, bad[i].says);
        /* the message starts with the field, as every refusal of the API does */
        if (*bad[i].field && strncmp(e.msg, bad[i].field, strlen(bad[i].field)))
            fail_msg("recipe %zu: '%s' does not start with '%s'", i, e.msg, bad[i].field);
    }
    char *big = xmalloc(RECIPE_MAX_BYTES + 2);
    memset(big, '#', RECIPE_MAX_BYTES + 1);
    big[RECIPE_MAX_BYTES + 1] = 0;
    recipe r;
    jerr e = {0};
    assert_int_equal(recipe_parse(big, RECIPE_MAX_BYTES + 1, &r, &e), -1);
    assert_non_null(strstr(e.msg, "at most 65536 bytes"));
    free(big);

    /* customize: 16 scripts at most, each of at most 16384 bytes */
    size_t cap = 24 * RECIPE_MAX_SCRIPT;
    char *t = xmalloc(cap);
    int n = snprintf(t, cap, "name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ncustomize:\n  - \"");
    memset(t + n, 'x', RECIPE_MAX_SCRIPT);
    snprintf(t + n + RECIPE_MAX_SCRIPT, cap - n - RECIPE_MAX_SCRIPT, "\"\n");
    assert_int_equal(recipe_parse(t, strlen(t), &r, &e), 0);
    assert_int_equal(strlen(r.customize[0]), RECIPE_MAX_SCRIPT);
    recipe_free(&r);
    snprintf(t + n + RECIPE_MAX_SCRIPT, cap - n - RECIPE_MAX_SCRIPT, "x\"\n");
    assert_int_equal(recipe_parse(t, strlen(t), &r, &e), -1);
    assert_string_equal(e.field, "customize[0]");
    assert_non_null(strstr(e.msg, "16385 bytes; each script is 1 to 16384 bytes"));
    n = snprintf(t, cap, "name: x\nversion: 1\nsuite: bookworm\npackages: [a1]\ncustomize:\n");
    for (int i = 0; i < RECIPE_MAX_CUSTOMIZE; i++)
        n += snprintf(t + n, cap - n, "  - echo %d\n", i);
    assert_int_equal(recipe_parse(t, strlen(t), &r, &e), 0);
    assert_int_equal(r.ncustomize, RECIPE_MAX_CUSTOMIZE);
    recipe_free(&r);
    snprintf(t + n, cap - n, "  - echo more\n");
    assert_int_equal(recipe_parse(t, strlen(t), &r, &e), -1);
    assert_string_equal(e.field, "customize");
    assert_non_null(strstr(e.msg, "at most 16 scripts"));
    free(t);
}

static void test_versions(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        {"3.11.2-1+b1", "3.11.2"}, {"1:1.24.2-1+deb12u1", "1.24.2"}, {"1.13.1+dfsg-4", "1.13.1"},
        {"1.5.3+dfsg-2", "1.5.3"}, {"2.36-9+deb12u14", "2.36"},      {"5.7-0.5~deb12u1", "5.7"},
        {"1.0", "1.0"},            {"2:6.2.1+dfsg1-1.1", "6.2.1"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        char out[64];
        recipe_upstream_version(pairs[i][0], out, sizeof out);
        assert_string_equal(out, pairs[i][1]);
    }
    assert_true(recipe_package_ok("python3-torch"));
    assert_true(recipe_package_ok("g++"));
    assert_true(recipe_package_ok("libc6=2.36-9"));
    assert_false(recipe_package_ok("x"));
    assert_false(recipe_package_ok("-x1"));
    assert_false(recipe_package_ok("a1="));
    assert_false(recipe_package_ok("a1;rm"));
}

static char tmpdir[64];

static void write_at(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    jerr e = {0};
    assert_int_equal(write_file_opt(path, text, strlen(text), 0644, 0, &e), 0);
}

static void test_aptsrc(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/joblet-test-apt-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char d[128], out[256];
    snprintf(d, sizeof d, "%s/sources.list.d", tmpdir);
    assert_int_equal(mkdir(d, 0755), 0);
    /* nothing configured */
    assert_int_equal(aptsrc_mirror(tmpdir, "bookworm", out, sizeof out), -1);
    /* deb822, as Debian 12 installs it: the security archive does not serve "bookworm" */
    write_at("sources.list.d/debian.sources",
             "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
             "URIs: http://deb.example.org/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
             "Types: deb-src\nURIs: http://src.example.org/debian/\nSuites: bookworm\n\n"
             "Enabled: no\nTypes: deb\nURIs: http://off.example.org/debian/\nSuites: bookworm\n\n"
             "Types: deb\nURIs: http://deb.example.org/debian/\nSuites: bookworm bookworm-updates\n"
             "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n");
    assert_int_equal(aptsrc_mirror(tmpdir, "bookworm", out, sizeof out), 0);
    assert_string_equal(out, "http://deb.example.org/debian");
    assert_int_equal(aptsrc_mirror(tmpdir, "trixie", out, sizeof out), -1);
    /* one-line style in sources.list is read first; options and cdrom: lines are skipped */
    write_at("sources.list", "# comment\ndeb cdrom:[Debian]/ bookworm main\n"
                             "deb [arch=amd64 signed-by=/k.gpg] https://mirror.example.net/debian/ bookworm main\n");
    assert_int_equal(aptsrc_mirror(tmpdir, "bookworm", out, sizeof out), 0);
    assert_string_equal(out, "https://mirror.example.net/debian");
    rm_rf(tmpdir);
}

static void test_progress(void **state)
{
    (void)state;
    size_t len;
    char *log = read_file(JOBLET_FIXTURES "/runtime-build/mmdebstrap-python3.log", &len);
    assert_non_null(log);
    rtprogress p;
    rtprogress_init(&p);
    assert_string_equal(p.phase, "starting");
    int last = 0, seen_download = 0, seen_install = 0;
    for (char *save = NULL, *line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        rtprogress_feed(&p, line, strlen(line));
        assert_true(p.percent >= last); /* the bar never goes back */
        last = p.percent;
        if (!strcmp(p.phase, "downloading packages") && p.percent > 5 && p.percent < 35)
            seen_download = 1; /* moved by Get:N of 89 */
        if (!strcmp(p.phase, "installing packages") && p.percent > 55 && p.percent < 90)
            seen_install = 1;  /* moved by Setting up of 24 */
    }
    assert_true(seen_download);
    assert_true(seen_install);
    assert_string_equal(p.phase, "tree built");
    assert_int_equal(p.percent, 91);
    const char *tail[] = {"joblet: listing the installed packages", "joblet: hashing the tree",
                          "joblet: writing the cache /x", "joblet: done in 20 s"};
    for (size_t i = 0; i < 4; i++)
        rtprogress_feed(&p, tail[i], strlen(tail[i]));
    assert_string_equal(p.phase, "done");
    assert_int_equal(p.percent, 100);
    free(log);
}

static void test_manifest(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/joblet-test-man-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char *prov[] = {"python 3.11.2", "torch 1.13.1 (CPU)"}, *pkgs[] = {"python3"};
    recipe_env env[] = {{"A", "quote \" back\\slash\ttab\nnewline"}};
    manifest m = {.description = "desc: with a colon", .provides = prov, .nprovides = 2, .packages = pkgs,
                  .npackages = 1, .env = env, .nenv = 1, .test = "python -c 'print(\"x\")'", .size_bytes = 123456789012,
                  .installed_packages = 113};
    snprintf(m.name, sizeof m.name, "python-3.11");
    snprintf(m.version, sizeof m.version, "1");
    snprintf(m.recipe_sha256, sizeof m.recipe_sha256, "%064d", 7);
    char path[128];
    snprintf(path, sizeof path, "%s/manifest.yml", tmpdir);
    jerr e = {0};
    assert_int_equal(manifest_write(path, &m, &e), 0);
    manifest r;
    assert_int_equal(manifest_read(path, &r, &e), 0);
    assert_string_equal(r.name, "python-3.11");
    assert_string_equal(r.description, m.description);
    assert_int_equal(r.nprovides, 2);
    assert_string_equal(r.provides[1], "torch 1.13.1 (CPU)");
    assert_string_equal(r.env[0].value, env[0].value);
    assert_string_equal(r.test, m.test);
    assert_true(r.size_bytes == 123456789012ull);
    assert_int_equal(r.installed_packages, 113);
    assert_string_equal(r.recipe_sha256, m.recipe_sha256);
    manifest_free(&r);
    write_at("manifest.yml", "version: 1\n");
    assert_int_equal(manifest_read(path, &r, &e), -1);
    assert_non_null(strstr(e.msg, "no name"));
    rm_rf(tmpdir);
}

static void test_digest(void **state)
{
    (void)state;
    char a[DIGEST_HEX], b[DIGEST_HEX];
    digest_sha256_hex("abc", 3, a);
    assert_string_equal(a, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/joblet-test-tree-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char p[256];
    snprintf(p, sizeof p, "%s/usr", tmpdir);
    assert_int_equal(mkdir(p, 0755), 0);
    write_at("usr/a", "one");
    write_at("usr/b", "two");
    snprintf(p, sizeof p, "%s/bin", tmpdir);
    assert_int_equal(symlink("usr/bin", p), 0);
    digest_tree_info info;
    jerr e = {0};
    assert_int_equal(digest_tree(tmpdir, a, &info, &e), 0);
    assert_int_equal(info.entries, 4); /* usr, usr/a, usr/b, bin */
    assert_int_equal(digest_tree(tmpdir, b, NULL, &e), 0);
    assert_string_equal(a, b); /* the same tree, the same hash */
    write_at("usr/b", "twO");  /* one byte */
    assert_int_equal(digest_tree(tmpdir, b, NULL, &e), 0);
    assert_string_not_equal(a, b);
    write_at("usr/b", "two");
    assert_int_equal(digest_tree(tmpdir, b, NULL, &e), 0);
    assert_string_equal(a, b);
    snprintf(p, sizeof p, "%s/usr/a", tmpdir);
    assert_int_equal(chmod(p, 04755), 0); /* a mode (setuid) */
    assert_int_equal(digest_tree(tmpdir, b, NULL, &e), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(chmod(p, 0644), 0);
    snprintf(p, sizeof p, "%s/bin", tmpdir);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(symlink("/etc", p), 0); /* a link's target */
    assert_int_equal(digest_tree(tmpdir, b, NULL, &e), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(digest_tree("/nonexistent-joblet", b, NULL, &e), -1);
    rm_rf(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recipe_good), cmocka_unit_test(test_recipe_bad), cmocka_unit_test(test_versions),
        cmocka_unit_test(test_aptsrc),      cmocka_unit_test(test_progress),   cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
