/* joblet — the daemon. Runs with no config file; `--config PATH` (or /etc/joblet/joblet.yml
 * when present) overrides the embedded defaults. SIGTERM stops the daemon, never the jobs:
 * their shims carry on and the next joblet re-adopts them. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../api/http.h"
#include "../common/cpuprio.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../exec/bpfdev.h"
#include "../core/gpu_service.h"
#include "../core/diskimg.h"
#include "../core/gpu_cdi.h"
#include "cert.h"
#include "../core/gpu_spec.h"
#include "../core/gpus.h"
#include "../core/isolation.h"
#include "../core/gpu_health.h"
#include "../core/incoming.h"
#include "../core/jobs.h"
#include "../core/nsscache.h"
#include "../core/job_exec.h"
#include "../core/job_ctl.h"
#include "../core/job_cp.h"
#include "../core/job_dirs.h"
#include "../core/job_launch.h"
#include "../core/events.h"
#include "../core/gpu_history.h"
#include "../core/audit.h"
#include "../core/job_logs.h"
#include "../core/orphans.h"
#include "../core/retention.h"
#include "../core/runtime_build.h"
#include "../core/runtimes.h"
#include "../core/settle.h"
#include "../core/slurm_node.h"
#include "../core/state.h"
#include "../core/statedisk.h"
#include "../core/volumes.h"
#include "../core/networks.h"
#include "../core/workflow.h"
#include "../core/arrays.h"
#include "../core/depend.h"
#include "../core/workflow_json.h"
#include "../core/workfs.h"
#include "../api/metrics_http.h"

static watch w_signal;

#ifndef JOBLET_LIBEXECDIR
#define JOBLET_LIBEXECDIR "/usr/local/libexec/joblet"
#endif

/* Where joblet-shim is when jobs.shim_path does not say (joblet-gpu-scrub and
 * joblet-runtime-build are looked for next to it): next to joblet itself (the build
 * directory), then ../libexec/joblet from joblet's directory (an installation moved as a whole,
 * e.g. /usr/sbin -> /usr/libexec/joblet), then the libexec directory the build was configured
 * with (meson's libexecdir; /usr/libexec/joblet in the Debian package). */
static int find_shim(char *out, size_t n, jerr *e)
{
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len < 0)
        return jerr_sys(e, "readlink /proc/self/exe");
    self[len] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    static const char *const under[] = {"", "/../libexec/joblet"};
    for (size_t i = 0; i <= ARRAY_LEN(under); i++) {
        if (i < ARRAY_LEN(under))
            snprintf(out, n, "%s%s/joblet-shim", self, under[i]);
        else
            snprintf(out, n, "%s/joblet-shim", JOBLET_LIBEXECDIR);
        if (access(out, X_OK) == 0)
            return 0;
    }
    return jerr_set(e, ENOENT, "the job shim joblet-shim is neither in %s, nor in %s/../libexec/joblet, nor in %s; "
                    "set jobs.shim_path", self, self, JOBLET_LIBEXECDIR);
}

