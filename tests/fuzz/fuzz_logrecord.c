/* The shim's log records (src/exec/logwriter.c). Two halves:
 *   - the reader, log_parse_record, on the fuzzer's bytes as a log file: record after record,
 *     skipping a line that is not one, as the daemon's readers do;
 *   - the writer against the reader: the fuzzer's bytes (after two control bytes) are the
 *     job's output, fed to a logw in chunks the control bytes choose; the file it writes,
 *     read back record by record, must give exactly those bytes (F records with their
 *     newline, P records without), or with a cap, a file no larger than the cap that ends
 *     with the record saying so. */
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "exec/logwriter.h"
#include "fuzz.h"

static int dirfd_ = -1;
static char dir[] = "/tmp/fuzz-logrecord-XXXXXX";

static void cleanup(void)
{
    unlinkat(dirfd_, "out.log", 0);
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

typedef struct rebuilt {
    char *p;
    size_t len;
    size_t records;
    const log_record *last;
    bool last_is_note;
} rebuilt;

static void append(const log_record *r, void *ud)
{
    rebuilt *b = ud;
    b->p = realloc(b->p, b->len + r->len + 1);
    memcpy(b->p + b->len, r->data, r->len);
    b->len += r->len;
    if (r->newline)
        b->p[b->len++] = '\n';
    b->records++;
    b->last_is_note = r->len > 8 && !memcmp(r->data, "joblet: ", 8);
}

static void write_and_read(const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    uint8_t chunking = data[0], capping = data[1];
    data += 2, size -= 2;
    /* cap 0 (none) or 400 bytes to some kilobytes: the note needs LOGW_CAP_NOTE_MAX of it */
    uint64_t cap = capping & 1 ? 400 + (uint64_t)(capping >> 1) * 64 : 0;
    logw w;
    logw_init(&w, dirfd_, "out.log", cap);
    size_t at = 0, k = 0;
    while (at < size) {
        size_t chunk = 1 + (chunking * 131u + k++ * 17u) % 600u;
        if (chunk > size - at)
            chunk = size - at;
        FUZZ_ASSERT(logw_feed(&w, (const char *)data + at, chunk, 1767225600000000000ll + (int64_t)k) == 0, "feed");
        at += chunk;
    }
    FUZZ_ASSERT(logw_flush(&w, 1767225600000000000ll + (int64_t)k + 1) == 0, "flush");
    rebuilt b = {0};
    if (w.fd >= 0) {
        close(w.fd); /* the writer's is write-only */
        int fd = openat(dirfd_, "out.log", O_RDONLY | O_CLOEXEC);
        struct stat st;
        FUZZ_ASSERT(fd >= 0 && fstat(fd, &st) == 0, "open the log");
        char *file = malloc((size_t)st.st_size + 1);
        FUZZ_ASSERT(pread(fd, file, (size_t)st.st_size, 0) == st.st_size, "pread");
        close(fd);
        unlinkat(dirfd_, "out.log", 0);
        size_t garbage = read_log(file, (size_t)st.st_size, append, &b);
        FUZZ_ASSERT(garbage == 0, "the writer wrote %zu bytes that are not records", garbage);
        if (cap) {
            FUZZ_ASSERT((uint64_t)st.st_size <= cap, "%lld bytes under a cap of %llu", (long long)st.st_size,
                        (unsigned long long)cap);
            FUZZ_ASSERT(!w.capped || b.last_is_note, "capped without the closing record");
        }
        free(file);
    }
    if (!w.capped) {
        FUZZ_ASSERT(b.len == size && (size == 0 || !memcmp(b.p, data, size)),
                    "%zu bytes written, %zu read back", size, b.len);
    }
    free(b.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_log((const char *)data, size, NULL, NULL);
    write_and_read(data, size);
    return 0;
}
