/* What the rnx commands share: usage and failure messages with rnx's exit codes, and the
 * strict flag parser every command uses. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/parse.h"
#include "../common/suggest.h"
#include "print.h"

/* The message is one line, whatever it quotes: joblet's answers and what the user typed or
 * named are printed with control characters escaped (print_text), so no message can move the
 * cursor, recolour the terminal or forge a line. */
__attribute__((format(printf, 2, 0))) static int vreport(int code, const char *fmt, va_list ap)
{
    fflush(stdout);   /* keep what was printed before the error in order on a shared terminal */
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        abort();
    fputs("rnx: ", stderr);
    print_text(stderr, msg);
    fputc('\n', stderr);
    free(msg);
    return code;
}

int rnx_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(RNX_USAGE, fmt, ap);
    va_end(ap);
    return RNX_USAGE;
}

int rnx_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(RNX_FAIL, fmt, ap);
    va_end(ap);
    return RNX_FAIL;
}

/* The long option whose name is exactly the text of token between "--" and "=" (or its end). */
static const struct option *long_exact(const struct option *longopts, const char *token)
{
    size_t l = strcspn(token + 2, "=");
    for (const struct option *o = longopts; o->name; o++)
        if (strlen(o->name) == l && strncmp(o->name, token + 2, l) == 0)
            return o;
    return NULL;
}

/* "'--foo'" for a long token (without any "=value"), "'-x'" for a short option. */
static void flag_text(const char *token, int shortopt, char *out, size_t outlen)
{
    if (strncmp(token, "--", 2) == 0)
        snprintf(out, outlen, "%.*s", (int)strcspn(token, "="), token);
    else
        snprintf(out, outlen, "-%c", shortopt);
}

/* Whether a token (one argv element, an option) needs the next element as its value. */
static bool token_takes_next(const char *token, const char *shortopts, const struct option *longopts)
{
    if (token[1] == '-') {
        const struct option *o = long_exact(longopts, token);
        return o && o->has_arg == required_argument && !strchr(token, '=');
    }
    for (const char *p = token + 1; *p; p++) {
        const char *s = *p != ':' ? strchr(shortopts, *p) : NULL;
        if (s && s[1] == ':')
            return !p[1];   /* "-eK=V" has its value; "-e" takes the next element */
    }
    return false;
}

/* GNU-style permutation, done here rather than by getopt so that it does not depend on
 * POSIXLY_CORRECT and every message can still name the token it is about: the flags (with
 * their values) move in front of the operands, in their order; "--" ends the flags, and
 * what follows it stays operands even when it starts with '-'. "rnx job status ID --json"
 * thus reads as "rnx job status --json ID". */
static void permute(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
    char **flags = calloc((size_t)argc + 1, sizeof *flags), **operands = calloc((size_t)argc + 1, sizeof *operands);
    char *dashdash = NULL;
    int nf = 0, no = 0;
    if (!flags || !operands)
        abort();
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (dashdash || a[0] != '-' || !a[1]) {
            operands[no++] = a;
        } else if (!strcmp(a, "--")) {
            dashdash = a;
        } else {
            flags[nf++] = a;
            if (token_takes_next(a, shortopts, longopts) && i + 1 < argc)
                flags[nf++] = argv[++i];
        }
    }
    int k = 1;
    for (int i = 0; i < nf; i++)
        argv[k++] = flags[i];
    if (dashdash)
        argv[k++] = dashdash;
    for (int i = 0; i < no; i++)
        argv[k++] = operands[i];
    free(flags);
    free(operands);
}

#define VOLUME_HABIT                                                                                     \
    "did you mean '--volume'? (--volume=NAME or NAME:ro mounts the named volume NAME at /volumes/NAME; "  \
    "rnx volume create NAME --size=1GB)"
#define DETACH_HABIT                                                                                     \
    "rnx job run returns once the job is submitted, as docker run -d does (-f follows its output "      \
    "instead; Slurm's -d, --dependency, is --after=ID:ok)"
#define LIST_ALL_HABIT                                                                                   \
    "rnx job list shows every job you can see, ended ones too, as docker ps -a (--status=RUNNING: the "     \
    "running ones)"
#define MEMORY_HABIT "did you mean '--max-memory'? (--max-memory=1GB, 512MB, or megabytes: 512)"

