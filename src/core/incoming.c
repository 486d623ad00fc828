/* Submissions whose uploads follow the request (incoming.h). */
#include "incoming.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "arrays.h"
#include "connfds.h"
#include "jobs.h"
#include "loop.h"
#include "state.h"
#include "submit.h"
#include "transfers.h"
#include "volumes.h"
#include "workfs.h"

#define STAGED_PREFIX ".incoming-"
/* The entries without bytes (and an inline listing's files) are made a slice of the loop's turn
 * at a time, all uploads together (as core/trash.c removes): 100,000 empty directories held
 * the loop seconds in one turn. At least INCOMING_AT_LEAST entries a call whatever the clock says,
 * so that each call makes headway and a small listing is done in one. */
#define INCOMING_SLICE_MS 20
#define INCOMING_AT_LEAST 64

struct incoming {
    char id[37];
    uid_t uid;
    gid_t gid;
    int64_t deadline_ms;      /* no PUT sending: dropped at this time; 0 while one sends */
    bool workflow;
    job_req req;              /* a job: its checked request */
    submit_info one;
    wf_body wb;               /* a workflow: its body and its jobs' checked requests */
    wf_checked wc;
    size_t n;                 /* requests: 1, or the workflow's jobs */
    uint64_t promised;        /* the jobs they make (an array's tasks each), promised (submit.h) */
    uint64_t promised_bytes;  /* and their requests' bytes (submit_request_bytes) */
    job_req *reqs;            /* &req, or wc.reqs */
    submit_info *si;          /* &one, or wc.si */
    char **staged;            /* each request's directory, <jobs>/.incoming-<id>-<k> */
    uint64_t total;           /* bytes declared */
    uint64_t received;        /* bytes written */
    size_t files;             /* files with bytes to come */
    /* the writer: entry u of request r is next (or open, when fd >= 0) */
    size_t r, u;
    int workfd;               /* request r's work/, -1 when not open */
    int fd;                   /* the file being written, -1 when none */
    uint64_t left;            /* bytes of that file still to come */
    bool inline_;             /* the listing carries its files (content_b64): no PUT */
    bool unreserved;          /* choose_uids' reservations given back (unreserve) */
};

static incoming **open_list;
static size_t nopen;

/* Room for one more upload: shared with copies (transfers.h), and its directory's and file's
 * descriptors among what connections hold (connfds.h; taken in the same turn: enlist). */
static int admit(const caller *who, jerr *e)
{
    if (transfers_check(who->uid, e) < 0)
        return -1;
    return connfds_check(who, CONNFDS_UPLOAD, "an upload (rnx job run --upload)", e);
}

/* A new upload with n empty directories, <jobs>/.incoming-<id>-<k>/work; NULL when the disk
 * refuses (nothing left behind). */
static incoming *make(uid_t uid, gid_t gid, size_t n, jerr *e)
{
    incoming *in = xcalloc(1, sizeof *in);
    uuid_v4(in->id);
    in->uid = uid;
    in->gid = gid;
    in->n = n;
    in->workfd = -1;
    in->fd = -1;
    in->deadline_ms = now_ms() + (int64_t)core.cfg.upload_timeout_s * 1000;
    in->staged = xcalloc(n, sizeof *in->staged);
    for (size_t k = 0; k < n; k++) {
        char work[800];
        if (asprintf(&in->staged[k], "%s/" STAGED_PREFIX "%s-%zu", core.jobs_dir, in->id, k) < 0)
            abort();
        if (mkdir(in->staged[k], 0700) < 0 ? jerr_sys(e, "create %s", in->staged[k]) < 0
                                           : workfs_make(uid, in->staged[k], work, sizeof work, e) < 0) {
            for (size_t i = 0; i <= k; i++) {
                workfs_remove(uid, in->staged[i]);
                free(in->staged[i]);
            }
            free(in->staged);
            free(in);
            return NULL;
        }
    }
    return in;
}

/* Each job's entries are given to the uid it will run as while they are written (no pass over
 * them all when it is made): that uid chosen now, and a uid of the range kept from other jobs
 * meanwhile (jobs_uid_reserve). An array's files stay root's (its tasks copy them). */
