/* api/wsframe.c: a client's frames (masking, the three length forms, control frames, bounds,
 * fragments), the server's headers and the handshake's accept value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/wsframe.h"

/* A client's frame: header with the mask, payload masked. Its length. */
static size_t client_frame(unsigned char *out, int b0, const unsigned char *p, uint64_t n, int form)
{
    static const unsigned char mask[4] = {0x12, 0x34, 0x56, 0x78};
    size_t at = 0;
    out[at++] = (unsigned char)b0;
    if (form == 0) {
        out[at++] = (unsigned char)(0x80 | n);
    } else if (form == 1) {
        out[at++] = 0x80 | 126;
        out[at++] = (unsigned char)(n >> 8);
        out[at++] = (unsigned char)n;
    } else {
        out[at++] = 0x80 | 127;
        for (int i = 0; i < 8; i++)
            out[at++] = (unsigned char)(n >> (56 - 8 * i));
    }
    memcpy(out + at, mask, 4);
    at += 4;
    for (uint64_t i = 0; p && i < n; i++)
        out[at + i] = p[i] ^ mask[i & 3];
    return at + (p ? n : 0);
}

/* Everything from buf fed in pieces of step bytes: the data gathered into got, the last event. */
static enum wsframe_event feed(wsframe_reader *r, unsigned char *buf, size_t len, size_t step, unsigned char *got,
                               size_t *got_n, wsframe_out *last)
{
    enum wsframe_event ev = WSFRAME_NEED;
    *got_n = 0;
    for (size_t at = 0; at < len;) {
        size_t k = len - at < step ? len - at : step;
        unsigned char *in = buf + at;
        size_t left = k;
        for (;;) {
            wsframe_out o;
            ev = wsframe_next(r, &in, &left, &o);
            if (ev == WSFRAME_NEED)
                break;
            if (ev == WSFRAME_DATA) {
                memcpy(got + *got_n, o.p, o.n);
                *got_n += o.n;
                continue;
            }
            *last = o;
            if (ev == WSFRAME_BAD || ev == WSFRAME_CLOSE || ev == WSFRAME_PING)
                return ev;
        }
        at += k;
    }
    return ev;
}

static void lengths(void **st)
{
    (void)st;
    static const size_t sizes[] = {0, 1, 125, 126, 127, 65535, 65536, 70000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        unsigned char *p = malloc(n + 1), *buf = malloc(n + 14), *got = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            p[i] = (unsigned char)(i * 7 + 3);
        int form = n < 126 ? 0 : n < 65536 ? 1 : 2;
        size_t len = client_frame(buf, 0x82, p, n, form);
        for (size_t step = 1; step <= len; step = step * 3 + 1) {
            unsigned char *copy = malloc(len);
            memcpy(copy, buf, len);
            wsframe_reader r = {.max = 1 << 20};
            size_t got_n;
            wsframe_out last;
            assert_int_equal(feed(&r, copy, len, step, got, &got_n, &last), WSFRAME_NEED);
            assert_int_equal(got_n, n);
            assert_memory_equal(got, p, n);
            free(copy);
        }
        free(p);
        free(buf);
        free(got);
    }
}

/* One client frame fed whole to a fresh reader (data frames of at most max bytes): the event
 * that ends it, its out in *o. */
static enum wsframe_event one(int b0, const unsigned char *p, uint64_t n, int form, uint64_t max, wsframe_out *o)
{
    static unsigned char buf[512], got[512];
    size_t got_n;
    wsframe_reader r = {.max = max};
    size_t len = client_frame(buf, b0, n <= 256 ? p : NULL, n, form);
    return feed(&r, buf, len, len, got, &got_n, o);
}

