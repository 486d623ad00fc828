/* glibc's ld.so.cache, read whole into memory and checked before every access: a half-written
 * cache or one from another machine must end in a message, never in a read past the buffer.
 * Layout (glibc sysdeps/generic/dl-cache.h, written by elf/cache.c save_cache):
 *   [old header "ld.so-1.7.0", uint32 nlibs, nlibs x 12-byte entries, zero pad to 8]   optional
 *   new header (48 bytes) "glibc-ld.so.cache" "1.1" nlibs len_strings flags pad[3]
 *                         extension_offset unused[3]
 *   nlibs x 24-byte entries {int32 flags; uint32 key, value, osversion; uint64 hwcap}
 *   string table (len_strings bytes; key/value count from the new header's first byte)
 *   extension directory at extension_offset (counted from the file's first byte)  glibc >= 2.33
 * Since glibc 2.33 strings are tail-merged: a key may point into the middle of a value. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ldcache.h"

#define OLD_MAGIC "ld.so-1.7.0"
#define NEW_MAGIC "glibc-ld.so.cache"
#define NEW_VERSION "1.1"
#define MAGIC_LEN (sizeof NEW_MAGIC - 1)
#define VERSION_LEN (sizeof NEW_VERSION - 1)

#define OLD_HDR_SIZE 16   /* magic[11], padding to 12, uint32 nlibs */
#define OLD_ENTRY_SIZE 12
#define NEW_HDR_SIZE 48
#define NEW_ENTRY_SIZE 24
/* glibc's ALIGN_CACHE: __alignof__(struct cache_file_new), 8 on 64-bit targets. ldconfig
 * writes an even number of old entries so that 4 and 8 give the same offset anyway. */
#define NEW_HDR_ALIGN 8

#define OFF_NLIBS 20
#define OFF_LEN_STRINGS 24
#define OFF_FLAGS 28
#define OFF_EXTENSION 32

/* cache_file_new_flags_endian_* */
#define ENDIAN_MASK 3
#define ENDIAN_UNSET 0
#define ENDIAN_INVALID 1
#define ENDIAN_LITTLE 2
#define ENDIAN_BIG 3
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ENDIAN_HOST ENDIAN_LITTLE
#define HOST_ORDER "little"
#define OTHER_ORDER "big"
#else
#define ENDIAN_HOST ENDIAN_BIG
#define HOST_ORDER "big"
#define OTHER_ORDER "little"
#endif

#define EXT_MAGIC 0xeaa42174u  /* (uint32_t)-358342284 */
#define EXT_HDR_SIZE 8
#define EXT_SECTION_SIZE 16

/* Real caches are tens of kilobytes; the cap keeps a wrong path from reading a disk image. */
#define LDCACHE_MAX_BYTES (64u << 20)

typedef struct cache_buf {
    const char *path;
    unsigned char *data;
    size_t len;
    size_t hdr;       /* offset of the new header: string offsets count from here */
    uint32_t nlibs;
    size_t entries;   /* offset of the first new entry */
} cache_buf;

/* Callers check bounds first; memcpy because the data has no alignment promise. */
static uint32_t get_u32(const cache_buf *c, size_t off)
{
    uint32_t v;
    memcpy(&v, c->data + off, sizeof v);
    return v;
}

static int read_all(int fd, unsigned char *buf, size_t want, size_t *got)
{
    *got = 0;
    while (*got < want) {
        ssize_t r = read(fd, buf + *got, want - *got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;  /* shrank since fstat: what was read is checked like any short file */
        *got += (size_t)r;
    }
    return 0;
}

static int load(const char *path, cache_buf *c, jerr *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return jerr_sys(e, "%s: cannot open the loader cache", path);
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) < 0)
        jerr_sys(e, "%s: cannot stat the loader cache", path);
    else if (!S_ISREG(st.st_mode))
        jerr_set(e, EINVAL, "%s: not a regular file, so not a loader cache", path);
    else if ((unsigned long long)st.st_size > LDCACHE_MAX_BYTES)
        jerr_set(e, EFBIG, "%s: %lld bytes, more than a loader cache can plausibly be (%u)", path,
                 (long long)st.st_size, LDCACHE_MAX_BYTES);
    else if (!(c->data = malloc((size_t)st.st_size + 1)))
        jerr_set(e, ENOMEM, "%s: out of memory reading the loader cache", path);
    else if (read_all(fd, c->data, (size_t)st.st_size, &c->len) < 0)
        jerr_sys(e, "%s: cannot read the loader cache", path);
    else
        rc = 0;
    close(fd);
    return rc;
}

