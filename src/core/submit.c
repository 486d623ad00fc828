/* Submission: every field is checked before anything is created, and a failure after the
 * job's directory exists removes it, so a refused request leaves nothing behind. */
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
#include "core.h"

static const char *const request_keys[] = {"command", "args", "name", "env", "secret_env", "workdir",
                                           "network", "max_cpu", "max_memory_mb", "max_iobps", "cpu_cores",
                                           "max_runtime_s", "schedule_at", "uploads", "gpu_count",
                                           "gpu_memory_mb", "gpu_all", "gpu_ids", "gpu_caps", "gpu_optional",
                                           "gpu_mig", "priority", "gpu_type", "gpu_cc", "gpu_share",
                                           "cross_numa", "preemptible", NULL};
static const char *const upload_keys[] = {"path", "type", "mode", "content_b64", "target", NULL};

static int check_string(json_t *v, const char *field, size_t maxlen, jerr *e)
{
    if (!json_is_string(v))
        return jerr_field(e, field, "%s: must be a string", field);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return jerr_field(e, field, "%s: must not contain a NUL character", field);
    if (json_string_length(v) > maxlen)
        return jerr_field(e, field, "%s: longer than %zu bytes", field, maxlen);
    return 0;
}

static int check_env(json_t *req, const char *field, jerr *e)
{
    json_t *env = json_object_get(req, field), *v;
    const char *k;
    if (!env || json_is_null(env))
        return 0;
    if (!json_is_object(env))
        return jerr_field(e, field, "%s: must be an object of NAME: value strings", field);
    json_object_foreach(env, k, v) {
        if (!env_key_valid(k))
            return jerr_field(e, field,
                              "%s: '%s' is not a valid variable name; use letters, digits and '_', not starting with a digit",
                              field, k);
        if (check_string(v, field, 128 * 1024, e) < 0)
            return -1;
    }
    return 0;
}

static int check_limits(json_t *req, jerr *e)
{
    uint64_t v = 0;
    if (jx_u64(req, "max_cpu", 1, (uint64_t)C.ncpus * 100, &v, e) < 0)
        return jerr_field(e, "max_cpu", "max_cpu: must be a percentage from 1 to %d (100 = one core; this machine has %d CPUs)",
                          C.ncpus * 100, C.ncpus);
    if (jx_u64(req, "max_memory_mb", 4, C.mem_total_mb, &v, e) < 0)
        return jerr_field(e, "max_memory_mb", "max_memory_mb: must be from 4 to %llu MB (this machine's memory)",
                          (unsigned long long)C.mem_total_mb);
    v = 0;
    if (jx_u64(req, "max_iobps", 1, UINT64_MAX >> 1, &v, e) < 0)
        return -1;
    if (v && !C.io_dev[0])
        return jerr_field(e, "max_iobps", "max_iobps: I/O limits cannot be enforced here: %s", C.io_dev_why);
    v = 0;
    if (jx_u64(req, "max_runtime_s", 1, 10ull * 365 * 86400, &v, e) < 0)
        return -1;
    const char *cores = NULL;
    if (jx_str(req, "cpu_cores", &cores, e) < 0)
        return -1;
    if (cores) {
        uint8_t mask[CPU_MAX / 8];
        if (parse_cpu_list("cpu_cores", cores, mask, e) < 0)
            return -1;
        for (int c = 0; c < CPU_MAX; c++)
            if ((mask[c / 8] & (1u << (c % 8))) && !(C.online_cpus[c / 8] & (1u << (c % 8)))) {
                char online[256];
                format_cpu_list(C.online_cpus, online, sizeof online);
                return jerr_field(e, "cpu_cores", "cpu_cores: CPU %d is not online; this machine has CPUs %s", c,
                                  online);
            }
        char norm[256];
        format_cpu_list(mask, norm, sizeof norm);
        json_object_set_new(req, "cpu_cores", json_string(norm));
    }
    return 0;
}

