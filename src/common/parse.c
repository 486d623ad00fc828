#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return -1;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* Splits "123XY" into number and unit; unit may be empty. */
static int split_num_unit(const char *s, uint64_t *num, const char **unit)
{
    char digits[32];
    size_t i = 0;
    while (isdigit((unsigned char)s[i]) && i < sizeof digits - 1) {
        digits[i] = s[i];
        i++;
    }
    if (i == 0 || isdigit((unsigned char)s[i]))
        return -1;
    digits[i] = 0;
    if (parse_u64(digits, num) < 0)
        return -1;
    *unit = s + i;
    return 0;
}

static int mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a && b > UINT64_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

int parse_size_mb(const char *field, const char *s, uint64_t *mb, jerr *e)
{
    uint64_t n;
    const char *u;
    static const struct { const char *name; uint64_t mul; } units[] = {
        {"", 1}, {"M", 1}, {"MB", 1}, {"MiB", 1}, {"G", 1024}, {"GB", 1024}, {"GiB", 1024},
        {"T", 1024 * 1024}, {"TB", 1024 * 1024}, {"TiB", 1024 * 1024},
    };
    if (!s || split_num_unit(s, &n, &u) < 0)
        goto bad;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(u, units[i].name) == 0) {
            if (mul_ok(n, units[i].mul, mb) < 0 || *mb > (UINT64_MAX >> 20))
                return jerr_field(e, field, "%s: '%s' is too large", field, s);
            if (*mb == 0)
                return jerr_field(e, field, "%s: must be greater than zero (got '%s')", field, s);
            return 0;
        }
bad:
    return jerr_field(e, field,
                      "%s: '%s' is not a size; use megabytes (4096) or a unit: 4096MB, 8GB", field,
                      s ? s : "");
}

int parse_bytes(const char *field, const char *s, uint64_t *bytes, jerr *e)
{
    uint64_t n;
    const char *u;
    static const struct { const char *name; uint64_t mul; } units[] = {
        {"", 1}, {"B", 1}, {"K", 1024}, {"KB", 1024}, {"KiB", 1024}, {"M", 1 << 20},
        {"MB", 1 << 20}, {"MiB", 1 << 20}, {"G", 1 << 30}, {"GB", 1 << 30}, {"GiB", 1 << 30},
    };
    if (!s || split_num_unit(s, &n, &u) < 0)
        goto bad;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(u, units[i].name) == 0) {
            if (mul_ok(n, units[i].mul, bytes) < 0)
                return jerr_field(e, field, "%s: '%s' is too large", field, s);
            if (*bytes == 0)
                return jerr_field(e, field, "%s: must be greater than zero (got '%s')", field, s);
            return 0;
        }
bad:
    return jerr_field(e, field,
                      "%s: '%s' is not a size; use bytes (1048576) or a unit: 512K, 10MB, 1G",
                      field, s ? s : "");
}

int parse_cpu_list(const char *field, const char *s, uint8_t mask[CPU_MAX / 8], jerr *e)
{
    memset(mask, 0, CPU_MAX / 8);
    const char *p = s;
    if (!s || !*s)
        goto bad;
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p))
            goto bad;
        errno = 0;
        unsigned long a = strtoul(p, &end, 10), b = a;
        if (errno || a >= CPU_MAX)
            goto range;
        p = end;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                goto bad;
            b = strtoul(p, &end, 10);
            if (errno || b >= CPU_MAX)
                goto range;
            if (b < a)
                goto bad;
            p = end;
        }
        for (unsigned long c = a; c <= b; c++)
            mask[c / 8] |= (uint8_t)(1u << (c % 8));
        if (*p == ',') {
            p++;
            if (!*p)
                goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    return 0;
range:
    return jerr_field(e, field, "%s: '%s' names a CPU above %d", field, s, CPU_MAX - 1);
bad:
    return jerr_field(e, field, "%s: '%s' is not a CPU list; use ranges and commas, e.g. 0-3 or 1,3,5",
                      field, s ? s : "");
}

