/* WebSocket framing (wsframe.h). */
#include "wsframe.h"

#include <nettle/sha1.h>
#include <stdlib.h>
#include <string.h>

#include "../common/b64.h"

#define DEFAULT_MAX (1u << 20)

static enum wsframe_event bad(wsframe_out *o, int code, const char *why)
{
    o->code = code;
    o->why = why;
    o->p = NULL;
    o->n = 0;
    return WSFRAME_BAD;
}

/* The header's length once its first two bytes are in. */
static size_t hdr_need(const unsigned char *h)
{
    size_t n = 2 + 4; /* (the mask: required from a client; its absence is checked after) */
    unsigned l7 = h[1] & 0x7f;
    if (l7 == 126)
        n += 2;
    else if (l7 == 127)
        n += 8;
    return n;
}

/* The header is whole: checks it, and starts the frame. 0, or an event. */
static enum wsframe_event begin(wsframe_reader *r, wsframe_out *o)
{
    const unsigned char *h = r->hdr;
    r->fin = h[0] & 0x80;
    r->op = h[0] & 0x0f;
    unsigned l7 = h[1] & 0x7f;
    size_t at = 2;
    uint64_t len = l7;
    if (l7 == 126) {
        len = (uint64_t)h[2] << 8 | h[3];
        at = 4;
        if (len < 126)
            return bad(o, WSFRAME_PROTOCOL, "a length not in its shortest form");
    } else if (l7 == 127) {
        len = 0;
        for (int i = 0; i < 8; i++)
            len = len << 8 | h[2 + i];
        at = 10;
        if (len >> 63)
            return bad(o, WSFRAME_PROTOCOL, "a 64-bit length with its top bit set");
        if (len < 65536)
            return bad(o, WSFRAME_PROTOCOL, "a length not in its shortest form");
    }
    memcpy(r->mask, h + at, 4);
    r->mpos = 0;
    r->left = len;
    r->ctl_n = 0;
    if (h[0] & 0x70)
        return bad(o, WSFRAME_PROTOCOL, "reserved bits set (no extension was agreed)");
    bool ctl = r->op & 0x8;
    if (ctl) {
        if (r->op != WSFRAME_OP_CLOSE && r->op != WSFRAME_OP_PING && r->op != WSFRAME_OP_PONG)
            return bad(o, WSFRAME_PROTOCOL, "an unknown control opcode");
        if (!r->fin || len > WSFRAME_CTL_MAX)
            return bad(o, WSFRAME_PROTOCOL, "a control frame fragmented or over 125 bytes");
    } else if (r->op == WSFRAME_TEXT) {
        return bad(o, WSFRAME_UNSUPPORTED, "a text message: the terminal takes binary messages only");
    } else if (r->op == WSFRAME_BINARY) {
        if (r->in_message)
            return bad(o, WSFRAME_PROTOCOL, "a new message before the last one's end");
        r->in_message = !r->fin;
    } else if (r->op == WSFRAME_CONT) {
        if (!r->in_message)
            return bad(o, WSFRAME_PROTOCOL, "a continuation without a message");
        r->in_message = !r->fin;
    } else {
        return bad(o, WSFRAME_PROTOCOL, "an unknown opcode");
    }
    if (!ctl && len > (r->max ? r->max : DEFAULT_MAX))
        return bad(o, WSFRAME_TOO_BIG, "a frame over the bound");
    r->in_frame = true;
    return WSFRAME_NEED;
}

/* A whole control frame. */
static enum wsframe_event control(wsframe_reader *r, wsframe_out *o)
{
    r->in_frame = false;
    r->hdr_n = 0;
    o->p = r->ctl;
    o->n = r->ctl_n;
    if (r->op == WSFRAME_OP_PING)
        return WSFRAME_PING;
    if (r->op == WSFRAME_OP_PONG)
        return WSFRAME_PONG;
    if (r->ctl_n == 1)
        return bad(o, WSFRAME_PROTOCOL, "a close frame of one byte");
    o->code = r->ctl_n >= 2 ? r->ctl[0] << 8 | r->ctl[1] : 1005;
    return WSFRAME_CLOSE;
}

