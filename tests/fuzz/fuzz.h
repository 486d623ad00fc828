/* Helpers shared by the libFuzzer harnesses of tests/fuzz (README.md there). Each harness is
 * one file with LLVMFuzzerTestOneInput; these turn the fuzzer's bytes into what the code under
 * test takes: a NUL-terminated string, lines, a file descriptor. */
#ifndef JOBLET_FUZZ_H
#define JOBLET_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A NUL-terminated copy of data (which may hold NULs of its own: the string ends at the
 * first). The caller frees it. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* A memfd holding data, at offset 0; -1 stops the harness (not a finding). */
static inline int fuzz_memfd(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0) {
        perror("memfd_create");
        abort();
    }
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) {
            perror("write memfd");
            abort();
        }
        off += (size_t)n;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* The path of an open fd, for code that takes a path ("/proc/self/fd/N"). */
static inline void fuzz_fd_path(int fd, char *out, size_t len)
{
    snprintf(out, len, "/proc/self/fd/%d", fd);
}

/* Takes the next piece of *data up to a separator byte (not included), or the rest. Returns
 * a NUL-terminated copy (caller frees), NULL when nothing is left. */
static inline char *fuzz_next(const uint8_t **data, size_t *size, uint8_t sep)
{
    if (!*size)
        return NULL;
    const uint8_t *end = memchr(*data, sep, *size);
    size_t n = end ? (size_t)(end - *data) : *size;
    char *s = fuzz_strndup(*data, n);
    *data += n + (end ? 1 : 0);
    *size -= n + (end ? 1 : 0);
    return s;
}

/* A crash with a message, for an invariant the code under test broke. */
#define FUZZ_ASSERT(cond, ...)                                                                          \
    do {                                                                                                \
        if (!(cond)) {                                                                                  \
            fprintf(stderr, "fuzz: %s:%d: %s: ", __FILE__, __LINE__, #cond);                            \
            fprintf(stderr, __VA_ARGS__);                                                               \
            fputc('\n', stderr);                                                                        \
            abort();                                                                                    \
        }                                                                                               \
    } while (0)

#endif