/* The old format is only skipped: glibc >= 2.2 ignores it when the new one follows, and a
 * cache holding only the old one (libc5 / glibc 2.0 era) has nothing we can use. */
static int skip_old_format(cache_buf *c, jerr *e)
{
    c->hdr = 0;
    if (c->len < sizeof OLD_MAGIC - 1 || memcmp(c->data, OLD_MAGIC, sizeof OLD_MAGIC - 1) != 0)
        return 0;
    if (c->len < OLD_HDR_SIZE)
        return jerr_set(e, EINVAL, "%s: truncated: %zu bytes, the old-format header needs %d", c->path,
                        c->len, OLD_HDR_SIZE);
    uint32_t n = get_u32(c, 12);
    if ((c->len - OLD_HDR_SIZE) / OLD_ENTRY_SIZE < n)
        return jerr_set(e, EINVAL, "%s: the old-format entry count %u does not fit the file's %zu bytes",
                        c->path, n, c->len);
    size_t end = OLD_HDR_SIZE + (size_t)n * OLD_ENTRY_SIZE;
    c->hdr = (end + NEW_HDR_ALIGN - 1) & ~(size_t)(NEW_HDR_ALIGN - 1);
    if (c->hdr > c->len || c->len - c->hdr < MAGIC_LEN || memcmp(c->data + c->hdr, NEW_MAGIC, MAGIC_LEN) != 0)
        return jerr_set(e, EINVAL,
                        "%s: holds only the old ld.so-1.7.0 format (no glibc-ld.so.cache header at offset "
                        "%zu); run ldconfig to rewrite it", c->path, c->hdr);
    return 0;
}

static int check_magic(const cache_buf *c, jerr *e)
{
    size_t avail = c->len - c->hdr;
    size_t n = avail < MAGIC_LEN ? avail : MAGIC_LEN;
    if (memcmp(c->data + c->hdr, NEW_MAGIC, n) != 0)
        return jerr_set(e, EINVAL, "%s: not a glibc loader cache (wrong magic, expected \"%s\" or \"%s\")",
                        c->path, NEW_MAGIC, OLD_MAGIC);
    if (avail < NEW_HDR_SIZE)
        return jerr_set(e, EINVAL, "%s: truncated: %zu bytes from the header at offset %zu, it needs %d",
                        c->path, avail, c->hdr, NEW_HDR_SIZE);
    const char *ver = (const char *)c->data + c->hdr + MAGIC_LEN;
    if (memcmp(ver, NEW_VERSION, VERSION_LEN) != 0)
        return jerr_set(e, EINVAL, "%s: cache format version \"%.3s\" is not the supported \"%s\"", c->path,
                        ver, NEW_VERSION);
    return 0;
}

/* The flags byte exists since glibc 2.33; 0 is what older ldconfig wrote, in host order. */
static int check_endian(const cache_buf *c, jerr *e)
{
    int order = c->data[c->hdr + OFF_FLAGS] & ENDIAN_MASK;
    if (order == ENDIAN_INVALID)
        return jerr_set(e, EINVAL, "%s: the cache marks itself invalid (endianness flag 1)", c->path);
    if (order != ENDIAN_UNSET && order != ENDIAN_HOST)
        return jerr_set(e, EINVAL,
                        "%s: the cache is " OTHER_ORDER "-endian (written for another architecture); "
                        "this host reads only " HOST_ORDER "-endian caches", c->path);
    return 0;
}

