/* Unit tests for src/exec/logreader.c: a job's output read back from files made by the real
 * writer (exec/logwriter.c) or by hand in a scratch directory — the pieces of both streams in the
 * shim's order, since (a binary search of each index), tail (the last N lines across both
 * streams, in slices of any budget with the same answer), the old one-record-per-line format,
 * the note where a stream was capped, and the index entries a reading costs. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "exec/logreader.h"
#include "exec/logwriter.h"
#include "scratch_dir.h"

/* A fresh directory per test, with a writer per stream. */
typedef struct fixture {
    scratch_dir d;
    logw w[2];
    uint64_t seq;     /* the last sequence number given, across both streams */
} fixture;

static const char *const names[2] = {"stdout", "stderr"};

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || scratch_dir_make(&f->d, "test_logreader") < 0) {
        free(f);
        return -1;
    }
    for (int i = 0; i < 2; i++)
        logw_init(&f->w[i], f->d.dirfd, names[i], 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    static const char *const files[] = {"stdout.data", "stdout.idx", "stderr.data", "stderr.idx",
                                        "stdout.log", "stderr.log"};
    for (int i = 0; i < 2; i++) {
        if (f->w[i].data_fd >= 0)
            close(f->w[i].data_fd);
        if (f->w[i].idx_fd >= 0)
            close(f->w[i].idx_fd);
    }
    scratch_dir_remove(&f->d, files, sizeof files / sizeof *files);
    free(f);
    return 0;
}

/* One piece read by the shim from stream i at time ts. */
static void feed(fixture *f, int i, const char *data, int64_t ts)
{
    assert_int_equal(logw_feed(&f->w[i], data, strlen(data), ts, ++f->seq), 0);
}

static int open_ro(const fixture *f, const char *stream, const char *ext)
{
    char name[32];
    snprintf(name, sizeof name, "%s.%s", stream, ext);
    return openat(f->d.dirfd, name, O_RDONLY | O_CLOEXEC);
}

/* A reader of the streams in mask (1 stdout, 2 stderr), of the format of logwriter.h. */
static void reader(const fixture *f, logreader *r, int mask)
{
    logreader_init(r, 0, 0);
    for (int i = 0; i < 2; i++)
        if (mask >> i & 1)
            logreader_open(r, i, open_ro(f, names[i], "data"), open_ro(f, names[i], "idx"), -1);
}

/* Everything the reader gives, chunk bytes at most at a time, as "O:bytes|E:bytes|..." (the cap
 * note: "N:text"); a piece taken in several chunks reads as one. Freed by the caller. */
static char *drain(logreader *r, size_t chunk)
{
    size_t cap = 1 << 16, len = 0;
    char *out = xmalloc(cap), *buf = xmalloc(chunk);
    bool partial = false; /* the last piece was taken in part: the next is its rest */
    logreader_piece p;
    while (logreader_next(r, &p)) {
        size_t got = logreader_read(r, &p, buf, chunk);
        if (!got && !p.note)
            break;
        if (len + got + 4 > cap) {
            cap = (len + got + 4) * 2;
            out = xrealloc(out, cap);
        }
        if (!partial) {
            if (len)
                out[len++] = '|';
            out[len++] = p.note ? 'N' : p.stream ? 'E' : 'O';
            out[len++] = ':';
        }
        memcpy(out + len, buf, got);
        len += got;
        partial = !p.note && got < p.len;
        logreader_take(r, &p, got);
    }
    out[len] = 0;
    free(buf);
    return out;
}

/* ---- what reading costs ----------------------------------------------------------------------- */

/* Every index entry logreader_next reads counts (a caller's budget of pieces: core/job_logs.c),
 * a one-byte piece as much as a long one, and a look at a stream with nothing new too. */
static void test_entries_counted(void **state)
{
    fixture *f = *state;
    for (int k = 0; k < 100; k++)
        feed(f, 0, "x", 100 + k);
    feed(f, 0, "a long piece, one entry\n", 300);
    logreader r;
    reader(f, &r, 1);
    assert_int_equal(logreader_entries(&r), 0);
    char *got = drain(&r, 4096);
    assert_int_equal(strlen(got), 100 * strlen("O:x|") + strlen("O:") + 24);
    /* 101 entries, and the look past the last that found none */
    assert_int_equal(logreader_entries(&r), 102);
    free(got);
    logreader_piece p;
    assert_false(logreader_next(&r, &p));
    assert_int_equal(logreader_entries(&r), 103);
    logreader_free(&r);
}

