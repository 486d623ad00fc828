/* The HTTP API through the real route table (src/api/routes.c, routes_dispatch) and everything
 * behind it: the request schema, submission, workflows, the scheduler, starting jobs, their
 * logs, GPUs (the dgx-h100 fixture machine, simulated), the audit trail, metrics. Nothing is
 * served on a socket: routes_dispatch gets the request struct http.c would build, and
 * libmicrohttpd is replaced by the few functions of it the daemon calls (below), which check
 * every answer: exactly one per request, a status that is not 500, a JSON body, and on an
 * error {"error": {"code", "message"}}.
 *
 * Jobs do start: the shim zygote is replaced too (shim_spawn below), by a "shim" that reads the
 * spec the daemon wrote, as the real one would (it must load), writes the job's output and its
 * status.json in the job directory and is gone at once, so the daemon finishes the job in the
 * same call (exit 1 for a command named "false", else 0). Streamed uploads are sent as http.c
 * sends them (PUT /v1/uploads/{upload}: uploads_begin, _data in pieces, _end). Memory volumes
 * are made (tmpfs mounts, in a mount namespace of the harness's own, so none reaches the host);
 * filesystem volumes are refused (no mke2fs), and requests that change runtimes are not made
 * (a build runs mmdebstrap in a sandbox helper): GET /v1/runtimes* is.
 *
 * Input: up to 8 requests separated by NUL bytes, each one byte (method in bits 0-2: GET, POST,
 * DELETE, GET, POST, HEAD, PUT, OPTIONS; caller in bits 3-4: root, uid 1000, nobody, root;
 * bit 6: the body was over the limit, bit 7: other requests held the memory for bodies, as
 * http.c flags them; bit 5 is free, so that GET as root can be written 0x20 rather than a NUL),
 * the path with its query up to a newline ("/v1/jobs?status=RUNNING"), then the body
 * (none when there is no newline; for a PUT, bit 6 gives it a Content-Length). In a path, {job}
 * and {wf} stand for the id of the job and of the workflow the last 201 answer created, and
 * {upload} for the upload id of the last 202, so that one input can submit a job and then send
 * its files, ask for its logs, stop it or delete it. After each input every upload is dropped,
 * every job stopped and deleted, every workflow forgotten, every volume removed and every GPU
 * brought back online, so that inputs do not depend on each other; the database is started
 * afresh every 2,000 inputs. */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>

#include "api/http.h"
#include "api/park.h"
#include "api/tls.h"
#include "api/uploads.h"
#include "common/log.h"
#include "common/util.h"
#include "core/gpu_admin.h"
#include "core/gpu_service.h"
#include "core/gpus.h"
#include "core/incoming.h"
#include "core/job_ctl.h"
#include "core/jobs.h"
#include "core/loop.h"
#include "core/job_logs.h"
#include "core/runtime_build.h"
#include "core/runtimes.h"
#include "core/settle.h"
#include "core/state.h"
#include "core/volumes.h"
#include "core/workflow.h"
#include "exec/logwriter.h"
#include "exec/spec.h"
#include "exec/zygote.h"
#include "fuzz.h"
#include "gpu/gpu_state.h"

#ifndef JOBLET_FIXTURE_DIR
#error "JOBLET_FIXTURE_DIR: tests/fixtures"
#endif

/* ---- libmicrohttpd, as far as the daemon's routes use it ---------------------------------- */

#define MAX_ARGS 16

struct MHD_Connection {
    const char *key[MAX_ARGS], *value[MAX_ARGS];
    int nargs;
    const char *content_length; /* NULL: none (a chunked body) */
    int answers;
    unsigned status;
    const char *method, *path;
};

struct MHD_Response {
    char *data;
    size_t size;
    bool owned;
    MHD_ContentReaderCallback reader;
    void *reader_cls;
    MHD_ContentReaderFreeCallback reader_free;
    bool json;
    bool upgrade;   /* a 101 (api/attach.c, exec): the connection is never handed over here */
};

