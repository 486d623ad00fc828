/* A bounds-checked reader of glibc's /etc/ld.so.cache, used to find the NVIDIA driver's
 * user-space libraries the way the dynamic loader would, so that a GPU job gets exactly the
 * libraries of the running driver version (the approach of libnvidia-container). */
#ifndef JOBLET_GPU_LDCACHE_H
#define JOBLET_GPU_LDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

#define LDCACHE_PATH "/etc/ld.so.cache"

/* Entry flags, as glibc's sysdeps/generic/ldconfig.h numbers them. */
#define LDCACHE_FLAG_TYPE_MASK     0x00ff
#define LDCACHE_FLAG_ELF_LIBC6     0x0003
#define LDCACHE_FLAG_REQUIRED_MASK 0xff00
#define LDCACHE_FLAG_X8664_LIB64   0x0300
#define LDCACHE_FLAG_X8664_LIBX32  0x0800
#define LDCACHE_FLAG_AARCH64_LIB64 0x0a00

typedef struct ldcache_entry {
    char name[128];    /* the key: "libcuda.so.1" */
    char path[512];    /* the value: "/usr/lib/x86_64-linux-gnu/libcuda.so.1" */
    uint32_t flags;    /* the entry's flags word (LDCACHE_FLAG_*) */
} ldcache_entry;

/* Reads every entry of the cache at path (new format "glibc-ld.so.cache1.1", alone or after
 * the old "ld.so-1.7.0" header, as glibc writes it). Calls fn for each entry; fn returns 0 to
 * go on, anything else stops the walk and becomes ldcache_read's result (a callback that fails
 * fills e and returns -1). An entry whose name or path does not fit ldcache_entry is skipped:
 * no library the daemon looks for has such a name.
 * A truncated or malformed file, an offset out of bounds, a string without its NUL, a count
 * that does not fit the file, a cache of the other byte order: -1 with a message naming the
 * file and what is wrong. Never reads outside the file. */
int ldcache_read(const char *path, int (*fn)(const ldcache_entry *ent, void *ud), void *ud, jerr *e);

/* Whether an entry's flags say it is a 64-bit x86-64 (on aarch64 builds, AArch64) libc6
 * library: the only ones a job on this architecture can load. 0 on other architectures. */
int ldcache_native(uint32_t flags);

typedef struct ldcache_lib {
    char prefix[64];       /* "libcuda.so" */
    char real[512];        /* "/usr/lib/x86_64-linux-gnu/libcuda.so.535.129.03" */
    char soname[128];      /* "libcuda.so.1": the name programs load (the cache key) */
} ldcache_lib;

/* The driver libraries of one version, found through the cache at cache_path. A prefix is a
 * library name up to ".so" ("libcuda.so", "libnvidia-ml.so"); it matches entries named exactly
 * so or followed by ".<anything>". For each prefix the first native entry (cache order, the
 * loader's order) whose resolved file is named <prefix>.<driver_version> gives one result:
 * {prefix, that file's real path, the entry name programs load: a versioned name like
 * "libcuda.so.1" is preferred over the bare development name "libcuda.so"}.
 * Entries resolving to another file (another driver version) are skipped and their distinct
 * real files counted in *skipped (may be NULL); dangling entries are ignored.
 * Returns the number of results in out[], -1 on a cache error, a bad version or more than max
 * results. */
int ldcache_driver_libs(const char *cache_path, const char *driver_version, const char *const *prefixes,
                        size_t nprefixes, ldcache_lib *out, size_t max, int *skipped, jerr *e);

#endif
