/* The "rnx job" commands. Each checks its whole command line before it sends anything, so
 * a usage error (exit 2) never leaves a half-done request behind. */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "../common/arrayspec.h"
#include "../common/b64.h"
#include "../common/jobreq.h"
#include "../common/jobstate.h"
#include "../common/jsonx.h"
#include "../common/logframe.h"
#include "../common/parse.h"
#include "../common/util.h"
#include "client.h"
#include "json_items.h"
#include "print.h"
#include "print_detail.h"
#include "cli.h"
#include "cmd_job.h"
#include "cmd_batch.h"
#include "cmd_cp.h"
#include "cmd_exec.h"
#include "cmd_metrics.h"
#include "cmd_wait.h"
#include "cmd_term.h"
#include "upload.h"

/* ---- help ---------------------------------------------------------------------------- */

static const char job_help[] =
    "Usage: rnx job <command> [flags] [args...]\n"
    "\n"
    "Commands:\n"
    "  run [flags] COMMAND [ARGS...]   run a command as a job; prints its id\n"
    "  batch [OPTIONS] SCRIPT [ARGS...]\n"
    "                                  submit a batch script written for Slurm, as sbatch\n"
    "                                  does (its #SBATCH lines); prints its id\n"
    "  list [--status S] [--gpu G] [--user U] [--since T]\n"
    "                                  list jobs, newest last\n"
    "  status ID                       show one job in detail\n"
    "  attach [--no-stdin] ID          re-attach to a running job's terminal (run -it, -i)\n"
    "  log [--tail N] [--since WHEN] [-t] [--stdout|--stderr] [--no-follow] ID\n"
    "                                  print a job's output, following it until the job ends\n"
    "  stop [--force] ID...            stop running jobs: SIGTERM, SIGKILL after the grace period\n"
    "                                  (cancels one that has not started); or by --name,\n"
    "                                  --status, --user (Slurm's scancel)\n"
    "  kill [--signal=SIG] ID...       SIGKILL to every process of jobs at once (or SIG)\n"
    "  cancel ID...                    cancel jobs that have not started (again) yet; or by\n"
    "                                  --name, --status, --user\n"
    "  hold ID...                      keep waiting jobs from starting until released\n"
    "  release ID...                   let held jobs start again, in their place in the queue\n"
    "  update ID [--priority=N] [--max-runtime=DUR] [--gpu=N] ...\n"
    "                                  change a waiting job's request (a running one: its time limit)\n"
    "  suspend ID...                   freeze running jobs, keeping their GPUs (admins)\n"
    "  resume ID...                    thaw suspended jobs (admins)\n"
    "  requeue [--hold] ID...          put running or ended jobs back in the queue\n"
    "  delete ID...                    remove finished jobs and their output\n"
    "  delete-all                      remove every finished job\n"
    "  metrics [--interval S] [--count N] ID\n"
    "                                  a job's CPU, memory, I/O and GPU use, sampled until it ends\n"
    "  cp [-L] [-q] ID:PATH DEST | SRC ID:PATH\n"
    "                                  copy files and directories out of a job or into it\n"
    "  exec [-i] [-t] [-e K=V] [-w DIR] ID COMMAND [ARGS...]\n"
    "                                  run a command inside a running job; rnx exits with its code\n"
    "  wait [--timeout D] [-q] ID...   block until the jobs have ended; exits with their status\n"
    "\n"
    "ID is a job's full id, its name (--name) when no other job of yours has it, or a unique\n"
    "prefix of its id. For a command on a job not ended (stop, kill, cancel, attach, exec, ...)\n"
    "a name means the one of that name not ended, for delete the one ended, whatever others\n"
    "share the name. Flags may come before or after ID.\n"
    "Run 'rnx job <command> --help' for a command's flags.\n";

/* rnx job run --help: the flags are the request table's (common/jobreq.c: each field's flag,
 * placeholder and description, in the table's order), then rnx's own. rnx(1) and completion
 * read this help, so a field with a flag is in all three. */
static const char run_help_head[] =
    "Usage: rnx job run [flags] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND as a job and prints the job's id. Flags go before COMMAND; everything from\n"
    "COMMAND on belongs to the job ('--' may separate them: then rnx does not warn about its own\n"
    "flags among the job's arguments). Flags take '--flag value' or '--flag=value'.\n"
    "\n"
    "Flags:\n";

static const char run_help_tail[] =
    "\n"
    "Example:\n"
    "  rnx job run --max-cpu=50 --max-memory 512MB --upload train.py python3 train.py --epochs 3\n";

/* rnx's flags of job run that set no field of the request */
static const struct {
    const char *term, *help;
} run_own_flags[] = {
    {"-f, --follow", "stream the job's output and exit with the job's exit code;\n"
                     "Ctrl-C stops following, not the job"},
    {"--detach-keys KEYS", "with -it: the keys that leave the job's terminal, the job\n"
                           "still running (default ctrl-p,ctrl-q; \"\" none): characters\n"
                           "or ctrl-X, separated by commas"},
    {"--wait", "after printing its id, wait until the job has ended and exit\n"
               "with its exit code, as rnx job wait (Slurm's sbatch --wait)"},
    {"--dependency SPEC", "Slurm's --dependency: afterok:ID[:ID...], afternotok:,\n"
                          "afterany:, after:, aftercorr:, singleton (comma list); the same\n"
                          "as --after"},
    {"-h, --help", "show this help"},
};

#define RUN_HELP_TERM 22   /* descriptions start at column 2 + 22 + 1 */

/* One entry: "  TERM  description", continuation lines under the description; a term too
 * long for its column has the description on the lines below. */
static void run_help_entry(FILE *f, const char *term, const char *help)
{
    bool below = strlen(term) > RUN_HELP_TERM;
    if (below)
        fprintf(f, "  %s\n", term);
    else
        fprintf(f, "  %-*s ", RUN_HELP_TERM, term);
    for (const char *p = help; *p;) {
        size_t n = strcspn(p, "\n");
        if (below || p != help)
            fprintf(f, "%*s", RUN_HELP_TERM + 3, "");
        fprintf(f, "%.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
}

static void run_help(FILE *f, const struct option *opts)
{
    fputs(run_help_head, f);
    for (int i = 0; i < JR_N; i++) {
        const jobreq_field *fl = &jobreq_fields[i];
        if (!fl->flag || fl->daemon_only || strchr(fl->flag, '='))
            continue;   /* "--gpu=all" is --gpu's value */
        /* a short form: the option that takes the flag's name with a letter for its value */
        char shortf[8] = "", term[96];
        for (const struct option *o = opts; o->name; o++)
            if (!strcmp(o->name, fl->flag + 2) && o->val > 0 && o->val < 128)
                snprintf(shortf, sizeof shortf, "-%c, ", o->val);
        snprintf(term, sizeof term, "%s%s%s%s", shortf, fl->flag, fl->metavar ? " " : "",
                 fl->metavar ? fl->metavar : "");
        run_help_entry(f, term, fl->help ? fl->help : fl->key);
    }
    for (size_t i = 0; i < ARRAY_LEN(run_own_flags); i++)
        run_help_entry(f, run_own_flags[i].term, run_own_flags[i].help);
    fputs(run_help_tail, f);
}

static const char list_help[] =
    "Usage: rnx job list [--status STATUS] [--name NAME] [--gpu GPU] [--user USER] [--since WHEN] [--expand]\n"
    "                    [--json]\n"
    "\n"
    "Lists the jobs you can see (root: everyone's), oldest first, newest last. NUM is the\n"
    "job's number, its SLURM_JOB_ID: every command takes it as it takes the id (42, 42_7).\n"
    "The GPUS column shows the GPUs a job holds or held, or how many it waits for. A job\n"
    "array is one line, ID_[LIST%N] with its tasks by state; --expand lists its started\n"
    "tasks too.\n"
    "\n"
    "Flags:\n"
    "  --status STATUS   only jobs in this state, and arrays with a task in it: PENDING,\n"
    "                    SCHEDULED, QUEUED, RUNNING, STOPPING, PREEMPTED, HELD, SUSPENDED,\n"
    "                    STOPPED, COMPLETED, FAILED, CANCELED\n"
    "  --name NAME       only jobs (and arrays) of this name\n"
    "  --expand          each started task of a job array on a line of its own (ID_7)\n"
    "  --gpu GPU         only jobs that hold or held this GPU (an index or a UUID)\n"
    "  --user USER       only this user's jobs (a name or a uid; others' jobs: root only)\n"
    "  --since WHEN      only jobs submitted since: a duration ago (30min, 2h, 1d) or a time\n"
    "                    (2026-11-22T15:00:00Z)\n"
    "  --json            print the jobs as a JSON array\n"
    "  -h, --help        show this help\n";

static const char status_help[] =
    "Usage: rnx job status [--detail] [--json] ID\n"
    "\n"
    "Shows one job: state, times, exit, limits, environment, uploads, usage.\n"
    "\n"
    "Flags:\n"
    "  --detail     also the request as submitted (as rnx job run flags; secret values never\n"
    "               shown), where its GPUs were placed and how that scores against the best\n"
    "               possible, what it may open and sees (device nodes, mounts, the names of its\n"
    "               environment variables), its GPU use, and its history: submitted, queued\n"
    "               and why, GPUs granted, started, stopped and by whom, ended\n"
    "  --json       print the job object (with \"detail\" when --detail is given)\n"
    "  -h, --help   show this help\n";

static const char log_help[] =
    "Usage: rnx job log [--tail N] [--since WHEN] [-t] [--stdout|--stderr] [-f|--no-follow] [--json] ID\n"
    "\n"
    "Prints the job's output from the start and, while the job runs, follows it until it ends.\n"
    "The job's stdout goes to stdout and its stderr to stderr, byte for byte, in the order the\n"
    "job wrote them.\n"
    "\n"
    "Flags:\n"
    "  --tail N          only the last N lines (all: every line), then follow as usual\n"
    "  --since WHEN      only what was written since: a duration ago (30s, 10min, 2h, 1d) or a\n"
    "                    time (2026-11-22T15:00:00Z)\n"
    "  -t, --timestamps  start each line with the time the job wrote it (UTC, microseconds)\n"
    "  --stdout          only the job's stdout\n"
    "  --stderr          only the job's stderr\n"
    "  --stream stdout|stderr\n"
    "                    only that stream (as --stdout or --stderr)\n"
    "  -f, --follow      follow the output until the job ends (the default)\n"
    "  --no-follow       print what there is now and return\n"
    "  --json            print the API's records (one JSON object per line)\n"
    "  -h, --help        show this help\n";

static const char stop_help[] =
    "Usage: rnx job stop [--force] ID...\n"
    "       rnx job stop [--force] [--name NAME] [--status STATUS] [--user USER] [ID...]\n"
    "\n"
    "Stops running jobs: SIGTERM to all their processes, SIGKILL after the daemon's grace\n"
    "period. A job that has not started yet is canceled. As Slurm's scancel, the jobs may be\n"
    "chosen by name, state and user instead of by ID: among the jobs you can see (root:\n"
    "everyone's), those 'rnx job list' shows with the same flags that have not ended; none\n"
    "matching is not an error. With IDs, the flags filter them (one that does not match is\n"
    "said and left as it is).\n"
    "\n"
    "Flags:\n"
    "  --force          SIGKILL to every process at once, as 'rnx job kill' (also while a\n"
    "                   stop's grace period runs)\n"
    "  --name NAME      the jobs (and arrays) of this name (scancel --name)\n"
    "  --status STATUS  the jobs in this state, an array's tasks in it (scancel --state)\n"
    "  --user USER      this user's jobs, a name or a uid (scancel --user; others': root)\n"
    "  --json           print each job object afterwards\n"
    "  -h, --help       show this help\n";

static const char attach_help[] =
    "Usage: rnx job attach [--detach-keys KEYS] [--no-stdin] ID\n"
    "\n"
    "Attaches to the terminal of a running job that was run with -t or -i (rnx job run -it),\n"
    "as rnx job run -it did: its last output is shown first (a job with -t: the last 64 KiB\n"
    "of its terminal, from a line's start), then what it writes; your keys go to it once you\n"
    "are its typist. The first attached client that takes input types; the others watch and\n"
    "are told who types; when the typist leaves, the next one types. rnx exits with the job's\n"
    "exit code when it ends, 0 after the detach keys (the job goes on).\n"
    "\n"
    "Flags:\n"
    "  --detach-keys KEYS  the keys that leave the job's terminal, the job still running\n"
    "                      (default ctrl-p,ctrl-q; \"\" none)\n"
    "  --no-stdin          watch only: send no keys (ctrl-c leaves)\n"
    "  -h, --help          show this help\n";

static const char kill_help[] =
    "Usage: rnx job kill [--signal=SIG] ID...\n"
    "\n"
    "Kills a running or stopping job: SIGKILL to every process of the job at once, no grace\n"
    "period (the job cannot catch it). The job ends STOPPED, end reason 'killed'. A job that\n"
    "has not started yet is canceled.\n"
    "\n"
    "With --signal, sends that signal to the job's command instead, as docker kill --signal\n"
    "does (USR1 to make a training job write a checkpoint, HUP to reload), or with --all to\n"
    "every process of the job, as Slurm's scancel --full: the job goes on unless the signal\n"
    "ends it, and a job that has not started is left as it is. A suspended job gets it when it\n"
    "is resumed. On an array, every running task named gets it (ID, ID_7, ID_[3-5]).\n"
    "\n"
    "Flags:\n"
    "  -s, --signal=SIG  the signal: a name (USR1, SIGTERM, hup) or a number 1-31; not the\n"
    "                    stop signals (rnx job suspend) nor CHLD. KILL is a kill\n"
    "  --all             with --signal: to every process of the job, not its command alone\n"
    "  --json       print the job object afterwards\n"
    "  -h, --help   show this help\n";

static const char cancel_help[] =
    "Usage: rnx job cancel ID...\n"
    "       rnx job cancel [--name NAME] [--status STATUS] [--user USER] [ID...]\n"
    "\n"
    "Cancels jobs that wait: PENDING, SCHEDULED, QUEUED, PREEMPTED or HELD (an array: its tasks\n"
    "that wait). A job that runs must be stopped instead. As Slurm's scancel --state=PENDING,\n"
    "the jobs may be chosen by name, state and user instead of by ID: among the jobs you can\n"
    "see (root: everyone's), those 'rnx job list' shows with the same flags that wait; none\n"
    "matching is not an error. With IDs, the flags filter them (one that does not match is\n"
    "said and left as it is).\n"
    "\n"
    "Flags:\n"
    "  --name NAME      the jobs (and arrays) of this name\n"
    "  --status STATUS  the jobs in this state, an array's tasks in it (PENDING, SCHEDULED,\n"
    "                   QUEUED, PREEMPTED, HELD)\n"
    "  --user USER      this user's jobs, a name or a uid (others': root)\n"
    "  --json           print each job object afterwards\n"
    "  -h, --help       show this help\n";

static const char delete_help[] =
    "Usage: rnx job delete ID...\n"
    "\n"
    "Removes finished jobs' records and output.\n";

static const char delete_all_help[] =
    "Usage: rnx job delete-all\n"
    "\n"
    "Removes every finished job you can see, with its output.\n";

/* ---- shared helpers ------------------------------------------------------------------- */

static rnx_client *open_client(const rnx_ctx *ctx)
{
    return client_new(&ctx->target);
}

/* The flag that sets a request field ("uploads[2]" is --upload's), NULL when none does. */
static const char *flag_of(const char *field)
{
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)strcspn(field, "[."), field);
    const jobreq_field *f = jobreq_field_by_key(key);
    return f ? f->flag : NULL;
}

