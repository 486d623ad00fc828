/* Slurm's batch scripts, read as sbatch reads them (sbatch.h). The options are one table: what
 * each sets, and for those with no meaning on one joblet machine, what is said instead. */
#include "sbatch.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jobreq.h"
#include "jsonx.h"
#include "parse.h"
#include "util.h"

void sbatch_list_add(sbatch_list *l, char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = s;
}

void sbatch_list_free(sbatch_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (sbatch_list){0};
}

void sbatch_free(sbatch_plan *p)
{
    for (int i = 0; i < SB_NSLOTS; i++) {
        free(p->slot[i]);
        free(p->slot_where[i]);
    }
    sbatch_list_free(&p->export_vars);
    sbatch_list_free(&p->rnx);
    sbatch_list_free(&p->rnx_where);
    sbatch_list_free(&p->notes);
    free(p->interp);
    free(p->interp_arg);
    free(p->wrap_cmd);
    *p = (sbatch_plan){0};
}

/* ---- values ---------------------------------------------------------------------------- */

/* Slurm's memory: a number with K, M (the default), G or T. Megabytes, rounded up; -1 when
 * malformed. */
long long sbatch_mb(const char *s)
{
    char num[24];
    size_t len = strspn(s, "0123456789");
    if (!len || len >= sizeof num)
        return -1;
    snprintf(num, sizeof num, "%.*s", (int)len, s);
    long long v;
    if (!parse_whole(num, 0, 1LL << 30, &v)) /* (a billion of any unit: past any machine, and no overflow) */
        return -1;
    const char *u = s + len;
    long long kb;
    if (!*u || !strcasecmp(u, "M") || !strcasecmp(u, "MB"))
        kb = v * 1024;
    else if (!strcasecmp(u, "K") || !strcasecmp(u, "KB"))
        kb = v;
    else if (!strcasecmp(u, "G") || !strcasecmp(u, "GB"))
        kb = v * 1024 * 1024;
    else if (!strcasecmp(u, "T") || !strcasecmp(u, "TB"))
        kb = v * 1024 * 1024 * 1024;
    else
        return -1;
    return (kb + 1023) / 1024;
}

/* "TYPE:N", "N", "TYPE" (one) of --gpus and a gres "gpu:TYPE:N": the count, the type. */
bool sbatch_gpus(const char *s, long long *n, char *type, size_t tlen)
{
    const char *colon = strrchr(s, ':');
    type[0] = 0;
    if (*s && strspn(s, "0123456789") == strlen(s))
        return parse_whole(s, 1, 1024, n);
    if (colon) {
        if (!parse_whole(colon + 1, 1, 1024, n) || colon == s || (size_t)(colon - s) >= tlen)
            return false;
        snprintf(type, tlen, "%.*s", (int)(colon - s), s);
        return !strchr(type, ':');
    }
    if (!*s || strlen(s) >= tlen)
        return false;
    *n = 1;
    snprintf(type, tlen, "%s", s);
    return true;
}

/* Slurm's --begin: "now", "now+N[UNIT]", "HH:MM[:SS]", "YYYY-MM-DD[THH:MM[:SS]]", "midnight",
 * "noon", "fika", "teatime", "today", "tomorrow", in the local time zone. rnx's --schedule:
 * "Ns", or the time in UTC; "" for now (or a time past). NULL when malformed. */
static char *slurm_begin(const char *s, time_t now)
{
    if (!strcasecmp(s, "now") || !strcasecmp(s, "today"))
        return xstrdup("");
    if (!strncasecmp(s, "now+", 4)) {
        static const struct {
            const char *unit;
            long long secs;
        } units[] = {{"", 1},       {"s", 1},       {"sec", 1},     {"secs", 1},     {"second", 1},
                     {"seconds", 1}, {"min", 60},   {"mins", 60},   {"minute", 60},  {"minutes", 60},
                     {"h", 3600},   {"hour", 3600}, {"hours", 3600}, {"d", 86400},   {"day", 86400},
                     {"days", 86400}, {"w", 604800}, {"week", 604800}, {"weeks", 604800}};
        const char *p = s + 4;
        size_t len = strspn(p, "0123456789");
        char num[16];
        long long v;
        if (!len || len >= sizeof num)
            return NULL;
        snprintf(num, sizeof num, "%.*s", (int)len, p);
        if (!parse_whole(num, 0, 100000000, &v))
            return NULL;
        for (size_t i = 0; i < ARRAY_LEN(units); i++)
            if (!strcasecmp(p + len, units[i].unit))
                return v ? xprintf("%llds", v * units[i].secs) : xstrdup("");
        return NULL;
    }
    struct tm tm;
    localtime_r(&now, &tm);
    tm.tm_isdst = -1;
    int h = -1, mi = 0, sec = 0, y, mo, d, used = 0;
    bool next_day_if_past = true;
    if (!strcasecmp(s, "midnight") || !strcasecmp(s, "tomorrow"))
        h = 0;
    else if (!strcasecmp(s, "noon"))
        h = 12;
    else if (!strcasecmp(s, "fika"))
        h = 15;
    else if (!strcasecmp(s, "teatime"))
        h = 16;
    else if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &used) == 3 && used == 10) {
        tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
        h = 0;
        next_day_if_past = false;
        const char *t = s + used;
        if (*t) {
            int u2 = 0;
            if (*t != 'T' || (sscanf(t + 1, "%2d:%2d%n", &h, &mi, &u2) != 2))
                return NULL;
            t += 1 + u2;
            if (*t == ':' && (sscanf(t + 1, "%2d%n", &sec, &u2) != 1 || (t += 1 + u2, false)))
                return NULL;
            if (*t)
                return NULL;
        }
        if (mo < 1 || mo > 12 || d < 1 || d > 31)
            return NULL;
    } else {
        int u2 = 0;
        if (sscanf(s, "%2d:%2d%n", &h, &mi, &u2) != 2)
            return NULL;
        const char *t = s + u2;
        if (*t == ':' && (sscanf(t + 1, "%2d%n", &sec, &u2) != 1 || (t += 1 + u2, false)))
            return NULL;
        if (*t)
            return NULL;
    }
    if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59)
        return NULL;
    tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = sec;
    time_t at = mktime(&tm);
    if (at == (time_t)-1)
        return NULL;
    if (at <= now && next_day_if_past) {
        tm.tm_mday++;
        tm.tm_isdst = -1;
        at = mktime(&tm);
    }
    if (at <= now)
        return xstrdup("");
    struct tm u;
    gmtime_r(&at, &u);
    char out[32];
    strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &u);
    return xstrdup(out);
}

