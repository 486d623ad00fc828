/* "Did you mean ...?": the closest of a few known words to one that was mistyped (a flag, a
 * command, a config key), by edit distance. Pure. */
#ifndef JOBLET_SUGGEST_H
#define JOBLET_SUGGEST_H

#include <stddef.h>

/* The optimal string alignment distance (Levenshtein with adjacent transpositions) between
 * a and b, compared byte by byte and case-insensitively; capped at 255. */
unsigned suggest_distance(const char *a, const char *b);

/* The candidate closest to word when it is close enough to be what was meant, else NULL:
 * at most 1 edit for words up to 4 characters, 2 up to 8, 3 beyond; or word is a prefix of
 * exactly one candidate at least 2 characters long ("--gpu-mem" → "--gpu-memory"). A tie
 * between two candidates at the best distance suggests neither. n candidates, NULLs skipped. */
const char *suggest_closest(const char *word, const char *const *cands, size_t n);

#endif
