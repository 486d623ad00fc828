/* Building, importing and removing runtimes (runtime_build.h). Plan, then carry out: a
 * request is checked completely (recipe, admin, the build slot, the name, the jobs that use
 * it) before anything is created; the helper then does the slow part in its sandbox while the
 * loop watches three fds of it: its pidfd (it ended), its output (the log, read as it comes)
 * and a timer (runtimes.build_timeout_s). Its result line (fd 3) is read when it has ended. */
#include "runtime_build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/aptsrc.h"
#include "../common/digest.h"
#include "../common/log.h"
#include "../common/recipe.h"
#include "../common/util.h"
#include "arrays.h"
#include "incoming.h"
#include "runtime_log.h"
#include "state.h"

extern char **environ;

static rt_build *builds[RT_BUILDS_KEPT]; /* oldest first */
static size_t nbuilds;
static unsigned next_id = 1;
static rt_build *running;
static char helper[600], cache_dir[600], logs_dir[600];

/* Helpers deleting trees: nothing waits for them; they are reaped and forgotten. */
typedef struct remover {
    watch w;
    pid_t pid;
    struct remover *next;
} remover;
static remover *removers;

rt_build *const *runtime_build_list(size_t *n)
{
    *n = nbuilds;
    return builds;
}

rt_build *runtime_build_running(void) { return running; }

rt_build *runtime_build_find(unsigned id)
{
    for (size_t i = 0; i < nbuilds; i++)
        if (builds[i]->id == id)
            return builds[i];
    return NULL;
}

/* joblet-runtime-build with fds 0, 1+2 and 3 as given (-1: /dev/null, the daemon's own, none);
 * every other fd of the daemon stays behind. Its pid, and a pidfd in *pidfd. */