/* ---- the options ----------------------------------------------------------------------- */

enum sb_kind {
    K_SLOT,    /* sets a slot (conv) */
    K_ONE,     /* a count that joblet honours only as 1 (nodes, tasks): 1 says nothing */
    K_NOTE,    /* no meaning here: the note is shown */
    K_REFUSE,  /* joblet cannot do what it asks: refused with the text */
    K_QUIET,   /* what rnx does anyway (--parsable: rnx prints the id alone) */
    K_WRAP,    /* --wrap=CMD, the command line's only */
    K_RNX,     /* one of rnx job run's own switches (text), the same thing */
};

typedef struct sb_opt {
    const char *name;
    char letter;
    int arg;   /* 0 none, 1 required, 2 optional ("--name=value" only) */
    enum sb_kind kind;
    int slot;
    const char *text; /* K_NOTE, K_REFUSE: what is said */
} sb_opt;

#define NO_MEANING "has no meaning on one joblet machine; ignored"
#define OUTPUT_KEPT "joblet keeps the job's output: rnx job log ID (--stdout, --stderr); ignored"
#define ONE_MACHINE "joblet runs a job as one task on one machine; several need Slurm itself (docs/slurm.md)"

static const sb_opt sb_opts[] = {
    {"array", 'a', 1, K_SLOT, SB_ARRAY, NULL},
    {"job-name", 'J', 1, K_SLOT, SB_NAME, NULL},
    {"time", 't', 1, K_SLOT, SB_TIME, NULL},
    {"mem", 0, 1, K_SLOT, SB_MEM, NULL},
    {"mem-per-cpu", 0, 1, K_SLOT, SB_MEM_PER_CPU, NULL},
    {"mem-per-gpu", 0, 1, K_SLOT, SB_MEM_PER_GPU, NULL},
    {"cpus-per-task", 'c', 1, K_SLOT, SB_CPUS, NULL},
    {"gpus", 'G', 1, K_SLOT, SB_GPUS, NULL},
    {"gpus-per-node", 0, 1, K_SLOT, SB_GPUS, NULL},
    {"gpus-per-task", 0, 1, K_SLOT, SB_GPUS, NULL},
    {"gres", 0, 1, K_SLOT, SB_GPUS, NULL},
    {"dependency", 'd', 1, K_SLOT, SB_DEPENDENCY, NULL},
    {"begin", 'b', 1, K_SLOT, SB_BEGIN, NULL},
    {"signal", 0, 1, K_SLOT, SB_SIGNAL, NULL},
    {"priority", 0, 1, K_SLOT, SB_PRIORITY, NULL},
    {"nice", 0, 2, K_SLOT, SB_PRIORITY, NULL},
    {"chdir", 'D', 1, K_SLOT, SB_WORKDIR, NULL},
    {"export", 0, 1, K_SLOT, SB_EXPORT, NULL},
    {"nodes", 'N', 1, K_ONE, 0, ONE_MACHINE},
    {"ntasks", 'n', 1, K_ONE, 0, ONE_MACHINE},
    {"ntasks-per-node", 0, 1, K_ONE, 0, ONE_MACHINE},
    {"wrap", 0, 1, K_WRAP, 0, NULL},
    {"parsable", 0, 0, K_QUIET, 0, NULL},
    {"quiet", 'Q', 0, K_QUIET, 0, NULL},
    {"kill-on-invalid-dep", 0, 1, K_QUIET, 0, NULL}, /* yes is joblet's way; no is noted below */
    {"hold", 'H', 0, K_RNX, 0, "--hold"},
    {"wait", 'W', 0, K_RNX, 0, "--wait"},
    {"test-only", 0, 0, K_REFUSE, 0, "joblet has no test-only submission"},
    {"uid", 0, 1, K_REFUSE, 0, "a job runs as the user who submits it"},
    {"gid", 0, 1, K_REFUSE, 0, "a job runs as the user who submits it"},
    {"export-file", 0, 1, K_REFUSE, 0, "give the variables with --export=NAME=VALUE,..."},
    {"output", 'o', 1, K_NOTE, 0, OUTPUT_KEPT},
    {"error", 'e', 1, K_NOTE, 0, OUTPUT_KEPT},
    {"input", 'i', 1, K_NOTE, 0, "a batch job's input is empty; ignored"},
    {"open-mode", 0, 1, K_NOTE, 0, OUTPUT_KEPT},
    {"mail-type", 0, 1, K_NOTE, 0, "joblet sends no mail (rnx job wait ID waits for the end); ignored"},
    {"mail-user", 0, 1, K_NOTE, 0, "joblet sends no mail (rnx job wait ID waits for the end); ignored"},
    {"requeue", 0, 0, K_NOTE, 0, "a job goes back to the queue by rnx job requeue ID, or when preempted "
                                 "(--preemptible); ignored"},
    {"no-requeue", 0, 0, K_NOTE, 0, "joblet requeues a job only when asked (rnx job requeue) or preemptible; ignored"},
    {"partition", 'p', 1, K_NOTE, 0, NO_MEANING},
    {"account", 'A', 1, K_NOTE, 0, NO_MEANING},
    {"qos", 'q', 1, K_NOTE, 0, NO_MEANING},
    {"reservation", 0, 1, K_NOTE, 0, NO_MEANING},
    {"constraint", 'C', 1, K_NOTE, 0, "has no meaning on one joblet machine (a GPU model: --gpus=TYPE:N); ignored"},
    {"nodelist", 'w', 1, K_NOTE, 0, NO_MEANING},
    {"exclude", 'x', 1, K_NOTE, 0, NO_MEANING},
    {"clusters", 'M', 1, K_NOTE, 0, NO_MEANING},
    {"comment", 0, 1, K_NOTE, 0, NO_MEANING},
    {"wckey", 0, 1, K_NOTE, 0, NO_MEANING},
    {"licenses", 'L', 1, K_NOTE, 0, NO_MEANING},
    {"switches", 0, 1, K_NOTE, 0, NO_MEANING},
    {"time-min", 0, 1, K_NOTE, 0, NO_MEANING},
    {"tmp", 0, 1, K_NOTE, 0, "a job's /tmp is its own (jobs.tmp_size_mb); ignored"},
    {"exclusive", 0, 2, K_NOTE, 0, "joblet never shares a job's GPUs unless --gpu-share; ignored"},
    {"oversubscribe", 's', 0, K_NOTE, 0, NO_MEANING},
    {"overcommit", 'O', 0, K_NOTE, 0, NO_MEANING},
    {"contiguous", 0, 0, K_NOTE, 0, NO_MEANING},
    {"no-kill", 'k', 2, K_NOTE, 0, NO_MEANING},
    {"hint", 0, 1, K_NOTE, 0, NO_MEANING},
    {"distribution", 'm', 1, K_NOTE, 0, NO_MEANING},
    {"mem-bind", 0, 1, K_NOTE, 0, NO_MEANING},
    {"cpu-freq", 0, 1, K_NOTE, 0, NO_MEANING},
    {"gpu-bind", 0, 1, K_NOTE, 0, "joblet gives a job the best-connected GPUs itself; ignored"},
    {"gpu-freq", 0, 1, K_NOTE, 0, NO_MEANING},
    {"cpus-per-gpu", 0, 1, K_NOTE, 0, "give the job's CPUs with -c/--cpus-per-task; ignored"},
    {"cores-per-socket", 0, 1, K_NOTE, 0, NO_MEANING},
    {"sockets-per-node", 0, 1, K_NOTE, 0, NO_MEANING},
    {"threads-per-core", 0, 1, K_NOTE, 0, NO_MEANING},
    {"ntasks-per-core", 0, 1, K_NOTE, 0, NO_MEANING},
    {"ntasks-per-socket", 0, 1, K_NOTE, 0, NO_MEANING},
    {"acctg-freq", 0, 1, K_NOTE, 0, "joblet samples every job (rnx job metrics ID); ignored"},
    {"profile", 0, 1, K_NOTE, 0, "joblet samples every job (rnx job metrics ID); ignored"},
    {"propagate", 0, 2, K_NOTE, 0, NO_MEANING},
    {"get-user-env", 0, 2, K_NOTE, 0, NO_MEANING},
    {"verbose", 'v', 0, K_QUIET, 0, NULL},
};

