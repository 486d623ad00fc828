/* Slurm's srun inside a joblet job (srun.h). The options are one table: what each does to the
 * job's one task, and what is said when the task cannot get it as asked. */
#include "srun.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"
#include "util.h"

void srun_free(srun_plan *p)
{
    free(p->out);
    free(p->err);
    free(p->in);
    free(p->chdir);
    sbatch_list_free(&p->export_vars);
    sbatch_list_free(&p->notes);
    *p = (srun_plan){0};
}

/* One of the job's counts, or -1 when it does not say (parse_whole: the one reading of Slurm's
 * whole numbers). */
static long long job_num(char *(*get)(const char *), const char *name)
{
    const char *v = get(name);
    long long n;
    return v && parse_whole(v, 0, 999999999999999999LL, &n) ? n : -1;
}

srun_job srun_job_from_env(char *(*get)(const char *name))
{
    long long cpus = job_num(get, "SLURM_CPUS_ON_NODE"), gpus = job_num(get, "SLURM_GPUS_ON_NODE");
    if (cpus < 0)
        cpus = job_num(get, "SLURM_CPUS_PER_TASK");
    if (gpus < 0)
        gpus = job_num(get, "SLURM_GPUS");
    return (srun_job){cpus, gpus < 0 ? 0 : gpus, job_num(get, "SLURM_MEM_PER_NODE")};
}

enum sr_kind {
    R_ONE,       /* a count of tasks or nodes: 1 is what the job is; more is refused */
    R_LABEL,     /* -l */
    R_OUT,       /* -o: "all" the job's own, "none" nowhere, a task number (0) the job's own, or a file */
    R_ERR,       /* -e */
    R_IN,        /* -i */
    R_OPEN_MODE, /* append or truncate */
    R_CHDIR,     /* -D */
    R_EXPORT,    /* ALL, NONE, [ALL,]NAME[=VALUE],... */
    R_CPUS,      /* -c: noted when it is not the job's */
    R_GPUS,      /* -G and the per-task, per-node forms: the GPUs the step sees (gpu_share) */
    R_GRES,      /* gpu[:TYPE][:N] among others: the same */
    R_OVERLAP,   /* --overlap: the step shares what other steps hold */
    R_MEM,       /* --mem: noted when not the job's */
    R_MEM_SHARE, /* --mem-per-cpu, --mem-per-gpu: noted (the task has the job's memory) */
    R_TIME,      /* -t: noted (the job's limit applies) */
    R_QUIET,     /* what a lone task on the job's one machine meets anyway (placement, binding, a
                  * step's name, accounting, srun's own verbosity): taken without a word */
    R_REFUSE,    /* what joblet cannot do inside a job: refused with the text */
    R_INFO,      /* --version, --help: srun says what it is and runs nothing */
};

typedef struct sr_opt {
    const char *name;
    char letter;
    int arg; /* 0 none, 1 required, 2 optional ("--name=value" only) */
    enum sr_kind kind;
    const char *text; /* R_REFUSE: why */
} sr_opt;

#define NOT_IN_A_JOB "a joblet job is one task with no Slurm of its own; this needs Slurm itself (docs/slurm.md)"