int format_cpu_list(const uint8_t mask[CPU_MAX / 8], char *out, size_t outlen)
{
    size_t n = 0;
    out[0] = 0;
    for (int c = 0; c < CPU_MAX; c++) {
        if (!(mask[c / 8] & (1u << (c % 8))))
            continue;
        int d = c;
        while (d + 1 < CPU_MAX && (mask[(d + 1) / 8] & (1u << ((d + 1) % 8))))
            d++;
        int w = d > c ? snprintf(out + n, outlen - n, "%s%d-%d", n ? "," : "", c, d)
                      : snprintf(out + n, outlen - n, "%s%d", n ? "," : "", c);
        if (w < 0 || (size_t)w >= outlen - n)
            return -1;
        n += (size_t)w;
        c = d;
    }
    return n ? 0 : -1;
}

bool parse_signal_sendable(int sig)
{
    return sig >= 1 && sig <= 31 && sig != SIGSTOP && sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU &&
           sig != SIGCHLD;
}

int parse_signal(const char *field, const char *s, int *sig, jerr *e)
{
    uint64_t n;
    int found = 0;
    if (s && parse_u64(s, &n) == 0) {
        found = n <= 64 ? (int)n : -1;
    } else if (s && *s) {
        const char *name = strncasecmp(s, "SIG", 3) ? s : s + 3;
        for (int i = 1; i <= 31 && !found; i++) {
            const char *abbrev = sigabbrev_np(i);
            if (abbrev && !strcasecmp(name, abbrev))
                found = i;
        }
    }
    if (found > 0 && parse_signal_sendable(found)) {
        *sig = found;
        return 0;
    }
    if (found == SIGSTOP || found == SIGTSTP || found == SIGTTIN || found == SIGTTOU)
        return jerr_field(e, field, "%s: %s would stop the job's processes behind joblet's back; rnx job suspend "
                                   "freezes a job (and resume thaws it)", field, s);
    if (found == SIGCHLD)
        return jerr_field(e, field, "%s: SIGCHLD is the kernel's to send; it cannot be sent to a job", field);
    return jerr_field(e, field, "%s: \"%.32s\" is not a signal joblet sends; give a name such as USR1, SIGTERM or "
                               "HUP, or a number from 1 to 31 (not the stop signals nor SIGCHLD)", field, s ? s : "");
}

int parse_signal_warning(const char *field, const char *s, int *sig, uint32_t *secs, char *out, size_t len, jerr *e)
{
    static const char accepts[] = "give SIG or SIG@SECONDS as Slurm's --signal: USR1, USR1@90, B:USR1@90 (SECONDS "
                                  "from 1 to 65535 before the run-time limit, default 60)";
    char name[40];
    const char *p = s ? s : "";
    if (!strncasecmp(p, "B:", 2))
        p += 2;
    else if (!strncasecmp(p, "R:", 2)) /* Slurm's: before a reservation's end */
        return jerr_field(e, field, "%s: \"%.40s\": Slurm's R: (a signal before a reservation ends) is not "
                                    "supported: joblet has no reservations; %s", field, s, accepts);
    const char *at = strchr(p, '@');
    size_t n = at ? (size_t)(at - p) : strlen(p);
    if (n == 0 || n >= sizeof name)
        return jerr_field(e, field, "%s: \"%.40s\" names no signal; %s", field, s ? s : "", accepts);
    memcpy(name, p, n);
    name[n] = 0;
    uint64_t t = PARSE_SIGNAL_WARN_DEFAULT_S;
    if (at && parse_u64(at + 1, &t) < 0)
        return jerr_field(e, field, "%s: \"%.40s\": \"%.40s\" is not a number of seconds; %s", field, s, at + 1,
                          accepts);
    if (at && (t < 1 || t > PARSE_SIGNAL_WARN_MAX_S))
        return jerr_field(e, field, "%s: \"%.40s\": %llu seconds is out of range; %s", field, s,
                          (unsigned long long)t, accepts);
    if (parse_signal(field, name, sig, e) < 0)
        return -1;
    if (*sig == SIGKILL)
        return jerr_field(e, field, "%s: SIGKILL before the run-time limit is a shorter limit; give that as "
                                    "max_runtime, or a signal the job can catch (USR1, TERM)", field);
    *secs = (uint32_t)t;
    if (out) {
        char nm[16];
        snprintf(out, len, "%s@%u", parse_signal_name(*sig, nm, sizeof nm), *secs);
    }
    return 0;
}

