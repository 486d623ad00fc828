#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util.h"

static enum log_level level = LOG_INFO;
static const char *names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level lvl) { level = lvl; }

int log_parse_level(const char *s, enum log_level *out)
{
    for (int i = 0; i <= LOG_DEBUG; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    return -1;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    if (lvl > level)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[2048];
    int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - (size_t)n, ".%03ldZ %-5s ", ts.tv_nsec / 1000000, names[lvl]);
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One record per line, always: a user's text (a command, a job's name) with a newline or
     * an escape sequence in it must not forge a line of the log or reach an admin's terminal. */
    size_t o = (size_t)n;
    for (const unsigned char *c = (const unsigned char *)msg; *c && o + 7 < sizeof line; c++) {
        uint32_t cp;
        size_t cl = utf8_control_len(c, &cp);
        if (cl) { /* U+0085 (NEL), U+2028 and U+202E end or reorder lines as much as '\n' */
            o += (size_t)snprintf(line + o, sizeof line - o, "\\u%04x", (unsigned)cp);
            c += cl - 1;
            continue;
        }
        if (*c >= 0x20 && *c != 0x7f) {
            line[o++] = (char)*c;
            continue;
        }
        o += (size_t)snprintf(line + o, sizeof line - o, *c == '\n' ? "\\n" : *c == '\r' ? "\\r" : *c == '\t' ? "\\t"
                                                                                   : "\\x%02x", *c);
    }
    line[o] = 0;
    fprintf(stderr, "%s\n", line);
}