static const sr_opt sr_opts[] = {
    {"ntasks", 'n', 1, R_ONE, NULL},
    {"nodes", 'N', 1, R_ONE, NULL},
    {"ntasks-per-node", 0, 1, R_ONE, NULL},
    {"ntasks-per-gpu", 0, 1, R_ONE, NULL},
    {"ntasks-per-socket", 0, 1, R_ONE, NULL},
    {"ntasks-per-core", 0, 1, R_ONE, NULL},
    {"label", 'l', 0, R_LABEL, NULL},
    {"output", 'o', 1, R_OUT, NULL},
    {"error", 'e', 1, R_ERR, NULL},
    {"input", 'i', 1, R_IN, NULL},
    {"open-mode", 0, 1, R_OPEN_MODE, NULL},
    {"chdir", 'D', 1, R_CHDIR, NULL},
    {"export", 0, 1, R_EXPORT, NULL},
    {"cpus-per-task", 'c', 1, R_CPUS, NULL},
    {"gpus", 'G', 1, R_GPUS, NULL},
    {"gpus-per-task", 0, 1, R_GPUS, NULL},
    {"gpus-per-node", 0, 1, R_GPUS, NULL},
    {"gres", 0, 1, R_GRES, NULL},
    {"mem", 0, 1, R_MEM, NULL},
    {"mem-per-cpu", 0, 1, R_MEM_SHARE, NULL},
    {"mem-per-gpu", 0, 1, R_MEM_SHARE, NULL},
    {"time", 't', 1, R_TIME, NULL},
    {"job-name", 'J', 1, R_QUIET, NULL},
    {"unbuffered", 'u', 0, R_QUIET, NULL},
    {"kill-on-bad-exit", 'K', 2, R_QUIET, NULL},
    {"wait", 'W', 1, R_QUIET, NULL},
    {"disable-status", 'X', 0, R_QUIET, NULL},
    {"quiet", 'Q', 0, R_QUIET, NULL},
    {"verbose", 'v', 0, R_QUIET, NULL},
    {"pty", 0, 2, R_QUIET, NULL},
    {"mpi", 0, 1, R_QUIET, NULL},
    {"cpu-bind", 0, 1, R_QUIET, NULL},
    {"gpu-bind", 0, 1, R_QUIET, NULL},
    {"mem-bind", 0, 1, R_QUIET, NULL},
    {"accel-bind", 0, 1, R_QUIET, NULL},
    {"distribution", 'm', 1, R_QUIET, NULL},
    {"hint", 0, 1, R_QUIET, NULL},
    {"exact", 0, 0, R_QUIET, NULL},
    {"overlap", 0, 0, R_OVERLAP, NULL},
    {"whole", 0, 0, R_QUIET, NULL},
    {"exclusive", 0, 2, R_QUIET, NULL},
    {"oversubscribe", 's', 0, R_QUIET, NULL},
    {"overcommit", 'O', 0, R_QUIET, NULL},
    {"threads", 'T', 1, R_QUIET, NULL},
    {"preserve-env", 'E', 0, R_QUIET, NULL},
    {"no-kill", 'k', 2, R_QUIET, NULL},
    {"immediate", 'I', 2, R_QUIET, NULL},
    {"cpu-freq", 0, 1, R_QUIET, NULL},
    {"gpu-freq", 0, 1, R_QUIET, NULL},
    {"cpus-per-gpu", 0, 1, R_QUIET, NULL},
    {"mincpus", 0, 1, R_QUIET, NULL},
    {"sockets-per-node", 0, 1, R_QUIET, NULL},
    {"cores-per-socket", 0, 1, R_QUIET, NULL},
    {"threads-per-core", 0, 1, R_QUIET, NULL},
    {"gres-flags", 0, 1, R_QUIET, NULL},
    {"propagate", 0, 2, R_QUIET, NULL},
    {"partition", 'p', 1, R_QUIET, NULL},
    {"account", 'A', 1, R_QUIET, NULL},
    {"qos", 'q', 1, R_QUIET, NULL},
    {"reservation", 0, 1, R_QUIET, NULL},
    {"constraint", 'C', 1, R_QUIET, NULL},
    {"nodelist", 'w', 1, R_QUIET, NULL},
    {"exclude", 'x', 1, R_QUIET, NULL},
    {"relative", 'r', 1, R_ONE, NULL}, /* (checked as 0 below) */
    {"jobid", 0, 1, R_QUIET, NULL},
    {"comment", 0, 1, R_QUIET, NULL},
    {"mail-type", 0, 1, R_QUIET, NULL},
    {"mail-user", 0, 1, R_QUIET, NULL},
    {"slurmd-debug", 0, 1, R_QUIET, NULL},
    {"network", 0, 1, R_QUIET, NULL},
    {"compress", 0, 2, R_QUIET, NULL},
    {"version", 'V', 0, R_INFO, NULL},
    {"help", 'h', 0, R_INFO, NULL},
    {"usage", 0, 0, R_INFO, NULL},
    {"multi-prog", 0, 0, R_REFUSE, "give the command itself (a joblet job has one task)"},
    {"prolog", 0, 1, R_REFUSE, "run it in the script before srun"},
    {"epilog", 0, 1, R_REFUSE, "run it in the script after srun"},
    {"task-prolog", 0, 1, R_REFUSE, "run it in the script before srun"},
    {"task-epilog", 0, 1, R_REFUSE, "run it in the script after srun"},
    {"dependency", 'd', 1, R_REFUSE, NOT_IN_A_JOB},
    {"begin", 'b', 1, R_REFUSE, NOT_IN_A_JOB},
    {"hold", 'H', 0, R_REFUSE, NOT_IN_A_JOB},
    {"het-group", 0, 1, R_REFUSE, NOT_IN_A_JOB},
    {"bcast", 0, 2, R_REFUSE, NOT_IN_A_JOB},
    {"no-allocate", 'Z', 0, R_REFUSE, NOT_IN_A_JOB},
    {"x11", 0, 2, R_REFUSE, "a joblet job has no X11 forwarding"},
    {"container", 0, 1, R_REFUSE, "a joblet job is its own container (rnx job run --runtime)"},
};

