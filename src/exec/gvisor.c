#include "gvisor.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/util.h"
#include "oci.h"

/* <runsc root>/bundles/<id>: beside runsc's own state, on the memory file system joblet mounts
 * there (the config holds the job's secret environment, which never goes to disk) */
static void bundle_path(const job_spec *s, char *out, size_t len, const char *tail)
{
    snprintf(out, len, "%s/bundles/%s%s", s->runsc_root, s->id, tail);
}

/* config.json without the environment's values, in the job's directory: what the job was
 * started with, for rnx job status and for tests, with no secret in it */
static int write_shown_config(const job_spec *s, json_t *o, jerr *e)
{
    json_t *shown = json_deep_copy(o), *env = json_array(), *v;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(o, "process"), "env"), i, v) {
        const char *kv = json_string_value(v);
        json_array_append_new(env, json_stringn(kv, strcspn(kv, "=")));
    }
    json_object_set_new(json_object_get(shown, "process"), "env", env);
    char *txt = json_dumps(shown, JSON_INDENT(1));
    json_decref(shown);
    if (!txt)
        return jerr_set(e, ENOMEM, "cannot encode the OCI bundle");
    char path[4300];
    snprintf(path, sizeof path, "%s/bundle-config.json", s->job_dir);
    int rc = write_file_opt(path, txt, strlen(txt), 0600, 0, e);
    free(txt);
    return rc;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* A mount point for dst under rootfs: a directory, or an empty file when src is not one. */
static int mount_point(const char *rootfs, const char *dst, const char *src, jerr *e)
{
    char p[4400];
    if (strstr(dst, "/.."))
        return jerr_set(e, EINVAL, "mount point %s leaves the root", dst);
    snprintf(p, sizeof p, "%s%s", rootfs, dst);
    struct stat st;
    bool dir = !src || (stat(src, &st) == 0 && S_ISDIR(st.st_mode));
    if (dir)
        return mkdir_p(p, 0755, e);
    char parent[4400];
    snprintf(parent, sizeof parent, "%s", p);
    char *slash = strrchr(parent, '/');
    if (slash)
        *slash = 0;
    if (mkdir_p(parent, 0755, e) < 0)
        return -1;
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return jerr_sys(e, "create %s", p);
    close(fd);
    return 0;
}

