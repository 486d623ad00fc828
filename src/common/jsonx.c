#include "jsonx.h"

#include <string.h>

#include "util.h"

int jx_only_keys(json_t *obj, const char *const *allowed, const char *where, jerr *e)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        const char *const *a = allowed;
        while (*a && strcmp(*a, k))
            a++;
        if (!*a) {
            char list[512] = "";
            size_t n = 0;
            for (a = allowed; *a && n < sizeof list - 64; a++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", *a);
            return jerr_field(e, k, "%s: unknown field in %s; accepted fields: %s", k, where, list);
        }
    }
    return 0;
}

int jx_str(json_t *obj, const char *key, const char **out, jerr *e)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return jerr_field(e, key, "%s: must be a string", key);
    *out = json_string_value(v);
    return 0;
}

int jx_u64(json_t *obj, const char *key, uint64_t min, uint64_t max, uint64_t *out, jerr *e)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < min ||
        (uint64_t)json_integer_value(v) > max)
        return jerr_field(e, key, "%s: must be a whole number from %llu to %llu", key,
                          (unsigned long long)min, (unsigned long long)max);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

void jx_set_str_or_null(json_t *obj, const char *key, const char *s)
{
    json_object_set_new(obj, key, s ? json_string(s) : json_null());
}

void jx_set_time_or_null(json_t *obj, const char *key, int64_t ms)
{
    if (ms <= 0) {
        json_object_set_new(obj, key, json_null());
        return;
    }
    char b[40];
    format_ms(ms, b, sizeof b);
    json_object_set_new(obj, key, json_string(b));
}

static size_t utf8_seq_len(const unsigned char *p, size_t left)
{
    unsigned c = *p;
    size_t n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
    if (n == 9 || n >= left)
        return 0;
    return utf8_valid((const char *)p, n + 1) ? n + 1 : 0;
}

void utf8_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        size_t n = *p < 0x80 ? 1 : utf8_seq_len(p, left);
        if (n == 0) {
            *p = '?';
            n = 1;
        }
        p += n;
        left -= n;
    }
}

bool utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        unsigned c = *p;
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            if (c == 0)
                return false; /* jansson strings cannot hold NUL */
            p++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if ((size_t)(end - p) <= n)
            return false;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        p += n + 1;
    }
    return true;
}