static pid_t spawn_helper(char *const argv[], int in_fd, int out_fd, int result_fd, int *pidfd, jerr *e)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (in_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (out_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
        posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
    }
    if (result_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, result_fd, 3);
    posix_spawn_file_actions_addclosefrom_np(&fa, result_fd >= 0 ? 4 : 3);
    pid_t pid;
    int rc = posix_spawn(&pid, helper, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        return jerr_sys(e, "start %s", helper);
    }
    *pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (*pidfd < 0) {
        jerr_sys(e, "watch %s", helper);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

static void on_remover_exit(watch *w, uint32_t events)
{
    remover *r = w->data;
    int st = 0;
    /* the SIGCHLD handler may have reaped it first: then its status is unknown, not bad */
    if (waitpid(r->pid, &st, WNOHANG) == r->pid && (!WIFEXITED(st) || WEXITSTATUS(st)))
        log_warn("runtimes: removing an old tree failed (joblet-runtime-build remove, status %d); the next "
                 "start of joblet tries again", st);
    loop_del(w);
    close(w->fd);
    for (remover **p = &removers; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    free(r);
}

/* Deletes the trees at paths (already renamed out of the way) in a helper. */
static void remove_later(char **paths, size_t n)
{
    if (!n)
        return;
    char **argv = xcalloc(n + 3, sizeof *argv);
    argv[0] = helper;
    argv[1] = "remove";
    for (size_t i = 0; i < n; i++)
        argv[2 + i] = paths[i];
    jerr e = {0};
    int pidfd;
    pid_t pid = spawn_helper(argv, -1, -1, -1, &pidfd, &e);
    free(argv);
    if (pid < 0) {
        log_err("runtimes: %s; the trees stay until the next start of joblet", e.msg);
        return;
    }
    remover *r = xcalloc(1, sizeof *r);
    *r = (remover){{pidfd, on_remover_exit, r}, pid, removers};
    removers = r;
    loop_add(&r->w);
}

/* Renames dir out of the way (.trash-<base>-<n>) and deletes it in a helper. */
static int trash(const char *dir, jerr *e)
{
    static unsigned seq;
    const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    char to[800];
    snprintf(to, sizeof to, "%s/.trash-%s-%d-%u", runtimes_dir(), base[0] == '.' ? base + 1 : base, (int)getpid(),
             ++seq);
    if (rename(dir, to) < 0)
        return errno == ENOENT ? 0 : jerr_sys(e, "rename %s", dir);
    char *paths[] = {to};
    remove_later(paths, 1);
    return 0;
}

int runtime_build_init(jerr *e)
{
    snprintf(helper, sizeof helper, "%s", core.shim_path);
    char *slash = strrchr(helper, '/');
    size_t at = slash ? (size_t)(slash + 1 - helper) : 0;
    snprintf(helper + at, sizeof helper - at, "joblet-runtime-build");
    if (core.cfg.runtimes_cache_dir[0])
        snprintf(cache_dir, sizeof cache_dir, "%s", core.cfg.runtimes_cache_dir);
    else
        snprintf(cache_dir, sizeof cache_dir, "%s/.cache", runtimes_dir());
    snprintf(logs_dir, sizeof logs_dir, "%s/.logs", runtimes_dir());
    if (mkdir_p(logs_dir, 0700, e) < 0 || (core.cfg.runtimes_cache_keep && mkdir_p(cache_dir, 0700, e) < 0))
        return -1;
    if (access(helper, X_OK) < 0)
        log_warn("runtimes: %s: %s; runtimes cannot be built, imported or removed", helper, strerror(errno));
    /* What an earlier joblet left: builds it did not finish (renamed away first, so a new build
     * of the same name cannot meet the helper deleting them), trees it did not finish deleting,
     * and the logs of builds it no longer knows. */
    char **names = NULL, **paths = NULL;
    size_t nn = 0, n = 0;
    DIR *d = opendir(runtimes_dir());
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (!strncmp(de->d_name, ".trash-", 7) || !strncmp(de->d_name, ".build-", 7) ||
            !strncmp(de->d_name, ".import-", 8)) {
            names = xrealloc(names, (nn + 1) * sizeof *names);
            names[nn++] = xstrdup(de->d_name);
        }
    if (d)
        closedir(d);
    for (size_t i = 0; i < nn; i++) {
        char from[800];
        snprintf(from, sizeof from, "%s/%s", runtimes_dir(), names[i]);
        jerr te = {0};
        if (strncmp(names[i], ".trash-", 7)) {
            if (trash(from, &te) < 0)
                log_warn("runtimes: %s", te.msg);
        } else {
            paths = xrealloc(paths, (n + 1) * sizeof *paths);
            paths[n++] = xstrdup(from);
        }
        free(names[i]);
    }
    free(names);
    remove_later(paths, n);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    if ((d = opendir(logs_dir))) {
        while ((de = readdir(d)))
            if (de->d_name[0] != '.')
                unlinkat(dirfd(d), de->d_name, 0);
        closedir(d);
    }
    return 0;
}

/* ---- the log ---------------------------------------------------------------------------- */

/* Appends bytes to the build's log file, up to RT_LOG_MAX. */
static void log_append(rt_build *b, const char *p, size_t n)
{
    if (b->log_fd < 0)
        return;
    if (b->log_bytes + n > RT_LOG_MAX) {
        b->log_dropped += n;
        return;
    }
    size_t w = write_all(b->log_fd, p, n);
    b->log_bytes += w;
    b->log_dropped += n - w;
}

static bool starts_with(const char *p, size_t n, const char *prefix)
{
    return n >= strlen(prefix) && !memcmp(p, prefix, strlen(prefix));
}

static void take_line(rt_build *b, const char *p, size_t n)
{
    rtprogress_feed(&b->progress, p, n);
    if (starts_with(p, n, "joblet: extracting the cached build"))
        b->from_cache = true;
    else if (starts_with(p, n, "joblet: the cached build is unusable"))
        b->from_cache = false;
    if (n)
        snprintf(b->last_line, sizeof b->last_line, "%.*s", (int)(n < sizeof b->last_line ? n : sizeof b->last_line - 1), p);
}

/* The helper's output: into the log as it comes, and line by line into the progress. A line
 * longer than the buffer is cut where the buffer ends. */
static void take_output(rt_build *b, const char *p, size_t n)
{
    log_append(b, p, n);
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n' || p[i] == '\r') {
            take_line(b, b->line, b->nline);
            b->nline = 0;
        } else if (b->nline < sizeof b->line) {
            b->line[b->nline++] = p[i];
        }
    }
}

/* A line of the daemon's own in the log ("joblet: installed as ..."). */
__attribute__((format(printf, 2, 3))) static void log_line(rt_build *b, const char *fmt, ...)
{
    char text[1100];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof text - 2)
        n = (int)sizeof text - 2;
    text[n++] = '\n';
    text[n] = 0;
    take_output(b, text, (size_t)n);
}

