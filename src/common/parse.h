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
/* Bytes (sizes, and rates in bytes per second): "1048576", "512K", "10MB", "1G" (binary units). */
int parse_bytes(const char *field, const char *s, uint64_t *bytes, jerr *e);
/* CPU list "0-3", "1,3,5", "0-1,4": fills mask (bits 0..max_cpus-1) and normalises into out. */
#define CPU_MAX 1024
int parse_cpu_list(const char *field, const char *s, uint8_t mask[CPU_MAX / 8], jerr *e);
int format_cpu_list(const uint8_t mask[CPU_MAX / 8], char *out, size_t outlen);
/* Durations: "30s", "30min", "2h30m", "1d", "90" (seconds). */
int parse_duration(const char *field, const char *s, uint64_t *seconds, jerr *e);
/* A whole number from lo to hi, all of s (digits only: no sign, no space; at most 18 of them). */
bool parse_whole(const char *s, long long lo, long long hi, long long *out);
/* Slurm's time limits (sbatch --time): "MIN", "MIN:SEC", "H:MIN:SEC", "D-H", "D-H:MIN",
 * "D-H:MIN:SEC"; 0, -1, UNLIMITED or INFINITE for none. Seconds, or -1 for none (a zero time
 * too); -2 when malformed. */
long long parse_slurm_time(const char *s);
/* A time limit or timeout as rnx takes one everywhere (--max-runtime, rnx job wait --timeout):
 * parse_duration's words, 90, 30min, 2h30m, 1d (a bare number stays seconds, as everywhere in rnx,
 * not Slurm's minutes), or, holding ':' or '-', Slurm's forms above, 2:00:00, 1-12, 1:00 (sbatch
 * --time, scontrol update TimeLimit=); none (0, UNLIMITED) is refused. */
int parse_time_limit(const char *field, const char *s, uint64_t *seconds, jerr *e);
int parse_rfc3339(const char *s, time_t *out);
/* "KEY=VALUE" with KEY a portable environment name. key gets a copy of the name. */
int parse_env_pair(const char *field, const char *s, char *key, size_t keylen, const char **value, jerr *e);
bool env_key_valid(const char *key);
/* A person's name in a certificate (its CN) or a local account's name as joblet takes them:
 * 1 to max - 1 letters, digits, '.', '_', '-', not starting with '-' or '.'. */
bool parse_user_name_ok(const char *s, size_t max);
/* A certificate's serial in the one text every file and message of joblet uses: lowercase hex,
 * no separators, no leading zero bytes (DER's sign byte). From the certificate's bytes: */
void parse_serial_bytes(const unsigned char *b, size_t n, char *out, size_t len);
/* and as written by a person or in revoked.txt: hex of either case, "0x" before it or ':'
 * between bytes allowed, at most 20 bytes. 0, or -1 when s is not one. len: 41 at least. */
int parse_serial(const char *s, char *out, size_t len);
/* A signal as Slurm's scancel --signal and docker kill --signal take it: a name with or without
 * "SIG", of either case ("USR1", "SIGTERM", "hup"), or its number 1-31. Only the signals a job's
 * init can pass on to every process of the job are taken (exec/jobinit.c): not SIGSTOP, SIGTSTP,
 * SIGTTIN, SIGTTOU (rnx job suspend freezes a job) nor SIGCHLD; SIGKILL is, for its caller to
 * decide. */
int parse_signal(const char *field, const char *s, int *sig, jerr *e);
/* Whether parse_signal takes sig (the shim checks joblet's word with it too). */
bool parse_signal_sendable(int sig);
/* Slurm's sbatch --signal=[B:]SIG[@SECONDS]: the signal a job's command gets SECONDS (1-65535,
 * default 60) before its run-time limit ends it. "B:" (Slurm's "to the batch shell") is taken
 * and means what joblet does anyway: the command. SIGKILL is refused (a shorter limit is what
 * that would be). The canonical text, "SIGUSR1@90", into out when out is not NULL. */
#define PARSE_SIGNAL_WARN_DEFAULT_S 60
#define PARSE_SIGNAL_WARN_MAX_S 65535
int parse_signal_warning(const char *field, const char *s, int *sig, uint32_t *secs, char *out, size_t len, jerr *e);
/* The signal's name as parse_signal takes it and the API writes it ("SIGUSR1"), into out. */
const char *parse_signal_name(int sig, char *out, size_t len);
/* Non-negative integer without sign, spaces or trailing junk. */
int parse_u64(const char *s, uint64_t *out);

#endif