const char *MHD_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *key)
{
    if (kind == MHD_HEADER_KIND && !strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
        return c->content_length;
    if (kind != MHD_GET_ARGUMENT_KIND)
        return NULL;
    for (int i = 0; i < c->nargs; i++)
        if (!strcmp(c->key[i], key))
            return c->value[i];
    return NULL;
}

/* (api/query.c's query_unknown: every argument, in the order given, until the iterator says no) */
int MHD_get_connection_values(struct MHD_Connection *c, enum MHD_ValueKind kind, MHD_KeyValueIterator it, void *cls)
{
    int n = 0;
    if (kind != MHD_GET_ARGUMENT_KIND)
        return 0;
    for (int i = 0; i < c->nargs; i++) {
        n++;
        if (it && it(cls, MHD_GET_ARGUMENT_KIND, c->key[i], c->value[i]) != MHD_YES)
            break;
    }
    return n;
}

/* (api/query.c's query_has: whether the key is given at all, with a value or without) */
enum MHD_Result MHD_lookup_connection_value_n(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *key,
                                              size_t key_size, const char **value_ptr, size_t *value_size_ptr)
{
    if (kind != MHD_GET_ARGUMENT_KIND)
        return MHD_NO;
    for (int i = 0; i < c->nargs; i++)
        if (strlen(c->key[i]) == key_size && !memcmp(c->key[i], key, key_size)) {
            if (value_ptr)
                *value_ptr = c->value[i];
            if (value_size_ptr)
                *value_size_ptr = c->value[i] ? strlen(c->value[i]) : 0;
            return MHD_YES;
        }
    return MHD_NO;
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = calloc(1, sizeof *r);
    r->size = size;
    if (mode == MHD_RESPMEM_MUST_COPY) {
        r->data = malloc(size + 1);
        memcpy(r->data, buffer, size);
        r->owned = true;
    } else {
        r->data = buffer;
        r->owned = mode == MHD_RESPMEM_MUST_FREE;
    }
    return r;
}

struct MHD_Response *MHD_create_response_from_callback(uint64_t size, size_t block_size,
                                                       MHD_ContentReaderCallback crc, void *crc_cls,
                                                       MHD_ContentReaderFreeCallback crfc)
{
    struct MHD_Response *r = calloc(1, sizeof *r);
    r->reader = crc;
    r->reader_cls = crc_cls;
    r->reader_free = crfc;
    return r;
}

/* a terminal's attach or an exec: answered 101, but no connection is ever upgraded here (the
 * request's context frees what the answer would have taken: its connection's end) */
struct MHD_Response *MHD_create_response_for_upgrade(MHD_UpgradeHandler upgrade_handler, void *upgrade_handler_cls)
{
    struct MHD_Response *r = calloc(1, sizeof *r);
    r->upgrade = true;
    return r;
}

enum MHD_Result MHD_upgrade_action(struct MHD_UpgradeResponseHandle *urh, enum MHD_UpgradeAction action, ...)
{
    return MHD_YES;
}

/* an upgraded TLS connection's session (api/tls.h; tls.c is not linked): never upgraded here */
void tls_upgraded_take(gnutls_session_t s) {}
ssize_t tls_upgraded_recv(gnutls_session_t s, void *buf, size_t n)
{
    errno = EPIPE;
    return -1;
}
ssize_t tls_upgraded_send(gnutls_session_t s, const void *buf, size_t n)
{
    errno = EPIPE;
    return -1;
}
int tls_upgraded_bye(gnutls_session_t s) { return 0; }

/* a runtime's archive: read whole (they are small here: none is built) */
struct MHD_Response *MHD_create_response_from_fd(uint64_t size, int fd)
{
    char *data = malloc(size + 1);
    ssize_t n = pread(fd, data, size, 0);
    close(fd);
    return MHD_create_response_from_buffer(n > 0 ? (size_t)n : 0, data, MHD_RESPMEM_MUST_FREE);
}

/* a job's one stream, ended, raw: the same */
struct MHD_Response *MHD_create_response_from_fd_at_offset64(uint64_t size, int fd, uint64_t offset)
{
    char *data = malloc(size + 1);
    ssize_t n = pread(fd, data, size, (off_t)offset);
    close(fd);
    return MHD_create_response_from_buffer(n > 0 ? (size_t)n : 0, data, MHD_RESPMEM_MUST_FREE);
}

/* (reply.c's answer to a connection refused before it is read) */
const char *MHD_get_reason_phrase_for(unsigned int code)
{
    return code == 429 ? "Too Many Requests" : code == 503 ? "Service Unavailable" : "";
}

enum MHD_Result MHD_set_connection_option(struct MHD_Connection *c, enum MHD_CONNECTION_OPTION option, ...)
{
    return MHD_YES;
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *r, const char *header, const char *content)
{
    if (!strcasecmp(header, "Content-Type") && !strcmp(content, "application/json"))
        r->json = true;
    return MHD_YES;
}

void MHD_destroy_response(struct MHD_Response *r)
{
    if (!r)
        return;
    if (r->owned)
        free(r->data);
    if (r->reader_free)
        r->reader_free(r->reader_cls);
    free(r);
}

/* A streamed answer (a job's logs) is read as a client would, up to where it would wait. */
static void read_stream(struct MHD_Response *r)
{
    char buf[65536];
    uint64_t pos = 0;
    for (int round = 0; round < 64; round++) {
        ssize_t n = r->reader(r->reader_cls, pos, buf, sizeof buf);
        if (n == MHD_CONTENT_READER_END_OF_STREAM || n == MHD_CONTENT_READER_END_WITH_ERROR || n == 0)
            return;
        FUZZ_ASSERT(n > 0 && (size_t)n <= sizeof buf, "a log reader gave %zd bytes", n);
        pos += (uint64_t)n;
    }
}

/* the ids the last 201 answers gave, for {job} and {wf}; the last 202's upload, for {upload} */
static char last_job[40], last_wf[40], last_upload[40];

static void check_json_answer(const struct MHD_Connection *c, unsigned status, const struct MHD_Response *r)
{
    json_error_t je;
    json_t *o = json_loadb(r->data, r->size, 0, &je);
    FUZZ_ASSERT(o, "%s %s: %u with a body that is not JSON (%s): %.*s", c->method, c->path, status, je.text,
                (int)r->size, r->data);
    if (status >= 400) {
        json_t *err = json_object_get(o, "error");
        FUZZ_ASSERT(json_is_string(json_object_get(err, "code")) && json_is_string(json_object_get(err, "message")),
                    "%s %s: %u without an error object: %.*s", c->method, c->path, status, (int)r->size, r->data);
    }
    const char *id = json_string_value(json_object_get(o, "id"));
    if (status == 201 && id)
        snprintf(json_object_get(o, "jobs") ? last_wf : last_job, sizeof last_job, "%s", id);
    const char *up = json_string_value(json_object_get(json_object_get(o, "upload"), "id"));
    if (status == 202 && up)
        snprintf(last_upload, sizeof last_upload, "%s", up);
    json_decref(o);
}

/* A JSON answer written by a reader (api/jobs_list.c): read whole when it ends without waiting
 * for the next turn of a loop (the harness has none: here, fewer jobs than a slice), and checked
 * as any other. */
static void read_json_stream(const struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
    size_t cap = 1 << 16, len = 0;
    char *all = xmalloc(cap);
    for (int round = 0; round < 4096; round++) {
        if (cap - len < 65536)
            all = xrealloc(all, cap *= 2);
        ssize_t n = r->reader(r->reader_cls, len, all + len, 65536);
        if (n == MHD_CONTENT_READER_END_OF_STREAM) {
            struct MHD_Response whole = *r;
            whole.data = all, whole.size = len;
            check_json_answer(c, status, &whole);
            break;
        }
        if (n == MHD_CONTENT_READER_END_WITH_ERROR || n == 0)
            break;
        FUZZ_ASSERT(n > 0 && n <= 65536, "%s %s: a JSON reader gave %zd bytes", c->method, c->path, n);
        len += (size_t)n;
    }
    free(all);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned int status, struct MHD_Response *r)
{
    c->answers++;
    c->status = status;
    FUZZ_ASSERT(c->answers == 1, "%s %s: answered twice", c->method, c->path);
    FUZZ_ASSERT((status >= 200 && status < 600) || (status == 101 && r->upgrade), "%s %s: status %u", c->method,
                c->path, status);
    /* 500 is joblet's own fault (a request should never cause one) */
    FUZZ_ASSERT(status != 500, "%s %s: 500: %.*s", c->method, c->path, r->data ? (int)r->size : 0,
                r->data ? r->data : "");
    if (r->json && r->reader)
        read_json_stream(c, status, r); /* GET /v1/jobs: written a slice per turn */
    else if (r->json)
        check_json_answer(c, status, r);
    if (r->reader)
        read_stream(r);
    return MHD_YES;
}

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c, enum MHD_ConnectionInfoType t,
                                                        ...)
{
    return NULL;
}

