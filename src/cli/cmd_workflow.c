/* The "rnx workflow" commands. A workflow file is checked completely here, before anything is
 * sent (wfparse.c), and the daemon checks it again before it creates any job: an invalid file
 * creates nothing. Every problem with the file is shown as "FILE:LINE:COL: message", the
 * daemon's refusals included. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/util.h"
#include "client.h"
#include "print.h"
#include "cli.h"
#include "cmd_workflow.h"
#include "wfparse.h"

/* ---- help ---------------------------------------------------------------------------- */

static const char workflow_help[] =
    "Usage: rnx workflow <command> [flags] [args...]\n"
    "\n"
    "A workflow is a YAML file of jobs that wait for each other (docs/workflows.md).\n"
    "\n"
    "Commands:\n"
    "  run [--follow] FILE      check a workflow file and submit it; prints the workflow's id\n"
    "  validate FILE            check a workflow file without submitting anything\n"
    "  list                     list workflows\n"
    "  status [--detail] ID     a workflow's state and the state of each of its jobs\n"
    "  cancel ID                cancel a workflow: waiting jobs are canceled, running ones stopped\n"
    "\n"
    "ID is a workflow's full id, its name when exactly one of your workflows has it, or a\n"
    "unique prefix of its id.\n"
    "Run 'rnx workflow <command> --help' for a command's flags.\n";

static const char run_help[] =
    "Usage: rnx workflow run [--follow] [--json] FILE\n"
    "\n"
    "Checks FILE completely, then submits it and prints the workflow's id. A file with any\n"
    "problem is refused whole, each problem shown as FILE:LINE:COL: message, and nothing runs.\n"
    "Uploads are read relative to FILE's directory.\n"
    "\n"
    "Flags:\n"
    "  -f, --follow   show every job's state until the workflow ends (redrawn in place on a\n"
    "                 terminal, one line per change otherwise), then a summary; exit 0 when\n"
    "                 the workflow COMPLETED, 1 otherwise. Ctrl-C stops following, not the\n"
    "                 workflow\n"
    "  --json         print the workflow object (with --follow: the final one)\n"
    "  -h, --help     show this help\n";

static const char validate_help[] =
    "Usage: rnx workflow validate [--json] FILE\n"
    "\n"
    "Checks FILE as 'rnx workflow run' would, without submitting anything: first the file\n"
    "itself, then joblet makes every check of a submission (this machine's CPUs, memory and\n"
    "GPUs, runtimes, volumes, limits) and creates nothing. When joblet cannot be reached,\n"
    "only the file is checked, and rnx says so on stderr.\n"
    "\n"
    "Flags:\n"
    "  --json       print the request 'rnx workflow run' would send\n"
    "  -h, --help   show this help\n";

static const char list_help[] =
    "Usage: rnx workflow list [--json]\n"
    "\n"
    "Lists your workflows (root sees everyone's), oldest first.\n"
    "\n"
    "Flags:\n"
    "  --json       print the workflows as a JSON array\n"
    "  -h, --help   show this help\n";

static const char status_help[] =
    "Usage: rnx workflow status [--detail] [--json] ID\n"
    "\n"
    "Shows a workflow: its state, times, and each job's state, GPUs, exit code and reason.\n"
    "\n"
    "Flags:\n"
    "  --detail     also full job ids and the workflow file as it was submitted\n"
    "  --json       print the workflow object\n"
    "  -h, --help   show this help\n";

static const char cancel_help[] =
    "Usage: rnx workflow cancel [--json] ID\n"
    "\n"
    "Cancels a workflow: its jobs that have not started are canceled, its running jobs are\n"
    "stopped. A workflow that has ended cannot be canceled.\n";

/* ---- shared helpers ------------------------------------------------------------------- */

#define OPT_HELP {"help", no_argument, NULL, 'h'}
#define OPT_JSON {"json", no_argument, NULL, 'j'}

static const char *const wf_terminal[] = {"COMPLETED", "FAILED", "CANCELED"};
static const char *const job_terminal[] = {"COMPLETED", "FAILED", "STOPPED", "CANCELED", "DELETED"};

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        if (!strcmp(s, list[i]))
            return true;
    return false;
}

static bool job_ended(json_t *j) { return in_list(jstr(j, "status"), job_terminal, ARRAY_LEN(job_terminal)); }

/* The workflow has ended: a final state, and every job's end recorded. */
static bool wf_ended(json_t *wf)
{
    return in_list(jstr(wf, "state"), wf_terminal, ARRAY_LEN(wf_terminal)) && jstr(wf, "ended_at");
}

