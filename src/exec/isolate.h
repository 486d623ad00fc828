/* The isolation steps the job's init runs inside its new namespaces, in this order:
 * ns_setup → mounts_prepare (plan, then execute) → cg_enter + cgroup namespace →
 * mounts_pivot → (hold for the host's step hook, when the spec has one) → fork the command →
 * caps_drop_and_setuid → seccomp_apply → exec.
 * Each step reports the failing path. */
#ifndef JOBLET_ISOLATE_H
#define JOBLET_ISOLATE_H

#include <linux/filter.h>
#include <seccomp.h>

#include "../common/err.h"
#include "spec.h"

/* Hostname; loopback up when the job has its own network namespace. */
int ns_setup(const job_spec *s, jerr *e);
/* Builds the job's root on s->root_mount (its /dev nodes are made here, before the job's
 * device filter applies to the init), then pivots into it. */
int mounts_prepare(const job_spec *s, jerr *e);
/* What every job gets besides its spec's own mounts and nodes (NULL-terminated): the system
 * directories, read-only from the host or the runtime's root, and the standard /dev nodes. */
extern const char *const mounts_system_dirs[];
extern const char *const mounts_dev_nodes[];
int mounts_pivot(const job_spec *s, jerr *e);
/* The job's /etc/hosts text (localhost on 127.0.0.1 and ::1, the hostname on 127.0.0.1) and
 * /etc/hostname text, made for each job: mounts_prepare binds them over the tree's (or, where
 * its /etc has no hosts file, lays them over its /etc), gvisor.c hands them to runsc. -1 when
 * the hostname is not one. */
int mounts_names_text(const char *hostname, char *hosts, size_t hlen, char *name, size_t nlen, jerr *e);
/* Drops the bounding and ambient sets, switches to uid/gid with gid and extra (nextra, at most
 * SPEC_GROUPS_MAX: a Slurm task's groups; none for joblet's own jobs) as its groups, clears
 * every capability, sets no_new_privs. Allocates nothing once caps_last_cap() has been called
 * (vfork child). */
int caps_drop_and_setuid(uid_t uid, gid_t gid, const gid_t *extra, size_t nextra, jerr *e);
/* The kernel's highest capability number, read once per process (and its forks). */
int caps_last_cap(void);
/* Default profile: blocks syscalls that reach outside the job (mount, bpf, kexec, module
 * loading, namespaces, keyrings, ptrace, clock setting, …) with EPERM. Built before
 * the fork so the command only loads it. */
scmp_filter_ctx seccomp_default_profile(bool kernel_aio, jerr *e);
/* The profile compiled to a classic BPF program once per process (a zygote compiles it
 * before forking, so no job pays libseccomp's compiler); prog->filter is malloc'd. The
 * program also refuses syscalls newer than the profile (ENOSYS), which the ctx above does
 * not: load this one. kernel_aio: io_setup let through (jobs.kernel_aio, seccomp.c). */
int seccomp_default_program(struct sock_fprog *prog, bool kernel_aio, jerr *e);
int seccomp_apply(const struct sock_fprog *prog, jerr *e);

/* The job's init (PID 1 of the job): sets up isolation, starts the command, reaps and
 * forwards signals, and reports the command's wait status on status_fd. Never returns. */
/* The shim and the init talk both ways (a job with a terminal always holds: its shim waits for the
 * first attach, shim_term.h):
 *   init → shim  sync_w: the setup error as text, or EOF when the command was exec'd; with a
 *                step hook, first one NUL byte: "held", everything is ready but the command.
 *   shim → init  hold_r (only with a step hook): one 'g' once the hook succeeded; EOF (the
 *                hook failed, the shim gave up) and the init exits without starting anything.
 * Without a step hook there is no hold pipe and no wait: the start path is unchanged. */
struct jobinit_fds {
    int out_w, err_w;   /* job's stdout / stderr (-1 with a terminal) */
    int in_r;           /* job's stdin: -1 /dev/null (or the terminal), else a pipe from the shim */
    int console_w;      /* -1: none; else the job has a terminal: the init makes it after the pivot
                         * (console.h) and sends its master here, before it holds */
    int sync_w;         /* setup errors; closed on successful exec */
    int status_w;       /* raw wait status of the command, 4 bytes */
    int hold_r;         /* -1: none; else the init holds before the command until 'g' */
};
/* The shim's command-line argument (the job directory, a host path): the init blanks it so
 * /proc/1/cmdline inside the job does not show where the job lives on the host. */
extern char *jobinit_hide_arg;
_Noreturn void jobinit_run(const job_spec *s, const cg_job *cg, const struct sock_fprog *filter,
                           const struct jobinit_fds *fds);

#endif