void MHD_suspend_connection(struct MHD_Connection *c) {}
void MHD_resume_connection(struct MHD_Connection *c) {}

/* the metrics listener's: never started here */
struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    return NULL;
}
void MHD_stop_daemon(struct MHD_Daemon *d) {}

/* ---- the shim zygote (exec/zygote.h): a shim that is done at once ------------------------- */

int zygote_start(zygote *z, const char *shim_path, const char *cgroup_root, jerr *e)
{
    return jerr_set(e, ENOENT, "fuzz: no zygote");
}
pid_t zygote_fork(zygote *z, const char *dir, int notify_fd, int spec_fd, int filter_fd, jerr *e)
{
    return jerr_set(e, ENOENT, "fuzz: no zygote");
}
void zygote_stop(zygote *z) {}
/* a Slurm task's shim (core/slurm_task.c): never reached, a fuzzed request comes from no Slurm
 * task's cgroup */
int shim_spawn_stdio(const char *shim_path, const char *arg, int notify_fd, int spec_fd, int filter_fd,
                     const int stdio[3], pid_t *pid, jerr *e)
{
    return jerr_set(e, ENOENT, "fuzz: no shim for Slurm tasks");
}

/* A pid no process has (above the kernel's highest pid_max): pidfd_open fails, so job_launch.c
 * reads status.json at once, as for a shim that already ended. */