/* A schema message ("max_memory_mb: ...") worded the way the user typed the command
 * ("--max-memory: ..."); the message as it is when no flag sets its field. */
static void word_for_flags(const jerr *e, char *out, size_t outlen)
{
    const char *flag = flag_of(e->field);
    static const char thr[] = "array_throttle:"; /* an array's %N, no request's field: --throttle */
    if (!flag && !strcmp(e->field, "array_throttle") && !strncmp(e->msg, thr, sizeof thr - 1))
        snprintf(out, outlen, "--throttle:%s", e->msg + sizeof thr - 1);
    else if (flag)
        jobreq_reword(e, flag, out, outlen);
    else
        snprintf(out, outlen, "%s", e->msg);
    jobreq_flag_words(out, outlen);   /* "add gpu_count" -> "add --gpu" */
}

/* An error from the server (or from reaching it): always exit 1. */
static int server_error(const jerr *e, bool submit)
{
    char msg[sizeof e->msg + 64];
    if (submit)
        word_for_flags(e, msg, sizeof msg);
    else
        snprintf(msg, sizeof msg, "%s", e->msg);
    return rnx_fail("%s", msg);
}

/* Exactly one operand, the job id. */
static int one_id(int argc, char **argv, const char *cmd, const char *usage, const char **id)
{
    int n = argc - optind;
    if (n == 0)
        return rnx_usage("%s: missing ID; usage: %s", cmd, usage);
    if (n > 1)
        return rnx_usage("%s: expected one ID, got %d arguments ('%s' ...); usage: %s", cmd, n, argv[optind + 1],
                         usage);
    if (!*argv[optind])
        return rnx_usage("%s: the ID is empty; usage: %s", cmd, usage);
    *id = argv[optind];
    return 0;
}

/* "/v1/jobs/<escaped id><suffix>". Caller frees. */
static char *job_path(rnx_client *c, const char *id, const char *suffix)
{
    char *esc = client_escape(c, id);
    char *path;
    if (asprintf(&path, "/v1/jobs/%s%s", esc, suffix) < 0)
        abort();
    free(esc);
    return path;
}

/* Options every command takes: -h/--help, and --json for the read commands. */
#define OPT_HELP {"help", no_argument, NULL, 'h'}
#define OPT_JSON {"json", no_argument, NULL, 'j'}

/* Parses the flags of a command that has none but --help (and --json when json_ok).
 * Returns 0 to go on, HELP_SHOWN after printing the help, or RNX_USAGE. */
#define HELP_SHOWN (-1)
static int simple_flags(rnx_ctx *ctx, int argc, char **argv, const char *cmd, const char *help, bool json_ok)
{
    static const struct option with_json[] = {OPT_HELP, OPT_JSON, {0}};
    static const struct option without_json[] = {OPT_HELP, {0}};
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", json_ok ? with_json : without_json, cmd)) != -1) {
        switch (c) {
        case 'h': fputs(help, stdout); return HELP_SHOWN;
        case 'j': ctx->json = true; break;
        default: return RNX_USAGE;
        }
    }
    return 0;
}

/* ---- log streaming (job log, job run --follow) ---------------------------------------- */

/* A growing byte buffer (the end frame's JSON). */
typedef struct buf_t {
    char *data;
    size_t len, cap;
} buf_t;

static void buf_add(buf_t *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
}

typedef struct log_state {
    bool raw;          /* --json: records are printed as they came */
    bool timestamps;   /* --timestamps: each line starts with the time the job wrote it */
    /* the framed form (common/logframe.h): the frame being read */
    unsigned char hdr[LOGFRAME_HDR];
    size_t hdr_len;
    int stream;
    uint32_t left;
    int64_t ts;
    buf_t endrec;      /* the end frame's JSON */
    buf_t stamped;     /* --timestamps: a piece with its times, to write at once */
    bool midline[2];   /* --timestamps: stdout, stderr are in the middle of a line */
    char last_out;     /* last byte written to stdout, to end a note on a fresh line */
    json_t *end;       /* the final {"end": true, ...} record once seen */
    char bad[160];     /* why a record could not be read, "" when all were fine */
    int werr;          /* errno of a failed write of the output, 0 when none */
} log_state;

/* Writes n bytes of the job's output to fd 1 or 2 at once (rnx prints nothing else meanwhile). */
static int out_bytes(log_state *s, int fd, const char *p, size_t n)
{
    if (fd == STDOUT_FILENO && n)
        s->last_out = p[n - 1];
    if (write_all(fd, p, n) != n) {
        s->werr = errno;
        return -1;
    }
    return 0;
}

/* A frame's payload, or part of it: as it is, or (--timestamps) with the time before each
 * line, put together in s->stamped and written in one go. */
static int frame_payload(log_state *s, const char *p, size_t n)
{
    int fd = s->stream == LOGFRAME_STDERR ? STDERR_FILENO : STDOUT_FILENO;
    if (!s->timestamps)
        return out_bytes(s, fd, p, n);
    bool *mid = &s->midline[fd == STDERR_FILENO];
    char t[48];
    format_ns_us(s->ts, t, sizeof t);
    size_t tl = strlen(t);
    t[tl++] = ' ';
    s->stamped.len = 0;
    while (n) {
        if (!*mid)
            buf_add(&s->stamped, t, tl);
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) + 1 : n;
        buf_add(&s->stamped, p, take);
        *mid = !nl;
        p += take;
        n -= take;
    }
    return out_bytes(s, fd, s->stamped.data, s->stamped.len);
}

/* Reads the framed stream as it comes, in pieces of any size. */
static int on_frames(const char *p, size_t n, void *ud)
{
    log_state *s = ud;
    while (n) {
        if (s->hdr_len < LOGFRAME_HDR) {
            size_t take = LOGFRAME_HDR - s->hdr_len < n ? LOGFRAME_HDR - s->hdr_len : n;
            memcpy(s->hdr + s->hdr_len, p, take);
            s->hdr_len += take;
            p += take;
            n -= take;
            if (s->hdr_len < LOGFRAME_HDR)
                return 0;
            logframe_get(s->hdr, &s->stream, &s->left, &s->ts);
            if (s->stream < LOGFRAME_STDOUT || s->stream > LOGFRAME_END || (s->stream == LOGFRAME_END && s->left > 65536)) {
                snprintf(s->bad, sizeof s->bad, "joblet sent a log frame this rnx cannot read (stream %d)", s->stream);
                return -1;
            }
        }
        size_t take = s->left < n ? s->left : n;
        if (s->stream == LOGFRAME_END)
            buf_add(&s->endrec, p, take);
        else if (frame_payload(s, p, take) < 0)
            return -1;
        p += take;
        n -= take;
        s->left -= (uint32_t)take;
        if (!s->left) {
            if (s->stream == LOGFRAME_END && !s->end) {
                s->end = json_loadb(s->endrec.data ? s->endrec.data : "", s->endrec.len, 0, NULL);
                if (!json_is_object(s->end)) {
                    json_decref(s->end);
                    s->end = NULL;
                    snprintf(s->bad, sizeof s->bad, "joblet's end-of-log frame is not a JSON object");
                    return -1;
                }
            }
            s->hdr_len = 0;
        }
    }
    return 0;
}

/* --json: the NDJSON records as they come, written a piece at a time; only the end record is
 * parsed (it is kept for the exit code). */
static int on_ndjson(const char *p, size_t n, void *ud)
{
    log_state *s = ud;
    const char *last_nl = n ? memrchr(p, '\n', n) : NULL;
    if (!last_nl) {
        buf_add(&s->endrec, p, n);   /* a record still coming */
        return 0;
    }
    size_t whole = (size_t)(last_nl - p) + 1;
    /* the records completed now: what was pending, then this piece up to its last newline */
    buf_add(&s->endrec, p, whole);
    const char *r = s->endrec.data, *end = r + s->endrec.len;
    while (r < end) {
        const char *nl = memchr(r, '\n', (size_t)(end - r));
        size_t len = (size_t)(nl - r);
        if (len > 7 && !memcmp(r, "{\"end\"", 6) && !s->end) {
            s->end = json_loadb(r, len, 0, NULL);
            if (!json_is_true(json_object_get(s->end, "end"))) {
                json_decref(s->end);
                s->end = NULL;
            }
        }
        r = nl + 1;
    }
    int rc = out_bytes(s, STDOUT_FILENO, s->endrec.data, s->endrec.len);
    s->endrec.len = 0;
    buf_add(&s->endrec, p + whole, n - whole);
    return rc;
}

/* Streams a job's log: the framed form (large writes of the job's bytes), or the NDJSON
 * records for --json. Returns 0 when the answer ended normally (s->end tells whether the
 * job's end was seen), or an exit code after printing why. */
static int stream_log(rnx_client *c, const char *id, const char *query, log_state *s)
{
    char *path = job_path(c, id, query);
    jerr e = {0};
    int r = s->raw ? client_stream_bytes(c, path, "application/x-ndjson", on_ndjson, s, &e)
                   : client_stream_bytes(c, path, LOGFRAME_CTYPE, on_frames, s, &e);
    if (r == 0 && s->raw && s->endrec.len)   /* a last record without its newline */
        r = out_bytes(s, STDOUT_FILENO, s->endrec.data, s->endrec.len) < 0 || out_bytes(s, STDOUT_FILENO, "\n", 1) < 0
                ? (e.code = ECANCELED, -1)
                : 0;
    free(path);
    free(s->endrec.data);
    free(s->stamped.data);
    s->endrec = s->stamped = (buf_t){0};
    if (r == 0)
        return 0;
    if (e.code == ECANCELED) {
        if (s->bad[0])
            return rnx_fail("%s", s->bad);
        if (s->werr == EPIPE)
            return RNX_FAIL;   /* the reader went away; nothing useful to say */
        return rnx_fail("writing the job's output failed: %s", strerror(s->werr));
    }
    if (e.code == ECONNRESET)
        return rnx_fail("%s while following job %s; the job goes on: see 'rnx job log %s'", e.msg, id, id);
    return server_error(&e, false);
}

/* ---- job run ------------------------------------------------------------------------- */

enum {
    O_STATUS = 256, O_STREAM, O_NO_FOLLOW, O_UPLOAD, O_GPU, O_USER, O_SINCE, O_TAIL, O_STDOUT, O_STDERR,
    O_DETACH_KEYS, O_EXPAND, O_NAME,
    O_DEPENDENCY, O_WAIT,
    O_FIELD = 512 /* + enum jobreq_id */
};