/* ---- order ---------------------------------------------------------------------------------- */

static void test_order_across_streams(void **state)
{
    fixture *f = *state;
    feed(f, 0, "a\n", 100);
    feed(f, 1, "b\n", 100);     /* same time: the sequence decides */
    feed(f, 0, "c", 200);
    feed(f, 0, "d\n", 300);
    feed(f, 1, "e\n", 300);
    feed(f, 0, "f\n", 400);

    logreader r;
    reader(f, &r, 3);
    assert_false(logreader_legacy(&r));
    logreader_piece p;
    static const struct { int stream; int64_t ts; uint64_t seq; const char *s; } want[] = {
        {0, 100, 1, "a\n"}, {1, 100, 2, "b\n"}, {0, 200, 3, "c"}, {0, 300, 4, "d\n"}, {1, 300, 5, "e\n"}, {0, 400, 6, "f\n"},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        assert_true(logreader_next(&r, &p));
        assert_int_equal(p.stream, want[k].stream);
        assert_int_equal(p.ts_ns, want[k].ts);
        assert_int_equal(p.seq, want[k].seq);
        assert_null(p.mem);
        assert_false(p.note);
        char buf[16];
        assert_int_equal(logreader_read(&r, &p, buf, sizeof buf), strlen(want[k].s));
        assert_memory_equal(buf, want[k].s, strlen(want[k].s));
        logreader_take(&r, &p, strlen(want[k].s));
    }
    assert_false(logreader_next(&r, &p));

    /* the job writes more: the same reader goes on from there */
    feed(f, 1, "g\n", 500);
    assert_true(logreader_next(&r, &p));
    assert_int_equal(p.stream, LOGREADER_STDERR);
    assert_int_equal(p.len, 2);
    logreader_take(&r, &p, 2);
    assert_false(logreader_next(&r, &p));
    logreader_free(&r);

    /* a byte at a time: the same bytes, in the same order */
    reader(f, &r, 3);
    char *one = drain(&r, 1);
    assert_string_equal(one, "O:a\n|E:b\n|O:c|O:d\n|E:e\n|O:f\n|E:g\n");
    free(one);
    logreader_free(&r);

    /* one stream asked for: the other is not read */
    reader(f, &r, 2);
    char *err = drain(&r, 4096);
    assert_string_equal(err, "E:b\n|E:e\n|E:g\n");
    free(err);
    logreader_free(&r);
}

/* A stream whose files are missing, and streams that are off, read as empty. */
static void test_empty(void **state)
{
    fixture *f = *state;
    logreader r;
    logreader_init(&r, 0, 0);
    logreader_piece p;
    assert_false(logreader_next(&r, &p));
    logreader_open(&r, LOGREADER_STDOUT, -1, -1, -1);
    logreader_since(&r, 5);
    logreader_tail(&r, 3);
    uint64_t budget = LOGREADER_TAIL_SLICE;
    assert_true(logreader_tail_step(&r, &budget));
    assert_false(logreader_next(&r, &p));
    uint64_t len;
    bool capped;
    assert_int_equal(logreader_whole(&r, LOGREADER_STDOUT, &len, &capped), -1);
    logreader_free(&r);
    (void)f;
}

/* ---- since ---------------------------------------------------------------------------------- */

static char *since(fixture *f, int64_t ns)
{
    logreader r;
    reader(f, &r, 3);
    logreader_since(&r, ns);
    char *s = drain(&r, 4096);
    logreader_free(&r);
    return s;
}