#define NO_PID ((pid_t)0x7ffffff0)

int shim_spawn(const char *shim_path, const char *dir, const char *arg2, int stdin_fd, int notify_fd, int spec_fd,
               int filter_fd, pid_t *pid, jerr *e)
{
    job_spec s;
    jerr se = {0};
    FUZZ_ASSERT(spec_load_fd(&s, spec_fd, &se) == 0, "the daemon wrote a spec its shim cannot read: %s", se.msg);
    FUZZ_ASSERT(!strcmp(s.job_dir, dir), "the spec is for %s, the shim for %s", s.job_dir, dir);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FUZZ_ASSERT(dfd >= 0, "open %s", dir);
    /* its output: the command line, as the job would print it */
    logw w;
    logw_init(&w, dfd, "stdout", s.log_max_bytes);
    uint64_t seq = 0;
    for (char **a = s.argv; *a; a++) {
        logw_feed(&w, *a, strlen(*a), now_ns(), ++seq);
        logw_feed(&w, a[1] ? " " : "\n", 1, now_ns(), ++seq);
    }
    if (w.data_fd >= 0)
        close(w.data_fd);
    if (w.idx_fd >= 0)
        close(w.idx_fd);
    const char *base = strrchr(s.argv[0], '/');
    base = base ? base + 1 : s.argv[0];
    int64_t now = now_ms();
    json_t *st = json_pack("{s:i,s:s,s:I,s:I,s:{s:i,s:i,s:i,s:i}}", "exit_code", !strcmp(base, "false"),
                           "end_reason", "exit", "started_at_ms", (json_int_t)now, "ended_at_ms", (json_int_t)now + 1,
                           "usage", "cpu_ns", 1000, "memory_peak_bytes", 4096, "io_read_bytes", 0, "io_write_bytes", 0);
    char path[800];
    snprintf(path, sizeof path, "%s/status.json", dir);
    FUZZ_ASSERT(json_dump_file(st, path, 0) == 0, "write %s", path);
    json_decref(st);
    close(dfd);
    spec_free(&s);
    *pid = NO_PID;
    return 0;
}