typedef struct run_req {
    job_req req;         /* the request, read and checked by the schema (common/jobreq.h) */
    upload_set uploads;  /* --upload: walked here; the listing goes in the body, the bytes after it */
    bool follow;
    bool wait_end;           /* --wait: rnx job wait on it once submitted */
    const char *detach_keys; /* --detach-keys, NULL when not given */
    term_keys keys;          /* what it says, or the default */
    /* rnx job batch's: the words of job run and where each was given (cmd_batch_plan), so that
     * joblet's refusal of a field names the #SBATCH line that set it; NULL for rnx job run */
    char *const *batch_words;
    const sbatch_list *batch_where;
} run_req;

/* A schema refusal ("max_memory_mb: ...") as a usage error about the flag that was typed. */
static int bad_flag(const jerr *e)
{
    char msg[sizeof e->msg + 64];
    word_for_flags(e, msg, sizeof msg);
    return rnx_usage("%s", msg);
}

/* JSON strings must be UTF-8; anything else cannot be sent, so say which input it was. */
static int utf8_or_usage(const char *flag, const char *value)
{
    if (!utf8_valid(value, strlen(value)))
        return rnx_usage("%s: the value is not valid UTF-8, which the API cannot carry", flag);
    return 0;
}

/* -e/-s K=V: the schema refuses a name given twice (in either flag). */
static int add_env(run_req *r, const char *arg, bool secret)
{
    const char *flag = secret ? "--secret-env" : "--env";
    char name[256];
    const char *value;
    jerr e = {0};
    if (rnx_env_pair(flag, arg, name, sizeof name, &value) != 0)
        return RNX_USAGE;
    if (utf8_or_usage(flag, value) != 0)
        return RNX_USAGE;
    if (jobreq_add_env(&r->req, secret, name, value, &e) < 0)
        return bad_flag(&e);
    return 0;
}

/* Every flag that sets a field of the request, from the schema's table: --name, --max-cpu,
 * ... A boolean field's flag is a switch (--gpu-share), except --cross-numa yes|no, whose
 * default is yes. --env, --secret-env and --upload are read here (K=V; files from disk). */
static void run_options(struct option *opts, size_t n)
{
    size_t k = 0;
    for (int i = 0; i < JR_N && k + 1 < n; i++) {
        const jobreq_field *f = &jobreq_fields[i];
        if (!f->flag || strncmp(f->flag, "--", 2) || strchr(f->flag, '=') || f->kind == JK_ENV ||
            f->kind == JK_UPLOADS)
            continue;
        bool sw = f->kind == JK_BOOL && i != JR_CROSS_NUMA;
        /* a field with a one-letter form (-t, -i) is that letter either way */
        opts[k++] = (struct option){f->flag + 2, sw ? no_argument : required_argument, NULL,
                                    f->letter ? f->letter : O_FIELD + i};
    }
    static const struct option rest[] = {
        {"env", required_argument, NULL, 'e'},
        {"secret-env", required_argument, NULL, 's'},
        {"upload", required_argument, NULL, O_UPLOAD},
        {"follow", no_argument, NULL, 'f'},
        {"detach-keys", required_argument, NULL, O_DETACH_KEYS},
        {"dependency", required_argument, NULL, O_DEPENDENCY}, /* Slurm's spelling of --after */
        {"wait", no_argument, NULL, O_WAIT},
        OPT_HELP,
    };
    for (size_t i = 0; i < ARRAY_LEN(rest) && k + 1 < n; i++)
        opts[k++] = rest[i];
    opts[k] = (struct option){0};
}

/* Applies one flag of `job run` to the request; 0, or an exit code after printing why. */
static int run_flag(run_req *r, int c, const char *arg)
{
    jerr e = {0};
    for (int i = 0; i < JR_N; i++)
        if (c > 0 && c < 128 && jobreq_fields[i].letter == c)
            c = O_FIELD + i; /* -t, -i: their fields' flags */
    if (c >= O_FIELD && c < O_FIELD + JR_N) {
        const jobreq_field *f = &jobreq_fields[c - O_FIELD];
        if (f->kind == JK_BOOL && !arg)
            arg = "true";   /* a switch */
        if (utf8_or_usage(f->flag, arg) != 0)
            return RNX_USAGE;
        if (jobreq_set_text(&r->req, f, arg, time(NULL), &e) < 0)
            return bad_flag(&e);
        return 0;
    }
    if (c == O_DEPENDENCY) {
        if (utf8_or_usage("--dependency", arg) != 0)
            return RNX_USAGE;
        if (jobreq_set_text(&r->req, &jobreq_fields[JR_AFTER], arg, time(NULL), &e) < 0) {
            char msg[sizeof e.msg + 64]; /* the flag typed, as rnx job update says it */
            jobreq_reword(&e, "--dependency", msg, sizeof msg);
            return rnx_usage("%s", msg);
        }
        return 0;
    }
    switch (c) {
    case O_UPLOAD:
        if (upload_add(&r->uploads, arg, &e) < 0)
            return rnx_usage("%s", e.msg);
        return 0;
    case 'e': return add_env(r, arg, false);
    case 's': return add_env(r, arg, true);
    case 'f': r->follow = true; return 0;
    case O_WAIT: r->wait_end = true; return 0;
    case O_DETACH_KEYS: r->detach_keys = arg; return 0;
    default: return RNX_USAGE;
    }
}

/* COMMAND and ARGS: everything after the flags, untouched. */
static int run_command_line(run_req *r, int argc, char **argv)
{
    jerr e = {0};
    if (optind >= argc)
        return rnx_usage("job run: missing COMMAND; usage: rnx job run [flags] COMMAND [ARGS...]");
    if (!*argv[optind])
        return rnx_usage("job run: COMMAND is empty; usage: rnx job run [flags] COMMAND [ARGS...]");
    if (!utf8_valid(argv[optind], strlen(argv[optind])))
        return rnx_usage("job run: COMMAND is not valid UTF-8, which the API cannot carry");
    if (jobreq_set_command(&r->req, argv[optind], &e) < 0) {
        char msg[sizeof e.msg + 64];
        jobreq_reword(&e, "job run: COMMAND", msg, sizeof msg);
        return rnx_usage("%s", msg);
    }
    jobreq_set_list(&r->req, JR_ARGS, NULL, 0);
    for (int i = optind + 1; i < argc; i++) {
        if (!utf8_valid(argv[i], strlen(argv[i])))
            return rnx_usage("job run: argument %d ('%s') is not valid UTF-8, which the API cannot carry",
                             i - optind, argv[i]);
        jobreq_add_arg(&r->req, argv[i]);
    }
    return 0;
}

/* The request is complete: checked as a whole (the rules between fields, as the daemon checks
 * them), then the POST /v1/jobs body, with the uploads' listing. NULL after printing why. */
static json_t *run_body(run_req *r)
{
    jerr e = {0};
    if (upload_finish(&r->uploads, &r->req, &e) < 0) {
        rnx_usage("%s", e.msg);
        return NULL;
    }
    if (jobreq_check_submitted(&r->req, &e) < 0) {
        bad_flag(&e);
        return NULL;
    }
    const upload_set *set = &r->uploads;
    upload_note_stripped(&set, 1);
    upload_note_missing(set, &r->req);
    return jobreq_to_json(&r->req, JOBREQ_JSON_SECRETS);
}

/* The exit code `run --follow` ends with, from the log's end record. */
static int follow_exit_code(json_t *end)
{
    const char *status = jstr(end, "status");
    int64_t v;
    if (status && strcmp(status, "CANCELED") == 0)
        return 1;
    if (jint(end, "exit_code", &v))
        return v >= 0 && v <= 255 ? (int)v : 1;
    if (jint(end, "signal", &v) && v > 0 && v < 128)
        return 128 + (int)v;
    return 1;
}

/* When a followed job ended other than by exiting, its output alone does not say why; one
 * line on stderr does (the job's stdout stays clean). */
static void follow_note_end(rnx_client *c, const char *id, json_t *end, const log_state *s)
{
    const char *reason = jstr(end, "end_reason");
    char words[1024];
    json_t *job = NULL;
    jerr e = {0};
    if (!reason || strcmp(reason, "exit") == 0)
        return;
    char *path = job_path(c, id, "");
    /* the job object has the details the end record lacks (error text, limits) */
    words[0] = 0;
    if (client_request(c, "GET", path, NULL, &job, &e) == 0 && job)
        fmt_end_reason(job, words, sizeof words);
    if (!words[0])
        fmt_end_reason(end, words, sizeof words);
    free(path);
    json_decref(job);
    /* output that ended mid-line would otherwise run into the note on a terminal */
    if (s->last_out && s->last_out != '\n' && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO))
        fputc('\n', stderr);
    print_textf(stderr, "rnx: job %.8s %s\n", id, words);
}

static int run_follow(const rnx_ctx *ctx, rnx_client *c, const char *id)
{
    log_state s = {.raw = ctx->json};
    int rc = stream_log(c, id, "/logs?follow=1", &s);
    if (rc != 0)
        return rc;
    if (!s.end)
        return rnx_fail("the log stream ended before job %s did; the job goes on: see 'rnx job log %s'", id, id);
    rc = follow_exit_code(s.end);
    if (!ctx->json)
        follow_note_end(c, id, s.end, &s);
    json_decref(s.end);
    return rc;
}

int cmd_job_follow(const rnx_ctx *ctx, rnx_client *c, const char *id) { return run_follow(ctx, c, id); }

/* joblet's refusal of a submission, worded for the flags; for rnx job batch, also where the
 * flag of its field was given ("job batch: sweep.sh: line 6: #SBATCH --cpus-per-task=4:
 * --max-cpu: '400' must be ..."), since the user wrote sbatch's option, not the flag. */
static int run_refused(const run_req *r, const jerr *e)
{
    const char *flag = flag_of(e->field);
    if (r->batch_where && flag) {
        size_t fl = strlen(flag);
        const char *at = NULL;
        for (size_t i = 0; i < r->batch_where->n; i++) {
            const char *w = r->batch_words[i];
            if (!strcmp(w, "--"))
                break;
            if (!strncmp(w, flag, fl) && (w[fl] == '=' || !w[fl]) && r->batch_where->v[i][0])
                at = r->batch_where->v[i];
        }
        if (at) {
            char msg[sizeof e->msg + 64];
            word_for_flags(e, msg, sizeof msg);
            return rnx_fail("job batch: %s: %s", at, msg);
        }
    }
    return server_error(e, true);
}

static int run_submit(const rnx_ctx *ctx, run_req *r, json_t *body)
{
    rnx_client *c = open_client(ctx);
    json_t *job = NULL;
    jerr e = {0};
    int rc;
    if (!c)
        return RNX_FAIL;
    if (r->follow && r->req.array) {
        client_free(c);
        return rnx_usage("--follow: an array's tasks each have their own output; follow one with rnx job log "
                         "ID_TASK -f, or wait for all with rnx job wait ID");
    }
    /* accepted with files to send, the job exists once they are there */
    const upload_set *set = &r->uploads;
    if (upload_submit(c, "/v1/jobs", body, &set, 1, &job, &e) < 0) {
        rc = run_refused(r, &e);
        goto out;
    }
    const char *id = jstr(job, "id");
    if (!id) {
        rc = rnx_fail("joblet accepted the job but its answer has no id");
        goto out;
    }
    if (r->req.tty || r->req.stdin_open) {
        /* -t, -i: its terminal here at once (the job waits for it: jobs.attach_wait_s), as
         * docker run -it; the job's exit code is rnx's */
        term_opts to = {.tty = r->req.tty, .stdin_open = r->req.stdin_open, .keys = r->keys};
        rc = cmd_term_attach(c, id, &to);
        goto out;
    }
    if (r->follow) {
        rc = run_follow(ctx, c, id);
        goto out;
    }
    if (ctx->json)
        print_json(job);
    else
        print_textf(stdout, "%s\n", id);
    rc = RNX_OK;
    if (r->wait_end) {
        /* its end, as rnx job wait ID -q gives it (an array: the highest of its tasks') */
        fflush(stdout);
        char *wargv[] = {"wait", "-q", (char *)id, NULL};
        rc = cmd_job_wait((rnx_ctx *)ctx, 3, wargv);
    }
out:
    json_decref(job);
    client_free(c);
    return rc;
}

/* One of job run's own flags as typed: "--gpu=1", "--name", "-f" (exact names only; --help and
 * -h are left to the job: "python3 x.py --help" means the program's). */
static bool run_own_flag(const struct option *opts, const char *arg)
{
    if (arg[0] != '-')
        return false;
    if (arg[1] != '-')
        return arg[1] && !arg[2] && arg[1] != 'h' && strchr("efs", arg[1]);
    size_t n = strcspn(arg + 2, "=");
    for (const struct option *o = opts; o->name; o++)
        if (strlen(o->name) == n && !strncmp(o->name, arg + 2, n))
            return strcmp(o->name, "help") != 0;
    return false;
}

/* Flags of rnx's typed after COMMAND are the job's (they always were, as documented), but a
 * user who wrote "python3 train.py --gpu=1 -f" meant them for rnx: say so on stderr, and how
 * to put them first. The job runs as typed. Nothing is said after "--", which says the rest
 * is the job's. */