static int check_counts(cache_buf *c, jerr *e)
{
    size_t body = c->len - c->hdr - NEW_HDR_SIZE;
    c->nlibs = get_u32(c, c->hdr + OFF_NLIBS);
    if (body / NEW_ENTRY_SIZE < c->nlibs)
        return jerr_set(e, EINVAL, "%s: entry count %u does not fit the file's %zu bytes (truncated?)",
                        c->path, c->nlibs, c->len);
    c->entries = c->hdr + NEW_HDR_SIZE;
    size_t strings = c->entries + (size_t)c->nlibs * NEW_ENTRY_SIZE;
    uint32_t len_strings = get_u32(c, c->hdr + OFF_LEN_STRINGS);
    if (c->len - strings < len_strings)
        return jerr_set(e, EINVAL, "%s: string table of %u bytes at offset %zu runs past the end (%zu bytes)",
                        c->path, len_strings, strings, c->len);
    return 0;
}

/* The loader itself refuses a cache whose extension directory is out of bounds, so do we. */
static int check_extensions(const cache_buf *c, jerr *e)
{
    uint32_t off = get_u32(c, c->hdr + OFF_EXTENSION);
    if (off == 0)
        return 0;
    if (off % 4 != 0 || off > c->len || c->len - off < EXT_HDR_SIZE)
        return jerr_set(e, EINVAL, "%s: extension directory offset %u is misaligned or past the end", c->path,
                        off);
    if (get_u32(c, off) != EXT_MAGIC)
        return jerr_set(e, EINVAL, "%s: no extension directory magic at offset %u", c->path, off);
    uint32_t count = get_u32(c, off + 4);
    if ((c->len - off - EXT_HDR_SIZE) / EXT_SECTION_SIZE < count)
        return jerr_set(e, EINVAL, "%s: extension section count %u does not fit the file", c->path, count);
    for (uint32_t i = 0; i < count; i++) {
        size_t s = off + EXT_HDR_SIZE + (size_t)i * EXT_SECTION_SIZE;
        uint32_t soff = get_u32(c, s + 8), ssize = get_u32(c, s + 12);
        if (soff > c->len || c->len - soff < ssize)
            return jerr_set(e, EINVAL, "%s: extension section %u (%u bytes at offset %u) runs past the end",
                            c->path, i, ssize, soff);
    }
    return 0;
}

static int parse_header(cache_buf *c, jerr *e)
{
    if (skip_old_format(c, e) < 0 || check_magic(c, e) < 0 || check_endian(c, e) < 0 ||
        check_counts(c, e) < 0 || check_extensions(c, e) < 0)
        return -1;
    return 0;
}

/* A string lives in the string area: after the entries, before the end of the file
 * (glibc's loader bounds it by the file end too, not by len_strings). */
static int get_string(const cache_buf *c, uint32_t i, const char *what, uint32_t rel, const char **s,
                      size_t *n, jerr *e)
{
    size_t strings = c->entries + (size_t)c->nlibs * NEW_ENTRY_SIZE;
    size_t room = c->len - c->hdr;
    if (rel >= room || c->hdr + rel < strings)
        return jerr_set(e, EINVAL, "%s: entry %u: %s offset %u is outside the string table (%zu..%zu)", c->path,
                        i, what, rel, strings - c->hdr, room);
    const char *p = (const char *)c->data + c->hdr + rel;
    const char *nul = memchr(p, '\0', room - rel);
    if (!nul)
        return jerr_set(e, EINVAL, "%s: entry %u: %s at offset %u has no terminating NUL before the end of "
                        "the file", c->path, i, what, rel);
    *s = p;
    *n = (size_t)(nul - p);
    return 0;
}