static int check_upload_path(const char *p, jerr *e)
{
    if (!*p || p[0] == '/' || strlen(p) > 1024)
        return jerr_field(e, "uploads", "uploads: '%s' must be a relative path inside /work", p);
    const char *s = p;
    while (*s) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return jerr_field(e, "uploads", "uploads: '%s' must not contain empty, '.' or '..' parts", p);
        s += n + (slash ? 1 : 0);
    }
    return 0;
}

#define MAX_UPLOADS 100000

static int check_upload(json_t *u, size_t i, json_t *seen, uint64_t *total, jerr *e);

/* Validates uploads; returns their total decoded size. */
static int check_uploads(json_t *req, uint64_t *total, jerr *e)
{
    json_t *ups = json_object_get(req, "uploads"), *u;
    size_t i;
    *total = 0;
    if (!ups || json_is_null(ups))
        return 0;
    if (!json_is_array(ups))
        return jerr_field(e, "uploads", "uploads: must be an array of {path, type, mode, content_b64}");
    if (json_array_size(ups) > MAX_UPLOADS)
        return jerr_field(e, "uploads", "uploads: %zu entries; at most %d files, directories and links per job",
                          json_array_size(ups), MAX_UPLOADS);
    json_t *seen = json_object(); /* paths so far: a hash, so the check stays linear */
    int rc = 0;
    json_array_foreach(ups, i, u) {
        if ((rc = check_upload(u, i, seen, total, e)) < 0)
            break;
    }
    json_decref(seen);
    if (rc < 0)
        return -1;
    if (*total > C.cfg.max_upload_bytes + 3)
        return jerr_http(e, 413, "uploads: %llu bytes in total exceed the limit of %llu bytes (jobs.max_upload_bytes)",
                         (unsigned long long)*total, (unsigned long long)C.cfg.max_upload_bytes);
    return 0;
}

static int check_upload(json_t *u, size_t i, json_t *seen, uint64_t *total, jerr *e)
{
    if (!json_is_object(u))
        return jerr_field(e, "uploads", "uploads[%zu]: must be an object", i);
    if (jx_only_keys(u, upload_keys, "an upload", e) < 0)
        return -1;
    const char *path = NULL, *type = NULL, *content = NULL, *target = NULL;
    uint64_t mode = 0644;
    if (jx_str(u, "path", &path, e) < 0 || jx_str(u, "type", &type, e) < 0 ||
        jx_str(u, "content_b64", &content, e) < 0 || jx_str(u, "target", &target, e) < 0 ||
        jx_u64(u, "mode", 0, 07777, &mode, e) < 0)
        return -1;
    if (!path)
        return jerr_field(e, "uploads", "uploads[%zu]: path is required", i);
    if (check_upload_path(path, e) < 0)
        return -1;
    type = type ? type : "file";
    if (strcmp(type, "file") && strcmp(type, "dir") && strcmp(type, "symlink"))
        return jerr_field(e, "uploads", "uploads: '%s': type '%s' is not one of file, dir, symlink", path, type);
    if (!strcmp(type, "symlink") && (!target || !*target))
        return jerr_field(e, "uploads", "uploads: '%s': a symlink needs a target", path);
    if (json_object_get(seen, path))
        return jerr_field(e, "uploads", "uploads: '%s' is listed twice", path);
    json_object_set_new(seen, path, json_true());
    if (content)
        *total += b64_decoded_max(strlen(content));
    return 0;
}

