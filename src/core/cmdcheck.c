/* A job's command, resolved at submission (cmdcheck.h). */
#include "cmdcheck.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/cmdpath.h"
#include "../exec/isolate.h"
#include "job_launch.h"
#include "runtimes.h"
#include "state.h"

enum found { FOUND, MISSING, NOEXEC, UNKNOWN };

/* PATH entries looked at, at most, per name: each is a few system calls on the loop, and a
 * request (a workflow of 1,000 jobs) may carry a PATH of thousands; past them the command is
 * left to the job, as one in a volume is. */
#define CMDCHECK_PATH_MAX 32

/* The root a command is looked for in: a runtime's tree (an O_PATH fd on it), or the host's
 * system directories as the job is given them (fd -1). */
typedef struct root {
    int fd;
    const char *name;          /* the runtime's, NULL for the host */
} root;

static enum found by_mode(const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return MISSING;
    return st->st_mode & 0111 ? FOUND : NOEXEC;
}

/* A path beneath one of the system directories, in the root. The host's are bound at their own
 * paths, so a link leading out of them (to /opt, say) leads nowhere in the job; a runtime's
 * tree is read as the job's root (its links resolved inside it). */
static enum found in_root(const root *r, const char *path)
{
    struct stat st;
    if (r->fd >= 0) {
        struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
        int fd = (int)syscall(SYS_openat2, r->fd, path + 1, &how, sizeof how);
        if (fd < 0)
            return MISSING;
        int rc = fstat(fd, &st);
        close(fd);
        return rc < 0 ? MISSING : by_mode(&st);
    }
    char *real = realpath(path, NULL);
    bool seen = real && cmdpath_in_dirs(real, mounts_system_dirs) && stat(real, &st) == 0;
    free(real);
    return seen ? by_mode(&st) : MISSING;
}

/* An upload at rel (beneath /work). A symlink's target is not followed here: the job's. */
static enum found in_uploads(const job_req *req, const char *rel)
{
    for (size_t i = 0; i < req->nuploads; i++) {
        const jobreq_upload *u = &req->uploads[i];
        if (strcmp(u->path, rel))
            continue;
        if (!strcmp(u->type, "symlink"))
            return UNKNOWN;
        if (strcmp(u->type, "file"))
            return MISSING;
        return !u->has_mode || (u->mode & 0111) ? FOUND : NOEXEC;
    }
    return MISSING;
}

/* What the job's root holds besides the system directories and /work whose contents cannot be
 * known at submission: volumes (an earlier job may make the program there) and GPU mounts
 * (/opt/nvidia/..., a toolkit at its host path). Anything else is a fresh tmpfs (/tmp,
 * /dev/shm), the kernel's (/proc, /sys, /dev) or absent from the job. */
static const char *const unchecked[] = {"/volumes", "/opt", NULL};

static bool in_toolkit_mount(const job_req *req, const char *path)
{
    bool gpu = req->gpu_count > 0 || req->ngpu_ids || req->gpu_all || req->gpu_mig;
    for (int i = 0; gpu && i < core.gpu.ncuda; i++)
        if (cmdpath_under(path, core.gpu.cuda[i].path))
            return true;
    return false;
}

/* A path the job sees (absolute, normalised). */
static enum found probe(const job_req *req, const root *r, const char *path)
{
    const char *rel = cmdpath_under(path, "/work");
    if (rel)
        return *rel ? in_uploads(req, rel) : MISSING;
    if (cmdpath_in_dirs(path, unchecked) || in_toolkit_mount(req, path))
        return UNKNOWN;
    if (cmdpath_in_dirs(path, mounts_system_dirs))
        return in_root(r, path);
    return MISSING;
}

/* name along the PATH list from the working directory; *where gets the first path that was
 * not MISSING (or the last that was NOEXEC). */
static enum found along(const job_req *req, const root *r, const char *list, const char *workdir, const char *name,
                        char *where, size_t n)
{
    enum found best = MISSING;
    char dir[4200], joined[8400], path[4200];
    int entries = 0;
    for (const char *p = list; p;) {
        if (++entries > CMDCHECK_PATH_MAX)
            return best == NOEXEC ? NOEXEC : UNKNOWN; /* not looked at further: left to the job */
        p = cmdpath_next(p, dir, sizeof dir);
        snprintf(joined, sizeof joined, "%s/%s", dir, name);
        if (cmdpath_normalize(workdir, joined, path, sizeof path) < 0)
            continue;
        enum found f = probe(req, r, path);
        if (f == FOUND || f == UNKNOWN) {
            snprintf(where, n, "%s", path);
            return f;
        }
        if (f == NOEXEC) {
            best = NOEXEC;
            snprintf(where, n, "%s", path);
        }
    }
    return best;
}