/* "the job's 4" or "the job's (no limit)" */
static void of_job(char *buf, size_t len, long long have, const char *unit)
{
    if (have < 0) /* (no limit: a job without a memory limit, or one whose variables do not say) */
        snprintf(buf, len, "all of the job's");
    else
        snprintf(buf, len, "the job's %lld%s", have, unit);
}

/* A step's share of what the job has: more than the job has is refused, as srun refuses a step
 * the job cannot hold; less is noted (the task has all of the job's). */
static int share(srun_plan *p, const char *where, long long asked, long long have, const char *what,
                 const char *unit, jerr *e)
{
    if (asked == have)
        return 0;
    if (have >= 0 && asked > have)
        return jerr_input(e, what, "%s: more than the job has (%lld%s): a step has at most the job's", where, have,
                          unit);
    char h[64];
    of_job(h, sizeof h, have, unit);
    sbatch_list_add(&p->notes, xprintf("%s: a step has the job's %s, not a share: the task has %s", where, what, h));
    return 0;
}

/* GPUs asked for: the step sees that many of the job's, none another running step holds
 * (srun_gpus_pick); 0 (a step with none) is noted: it sees the job's anyway. */
static int gpu_share(srun_plan *p, const char *where, long long asked, const srun_job *job, jerr *e)
{
    if (asked > job->gpus)
        return jerr_input(e, "GPUs", "%s: more than the job has (%lld GPUs): a step has at most the job's", where,
                          job->gpus);
    p->gpus = asked; /* (the last one given counts, as for every option) */
    return asked || !job->gpus ? 0 : share(p, where, 0, job->gpus, "GPUs", " GPUs", e);
}