static void run_warn_late_flags(const struct option *opts, int argc, char **argv, int cmd)
{
    if (cmd > 1 && !strcmp(argv[cmd - 1], "--"))
        return;
    char list[400] = "";
    size_t l = 0, n = 0;
    for (int i = cmd + 1; i < argc; i++) {
        if (!run_own_flag(opts, argv[i]))
            continue;
        if (n++ < 8 && l < sizeof list)
            l += (size_t)snprintf(list + l, sizeof list - l, "%s%.64s", l ? ", " : "", argv[i]);
    }
    if (!n)
        return;
    print_textf(stderr,
                "rnx: warning: %s%s after the command '%.64s' %s passed to the job as %s argument%s, not to rnx (the "
                "job runs as typed); to give %s to rnx, put %s before '%.64s'; to pass %s to the job without this "
                "warning, write '--' before the command: rnx job run [flags] -- %.64s ...\n",
                list, n > 8 ? ", ..." : "", argv[cmd], n == 1 ? "is" : "are", n == 1 ? "an" : "its",
                n == 1 ? "" : "s", n == 1 ? "it" : "them", n == 1 ? "it" : "them", argv[cmd], n == 1 ? "it" : "them",
                argv[cmd]);
}

/* -t and -i as docker run takes them: with both, the input must be a terminal (to pipe it, -i
 * alone); the detach keys must read. 0, or RNX_USAGE after saying why. */
static int run_terminal_flags(run_req *r)
{
    char why[300];
    if (term_keys_parse(r->detach_keys ? r->detach_keys : TERM_KEYS_DEFAULT, &r->keys, why, sizeof why) < 0)
        return rnx_usage("--detach-keys: %s", why);
    if (r->req.tty && r->req.stdin_open && !isatty(STDIN_FILENO))
        return rnx_usage("-t: your input is not a terminal; with a pipe or a file give -i alone (its stdout and "
                         "stderr then stay apart), or run rnx from a terminal");
    return 0;
}

/* A -s/--secret-env value on rnx's own command line, which every local user reads
 * (/proc/PID/cmdline, ps) for as long as rnx runs (with --follow, the job's life): overwritten in
 * place once the request holds its copy (run_flag), leaving NAME= and the value's length. */
static void run_scrub_secret(char *arg)
{
    char *eq = arg ? strchr(arg, '=') : NULL;
    if (eq)
        memset(eq + 1, '*', strlen(eq + 1));
}

static int job_run_as(rnx_ctx *ctx, int argc, char **argv, const sbatch_list *batch_where)
{
    struct option opts[JR_N + 8];
    run_req r = {.batch_words = argv, .batch_where = batch_where};
    int c, rc = 0;
    run_options(opts, ARRAY_LEN(opts));
    upload_init(&r.uploads);
    /* the flags' letters: rnx's own, then the fields' (-t, -i) */
    char shortopts[32] = "+e:s:fh";
    for (int i = 0; i < JR_N; i++)
        if (jobreq_fields[i].letter && strlen(shortopts) + 1 < sizeof shortopts)
            shortopts[strlen(shortopts)] = jobreq_fields[i].letter;
    optind = 0;
    while (rc == 0 && (c = rnx_getopt(argc, argv, shortopts, opts, "rnx job run")) != -1) {
        if (c == 'h') {
            run_help(stdout, opts);
            rc = -1;
        } else {
            rc = run_flag(&r, c, optarg);
            if (c == 's')
                run_scrub_secret(optarg);
        }
    }
    if (rc == 0)
        rc = run_command_line(&r, argc, argv);
    if (rc == 0)
        run_warn_late_flags(opts, argc, argv, optind);
    if (rc == 0 && r.wait_end && (r.follow || r.req.tty || r.req.stdin_open))
        rc = rnx_usage("--wait: not with %s, which stays with the job until it ends already",
                       r.follow ? "--follow" : "-t/-i");
    if (rc == 0)
        rc = run_terminal_flags(&r);
    if (rc == 0) {
        json_t *body = run_body(&r);
        rc = body ? run_submit(ctx, &r, body) : RNX_USAGE;
        json_decref(body);
    } else if (rc == -1) {
        rc = RNX_OK;   /* --help */
    }
    jobreq_free(&r.req);
    upload_free(&r.uploads);
    return rc;
}

static int job_run(rnx_ctx *ctx, int argc, char **argv) { return job_run_as(ctx, argc, argv, NULL); }

/* ---- job batch ----------------------------------------------------------------------- */

/* sbatch's way in (cmd_batch.c plans it), then the same submission as `rnx job run`. */
static int job_batch(rnx_ctx *ctx, int argc, char **argv)
{
    sbatch_list run = {0}, where = {0};
    int rc = cmd_batch_plan(argc, argv, &run, &where);
    if (rc == 0)
        rc = job_run_as(ctx, (int)run.n, run.v, &where);
    else if (rc == -1)
        rc = RNX_OK;   /* --help */
    sbatch_list_free(&run);
    sbatch_list_free(&where);
    return rc;
}

/* ---- job list ------------------------------------------------------------------------ */

/* --status accepts any case; the API's states are upper case (common/jobstate.h). */
static int parse_status(const char *arg, char *out, size_t outlen)
{
    enum job_state st;
    if (job_state_parse(arg, &st) == 0) {
        snprintf(out, outlen, "%s", job_state_name(st));
        return 0;
    }
    return rnx_usage("--status: '%s' is not a job state; use one of PENDING, SCHEDULED, QUEUED, RUNNING, STOPPING, "
                     "PREEMPTED, HELD, SUSPENDED, STOPPED, COMPLETED, FAILED, CANCELED",
                     arg);
}

/* "0,1" for the GPUs a job holds or held, "2 wanted" while it waits for them, "-" else. */
static void gpus_cell(json_t *job, char *out, size_t outlen)
{
    json_t *gpus = json_object_get(job, "gpus"), *req = json_object_get(job, "gpu_request"), *g;
    size_t i, l = 0;
    int64_t count = 0;
    snprintf(out, outlen, "-");
    json_array_foreach(gpus, i, g) {
        int64_t idx = -1;
        jint(g, "index", &idx);
        if (l < outlen)
            l += (size_t)snprintf(out + l, outlen - l, "%s%lld", i ? "," : "", (long long)idx);
    }
    if (json_array_size(gpus) || jstr(job, "ended_at") || jstr(req, "degraded"))
        return;
    if (jstr(req, "mig"))
        snprintf(out, outlen, "MIG wanted");
    else if (json_is_true(json_object_get(req, "all")))
        snprintf(out, outlen, "all wanted");
    else if (jint(req, "count", &count) && count > 0)
        snprintf(out, outlen, "%lld wanted", (long long)count);
}

/* The keys list_row reads: what rnx job list asks for (GET /v1/jobs?fields=). */
#define LIST_FIELDS "id,kind,number,name,status,owner_uid,command,args,created_at,started_at,ended_at,exit_code,array,gpus,gpu_request"

/* One row; with_user adds the owner before the command. */
static void list_row(table *t, json_t *job, bool with_user)
{
    char created[64], dur[32] = "-", exit_s[16] = "-", gpus[96], user[64];
    int64_t v;
    const char *id = jstr(job, "id");
    char short_id[2100], counts[600] = "", number[24] = "-";
    snprintf(short_id, sizeof short_id, "%.8s", id ? id : "-");
    json_t *arr = json_object_get(job, "array");
    bool array = jstr(job, "kind") && !strcmp(jstr(job, "kind"), "array");
    if (array) {
        /* one line for the array: 3f2a1b2c_[0-99%8], its tasks by state; a list of many ranges
         * cut as the command is (one of 256 ranges made every line of the table 1,100 wide) */
        char *ref_cell = cell_text(jstr(arr, "ref") ? jstr(arr, "ref") : "-", 48);
        snprintf(short_id, sizeof short_id, "%s", ref_cell);
        free(ref_cell);
        print_array_counts(arr, counts, sizeof counts);
    } else if (json_is_object(arr) && jstr(arr, "ref"))
        snprintf(short_id, sizeof short_id, "%s", jstr(arr, "ref"));
    fmt_local_time(jstr(job, "created_at"), created, sizeof created);
    if (job_elapsed_ms(job, &v))
        fmt_elapsed_ms(v, dur, sizeof dur);
    if (jint(job, "exit_code", &v))
        snprintf(exit_s, sizeof exit_s, "%lld", (long long)v);
    if (jint(job, "number", &v)) /* Slurm's job id: every command takes it as it takes the id */
        snprintf(number, sizeof number, "%lld", (long long)v);
    const char *name = jstr(job, "name");
    char *name_cell = cell_text(name && *name ? name : "-", 24);
    char *cmd = shell_join(jstr(job, "command"), json_object_get(job, "args"));
    char *cmd_cell = cell_text(cmd, 40);
    const char *status = jstr(job, "status");
    char status_cell[700];
    if (array) {
        snprintf(status_cell, sizeof status_cell, "%s (%s)", status ? status : "-", counts);
        status = status_cell;
    }
    gpus_cell(job, gpus, sizeof gpus);
    fmt_owner(job, user, sizeof user);
    char *user_cell = cell_text(user, 16);
    /* without the user column the table takes the first nine cells: the command is the ninth */
    const char *cells[] = {short_id, number, name_cell, status ? status : "-", exit_s, gpus, created, dur,
                           with_user ? user_cell : cmd_cell, cmd_cell};
    table_add(t, cells);
    free(name_cell);
    free(user_cell);
    free(cmd);
    free(cmd_cell);
}

/* --user NAME|UID as the uid the API filters by. */
static int parse_user(const char *arg, char *out, size_t outlen)
{
    uint64_t uid;
    if (parse_u64(arg, &uid) == 0 && uid < UINT32_MAX) {
        snprintf(out, outlen, "%llu", (unsigned long long)uid);
        return 0;
    }
    struct passwd *pw = *arg ? getpwnam(arg) : NULL;
    if (!pw)
        return rnx_usage("--user: no user '%s' on this machine; give a user name or a uid", arg);
    snprintf(out, outlen, "%u", (unsigned)pw->pw_uid);
    return 0;
}

/* --since 2h (that long ago) or an RFC 3339 time, as the RFC 3339 time the API takes. */
static int parse_since(const char *arg, char *out, size_t outlen)
{
    uint64_t secs;
    time_t at;
    jerr e = {0};
    if (parse_rfc3339(arg, &at) == 0 && strlen(arg) < outlen) {
        snprintf(out, outlen, "%s", arg);   /* as typed: its fraction of a second counts */
        return 0;
    }
    if (parse_duration("--since", arg, &secs, &e) == 0 && secs <= (uint64_t)time(NULL)) {
        format_ns_us(now_ns() - (int64_t)secs * 1000000000, out, outlen);
        return 0;
    }
    return rnx_usage("--since: '%s' is neither a duration (30min, 2h, 1d: that long ago) nor a time "
                     "(2026-11-22T15:00:00Z)", arg);
}

/* Appends "&key=value" (the first one "?"), the value escaped for a URL. */
static void add_query(rnx_client *c, char **path, const char *key, const char *value)
{
    if (!value || !*value)
        return;
    char *esc = client_escape(c, value), *p;
    if (asprintf(&p, "%s%c%s=%s", *path, strchr(*path, '?') ? '&' : '?', key, esc) < 0)
        abort();
    free(esc);
    free(*path);
    *path = p;
}

/* What rnx job list --status --name --gpu --user --since --expand chooses (NULL or "": not
 * chosen so). */
typedef struct list_pick {
    const char *status, *name, *gpu, *user, *since, *expand;
    const char *fields; /* the keys each job is wanted with (NULL: all, as --json prints them) */
} list_pick;

/* --name, --status, --user as typed to rnx job list, stop and cancel, checked. */
typedef struct pick_flags {
    const char *name;
    char status[32], user[16];
} pick_flags;

/* Option c (O_NAME, O_STATUS, O_USER) into f: 0, RNX_USAGE after saying why, or -1 when c is
 * none of them. */
static int pick_flag(int c, const char *arg, pick_flags *f)
{
    switch (c) {
    case O_NAME:
        if (!*arg)
            return rnx_usage("--name: give the jobs' name");
        f->name = arg;
        return 0;
    case O_STATUS: return parse_status(arg, f->status, sizeof f->status) ? RNX_USAGE : 0;
    case O_USER: return parse_user(arg, f->user, sizeof f->user) ? RNX_USAGE : 0;
    default: return -1;
    }
}

/* Each job of a listing as it comes, --name's choice made: 0 to go on, -1 to stop (its why in
 * the sink's why). */
typedef int (*list_job_fn)(json_t *job, void *ud);

/* Where list_fetch puts the jobs: each parsed and handed to fn, or (fn NULL) its text printed to
 * stdout as print_json prints the array, as it comes: a listing of 162,000 whole jobs is 142 MB,
 * whose parse as a whole took rnx 4 s and ~1 GB before its first byte was printed, and which
 * passed the client's bound on an answer (256 MB) at ~290,000 jobs. */
typedef struct list_sink {
    const char *name;   /* --name: the jobs of that name alone */
    list_job_fn fn;
    void *ud;
    char *out;          /* what is printed, not yet written (fn NULL) */
    size_t len, cap, n;
    char why[200];      /* why fn or the list stopped */
} list_sink;