const char *parse_signal_name(int sig, char *out, size_t len)
{
    const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
    if (abbrev)
        snprintf(out, len, "SIG%s", abbrev);
    else
        snprintf(out, len, "%d", sig);
    return out;
}

int parse_duration(const char *field, const char *s, uint64_t *seconds, jerr *e)
{
    static const struct { const char *name; uint64_t mul; } units[] = {
        {"s", 1}, {"sec", 1}, {"m", 60}, {"min", 60}, {"h", 3600}, {"hr", 3600}, {"d", 86400},
    };
    uint64_t total = 0, n;
    const char *p = s;
    if (!s || !*s)
        goto bad;
    if (parse_u64(s, &n) == 0) {
        if (n == 0)
            goto bad;
        *seconds = n;
        return 0;
    }
    while (*p) {
        const char *u;
        char unit[8];
        if (split_num_unit(p, &n, &u) < 0)
            goto bad;
        size_t ul = 0;
        while (u[ul] && isalpha((unsigned char)u[ul]))
            ul++;
        if (ul == 0 || ul >= sizeof unit)
            goto bad;
        memcpy(unit, u, ul);
        unit[ul] = 0;
        size_t i;
        for (i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strcmp(unit, units[i].name) == 0)
                break;
        if (i == sizeof units / sizeof units[0])
            goto bad;
        uint64_t part;
        if (mul_ok(n, units[i].mul, &part) < 0 || total + part < total)
            goto bad;
        total += part;
        p = u + ul;
    }
    if (total == 0)
        goto bad;
    *seconds = total;
    return 0;
bad:
    return jerr_field(e, field,
                      "%s: '%s' is not a duration; use a number of seconds or units s, m/min, h, d (e.g. 90, 30min, 2h30m)",
                      field, s ? s : "");
}

static long days_from_civil(long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long)doe - 719468;
}

int parse_rfc3339(const char *s, time_t *out)
{
    /* Check the shape first: sscanf's %d would also take leading spaces and signs. */
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    for (size_t i = 0; i < sizeof shape - 1; i++) {
        unsigned char c = (unsigned char)s[i];
        if (shape[i] == 'd' ? !isdigit(c) : shape[i] == 'T' ? !(c == 'T' || c == 't' || c == ' ') : c != shape[i])
            return -1;
    }
    int Y, M, D, h, m, sec, n = 0;
    if (sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6 || n != 19)
        return -1;
    const char *p = s + n;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p))
            p++;
    }
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, k = 0;
        if (!isdigit((unsigned char)p[1]) || !isdigit((unsigned char)p[2]) || p[3] != ':' ||
            !isdigit((unsigned char)p[4]) || !isdigit((unsigned char)p[5]))
            return -1;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &k) != 2 || k != 5 || oh > 23 || om > 59)
            return -1;
        off = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -1;
    }
    if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return -1;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (D > mdays[M - 1] || (M == 2 && D == 29 && !((Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0)))
        return -1;
    *out = (time_t)(days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + m * 60 + sec - off);
    return 0;
}

