/* Error object passed down as the last parameter (crun style).
 * A function that fails fills it and returns -1; the caller adds context or reports it. */
#ifndef JOBLET_ERR_H
#define JOBLET_ERR_H

#include <stdarg.h>

typedef struct jerr {
    int code;           /* errno-like, or a JERR_* value */
    int http;           /* HTTP status the API should answer with, 0 = 500 */
    char field[64];     /* the input field at fault, "" when none */
    char msg[768];      /* a sentence a person can act on */
} jerr;

/* Stable machine-readable codes used in API error objects. */
#define JERR_INVALID    "invalid_argument"
#define JERR_NOT_FOUND  "not_found"
#define JERR_AMBIGUOUS  "ambiguous_id"
#define JERR_CONFLICT   "conflict"
#define JERR_FORBIDDEN  "forbidden"
#define JERR_TOO_LARGE  "too_large"
#define JERR_INTERNAL   "internal"

int jerr_set(jerr *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int jerr_sys(jerr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Validation error on a named field: answered with HTTP 400. */
int jerr_field(jerr *e, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int jerr_http(jerr *e, int http, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Not now, and nothing was done: the same request may be sent again as it is (an account being
 * looked up, the database locked by another process, too many requests waiting). Answered 503
 * with Retry-After (api/reply.c), which rnx follows for a while (cli/client.c), as sbatch does
 * "Slurm temporarily unable to accept job, sleeping and retrying". code EAGAIN. A 503 that a
 * retry would not mend (a feature this machine lacks) is a jerr_http. */
int jerr_busy(jerr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same as jerr_field for a field read here, not of a request (a node file, a setting of
 * rnx): no HTTP status. */
int jerr_input(jerr *e, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *jerr_code_name(const jerr *e);

#endif
