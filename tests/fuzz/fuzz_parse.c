/* The parsers of user input shared by rnx and joblet (src/common/parse.c): sizes, byte rates,
 * CPU percentages and lists, durations, schedules, RFC 3339 times, KEY=VALUE pairs, plain
 * numbers. The first byte picks the parser, the rest is the text. Besides not crashing, each
 * accepted value must keep the promises of parse.h, and what is formatted must parse back. */
#include <inttypes.h>
#include <string.h>

#include "common/log.h"
#include "common/parse.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_set_level(LOG_ERR);
    return 0;
}

static void cpu_list(const char *s)
{
    uint8_t mask[CPU_MAX / 8], again[CPU_MAX / 8];
    jerr e = {0};
    if (parse_cpu_list("cpu_cores", s, mask, &e) < 0) {
        FUZZ_ASSERT(e.msg[0] && !strcmp(e.field, "cpu_cores"), "a refusal without its message");
        return;
    }
    /* the longest list: every other CPU, "0,2,4,...,1022" */
    char out[CPU_MAX * 5];
    if (format_cpu_list(mask, out, sizeof out) < 0) {
        for (size_t i = 0; i < sizeof mask; i++)
            FUZZ_ASSERT(!mask[i], "'%s': a list with CPUs that does not format", s);
        return;
    }
    FUZZ_ASSERT(parse_cpu_list("cpu_cores", out, again, &e) == 0, "'%s' formatted as '%s' does not parse", s, out);
    FUZZ_ASSERT(!memcmp(mask, again, sizeof mask), "'%s' formatted as '%s' parses to other CPUs", s, out);
}

static void rfc3339(const char *s)
{
    time_t t, back;
    if (parse_rfc3339(s, &t) < 0)
        return;
    char out[64];
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return;
    /* years 1000 to 9999 format as four digits and must read back as the same second */
    if (strlen(out) == 20)
        FUZZ_ASSERT(parse_rfc3339(out, &back) == 0 && back == t, "'%s' formatted as '%s' does not read back", s,
                    out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t which = data[0];
    char *s = fuzz_strndup(data + 1, size - 1);
    jerr e = {0};
    uint64_t u;
    switch (which % 10) {
    case 0:
        if (parse_size_mb("max_memory_mb", s, &u, &e) == 0)
            FUZZ_ASSERT(u > 0 && u <= UINT64_MAX >> 20, "'%s' gave %" PRIu64 " MB", s, u);
        break;
    case 1:
        if (parse_bytes("max_iobps", s, &u, &e) == 0)
            FUZZ_ASSERT(u > 0, "'%s' gave 0 bytes", s);
        break;
    case 2: /* was parse_percent, which nothing used; the time parser gets the case */
        rfc3339(s);
        break;
    case 3: cpu_list(s); break;
    case 4:
        if (parse_duration("max_runtime_s", s, &u, &e) == 0)
            FUZZ_ASSERT(u > 0, "'%s' gave 0 seconds", s);
        break;
    case 5: /* was parse_schedule, which nothing used: the duration parser gets the case */
        if (parse_duration("max_runtime_s", s, &u, &e) == 0)
            FUZZ_ASSERT(u > 0, "'%s' gave 0 seconds", s);
        break;
    case 6: rfc3339(s); break;
    case 7: {
        char key[64];
        const char *value;
        if (parse_env_pair("env", s, key, sizeof key, &value, &e) == 0) {
            FUZZ_ASSERT(env_key_valid(key), "'%s' gave the invalid name '%s'", s, key);
            FUZZ_ASSERT(value > s && value <= s + strlen(s), "'%s': the value points outside it", s);
        }
        break;
    }
    case 8:
        if (parse_u64(s, &u) == 0) {
            char back[32];
            snprintf(back, sizeof back, "%" PRIu64, u);
            /* leading zeros are accepted: compare without them */
            const char *t = s;
            while (t[0] == '0' && t[1])
                t++;
            FUZZ_ASSERT(!strcmp(back, t), "'%s' read as %" PRIu64, s, u);
        }
        break;
    case 9: env_key_valid(s); break;
    }
    free(s);
    return 0;
}