/* rnx job run's own flags a batch takes too (besides the request's fields, jobreq.h) */
static const struct {
    const char *name;
    char letter;
    bool arg;
} rnx_own[] = {{"upload", 0, true}, {"env", 0, true}, {"secret-env", 0, true}, {"follow", 'f', false}};

/* A long option of `rnx job run` that sbatch does not have: whether it takes a value. */
static bool rnx_flag(const char *name, bool *arg)
{
    for (size_t i = 0; i < ARRAY_LEN(rnx_own); i++)
        if (!strcmp(rnx_own[i].name, name)) {
            *arg = rnx_own[i].arg;
            return true;
        }
    for (int i = 0; i < JR_N; i++) {
        const jobreq_field *f = &jobreq_fields[i];
        if (!f->flag || f->daemon_only || strncmp(f->flag, "--", 2) || strchr(f->flag, '=') ||
            strcmp(f->flag + 2, name))
            continue;
        *arg = f->kind != JK_BOOL || i == JR_CROSS_NUMA;
        return true;
    }
    return false;
}

static void set_slot(sbatch_plan *p, int slot, char *v)
{
    free(p->slot[slot]);
    p->slot[slot] = v;
}

/* Where a slot was set (takes w; NULL with the slot taken out). */
static void set_where(sbatch_plan *p, int slot, char *w)
{
    free(p->slot_where[slot]);
    p->slot_where[slot] = w;
}

/* One of rnx job run's flags, as given, and where. */
static void add_rnx(sbatch_plan *p, char *flag, const char *where)
{
    sbatch_list_add(&p->rnx, flag);
    sbatch_list_add(&p->rnx_where, xstrdup(where));
}

/* One option's value into its slot: 0, 1 when it sets none (a --gres of no GPU: noted), or -1
 * with e saying what is accepted. */
