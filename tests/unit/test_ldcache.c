/* Unit tests for src/gpu/ldcache.c: this machine's real /etc/ld.so.cache, caches written here the
 * way glibc's ldconfig lays them out (new format, and old+new compat format), driver libraries of
 * two versions, and malformed files that must fail with a message and never read out of bounds. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
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

#include "gpu/ldcache.h"

#define NATIVE (LDCACHE_FLAG_ELF_LIBC6 | LDCACHE_FLAG_X8664_LIB64)
#if defined(__aarch64__)
#undef NATIVE
#define NATIVE (LDCACHE_FLAG_ELF_LIBC6 | LDCACHE_FLAG_AARCH64_LIB64)
#endif
#define I386 LDCACHE_FLAG_ELF_LIBC6

/* ---- a small cache writer (glibc elf/cache.c save_cache, simplified) ------------------------- */

typedef struct fake_ent {
    const char *name, *path;
    uint32_t flags;
} fake_ent;

typedef struct built {
    unsigned char *buf;
    size_t len;
    size_t hdr;      /* offset of the new header */
    size_t entries;  /* offset of the first new entry */
    size_t strings;  /* offset of the string table */
} built;

enum { WITH_EXT = 1, COMPAT = 2 };

static void put_u32(unsigned char *p, size_t off, uint32_t v)
{
    memcpy(p + off, &v, sizeof v);
}

static size_t strings_size(const fake_ent *ents, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += strlen(ents[i].name) + 1 + strlen(ents[i].path) + 1;
    return total;
}

/* Old entries count their offsets from the end of the old entries, as glibc writes them; an
 * even count keeps the new header 8-aligned with no padding. */
static void write_old_part(unsigned char *b, const fake_ent *ents, size_t n, size_t new_size)
{
    size_t nold = (n + 1) & ~(size_t)1, pos = 0, last = 0;
    memcpy(b, "ld.so-1.7.0", 11);
    put_u32(b, 12, (uint32_t)nold);
    for (size_t i = 0; i < nold; i++) {
        size_t k = i < n ? i : n - 1;  /* glibc duplicates the last entry */
        size_t at = 16 + i * 12, p = i < n ? pos : last;
        put_u32(b, at, ents[k].flags);
        put_u32(b, at + 4, (uint32_t)(new_size + p));
        put_u32(b, at + 8, (uint32_t)(new_size + p + strlen(ents[k].name) + 1));
        if (i < n) {
            last = pos;
            pos += strlen(ents[i].name) + 1 + strlen(ents[i].path) + 1;
        }
    }
}

static void write_extension(built *c, size_t ext)
{
    static const char gen[] = "test_ldcache writer";
    put_u32(c->buf, c->hdr + 32, (uint32_t)ext);
    put_u32(c->buf, ext, 0xeaa42174u);
    put_u32(c->buf, ext + 4, 1);
    put_u32(c->buf, ext + 8, 0);  /* cache_extension_tag_generator */
    put_u32(c->buf, ext + 12, 0);
    put_u32(c->buf, ext + 16, (uint32_t)(ext + 24));
    put_u32(c->buf, ext + 20, sizeof gen - 1);
    memcpy(c->buf + ext + 24, gen, sizeof gen - 1);
}