static void test_since(void **state)
{
    fixture *f = *state;
    feed(f, 0, "o1\n", 100);
    feed(f, 1, "e1\n", 150);
    feed(f, 0, "o2\n", 200);
    feed(f, 0, "o3\n", 300);
    feed(f, 1, "e2\n", 300);
    feed(f, 1, "e3\n", 400);
    static const struct { int64_t since; const char *want; } cases[] = {
        {0, "O:o1\n|E:e1\n|O:o2\n|O:o3\n|E:e2\n|E:e3\n"},
        {1, "O:o1\n|E:e1\n|O:o2\n|O:o3\n|E:e2\n|E:e3\n"},
        {100, "O:o1\n|E:e1\n|O:o2\n|O:o3\n|E:e2\n|E:e3\n"},   /* at the first entry */
        {101, "E:e1\n|O:o2\n|O:o3\n|E:e2\n|E:e3\n"},          /* between: the next one */
        {150, "E:e1\n|O:o2\n|O:o3\n|E:e2\n|E:e3\n"},
        {200, "O:o2\n|O:o3\n|E:e2\n|E:e3\n"},
        {299, "O:o3\n|E:e2\n|E:e3\n"},
        {300, "O:o3\n|E:e2\n|E:e3\n"},                        /* at two entries of the same time */
        {400, "E:e3\n"},                                     /* at the last */
        {401, ""},                                           /* after all */
        {INT64_MAX, ""},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *got = since(f, cases[k].since);
        assert_string_equal(got, cases[k].want);
        free(got);
    }
}

/* ---- tail ----------------------------------------------------------------------------------- */

/* The replay of the last n lines, the search run in slices of budget (0: one slice of all). */
static char *tail(fixture *f, int64_t since_ns, uint64_t n, uint64_t budget, int *slices)
{
    logreader r;
    reader(f, &r, 3);
    logreader_since(&r, since_ns);
    logreader_tail(&r, n);
    assert_int_equal(logreader_seeking(&r), n > 0);
    int k = 0;
    for (;;) {
        uint64_t b = budget ? budget : UINT64_MAX;
        k++;
        if (logreader_tail_step(&r, &b))
            break;
        assert_int_equal(b, 0); /* a slice stops only when its budget is spent */
        assert_true(k < 10000000);
    }
    assert_false(logreader_seeking(&r));
    if (slices)
        *slices = k;
    char *s = drain(&r, 1 << 16);
    logreader_free(&r);
    return s;
}

static void test_tail(void **state)
{
    fixture *f = *state;
    feed(f, 0, "o1\no2\n", 100);   /* two lines in one piece */
    feed(f, 1, "e1\n", 200);
    feed(f, 0, "o3 part", 300);     /* a line split across pieces, */
    feed(f, 1, "e2\n", 400);        /* with the other stream in between */
    feed(f, 0, " rest\n", 500);
    feed(f, 1, "e3\ne4", 600);      /* the last line without a newline */
    static const struct { uint64_t n; const char *want; } cases[] = {
        {0, ""},
        {1, "E:e4"},
        {2, "E:e3\ne4"},
        {3, "O:o3 part|O: rest\n|E:e3\ne4"},
        {4, "O:o3 part|E:e2\n|O: rest\n|E:e3\ne4"},
        {5, "E:e1\n|O:o3 part|E:e2\n|O: rest\n|E:e3\ne4"},
        {6, "O:o2\n|E:e1\n|O:o3 part|E:e2\n|O: rest\n|E:e3\ne4"},
        {7, "O:o1\no2\n|E:e1\n|O:o3 part|E:e2\n|O: rest\n|E:e3\ne4"},
        {100, "O:o1\no2\n|E:e1\n|O:o3 part|E:e2\n|O: rest\n|E:e3\ne4"},   /* fewer lines than asked for */
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        for (uint64_t budget = 0; budget < 3; budget++) { /* 0: all at once; 1, 2: a few bytes a slice */
            char *got = tail(f, 0, cases[k].n, budget, NULL);
            assert_string_equal(got, cases[k].want);
            free(got);
        }
    }
    /* with since: the lines counted from where it starts */
    char *got = tail(f, 250, 100, 0, NULL);
    assert_string_equal(got, "O:o3 part|E:e2\n|O: rest\n|E:e3\ne4");
    free(got);
    got = tail(f, 250, 2, 0, NULL);
    assert_string_equal(got, "E:e3\ne4");
    free(got);
}

/* A stream that ends with a newline: its last line is the one before it, not an empty one. */
static void test_tail_ends_with_newline(void **state)
{
    fixture *f = *state;
    feed(f, 0, "a\nb\n", 100);
    feed(f, 1, "c\n", 200);
    char *got = tail(f, 0, 1, 0, NULL);
    assert_string_equal(got, "E:c\n");
    free(got);
    got = tail(f, 0, 2, 0, NULL);
    assert_string_equal(got, "O:b\n|E:c\n");
    free(got);
}

