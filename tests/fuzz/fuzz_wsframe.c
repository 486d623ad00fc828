/* A browser's WebSocket frames (src/api/wsframe.c), as joblet reads them for the console's
 * terminal. The first byte picks the bound on a data frame and the size of the pieces the rest
 * is given in (a socket gives any). Besides not crashing: data never comes out larger than what
 * went in, a control frame's payload is at most 125 bytes, a refusal carries a close code and
 * its reason, and nothing is read after a close or a refusal; wsframe_take (the relay's way)
 * stays within its buffers. */
#include "api/wsframe.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) { return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    wsframe_reader r = {.max = (uint64_t)(data[0] & 0x0f) << 12};
    size_t step = (size_t)(data[0] >> 4) * 7 + 1;
    unsigned char *buf = malloc(size);
    if (!buf)
        abort();
    memcpy(buf, data + 1, size - 1);
    size_t total = size - 1, given = 0;
    uint64_t out = 0;
    for (size_t at = 0; at < total;) {
        size_t k = total - at < step ? total - at : step;
        unsigned char *in = buf + at;
        size_t left = k;
        for (;;) {
            wsframe_out o;
            enum wsframe_event ev = wsframe_next(&r, &in, &left, &o);
            FUZZ_ASSERT(left <= k, "more left than given");
            if (ev == WSFRAME_NEED) {
                FUZZ_ASSERT(!left, "asks for more with input left");
                break;
            }
            if (ev == WSFRAME_DATA) {
                out += o.n;
                FUZZ_ASSERT(o.p >= buf && o.p + o.n <= buf + total, "data outside the input");
                continue;
            }
            if (ev == WSFRAME_PING || ev == WSFRAME_PONG)
                FUZZ_ASSERT(o.n <= WSFRAME_CTL_MAX, "a control payload over 125 bytes");
            if (ev == WSFRAME_BAD)
                FUZZ_ASSERT(o.code >= 1000 && o.why && o.why[0], "a refusal without a code or a reason");
            if (ev == WSFRAME_BAD || ev == WSFRAME_CLOSE)
                goto done;
        }
        at += k;
        given += k;
    }
done:
    FUZZ_ASSERT(out <= total, "more data out than in");
    (void)given;
    /* as the relay takes it, all at once: data at most what came, replies within their room */
    wsframe_reader r2 = {.max = r.max};
    memcpy(buf, data + 1, size - 1);
    char *got = malloc(total + 1), reply[300];
    size_t got_n = 0, reply_n = 0;
    const char *why;
    if (!got)
        abort();
    bool closed = wsframe_take(&r2, buf, total, got, &got_n, reply, &reply_n, sizeof reply, &why);
    FUZZ_ASSERT(got_n <= total && reply_n <= sizeof reply, "wsframe_take went past its room");
    FUZZ_ASSERT(!why || closed, "a refusal that does not close");
    free(got);
    free(buf);
    return 0;
}