static built build_cache(const fake_ent *ents, size_t n, int opts)
{
    built c = {0};
    size_t nold = (opts & COMPAT) ? ((n + 1) & ~(size_t)1) : 0;
    size_t new_size = 48 + n * 24, slen = strings_size(ents, n);
    c.hdr = (opts & COMPAT) ? 16 + nold * 12 : 0;
    c.entries = c.hdr + 48;
    c.strings = c.hdr + new_size;
    size_t ext = (c.strings + slen + 3) & ~(size_t)3;
    c.len = (opts & WITH_EXT) ? ext + 24 + 19 : c.strings + slen;
    c.buf = calloc(1, c.len);
    assert_non_null(c.buf);
    if (opts & COMPAT)
        write_old_part(c.buf, ents, n, new_size);
    unsigned char *h = c.buf + c.hdr;
    memcpy(h, "glibc-ld.so.cache1.1", 20);
    put_u32(h, 20, (uint32_t)n);
    put_u32(h, 24, (uint32_t)slen);
    h[28] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 2 : 3;
    size_t pos = new_size;  /* string offsets count from the new header */
    for (size_t i = 0; i < n; i++) {
        size_t at = c.entries + i * 24, nk = strlen(ents[i].name) + 1, nv = strlen(ents[i].path) + 1;
        put_u32(c.buf, at, ents[i].flags);
        put_u32(c.buf, at + 4, (uint32_t)pos);
        put_u32(c.buf, at + 8, (uint32_t)(pos + nk));
        memcpy(h + pos, ents[i].name, nk);
        memcpy(h + pos + nk, ents[i].path, nv);
        pos += nk + nv;
    }
    if (opts & WITH_EXT)
        write_extension(&c, ext);
    return c;
}

static void write_file(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* ---- temp dir ------------------------------------------------------------------------------- */

static char tmp[PATH_MAX];

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    char t[] = "/tmp/test_ldcache.XXXXXX";
    if (!mkdtemp(t) || !realpath(t, tmp))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *tpath(const char *rel)
{
    static char bufs[16][PATH_MAX];  /* a test holds at most a dozen at once */
    static int next;
    char *b = bufs[next++ % 16];
    snprintf(b, PATH_MAX, "%s/%s", tmp, rel);
    return b;
}

static void mkfile(const char *rel)
{
    write_file(tpath(rel), "x", 1);
}

static void mklink(const char *target, const char *rel)
{
    assert_int_equal(symlink(target, tpath(rel)), 0);
}

/* ---- collecting entries --------------------------------------------------------------------- */

typedef struct seen {
    int n;
    ldcache_entry first, libc;
    int libc_found;
} seen;

static int collect(const ldcache_entry *ent, void *ud)
{
    seen *s = ud;
    if (s->n++ == 0)
        s->first = *ent;
    if (strcmp(ent->name, "libc.so.6") == 0 && ldcache_native(ent->flags) && access(ent->path, F_OK) == 0) {
        s->libc = *ent;
        s->libc_found = 1;
    }
    return 0;
}

static int stop_at_first(const ldcache_entry *ent, void *ud)
{
    (void)ent;
    ++*(int *)ud;
    return 7;
}

/* ---- tests: the real cache, the format -------------------------------------------------------- */

static void test_real_cache(void **state)
{
    (void)state;
    if (access(LDCACHE_PATH, R_OK) != 0)
        skip();
    seen s = {0};
    jerr e = {0};
    assert_int_equal(ldcache_read(LDCACHE_PATH, collect, &s, &e), 0);
    assert_true(s.n > 0);
    assert_true(s.libc_found);
    assert_non_null(strstr(s.libc.path, "libc.so.6"));
}

static void test_native_flags(void **state)
{
    (void)state;
#if (defined(__x86_64__) && !defined(__ILP32__)) || (defined(__aarch64__) && defined(__LP64__))
    assert_true(ldcache_native(NATIVE));
#endif
    assert_false(ldcache_native(I386));
    assert_false(ldcache_native(LDCACHE_FLAG_ELF_LIBC6 | LDCACHE_FLAG_X8664_LIBX32));
    assert_false(ldcache_native(0x0001));
}

static const fake_ent simple[] = {
    {"libfoo.so.1", "/usr/lib/libfoo.so.1", NATIVE},
    {"libbar.so.2", "/usr/lib32/libbar.so.2", I386},
    {"libbaz.so.3", "/usr/lib/libbaz.so.3", NATIVE},
};

static void read_back(int opts)
{
    built c = build_cache(simple, 3, opts);
    const char *p = tpath("cache");
    write_file(p, c.buf, c.len);
    seen s = {0};
    jerr e = {0};
    assert_int_equal(ldcache_read(p, collect, &s, &e), 0);
    assert_int_equal(s.n, 3);  /* the new entries only, not the old copies too */
    assert_string_equal(s.first.name, "libfoo.so.1");
    assert_string_equal(s.first.path, "/usr/lib/libfoo.so.1");
    assert_int_equal(s.first.flags, NATIVE);
    free(c.buf);
}

static void test_new_format(void **state)
{
    (void)state;
    read_back(0);
    read_back(WITH_EXT);
}

static void test_compat_format(void **state)
{
    (void)state;
    read_back(COMPAT);
    read_back(COMPAT | WITH_EXT);
}

static int count_entries(const char *path)
{
    seen s = {0};
    jerr e = {0};
    if (ldcache_read(path, collect, &s, &e) != 0)
        fail_msg("%s", e.msg);
    return s.n;
}

/* glibc's own writer: ldconfig -c compat puts the old format first (its old part is not even
 * consistent in recent glibc, which is one more reason to only skip it). */
static void test_ldconfig_written(void **state)
{
    (void)state;
    const char *ldconfig = access("/sbin/ldconfig", X_OK) == 0 ? "/sbin/ldconfig" : "/usr/sbin/ldconfig";
    if (access(ldconfig, X_OK) != 0)
        skip();
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd,
             "%s -X -c compat -C %s -f /dev/null 2>/dev/null && %s -X -c new -C %s -f /dev/null 2>/dev/null",
             ldconfig, tpath("compat"), ldconfig, tpath("new"));
    if (system(cmd) != 0)
        skip();
    int n = count_entries(tpath("new"));
    assert_true(n > 0);
    assert_int_equal(count_entries(tpath("compat")), n);
}

