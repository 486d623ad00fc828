/* Small helpers over jansson for strict request parsing. */
#ifndef JOBLET_JSONX_H
#define JOBLET_JSONX_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"

/* Refuses any key of obj not in allowed (NULL-terminated), naming it. */
int jx_only_keys(json_t *obj, const char *const *allowed, const char *where, jerr *e);
/* Optional typed getters: absent or null leaves *out untouched and returns 0. */
int jx_str(json_t *obj, const char *key, const char **out, jerr *e);
int jx_u64(json_t *obj, const char *key, uint64_t min, uint64_t max, uint64_t *out, jerr *e);
/* Adds a string or JSON null. */
void jx_set_str_or_null(json_t *obj, const char *key, const char *s);
void jx_set_time_or_null(json_t *obj, const char *key, int64_t ms);
bool utf8_valid(const char *s, size_t len);
/* Replaces every byte that is not part of valid UTF-8 (or is NUL) with '?', in place, so the
 * text can go into JSON: error messages quote user input, which may be any bytes. */
void utf8_sanitize(char *s);

#endif