enum { LIST_OUT_FLUSH = 256 << 10 }; /* written in pieces of this: a terminal's stdout is line-buffered */
/* One job of a listing (or an answer of another layout, held whole) is held up to this, as any
 * answer is (client.c): a server whose item never ends is refused there, not read on until rnx
 * has taken all the memory there is */
#define LIST_ITEM_MAX (256u << 20)

static void list_out_flush(list_sink *s)
{
    if (s->len)
        fwrite(s->out, 1, s->len, stdout);
    s->len = 0;
}

static void list_out_flush_cb(void *s) { list_out_flush(s); }

/* One item of the answer's "jobs" (its text, as joblet sent it). */
static int list_item(const char *text, size_t len, void *ud)
{
    list_sink *s = ud;
    json_t *job = NULL;
    if (s->fn || s->name) {
        json_error_t je;
        if (!(job = json_loadb(text, len, 0, &je))) {
            snprintf(s->why, sizeof s->why, "joblet's job list holds an item that is not JSON (%s)", je.text);
            return -1;
        }
        const char *nm = jstr(job, "name");
        if (s->name && (!nm || strcmp(nm, s->name))) {
            json_decref(job);
            return 0;
        }
    }
    int rc = 0;
    if (s->fn) {
        rc = s->fn(job, s->ud);
    } else if (!json_items_valid_at(text, len, 1)) {
        /* printed as it came, not parsed: a malformed one is not passed on as JSON; nor one that
         * jansson took alone (--name's parse) but not one level in, where it is printed */
        snprintf(s->why, sizeof s->why, "joblet's job list holds an item that is not JSON");
        rc = -1;
    } else {
        json_items_append(&s->out, &s->len, &s->cap, s->n++ ? ",\n  " : "[\n  ", 4);
        /* written as it is laid out: one item's layout may be thousands of times its size */
        json_items_indent_to(text, len, 1, &s->out, &s->len, &s->cap, LIST_OUT_FLUSH, list_out_flush_cb, s);
        if (s->len >= LIST_OUT_FLUSH)
            list_out_flush(s);
    }
    json_decref(job);
    return rc;
}

static int list_feed(const char *p, size_t n, void *ud)
{
    json_items *ji = ud;
    return json_items_feed(ji, p, n);
}

/* An answer of another layout than joblet's (json_items_other): parsed whole, its items handed
 * over as they would have been. 0, or -1 with s->why. */
static int list_whole(json_items *ji, list_sink *s)
{
    size_t len;
    const char *text = json_items_whole(ji, &len);
    json_t *resp = json_loadb(text, len, 0, NULL);
    json_t *jobs = json_object_get(resp, "jobs");
    int rc = 0;
    if (!json_is_array(jobs)) {
        snprintf(s->why, sizeof s->why, "joblet's job list has no \"jobs\" array");
        rc = -1;
    }
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job) {
        char *t = json_dumps(job, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!t)
            abort(); /* json_dumps fails only on allocation failure */
        rc = json_is_object(job) || json_is_array(job) ? list_item(t, strlen(t), s) : 0;
        free(t);
        if (rc < 0)
            break;
    }
    json_decref(resp);
    return rc;
}

/* GET /v1/jobs as p chooses (the name chosen here: the API has no such filter): the jobs, oldest
 * first, into s as they come, or an exit code after saying why. Printed (s->fn NULL), a list
 * whose answer broke off has printed what came before it. */
static int list_fetch(rnx_client *cl, const list_pick *p, list_sink *s)
{
    char *path = xstrdup("/v1/jobs");
    add_query(cl, &path, "status", p->status);
    add_query(cl, &path, "gpu", p->gpu);
    add_query(cl, &path, "user", p->user);
    add_query(cl, &path, "since", p->since);
    add_query(cl, &path, "expand", p->expand);
    add_query(cl, &path, "fields", p->fields);
    s->name = p->name;
    jerr e = {0};
    int rc = RNX_OK, got, waited = 0;
    json_items *ji;
    for (;;) {
        ji = json_items_new("jobs", LIST_ITEM_MAX, list_item, s);
        got = client_stream_bytes(cl, path, "application/json", list_feed, ji, &e);
        if (got == 0 || !client_busy_again(cl, &e, &waited))
            break;
        json_items_free(ji);
        e = (jerr){0};
    }
    if (got == 0 && json_items_other(ji) && list_whole(ji, s) < 0) {
        rc = rnx_fail("%s", s->why);
    } else if (got == 0 && !json_items_other(ji) && !json_items_done(ji)) {
        rc = rnx_fail("joblet's job list has no \"jobs\" array, or not a whole one");
    } else if (got < 0 && e.code == ECANCELED && json_items_too_big(ji)) {
        rc = rnx_fail("joblet's job list holds a job (or, laid out otherwise than joblet's, is an answer) larger "
                      "than %u MB", LIST_ITEM_MAX >> 20);
    } else if (got < 0 && e.code == ECANCELED) {
        rc = rnx_fail("%s", s->why[0] ? s->why : "joblet's job list is not JSON");
    } else if (got < 0) {
        /* the API's filters are the flags' names: the refusal names the flag typed, as rnx's own
         * ("--gpu: '9' is not a GPU", beside "--status: 'x' is not a job state") */
        size_t fl = strlen(e.field);
        if (fl && !strncmp(e.msg, e.field, fl) && e.msg[fl] == ':')
            rc = rnx_fail("--%s", e.msg);
        else
            rc = server_error(&e, false);
    }
    if (!s->fn) {
        if (rc == RNX_OK)
            json_items_append(&s->out, &s->len, &s->cap, s->n ? "\n]\n" : "[]\n", 3);
        list_out_flush(s);
        free(s->out);
        s->out = NULL;
    }
    json_items_free(ji);
    free(path);
    return rc;
}

/* rnx job list's table: a row a job as it comes. */
typedef struct list_table {
    table *t;
    bool with_user;
} list_table;

static int list_table_row(json_t *job, void *ud)
{
    list_table *lt = ud;
    list_row(lt->t, job, lt->with_user);
    return 0;
}

static int job_list(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"status", required_argument, NULL, O_STATUS},
                                         {"expand", no_argument, NULL, O_EXPAND},
                                         {"gpu", required_argument, NULL, O_GPU},
                                         {"user", required_argument, NULL, O_USER},
                                         {"since", required_argument, NULL, O_SINCE},
                                         {"name", required_argument, NULL, O_NAME},
                                         OPT_JSON,
                                         OPT_HELP,
                                         {0}};
    pick_flags pf = {0};
    char since[48] = "";
    const char *gpu = NULL, *expand = NULL;
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, "rnx job list")) != -1) {
        switch (c) {
        case 'h': fputs(list_help, stdout); return RNX_OK;
        case O_EXPAND: expand = "1"; break;
        case 'j': ctx->json = true; break;
        case O_SINCE:
            if (parse_since(optarg, since, sizeof since) != 0)
                return RNX_USAGE;
            break;
        case O_GPU:
            if (!*optarg)
                return rnx_usage("--gpu: give a GPU's index or UUID (rnx gpu list)");
            gpu = optarg;
            break;
        default:
            if (pick_flag(c, optarg, &pf) != 0)
                return RNX_USAGE;
        }
    }
    if (optind < argc)
        return rnx_usage("job list: unexpected argument '%s'; usage: rnx job list [--status STATUS] [--name NAME] [--gpu GPU] "
                         "[--user USER] [--since WHEN] [--json]",
                         argv[optind]);

    rnx_client *cl = open_client(ctx);
    if (!cl)
        return RNX_FAIL;
    /* the table's columns need these keys alone (list_row, print_array_counts, --name's filter):
     * the whole jobs are 1.4 KB each, 140 MB for 100,000 jobs, the most of a listing's time */
    list_pick pick = {pf.status, pf.name, gpu, pf.user, since, expand, ctx->json ? NULL : LIST_FIELDS};
    int rc;
    if (ctx->json) {
        rc = list_fetch(cl, &pick, &(list_sink){0});
    } else {
        /* whose each job is (root sees everyone's): asked first, the rows made as the jobs come */
        bool with_user;
        jerr we = {0};
        if (client_sees_all_jobs(cl, &with_user, &we) < 0) {
            client_free(cl);
            return server_error(&we, false);
        }
        static const char *const headers[] = {"ID",   "NUM",     "NAME",     "STATUS", "EXIT",
                                              "GPUS", "CREATED", "DURATION", "USER",   "COMMAND"};
        static const char *const plain[] = {"ID",   "NUM",     "NAME",     "STATUS",
                                            "EXIT", "GPUS",    "CREATED",  "DURATION", "COMMAND"};
        list_table lt = {with_user ? table_new(ARRAY_LEN(headers), headers) : table_new(ARRAY_LEN(plain), plain),
                         with_user};
        rc = list_fetch(cl, &pick, &(list_sink){.fn = list_table_row, .ud = &lt});
        if (rc == RNX_OK)
            table_print(lt.t, stdout);
        table_free(lt.t);
    }
    client_free(cl);
    return rc;
}

/* ---- job status, stop, cancel, delete ------------------------------------------------- */

/* Sends one request about one job; on success *out holds the answer (may be NULL). */
static int job_request(const rnx_ctx *ctx, const char *method, const char *id, const char *suffix, json_t **out)
{
    rnx_client *c = open_client(ctx);
    jerr e = {0};
    int rc = RNX_OK;
    if (!c)
        return RNX_FAIL;
    char *path = job_path(c, id, suffix);
    if (client_request(c, method, path, NULL, out, &e) < 0)
        rc = server_error(&e, false);
    free(path);
    client_free(c);
    return rc;
}

static int job_status(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {OPT_HELP, OPT_JSON, {"detail", no_argument, NULL, 'd'}, {0}};
    const char *id = NULL;
    json_t *job = NULL;
    bool detail = false;
    int c, rc;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, "rnx job status")) != -1) {
        switch (c) {
        case 'h': fputs(status_help, stdout); return RNX_OK;
        case 'j': ctx->json = true; break;
        case 'd': detail = true; break;
        default: return RNX_USAGE;
        }
    }
    if ((rc = one_id(argc, argv, "job status", "rnx job status [--detail] [--json] ID", &id)) != 0)
        return rc;
    if ((rc = job_request(ctx, "GET", id, detail ? "?detail=1" : "", &job)) != 0)
        return rc;
    if (ctx->json) {
        print_json(job);
    } else {
        print_job(job, stdout);
        json_t *tasks = json_object_get(job, "tasks");
        if (detail && json_is_array(tasks)) { /* ID_[3-5]: each task's history is its own */
            json_t *a = json_object_get(json_array_get(tasks, 0), "array");
            fprintf(stderr, "rnx: job status --detail: a history is one job's: name one task (rnx job status --detail "
                            "%s)\n", jstr(a, "ref") ? jstr(a, "ref") : "ID_N");
            rc = RNX_FAIL;
        } else if (detail && !json_is_object(json_object_get(job, "detail")))
            fputs("rnx: joblet sent no detail for this job (a joblet older than rnx?)\n", stderr);
        else if (detail)
            print_detail(job, stdout);
    }
    json_decref(job);
    return rc;
}

/* rnx job attach: the job's terminal here again, as run -it had it (cmd_term.c). */
static int job_attach(rnx_ctx *ctx, int argc, char **argv)
{
    enum { O_KEYS = 1000, O_NO_STDIN };
    static const struct option opts[] = {{"detach-keys", required_argument, NULL, O_KEYS},
                                         {"no-stdin", no_argument, NULL, O_NO_STDIN}, OPT_HELP, {0}};
    const char *id = NULL, *keys_spec = TERM_KEYS_DEFAULT;
    bool no_stdin = false;
    int c, rc;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, "rnx job attach")) != -1) {
        switch (c) {
        case 'h': fputs(attach_help, stdout); return RNX_OK;
        case O_KEYS: keys_spec = optarg; break;
        case O_NO_STDIN: no_stdin = true; break;
        default: return RNX_USAGE;
        }
    }
    if ((rc = one_id(argc, argv, "job attach", "rnx job attach [--detach-keys KEYS] [--no-stdin] ID", &id)) != 0)
        return rc;
    char why[300];
    term_opts to = {0};
    if (term_keys_parse(keys_spec, &to.keys, why, sizeof why) < 0)
        return rnx_usage("--detach-keys: %s", why);
    rnx_client *cl = open_client(ctx);
    if (!cl)
        return RNX_FAIL;
    json_t *job = NULL;
    jerr e = {0};
    /* a name as the attach resolves it: among the jobs not ended (docs/cli.md "Naming a job") */
    char *path = job_path(cl, id, "?live=1");
    if (client_request(cl, "GET", path, NULL, &job, &e) < 0) {
        rc = server_error(&e, false);
    } else {
        /* the job's own kind of terminal: -t (raw mode here) or -i alone (stdout, stderr apart) */
        to.tty = json_is_true(json_object_get(job, "tty"));
        to.stdin_open = !no_stdin && json_is_true(json_object_get(job, "stdin"));
        to.watch = no_stdin;
        rc = cmd_term_attach(cl, jstr(job, "id") ? jstr(job, "id") : id, &to);
    }
    free(path);
    json_decref(job);
    client_free(cl);
    return rc;
}