int gvisor_bundle_write(const job_spec *s, const cg_job *cg, jerr *e)
{
    char bundle[4200], rootfs[4300];
    bundle_path(s, bundle, sizeof bundle, "");
    bundle_path(s, rootfs, sizeof rootfs, "/rootfs");
    if (mkdir_p(rootfs, 0755, e) < 0)
        return -1;
    /* the system directories: a link (merged /usr: /bin -> usr/bin) is copied as a link, a
     * directory becomes a mount point bound read-only, a missing one is left out */
    const char *sys = s->system_root && *s->system_root ? s->system_root : "";
    const char *dirs[32];
    size_t nd = 0;
    for (const char *const *d = mounts_system_dirs; *d && nd + 1 < ARRAY_LEN(dirs); d++) {
        char src[4200], dst[4400], target[4096];
        snprintf(src, sizeof src, "%s%s", sys, *d);
        snprintf(dst, sizeof dst, "%s%s", rootfs, *d);
        struct stat st;
        if (lstat(src, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            ssize_t n = readlink(src, target, sizeof target - 1);
            if (n < 0)
                return jerr_sys(e, "readlink %s", src);
            target[n] = 0;
            /* made relative (every system directory is at the top: /usr/lib is usr/lib), and
             * never upwards: the mount points made below follow these links on the host, and
             * must stay inside rootfs */
            const char *rel = target + strspn(target, "/");
            if (strstr(rel, ".."))
                return jerr_set(e, EINVAL, "%s is a link to '%s', which leaves the root", src, target);
            if (symlink(rel, dst) < 0 && errno != EEXIST)
                return jerr_sys(e, "symlink %s", dst);
        } else if (S_ISDIR(st.st_mode)) {
            if (mkdir_p(dst, 0755, e) < 0)
                return -1;
            dirs[nd++] = *d;
        }
    }
    dirs[nd] = NULL;
    const char *const points[] = {"/proc", "/tmp", "/work", "/dev", "/sys"};
    for (size_t i = 0; i < ARRAY_LEN(points); i++)
        if (mount_point(rootfs, points[i], NULL, e) < 0)
            return -1;
    for (size_t i = 0; i < s->nmounts; i++)
        if (mount_point(rootfs, s->mounts[i].dst, s->mounts[i].src, e) < 0)
            return -1;
    for (size_t i = 0; i < s->nops; i++)
        if (s->ops[i].kind == SPEC_TMPFS && mount_point(rootfs, s->ops[i].dst, NULL, e) < 0)
            return -1;
    /* the job's cgroup, as runsc would name it on a cgroup2 host; informational under
     * --ignore-cgroups (the shim put runsc in it) */
    char cgpath[200];
    snprintf(cgpath, sizeof cgpath, "/%s/%s", cg->host->root, cg->name);
    /* the job's /etc/hosts and /etc/hostname beside the bundle, each bound over the tree's file.
     * Only over a file that is there: runsc would make a missing mount point in the tree itself
     * (the host's or a runtime's /etc), and has no overlay to lay a file into a read-only
     * directory; a runtime built by this joblet has an /etc/hosts (rtbuild_main.c) */
    char hosts[512], name[80], hosts_path[4300], name_path[4300], tree_file[4300];
    const spec_net *net = s->net;
    if (mounts_names_text(s->hostname, hosts, sizeof hosts, name, sizeof name, e) < 0)
        return -1;
    bundle_path(s, hosts_path, sizeof hosts_path, "/hosts");
    bundle_path(s, name_path, sizeof name_path, "/hostname");
    struct stat fst;
    snprintf(tree_file, sizeof tree_file, "%s/etc/hosts", sys);
    bool have_hosts = lstat(tree_file, &fst) == 0 && S_ISREG(fst.st_mode);
    snprintf(tree_file, sizeof tree_file, "%s/etc/hostname", sys);
    bool have_name = lstat(tree_file, &fst) == 0 && S_ISREG(fst.st_mode);
    if ((have_hosts && !(net && net->hosts_file) && write_file_opt(hosts_path, hosts, strlen(hosts), 0444, 0, e) < 0) ||
        (have_name && write_file_opt(name_path, name, strlen(name), 0444, 0, e) < 0))
        return -1;
    /* a job on a bridge network: its network's hosts file itself, which joblet rewrites in
     * place as the network's jobs come and go (bind mounts are shared with the host, not cached
     * by the gofer: the job sees each change); its resolvers over the tree's resolv.conf where
     * that is a file, as natively (mounts.c) */
    const char *hosts_src = net && net->hosts_file ? net->hosts_file : hosts_path;
    snprintf(tree_file, sizeof tree_file, "%s/etc/resolv.conf", sys);
    bool have_resolv = net && net->resolv_file && lstat(tree_file, &fst) == 0 && S_ISREG(fst.st_mode);
    /* runsc takes the network namespace it is started in (gvisor_spawn made it, the shim gave
     * it the job's veth): runsc run opens the path itself, so "self" is that namespace */
    oci_inputs in = {rootfs,
                     dirs,
                     cgpath,
                     have_hosts ? hosts_src : NULL,
                     have_name ? name_path : NULL,
                     have_resolv ? net->resolv_file : NULL,
                     net ? "/proc/self/ns/net" : NULL};
    json_t *o = oci_config(s, &in);
    if (write_shown_config(s, o, e) < 0) {
        json_decref(o);
        return -1;
    }
    char path[4300];
    bundle_path(s, path, sizeof path, "/config.json");
    char *txt = json_dumps(o, JSON_INDENT(1));
    json_decref(o);
    if (!txt)
        return jerr_set(e, ENOMEM, "cannot encode the OCI bundle");
    int rc = write_file_opt(path, txt, strlen(txt), 0600, 0, e);
    free(txt);
    return rc;
}

/* runsc's global flags, in front of the subcommand; argv is filled from 0, returns the count. */
static int global_args(const job_spec *s, const char **argv, char *buf, size_t len)
{
    int n = 0;
    argv[n++] = s->runsc;
    snprintf(buf, len, "--root=%s", s->runsc_root);
    argv[n++] = buf;
    return n;
}

static void child_defaults(void)
{
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, NULL);
}