static char *wf_path(rnx_client *c, const char *id, const char *suffix)
{
    char *esc = client_escape(c, id), *path;
    if (asprintf(&path, "/v1/workflows/%s%s", esc, suffix) < 0)
        abort();
    free(esc);
    return path;
}

/* Exactly one operand. */
static int one_operand(int argc, char **argv, const char *what, const char *usage, const char **out)
{
    int n = argc - optind;
    if (n == 0)
        return rnx_usage("missing %s; usage: %s", what, usage);
    if (n > 1)
        return rnx_usage("expected one %s, got %d arguments ('%s' ...); usage: %s", what, n, argv[optind + 1], usage);
    if (!*argv[optind])
        return rnx_usage("the %s is empty; usage: %s", what, usage);
    *out = argv[optind];
    return 0;
}

/* Flags of a command that takes only --help, --json and (when detail is given) --detail.
 * Returns 0 to go on, -1 after printing the help, or RNX_USAGE. */
static int simple_flags(rnx_ctx *ctx, int argc, char **argv, const char *cmd, const char *help, bool *detail)
{
    static const struct option with_detail[] = {{"detail", no_argument, NULL, 'd'}, OPT_JSON, OPT_HELP, {0}};
    static const struct option plain[] = {OPT_JSON, OPT_HELP, {0}};
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", detail ? with_detail : plain, cmd)) != -1) {
        switch (c) {
        case 'h': fputs(help, stdout); return -1;
        case 'j': ctx->json = true; break;
        case 'd': if (detail) *detail = true; break; /* (only with_detail has it) */
        default: return RNX_USAGE;
        }
    }
    return 0;
}

/* The file's problems on stderr; always RNX_FAIL. */
static int report_problems(const char *path, wfp_errors *errs)
{
    fflush(stdout);
    for (size_t i = 0; i < errs->n; i++)
        print_textf(stderr, "%s\n", errs->msg[i]);
    if (errs->dropped)
        print_textf(stderr, "%s: %zu more problem%s not shown\n", path, errs->dropped, errs->dropped == 1 ? "" : "s");
    wfp_errors_free(errs);
    return RNX_FAIL;
}

/* "2 completed, 1 running" from the workflow's counts, in a fixed order. */
static void fmt_counts(json_t *wf, char *out, size_t len)
{
    static const char *const order[] = {"COMPLETED", "RUNNING",  "STOPPING", "QUEUED",  "SCHEDULED", "PENDING",
                                        "PREEMPTED", "HELD",     "SUSPENDED", "FAILED",  "STOPPED",  "CANCELED", "DELETED"};
    json_t *counts = json_object_get(wf, "counts"), *v;
    const char *k;
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < ARRAY_LEN(order) && o < len; i++) {
        int64_t n;
        if (!jint(counts, order[i], &n) || n <= 0)
            continue;
        o += (size_t)snprintf(out + o, len - o, "%s%lld %s", o ? ", " : "", (long long)n, order[i]);
        for (char *p = out + o - strlen(order[i]); *p; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    }
    json_object_foreach(counts, k, v) {   /* states newer than this client */
        if (in_list(k, order, ARRAY_LEN(order)) || o >= len || !json_is_integer(v) || json_integer_value(v) <= 0)
            continue;
        o += (size_t)snprintf(out + o, len - o, "%s%lld %s", o ? ", " : "", (long long)json_integer_value(v), k);
    }
}

static void fmt_gpus(json_t *j, char *out, size_t len)
{
    json_t *g = json_object_get(j, "gpus"), *v;
    size_t i, o = 0;
    out[0] = 0;
    json_array_foreach(g, i, v) {
        if (o >= len)
            break;
        if (json_is_integer(v))
            o += (size_t)snprintf(out + o, len - o, "%s%lld", i ? "," : "", (long long)json_integer_value(v));
        else if (json_is_string(v))
            o += (size_t)snprintf(out + o, len - o, "%s%s", i ? "," : "", json_string_value(v));
    }
}

/* Why a job of the workflow is where it is, in words: "waiting for a, b" while PENDING,
 * "exit code 4", "needed 'b' to end COMPLETED; it ended FAILED", ... Empty when nothing to say. */