/* The id to confirm with: the server's full one when it answered with the job. */
static const char *answer_id(json_t *answer, const char *typed)
{
    const char *id = jstr(answer, "id");
    return id ? id : typed;
}

/* "3f2a1b2c_4" or "3f2a1b2c_[2-3,7]": tasks of array id, as rnx takes them. */
static void task_refs(const char *id, const char *tasks, char *out, size_t len)
{
    bool one = !strpbrk(tasks, "-,:");
    snprintf(out, len, one ? "%.8s_%s" : "%.8s_[%s]", id, tasks);
}

/* The answer to an act on tasks named of an array (ID_4, ID_[1-3]): what was done to which, by
 * the answer's "went" (array_ctl.h: each group of tasks, what they were and are), so that a
 * task held is said to be the task, not the array, and a cancel says which tasks it canceled,
 * which run and were left so, which had ended. verb: what was done ("held", "canceled");
 * cancel: a running task left is said with how to stop it. */
static void print_tasks_acted(json_t *answer, const char *verb, const char *typed, bool cancel)
{
    json_t *arr = json_object_get(answer, "array"), *went = json_object_get(answer, "went");
    const char *id = jstr(arr, "id") ? jstr(arr, "id") : typed, *named = jstr(answer, "named");
    int64_t acted = 0;
    jint(answer, "acted", &acted);
    char counts[600], refs[2100];
    print_array_counts(json_object_get(arr, "array"), counts, sizeof counts);
    size_t n = json_array_size(went);
    json_t *g0 = json_array_get(went, 0);
    const char *w0 = jstr(g0, "was") ? jstr(g0, "was") : "?", *n0 = jstr(g0, "now") ? jstr(g0, "now") : "?";
    if (n == 1 && strcmp(w0, n0)) { /* all of them went the same way: one line */
        task_refs(id, jstr(g0, "tasks") ? jstr(g0, "tasks") : "?", refs, sizeof refs);
        print_textf(stdout, "%s %lld task%s of array %s: %s (%s -> %s; the array now %s)\n", verb, (long long)acted,
                    acted == 1 ? "" : "s", id, refs, w0, n0, counts);
        return;
    }
    if (!n) { /* more tasks named than the daemon lists one by one: how many */
        task_refs(id, named ? named : "?", refs, sizeof refs);
        print_textf(stdout, "%s %lld of tasks %s of array %s (now %s)\n", verb, (long long)acted, refs, id, counts);
        return;
    }
    print_textf(stdout, "%s %lld task%s of array %s (now %s):\n", verb, (long long)acted, acted == 1 ? "" : "s", id,
                counts);
    for (size_t i = 0; i < n; i++) {
        json_t *g = json_array_get(went, i);
        const char *was = jstr(g, "was") ? jstr(g, "was") : "?", *now = jstr(g, "now") ? jstr(g, "now") : "?";
        task_refs(id, jstr(g, "tasks") ? jstr(g, "tasks") : "?", refs, sizeof refs);
        enum job_state s;
        bool ended = !strcmp(now, "DELETED") || (job_state_parse(now, &s) == 0 && job_state_terminal(s));
        if (strcmp(was, now))
            print_textf(stdout, "  %s: %s -> %s\n", refs, was, now);
        else if (ended)
            print_textf(stdout, "  %s: already ended (%s), left as it is\n", refs, now);
        else if (cancel && (!strcmp(now, "RUNNING") || !strcmp(now, "SUSPENDED") || !strcmp(now, "STOPPING")))
            print_textf(stdout, "  %s: %s, left running (a cancel takes only tasks not started; rnx job stop %s "
                                "stops it)\n", refs, now, refs);
        else
            print_textf(stdout, "  %s: %s, left as it is\n", refs, now);
    }
}

/* The answer to a signal sent to tasks named of an array (rnx job kill --signal=USR1 ID_[1-4]):
 * which were sent it (those running: RUNNING, SUSPENDED, STOPPING) and which not, and why (not
 * started, ended), by the answer's "went" (each group's state; a signal changes none). */
static void print_tasks_signaled(json_t *answer, const char *signame, const char *typed)
{
    json_t *arr = json_object_get(answer, "array"), *went = json_object_get(answer, "went");
    const char *id = jstr(arr, "id") ? jstr(arr, "id") : typed, *named = jstr(answer, "named");
    int64_t acted = 0;
    jint(answer, "acted", &acted);
    char refs[2100];
    size_t n = json_array_size(went);
    if (!n) { /* more tasks named than the daemon lists one by one: how many */
        task_refs(id, named ? named : "?", refs, sizeof refs);
        print_textf(stdout, "sent %s to %lld running task%s of %s\n", signame, (long long)acted, acted == 1 ? "" : "s",
                    refs);
        return;
    }
    print_textf(stdout, "sent %s to %lld running task%s of array %s:\n", signame, (long long)acted,
                acted == 1 ? "" : "s", id);
    for (size_t i = 0; i < n; i++) {
        json_t *g = json_array_get(went, i);
        const char *now = jstr(g, "now") ? jstr(g, "now") : "?";
        task_refs(id, jstr(g, "tasks") ? jstr(g, "tasks") : "?", refs, sizeof refs);
        enum job_state s;
        bool known = job_state_parse(now, &s) == 0;
        if (known && (s == JS_RUNNING || s == JS_SUSPENDED || s == JS_STOPPING))
            print_textf(stdout, "  %s: %s, sent %s\n", refs, now, signame);
        else if (!strcmp(now, "DELETED") || (known && job_state_terminal(s)))
            print_textf(stdout, "  %s: already ended (%s), not sent\n", refs, now);
        else
            print_textf(stdout, "  %s: %s, not started, not sent\n", refs, now);
    }
}

/* What one of stop, kill, cancel, delete does to one job. */
typedef struct action {
    const char *which;
    bool stop, kill, del, all;
    int sig;
    char signame[16];
    const char *only; /* --status: act only while the job (an array: its tasks) is in this state */
    const char *only_name, *only_user; /* --name, --user with IDs: only if the job is of them */
} action;

/* One request, one line of confirmation. quiet_409: a job chosen by name, state or user that
 * went on meanwhile (ended, started) is said, not an error (a 409 naming a field, a limit of what
 * was named, is one). */
static int act_one(rnx_ctx *ctx, const action *a, const char *id, bool quiet_409)
{
    json_t *answer = NULL;
    rnx_client *cl = open_client(ctx);
    if (!cl)
        return RNX_FAIL;
    jerr e = {0};
    int fail = 0;
    char path[80];
    if (a->del) {
        char *p = job_path(cl, id, "");
        fail = client_request(cl, "DELETE", p, NULL, &answer, &e);
        /* an array: its ended tasks go a slice per request, then the array */
        while (fail == 0 && json_is_true(json_object_get(answer, "more"))) {
            json_decref(answer);
            answer = NULL;
            fail = client_request(cl, "DELETE", p, NULL, &answer, &e);
        }
        free(p);
    } else {
        if (a->sig && a->sig != SIGKILL)
            snprintf(path, sizeof path, "/kill?signal=%s%s", a->signame, a->all ? "&all=1" : "");
        else
            snprintf(path, sizeof path, "%s", a->kill ? "/kill" : a->stop ? "/stop" : "/cancel");
        /* the daemon checks what the flags ask when the request reaches it (scancel -t, -n, -u) */
        char *suffix = xstrdup(path);
        add_query(cl, &suffix, "status", a->only);
        add_query(cl, &suffix, "name", a->only_name);
        add_query(cl, &suffix, "user", a->only_user);
        char *p = job_path(cl, id, suffix);
        fail = client_request(cl, "POST", p, NULL, &answer, &e);
        free(suffix);
        free(p);
    }
    client_free(cl);
    if (fail < 0) {
        int rc = server_error(&e, false);
        json_decref(answer);
        /* (a 409 naming a field is the request's fault, a limit: an error whatever chose the job) */
        return quiet_409 && e.http == 409 && !e.field[0] ? RNX_OK : rc;
    }
    const char *status = jstr(answer, "status");
    json_t *arr = json_object_get(answer, "array");
    int64_t acted;
    bool sig = a->sig && a->sig != SIGKILL, cancel = !strcmp(a->which, "cancel");
    if (ctx->json)
        print_json(answer);
    else if (sig && json_is_object(arr) && jstr(answer, "named"))
        print_tasks_signaled(answer, a->signame, id);
    else if (sig && json_is_object(arr) && jint(answer, "acted", &acted))
        print_textf(stdout, "sent %s to %lld running task%s of array %s\n", a->signame, (long long)acted,
                    acted == 1 ? "" : "s", jstr(arr, "id") ? jstr(arr, "id") : id);
    else if (sig)
        print_textf(stdout, "sent %s to %s %s\n", a->signame, a->all ? "every process of" : "the command of",
                    answer_id(answer, id));
    else if (!a->del && json_is_object(arr) && jstr(answer, "named"))
        print_tasks_acted(answer, cancel ? "canceled" : a->kill ? "killing" : "stopping or canceled", id, cancel);
    else if (!a->del && json_is_object(arr) && jint(answer, "acted", &acted)) {
        /* an array */
        char counts[600];
        print_array_counts(json_object_get(arr, "array"), counts, sizeof counts);
        print_textf(stdout, "%s %lld task%s of array %s (now %s)\n",
                    cancel ? "canceled" : a->kill ? "killing" : "stopping or canceled", (long long)acted,
                    acted == 1 ? "" : "s", jstr(arr, "id") ? jstr(arr, "id") : id, counts);
    } else if (a->del)
        print_textf(stdout, "deleted %s\n", jstr(answer, "deleted") ? jstr(answer, "deleted") : id);
    else if (cancel || (status && strcmp(status, "CANCELED") == 0))
        print_textf(stdout, "canceled %s%s\n", answer_id(answer, id), a->stop || a->kill ? " (it had not started)" : "");
    else if (a->kill)
        print_textf(stdout, "killing %s (SIGKILL to every process)\n", answer_id(answer, id));
    else
        print_textf(stdout, "stopping %s\n", answer_id(answer, id));
    json_decref(answer);
    return RNX_OK;
}

/* Each job listed, kept in the array ud. */
static int list_keep(json_t *job, void *ud)
{
    json_array_append(ud, job);
    return 0;
}

/* scancel's choice by name, state and user: the jobs and arrays `rnx job list --status --user`
 * shows, of that name, that the action can take (cancel: those that wait, an array with tasks not
 * ended; stop: those not ended), newest first, so that a job is acted on before the jobs it waits
 * for (canceling a dependency first would cancel its dependents by cascade, under our feet). An
 * array is listed when any of its tasks is in the state asked for, and the action (?status) takes
 * only those tasks (scancel -t PENDING 123: its pending tasks, the running ones left).
 * Appended to *ids (strings the caller frees). 0, or an exit code. */
static int select_jobs(const rnx_ctx *ctx, const pick_flags *pf, bool cancel, char ***ids, size_t *n)
{
    rnx_client *cl = open_client(ctx);
    if (!cl)
        return RNX_FAIL;
    json_t *jobs = json_array();
    int rc = list_fetch(cl, &(list_pick){.status = pf->status, .name = pf->name, .user = pf->user},
                        &(list_sink){.fn = list_keep, .ud = jobs});
    enum job_state want;
    bool by_state = pf->status[0] && job_state_parse(pf->status, &want) == 0;
    /* tasks in an ended state, or running ones for cancel: nothing an array's action would take */
    bool tasks_takeable = !by_state || (!job_state_terminal(want) &&
                                        (!cancel || job_state_waiting(want) || want == JS_PENDING || want == JS_HELD));
    if (rc == RNX_OK) {
        for (size_t i = json_array_size(jobs); i-- > 0;) {
            json_t *job = json_array_get(jobs, i);
            const char *id = jstr(job, "id"), *st = jstr(job, "status"), *kind = jstr(job, "kind");
            enum job_state s;
            if (!id || !st || job_state_parse(st, &s) < 0)
                continue;
            bool array = kind && !strcmp(kind, "array");
            if (job_state_terminal(s) || (cancel && !array && !job_state_waiting(s) && s != JS_PENDING && s != JS_HELD) ||
                (array && !tasks_takeable))
                continue;
            *ids = xrealloc(*ids, (*n + 1) * sizeof **ids);
            (*ids)[(*n)++] = xstrdup(id);
        }
    }
    json_decref(jobs);
    client_free(cl);
    return rc;
}