static void drain_output(rt_build *b)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(b->w_out.fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0 || errno != EAGAIN) {
                loop_del(&b->w_out);
                close(b->w_out.fd);
                b->w_out.fd = -1;
            }
            return;
        }
        take_output(b, buf, (size_t)n);
    }
}

static void on_output(watch *w, uint32_t events)
{
    rt_build *b = w->data;
    drain_output(b);
    runtime_log_wake(b);
}

/* ---- the end of a build or import ----------------------------------------------------- */

/* runtime_build_each_user's walk of the uploads still arriving. */
typedef struct incoming_user {
    const char *name;
    void (*fn)(const char *id, uid_t owner, void *arg);
    void *arg;
} incoming_user;

static void incoming_uses(const job_req *r, const char *id, uid_t owner, void *arg)
{
    const incoming_user *iu = arg;
    if (r->runtime && !strcmp(r->runtime, iu->name))
        iu->fn(id, owner, iu->arg);
}

void runtime_build_each_user(const char *name, void (*fn)(const char *id, uid_t owner, void *arg), void *arg)
{
    for (size_t i = 0; i < core.njobs; i++) {
        const job *j = core.jobs[i];
        if (!job_state_terminal(j->state) && j->req.runtime && !strcmp(j->req.runtime, name))
            fn(j->id, j->owner_uid, arg);
    }
    /* an array's tasks not made yet (held, throttled, waiting for dependencies) were checked at
     * submission and are made with its request's runtime when they start (arrays.h) */
    size_t na;
    jarray **open = arrays_open(&na);
    for (size_t i = 0; i < na; i++)
        if (open[i]->req.runtime && !strcmp(open[i]->req.runtime, name))
            fn(open[i]->id, open[i]->owner_uid, arg);
    /* a streamed submission waiting for its bytes (checked at its POST, made unchecked once they
     * came: incoming.h), by its upload's id */
    incoming_user iu = {name, fn, arg};
    incoming_each_req(incoming_uses, &iu);
}

typedef struct users_text {
    size_t n;
    char *ids;
    size_t len;
} users_text;

/* One more user of a runtime into the text (runtime_build_users). */
static void users_add(const char *id, uid_t owner, void *arg)
{
    (void)owner;
    users_text *u = arg;
    size_t l = strlen(u->ids);
    if (u->n < 10 && l + 12 < u->len)
        snprintf(u->ids + l, u->len - l, "%s%.8s", u->n ? ", " : "", id);
    else if (u->n == 10 && l + 6 < u->len)
        snprintf(u->ids + l, u->len - l, ", ...");
    u->n++;
}

size_t runtime_build_users(const char *name, char *ids, size_t len)
{
    users_text u = {0, ids, len};
    if (len)
        ids[0] = 0;
    runtime_build_each_user(name, users_add, &u);
    return u.n;
}

/* The finished tree (b->dir) becomes the runtime `name`; -1 with b->error when it cannot. */
static int install(rt_build *b, const char *name)
{
    char target[800], users[200], newm[800];
    jerr e = {0};
    if (!jobreq_volume_name_ok(name, strlen(name)))
        return snprintf(b->error, sizeof b->error, "the archive names the runtime '%.64s', which is not a runtime "
                                                   "name", name), -1;
    snprintf(b->name, sizeof b->name, "%s", name);
    snprintf(target, sizeof target, "%s/%s", runtimes_dir(), name);
    snprintf(newm, sizeof newm, "%s/manifest.yml", b->dir);
    const runtime *have = NULL;
    struct stat st;
    if (lstat(target, &st) == 0) {
        runtimes_forget(name);
        jerr fe = {0};
        bool readable = runtimes_find(name, &have, &fe) == 0;
        manifest nm;
        if (b->import && readable && manifest_read(newm, &nm, &e) == 0) {
            bool same = !strcmp(nm.rootfs_sha256, have->m.rootfs_sha256);
            manifest_free(&nm);
            if (same) {
                log_line(b, "joblet: '%s' is installed already with this very tree (rootfs_sha256 %.12s)", name,
                         have->m.rootfs_sha256);
                trash(b->dir, &e);
                return 0;
            }
        }
        if (!b->replace)
            return snprintf(b->error, sizeof b->error, "a runtime '%s' is installed already%s; %s with --replace "
                                                       "to replace it, or remove it first (rnx runtime remove %s)",
                            name, readable ? " (another build)" : " (broken)", b->import ? "import" : "build", name), -1;
        size_t n = runtime_build_users(name, users, sizeof users);
        if (n)
            return snprintf(b->error, sizeof b->error, "runtime '%s' is in use by %zu job%s that ha%s not ended (%s); "
                                                       "it is replaced only when none uses it", name, n,
                            n == 1 ? "" : "s", n == 1 ? "s" : "ve", users), -1;
        if (trash(target, &e) < 0)
            return snprintf(b->error, sizeof b->error, "%s", e.msg), -1;
        log_line(b, "joblet: the runtime '%s' installed before is replaced", name);
    }
    if (rename(b->dir, target) < 0)
        return snprintf(b->error, sizeof b->error, "rename %s to %s: %s", b->dir, target, strerror(errno)), -1;
    runtimes_forget(name);
    if (runtimes_find(name, &have, &e) < 0)
        return snprintf(b->error, sizeof b->error, "%s", e.msg), -1;
    log_line(b, "joblet: installed as %s", target);
    log_info("runtimes: '%s' %s (%s, %llu bytes, rootfs sha256 %.12s)", name, b->import ? "imported" : "built",
             have->m.version, (unsigned long long)have->m.size_bytes, have->m.rootfs_sha256);
    return 0;
}

