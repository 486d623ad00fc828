/* The last of a terminal's output (termring.h). */
#include "termring.h"

#include <string.h>

void termring_add(termring *r, const char *p, size_t n)
{
    if (n >= TERMRING_CAP) { /* only its last TERMRING_CAP bytes stay */
        if (n > TERMRING_CAP || r->len)
            r->wrapped = true;
        p += n - TERMRING_CAP;
        n = TERMRING_CAP;
        r->head = r->len = 0;
    }
    while (n) {
        size_t piece = TERMRING_CAP - r->head < n ? TERMRING_CAP - r->head : n;
        memcpy(r->buf + r->head, p, piece);
        r->head = (r->head + piece) % TERMRING_CAP;
        if (r->len + piece > TERMRING_CAP)
            r->wrapped = true;
        r->len = r->len + piece > TERMRING_CAP ? TERMRING_CAP : r->len + piece;
        p += piece;
        n -= piece;
    }
}

void termring_view(const termring *r, const char **p1, size_t *n1, const char **p2, size_t *n2)
{
    size_t start = (r->head + TERMRING_CAP - r->len) % TERMRING_CAP, len = r->len;
    if (r->wrapped) {
        /* from the first line end on: the bytes before it are the tail of a line cut */
        for (size_t i = 0; i < len; i++)
            if (r->buf[(start + i) % TERMRING_CAP] == '\n') {
                start = (start + i + 1) % TERMRING_CAP;
                len -= i + 1;
                break;
            }
    }
    size_t first = TERMRING_CAP - start < len ? TERMRING_CAP - start : len;
    *p1 = r->buf + start;
    *n1 = first;
    *p2 = r->buf;
    *n2 = len - first;
}
