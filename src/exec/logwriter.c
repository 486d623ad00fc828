/* The shim's log files (logwriter.h). */
#include "logwriter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../common/util.h"

/* What an earlier run of the same job left (a requeued job's shim appends to its files): their
 * sizes, so that the entries' ends stay offsets into the whole .data (the reader's) and the cap
 * counts what is there already, and the last entry's sequence number, which this run's pieces
 * follow. An entry a full disk cut short at the end is cut off, so that the next one is whole. */
static void resume_files(logw *w)
{
    struct stat st;
    int fd = openat(w->dirfd, w->idx_name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        uint64_t size = (uint64_t)st.st_size, whole = size / sizeof(log_index_entry) * sizeof(log_index_entry);
        log_index_entry e;
        if (whole != size && ftruncate(fd, (off_t)whole) < 0) {
            /* a partial entry that stays would hide every entry after it from the reader: this
             * run's output goes unindexed rather than out of sight (it is capped at once) */
            w->capped = true;
            whole = size;
        }
        w->idx_bytes = whole;
        if (whole >= sizeof e && pread(fd, &e, sizeof e, (off_t)(whole - sizeof e)) == (ssize_t)sizeof e) {
            w->last_seq = e.seq;
            w->end = e.end;
        }
    }
    if (fd >= 0)
        close(fd);
    /* bytes past the last entry's end (a run killed between its two writes) belong to no entry:
     * cut off, so that this run's first entry covers its own bytes only */
    int dfd = openat(w->dirfd, w->data_name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0)
        return;
    if (fstat(dfd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > w->end &&
        ftruncate(dfd, (off_t)w->end) < 0)
        w->end = (uint64_t)st.st_size; /* (kept: the first entry then covers them too) */
    close(dfd);
}

void logw_init(logw *w, int dirfd, const char *stream, uint64_t cap)
{
    w->data_fd = w->idx_fd = -1;
    w->dirfd = dirfd;
    snprintf(w->data_name, sizeof w->data_name, "%s.data", stream);
    snprintf(w->idx_name, sizeof w->idx_name, "%s.idx", stream);
    w->end = w->idx_bytes = w->last_seq = 0;
    /* room for at least a little output and the two entries that close it */
    w->cap = cap && cap < 4 * sizeof(log_index_entry) ? 4 * sizeof(log_index_entry) : cap;
    w->capped = false;
    w->budget = NULL;
    w->floor = w->unchecked = 0;
    w->checked = false;
    resume_files(w);
}

uint64_t log_files_bytes(int dirfd)
{
    static const char *const files[] = {"stdout.data", "stdout.idx", "stderr.data", "stderr.idx", "stdout.log",
                                        "stderr.log"};
    uint64_t sum = 0;
    for (size_t i = 0; i < ARRAY_LEN(files); i++) {
        struct stat st;
        if (fstatat(dirfd, files[i], &st, 0) == 0)
            sum += (uint64_t)st.st_size;
    }
    return sum;
}

void logw_limits(logw *w, log_budget *budget, uint64_t floor)
{
    w->budget = budget;
    w->floor = floor;
}

int log_stop_note(char *out, size_t outlen, const char *stream, uint32_t flags, uint64_t cap, uint64_t user_cap)
{
    if (flags & LOG_IDX_USER_CAPPED)
        return snprintf(out, outlen,
                        "joblet: %s stopped here: the output of its owner's jobs together reached "
                        "jobs.max_log_bytes_per_user (%llu bytes); the rest of the stream was discarded (rnx job "
                        "delete of ended jobs makes room for new ones)\n",
                        stream, (unsigned long long)user_cap);
    if (flags & LOG_IDX_DISK_LOW)
        return snprintf(out, outlen,
                        "joblet: %s stopped here: the state filesystem was nearly full (less than half of "
                        "jobs.state_reserve free); the rest of the stream was discarded\n",
                        stream);
    return log_cap_note(out, outlen, stream, cap);
}

int log_cap_note(char *out, size_t outlen, const char *stream, uint64_t cap)
{
    return snprintf(out, outlen,
                    "joblet: %s reached its cap of %llu bytes (jobs.max_log_bytes); the rest of the stream was "
                    "discarded\n",
                    stream, (unsigned long long)cap);
}

static int open_files(logw *w)
{
    if (w->data_fd < 0)
        w->data_fd = openat(w->dirfd, w->data_name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (w->idx_fd < 0)
        w->idx_fd = openat(w->dirfd, w->idx_name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    return w->data_fd < 0 || w->idx_fd < 0 ? -1 : 0;
}

static int add_entry(logw *w, int64_t ts_ns, uint64_t seq, uint32_t flags)
{
    log_index_entry e = {.ts_ns = ts_ns, .end = w->end, .seq = seq, .flags = flags};
    /* O_APPEND and 32 bytes: a reader sees an entry whole or not at all, except after a
     * write cut short by a full disk, which it ignores (a partial entry at the end) */
    size_t done = write_all(w->idx_fd, &e, sizeof e);
    w->idx_bytes += done;
    return done == sizeof e ? 0 : -1;
}

/* The whole lines of data[0..n) that fit in room bytes. */
static size_t whole_lines(const char *data, size_t n, uint64_t room)
{
    if (n <= room)
        return n;
    const char *nl = room ? memrchr(data, '\n', (size_t)room) : NULL;
    return nl ? (size_t)(nl - data) + 1 : 0;
}

int logw_feed(logw *w, const char *data, size_t n, int64_t ts_ns, uint64_t seq)
{
    if (w->capped || !n)
        return 0;
    if (open_files(w) < 0)
        return -1;
    uint32_t flags = 0;
    if (w->cap) {
        uint64_t used = w->end + w->idx_bytes, reserve = 2 * sizeof(log_index_entry);
        uint64_t room = used + reserve < w->cap ? w->cap - used - reserve : 0;
        if (n > room) {
            /* the whole lines that fit, then the entry that says the rest is gone */
            n = whole_lines(data, n, room);
            flags = LOG_IDX_CAPPED;
            w->capped = true;
        }
    }
    if (w->floor && (!w->checked || w->unchecked >= LOG_FLOOR_CHECK_BYTES)) {
        struct statvfs sv;
        w->checked = true;
        w->unchecked = 0;
        if (fstatvfs(w->dirfd, &sv) == 0 && (uint64_t)sv.f_bfree * sv.f_frsize < w->floor) {
            n = 0;
            flags = LOG_IDX_CAPPED | LOG_IDX_DISK_LOW;
            w->capped = true;
        }
    }
    if (w->budget && n) {
        /* charged before it is written, so that jobs writing at once never pass the budget
         * together: this piece and its entry, with room kept for the entry that would close the
         * stream after it. Only that closing entry may pass the budget, by 32 bytes per stream,
         * when other streams used it up meanwhile. */
        log_budget *b = w->budget;
        uint64_t entry = sizeof(log_index_entry), want = n + 2 * entry;
        uint64_t before = __atomic_fetch_add(&b->used, want, __ATOMIC_SEQ_CST), cap = b->cap;
        if (before + want > cap) {
            uint64_t room = before + entry < cap ? cap - before - entry : 0;
            n = whole_lines(data, n, room);
            flags = LOG_IDX_CAPPED | LOG_IDX_USER_CAPPED;
            w->capped = true;
        }
        __atomic_fetch_sub(&b->used, want - (n + entry), __ATOMIC_SEQ_CST);
    }
    w->unchecked += n;
    size_t done = n ? write_all(w->data_fd, data, n) : 0;
    int rc = done == n ? 0 : -1;
    w->end += done;
    /* an entry even after a short write: it covers what did reach the disk */
    if ((done || flags) && add_entry(w, ts_ns, seq, flags) < 0)
        rc = -1;
    return rc;
}

long log_parse_record(const char *buf, size_t n, log_record *r)
{
    if (n == 0)
        return 0;
    const char *nl = memchr(buf, '\n', n);
    if (!nl)
        return 0;
    size_t i = 0;
    int64_t ts = 0;
    while (i < n && buf[i] >= '0' && buf[i] <= '9') {
        int d = buf[i++] - '0';
        /* More digits than an int64 holds are garbage, not a time (and overflow is UB). */
        if (ts > (INT64_MAX - d) / 10)
            return -1;
        ts = ts * 10 + d;
    }
    if (i == 0 || buf + i + 3 > nl || buf[i] != ' ' || (buf[i + 1] != 'F' && buf[i + 1] != 'P') ||
        buf[i + 2] != ' ')
        return -1;
    r->ts_ns = ts;
    r->newline = buf[i + 1] == 'F';
    r->data = buf + i + 3;
    r->len = (size_t)(nl - r->data);
    return (long)(nl - buf + 1);
}
