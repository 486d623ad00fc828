/* The detach keys of rnx's terminal (cmd_term.h): a sequence typed to leave a job's terminal with
 * the job still running, Docker's ctrl-p ctrl-q by default, set with --detach-keys in Docker's
 * words: keys separated by commas, each a character or ctrl-X (X a letter, or one of @ [ \ ] ^ _).
 * The keys of a sequence begun are held back from the job until it is complete (a detach) or
 * broken (they go to the job with the key that broke it). */
#ifndef JOBLET_TERM_KEYS_H
#define JOBLET_TERM_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#define TERM_KEYS_MAX 16
#define TERM_KEYS_DEFAULT "ctrl-p,ctrl-q"

typedef struct term_keys {
    unsigned char seq[TERM_KEYS_MAX];
    size_t n;                 /* 0: no detach keys */
    size_t matched;           /* how much of seq was typed last, held back */
} term_keys;

/* spec in Docker's words ("" : none); -1 with why (a sentence) when it is not one. */
int term_keys_parse(const char *spec, term_keys *k, char *why, size_t len);
/* Typed bytes in[0, n): what goes to the job is put in out (room for n + TERM_KEYS_MAX bytes),
 * *outn its length. True when the sequence was completed: the user detaches, and what was typed
 * after it is dropped. */
bool term_keys_feed(term_keys *k, const char *in, size_t n, char *out, size_t *outn);

#endif
