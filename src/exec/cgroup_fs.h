/* Small file helpers of the cgroup code: cgroup.c, cgroup_v1.c and cgroup_v2.c only; not for
 * other callers. */
#ifndef JOBLET_CGROUP_FS_H
#define JOBLET_CGROUP_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

/* "dir/file" into out; -1 with errno ENAMETOOLONG when it does not fit. */
int cg_file_path(char *out, size_t outlen, const char *dir, const char *file);
/* A decimal number followed by whitespace or the end of the string. */
int cg_parse_num(const char *s, uint64_t *out);
/* Contents of dir/file (caller frees), NULL with errno when unreadable. */
char *cg_read(const char *dir, const char *file);
int cg_write(const char *dir, const char *file, const char *value, jerr *e);
bool cg_has_file(const char *dir, const char *file);
/* Whole file as one number; -1 when missing or not a number. */
int cg_read_u64(const char *dir, const char *file, uint64_t *out);
/* Value of the "key N" line of a flat keyed file (cpu.stat, memory.events, ...). */
int cg_read_keyed(const char *dir, const char *file, const char *key, uint64_t *out);

#endif
