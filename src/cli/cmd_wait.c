/* rnx job wait ID...: blocks until every job named has ended (docs/batch.md).
 *
 * It does not poll: it reads the daemon's event stream (GET /v1/events, core/events.h), which
 * costs joblet nothing per waiting client and loop turn (one shared ring; streams bounded per
 * user by events.max_streams_per_user), and asks for a job's status only when the stream's
 * hello (or a resync) says it may have missed its end, and once per job at its end for its
 * exit code. */
#include "cmd_wait.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/jobstate.h"
#include "../common/jsonx.h"
#include "../common/parse.h"
#include "../common/util.h"
#include "client.h"

static const char wait_help[] =
    "Usage: rnx job wait [--timeout=DURATION] [-q] ID...\n"
    "\n"
    "Waits until every job named has ended (COMPLETED, FAILED, STOPPED or CANCELED) and prints\n"
    "each end as it happens (short id, or a task's ID_7; state, exit code), like Slurm's\n"
    "sbatch --wait.\n"
    "An array's tasks: ID_7, or ID_[3-5] for each task of the list.\n"
    "A job that has ended already counts at once.\n"
    "\n"
    "Exit status:\n"
    "  one job:       its exit code; 128+N when a signal N ended it; else 0 when it ended\n"
    "                 COMPLETED and 1 when it ended FAILED, STOPPED or CANCELED without one\n"
    "  several jobs:  the highest of their statuses so counted (0 only when all are 0)\n"
    "  124            --timeout passed before they all ended (they go on)\n"
    "  125            rnx could not wait (no such job, joblet unreachable at the start);\n"
    "                 2: bad usage\n"
    "A job deleted while waited for counts 1. While rnx waits, joblet may restart: rnx\n"
    "waits on, trying again every second.\n"
    "\n"
    "Flags:\n"
    "  --timeout DURATION   give up after this long: 90, 30s, 10min, 2h, 1:00:00\n"
    "  -q, --quiet          print nothing but errors\n"
    "  -h, --help           show this help\n";

typedef struct waited {
    char *id;                  /* the full id; ARRAY_T for an array's task not made yet */
    char *array;               /* that task's array (its full id) until its job is made */
    int64_t task;
    bool ended;
    int status;                /* its part of the exit status, once ended */
} waited;

typedef struct wait_state {
    const rnx_ctx *ctx;
    waited *jobs;
    size_t n, left;
    bool quiet;
    char event[32];            /* the SSE event being read */
    int rc;                    /* WAIT_FAILED once something went wrong */
} wait_state;

/* A job's part of the exit status, from its JSON. */
static int status_of(json_t *job)
{
    json_t *ec = json_object_get(job, "exit_code"), *sig = json_object_get(job, "signal");
    if (json_is_integer(ec))
        return (int)json_integer_value(ec) & 0xff;
    if (json_is_integer(sig) && json_integer_value(sig) > 0)
        return 128 + (int)(json_integer_value(sig) & 0x7f);
    const char *s = json_string_value(json_object_get(job, "status"));
    return s && !strcmp(s, "COMPLETED") ? 0 : 1;
}

static bool terminal(const char *status)
{
    return status && (!strcmp(status, "COMPLETED") || !strcmp(status, "FAILED") || !strcmp(status, "STOPPED") ||
                      !strcmp(status, "CANCELED"));
}

/* One job (or task) of get_job's answer to wait for: by its full id, a task not made yet as
 * ARRAY_T (by its array's full id) until it is; one named twice is waited for once. */