static int take(srun_plan *p, const sr_opt *o, const char *v, const char *where, const srun_job *job, jerr *e)
{
    long long n;
    switch (o->kind) {
    case R_ONE:
        if (!strcmp(o->name, "relative")) {
            if (!parse_whole(v, 0, 0, &n))
                return jerr_input(e, o->name, "%s: %s", where, NOT_IN_A_JOB);
            return 0;
        }
        if (!strcmp(o->name, "nodes") && !strncmp(v, "1-", 2) && parse_whole(v + 2, 1, 1LL << 40, &n))
            v = "1"; /* at least one: one it is */
        if (!parse_whole(v, 1, 1, &n))
            return jerr_input(e, o->name, "%s: %s", where,
                              parse_whole(v, 2, 1LL << 40, &n) ? NOT_IN_A_JOB
                                                                : "must be a whole number (1 in a joblet job)");
        if (!strcmp(o->name, "ntasks-per-gpu") && job->gpus > 1)
            return jerr_input(e, o->name, "%s: a task a GPU is %lld tasks in this job: %s", where, job->gpus,
                              NOT_IN_A_JOB);
        return 0;
    case R_LABEL: p->label = true; return 0;
    case R_OUT:
    case R_ERR:
    case R_IN: {
        char **slot = o->kind == R_OUT ? &p->out : o->kind == R_ERR ? &p->err : &p->in;
        free(*slot);
        *slot = NULL;
        if (!*v)
            return jerr_input(e, o->name, "%s: needs a file name, all, none or a task number", where);
        if (!strcasecmp(v, "none"))
            *slot = xstrdup("/dev/null");
        else if (strcasecmp(v, "all") && !parse_whole(v, 0, 0, &n)) {
            if (strspn(v, "0123456789") == strlen(v))
                return jerr_input(e, o->name, "%s: the job's one task is task 0", where);
            *slot = xstrdup(v);
        }
        return 0;
    }
    case R_OPEN_MODE:
        if (!strcasecmp(v, "append") || !strcasecmp(v, "a"))
            p->append = true;
        else if (!strcasecmp(v, "truncate") || !strcasecmp(v, "t"))
            p->append = false;
        else
            return jerr_input(e, o->name, "%s: append or truncate", where);
        return 0;
    case R_CHDIR:
        if (!*v)
            return jerr_input(e, o->name, "%s: needs a directory", where);
        free(p->chdir);
        p->chdir = xstrdup(v);
        return 0;
    case R_EXPORT: {
        if (!*v)
            return jerr_input(e, "export", "%s: ALL, NONE, or [ALL,]NAME[=VALUE],...", where);
        sbatch_list_free(&p->export_vars);
        /* as Slurm: ALL (the default) keeps srun's environment and adds what follows; NONE, or
         * names without ALL, gives the task only SLURM_* and the names */
        char *copy = xstrdup(v), *save = NULL;
        bool first = true;
        p->export_none = true;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save), first = false) {
            if (first && !strcasecmp(item, "ALL")) {
                p->export_none = false;
                continue;
            }
            if (first && !strcasecmp(item, "NONE"))
                continue;
            char name[128];
            size_t nl = strcspn(item, "=");
            bool ok = nl > 0 && nl < sizeof name;
            if (ok) {
                memcpy(name, item, nl);
                name[nl] = 0;
                ok = env_key_valid(name);
            }
            if (!ok) {
                jerr_input(e, "export", "%s: '%.64s': a variable is NAME or NAME=VALUE", where, item);
                free(copy);
                return -1;
            }
            sbatch_list_add(&p->export_vars, xstrdup(item));
        }
        free(copy);
        return 0;
    }
    case R_CPUS:
        if (!parse_whole(v, 1, 1 << 20, &n))
            return jerr_input(e, o->name, "%s: must be a whole number of CPUs", where);
        return share(p, where, n, job->cpus, "CPUs", " CPUs", e);
    case R_GPUS: {
        char type[64];
        if (!strcmp(v, "0"))
            return gpu_share(p, where, 0, job, e);
        if (!sbatch_gpus(v, &n, type, sizeof type))
            return jerr_input(e, o->name, "%s: GPUs are N or TYPE:N", where);
        return gpu_share(p, where, n, job, e);
    }
    case R_GRES: {
        char *copy = xstrdup(v), *save = NULL, type[64];
        int rc = 0;
        for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
            if (!strcmp(item, "gpu"))
                n = 1;
            else if (!strcmp(item, "gpu:0"))
                n = 0;
            else if (strncmp(item, "gpu:", 4))
                continue; /* (other resources: the job's, whatever they are) */
            else if (!sbatch_gpus(item + 4, &n, type, sizeof type)) {
                rc = jerr_input(e, "gres", "%s: '%.64s': a GPU is gpu, gpu:N or gpu:TYPE:N", where, item);
                break;
            }
            rc = gpu_share(p, where, n, job, e);
        }
        free(copy);
        return rc;
    }
    case R_MEM:
        if ((n = sbatch_mb(v)) < 0)
            return jerr_input(e, o->name, "%s: memory is a number with K, M, G or T", where);
        /* (0: all of the node's, which the job's is) */
        return n > 0 ? share(p, where, n, job->mem_mb, "memory", " MB", e) : 0;
    case R_MEM_SHARE: {
        if (sbatch_mb(v) < 0)
            return jerr_input(e, o->name, "%s: memory is a number with K, M, G or T", where);
        char h[64];
        of_job(h, sizeof h, job->mem_mb, " MB");
        sbatch_list_add(&p->notes, xprintf("%s: a step has the job's memory, not a share: the task has %s", where, h));
        return 0;
    }
    case R_TIME:
        sbatch_list_add(&p->notes, xprintf("%s: a step runs within the job's time limit, not one of its own", where));
        return 0;
    case R_OVERLAP: p->overlap = true; return 0;
    case R_QUIET:
    case R_INFO: return 0;
    case R_REFUSE: return jerr_input(e, o->name, "%s: %s", where, o->text);
    }
    return 0;
}

