/* The framing of interactive streams (termframe.h). */
#include "termframe.h"

#include <string.h>

void termframe_put(unsigned char *h, int ch, uint32_t len)
{
    h[0] = (unsigned char)ch;
    for (int i = 0; i < 4; i++)
        h[1 + i] = (unsigned char)(len >> (24 - 8 * i));
}

void termframe_resize(unsigned char *out, uint16_t rows, uint16_t cols)
{
    termframe_put(out, TERMFRAME_RESIZE, 4);
    out[5] = (unsigned char)(rows >> 8);
    out[6] = (unsigned char)rows;
    out[7] = (unsigned char)(cols >> 8);
    out[8] = (unsigned char)cols;
}

void termframe_exit(unsigned char *out, int32_t code)
{
    uint32_t c = (uint32_t)code;
    termframe_put(out, TERMFRAME_EXIT, 4);
    for (int i = 0; i < 4; i++)
        out[5 + i] = (unsigned char)(c >> (24 - 8 * i));
}

/* Resize and exit frames carry exactly four bytes, gathered before they are told. */
static bool fixed(int ch) { return ch == TERMFRAME_RESIZE || ch == TERMFRAME_EXIT; }

enum termframe_event termframe_next(termframe_reader *r, const char **in, size_t *len, termframe_out *out)
{
    for (;;) {
        if (r->hdr_len < TERMFRAME_HDR) {
            if (!*len)
                return TERMFRAME_NEED;
            size_t take = TERMFRAME_HDR - r->hdr_len < *len ? TERMFRAME_HDR - r->hdr_len : *len;
            memcpy(r->hdr + r->hdr_len, *in, take);
            r->hdr_len += take;
            *in += take;
            *len -= take;
            if (r->hdr_len < TERMFRAME_HDR)
                return TERMFRAME_NEED;
            r->ch = r->hdr[0];
            r->left = (uint32_t)r->hdr[1] << 24 | (uint32_t)r->hdr[2] << 16 | (uint32_t)r->hdr[3] << 8 | r->hdr[4];
            r->small_len = 0;
            if (r->left > TERMFRAME_MAX || (fixed(r->ch) && r->left != 4))
                return TERMFRAME_BAD;
            if (!r->left && !fixed(r->ch)) {
                /* an empty frame (close): told once, with no bytes */
                r->hdr_len = 0;
                *out = (termframe_out){.ch = r->ch, .p = *in, .n = 0};
                return TERMFRAME_DATA;
            }
        }
        if (fixed(r->ch)) {
            size_t take = 4 - r->small_len < *len ? 4 - r->small_len : *len;
            memcpy(r->small + r->small_len, *in, take);
            r->small_len += take;
            *in += take;
            *len -= take;
            if (r->small_len < 4)
                return TERMFRAME_NEED;
            r->hdr_len = 0;
            const unsigned char *s = r->small;
            *out = (termframe_out){.ch = r->ch};
            if (r->ch == TERMFRAME_RESIZE) {
                out->rows = (uint16_t)(s[0] << 8 | s[1]);
                out->cols = (uint16_t)(s[2] << 8 | s[3]);
                return TERMFRAME_SIZE;
            }
            out->code = (int32_t)((uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3]);
            return TERMFRAME_CODE;
        }
        if (!*len)
            return TERMFRAME_NEED;
        size_t take = r->left < *len ? r->left : *len;
        *out = (termframe_out){.ch = r->ch, .p = *in, .n = take};
        *in += take;
        *len -= take;
        r->left -= (uint32_t)take;
        if (!r->left)
            r->hdr_len = 0;
        return TERMFRAME_DATA;
    }
}