/* The help; the man page joblet(8) is made from it at build time (scripts/mkman.py). */
static void usage(FILE *f)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    static config def;
    config_defaults(&def);
    fprintf(f,
            "joblet - the daemon that runs jobs isolated with namespaces, cgroups, seccomp and capabilities\n"
            "\n"
            "Usage: joblet [--config PATH] [--state-dir DIR] [--socket PATH] [--log-level LEVEL]\n"
            "       joblet [--config PATH] --probe-gpus[=nvml|proc|smi|fixture]\n"
            "       joblet [--config PATH] cdi generate [--output FILE]\n"
            "       joblet cert init|server|client|revoke|list --dir DIR [OPTIONS]\n"
            "       joblet --version|--help\n"
            "\n"
            "Serves the joblet API on a unix socket; rnx is its client. Runs as root. Each job runs\n"
            "under a shim of its own: when joblet stops (SIGTERM, SIGINT) its jobs go on, and the\n"
            "next joblet started on the same state directory adopts them again.\n"
            "\n"
            "Options:\n"
            "  --config PATH       the configuration file (YAML); without it, /etc/joblet/joblet.yml\n"
            "                      is read if it exists; every setting has a default\n"
            "  --state-dir DIR     jobs, their output and the database (default: %s)\n"
            "  --socket PATH       the API's unix socket (default: %s)\n"
            "  --log-level LEVEL   error, warn, info or debug (default: %s); the log goes to stderr\n"
            "  --probe-gpus[=BACKEND]\n"
            "                      print GPU discovery as JSON and exit (0 when a GPU was found, 1\n"
            "                      when none): every backend in turn, or only BACKEND\n"
            "  cdi generate        write a CDI specification of this machine's GPUs (kind nvidia.com/gpu,\n"
            "                      docs/sandbox.md) to stdout, or to --output FILE (e.g.\n"
            "                      /etc/cdi/nvidia.json, read by podman --device nvidia.com/gpu=0)\n"
            "  cert COMMAND        the certificates of the TLS listener, in one directory: its CA (init),\n"
            "                      the node's (server), users' with their roles (client), revoke, list;\n"
            "                      reads no configuration (joblet cert --help, docs/remote.md)\n"
            "  --version           print the version and exit\n"
            "  --help              show this help\n"
            "\n"
            "Exit status: 0 after a shutdown by SIGTERM or SIGINT, 1 when joblet could not start or\n"
            "failed, 2 for a bad command line or configuration file, 3 when the state directory's\n"
            "database was written by a newer joblet (a downgrade: refused, the database untouched).\n",
            def.state_dir, def.socket, levels[def.log_level]);
}

static void on_signal(watch *w, uint32_t events)
{
    struct signalfd_siginfo si;
    while (read(w->fd, &si, sizeof si) == sizeof si) {
        /* Shims are watched through pidfds; here they are only reaped, whoever still watches. */
        if (si.ssi_signo == SIGCHLD)
            while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        if (si.ssi_signo == SIGHUP) {
            /* the TLS listener's certificates and revocation list; nothing else is disturbed */
            jerr e = {0};
            if (http_reload_remote(&e) < 0)
                log_err("SIGHUP: %s; the certificates in use stay", e.msg);
        }
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            log_info("signal %d: shutting down; running jobs continue under their shims", (int)si.ssi_signo);
            loop_stop();
        }
    }
}

static int until(int t, int64_t at_ms)
{
    if (!at_ms)
        return t;
    int64_t d = at_ms - now_ms();
    int s = d < 0 ? 0 : d > 60000 ? 60000 : (int)d + 1;
    return t < 0 || s < t ? s : t;
}

/* The end of a loop turn: what the events and requests of this turn asked for is settled
 * (settle.h) and committed before the loop sleeps. */
static int before_wait(void)
{
    settle();
    workflow_drop_gone(false); /* those whose last job was deleted this turn */
    state_commit();
    if (settle_pending())
        return 0;
    return until(until(until(until(until(until(until(http_timeout_ms(), core.sched_wakeup_ms), core.trim_at_ms),
                                             state_resync_at_ms()),
                                       audit_due_ms()),
                                 nsscache_due_ms()),
                           retention_due_ms()),
                 job_launch_adopt_due_ms());
}

/* After the events of a turn: timers, then the settle step, so requests see a settled state,
 * then the requests. */
static void after_wake(void)
{
    int64_t now = now_ms();
    if (core.sched_wakeup_ms && now >= core.sched_wakeup_ms)
        state_want(WANT_SCHEDULE);
    /* After a busy period (jobs ended or deleted, none running): give freed heap back. */
    if (core.trim_at_ms && now >= core.trim_at_ms) {
        core.trim_at_ms = 0;
        if (core.running == 0)
            malloc_trim(0);
    }
    if (now >= audit_due_ms())
        audit_tick(now);
    int64_t nss_due = nsscache_due_ms();
    if (nss_due && now >= nss_due)
        nsscache_tick(now); /* look-ups no answer came for: their waiters refused */
    int64_t keep_due = retention_due_ms();
    if (keep_due && now >= keep_due)
        retention_tick(now); /* ended jobs past jobs.keep_ended_s: a slice a turn */
    int64_t adopt_due = job_launch_adopt_due_ms();
    if (adopt_due && now >= adopt_due)
        job_launch_adopt_retry(job_ctl_resume_job); /* shims the start had too few descriptors to watch */
    settle();
    workflow_drop_gone(false); /* those whose last job was deleted this turn */
    state_commit();
    http_run();
}

