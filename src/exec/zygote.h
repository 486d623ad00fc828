/* A pre-started shim process that forks a shim per job instead of joblet exec'ing one.
 * Why: on a VM every exec pays the dynamic loader and glibc's cpuid probing (each cpuid traps
 * to the hypervisor) — about a tenth of all the CPU a trivial job costs (docs/performance.md).
 * A fork of this small process is a ready shim. Protocol on a SOCK_SEQPACKET pair:
 *   joblet → zygote: the job directory + SCM_RIGHTS [notify pipe, spec memfd, device filter?]
 *   zygote → joblet: int32 pid of the new shim, or -errno
 * The zygote exits when joblet's end of the socket closes; shims it forked carry on. */
#ifndef JOBLET_ZYGOTE_H
#define JOBLET_ZYGOTE_H

#include <sys/types.h>

#include "../common/err.h"

/* Serves requests on sock until EOF; in each forked child, calls run(dir) and exits with it. */
int zygote_serve(int sock, int (*run)(const char *dir));

/* joblet's side. */
typedef struct zygote {
    int sock;
    pid_t pid;
} zygote;

/* cgroup_root lets the zygote read the cgroup layout once for all its shims. */
int zygote_start(zygote *z, const char *shim_path, const char *cgroup_root, jerr *e);
/* posix_spawn of the shim binary with arg (a job directory, or "--zygote") and arg2 (or
 * NULL): fds 0-2 from stdin_fd (or /dev/null) and /dev/null; notify_fd, spec_fd and filter_fd
 * at their numbers in shim.h when >= 0; SIGTERM and SIGCHLD blocked. */
int shim_spawn(const char *shim_path, const char *arg, const char *arg2, int stdin_fd, int notify_fd,
               int spec_fd, int filter_fd, pid_t *pid, jerr *e);
/* The same with stdio[3] (a job's given stdin, stdout, stderr: the spec's stdio_given) at
 * SHIM_STDIO_FD and the two after it. */
int shim_spawn_stdio(const char *shim_path, const char *arg, int notify_fd, int spec_fd, int filter_fd,
                     const int stdio[3], pid_t *pid, jerr *e);
/* Forks a shim for dir with notify_fd, spec_fd and filter_fd (or -1) at their numbers. */
pid_t zygote_fork(zygote *z, const char *dir, int notify_fd, int spec_fd, int filter_fd, jerr *e);
void zygote_stop(zygote *z);

#endif