static void stop_watching(rt_build *b)
{
    if (b->w_pid.fd >= 0) {
        loop_del(&b->w_pid);
        close(b->w_pid.fd);
        b->w_pid.fd = -1;
    }
    if (b->w_out.fd >= 0) {
        loop_del(&b->w_out);
        close(b->w_out.fd);
        b->w_out.fd = -1;
    }
    if (b->w_result.fd >= 0) {
        close(b->w_result.fd);
        b->w_result.fd = -1;
    }
    if (b->w_timer.fd >= 0) {
        loop_del(&b->w_timer);
        close(b->w_timer.fd);
        b->w_timer.fd = -1;
    }
}

static void on_helper_exit(watch *w, uint32_t events)
{
    rt_build *b = w->data;
    int st = -1;
    waitpid(b->pid, &st, WNOHANG);
    if (b->w_out.fd >= 0)
        drain_output(b);
    if (b->nline) {
        take_line(b, b->line, b->nline);
        b->nline = 0;
    }
    ssize_t n;
    while (b->nresult < sizeof b->result - 1 &&
           (n = read(b->w_result.fd, b->result + b->nresult, sizeof b->result - 1 - b->nresult)) > 0)
        b->nresult += (size_t)n;
    b->result[b->nresult] = 0;
    b->result[strcspn(b->result, "\n")] = 0;
    stop_watching(b);
    int ok = -1;
    if (!strncmp(b->result, "ok ", 3))
        ok = install(b, b->result + 3);
    else if (b->error[0])
        ; /* the daemon killed it (timeout) and said why */
    else if (!strncmp(b->result, "error ", 6))
        snprintf(b->error, sizeof b->error, "%s", b->result + 6);
    else
        snprintf(b->error, sizeof b->error, "joblet-runtime-build ended without a result%s%s%s",
                 b->last_line[0] ? "; its last line: '" : "", b->last_line, b->last_line[0] ? "'" : "");
    if (ok < 0) {
        log_line(b, "joblet: failed: %s", b->error);
        log_err("runtimes: %s %s failed: %s", b->import ? "import" : "build of", b->name[0] ? b->name : "an archive",
                b->error);
        jerr e = {0};
        trash(b->dir, &e);
        runtimes_forget(b->name);
    }
    if (b->log_dropped) {
        char note[160];
        int l = snprintf(note, sizeof note, "joblet: %llu bytes of output were not kept (a log keeps %u MB)\n",
                         (unsigned long long)b->log_dropped, RT_LOG_MAX >> 20);
        b->log_bytes = 0; /* the note goes in even when the log is full */
        log_append(b, note, (size_t)l);
    }
    b->state = ok == 0 ? RTB_SUCCEEDED : RTB_FAILED;
    b->ended_ms = now_ms();
    close(b->log_fd);
    b->log_fd = -1;
    running = NULL;
    runtime_log_wake(b);
}