static void job_reason_one(json_t *wf, json_t *j, char *out, size_t len)
{
    const char *status = jstr(j, "status"), *er = jstr(j, "end_reason"), *err = jstr(j, "error");
    int64_t v;
    out[0] = 0;
    if (status && !strcmp(status, "PENDING")) {
        /* the dependencies that have not ended yet */
        json_t *reqs = json_object_get(j, "requires"), *r, *jobs = json_object_get(wf, "jobs"), *o;
        size_t i, k, n = 0;
        json_array_foreach(reqs, i, r) {
            const char *dep = jstr(r, "job");
            bool ended = false;
            json_array_foreach(jobs, k, o)
                if (dep && jstr(o, "name") && !strcmp(jstr(o, "name"), dep))
                    ended = job_ended(o);
            if (dep && !ended && n < len)
                n += (size_t)snprintf(out + n, len - n, "%s%s", n ? ", " : "waiting for ", dep);
        }
        return;
    }
    if (!er)
        return;
    if (!strcmp(er, "dependency"))
        snprintf(out, len, "%s", err ? err : "a dependency ended otherwise than required");
    else if (!strcmp(er, "exit")) {
        if (jint(j, "exit_code", &v) && v != 0)
            snprintf(out, len, "exit code %lld", (long long)v);
    }
    else if (!strcmp(er, "signal") && !json_object_get(j, "signal"))
        snprintf(out, len, "killed by a signal");
    else {
        fmt_end_reason(j, out, len);
        size_t l = strlen(out);
        if (err && !strstr(out, err) && l < len)
            snprintf(out + l, len - l, ": %s", err);
    }
}

/* A workflow's array job: "array 3f2a1b2c_[0-9%2] (3 COMPLETED, 2 RUNNING, 5 QUEUED)", then why
 * it is where it is ("waiting for prep", "needed 'prep' to end COMPLETED; ..."). */
static void job_reason(json_t *wf, json_t *j, char *out, size_t len)
{
    json_t *arr = json_object_get(j, "array");
    const char *kind = jstr(j, "kind");
    if (!kind || strcmp(kind, "array") || !json_is_object(arr)) {
        job_reason_one(wf, j, out, len);
        return;
    }
    static const char *const order[] = {"COMPLETED", "FAILED", "STOPPED", "CANCELED", "RUNNING", "STOPPING",
                                        "SUSPENDED", "SCHEDULED", "QUEUED", "PREEMPTED", "PENDING", "HELD"};
    json_t *counts = json_object_get(arr, "counts");
    size_t o = (size_t)snprintf(out, len, "array %s", jstr(arr, "ref") ? jstr(arr, "ref") : "?");
    bool first = true;
    for (size_t i = 0; i < ARRAY_LEN(order) && o < len; i++) {
        json_t *c = json_object_get(counts, order[i]);
        if (json_is_integer(c) && json_integer_value(c) > 0) {
            o += (size_t)snprintf(out + o, len - o, "%s%lld %s", first ? " (" : ", ", (long long)json_integer_value(c),
                                  order[i]);
            first = false;
        }
    }
    if (!first && o < len)
        o += (size_t)snprintf(out + o, len - o, ")");
    char why[512];
    job_reason_one(wf, j, why, sizeof why);
    if (why[0] && o < len)
        snprintf(out + o, len - o, ": %s", why);
}

/* The jobs table of `status` and of the live view. */
static table *jobs_table(json_t *wf, bool detail)
{
    static const char *const headers[] = {"JOB", "STATUS", "GPUS", "EXIT", "TIME", "JOB ID", "REASON"};
    table *t = table_new(ARRAY_LEN(headers), headers);
    json_t *jobs = json_object_get(wf, "jobs"), *j;
    size_t i;
    json_array_foreach(jobs, i, j) {
        char gpus[128], exit_s[16] = "-", time_s[32] = "-", reason[512], id[40];
        int64_t v;
        fmt_gpus(j, gpus, sizeof gpus);
        if (jint(j, "exit_code", &v))
            snprintf(exit_s, sizeof exit_s, "%lld", (long long)v);
        if (job_elapsed_ms(j, &v))
            fmt_elapsed_ms(v, time_s, sizeof time_s);
        job_reason(wf, j, reason, sizeof reason);
        snprintf(id, detail ? sizeof id : 9, "%s", jstr(j, "job_id") ? jstr(j, "job_id") : "-");
        char *name = cell_text(jstr(j, "name"), 40), *why = cell_text(reason, detail ? 400 : 80);
        const char *cells[] = {name, jstr(j, "status"), gpus[0] ? gpus : "-", exit_s, time_s, id,
                               why[0] ? why : "-"};
        table_add(t, cells);
        free(name);
        free(why);
    }
    return t;
}

