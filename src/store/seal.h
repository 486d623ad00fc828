/* Sealing secrets at rest (seal.c): the database never holds a job's secret_env in clear. A
 * key of the state directory (root-only file, made once) seals each value with libsodium's
 * crypto_secretbox (XSalsa20-Poly1305, a fresh nonce each time); a change to a sealed value is
 * detected when it is opened. */
#ifndef JOBLET_SEAL_H
#define JOBLET_SEAL_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/err.h"

typedef struct seal_key seal_key;

/* Reads the key at path; when there is none, makes one there (mode 0600) if make, else fails
 * with e->code ENOENT (values sealed with a lost key: the caller says so, db.c). */
seal_key *seal_key_open(const char *path, bool make, jerr *e);
void seal_key_free(seal_key *k);
/* text -> "v1:" base64(nonce | box); the caller frees. */
char *seal_text(const seal_key *k, const char *text);
/* The text sealed in s (the caller frees), or NULL and why (not sealed by this key, damaged). */
char *seal_open_text(const seal_key *k, const char *s, jerr *e);

#endif