/* stop, kill, cancel and delete: one request per job, one line of confirmation each. */
static int job_action(rnx_ctx *ctx, int argc, char **argv, const char *which)
{
#define PICK_OPTS {"name", required_argument, NULL, O_NAME}, {"status", required_argument, NULL, O_STATUS}, \
                  {"user", required_argument, NULL, O_USER}
    static const struct option stop_opts[] = {{"force", no_argument, NULL, 'F'}, PICK_OPTS, OPT_JSON, OPT_HELP, {0}};
    static const struct option cancel_opts[] = {PICK_OPTS, OPT_JSON, OPT_HELP, {0}};
    static const struct option kill_opts[] = {{"signal", required_argument, NULL, 's'}, {"all", no_argument, NULL, 'A'},
                                              OPT_JSON, OPT_HELP, {0}};
    static const struct option opts[] = {OPT_JSON, OPT_HELP, {0}};
#undef PICK_OPTS
    action a = {.which = which, .stop = !strcmp(which, "stop"), .kill = !strcmp(which, "kill"),
                .del = !strcmp(which, "delete")};
    bool cancel = !strcmp(which, "cancel");
    const char *help = a.stop ? stop_help : a.kill ? kill_help : cancel ? cancel_help : delete_help;
    pick_flags pf = {0};
    char cmd[32], usage[64];
    int c, rc = RNX_OK;
    snprintf(cmd, sizeof cmd, "rnx job %s", which);
    snprintf(usage, sizeof usage, "rnx job %s%s ID...", which, a.stop ? " [--force]" : a.kill ? " [--signal=SIG [--all]]" : "");
    optind = 0;
    while ((c = rnx_getopt(argc, argv, a.kill ? "hs:" : "h",
                           a.stop ? stop_opts : a.kill ? kill_opts : cancel ? cancel_opts : opts, cmd)) != -1) {
        switch (c) {
        case 'h': fputs(help, stdout); return RNX_OK;
        case 'j': ctx->json = true; break;
        case 'F': a.kill = true; break;
        case 's': {
            jerr e = {0};
            if (parse_signal("--signal", optarg, &a.sig, &e) < 0)
                return rnx_usage("%s", e.msg);
            parse_signal_name(a.sig, a.signame, sizeof a.signame);
            break;
        }
        case 'A': a.all = true; break;
        default:
            if (pick_flag(c, optarg, &pf) != 0)
                return RNX_USAGE;
        }
    }
    bool picks = pf.name || pf.status[0] || pf.user[0];
    if (optind >= argc && !picks)
        return rnx_usage("%s: missing ID; usage: %s%s", cmd + 4, usage,
                         a.stop || cancel ? " (or --name, --status, --user)" : "");
    if (a.all && (!a.sig || a.sig == SIGKILL))
        return rnx_usage("rnx job kill: --all goes with --signal (a kill reaches every process already)");
    for (int i = optind; i < argc; i++)
        if (!*argv[i])
            return rnx_usage("%s: an ID is empty; usage: %s", cmd + 4, usage);
    /* --status, --name and --user filter the IDs named, as scancel's with job ids (scancel -t
     * PENDING 123: 123's pending tasks, or nothing when it runs; said, not an error); without
     * IDs they choose the jobs */
    a.only = pf.status[0] ? pf.status : NULL;
    a.only_name = pf.name;
    a.only_user = pf.user[0] ? pf.user : NULL;
    for (int i = optind; i < argc; i++) {
        int r = act_one(ctx, &a, argv[i], picks);
        if (r != RNX_OK)
            rc = r;
    }
    if (!picks || optind < argc)
        return rc;
    a.only_name = a.only_user = NULL; /* (the jobs chosen by them: their state alone checked again) */
    char **ids = NULL;
    size_t n = 0;
    int r = select_jobs(ctx, &pf, cancel, &ids, &n);
    if (r != RNX_OK)
        rc = r;
    else if (!n && !ctx->json)
        fprintf(stderr, "rnx: no job you can see matches (rnx job list%s%s%s%s%s%s shows them)\n",
                pf.name ? " --name=" : "", pf.name ? pf.name : "", pf.status[0] ? " --status=" : "", pf.status,
                pf.user[0] ? " --user=" : "", pf.user);
    for (size_t i = 0; i < n; i++) {
        if ((r = act_one(ctx, &a, ids[i], true)) != RNX_OK)
            rc = r;
        free(ids[i]);
    }
    free(ids);
    return rc;
}

static int job_stop(rnx_ctx *ctx, int argc, char **argv) { return job_action(ctx, argc, argv, "stop"); }
static int job_kill(rnx_ctx *ctx, int argc, char **argv) { return job_action(ctx, argc, argv, "kill"); }
static int job_cancel(rnx_ctx *ctx, int argc, char **argv) { return job_action(ctx, argc, argv, "cancel"); }
static int job_delete(rnx_ctx *ctx, int argc, char **argv) { return job_action(ctx, argc, argv, "delete"); }

static int job_delete_all(rnx_ctx *ctx, int argc, char **argv)
{
    int rc = simple_flags(ctx, argc, argv, "rnx job delete-all", delete_all_help, false);
    if (rc)
        return rc == HELP_SHOWN ? RNX_OK : rc;
    if (optind < argc)
        return rnx_usage("job delete-all: takes no arguments (got '%s'); to delete one job use 'rnx job delete ID'",
                         argv[optind]);
    rnx_client *c = open_client(ctx);
    json_t *answer = NULL;
    jerr e = {0};
    if (!c)
        return RNX_FAIL;
    if (client_request(c, "DELETE", "/v1/jobs", NULL, &answer, &e) < 0) {
        rc = server_error(&e, false);
    } else if (ctx->json) {
        print_json(answer);
    } else {
        int64_t n = 0;
        jint(answer, "deleted", &n);
        print_textf(stdout, "deleted %lld job%s\n", (long long)n, n == 1 ? "" : "s");
    }
    json_decref(answer);
    client_free(c);
    return rc;
}

/* ---- job log ------------------------------------------------------------------------- */

static int job_log(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {
        {"stream", required_argument, NULL, O_STREAM},
        {"stdout", no_argument, NULL, O_STDOUT},
        {"stderr", no_argument, NULL, O_STDERR},
        {"no-follow", no_argument, NULL, O_NO_FOLLOW},
        {"follow", no_argument, NULL, 'f'},
        {"tail", required_argument, NULL, O_TAIL},
        {"since", required_argument, NULL, O_SINCE},
        {"timestamps", no_argument, NULL, 't'},
        OPT_JSON,
        OPT_HELP,
        {0},
    };
    const char *id = NULL;
    bool follow = true, timestamps = false;
    int c, rc, streams = 0;   /* bits: 1 stdout, 2 stderr; none given = both */
    char tail[24] = "", since[64] = "";
    optind = 0;
    bool follow_given = false, no_follow_given = false;
    while ((c = rnx_getopt(argc, argv, "fht", opts, "rnx job log")) != -1) {
        uint64_t n;
        switch (c) {
        case 'h': fputs(log_help, stdout); return RNX_OK;
        case 'j': ctx->json = true; break;
        case 't': timestamps = true; break;
        case O_NO_FOLLOW: follow = false; no_follow_given = true; break;
        case 'f': follow_given = true; break;
        case O_STDOUT: streams |= 1; break;
        case O_STDERR: streams |= 2; break;
        case O_STREAM:
            if (strcmp(optarg, "stdout") != 0 && strcmp(optarg, "stderr") != 0)
                return rnx_usage("--stream: '%s' is not accepted; use stdout or stderr", optarg);
            streams |= optarg[3] == 'o' ? 1 : 2;
            break;
        case O_TAIL:
            if (strcmp(optarg, "all") && parse_u64(optarg, &n) < 0)
                return rnx_usage("--tail: '%s' is not a number of lines; give 0 or more, or all", optarg);
            snprintf(tail, sizeof tail, "%s", optarg);
            break;
        case O_SINCE:
            if (parse_since(optarg, since, sizeof since) != 0)
                return RNX_USAGE;
            break;
        default: return RNX_USAGE;
        }
    }
    if (follow_given && no_follow_given)
        return rnx_usage("job log: -f/--follow and --no-follow contradict each other; give one");
    if (timestamps && ctx->json)
        return rnx_usage("job log: --timestamps is for the text output; --json records have their time ('ts')");
    if ((rc = one_id(argc, argv, "job log", "rnx job log [--tail N] [--since WHEN] [-t] [--stdout|--stderr] "
                                            "[-f|--no-follow] ID", &id)) != 0)
        return rc;

    rnx_client *cl = open_client(ctx);
    if (!cl)
        return RNX_FAIL;
    char *query = xstrdup("/logs");
    add_query(cl, &query, "follow", follow ? "1" : NULL);
    add_query(cl, &query, "stream", streams == 1 ? "stdout" : streams == 2 ? "stderr" : NULL);
    add_query(cl, &query, "tail", tail);
    add_query(cl, &query, "since", since);
    log_state s = {.raw = ctx->json, .timestamps = timestamps};
    rc = stream_log(cl, id, query, &s);
    free(query);
    if (rc == 0 && follow && !s.end)
        rc = rnx_fail("the log stream ended before job %s did; run 'rnx job log %s' again", id, id);
    json_decref(s.end);
    client_free(cl);
    return rc;
}

/* ---- job hold, release, suspend, resume, requeue, update (docs/batch.md) -------------- */

static const char hold_help[] =
    "Usage: rnx job hold ID...\n"
    "\n"
    "Holds jobs that wait (PENDING, SCHEDULED, QUEUED or PREEMPTED): state HELD, out of the\n"
    "scheduler's sight until 'rnx job release'. Released, it joins the queue from then.\n"
    "A job that runs, has ended or is held already is refused.\n";
static const char release_help[] =
    "Usage: rnx job release ID...\n"
    "\n"
    "Releases held jobs: back to PENDING (a workflow's job whose dependencies have not all\n"
    "ended), SCHEDULED (its --schedule time is ahead) or QUEUED, behind the jobs that\n"
    "waited meanwhile (its place in the queue is from its release, as in Slurm).\n";
static const char suspend_help[] =
    "Usage: rnx job suspend ID...\n"
    "\n"
    "Freezes every process of running jobs (the cgroup freezer): state SUSPENDED. Their memory,\n"
    "room and GPUs stay held. For admins (root), as in Slurm. 'rnx job resume' thaws them;\n"
    "stop and kill work on a suspended job.\n";
static const char resume_help[] =
    "Usage: rnx job resume ID...\n"
    "\n"
    "Thaws suspended jobs: RUNNING again, where they were. For admins (root).\n";
static const char requeue_help[] =
    "Usage: rnx job requeue [--hold] ID...\n"
    "\n"
    "Stops running (or suspended) jobs as a preemption does (SIGTERM, SIGKILL after the grace\n"
    "period) and puts them back in the queue with their id, place and history; they run again\n"
    "from the start. An ended job (COMPLETED, FAILED, STOPPED, CANCELED) goes back to the queue\n"
    "at once, as Slurm's scontrol requeue of a finished job: its id, history, /work and log kept\n"
    "(the next run's output follows), its earlier end in its history; not a workflow's job nor\n"
    "an array's task. --hold: they wait HELD until 'rnx job release'.\n";
static const char update_help[] =
    "Usage: rnx job update ID [--priority=N] [--max-runtime=DURATION] [--gpu=N] [--gpu-memory=SIZE]\n"
    "                         [--max-cpu=PERCENT] [--max-memory=SIZE] [--preemptible=true|false]\n"
    "                         [--after=SPEC|none] [--dependency=SPEC] [--schedule=WHEN|now]\n"
    "                         [--throttle=N]\n"
    "\n"
    "Changes the request of a job that waits (pending, scheduled, queued, held, preempted),\n"
    "checked as a submission is. Once it runs only --max-runtime may change, and takes effect at\n"
    "once (counted from its start). Only an admin may raise a priority; its owner may lower it.\n"
    "--max-runtime=UNLIMITED (or INFINITE, none; Slurm's TimeLimit=UNLIMITED) takes the limit\n"
    "away. Raising or taking away the limit of a job that runs is for an admin, as in Slurm (the\n"
    "scheduler planned by it); its owner may lower it, and change a waiting job's as they like.\n"
    "\n"
    "--after=SPEC replaces the jobs it waits for (rnx job run --after's syntax; --dependency\n"
    "reads Slurm's, afterok:ID[:ID...]; Slurm's scontrol update Dependency=). A scheduled or\n"
    "queued job waits PENDING again until they hold; one that can never hold cancels it (end\n"
    "reason dependency), as at submission. --after=none (or --dependency=) removes them: it goes\n"
    "on as if it had none. Refused for a workflow's job, and when it would wait for itself\n"
    "through others (a cycle). Whether it is --singleton does not change.\n"
    "--schedule=WHEN moves its start time (rnx job run --schedule's syntax: 30min, or an RFC 3339\n"
    "time); --schedule=now removes it (Slurm's StartTime=now).\n"
    "\n"
    "An array (ID names the array) is updated whole: the tasks made from now on get the change,\n"
    "and so do its tasks made and not ended, as each job would (a running task: --max-runtime).\n"
    "Its --after and --schedule are refused: they decide when its tasks are made.\n"
    "--throttle=N changes its %N, how many of its tasks run at once (0: no limit; Slurm's\n"
    "ArrayTaskThrottle).\n";

