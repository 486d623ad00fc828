/* Unit tests for src/common/parse.c: the parsers rnx and joblet share for user input.
 * Every refusal must return -1 with a 400 validation error whose message starts with the
 * field name ("--max-memory: ..."), and the jerr's field must name it too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/parse.h"

/* Returns NULL when e describes a validation error on field whose message starts with
 * "field:" and quotes the refused input (when input is given and not empty), else what is wrong. */
static const char *field_error_problem(const jerr *e, const char *field, const char *input)
{
    if (strcmp(e->field, field) != 0)
        return "jerr.field does not name the field";
    if (e->http != 400)
        return "jerr.http is not 400";
    if (strncmp(e->msg, field, strlen(field)) != 0 || e->msg[strlen(field)] != ':')
        return "message does not start with 'field:'";
    if (input && *input && !strstr(e->msg, input))
        return "message does not quote the input";
    return NULL;
}

#define ASSERT_FIELD_ERROR(e, fld, input)                                                      \
    do {                                                                                       \
        const char *p_ = field_error_problem((e), (fld), (input));                             \
        if (p_)                                                                                \
            fail_msg("%s: field '%s', input '%s', jerr.field '%s', msg '%s'", p_, (fld),       \
                     (input) ? (const char *)(input) : "(null)", (e)->field, (e)->msg);        \
    } while (0)

/* ---- parse_u64 ---------------------------------------------------------------------- */