/* The option at words[0] (words[1] its value when separate): how many words it took, or -1. */
static int option(srun_plan *p, char *const *words, int n, const srun_job *job, jerr *e)
{
    const char *w = words[0], *value = NULL;
    const sr_opt *o = NULL;
    if (w[1] == '-') {
        size_t len = strcspn(w + 2, "=");
        for (size_t i = 0; i < ARRAY_LEN(sr_opts) && !o; i++)
            if (strlen(sr_opts[i].name) == len && !memcmp(sr_opts[i].name, w + 2, len))
                o = &sr_opts[i];
        if (!o)
            return jerr_input(e, "option", "unrecognized option '%.*s' (srun in a joblet job: docs/batch.md)",
                              (int)(len > 64 ? 64 : len) + 2, w);
        if (w[2 + len] == '=')
            value = w + 3 + len;
    } else {
        /* getopt's way: switches may come together (-lu), and the first letter that takes a
         * value takes the rest of the word (-lo%j.out) or the next word */
        for (w++; *w; w++) {
            o = NULL;
            for (size_t i = 0; i < ARRAY_LEN(sr_opts) && !o; i++)
                if (sr_opts[i].letter && sr_opts[i].letter == *w)
                    o = &sr_opts[i];
            if (!o)
                return jerr_input(e, "option", "invalid option -- '%c' (srun in a joblet job: docs/batch.md)", *w);
            if (o->arg == 1 || (o->arg == 2 && w[1]))
                break;
            if (o->kind == R_INFO) {
                p->info = o->letter;
                return 1;
            }
            char where[80];
            snprintf(where, sizeof where, "--%s", o->name);
            if (take(p, o, "", where, job, e) < 0)
                return -1;
            if (!w[1])
                return 1;
        }
        if (w[1])
            value = w + 1;
    }
    int used = 1;
    if (!value && o->arg == 1) {
        if (n < 2)
            return jerr_input(e, o->name, "option '--%s' requires an argument", o->name);
        value = words[1];
        used = 2;
    }
    if (value && !o->arg)
        return jerr_input(e, o->name, "option '--%s' doesn't allow an argument", o->name);
    char where[160];
    snprintf(where, sizeof where, "--%s%s%.64s", o->name, value ? "=" : "", value ? value : "");
    if (o->kind == R_INFO) {
        p->info = o->letter;
        return used;
    }
    return take(p, o, value ? value : "", where, job, e) < 0 ? -1 : used;
}

int srun_args(srun_plan *p, int argc, char *const *argv, const srun_job *job, jerr *e)
{
    *p = (srun_plan){0};
    int i = 0;
    while (i < argc) {
        const char *w = argv[i];
        if (!strcmp(w, "--")) {
            i++;
            break;
        }
        if (w[0] != '-' || !w[1])
            break;
        int used = option(p, argv + i, argc - i, job, e);
        if (used < 0) {
            srun_free(p);
            return -1;
        }
        i += used;
        if (p->info) {
            p->cmd = argc;
            return 0;
        }
    }
    if (i >= argc) {
        srun_free(p);
        return jerr_input(e, "command", "no command to run (srun [OPTIONS] COMMAND [ARGS...])");
    }
    p->cmd = i;
    return 0;
}

/* s appended at out[*o], or false when it does not fit in len (its NUL included). */
static bool put(char *out, size_t len, size_t *o, const char *s, size_t n)
{
    if (*o + n >= len)
        return false;
    memcpy(out + *o, s, n);
    *o += n;
    return true;
}

char *srun_file_name(const char *pattern, const srun_names *nm, char *out, size_t len)
{
    size_t o = 0;
    const char *sid = nm->step_id ? nm->step_id : "0";
    for (const char *s = pattern; *s; s++) {
        if (*s != '%') {
            if (!put(out, len, &o, s, 1))
                return NULL;
            continue;
        }
        const char *q = s + 1;
        int width = 0;
        while (isdigit((unsigned char)*q) && width < 100)
            width = width * 10 + (*q++ - '0');
        const char *v = NULL;
        bool number = false, step = false;
        switch (*q) {
        case '%': v = "%"; break;
        /* (Slurm's ids are numbers: %8j pads as %8t does) */
        case 'j': v = nm->job_id, number = true; break;
        case 'J': v = nm->job_id, number = step = true; break;
        case 's': v = sid, number = true; break;
        case 't':
        case 'n': v = "0", number = true; break;
        case 'N': v = nm->host; break;
        case 'u': v = nm->user; break;
        case 'x': v = nm->job_name; break;
        case 'A': v = nm->array_job_id, number = true; break;
        case 'a': v = nm->array_task_id, number = true; break;
        default: /* not one of srun's (or the pattern's end): kept as written */
            if (!put(out, len, &o, s, (size_t)(q - s) + (*q ? 1 : 0)))
                return NULL;
            s = *q ? q : q - 1;
            continue;
        }
        if (!v)
            v = "";
        char num[32];
        if (number && width > 0) {
            snprintf(num, sizeof num, "%0*lld", width > 20 ? 20 : width, strtoll(v, NULL, 10));
            v = num;
        }
        if (!put(out, len, &o, v, strlen(v)) || (step && (!put(out, len, &o, ".", 1) || !put(out, len, &o, sid, strlen(sid)))))
            return NULL;
        s = q;
    }
    out[o] = 0;
    return out;
}

