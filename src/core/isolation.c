#include "isolation.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "account.h"
#include "state.h"

static isolation_caps caps;
static char runsc_root[600];

static void runsc_root_mount(void);

const char *isolation_runsc_root(void)
{
    /* at the first gVisor job: a daemon that runs none mounts nothing */
    if (!runsc_root[0])
        runsc_root_mount();
    return runsc_root;
}

/* <state_dir>/runsc on a memory file system of its own (0700 root): runsc's state and the jobs'
 * bundles hold their secret environment, which must not reach the disk. Mounted once; a
 * restarted joblet finds it mounted (its running sandboxes' state is there) and keeps it. */
static void runsc_root_mount(void)
{
    snprintf(runsc_root, sizeof runsc_root, "%s/runsc", core.cfg.state_dir);
    jerr e = {0};
    if (mkdir_p(runsc_root, 0700, &e) < 0) {
        log_warn("gVisor: %s", e.msg);
        return;
    }
    /* Without nosuid, nodev or noexec, which would be locked on the bundles' roots in the user
     * namespace runsc runs in (exec/oci.h): its gofer's read-only remount of the root must keep
     * them, and names none. Nothing to misuse: only root writes here, and what is written is
     * the bundles' config and empty mount points, never served as files to a job. */
    const char *opts = "mode=0700,size=64m";
    struct stat here, parent;
    if (stat(runsc_root, &here) == 0 && stat(core.cfg.state_dir, &parent) == 0 && here.st_dev != parent.st_dev) {
        /* mounted already (its running sandboxes' state is there), perhaps with those flags */
        if (mount(NULL, runsc_root, NULL, MS_REMOUNT, opts) < 0)
            log_warn("gVisor: cannot remount %s without nosuid, nodev, noexec (%s): gVisor jobs may not start",
                     runsc_root, strerror(errno));
        return;
    }
    if (mount("joblet-runsc", runsc_root, "tmpfs", 0, opts) < 0)
        log_warn("gVisor: cannot mount a tmpfs on %s (%s): the jobs' bundles and runsc's state, with their "
                 "secret environment, go to its disk", runsc_root, strerror(errno));
}

void isolation_shutdown(void)
{
    /* mounted by this daemon or by an earlier one (which this one found and kept) */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/runsc", core.cfg.state_dir);
    struct stat here, parent;
    if (stat(dir, &here) < 0 || stat(core.cfg.state_dir, &parent) < 0 || here.st_dev == parent.st_dev)
        return;
    for (size_t i = 0; i < core.njobs; i++) {
        const job *j = core.jobs[i];
        if (j->shim_pid > 0 && isolation_gvisor(&j->req))
            return;
    }
    if (umount2(dir, UMOUNT_NOFOLLOW) < 0 && (errno != EBUSY || umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0))
        log_warn("gVisor: the tmpfs on %s stays mounted: %s", dir, strerror(errno));
    else
        log_info("gVisor: no gVisor job runs: unmounted %s", dir);
}

const isolation_caps *isolation_caps_get(void) { return &caps; }

/* The output (stdout and stderr together) of argv, at most len - 1 bytes, within 5 seconds;
 * -1 when it could not run or did not exit 0. */