static void test_callback_stops(void **state)
{
    (void)state;
    built c = build_cache(simple, 3, WITH_EXT);
    const char *p = tpath("cache");
    write_file(p, c.buf, c.len);
    int calls = 0;
    jerr e = {0};
    assert_int_equal(ldcache_read(p, stop_at_first, &calls, &e), 7);
    assert_int_equal(calls, 1);
    free(c.buf);
}

/* Long names are skipped rather than truncated into a wrong path. */
static void test_long_path_skipped(void **state)
{
    (void)state;
    char longpath[700];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = 0;
    fake_ent ents[] = {{"libfoo.so.1", longpath, NATIVE}, {"libbaz.so.3", "/usr/lib/libbaz.so.3", NATIVE}};
    built c = build_cache(ents, 2, 0);
    const char *p = tpath("cache");
    write_file(p, c.buf, c.len);
    seen s = {0};
    jerr e = {0};
    assert_int_equal(ldcache_read(p, collect, &s, &e), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.first.name, "libbaz.so.3");
    free(c.buf);
}

/* ---- tests: malformed files ------------------------------------------------------------------- */

/* Writes len bytes of buf as a cache, expects -1 and a message naming the file and `what`. */
static void expect_error(const void *buf, size_t len, const char *what)
{
    const char *p = tpath("bad");
    write_file(p, buf, len);
    seen s = {0};
    jerr e = {0};
    assert_int_equal(ldcache_read(p, collect, &s, &e), -1);
    if (!strstr(e.msg, p) || !strstr(e.msg, what))
        fail_msg("message '%s' should name %s and say '%s'", e.msg, p, what);
}

static void test_missing_file(void **state)
{
    (void)state;
    jerr e = {0};
    seen s = {0};
    assert_int_equal(ldcache_read(tpath("nope"), collect, &s, &e), -1);
    assert_int_equal(e.code, ENOENT);
    assert_non_null(strstr(e.msg, tpath("nope")));
}