static void read_machine(void)
{
    char *s = read_file("/sys/devices/system/cpu/online", NULL);
    jerr e = {0};
    if (!s || parse_cpu_list("online", strtok(s, "\n"), core.online_cpus, &e) < 0)
        core.online_cpus[0] = 1;
    free(s);
    core.ncpus = 0;
    for (int c = 0; c < CPU_MAX; c++)
        core.ncpus += (core.online_cpus[c / 8] >> (c % 8)) & 1;
    struct sysinfo si;
    sysinfo(&si);
    core.mem_total_mb = (uint64_t)si.totalram * si.mem_unit >> 20;
}

/* What each phase of the start took (ms), logged once listening as "start: NAME MS, ...": an
 * admin sees where a large database's start goes (bench/start_bigdb.py reads it). */
static struct {
    char text[512];
    size_t len;
    int64_t at_ns;
    long faults;
} start_phases;

static void start_phase(const char *name)
{
    int64_t now = mono_ns();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (name && start_phases.len < sizeof start_phases.text) {
        /* and its page faults, in thousands where there were 1,000 or more (each costs ~12 us on
         * a VM: a fork at start made every job's pages fault again in the next pass over them) */
        long kf = (ru.ru_minflt - start_phases.faults) / 1000;
        char faults[40] = "";
        if (kf > 0)
            snprintf(faults, sizeof faults, " (%ldk faults)", kf);
        int n = snprintf(start_phases.text + start_phases.len, sizeof start_phases.text - start_phases.len,
                         "%s%s %.1f%s", start_phases.len ? ", " : "", name, (double)(now - start_phases.at_ns) / 1e6,
                         faults);
        if (n > 0)
            start_phases.len += (size_t)n;
    }
    start_phases.at_ns = now;
    start_phases.faults = ru.ru_minflt;
}

static void load_count(size_t n, void *arg)
{
    (void)arg;
    jobs_reserve(n);
}

static void load_one(db_job *r, void *arg)
{
    job *j = job_new(r);
    job_dirs_recheck(j);
    gpu_health_fault_restore(j); /* stopped for its GPU when joblet stopped: it still ends gpu_error */
    jobs_add(j);
}
static void load_wf(db_workflow *r, void *arg)
{
    workflow *wf = workflow_new(r);
    jerr e = {0};
    if (workflow_json_load(wf, &e) < 0)
        log_err("workflow %s: stored conditions: %s", wf->id, e.msg);
    workflow_add(wf);
}

/* joblet's open files: its soft limit raised to the hard one (as the systemd unit has them,
 * LimitNOFILE=1048576; one started by hand gets 1024 of a hard 524288 or so), and the jobs that
 * may run at once under it: a running job holds 2 (its shim's pidfd and notify socket, job_launch.c),
 * half the limit is the connections' (api/http.c), 64 are kept for the database, logs and a
 * launch's own (of a limit under 256, half of joblet's half). Past it jobs wait QUEUED
 * (SW_MAX_RUNNING) rather than fail to launch with EMFILE ("socketpair: Too many open files":
 * 300 running jobs under ulimit -n 1024). Jobs get the soft limit joblet was started with
 * (exec/jobinit.c), as under the unit (soft = hard there). */
#define FILES_PER_JOB JOB_LAUNCH_HELD_FDS
#define FILES_KEPT 64
static void files_budget(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    rlim_t was = rl.rlim_cur;
    if (rl.rlim_cur != rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
            log_warn("cannot raise the open-file limit from %llu to %llu: %s", (unsigned long long)was,
                     (unsigned long long)rl.rlim_max, strerror(errno));
            rl.rlim_cur = was;
        } else {
            log_info("open files: ulimit -n raised from %llu to its hard limit %llu (jobs keep %llu)",
                     (unsigned long long)was, (unsigned long long)rl.rlim_cur, (unsigned long long)was);
            core.nofile_soft = was;
        }
    }
    core.nofile_hard = rl.rlim_cur;
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur / 2 / FILES_PER_JOB >= UINT32_MAX)
        return;
    rlim_t own = rl.rlim_cur / 2;
    rlim_t kept = own / 2 < FILES_KEPT ? own / 2 : FILES_KEPT; /* (of a small limit, half of joblet's half) */
    core.files_max_running = own - kept >= FILES_PER_JOB ? (uint32_t)((own - kept) / FILES_PER_JOB) : 1;
    if (core.files_max_running < 4096 && (!core.cfg.max_running || core.cfg.max_running > core.files_max_running))
        log_warn("joblet may open %llu files (ulimit -n; the hard limit too): at most %u jobs run at once (%d descriptors "
                 "each, half the limit kept for connections); the systemd unit sets LimitNOFILE=1048576",
                 (unsigned long long)rl.rlim_cur, core.files_max_running, FILES_PER_JOB);
}