/* Lines in the output: newlines, and a last line per stream without one. */
static uint64_t count_lines(const char *s)
{
    uint64_t n = 0;
    int last[2] = {0, 0}; /* per stream: its last byte */
    for (const char *p = s; *p;) {
        int i = *p == 'E';
        p += 2;
        const char *end = strchr(p, '|');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        for (size_t k = 0; k < len; k++)
            n += p[k] == '\n';
        if (len)
            last[i] = p[len - 1];
        p += len + (end ? 1 : 0);
    }
    for (int i = 0; i < 2; i++)
        n += last[i] && last[i] != '\n';
    return n;
}

/* Many pieces, long lines (longer than the search reads at once) and short ones, in both
 * streams: whatever the budget, the answer is that of one big slice, and it holds n lines. */
static void test_tail_budget(void **state)
{
    fixture *f = *state;
    size_t longlen = 700 * 1024;
    char *big = xmalloc(longlen + 2);
    memset(big, 'x', longlen);
    big[longlen] = 0;
    unsigned seed = 27;
    for (int k = 0; k < 600; k++) {
        int i = (int)(rand_r(&seed) % 2);
        char piece[200];
        switch (rand_r(&seed) % 6) {
        case 0:
            feed(f, i, big, 1000 + k);   /* the middle of a long line */
            break;
        case 1:
            feed(f, i, "\n", 1000 + k);
            break;
        default: {
            int nl = (int)(rand_r(&seed) % 3);
            size_t len = 0;
            for (int m = 0; m < nl + 1; m++)
                len += (size_t)snprintf(piece + len, sizeof piece - len, "line %d.%d%s", k, m, m < nl ? "\n" : "");
            if (rand_r(&seed) % 2) {
                piece[len++] = '\n';
                piece[len] = 0;
            }
            feed(f, i, piece, 1000 + k);
        }
        }
    }
    free(big);
    /* the total number of lines, as a tail of more than all of them reads */
    char *all = tail(f, 0, 1u << 30, 0, NULL);
    uint64_t total = count_lines(all);
    assert_true(total > 300);
    static const uint64_t ns[] = {1, 2, 3, 10, 57, 200};
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++) {
        int slices;
        char *one = tail(f, 0, ns[a], 0, &slices);
        assert_int_equal(slices, 1);
        assert_int_equal(count_lines(one), ns[a]);
        assert_true(strlen(one) <= strlen(all));
        static const uint64_t budgets[] = {1, 4096, 100000, LOGREADER_TAIL_SLICE};
        for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
            char *sliced = tail(f, 0, ns[a], budgets[b], &slices);
            assert_string_equal(sliced, one);
            if (budgets[b] == 1)
                assert_true(slices > 1);
            free(sliced);
        }
        free(one);
    }
    /* a tail over 700 KiB lines from a long way back needs several slices of the default size */
    int slices;
    char *far = tail(f, 0, 250, LOGREADER_TAIL_SLICE, &slices);
    char *ref = tail(f, 0, 250, 0, NULL);
    assert_string_equal(far, ref);
    assert_true(slices > 1);
    free(far);
    free(ref);
    free(all);
}

/* ---- the old format --------------------------------------------------------------------- */