static int take_slot(sbatch_plan *p, const sb_opt *o, const char *v, const char *where, time_t now, jerr *e)
{
    long long n;
    char type[128];
    switch (o->slot) {
    case SB_ARRAY: case SB_NAME: case SB_DEPENDENCY: case SB_WORKDIR:
        set_slot(p, o->slot, xstrdup(v));
        return 0;
    case SB_TIME: {
        long long s = parse_slurm_time(v);
        if (s == -2)
            return jerr_input(e, "time", "%s: '%.64s': a time limit is MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, "
                              "DAYS-HOURS, DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS (UNLIMITED for none)",
                              where, v);
        set_slot(p, SB_TIME, s < 0 ? xstrdup("") : xprintf("%llds", s));
        return 0;
    }
    case SB_MEM: case SB_MEM_PER_CPU: case SB_MEM_PER_GPU: {
        /* one of the three, as sbatch has them (mutually exclusive) */
        static const char *const mem_names[] = {"--mem", "--mem-per-cpu", "--mem-per-gpu"};
        for (int k = SB_MEM; k <= SB_MEM_PER_GPU; k++)
            if (k != o->slot && p->slot[k])
                return jerr_input(e, o->name, "%s: not with %s, given already: give one of --mem, --mem-per-cpu "
                                  "and --mem-per-gpu", where, mem_names[k - SB_MEM]);
        long long mb = sbatch_mb(v);
        if (mb < 0)
            return jerr_input(e, o->name, "%s: '%.64s': memory is a number of megabytes, or with K, M, G or T "
                              "(8G, 500M)", where, v);
        set_slot(p, o->slot, mb ? xprintf("%lld", mb) : xstrdup(""));
        return 0;
    }
    case SB_CPUS:
        if (!parse_whole(v, 1, 1024, &n))
            return jerr_input(e, o->name, "%s: '%.64s': must be a whole number of CPUs from 1 to 1024", where, v);
        set_slot(p, SB_CPUS, xprintf("%lld", n));
        return 0;
    case SB_GPUS:
        if (!strcmp(o->name, "gres")) {
            /* "gpu[:TYPE][:N]" among other resources, comma-separated */
            char *copy = xstrdup(v), *save = NULL;
            bool gpu = false;
            for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                if (strcmp(item, "gpu") && strncmp(item, "gpu:", 4)) {
                    sbatch_list_add(&p->notes, xprintf("%s: '%.64s': joblet gives only GPUs as a resource; "
                                                        "ignored", where, item));
                    continue;
                }
                if (!strcmp(item, "gpu"))
                    n = 1, type[0] = 0;
                else if (!sbatch_gpus(item + 4, &n, type, sizeof type)) {
                    jerr_input(e, "gres", "%s: '%.64s': a GPU is gpu, gpu:N or gpu:TYPE:N (N from 1 to 1024)", where,
                               item);
                    free(copy);
                    return -1;
                }
                gpu = true;
            }
            free(copy);
            if (!gpu)
                return 1;
        } else if (!sbatch_gpus(v, &n, type, sizeof type)) {
            return jerr_input(e, o->name, "%s: '%.64s': GPUs are N or TYPE:N (N from 1 to 1024)", where, v);
        }
        set_slot(p, SB_GPUS, xprintf("%lld", n));
        set_slot(p, SB_GPU_TYPE, type[0] ? xstrdup(type) : NULL);
        return 0;
    case SB_BEGIN: {
        char *s = slurm_begin(v, now);
        if (!s)
            return jerr_input(e, "begin", "%s: '%.64s': a start time is now+N[seconds|minutes|hours|days|weeks], "
                              "HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]] (local time), midnight, noon, fika, teatime, "
                              "today or tomorrow", where, v);
        set_slot(p, SB_BEGIN, s);
        return 0;
    }
    case SB_SIGNAL: {
        /* "R:" and "B:" say whom Slurm signals: in a joblet job the batch shell is the command */
        const char *colon = strchr(v, ':');
        if (colon && strspn(v, "RB") == (size_t)(colon - v))
            v = colon + 1;
        set_slot(p, SB_SIGNAL, xstrdup(v));
        return 0;
    }
    case SB_PRIORITY:
        if (!strcmp(o->name, "nice")) {
            /* a positive nice lowers the priority: joblet's priority is its opposite */
            long long adj = 100;
            bool neg = v && *v == '-';
            if (v && !parse_whole(v + neg, 0, 2147483645, &adj))
                return jerr_input(e, "nice", "%s: '%.64s': must be a whole number (a positive one lowers the "
                                  "job's priority)", where, v);
            adj = neg ? -adj : adj;
            set_slot(p, SB_PRIORITY, xprintf("%lld", adj > 1000 ? -1000 : adj < -1000 ? 1000 : -adj));
            return 0;
        }
        if (!strcasecmp(v, "TOP"))
            return jerr_input(e, "priority", "%s: TOP: give a number from -1000 to 1000", where);
        set_slot(p, SB_PRIORITY, xstrdup(v));
        return 0;
    case SB_EXPORT: {
        sbatch_list_free(&p->export_vars);
        set_slot(p, SB_EXPORT, xstrdup(v));
        char *copy = xstrdup(v), *save = NULL;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
            if (!strcmp(item, "ALL")) {
                sbatch_list_add(&p->notes, xprintf("%s: ALL: a joblet job does not get the environment it was "
                                                    "submitted from; name the variables (--export=NAME,...)", where));
                continue;
            }
            if (!strcmp(item, "NONE") || !strcmp(item, "NIL"))
                continue;
            size_t klen = strcspn(item, "=");
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)(klen < sizeof key ? klen : sizeof key - 1), item);
            if (klen >= sizeof key || !env_key_valid(key)) {
                jerr_input(e, "export", "%s: '%.64s': each is NAME or NAME=VALUE, NAME of letters, digits and '_', "
                           "not starting with a digit", where, item);
                free(copy);
                return -1;
            }
            sbatch_list_add(&p->export_vars, xstrdup(item));
        }
        free(copy);
        return 0;
    }
    }
    return jerr_input(e, o->name, "%s: not read", where);
}