static void choose_uids(incoming *in)
{
    for (size_t r = 0; r < in->n; r++) {
        submit_info *si = &in->si[r];
        if (in->reqs[r].array)
            continue;
        si->owned = true;
        si->run_uid = jobs_run_uid(in->uid, &in->reqs[r], core.next_seq + r);
        si->run_gid = in->uid ? in->gid : si->run_uid;
        if (!in->uid)
            jobs_uid_reserve(si->run_uid, true);
    }
}

static void count_files(incoming *in)
{
    choose_uids(in);
    for (size_t r = 0; r < in->n; r++) {
        in->si[r].staged = in->staged[r];
        for (size_t i = 0; i < in->reqs[r].nuploads; i++)
            in->files += in->reqs[r].uploads[i].size > 0 && !strcmp(in->reqs[r].uploads[i].type, "file");
        in->total += jobreq_uploads_declared(&in->reqs[r]);
    }
}

static void enlist(incoming *in)
{
    open_list = xrealloc(open_list, (nopen + 1) * sizeof *open_list);
    open_list[nopen++] = in;
    transfers_add(in->uid);
    connfds_add(in->uid, CONNFDS_UPLOAD);
    job_req **reqs = xcalloc(in->n ? in->n : 1, sizeof *reqs);
    for (size_t r = 0; r < in->n; r++)
        reqs[r] = &in->reqs[r];
    in->promised = submit_task_count(reqs, in->n);
    in->promised_bytes = submit_request_bytes(reqs, in->n) + (in->workflow ? workflow_doc_bytes(in->wb.doc) : 0);
    free(reqs);
    submit_promise(in->uid, (int64_t)in->promised, (int64_t)in->promised_bytes);
    for (size_t r = 0; r < in->n; r++)
        volumes_hold(&in->reqs[r], true); /* the volumes it pinned stay until it ends */
    log_info("upload %s: uid %u, %llu bytes in %zu files to come for %s", in->id, (unsigned)in->uid,
             (unsigned long long)in->total, in->files, in->workflow ? "a workflow" : in->req.array ? "an array" : "a job");
}

static void unlist(incoming *in)
{
    for (size_t i = 0; i < nopen; i++)
        if (open_list[i] == in) {
            open_list[i] = open_list[--nopen];
            transfers_remove(in->uid);
            connfds_give(in->uid, CONNFDS_UPLOAD);
            submit_promise(in->uid, -(int64_t)in->promised, -(int64_t)in->promised_bytes);
            for (size_t r = 0; r < in->n; r++)
                volumes_hold(&in->reqs[r], false);
            return;
        }
}

/* choose_uids' reservations given back, once: just before the jobs are made (in the same turn:
 * no other job can take the uids between; they then hold them), or when none will be. Before,
 * since making a workflow frees its checked requests, in->si among them. */
static void unreserve(incoming *in)
{
    if (in->unreserved)
        return;
    in->unreserved = true;
    for (size_t r = 0; r < in->n; r++)
        if (in->si[r].owned && !in->uid)
            jobs_uid_reserve(in->si[r].run_uid, false);
}

/* Closes what is open, removes what is still staged (a created job took its directory away),
 * frees the requests. */
static void release(incoming *in)
{
    unreserve(in);
    if (in->fd >= 0)
        close(in->fd);
    if (in->workfd >= 0)
        close(in->workfd);
    for (size_t k = 0; k < in->n; k++) {
        workfs_remove(in->uid, in->staged[k]);
        free(in->staged[k]);
    }
    free(in->staged);
    jobreq_free(&in->req);
    workflow_checked_free(&in->wc);
    workflow_body_free(&in->wb);
    free(in);
}