bool env_key_valid(const char *key)
{
    if (!key || !(isalpha((unsigned char)*key) || *key == '_'))
        return false;
    for (const char *p = key + 1; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    return true;
}

int parse_env_pair(const char *field, const char *s, char *key, size_t keylen, const char **value, jerr *e)
{
    const char *eq = s ? strchr(s, '=') : NULL;
    if (!eq)
        return jerr_field(e, field, "%s: '%s' is not KEY=VALUE", field, s ? s : "");
    size_t kl = (size_t)(eq - s);
    if (kl == 0 || kl >= keylen)
        return jerr_field(e, field, "%s: '%s' has an empty or overlong name; use KEY=VALUE", field, s);
    memcpy(key, s, kl);
    key[kl] = 0;
    if (!env_key_valid(key))
        return jerr_field(e, field,
                          "%s: '%s' is not a valid variable name; use letters, digits and '_', not starting with a digit",
                          field, key);
    *value = eq + 1;
    return 0;
}

bool parse_user_name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (!n || n >= max || s[0] == '-' || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
            return false;
    return true;
}

void parse_serial_bytes(const unsigned char *b, size_t n, char *out, size_t len)
{
    while (n > 1 && b[0] == 0) {
        b++;
        n--;
    }
    size_t o = 0;
    for (size_t i = 0; i < n && o + 3 <= len; i++)
        o += (size_t)snprintf(out + o, len - o, "%02x", b[i]);
    if (len)
        out[o] = 0;
}

int parse_serial(const char *s, char *out, size_t len)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    char hex[42];
    size_t nh = 0;
    for (const char *p = s; *p; p++) {
        if (*p == ':' && p != s && p[1] && p[1] != ':')
            continue;
        if (!isxdigit((unsigned char)*p) || nh == 40)
            return -1;
        hex[nh++] = (char)tolower((unsigned char)*p);
    }
    if (!nh)
        return -1;
    unsigned char b[20];
    size_t nb = 0, i = 0;
    if (nh % 2) /* an odd count: the first digit is a byte of its own */
        b[nb++] = (unsigned char)strtoul((char[]){hex[i++], 0}, NULL, 16);
    for (; i + 1 < nh; i += 2)
        b[nb++] = (unsigned char)strtoul((char[]){hex[i], hex[i + 1], 0}, NULL, 16);
    parse_serial_bytes(b, nb, out, len);
    return 0;
}

bool parse_whole(const char *s, long long lo, long long hi, long long *out)
{
    if (!*s || strlen(s) > 18)
        return false;
    for (const char *c = s; *c; c++)
        if (!isdigit((unsigned char)*c))
            return false;
    long long v = strtoll(s, NULL, 10);
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

long long parse_slurm_time(const char *s)
{
    if (!strcmp(s, "0") || !strcmp(s, "-1") || !strcasecmp(s, "UNLIMITED") || !strcasecmp(s, "INFINITE"))
        return -1;
    long long part[4] = {0};
    int n = 0;
    long long days = 0;
    const char *p = s;
    const char *dash = strchr(s, '-');
    char buf[32];
    if (strlen(s) >= sizeof buf)
        return -2;
    if (dash) {
        snprintf(buf, sizeof buf, "%.*s", (int)(dash - s), s);
        if (!parse_whole(buf, 0, 36500, &days))
            return -2;
        p = dash + 1;
    }
    while (n < 3) {
        size_t len = strcspn(p, ":");
        snprintf(buf, sizeof buf, "%.*s", (int)len, p);
        if (!parse_whole(buf, 0, 100000000, &part[n++]))
            return -2;
        p += len;
        if (!*p)
            break;
        if (n == 3) /* a colon after the third part ("1:2:3:"): one too many, as Slurm says */
            return -2;
        p++;
    }
    long long secs;
    if (dash) /* D-H, D-H:M, D-H:M:S */
        secs = part[0] * 3600 + (n > 1 ? part[1] * 60 : 0) + (n > 2 ? part[2] : 0);
    else if (n == 1) /* minutes */
        secs = part[0] * 60;
    else if (n == 2) /* minutes:seconds */
        secs = part[0] * 60 + part[1];
    else /* hours:minutes:seconds */
        secs = part[0] * 3600 + part[1] * 60 + part[2];
    secs += days * 86400;
    return secs ? secs : -1;
}

int parse_time_limit(const char *field, const char *s, uint64_t *seconds, jerr *e)
{
    if (!s || !strpbrk(s, ":-"))
        return parse_duration(field, s, seconds, e);
    long long v = parse_slurm_time(s);
    if (v <= 0) /* malformed, or none: a limit is left out to have none */
        return jerr_field(e, field, "%s: '%s' is not a time limit (H:MIN:SEC, MIN:SEC, D-H[:MIN[:SEC]])", field, s);
    *seconds = (uint64_t)v;
    return 0;
}