static int take(sbatch_plan *p, const sb_opt *o, const char *v, const char *where, time_t now, jerr *e)
{
    long long n;
    switch (o->kind) {
    case K_SLOT: {
        int r = take_slot(p, o, v, where, now, e);
        if (r < 0)
            return -1;
        if (r == 0) {
            set_where(p, o->slot, xstrdup(where));
            if (o->slot == SB_GPUS) /* its type goes with the count */
                set_where(p, SB_GPU_TYPE, p->slot[SB_GPU_TYPE] ? xstrdup(where) : NULL);
        }
        return 0;
    }
    case K_ONE:
        /* "1" or Slurm's range "1-1" */
        if (parse_whole(v, 1, 1, &n) || !strcmp(v, "1-1"))
            return 0;
        return jerr_input(e, o->name, "%s: %.64s: %s", where, v, o->text);
    case K_NOTE:
        sbatch_list_add(&p->notes, xprintf("%s: %s", where, o->text));
        return 0;
    case K_REFUSE:
        return jerr_input(e, o->name, "%s: %s", where, o->text);
    case K_QUIET:
        if (!strcmp(o->name, "kill-on-invalid-dep") && v && !strcasecmp(v, "no"))
            sbatch_list_add(&p->notes, xprintf("%s: joblet cancels a job whose dependency can never be met (end "
                                               "reason dependency)", where));
        return 0;
    case K_RNX:
        add_rnx(p, xstrdup(o->text), where);
        return 0;
    case K_WRAP:
        free(p->wrap_cmd);
        p->wrap_cmd = xstrdup(v);
        p->wrap = true;
        return 0;
    }
    return 0;
}

/* The option at words[0] (words[1] its value when separate): how many words it took, or -1.
 * in_script: "#SBATCH" (line given) rather than the command line. */
static int option(sbatch_plan *p, char *const *words, int n, int line, time_t now, jerr *e)
{
    const char *w = words[0];
    const sb_opt *o = NULL;
    const char *value = NULL;
    char name[64];
    bool rnx = false, rnx_arg = false;
    char at[48] = "";
    if (line)
        snprintf(at, sizeof at, "line %d: #SBATCH ", line);
    if (w[1] == '-') {
        size_t len = strcspn(w + 2, "=");
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), w + 2);
        for (size_t i = 0; i < ARRAY_LEN(sb_opts) && !o; i++)
            if (!strcmp(sb_opts[i].name, name) && len < sizeof name)
                o = &sb_opts[i];
        if (!o && !(len < sizeof name && (rnx = rnx_flag(name, &rnx_arg)))) {
            if (line)
                return jerr_input(e, name, "line %d: #SBATCH --%s: not an option of sbatch's that joblet reads, nor "
                                  "one of rnx job run's (rnx job batch --help)", line, name);
            return jerr_input(e, name, "--%s: not an option of sbatch's that joblet reads, nor one of rnx job run's "
                              "(rnx job batch --help)", name);
        }
        if (w[2 + len] == '=')
            value = w + 3 + len;
    } else {
        for (size_t i = 0; i < ARRAY_LEN(sb_opts) && !o; i++)
            if (sb_opts[i].letter && sb_opts[i].letter == w[1])
                o = &sb_opts[i];
        for (size_t i = 0; i < ARRAY_LEN(rnx_own) && !o && !rnx; i++)
            if (rnx_own[i].letter && rnx_own[i].letter == w[1]) {
                rnx = true, rnx_arg = rnx_own[i].arg;
                snprintf(name, sizeof name, "%s", rnx_own[i].name);
            }
        if (!o && !rnx) {
            if (line)
                return jerr_input(e, "option", "line %d: #SBATCH -%c: not an option of sbatch's that joblet reads "
                                  "(rnx job batch --help)", line, w[1]);
            return jerr_input(e, "option", "-%c: not an option of sbatch's that joblet reads (rnx job batch --help)",
                              w[1]);
        }
        if (o)
            snprintf(name, sizeof name, "%s", o->name);
        if (w[2])
            value = w + 2;
        if (value && ((o && !o->arg) || (rnx && !rnx_arg)))
            return jerr_input(e, name, "%s%s: -%c takes no value", at, w, w[1]);
    }
    int arg = o ? o->arg : rnx_arg;
    int used = 1;
    if (!value && arg == 1) {
        if (n < 2)
            return jerr_input(e, name, "%s%s: needs a value%s", at, w, line ? " (on its line)" : "");
        value = words[1];
        used = 2;
    }
    if (value && !arg)
        return jerr_input(e, name, "%s--%s takes no value", at, name);
    /* a secret's value is not shown where a refusal names the option: NAME=*** */
    bool secret = rnx && value && !strcmp(name, "secret-env");
    int shown = secret ? (int)strcspn(value, "=") : 64;
    char where[160];
    if (line)
        snprintf(where, sizeof where, "line %d: #SBATCH --%s%s%.*s%s", line, name, value ? "=" : "", shown,
                 value ? value : "", secret ? "=***" : "");
    else
        snprintf(where, sizeof where, "--%s%s%.*s%s", name, value ? "=" : "", shown, value ? value : "",
                 secret ? "=***" : "");
    if (rnx) {
        add_rnx(p, value ? xprintf("--%s=%s", name, value) : xprintf("--%s", name), where);
        /* and, on rnx's command line, which every local user reads (/proc/PID/cmdline) while rnx
         * runs, overwritten in place now that the plan holds its copy (a #SBATCH line's words
         * are a copy of the line, scrubbed to no harm) */
        if (secret) {
            char *v = used == 2 ? words[1] : words[0] + (value - w);
            char *eq = strchr(v, '=');
            if (eq)
                memset(eq + 1, '*', strlen(eq + 1));
        }
        return used;
    }
    if (o->kind == K_WRAP && line)
        return jerr_input(e, "wrap", "%s: only on the command line", where);
    return take(p, o, value, where, now, e) < 0 ? -1 : used;
}

int sbatch_args(sbatch_plan *p, int argc, char *const *argv, time_t now, jerr *e)
{
    int i = 0;
    while (i < argc) {
        const char *w = argv[i];
        if (!strcmp(w, "--"))
            return i + 1;
        if (w[0] != '-' || !w[1])
            break;
        int used = option(p, argv + i, argc - i, 0, now, e);
        if (used < 0)
            return -1;
        i += used;
    }
    return i;
}

/* A #SBATCH line's words: split at blanks, '...' and "..." quoted, a word starting with '#' ends
 * it (a comment). The words are written into buf (at least the line's length + max + 1 bytes).
 * -1 when the line has more than max words. */
