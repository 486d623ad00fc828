/* The processes that still hold a GPU's device node when it is released (joblet-gpu-scrub,
 * before it zeroes the GPU): a descriptor of it in any thread's descriptor table
 * (/proc/PID/task/TID/fd, a thread may have unshared its table) or a mapping of it
 * (/proc/PID/map_files), matched by the node's device number (st_rdev), so that a node made
 * anywhere (a job's private /dev, a descriptor passed with SCM_RIGHTS) is found. A table shared
 * by several threads (CLONE_FILES, as threads normally are) is read once: kcmp(KCMP_FILES) tells
 * a thread's table from those already read; without kcmp (ENOSYS) each thread's is read. */
#ifndef JOBLET_HOLDERS_H
#define JOBLET_HOLDERS_H

#include <stdbool.h>
#include <sys/types.h>

#define HOLDERS_MAX 64

typedef struct gpu_holder {
    pid_t pid;
    uid_t uid;          /* real uid */
    uid_t euid;         /* effective uid: 0 = a privileged process */
    char comm[32];      /* /proc/PID/comm, for messages only */
    char exe[256];      /* /proc/PID/exe, empty when unreadable */
    char cgroup[256];   /* the cgroup2 path ("0::" line of /proc/PID/cgroup), empty when none */
    char mps_pipe[512]; /* its CUDA_MPS_PIPE_DIRECTORY, empty when none (a name, not a proof:
                         * anyone may set it) */
} gpu_holder;

/* Every process but this one and its parent (joblet, whose NVML health monitor holds every GPU's
 * node) holding the character device rdev; at most max stored in out, the count of all found
 * returned. */
int holders_find(dev_t rdev, gpu_holder *out, int max);

/* Process pid, described in out when it (still) holds rdev. */
bool holders_find_one(pid_t pid, dev_t rdev, gpu_holder *out);

/* The descriptor tables read so far by this process (a table shared by several threads counts
 * once), for tests and measurements. */
unsigned long holders_tables_read(void);

#endif
