/* An MPS server's pipe directory (core/gpu_mps.c, docs/gpu.md "Sharing a GPU"): a memory file
 * system of its own on the host, mounted on <state_dir>/mps/<gpu>/pipe when the GPU's server
 * starts and unmounted when it stops. Every shared tenant of the GPU has it read-write at
 * /tmp/nvidia-mps (spec_gpu.c), so it must be none of the state directory's disk: a tenant
 * writing there filled the disk joblet's database lives on, past the job's /work quota and
 * /tmp limit. MPS keeps only its named pipes and UNIX sockets there (a few per server and
 * client, no data), so it is small in bytes and in entries; what a tenant writes is charged
 * to its own memory cgroup, as tmpfs pages are. Mode 1777, as /tmp: tenants run as their own
 * uids and add their clients' entries, and none may rename or remove another's, nor the
 * server's. Made fresh for each server, so that nothing a former tenant left is there. */
#ifndef JOBLET_EXEC_MPSDIR_H
#define JOBLET_EXEC_MPSDIR_H

#include <stdbool.h>

#include "../common/err.h"

/* Its bounds: MPS's own entries fit many times over; more is a tenant's, and refused. */
#define MPSDIR_SIZE "4m"
#define MPSDIR_INODES 1024

/* Mounts a new, empty pipe directory on dir (an existing directory of root's, whose parent no
 * tenant can write); whatever was mounted there before is unmounted first. */
int mpsdir_mount(const char *dir, jerr *e);
/* Unmounts every file system mounted on dir (a server's, or those a killed daemon left); one
 * still in use (a server slow to quit holds its pipes open) is detached, and goes with its last
 * user. 0 when nothing is left mounted there, nothing having been is fine. */
int mpsdir_unmount(const char *dir, jerr *e);
/* Whether a file system is mounted on dir (its device differs from its parent's). */
bool mpsdir_mounted(const char *dir);

#endif