static int setup(jerr *e)
{
    snprintf(core.jobs_dir, sizeof core.jobs_dir, "%s/jobs", core.cfg.state_dir);
    if (mkdir_p(core.cfg.state_dir, 0700, e) < 0 || chmod(core.cfg.state_dir, 0700) < 0 || mkdir_p(core.jobs_dir, 0700, e) < 0)
        return -1;
    /* One joblet per state directory, held until it exits (the lock goes with the process).
     * A POSIX record lock, not flock: flock's lock belongs to the open file, which every child
     * forked shares until its exec closes it (O_CLOEXEC), so a joblet killed while a helper it
     * forked (runsc's probe, nvidia-smi, mke2fs...) had not exec'd yet left the lock held, and
     * the next joblet, started at once, was refused as "another joblet". A record lock is the
     * process's own: no child holds it. (Nothing else here opens this file: closing any
     * descriptor of it would let the lock go.) */
    char lock[700];
    snprintf(lock, sizeof lock, "%s/joblet.lock", core.cfg.state_dir);
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lfd < 0)
        return jerr_sys(e, "open %s", lock);
    struct flock whole = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(lfd, F_SETLK, &whole) < 0)
        return errno == EAGAIN || errno == EACCES
                   ? jerr_set(e, EBUSY, "another joblet is using the state directory %s", core.cfg.state_dir)
                   : jerr_sys(e, "lock %s", lock);
    if (!core.cfg.shim_path[0]) {
        if (find_shim(core.shim_path, sizeof core.shim_path, e) < 0)
            return -1;
    } else {
        snprintf(core.shim_path, sizeof core.shim_path, "%s", core.cfg.shim_path);
    }
    /* the GPU scrubber is installed next to the shim */
    snprintf(core.scrub_path, sizeof core.scrub_path, "%s", core.shim_path);
    char *slash = strrchr(core.scrub_path, '/');
    size_t at = slash ? (size_t)(slash + 1 - core.scrub_path) : 0;
    snprintf(core.scrub_path + at, sizeof core.scrub_path - at, "joblet-gpu-scrub");
    snprintf(core.copy_path, sizeof core.copy_path, "%.*sjoblet-copy", (int)at, core.shim_path);
    snprintf(core.exec_path, sizeof core.exec_path, "%.*sjoblet-exec", (int)at, core.shim_path);
    snprintf(core.srun_path, sizeof core.srun_path, "%.*sjoblet-srun", (int)at, core.shim_path);
    if (access(core.srun_path, X_OK) < 0) {
        log_warn("jobs with Slurm's variables (rnx job batch, --slurm-env) get no srun of joblet's: %s: %s",
                 core.srun_path, strerror(errno));
        core.srun_path[0] = 0;
    }
    if (access(core.shim_path, X_OK) < 0)
        return jerr_sys(e, "the job shim %s (jobs.shim_path)", core.shim_path);
    if (cg_host_init(&core.cg, core.cfg.cgroup_root, e) < 0)
        return -1;
    jerr fe = {0};
    if (core.cfg.favor_dynmods && cg_favor_dynmods(&core.cg, &fe) < 0)
        log_warn("job start-up will wait for an RCU grace period per job: %s", fe.msg);
    jerr ioe = {0};
    if (cg_block_device_of(core.jobs_dir, core.io_dev, sizeof core.io_dev, &ioe) < 0) {
        core.io_dev[0] = 0;
        snprintf(core.io_dev_why, sizeof core.io_dev_why, "%s", ioe.msg);
        log_warn("--max-iobps will be refused: %s", ioe.msg);
    }
    read_machine();
    snprintf(core.root_mount, sizeof core.root_mount, "%s/rootfs", core.cfg.state_dir);
    if (mkdir(core.root_mount, 0700) < 0 && errno != EEXIST)
        return jerr_sys(e, "create %s", core.root_mount);
    /* One program serves every job that has only the default devices: loading (and verifying)
     * it once instead of per job. */
    core.devfilter_prog = -1;
    if (core.cg.unified[0]) {
        jerr be = {0};
        core.devfilter_prog = bpfdev_load(cg_default_devices, cg_default_devices_n, "the default device filter", &be);
        if (core.devfilter_prog < 0)
            log_warn("%s; each job will load its own", be.msg);
    }
    char dbpath[700];
    snprintf(dbpath, sizeof dbpath, "%s/joblet.db", core.cfg.state_dir);
    start_phase("setup");
    if (!(core.db = db_open(dbpath, e)))
        return -1;
    start_phase("db_open");
    core.next_seq = 1;
    if (db_load_jobs(core.db, load_count, load_one, NULL, e) < 0)
        return -1;
    start_phase("jobs");
    if (db_load_workflows(core.db, load_wf, NULL, e) < 0)
        return -1;
    start_phase("workflows");
    if (arrays_load(e) < 0)
        return -1;
    start_phase("arrays");
    /* a number is never given twice (the newest job may have been deleted) */
    uint64_t hw;
    if (db_high_water(core.db, &hw, e) < 0)
        return -1;
    if (hw >= core.next_seq)
        core.next_seq = hw + 1;
    return 0;
}

