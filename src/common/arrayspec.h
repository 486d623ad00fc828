/* Job arrays' task lists in Slurm's syntax (sbatch --array): "0-99", "1,3,7", "0-15:4",
 * "0-9,20-29:2", each optionally ending in "%N" (at most N tasks at once). The same text names
 * some tasks of an existing array ("ID_[3-5]", "ID_7"; docs/batch.md). Pure: no daemon state,
 * no syscall; a task list is a few ranges however many tasks it holds, so a 100,000-task array
 * costs what its text does. */
#ifndef JOBLET_ARRAYSPEC_H
#define JOBLET_ARRAYSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Task ids run from 0 to ARRAYSPEC_MAX_ID (Slurm's MaxArraySize tops out at 4,000,001). */
#define ARRAYSPEC_MAX_ID 4000000
/* Ranges in one list (a comma-separated list of single ids counts one range each). */
#define ARRAYSPEC_MAX_RANGES 256
/* The bytes a list of ARRAYSPEC_MAX_RANGES ranges takes at most ("lo-hi:step," of 7-digit ids,
 * 24 each): what arrayspec_format writes, and what the list of a reference ID_[LIST] may be
 * (Slurm's `scancel 123_[1,5,9,...]`: 256 ids of 7 digits are 2 KB), so that a list that can be
 * parsed can also be named; past it arrayspec_split_ref refuses it naming the bound. */
#define ARRAYSPEC_TEXT_MAX 6400

typedef struct arrayspec_range {
    uint32_t lo, hi, step;     /* lo, lo+step, ... up to hi (hi is one of them: normalised) */
} arrayspec_range;

/* A list: its ranges last, so that one kept for long can be a block of its header and its n
 * ranges only (arrayspec_dup: 40 bytes for "0-99", where a whole one is 3 KB). Every function
 * here reads r[0..n) only, so takes either; one kept so is never copied by value nor grows
 * (arrayspec_copy makes a whole one of it to change). */
typedef struct arrayspec {
    size_t n;
    uint64_t count;            /* tasks in all */
    uint32_t min, max;         /* the lowest and highest task id */
    uint32_t throttle;         /* %N: at most N at once; 0 = no limit */
    arrayspec_range r[ARRAYSPEC_MAX_RANGES];
} arrayspec;

/* The empty list (n 0): what a list kept as NULL reads as. */
extern const arrayspec arrayspec_empty;
/* The bytes a list of n ranges takes as a block of its own (arrayspec_dup). */
size_t arrayspec_size(size_t n);
/* A copy of a (whole or a block) as a block of its header and its ranges (arrayspec_size(a->n)),
 * to free with free(); NULL when memory is out. */
arrayspec *arrayspec_dup(const arrayspec *a);
/* a (whole or a block) into the whole list out: its header and its n ranges. */
void arrayspec_copy(arrayspec *out, const arrayspec *a);

/* Reads a task list ("0-99%8"). field names the value in messages ("array"); throttle_ok: "%N"
 * is accepted (an array's spec) or not (a reference to some of its tasks). Refused: an empty or
 * malformed list, an id above ARRAYSPEC_MAX_ID, a range whose end is below its start, a step of
 * 0, a task named twice, more than ARRAYSPEC_MAX_RANGES ranges, %0. The message starts with
 * "FIELD: " and says what is accepted. */
int arrayspec_parse(const char *s, const char *field, bool throttle_ok, arrayspec *out, jerr *e);
/* The k-th task id (0 <= k < count), in the order the list gives them. */
uint32_t arrayspec_task(const arrayspec *a, uint64_t k);
/* The place of task id t in the list's order (arrayspec_task's k), or -1 when the list does not
 * hold it. O(ranges). */
int64_t arrayspec_index(const arrayspec *a, uint32_t t);
/* Whether the list holds task id t. */
bool arrayspec_has(const arrayspec *a, uint32_t t);
/* The range of the list that holds task id t, or NULL. O(ranges). */
const arrayspec_range *arrayspec_range_of(const arrayspec *a, uint32_t t);
/* How many tasks a range holds. */
static inline uint64_t arrayspec_range_count(const arrayspec_range *r) { return (uint64_t)(r->hi - r->lo) / r->step + 1; }
/* How many of the list's tasks lie in the k-th and later places (k <= count) that the other list
 * `sub` also holds: what a cancel of `sub` takes from tasks not made yet. O(ranges x ranges)
 * arithmetic, never one task at a time. */
uint64_t arrayspec_count_from(const arrayspec *a, uint64_t k, const arrayspec *sub);
/* The first id that two progressions share, lo1, lo1+s1, ... up to hi1 and lo2, lo2+s2, ... up to
 * hi2 (steps from 1; none when lo > hi), or -1 when they share none. O(log step) arithmetic. */
int64_t arrayspec_first_common(int64_t lo1, int64_t s1, int64_t hi1, int64_t lo2, int64_t s2, int64_t hi2);
/* The list in its canonical text ("0-99:2,150%8"); the throttle too when with_throttle. */
void arrayspec_format(const arrayspec *a, bool with_throttle, char *out, size_t len);
/* The same (no throttle) for a message: where it does not fit in len, whole items only and ",..."
 * after them (arrayspec_format cuts it mid-number: "3055000-" read as a range never named). */
void arrayspec_format_cut(const arrayspec *a, char *out, size_t len);
/* An array's %N given on its own (the API's array_throttle, rnx job update --throttle): a whole
 * number (number: it was one) from 0 (no limit) to ARRAYSPEC_MAX_ID, what a list's %N takes.
 * 0, or -1 with e naming label (the field or the flag; text: the value as typed, or NULL). */
int arrayspec_throttle_check(int64_t n, bool number, const char *label, const char *text, jerr *e);
/* A job reference of the form BASE_TASKS ("3f2a_7", "sweep_[3-5]"): BASE copied into base (at
 * most blen - 1 bytes) and the task list parsed into *tasks; 1 when ref has that form, 0 when
 * it does not (a plain reference), -1 with e set when it has it but the list is invalid (or
 * longer than ARRAYSPEC_TEXT_MAX bytes, or of more than ARRAYSPEC_MAX_RANGES ranges: field "tasks"). */
int arrayspec_split_ref(const char *ref, char *base, size_t blen, arrayspec *tasks, jerr *e);

#endif