/* A GPU job's PATH ends with its CUDA toolkit's bin (exec/spec_gpu.c): any of the host's. */
static bool in_toolkits(const job_req *req, const char *name)
{
    bool gpu = req->gpu_count > 0 || req->ngpu_ids || req->gpu_all || req->gpu_mig;
    for (int i = 0; gpu && i < core.gpu.ncuda; i++) {
        char path[600];
        struct stat st;
        snprintf(path, sizeof path, "%s/bin/%s", core.gpu.cuda[i].real, name);
        if (stat(path, &st) == 0 && by_mode(&st) == FOUND)
            return true;
    }
    return false;
}

static void append(char *buf, size_t n, const char *sep, const char *s)
{
    size_t l = strlen(buf);
    if (l + strlen(sep) + strlen(s) + 1 < n)
        snprintf(buf + l, n - l, "%s%s", l ? sep : "", s);
}

/* What exists instead of a name: NAME3, NAME2 or NAME without its version along the same PATH,
 * and the runtimes (other than this one) with NAME along the default PATH. */
static void alternatives(const job_req *req, const root *r, const char *list, const char *workdir, const char *name,
                         char *have, size_t nh, char *rts, size_t nr)
{
    char cand[3][300], where[4200];
    snprintf(cand[0], sizeof cand[0], "%s3", name);
    snprintf(cand[1], sizeof cand[1], "%s2", name);
    snprintf(cand[2], sizeof cand[2], "%s", name);
    size_t l = strlen(cand[2]);
    while (l && (cand[2][l - 1] == '.' || (cand[2][l - 1] >= '0' && cand[2][l - 1] <= '9')))
        cand[2][--l] = 0;
    for (size_t i = 0; i < 3; i++)
        if (cand[i][0] && strcmp(cand[i], name) && along(req, r, list, workdir, cand[i], where, sizeof where) == FOUND)
            append(have, nh, ", ", cand[i]);
    size_t n;
    char **names = runtimes_names(&n);
    for (size_t i = 0; i < n; i++) {
        const runtime *rt;
        jerr ignored = {0};
        if ((!r->name || strcmp(r->name, names[i])) && runtimes_find(names[i], &rt, &ignored) == 0) {
            root other = {open(rt->root, O_PATH | O_DIRECTORY | O_CLOEXEC), rt->name};
            if (other.fd >= 0 && along(req, &other, job_launch_default_path, "/", name, where, sizeof where) == FOUND)
                append(rts, nr, ", ", rt->name);
            if (other.fd >= 0)
                close(other.fd);
        }
        free(names[i]);
    }
    free(names);
}

/* The PATH a refusal names: the job's own, or "its secret PATH" when that is a secret_env value
 * (never returned by an endpoint nor logged: the refusal is both the 400 and, for a job that
 * fails at its start, its stored `error` and a log line). */
static void shown_path(const job_req *req, const char *list, char *out, size_t n)
{
    if (jobreq_env_get(req, true, "PATH"))
        snprintf(out, n, "its secret PATH (secret_env, not shown)");
    else
        snprintf(out, n, "PATH=%.400s", list);
}

static int refuse_missing(const job_req *req, const root *r, const char *list, const char *workdir, jerr *e)
{
    const char *name = req->command;
    char in[200], have[300] = "", rts[600] = "", also[1200] = "";
    if (r->name)
        snprintf(in, sizeof in, "runtime '%s'", r->name);
    else
        snprintf(in, sizeof in, "the host's system directories");
    if (strchr(name, '/')) {
        char path[4200];
        if (cmdpath_normalize(workdir, name, path, sizeof path) == 0 && cmdpath_under(path, "/work"))
            return jerr_field(e, "command", "command: '%.200s' is not in the job's /work: nothing of that name is "
                                            "uploaded (--upload); a program an earlier job makes goes in a volume "
                                            "(/volumes/NAME/...)", name);
        return jerr_field(e, "command", "command: '%.200s' does not exist in the job's root (%s)", name, in);
    }
    alternatives(req, r, list, workdir, name, have, sizeof have, rts, sizeof rts);
    if (have[0])
        snprintf(also, sizeof also, "; %s exists there", have);
    if (rts[0]) {
        size_t l = strlen(also);
        bool many = strchr(rts, ',');
        snprintf(also + l, sizeof also - l, "; the runtime%s %s ha%s '%.64s' (--runtime; rnx runtime list)",
                 many ? "s" : "", rts, many ? "ve" : "s", name);
    }
    char along_path[450];
    shown_path(req, list, along_path, sizeof along_path);
    return jerr_field(e, "command", "command: '%.200s' is not found in the job's root (%s) along %s%s", name, in,
                      along_path, also);
}