static int validate(json_t *req, time_t now, int64_t *sched_ms, jerr *e)
{
    if (!json_is_object(req))
        return jerr_field(e, NULL, "the request body must be a JSON object");
    if (jx_only_keys(req, request_keys, "a job request", e) < 0)
        return -1;
    json_t *cmd = json_object_get(req, "command");
    if (!cmd || (json_is_string(cmd) && json_string_length(cmd) == 0))
        return jerr_field(e, "command", "command: missing; give the program to run");
    if (check_string(cmd, "command", 4096, e) < 0)
        return -1;
    json_t *args = json_object_get(req, "args"), *a;
    size_t i;
    if (args && !json_is_array(args))
        return jerr_field(e, "args", "args: must be an array of strings");
    json_array_foreach(args, i, a) if (check_string(a, "args", 128 * 1024, e) < 0) return -1;
    json_t *name = json_object_get(req, "name");
    if (name && check_string(name, "name", 128, e) < 0)
        return -1;
    if (check_env(req, "env", e) < 0 || check_env(req, "secret_env", e) < 0)
        return -1;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(req, "secret_env"), k, v) if (json_object_get(json_object_get(req, "env"), k))
        return jerr_field(e, "secret_env", "secret_env: '%s' is also in env; give each variable once", k);
    const char *workdir = NULL, *net = NULL, *at = NULL;
    if (jx_str(req, "workdir", &workdir, e) < 0 || jx_str(req, "network", &net, e) < 0 ||
        jx_str(req, "schedule_at", &at, e) < 0)
        return -1;
    if (workdir && (workdir[0] != '/' || strstr(workdir, "/..") || strlen(workdir) > 1024))
        return jerr_field(e, "workdir", "workdir: '%s' must be an absolute path without '..' (e.g. /work/src)", workdir);
    if (net && strcmp(net, "none") && strcmp(net, "host"))
        return jerr_field(e, "network", "network: '%s' is not accepted; use none (loopback only) or host", net);
    if (at) {
        time_t t;
        if (parse_rfc3339(at, &t) < 0)
            return jerr_field(e, "schedule_at", "schedule_at: '%s' is not an RFC 3339 time (2026-11-22T15:04:05Z)", at);
        if (t < now - 5)
            return jerr_field(e, "schedule_at", "schedule_at: '%s' is in the past", at);
        if (parse_ms(at, sched_ms) < 0)
            *sched_ms = (int64_t)t * 1000;
    }
    if (check_limits(req, e) < 0)
        return -1;
    json_t *prio = json_object_get(req, "priority");
    if (prio && (!json_is_integer(prio) || json_integer_value(prio) < -1000 || json_integer_value(prio) > 1000))
        return jerr_field(e, "priority", "priority: must be a whole number from -1000 to 1000 (higher runs first; "
                                         "default 0)");
    return core_gpu_validate(req, e);
}

/* Creates one upload under work/ without following any symlink, so a symlink sent earlier
 * in the same request cannot redirect a later file outside the job. */
static int write_upload(int workfd, json_t *u, uid_t uid, gid_t gid, uint64_t *size, jerr *e)
{
    const char *path = json_string_value(json_object_get(u, "path"));
    const char *type = json_string_value(json_object_get(u, "type"));
    type = type ? type : "file";
    json_t *mj = json_object_get(u, "mode");
    mode_t mode = (mode_t)(mj ? json_integer_value(mj) : (!strcmp(type, "dir") ? 0755 : 0644));
    char parent[1100];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    const char *base = path;
    int dfd = workfd;
    if (slash) {
        *slash = 0;
        base = slash + 1;
        struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        dfd = (int)syscall(SYS_openat2, workfd, parent, &how, sizeof how);
        if (dfd < 0)
            return jerr_field(e, "uploads", "uploads: '%s': its directory '%s' must be uploaded first (as a directory, not a link)",
                              path, parent);
    }
    int rc = 0;
    *size = 0;
    if (!strcmp(type, "dir")) {
        if (mkdirat(dfd, base, 0700) < 0 || fchmodat(dfd, base, mode, 0) < 0 || fchownat(dfd, base, uid, gid, 0) < 0)
            rc = jerr_sys(e, "uploads: '%s'", path);
    } else if (!strcmp(type, "symlink")) {
        const char *target = json_string_value(json_object_get(u, "target"));
        if (symlinkat(target, dfd, base) < 0 || fchownat(dfd, base, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
            rc = jerr_sys(e, "uploads: '%s'", path);
    } else {
        const char *b64 = json_string_value(json_object_get(u, "content_b64"));
        size_t len = 0;
        void *data = b64 ? b64_decode(b64, strlen(b64), &len) : xstrdup("");
        if (!data) {
            rc = jerr_field(e, "uploads", "uploads: '%s': content_b64 is not valid base64", path);
        } else {
            int fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd < 0 || write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) < 0 || fchown(fd, uid, gid) < 0)
                rc = jerr_sys(e, "uploads: '%s'", path);
            if (fd >= 0)
                close(fd);
            *size = len;
            free(data);
        }
    }
    if (dfd != workfd)
        close(dfd);
    return rc;
}

