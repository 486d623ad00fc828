/* The sandbox a runtime build runs in (sandbox.c): a job-like box for a trusted admin's
 * build, not for untrusted code. Own mount, PID, IPC and UTS namespaces; the host's network
 * (it fetches packages from the mirror); a private /tmp; rlimits and a low CPU and I/O
 * priority, so a build does not starve the jobs; everything inside dies with the box. */
#ifndef JOBLET_SANDBOX_H
#define JOBLET_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

#define SANDBOX_KEEP_MAX 4

/* A host directory the box works in: the box's /tmp hides the host's, so each is mounted
 * under it, at /tmp/<as>. */
typedef struct sandbox_keep {
    const char *path;
    const char *as;
} sandbox_keep;

typedef struct sandbox_cfg {
    const char *hostname;     /* the box's hostname */
    sandbox_keep keep[SANDBOX_KEEP_MAX];
    size_t nkeep;
    uint64_t tmp_size_mb;     /* its private /tmp (tmpfs) */
    uint64_t fsize_max;       /* RLIMIT_FSIZE: no file written inside grows past this */
    uint64_t nofile;          /* RLIMIT_NOFILE */
    int nice;                 /* CPU priority, 0..19 */
} sandbox_cfg;

/* Enters the box. Returns 0 in its first process, PID 1 of its PID namespace, which should
 * run the work (sandbox_run) and exit with its result. The calling process stays outside as
 * the box's keeper: it waits for PID 1 and exits with its status (it never returns), and
 * when the keeper is killed, PID 1 and with it everything in the box is killed too.
 * -1 with e set when the box cannot be made. */
int sandbox_enter(const sandbox_cfg *c, jerr *e);

/* Inside the box: runs argv (PATH searched) with envp, stdin from in_fd (-1: /dev/null),
 * stdout to out_fd (-1: the box's stdout), stderr to the box's stderr; as PID 1 it reaps
 * every orphan meanwhile. Returns the exit status (128 + signal when killed), -1 when it
 * could not start (e set). */
int sandbox_run(char *const argv[], char *const envp[], int in_fd, int out_fd, jerr *e);

#endif
