/* Unit tests for src/exec/logwriter.c: the shim's log files (format in logwriter.h) — each
 * stream's .data must hold exactly the job's bytes and its .idx one entry per piece, whose ends
 * cut .data into those pieces — and log_parse_record, which reads the records of jobs from
 * before that format. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "exec/logwriter.h"
#include "scratch_dir.h"

#define TS 1700000000123456789LL /* 2023-11-14T22:13:20.123456789Z */

/* A fresh directory per test, for the writer's files. */
typedef scratch_dir fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || scratch_dir_make(f, "test_logwriter") < 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    static const char *const names[] = {"stdout.data", "stdout.idx", "stderr.data", "stderr.idx"};
    scratch_dir_remove(*state, names, 4);
    free(*state);
    return 0;
}

/* The whole file name in f's directory (NUL-terminated for convenience); NULL if absent. */
static char *slurp(const fixture *f, const char *name, size_t *len)
{
    int fd = openat(f->dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    char *buf = malloc((size_t)st.st_size + 1);
    assert_non_null(buf);
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        assert_true(r > 0);
        n += (size_t)r;
    }
    buf[n] = 0;
    close(fd);
    *len = n;
    return buf;
}

/* The entries of an index file; *n gets how many. */
static log_index_entry *entries(const fixture *f, const char *name, size_t *n)
{
    size_t len;
    char *b = slurp(f, name, &len);
    assert_non_null(b);
    assert_int_equal(len % sizeof(log_index_entry), 0);
    *n = len / sizeof(log_index_entry);
    log_index_entry *e = malloc(len + 1);
    assert_non_null(e);
    memcpy(e, b, len);
    free(b);
    return e;
}

static void feed(logw *w, const char *s, size_t n, int64_t ts, uint64_t seq)
{
    assert_int_equal(logw_feed(w, s, n, ts, seq), 0);
}

static void close_w(logw *w)
{
    if (w->data_fd >= 0)
        close(w->data_fd);
    if (w->idx_fd >= 0)
        close(w->idx_fd);
}

/* ---- the writer: exact bytes on disk ---------------------------------------------- */

static void test_both_streams(void **state)
{
    fixture *f = *state;
    logw out, err;
    logw_init(&out, f->dirfd, "stdout", 0);
    logw_init(&err, f->dirfd, "stderr", 0);
    feed(&out, "one\ntw", 6, TS, 1);
    feed(&err, "oops\n", 5, TS + 1, 2);
    feed(&out, "o\n", 2, TS + 2, 3);
    size_t len, n;
    char *d = slurp(f, "stdout.data", &len);
    assert_int_equal(len, 8);
    assert_memory_equal(d, "one\ntwo\n", 8);   /* the bytes, nothing added, no line split */
    free(d);
    log_index_entry *e = entries(f, "stdout.idx", &n);
    assert_int_equal(n, 2);
    assert_true(e[0].ts_ns == TS && e[0].end == 6 && e[0].seq == 1 && e[0].flags == 0);
    assert_true(e[1].ts_ns == TS + 2 && e[1].end == 8 && e[1].seq == 3);
    free(e);
    e = entries(f, "stderr.idx", &n);
    assert_int_equal(n, 1);
    assert_true(e[0].end == 5 && e[0].seq == 2);
    free(e);
    assert_true(out.end == 8 && out.idx_bytes == 2 * sizeof(log_index_entry));
    close_w(&out);
    close_w(&err);
}

static void test_no_output_no_file(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout", 0);
    assert_int_equal(logw_feed(&w, "", 0, TS, 1), 0);
    assert_int_equal(w.data_fd, -1);
    assert_int_equal(faccessat(f->dirfd, "stdout.data", F_OK, 0), -1);
    assert_int_equal(faccessat(f->dirfd, "stdout.idx", F_OK, 0), -1);
}

/* The cap bounds both files together; whole lines are kept, then an entry flagged capped,
 * then nothing more. */
