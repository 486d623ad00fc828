#include "err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void vset(jerr *e, const char *fmt, va_list ap)
{
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
}

int jerr_set(jerr *e, int code, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(e, fmt, ap);
    va_end(ap);
    e->code = code;
    return -1;
}

int jerr_sys(jerr *e, const char *fmt, ...)
{
    int saved = errno;
    if (!e)
        return -1;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    snprintf(e->msg, sizeof e->msg, "%s: %s", buf, strerror(saved));
    e->code = saved;
    errno = saved;
    return -1;
}

int jerr_field(jerr *e, const char *field, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(e, fmt, ap);
    va_end(ap);
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    e->code = EINVAL;
    e->http = 400;
    return -1;
}

int jerr_input(jerr *e, const char *field, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(e, fmt, ap);
    va_end(ap);
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    e->code = EINVAL;
    e->http = 0;
    return -1;
}

int jerr_http(jerr *e, int http, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(e, fmt, ap);
    va_end(ap);
    e->http = http;
    return -1;
}

int jerr_busy(jerr *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(e, fmt, ap);
    va_end(ap);
    e->code = EAGAIN;
    e->http = 503;
    return -1;
}

const char *jerr_code_name(const jerr *e)
{
    switch (e->http) {
    case 400: return JERR_INVALID;
    case 403: return JERR_FORBIDDEN;
    case 404: return JERR_NOT_FOUND;
    case 409: return e->code == EEXIST ? JERR_AMBIGUOUS : JERR_CONFLICT;
    case 413: return JERR_TOO_LARGE;
    case 429: return "limit_exceeded";
    case 503: return "unavailable";
    case 507: return "insufficient_storage";
    default: return JERR_INTERNAL;
    }
}
