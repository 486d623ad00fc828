/* The framed form of a job's log (GET /v1/jobs/{id}/logs with Accept: LOGFRAME_CTYPE), shared by
 * joblet, which writes it, and rnx, which reads it. Each frame is a 16-byte header, then its
 * bytes:
 *
 *   byte 0      stream: 1 stdout, 2 stderr, 3 the end (payload: the end record, JSON)
 *   bytes 1-3   0
 *   bytes 4-7   payload length, big-endian
 *   bytes 8-15  the time the job wrote it (ns since the epoch), big-endian
 *
 * like docker's multiplexed log stream plus the time. The payload is the job's bytes as they
 * are: a frame may end mid-line; frames come in the order the shim received them. */
#ifndef JOBLET_LOGFRAME_H
#define JOBLET_LOGFRAME_H

#include <stddef.h>
#include <stdint.h>

#define LOGFRAME_CTYPE "application/vnd.joblet.log-frames"
#define LOGFRAME_HDR 16
#define LOGFRAME_STDOUT 1
#define LOGFRAME_STDERR 2
#define LOGFRAME_END 3

static inline void logframe_put(unsigned char *h, int stream, uint32_t len, int64_t ts_ns)
{
    uint64_t t = (uint64_t)ts_ns;
    h[0] = (unsigned char)stream;
    h[1] = h[2] = h[3] = 0;
    for (int i = 0; i < 4; i++)
        h[4 + i] = (unsigned char)(len >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
        h[8 + i] = (unsigned char)(t >> (56 - 8 * i));
}

static inline void logframe_get(const unsigned char *h, int *stream, uint32_t *len, int64_t *ts_ns)
{
    uint32_t l = 0;
    uint64_t t = 0;
    for (int i = 0; i < 4; i++)
        l = l << 8 | h[4 + i];
    for (int i = 0; i < 8; i++)
        t = t << 8 | h[8 + i];
    *stream = h[0];
    *len = l;
    *ts_ns = (int64_t)t;
}

#endif
