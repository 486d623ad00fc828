#include "b64.h"

#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *b64_encode(const void *data, size_t len)
{
    const unsigned char *in = data;
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    size_t o = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = alphabet[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = 0;
    return out;
}

static int val(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* The decoding of s into out (NULL: only counted): its length, or -1 when s is malformed. */
static long long walk(const char *s, size_t slen, unsigned char *out)
{
    if (slen % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < slen; i += 4) {
        int a = val(s[i]), b = val(s[i + 1]);
        int last = i + 4 == slen;
        int c = (last && s[i + 2] == '=') ? -2 : val(s[i + 2]);
        int d = (last && s[i + 3] == '=') ? -2 : val(s[i + 3]);
        if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2))
            return -1;
        if (out)
            out[o] = (unsigned char)(a << 2 | b >> 4);
        o++;
        if (c >= 0) {
            if (out)
                out[o] = (unsigned char)((b & 15) << 4 | c >> 2);
            o++;
            if (d >= 0) {
                if (out)
                    out[o] = (unsigned char)((c & 3) << 6 | d);
                o++;
            }
        }
    }
    return (long long)o;
}

void *b64_decode(const char *s, size_t slen, size_t *outlen)
{
    if (slen % 4)
        return NULL;
    unsigned char *out = malloc(b64_decoded_max(slen));
    if (!out)
        return NULL;
    long long n = walk(s, slen, out);
    if (n < 0) {
        free(out);
        return NULL;
    }
    *outlen = (size_t)n;
    return out;
}

int b64_decoded_len(const char *s, size_t slen, size_t *outlen)
{
    long long n = walk(s, slen, NULL);
    if (n < 0)
        return -1;
    *outlen = (size_t)n;
    return 0;
}
