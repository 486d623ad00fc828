/* Detach keys (term_keys.h). */
#include "term_keys.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int term_keys_parse(const char *spec, term_keys *k, char *why, size_t len)
{
    *k = (term_keys){0};
    const char *p = spec;
    while (*p) {
        size_t n = strcspn(p, ",");
        unsigned char key;
        if (n == 1) {
            key = (unsigned char)p[0];
        } else if (n == 6 && !strncasecmp(p, "ctrl-", 5) && (isalpha((unsigned char)p[5]) || strchr("@[\\]^_", p[5]))) {
            key = (unsigned char)(toupper((unsigned char)p[5]) & 0x1f); /* ctrl-a 1 ... ctrl-_ 31, ctrl-@ 0 */
        } else {
            snprintf(why, len, "'%.*s' is not a key: give a character or ctrl-X (X a letter or one of @[\\]^_), "
                               "separated by commas, e.g. ctrl-p,ctrl-q", (int)(n > 40 ? 40 : n), p);
            return -1;
        }
        if (k->n == TERM_KEYS_MAX) {
            snprintf(why, len, "more than %d keys", TERM_KEYS_MAX);
            return -1;
        }
        k->seq[k->n++] = key;
        p += n;
        if (*p == ',') {
            p++;
            if (!*p) {
                snprintf(why, len, "a key is missing after the last comma");
                return -1;
            }
        }
    }
    return 0;
}

bool term_keys_feed(term_keys *k, const char *in, size_t n, char *out, size_t *outn)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (!k->n) {
            out[o++] = (char)c;
            continue;
        }
        if (c == k->seq[k->matched]) {
            if (++k->matched == k->n) {
                k->matched = 0;
                *outn = o;
                return true;
            }
            continue;
        }
        /* broken: what was held goes to the job, and this key may begin the sequence again */
        memcpy(out + o, k->seq, k->matched);
        o += k->matched;
        k->matched = 0;
        if (c == k->seq[0])
            k->matched = k->n == 1 ? 0 : 1;
        if (c == k->seq[0] && k->n == 1) {
            *outn = o;
            return true;
        }
        if (c != k->seq[0])
            out[o++] = (char)c;
    }
    *outn = o;
    return false;
}