/* Replaces the uploads in the stored request by a listing (no content). */
static int create_uploads(job *j, const char *dir, jerr *e)
{
    json_t *ups = json_object_get(j->req, "uploads");
    char work[700];
    snprintf(work, sizeof work, "%s/work", dir);
    if (mkdir(work, 0755) < 0 || chown(work, j->uid, j->gid) < 0)
        return jerr_sys(e, "create %s", work);
    if (!ups)
        return 0;
    int workfd = open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (workfd < 0)
        return jerr_sys(e, "open %s", work);
    json_t *listing = json_array(), *u;
    size_t i;
    int rc = 0;
    json_array_foreach(ups, i, u) {
        uint64_t size = 0;
        if ((rc = write_upload(workfd, u, j->uid, j->gid, &size, e)) < 0)
            break;
        json_t *mj = json_object_get(u, "mode");
        const char *type = json_string_value(json_object_get(u, "type"));
        char mode[8];
        snprintf(mode, sizeof mode, "%04o", (unsigned)(mj ? json_integer_value(mj) : 0644));
        json_array_append_new(listing, json_pack("{s:O,s:s,s:s,s:I}", "path", json_object_get(u, "path"), "type",
                                                 type ? type : "file", "mode", mode, "size", (json_int_t)size));
    }
    close(workfd);
    json_object_set_new(j->req, "uploads", listing);
    return rc;
}

static bool uid_in_range(uint64_t uid)
{
    return uid >= C.cfg.uid_range_start && uid < C.cfg.uid_range_start + C.cfg.uid_range_size;
}

/* The next uid of the range after the job's sequence number that no unfinished job holds. */
static uid_t job_uid_for(uint64_t seq)
{
    for (uint64_t k = 0; k < C.cfg.uid_range_size; k++) {
        uid_t uid = (uid_t)(C.cfg.uid_range_start + (seq + k) % C.cfg.uid_range_size);
        bool taken = false;
        for (size_t i = 0; i < C.njobs && !taken; i++)
            taken = C.jobs[i]->uid == uid && !job_state_terminal(C.jobs[i]->state);
        if (!taken)
            return uid;
    }
    return (uid_t)(C.cfg.uid_range_start + seq % C.cfg.uid_range_size); /* every uid busy: share */
}

/* Per-user GPU allocation requests: a token bucket of limits.gpu_requests_per_minute, for the
 * last users seen (an evicted one starts with a full bucket, which only errs towards allowing). */
static struct bucket {
    uid_t uid;
    double tokens;
    int64_t at_ms;
} buckets[256];

static int take_token(uid_t uid, double *wait_s)
{
    uint32_t per_min = C.cfg.limits.gpu_requests_per_minute;
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
    b->tokens -= 1;
    return 0;
}

int submit_check(json_t *req, uid_t caller_uid, submit_info *si, jerr *e)
{
    if (caller_uid && uid_in_range(caller_uid))
        return jerr_http(e, 403, "uid %u is inside the range joblet gives to root's jobs (jobs.uid_range_start, "
                                 "jobs.uid_range_size); it may not submit jobs",
                         (unsigned)caller_uid);
    *si = (submit_info){0};
    return validate(req, time(NULL), &si->sched_ms, e) < 0 || check_uploads(req, &si->total, e) < 0 ? -1 : 0;
}

