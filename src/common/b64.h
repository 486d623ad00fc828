#ifndef JOBLET_B64_H
#define JOBLET_B64_H

#include <stddef.h>

/* Standard alphabet with padding. Returns a malloc'd NUL-terminated string. */
char *b64_encode(const void *data, size_t len);
/* Returns a malloc'd buffer and its length, or NULL on malformed input (strict: no spaces). */
void *b64_decode(const char *s, size_t slen, size_t *outlen);
/* The length b64_decode would give s, without decoding it: 0, or -1 on malformed input. */
int b64_decoded_len(const char *s, size_t slen, size_t *outlen);
/* Upper bound of the decoded size of slen characters. */
static inline size_t b64_decoded_max(size_t slen) { return slen / 4 * 3 + 3; }

#endif
