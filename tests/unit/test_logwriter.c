/* Unit tests for src/exec/logwriter.c: the shim's on-disk log records (format in logwriter.h)
 * and log_parse_record, which joblet's log streaming (src/core/logstream.c) reads them with.
 * The writer's files are read back byte for byte, and the job's bytes must round-trip: every
 * F record's data plus a newline, and every P record's data, concatenated in order, give back
 * exactly what the job wrote. */
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

#define TS 1700000000123456789LL /* 2023-11-14T22:13:20.123456789Z */

/* A fresh directory per test, for the writer's files. */
typedef struct fixture {
    char dir[64];
    int dirfd;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/test_logwriter.XXXXXX", tmp && strlen(tmp) < 30 ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    f->dirfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *state = f;
    return f->dirfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    unlinkat(f->dirfd, "stdout.log", 0);
    unlinkat(f->dirfd, "stderr.log", 0);
    close(f->dirfd);
    rmdir(f->dir);
    free(f);
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

/* What the job wrote, rebuilt from a log file's records (the inverse of the writer); fails
 * the test on a byte that is not part of a complete record. *nrec gets the record count. */
static char *reassemble(const char *buf, size_t len, size_t *outlen, size_t *nrec)
{
    char *out = malloc(len + 1);
    assert_non_null(out);
    size_t o = 0, off = 0;
    *nrec = 0;
    while (off < len) {
        log_record r;
        long used = log_parse_record(buf + off, len - off, &r);
        if (used <= 0)
            fail_msg("no record at offset %zu of %zu (log_parse_record returned %ld)", off, len, used);
        memcpy(out + o, r.data, r.len);
        o += r.len;
        if (r.newline)
            out[o++] = '\n';
        off += (size_t)used;
        (*nrec)++;
    }
    *outlen = o;
    return out;
}

static void feed_str(logw *w, const char *s, int64_t ts)
{
    assert_int_equal(logw_feed(w, s, strlen(s), ts), 0);
}

/* ---- the writer: exact bytes on disk ---------------------------------------------- */

static void test_both_streams(void **state)
{
    fixture *f = *state;
    logw out, err;
    logw_init(&out, f->dirfd, "stdout.log", 0);
    logw_init(&err, f->dirfd, "stderr.log", 0);
    feed_str(&out, "hello\nworld\n", TS);
    feed_str(&err, "oops\n", TS + 1);
    feed_str(&out, "again\n", TS + 2);

    size_t len;
    char *o = slurp(f, "stdout.log", &len);
    assert_non_null(o);
    assert_string_equal(o, "1700000000123456789 F hello\n"
                           "1700000000123456789 F world\n"
                           "1700000000123456791 F again\n");
    assert_int_equal(out.bytes_written, len);
    char *e = slurp(f, "stderr.log", &len);
    assert_non_null(e);
    assert_string_equal(e, "1700000000123456790 F oops\n");

    log_record r;
    assert_int_equal(log_parse_record(e, len, &r), (long)len);
    assert_true(r.ts_ns == TS + 1);
    assert_true(r.newline);
    assert_int_equal(r.len, 4);
    assert_memory_equal(r.data, "oops", 4);
    free(o);
    free(e);
    close(out.fd);
    close(err.fd);
}

/* A job that writes nothing leaves no file behind (logw.fd stays -1). */
static void test_no_output_no_file(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout.log", 0);
    assert_int_equal(logw_feed(&w, "", 0, TS), 0);
    assert_int_equal(logw_flush(&w, TS), 0);
    assert_int_equal(w.fd, -1);
    assert_int_equal(faccessat(f->dirfd, "stdout.log", F_OK, 0), -1);
    assert_int_equal(errno, ENOENT);
}

/* jobs.max_log_bytes: whole records up to the cap, then one record saying so, then nothing
 * more of the stream; the file never passes the cap. */
static void test_cap(void **state)
{
    fixture *f = *state;
    logw w;
    const uint64_t cap = 4096;
    logw_init(&w, f->dirfd, "stdout.log", cap);
    char line[101];
    memset(line, 'x', 99);
    line[99] = '\n';
    line[100] = 0;
    for (int i = 0; i < 200; i++)
        assert_int_equal(logw_feed(&w, line, 100, TS + i), 0);
    assert_true(w.capped);
    assert_int_equal(logw_feed(&w, "after\n", 6, TS + 999), 0);   /* read, dropped */
    assert_int_equal(logw_flush(&w, TS + 1000), 0);
    size_t len;
    char *s = slurp(f, "stdout.log", &len);
    assert_true(len <= cap);
    assert_true(len > cap - LOGW_CAP_NOTE_MAX - 130);   /* filled up to the note's room */
    /* every line a record; the last one says what happened */
    log_record r = {0};
    size_t at = 0, n = 0;
    while (at < len) {
        long k = log_parse_record(s + at, len - at, &r);
        assert_true(k > 0);
        at += (size_t)k;
        n++;
    }
    assert_true(n > 30);
    char *last = strndup(r.data, r.len);
    assert_string_equal(last, "joblet: stdout.log reached its cap of 4096 bytes (jobs.max_log_bytes); the rest of "
                              "the stream was discarded");
    assert_null(strstr(s, "after"));
    free(last);
    free(s);
    close(w.fd);
}

static void test_empty_lines(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout.log", 0);
    feed_str(&w, "\n\na\n\n", TS);
    assert_int_equal(logw_flush(&w, TS + 5), 0); /* nothing pending: writes nothing */
    size_t len;
    char *s = slurp(f, "stdout.log", &len);
    assert_string_equal(s, "1700000000123456789 F \n"
                           "1700000000123456789 F \n"
                           "1700000000123456789 F a\n"
                           "1700000000123456789 F \n");
    log_record r;
    assert_int_equal(log_parse_record(s, len, &r), 23);
    assert_true(r.newline);
    assert_int_equal(r.len, 0);
    assert_ptr_equal(r.data, s + 22); /* just past "ts F ", at the record's LF */
    free(s);
    close(w.fd);
}

/* A line written in pieces becomes one record, stamped when its newline came; what is left
 * at the end of the stream is flushed as a P record. */
static void test_partial_lines(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout.log", 0);
    feed_str(&w, "ab", TS);
    assert_int_equal(w.fd, -1); /* nothing complete yet: nothing written */
    feed_str(&w, "c\nde", TS + 10);
    feed_str(&w, "f", TS + 20);
    assert_int_equal(logw_flush(&w, TS + 30), 0);
    assert_int_equal(logw_flush(&w, TS + 40), 0); /* already flushed: no empty record */
    size_t len;
    char *s = slurp(f, "stdout.log", &len);
    assert_string_equal(s, "1700000000123456799 F abc\n"
                           "1700000000123456819 P def\n");
    log_record r;
    long used = log_parse_record(s, len, &r);
    assert_int_equal(used, 26);
    used = log_parse_record(s + used, len - (size_t)used, &r);
    assert_int_equal(used, 26);
    assert_false(r.newline);
    assert_true(r.ts_ns == TS + 30);
    assert_int_equal(r.len, 3);
    assert_memory_equal(r.data, "def", 3);
    free(s);
    close(w.fd);
}

/* Lines longer than LOGW_LINE_MAX are cut into P records of LOGW_LINE_MAX bytes; a line of
 * exactly LOGW_LINE_MAX bytes is one F record. */
static void test_long_lines(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout.log", 0);
    size_t n = 3 * LOGW_LINE_MAX;
    char *in = malloc(n + 1);
    assert_non_null(in);
    for (size_t i = 0; i < n; i++)
        in[i] = (char)('a' + i % 26);
    in[LOGW_LINE_MAX] = '\n';                  /* line 1: exactly LOGW_LINE_MAX bytes */
    in[LOGW_LINE_MAX + 1 + LOGW_LINE_MAX + 1] = '\n'; /* line 2: LOGW_LINE_MAX + 1 bytes */
    /* then LOGW_LINE_MAX - 3 bytes and no newline */
    assert_int_equal(logw_feed(&w, in, n, TS), 0);
    assert_int_equal(logw_flush(&w, TS + 1), 0);

    size_t len, outlen, nrec;
    char *s = slurp(f, "stdout.log", &len);
    char *out = reassemble(s, len, &outlen, &nrec);
    assert_int_equal(outlen, n);
    assert_memory_equal(out, in, n);
    assert_int_equal(nrec, 4);

    const size_t want_len[] = {LOGW_LINE_MAX, LOGW_LINE_MAX, 1, LOGW_LINE_MAX - 3};
    const bool want_nl[] = {true, false, true, false};
    size_t off = 0;
    for (size_t i = 0; i < nrec; i++) {
        log_record r;
        off += (size_t)log_parse_record(s + off, len - off, &r);
        assert_int_equal(r.len, want_len[i]);
        assert_int_equal(r.newline, want_nl[i]);
        assert_true(r.ts_ns == (i == 3 ? TS + 1 : TS));
    }
    free(in);
    free(out);
    free(s);
    close(w.fd);
}

/* Every byte value but LF is data, stored as is: NUL, CR, invalid UTF-8, 0xff. */
static void test_binary_bytes(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stderr.log", 0);
    char in[256 + 3];
    size_t n = 0;
    for (int c = 0; c < 256; c++)
        in[n++] = (char)c; /* includes one '\n', which ends the first record */
    in[n++] = '\r';
    in[n++] = '\n';
    in[n++] = 0;
    assert_int_equal(logw_feed(&w, in, n, TS), 0);
    assert_int_equal(logw_flush(&w, TS), 0);
    size_t len, outlen, nrec;
    char *s = slurp(f, "stderr.log", &len);
    char *out = reassemble(s, len, &outlen, &nrec);
    assert_int_equal(nrec, 3);
    assert_int_equal(outlen, n);
    assert_memory_equal(out, in, n);

    log_record r;
    assert_int_equal(log_parse_record(s, len, &r), 22 + 10 + 1);
    assert_int_equal(r.len, 10); /* bytes 0..9 */
    assert_memory_equal(r.data, "\0\1\2\3\4\5\6\7\b\t", 10);
    free(out);
    free(s);
    close(w.fd);
}

/* Random bytes in random-sized writes round-trip whatever the cuts. */
static void test_random_round_trip(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout.log", 0);
    size_t n = 4 * LOGW_LINE_MAX + 777;
    char *in = malloc(n);
    assert_non_null(in);
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* LFs in every other stretch of 20000 bytes only, so that some lines reach
         * LOGW_LINE_MAX */
        in[i] = (char)(x >> 24);
        if (in[i] == '\n' && (i / 20000) % 2)
            in[i] = 'n';
    }
    int64_t ts = TS;
    for (size_t off = 0; off < n;) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t k = (size_t)(x % 5000);
        if (k > n - off)
            k = n - off;
        assert_int_equal(logw_feed(&w, in + off, k, ts++), 0);
        off += k;
    }
    assert_int_equal(logw_flush(&w, ts), 0);
    size_t len, outlen, nrec;
    char *s = slurp(f, "stdout.log", &len);
    char *out = reassemble(s, len, &outlen, &nrec);
    assert_int_equal(outlen, n);
    assert_memory_equal(out, in, n);
    assert_int_equal(w.bytes_written, len);
    /* timestamps never go back within a stream; some lines were cut */
    int64_t last = 0;
    size_t cut = 0;
    for (size_t off = 0; off < len;) {
        log_record r;
        off += (size_t)log_parse_record(s + off, len - off, &r);
        assert_true(r.ts_ns >= last);
        assert_true(r.len <= LOGW_LINE_MAX);
        cut += !r.newline && r.len == LOGW_LINE_MAX;
        last = r.ts_ns;
    }
    assert_true(cut >= 1);
    free(in);
    free(out);
    free(s);
    close(w.fd);
}