enum wsframe_event wsframe_next(wsframe_reader *r, unsigned char **in, size_t *len, wsframe_out *o)
{
    o->p = NULL;
    o->n = 0;
    for (;;) {
        if (!r->in_frame) {
            if (!*len)
                return WSFRAME_NEED;
            r->hdr[r->hdr_n++] = **in;
            (*in)++;
            (*len)--;
            if (r->hdr_n == 2 && !(r->hdr[1] & 0x80))
                return bad(o, WSFRAME_PROTOCOL, "a client's frame not masked");
            if (r->hdr_n < 2 || r->hdr_n < hdr_need(r->hdr))
                continue;
            enum wsframe_event ev = begin(r, o);
            if (ev != WSFRAME_NEED)
                return ev;
            if (!r->left && r->op & 0x8)
                return control(r, o);
            if (!r->left) { /* an empty data frame: nothing to give */
                r->in_frame = false;
                r->hdr_n = 0;
            }
            continue;
        }
        if (!*len)
            return WSFRAME_NEED;
        size_t k = *len < r->left ? *len : (size_t)r->left;
        unsigned char *p = *in;
        for (size_t i = 0; i < k; i++)
            p[i] ^= r->mask[r->mpos++ & 3];
        *in += k;
        *len -= k;
        r->left -= k;
        bool whole = !r->left;
        if (whole) {
            r->in_frame = false;
            r->hdr_n = 0;
        }
        if (r->op & 0x8) {
            memcpy(r->ctl + r->ctl_n, p, k); /* (begin bounded it to 125) */
            r->ctl_n += k;
            if (whole)
                return control(r, o);
            continue;
        }
        o->p = p;
        o->n = k;
        return WSFRAME_DATA;
    }
}

bool wsframe_take(wsframe_reader *r, unsigned char *raw, size_t n, char *data, size_t *data_n, char *reply,
                  size_t *reply_n, size_t cap, const char **why)
{
    *why = NULL;
    for (;;) {
        wsframe_out o;
        enum wsframe_event ev = wsframe_next(r, &raw, &n, &o);
        unsigned char *d = (unsigned char *)reply + *reply_n;
        if (ev == WSFRAME_NEED)
            return false;
        if (ev == WSFRAME_DATA) {
            memcpy(data + *data_n, o.p, o.n);
            *data_n += o.n;
        } else if (ev == WSFRAME_PING && *reply_n + WSFRAME_HDR_MAX + o.n + 4 <= cap) {
            size_t hn = wsframe_header(d, WSFRAME_OP_PONG, true, o.n);
            memcpy(d + hn, o.p, o.n);
            *reply_n += hn + o.n;
        } else if (ev == WSFRAME_CLOSE || ev == WSFRAME_BAD) {
            if (ev == WSFRAME_BAD)
                *why = o.why;
            if (*reply_n + 4 <= cap)
                *reply_n += wsframe_close(d, ev == WSFRAME_BAD ? o.code : WSFRAME_NORMAL);
            return true;
        }
    }
}

size_t wsframe_header(unsigned char *h, int op, bool fin, uint64_t len)
{
    h[0] = (unsigned char)((fin ? 0x80 : 0) | (op & 0x0f));
    if (len < 126) {
        h[1] = (unsigned char)len;
        return 2;
    }
    if (len < 65536) {
        h[1] = 126;
        h[2] = (unsigned char)(len >> 8);
        h[3] = (unsigned char)len;
        return 4;
    }
    h[1] = 127;
    for (int i = 0; i < 8; i++)
        h[2 + i] = (unsigned char)(len >> (56 - 8 * i));
    return 10;
}

size_t wsframe_close(unsigned char *h, int code)
{
    h[0] = 0x80 | WSFRAME_OP_CLOSE;
    h[1] = 2;
    h[2] = (unsigned char)(code >> 8);
    h[3] = (unsigned char)code;
    return 4;
}

int wsframe_accept(const char *key, char out[29])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    size_t kn = key ? strlen(key) : 0, dn = 0;
    if (kn != 24)
        return -1;
    void *d = b64_decode(key, kn, &dn);
    free(d);
    if (!d || dn != 16)
        return -1;
    struct sha1_ctx c;
    unsigned char dig[SHA1_DIGEST_SIZE];
    sha1_init(&c);
    sha1_update(&c, kn, (const uint8_t *)key);
    sha1_update(&c, sizeof guid - 1, (const uint8_t *)guid);
    sha1_digest(&c, sizeof dig, dig);
    char *b = b64_encode(dig, sizeof dig);
    if (!b || strlen(b) != 28) {
        free(b);
        return -1;
    }
    memcpy(out, b, 29);
    free(b);
    return 0;
}