/* `joblet --probe-gpus[=BACKEND]`: discovery as the daemon would run it, printed as the API's
 * JSON; with a backend named, only that one is tried. */
static int probe_gpus(const char *backend)
{
    jerr e = {0};
    if (*backend) {
        /* here fixture is a backend too (gpu.backends has no place for it: gpu.fixture); the
         * list is emptied first, so adding one fails only for a name that is not a backend */
        core.cfg.gpu.nbackends = 0;
        if (strcmp(backend, "fixture") == 0) {
            if (!*core.cfg.gpu.fixture) {
                fprintf(stderr, "joblet: --probe-gpus=fixture needs gpu.fixture in the configuration\n");
                return 2;
            }
        } else {
            core.cfg.gpu.fixture[0] = 0;
            if (gpu_config_add_backend(&core.cfg.gpu, backend, &e) < 0) {
                fprintf(stderr, "joblet: --probe-gpus: '%s' is not a backend; use nvml, proc, smi or fixture\n",
                        backend);
                return 2;
            }
        }
    }
    gpu_discover(&core.cfg.gpu, &core.gpu);
    json_t *o = gpu_discovery_json(&core.gpu);
    json_dumpf(o, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(o);
    int found = core.gpu.found;
    gpu_discovery_free(&core.gpu);
    return found ? 0 : 1;
}

/* `joblet cdi generate [--output FILE]`: discovery as the daemon would run it, written as a
 * CDI specification (core/gpu_cdi.h). */
static int cdi_generate(const char *output)
{
    jerr e = {0};
    gpu_discover(&core.cfg.gpu, &core.gpu);
    if (core.gpu.found && !core.gpu.inv.simulated && core.gpu.inv.n)
        gpu_spec_find_driver_libs();
    json_t *spec = gpu_cdi_spec_json(&e);
    if (spec && core.gpu.inv.simulated)
        fprintf(stderr, "joblet: cdi generate: these %d GPUs are simulated (gpu.fixture %s): the spec has no device "
                        "nodes and no driver libraries, and is marked so (annotation %s: \"true\", cdiVersion "
                        "0.6.0); a container given one of its devices gets no GPU\n",
                core.gpu.inv.n, core.cfg.gpu.fixture, GPU_CDI_SIMULATED_MARK);
    gpu_discovery_free(&core.gpu);
    free(core.driver_libs);
    core.driver_libs = NULL;
    core.ndriver_libs = 0;
    if (!spec) {
        fprintf(stderr, "joblet: cdi generate: %s\n", e.msg);
        return 1;
    }
    char *txt = json_dumps(spec, JSON_INDENT(2));
    json_decref(spec);
    int rc = 0;
    if (!output) {
        fputs(txt, stdout);
        putchar('\n');
    } else if (write_file_opt(output, txt, strlen(txt), 0644, WF_ATOMIC, &e) < 0) {
        fprintf(stderr, "joblet: cdi generate: %s\n", e.msg);
        rc = 1;
    }
    free(txt);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},   {"state-dir", required_argument, NULL, 's'},
        {"socket", required_argument, NULL, 'S'},   {"log-level", required_argument, NULL, 'l'},
        {"version", no_argument, NULL, 'V'},        {"help", no_argument, NULL, 'h'},
        {"probe-gpus", optional_argument, NULL, 'P'},
        {"output", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    bool cdi = false;
    const char *cfg_path = NULL, *state_dir = NULL, *sock = NULL, *level = NULL, *probe = NULL;
    int c;
    if (std_fds_open() < 0) { /* (before anything is opened: util.h) */
        perror("joblet: opening /dev/null on fds 0-2");
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], DISKIMG_HELPER_ARG)) /* mke2fs's, e2fsck's waiter (diskimg.h) */
        diskimg_helper_main(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "cert"))   /* joblet cert ...: no configuration (cert.h) */
        return cert_main(argc - 1, argv + 1);
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': cfg_path = optarg; break;
        case 's': state_dir = optarg; break;
        case 'S': sock = optarg; break;
        case 'l': level = optarg; break;
        case 'V': printf("joblet %s\n", JOBLET_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        case 'P': probe = optarg ? optarg : ""; break;
        case 'o': output = optarg; break;
        default:
            fprintf(stderr, "joblet: unknown or incomplete option '%s'; see 'joblet --help'\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind + 2 == argc && !strcmp(argv[optind], "cdi") && !strcmp(argv[optind + 1], "generate")) {
        cdi = true;
    } else if (optind < argc) {
        fprintf(stderr, "joblet: unexpected argument '%s'\n", argv[optind]);
        return 2;
    } else if (output) {
        fprintf(stderr, "joblet: --output is for 'joblet cdi generate'\n");
        return 2;
    }
    config_defaults(&core.cfg);
    jerr e = {0};
    if (!cfg_path && access("/etc/joblet/joblet.yml", F_OK) == 0)
        cfg_path = "/etc/joblet/joblet.yml";
    if (cfg_path && config_load(&core.cfg, cfg_path, &e) < 0) {
        fprintf(stderr, "joblet: %s\n", e.msg);
        return 2;
    }
    if (state_dir)
        snprintf(core.cfg.state_dir, sizeof core.cfg.state_dir, "%s", state_dir);
    if (sock)
        snprintf(core.cfg.socket, sizeof core.cfg.socket, "%s", sock);
    if (!cdi && http_remote_load(&core.cfg.remote, &e) < 0) {
        fprintf(stderr, "joblet: %s\n", e.msg);
        return 2;
    }
    if (level && log_parse_level(level, &core.cfg.log_level) < 0) {
        fprintf(stderr, "joblet: --log-level: '%s' must be one of error, warn, info, debug\n", level);
        return 2;
    }
    log_set_level(core.cfg.log_level);
    if (probe)
        return probe_gpus(probe);
    if (cdi)
        return cdi_generate(output);
    if (geteuid() != 0) {
        fprintf(stderr, "joblet: must run as root: it creates namespaces, cgroups and mounts for jobs\n");
        return 1;
    }
    files_budget();
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    /* Before touching the state: a second joblet must not adopt the first one's jobs. */
    if (http_socket_in_use(core.cfg.socket)) {
        log_err("another joblet is already listening on %s", core.cfg.socket);
        return 1;
    }
    start_phase(NULL);
    int64_t start_ns = start_phases.at_ns;
    if (loop_init() < 0 || setup(&e) < 0) {
        log_err("%s", e.msg[0] ? e.msg : strerror(errno));
        return e.code == DB_NEWER_SCHEMA ? 3 : 1;
    }
    w_signal = (watch){signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK), on_signal, NULL};
    loop_add(&w_signal);
    job_logs_init();
    if (runtimes_init(&e) < 0 || runtime_build_init(&e) < 0) {
        log_err("%s", e.msg);
        return 1;
    }
    if (volumes_init(&e) < 0 || workfs_init(volumes_promised_mb, &e) < 0 || networks_init(&e) < 0) {
        log_err("%s", e.msg);
        return 1;
    }
    if (gpus_init(&e) < 0 || isolation_init(&e) < 0) {
        log_err("%s", e.msg);
        return 1;
    }
    gpu_service_load();
    start_phase("init");
    workflow_resume_all(); /* linked before re-adoption, so jobs that ended meanwhile decide their dependents */
    workflow_drop_gone(true); /* ended with every job deleted (a delete a commit did not take) */
    start_phase("workflow_resume");
    depend_resume_all(); /* likewise the jobs of rnx job run --after */
    start_phase("depend_resume");
    job_launch_adopt_all();
    job_ctl_resume_all(); /* a freezer that disagrees with the row: put as the row says */
    start_phase("adopt");
    jobs_index_rebuild(); /* counted once from the table as re-adoption left it (jobs.h) */
    start_phase("index");
    job_launch_init();
    incoming_clean_stale();
    orphans_sweep(); /* after re-adoption: every job that runs is known by now */
    start_phase("orphans");
    statedisk_budgets_init();
    start_phase("disk_budgets");
    if (nsscache_start(core.cfg.account_cache_s) < 0) {
        log_err("account look-ups: cannot start their threads: %s", strerror(errno));
        return 1;
    }
    http_limits hl = {core.cfg.max_body_bytes, core.cfg.max_conns, core.cfg.max_conns_per_user, core.cfg.idle_timeout_s,
                      1 + core.cfg.remote.nlisten};
    if (http_start(core.cfg.socket, core.cfg.socket_mode, &hl, &e) < 0 ||
        http_start_remote(&core.cfg.remote, &hl, &e) < 0) {
        log_err("%s", e.msg);
        return 1;
    }
    if (metrics_listen_start(core.cfg.metrics_listen, core.cfg.metrics_readers, core.cg.unified, core.cg.root, &e) < 0) {
        log_err("%s", e.msg);
        return 1;
    }
    start_phase("listen");
    log_info("joblet %s listening on %s (state %s, cgroup layout %s, %zu jobs known)", JOBLET_VERSION, core.cfg.socket,
             core.cfg.state_dir, cg_layout_name(core.cg.layout), core.njobs);
    log_info("start: %s; total %.1f ms", start_phases.text, (double)(mono_ns() - start_ns) / 1e6);
    gpu_health_start();
    gpu_history_start();
    slurm_node_start();
    state_want(WANT_SCHEDULE);
    /* the loop above its jobs (common/cpuprio.h); what it starts from now on is at nice 0 */
    if (cpuprio_raise(0, core.cfg.cpu_priority, &e) < 0)
        log_warn("server.cpu_priority: the loop thread stays at its nice: %s", e.msg);
    loop_run(before_wait, after_wake);
    metrics_listen_stop();
    nsscache_stop();
    gpu_health_stop();
    gpu_history_stop();
    slurm_node_stop();
    for (size_t i = 0; i < core.njobs; i++)
        if (core.jobs[i]->followers)
            job_logs_detach(core.jobs[i]);
    runtime_build_shutdown();
    events_close_all();
    http_run();
    http_stop();
    job_cp_shutdown();
    audit_stop(); /* the refusals counted and not yet recorded */
    state_commit();
    volumes_shutdown();
    job_exec_stop_all();
    job_launch_shutdown();
    /* what no running job needs: the owners' /work filesystems, the runsc tmpfs */
    workfs_shutdown();
    isolation_shutdown();
    state_commit(); /* (what the shutdown wrote since) */
    if (!state_unsaved()) /* every row and event committed: the next start need not look for lost ones */
        db_stopped_clean(core.db);
    db_close(core.db);
    for (size_t i = 0; i < core.njobs; i++)
        job_free(core.jobs[i]);
    free(core.jobs);
    jobs_index_free();
    workflow_free_all();
    arrays_free_all();
    depend_free_all();
    gpu_discovery_free(&core.gpu);
    free(core.driver_libs);
    log_info("joblet stopped");
    return 0;
}
