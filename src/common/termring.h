/* The last of a terminal's output, kept for whoever attaches next (docs/interactive.md,
 * "Re-attaching"): a ring of TERMRING_CAP bytes that a job's shim (exec/shim_term.c) fills with
 * everything the job writes to its terminal, and replays to a new client before anything else.
 * Once it has wrapped, the replay starts after the first line end it holds, so that it does not
 * begin in the middle of a line, an escape sequence or a UTF-8 character. Pure logic. */
#ifndef JOBLET_TERMRING_H
#define JOBLET_TERMRING_H

#include <stdbool.h>
#include <stddef.h>

#define TERMRING_CAP (64u << 10) /* the bytes replayed at most: several screenfuls of a busy terminal */

typedef struct termring {
    char buf[TERMRING_CAP];
    size_t head;              /* where the next byte goes */
    size_t len;               /* bytes held, at most TERMRING_CAP */
    bool wrapped;             /* bytes were dropped from the front */
} termring;

/* Adds output (only its last TERMRING_CAP bytes stay when it is longer). */
void termring_add(termring *r, const char *p, size_t n);
/* What a new client is sent: at most two pieces, in order (*n2 may be 0); nothing when empty. */
void termring_view(const termring *r, const char **p1, size_t *n1, const char **p2, size_t *n2);

#endif