static int refuse_noexec(const char *name, const char *where, jerr *e)
{
    return jerr_field(e, "command", "command: '%.200s' (%.400s) has no execute permission: run it through its "
                                    "interpreter (sh %.200s, python3 %.200s) or upload it executable (chmod +x)",
                      name, where, name, name);
}

bool cmdcheck_dir_visible(const job_req *req, const char *path)
{
    char norm[4200];
    if (path[0] != '/' || cmdpath_normalize("/", path, norm, sizeof norm) < 0)
        return false;
    if (!strcmp(norm, "/work") || !strcmp(norm, "/tmp"))
        return true;
    if (!cmdpath_in_dirs(norm, mounts_system_dirs))
        return false;
    struct stat st;
    bool seen = false;
    if (req->runtime) {
        const runtime *rt;
        jerr e = {0};
        int fd = runtimes_find(req->runtime, &rt, &e) < 0 ? -1 : open(rt->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return false;
        struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
        int d = (int)syscall(SYS_openat2, fd, norm + 1, &how, sizeof how);
        seen = d >= 0 && fstat(d, &st) == 0 && S_ISDIR(st.st_mode);
        if (d >= 0)
            close(d);
        close(fd);
        return seen;
    }
    char *real = realpath(norm, NULL);
    seen = real && cmdpath_in_dirs(real, mounts_system_dirs) && stat(real, &st) == 0 && S_ISDIR(st.st_mode);
    free(real);
    return seen;
}

int cmdcheck_resolve(job_req *req, jerr *e)
{
    if (!req->command || !*req->command)
        return 0; /* the schema's */
    const char *workdir = req->workdir ? req->workdir : "/work";
    const char *list = jobreq_env_get(req, true, "PATH");
    if (!list)
        list = jobreq_env_get(req, false, "PATH");
    if (!list)
        list = job_launch_default_path;
    root r = {-1, NULL};
    if (req->runtime) {
        const runtime *rt;
        if (runtimes_find(req->runtime, &rt, e) < 0)
            return -1;
        r.name = rt->name;
        r.fd = open(rt->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (r.fd < 0)
            return jerr_sys(e, "runtime '%s': %s", rt->name, rt->root);
    }
    char where[4200] = "";
    bool along_secret = false;
    enum found f;
    if (strchr(req->command, '/')) {
        if (cmdpath_normalize(workdir, req->command, where, sizeof where) < 0)
            f = MISSING;
        else
            f = probe(req, &r, where);
    } else {
        f = along(req, &r, list, workdir, req->command, where, sizeof where);
        if (f == MISSING && in_toolkits(req, req->command))
            f = FOUND;
        /* found unexecutable along a secret PATH: where names one of its directories */
        along_secret = f == NOEXEC && jobreq_env_get(req, true, "PATH");
        /* an uploaded program named as a word: exec would not look in /work, so it runs by its
         * path, which the job then shows */
        enum found up = f == MISSING ? in_uploads(req, req->command) : MISSING;
        if (up != MISSING) {
            snprintf(where, sizeof where, "/work/%.300s", req->command);
            f = up;
            char path[400];
            snprintf(path, sizeof path, "%s%.300s", strcmp(workdir, "/work") ? "/work/" : "./", req->command);
            if (f != NOEXEC && jobreq_set_command(req, path, e) < 0) {
                if (r.fd >= 0)
                    close(r.fd);
                return -1;
            }
        }
    }
    int rc = 0;
    if (f == MISSING)
        rc = refuse_missing(req, &r, list, workdir, e);
    else if (f == NOEXEC)
        rc = refuse_noexec(req->command, along_secret ? "found along its secret PATH" : where, e);
    if (r.fd >= 0)
        close(r.fd);
    return rc;
}