static void test_cap(void **state)
{
    fixture *f = *state;
    logw w;
    const uint64_t cap = 1000;
    logw_init(&w, f->dirfd, "stdout", cap);
    char line[100];
    memset(line, 'x', 99);
    line[99] = '\n';
    for (uint64_t i = 0; i < 30; i++)
        feed(&w, line, 100, TS + (int64_t)i, i + 1);
    size_t len, n;
    char *d = slurp(f, "stdout.data", &len);
    log_index_entry *e = entries(f, "stdout.idx", &n);
    assert_true(len + n * sizeof *e <= cap);
    assert_int_equal(len % 100, 0);                       /* whole lines only */
    assert_true(w.capped);
    assert_int_equal(e[n - 1].flags, LOG_IDX_CAPPED);
    assert_int_equal(e[n - 1].end, len);
    for (size_t i = 0; i + 1 < n; i++)
        assert_int_equal(e[i].flags, 0);
    free(d);
    free(e);
    /* and later output is dropped without a write */
    uint64_t before = w.end + w.idx_bytes;
    feed(&w, line, 100, TS + 99, 99);
    assert_true(w.end + w.idx_bytes == before);
    char note[200];
    log_cap_note(note, sizeof note, "stdout", cap);
    assert_string_equal(note, "joblet: stdout reached its cap of 1000 bytes (jobs.max_log_bytes); the rest of the "
                              "stream was discarded\n");
    close_w(&w);
}

/* Two streams (two jobs of one owner) share a budget: together their files never hold more
 * than it, each charge matches what its files hold, whole lines are kept, the stream that
 * reaches it ends flagged LOG_IDX_USER_CAPPED, and a floor above the free room stops a stream
 * before its first byte (LOG_IDX_DISK_LOW). */
static void test_user_budget_and_floor(void **state)
{
    fixture *f = *state;
    log_budget b = {.magic = LOG_BUDGET_MAGIC, .cap = 1500, .used = 0};
    logw a, c;
    logw_init(&a, f->dirfd, "stdout", 0);
    logw_init(&c, f->dirfd, "stderr", 0);
    logw_limits(&a, &b, 0);
    logw_limits(&c, &b, 0);
    char line[100];
    memset(line, 'x', 99);
    line[99] = '\n';
    for (uint64_t i = 0; i < 20; i++) {
        feed(&a, line, 100, TS + (int64_t)i, 2 * i + 1);
        feed(&c, line, 100, TS + (int64_t)i, 2 * i + 2);
    }
    uint64_t on_disk = a.end + a.idx_bytes + c.end + c.idx_bytes;
    assert_true(on_disk <= b.cap + 2 * sizeof(log_index_entry)); /* at most a closing entry per stream past it */
    assert_true(on_disk > b.cap - 200);
    assert_int_equal(b.used, on_disk);
    assert_int_equal(a.end % 100, 0);
    assert_int_equal(c.end % 100, 0);
    assert_true(a.capped && c.capped);
    size_t n;
    log_index_entry *e = entries(f, "stderr.idx", &n);
    assert_int_equal(e[n - 1].flags, LOG_IDX_CAPPED | LOG_IDX_USER_CAPPED);
    free(e);
    char note[400];
    log_stop_note(note, sizeof note, "stderr", LOG_IDX_CAPPED | LOG_IDX_USER_CAPPED, 0, 1500);
    assert_non_null(strstr(note, "jobs.max_log_bytes_per_user (1500 bytes)"));
    close_w(&a);
    close_w(&c);
    unlinkat(f->dirfd, "stdout.data", 0);
    unlinkat(f->dirfd, "stdout.idx", 0);
    /* a floor no filesystem has: stopped at once, an entry says why */
    logw d;
    logw_init(&d, f->dirfd, "stdout", 0);
    logw_limits(&d, NULL, UINT64_MAX);
    feed(&d, line, 100, TS, 1);
    assert_true(d.capped);
    assert_int_equal(d.end, 0);
    e = entries(f, "stdout.idx", &n);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].flags, LOG_IDX_CAPPED | LOG_IDX_DISK_LOW);
    free(e);
    close_w(&d);
}

/* Random pieces, bytes of every value (NUL and newlines included), one stream: .data is their
 * concatenation and the index's ends cut it back into them. */