static void fmt_wf_elapsed(json_t *wf, char *out, size_t len)
{
    int64_t start, end;
    out[0] = 0;
    if (parse_ms(jstr(wf, "started_at"), &start) < 0)
        return;
    if (parse_ms(jstr(wf, "ended_at"), &end) < 0)
        end = now_ms();
    fmt_elapsed_ms(end - start, out, len);
}

/* ---- workflow run --------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) { interrupted = 1; }

typedef struct view {
    int mode;             /* 0 until the first answer, then VIEW_TTY or VIEW_LINES */
#define VIEW_TTY 1
#define VIEW_LINES 2
    int drawn;            /* lines of the last frame */
    char *last_frame;
    json_t *seen;         /* plain mode: job name -> last status printed */
} view;

/* The terminal's size; 24x80 when it does not say (a serial console, a fresh pty). */
static void term_size(int *rows, int *cols)
{
    struct winsize ws;
    bool known = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col;
    *rows = known ? ws.ws_row : 24;
    *cols = known ? ws.ws_col : 80;
}

/* One line of a frame, cut to the terminal's width so that it never wraps (a wrapped line
 * would throw off the cursor movement of the next redraw). */
static void put_cut(const char *line, size_t n, int cols)
{
    int w = 0;
    size_t i = 0;
    for (; i < n; i++) {
        if (((unsigned char)line[i] & 0xc0) != 0x80 && ++w > cols - 1)
            break;
    }
    fwrite(line, 1, i, stdout);
}

static void header_line(json_t *wf, char *out, size_t len)
{
    char counts[256], el[32];
    fmt_counts(wf, counts, sizeof counts);
    fmt_wf_elapsed(wf, el, sizeof el);
    snprintf(out, len, "workflow %s (%.8s) %s%s%s: %zu job%s%s%s", jstr(wf, "name") ? jstr(wf, "name") : "-",
             jstr(wf, "id") ? jstr(wf, "id") : "-", jstr(wf, "state") ? jstr(wf, "state") : "?",
             el[0] ? (jstr(wf, "ended_at") ? " in " : " for ") : "",
             el, json_array_size(json_object_get(wf, "jobs")), json_array_size(json_object_get(wf, "jobs")) == 1 ? "" : "s",
             counts[0] ? ", " : "", counts);
}

/* Terminal: the whole table, drawn over the previous one. */
static void draw_frame(view *v, json_t *wf)
{
    char *frame = NULL, head[512];
    size_t flen = 0;
    FILE *f = open_memstream(&frame, &flen);
    if (!f)
        abort();
    header_line(wf, head, sizeof head);
    print_text(f, head);
    fputc('\n', f);
    table *t = jobs_table(wf, false);
    table_print(t, f);
    table_free(t);
    fclose(f);
    if (v->last_frame && !strcmp(v->last_frame, frame)) {
        free(frame);
        return;
    }
    int rows, cols;
    term_size(&rows, &cols);
    if (v->drawn)
        print_textf(stdout, "\033[%dA", v->drawn);   /* back to the first line of the last frame */
    int lines = 0;
    for (char *p = frame; *p;) {
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fputs("\r", stdout);
        put_cut(p, n, cols);
        fputs("\033[K\n", stdout);
        lines++;
        p += n + (nl ? 1 : 0);
    }
    if (lines < v->drawn)
        fputs("\033[J", stdout);   /* a shorter frame: clear what is left below */
    fflush(stdout);
    v->drawn = lines;
    free(v->last_frame);
    v->last_frame = frame;
}

/* Not a terminal: one line per job state change, "12:00:01 model-training RUNNING (GPUs 0,1)". */
static void print_changes(view *v, json_t *wf)
{
    json_t *jobs = json_object_get(wf, "jobs"), *j;
    size_t i;
    json_array_foreach(jobs, i, j) {
        const char *name = jstr(j, "name"), *status = jstr(j, "status");
        if (!name || !status)
            continue;
        const char *was = jstr(v->seen, name);
        if (was && !strcmp(was, status))
            continue;
        json_object_set_new(v->seen, name, json_string(status));
        /* the time it happened, when the API says */
        const char *when = !strcmp(status, "RUNNING") ? jstr(j, "started_at") : job_ended(j) ? jstr(j, "ended_at") : NULL;
        int64_t ms;
        char clock[16], gpus[128], reason[512], extra[700] = "";
        if (!when || parse_ms(when, &ms) < 0)
            ms = now_ms();
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(clock, sizeof clock, "%H:%M:%S", &tm);
        fmt_gpus(j, gpus, sizeof gpus);
        job_reason(wf, j, reason, sizeof reason);
        if (!strcmp(status, "RUNNING") && gpus[0])
            snprintf(extra, sizeof extra, " (GPU%s %s)", strchr(gpus, ',') ? "s" : "", gpus);
        else if (reason[0])
            snprintf(extra, sizeof extra, " (%s)", reason);
        print_textf(stdout, "%s ", clock);
        print_text(stdout, name);
        print_textf(stdout, " %s", status);
        print_text(stdout, extra);
        putchar('\n');
    }
    fflush(stdout);
}