/* 1: ent filled; 0: the entry does not fit ldcache_entry and is skipped; -1: malformed. */
static int read_entry(const cache_buf *c, uint32_t i, ldcache_entry *ent, jerr *e)
{
    size_t at = c->entries + (size_t)i * NEW_ENTRY_SIZE;
    const char *key = NULL, *value = NULL; /* (set by get_string; -O3 cannot tell) */
    size_t nkey = 0, nvalue = 0;
    if (get_string(c, i, "key", get_u32(c, at + 4), &key, &nkey, e) < 0 ||
        get_string(c, i, "value", get_u32(c, at + 8), &value, &nvalue, e) < 0)
        return -1;
    if (nkey >= sizeof ent->name || nvalue >= sizeof ent->path)
        return 0;
    memcpy(ent->name, key, nkey + 1);
    memcpy(ent->path, value, nvalue + 1);
    ent->flags = get_u32(c, at);
    return 1;
}

int ldcache_read(const char *path, int (*fn)(const ldcache_entry *ent, void *ud), void *ud, jerr *e)
{
    cache_buf c = {.path = path};
    int rc = load(path, &c, e);
    if (rc == 0)
        rc = parse_header(&c, e);
    for (uint32_t i = 0; rc == 0 && i < c.nlibs; i++) {
        ldcache_entry ent;
        int got = read_entry(&c, i, &ent, e);
        if (got < 0)
            rc = -1;
        else if (got > 0)
            rc = fn(&ent, ud);
    }
    free(c.data);
    return rc;
}

/* glibc's _dl_cache_check_flags for the build architecture: the exact flags word. */
int ldcache_native(uint32_t flags)
{
#if defined(__x86_64__) && !defined(__ILP32__)
    return flags == (LDCACHE_FLAG_ELF_LIBC6 | LDCACHE_FLAG_X8664_LIB64);
#elif defined(__aarch64__) && defined(__LP64__)
    return flags == (LDCACHE_FLAG_ELF_LIBC6 | LDCACHE_FLAG_AARCH64_LIB64);
#else
    (void)flags;
    return 0;
#endif
}

/* ---- driver libraries ------------------------------------------------------------------ */

typedef struct driver_walk {
    const char *version;
    const char *const *prefixes;
    size_t nprefixes;
    ldcache_lib *out;
    size_t max, n;
    int *slot;          /* per prefix: its index in out[], -1 before its first match */
    char **skipped;     /* distinct real files of another version */
    size_t nskipped;
    jerr *e;
} driver_walk;

