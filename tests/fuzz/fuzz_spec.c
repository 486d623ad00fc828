/* The shim's reader of its job spec (src/exec/spec.c, spec_load_fd) on the fuzzer's bytes in
 * a memfd, as the shim reads its fd 5. A spec that loads is written again (spec_to_fd) and
 * read back: the second reading must give the same spec, byte for byte once written. */
#include <sys/stat.h>

#include "exec/spec.h"
#include "fuzz.h"

/* The whole of fd, from offset 0 (caller frees). */
static char *slurp(int fd, size_t *len)
{
    struct stat st;
    FUZZ_ASSERT(fstat(fd, &st) == 0, "fstat");
    char *buf = malloc((size_t)st.st_size + 1);
    FUZZ_ASSERT(buf && pread(fd, buf, (size_t)st.st_size, 0) == st.st_size, "pread");
    *len = (size_t)st.st_size;
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = fuzz_memfd(data, size);
    job_spec s, back;
    jerr e = {0};
    if (spec_load_fd(&s, fd, &e) < 0) {
        FUZZ_ASSERT(e.msg[0], "refused without a message");
        spec_free(&s); /* harmless on a refused spec (spec.h) */
        close(fd);
        return 0;
    }
    close(fd);
    int fd1 = spec_to_fd(&s, &e);
    FUZZ_ASSERT(fd1 >= 0, "a loaded spec cannot be written: %s", e.msg);
    FUZZ_ASSERT(spec_load_fd(&back, fd1, &e) == 0, "a written spec does not load: %s", e.msg);
    int fd2 = spec_to_fd(&back, &e);
    FUZZ_ASSERT(fd2 >= 0, "a reloaded spec cannot be written: %s", e.msg);
    size_t n1, n2;
    char *t1 = slurp(fd1, &n1), *t2 = slurp(fd2, &n2);
    FUZZ_ASSERT(n1 == n2 && !memcmp(t1, t2, n1), "the spec changes when written and read again:\n%.*s\n%.*s",
                (int)n1, t1, (int)n2, t2);
    free(t1);
    free(t2);
    close(fd1);
    close(fd2);
    spec_free(&back);
    spec_free(&s);
    return 0;
}