/* "; did you mean '--gpu'?" when one of longopts is close to the long flag token, else "". */
static void flag_hint(const char *token, const struct option *longopts, char *out, size_t outlen)
{
    const char *names[128];
    size_t n = 0;
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(token + 2, "="), token + 2);
    for (const struct option *o = longopts; o->name && n < 128; o++)
        names[n++] = o->name;
    const char *best = suggest_closest(word, names, n);
    if (best)
        snprintf(out, outlen, "did you mean '--%s'?", best);
    else
        out[0] = 0;
}

/* Flags of docker run, sbatch and srun that rnx spells otherwise: each is told the rnx flag (when
 * the command has `flag`), with how its value is written; one the edit distance finds far off. */
static const struct {
    const char *habit, *flag, *how;
} flag_habits[] = {
    {"-v", "--volume", VOLUME_HABIT},
    {"--mount", "--volume", VOLUME_HABIT},
    {"-d", "--upload", DETACH_HABIT},
    {"--detach", "--upload", DETACH_HABIT},
    {"--rm", "--upload",
     "rnx keeps an ended job's status and log until 'rnx job delete ID' (or 'rnx job delete-all'); "
     "there is no --rm"},
    {"--cpus", "--max-cpu", "did you mean '--max-cpu'? (a percent of one core: docker's --cpus=2 is --max-cpu=200)"},
    {"-c", "--max-cpu", "did you mean '--max-cpu'? (a percent of one core: sbatch's -c 2 is --max-cpu=200)"},
    {"--cpus-per-task", "--max-cpu", "did you mean '--max-cpu'? (a percent of one core: --cpus-per-task=2 is --max-cpu=200)"},
    {"-m", "--max-memory", MEMORY_HABIT},
    {"--memory", "--max-memory", MEMORY_HABIT},
    {"--mem", "--max-memory", MEMORY_HABIT},
    {"--time", "--max-runtime", "did you mean '--max-runtime'? (sbatch's --time: --max-runtime=2:00:00, 1-0, 2h, 30min)"},
    {"--gres", "--gpu", "did you mean '--gpu'? (sbatch's --gres=gpu:2 is --gpu=2, gpu:h100:2 --gpu=2 --gpu-type=H100)"},
    {"--gpus-per-node", "--gpu", "did you mean '--gpu'? (--gpu=N GPUs, --gpu=all every one)"},
    {"-a", "--expand", LIST_ALL_HABIT},
    {"--all", "--expand", LIST_ALL_HABIT},
    {"-q", "--expand", "rnx job list --json has the ids: rnx job list --json | jq -r '.[].id'"},
    {"-n", "--tail", "did you mean '--tail'? (--tail=N: the last N lines, as docker logs -n N)"},
    {"-J", "--name", "did you mean '--name'?"},
    {"--job-name", "--name", "did you mean '--name'?"},
    {"-w", "--workdir", "did you mean '--workdir'?"},
};

/* Flags whose every occurrence adds one more item (-e A=1 -e B=2); any other flag takes one
 * value, and a second, different one is refused rather than the first silently dropped
 * (sbatch and docker keep the last: --max-memory=100 ... --max-memory=200 in a long line is
 * more likely a slip than a wish). */
static const char *const repeatable_flags[] = {"env", "secret-env", "upload", "volume", "device", "after",
                                               "dependency", "stream"};

/* The values the current command line gave each flag so far (reset when a parse starts). */
static struct {
    int c;
    const char *value;
} given[128];
static size_t ngiven;

/* 0, or the usage error when the flag c (with value arg) was already given another value. */
static int given_once(int c, const char *arg, const char *flag, const struct option *longopts, const char *cmd)
{
    const char *name = NULL;
    for (const struct option *o = longopts; o->name; o++)
        if (o->val == c && !o->flag)
            name = o->name;
    for (size_t i = 0; name && i < sizeof repeatable_flags / sizeof repeatable_flags[0]; i++)
        if (!strcmp(name, repeatable_flags[i]))
            return 0;
    for (size_t i = 0; i < ngiven; i++)
        if (given[i].c == c) {
            if (!strcmp(given[i].value, arg))
                return 0;
            /* --gpu=all and --gpu=N are two fields (gpu_all, gpu_count): the request schema
             * refuses the pair in its own sentence, the API's ("asks for every GPU; do not
             * also give --gpu or --gpu-ids") */
            if (name && !strcmp(name, "gpu") && (!strcasecmp(given[i].value, "all") != !strcasecmp(arg, "all")))
                return 0;
            return rnx_usage("flag '%s' given twice ('%s', then '%s'); it takes one value: give it once; see "
                             "'%s --help'", flag, given[i].value, arg, cmd);
        }
    if (ngiven < sizeof given / sizeof given[0])
        given[ngiven].c = c, given[ngiven++].value = arg;
    return 0;
}