/* One name of a host list (no comma outside its bracket): its names into out. */
static int hostname_item(const char *item, sbatch_list *out, jerr *e)
{
    const char *open = strchr(item, '['), *close = open ? strchr(open, ']') : NULL;
    if (!open) {
        if (strchr(item, ']'))
            return jerr_input(e, "hostlist", "'%.64s': a ']' with no '['", item);
        if (out->n >= SRUN_HOSTS_MAX)
            return jerr_input(e, "hostlist", "more than %d names", SRUN_HOSTS_MAX);
        sbatch_list_add(out, xstrdup(item));
        return 0;
    }
    if (!close)
        return jerr_input(e, "hostlist", "'%.64s': a '[' not closed", item);
    if (strchr(close + 1, '[') || memchr(open + 1, '[', (size_t)(close - open - 1)))
        return jerr_input(e, "hostlist", "'%.64s': one bracket a name", item);
    if (strchr(close + 1, ']'))
        return jerr_input(e, "hostlist", "'%.64s': a ']' with no '['", item);
    if (close == open + 1)
        return jerr_input(e, "hostlist", "'%.64s': an empty bracket", item);
    int plen = (int)(open - item);
    const char *suffix = close + 1;
    char ranges[256];
    if ((size_t)(close - open - 1) >= sizeof ranges)
        return jerr_input(e, "hostlist", "'%.64s...': a bracket this long", item);
    snprintf(ranges, sizeof ranges, "%.*s", (int)(close - open - 1), open + 1);
    char *save = NULL;
    for (char *r = strtok_r(ranges, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(r, '-');
        if (dash)
            *dash = 0;
        const char *hi_s = dash ? dash + 1 : r;
        long long lo, hi;
        if (!parse_whole(r, 0, 999999999, &lo) || !parse_whole(hi_s, 0, 999999999, &hi) || hi < lo)
            return jerr_input(e, "hostlist", "'%.64s': a range is N or LOW-HIGH, in numbers, LOW <= HIGH", item);
        int width = r[0] == '0' ? (int)strlen(r) : 0;
        for (long long v = lo; v <= hi; v++) {
            if (out->n >= SRUN_HOSTS_MAX)
                return jerr_input(e, "hostlist", "more than %d names", SRUN_HOSTS_MAX);
            sbatch_list_add(out, xprintf("%.*s%0*lld%s", plen, item, width, v, suffix));
        }
    }
    return 0;
}

static bool in_list(const char *list, const char *item, size_t len)
{
    for (const char *s = list ? list : ""; *s;) {
        size_t l = strcspn(s, ",");
        if (l == len && !strncmp(s, item, len))
            return true;
        s += l + (s[l] == ',');
    }
    return false;
}

int srun_gpus_pick(const char *visible, const char *taken, long long n, char *out, size_t len)
{
    long long have = 0, got = 0;
    size_t used = 0;
    if (!len)
        return -1;
    out[0] = 0;
    for (const char *s = visible ? visible : ""; *s;) {
        size_t l = strcspn(s, ",");
        if (l) {
            have++;
            if (got < n && !in_list(taken, s, l)) {
                if (used + l + 2 > len)
                    return -1;
                if (got++)
                    out[used++] = ',';
                memcpy(out + used, s, l);
                out[used += l] = 0;
            }
        }
        s += l + (s[l] == ',');
    }
    if (n < 1 || have < n)
        return -1;
    return got < n ? 1 : 0;
}

int srun_hostnames(const char *list, sbatch_list *out, jerr *e)
{
    size_t start = 0, len = strlen(list);
    int depth = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = list[i];
        if (c == '[')
            depth++;
        else if (c == ']')
            depth--;
        if ((c == ',' && depth == 0) || !c) {
            if (i > start) {
                char *item = xprintf("%.*s", (int)(i - start), list + start);
                int rc = hostname_item(item, out, e);
                free(item);
                if (rc < 0)
                    return -1;
            }
            start = i + 1;
        }
    }
    return 0;
}