static void on_timeout(watch *w, uint32_t events)
{
    rt_build *b = w->data;
    uint64_t ticks;
    if (read(w->fd, &ticks, sizeof ticks) < 0)
        return;
    snprintf(b->error, sizeof b->error, "stopped after %llu s (runtimes.build_timeout_s)",
             (unsigned long long)core.cfg.runtimes_build_timeout_s);
    syscall(SYS_pidfd_send_signal, b->w_pid.fd, SIGKILL, NULL, 0);
    loop_del(w);
}

/* ---- starting ---------------------------------------------------------------------------- */

int runtime_build_busy(jerr *e)
{
    if (!running)
        return 0;
    return jerr_http(e, 409, "a runtime %s is running already (build %u, %s, started %llds ago); one at a time: "
                             "wait for it (rnx runtime builds)", running->import ? "import" : "build", running->id,
                     running->name[0] ? running->name : "an archive",
                     (long long)((now_ms() - running->started_ms) / 1000));
}

/* The first of names found in the daemon's PATH. */
static bool find_tool(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/sbin:/usr/bin:/sbin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, len, "%.*s/%s", (int)n, p, name);
        if (n && access(out, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}

static void forget_oldest(void)
{
    rt_build *old = builds[0];
    memmove(builds, builds + 1, (nbuilds - 1) * sizeof *builds);
    nbuilds--;
    runtime_log_detach(old);
    unlink(old->log_path);
    free(old);
}

/* A new record in the build slot, with its log file; -1 with e. */
static rt_build *new_build(bool import, const char *name, uid_t uid, jerr *e)
{
    rt_build *b = xcalloc(1, sizeof *b);
    b->id = next_id++;
    b->import = import;
    b->uid = uid;
    b->state = RTB_RUNNING;
    b->started_ms = now_ms();
    b->w_pid.fd = b->w_out.fd = b->w_result.fd = b->w_timer.fd = b->log_fd = -1;
    rtprogress_init(&b->progress);
    snprintf(b->name, sizeof b->name, "%s", name);
    if (import)
        snprintf(b->dir, sizeof b->dir, "%s/.import-%u-%d", runtimes_dir(), b->id, (int)getpid());
    else
        snprintf(b->dir, sizeof b->dir, "%s/.build-%s", runtimes_dir(), name);
    snprintf(b->log_path, sizeof b->log_path, "%s/%u.log", logs_dir, b->id);
    /* a tree of the same name left by a build whose helper is gone: out of the way */
    if (trash(b->dir, e) < 0 || mkdir(b->dir, 0755) < 0) {
        if (!e->msg[0])
            jerr_sys(e, "create %s", b->dir);
        free(b);
        return NULL;
    }
    b->log_fd = open(b->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (b->log_fd < 0) {
        jerr_sys(e, "create %s", b->log_path);
        rmdir(b->dir);
        free(b);
        return NULL;
    }
    return b;
}

/* Starts the helper for b with argv; fd in_fd as its stdin (-1 none). Takes b into the slot. */
static int launch(rt_build *b, char *const argv[], int in_fd, jerr *e)
{
    int out[2] = {-1, -1}, res[2] = {-1, -1}, pidfd = -1;
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0) {
        jerr_sys(e, "pipe");
        goto fail;
    }
    b->pid = spawn_helper(argv, in_fd, out[1], res[1], &pidfd, e);
    close(out[1]);
    close(res[1]);
    out[1] = res[1] = -1;
    if (b->pid < 0)
        goto fail;
    set_cloexec_nonblock(out[0]);
    set_cloexec_nonblock(res[0]);
    b->w_pid = (watch){pidfd, on_helper_exit, b};
    b->w_out = (watch){out[0], on_output, b};
    b->w_result = (watch){res[0], NULL, b};
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    struct itimerspec its = {.it_value = {(time_t)core.cfg.runtimes_build_timeout_s, 0}};
    if (tfd >= 0 && timerfd_settime(tfd, 0, &its, NULL) == 0) {
        b->w_timer = (watch){tfd, on_timeout, b};
        loop_add(&b->w_timer);
    } else if (tfd >= 0) {
        close(tfd);
    }
    loop_add(&b->w_out);
    loop_add(&b->w_pid);
    if (nbuilds == RT_BUILDS_KEPT)
        forget_oldest();
    builds[nbuilds++] = b;
    running = b;
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (res[i] >= 0)
            close(res[i]);
    }
    close(b->log_fd);
    unlink(b->log_path);
    rm_rf(b->dir);
    free(b);
    return -1;
}