/* ---- the daemon's state ------------------------------------------------------------------ */

static char state_dir[] = "/tmp/fuzz-routes-XXXXXX";
static bool verbose; /* FUZZ_VERBOSE=1: each request and its status on stderr */
static unsigned inputs;

static void open_db(void)
{
    char path[700];
    snprintf(path, sizeof path, "%s/joblet.db", core.cfg.state_dir);
    jerr e = {0};
    core.db = db_open(path, &e);
    FUZZ_ASSERT(core.db, "%s", e.msg);
}

static void fresh_db(void)
{
    db_close(core.db);
    char path[700];
    static const char *const suffixes[] = {"", "-wal", "-shm", ".key"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(path, sizeof path, "%s/joblet.db%s", core.cfg.state_dir, suffixes[i]);
        unlink(path);
    }
    open_db();
}

static void cleanup(void)
{
    rm_rf(state_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_set_level(LOG_ERR);
    verbose = getenv("FUZZ_VERBOSE") != NULL;
    /* memory volumes are tmpfs mounts: in a mount namespace of our own, private, none reaches
     * the host (and all go with the process). Without it (not root), no mount can be made. */
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        fprintf(stderr, "fuzz_routes: no mount namespace of its own (%s): memory volumes will be refused\n",
                strerror(errno));
    FUZZ_ASSERT(mkdtemp(state_dir), "mkdtemp");
    atexit(cleanup);
    config_defaults(&core.cfg);
    snprintf(core.cfg.state_dir, sizeof core.cfg.state_dir, "%s", state_dir);
    snprintf(core.cfg.gpu.fixture, sizeof core.cfg.gpu.fixture, "%s/dgx-h100/machine.json", JOBLET_FIXTURE_DIR);
    snprintf(core.cfg.mps_control, sizeof core.cfg.mps_control, "/nonexistent/nvidia-cuda-mps-control");
    snprintf(core.cfg.volumes_mke2fs, sizeof core.cfg.volumes_mke2fs, "/nonexistent/mke2fs");
    core.cfg.health_interval_ms = 0;
    core.cfg.max_upload_bytes = 1 << 20;
    core.cfg.max_body_bytes = 1 << 20;
    snprintf(core.jobs_dir, sizeof core.jobs_dir, "%s/jobs", state_dir);
    snprintf(core.root_mount, sizeof core.root_mount, "%s/rootfs", state_dir);
    snprintf(core.shim_path, sizeof core.shim_path, "/nonexistent/joblet-shim");
    snprintf(core.scrub_path, sizeof core.scrub_path, "/nonexistent/joblet-gpu-scrub");
    snprintf(core.io_dev_why, sizeof core.io_dev_why, "fuzz: no block device");
    jerr e = {0};
    FUZZ_ASSERT(mkdir_p(core.jobs_dir, 0700, &e) == 0 && mkdir_p(core.root_mount, 0700, &e) == 0, "%s", e.msg);
    core.devfilter_prog = -1;
    /* a fixed machine: 4 CPUs, 16 GiB */
    core.online_cpus[0] = 0x0f;
    core.ncpus = 4;
    core.mem_total_mb = 16384;
    open_db();
    core.next_seq = 1;
    FUZZ_ASSERT(loop_init() == 0, "loop_init");
    job_logs_init();
    FUZZ_ASSERT(runtimes_init(&e) == 0 && runtime_build_init(&e) == 0, "%s", e.msg);
    FUZZ_ASSERT(volumes_init(&e) == 0, "%s", e.msg);
    FUZZ_ASSERT(gpus_init(&e) == 0, "%s", e.msg);
    gpu_service_load();
    state_want(WANT_SCHEDULE);
    settle();
    return 0;
}

/* After each input: nothing it made is left for the next one. */
static void reset(void)
{
    incoming_drop_all();
    settle();
    for (size_t i = 0; i < core.njobs; i++) {
        jerr e = {0};
        job *j = core.jobs[i];
        if (!job_state_terminal(j->state))
            job_ctl_stop(j, 0, &e);
    }
    settle();
    for (size_t i = 0; i < core.njobs; i++)
        FUZZ_ASSERT(job_state_terminal(core.jobs[i]->state), "job %s is still %s", core.jobs[i]->id,
                    job_state_name(core.jobs[i]->state));
    size_t deleted;
    bool more;
    jerr de = {0};
    caller root = authz_local(0, 0);
    FUZZ_ASSERT(job_ctl_delete_ended(&root, 0, SIZE_MAX, &deleted, &more, &de) == 0 && !more, "deleting ended jobs: %s",
                de.msg);
    FUZZ_ASSERT(core.njobs == 0, "%zu jobs left after deleting every ended one", core.njobs);
    workflow_free_all();
    core.workflows = NULL;
    core.nworkflows = 0;
    while (volumes_count() > 0) {
        jerr e = {0};
        char name[80];
        snprintf(name, sizeof name, "%s", volumes_at(0)->name);
        caller admin = authz_local(0, 0);
        FUZZ_ASSERT(volumes_remove(name, &admin, &e) == 0, "volume %s: %s", name, e.msg);
    }
    for (int i = 0; i < core.gpu.inv.n; i++)
        if (gpu_service_get(i)->state != GS_AVAILABLE) {
            jerr e = {0};
            json_decref(gpu_admin_action(i, GE_ADMIN_ONLINE, true, 0, &e));
        }
    settle();
    state_commit();
    if (++inputs % 2000 == 0)
        fresh_db();
}

static const char *const methods[] = {"GET", "POST", "DELETE", "GET", "POST", "HEAD", "PUT", "OPTIONS"};
static const uid_t callers[] = {0, 1000, 65534, 0};

/* url with {job}, {wf} and {upload} replaced (caller frees). */
static char *expand(const char *url)
{
    size_t cap = strlen(url) * 10 + 1, n = 0;
    char *out = malloc(cap);
    for (const char *p = url; *p;) {
        static const struct { const char *name; const char *value; } marks[] = {
            {"{job}", last_job}, {"{wf}", last_wf}, {"{upload}", last_upload}};
        size_t m = 0;
        while (m < 3 && strncmp(p, marks[m].name, strlen(marks[m].name)))
            m++;
        if (m < 3) {
            size_t l = strlen(marks[m].value);
            memcpy(out + n, marks[m].value, l);
            n += l;
            p += strlen(marks[m].name);
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = 0;
    return out;
}

/* PUT /v1/uploads/{id}, as http.c serves it: the headers, the body in pieces, its end. */
static void put_upload(struct MHD_Connection *conn, const char *url, uid_t uid, const char *body, size_t len,
                       uint8_t ctl)
{
    char cl[32];
    snprintf(cl, sizeof cl, "%zu", len);
    conn->content_length = ctl & 0x40 ? cl : NULL;
    put_state *p;
    uploads_begin(conn, url, uid, &p);
    if (!p)
        return; /* answered already */
    FUZZ_ASSERT(conn->answers == 0, "PUT %s: answered, and a body still expected", url);
    size_t piece = 1 + ((size_t)ctl * 37) % 1500;
    for (size_t at = 0; at < len;) {
        size_t n = len - at < piece ? len - at : piece, left = n;
        if (uploads_data(p, body + at, &left) != MHD_YES) {
            uploads_abort(p, MHD_REQUEST_TERMINATED_WITH_ERROR); /* the connection is closed */
            return;
        }
        /* what the turn's slice of making entries left comes again at the next turn */
        at += n - left;
        if (left)
            loop_turn_over();
    }
    bool done = false;
    for (int turns = 0; !done; turns++) {
        FUZZ_ASSERT(turns < 100000, "PUT %s: its end never came", url);
        uploads_end(conn, p, &done);
        if (!done)
            loop_turn_over();
    }
}

static void one_request(const uint8_t *data, size_t size)
{
    if (size < 1)
        return;
    uint8_t ctl = data[0];
    data++, size--;
    const uint8_t *nl = memchr(data, '\n', size);
    char *raw = fuzz_strndup(data, nl ? (size_t)(nl - data) : size);
    char *url = expand(raw);
    free(raw);
    char *body = nl ? fuzz_strndup(nl + 1, size - (size_t)(nl - data) - 1) : NULL;
    size_t body_len = nl ? size - (size_t)(nl - data) - 1 : 0;
    struct MHD_Connection conn = {.method = methods[ctl & 7]};
    uid_t uid = callers[ctl >> 3 & 3];
    /* a build runs mmdebstrap in a sandbox helper, an import unpacks an archive there: not here */
    if (!strncmp(url, "/v1/runtime", 11) && strcmp(conn.method, "GET")) {
        free(url);
        free(body);
        return;
    }
    int64_t t0 = mono_ns();
    if (uploads_is_put(conn.method, url)) {
        conn.path = url;
        put_upload(&conn, url, uid, body ? body : "", body_len, ctl);
    } else {
        /* the query: a=1&b=2, as libmicrohttpd splits it */
        char *q = strchr(url, '?');
        if (q) {
            *q++ = 0;
            for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv && conn.nargs < MAX_ARGS;
                 kv = strtok_r(NULL, "&", &save)) {
                char *eq = strchr(kv, '=');
                if (eq)
                    *eq++ = 0;
                conn.key[conn.nargs] = kv;
                conn.value[conn.nargs++] = eq ? eq : "";
            }
        }
        conn.path = url;
        park_slot park = {0};
        http_ctx ctx = {0};
        request r = {.conn = &conn, .method = conn.method, .path = url, .body = body, .body_len = body_len,
                     .body_busy = ctl & 0x80, /* then never too large, as http.c has it */
                     .body_too_large = (body_len > core.cfg.max_body_bytes || ctl & 0x40) && !(ctl & 0x80),
                     .who = authz_local(uid, uid), .park = &park, .body_fd = -1, .ctx = &ctx};
        if (r.body_too_large || r.body_busy) /* http.c keeps no body then */
            r.body = NULL, r.body_len = 0;
        routes_dispatch(&r);
        /* a request parked until the next turn (a long inline upload listing, written a slice a
         * turn) runs again then, as http.c has it; one parked for a volume being formatted
         * would wait for ever: none is, here (no mke2fs) */
        for (int turns = 0; park.suspended; turns++) {
            FUZZ_ASSERT(turns < 100000, "%s %s: parked for ever", conn.method, url);
            settle();
            state_commit();
            loop_turn_over();
            loop_run_later();
            const jerr *waited = NULL;
            if (park.suspended || !park_resumed(&park, &waited))
                continue;
            FUZZ_ASSERT(!waited, "%s %s: woken with an error", conn.method, url);
            r.resumed = true;
            routes_dispatch(&r);
        }
        if (ctx.free) /* the connection is done, as http.c's on_done has it */
            ctx.free(ctx.p);
        park_lapse(&park);
        park_forget(&park);
    }
    FUZZ_ASSERT(conn.answers == 1, "%s %s: %d answers", conn.method, url, conn.answers);
    /* what the loop does after every turn; the next request comes in a turn of its own (the
     * per-turn budgets whole again: without it, a long run used up delete-all's and made it
     * park, which the harness has no loop to resume) */
    settle();
    state_commit();
    loop_turn_over();
    if (verbose)
        fprintf(stderr, "fuzz_routes: uid %u: %s %s -> %u (%.1f ms)\n", (unsigned)uid, conn.method, url, conn.status,
                (double)(mono_ns() - t0) / 1e6);
    free(url);
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    last_job[0] = last_wf[0] = last_upload[0] = 0;
    for (int k = 0; k < 8 && size > 0; k++) {
        const uint8_t *end = memchr(data, 0, size);
        size_t n = end ? (size_t)(end - data) : size;
        one_request(data, n);
        data += n + (end ? 1 : 0);
        size -= n + (end ? 1 : 0);
    }
    reset();
    return 0;
}