static void test_truncated_header(void **state)
{
    (void)state;
    built c = build_cache(simple, 3, WITH_EXT);
    expect_error(c.buf, 30, "truncated");
    expect_error(c.buf, 0, "truncated");
    free(c.buf);
    built o = build_cache(simple, 3, COMPAT);
    expect_error(o.buf, 14, "truncated");
    free(o.buf);
}

static void test_wrong_magic(void **state)
{
    (void)state;
    built c = build_cache(simple, 3, WITH_EXT);
    c.buf[3] = 'X';
    expect_error(c.buf, c.len, "wrong magic");
    expect_error("\x7f" "ELF", 4, "wrong magic");
    c.buf[3] = 'b';
    memcpy(c.buf + 17, "1.0", 3);
    expect_error(c.buf, c.len, "version");
    free(c.buf);
}

static void test_old_format_only(void **state)
{
    (void)state;
    unsigned char old[16 + 2 * 12 + 16] = "ld.so-1.7.0";
    put_u32(old, 12, 2);
    expect_error(old, sizeof old, "only the old");
    put_u32(old, 12, 1000);
    expect_error(old, sizeof old, "old-format entry count 1000");
}

static void test_nlibs_too_large(void **state)
{
    (void)state;
    built c = build_cache(simple, 3, WITH_EXT);
    put_u32(c.buf, c.hdr + 20, 1000);
    expect_error(c.buf, c.len, "entry count 1000 does not fit");
    put_u32(c.buf, c.hdr + 20, UINT32_MAX);
    expect_error(c.buf, c.len, "does not fit");
    free(c.buf);
    built o = build_cache(simple, 3, COMPAT);
    put_u32(o.buf, o.hdr + 20, 4);
    expect_error(o.buf, o.len, "string table");  /* 4 entries eat the strings */
    free(o.buf);
}

static void test_key_out_of_bounds(void **state)
{
    (void)state;
    built c = build_cache(simple, 3, WITH_EXT);
    put_u32(c.buf, c.entries + 4, (uint32_t)(c.len - c.hdr + 100));
    expect_error(c.buf, c.len, "key offset");
    put_u32(c.buf, c.entries + 4, UINT32_MAX);
    expect_error(c.buf, c.len, "key offset");
    put_u32(c.buf, c.entries + 4, 0);  /* the header is not a string */
    expect_error(c.buf, c.len, "outside the string table");
    free(c.buf);
    built o = build_cache(simple, 3, COMPAT);
    put_u32(o.buf, o.entries + 24 + 8, (uint32_t)(o.len - o.hdr));
    expect_error(o.buf, o.len, "value offset");
    free(o.buf);
}

static void test_string_without_nul(void **state)
{
    (void)state;
    built c = build_cache(simple, 3, 0);
    /* Drop the last path's NUL and shrink the table so that only the NUL is missing. */
    put_u32(c.buf, c.hdr + 24, (uint32_t)(c.len - c.strings - 1));
    expect_error(c.buf, c.len - 1, "no terminating NUL");
    free(c.buf);
}

static void test_bad_string_table_and_extension(void **state)
{
    (void)state;
    built c = build_cache(simple, 3, WITH_EXT);
    put_u32(c.buf, c.hdr + 24, (uint32_t)c.len);
    expect_error(c.buf, c.len, "string table");
    free(c.buf);
    c = build_cache(simple, 3, WITH_EXT);
    put_u32(c.buf, c.hdr + 32, (uint32_t)c.len + 4);
    expect_error(c.buf, c.len, "extension");
    put_u32(c.buf, c.hdr + 32, 2);
    expect_error(c.buf, c.len, "extension");
    free(c.buf);
}

