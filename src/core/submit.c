/* Submission (submit.h). */
#include "submit.h"
#include "arrays.h"
#include "volumes.h"
#include "networks.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/b64.h"
#include "../common/jsonx.h"
#include "../common/log.h"
#include "../common/parse.h"
#include "../common/util.h"
#include "../gpu/inventory.h"
#include "account.h"
#include "qclock.h"
#include "cmdcheck.h"
#include "gpu_validate.h"
#include "isolation.h"
#include "job_events.h"
#include "jobs.h"
#include "runtimes.h"
#include "state.h"
#include "statedisk.h"
#include "submit.h"
#include "job_row.h"
#include "job_dirs.h"
#include "workfs.h"
#include "depend.h"
#include "workflow.h"

/* What the machine decides of a request whose form the schema (jobreq.c) checked: its CPUs,
 * memory and I/O device, the uploads' total size, and the GPUs; at submission, the machine's
 * default runtime for a request that names none (not at a change: rnx job update of a job
 * submitted without one gives it none). */
static int check_machine(job_req *req, bool submission, uint64_t *total, jerr *e)
{
    jobreq_machine m = {core.ncpus, core.mem_total_mb, core.online_cpus};
    if (jobreq_check_machine(req, &m, e) < 0)
        return -1;
    if (req->max_iobps && !core.io_dev[0])
        return jerr_field(e, "max_iobps", "max_iobps: I/O limits cannot be enforced here: %s", core.io_dev_why);
    /* the bytes declared by a streamed request, or what its content_b64 decodes to at most */
    *total = 0;
    for (size_t i = 0; i < req->nuploads; i++)
        if (req->uploads[i].content_b64)
            *total += b64_decoded_max(strlen(req->uploads[i].content_b64));
        else if (req->uploads[i].size > 0)
            *total += (uint64_t)req->uploads[i].size;
    if (*total > core.cfg.max_upload_bytes + (jobreq_uploads_streamed(req) ? 0 : 3))
        return jerr_http(e, 413, "uploads: %llu bytes in total exceed the limit of %llu bytes (jobs.max_upload_bytes)",
                         (unsigned long long)*total, (unsigned long long)core.cfg.max_upload_bytes);
    /* the runtime it runs in: its own, or the machine's default (runtimes.default), which the
     * job then shows as its own */
    if (submission && !req->runtime && core.cfg.runtime_default[0])
        jobreq_set_str(req, JR_RUNTIME, core.cfg.runtime_default);
    const runtime *rt;
    if (req->runtime && runtimes_find(req->runtime, &rt, e) < 0)
        return -1;
    return gpu_validate(req, e);
}

/* What the request names on this machine besides GPUs: its volumes and networks, used as the
 * account the job acts as (authz_as_account). */
static int check_names(job_req *req, const caller *as, jerr *e)
{
    return volumes_check(req, as, e) < 0 || networks_check(req, as, e) < 0 ? -1 : 0;
}

/* The directory an upload's path names, opened beneath work/ without following any symlink, so a
 * link sent earlier in the same request cannot redirect a later file outside the job; *base is
 * the last component. Returns workfd itself for a top-level path. */
static int upload_parent(int workfd, const char *path, const char **base, jerr *e)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash)
        return workfd;
    char parent[1100];
    snprintf(parent, sizeof parent, "%.*s", (int)(slash - path), path);
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    int dfd = (int)syscall(SYS_openat2, workfd, parent, &how, sizeof how);
    /* (what the path names is refused; anything else, out of descriptors or memory, is joblet's
     * trouble of the moment: a 5xx, so that an array's next task waits instead of ending it) */
    if (dfd < 0 && errno != ENOENT && errno != ENOTDIR && errno != ELOOP && errno != EXDEV)
        return jerr_sys(e, "uploads: '%s': open its directory '%s'", path, parent);
    if (dfd < 0)
        return jerr_field(e, "uploads", "uploads: '%s': its directory '%s' must be uploaded first (as a directory, not a link)",
                          path, parent);
    return dfd;
}