/* A directory the writer cannot create its file in: the feed says so, and the next feed
 * tries again. */
static void test_open_failure(void **state)
{
    (void)state;
    logw w;
    logw_init(&w, -1, "stdout.log", 0); /* a relative name and no directory: EBADF */
    assert_int_equal(logw_feed(&w, "x\n", 2, TS), -1);
    assert_int_equal(w.fd, -1);
    /* an incomplete line is only buffered: no file needed yet */
    assert_int_equal(logw_feed(&w, "y", 1, TS), 0);
    assert_int_equal(logw_flush(&w, TS), -1);
}

/* A write cut short (disk full; here the file size limit) leaves a record without its LF.
 * Once writing works again, the next records must stay records of their own: the torn one
 * may be lost or shown cut, but must not swallow the lines after it. */
static void test_short_write(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout.log", 0);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    if (old.rlim_max != RLIM_INFINITY && old.rlim_max < 4096)
        skip();
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN); /* else a write past the limit kills us */
    feed_str(&w, "before\n", TS);  /* 29 bytes */
    lim = old;
    lim.rlim_cur = 29 + 30;         /* "ts F " and 8 bytes of the next record's data */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    assert_int_equal(logw_feed(&w, "torn-line-of-42-bytes-123456789012345678901\n", 45, TS + 1), -1);
    assert_int_equal(errno, EFBIG);
    assert_int_equal(logw_feed(&w, "lost too\n", 9, TS + 2), -1); /* nothing of it written */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_xfsz);
    feed_str(&w, "after\n", TS + 3);
    feed_str(&w, "and more\n", TS + 4);

    size_t len;
    char *s = slurp(f, "stdout.log", &len);
    const char *want[] = {"before", "torn-lin", "after", "and more"};
    size_t off = 0, k = 0;
    while (off < len) {
        log_record r;
        long used = log_parse_record(s + off, len - off, &r);
        assert_true(used > 0);
        assert_true(k < 4);
        if (r.len != strlen(want[k]) || memcmp(r.data, want[k], r.len))
            fail_msg("record %zu: '%.*s', not '%s'", k, (int)r.len, r.data, want[k]);
        off += (size_t)used;
        k++;
    }
    assert_int_equal(k, 4);
    assert_int_equal(w.bytes_written, len);
    free(s);
    close(w.fd);
}