static void test_u64(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(parse_u64("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(parse_u64("42", &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(parse_u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);

    const char *bad[] = {"", "-1", "+1", " 1", "1 ", "1x", "0x10", "18446744073709551616",
                         "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        assert_int_equal(parse_u64(bad[i], &v), -1);
        assert_int_equal(v, 7); /* untouched on failure */
    }
    assert_int_equal(parse_u64(NULL, &v), -1);
}

/* ---- sizes (megabytes) -------------------------------------------------------------- */

#define SIZE_OK(s, want)                                                                       \
    do {                                                                                       \
        uint64_t v_ = 0;                                                                       \
        jerr e_ = {0};                                                                         \
        assert_int_equal(parse_size_mb("--max-memory", (s), &v_, &e_), 0);                     \
        assert_int_equal(v_, (want));                                                          \
    } while (0)

#define SIZE_BAD(s)                                                                            \
    do {                                                                                       \
        uint64_t v_ = 0;                                                                       \
        jerr e_ = {0};                                                                         \
        assert_int_equal(parse_size_mb("--max-memory", (s), &v_, &e_), -1);                    \
        ASSERT_FIELD_ERROR(&e_, "--max-memory", (s));                                          \
    } while (0)

static void test_size_mb(void **state)
{
    (void)state;
    SIZE_OK("4096", 4096);
    SIZE_OK("4096MB", 4096);
    SIZE_OK("4096M", 4096);
    SIZE_OK("4096mb", 4096);
    SIZE_OK("4096MiB", 4096);
    SIZE_OK("8GB", 8192);
    SIZE_OK("8G", 8192);
    SIZE_OK("8g", 8192);
    SIZE_OK("8gb", 8192);
    SIZE_OK("8GiB", 8192);
    SIZE_OK("1TB", 1048576);
    SIZE_OK("1T", 1048576);
    SIZE_OK("1", 1);
    /* The largest size whose byte count still fits in 64 bits. */
    SIZE_OK("17592186044415", 17592186044415ull);

    SIZE_BAD("");
    SIZE_BAD("12XB");
    SIZE_BAD("-1");
    SIZE_BAD("0");
    SIZE_BAD("0GB");
    SIZE_BAD("1.5GB");
    SIZE_BAD("99999999999999999999");
    SIZE_BAD("17592186044416");  /* 2^44 MB = 2^64 bytes */
    SIZE_BAD("17179869184GB");   /* 2^34 GB = 2^44 MB */
    SIZE_BAD("GB");
    SIZE_BAD(" 4096");
    SIZE_BAD("4096 ");
    SIZE_BAD("4096 MB");
    SIZE_BAD("+4096");
    SIZE_BAD("4096KB");
    SIZE_BAD("1TBB");
    SIZE_BAD("123456789012345678901234567890123456789"); /* longer than the digit buffer */

    jerr e = {0};
    uint64_t v;
    assert_int_equal(parse_size_mb("--max-memory", NULL, &v, &e), -1);
    ASSERT_FIELD_ERROR(&e, "--max-memory", NULL);
}

static void test_size_mb_messages(void **state)
{
    (void)state;
    jerr e = {0};
    uint64_t v;
    assert_int_equal(parse_size_mb("--max-memory", "12XB", &v, &e), -1);
    /* Says what is accepted. */
    assert_non_null(strstr(e.msg, "4096MB"));
    assert_non_null(strstr(e.msg, "8GB"));

    memset(&e, 0, sizeof e);
    assert_int_equal(parse_size_mb("max_memory_mb", "0", &v, &e), -1);
    ASSERT_FIELD_ERROR(&e, "max_memory_mb", "0");
    assert_non_null(strstr(e.msg, "greater than zero"));

    memset(&e, 0, sizeof e);
    assert_int_equal(parse_size_mb("--max-memory", "17592186044416", &v, &e), -1);
    assert_non_null(strstr(e.msg, "too large"));
}

/* ---- byte rates --------------------------------------------------------------------- */

#define BYTES_OK(s, want)                                                                      \
    do {                                                                                       \
        uint64_t v_ = 0;                                                                       \
        jerr e_ = {0};                                                                         \
        assert_int_equal(parse_bytes("--max-iobps", (s), &v_, &e_), 0);                        \
        assert_int_equal(v_, (want));                                                          \
    } while (0)

#define BYTES_BAD(s)                                                                           \
    do {                                                                                       \
        uint64_t v_ = 0;                                                                       \
        jerr e_ = {0};                                                                         \
        assert_int_equal(parse_bytes("--max-iobps", (s), &v_, &e_), -1);                       \
        ASSERT_FIELD_ERROR(&e_, "--max-iobps", (s));                                           \
    } while (0)

static void test_bytes(void **state)
{
    (void)state;
    BYTES_OK("1048576", 1048576);
    BYTES_OK("1B", 1);
    BYTES_OK("512K", 512 * 1024);
    BYTES_OK("512k", 512 * 1024);
    BYTES_OK("512KB", 512 * 1024);
    BYTES_OK("512KiB", 512 * 1024);
    BYTES_OK("10M", 10 * 1048576);
    BYTES_OK("10MB", 10 * 1048576);
    BYTES_OK("1G", 1073741824);
    BYTES_OK("1GB", 1073741824);
    BYTES_OK("4GiB", 4ull << 30);
    BYTES_OK("18446744073709551615", UINT64_MAX);

    BYTES_BAD("");
    BYTES_BAD("0");
    BYTES_BAD("0K");
    BYTES_BAD("-1");
    BYTES_BAD("1.5M");
    BYTES_BAD("10XB");
    BYTES_BAD("1T"); /* no terabytes per second */
    BYTES_BAD("K");
    BYTES_BAD("18446744073709551616");
    BYTES_BAD("17179869184G"); /* 2^34 * 2^30 overflows */

    jerr e = {0};
    uint64_t v;
    assert_int_equal(parse_bytes("--max-iobps", "17179869184G", &v, &e), -1);
    assert_non_null(strstr(e.msg, "too large"));
}

/* ---- CPU lists ---------------------------------------------------------------------- */

static int bit(const uint8_t *mask, int c)
{
    return (mask[c / 8] >> (c % 8)) & 1;
}

static int popcount_mask(const uint8_t *mask)
{
    int n = 0;
    for (int c = 0; c < CPU_MAX; c++)
        n += bit(mask, c);
    return n;
}

#define CPUS_BAD(s)                                                                            \
    do {                                                                                       \
        uint8_t m_[CPU_MAX / 8];                                                               \
        jerr e_ = {0};                                                                         \
        assert_int_equal(parse_cpu_list("--cpu-cores", (s), m_, &e_), -1);                     \
        ASSERT_FIELD_ERROR(&e_, "--cpu-cores", (s));                                           \
    } while (0)

static void test_cpu_list(void **state)
{
    (void)state;
    uint8_t m[CPU_MAX / 8];
    jerr e = {0};

    assert_int_equal(parse_cpu_list("--cpu-cores", "0-3", m, &e), 0);
    assert_int_equal(popcount_mask(m), 4);
    for (int c = 0; c <= 3; c++)
        assert_true(bit(m, c));

    assert_int_equal(parse_cpu_list("--cpu-cores", "1,3,5", m, &e), 0);
    assert_int_equal(popcount_mask(m), 3);
    assert_true(bit(m, 1) && bit(m, 3) && bit(m, 5));

    assert_int_equal(parse_cpu_list("--cpu-cores", "0-1,4", m, &e), 0);
    assert_int_equal(popcount_mask(m), 3);
    assert_true(bit(m, 0) && bit(m, 1) && bit(m, 4));

    assert_int_equal(parse_cpu_list("--cpu-cores", "7", m, &e), 0);
    assert_int_equal(popcount_mask(m), 1);
    assert_true(bit(m, 7));

    assert_int_equal(parse_cpu_list("--cpu-cores", "2-2", m, &e), 0);
    assert_int_equal(popcount_mask(m), 1);
    assert_true(bit(m, 2));

    assert_int_equal(parse_cpu_list("--cpu-cores", "1023", m, &e), 0);
    assert_int_equal(popcount_mask(m), 1);
    assert_true(bit(m, 1023));

    assert_int_equal(parse_cpu_list("--cpu-cores", "0-1023", m, &e), 0);
    assert_int_equal(popcount_mask(m), CPU_MAX);

    /* The mask is cleared first, not merged with what it held. */
    assert_int_equal(parse_cpu_list("--cpu-cores", "9", m, &e), 0);
    assert_int_equal(popcount_mask(m), 1);

    CPUS_BAD("3-1");
    CPUS_BAD("1,,2");
    CPUS_BAD("a");
    CPUS_BAD("1-");
    CPUS_BAD("2048");
    CPUS_BAD("1024");
    CPUS_BAD("0-1024");
    CPUS_BAD("");
    CPUS_BAD(",1");
    CPUS_BAD("1,");
    CPUS_BAD("-1");
    CPUS_BAD("1-2-3");
    CPUS_BAD(" 1");
    CPUS_BAD("1 ");
    CPUS_BAD("1, 2");
    CPUS_BAD("0x1");
    CPUS_BAD("99999999999999999999999");

    memset(&e, 0, sizeof e);
    assert_int_equal(parse_cpu_list("--cpu-cores", "2048", m, &e), -1);
    assert_non_null(strstr(e.msg, "1023"));

    memset(&e, 0, sizeof e);
    assert_int_equal(parse_cpu_list("--cpu-cores", "3-1", m, &e), -1);
    assert_non_null(strstr(e.msg, "0-3"));

    memset(&e, 0, sizeof e);
    assert_int_equal(parse_cpu_list("--cpu-cores", NULL, m, &e), -1);
    ASSERT_FIELD_ERROR(&e, "--cpu-cores", NULL);
}

static void roundtrip(const char *in, const char *want)
{
    uint8_t m[CPU_MAX / 8];
    jerr e = {0};
    char out[4096];
    if (parse_cpu_list("cpu_cores", in, m, &e) != 0)
        fail_msg("parse_cpu_list('%s') failed: %s", in, e.msg);
    assert_int_equal(format_cpu_list(m, out, sizeof out), 0);
    assert_string_equal(out, want);
    /* The normal form parses back to the same mask. */
    uint8_t m2[CPU_MAX / 8];
    assert_int_equal(parse_cpu_list("cpu_cores", out, m2, &e), 0);
    assert_memory_equal(m, m2, sizeof m);
}

static void test_format_cpu_list(void **state)
{
    (void)state;
    roundtrip("0-3", "0-3");
    roundtrip("1,3,5", "1,3,5");
    roundtrip("0-1,4", "0-1,4");
    roundtrip("7", "7");
    roundtrip("3,0-2", "0-3");
    roundtrip("5,1,3,1,5", "1,3,5");
    roundtrip("0-2,1-4", "0-4");
    roundtrip("4,5", "4-5");
    roundtrip("2-2", "2");
    roundtrip("0,2-5,7,1022-1023", "0,2-5,7,1022-1023");
    roundtrip("1023", "1023");
    roundtrip("0-1023", "0-1023");

    /* Every even CPU: the longest normal form. */
    char in[8192];
    size_t n = 0;
    for (int c = 0; c < CPU_MAX; c += 2)
        n += (size_t)snprintf(in + n, sizeof in - n, "%s%d", n ? "," : "", c);
    roundtrip(in, in);

    /* An empty mask has no normal form. */
    uint8_t empty[CPU_MAX / 8] = {0};
    char out[64];
    assert_int_equal(format_cpu_list(empty, out, sizeof out), -1);

    /* Too small a buffer is refused, never overrun. */
    uint8_t m[CPU_MAX / 8];
    jerr e = {0};
    assert_int_equal(parse_cpu_list("cpu_cores", "1,3,5", m, &e), 0);
    char small[8];
    memset(small, 'x', sizeof small);
    assert_int_equal(format_cpu_list(m, small, 5), -1); /* "1,3,5" needs 6 */
    assert_int_equal(small[5], 'x');
    assert_int_equal(format_cpu_list(m, small, 6), 0);
    assert_string_equal(small, "1,3,5");
}

/* ---- durations ---------------------------------------------------------------------- */

#define DUR_OK(s, want)                                                                        \
    do {                                                                                       \
        uint64_t v_ = 0;                                                                       \
        jerr e_ = {0};                                                                         \
        assert_int_equal(parse_duration("--max-runtime", (s), &v_, &e_), 0);                   \
        assert_int_equal(v_, (want));                                                          \
    } while (0)

#define DUR_BAD(s)                                                                             \
    do {                                                                                       \
        uint64_t v_ = 0;                                                                       \
        jerr e_ = {0};                                                                         \
        assert_int_equal(parse_duration("--max-runtime", (s), &v_, &e_), -1);                  \
        ASSERT_FIELD_ERROR(&e_, "--max-runtime", (s));                                         \
    } while (0)

static void test_duration(void **state)
{
    (void)state;
    DUR_OK("30s", 30);
    DUR_OK("30sec", 30);
    DUR_OK("30min", 1800);
    DUR_OK("30m", 1800);
    DUR_OK("2h30m", 9000);
    DUR_OK("2h30min", 9000);
    DUR_OK("1h1m1s", 3661);
    DUR_OK("3hr", 10800);
    DUR_OK("1d", 86400);
    DUR_OK("1d12h", 129600);
    DUR_OK("90", 90);
    DUR_OK("1", 1);
    DUR_OK("0h5m", 300);

    DUR_BAD("");
    DUR_BAD("0");
    DUR_BAD("0s");
    DUR_BAD("0h0m");
    DUR_BAD("5x");
    DUR_BAD("m30");
    DUR_BAD("-30s");
    DUR_BAD("1.5h");
    DUR_BAD("30 s");
    DUR_BAD(" 30s");
    DUR_BAD("30s ");
    DUR_BAD("h");
    DUR_BAD("30S");
    DUR_BAD("30seconds");
    DUR_BAD("2h30");  /* trailing number without a unit */
    DUR_BAD("1w");
    DUR_BAD("99999999999999999999s");
    DUR_BAD("307445734561825861m"); /* * 60 overflows */
    DUR_BAD("18446744073709551615s1s"); /* sum overflows */

    jerr e = {0};
    uint64_t v;
    assert_int_equal(parse_duration("--max-runtime", "5x", &v, &e), -1);
    assert_non_null(strstr(e.msg, "30min"));
    memset(&e, 0, sizeof e);
    assert_int_equal(parse_duration("--max-runtime", NULL, &v, &e), -1);
    ASSERT_FIELD_ERROR(&e, "--max-runtime", NULL);
}

/* ---- signals (rnx job kill --signal, --signal=SIG@SECONDS) ------------------------------- */

/* Slurm's time limits (sbatch --time, --max-runtime with a colon or a dash): what Slurm takes,
 * none for 0 and its words, and malformed for anything else, however long or signed. */
static void test_slurm_time(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        long long want;
    } cases[] = {
        {"90", 5400},           {"90:30", 5430},         {"2:00:00", 7200},      {"1-0", 86400},
        {"1-12:30", 131400},    {"2-0:0:5", 172805},     {"0-0:0:1", 1},         {"36500-0", 3153600000LL},
        {"100000000:00:00", 360000000000LL},              {"0", -1},              {"-1", -1},
        {"00:00:00", -1},       {"0-0", -1},             {"UNLIMITED", -1},      {"infinite", -1},
        {"1-", -2},             {"-5", -2},              {"-", -2},              {"1:-2", -2},
        {"1-2-3", -2},          {"1::2", -2},            {":5", -2},             {"5:", -2},
        {"1:2:3:4", -2},        {"1-2:3:4:5", -2},       {"+1", -2},             {" 1", -2},
        {"1 ", -2},             {"0x10", -2},            {"36501-0", -2},        {"100000001", -2},
        {"99999999999999999999", -2},                    {"9223372036854775807:0", -2},
        {"1-99999999999999999999", -2},                  {"", -2},               {"1e3", -2},
        /* a colon after the last part Slurm takes is one too many, as after any other */
        {"1:2:3:", -2},         {"1-2:3:4:", -2},        {"1:2:3::", -2},        {"1-2:3:", -2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long long got = parse_slurm_time(cases[i].s);
        if (got != cases[i].want)
            fail_msg("parse_slurm_time(\"%s\") = %lld, want %lld", cases[i].s, got, cases[i].want);
    }
}

/* rnx's time limits and timeouts: duration words (a bare number is seconds, not Slurm's minutes),
 * Slurm's forms when a colon or dash is there; none (0, UNLIMITED) and the malformed refused,
 * naming the field. */
static void test_time_limit(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        long long want; /* -1: refused */
    } cases[] = {
        {"90", 90},  {"30s", 30},     {"10min", 600}, {"2h30m", 9000}, {"1:00", 60}, {"2:00:00", 7200},
        {"1-12", 129600}, {"0:01", 1}, {"0", -1},     {"0:00", -1},    {"UNLIMITED", -1}, {"1:xx", -1},
        {"-5", -1},  {"", -1},        {"1-", -1},     {"h", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t got = 0;
        jerr e = {0};
        int rc = parse_time_limit("--timeout", cases[i].s, &got, &e);
        if (cases[i].want < 0) {
            if (rc == 0)
                fail_msg("parse_time_limit(\"%s\") = %llu, want refused", cases[i].s, (unsigned long long)got);
            if (!strstr(e.msg, "--timeout"))
                fail_msg("parse_time_limit(\"%s\"): '%s' names no field", cases[i].s, e.msg);
        } else if (rc != 0 || got != (uint64_t)cases[i].want)
            fail_msg("parse_time_limit(\"%s\") = %d, %llu, want %lld", cases[i].s, rc, (unsigned long long)got,
                     cases[i].want);
    }
}

static void test_signal(void **state)
{
    (void)state;
    static const struct { const char *s; int sig; } ok[] = {
        {"USR1", SIGUSR1}, {"SIGUSR1", SIGUSR1}, {"usr1", SIGUSR1}, {"sigterm", SIGTERM}, {"HUP", SIGHUP},
        {"10", SIGUSR1}, {"15", SIGTERM}, {"KILL", SIGKILL}, {"9", SIGKILL}, {"INT", SIGINT}, {"31", 31},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        jerr e = {0};
        int sig = -1;
        if (parse_signal("signal", ok[i].s, &sig, &e) < 0)
            fail_msg("'%s' refused: %s", ok[i].s, e.msg);
        assert_int_equal(sig, ok[i].sig);
    }
    /* the stop signals and SIGCHLD are not passed on by a job's init; junk, 0, real-time */
    static const char *const bad[] = {"STOP", "SIGTSTP", "ttin", "TTOU", "19", "CHLD", "17", "", "SIG", "0",
                                      "32", "64", "65", "99999999999999999999", "USR3", "USR1 ", "-9", "RTMIN",
                                      NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jerr e = {0};
        int sig = -1;
        if (parse_signal("signal", bad[i], &sig, &e) == 0)
            fail_msg("'%s' taken as %d", bad[i] ? bad[i] : "(null)", sig);
        ASSERT_FIELD_ERROR(&e, "signal", NULL);
        assert_int_equal(sig, -1);
    }
    jerr e = {0};
    int sig;
    assert_int_equal(parse_signal("--signal", "STOP", &sig, &e), -1);
    assert_non_null(strstr(e.msg, "rnx job suspend"));
    char name[16];
    assert_string_equal(parse_signal_name(SIGUSR1, name, sizeof name), "SIGUSR1");
    assert_string_equal(parse_signal_name(0, name, sizeof name), "0");
}

static void test_signal_warning(void **state)
{
    (void)state;
    static const struct { const char *s; int sig; uint32_t secs; const char *canon; } ok[] = {
        {"USR1", SIGUSR1, 60, "SIGUSR1@60"},      {"USR1@90", SIGUSR1, 90, "SIGUSR1@90"},
        {"B:USR1@90", SIGUSR1, 90, "SIGUSR1@90"}, {"b:sigterm@1", SIGTERM, 1, "SIGTERM@1"},
        {"10@65535", SIGUSR1, 65535, "SIGUSR1@65535"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        jerr e = {0};
        int sig = 0;
        uint32_t secs = 0;
        char canon[40];
        if (parse_signal_warning("signal", ok[i].s, &sig, &secs, canon, sizeof canon, &e) < 0)
            fail_msg("'%s' refused: %s", ok[i].s, e.msg);
        assert_int_equal(sig, ok[i].sig);
        assert_int_equal(secs, ok[i].secs);
        assert_string_equal(canon, ok[i].canon);
        /* the canonical text reads back the same */
        assert_int_equal(parse_signal_warning("signal", canon, &sig, &secs, NULL, 0, &e), 0);
        assert_int_equal(secs, ok[i].secs);
    }
    static const char *const bad[] = {"", "@90", "B:", "USR1@", "USR1@0", "USR1@65536", "USR1@x", "USR1@-1",
                                      "KILL@10", "STOP@10", "R:USR1@10", "USR1@90@1", NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jerr e = {0};
        int sig = 0;
        uint32_t secs = 0;
        if (parse_signal_warning("signal", bad[i], &sig, &secs, NULL, 0, &e) == 0)
            fail_msg("'%s' taken", bad[i] ? bad[i] : "(null)");
        ASSERT_FIELD_ERROR(&e, "signal", NULL);
    }
    /* what is wrong, said: a number out of range is not "not a number"; Slurm's R: is named */
    static const struct { const char *s, *says; } why[] = {
        {"USR1@0", "0 seconds is out of range"},
        {"USR1@65536", "65536 seconds is out of range"},
        {"USR1@x", "\"x\" is not a number of seconds"},
        {"R:USR1@10", "Slurm's R: (a signal before a reservation ends) is not supported"},
    };
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++) {
        jerr e = {0};
        int sig = 0;
        uint32_t secs = 0;
        assert_int_equal(parse_signal_warning("signal", why[i].s, &sig, &secs, NULL, 0, &e), -1);
        if (!strstr(e.msg, why[i].says))
            fail_msg("'%s': '%s' does not say '%s'", why[i].s, e.msg, why[i].says);
    }
}

/* ---- RFC 3339 ----------------------------------------------------------------------- */

#define T2026 ((time_t)1767225600) /* 2026-01-01T00:00:00Z */

#define RFC_OK(s, want)                                                                        \
    do {                                                                                       \
        time_t t_ = 0;                                                                         \
        assert_int_equal(parse_rfc3339((s), &t_), 0);                                          \
        assert_int_equal((int64_t)t_, (int64_t)(want));                                        \
    } while (0)

#define RFC_BAD(s)                                                                             \
    do {                                                                                       \
        time_t t_ = 12345;                                                                     \
        assert_int_equal(parse_rfc3339((s), &t_), -1);                                         \
        assert_int_equal((int64_t)t_, 12345);                                                  \
    } while (0)

static void test_rfc3339(void **state)
{
    (void)state;
    RFC_OK("1970-01-01T00:00:00Z", 0);
    RFC_OK("2026-01-01T00:00:00Z", T2026);
    RFC_OK("2030-01-02T03:04:05Z", 1893553445);
    RFC_OK("2030-01-02t03:04:05z", 1893553445);
    RFC_OK("2030-01-02 03:04:05Z", 1893553445);
    RFC_OK("2030-01-02T03:04:05.999Z", 1893553445);
    RFC_OK("2030-01-02T03:04:05.123456789Z", 1893553445);
    RFC_OK("2030-01-02T03:04:05+00:00", 1893553445);
    RFC_OK("2030-01-02T03:04:05-00:00", 1893553445);
    RFC_OK("2030-01-02T03:04:05+01:00", 1893549845);
    RFC_OK("2030-01-02T03:04:05-05:30", 1893573245);
    RFC_OK("2030-01-02T03:04:05.5+01:00", 1893549845);
    RFC_OK("1969-12-31T23:59:59Z", -1);

    /* Leap years: divisible by 4, except centuries, except every 400 years. */
    RFC_OK("2028-02-29T00:00:00Z", 1835395200);
    RFC_OK("2000-02-29T12:00:00Z", 951825600);
    RFC_BAD("2030-02-29T00:00:00Z");
    RFC_BAD("2027-02-29T00:00:00Z");
    RFC_BAD("1900-02-29T00:00:00Z");
    RFC_BAD("2100-02-29T00:00:00Z");
    RFC_BAD("2028-02-30T00:00:00Z");
    RFC_OK("2027-02-28T00:00:00Z", 1803772800);
    RFC_OK("2027-03-01T00:00:00Z", 1803859200);

    /* Month and day ranges. */
    RFC_BAD("2030-13-01T00:00:00Z");
    RFC_BAD("2030-00-01T00:00:00Z");
    RFC_BAD("2030-01-00T00:00:00Z");
    RFC_BAD("2030-01-32T00:00:00Z");
    RFC_BAD("2030-04-31T00:00:00Z");
    RFC_BAD("2030-06-31T00:00:00Z");
    RFC_BAD("2030-09-31T00:00:00Z");
    RFC_BAD("2030-11-31T00:00:00Z");
    RFC_OK("2030-12-31T23:59:59Z", 1924991999);

    /* Time ranges. */
    RFC_BAD("2030-01-02T24:00:00Z");
    RFC_BAD("2030-01-02T03:60:00Z");
    RFC_BAD("2030-01-02T03:04:61Z");
    RFC_BAD("2030-01-02T03:04:05+24:00");
    RFC_BAD("2030-01-02T03:04:05+01:60");

    /* Shape. */
    RFC_BAD("");
    RFC_BAD("2030-01-02");
    RFC_BAD("2030-01-02T03:04:05");   /* no zone */
    RFC_BAD("2030-01-02T03:04Z");
    RFC_BAD("2030-1-02T03:04:05Z");
    RFC_BAD("30-01-02T03:04:05Z");
    RFC_BAD("2030/01/02T03:04:05Z");
    RFC_BAD("2030-01-02X03:04:05Z");
    RFC_BAD("2030-01-02T03:04:05.Z");
    RFC_BAD("2030-01-02T03:04:05ZZ");
    RFC_BAD("2030-01-02T03:04:05Z ");
    RFC_BAD("2030-01-02T03:04:05+01");
    RFC_BAD("2030-01-02T03:04:05+0100");
    RFC_BAD("2030-01-02T03:04:05+01:00x");
    RFC_BAD("2030-01-02T03:04:05 +01:00");
    /* Signs and spaces inside numeric fields (sscanf would take them). */
    RFC_BAD(" 030-01-02T03:04:05Z");
    RFC_BAD("2030-01- 2T03:04:05Z");
    RFC_BAD("2030-01-+2T03:04:05Z");
    RFC_BAD("2030-01-02T-3:04:05Z");
    RFC_BAD("2030-01-02T03:-4:05Z");
    RFC_BAD("2030-01-02T03:04:-5Z");
    RFC_BAD("2030-01-02T03:04:+5Z");
    RFC_BAD("2030-01-02T03:04:05+-1:00");
    RFC_BAD("2030-01-02T03:04:05+01:-1");
    RFC_BAD("2030-01-02T03:04:05+ 1:00");
}

/* parse_rfc3339 against the C library's formatting, over a spread of times, daily across leap
 * years. */
static void test_rfc3339_round_trip(void **state)
{
    (void)state;
    char b[40];
    for (time_t t = T2026 - 30 * 86400 * 100; t < T2026 + 5 * 366 * 86400; t += 86400 + 3607) {
        time_t back = 0;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (parse_rfc3339(b, &back) != 0 || back != t)
            fail_msg("round trip of %lld via '%s' gave %lld", (long long)t, b, (long long)back);
    }
}

/* ---- environment pairs -------------------------------------------------------------- */

#define ENV_OK(s, wkey, wval)                                                                  \
    do {                                                                                       \
        char k_[64];                                                                           \
        const char *v_ = NULL;                                                                 \
        jerr e_ = {0};                                                                         \
        assert_int_equal(parse_env_pair("--env", (s), k_, sizeof k_, &v_, &e_), 0);            \
        assert_string_equal(k_, (wkey));                                                       \
        assert_non_null(v_);                                                                   \
        assert_string_equal(v_, (wval));                                                       \
    } while (0)

#define ENV_BAD(s)                                                                             \
    do {                                                                                       \
        char k_[64];                                                                           \
        const char *v_ = NULL;                                                                 \
        jerr e_ = {0};                                                                         \
        assert_int_equal(parse_env_pair("--env", (s), k_, sizeof k_, &v_, &e_), -1);           \
        ASSERT_FIELD_ERROR(&e_, "--env", NULL);                                                \
        assert_null(v_);                                                                       \
    } while (0)

static void test_env_pair(void **state)
{
    (void)state;
    ENV_OK("A=1", "A", "1");
    ENV_OK("A=", "A", "");
    ENV_OK("A=b=c", "A", "b=c");
    ENV_OK("_=x", "_", "x");
    ENV_OK("_A1=x y", "_A1", "x y");
    ENV_OK("PATH=/usr/bin:/bin", "PATH", "/usr/bin:/bin");
    ENV_OK("lower_case9=", "lower_case9", "");

    ENV_BAD("=x");
    ENV_BAD("=");
    ENV_BAD("1A=x");
    ENV_BAD("A-B=x");
    ENV_BAD("A B=x");
    ENV_BAD("A.B=x");
    ENV_BAD("noequals");
    ENV_BAD("");
    ENV_BAD("\xc3\xa9=x");

    /* The value points into the input, after the first '='. */
    const char *in = "KEY=v=w";
    char k[16];
    const char *v = NULL;
    jerr e = {0};
    assert_int_equal(parse_env_pair("--env", in, k, sizeof k, &v, &e), 0);
    assert_ptr_equal(v, in + 4);

    /* Messages quote the input and say what is expected. */
    memset(&e, 0, sizeof e);
    assert_int_equal(parse_env_pair("--env", "noequals", k, sizeof k, &v, &e), -1);
    assert_non_null(strstr(e.msg, "'noequals'"));
    assert_non_null(strstr(e.msg, "KEY=VALUE"));
    memset(&e, 0, sizeof e);
    assert_int_equal(parse_env_pair("--env", "=x", k, sizeof k, &v, &e), -1);
    assert_non_null(strstr(e.msg, "'=x'"));
    memset(&e, 0, sizeof e);
    assert_int_equal(parse_env_pair("--env", "1A=x", k, sizeof k, &v, &e), -1);
    assert_non_null(strstr(e.msg, "'1A'"));
    memset(&e, 0, sizeof e);
    assert_int_equal(parse_env_pair("env", "A-B=x", k, sizeof k, &v, &e), -1);
    ASSERT_FIELD_ERROR(&e, "env", "A-B");

    /* A name that does not fit the caller's buffer is refused, not truncated. */
    memset(&e, 0, sizeof e);
    assert_int_equal(parse_env_pair("--env", "ABCDEFGH=1", k, 8, &v, &e), -1);
    ASSERT_FIELD_ERROR(&e, "--env", "ABCDEFGH=1");
    assert_int_equal(parse_env_pair("--env", "ABCDEFG=1", k, 8, &v, &e), 0);
    assert_string_equal(k, "ABCDEFG");

    memset(&e, 0, sizeof e);
    assert_int_equal(parse_env_pair("--env", NULL, k, sizeof k, &v, &e), -1);
    ASSERT_FIELD_ERROR(&e, "--env", NULL);
}

static void test_env_key_valid(void **state)
{
    (void)state;
    assert_true(env_key_valid("A"));
    assert_true(env_key_valid("_"));
    assert_true(env_key_valid("a_b_9"));
    assert_false(env_key_valid(""));
    assert_false(env_key_valid(NULL));
    assert_false(env_key_valid("9A"));
    assert_false(env_key_valid("A-B"));
    assert_false(env_key_valid("A=B"));
    assert_false(env_key_valid("A\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u64),
        cmocka_unit_test(test_size_mb),
        cmocka_unit_test(test_size_mb_messages),
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_cpu_list),
        cmocka_unit_test(test_format_cpu_list),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_slurm_time),
        cmocka_unit_test(test_time_limit),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_signal),
        cmocka_unit_test(test_signal_warning),
        cmocka_unit_test(test_rfc3339_round_trip),
        cmocka_unit_test(test_env_pair),
        cmocka_unit_test(test_env_key_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
