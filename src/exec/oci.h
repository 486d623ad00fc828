/* The job spec (spec.h) as an OCI runtime bundle's config.json, for a sandbox runtime
 * (gvisor.h). Pure: builds JSON from the spec and the decisions passed in; it reads no file.
 * JSON stays at this edge: the shim hands the text to runsc and keeps nothing of it. */
#ifndef JOBLET_OCI_H
#define JOBLET_OCI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"

/* What the caller found on disk for the bundle. */
typedef struct oci_inputs {
    const char *rootfs;             /* the bundle's root: empty mount points and the system
                                     * directories' links (gvisor.c makes it) */
    const char *const *sys_dirs;    /* system directories that are directories (not links) and
                                     * exist, bound read-only from system_root (or the host);
                                     * NULL-terminated */
    const char *cgroups_path;       /* the job's cgroup, linux.cgroupsPath; NULL: none */
    const char *hosts;              /* the job's own /etc/hosts, a file beside the bundle
                                     * (isolate.h: mounts_names_text), bound read-only; NULL: none */
    const char *hostname;           /* the same for /etc/hostname */
    const char *resolv;             /* a job on a network: its resolv file (spec_net), bound
                                     * read-only at /etc/resolv.conf; NULL: the tree's */
    const char *netns;              /* a job on a network: the path of the network namespace
                                     * runsc is started in (its veth made there by the shim),
                                     * linux.namespaces' network path; NULL: a new one (none),
                                     * or none at all with network host */
} oci_inputs;

/* The config.json object (OCI runtime spec 1.0): process (argv, env, cwd, uid/gid, no
 * capabilities, no_new_privileges, RLIMIT_NPROC), a read-only root, mounts (system
 * directories, the job's /etc/hosts and /etc/hostname, /work read-write, /tmp tmpfs of
 * tmp_size_mb, /proc, the spec's binds), the spec's device nodes as linux.devices with their
 * major/minor, the job's namespaces (no network namespace with network host; the given one
 * for a job on a network), and the CDI
 * annotation when the job has GPUs. */
json_t *oci_config(const job_spec *s, const oci_inputs *in);

/* The process object of `runsc exec --process` (gvisor.h, gvisor_exec): as config.json's, with
 * the command, environment and working directory given, and "terminal" when tty. */
json_t *oci_exec_process(const job_spec *s, char *const *argv, char *const *env, const char *cwd, bool tty);
/* The sandbox's user namespace. runsc runs the Sentry and its helpers as uid and gid 65534
 * ("nobody") of the user namespace it is started in, and every runsc on the host would share
 * that host uid: anything running as nobody could signal or trace every user's sandbox, and a
 * sandbox escape would land beside all the others. So the shim starts runsc in a user namespace
 * of its own that maps every id to itself except two that swap places: the id runsc runs the
 * sandbox as (oci_sandbox_runs_as) and the job's sandbox id (spec.h, runsc_sandbox_uid). The
 * sandbox then runs as that id on the host, and the gofer, root in the namespace, still reads
 * and writes the job's files as their owners (a job of nobody's own runs as the sandbox id
 * inside, which is nobody outside).
 * With --network=host runsc keeps the sandbox in the user namespace it is started in, as
 * runsc's own uid there, root: the pair is then 0 and the sandbox id, and the shim makes runsc
 * the namespace's root, so runsc, its gofer and its sandbox are all the sandbox id on the host
 * (root's access to files stays: host root is mapped, as the sandbox id); a job running as uid
 * 0 is the sandbox id inside, and host root's files show as the sandbox id's there.
 * OCI_NOBODY: gVisor's sandbox user. */
#define OCI_NOBODY 65534u
/* The id runsc runs the job's sandbox as in the namespace it is started in: OCI_NOBODY, or 0
 * for a job on the host's network. */
uint32_t oci_sandbox_runs_as(const job_spec *s);
/* An id (uid or gid) as the sandbox's user namespace names it (runs_as: oci_sandbox_runs_as). */
uint32_t oci_inside_id(uint32_t id, uint32_t runs_as, uint32_t sandbox_id);
/* The namespace's uid_map (and gid_map) text: at most 5 lines, every id but 4294967295 mapped
 * once. -1 when runs_as is neither 0 nor OCI_NOBODY, when sandbox_id is 0, OCI_NOBODY or
 * 4294967295, or out is too small. */
int oci_id_map(uint32_t runs_as, uint32_t sandbox_id, char *out, size_t len);

#endif