static int words_of(const char *s, char *buf, size_t blen, char **words, int max)
{
    int n = 0;
    size_t o = 0;
    while (*s && n < max) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s || *s == '#')
            break;
        words[n++] = buf + o;
        while (*s && *s != ' ' && *s != '\t' && o + 1 < blen) {
            if (*s == '\'' || *s == '"') {
                char q = *s++;
                while (*s && *s != q && o + 1 < blen)
                    buf[o++] = *s++;
                if (*s == q)
                    s++;
            } else {
                buf[o++] = *s++;
            }
        }
        buf[o++] = 0;
        if (o >= blen)
            break;
    }
    while (*s == ' ' || *s == '\t')
        s++;
    return *s && *s != '#' ? -1 : n;
}

int sbatch_script(sbatch_plan *p, const char *text, size_t len, time_t now, jerr *e)
{
    if (len < 2 || text[0] != '#' || text[1] != '!')
        return jerr_input(e, "script", "this does not look like a batch script: its first line must start with #! and "
                          "the path of an interpreter (#!/bin/bash), as sbatch asks");
    if (memchr(text, '\r', len))
        return jerr_input(e, "script", "the script has DOS line breaks (\\r\\n); convert it with dos2unix, as sbatch "
                          "asks");
    if (memchr(text, 0, len))
        return jerr_input(e, "script", "the script holds a NUL byte: not a text file");
    /* the "#!" line: the interpreter and at most one argument, as the kernel reads it */
    const char *nl0 = memchr(text, '\n', len);
    size_t l0 = nl0 ? (size_t)(nl0 - text) : len;
    char first[512];
    if (l0 >= sizeof first)
        return jerr_input(e, "script", "its #! line is longer than %zu bytes", sizeof first - 1);
    snprintf(first, sizeof first, "%.*s", (int)(l0 - 2), text + 2);
    char *s = first;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t il = strcspn(s, " \t");
    if (!il || s[0] != '/')
        return jerr_input(e, "script", "its #! line names no interpreter by its full path (#!/bin/bash)");
    free(p->interp);
    free(p->interp_arg);
    p->interp = xprintf("%.*s", (int)il, s);
    p->interp_arg = NULL;
    s += il;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t al = strlen(s);
    while (al && (s[al - 1] == ' ' || s[al - 1] == '\t'))
        al--;
    if (al)
        p->interp_arg = xprintf("%.*s", (int)al, s);
    /* the #SBATCH lines, up to the first command */
    const char *end = text + len;
    int line = 1;
    bool commands = false;
    for (const char *q = text + l0 + (l0 < len); q < end; line++) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        size_t ll = nl ? (size_t)(nl - q) : (size_t)(end - q);
        const char *t = q;
        q += ll + 1;
        size_t blank = 0;
        while (blank < ll && (t[blank] == ' ' || t[blank] == '\t'))
            blank++;
        if (blank == ll)
            continue;
        if (commands || t[blank] != '#') {
            /* the commands: sbatch reads no #SBATCH line among them (their srun is joblet's, in
             * the job: slurm/srun_main.c) */
            commands = true;
            continue;
        }
        if (blank || ll < 7 || memcmp(t, "#SBATCH", 7) || (ll > 7 && t[7] != ' ' && t[7] != '\t'))
            continue; /* a comment ("# SBATCH" too: the usual way to turn one off) */
        char linetext[4096], buf[sizeof linetext + 66], *words[64];
        if (ll >= sizeof linetext)
            return jerr_input(e, "script", "line %d: an #SBATCH line longer than %zu bytes", line + 1,
                              sizeof linetext - 1);
        snprintf(linetext, sizeof linetext, "%.*s", (int)(ll - 7), t + 7);
        int n = words_of(linetext, buf, sizeof buf, words, (int)ARRAY_LEN(words));
        if (n < 0)
            return jerr_input(e, "script", "line %d: an #SBATCH line of more than %zu words; give them on lines of "
                              "their own", line + 1, ARRAY_LEN(words));
        for (int i = 0; i < n;) {
            if (words[i][0] != '-' || !words[i][1])
                return jerr_input(e, "script", "line %d: #SBATCH %.64s: not an option (sbatch's start with -)",
                                  line + 1, words[i]);
            int used = option(p, words + i, n - i, line + 1, now, e);
            if (used < 0)
                return -1;
            i += used;
        }
    }
    return 0;
}

/* The flag a pass-through rnx flag sets ("--runtime" of "--runtime=x") */
static size_t flag_len(const char *f) { return strcspn(f, "="); }

/* The flag of rnx job run that slot k comes to (sbatch_flags), NULL for --export (--env, which
 * may be given many times). */
static const char *slot_flag(int k)
{
    static const char *const flags[SB_NSLOTS] = {
        [SB_ARRAY] = "--array",         [SB_NAME] = "--name",           [SB_TIME] = "--max-runtime",
        [SB_MEM] = "--max-memory",      [SB_MEM_PER_CPU] = "--max-memory", [SB_MEM_PER_GPU] = "--max-memory",
        [SB_CPUS] = "--max-cpu",        [SB_GPUS] = "--gpu",            [SB_GPU_TYPE] = "--gpu-type",
        [SB_DEPENDENCY] = "--dependency", [SB_BEGIN] = "--schedule",    [SB_SIGNAL] = "--signal",
        [SB_PRIORITY] = "--priority",   [SB_WORKDIR] = "--workdir",
    };
    return k >= 0 && k < SB_NSLOTS ? flags[k] : NULL;
}

/* Whether rnx flag f ("--name=x") is the flag name ("--name"). */
static bool flag_is(const char *f, const char *name)
{
    return name && flag_len(f) == strlen(name) && !memcmp(f, name, strlen(name));
}

