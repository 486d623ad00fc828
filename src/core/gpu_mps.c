/* NVIDIA MPS for shared GPUs: one control daemon per GPU while it has shared tenants, each
 * with its own pipe and log directories under the state directory, so that tenants of one GPU
 * never reach another GPU's server (the pipe directory a small tmpfs of its own: exec/mpsdir.h).
 * Started when the first shared job is granted the GPU and told to quit when the last one
 * leaves. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../exec/mpsdir.h"
#include "gpu_mps.h"
#include "state.h"

bool gpu_mps_available_why(char *why, size_t len)
{
    if (access(core.cfg.mps_control, X_OK) == 0)
        return true;
    snprintf(why, len, "no executable %s (gpu.mps_control: %s); install NVIDIA's MPS (nvidia-cuda-mps-control, part "
                       "of the driver's utilities) or ask for a whole GPU",
             core.cfg.mps_control, strerror(errno));
    return false;
}

bool gpu_mps_available(void)
{
    char why[8];
    return gpu_mps_available_why(why, sizeof why);
}

static void dirs(int gpu, char *pipe_dir, char *log_dir, size_t len)
{
    snprintf(pipe_dir, len, "%s/mps/%d/pipe", core.cfg.state_dir, gpu);
    snprintf(log_dir, len, "%s/mps/%d/log", core.cfg.state_dir, gpu);
}

void gpu_mps_pipe_dir(int gpu, char *out, size_t len)
{
    char log_dir[600];
    char pipe_dir[600];
    dirs(gpu, pipe_dir, log_dir, sizeof pipe_dir);
    snprintf(out, len, "%s", pipe_dir);
}

static void unmount_pipes(int gpu, const char *pipe_dir)
{
    jerr e = {0};
    if (mpsdir_unmount(pipe_dir, &e) < 0)
        log_warn("MPS for GPU %d: %s: the pipe directory stays mounted", gpu, e.msg);
}

/* Runs the control program with MPS's environment for this GPU, feeding it `input` (NULL: none),
 * and waits for it at most 10 s: `-d` returns once the daemon is up, and "quit" once told. */
