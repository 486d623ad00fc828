/* A job under gVisor (docs/sandbox.md): the shim renders the job spec as an OCI bundle in the
 * job's directory (oci.h) and runs `runsc run` on it, inside the job's cgroup, so that the
 * sandbox and its gofer are limited and accounted as the job's processes (on a cgroup v1 or
 * hybrid host runsc's own cgroup code is not used: --ignore-cgroups). Stop and kill go through
 * `runsc kill`. The shim stays the owner: logs, status.json and re-adoption are as for a
 * native job. */
#ifndef JOBLET_GVISOR_H
#define JOBLET_GVISOR_H

#include <stdbool.h>
#include <sys/types.h>

#include "../common/err.h"
#include "cgroup.h"
#include "isolate.h"
#include "spec.h"

/* <runsc root>/bundles/<id>: config.json and rootfs/ (mount points and the system directories'
 * links), on the memory file system joblet mounts on runsc's root (isolation.c: the config holds
 * the job's secrets); <job_dir>/bundle-config.json: the same config with the environment's names
 * only. */
int gvisor_bundle_write(const job_spec *s, const cg_job *cg, jerr *e);
/* What must precede runsc's run of the command, called with the sandbox's network namespace
 * (netns, a /proc path): a job on a network gets its veth there (the shim's net_up), and the
 * shim waits for joblet's word that the start is committed (shim.h: SHIM_GO); -1 with e, saying
 * what failed (the network named), when the command must not run. */
typedef int (*gvisor_ready)(void *arg, const char *netns, jerr *e);
/* Forks `runsc ... run --bundle <job_dir>/bundle <id>` with stdout/stderr on fds' pipes, in
 * the job's cgroup, in a user namespace of its own (oci.h) and a network namespace of its own
 * owned by it (but with --network=host), where runsc's control socket is out of other users'
 * reach; runsc kill and delete from this process enter it. before_run(before_arg, ...) runs
 * before runsc does (a job on a network (s->net) has that namespace equipped then); runsc is
 * started with --network=sandbox and its netstack takes over the job's eth0 (its addresses and
 * routes). Errors before the exec are written to
 * fds->sync_w (closed by the exec, as for a native job's init). Returns the child's pid, or
 * -1. */
pid_t gvisor_spawn(const job_spec *s, const cg_job *cg, const struct jobinit_fds *fds, gvisor_ready before_run,
                   void *before_arg, jerr *e);
/* `runsc kill [--all] <id> <sig>`, waited for. */
int gvisor_kill(const job_spec *s, int sig, bool all);
/* `runsc delete --force <id>`: the container's state under runsc's root, after it ended; and
 * the bundle. */
void gvisor_delete(const job_spec *s);
/* runsc's wait status as the command's: runsc exits with 128 + N for a container killed by
 * signal N; that is read back as the signal when joblet sent one (stop, kill, time limit) or
 * the memory limit killed something (oom), else kept as the exit code the command gave. */
int gvisor_command_status(int runsc_status, bool signal_expected);
/* True when runsc itself failed (exit 128 and an error in <job_dir>/runsc.log, its --log: it could
 * not start the sandbox or the command, or the sandbox broke down): its last error in msg. A
 * command that exits 128 leaves no error there. */
bool gvisor_failure(const job_spec *s, int runsc_status, char *msg, size_t len);

/* `rnx job exec` into a job under gVisor (exec_main.c): `runsc exec` asks the job's sandbox to
 * start the process, which the Sentry runs beside the job's own (its PID namespace, root, mounts,
 * network), as the job's user (oci_exec_process: no capability, no_new_privileges). */
typedef struct gvisor_exec_fds {
    int process;              /* the process object (oci_exec_process), a memfd */
    int pid_file;             /* an empty memfd: runsc writes the process's pid there once it
                               * runs (--internal-pid-file: the sandbox's pid, as `runsc kill
                               * --pid` takes it; --pid-file would be runsc's own) */
    int log;                  /* an empty memfd: runsc's own log, JSON lines (its errors) */
    int in, out, err;         /* the process's stdin, stdout, stderr: runsc hands these to the
                               * Sentry; a host terminal's slave makes it the process's terminal */
} gvisor_exec_fds;
/* A job is RUNNING to joblet once runsc run started; its sandbox takes a moment more (tens of ms)
 * to run the command, and runsc exec refuses a container that is not running yet: this waits
 * for runsc to call it running, at most GVISOR_START_WAIT_S, or until the job's init (its pidfd)
 * ends. -1 with e when it is not running by then. */
#define GVISOR_START_WAIT_S 30
int gvisor_wait_running(const job_spec *s, int init_pidfd, jerr *e);
/* In the exec's child, already in the job's cgroup: becomes `runsc --root=R --log=... exec
 * --process ... --internal-pid-file ... <id>`, which exits with the process's code (128 + N for signal N;
 * 128 when runsc itself failed). Returns only on failure. */
int gvisor_exec(const job_spec *s, const gvisor_exec_fds *f, jerr *e);
/* The pid runsc wrote to pid_file; 0 while there is none (the process has not started). */
pid_t gvisor_exec_pid(int pid_file);
/* True when runsc exec failed to start the process (exit 128, no pid written): its last error,
 * or a line saying so, in msg. */
bool gvisor_exec_failure(int runsc_status, int pid_file, int log, char *msg, size_t len);
/* A job on the host's network: fd is its sandbox's user namespace (an nsfd, or a pidfd of the
 * job's `runsc run`), which this process's runsc commands (state, kill, exec) then enter as its
 * root: runsc lets in only the sandbox's own uid there (gvisor_spawn does this for the shim). */
void gvisor_use_sandbox_user(int fd);
/* `runsc kill --pid=<pid> <id> <sig>`, waited for (bounded as gvisor_kill). */
int gvisor_kill_pid(const job_spec *s, pid_t pid, int sig);
#endif