/* Whether one of list's flags is the flag name. */
static bool list_gives(const sbatch_list *list, const char *name)
{
    for (size_t j = 0; j < list->n; j++)
        if (flag_is(list->v[j], name))
            return true;
    return false;
}

bool sbatch_rnx_gives(const sbatch_plan *p, const char *flag) { return list_gives(&p->rnx, flag); }

void sbatch_merge(sbatch_plan *p, sbatch_plan *cl)
{
    bool cl_gpus = cl->slot[SB_GPUS] != NULL, cl_export = cl->slot[SB_EXPORT] != NULL;
    /* one option said two ways, sbatch's in one place and rnx job run's in the other (-J in the
     * script, --name on the command line; --time and --max-runtime): the command line's wins
     * too, as rnx job run takes a flag once. The script's slot is not said (p->unsaid), or the
     * script's rnx flag is dropped with those below. */
    unsigned cl_slots = 0;
    for (int i = 0; i < SB_NSLOTS; i++) {
        if (cl->slot[i] || (i == SB_GPU_TYPE && cl_gpus))
            cl_slots |= 1u << i;
        if (!cl->slot[i] && slot_flag(i) && list_gives(&cl->rnx, slot_flag(i)))
            p->unsaid |= 1u << i;
    }
    /* a memory option on the command line replaces the script's, whichever of the three it is */
    if (cl->slot[SB_MEM] || cl->slot[SB_MEM_PER_CPU] || cl->slot[SB_MEM_PER_GPU])
        for (int k = SB_MEM; k <= SB_MEM_PER_GPU; k++) {
            set_slot(p, k, NULL);
            set_where(p, k, NULL);
        }
    for (int i = 0; i < SB_NSLOTS; i++)
        if (cl->slot[i] || (i == SB_GPU_TYPE && cl_gpus)) {
            set_slot(p, i, cl->slot[i]);
            set_where(p, i, cl->slot_where[i]);
            cl->slot[i] = NULL;
            cl->slot_where[i] = NULL;
        }
    /* --export: the command line's list replaces the script's, even an empty one (NONE) */
    if (cl_export) {
        sbatch_list_free(&p->export_vars);
        p->export_vars = cl->export_vars;
        cl->export_vars = (sbatch_list){0};
    }
    /* rnx flags: the script's of a flag the command line gives are dropped (as an rnx flag, or
     * as the sbatch option that comes to it) */
    size_t k = 0;
    for (size_t i = 0; i < p->rnx.n; i++) {
        bool given = false;
        for (size_t j = 0; j < cl->rnx.n && !given; j++)
            given = flag_len(p->rnx.v[i]) == flag_len(cl->rnx.v[j]) &&
                    !memcmp(p->rnx.v[i], cl->rnx.v[j], flag_len(p->rnx.v[i]));
        for (int s = 0; s < SB_NSLOTS && !given; s++)
            given = (cl_slots >> s & 1) && flag_is(p->rnx.v[i], slot_flag(s));
        if (given) {
            free(p->rnx.v[i]);
            free(p->rnx_where.v[i]);
        } else {
            p->rnx_where.v[k] = p->rnx_where.v[i];
            p->rnx.v[k++] = p->rnx.v[i];
        }
    }
    p->rnx.n = p->rnx_where.n = k;
    for (size_t j = 0; j < cl->rnx.n; j++) {
        sbatch_list_add(&p->rnx, cl->rnx.v[j]);
        sbatch_list_add(&p->rnx_where, cl->rnx_where.v[j]);
    }
    cl->rnx.n = cl->rnx_where.n = 0;
    for (size_t j = 0; j < cl->notes.n; j++)
        sbatch_list_add(&p->notes, cl->notes.v[j]);
    cl->notes.n = 0;
    if (cl->wrap) {
        p->wrap = true;
        free(p->wrap_cmd);
        p->wrap_cmd = cl->wrap_cmd;
        cl->wrap_cmd = NULL;
    }
}

/* One flag of the plan, and where it was given ("" when nothing gave it). */
static void emit(sbatch_list *out, sbatch_list *where, char *flag, const char *w)
{
    sbatch_list_add(out, flag);
    if (where)
        sbatch_list_add(where, xstrdup(w ? w : ""));
}

void sbatch_flags(const sbatch_plan *p, sbatch_list *out, sbatch_list *where)
{
    char *const *s = p->slot, *const *w = p->slot_where;
    static const int direct[] = {SB_ARRAY, SB_NAME,   SB_TIME,   SB_GPUS,     SB_GPU_TYPE,
                                 SB_DEPENDENCY, SB_BEGIN, SB_SIGNAL, SB_PRIORITY, SB_WORKDIR};
    for (size_t i = 0; i < ARRAY_LEN(direct); i++) {
        int k = direct[i];
        /* "" is "none" for a time limit (UNLIMITED) and a start time (now); any other empty
         * value goes as given, for rnx job run to refuse (--array=, --priority=) */
        if (s[k] && (*s[k] || (k != SB_TIME && k != SB_BEGIN)) && !(p->unsaid >> k & 1))
            emit(out, where, xprintf("%s=%s", slot_flag(k), s[k]), w[k]);
    }
    /* (-c and the GPUs still count for a memory per CPU or per GPU when their own flag is the
     * command line's: unsaid) */
    long long cpus = s[SB_CPUS] ? atoll(s[SB_CPUS]) : 0;
    long long gpus = s[SB_GPUS] && *s[SB_GPUS] ? atoll(s[SB_GPUS]) : 0;
    if (cpus && !(p->unsaid >> SB_CPUS & 1))
        emit(out, where, xprintf("--max-cpu=%lld", cpus * 100), w[SB_CPUS]);
    /* memory: --mem, else per CPU (times -c, 1 without), else per GPU; "" (0) for none */
    long long mem = -1;
    int mem_slot = SB_MEM;
    if (s[SB_MEM])
        mem = *s[SB_MEM] ? atoll(s[SB_MEM]) : 0;
    else if (s[SB_MEM_PER_CPU])
        mem = *s[SB_MEM_PER_CPU] ? atoll(s[SB_MEM_PER_CPU]) * (cpus ? cpus : 1) : 0, mem_slot = SB_MEM_PER_CPU;
    else if (s[SB_MEM_PER_GPU] && gpus)
        mem = *s[SB_MEM_PER_GPU] ? atoll(s[SB_MEM_PER_GPU]) * gpus : 0, mem_slot = SB_MEM_PER_GPU;
    if (mem > 0 && !(p->unsaid >> mem_slot & 1))
        emit(out, where, xprintf("--max-memory=%lld", mem), w[mem_slot]);
    /* what sbatch tells a job of itself (SLURM_JOB_ID...): joblet's, from the request */
    emit(out, where, xstrdup("--slurm-env"), "");
    for (size_t i = 0; i < p->export_vars.n; i++)
        if (strchr(p->export_vars.v[i], '='))
            emit(out, where, xprintf("--env=%s", p->export_vars.v[i]), w[SB_EXPORT]);
    for (size_t i = 0; i < p->rnx.n; i++)
        emit(out, where, xstrdup(p->rnx.v[i]), i < p->rnx_where.n ? p->rnx_where.v[i] : "");
}

