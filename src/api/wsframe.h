/* WebSocket framing (RFC 6455), the server's side: the console's terminal (docs/api.md,
 * "Interactive streams", "Over a WebSocket") carries the channel frames of common/termframe.h,
 * one in each binary message. This reads what a browser sends (every frame masked, lengths in
 * their 7-bit, 16-bit and 64-bit forms, a payload bounded, control frames whole and at most 125
 * bytes), writes frame headers (a server's frames are not masked), and makes the handshake's
 * Sec-WebSocket-Accept. Pure: no I/O, tested in tests/unit/test_wsframe.c, fuzzed by
 * tests/fuzz/fuzz_wsframe.c. */
#ifndef JOBLET_WSFRAME_H
#define JOBLET_WSFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wsframe_op {
    WSFRAME_CONT = 0x0,
    WSFRAME_TEXT = 0x1,
    WSFRAME_BINARY = 0x2,
    WSFRAME_OP_CLOSE = 0x8,
    WSFRAME_OP_PING = 0x9,
    WSFRAME_OP_PONG = 0xA,
};

/* Close codes (RFC 6455 §7.4.1) */
#define WSFRAME_NORMAL 1000
#define WSFRAME_PROTOCOL 1002
#define WSFRAME_UNSUPPORTED 1003
#define WSFRAME_TOO_BIG 1009

#define WSFRAME_HDR_MAX 10    /* a server's header: no mask */
#define WSFRAME_CTL_MAX 125

/* Reads a client's frames from bytes given in pieces of any size. Zero it to start. */
typedef struct wsframe_reader {
    uint64_t max;              /* a data frame's payload at most (0: 1 MiB) */
    unsigned char hdr[14];
    size_t hdr_n;
    bool in_frame;             /* the header is read: the payload follows */
    bool in_message;           /* a binary message began and is not finished (continuations may follow) */
    int op;                    /* the current frame's */
    bool fin;
    uint64_t left;             /* payload bytes still to come */
    unsigned char mask[4];
    unsigned mpos;
    unsigned char ctl[WSFRAME_CTL_MAX];
    size_t ctl_n;
} wsframe_reader;

enum wsframe_event {
    WSFRAME_NEED,      /* the input is used up: give more */
    WSFRAME_DATA,      /* a piece of a binary message's payload, unmasked in place: p, n */
    WSFRAME_PING,      /* a whole ping: its payload p, n (answer with a pong of it) */
    WSFRAME_PONG,      /* a whole pong (nothing to do) */
    WSFRAME_CLOSE,     /* the peer closes: code (1005 when it gave none) */
    WSFRAME_BAD,       /* broken or refused: close with code, why says what */
};

typedef struct wsframe_out {
    const unsigned char *p;
    size_t n;
    int code;
    const char *why;
} wsframe_out;

/* Takes bytes from *in (*len of them, unmasked in place), advancing both, until it has
 * something to say. After WSFRAME_BAD or WSFRAME_CLOSE stop reading. */
enum wsframe_event wsframe_next(wsframe_reader *r, unsigned char **in, size_t *len, wsframe_out *out);

/* What a browser sent (n bytes at raw, unmasked in place), as a relay takes it: the payloads of
 * its binary messages appended to data (*data_n bytes; the caller leaves room for n more), a
 * pong for each ping and a close for a close (1000) or a refusal (its code) appended to reply
 * (*reply_n bytes of cap; a pong only where it fits with 4 bytes to spare: a later ping is
 * answered anyway, RFC 6455 §5.5.3). True once the WebSocket is closed: read no more from it,
 * and end once reply is sent. *why: a refusal's reason, else NULL. */
bool wsframe_take(wsframe_reader *r, unsigned char *raw, size_t n, char *data, size_t *data_n, char *reply,
                  size_t *reply_n, size_t cap, const char **why);

/* A server's frame header (fin set) for op and a payload of len bytes into h (WSFRAME_HDR_MAX
 * bytes); its length. */
size_t wsframe_header(unsigned char *h, int op, bool fin, uint64_t len);

/* A close frame with code (and no reason) into h (4 bytes); its length. */
size_t wsframe_close(unsigned char *h, int code);

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key: base64(SHA-1(key + the RFC's GUID)) into out
 * (29 bytes with the NUL). -1 when key is not the base64 of 16 bytes (24 characters). */
int wsframe_accept(const char *key, char out[29]);

#endif
