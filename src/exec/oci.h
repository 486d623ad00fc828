/* The job spec (spec.h) as an OCI runtime bundle's config.json, for a sandbox runtime
 * (gvisor.h). Pure: builds JSON from the spec and the decisions passed in; it reads no file.
 * JSON stays at this edge: the shim hands the text to runsc and keeps nothing of it. */
#ifndef JOBLET_OCI_H
#define JOBLET_OCI_H

#include <jansson.h>

#include "spec.h"

/* What the caller found on disk for the bundle. */
typedef struct oci_inputs {
    const char *rootfs;             /* the bundle's root: empty mount points and the system
                                     * directories' links (gvisor.c makes it) */
    const char *const *sys_dirs;    /* system directories that are directories (not links) and
                                     * exist, bound read-only from system_root (or the host);
                                     * NULL-terminated */
    const char *cgroups_path;       /* the job's cgroup, linux.cgroupsPath; NULL: none */
} oci_inputs;

/* The config.json object (OCI runtime spec 1.0): process (argv, env, cwd, uid/gid, no
 * capabilities, no_new_privileges, RLIMIT_NPROC), a read-only root, mounts (system
 * directories, /work read-write, /tmp tmpfs of tmp_size_mb, /proc, the spec's binds), the
 * spec's device nodes as linux.devices with their major/minor, the job's namespaces (no
 * network namespace with network host), and the CDI annotation when the job has GPUs. */
json_t *oci_config(const job_spec *s, const oci_inputs *in);

#endif
