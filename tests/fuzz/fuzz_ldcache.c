/* The ld.so.cache reader (src/gpu/ldcache.c) on the fuzzer's bytes as the cache file (a memfd,
 * read through its /proc/self/fd path as the daemon reads /etc/ld.so.cache): the walk over
 * every entry, and the driver library lookup built on it. It must end in an entry list or a
 * message, and every entry's strings must be NUL-terminated within their fields. */
#include <string.h>

#include "fuzz.h"
#include "gpu/ldcache.h"

static int each(const ldcache_entry *ent, void *ud)
{
    FUZZ_ASSERT(memchr(ent->name, 0, sizeof ent->name) && memchr(ent->path, 0, sizeof ent->path),
                "an entry without its NUL");
    ++*(size_t *)ud;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = fuzz_memfd(data, size);
    char path[64];
    fuzz_fd_path(fd, path, sizeof path);
    size_t n = 0;
    jerr e = {0};
    if (ldcache_read(path, each, &n, &e) < 0)
        FUZZ_ASSERT(e.msg[0], "refused without a message");
    static const char *const prefixes[] = {"libcuda.so", "libnvidia-ml.so", "libc.so", "ld-linux-x86-64.so"};
    ldcache_lib libs[8];
    int skipped;
    e = (jerr){0};
    int got = ldcache_driver_libs(path, "535.129.03", prefixes, 4, libs, 8, &skipped, &e);
    FUZZ_ASSERT(got <= 8, "%d results for 8 places", got);
    close(fd);
    return 0;
}
