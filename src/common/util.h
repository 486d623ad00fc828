#ifndef JOBLET_UTIL_H
#define JOBLET_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <stdlib.h>
#include <unistd.h>

#include "err.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Wall clock in nanoseconds / milliseconds since the epoch; monotonic in nanoseconds and in
 * milliseconds. */
int64_t now_ns(void);
int64_t now_ms(void);
int64_t mono_ns(void);
int64_t mono_ms(void);
/* "2026-11-22T10:00:00.123Z" from milliseconds; ns variant keeps microseconds. */
void format_ms(int64_t ms, char *out, size_t outlen);
void format_ns_us(int64_t ns, char *out, size_t outlen);
int parse_ms(const char *s, int64_t *ms);

int mkdir_p(const char *path, mode_t mode, jerr *e);
/* Reads a whole small file into a NUL-terminated buffer (caller frees). */
char *read_file(const char *path, size_t *len);
/* Fds 0, 1 and 2 open: each one closed opened on /dev/null (the daemon's first step). Started
 * with one closed, the first file the daemon opened took it: its log (stderr) went into the
 * database, a client's connection or a job's descriptor, and a child spawned with `out` at 0-2
 * lost it to spawn_fds's own redirections. 0, or -1 with errno. */
int std_fds_open(void);
/* Starts path with argv (environ as the environment), its stdin /dev/null, its stdout and stderr
 * out, its fd 3 fd3 (when >= 0; no other fd but those not close-on-exec), no signal blocked nor ignored:
 * 0 with *pid and *pidfd (readable when it exits), or -1 with errno and nothing left behind.
 * posix_spawn, never a fork of the caller: a fork of the daemon copies its page tables, which
 * grow with the jobs kept, and makes each of its pages fault again at its next write. */
int spawn_fds(const char *path, char *const argv[], int out, int fd3, pid_t *pid, int *pidfd);
/* The same with stdout and stderr one pipe: 0 with *pid, *pidfd (readable when it exits) and *out (the pipe's reading end,
 * close-on-exec, non-blocking: read it when it has exited; a child that fills it waits), or -1
 * with errno and nothing left behind. The daemon's helpers (a GPU scrub, scontrol). */
int spawn_piped(const char *path, char *const argv[], pid_t *pid, int *pidfd, int *out);
/* Runs path with argv, input (len bytes) as its stdin, and waits for it, at most timeout_ms
 * (then it is killed): what it wrote to stdout and stderr together, up to outlen - 1 bytes,
 * NUL-terminated, in out. Returns its wait status, or -1 (errno; ETIMEDOUT when it was killed
 * for the time). For short helpers whose answer is needed now. */
int run_input(const char *path, char *const argv[], const char *input, size_t len, int timeout_ms, char *out,
              size_t outlen);
/* Writes a whole file. WF_ATOMIC goes through a temp file + rename, so readers see all or
 * nothing; WF_DURABLE adds an fsync, for records that must survive a power loss rather than
 * only a crash of a process. write_file_atomic is both. */
#define WF_ATOMIC 1u
#define WF_DURABLE 2u
int write_file_opt(const char *path, const void *data, size_t len, mode_t mode, unsigned flags, jerr *e);
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, jerr *e);
int write_string(const char *path, const char *s);   /* for sysfs/cgroupfs files, again after EINTR; -1 + errno */
/* Writes the n bytes at p to fd, again after EINTR and short writes: how many were written, n
 * or fewer with errno set when a write failed (a write of nothing: EIO). Allocates nothing. */
size_t write_all(int fd, const void *p, size_t n);
/* Removes a directory tree of any depth without following symlinks or crossing mount points
 * (what lies deeper than a bound is moved up into the top directory first: util.c). */
int rm_rf(const char *path);
/* rm_rf until mono_ns() reaches until_ns (0: to the end), but not before at_least entries are
 * removed (a small tree goes whole, however busy the machine): 1 when path is gone, 0 when time
 * ran out first (a later call goes on with what is left), -1 on an error (errno). moved numbers
 * the directories moved up into the top, across calls (a name never tried twice). */
int rm_rf_some(const char *path, int64_t until_ns, unsigned long at_least, unsigned long *moved);
void uuid_v4(char out[37]);
/* The length (2 or 3) of the UTF-8 character at p when a terminal or a reader takes it as a
 * control rather than as text, else 0, with its code point in *cp: the C1 controls U+0080 to
 * U+009F (U+009B is CSI in xterm, U+0085 is NEL), the line and paragraph separators U+2028 and
 * U+2029, and the bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E,
 * U+200F, U+202A to U+202E, U+2066 to U+2069) that reorder what is shown. Every printer that
 * escapes ASCII's controls escapes these too (issue 25). p is NUL-terminated. */
size_t utf8_control_len(const unsigned char *p, uint32_t *cp);
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
/* realloc that aborts when memory is gone, as xmalloc does (n bytes; 0 frees nothing). */
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* A new string printed as printf prints (abort when out of memory, as the others). */
char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int set_cloexec_nonblock(int fd);
/* Whether n more descriptors (at most 64) can be opened now: fd 0 dup'ed n times, then closed.
 * The loop's thread opens most of joblet's files; others (NSS look-ups, the metrics server's)
 * open a few now and then: the answer holds for what the loop opens next, less a small margin. */
bool fds_available(int n);
/* Field n of /proc/PID/stat as proc(5) numbers them (4: the parent's pid; 22: the start time), a
 * number; -1 when it cannot be read. */
int64_t proc_stat_field(pid_t pid, int n);
/* The real uid of a process (its /proc/PID/status "Uid:" line; no lock of its memory is taken), -1
 * when it cannot be read. */
int64_t proc_status_uid(pid_t pid);
/* Start time of a process (field 22 of /proc/PID/stat), 0 when it is gone. Guards pid reuse. */
uint64_t proc_start_time(pid_t pid);

#endif