int rnx_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts, const char *cmd)
{
    char opts[64];
    bool ordered = shortopts[0] == '+';
    if (ordered)
        shortopts++;
    if (optind == 0)
        ngiven = 0;   /* a new command line */
    if (optind == 0 && !ordered)
        permute(argc, argv, shortopts, longopts);
    /* '+' stops at the first operand (after permute() there is none before the last flag;
     * for an ordered command the rest of the line is not ours); ':' makes a missing value
     * distinguishable from an unknown flag. */
    snprintf(opts, sizeof opts, "+:%s", shortopts);
    opterr = 0;
    int prev = optind ? optind : 1;
    int idx = -1;
    optarg = NULL;
    int c = getopt_long(argc, argv, opts, longopts, &idx);
    if (c == -1)
        return -1;
    const char *token = prev < argc && argv[prev] ? argv[prev] : "";
    bool is_long = strncmp(token, "--", 2) == 0;
    char flag[128];
    /* optopt is only set on errors; on success the short option is c itself */
    flag_text(token, c == '?' || c == ':' ? optopt : c, flag, sizeof flag);
    const struct option *exact = is_long ? long_exact(longopts, token) : NULL;

    /* getopt_long accepts unique abbreviations ("--fol"); rnx does not, so that a future
     * flag can never change what an existing command line means. */
    if (is_long && !exact && c != '?')
        c = '?';
    if (c == '?') {
        if (exact && exact->has_arg == no_argument && strchr(token, '='))
            return rnx_usage("flag '%s' does not take a value; see '%s --help'", flag, cmd), RNX_OPT_ERR;
        if (!is_long && token[0] == '-' && token[1] == optopt && token[2]) {
            /* "-name": a long flag typed with one dash */
            char dbl[128] = "-";
            size_t l = strcspn(token, "=");
            if (l < sizeof dbl - 1) {
                memcpy(dbl + 1, token, l);
                dbl[l + 1] = 0;
                if (long_exact(longopts, dbl))
                    return rnx_usage("unknown flag '%s' for '%s'; did you mean '%s'?", dbl + 1, cmd, dbl),
                           RNX_OPT_ERR;
            }
        }
        char hint[320];
        if (is_long)
            flag_hint(token, longopts, hint, sizeof hint);
        else
            hint[0] = 0;
        /* another tool's flag for the same thing (docker run's, sbatch's): the rnx way, where the
         * command has it (docs/cli.md, "Habits from other tools") */
        for (size_t i = 0; i < sizeof flag_habits / sizeof flag_habits[0]; i++)
            if (!strcmp(flag, flag_habits[i].habit) && long_exact(longopts, flag_habits[i].flag)) {
                snprintf(hint, sizeof hint, "%s", flag_habits[i].how);
                break;
            }
        if (hint[0])
            return rnx_usage("unknown flag '%s' for '%s'; %s", flag, cmd, hint), RNX_OPT_ERR;
        return rnx_usage("unknown flag '%s' for '%s'; see '%s --help'", flag, cmd, cmd), RNX_OPT_ERR;
    }
    if (c == ':')
        return rnx_usage("flag '%s' needs a value; see '%s --help'", flag, cmd), RNX_OPT_ERR;
    /* "--name --follow" would quietly name the job "--follow": a value that is one of this
     * command's own long flags means the value was forgotten. */
    if (optarg && optarg == argv[optind - 1] && strncmp(optarg, "--", 2) == 0 && optarg[2] &&
        long_exact(longopts, optarg))
        return rnx_usage("flag '%s' needs a value (got the flag '%s'); see '%s --help'", flag, optarg, cmd),
               RNX_OPT_ERR;
    if (optarg && given_once(c, optarg, flag, longopts, cmd) != 0)
        return RNX_OPT_ERR;
    return c;
}

int rnx_interval(const char *flag, const char *s, double *secs)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v))
        return rnx_usage("%s: '%s' is not a number of seconds; e.g. 2, 0.5 or 500ms", flag, s);
    if (!strcmp(end, "ms"))
        v /= 1000;
    else if (*end && strcmp(end, "s"))
        return rnx_usage("%s: '%s' is not a number of seconds; e.g. 2, 0.5 or 500ms", flag, s);
    if (v < 0.1 || v > 86400)
        return rnx_usage("%s: '%s' is out of range; give 0.1 to 86400 seconds", flag, s);
    *secs = v;
    return 0;
}

