/* The /proc/<pid>/mountinfo parser (src/exec/mountinfo.c) that the cgroup layout detection
 * reads mounts with: mountinfo_foreach over the fuzzer's bytes as the file (a memfd), every
 * parsed line checked against the promises of mountinfo.h and asked for its optional fields;
 * and mountinfo_unescape alone, which never lengthens a string. */
#include "exec/mountinfo.h"
#include "fuzz.h"

static int each(mountinfo_entry *m, void *arg, jerr *e)
{
    ++*(size_t *)arg;
    FUZZ_ASSERT(m->root && m->point && m->opts && m->optional && m->fstype && m->source && m->super,
                "a field missing from a parsed line");
    /* only the source may be empty; unescaping never makes a NUL (\000 stays as written) */
    FUZZ_ASSERT(*m->root && *m->point && *m->opts && *m->fstype && *m->super, "an empty field");
    FUZZ_ASSERT(!strchr(m->opts, ' ') && m->super[0] != ' ', "a space where fields are split");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = fuzz_memfd(data, size);
    char path[64];
    fuzz_fd_path(fd, path, sizeof path);
    size_t lines = 0;
    jerr e = {0};
    FUZZ_ASSERT(mountinfo_foreach(path, each, &lines, &e) == 0, "%s", e.msg);
    close(fd);

    char *t = fuzz_strndup(data, size);
    size_t before = strlen(t);
    mountinfo_unescape(t);
    FUZZ_ASSERT(strlen(t) <= before, "unescaping lengthened '%.*s'", (int)size, (const char *)data);
    free(t);
    return 0;
}