static void wait_add(wait_state *w, size_t *cap, json_t *job)
{
    if (w->n == *cap) {
        *cap = *cap * 2 + 8;
        w->jobs = xrealloc(w->jobs, *cap * sizeof *w->jobs);
        memset(w->jobs + w->n, 0, (*cap - w->n) * sizeof *w->jobs);
    }
    waited *j = &w->jobs[w->n++];
    j->id = xstrdup(json_string_value(json_object_get(job, "id")) ? json_string_value(json_object_get(job, "id")) : "");
    json_t *arr = json_object_get(job, "array");
    const char *aid = json_string_value(json_object_get(arr, "id"));
    if (json_is_false(json_object_get(job, "made")) && aid && json_is_integer(json_object_get(arr, "task"))) {
        /* a task not made yet: ARRAY_T, by the array's full id, until it is */
        j->array = xstrdup(aid);
        j->task = json_integer_value(json_object_get(arr, "task"));
        free(j->id);
        if (asprintf(&j->id, "%s_%lld", aid, (long long)j->task) < 0)
            abort();
    }
    w->left++;
    for (size_t k = 0; k + 1 < w->n; k++)
        if (!strcmp(w->jobs[k].id, j->id)) { /* named twice: waited for once */
            j->ended = true;
            w->left--;
            break;
        }
}

/* GET the job: its JSON, or NULL with *e saying why (e->http 0: joblet did not answer). */
static json_t *get_job(const rnx_ctx *ctx, const char *ref, jerr *e)
{
    rnx_client *c = client_new(&ctx->target);
    if (!c) {
        snprintf(e->msg, sizeof e->msg, "no connection to joblet");
        return NULL;
    }
    char *esc = client_escape(c, ref), *path = NULL;
    if (asprintf(&path, "/v1/jobs/%s", esc) < 0)
        abort();
    json_t *job = NULL;
    if (client_request(c, "GET", path, NULL, &job, e) < 0)
        job = NULL;
    free(esc);
    free(path);
    client_free(c);
    return job;
}

static void ended(wait_state *w, waited *j, json_t *job)
{
    if (j->ended)
        return;
    j->ended = true;
    j->status = status_of(job);
    w->left--;
    if (w->quiet)
        return;
    const char *st = json_string_value(json_object_get(job, "status"));
    json_t *ec = json_object_get(job, "exit_code");
    const char *why = json_string_value(json_object_get(job, "end_reason"));
    /* a task: by its reference (ID_7), as it was named and as rnx job list --expand shows it */
    json_t *arr = json_object_get(job, "array");
    const char *ref = json_is_integer(json_object_get(arr, "task")) ? json_string_value(json_object_get(arr, "ref"))
                                                                     : NULL;
    if (j->array) /* a task that ended without being made: by its array and task id */
        printf("%.8s_%lld %s", j->array, (long long)j->task, st ? st : "?");
    else if (ref)
        printf("%s %s", ref, st ? st : "?");
    else
        printf("%.8s %s", j->id, st ? st : "?");
    if (json_is_integer(ec))
        printf(" exit %lld", (long long)json_integer_value(ec));
    if (why && strcmp(why, "exit"))
        printf(" (%s)", why);
    printf("\n");
    fflush(stdout);
}

/* A task named before it was made (ID_T) is waited for by ARRAY_T until joblet says which job
 * it became: the job's own id from then on, so that its events are seen. */
static void learn_task(waited *j, json_t *job)
{
    const char *id = json_string_value(json_object_get(job, "id"));
    if (!j->array || !id || json_is_false(json_object_get(job, "made")))
        return;
    free(j->id);
    j->id = xstrdup(id);
    free(j->array);
    j->array = NULL;
}

/* What joblet says of a job that is gone (deleted): it counts 1. */
static json_t *deleted_job(void) { return json_pack("{s:s}", "status", "DELETED"); }

/* Looks at every job not yet ended (after the stream's hello: what ended before it is not in
 * it). 0; 1 when joblet went away meanwhile (killed, restarting: the next stream's hello looks
 * again); -1 after saying why it cannot go on. */
static int check_all(wait_state *w)
{
    for (size_t i = 0; i < w->n; i++) {
        if (w->jobs[i].ended)
            continue;
        jerr e = {0};
        json_t *job = get_job(w->ctx, w->jobs[i].id, &e);
        if (!job && !e.http)
            return 1;
        if (!job && e.http == 404)
            job = deleted_job(); /* deleted while joblet was away */
        if (!job) {
            rnx_fail("job wait: %s", e.msg);
            return -1;
        }
        learn_task(&w->jobs[i], job);
        if (terminal(json_string_value(json_object_get(job, "status"))))
            ended(w, &w->jobs[i], job);
        json_decref(job);
    }
    return 0;
}