int submit_check_limits(json_t *const *reqs, size_t n, uid_t uid, bool for_workflow, jerr *e)
{
    const limits_config *L = &C.cfg.limits;
    bool gpu = false;
    for (size_t i = 0; i < n; i++) {
        uint64_t gpus = (uint64_t)json_integer_value(json_object_get(reqs[i], "gpu_count")) +
                        (json_object_get(reqs[i], "gpu_mig") ? 1 : 0);
        gpu |= gpus > 0;
        if (L->max_gpus_per_user && gpus > L->max_gpus_per_user) {
            char field[64] = "gpu_count";
            if (for_workflow)
                snprintf(field, sizeof field, "jobs[%zu].request.gpu_count", i);
            return jerr_field(e, field, "%s: asks for %llu GPUs; limits.max_gpus_per_user is %u", field,
                              (unsigned long long)gpus, L->max_gpus_per_user);
        }
    }
    if (L->max_queued_per_user) {
        uint32_t waiting = 0;
        for (size_t i = 0; i < C.njobs; i++)
            waiting += C.jobs[i]->owner_uid == uid && (job_in_queue(C.jobs[i]) || C.jobs[i]->state == JS_PENDING);
        if (waiting + n > L->max_queued_per_user)
            return jerr_http(e, 429, "uid %u has %u jobs waiting%s; limits.max_queued_per_user is %u: wait for some "
                                     "to start, or cancel some", (unsigned)uid, waiting,
                             n > 1 ? " and this asks for more" : "", L->max_queued_per_user);
    }
    double wait_s;
    if (L->gpu_requests_per_minute && gpu && take_token(uid, &wait_s) < 0)
        return jerr_http(e, 429, "too many GPU requests: limits.gpu_requests_per_minute is %u for each user; try "
                                 "again in %.1f s", L->gpu_requests_per_minute, wait_s);
    return 0;
}

job *submit_job(json_t *req, uid_t caller_uid, gid_t caller_gid, jerr *e)
{
    submit_info si;
    if (submit_check(req, caller_uid, &si, e) < 0 || submit_check_limits(&req, 1, caller_uid, false, e) < 0)
        return NULL;
    return submit_create(req, caller_uid, caller_gid, &si, e);
}

job *submit_create(json_t *req, uid_t caller_uid, gid_t caller_gid, const submit_info *si, jerr *e)
{
    int64_t sched_ms = si->sched_ms;
    uint64_t total = si->total;
    job *j = xcalloc(1, sizeof *j);
    uuid_v4(j->id);
    j->seq = C.next_seq;
    j->req = json_incref(req);
    const char *name = json_string_value(json_object_get(req, "name"));
    j->name = name ? xstrdup(name) : NULL;
    j->owner_uid = caller_uid;
    j->owner_gid = caller_gid;
    /* Jobs run as their submitter; each of root's jobs runs as a uid of its own, so no other
     * process (another job, a service running as nobody) can signal, trace or read it. */
    j->uid = caller_uid ? caller_uid : job_uid_for(j->seq);
    j->gid = caller_uid ? caller_gid : j->uid;
    j->created_ms = now_ms();
    j->scheduled_ms = sched_ms;
    j->state = sched_ms > j->created_ms ? JS_SCHEDULED : JS_QUEUED;
    j->stopped_by = -1;
    j->w_pid.fd = -1;
    j->w_notify.fd = -1;
    j->inotify_wd = -1;
    json_object_set_new(req, "pids_max", json_integer((json_int_t)C.cfg.pids_max));
    char dir[700];
    core_job_dir(j, dir, sizeof dir);
    if (mkdir(dir, 0700) < 0) {
        jerr_sys(e, "create %s", dir);
        job_free(j);
        return NULL;
    }
    if (create_uploads(j, dir, e) < 0 || db_insert_job(C.db, j, e) < 0) {
        rm_rf(dir);
        job_free(j);
        return NULL;
    }
    core_add(j);
    log_info("job %s submitted by uid %u: %s (%llu bytes uploaded)", j->id, (unsigned)caller_uid,
             json_string_value(json_object_get(req, "command")), (unsigned long long)total);
    return j;
}