int submit_upload_create(int workfd, jobreq_upload *u, uid_t uid, gid_t gid, int *fd, jerr *e)
{
    const char *base;
    int dfd = upload_parent(workfd, u->path, &base, e);
    if (dfd < 0)
        return -1;
    /* setuid, setgid and sticky bits are not kept (docs/api.md): the listing shows the mode applied */
    u->mode = (u->has_mode ? u->mode : !strcmp(u->type, "dir") ? 0755 : 0644) & 0777;
    u->has_mode = true;
    int rc = 0;
    *fd = -1;
    if (!strcmp(u->type, "dir")) {
        if (mkdirat(dfd, base, 0700) < 0 || fchmodat(dfd, base, u->mode, 0) < 0)
            rc = jerr_sys(e, "uploads: '%s'", u->path);
    } else if (!strcmp(u->type, "symlink")) {
        if (symlinkat(u->target, dfd, base) < 0)
            rc = jerr_sys(e, "uploads: '%s'", u->path);
    } else {
        *fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (*fd < 0)
            rc = jerr_sys(e, "uploads: '%s'", u->path);
    }
    if (rc == 0 && uid != (uid_t)-1 && fchownat(dfd, base, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
        rc = jerr_sys(e, "uploads: '%s': chown", u->path);
    if (rc < 0 && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    if (dfd != workfd)
        close(dfd);
    u->written = rc == 0;
    if (strcmp(u->type, "file"))
        u->size = 0;
    return rc;
}

int submit_upload_done(int fd, jobreq_upload *u, uint64_t size, jerr *e)
{
    int rc = fchmod(fd, u->mode) < 0 ? jerr_sys(e, "uploads: '%s'", u->path) : 0;
    if (close(fd) < 0 && rc == 0)
        rc = jerr_sys(e, "uploads: '%s': write", u->path);
    u->size = (int64_t)size;
    return rc;
}

int submit_upload_write(int fd, const jobreq_upload *u, const void *data, size_t len, jerr *e)
{
    if (write_all(fd, data, len) != len)
        return jerr_sys(e, "uploads: '%s': write", u->path);
    return 0;
}

int submit_upload_inline(int workfd, jobreq_upload *u, uid_t uid, gid_t gid, jerr *e)
{
    size_t len = 0;
    void *data = NULL;
    if (!strcmp(u->type, "file")) {
        data = u->content_b64 ? b64_decode(u->content_b64, strlen(u->content_b64), &len) : xstrdup("");
        if (!data)
            return jerr_field(e, "uploads", "uploads: '%s': content_b64 is not valid base64", u->path);
        if (u->size >= 0 && (uint64_t)u->size != len) {
            free(data);
            return jerr_field(e, "uploads", "uploads: '%s': size %lld does not match its content_b64 (%zu bytes)",
                              u->path, (long long)u->size, len);
        }
    }
    int fd;
    int rc = submit_upload_create(workfd, u, uid, gid, &fd, e);
    if (rc == 0 && fd >= 0) {
        rc = submit_upload_write(fd, u, data, len, e);
        if (rc < 0)
            close(fd);
        else
            rc = submit_upload_done(fd, u, len, e);
    }
    free(data);
    free(u->content_b64);
    u->content_b64 = NULL;
    return rc;
}

/* Gives the job's uid every upload and work/ itself, once the files are written (a root job's
 * uid is chosen when it is created, after a streamed upload was written). Beneath work/ and
 * without following links, as they were written. */
static int own_uploads(job *j, const char *work, jerr *e)
{
    if (chown(work, j->uid, j->gid) < 0)
        return jerr_sys(e, "chown %s", work);
    if (!j->req.nuploads)
        return 0;
    int workfd = open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (workfd < 0)
        return jerr_sys(e, "open %s", work);
    int rc = 0, dfd = -1;
    char last[1100] = "";  /* the directory dfd is open on: entries come grouped by directory */
    for (size_t i = 0; i < j->req.nuploads && rc == 0; i++) {
        const char *path = j->req.uploads[i].path, *slash = strrchr(path, '/');
        size_t plen = slash ? (size_t)(slash - path) : 0;
        if (dfd < 0 || strlen(last) != plen || strncmp(last, path, plen)) {
            if (dfd >= 0 && dfd != workfd)
                close(dfd);
            const char *base;
            dfd = upload_parent(workfd, path, &base, e);
            snprintf(last, sizeof last, "%.*s", (int)plen, path);
            if (dfd < 0) {
                rc = -1;
                break;
            }
        }
        const char *base = slash ? slash + 1 : path;
        if (fchownat(dfd, base, j->uid, j->gid, AT_SYMLINK_NOFOLLOW) < 0)
            rc = jerr_sys(e, "uploads: '%s': chown", path);
    }
    if (dfd >= 0 && dfd != workfd)
        close(dfd);
    close(workfd);
    return rc;
}

/* work/ itself, its entries given to the job as they were written (submit_info.owned) */
static int own_work(job *j, const char *work, jerr *e)
{
    return chown(work, j->uid, j->gid) < 0 ? jerr_sys(e, "chown %s", work) : 0;
}

/* The JSON form: work/ and the uploads written from the request, then only their listing is
 * kept (no content). */
static int create_uploads(job *j, const char *dir, jerr *e)
{
    char work[800];
    if (workfs_make(j->owner_uid, dir, work, sizeof work, e) < 0)
        return -1;
    if (!j->req.nuploads)
        return own_uploads(j, work, e); /* work/ itself */
    int workfd = open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (workfd < 0)
        return jerr_sys(e, "open %s", work);
    int rc = 0;
    for (size_t i = 0; i < j->req.nuploads && rc == 0; i++)
        rc = submit_upload_inline(workfd, &j->req.uploads[i], (uid_t)-1, (gid_t)-1, e);
    close(workfd);
    return rc < 0 ? rc : own_uploads(j, work, e);
}

/* Jobs promised by streamed uploads still arriving, per user: they count as waiting jobs for
 * limits.max_queued_per_user, so a user cannot pass it by uploading slowly, and their requests'
 * bytes for limits.max_request_bytes_per_user, so that uploads open together do not each pass
 * the bound the others will fill. */
static struct promise {
    uid_t uid;
    uint64_t jobs, bytes;
} *promises;
static size_t npromises;

static struct promise promised_of(uid_t uid)
{
    for (size_t i = 0; i < npromises; i++)
        if (promises[i].uid == uid)
            return promises[i];
    return (struct promise){uid, 0, 0};
}

static uint64_t promised(uid_t uid) { return promised_of(uid).jobs; }

void submit_promise(uid_t uid, int64_t jobs, int64_t bytes)
{
    for (size_t i = 0; i < npromises; i++)
        if (promises[i].uid == uid) {
            promises[i].jobs = (uint64_t)((int64_t)promises[i].jobs + jobs);
            promises[i].bytes = (uint64_t)((int64_t)promises[i].bytes + bytes);
            if (!promises[i].jobs && !promises[i].bytes)
                promises[i] = promises[--npromises];
            return;
        }
    if (jobs <= 0 && bytes <= 0)
        return;
    promises = xrealloc(promises, (npromises + 1) * sizeof *promises);
    promises[npromises++] = (struct promise){uid, (uint64_t)jobs, (uint64_t)bytes};
}

static bool uid_in_range(uint64_t uid)
{
    return uid >= core.cfg.uid_range_start && uid < core.cfg.uid_range_start + core.cfg.uid_range_size;
}

/* Per-user GPU allocation requests: a token bucket of limits.gpu_requests_per_minute, for the
 * last users seen (an evicted one starts with a full bucket, which only errs towards allowing). */
static struct bucket {
    uid_t uid;
    double tokens;
    int64_t at_ms;
} buckets[256];

static int take_token(uid_t uid, double *wait_s, bool take)
{
    uint32_t per_min = core.cfg.limits.gpu_requests_per_minute;
    int64_t now = now_ms();
    struct bucket *b = NULL, *oldest = &buckets[0];
    for (size_t i = 0; i < ARRAY_LEN(buckets) && !b; i++) {
        if (buckets[i].at_ms && buckets[i].uid == uid)
            b = &buckets[i];
        else if (buckets[i].at_ms < oldest->at_ms)
            oldest = &buckets[i];
    }
    if (!b) {
        b = oldest;
        *b = (struct bucket){uid, per_min, now};
    }
    b->tokens += (double)(now - b->at_ms) * per_min / 60000.0;
    if (b->tokens > per_min)
        b->tokens = per_min;
    b->at_ms = now;
    if (b->tokens < 1) {
        *wait_s = (1 - b->tokens) * 60.0 / per_min;
        return -1;
    }
    if (take)
        b->tokens -= 1;
    return 0;
}

/* Whether two ids name one GPU: an index and the same GPU's UUID do (gpu_find); an id this
 * machine does not have is only itself (refused later, naming it: gpu_validate). */
static bool same_gpu(const char *a, const char *b)
{
    int ka = gpu_find(&core.gpu.inv, a), kb = gpu_find(&core.gpu.inv, b);
    return ka >= 0 && kb >= 0 ? ka == kb : !strcmp(a, b);
}

/* Whether the devices' GPUs (ids, n of them) are the request's gpu_ids, in any order. */
static bool same_ids(const job_req *req, const char **ids, size_t n)
{
    for (size_t i = 0; i < req->ngpu_ids; i++) {
        bool found = false;
        for (size_t k = 0; k < n && !found; k++)
            found = same_gpu(req->gpu_ids[i], ids[k]);
        if (!found)
            return false;
    }
    for (size_t k = 0; k < n; k++) {
        bool found = false;
        for (size_t i = 0; i < req->ngpu_ids && !found; i++)
            found = same_gpu(req->gpu_ids[i], ids[k]);
        if (!found)
            return false;
    }
    return true;
}

/* GPUs asked for by CDI name (devices: nvidia.com/gpu=1) become the same request as
 * gpu_ids (or gpu_all), so that they go through the same validation and gang allocation. */
static int devices_to_gpus(job_req *req, jerr *e)
{
    if (!req->ndevices)
        return 0;
    bool all = false;
    char **ids = xcalloc(req->ndevices + 1, sizeof *ids);
    size_t n = 0;
    for (size_t i = 0; i < req->ndevices; i++) {
        const char *dev;
        if (jobreq_cdi_parse(req->devices[i], &dev) < 0)
            continue; /* checked by the schema */
        if (!strcmp(dev, "all"))
            all = true;
        else
            ids[n++] = (char *)dev;
    }
    int rc = 0;
    if ((jobreq_has(req, JR_GPU_COUNT) && req->gpu_count > 0) || req->gpu_mig || (req->gpu_all && !all) ||
        (req->ngpu_ids && all))
        rc = jerr_field(e, "devices", "devices: asks for GPUs by CDI name; do not also give gpu_count, gpu_all, "
                                      "gpu_mig or gpu_ids");
    else if (all && n)
        rc = jerr_field(e, "devices", "devices: nvidia.com/gpu=all names every GPU; do not list others with it");
    else if (req->ngpu_ids && !same_ids(req, (const char **)ids, n))
        /* (before, the devices were dropped and the job got gpu_ids' GPUs) */
        rc = jerr_field(e, "devices", "devices: names other GPUs than gpu_ids (or NVIDIA_VISIBLE_DEVICES) given with "
                                      "it; name the GPUs one way only: devices alone, or gpu_ids alone");
    else if (all) {
        req->gpu_all = true;
        req->has |= 1ull << JR_GPU_ALL;
    } else if (!req->ngpu_ids) {
        jobreq_set_list(req, JR_GPU_IDS, ids, n);
    }
    free(ids);
    return rc;
}

/* NVIDIA_VISIBLE_DEVICES when it is what asked for the job's GPUs (jobreq_check_submitted read it
 * into gpu_all or gpu_ids: equal to those when both were given), else NULL: a refusal of those
 * GPUs names the variable the user gave, not --gpu-ids or --gpu=all, which they did not. */
static const char *gpus_by_env(const job_req *req)
{
    const char *nvd = jobreq_env_get(req, false, "NVIDIA_VISIBLE_DEVICES");
    bool named = req->ngpu_ids || req->gpu_all;
    return named && nvd && *nvd && strcmp(nvd, "void") && strcmp(nvd, "none") ? nvd : NULL;
}

int submit_check(job_req *req, const caller *who, submit_info *si, jerr *e)
{
    uid_t caller_uid = who->uid;
    gid_t caller_gid = who->gid;
    if (caller_uid && uid_in_range(caller_uid))
        return jerr_http(e, 403, "uid %u is inside the range joblet gives to root's jobs (jobs.uid_range_start, "
                                 "jobs.uid_range_size); it may not submit jobs",
                         (unsigned)caller_uid);
    /* a priority above the default puts the job before everyone's, and lets it preempt theirs:
     * the machine's people give it, as they raise one with rnx job update (Slurm: sbatch
     * --priority, and a negative --nice, are an operator's); anyone may lower their own */
    if (req->priority > 0) { /* (the caller's role, as rnx job update's: an order, not a use) */
        if (authz_check(who, AUTHZ_RAISE_PRIORITY, "priority: a priority above 0 (the job goes before everyone's and "
                                                  "may preempt theirs; any user may give a negative one)", e) < 0) {
            snprintf(e->field, sizeof e->field, "priority");
            return -1;
        }
    }
    *si = (submit_info){0};
    si->sched_ms = req->schedule_ms;
    if (account_pin(req, caller_uid, caller_gid, e) < 0)
        return -1;
    bool by_cdi = req->ndevices && !req->ngpu_ids;   /* gpu_ids will be the devices' */
    /* gpu_ids that NVIDIA_VISIBLE_DEVICES gave (jobreq_check_submitted read it: a list of GPUs,
     * equal to gpu_ids when both were given) */
    const char *nvd = by_cdi ? NULL : gpus_by_env(req);
    bool by_env = nvd != NULL;
    if (devices_to_gpus(req, e) < 0)
        return -1;
    if (check_machine(req, true, &si->total, e) < 0) {
        /* a refusal of the GPUs the devices or NVIDIA_VISIBLE_DEVICES named names what the user
         * gave: --device, or -e NVIDIA_VISIBLE_DEVICES=... (not --gpu-ids, --gpu or --gpu=all,
         * which they did not): the GPUs named, or "No GPUs available" (gpu_count) */
        size_t fl = strlen(e->field);
        bool gpus_field = !strcmp(e->field, "gpu_ids") || !strcmp(e->field, "gpu_count") ||
                          !strcmp(e->field, "gpu_all");
        if ((by_cdi || by_env) && gpus_field && !strncmp(e->msg, e->field, fl) && !strncmp(e->msg + fl, ": ", 2)) {
            char msg[sizeof e->msg];
            int http = e->http, code = e->code;
            if (by_cdi)
                snprintf(msg, sizeof msg, "devices: %s", e->msg + fl + 2);
            else
                snprintf(msg, sizeof msg, "env: NVIDIA_VISIBLE_DEVICES=%.200s: %s", nvd, e->msg + fl + 2);
            jerr_field(e, by_cdi ? "devices" : "env", "%s", msg);
            e->http = http;
            e->code = code;
        }
        return -1;
    }
    if (isolation_decide(req, caller_uid, caller_gid, e) < 0)
        return -1;
    caller as = authz_as_account(who);
    if (check_names(req, &as, e) < 0)
        return -1;
    /* the jobs it waits for, as its account sees them, by full id from now on */
    if (req->nafter && depend_resolve(req, &as, false, e) < 0)
        return -1;
    /* the command, in the root the job will have: refused now, before anything is granted */
    return cmdcheck_resolve(req, e);
}

/* limits.* for these requests, which make ntasks jobs in all (an array's tasks count each). */
/* what a user keeps besides jobs, arrays and promised uploads (workflow.c's own text), by a
 * hook: workflow.c calls into this file, so this file does not call it */
static uint64_t (*held_elsewhere)(uid_t uid);

void submit_held_bytes_hook(uint64_t (*fn)(uid_t uid)) { held_elsewhere = fn; }

static int check_limits(job_req *const *reqs, size_t n, uint64_t ntasks, uid_t uid, int flags, uint64_t wf_bytes,
                        jerr *e);

uint64_t submit_task_count(job_req *const *reqs, size_t n)
{
    uint64_t ntasks = 0;
    arrayspec *as = NULL;
    for (size_t i = 0; i < n; i++) {
        jerr pe = {0};
        if (reqs[i]->array && !as)
            as = xmalloc(sizeof *as);
        ntasks += reqs[i]->array && arrayspec_parse(reqs[i]->array, "array", true, as, &pe) == 0 ? as->count : 1;
    }
    free(as);
    return ntasks;
}

uint64_t submit_request_bytes(job_req *const *reqs, size_t n)
{
    uint64_t more = 0;
    for (size_t i = 0; i < n; i++)
        more += jobreq_bytes(reqs[i]) * submit_task_count(&reqs[i], 1);
    return more;
}

uint64_t submit_kept(uid_t uid)
{
    return promised(uid) + arrays_unmade(uid) + arrays_jobless(uid) + jobs_user(uid).kept;
}

int submit_check_count(uint64_t ntasks, uid_t uid, jerr *e)
{
    const limits_config *L = &core.cfg.limits;
    if (!L->max_queued_per_user && !L->max_jobs_per_user)
        return 0;
    /* an array's tasks not made yet are jobs waiting and kept, as made ones are */
    uint64_t unmade = arrays_unmade(uid);
    jobs_user_count own = jobs_user(uid); /* counted as jobs change (jobs.h), not scanned */
    uint64_t waiting = promised(uid) + unmade + own.waiting;
    uint64_t kept = submit_kept(uid);
    char more[80] = "";
    if (ntasks > 1)
        snprintf(more, sizeof more, " and this asks for %llu more", (unsigned long long)ntasks);
    if (L->max_queued_per_user && waiting + ntasks > L->max_queued_per_user)
        return jerr_http(e, 429, "uid %u has %llu jobs waiting%s; limits.max_queued_per_user is %u: wait for some "
                                 "to start, or cancel some", (unsigned)uid, (unsigned long long)waiting, more,
                         L->max_queued_per_user);
    if (L->max_jobs_per_user && kept + ntasks > L->max_jobs_per_user)
        return jerr_http(e, 429, "uid %u keeps %llu jobs%s; limits.max_jobs_per_user is %u: delete ended ones "
                                 "(rnx job delete ID, or rnx job delete-all)", (unsigned)uid,
                         (unsigned long long)kept, more, L->max_jobs_per_user);
    return 0;
}

int submit_check_limits(job_req *const *reqs, size_t n, uid_t uid, int flags, uint64_t wf_bytes, jerr *e)
{
    return check_limits(reqs, n, submit_task_count(reqs, n), uid, flags, wf_bytes, e);
}

static int check_limits(job_req *const *reqs, size_t n, uint64_t ntasks, uid_t uid, int flags, uint64_t wf_bytes,
                        jerr *e)
{
    bool for_workflow = flags & SUBMIT_WORKFLOW;
    const limits_config *L = &core.cfg.limits;
    bool gpu = false;
    for (size_t i = 0; i < n; i++) {
        uint64_t gpus = (uint64_t)reqs[i]->gpu_count + (reqs[i]->gpu_mig ? 1 : 0);
        gpu |= gpus > 0;
        if (L->max_gpus_per_user && gpus > L->max_gpus_per_user) {
            /* the field that asked for them: --gpu, --gpu-ids, --gpu=all or NVIDIA_VISIBLE_DEVICES */
            const char *nvd = gpus_by_env(reqs[i]);
            const char *key = nvd ? "env" : reqs[i]->ngpu_ids ? "gpu_ids" : reqs[i]->gpu_all ? "gpu_all" : "gpu_count";
            char field[64], named[300];
            if (for_workflow)
                snprintf(field, sizeof field, "jobs[%zu].request.%s", i, key);
            else
                snprintf(field, sizeof field, "%s", key);
            if (nvd)
                snprintf(named, sizeof named, "%s: NVIDIA_VISIBLE_DEVICES=%.200s", field, nvd);
            else
                snprintf(named, sizeof named, "%s", field);
            return jerr_field(e, field, "%s: asks for %llu GPUs; limits.max_gpus_per_user is %u", named,
                              (unsigned long long)gpus, L->max_gpus_per_user);
        }
    }
    if (submit_check_count(ntasks, uid, e) < 0)
        return -1;
    /* the bytes of the requests the user keeps: each job keeps its command, args and env in
     * memory and in the database, and each is up to the body's size (16 MiB of variables of
     * 128 KiB); max_jobs_per_user of them were 150 GiB */
    if (L->max_request_bytes_per_user) {
        /* each part said in the refusal, so that the user knows what to give back */
        uint64_t of_jobs = jobs_user(uid).bytes, of_arrays = arrays_unmade_bytes(uid);
        uint64_t of_uploads = promised_of(uid).bytes, of_workflows = held_elsewhere ? held_elsewhere(uid) : 0;
        uint64_t held = of_jobs + of_arrays + of_uploads + of_workflows;
        uint64_t more = submit_request_bytes(reqs, n) + wf_bytes;
        if (held + more > L->max_request_bytes_per_user)
            return jerr_http(e, 429, "uid %u keeps requests of %llu bytes (jobs' commands, args, env and upload "
                                     "listings %llu, arrays' tasks not made yet %llu, uploads still arriving %llu, "
                                     "workflows' own text %llu), and %s %llu more; limits.max_request_bytes_per_user "
                                     "is %llu: delete ended jobs (rnx job delete ID, or rnx job delete-all; a "
                                     "workflow goes with its last job), or pass less in the environment (upload a "
                                     "file) or fewer files (upload an archive)",
                             (unsigned)uid, (unsigned long long)held, (unsigned long long)of_jobs,
                             (unsigned long long)of_arrays, (unsigned long long)of_uploads,
                             (unsigned long long)of_workflows,
                             ntasks > 1 ? "these jobs ask for" : "this one asks for", (unsigned long long)more,
                             (unsigned long long)L->max_request_bytes_per_user);
    }
    /* room for them and their files on the state filesystem, past the database's reserve */
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += jobreq_uploads_declared(reqs[i]);
    if (statedisk_room(bytes, n > 1 ? "new jobs (this workflow)" : ntasks > 1 ? "a new array" : "a new job", e) < 0)
        return -1;
    double wait_s;
    if (L->gpu_requests_per_minute && gpu && take_token(uid, &wait_s, !(flags & SUBMIT_DRY_RUN)) < 0)
        return jerr_http(e, 429, "too many GPU requests: limits.gpu_requests_per_minute is %u for each user; try "
                                 "again in %.1f s", L->gpu_requests_per_minute, wait_s);
    return 0;
}

int submit_check_again(const job *j, jerr *e)
{
    /* what it needs to run, as at its start: gone since, it would end at once (start_failed) */
    char dir[700], work[800];
    struct stat st;
    jobs_dir_of(j, dir, sizeof dir);
    workfs_path(j->owner_uid, dir, work, sizeof work);
    if (stat(dir, &st) < 0 || stat(work, &st) < 0)
        return jerr_http(e, 409, "job %s cannot run again: its directory %s (its /work, its logs) is gone; submit "
                                 "it again (rnx job run ...)", j->id, stat(dir, &st) < 0 ? dir : work);
    const runtime *rt;
    jerr re = {0};
    if (j->req.runtime && runtimes_find(j->req.runtime, &rt, &re) < 0)
        return jerr_http(e, 409, "job %s cannot run again: its runtime %s is gone (%s); submit it again with "
                                 "another (rnx job run --runtime=...)", j->id, j->req.runtime, re.msg);
    caller owner = authz_local(j->owner_uid, j->owner_gid);
    if (volumes_verify(&j->req, j->owner_uid, j->owner_gid, &re) < 0 ||
        networks_check_again(&j->req, &owner, j->created_ms, &re) < 0)
        return jerr_http(e, 409, "job %s cannot run again: %s; submit it again", j->id, re.msg);
    /* what its owner may do now (the account and group it ran with, isolation.require_gvisor), as
     * the queue asks before its start (queue.c): a refusal known now is the requeue's; one not
     * known yet (503: being looked up) is left to the queue, which waits for it */
    if (account_verify(&j->req, j->owner_uid, j->owner_gid, &re) < 0 ||
        isolation_recheck(&j->req, j->owner_uid, j->owner_gid, &re) < 0) {
        if (re.http != 503)
            return jerr_http(e, 409, "job %s cannot run again: %s", j->id, re.msg);
        re = (jerr){0};
    }
    /* the limits of a submission: it is kept already (limits.max_jobs_per_user, its request's
     * bytes), and waits once more */
    const limits_config *L = &core.cfg.limits;
    uint64_t waiting = promised(j->owner_uid) + arrays_unmade(j->owner_uid) + jobs_user(j->owner_uid).waiting;
    if (L->max_queued_per_user && waiting + 1 > L->max_queued_per_user)
        return jerr_http(e, 429, "uid %u has %llu jobs waiting; limits.max_queued_per_user is %u: wait for some "
                                 "to start, or cancel some", (unsigned)j->owner_uid, (unsigned long long)waiting,
                         L->max_queued_per_user);
    uint64_t gpus = (uint64_t)j->req.gpu_count + (j->req.gpu_mig ? 1 : 0);
    if (L->max_gpus_per_user && gpus > L->max_gpus_per_user)
        return jerr_field(e, "gpu_count", "gpu_count: job %s asks for %llu GPUs; limits.max_gpus_per_user is %u",
                          j->id, (unsigned long long)gpus, L->max_gpus_per_user);
    double wait_s;
    if (L->gpu_requests_per_minute && gpus && take_token(j->owner_uid, &wait_s, true) < 0)
        return jerr_http(e, 429, "too many GPU requests: limits.gpu_requests_per_minute is %u for each user (a "
                                 "GPU job requeued counts as one); try again in %.1f s", L->gpu_requests_per_minute,
                         wait_s);
    return 0;
}

job *submit_job(job_req *req, const caller *who, jerr *e)
{
    submit_info si;
    if (submit_check(req, who, &si, e) < 0 || submit_check_limits(&req, 1, who->uid, 0, 0, e) < 0)
        return NULL;
    job *j = submit_create(req, who->uid, who->gid, &si, e);
    return j ? submit_commit(j, e) : NULL;
}

/* The files every task of the array starts with: its directory <jobs>/<id> and its work/, the
 * uploads written there once (a streamed upload's directory renamed to it), kept until the array
 * is deleted; each task's /work is a copy, made by the task's shim as it starts (exec/workcopy.h,
 * job_launch.c). Root's, as the listing says. */
static int array_uploads(jarray *a, const submit_info *si, jerr *e)
{
    char dir[700], work[800];
    snprintf(dir, sizeof dir, "%s/%s", core.jobs_dir, a->id);
    if (si->staged ? rename(si->staged, dir) < 0 : mkdir(dir, 0700) < 0)
        return jerr_sys(e, "create %s", dir);
    int rc = si->staged ? workfs_rename(a->owner_uid, si->staged, dir, e) : workfs_make(a->owner_uid, dir, work,
                                                                                         sizeof work, e);
    workfs_path(a->owner_uid, dir, work, sizeof work);
    int workfd = rc < 0 ? -1 : open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rc == 0 && workfd < 0)
        rc = jerr_sys(e, "open %s", work);
    for (size_t i = 0; rc == 0 && !si->staged && i < a->req.nuploads; i++)
        rc = submit_upload_inline(workfd, &a->req.uploads[i], (uid_t)-1, (gid_t)-1, e);
    if (workfd >= 0)
        close(workfd);
    if (rc < 0)
        workfs_remove(a->owner_uid, dir);
    return rc;
}

jarray *submit_array(job_req *req, const caller *who, jerr *e)
{
    submit_info si;
    if (submit_check(req, who, &si, e) < 0 || submit_check_limits(&req, 1, who->uid, 0, 0, e) < 0)
        return NULL;
    return submit_array_create(req, who->uid, who->gid, &si, e);
}

jarray *submit_array_make(job_req *req, uid_t caller_uid, gid_t caller_gid, const submit_info *si, jerr *e)
{
    if (workfs_ready(caller_uid, e) < 0)
        return NULL;
    if (db_mark(core.db, e) < 0)
        return NULL;
    jarray *a = arrays_create(req, caller_uid, caller_gid, e);
    if (!a) {
        db_busy_refusal(e, "submitted");
        db_undo(core.db);
        return NULL;
    }
    if (a->req.nuploads && array_uploads(a, si, e) < 0) {
        db_undo(core.db);   /* its row */
        *req = a->req;      /* the caller's again */
        a->req = (job_req){0};
        arrays_undo(a);
        return NULL;
    }
    /* its history starts here, as a job's (job_events.h), in the same savepoint as its row */
    char list[2048];
    arrayspec_format(a->spec, true, list, sizeof list);
    job_event_array(a, JE_SUBMITTED, (int64_t)caller_uid, "by uid %u: tasks %s%s", (unsigned)caller_uid, list,
                    a->held ? "; held: no task is made until it is released" : "");
    db_keep(core.db);
    return a;
}

void submit_array_undo(jarray *a)
{
    if (a->req.nuploads) {
        char dir[700];
        snprintf(dir, sizeof dir, "%s/%s", core.jobs_dir, a->id);
        workfs_remove(a->owner_uid, dir);
    }
    arrays_undo(a);
}

jarray *submit_array_create(job_req *req, uid_t caller_uid, gid_t caller_gid, const submit_info *si, jerr *e)
{
    jarray *a = submit_array_make(req, caller_uid, caller_gid, si, e);
    if (!a)
        return NULL;
    depend_array_submitted(a); /* an array that waits: no task is made until its dependencies hold */
    if (state_commit_now(e) < 0) {
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "%s", e->msg);
        jerr_http(e, e->http, "the array was not created: %s", msg);
        *req = a->req;      /* the caller's again */
        a->req = (job_req){0};
        if (a->req.nuploads || req->nuploads) {
            char dir[700];
            snprintf(dir, sizeof dir, "%s/%s", core.jobs_dir, a->id);
            workfs_remove(caller_uid, dir);
        }
        arrays_undo(a);
        return NULL;
    }
    return a;
}

job *submit_task(jarray *a, uint32_t t, jerr *e)
{
    /* every task's own request, from the array's (the form it is stored in) */
    json_t *o = jobreq_to_json(&a->req, JOBREQ_JSON_SECRETS);
    job_req req;
    int rc = jobreq_from_json(o, &req, JOBREQ_FROM_DB, 0, e);
    json_decref(o);
    if (rc < 0)
        return NULL;
    free(req.array);
    req.array = NULL;
    req.has &= ~(1ull << JR_ARRAY);
    /* what the array waited for held before any task was made: a task waits for nothing */
    for (size_t k = 0; k < req.nafter; k++)
        free(req.after[k].job);
    free(req.after);
    req.after = NULL;
    req.nafter = 0;
    req.has &= ~(1ull << JR_AFTER);
    /* what its owner may do now, as its start would check (job_launch.c): refused here, the
     * array's tasks left are canceled at once (queue.c) instead of failing one by one */
    if (isolation_recheck(&req, a->owner_uid, a->owner_gid, e) < 0 ||
        account_verify(&req, a->owner_uid, a->owner_gid, e) < 0) {
        jobreq_free(&req);
        return NULL;
    }
    submit_info si = {.array_id = a->id, .array_task = t};
    job *j = submit_create(&req, a->owner_uid, a->owner_gid, &si, e);
    if (!j) {
        jobreq_free(&req);
        return NULL;
    }
    arrays_made(a, j);
    return j;
}

void submit_undo(job *j)
{
    char dir[700];
    jobs_dir_of(j, dir, sizeof dir);
    log_info("job %s: taken back (%s)", j->id, "its submission could not be saved");
    jobs_remove(j);
    workfs_remove(j->owner_uid, dir);
    job_free(j);
}

job *submit_commit(job *j, jerr *e)
{
    if (state_commit_now(e) == 0)
        return j;
    char msg[sizeof e->msg];
    snprintf(msg, sizeof msg, "%s", e->msg);
    jerr_http(e, e->http, "the job was not created: %s", msg);
    submit_undo(j);
    return NULL;
}

job *submit_create(job_req *req, uid_t caller_uid, gid_t caller_gid, const submit_info *si, jerr *e)
{
    /* checked at submission, maybe long ago (a streamed upload's bytes came slowly): the
     * volumes it pinned must still be there, the same */
    if (volumes_verify(req, caller_uid, caller_gid, e) < 0)
        return NULL;
    int64_t sched_ms = si->sched_ms;
    uint64_t total = si->total;
    db_job row = {.seq = core.next_seq, .owner_uid = caller_uid, .owner_gid = caller_gid, .stopped_by = -1,
                  .log_bytes = -1};
    uuid_v4(row.id);
    /* the job takes the request over */
    row.req = *req;
    *req = (job_req){0};
    row.name = row.req.name ? xstrdup(row.req.name) : NULL;
    if (si->array_id) {
        snprintf(row.array_id, sizeof row.array_id, "%s", si->array_id);
        row.array_task = si->array_task;
    }
    /* Jobs run as their submitter; each of root's jobs runs as a uid of its own, so no other
     * process (another job, a service running as nobody) can signal, trace or read it; root's
     * jobs on a shared GPU as one uid (jobs_run_uid: NVIDIA MPS serves one uid at a time). */
    row.uid = si->owned ? si->run_uid : jobs_run_uid(caller_uid, &row.req, row.seq);
    row.gid = si->owned ? si->run_gid : caller_uid ? caller_gid : row.uid;
    row.created_ms = now_ms();
    row.scheduled_ms = sched_ms;
    if (!si->array_id) /* its place in the queue (qclock.h); a task's is its array's until it runs */
        row.joined_ms = qclock_now();
    row.state = sched_ms > row.created_ms ? JS_SCHEDULED : JS_QUEUED;
    /* submitted held (sbatch -H): HELD by its submitter until released; an array's tasks are
     * made only once the array is released, never held one by one */
    bool held = row.req.hold && !si->array_id;
    if (held) {
        row.state = JS_HELD;
        row.stopped_by = (int64_t)caller_uid;
    }
    job *j = job_new(&row);
    j->req.pids_max = (int64_t)core.cfg.pids_max;
    j->req.has |= 1ull << JR_PIDS_MAX;
    /* the machine's default limit for a job that gives none; the job shows it as its own */
    if (!jobreq_has(&j->req, JR_MAX_MEMORY_MB) && core.cfg.default_memory_pct && core.mem_total_mb) {
        uint64_t mb = core.mem_total_mb * core.cfg.default_memory_pct / 100;
        j->req.max_memory_mb = (int64_t)(mb < 4 ? 4 : mb);
        j->req.memory_default = true;
        j->req.has |= 1ull << JR_MAX_MEMORY_MB | 1ull << JR_MEMORY_DEFAULT;
    }
    if (core.cfg.max_pids_per_user) {
        j->req.user_pids_max = (int64_t)core.cfg.max_pids_per_user;
        j->req.has |= 1ull << JR_USER_PIDS_MAX;
    }
    if (core.cfg.max_log_bytes) {
        j->req.max_log_bytes = (int64_t)core.cfg.max_log_bytes;
        j->req.has |= 1ull << JR_MAX_LOG_BYTES;
    }
    char dir[700], work[800];
    jobs_dir_of(j, dir, sizeof dir);
    /* nothing uploaded: its directory and /work are made at the next turns (job_dirs.h), the
     * owner's /work filesystem checked now; nor for an array's task, whose files its shim copies
     * from the array's into /work as it starts (exec/workcopy.h), not joblet's loop */
    bool later = !si->staged && (!j->req.nuploads || si->array_id);
    if (later) {
        /* only the row's EBUSY is another process's lock on the database (503, ask again): the
         * /work filesystem's (a loop device held by another) is that filesystem's fault */
        if (workfs_ready(j->owner_uid, e) < 0 ||
            (db_insert_job(core.db, job_row(j, &row), e) < 0 && db_busy_refusal(e, "submitted") < 0)) {
            job_free(j);
            return NULL;
        }
        state_wrote_new_job(j);
        jobs_add(j);
        job_dirs_defer(j);
        goto added;
    }
    /* a streamed upload was written into a directory of its own: it becomes the job's */
    if (si->staged ? rename(si->staged, dir) < 0 : mkdir(dir, 0700) < 0) {
        jerr_sys(e, "create %s", dir);
        job_free(j);
        return NULL;
    }
    int rc = si->staged ? workfs_rename(j->owner_uid, si->staged, dir, e) : 0;
    workfs_path(j->owner_uid, dir, work, sizeof work);
    if (rc < 0 ||
        (si->owned ? own_work(j, work, e) : si->staged ? own_uploads(j, work, e) : create_uploads(j, dir, e)) < 0 ||
        (db_insert_job(core.db, job_row(j, &row), e) < 0 && db_busy_refusal(e, "submitted") < 0)) {
        workfs_remove(j->owner_uid, dir);
        job_free(j);
        return NULL;
    }
    state_wrote_new_job(j);
    jobs_add(j);
added:
    /* a job joins the queue: a pass for it. An array's task is made by the pass that starts it
     * (queue.c): asking again would make the settle step run pass after pass, ARRAYS_PER_PASS
     * tasks each, in one turn of the loop; the array's next pass comes at the next turn. */
    if (!si->array_id)
        state_want(WANT_SCHEDULE);
    char when[120] = "", degraded[1100] = "", task[120] = "";
    if (j->array_id[0])
        snprintf(task, sizeof task, "; task %lld of array %s, made as it starts", (long long)j->array_task,
                 j->array_id);
    if (j->state == JS_SCHEDULED)
        snprintf(when, sizeof when, "; scheduled for %s", j->req.schedule_at ? j->req.schedule_at : "later");
    if (j->req.gpu_degraded)
        snprintf(degraded, sizeof degraded, "; runs without the GPUs it asked for (--gpu-optional): %s",
                 j->req.gpu_degraded);
    job_event_at(j, j->created_ms, JE_SUBMITTED, caller_uid, "by uid %u%s%s%s", (unsigned)caller_uid, when, degraded,
                 task);
    if (held)
        job_event_at(j, j->created_ms, JE_HELD, caller_uid, "held at its submission by uid %u (--hold): it waits "
                                                            "until released", (unsigned)caller_uid);
    log_info("job %s submitted by uid %u: %s (%llu bytes uploaded)", j->id, (unsigned)caller_uid,
             j->req.command, (unsigned long long)total);
    if ((j->req.nafter || j->req.singleton) && !si->array_id)
        depend_submitted(j); /* PENDING, or decided at once */
    return j;
}

int submit_check_change(job_req *req, uid_t owner, gid_t owner_gid, uint64_t changed, jerr *e)
{
    uint64_t total;
    /* a count of 0 for a job or an array that names its GPUs (by id, all, a MIG device) would be
     * answered "updated" and undone by the GPU check below, which counts the GPUs named */
    if ((changed >> JR_GPU_COUNT & 1) && req->gpu_count == 0 &&
        (req->ngpu_ids || req->gpu_all || jobreq_has(req, JR_GPU_MIG)))
        return jerr_field(e, "gpu_count", "gpu_count: it names its GPUs (%s), so 0 cannot take them away; an "
                                          "update changes a count it asked for (--gpu N): to run it without "
                                          "GPUs, cancel it and submit it again without them",
                          req->ngpu_ids ? "by id: gpu_ids, --device or NVIDIA_VISIBLE_DEVICES"
                          : req->gpu_all ? "all of them: gpu_all" : "a MIG device: gpu_mig");
    if (check_machine(req, false, &total, e) < 0 || isolation_check_gpus(req, owner, owner_gid, e) < 0)
        return -1;
    uint64_t gpus = (uint64_t)req->gpu_count + (req->gpu_mig ? 1 : 0);
    if (core.cfg.limits.max_gpus_per_user && gpus > core.cfg.limits.max_gpus_per_user)
        return jerr_field(e, "gpu_count", "gpu_count: asks for %llu GPUs; limits.max_gpus_per_user is %u",
                          (unsigned long long)gpus, core.cfg.limits.max_gpus_per_user);
    /* a GPU request changed is a GPU request, as a submission's: the same bucket (a job submitted
     * without GPUs and updated to ask for them passed the rate) */
    const uint64_t gpu_fields = 1ull << JR_GPU_COUNT | 1ull << JR_GPU_MEMORY_MB | 1ull << JR_GPU_ALL |
                                1ull << JR_GPU_IDS | 1ull << JR_GPU_MIG | 1ull << JR_GPU_TYPE | 1ull << JR_GPU_CC |
                                1ull << JR_GPU_SHARE;
    double wait_s;
    uint32_t per_min = core.cfg.limits.gpu_requests_per_minute;
    if (per_min && gpus && (changed & gpu_fields) && take_token(owner, &wait_s, true) < 0)
        return jerr_http(e, 429, "too many GPU requests: limits.gpu_requests_per_minute is %u for each user (a "
                                 "changed GPU request counts as one); try again in %.1f s", per_min, wait_s);
    return 0;
}