/* The closing line, and the exit code: 0 only when the workflow COMPLETED. */
static int summary(json_t *wf)
{
    char counts[256], el[32];
    const char *state = jstr(wf, "state") ? jstr(wf, "state") : "?", *reason = jstr(wf, "reason");
    fmt_counts(wf, counts, sizeof counts);
    fmt_wf_elapsed(wf, el, sizeof el);
    fputs("workflow ", stdout);
    print_text(stdout, jstr(wf, "name") ? jstr(wf, "name") : "-");
    print_textf(stdout, " %s%s%s%s", state, el[0] ? " in " : "", el, reason ? ": " : "");
    print_text(stdout, reason ? reason : "");
    print_textf(stdout, ": %s\n", counts[0] ? counts : "no jobs");
    return !strcmp(state, "COMPLETED") ? RNX_OK : RNX_FAIL;
}

/* Polls the workflow until it ends. A daemon that goes away (a restart) is waited for a minute. */
static int follow(const rnx_ctx *ctx, rnx_client *c, const char *id)
{
    char *path = wf_path(c, id, "");
    view v = {.seen = json_object()};
    int rows, cols;
    int rc = -1;
    json_t *wf = NULL;
    int64_t lost_since = 0;
    struct sigaction sa = {.sa_handler = on_sigint}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    while (rc < 0) {
        jerr e = {0};
        json_t *next = NULL;
        if (interrupted)
            break;
        if (client_request(c, "GET", path, NULL, &next, &e) < 0) {
            if (interrupted)
                break;
            if (e.http != 0) {
                rc = rnx_fail("%s", e.msg);
                break;
            }
            if (!lost_since) {
                lost_since = now_ms();
                if (!ctx->json) {
                    fflush(stdout);
                    print_textf(stderr, "rnx: %s; waiting for it to come back\n", e.msg);
                }
            } else if (now_ms() - lost_since > 60000) {
                rc = rnx_fail("%s for a minute; the workflow goes on: see 'rnx workflow status %s'", e.msg, id);
                break;
            }
        } else {
            lost_since = 0;
            json_decref(wf);
            wf = next;
            if (!ctx->json) {
                /* a table taller than the terminal cannot be redrawn in place: plain lines then */
                if (!v.mode) {
                    term_size(&rows, &cols);
                    v.mode = isatty(STDOUT_FILENO) && json_array_size(json_object_get(wf, "jobs")) + 2 < (size_t)rows
                                 ? VIEW_TTY
                                 : VIEW_LINES;
                }
                if (v.mode == VIEW_TTY)
                    draw_frame(&v, wf);
                else
                    print_changes(&v, wf);
            }
            if (wf_ended(wf)) {
                if (ctx->json) {
                    print_json(wf);
                    rc = !strcmp(jstr(wf, "state") ? jstr(wf, "state") : "", "COMPLETED") ? RNX_OK : RNX_FAIL;
                } else {
                    rc = summary(wf);
                }
                break;
            }
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (rc < 0) {
        fflush(stdout);
        print_textf(stderr, "rnx: stopped following; workflow %s goes on: see 'rnx workflow status %s'\n", id, id);
        rc = 130;
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    json_decref(wf);
    json_decref(v.seen);
    free(v.last_frame);
    free(path);
    return rc;
}

static int workflow_run(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"follow", no_argument, NULL, 'f'}, OPT_JSON, OPT_HELP, {0}};
    bool do_follow = false;
    const char *file = NULL;
    int c, rc;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "fh", opts, "rnx workflow run")) != -1) {
        switch (c) {
        case 'h': fputs(run_help, stdout); return RNX_OK;
        case 'j': ctx->json = true; break;
        case 'f': do_follow = true; break;
        default: return RNX_USAGE;
        }
    }
    if ((rc = one_operand(argc, argv, "FILE", "rnx workflow run [--follow] FILE", &file)) != 0)
        return rc;

    /* everything about the file is checked before the daemon is asked anything */
    wfp_errors errs;
    wfp_doc *d = wfp_parse_file(file, &errs);
    if (!d)
        return report_problems(file, &errs);

    rnx_client *cl = client_new(&ctx->target);
    json_t *wf = NULL;
    jerr e = {0};
    size_t nsets = wfp_njobs(d);
    const upload_set **sets = xcalloc(nsets + 1, sizeof *sets);
    for (size_t i = 0; i < nsets; i++)
        sets[i] = wfp_job_uploads(d, i);
    upload_note_stripped(sets, nsets);
    {
        /* a script the file's jobs name but do not upload (as rnx job run says of --upload) */
        const char *slash = strrchr(file, '/');
        char *dir = xstrdup(slash ? file : "");
        if (slash)
            dir[slash == file ? 1 : slash - file] = '\0';
        json_t *jobs = json_object_get(wfp_body(d), "jobs");
        for (size_t i = 0; i < nsets && i < json_array_size(jobs); i++) {
            json_t *job = json_array_get(jobs, i);
            upload_note_missing_wf(sets[i], dir, json_string_value(json_object_get(job, "name")),
                                   json_object_get(job, "request"));
        }
        free(dir);
    }
    /* accepted with files to send, the workflow exists once every job's are there */
    int posted = upload_submit(cl, "/v1/workflows", wfp_body(d), sets, nsets, &wf, &e);
    free(sets);
    if (posted < 0) {
        if (e.http == 400 || (e.field[0] && (e.http == 403 || e.http == 409))) {
            /* the daemon's own checks (the machine's GPUs, runtimes, volumes: whose, in what
             * state), shown at the YAML */
            char msg[2048];
            wfp_explain(d, e.field, e.msg, msg, sizeof msg);
            fflush(stdout);
            print_textf(stderr, "%s\n", msg);
            rc = RNX_FAIL;
        } else {
            rc = rnx_fail("%s", e.msg);
        }
    } else if (!jstr(wf, "id")) {
        rc = rnx_fail("joblet accepted the workflow but its answer has no id");
    } else if (do_follow) {
        rc = follow(ctx, cl, jstr(wf, "id"));
    } else {
        if (ctx->json)
            print_json(wf);
        else
            print_textf(stdout, "%s\n", jstr(wf, "id"));
        rc = RNX_OK;
    }
    json_decref(wf);
    client_free(cl);
    wfp_free(d);
    return rc;
}