static void write_err(int fd, const char *stage, const jerr *e)
{
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s: %s", stage, e->msg);
    ssize_t w = write(fd, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
    (void)w;
}

/* /proc/<pid>/<file> := text, for the user namespace's maps */
static int write_proc(pid_t pid, const char *file, const char *text, jerr *e)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return jerr_sys(e, "open %s", path);
    ssize_t w = write(fd, text, strlen(text));
    int err = errno;
    close(fd);
    if (w != (ssize_t)strlen(text))
        return jerr_set(e, w < 0 ? err : EIO, "write %s: %s", path, strerror(w < 0 ? err : EIO));
    return 0;
}

/* runsc (up to at least 2024's) refuses --network=sandbox in what it takes for the host's
 * network namespace, and tells that by whether /proc/sys/net/core/rmem_default can be seen; since
 * Linux 6.x every network namespace has it. So runsc gets a mount namespace of its own (owned by
 * its user namespace: nothing propagates back) with an empty read-only tmpfs over this namespace's
 * /proc/sys/net/core, seen only from the job's network namespace, which is runsc's (sysctl
 * directories are per network namespace). runsc reads nothing else there; the sandbox and the
 * gofer make mount namespaces of their own below this one. */
static int hide_core_sysctls(jerr *e)
{
    if (unshare(CLONE_NEWNS) < 0)
        return jerr_sys(e, "unshare(CLONE_NEWNS)");
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
        return jerr_sys(e, "make the mounts slaves");
    if (mount("tmpfs", "/proc/sys/net/core", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=0555") < 0)
        return jerr_sys(e, "mount a tmpfs on /proc/sys/net/core");
    return 0;
}

/* The sandbox's network namespace (gvisor_spawn's child made it): runsc's control socket is an
 * abstract one there, and runsc's commands reach it only from inside. -1: the process's own. */
static int sandbox_netns = -1;

/* A job on the host's network: the sandbox's user namespace (an nsfd, or a pidfd of a process in
 * it). Its sandbox is root there, the sandbox uid on the host (oci.h), and runsc's control server
 * lets in only its own uid and 0 as that namespace names them, where host root is the sandbox
 * uid: joblet's runsc commands enter it and become its root. -1: none (they stay host root). */
static int sandbox_userns = -1;

void gvisor_use_sandbox_user(int fd) { sandbox_userns = fd; }

/* This process becomes root of the user namespace it is in: no supplementary group, uid and gid
 * 0 there (capabilities there only). A change of uid clears the parent-death signal: set again,
 * and the process ends if its parent went meanwhile. */
static int become_namespace_root(jerr *e)
{
    int pdeath = 0;
    pid_t parent = getppid();
    prctl(PR_GET_PDEATHSIG, &pdeath);
    if (setgroups(0, NULL) < 0 || setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
        return jerr_sys(e, "become root of the sandbox's user namespace");
    if (pdeath && (prctl(PR_SET_PDEATHSIG, pdeath) < 0 || getppid() != parent))
        _exit(126);
    return 0;
}

/* the sandbox's user namespace, entered as its root, when there is one (sandbox_userns) */
static int enter_sandbox_user(jerr *e)
{
    if (sandbox_userns < 0)
        return 0;
    if (setns(sandbox_userns, CLONE_NEWUSER) < 0)
        return jerr_sys(e, "enter the sandbox's user namespace");
    return become_namespace_root(e);
}

pid_t gvisor_spawn(const job_spec *s, const cg_job *cg, const struct jobinit_fds *fds, gvisor_ready before_run,
                   void *before_arg, jerr *e)
{
    char root[4200], platform[80], network[32], bundle[4200], idmap[256];
    const char *argv[20];
    /* the sandbox's own host id (oci.h): never nobody's, the one every runsc would share */
    if (oci_id_map(oci_sandbox_runs_as(s), (uint32_t)s->runsc_sandbox_uid, idmap, sizeof idmap) < 0)
        return jerr_set(e, EINVAL, "the job has no sandbox uid of its own (got %u); it is not started as nobody",
                        (unsigned)s->runsc_sandbox_uid);
    int n = global_args(s, argv, root, sizeof root);
    snprintf(platform, sizeof platform, "--platform=%s", s->runsc_platform);
    /* sandbox: runsc's netstack takes over the interfaces of the namespace it starts in (their
     * addresses and routes), here the job's eth0 */
    snprintf(network, sizeof network, "--network=%s", s->net_host ? "host" : s->net ? "sandbox" : "none");
    bundle_path(s, bundle, sizeof bundle, "");
    /* runsc's own errors (it could not start the sandbox or the command) as JSON lines, for
     * gvisor_failure; without --debug nothing else is written there */
    char log[4200];
    snprintf(log, sizeof log, "--log=%s/runsc.log", s->job_dir);
    argv[n++] = log;
    argv[n++] = platform;
    argv[n++] = network;
    argv[n++] = "--ignore-cgroups";
    if (s->runsc_nvproxy)
        argv[n++] = "--nvproxy=true";
    argv[n++] = "run";
    argv[n++] = "--bundle";
    argv[n++] = bundle;
    argv[n++] = s->id;
    argv[n] = NULL;
    /* the child says when it is in its user namespace; the maps are written from here (a
     * map of more than its own id needs CAP_SETUID outside), then it goes on */
    int ready[2], go[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        return jerr_sys(e, "pipe");
    if (pipe2(go, O_CLOEXEC) < 0) {
        close(ready[0]);
        close(ready[1]);
        return jerr_sys(e, "pipe");
    }
    pid_t pid = fork();
    if (pid < 0) {
        jerr_sys(e, "fork runsc");
        close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);
        return -1;
    }
    if (pid > 0) {
        close(ready[1]);
        close(go[0]);
        char c;
        ssize_t r;
        while ((r = read(ready[0], &c, 1)) < 0 && errno == EINTR)
            ;
        close(ready[0]);
        jerr me = {0};
        /* nothing read: the child failed before, and said why on the sync pipe */
        char netns[64];
        snprintf(netns, sizeof netns, "/proc/%d/ns/net", (int)pid);
        /* kept, for runsc kill and delete to reach the sandbox's control socket there (kept open:
         * delete runs after runsc run is gone) */
        if (r == 1 && sandbox_netns < 0)
            sandbox_netns = open(netns, O_RDONLY | O_CLOEXEC);
        /* and on the host's network its user namespace, whose root the sandbox is (without it
         * joblet's runsc commands could not reach the sandbox: the job does not start) */
        char userns[64];
        snprintf(userns, sizeof userns, "/proc/%d/ns/user", (int)pid);
        if (r == 1 && s->net_host && sandbox_userns < 0 &&
            (sandbox_userns = open(userns, O_RDONLY | O_CLOEXEC)) < 0) {
            jerr_sys(&me, "open %s", userns);
            write_err(fds->sync_w, "the sandbox's user namespace", &me);
        } else if (r == 1 &&
                   (write_proc(pid, "uid_map", idmap, &me) < 0 || write_proc(pid, "gid_map", idmap, &me) < 0))
            write_err(fds->sync_w, "the sandbox's user namespace", &me);
        else if (r == 1 && before_run && before_run(before_arg, netns, &me) < 0) {
            ssize_t w = write(fds->sync_w, me.msg, strlen(me.msg)); /* it says what failed */
            (void)w;
        } else if (r == 1 && write(go[1], "g", 1) != 1) {
            jerr_sys(&me, "release runsc");
            write_err(fds->sync_w, "start", &me);
        }
        close(go[1]); /* without "g" the child ends */
        return pid;
    }
    close(ready[0]);
    close(go[1]);
    jerr ce = {0};
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    child_defaults();
    /* runsc, its sandbox and its gofer: all the job's, limited by its cgroup */
    if (cg_enter(cg, &ce) < 0) {
        write_err(fds->sync_w, "cgroup", &ce);
        _exit(126);
    }
    /* runsc raises it for the kvm platform; in the namespace it no longer can */
    setrlimit(RLIMIT_MEMLOCK, &(struct rlimit){RLIM_INFINITY, RLIM_INFINITY});
    /* A network namespace of its own, owned by this user namespace, whatever the job's network:
     * runsc's control socket for the sandbox is an abstract unix socket of the namespace runsc
     * runs in, which in the host's any local user could connect to, and runsc lets in a caller
     * whose uid is the sandbox's, which every outsider is seen as from inside the sandbox's user
     * namespace (nobody: listing its processes, running commands in it as the job's user). On a
     * network, runsc takes the namespace's interfaces over (CAP_NET_ADMIN, CAP_NET_RAW); the
     * parent makes the veth. joblet's runsc commands enter it (sandbox_netns, exec_main.c).
     * --network=host keeps the host's, as it asks: runsc keeps that sandbox in this user
     * namespace as itself, so runsc becomes its root below, the sandbox uid on the host (the
     * map swaps 0 and it: oci.h), never host root; runsc then lets in that uid alone besides
     * itself (host root is the sandbox uid here), and joblet's commands enter this namespace as
     * its root (sandbox_userns). */
    if (unshare(CLONE_NEWUSER | (s->net_host ? 0 : CLONE_NEWNET)) < 0) {
        jerr_sys(&ce, s->net_host ? "unshare(CLONE_NEWUSER)" : "unshare(CLONE_NEWUSER|CLONE_NEWNET)");
        write_err(fds->sync_w, "the sandbox's user namespace", &ce);
        _exit(126);
    }
    char c = 0;
    ssize_t r = write(ready[1], "r", 1);
    close(ready[1]);
    while (r == 1 && (r = read(go[0], &c, 1)) < 0 && errno == EINTR)
        ;
    if (r != 1 || c != 'g')
        _exit(126);
    close(go[0]);
    if (s->net_host && become_namespace_root(&ce) < 0) {
        write_err(fds->sync_w, "the sandbox's user namespace", &ce);
        _exit(126);
    }
    if (s->net && hide_core_sysctls(&ce) < 0) {
        write_err(fds->sync_w, "the sandbox's network", &ce);
        _exit(126);
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(fds->out_w, 1) < 0 || dup2(fds->err_w, 2) < 0) {
        jerr_sys(&ce, "connect stdin/stdout/stderr");
        write_err(fds->sync_w, "start", &ce);
        _exit(127);
    }
    syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    execv(s->runsc, (char *const *)argv);
    jerr_sys(&ce, "%s", s->runsc);
    write_err(fds->sync_w, "exec", &ce);
    _exit(127);
}

/* How long the shim waits for `runsc kill` or `runsc delete`. Both talk to the sandbox, and a
 * sandbox that is stuck (short of tasks at its user's pids.max, say) never answers: without a
 * bound the shim would wait with it, and neither a stop's grace period nor a kill would come. */
#define RUNSC_HELPER_TIMEOUT_MS 5000

/* runsc with argv, waited for at most RUNSC_HELPER_TIMEOUT_MS (then killed): its stdout into
 * out (an fd; -1: /dev/null), its stdin and stderr /dev/null. 0 when it exited 0, else -1.
 * own_pids: in a new, empty pid namespace, where no host pid can be named (its first process:
 * killed at the timeout, it takes any child along), and as host root (delete, once the job has
 * ended: its sandbox uid may be another job's by then); else as root of the sandbox's user
 * namespace when it has one of its own (enter_sandbox_user). */
static int run_bounded_in(const char **argv, int out, bool own_pids)
{
    struct clone_args ca = {.flags = CLONE_NEWPID, .exit_signal = SIGCHLD};
    pid_t pid = own_pids ? (pid_t)syscall(SYS_clone3, &ca, sizeof ca) : fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        child_defaults();
        jerr e = {0};
        if (sandbox_netns >= 0 && setns(sandbox_netns, CLONE_NEWNET) < 0)
            _exit(127);
        if (!own_pids && enter_sandbox_user(&e) < 0)
            _exit(127);
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        if (out >= 0)
            dup2(out, 1);
        syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    int64_t deadline = mono_ns() + (int64_t)RUNSC_HELPER_TIMEOUT_MS * 1000000;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        if (w == 0 && mono_ns() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        if (w == 0)
            nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int run_bounded(const char **argv, int out) { return run_bounded_in(argv, out, false); }

static int run_quiet(const char **argv) { return run_bounded(argv, -1); }

int gvisor_kill(const job_spec *s, int sig, bool all)
{
    char root[4200], signo[16];
    const char *argv[8];
    int n = global_args(s, argv, root, sizeof root);
    snprintf(signo, sizeof signo, "%d", sig);
    argv[n++] = "kill";
    if (all)
        argv[n++] = "--all";
    argv[n++] = s->id;
    argv[n++] = signo;
    argv[n] = NULL;
    return run_quiet(argv);
}

/* After a hard kill, `runsc run` died before it could destroy its container, and runsc's record
 * still names the sandbox's and the gofer's host pids: `delete --force` SIGKILLs those numbers,
 * long reaped by then (the shim killed the job's cgroup whole) and perhaps any process's now. It
 * runs in a pid namespace of its own, where those numbers name nothing (ESRCH: "not running",
 * which is so); what else it tidies (its record, the bundle's mounts) is not by pid. */
void gvisor_delete(const job_spec *s)
{
    char root[4200];
    const char *argv[8];
    int n = global_args(s, argv, root, sizeof root);
    argv[n++] = "delete";
    argv[n++] = "--force";
    argv[n++] = s->id;
    argv[n] = NULL;
    run_bounded_in(argv, -1, true);
    char bundle[4200];
    bundle_path(s, bundle, sizeof bundle, "");
    nftw(bundle, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int gvisor_command_status(int runsc_status, bool signal_expected)
{
    if (!WIFEXITED(runsc_status))
        return runsc_status; /* runsc itself was killed (the job's cgroup, killed whole) */
    int code = WEXITSTATUS(runsc_status);
    if (signal_expected && code > 128 && code < 128 + 65)
        return code - 128; /* a wait status "killed by signal N" */
    return code << 8;
}

/* runsc's last error in its log f (JSON lines), closed */
static bool last_error(FILE *f, char *msg, size_t len)
{
    bool found = false;
    char line[4096];
    /* the last error; a line longer than the buffer is read in pieces that do not parse */
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        const char *level = json_string_value(json_object_get(o, "level"));
        const char *text = json_string_value(json_object_get(o, "msg"));
        if (text && level && (!strcmp(level, "error") || !strcmp(level, "fatal"))) {
            snprintf(msg, len, "%s", text);
            found = true;
        }
        json_decref(o);
    }
    fclose(f);
    return found;
}

bool gvisor_failure(const job_spec *s, int runsc_status, char *msg, size_t len)
{
    /* runsc exits 128 when it fails itself; 128 + N is a signal N */
    if (!WIFEXITED(runsc_status) || WEXITSTATUS(runsc_status) != 128)
        return false;
    char path[4200];
    snprintf(path, sizeof path, "%s/runsc.log", s->job_dir);
    FILE *f = fopen(path, "re");
    return f && last_error(f, msg, len);
}

/* fd stays open across the exec, and is named /proc/self/fd/N there */
static void keep_fd(int fd, char *out, size_t len)
{
    fcntl(fd, F_SETFD, 0);
    snprintf(out, len, "/proc/self/fd/%d", fd);
}

int gvisor_exec(const job_spec *s, const gvisor_exec_fds *f, jerr *e)
{
    if (dup2(f->in, 0) < 0 || dup2(f->out, 1) < 0 || dup2(f->err, 2) < 0)
        return jerr_sys(e, "connect stdin/stdout/stderr");
    syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    if (enter_sandbox_user(e) < 0)
        return -1;
    char root[4200], log[80], process[64], pid_file[64];
    const char *argv[16];
    int n = global_args(s, argv, root, sizeof root);
    keep_fd(f->log, process, sizeof process);
    snprintf(log, sizeof log, "--log=%s", process);
    argv[n++] = log;
    argv[n++] = "--log-format=json";
    argv[n++] = "exec";
    argv[n++] = "--process";
    keep_fd(f->process, process, sizeof process);
    argv[n++] = process;
    argv[n++] = "--internal-pid-file";
    keep_fd(f->pid_file, pid_file, sizeof pid_file);
    argv[n++] = pid_file;
    argv[n++] = s->id;
    argv[n] = NULL;
    execv(s->runsc, (char *const *)argv);
    return jerr_sys(e, "%s", s->runsc);
}

pid_t gvisor_exec_pid(int pid_file)
{
    char buf[32];
    ssize_t n = pread(pid_file, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    long pid = strtol(buf, NULL, 10);
    return pid > 0 && pid <= INT32_MAX ? (pid_t)pid : 0;
}

bool gvisor_exec_failure(int runsc_status, int pid_file, int log, char *msg, size_t len)
{
    if (!WIFEXITED(runsc_status) || WEXITSTATUS(runsc_status) != 128 || gvisor_exec_pid(pid_file) > 0)
        return false;
    int fd = dup(log);
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        snprintf(msg, len, "runsc exec failed");
        return true;
    }
    rewind(f);
    if (!last_error(f, msg, len))
        snprintf(msg, len, "runsc exec failed");
    return true;
}

int gvisor_kill_pid(const job_spec *s, pid_t pid, int sig)
{
    char root[4200], signo[16], p[32];
    const char *argv[8];
    int n = global_args(s, argv, root, sizeof root);
    snprintf(signo, sizeof signo, "%d", sig);
    snprintf(p, sizeof p, "--pid=%d", (int)pid);
    argv[n++] = "kill";
    argv[n++] = p;
    argv[n++] = s->id;
    argv[n++] = signo;
    argv[n] = NULL;
    return run_quiet(argv);
}

/* The container's status as `runsc state` prints it ("created", "running", "stopped"), in out;
 * -1 when runsc says nothing (no such container yet, or it failed). Bounded as run_quiet. */
static int runsc_status(const job_spec *s, char *out, size_t len)
{
    char root[4200];
    const char *argv[8];
    int n = global_args(s, argv, root, sizeof root);
    argv[n++] = "state";
    argv[n++] = s->id;
    argv[n] = NULL;
    int fd = memfd_create("joblet-runsc-state", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    int ran = run_bounded(argv, fd);
    char buf[8192];
    ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (got <= 0 || ran < 0)
        return -1;
    buf[got] = 0;
    json_t *o = json_loads(buf, 0, NULL);
    const char *status = json_string_value(json_object_get(o, "status"));
    int rc = status ? 0 : -1;
    if (status)
        snprintf(out, len, "%s", status);
    json_decref(o);
    return rc;
}

/* runsc's own record of the container, read directly: "running" there spares a `runsc state`
 * (tens of ms) on every exec. Its name and form are runsc's, not a promise: anything else (no
 * such file, another form) and `runsc state` answers. */
static bool state_file_says_running(const job_spec *s)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s_sandbox:%s.state", s->runsc_root, s->id, s->id);
    json_t *o = json_load_file(path, 0, NULL);
    const char *status = json_string_value(json_object_get(o, "status"));
    bool running = status && !strcmp(status, "running");
    json_decref(o);
    return running;
}

int gvisor_wait_running(const job_spec *s, int init_pidfd, jerr *e)
{
    if (state_file_says_running(s))
        return 0;
    char status[32] = "";
    int64_t deadline = mono_ns() + (int64_t)GVISOR_START_WAIT_S * 1000000000;
    for (;;) {
        if (runsc_status(s, status, sizeof status) == 0 && !strcmp(status, "running"))
            return 0;
        if (status[0] && strcmp(status, "created") && strcmp(status, "creating"))
            return jerr_set(e, ESRCH, "job %.8s's sandbox is %s", s->id, status);
        struct pollfd p = {init_pidfd, POLLIN, 0};
        if (poll(&p, 1, 20) > 0)
            return jerr_set(e, ESRCH, "job %.8s has ended", s->id);
        if (mono_ns() >= deadline)
            return jerr_set(e, ETIMEDOUT, "job %.8s's sandbox did not start within %d s (runsc state: %s)", s->id,
                            GVISOR_START_WAIT_S, status[0] ? status : "no such container");
    }
}