/* ---- the parser ----------------------------------------------------------------- */

/* kill -9 of the shim can leave its last record cut anywhere: every cut of a file parses as
 * the records before the cut, then "incomplete" (0), never as garbage or a wrong record. */
static void test_truncated_tail(void **state)
{
    fixture *f = *state;
    logw w;
    logw_init(&w, f->dirfd, "stdout.log", 0);
    feed_str(&w, "first\n\nthird line\nlast", TS);
    assert_int_equal(logw_flush(&w, TS + 1), 0);
    size_t len;
    char *s = slurp(f, "stdout.log", &len);
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
    free(s);
    close(w.fd);
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

    /* Garbage then records: the caller skips to the next line (as logstream.c does) and
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

    /* What joblet shows of a stamp (logstream.c): microseconds, UTC. */
    char t[40];
    format_ns_us(TS, t, sizeof t);
    assert_string_equal(t, "2023-11-14T22:13:20.123456Z");
    format_ns_us(0, t, sizeof t);
    assert_string_equal(t, "1970-01-01T00:00:00.000000Z");
}

static void test_stamps_round_trip(void **state)
{
    fixture *f = *state;
    const int64_t stamps[] = {0, 999, TS, INT64_MAX};
    logw w;
    logw_init(&w, f->dirfd, "stdout.log", 0);
    for (size_t i = 0; i < sizeof stamps / sizeof stamps[0]; i++)
        feed_str(&w, "x\n", stamps[i]);
    size_t len;
    char *s = slurp(f, "stdout.log", &len);
    size_t off = 0;
    for (size_t i = 0; i < sizeof stamps / sizeof stamps[0]; i++) {
        log_record r;
        long used = log_parse_record(s + off, len - off, &r);
        assert_true(used > 0);
        assert_true(r.ts_ns == stamps[i]);
        off += (size_t)used;
    }
    assert_int_equal(off, len);
    free(s);
    close(w.fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_both_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_output_no_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binary_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_round_trip, setup, teardown),
        cmocka_unit_test(test_open_failure),
        cmocka_unit_test_setup_teardown(test_short_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_tail, setup, teardown),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_data_that_looks_like_records),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test_setup_teardown(test_stamps_round_trip, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
