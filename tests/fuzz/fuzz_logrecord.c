/* The shim's log files (src/exec/logwriter.c). Two halves:
 *   - the old format's reader, log_parse_record, on the fuzzer's bytes as a log file: record
 *     after record, skipping a line that is not one, as the daemon's reader does;
 *   - the writer: the fuzzer's bytes (after two control bytes) are the job's output, fed to a
 *     logw in pieces the control bytes choose; its .data must be exactly those bytes and its
 *     index one entry per piece with growing ends, the last at .data's end; with a cap, the
 *     two files together no larger than the cap, whole lines kept, and the last entry saying
 *     the stream was capped. */
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "exec/logwriter.h"
#include "fuzz.h"

static int dirfd_ = -1;
static char dir[] = "/tmp/fuzz-logrecord-XXXXXX";

static void cleanup(void)
{
    unlinkat(dirfd_, "out.data", 0);
    unlinkat(dirfd_, "out.idx", 0);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    FUZZ_ASSERT(mkdtemp(dir), "mkdtemp");
    dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FUZZ_ASSERT(dirfd_ >= 0, "open %s", dir);
    atexit(cleanup);
    return 0;
}

/* Reads buf as a log file; calls back with each record. Returns the bytes of garbage lines. */
static size_t read_log(const char *buf, size_t n, void (*fn)(const log_record *, void *), void *ud)
{
    size_t at = 0, garbage = 0;
    while (at < n) {
        log_record r;
        long used = log_parse_record(buf + at, n - at, &r);
        if (used == 0)
            break; /* incomplete: the writer has not finished it */
        if (used < 0) {
            const char *nl = memchr(buf + at, '\n', n - at);
            FUZZ_ASSERT(nl, "refused a line that is not complete");
            garbage += (size_t)(nl - (buf + at)) + 1;
            at = (size_t)(nl - buf) + 1;
            continue;
        }
        FUZZ_ASSERT((size_t)used <= n - at, "consumed %ld of %zu bytes", used, n - at);
        FUZZ_ASSERT(r.data >= buf + at && r.data + r.len < buf + at + (size_t)used, "data outside the record");
        FUZZ_ASSERT(r.ts_ns >= 0, "a negative time");
        if (fn)
            fn(&r, ud);
        at += (size_t)used;
    }
    return garbage;
}

static char *slurp(const char *name, size_t *len)
{
    int fd = openat(dirfd_, name, O_RDONLY | O_CLOEXEC);
    struct stat st;
    FUZZ_ASSERT(fd >= 0 && fstat(fd, &st) == 0, "open %s", name);
    char *file = malloc((size_t)st.st_size + 1);
    FUZZ_ASSERT(pread(fd, file, (size_t)st.st_size, 0) == st.st_size, "pread");
    close(fd);
    unlinkat(dirfd_, name, 0);
    *len = (size_t)st.st_size;
    return file;
}

static void write_and_read(const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    uint8_t chunking = data[0], capping = data[1];
    data += 2, size -= 2;
    /* cap 0 (none) or 128 bytes to some kilobytes */
    uint64_t cap = capping & 1 ? 128 + (uint64_t)(capping >> 1) * 64 : 0;
    logw w;
    logw_init(&w, dirfd_, "out", cap);
    size_t at = 0, k = 0;
    while (at < size) {
        size_t chunk = 1 + (chunking * 131u + k * 17u) % 600u;
        if (chunk > size - at)
            chunk = size - at;
        k++;
        FUZZ_ASSERT(logw_feed(&w, (const char *)data + at, chunk, 1767225600000000000ll + (int64_t)k, k) == 0,
                    "feed");
        at += chunk;
    }
    if (w.data_fd < 0) {
        FUZZ_ASSERT(size == 0, "%zu bytes and no file", size);
        return;
    }
    close(w.data_fd);
    close(w.idx_fd);
    size_t dlen, ilen;
    char *d = slurp("out.data", &dlen), *idx = slurp("out.idx", &ilen);
    FUZZ_ASSERT(ilen % sizeof(log_index_entry) == 0, "an index of %zu bytes", ilen);
    size_t n = ilen / sizeof(log_index_entry);
    uint64_t prev = 0, before_last = 0;
    for (size_t i = 0; i < n; i++) {
        log_index_entry e;
        memcpy(&e, idx + i * sizeof e, sizeof e);
        FUZZ_ASSERT(e.end >= prev && e.seq == i + 1 && e.reserved == 0, "entry %zu", i);
        FUZZ_ASSERT(e.flags == 0 || (e.flags == LOG_IDX_CAPPED && i == n - 1), "entry %zu's flags", i);
        before_last = prev;
        prev = e.end;
    }
    FUZZ_ASSERT(prev == dlen, "the index ends at %llu of %zu bytes", (unsigned long long)prev, dlen);
    if (cap) {
        FUZZ_ASSERT(dlen + ilen <= cap, "%zu bytes under a cap of %llu", dlen + ilen, (unsigned long long)cap);
        /* the piece the cap cut keeps its whole lines: nothing of it, or up to a newline */
        FUZZ_ASSERT(!w.capped || dlen == before_last || d[dlen - 1] == '\n', "the cut piece keeps whole lines");
    }
    if (!w.capped)
        FUZZ_ASSERT(dlen == size && (size == 0 || !memcmp(d, data, size)), "%zu bytes written, %zu read back", size,
                    dlen);
    else
        FUZZ_ASSERT(dlen <= size && !memcmp(d, data, dlen), "a capped stream is a start of the output");
    free(d);
    free(idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_log((const char *)data, size, NULL, NULL);
    write_and_read(data, size);
    return 0;
}