static int capture(const char *const *argv, char *out, size_t len)
{
    /* spawned, not forked: a fork marks every page of the daemon copy-on-write, and the start's
     * next pass over the jobs (jobs_index_rebuild) took a page fault for each of them again:
     * 61,000 faults, 0.8-1.7 s of a start with 150,000 jobs kept on a VM */
    pid_t pid;
    int pidfd, fd;
    if (spawn_piped(argv[0], (char *const *)argv, &pid, &pidfd, &fd) < 0) {
        snprintf(out, len, "%s", strerror(errno));
        return -1;
    }
    close(pidfd);
    size_t n = 0;
    int64_t deadline = mono_ns() + 5000000000LL;
    for (;;) {
        int left = (int)((deadline - mono_ns()) / 1000000);
        struct pollfd pf = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pf, 1, left) <= 0)
            break;
        char buf[4096];
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t take = (size_t)r < len - 1 - n ? (size_t)r : len - 1 - n;
        memcpy(out + n, buf, take);
        n += take;
    }
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
        n--; /* (its last newline: the text goes into a sentence) */
    out[n] = 0;
    close(fd);
    int st;
    pid_t w;
    /* EOF comes as it exits, a moment before it can be reaped */
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && mono_ns() < deadline)
        usleep(1000);
    if (w != pid) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Faults of runsc releases that a job meets in ordinary commands, by the first release
 * without them (gVisor's release-YYYYMMDD.N; Debian packages it as 0.0~YYYYMMDD.N). Told at
 * start and by `rnx --version`, so that an operator learns it from joblet, not from a user. */
static const struct {
    long fixed_in; /* the first release without the fault */
    const char *what;
} runsc_faults[] = {
    /* gVisor 7a0c4b574 (statx) and 2df63d779 (fstatat): AT_NO_AUTOMOUNT was refused; coreutils
     * pass it, and glibc's statx fallback passes it on to fstatat */
    {20231030, "statx() and fstatat() with AT_NO_AUTOMOUNT fail with EINVAL inside the sandbox "
               "(`ls -l`, `stat`, `cp -a` say 'Invalid argument'; fixed in gVisor release-20231030): "
               "install a newer runsc (gVisor's apt repository)"},
};

/* The release date in "0.0~20221219.0" or "release-20221219.0", else 0. */
static long runsc_release(const char *version)
{
    for (const char *p = version; *p; p++)
        if (strspn(p, "0123456789") == 8 && (p == version || p[-1] == '~' || p[-1] == '-'))
            return strtol(p, NULL, 10);
    return 0;
}

static void probe(void)
{
    static char text[1 << 16];
    const char *cfg = core.cfg.isolation_runsc;
    static const char *const where[] = {"/usr/bin/runsc", "/usr/local/bin/runsc", "/usr/sbin/runsc", NULL};
    if (*cfg)
        snprintf(caps.runsc, sizeof caps.runsc, "%s", cfg);
    else
        for (const char *const *w = where; *w && !caps.runsc[0]; w++)
            if (access(*w, X_OK) == 0)
                snprintf(caps.runsc, sizeof caps.runsc, "%s", *w);
    if (!caps.runsc[0]) {
        snprintf(caps.why, sizeof caps.why, "runsc is not installed (apt-get install runsc, or isolation.runsc)");
        return;
    }
    if (access(caps.runsc, X_OK) < 0) {
        snprintf(caps.why, sizeof caps.why, "%s (isolation.runsc): %s", caps.runsc, strerror(errno));
        return;
    }
    const char *version[] = {caps.runsc, "--version", NULL};
    if (capture(version, text, sizeof text) < 0) {
        snprintf(caps.why, sizeof caps.why, "%s --version failed: %.200s", caps.runsc, text);
        return;
    }
    /* "runsc version 0.0~20221219.0\nspec: 1.0.2-dev" */
    const char *v = strstr(text, "version ");
    v = v ? v + 8 : text;
    snprintf(caps.version, sizeof caps.version, "%.*s", (int)strcspn(v, "\n"), v);
    /* the flags: `runsc flags` (runsc --help lists only the subcommands) */
    const char *flags[] = {caps.runsc, "flags", NULL};
    if (capture(flags, text, sizeof text) < 0) {
        const char *help[] = {caps.runsc, "--help", NULL};
        capture(help, text, sizeof text);
    }
    long release = runsc_release(caps.version);
    for (size_t i = 0; release && i < sizeof runsc_faults / sizeof runsc_faults[0] && !caps.fault[0]; i++)
        if (release < runsc_faults[i].fixed_in)
            snprintf(caps.fault, sizeof caps.fault, "%s", runsc_faults[i].what);
    caps.nvproxy = strstr(text, "-nvproxy") != NULL;
    caps.systrap = strstr(text, "systrap") != NULL;
    const char *plat = core.cfg.isolation_platform;
    if (!*plat)
        plat = caps.systrap ? "systrap" : "ptrace";
    snprintf(caps.platform, sizeof caps.platform, "%s", plat);
    if (!strcmp(plat, "systrap") && !caps.systrap) {
        snprintf(caps.why, sizeof caps.why, "isolation.platform is systrap, which runsc %s does not have", caps.version);
        return;
    }
    if (!strcmp(plat, "kvm") && access("/dev/kvm", R_OK | W_OK) < 0) {
        snprintf(caps.why, sizeof caps.why, "isolation.platform is kvm, but /dev/kvm: %s", strerror(errno));
        return;
    }
    caps.gvisor = true;
}

int isolation_init(jerr *e)
{
    memset(&caps, 0, sizeof caps);
    const char *d = core.cfg.isolation_default, *p = core.cfg.isolation_platform;
    if (strcmp(d, "native") && strcmp(d, "gvisor"))
        return jerr_set(e, EINVAL, "isolation.default: '%s' is not native or gvisor", d);
    if (*p && strcmp(p, "systrap") && strcmp(p, "ptrace") && strcmp(p, "kvm"))
        return jerr_set(e, EINVAL, "isolation.platform: '%s' is not systrap, ptrace or kvm", p);
    probe();
    if (caps.gvisor) {
        log_info("gVisor: runsc %s at %s, platform %s, nvproxy %s", caps.version, caps.runsc, caps.platform,
                 caps.nvproxy ? "yes" : "no");
        if (caps.fault[0])
            log_warn("gVisor: runsc %s: %s", caps.version, caps.fault);
    } else if (!strcmp(d, "gvisor") || core.cfg.isolation_require_gvisor[0])
        return jerr_set(e, EINVAL, "isolation.%s asks for gVisor, but %s",
                        strcmp(d, "gvisor") ? "require_gvisor" : "default", caps.why);
    return 0;
}

/* The item of isolation.require_gvisor that names uid (its user name) or one of its groups
 * (@group), copied to rule: 1; 0 when none does; -1 when one could but its account or group is
 * not known now (nsscache.h: asked off the loop), or its look-up failed. */
static int required(uid_t uid, gid_t gid, char *rule, size_t len)
{
    if (!core.cfg.isolation_require_gvisor[0])
        return 0;
    return account_listed_known(core.cfg.isolation_require_gvisor, uid, gid, rule, len);
}

bool isolation_gvisor(const job_req *req) { return req->isolation && !strcmp(req->isolation, "gvisor"); }

bool isolation_wants_gpus(const job_req *req)
{
    return (jobreq_has(req, JR_GPU_COUNT) && req->gpu_count > 0) || req->gpu_all || req->ngpu_ids > 0 ||
           req->gpu_mig || req->ndevices > 0;
}

/* A gVisor GPU job on a runsc without nvproxy: refused, with what the user can do. rule: the item
 * of isolation.require_gvisor that names the user (then native is no way out, and the message
 * does not offer it), or NULL. */
static int gpus_refused(const job_req *req, const char *rule, uid_t uid, jerr *e)
{
    if (!(req->isolation && !strcmp(req->isolation, "gvisor") && isolation_wants_gpus(req) && !caps.nvproxy))
        return 0;
    if (rule)
        return jerr_field(e, "isolation", "isolation: a GPU job under gVisor needs runsc with nvproxy (--nvproxy, "
                                          "in gVisor releases from 2023 on); this machine has runsc %s (%s), "
                                          "which has none, and isolation.require_gvisor lists '%s', so uid %u's "
                                          "jobs cannot run natively: run it without GPUs, or ask the machine's "
                                          "admin for a newer runsc",
                          caps.version, caps.runsc, rule, (unsigned)uid);
    return jerr_field(e, "isolation", "isolation: a GPU job under gVisor needs runsc with nvproxy (--nvproxy, "
                                      "in gVisor releases from 2023 on); this machine has runsc %s (%s), "
                                      "which has none: run the job with --isolation=native, or install a newer "
                                      "runsc",
                      caps.version, caps.runsc);
}

int isolation_check_gpus(const job_req *req, uid_t uid, gid_t gid, jerr *e)
{
    if (gpus_refused(req, NULL, uid, e) == 0)
        return 0;
    /* refused: in the owner's words as at submission (native is no way out for a user
     * isolation.require_gvisor lists; one not known now is told both ways) */
    char rule[80];
    int must = required(uid, gid, rule, sizeof rule);
    return must > 0 ? gpus_refused(req, rule, uid, e) : -1;
}

int isolation_decide(job_req *req, uid_t uid, gid_t gid, jerr *e)
{
    char rule[80];
    int must = required(uid, gid, rule, sizeof rule);
    if (must < 0) /* (the API waited for them: expired meanwhile, or failed) */
        return jerr_busy(e, "isolation.require_gvisor's '%s' could not be looked up for uid %u now: try again",
                         rule, (unsigned)uid);
    /* gvisor, when decided here, is written into the request (the job shows it as its own);
     * native stays unwritten: a request without isolation is native */
    const char *dflt = must ? "gvisor" : *core.cfg.isolation_default ? core.cfg.isolation_default : "native";
    if (!req->isolation && strcmp(dflt, "native"))
        jobreq_set_str(req, JR_ISOLATION, dflt);
    if (!req->isolation)
        return 0;
    if (must && strcmp(req->isolation, "gvisor"))
        return jerr_http(e, 403, "isolation: native is refused: isolation.require_gvisor lists '%s', so uid %u's "
                                 "jobs run under gVisor (leave --isolation out, or give --isolation=gvisor)",
                         rule, (unsigned)uid);
    if (strcmp(req->isolation, "gvisor"))
        return 0;
    if (!caps.gvisor)
        return jerr_field(e, "isolation", "isolation: gvisor is not available on this machine: %s", caps.why);
    if (req->tty || req->stdin_open) {
        const char *f = req->tty ? "tty" : "stdin";
        return jerr_field(e, f, "%s: a job under gVisor cannot %s yet (-t and -i, and so rnx job attach, are for "
                                "native jobs); run it %swithout -t and -i (rnx job exec [-it] works in a running "
                                "gVisor job)",
                          f, req->tty ? "have a terminal" : "take its stdin from rnx",
                          must ? "" : "with --isolation=native, or ");
    }
    return gpus_refused(req, must ? rule : NULL, uid, e);
}

int isolation_recheck(const job_req *req, uid_t uid, gid_t gid, jerr *e)
{
    char rule[80];
    int must = isolation_gvisor(req) ? 0 : required(uid, gid, rule, sizeof rule);
    if (must < 0) /* the job waits (queue.c), asked again once it is answered */
        return jerr_busy(e, "isolation.require_gvisor's '%s' is being looked up, or could not be, for uid %u",
                         rule, (unsigned)uid);
    if (!must)
        return 0;
    return jerr_http(e, 403, "isolation: native is refused at its start: isolation.require_gvisor lists '%s' now, so "
                             "uid %u's jobs run under gVisor (submit it again)", rule, (unsigned)uid);
}

json_t *isolation_json(void)
{
    json_t *modes = json_array();
    json_array_append_new(modes, json_pack("{s:s,s:b}", "name", "native", "available", 1));
    json_t *g = json_pack("{s:s,s:b}", "name", "gvisor", "available", caps.gvisor);
    if (caps.runsc[0])
        json_object_set_new(g, "runsc", json_string(caps.runsc));
    if (caps.version[0])
        json_object_set_new(g, "version", json_string(caps.version));
    if (caps.gvisor) {
        json_object_set_new(g, "platform", json_string(caps.platform));
        json_object_set_new(g, "nvproxy", json_boolean(caps.nvproxy));
        if (caps.fault[0])
            json_object_set_new(g, "fault", json_string(caps.fault));
    } else {
        json_object_set_new(g, "why", json_string(caps.why));
    }
    json_array_append_new(modes, g);
    return json_pack("{s:s,s:o}", "default", core.cfg.isolation_default, "modes", modes);
}