static int workflow_validate(rnx_ctx *ctx, int argc, char **argv)
{
    const char *file = NULL;
    int rc = simple_flags(ctx, argc, argv, "rnx workflow validate", validate_help, NULL);
    if (rc)
        return rc < 0 ? RNX_OK : rc;
    if ((rc = one_operand(argc, argv, "FILE", "rnx workflow validate FILE", &file)) != 0)
        return rc;
    wfp_errors errs;
    wfp_doc *d = wfp_parse_file(file, &errs);
    if (!d)
        return report_problems(file, &errs);
    json_t *body = wfp_body(d);
    /* the daemon's own checks, as for run, with nothing created */
    rnx_client *cl = client_new(&ctx->target);
    json_t *answer = NULL;
    jerr e = {0};
    rc = RNX_OK;
    if (client_request(cl, "POST", "/v1/workflows?dry_run=1", body, &answer, &e) < 0) {
        if (e.http == 400 || (e.field[0] && (e.http == 403 || e.http == 409))) {
            char msg[2048];
            wfp_explain(d, e.field, e.msg, msg, sizeof msg);
            print_textf(stderr, "%s\n", msg);
            rc = RNX_FAIL;
        } else if (e.http) {
            rc = rnx_fail("%s", e.msg);
        } else {
            print_textf(stderr, "rnx: %s: only the file was checked, not what this machine can run\n", e.msg);
        }
    }
    json_decref(answer);
    client_free(cl);
    if (rc == RNX_OK) {
        if (ctx->json) {
            print_json(body);
        } else {
            size_t n = json_array_size(json_object_get(body, "jobs"));
            print_textf(stdout, "%s: workflow '%s' is valid: %zu job%s\n", file, jstr(body, "name"), n,
                        n == 1 ? "" : "s");
        }
    }
    wfp_free(d);
    return rc;
}

/* ---- list, status, cancel ------------------------------------------------------------- */

static int request(const rnx_ctx *ctx, const char *method, const char *id, const char *suffix, json_t **out)
{
    rnx_client *c = client_new(&ctx->target);
    char *path = id ? wf_path(c, id, suffix) : xstrdup("/v1/workflows");
    jerr e = {0};
    int rc = client_request(c, method, path, NULL, out, &e) < 0 ? rnx_fail("%s", e.msg) : RNX_OK;
    free(path);
    client_free(c);
    return rc;
}

