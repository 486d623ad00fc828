/* Text output for rnx: tables, times, durations, sizes, command lines. */
#ifndef JOBLET_PRINT_H
#define JOBLET_PRINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* An RFC 3339 time from the API as local "YYYY-MM-DD HH:MM:SS"; "-" for NULL/null,
 * the text itself when it does not parse. */
void fmt_local_time(const char *rfc3339, char *out, size_t outlen);
/* Elapsed time: "0.4s", "12.0s", "3m05s", "2h07m", "3d04h". */
void fmt_elapsed_ms(int64_t ms, char *out, size_t outlen);
/* A whole number of seconds the way a person writes it: "30s", "1h", "1h30m", "2d3h". */
void fmt_seconds(uint64_t s, char *out, size_t outlen);
/* Bytes in binary units, matching the parsers: "512 B", "1.5 KB", "3.0 MB", "2.0 GB". */
void fmt_bytes(uint64_t bytes, char *out, size_t outlen);
/* A megabyte count as given to --max-memory: "512 MB", "8 GB", "1536 MB". */
void fmt_mb(uint64_t mb, char *out, size_t outlen);
/* "SIGKILL" for 9; "signal 77" when the number has no name. */
void fmt_signal(int sig, char *out, size_t outlen);

/* command and args joined as a shell would need them typed (quoted where needed). Frees with free(). */
char *shell_join(const char *command, json_t *args);
/* Copy of s escaped as print_text prints it, cut to at most max characters (UTF-8 aware,
 * "..." marks a cut), so one cell stays on one line. Caller frees. */
char *cell_text(const char *s, size_t max);

/* A table printed with columns padded to their widest cell. */
typedef struct table table;
table *table_new(size_t ncols, const char *const *headers);
/* Copies ncols cells, escaped as print_text prints them; NULL prints as "-". */
void table_add(table *t, const char *const *cells);
void table_print(const table *t, FILE *f);
void table_free(table *t);

/* Lookups on a job object that tolerate missing keys and nulls. */
const char *jstr(json_t *obj, const char *key);          /* NULL when absent/null/not a string */
bool jint(json_t *obj, const char *key, int64_t *out);   /* false when absent/null */

/* Why a terminal job ended, in words: "exited", "killed by signal SIGKILL",
 * "killed: out of memory (memory limit 64 MB)", "stopped: time limit 30s reached", ...
 * Empty when the job has no end_reason. */
void fmt_end_reason(json_t *job, char *out, size_t outlen);
/* The owner (owner_uid) of a job, workflow or volume: its user name on this machine, else the
 * uid; "-" when there is none. */
void fmt_owner(json_t *o, char *out, size_t outlen);

/* Wall time the job ran: ended-started, or now-started while it runs; false when it has not started. */
bool job_elapsed_ms(json_t *job, int64_t *ms);

/* An API object as --json prints it: indented; an empty answer (204) prints as {} so the
 * output always parses. */
void print_json(json_t *v);

/* The key: value block of `rnx job status`. */
/* A job, a job array ("kind": "array") as one object, a task not made yet ("kind": "task"), or
 * several tasks (ID_[3-5]: "tasks"), each as a job. */
void print_job(json_t *job, FILE *f);
/* An array's tasks by state ("2 COMPLETED, 8 RUNNING, 90 QUEUED") from its "array" object. */
void print_array_counts(json_t *arr, char *out, size_t len);
/* Text a user controls, with control characters and bytes that are not UTF-8 escaped (\n,
 * \t, \xNN): what every human-readable output of rnx prints such text with. */
void print_text(FILE *f, const char *s);
/* Text of several lines a user controls (a workflow file): as print_text, but each newline
 * stays one. */
void print_text_lines(FILE *f, const char *s);
/* s as print_text prints it, in a string the caller frees. */
char *text_escape(const char *s);
/* printf to f, with every %s (and %c) argument escaped as print_text prints it; the format's
 * own text is printed as it is. For every output line that holds text a user or joblet
 * controls: names, labels, messages, paths. */
void print_textf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