incoming *incoming_open_job(job_req *req, const caller *who, jerr *e)
{
    submit_info si;
    uid_t uid = who->uid;
    gid_t gid = who->gid;
    if (admit(who, e) < 0 || submit_check(req, who, &si, e) < 0 || submit_check_limits(&req, 1, uid, 0, 0, e) < 0)
        return NULL;
    incoming *in = make(uid, gid, 1, e);
    if (!in)
        return NULL;
    in->req = *req;
    *req = (job_req){0};
    in->one = si;
    in->reqs = &in->req;
    in->si = &in->one;
    count_files(in);
    enlist(in);
    return in;
}

/* A listing that came with its request (content_b64), staged: written a slice per turn by
 * incoming_finish, no PUT (its request's connection watches it: incoming_drop when it goes). */
static incoming *carried(incoming *in)
{
    if (in) {
        in->inline_ = true;
        in->deadline_ms = 0;
    }
    return in;
}

incoming *incoming_open_inline(job_req *req, const caller *who, jerr *e)
{
    return carried(incoming_open_job(req, who, e));
}

incoming *incoming_of(const char *id)
{
    for (size_t i = 0; i < nopen; i++)
        if (!strcmp(open_list[i]->id, id))
            return open_list[i];
    return NULL;
}

const char *incoming_id(const incoming *in) { return in->id; }

/* A workflow's upload: its files follow the request (a PUT), or came with it (inline_), every
 * job's the same way. */
static incoming *open_workflow(wf_body *b, const caller *who, bool inline_, jerr *e)
{
    wf_checked c;
    uid_t uid = who->uid;
    gid_t gid = who->gid;
    if (admit(who, e) < 0 || workflow_prepare(b, who, &c, e) < 0)
        return NULL;
    uint64_t total = 0;
    for (size_t i = 0; i < c.n; i++) {
        total += jobreq_uploads_declared(&c.reqs[i]);
        for (size_t k = 0; k < c.reqs[i].nuploads; k++) {
            const jobreq_upload *up = &c.reqs[i].uploads[k];
            /* (inline: no file has its bytes to follow, or the workflow would be streamed,
             * workflow_json_streamed) */
            if (inline_ || !up->content_b64)
                continue;
            char field[64];
            snprintf(field, sizeof field, "jobs[%zu].request.uploads", i);
            jerr_field(e, field, "job '%s': uploads: '%.200s' carries content_b64, but this workflow's files follow "
                                 "the request; send every job's files one way", b->jobs[i].name, up->path);
            workflow_checked_free(&c);
            return NULL;
        }
    }
    if (total > core.cfg.max_upload_bytes) {
        jerr_http(e, 413, "uploads: the workflow's jobs upload %llu bytes together, over the limit of %llu bytes "
                          "(jobs.max_upload_bytes)",
                  (unsigned long long)total, (unsigned long long)core.cfg.max_upload_bytes);
        workflow_checked_free(&c);
        return NULL;
    }
    incoming *in = make(uid, gid, c.n, e);
    if (!in) {
        workflow_checked_free(&c);
        return NULL;
    }
    in->workflow = true;
    in->wb = *b;
    *b = (wf_body){0};
    /* the requests were read from the body, which the caller frees: only the checked ones stay */
    free(in->wb.requests);
    in->wb.requests = NULL;
    in->wc = c;
    in->reqs = c.reqs;
    in->si = c.si;
    count_files(in);
    enlist(in);
    return in;
}

incoming *incoming_open_workflow(wf_body *b, const caller *who, jerr *e) { return open_workflow(b, who, false, e); }

incoming *incoming_open_workflow_inline(wf_body *b, const caller *who, jerr *e)
{
    return carried(open_workflow(b, who, true, e));
}

json_t *incoming_json(const incoming *in)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/uploads/%s", in->id);
    return json_pack("{s:{s:s,s:s,s:I,s:I,s:I}}", "upload", "id", in->id, "path", path, "bytes",
                     (json_int_t)in->total, "files", (json_int_t)in->files, "timeout_s",
                     (json_int_t)core.cfg.upload_timeout_s);
}

