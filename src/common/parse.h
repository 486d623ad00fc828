/* Pure parsers for user input, shared by rnx and joblet so both accept and refuse exactly
 * the same text. Each returns 0 or -1 with a message naming the field and what is accepted. */
#ifndef JOBLET_PARSE_H
#define JOBLET_PARSE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "err.h"

/* Megabytes: "4096", "4096MB", "4096M", "8GB", "8G", "1TB" (binary units: 1GB = 1024MB). */
int parse_size_mb(const char *field, const char *s, uint64_t *mb, jerr *e);
/* Bytes per second: "1048576", "512K", "10MB", "1G" (binary units). */
int parse_bytes(const char *field, const char *s, uint64_t *bytes, jerr *e);
/* CPU list "0-3", "1,3,5", "0-1,4": fills mask (bits 0..max_cpus-1) and normalises into out. */
#define CPU_MAX 1024
int parse_cpu_list(const char *field, const char *s, uint8_t mask[CPU_MAX / 8], jerr *e);
int format_cpu_list(const uint8_t mask[CPU_MAX / 8], char *out, size_t outlen);
/* Durations: "30s", "30min", "2h30m", "1d", "90" (seconds). */
int parse_duration(const char *field, const char *s, uint64_t *seconds, jerr *e);
int parse_rfc3339(const char *s, time_t *out);
/* "KEY=VALUE" with KEY a portable environment name. key gets a copy of the name. */
int parse_env_pair(const char *field, const char *s, char *key, size_t keylen, const char **value, jerr *e);
bool env_key_valid(const char *key);
/* Non-negative integer without sign, spaces or trailing junk. */
int parse_u64(const char *s, uint64_t *out);

#endif