/* hold, release, suspend, resume, requeue: one request per id, one line each. */
static int job_control(rnx_ctx *ctx, int argc, char **argv, const char *which)
{
    static const struct option requeue_opts[] = {{"hold", no_argument, NULL, 'H'}, OPT_JSON, OPT_HELP, {0}};
    static const struct option opts[] = {OPT_JSON, OPT_HELP, {0}};
    bool requeue = !strcmp(which, "requeue"), hold = false;
    const char *help = !strcmp(which, "hold")      ? hold_help
                       : !strcmp(which, "release") ? release_help
                       : !strcmp(which, "suspend") ? suspend_help
                       : !strcmp(which, "resume")  ? resume_help
                                                   : requeue_help;
    char cmd[32];
    int c, rc = RNX_OK;
    snprintf(cmd, sizeof cmd, "rnx job %s", which);
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", requeue ? requeue_opts : opts, cmd)) != -1) {
        switch (c) {
        case 'h': fputs(help, stdout); return RNX_OK;
        case 'j': ctx->json = true; break;
        case 'H': hold = true; break;
        default: return RNX_USAGE;
        }
    }
    if (optind >= argc)
        return rnx_usage("job %s: missing ID; usage: rnx job %s%s ID...", which, which, requeue ? " [--hold]" : "");
    char suffix[32];
    snprintf(suffix, sizeof suffix, "/%s%s", which, hold ? "?hold=1" : "");
    static const char *const done[][2] = {{"hold", "held"}, {"release", "released"}, {"suspend", "suspended"},
                                          {"resume", "resumed"}, {"requeue", "requeueing"}};
    const char *verb = which;
    for (size_t i = 0; i < ARRAY_LEN(done); i++)
        if (!strcmp(done[i][0], which))
            verb = done[i][1];
    for (int i = optind; i < argc; i++) {
        json_t *answer = NULL;
        if (!*argv[i]) {
            rc = rnx_usage("job %s: an ID is empty", which);
            continue;
        }
        if (job_request(ctx, "POST", argv[i], suffix, &answer) != RNX_OK) {
            rc = RNX_FAIL;
            continue;
        }
        json_t *arr = json_object_get(answer, "array");
        int64_t acted;
        if (ctx->json)
            print_json(answer);
        else if (json_is_object(arr) && jstr(answer, "named"))
            print_tasks_acted(answer, verb, argv[i], false); /* tasks of one: which went how */
        else if (json_is_object(arr) && jint(answer, "acted", &acted)) {
            /* an array */
            char counts[600];
            print_array_counts(json_object_get(arr, "array"), counts, sizeof counts);
            print_textf(stdout, "%s array %s (%s)\n", verb, jstr(arr, "id") ? jstr(arr, "id") : argv[i], counts);
        } else {
            /* an ended job requeued is back in the queue at once: no stop */
            const char *st = jstr(answer, "status") ? jstr(answer, "status") : "?";
            bool stops = requeue && !strcmp(st, "STOPPING");
            print_textf(stdout, "%s %s (%s%s)%s\n", requeue && !stops ? "requeued" : verb, answer_id(answer, argv[i]),
                        st, json_is_true(json_object_get(answer, "freezing"))
                            ? "; still freezing: a process of it cannot stop yet" : "",
                        stops ? (hold ? ": stopping, then HELD" : ": stopping, then back in the queue") : "");
        }
        json_decref(answer);
    }
    return rc;
}

static int job_hold(rnx_ctx *ctx, int argc, char **argv) { return job_control(ctx, argc, argv, "hold"); }
static int job_release(rnx_ctx *ctx, int argc, char **argv) { return job_control(ctx, argc, argv, "release"); }
static int job_suspend(rnx_ctx *ctx, int argc, char **argv) { return job_control(ctx, argc, argv, "suspend"); }
static int job_resume(rnx_ctx *ctx, int argc, char **argv) { return job_control(ctx, argc, argv, "resume"); }
static int job_requeue(rnx_ctx *ctx, int argc, char **argv) { return job_control(ctx, argc, argv, "requeue"); }

/* rnx job update ID --flag=value...: each flag is the request table's (common/jobreq.c), read
 * as rnx job run reads it, sent as the API's field. */
static int job_update(rnx_ctx *ctx, int argc, char **argv)
{
    static const enum jobreq_id fields[] = {JR_PRIORITY, JR_MAX_RUNTIME_S, JR_GPU_COUNT, JR_GPU_MEMORY_MB,
                                            JR_MAX_CPU, JR_MAX_MEMORY_MB, JR_PREEMPTIBLE, JR_AFTER,
                                            JR_SCHEDULE_AT};
    struct option opts[ARRAY_LEN(fields) + 5];
    for (size_t i = 0; i < ARRAY_LEN(fields); i++)
        opts[i] = (struct option){jobreq_fields[fields[i]].flag + 2, required_argument, NULL, 1000 + (int)i};
    opts[ARRAY_LEN(fields)] = (struct option){"throttle", required_argument, NULL, 'T'};
    opts[ARRAY_LEN(fields) + 1] = (struct option){"dependency", required_argument, NULL, 'D'};
    opts[ARRAY_LEN(fields) + 2] = (struct option)OPT_JSON;
    opts[ARRAY_LEN(fields) + 3] = (struct option)OPT_HELP;
    opts[ARRAY_LEN(fields) + 4] = (struct option){0};
    job_req r = {0};
    json_t *body = json_object();
    const char *id = NULL;
    bool after_none = false;
    const char *bare_runtime = NULL; /* --max-runtime given as a bare number (seconds) */
    int c, rc;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, "rnx job update")) != -1) {
        if (c == 'h') {
            fputs(update_help, stdout);
            rc = RNX_OK;
            goto out;
        }
        if (c == 'j') {
            ctx->json = true;
            continue;
        }
        if (c == 'T') {
            char *end;
            errno = 0;
            long long n = strtoll(optarg, &end, 10);
            jerr te = {0};
            if (arrayspec_throttle_check(n, *optarg && !*end && !errno, "--throttle", optarg, &te) < 0) {
                rc = rnx_usage("%s", te.msg);
                goto out;
            }
            json_object_set_new(body, "array_throttle", json_integer(n));
            continue;
        }
        if (c != 'D' && (c < 1000 || c >= 1000 + (int)ARRAY_LEN(fields))) {
            rc = RNX_USAGE;
            goto out;
        }
        const jobreq_field *f = &jobreq_fields[c == 'D' ? JR_AFTER : fields[c - 1000]];
        const char *flag = c == 'D' ? "--dependency" : f->flag;
        /* none (Slurm's Dependency= empty) takes the dependencies out, now the start time */
        if ((f == &jobreq_fields[JR_AFTER]) && (!strcmp(optarg, "none") || (c == 'D' && !*optarg))) {
            after_none = true;
            continue;
        }
        if (f == &jobreq_fields[JR_SCHEDULE_AT] && !strcmp(optarg, "now")) {
            json_object_set_new(body, f->key, json_null());
            continue;
        }
        /* Slurm's TimeLimit=UNLIMITED (INFINITE), or none: the limit taken away */
        if (f == &jobreq_fields[JR_MAX_RUNTIME_S] &&
            (!strcasecmp(optarg, "UNLIMITED") || !strcasecmp(optarg, "INFINITE") || !strcmp(optarg, "none"))) {
            json_object_set_new(body, f->key, json_null());
            continue;
        }
        jerr e = {0};
        if (utf8_or_usage(flag, optarg) != 0) {
            rc = RNX_USAGE;
            goto out;
        }
        if (jobreq_set_text(&r, f, optarg, time(NULL), &e) < 0) {
            char msg[sizeof e.msg + 64];
            jobreq_reword(&e, flag, msg, sizeof msg);
            rc = rnx_usage("%s%s", msg, f == &jobreq_fields[JR_MAX_RUNTIME_S] ? "; or UNLIMITED to take the limit "
                                                                                "away (Slurm's TimeLimit=UNLIMITED)" : "");
            goto out;
        }
        if ((f == &jobreq_fields[JR_AFTER])) /* (sent once they are all read: --after is repeatable) */
            continue;
        if (f == &jobreq_fields[JR_MAX_RUNTIME_S])
            bare_runtime = strspn(optarg, "0123456789") == strlen(optarg) ? optarg : NULL;
        if (f->kind == JK_TEXT) {
            json_object_set_new(body, f->key, json_string(r.schedule_at));
            continue;
        }
        const char *at = (const char *)&r + f->off;
        json_object_set_new(body, f->key, f->kind == JK_BOOL ? json_boolean(*(const bool *)at)
                                                             : json_integer(*(const int64_t *)at));
    }
    if (r.singleton) {
        rc = rnx_usage("--after: singleton is not changed by an update (the job keeps whether it runs one at a "
                       "time by name); give the jobs it waits for, or none");
        goto out;
    }
    if (after_none && r.nafter) {
        rc = rnx_usage("--after: none removes the jobs it waits for; do not also name some");
        goto out;
    }
    if (after_none || r.nafter) {
        json_t *all = jobreq_to_json(&r, 0);
        json_object_set_new(body, "after", after_none ? json_array() : json_incref(json_object_get(all, "after")));
        json_decref(all);
        if (r.nafter) /* all of them, or any one of them ('?'): the new list says which */
            json_object_set_new(body, jobreq_fields[JR_AFTER_ANY].key, json_boolean(r.after_any));
    }
    if ((rc = one_id(argc, argv, "job update", "rnx job update ID --priority=N|--max-runtime=DURATION|...", &id)) != 0)
        goto out;
    if (!json_object_size(body)) {
        rc = rnx_usage("job update: nothing to change; give --priority, --max-runtime, --gpu, --gpu-memory, "
                       "--max-cpu, --max-memory, --preemptible, --after, --schedule or (an array) --throttle");
        goto out;
    }
    rnx_client *cl = open_client(ctx);
    if (!cl) {
        rc = RNX_FAIL;
        goto out;
    }
    char *path = job_path(cl, id, "/update");
    json_t *answer = NULL;
    jerr e = {0};
    if (client_request(cl, "POST", path, body, &answer, &e) < 0)
        rc = server_error(&e, true);
    else if (ctx->json)
        print_json(answer);
    else if (json_is_object(json_object_get(answer, "array")) && json_is_integer(json_object_get(answer, "acted"))) {
        /* an array's answer ({"array", "acted"}); a task's is its job, whose "array" names its array */
        json_t *arr = json_object_get(answer, "array");
        int64_t acted = 0;
        jint(answer, "acted", &acted);
        const char *ref = jstr(json_object_get(arr, "array"), "ref");
        if (acted > 1)
            print_textf(stdout, "updated array %s (%s), and %lld of its tasks made so far\n",
                        jstr(arr, "id") ? jstr(arr, "id") : id, ref ? ref : "?", (long long)(acted - 1));
        else
            print_textf(stdout, "updated array %s (%s)\n", jstr(arr, "id") ? jstr(arr, "id") : id, ref ? ref : "?");
    } else
        print_textf(stdout, "updated %s (%s)\n", answer_id(answer, id), jstr(answer, "status") ? jstr(answer, "status") : "?");
    /* scontrol update TimeLimit=90 (and rnx job batch --time=90) is 90 minutes: said, as a limit
     * already past stops a running job at once */
    if (rc == RNX_OK && bare_runtime)
        fprintf(stderr, "rnx: note: --max-runtime=%s means %s s: a bare number is seconds here (Slurm's TimeLimit=%s "
                        "is minutes: --max-runtime=%smin)\n", bare_runtime, bare_runtime, bare_runtime, bare_runtime);
    json_decref(answer);
    free(path);
    client_free(cl);
out:
    jobreq_free(&r);
    json_decref(body);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------------ */

static const struct {
    const char *name;
    int (*fn)(rnx_ctx *, int, char **);
} job_cmds[] = {
    {"run", job_run},       {"batch", job_batch},   {"list", job_list},     {"status", job_status}, {"log", job_log},
    {"attach", job_attach},
    {"stop", job_stop},     {"kill", job_kill},     {"cancel", job_cancel}, {"delete", job_delete}, {"delete-all", job_delete_all},
    {"metrics", cmd_job_metrics}, /* cmd_metrics.c */
    {"cp", cmd_job_cp},           /* cmd_cp.c */
    {"hold", job_hold},     {"release", job_release}, {"suspend", job_suspend}, {"resume", job_resume},
    {"requeue", job_requeue}, {"update", job_update},
    {"exec", cmd_job_exec},       /* cmd_exec.c */
    {"wait", cmd_job_wait},       /* cmd_wait.c */
};

int cmd_job(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {OPT_HELP, {0}};
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "+h", opts, "rnx job")) != -1) {
        if (c != 'h')
            return RNX_USAGE;
        fputs(job_help, stdout);
        return RNX_OK;
    }
    if (optind >= argc)
        return rnx_usage("job: missing command (run, batch, list, status, log, attach, exec, stop, kill, cancel, hold, release, "
                         "update, suspend, resume, requeue, wait, delete, delete-all, metrics, cp); "
                         "see 'rnx job --help'");
    const char *name = argv[optind];
    for (size_t i = 0; i < ARRAY_LEN(job_cmds); i++)
        if (strcmp(name, job_cmds[i].name) == 0)
            return job_cmds[i].fn(ctx, argc - optind, argv + optind);
    if (strcmp(name, "help") == 0) {
        fputs(job_help, stdout);
        return RNX_OK;
    }
    const char *names[ARRAY_LEN(job_cmds) + 1];
    for (size_t i = 0; i < ARRAY_LEN(job_cmds); i++)
        names[i] = job_cmds[i].name;
    names[ARRAY_LEN(job_cmds)] = "help";
    return rnx_unknown_command(name, "rnx job", names, ARRAY_LEN(names));
}