incoming *incoming_find(const char *id, uid_t uid, jerr *e)
{
    for (size_t i = 0; i < nopen; i++) {
        incoming *in = open_list[i];
        if (strcmp(in->id, id) || in->uid != uid)
            continue;
        if (!in->deadline_ms) {
            jerr_http(e, 409, "upload %s is already being sent", id);
            e->code = EBUSY;
            return NULL;
        }
        return in;
    }
    jerr_http(e, 404, "no upload '%.64s' waits for its bytes: unknown, another user's, or dropped (no PUT within "
                      "jobs.upload_timeout_s, %llu s, or a PUT that failed); submit again",
              id, (unsigned long long)core.cfg.upload_timeout_s);
    return NULL;
}

uint64_t incoming_bytes(const incoming *in) { return in->total; }

void incoming_attach(incoming *in) { in->deadline_ms = 0; }

/* This turn's share of the loop for making entries, all uploads together (INCOMING_SLICE_MS). */
static uint64_t spent_turn;
static int64_t spent_ns;

static int64_t slice_until(void)
{
    if (spent_turn != loop_turns())
        spent_turn = loop_turns(), spent_ns = 0;
    return mono_ns() + (int64_t)INCOMING_SLICE_MS * 1000000 - spent_ns;
}

/* Moves the writer to the next file with bytes to come, creating on the way every entry that
 * has none (directories, links, empty files; an inline listing's files with their content), each
 * given to the uid its job runs as; in->fd < 0 afterwards when nothing is left. 1 when the turn's
 * slice is spent first (the rest at the next turn), 0 when done, -1 on an error. */
static int advance(incoming *in, jerr *e)
{
    int64_t start = mono_ns(), until = slice_until();
    int rc = 0;
    for (size_t made = 0; in->r < in->n; ) {
        job_req *rq = &in->reqs[in->r];
        if (in->u == rq->nuploads) {
            if (in->workfd >= 0)
                close(in->workfd);
            in->workfd = -1;
            in->r++;
            in->u = 0;
            continue;
        }
        if (made >= INCOMING_AT_LEAST && mono_ns() >= until) {
            rc = 1;
            break;
        }
        if (in->workfd < 0) {
            char work[800];
            workfs_path(in->uid, in->staged[in->r], work, sizeof work);
            in->workfd = open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (in->workfd < 0) {
                rc = jerr_sys(e, "open %s", work);
                break;
            }
        }
        jobreq_upload *up = &rq->uploads[in->u];
        const submit_info *si = &in->si[in->r];
        uid_t uid = si->owned ? si->run_uid : (uid_t)-1;
        gid_t gid = si->owned ? si->run_gid : (gid_t)-1;
        made++;
        if (in->inline_) {
            if (submit_upload_inline(in->workfd, up, uid, gid, e) < 0) {
                rc = -1;
                break;
            }
            in->u++;
            continue;
        }
        int fd;
        if (submit_upload_create(in->workfd, up, uid, gid, &fd, e) < 0) {
            rc = -1;
            break;
        }
        if (fd >= 0 && up->size > 0) {
            in->fd = fd;
            in->left = (uint64_t)up->size;
            break;
        }
        if (fd >= 0 && submit_upload_done(fd, up, 0, e) < 0) {
            rc = -1;
            break;
        }
        in->u++;
    }
    spent_ns += mono_ns() - start;
    return rc;
}

/* A write that failed: the disk's own errors answer 507, the rest 500. */
static int disk_error(jerr *e)
{
    if (e->code == ENOSPC || e->code == EDQUOT) {
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "%s", e->msg);
        jerr_http(e, 507, "%s (joblet's state directory has no room left)", msg);
    }
    return -1;
}

int incoming_write(incoming *in, const char *data, size_t len, size_t *taken, jerr *e)
{
    *taken = 0;
    while (len) {
        if (in->fd < 0) {
            int rc = advance(in, e);
            if (rc < 0)
                return disk_error(e);
            if (rc > 0)
                return 1; /* the rest of the body at the next turn */
            if (in->fd < 0)
                return jerr_http(e, 400, "uploads: the body goes on past the %llu bytes the listing declares",
                                 (unsigned long long)in->total);
        }
        jobreq_upload *up = &in->reqs[in->r].uploads[in->u];
        size_t k = len < in->left ? len : (size_t)in->left;
        if (submit_upload_write(in->fd, up, data, k, e) < 0)
            return disk_error(e);
        data += k;
        len -= k;
        *taken += k;
        in->left -= k;
        in->received += k;
        if (!in->left) {
            int fd = in->fd;
            in->fd = -1;
            if (submit_upload_done(fd, up, (uint64_t)up->size, e) < 0)
                return disk_error(e);
            in->u++;
        }
    }
    return 0;
}