int rnx_count(const char *flag, const char *s, uint64_t *n)
{
    if (parse_u64(s, n) < 0 || *n < 1)
        return rnx_usage("%s: '%s' must be a whole number of samples, 1 or more", flag, s);
    return 0;
}

/* Commands of docker, kubectl and Slurm that rnx spells otherwise, by the group they are typed
 * in: the rnx command meant (the edit distance would offer 'stop' for 'top', 'runtime' for 'run'). */
static const struct {
    const char *group, *habit, *how;
} command_habits[] = {
    {"rnx job", "ps", "did you mean 'list'? (rnx job list: your jobs, ended ones too; --status=RUNNING for the running)"},
    {"rnx job", "ls", "did you mean 'list'?"},
    {"rnx job", "get", "did you mean 'list'? (or 'status ID')"},
    {"rnx job", "rm", "did you mean 'delete'? (an ended job's status and log; stop a running one first)"},
    {"rnx job", "inspect", "did you mean 'status'? (rnx job status ID; --json for the whole object)"},
    {"rnx job", "describe", "did you mean 'status'? (rnx job status ID --detail: its events too)"},
    {"rnx job", "top", "rnx job metrics ID shows its CPU, memory and GPU use; rnx job exec ID ps its processes"},
    {"rnx job", "stats", "did you mean 'metrics'?"},
    {"rnx", "run", "did you mean 'rnx job run'?"},
    {"rnx", "ps", "did you mean 'rnx job list'?"},
    {"rnx", "ls", "did you mean 'rnx job list'?"},
    {"rnx", "logs", "did you mean 'rnx job log'?"},
    {"rnx", "log", "did you mean 'rnx job log'?"},
    {"rnx", "exec", "did you mean 'rnx job exec'?"},
    {"rnx", "attach", "did you mean 'rnx job attach'?"},
    {"rnx", "status", "did you mean 'rnx job status'?"},
    {"rnx", "inspect", "did you mean 'rnx job status'?"},
    {"rnx", "stop", "did you mean 'rnx job stop'?"},
    {"rnx", "kill", "did you mean 'rnx job kill'?"},
    {"rnx", "rm", "did you mean 'rnx job delete'?"},
    {"rnx", "cp", "did you mean 'rnx job cp'?"},
    {"rnx", "wait", "did you mean 'rnx job wait'?"},
    {"rnx", "sbatch", "did you mean 'rnx job batch'? (it reads sbatch's options and #SBATCH lines)"},
    {"rnx", "srun", "did you mean 'rnx job run'? (-f to wait for it and see its output)"},
    {"rnx", "squeue", "did you mean 'rnx job list'?"},
    {"rnx", "scancel", "did you mean 'rnx job cancel'? (or 'rnx job stop': running ones too)"},
    {"rnx", "scontrol", "scontrol hold|release|update|suspend|resume|requeue|top ID is 'rnx job "
                        "hold|release|update|suspend|resume|requeue ID' (top: rnx job update ID --priority=N), show "
                        "job ID 'rnx job status ID'"},
    {"rnx", "sacct", "did you mean 'rnx job status ID'? (or 'rnx job list': ended jobs too)"},
};

int rnx_env_pair(const char *flag, const char *arg, char *name, size_t namelen, const char **value)
{
    jerr e = {0};
    /* -e K alone, as docker run -e K: the value of K in rnx's own environment */
    if (!strchr(arg, '=') && env_key_valid(arg) && strlen(arg) < namelen) {
        const char *v = getenv(arg);
        if (!v)
            return rnx_usage("%s: '%s' has no value here: it is not set in your environment (give %s=VALUE, or "
                             "export %s first)", flag, arg, arg, arg);
        strcpy(name, arg);
        *value = v;
        return 0;
    }
    if (parse_env_pair(flag, arg, name, namelen, value, &e) < 0)
        return rnx_usage("%s", e.msg);
    return 0;
}

int rnx_unknown_command(const char *word, const char *group, const char *const *cmds, size_t n)
{
    for (size_t i = 0; i < sizeof command_habits / sizeof command_habits[0]; i++)
        if (!strcmp(group, command_habits[i].group) && !strcmp(word, command_habits[i].habit))
            return rnx_usage("unknown command '%s' for '%s'; %s", word, group, command_habits[i].how);
    const char *best = suggest_closest(word, cmds, n);
    if (best)
        return rnx_usage("unknown command '%s' for '%s'; did you mean '%s'?", word, group, best);
    return rnx_usage("unknown command '%s' for '%s'; see '%s --help'", word, group, group);
}