static void test_random_round_trip(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout", 0);
    unsigned seed = 42;
    size_t total = 0, npieces = 300;
    char *all = malloc(300 * 5000);
    size_t ends[300];
    assert_non_null(all);
    for (size_t i = 0; i < npieces; i++) {
        size_t n = 1 + (size_t)rand_r(&seed) % 4999;
        for (size_t k = 0; k < n; k++)
            all[total + k] = (char)(rand_r(&seed) % 5 == 0 ? '\n' : rand_r(&seed) & 0xff);
        feed(&w, all + total, n, TS + (int64_t)i, i + 1);
        total += n;
        ends[i] = total;
    }
    size_t len, n;
    char *d = slurp(f, "stdout.data", &len);
    assert_int_equal(len, total);
    assert_memory_equal(d, all, total);
    log_index_entry *e = entries(f, "stdout.idx", &n);
    assert_int_equal(n, npieces);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(e[i].end, ends[i]);
        assert_int_equal(e[i].seq, i + 1);
    }
    free(d);
    free(e);
    free(all);
    close_w(&w);
}

static void test_open_failure(void **state)
{
    (void)state;
    logw w;
    logw_init(&w, -1, "stdout", 0); /* relative names and no directory: EBADF */
    assert_int_equal(logw_feed(&w, "x\n", 2, TS, 1), -1);
    assert_int_equal(w.end, 0);
}

/* A write cut short (disk full; here the file size limit): the entry covers what reached the
 * disk, so nothing written is unreachable, and later pieces go on after it. */
static void test_short_write(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout", 0);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    if (old.rlim_max != RLIM_INFINITY && old.rlim_max < 4096)
        skip();
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN); /* else a write past the limit kills us */
    feed(&w, "before\n", 7, TS, 1);
    /* .data may grow to 7 + 8 bytes, the index not at all */
    lim = old;
    lim.rlim_cur = 7 + 8;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = logw_feed(&w, "torn-line-of-many-bytes\n", 24, TS + 1, 2);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_xfsz);
    assert_int_equal(rc, -1);
    feed(&w, "after\n", 6, TS + 2, 3);
    size_t len, n;
    char *d = slurp(f, "stdout.data", &len);
    assert_int_equal(len, 7 + 8 + 6);
    assert_memory_equal(d, "before\ntorn-lin" "after\n", len);
    /* the limit stopped the torn piece's entry too (the index is past 15 bytes): the next
     * entry's end covers its bytes, which are thus still read, with the next piece */
    log_index_entry *e = entries(f, "stdout.idx", &n);
    assert_int_equal(n, 2);
    assert_int_equal(e[0].end, 7);
    assert_int_equal(e[1].end, 21);
    assert_int_equal(e[1].seq, 3);
    free(d);
    free(e);
    close_w(&w);
}

/* ---- the old format's parser ------------------------------------------------------------ */

/* kill -9 of an old shim can leave its last record cut anywhere: every cut of a file parses as
 * the records before the cut, then "incomplete" (0), never as garbage or a wrong record. */
static void test_truncated_tail(void **state)
{
    (void)state;
    const char *s = "1700000000123456789 F first\n1700000000123456789 F \n1700000000123456789 F third line\n"
                    "1700000000123456790 P last\n";
    size_t len = strlen(s);
    size_t ends[4], nends = 0; /* offsets just past each record */
    for (size_t off = 0; off < len;) {
        log_record r;
        long used = log_parse_record(s + off, len - off, &r);
        assert_true(used > 0);
        off += (size_t)used;
        ends[nends++] = off;
    }
    assert_int_equal(nends, 4);
    for (size_t cut = 0; cut <= len; cut++) {
        /* the cut bytes in a buffer of their own, so that ASan sees any read past the cut */
        char *b = malloc(cut ? cut : 1);
        assert_non_null(b);
        memcpy(b, s, cut);
        size_t off = 0, complete = 0;
        for (;;) {
            log_record r;
            long used = log_parse_record(b + off, cut - off, &r);
            if (used == 0)
                break;
            assert_true(used > 0);
            off += (size_t)used;
            assert_int_equal(off, ends[complete]);
            complete++;
        }
        size_t want = 0;
        while (want < nends && ends[want] <= cut)
            want++;
        assert_int_equal(complete, want);
        free(b);
    }
}