static int on_line(const char *line, size_t len, void *ud)
{
    wait_state *w = ud;
    if (len >= 7 && !strncmp(line, "event: ", 7)) {
        snprintf(w->event, sizeof w->event, "%.*s", (int)(len - 7), line + 7);
        return 0;
    }
    if (len < 6 || strncmp(line, "data: ", 6))
        return 0;
    if (!strcmp(w->event, "hello") || !strcmp(w->event, "resync")) {
        int r = check_all(w);
        if (r < 0)
            w->rc = WAIT_FAILED;
        if (r)
            return -1; /* (1: joblet went away; waited on, once a second) */
    } else if (!strcmp(w->event, "job") || !strcmp(w->event, "job_deleted")) {
        json_t *o = json_loadb(line + 6, len - 6, 0, NULL);
        const char *id = json_string_value(json_object_get(o, "id"));
        bool gone = !strcmp(w->event, "job_deleted");
        const char *of = json_string_value(json_object_get(o, "array"));
        json_t *task = json_object_get(o, "task");
        for (size_t i = 0; id && i < w->n; i++) {
            waited *j = &w->jobs[i];
            if (j->ended || !j->array)
                continue;
            if (of && !strcmp(of, j->array) && json_is_integer(task) && json_integer_value(task) == j->task) {
                free(j->id); /* the task was made: its job's events from now on */
                j->id = xstrdup(id);
                free(j->array);
                j->array = NULL;
            } else if (!strcmp(id, j->array)) {
                /* its array changed (it ended, or tasks not made were canceled): the task may have
                 * ended without being made (canceled before it started) */
                jerr e = {0};
                json_t *job = get_job(w->ctx, j->id, &e);
                if (!job && !e.http) {
                    json_decref(o);
                    return -1;
                }
                if (job)
                    learn_task(j, job);
                if (!job || terminal(json_string_value(json_object_get(job, "status"))))
                    ended(w, j, job ? job : deleted_job());
                json_decref(job);
            }
        }
        for (size_t i = 0; id && i < w->n; i++)
            if (!w->jobs[i].ended && !strcmp(w->jobs[i].id, id) &&
                (gone || terminal(json_string_value(json_object_get(o, "status"))))) {
                jerr e = {0};
                json_t *job = gone ? NULL : get_job(w->ctx, id, &e); /* its exit code and signal */
                if (!gone && !job && !e.http) {
                    json_decref(o);
                    return -1; /* joblet went away: the next stream's hello looks at it again */
                }
                ended(w, &w->jobs[i], job ? job : o);
                json_decref(job);
            }
        json_decref(o);
    }
    return w->left ? 0 : -1;
}

static void timed_out(int sig)
{
    (void)sig;
    static const char msg[] = "rnx: job wait: --timeout passed before the jobs ended\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(WAIT_TIMED_OUT);
}