int runtime_build_start(const char *text, size_t len, const char *source, unsigned how, uid_t uid,
                        const runtime **installed, rt_build **out, jerr *e)
{
    bool fresh = how & RTB_FRESH, replace = how & RTB_REPLACE;
    recipe r;
    if (recipe_parse(text, len, &r, e) < 0)
        return -1;
    char sha[DIGEST_HEX], tool[600], users[200];
    digest_sha256_hex(text, len, sha);
    int rc = -1;
    const runtime *have = NULL;
    jerr fe = {0};
    char target[800];
    struct stat st;
    snprintf(target, sizeof target, "%s/%s", runtimes_dir(), r.name);
    bool exists = lstat(target, &st) == 0;
    bool readable = exists && runtimes_find(r.name, &have, &fe) == 0;
    bool same = readable && !strcmp(have->m.recipe_sha256, sha);
    if (same && !fresh) {
        *installed = have;
        rc = 1;
        goto out;
    }
    replace = replace || same; /* a fresh build replaces the build of its own recipe */
    if (runtime_build_busy(e) < 0)
        goto out;
    if (exists && !replace) {
        if (readable)
            jerr_http(e, 409, "runtime '%s' is installed already, built from another recipe (sha256 %.12s, %s %s); "
                              "build with --replace to replace it, or remove it first (rnx runtime remove %s)",
                      r.name, have->m.recipe_sha256, have->m.recipe[0] ? have->m.recipe : "recipe", have->m.built_at,
                      r.name);
        else
            jerr_http(e, 409, "runtime '%s' is installed already but cannot be read (%s); build with --replace to "
                              "replace it, or remove it first (rnx runtime remove %s)", r.name, fe.msg, r.name);
        goto out;
    }
    size_t nusers = exists ? runtime_build_users(r.name, users, sizeof users) : 0;
    if (nusers) {
        jerr_http(e, 409, "runtime '%s' is in use by %zu job%s that ha%s not ended (%s); it can be replaced when "
                          "none uses it", r.name, nusers, nusers == 1 ? "" : "s", nusers == 1 ? "s" : "ve", users);
        goto out;
    }
    if (!find_tool("mmdebstrap", tool, sizeof tool) && !find_tool("debootstrap", tool, sizeof tool)) {
        jerr_http(e, 503, "building a runtime needs mmdebstrap or debootstrap, and this machine has neither in "
                          "joblet's PATH (%s); install one: apt-get install mmdebstrap",
                  getenv("PATH") ? getenv("PATH") : "unset");
        goto out;
    }
    /* the recipe's mirror, else the configured one, else the machine's own, else Debian's */
    char mirror[256];
    if (r.mirror[0])
        snprintf(mirror, sizeof mirror, "%s", r.mirror);
    else if (core.cfg.runtimes_mirror[0])
        snprintf(mirror, sizeof mirror, "%s", core.cfg.runtimes_mirror);
    else if (aptsrc_mirror("/etc/apt", r.suite, mirror, sizeof mirror) < 0)
        snprintf(mirror, sizeof mirror, "%s", APTSRC_FALLBACK);
    rt_build *b = new_build(false, r.name, uid, e);
    if (!b)
        goto out;
    b->replace = replace;
    snprintf(b->recipe_sha256, sizeof b->recipe_sha256, "%s", sha);
    snprintf(b->source, sizeof b->source, "%s", source && *source ? source : "recipe.yml");
    char rpath[800], keep[24];
    snprintf(rpath, sizeof rpath, "%s/recipe.yml", b->dir);
    snprintf(keep, sizeof keep, "%llu", (unsigned long long)core.cfg.runtimes_cache_keep);
    if (write_file_opt(rpath, text, len, 0644, 0, e) < 0) {
        rm_rf(b->dir);
        close(b->log_fd);
        unlink(b->log_path);
        free(b);
        goto out;
    }
    char *const argv[] = {helper, "build", "--dir", b->dir, "--tool", tool, "--mirror", mirror, "--cache-dir", cache_dir,
                          "--cache-keep", keep, "--source", b->source, fresh ? "--fresh" : NULL, NULL};
    if (launch(b, argv, -1, e) < 0)
        goto out;
    log_info("runtimes: building '%s' (build %u, recipe sha256 %.12s, %s, %s)", r.name, b->id, sha, tool, mirror);
    *out = b;
    rc = 0;
out:
    recipe_free(&r);
    return rc;
}