static void not_shortest_or_unmasked(void **st)
{
    (void)st;
    const unsigned char *abc = (const unsigned char *)"abc";
    wsframe_out o;
    assert_int_equal(one(0x82, abc, 3, 1, 0, &o), WSFRAME_BAD); /* 3 in the 16-bit form */
    assert_int_equal(o.code, WSFRAME_PROTOCOL);
    assert_int_equal(one(0x82, abc, 3, 2, 0, &o), WSFRAME_BAD); /* and in the 64-bit one */
    assert_int_equal(one(0xC2, abc, 3, 0, 0, &o), WSFRAME_BAD); /* RSV1 */
    assert_int_equal(one(0x83, abc, 3, 0, 0, &o), WSFRAME_BAD); /* a reserved opcode */
    assert_int_equal(one(0x81, abc, 3, 0, 0, &o), WSFRAME_BAD); /* text */
    assert_int_equal(o.code, WSFRAME_UNSUPPORTED);
    wsframe_reader r = {0};
    unsigned char plain[] = {0x82, 0x03, 'a', 'b', 'c'}, got[8];
    size_t got_n;
    assert_int_equal(feed(&r, plain, sizeof plain, 5, got, &got_n, &o), WSFRAME_BAD);
    assert_int_equal(o.code, WSFRAME_PROTOCOL);
}

static void bounds(void **st)
{
    (void)st;
    wsframe_out o;
    assert_int_equal(one(0x82, NULL, 1001, 1, 1000, &o), WSFRAME_BAD); /* the header alone is enough */
    assert_int_equal(o.code, WSFRAME_TOO_BIG);
    assert_int_equal(one(0x82, NULL, UINT64_MAX >> 1, 2, 1000, &o), WSFRAME_BAD);
    assert_int_equal(one(0x82, NULL, UINT64_MAX, 2, 0, &o), WSFRAME_BAD); /* the top bit */
    assert_int_equal(o.code, WSFRAME_PROTOCOL);
}

static void control_frames(void **st)
{
    (void)st;
    unsigned char buf[600], got[600], p[200];
    size_t got_n;
    wsframe_out o;
    memset(p, 'x', sizeof p);
    /* a ping between a message's fragments: its payload, and the message whole */
    size_t len = client_frame(buf, 0x02, (const unsigned char *)"ab", 2, 0);
    len += client_frame(buf + len, 0x89, (const unsigned char *)"hey", 3, 0);
    size_t after = len;
    len += client_frame(buf + len, 0x80, (const unsigned char *)"cd", 2, 0);
    wsframe_reader r = {0};
    assert_int_equal(feed(&r, buf, after, 1, got, &got_n, &o), WSFRAME_PING);
    assert_int_equal(o.n, 3);
    assert_memory_equal(o.p, "hey", 3);
    size_t n1 = got_n;
    unsigned char got2[16];
    assert_int_equal(feed(&r, buf + after, len - after, 1, got2, &got_n, &o), WSFRAME_NEED);
    assert_int_equal(n1 + got_n, 4);
    assert_false(r.in_message);
    /* a control frame over 125 bytes, or fragmented */
    assert_int_equal(one(0x89, p, 126, 1, 0, &o), WSFRAME_BAD);
    assert_int_equal(one(0x09, p, 3, 0, 0, &o), WSFRAME_BAD);
    /* close with a code (in pieces); without one; of one byte */
    unsigned char code[] = {0x03, 0xe8, 'b', 'y', 'e'};
    r = (wsframe_reader){0};
    len = client_frame(buf, 0x88, code, sizeof code, 0);
    assert_int_equal(feed(&r, buf, len, 2, got, &got_n, &o), WSFRAME_CLOSE);
    assert_int_equal(o.code, 1000);
    assert_int_equal(one(0x88, NULL, 0, 0, 0, &o), WSFRAME_CLOSE);
    assert_int_equal(o.code, 1005);
    assert_int_equal(one(0x88, code, 1, 0, 0, &o), WSFRAME_BAD);
    /* a continuation without a message; a new message inside one */
    assert_int_equal(one(0x80, p, 2, 0, 0, &o), WSFRAME_BAD);
    r = (wsframe_reader){0};
    len = client_frame(buf, 0x02, p, 2, 0);
    len += client_frame(buf + len, 0x82, p, 2, 0);
    assert_int_equal(feed(&r, buf, len, len, got, &got_n, &o), WSFRAME_BAD);
}