static void test_garbage(void **state)
{
    (void)state;
    const char *bad[] = {
        "\n",                 /* an empty line */
        "hello\n",            /* no timestamp */
        "123\n",              /* nothing after it */
        "123 F\n",            /* no space after the flag */
        "123 X data\n",       /* unknown flag */
        "123 f data\n",       /* flags are upper case */
        "123  F data\n",      /* two spaces */
        "123 FF data\n",
        "123F data\n",
        " 123 F data\n",      /* leading space */
        "-5 F data\n",        /* the writer never writes a sign */
        "+5 F data\n",
        "0x10 F data\n",
        "12a3 F data\n",
        "123\tF data\n",
        "\0 F data\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = strlen(bad[i]) ? strlen(bad[i]) : strlen(bad[i] + 1) + 1; /* the NUL one */
        log_record r = {.ts_ns = -7};
        long used = log_parse_record(bad[i], n, &r);
        if (used != -1)
            fail_msg("'%s' (case %zu): log_parse_record returned %ld, not -1", bad[i], i, used);
        assert_true(r.ts_ns == -7); /* untouched */
    }

    /* Garbage then records: the caller skips to the next line (as job_logs.c does) and
     * finds them. */
    const char *mixed = "garbage\n1 F a\n\x01\x02\xff\n2 P b\n";
    size_t len = strlen(mixed), off = 0, n = 0;
    while (off < len) {
        log_record r;
        long used = log_parse_record(mixed + off, len - off, &r);
        assert_int_not_equal(used, 0);
        if (used < 0) {
            off = (size_t)((const char *)memchr(mixed + off, '\n', len - off) - mixed) + 1;
            continue;
        }
        n++;
        assert_true(r.ts_ns == (int64_t)n);
        assert_int_equal(r.newline, n == 1);
        assert_int_equal(r.len, 1);
        assert_int_equal(r.data[0], n == 1 ? 'a' : 'b');
        off += (size_t)used;
    }
    assert_int_equal(n, 2);

    /* Nothing, or no LF yet: incomplete, whatever the bytes. */
    log_record r;
    assert_int_equal(log_parse_record("", 0, &r), 0);
    assert_int_equal(log_parse_record("garbage", 7, &r), 0);
    assert_int_equal(log_parse_record("123 F data", 10, &r), 0);
}

/* The record's own LF ends it; a CR before it is data, and so is anything that looks like a
 * record inside the data. */
static void test_data_that_looks_like_records(void **state)
{
    (void)state;
    const char *s = "5 F 6 P x\r\n";
    log_record r;
    assert_int_equal(log_parse_record(s, strlen(s), &r), (long)strlen(s));
    assert_true(r.ts_ns == 5);
    assert_true(r.newline);
    assert_int_equal(r.len, 6);
    assert_memory_equal(r.data, "6 P x\r", 6);
}

static void test_timestamps(void **state)
{
    (void)state;
    const struct {
        const char *rec;
        int64_t ts;
    } ok[] = {
        {"0 F x\n", 0},
        {"1 P x\n", 1},
        {"1700000000123456789 F x\n", TS},
        {"000000000000000000000000042 F x\n", 42}, /* leading zeros are not an overflow */
        {"9223372036854775807 F x\n", INT64_MAX},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        log_record r;
        assert_int_equal(log_parse_record(ok[i].rec, strlen(ok[i].rec), &r), (long)strlen(ok[i].rec));
        if (r.ts_ns != ok[i].ts)
            fail_msg("'%s': ts %lld", ok[i].rec, (long long)r.ts_ns);
    }
    /* Beyond int64: not a record (and no signed overflow on the way, which UBSan reports). */
    const char *over[] = {"9223372036854775808 F x\n", "18446744073709551616 F x\n",
                          "99999999999999999999999999999999 F x\n"};
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        log_record r;
        assert_int_equal(log_parse_record(over[i], strlen(over[i]), &r), -1);
    }

    /* What joblet shows of a stamp (job_logs.c): microseconds, UTC. */
    char t[40];
    format_ns_us(TS, t, sizeof t);
    assert_string_equal(t, "2023-11-14T22:13:20.123456Z");
    format_ns_us(0, t, sizeof t);
    assert_string_equal(t, "1970-01-01T00:00:00.000000Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_both_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_output_no_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_budget_and_floor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_round_trip, setup, teardown),
        cmocka_unit_test(test_open_failure),
        cmocka_unit_test_setup_teardown(test_short_write, setup, teardown),
        cmocka_unit_test(test_truncated_tail),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_data_that_looks_like_records),
        cmocka_unit_test(test_timestamps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