int runtime_build_import_file(jerr *e)
{
    int fd = open(runtimes_dir(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    /* a filesystem without O_TMPFILE: a named file, unlinked at once */
    char path[800];
    snprintf(path, sizeof path, "%s/.upload-XXXXXX", runtimes_dir());
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        return jerr_sys(e, "a file for the archive in %s", runtimes_dir());
    unlink(path);
    return fd;
}

rt_build *runtime_build_import(int fd, bool replace, uid_t uid, jerr *e)
{
    if (runtime_build_busy(e) < 0)
        return NULL;
    if (lseek(fd, 0, SEEK_SET) < 0) {
        jerr_sys(e, "rewind the archive");
        return NULL;
    }
    rt_build *b = new_build(true, "", uid, e);
    if (!b)
        return NULL;
    b->replace = replace;
    char keep[24];
    snprintf(keep, sizeof keep, "%llu", (unsigned long long)core.cfg.runtimes_cache_keep);
    char *const argv[] = {helper, "import", "--dir", b->dir, "--cache-dir", cache_dir, "--cache-keep", keep, NULL};
    if (launch(b, argv, fd, e) < 0)
        return NULL;
    log_info("runtimes: importing an archive (build %u)", b->id);
    return b;
}

int runtime_build_remove(const char *name, jerr *e)
{
    const runtime *rt;
    char users[200];
    if (runtimes_find(name, &rt, e) < 0) {
        char target[800];
        struct stat st;
        snprintf(target, sizeof target, "%s/%s", runtimes_dir(), name);
        /* a broken runtime can still be removed; an unknown one is a 404 */
        if (!jobreq_volume_name_ok(name, strlen(name)) || lstat(target, &st) < 0) {
            e->http = 404;
            return -1;
        }
    }
    if (running && !strcmp(running->name, name))
        return jerr_http(e, 409, "runtime '%s' is being built or imported (build %u); remove it when that is done",
                         name, running->id);
    size_t n = runtime_build_users(name, users, sizeof users);
    if (n)
        return jerr_http(e, 409, "runtime '%s' is in use by %zu job%s that ha%s not ended (%s); it can be removed "
                                 "when none uses it (rnx job stop ID, or wait)", name, n, n == 1 ? "" : "s",
                         n == 1 ? "s" : "ve", users);
    if (!strcmp(core.cfg.runtime_default, name))
        return jerr_http(e, 409, "runtime '%s' is runtimes.default in joblet's configuration: every job without "
                                 "--runtime runs in it; change the configuration first", name);
    char dir[800];
    snprintf(dir, sizeof dir, "%s/%s", runtimes_dir(), name);
    runtimes_forget(name);
    if (trash(dir, e) < 0)
        return -1;
    log_info("runtimes: '%s' removed", name);
    return 0;
}

int runtime_build_archive(const runtime *rt, char *path, size_t len, uint64_t *size, jerr *e)
{
    struct stat st;
    snprintf(path, len, "%s/%s.tar.zst", cache_dir, rt->m.recipe_sha256);
    if (!core.cfg.runtimes_cache_keep || !rt->m.recipe_sha256[0] || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return jerr_http(e, 404, "the cache (runtimes.cache_dir) has no archive of runtime '%s' (recipe sha256 "
                                 "%.12s): it was evicted (runtimes.cache_keep) or the cache is off; build it again "
                                 "from its recipe (rnx runtime build --fresh RECIPE.yml)", rt->name,
                         rt->m.recipe_sha256[0] ? rt->m.recipe_sha256 : "unknown");
    *size = (uint64_t)st.st_size;
    return 0;
}

void runtime_build_shutdown(void)
{
    if (running) {
        syscall(SYS_pidfd_send_signal, running->w_pid.fd, SIGKILL, NULL, 0);
        waitpid(running->pid, NULL, 0);
        stop_watching(running);
        close(running->log_fd);
        running = NULL;
    }
    while (nbuilds)
        forget_oldest();
    for (remover *r = removers, *next; r; r = next) {
        next = r->next;
        loop_del(&r->w);
        close(r->w.fd);
        free(r);
    }
    removers = NULL;
}