static void test_other_endian(void **state)
{
    (void)state;
    built c = build_cache(simple, 3, WITH_EXT);
    c.buf[c.hdr + 28] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 3 : 2;
    expect_error(c.buf, c.len, __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "big-endian" : "little-endian");
    c.buf[c.hdr + 28] = 1;
    expect_error(c.buf, c.len, "invalid");
    c.buf[c.hdr + 28] = 0;  /* written before glibc 2.33: host order */
    const char *p = tpath("cache");
    write_file(p, c.buf, c.len);
    seen s = {0};
    jerr e = {0};
    assert_int_equal(ldcache_read(p, collect, &s, &e), 0);
    assert_int_equal(s.n, 3);
    free(c.buf);
}

/* Every truncation fails cleanly; every one-byte corruption either fails or reads in bounds
 * (ASan and UBSan builds run this too). */
static void test_every_truncation_and_corruption(void **state)
{
    (void)state;
    for (int opts = 0; opts <= (WITH_EXT | COMPAT); opts++) {
        built c = build_cache(simple, 3, opts);
        const char *p = tpath("fuzz");
        for (size_t n = 0; n < c.len; n++) {
            write_file(p, c.buf, n);
            seen s = {0};
            jerr e = {0};
            if (ldcache_read(p, collect, &s, &e) != -1)
                fail_msg("a %zu-byte prefix of a %zu-byte cache (opts %d) was accepted", n, c.len, opts);
            assert_non_null(strstr(e.msg, p));
        }
        for (size_t i = 0; i < c.len; i++) {
            static const unsigned char masks[] = {0x01, 0xff};
            for (size_t m = 0; m < sizeof masks; m++) {
                c.buf[i] ^= masks[m];
                write_file(p, c.buf, c.len);
                seen s = {0};
                jerr e = {0};
                int rc = ldcache_read(p, collect, &s, &e);
                assert_true(rc == 0 || rc == -1);
                c.buf[i] ^= masks[m];
            }
        }
        free(c.buf);
    }
}

/* ---- tests: driver libraries ------------------------------------------------------------------ */

static void make_driver_tree(void)
{
    assert_int_equal(mkdir(tpath("lib"), 0755), 0);
    assert_int_equal(mkdir(tpath("old"), 0755), 0);
    assert_int_equal(mkdir(tpath("lib32"), 0755), 0);
    mkfile("lib/libcuda.so.535.129.03");
    mklink("libcuda.so.535.129.03", "lib/libcuda.so.1");
    mklink("libcuda.so.1", "lib/libcuda.so");
    mkfile("lib/libnvidia-ml.so.535.129.03");
    mklink("libnvidia-ml.so.535.129.03", "lib/libnvidia-ml.so.1");
    mkfile("old/libcuda.so.470.57.02");
    mklink("libcuda.so.470.57.02", "old/libcuda.so.1");
    mkfile("old/libnvidia-ml.so.470.57.02");
    mklink("libnvidia-ml.so.470.57.02", "old/libnvidia-ml.so.1");
    mkfile("lib32/libcuda.so.535.129.03");
    mklink("libcuda.so.535.129.03", "lib32/libcuda.so.1");
}

static const char *const wanted[] = {"libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so"};

static void write_driver_cache(int opts)
{
    /* Cache order is the loader's order: the 32-bit and the other version's entries come first,
     * so a reader that ignored flags or versions would pick them. */
    fake_ent ents[] = {
        {"libcuda.so.1", tpath("lib32/libcuda.so.1"), I386},
        {"libcuda.so.1", tpath("old/libcuda.so.1"), NATIVE},
        {"libcuda.so", tpath("lib/libcuda.so"), NATIVE},
        {"libcuda.so.1", tpath("lib/libcuda.so.1"), NATIVE},
        {"libcudadebugger.so.1", tpath("lib/libcuda.so.1"), NATIVE},
        {"libnvidia-ml.so.1", tpath("gone/libnvidia-ml.so.1"), NATIVE},
        {"libnvidia-ml.so.1", tpath("lib/libnvidia-ml.so.1"), NATIVE},
        {"libnvidia-ml.so.1", tpath("old/libnvidia-ml.so.1"), NATIVE},
        {"libc.so.6", "/nonexistent/libc.so.6", NATIVE},
    };
    built c = build_cache(ents, sizeof ents / sizeof ents[0], opts);
    write_file(tpath("ld.so.cache"), c.buf, c.len);
    free(c.buf);
}