static int prefix_matches(const char *prefix, const char *name)
{
    size_t n = strlen(prefix);
    return strncmp(name, prefix, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

static int find_prefix(const driver_walk *w, const char *name)
{
    for (size_t i = 0; i < w->nprefixes; i++)
        if (prefix_matches(w->prefixes[i], name))
            return (int)i;
    return -1;
}

/* The driver installs each library as <prefix>.<version>; the sonames are links to it. */
static int is_version_file(const char *real, const char *prefix, const char *version)
{
    const char *base = strrchr(real, '/');
    base = base ? base + 1 : real;
    size_t n = strlen(prefix);
    return strncmp(base, prefix, n) == 0 && base[n] == '.' && strcmp(base + n + 1, version) == 0;
}

/* Programs load the versioned soname ("libcuda.so.1"); the bare "libcuda.so" exists only for
 * linking, and the full-version name is not what anyone asks for. */
static int better_soname(const char *cand, const char *cur, const char *prefix)
{
    size_t n = strlen(prefix);
    int cand_versioned = cand[n] == '.', cur_versioned = cur[n] == '.';
    if (cand_versioned != cur_versioned)
        return cand_versioned;
    return strlen(cand) < strlen(cur);
}

static int note_skipped(driver_walk *w, const char *real)
{
    for (size_t i = 0; i < w->nskipped; i++)
        if (strcmp(w->skipped[i], real) == 0)
            return 0;
    char **grown = realloc(w->skipped, (w->nskipped + 1) * sizeof *grown);
    if (!grown)
        return jerr_set(w->e, ENOMEM, "out of memory listing skipped driver libraries");
    w->skipped = grown;
    if (!(w->skipped[w->nskipped] = strdup(real)))
        return jerr_set(w->e, ENOMEM, "out of memory listing skipped driver libraries");
    w->nskipped++;
    return 0;
}

static int add_result(driver_walk *w, int p, const ldcache_entry *ent, const char *real)
{
    if (w->n >= w->max)
        return jerr_set(w->e, ENOSPC, "more than %zu driver libraries found; the result array is too small",
                        w->max);
    ldcache_lib *lib = &w->out[w->n];
    snprintf(lib->prefix, sizeof lib->prefix, "%s", w->prefixes[p]);
    snprintf(lib->real, sizeof lib->real, "%s", real);
    snprintf(lib->soname, sizeof lib->soname, "%s", ent->name);
    w->slot[p] = (int)w->n++;
    return 0;
}

static int take_entry(driver_walk *w, int p, const ldcache_entry *ent, const char *real)
{
    if (!is_version_file(real, w->prefixes[p], w->version))
        return note_skipped(w, real);
    if (w->slot[p] < 0)
        return add_result(w, p, ent, real);
    ldcache_lib *lib = &w->out[w->slot[p]];
    /* A second copy elsewhere is not what the loader would pick: the first one in cache order is. */
    if (strcmp(lib->real, real) == 0 && better_soname(ent->name, lib->soname, lib->prefix))
        snprintf(lib->soname, sizeof lib->soname, "%s", ent->name);
    return 0;
}

static int driver_entry(const ldcache_entry *ent, void *ud)
{
    driver_walk *w = ud;
    if (!ldcache_native(ent->flags))
        return 0;
    int p = find_prefix(w, ent->name);
    if (p < 0)
        return 0;
    char *real = realpath(ent->path, NULL);
    if (!real)
        return 0;  /* dangling: the loader could not use it either */
    int rc = 0;
    if (strlen(real) < sizeof w->out[0].real)
        rc = take_entry(w, p, ent, real);
    free(real);
    return rc;
}

static int check_version(const char *version, jerr *e)
{
    if (!version || !*version || strlen(version) > 31)
        return jerr_set(e, EINVAL, "driver version must be 1 to 31 characters");
    if (strspn(version, "0123456789.") != strlen(version))
        return jerr_set(e, EINVAL, "driver version '%s' is not digits and dots (like 535.129.03)", version);
    return 0;
}

static int check_prefixes(const char *const *prefixes, size_t nprefixes, jerr *e)
{
    for (size_t i = 0; i < nprefixes; i++)
        if (!prefixes[i] || !*prefixes[i] || strlen(prefixes[i]) >= sizeof ((ldcache_lib *)0)->prefix)
            return jerr_set(e, EINVAL, "driver library prefix %zu is empty or longer than %zu characters", i,
                            sizeof ((ldcache_lib *)0)->prefix - 1);
    return 0;
}

int ldcache_driver_libs(const char *cache_path, const char *driver_version, const char *const *prefixes,
                        size_t nprefixes, ldcache_lib *out, size_t max, int *skipped, jerr *e)
{
    if (skipped)
        *skipped = 0;
    if (check_version(driver_version, e) < 0 || check_prefixes(prefixes, nprefixes, e) < 0)
        return -1;
    driver_walk w = {.version = driver_version, .prefixes = prefixes, .nprefixes = nprefixes,
                     .out = out, .max = max, .e = e};
    if (nprefixes && !(w.slot = malloc(nprefixes * sizeof *w.slot)))
        return jerr_set(e, ENOMEM, "out of memory");
    for (size_t i = 0; i < nprefixes; i++)
        w.slot[i] = -1;
    int rc = ldcache_read(cache_path, driver_entry, &w, e);
    if (rc == 0 && skipped)
        *skipped = (int)w.nskipped;
    for (size_t i = 0; i < w.nskipped; i++)
        free(w.skipped[i]);
    free(w.skipped);
    free(w.slot);
    return rc < 0 ? -1 : (int)w.n;
}