/* As the relay takes a browser's bytes: data gathered, a ping answered with its payload, a
 * close answered with 1000, a refusal with its code; a pong left out where it does not fit. */
static void take(void **st)
{
    (void)st;
    unsigned char buf[256];
    char data[256], reply[64];
    size_t data_n = 0, reply_n = 0;
    const char *why;
    wsframe_reader r = {0};
    size_t len = client_frame(buf, 0x82, (const unsigned char *)"\x00\x00\x00\x00\x01x", 6, 0);
    len += client_frame(buf + len, 0x89, (const unsigned char *)"p", 1, 0);
    assert_false(wsframe_take(&r, buf, len, data, &data_n, reply, &reply_n, sizeof reply, &why));
    assert_null(why);
    assert_int_equal(data_n, 6);
    assert_memory_equal(data, "\x00\x00\x00\x00\x01x", 6);
    assert_int_equal(reply_n, 3);
    assert_memory_equal(reply, "\x8a\x01p", 3);
    len = client_frame(buf, 0x89, (const unsigned char *)"p", 1, 0); /* no room: no pong */
    assert_false(wsframe_take(&r, buf, len, data, &data_n, reply, &reply_n, 8, &why));
    assert_int_equal(reply_n, 3);
    len = client_frame(buf, 0x88, (const unsigned char *)"\x03\xe9", 2, 0);
    assert_true(wsframe_take(&r, buf, len, data, &data_n, reply, &reply_n, sizeof reply, &why));
    assert_null(why);
    assert_int_equal(reply_n, 7);
    assert_memory_equal(reply + 3, "\x88\x02\x03\xe8", 4);
    r = (wsframe_reader){0};
    reply_n = 0;
    len = client_frame(buf, 0x81, (const unsigned char *)"t", 1, 0);
    assert_true(wsframe_take(&r, buf, len, data, &data_n, reply, &reply_n, sizeof reply, &why));
    assert_non_null(why);
    assert_memory_equal(reply, "\x88\x02\x03\xeb", 4);
}

static void headers_and_accept(void **st)
{
    (void)st;
    unsigned char h[WSFRAME_HDR_MAX];
    assert_int_equal(wsframe_header(h, WSFRAME_BINARY, true, 125), 2);
    assert_int_equal(h[0], 0x82);
    assert_int_equal(h[1], 125);
    assert_int_equal(wsframe_header(h, WSFRAME_BINARY, true, 126), 4);
    assert_int_equal(h[1], 126);
    assert_int_equal(h[2] << 8 | h[3], 126);
    assert_int_equal(wsframe_header(h, WSFRAME_CONT, false, 65536), 10);
    assert_int_equal(h[0], 0x00);
    assert_int_equal(h[1], 127);
    assert_int_equal(h[7], 1);
    assert_int_equal(h[8], 0);
    assert_int_equal(wsframe_close(h, 1009), 4);
    assert_int_equal(h[0], 0x88);
    assert_int_equal(h[2] << 8 | h[3], 1009);
    char acc[29];
    /* RFC 6455 §1.3's example */
    assert_int_equal(wsframe_accept("dGhlIHNhbXBsZSBub25jZQ==", acc), 0);
    assert_string_equal(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert_int_equal(wsframe_accept("short", acc), -1);
    assert_int_equal(wsframe_accept("dGhlIHNhbXBsZSBub25jZQ!=", acc), -1);
    assert_int_equal(wsframe_accept(NULL, acc), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lengths),
        cmocka_unit_test(not_shortest_or_unmasked),
        cmocka_unit_test(bounds),
        cmocka_unit_test(control_frames),
        cmocka_unit_test(headers_and_accept),
        cmocka_unit_test(take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