int incoming_finish(incoming *in, job **j, workflow **wf, jarray **a, jerr *e)
{
    *j = NULL;
    *wf = NULL;
    *a = NULL;
    int rc = in->fd < 0 ? advance(in, e) : 0;
    if (rc > 0)
        return 1; /* entries left to make: again at the next turn */
    if (rc < 0)
        disk_error(e);
    if (rc == 0 && in->fd >= 0) {
        const jobreq_upload *up = &in->reqs[in->r].uploads[in->u];
        rc = jerr_http(e, 400, "uploads: the body ended after %llu of the %llu bytes declared: '%.200s' lacks %llu "
                               "of its %lld bytes",
                       (unsigned long long)in->received, (unsigned long long)in->total, up->path,
                       (unsigned long long)in->left, (long long)up->size);
    }
    unlist(in);
    unreserve(in);
    if (rc == 0 && in->workflow) {
        *wf = workflow_create(&in->wb, &in->wc, in->uid, in->gid, e);
        rc = *wf ? 0 : -1;
    } else if (rc == 0 && in->req.array) {
        /* an array: its files are the ones every task's /work starts as */
        *a = submit_array_create(&in->req, in->uid, in->gid, &in->one, e);
        rc = *a ? 0 : -1;
    } else if (rc == 0) {
        *j = submit_create(&in->req, in->uid, in->gid, &in->one, e);
        if (*j)
            *j = submit_commit(*j, e);
        rc = *j ? 0 : -1;
    }
    if (rc == 0)
        log_info("upload %s: %llu bytes written", in->id, (unsigned long long)in->received);
    else
        log_info("upload %s dropped: %s", in->id, e->msg);
    release(in);
    return rc;
}

void incoming_drop(incoming *in, const char *why)
{
    log_info("upload %s dropped after %llu of %llu bytes: %s", in->id, (unsigned long long)in->received,
             (unsigned long long)in->total, why);
    unlist(in);
    release(in);
}

int64_t incoming_next_deadline(void)
{
    int64_t next = 0;
    for (size_t i = 0; i < nopen; i++)
        if (open_list[i]->deadline_ms && (!next || open_list[i]->deadline_ms < next))
            next = open_list[i]->deadline_ms;
    return next;
}

void incoming_expire(int64_t now)
{
    for (size_t i = 0; i < nopen;) {
        incoming *in = open_list[i];
        if (in->deadline_ms && in->deadline_ms <= now)
            incoming_drop(in, "no PUT of its bytes within jobs.upload_timeout_s"); /* moves the last one here */
        else
            i++;
    }
}

void incoming_each_req(void (*fn)(const job_req *r, const char *id, uid_t owner, void *arg), void *arg)
{
    for (size_t i = 0; i < nopen; i++)
        for (size_t r = 0; r < open_list[i]->n; r++)
            fn(&open_list[i]->reqs[r], open_list[i]->id, open_list[i]->uid, arg);
}

void incoming_drop_all(void)
{
    while (nopen)
        incoming_drop(open_list[0], "joblet is stopping");
    free(open_list);
    open_list = NULL;
}

void incoming_clean_stale(void)
{
    DIR *d = opendir(core.jobs_dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, STAGED_PREFIX, strlen(STAGED_PREFIX)))
            continue;
        char path[900];
        snprintf(path, sizeof path, "%s/%s", core.jobs_dir, de->d_name);
        log_info("removing %s, an upload an earlier joblet did not finish", path);
        rm_rf(path);
    }
    closedir(d);
    workfs_clean_stale(STAGED_PREFIX);
}