static int workflow_list(rnx_ctx *ctx, int argc, char **argv)
{
    json_t *resp = NULL;
    int rc = simple_flags(ctx, argc, argv, "rnx workflow list", list_help, NULL);
    if (rc)
        return rc < 0 ? RNX_OK : rc;
    if (optind < argc)
        return rnx_usage("workflow list: unexpected argument '%s'; usage: rnx workflow list [--json]", argv[optind]);
    rnx_client *c = client_new(&ctx->target);
    jerr e = {0};
    if (client_request(c, "GET", "/v1/workflows", NULL, &resp, &e) < 0) {
        client_free(c);
        return rnx_fail("%s", e.msg);
    }
    /* root sees every user's workflows: whose each one is (as rnx job list) */
    bool with_user = false;
    jerr we = {0};
    if (!ctx->json)
        (void)client_sees_all_jobs(c, &with_user, &we); /* (the list came: printed without owners if not) */
    client_free(c);
    json_t *wfs = json_object_get(resp, "workflows"), *wf;
    if (!json_is_array(wfs)) {
        rc = rnx_fail("joblet's workflow list has no \"workflows\" array");
    } else if (ctx->json) {
        print_json(wfs);
    } else {
        static const char *const headers[] = {"ID", "NAME", "STATE", "JOBS", "USER", "CREATED", "DURATION"};
        static const char *const plain[] = {"ID", "NAME", "STATE", "JOBS", "CREATED", "DURATION"};
        table *t = with_user ? table_new(ARRAY_LEN(headers), headers) : table_new(ARRAY_LEN(plain), plain);
        size_t i, k;
        json_t *j;
        json_array_foreach(wfs, i, wf) {
            char id[9], jobs[48], created[64], el[32], owner[64];
            size_t done = 0, n = json_array_size(json_object_get(wf, "jobs"));
            json_array_foreach(json_object_get(wf, "jobs"), k, j)
                done += job_ended(j);
            snprintf(id, sizeof id, "%s", jstr(wf, "id") ? jstr(wf, "id") : "-");
            snprintf(jobs, sizeof jobs, "%zu/%zu", done, n);
            fmt_local_time(jstr(wf, "created_at"), created, sizeof created);
            fmt_wf_elapsed(wf, el, sizeof el);
            char *name = cell_text(jstr(wf, "name"), 40);
            fmt_owner(wf, owner, sizeof owner);
            char *user = cell_text(owner, 16);
            const char *cells[] = {id, name, jstr(wf, "state"), jobs, user, created, el[0] ? el : "-"};
            const char *cells_plain[] = {id, name, jstr(wf, "state"), jobs, created, el[0] ? el : "-"};
            table_add(t, with_user ? cells : cells_plain);
            free(name);
            free(user);
        }
        table_print(t, stdout);
        table_free(t);
    }
    json_decref(resp);
    return rc;
}

static void key_line(const char *k, const char *v)
{
    if (v)
        print_textf(stdout, "%-13s %s\n", k, v);
}