static int control(int gpu, const char *arg, const char *input, jerr *e)
{
    char pipe_dir[600], log_dir[600], env_pipe[700], env_log[700], env_dev[200];
    dirs(gpu, pipe_dir, log_dir, sizeof pipe_dir);
    snprintf(env_pipe, sizeof env_pipe, "CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
    snprintf(env_log, sizeof env_log, "CUDA_MPS_LOG_DIRECTORY=%s", log_dir);
    snprintf(env_dev, sizeof env_dev, "CUDA_VISIBLE_DEVICES=%s", core.gpu.inv.gpu[gpu].uuid);
    char *envp[] = {env_pipe, env_log, env_dev, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    char *argv[] = {core.cfg.mps_control, (char *)arg, NULL};
    int in[2];
    if (pipe2(in, O_CLOEXEC) < 0)
        return jerr_sys(e, "pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, core.cfg.mps_control, &fa, NULL, arg ? argv : (char *[]){core.cfg.mps_control, NULL}, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    if (rc != 0) {
        close(in[1]);
        return jerr_set(e, rc, "MPS for GPU %d: cannot run %s: %s", gpu, core.cfg.mps_control, strerror(rc));
    }
    if (input && write(in[1], input, strlen(input)) < 0)
        log_warn("MPS for GPU %d: writing to %s: %s", gpu, core.cfg.mps_control, strerror(errno));
    close(in[1]);
    int status = 0;
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return jerr_sys(e, "MPS for GPU %d: wait for %s", gpu, core.cfg.mps_control);
        if (waited >= 10000) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return jerr_set(e, ETIMEDOUT, "MPS for GPU %d: %s %s did not finish in 10 s", gpu, core.cfg.mps_control,
                            arg ? arg : input);
        }
        nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return jerr_set(e, EIO, "MPS for GPU %d: %s %s failed (status %d); see %s", gpu, core.cfg.mps_control,
                        arg ? arg : "quit", status, log_dir);
    return 0;
}

int gpu_mps_start(int gpu, jerr *e)
{
    char pipe_dir[600], log_dir[600], top[600];
    dirs(gpu, pipe_dir, log_dir, sizeof pipe_dir);
    snprintf(top, sizeof top, "%s/mps", core.cfg.state_dir);
    mkdir(top, 0711);
    snprintf(top, sizeof top, "%s/mps/%d", core.cfg.state_dir, gpu);
    mkdir(top, 0711);
    /* The pipe directory is a small memory file system of its own, mounted afresh for each
     * server (exec/mpsdir.h): every tenant writes there, and on the state directory's disk it
     * filled the disk of joblet's database; a fresh one holds nothing a former tenant left (a
     * FIFO named control made `-d` refuse, "already running"). Below it, the mount point is
     * root's 0700: cleared of what an earlier joblet left there (it was the directory itself;
     * rm_rf follows no link and stops at other file systems), and should the mount ever be
     * missing, tenants find a directory they cannot use rather than one on the disk. */
    jerr me = {0};
    if (mpsdir_unmount(pipe_dir, &me) < 0)
        return jerr_set(e, me.code, "MPS for GPU %d: %s", gpu, me.msg);
    if (rm_rf(pipe_dir) < 0)
        return jerr_sys(e, "MPS for GPU %d: clear %s", gpu, pipe_dir);
    if (mkdir(pipe_dir, 0700) < 0 || (mkdir(log_dir, 0700) < 0 && errno != EEXIST))
        return jerr_sys(e, "MPS for GPU %d: create %s", gpu, pipe_dir);
    if (mpsdir_mount(pipe_dir, &me) < 0)
        return jerr_set(e, me.code, "MPS for GPU %d: %s", gpu, me.msg);
    if (control(gpu, "-d", NULL, e) < 0) {
        unmount_pipes(gpu, pipe_dir);
        return -1;
    }
    log_info("gpu %d: MPS control daemon started (pipes %s, a tmpfs of %s and %d entries; log %s)", gpu, pipe_dir,
             MPSDIR_SIZE, MPSDIR_INODES, log_dir);
    return 0;
}

void gpu_mps_stop(int gpu)
{
    jerr e = {0};
    char pipe_dir[600];
    gpu_mps_pipe_dir(gpu, pipe_dir, sizeof pipe_dir);
    if (control(gpu, NULL, "quit\n", &e) < 0)
        log_warn("%s", e.msg);
    else
        log_info("gpu %d: MPS control daemon told to quit (no shared job left)", gpu);
    /* told or not, no tenant is left: the pipes go (a server still quitting keeps its own
     * until it is done, detached) */
    unmount_pipes(gpu, pipe_dir);
}

/* After a restart: a GPU with no shared tenant left may still have the server of the previous
 * run; tell it to quit. Its pipe directory, and that of a GPU no longer found (or of every GPU,
 * GPUs being off), is unmounted: a daemon killed with servers running left them mounted. A GPU
 * whose tenants were re-adopted keeps both: they still talk to that server. */
void gpu_mps_init(uint64_t in_use)
{
    char top[600];
    snprintf(top, sizeof top, "%s/mps", core.cfg.state_dir);
    DIR *d = opendir(top);
    if (!d)
        return; /* no GPU was ever shared here */
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        errno = 0;
        long i = strtol(de->d_name, &end, 10);
        if (!*de->d_name || *end || errno || i < 0 || i >= GPU_MAX)
            continue;
        char pipe_dir[600], ctl[700];
        gpu_mps_pipe_dir((int)i, pipe_dir, sizeof pipe_dir);
        snprintf(ctl, sizeof ctl, "%s/control", pipe_dir);
        if (i < core.gpu.inv.n && in_use >> i & 1)
            continue;
        if (i < core.gpu.inv.n && access(ctl, F_OK) == 0 && gpu_mps_available())
            gpu_mps_stop((int)i);
        else
            unmount_pipes((int)i, pipe_dir);
    }
    closedir(d);
}