static void check_driver_libs(int opts)
{
    write_driver_cache(opts);
    ldcache_lib out[4];
    int skipped = -1;
    jerr e = {0};
    int n = ldcache_driver_libs(tpath("ld.so.cache"), "535.129.03", wanted, 3, out, 4, &skipped, &e);
    if (n != 2)
        fail_msg("expected 2 libraries, got %d: %s", n, e.msg);
    assert_int_equal(skipped, 2);
    assert_string_equal(out[0].prefix, "libcuda.so");
    assert_string_equal(out[0].real, tpath("lib/libcuda.so.535.129.03"));
    assert_string_equal(out[0].soname, "libcuda.so.1");
    assert_string_equal(out[1].prefix, "libnvidia-ml.so");
    assert_string_equal(out[1].real, tpath("lib/libnvidia-ml.so.535.129.03"));
    assert_string_equal(out[1].soname, "libnvidia-ml.so.1");

    n = ldcache_driver_libs(tpath("ld.so.cache"), "470.57.02", wanted, 3, out, 4, &skipped, &e);
    assert_int_equal(n, 2);
    assert_int_equal(skipped, 2);
    assert_string_equal(out[0].real, tpath("old/libcuda.so.470.57.02"));
    assert_string_equal(out[1].real, tpath("old/libnvidia-ml.so.470.57.02"));
}

static void test_driver_libs(void **state)
{
    (void)state;
    make_driver_tree();
    check_driver_libs(WITH_EXT);
    check_driver_libs(COMPAT);
    check_driver_libs(COMPAT | WITH_EXT);
}

static void test_driver_libs_32bit_only(void **state)
{
    (void)state;
    make_driver_tree();
    fake_ent ents[] = {{"libcuda.so.1", tpath("lib32/libcuda.so.1"), I386}};
    built c = build_cache(ents, 1, WITH_EXT);
    write_file(tpath("ld.so.cache"), c.buf, c.len);
    free(c.buf);
    ldcache_lib out[4];
    int skipped = -1;
    jerr e = {0};
    assert_int_equal(ldcache_driver_libs(tpath("ld.so.cache"), "535.129.03", wanted, 3, out, 4, &skipped, &e), 0);
    assert_int_equal(skipped, 0);
}

static void test_driver_libs_errors(void **state)
{
    (void)state;
    make_driver_tree();
    write_driver_cache(WITH_EXT);
    ldcache_lib out[4];
    int skipped = -1;
    jerr e = {0};
    assert_int_equal(ldcache_driver_libs(tpath("ld.so.cache"), "535.129.03", wanted, 3, out, 1, &skipped, &e),
                     -1);
    assert_int_equal(e.code, ENOSPC);
    assert_int_equal(ldcache_driver_libs(tpath("ld.so.cache"), "../535", wanted, 3, out, 4, &skipped, &e), -1);
    assert_int_equal(e.code, EINVAL);
    assert_int_equal(ldcache_driver_libs(tpath("ld.so.cache"), "", wanted, 3, out, 4, &skipped, &e), -1);
    e = (jerr){0};
    assert_int_equal(ldcache_driver_libs(tpath("missing"), "535.129.03", wanted, 3, out, 4, &skipped, &e), -1);
    assert_non_null(strstr(e.msg, tpath("missing")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_cache),
        cmocka_unit_test(test_native_flags),
        cmocka_unit_test_setup_teardown(test_new_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compat_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ldconfig_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_path_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_magic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_format_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nlibs_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_out_of_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_string_without_nul, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_string_table_and_extension, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_endian, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_truncation_and_corruption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_driver_libs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_driver_libs_32bit_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_driver_libs_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