static int workflow_status(rnx_ctx *ctx, int argc, char **argv)
{
    bool detail = false;
    const char *id = NULL;
    json_t *wf = NULL;
    int rc = simple_flags(ctx, argc, argv, "rnx workflow status", status_help, &detail);
    if (rc)
        return rc < 0 ? RNX_OK : rc;
    if ((rc = one_operand(argc, argv, "ID", "rnx workflow status [--detail] ID", &id)) != 0)
        return rc;
    if ((rc = request(ctx, "GET", id, "", &wf)) != 0)
        return rc;
    if (ctx->json) {
        print_json(wf);
        json_decref(wf);
        return RNX_OK;
    }
    char b[512], el[32];
    int64_t v;
    key_line("ID:", jstr(wf, "id"));
    key_line("Name:", jstr(wf, "name"));
    key_line("Description:", jstr(wf, "description"));
    key_line("Source:", jstr(wf, "source"));
    key_line("State:", jstr(wf, "state"));
    key_line("Reason:", jstr(wf, "reason"));
    if (jint(wf, "owner_uid", &v)) {
        snprintf(b, sizeof b, "%lld", (long long)v);
        key_line("Owner uid:", b);
    }
    static const struct { const char *k, *field; } times[] = {
        {"Created:", "created_at"}, {"Started:", "started_at"}, {"Ended:", "ended_at"}};
    for (size_t i = 0; i < ARRAY_LEN(times); i++)
        if (jstr(wf, times[i].field)) {
            fmt_local_time(jstr(wf, times[i].field), b, sizeof b);
            key_line(times[i].k, b);
        }
    fmt_wf_elapsed(wf, el, sizeof el);
    if (el[0]) {
        snprintf(b, sizeof b, "%s%s", el, jstr(wf, "ended_at") ? "" : " (so far)");
        key_line("Duration:", b);
    }
    fmt_counts(wf, b, sizeof b);
    size_t n = json_array_size(json_object_get(wf, "jobs"));
    char jobs[600];
    snprintf(jobs, sizeof jobs, "%zu%s%s", n, b[0] ? ": " : "", b);
    key_line("Jobs:", jobs);
    putchar('\n');
    table *t = jobs_table(wf, detail);
    table_print(t, stdout);
    table_free(t);
    if (detail) {
        /* the dependencies, and the file as it was submitted */
        json_t *j, *r;
        size_t i, k;
        bool any = false;
        json_array_foreach(json_object_get(wf, "jobs"), i, j) {
            json_t *reqs = json_object_get(j, "requires");
            if (!json_array_size(reqs))
                continue;
            if (!any)
                print_textf(stdout, "\nDependencies:\n");
            any = true;
            print_textf(stdout, "  %s waits for", jstr(j, "name") ? jstr(j, "name") : "-");
            json_array_foreach(reqs, k, r)
                print_textf(stdout, "%s %s %s", k ? "," : "", jstr(r, "job") ? jstr(r, "job") : "?",
                            jstr(r, "status") ? jstr(r, "status") : "?");
            putchar('\n');
        }
        const char *yaml = jstr(wf, "yaml");
        print_textf(stdout, "\nWorkflow file%s%s:\n", jstr(wf, "source") ? " " : "",
                    jstr(wf, "source") ? jstr(wf, "source") : "");
        if (yaml) {
            print_text_lines(stdout, yaml);
            if (*yaml && yaml[strlen(yaml) - 1] != '\n')
                putchar('\n');
        } else {
            print_textf(stdout, "(not stored)\n");
        }
    }
    json_decref(wf);
    return RNX_OK;
}

static int workflow_cancel(rnx_ctx *ctx, int argc, char **argv)
{
    const char *id = NULL;
    json_t *wf = NULL;
    int rc = simple_flags(ctx, argc, argv, "rnx workflow cancel", cancel_help, NULL);
    if (rc)
        return rc < 0 ? RNX_OK : rc;
    if ((rc = one_operand(argc, argv, "ID", "rnx workflow cancel ID", &id)) != 0)
        return rc;
    if ((rc = request(ctx, "POST", id, "/cancel", &wf)) != 0)
        return rc;
    if (ctx->json) {
        print_json(wf);
    } else {
        char counts[256];
        fmt_counts(wf, counts, sizeof counts);
        print_textf(stdout, "canceled %s%s%s%s\n", jstr(wf, "id") ? jstr(wf, "id") : id, counts[0] ? " (" : "", counts,
                    counts[0] ? ")" : "");
    }
    json_decref(wf);
    return RNX_OK;
}

/* ---- dispatch ------------------------------------------------------------------------ */

static const struct {
    const char *name;
    int (*fn)(rnx_ctx *, int, char **);
} workflow_cmds[] = {
    {"run", workflow_run},       {"validate", workflow_validate}, {"list", workflow_list},
    {"status", workflow_status}, {"cancel", workflow_cancel},
};

int cmd_workflow(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {OPT_HELP, {0}};
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "+h", opts, "rnx workflow")) != -1) {
        if (c != 'h')
            return RNX_USAGE;
        fputs(workflow_help, stdout);
        return RNX_OK;
    }
    if (optind >= argc)
        return rnx_usage("workflow: missing command (run, validate, list, status, cancel); see 'rnx workflow --help'");
    const char *name = argv[optind];
    for (size_t i = 0; i < ARRAY_LEN(workflow_cmds); i++)
        if (!strcmp(name, workflow_cmds[i].name))
            return workflow_cmds[i].fn(ctx, argc - optind, argv + optind);
    if (!strcmp(name, "help")) {
        fputs(workflow_help, stdout);
        return RNX_OK;
    }
    const char *names[ARRAY_LEN(workflow_cmds) + 1];
    for (size_t i = 0; i < ARRAY_LEN(workflow_cmds); i++)
        names[i] = workflow_cmds[i].name;
    names[ARRAY_LEN(workflow_cmds)] = "help";
    return rnx_unknown_command(name, "rnx workflow", names, ARRAY_LEN(names));
}