static int write_file(const fixture *f, const char *name, const char *text)
{
    int fd = openat(f->d.dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return openat(f->d.dirfd, name, O_RDONLY | O_CLOEXEC);
}

static void test_legacy(void **state)
{
    fixture *f = *state;
    const char *out = "100 F one\n"
                      "300 P two, \n"
                      "not a record\n"            /* skipped */
                      "400 F without break\n";
    const char *err = "200 F e one\n"
                      "350 F e two\n";
    for (int64_t since_ns = 0; since_ns <= 300; since_ns += 300) {
        logreader r;
        logreader_init(&r, 0, 0);
        logreader_open(&r, LOGREADER_STDOUT, -1, -1, write_file(f, "stdout.log", out));
        logreader_open(&r, LOGREADER_STDERR, -1, -1, write_file(f, "stderr.log", err));
        assert_true(logreader_legacy(&r));
        logreader_since(&r, since_ns);
        logreader_piece p;
        assert_true(logreader_next(&r, &p));
        assert_non_null(p.mem);
        assert_int_equal(p.seq, 0);
        assert_int_equal(p.ts_ns, since_ns ? 300 : 100);
        char *got = drain(&r, 3); /* records taken in parts */
        if (since_ns)
            assert_string_equal(got, "O:two, |E:e two\n|O:without break\n");
        else
            assert_string_equal(got, "O:one\n|E:e one\n|O:two, |E:e two\n|O:without break\n");
        free(got);
        uint64_t len;
        bool capped;
        assert_int_equal(logreader_whole(&r, LOGREADER_STDOUT, &len, &capped), -1);
        logreader_free(&r);
    }
    /* one stream of the old format is enough to be read as old (no tail) */
    logreader r;
    logreader_init(&r, 0, 0);
    logreader_open(&r, LOGREADER_STDOUT, open_ro(f, "stdout", "data"), open_ro(f, "stdout", "idx"), -1);
    assert_false(logreader_legacy(&r));
    logreader_open(&r, LOGREADER_STDERR, -1, -1, write_file(f, "stderr.log", err));
    assert_true(logreader_legacy(&r));
    logreader_free(&r);
}

/* ---- the cap ------------------------------------------------------------------------------ */

static void test_cap(void **state)
{
    fixture *f = *state;
    logw_init(&f->w[0], f->d.dirfd, "stdout", 200);
    feed(f, 0, "first line\n", 100);
    feed(f, 1, "an error\n", 150);
    char more[400];
    memset(more, 'y', sizeof more - 1);
    more[sizeof more - 1] = 0;
    more[5] = '\n';
    feed(f, 0, more, 200);              /* past the cap: "yyyyy\n" is kept, then the stop */
    feed(f, 0, "dropped\n", 300);
    feed(f, 1, "after\n", 400);
    assert_true(f->w[0].capped);

    logreader r;
    logreader_init(&r, 200, 0);
    for (int i = 0; i < 2; i++)
        logreader_open(&r, i, open_ro(f, names[i], "data"), open_ro(f, names[i], "idx"), -1);
    char note[400];
    int nn = log_stop_note(note, sizeof note, "stdout", LOG_IDX_CAPPED, 200, 0);
    assert_true(nn > 0);
    char want[1024];
    snprintf(want, sizeof want, "O:first line\n|E:an error\n|O:yyyyy\n|N:%s|E:after\n", note);
    char *got = drain(&r, 4096);
    assert_string_equal(got, want);
    free(got);
    logreader_piece p;
    assert_false(logreader_next(&r, &p)); /* the note once */
    uint64_t len;
    bool capped;
    int fd = logreader_whole(&r, LOGREADER_STDOUT, &len, &capped);
    assert_true(fd >= 0);
    assert_true(capped);
    assert_int_equal(len, strlen("first line\nyyyyy\n"));
    close(fd);
    fd = logreader_whole(&r, LOGREADER_STDERR, &len, &capped);
    assert_true(fd >= 0);
    assert_false(capped);
    assert_int_equal(len, strlen("an error\nafter\n"));
    close(fd);
    logreader_free(&r);
}

/* The owner's budget (jobs.max_log_bytes_per_user) stopped the stream: the note says so. */
static void test_cap_user(void **state)
{
    fixture *f = *state;
    log_budget b = {.magic = LOG_BUDGET_MAGIC, .cap = 150};
    logw_limits(&f->w[1], &b, 0);
    feed(f, 1, "kept\n", 100);
    feed(f, 1, "this line and the rest are past the owner's budget of 150 bytes, data and index together\n", 200);
    assert_true(f->w[1].capped);
    logreader r;
    logreader_init(&r, 1 << 20, 150);
    logreader_open(&r, LOGREADER_STDERR, open_ro(f, "stderr", "data"), open_ro(f, "stderr", "idx"), -1);
    char note[400], want[600];
    assert_true(log_stop_note(note, sizeof note, "stderr", LOG_IDX_CAPPED | LOG_IDX_USER_CAPPED, 1 << 20, 150) > 0);
    snprintf(want, sizeof want, "E:kept\n|N:%s", note);
    char *got = drain(&r, 4096);
    assert_string_equal(got, want);
    free(got);
    logreader_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order_across_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entries_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_since, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tail_ends_with_newline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tail_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_legacy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_user, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