/* The field a flag of rnx job run sets (--dependency, Slurm's spelling of --after, too), NULL
 * for rnx's own (--upload, --follow, --wait), as cmd_job.c's run_options has them. */
static const jobreq_field *flag_field(const char *name)
{
    if (!strcmp(name, "dependency"))
        return &jobreq_fields[JR_AFTER];
    for (int i = 0; i < JR_N; i++) {
        const jobreq_field *f = &jobreq_fields[i];
        if (f->flag && !f->daemon_only && f->kind != JK_UPLOADS && !strncmp(f->flag, "--", 2) &&
            !strchr(f->flag, '=') && !strcmp(f->flag + 2, name))
            return f;
    }
    if (!strcmp(name, "env"))
        return &jobreq_fields[JR_ENV];
    if (!strcmp(name, "secret-env"))
        return &jobreq_fields[JR_SECRET_ENV];
    return NULL;
}

/* Whether a refusal of field `key` ("after_any", "uploads[2]") is about what field f sets. */
static bool refusal_of(const char *key, const jobreq_field *f)
{
    size_t kl = strlen(f->key);
    if (!strncmp(key, f->key, kl) && (key[kl] == 0 || key[kl] == '[' || key[kl] == '.'))
        return true;
    /* --dependency=singleton and Slurm's '?' list set these two */
    return f == &jobreq_fields[JR_AFTER] && (!strcmp(key, "singleton") || !strcmp(key, "after_any"));
}

/* fe's refusal said where it was given: "line 3: #SBATCH --array=5-3: '5-3': ...", the schema's
 * field names as rnx job run's flags ("give max_runtime" -> "give --max-runtime"). */
static int refused_at(jerr *e, const jerr *fe, const char *where)
{
    char msg[sizeof fe->msg + 200];
    if (where && *where) {
        jobreq_reword(fe, where, msg, sizeof msg);
        if (!strcmp(msg, fe->msg))
            snprintf(msg, sizeof msg, "%s: %s", where, fe->msg);
    } else {
        snprintf(msg, sizeof msg, "%s", fe->msg);
    }
    jobreq_flag_words(msg, sizeof msg);
    return jerr_input(e, fe->field, "%s", msg);
}

int sbatch_check(const sbatch_list *flags, const sbatch_list *where, time_t now, jerr *e)
{
    job_req r = {0};
    jerr fe = {0};
    int rc = 0;
    for (size_t i = 0; i < flags->n && rc == 0; i++) {
        const char *flag = flags->v[i], *w = i < where->n ? where->v[i] : "";
        if (strncmp(flag, "--", 2))
            continue;
        char name[64];
        size_t nl = strcspn(flag + 2, "=");
        if (nl >= sizeof name)
            continue;
        snprintf(name, sizeof name, "%.*s", (int)nl, flag + 2);
        const char *value = flag[2 + nl] == '=' ? flag + 3 + nl : NULL;
        const jobreq_field *f = flag_field(name);
        if (!f)
            continue;
        if (value && !utf8_valid(value, strlen(value))) {
            jerr_input(&fe, f->key, "%s: the value is not valid UTF-8, which the API cannot carry", f->key);
            rc = refused_at(e, &fe, w);
        } else if (f->kind == JK_ENV) {
            bool secret = f == &jobreq_fields[JR_SECRET_ENV];
            char key[256];
            const char *val;
            if (parse_env_pair(f->key, value ? value : "", key, sizeof key, &val, &fe) < 0 ||
                jobreq_add_env(&r, secret, key, val, &fe) < 0)
                rc = refused_at(e, &fe, w);
        } else if (jobreq_set_text(&r, f, value ? value : "true", now, &fe) < 0) {
            rc = refused_at(e, &fe, w);
        }
    }
    if (rc == 0 && jobreq_set_command(&r, "/bin/sh", &fe) == 0 && jobreq_check_submitted(&r, &fe) < 0) {
        /* a rule between fields: where the field it names was set (the last of the flags
         * setting it: the one rnx job run keeps) */
        const char *w = NULL;
        for (size_t i = flags->n; i-- > 0 && !w;) {
            char name[64];
            size_t nl = strcspn(flags->v[i] + 2, "=");
            if (strncmp(flags->v[i], "--", 2) || nl >= sizeof name)
                continue;
            snprintf(name, sizeof name, "%.*s", (int)nl, flags->v[i] + 2);
            const jobreq_field *f = flag_field(name);
            if (f && refusal_of(fe.field, f) && i < where->n)
                w = where->v[i];
        }
        rc = refused_at(e, &fe, w);
    }
    jobreq_free(&r);
    return rc;
}
