/* Edit distance and the closest candidate (suggest.h). */
#include "suggest.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#define SUGGEST_MAXLEN 64   /* longer words are never typos of a flag or command */

unsigned suggest_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > SUGGEST_MAXLEN || lb > SUGGEST_MAXLEN)
        return 255;
    /* three rows of the dynamic programme: i-2, i-1, i */
    unsigned d[3][SUGGEST_MAXLEN + 1];
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned *cur = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];
        cur[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            unsigned v = prev[j] + 1;             /* deletion */
            if (cur[j - 1] + 1 < v)
                v = cur[j - 1] + 1;               /* insertion */
            if (prev[j - 1] + cost < v)
                v = prev[j - 1] + cost;           /* substitution */
            if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) && prev2[j - 2] + 1 < v)
                v = prev2[j - 2] + 1;             /* transposition */
            cur[j] = v;
        }
    }
    unsigned r = d[la % 3][lb];
    return r > 255 ? 255 : r;
}

const char *suggest_closest(const char *word, const char *const *cands, size_t n)
{
    size_t lw = strlen(word);
    unsigned limit = lw <= 4 ? 1 : lw <= 8 ? 2 : 3;
    const char *best = NULL, *prefix_of = NULL;
    unsigned best_d = 255;
    bool tie = false;
    size_t nprefix = 0;
    for (size_t i = 0; i < n; i++) {
        if (!cands[i])
            continue;
        if (!strcmp(cands[i], word))
            continue;   /* the word itself is known: nothing to suggest */
        if (lw >= 2 && strncmp(cands[i], word, lw) == 0) {
            prefix_of = cands[i];
            nprefix++;
        }
        unsigned d = suggest_distance(word, cands[i]);
        if (d < best_d) {
            best_d = d;
            best = cands[i];
            tie = false;
        } else if (d == best_d && best && strcmp(best, cands[i]) != 0) {
            tie = true;
        }
    }
    if (best && best_d <= limit && !tie)
        return best;
    if (nprefix == 1)
        return prefix_of;
    return NULL;
}
