/* The framing of an interactive stream (docs/api.md, "Interactive streams"): what rnx and
 * joblet exchange over a connection upgraded by POST /v1/jobs/{id}/attach, and what joblet and
 * a job's shim exchange over the job's attach socket. Each frame is
 *
 *   byte 0      channel (below)
 *   bytes 1-4   payload length, big-endian
 *   then        the payload
 *
 * Channels: 0 stdin (client → job), 1 stdout and 2 stderr (job → client), 3 resize (client →
 * job: rows, cols, two u16 big-endian), 4 exit (job → client, the last frame: the job's exit
 * code, an i32 big-endian), 5 close (client → job: no more stdin, an empty payload), 6 hello
 * (joblet → shim only: the first frame of each connection joblet makes to a job's shim, one byte
 * of flags, TERMFRAME_HELLO_TYPES when the client asked to type, then who the client is in words;
 * a client's own frames of this channel are not a hello: a shim takes only the first). A payload
 * is at most TERMFRAME_MAX bytes; a peer that sends a longer one, or a resize or exit frame of
 * another length, breaks the stream and is disconnected. Frames of a channel a reader does not
 * know are skipped (later versions may add some). */
#ifndef JOBLET_TERMFRAME_H
#define JOBLET_TERMFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TERMFRAME_HDR 5
#define TERMFRAME_MAX (64u << 10)

enum termframe_channel {
    TERMFRAME_STDIN = 0,
    TERMFRAME_STDOUT = 1,
    TERMFRAME_STDERR = 2,
    TERMFRAME_RESIZE = 3,
    TERMFRAME_EXIT = 4,
    TERMFRAME_CLOSE = 5,
    TERMFRAME_HELLO = 6,
};

#define TERMFRAME_HELLO_TYPES 1 /* the hello's flag: the client asked to type */

/* How joblet's line on channel 2 starts when it closes a terminal that was idle for
 * jobs.terminal_idle_timeout_s (no exit frame follows): rnx tells that end from a lost
 * connection by it. */
#define TERMFRAME_IDLE_NOTE "\r\n[joblet: nothing typed or written for "

/* The header of a frame of len bytes on channel ch, into h (TERMFRAME_HDR bytes). */
void termframe_put(unsigned char *h, int ch, uint32_t len);
/* A resize frame (header and payload, 9 bytes) into out. */
void termframe_resize(unsigned char *out, uint16_t rows, uint16_t cols);
/* An exit frame (header and payload, 9 bytes) into out. */
void termframe_exit(unsigned char *out, int32_t code);

/* Reads frames from a byte stream given in pieces of any size. */
typedef struct termframe_reader {
    unsigned char hdr[TERMFRAME_HDR];
    size_t hdr_len;
    int ch;
    uint32_t left;        /* payload bytes of the current frame still to come */
    unsigned char small[4]; /* a resize or exit payload, gathered */
    size_t small_len;
} termframe_reader;

/* What termframe_next found. */
enum termframe_event {
    TERMFRAME_NEED,       /* all of the input is used: give more */
    TERMFRAME_DATA,       /* *ch, and a piece of its payload at *p, *n bytes (a frame's payload
                           * may come in several pieces; an empty frame gives one empty piece) */
    TERMFRAME_SIZE,       /* a whole resize frame: *rows, *cols */
    TERMFRAME_CODE,       /* a whole exit frame: *code */
    TERMFRAME_BAD,        /* the stream is broken (a length over the bound, a resize or exit
                           * frame of the wrong length): stop reading it */
};

typedef struct termframe_out {
    int ch;
    const char *p;
    size_t n;
    uint16_t rows, cols;
    int32_t code;
} termframe_out;

/* Takes bytes from *in (*len of them), advancing both, until it has something to say. */
enum termframe_event termframe_next(termframe_reader *r, const char **in, size_t *len, termframe_out *out);

#endif