int cmd_job_wait(rnx_ctx *ctx, int argc, char **argv)
{
    enum { O_TIMEOUT = 1000 };
    static const struct option opts[] = {{"timeout", required_argument, NULL, O_TIMEOUT},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    uint64_t timeout_s = 0;
    bool quiet = false;
    int c;
    jerr e = {0};
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "hq", opts, "rnx job wait")) != -1) {
        switch (c) {
        case 'h': fputs(wait_help, stdout); return RNX_OK;
        case 'q': quiet = true; break;
        case O_TIMEOUT:
            if (parse_time_limit("--timeout", optarg, &timeout_s, &e) < 0 || timeout_s == 0)
                return rnx_usage("job wait: --timeout: '%s' is not a duration of at least 1 second (90, 30s, "
                                 "10min, 2h, or Slurm's MIN:SEC, H:MIN:SEC, D-H)", optarg);
            break;
        default: return RNX_USAGE;
        }
    }
    if (optind >= argc)
        return rnx_usage("job wait: missing ID; usage: rnx job wait [--timeout=DURATION] [-q] ID...");
    /* "" would be asked for as GET /v1/jobs/ (not a job: the list's route, refused as no route) */
    for (int i = optind; i < argc; i++)
        if (!argv[i][0])
            return rnx_usage("job wait: an ID is empty; usage: rnx job wait [--timeout=DURATION] [-q] ID...");
    wait_state w = {.ctx = ctx, .quiet = quiet};
    size_t nargs = (size_t)(argc - optind), cap = nargs;
    w.jobs = xcalloc(cap, sizeof *w.jobs);
    int rc = RNX_OK;
    /* each ID resolved once (a prefix or a name), then followed by its full id */
    if (timeout_s) {
        signal(SIGALRM, timed_out);
        alarm(timeout_s > 86400u * 365 ? 86400u * 365 : (unsigned)timeout_s);
    }
    bool said = false, reached = false;
    for (size_t i = 0; i < nargs; i++) {
        jerr ge = {0};
        json_t *job = get_job(ctx, argv[optind + (int)i], &ge);
        /* joblet took the question and went away (killed, restarting), or, once it was reached,
         * is away now (its socket refuses, or is being made again): asked again. Only a joblet
         * never reached is an error (125) */
        reached |= job != NULL || (!ge.http && ge.code == ECONNRESET);
        if (!job && !ge.http && reached &&
            (ge.code == ECONNRESET || ge.code == ECONNREFUSED || ge.code == ENOENT)) {
            if (!said)
                fprintf(stderr, "rnx: job wait: %s; trying again every second\n", ge.msg);
            said = true;
            sleep(1);
            i--;
            continue;
        }
        json_t *tasks = json_object_get(job, "tasks");
        if (!job)
            rnx_fail("job wait: %s", ge.msg);
        else if (json_is_true(json_object_get(job, "truncated"))) /* ID_[LIST] past what one answer lists */
            rnx_fail("job wait: '%s' names more tasks than joblet lists at once (%zu); wait for the whole array "
                     "(its id) or name fewer", argv[optind + (int)i], json_array_size(tasks));
        if (!job || json_is_true(json_object_get(job, "truncated"))) {
            json_decref(job);
            rc = WAIT_FAILED;
            goto out;
        }
        if (json_is_array(tasks)) { /* ID_[LIST]: each task named, as if named one by one */
            size_t k;
            json_t *t;
            json_array_foreach(tasks, k, t)
                wait_add(&w, &cap, t);
        } else {
            wait_add(&w, &cap, job);
        }
        json_decref(job);
    }
    while (w.left) {
        rnx_client *cl = client_new(&ctx->target);
        if (!cl) {
            rc = WAIT_FAILED;
            goto out;
        }
        jerr se = {0};
        int sr = client_stream(cl, "/v1/events", on_line, &w, &se);
        client_free(cl);
        if (w.rc) {
            rc = w.rc;
            goto out;
        }
        if (sr < 0 && se.code != ECANCELED && se.http) { /* refused (429: too many streams of yours) */
            rnx_fail("job wait: %s", se.msg);
            rc = WAIT_FAILED;
            goto out;
        }
        /* the stream ended or joblet is away (restarting): jobs outlive it, so rnx waits on,
         * once a second, and a new stream's hello looks at the jobs again */
        if (w.left && sr < 0 && se.code != ECANCELED && !said) {
            fprintf(stderr, "rnx: job wait: %s; trying again every second\n", se.msg);
            said = true;
        }
        if (w.left)
            sleep(1);
    }
    for (size_t i = 0; i < w.n; i++)
        if (w.jobs[i].status > rc)
            rc = w.jobs[i].status;
out:
    alarm(0);
    for (size_t i = 0; i < w.n; i++) {
        free(w.jobs[i].id);
        free(w.jobs[i].array);
    }
    free(w.jobs);
    return rc;
}
