#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
