/* rnx completion: the completion scripts for bash and zsh, and the candidates they ask for.
 *
 * Nothing here lists rnx's commands or flags. Each completion runs this same binary's help
 * ("rnx --help", "rnx job --help", "rnx job run --help") and reads from it the commands, the
 * flags with the value each takes, and the arguments of the command line being completed, so
 * completion cannot drift from what rnx documents. What this file knows is what a help
 * text's placeholders mean (ID, GPU, NAME, FILE, COMMAND, ...: cpl_values) and where the
 * daemon lists the names that fit them; a daemon that does not answer (in time) gives no
 * candidates, never an error on the terminal.
 *
 * The scripts call "rnx completion complete -- WORDS...", WORDS being the command line up to
 * the cursor, the last one the word being completed (possibly empty). The answer is one
 * candidate a line ("value" or "value<TAB>description"), then one directive line:
 *   :words          the candidates above
 *   :commands       the candidates above, which are subcommands (the man page generator
 *                   walks the command tree with them)
 *   :files [GLOB]   file names (of GLOB, and directories) for the value part of the word
 *   :users          user names
 *   :command N      WORDS[N] on is a job's own command line: complete it as the shell would
 *                   complete a command line */
#include "cmd_completion.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/util.h"
#include "client.h"
#include "cmd_node.h"

extern char **environ;

static const char completion_help[] =
    "Usage: rnx completion bash|zsh\n"
    "\n"
    "Prints rnx's completion script for bash or zsh. Load it into the running shell with\n"
    "'source <(rnx completion bash)' (zsh: 'source <(rnx completion zsh)' after compinit), or\n"
    "install it where the shell looks for it: meson install puts it in\n"
    "share/bash-completion/completions/rnx and share/zsh/vendor-completions/_rnx.\n"
    "\n"
    "It completes commands, flags and their values, files for --upload and workflow files,\n"
    "the job's own command line after 'rnx job run [flags]', node names (rnx node), and job ids\n"
    "and names, GPUs, volumes and runtimes when joblet answers. Commands and flags are read from\n"
    "rnx's own help at each completion, so they are always this rnx's. The scripts ask\n"
    "'rnx completion complete -- WORDS...' for the candidates of the last of WORDS.\n"
    "\n"
    "Flags:\n"
    "  -h, --help   show this help\n";

/* ---- the scripts ------------------------------------------------------------------------ */

static const char bash_script[] =
    "# bash completion for rnx, printed by 'rnx completion bash' (see 'rnx completion --help').\n"
    "# The candidates come from 'rnx completion complete', which reads rnx's own help.\n"
    "\n"
    "_rnx() {\n"
    "    local rnx=${COMP_WORDS[0]} line=${COMP_LINE:0:COMP_POINT} w ws i out directive piece sync=1\n"
    "    local -a words=() at=() lines=() cands=()\n"
    "    [[ $rnx == \"~/\"* ]] && rnx=$HOME/${rnx#\"~/\"}\n"
    "    [[ -n $line ]] || line=\"${COMP_WORDS[*]:0:COMP_CWORD+1}\"\n"
    "    # The words up to the cursor as rnx gets them: what COMP_WORDBREAKS split off without\n"
    "    # a blank between (\"--network=host\", \"data:ro\") is one word again.\n"
    "    for ((i = 0; i <= COMP_CWORD; i++)); do\n"
    "        w=${COMP_WORDS[i]}\n"
    "        ws=${line%%[![:space:]]*}\n"
    "        line=${line#\"$ws\"}\n"
    "        if ((i == COMP_CWORD)); then\n"
    "            [[ -n $sync && $w == \"$line\"* ]] && w=$line   # up to the cursor\n"
    "            piece=$w\n"
    "        elif [[ $line == \"$w\"* ]]; then\n"
    "            line=${line#\"$w\"}\n"
    "        else\n"
    "            sync=   # COMP_LINE does not show the words: take them as they are\n"
    "        fi\n"
    "        if ((i > 0)) && [[ -n $sync && -z $ws ]]; then\n"
    "            words[${#words[@]}-1]+=$w\n"
    "        else\n"
    "            words+=(\"$w\")\n"
    "            at+=(\"$i\")\n"
    "        fi\n"
    "    done\n"
    "    out=$(\"$rnx\" completion complete -- \"${words[@]}\" 2>/dev/null) || return 0\n"
    "    mapfile -t lines <<<\"$out\"\n"
    "    directive=${lines[${#lines[@]}-1]}\n"
    "    unset 'lines[${#lines[@]}-1]'\n"
    "    local cur=${words[${#words[@]}-1]} value\n"
    "    # readline replaces only the part after the last word break (the value of --flag=)\n"
    "    case $piece in =|:) piece= ;; esac\n"
    "    local keep=${cur%\"$piece\"}\n"
    "    case $directive in\n"
    "    ':files'*|':users')\n"
    "        value=$cur\n"
    "        [[ $value == --*=* ]] && value=${value#*=}\n"
    "        if [[ $directive == ':users' ]]; then\n"
    "            mapfile -t cands < <(compgen -u -- \"$value\")\n"
    "        elif [[ $directive == ':files '* ]]; then\n"
    "            mapfile -t cands < <(compgen -f -X \"!${directive#:files }\" -- \"$value\"\n"
    "                                 compgen -d -- \"$value\")\n"
    "            compopt -o filenames 2>/dev/null\n"
    "        else\n"
    "            mapfile -t cands < <(compgen -f -- \"$value\")\n"
    "            compopt -o filenames 2>/dev/null\n"
    "        fi\n"
    "        cands=(\"${cands[@]/#/${cur%\"$value\"}}\")\n"
    "        ;;\n"
    "    ':command '*)\n"
    "        local n=${directive#:command }\n"
    "        if declare -F _command_offset >/dev/null; then\n"
    "            _command_offset \"${at[n]}\"\n"
    "            return 0\n"
    "        fi\n"
    "        if ((n == ${#words[@]} - 1)); then\n"
    "            mapfile -t cands < <(compgen -c -- \"$cur\")\n"
    "        else\n"
    "            mapfile -t cands < <(compgen -f -- \"$cur\")\n"
    "            compopt -o filenames 2>/dev/null\n"
    "        fi\n"
    "        ;;\n"
    "    *)\n"
    "        for w in \"${lines[@]}\"; do cands+=(\"${w%%$'\\t'*}\"); done\n"
    "        ;;\n"
    "    esac\n"
    "    COMPREPLY=()\n"
    "    for w in \"${cands[@]}\"; do\n"
    "        [[ $w == \"$keep\"* ]] && COMPREPLY+=(\"${w#\"$keep\"}\")\n"
    "    done\n"
    "    return 0\n"
    "}\n"
    "complete -F _rnx rnx\n";

static const char zsh_script[] =
    "#compdef rnx\n"
    "# zsh completion for rnx, printed by 'rnx completion zsh' (see 'rnx completion --help').\n"
    "# The candidates come from 'rnx completion complete', which reads rnx's own help.\n"
    "compdef _rnx rnx\n"
    "\n"
    "_rnx() {\n"
    "  local out directive line n\n"
    "  local -a lines specs\n"
    "  out=$(${~words[1]} completion complete -- \"${(@)words[1,CURRENT-1]}\" \"$PREFIX\" 2>/dev/null) || return 1\n"
    "  lines=(\"${(@f)out}\")\n"
    "  (( ${#lines} )) || return 1\n"
    "  directive=${lines[-1]}\n"
    "  lines[-1]=()\n"
    "  case $directive in\n"
    "    (:files*)\n"
    "      [[ $PREFIX == --*=* ]] && compset -P '*='\n"
    "      if [[ $directive == ':files '* ]]; then\n"
    "        _files -g \"${directive#:files }\"\n"
    "      else\n"
    "        _files\n"
    "      fi\n"
    "      ;;\n"
    "    (:users)\n"
    "      [[ $PREFIX == --*=* ]] && compset -P '*='\n"
    "      _users\n"
    "      ;;\n"
    "    (:command\\ *)\n"
    "      n=${directive#:command }\n"
    "      shift $n words\n"
    "      (( CURRENT -= n ))\n"
    "      _normal\n"
    "      ;;\n"
    "    (*)\n"
    "      for line in $lines; do\n"
    "        if [[ $line == *$'\\t'* ]]; then\n"
    "          specs+=(\"${${line%%$'\\t'*}//:/\\\\:}:${line#*$'\\t'}\")\n"
    "        else\n"
    "          specs+=(\"${line//:/\\\\:}\")\n"
    "        fi\n"
    "      done\n"
    "      (( ${#specs} )) && _describe -t values rnx specs\n"
    "      ;;\n"
    "  esac\n"
    "}\n"
    "\n"
    "# autoloaded from fpath: complete now; sourced: compdef above is all\n"
    "if [ \"$funcstack[1]\" = \"_rnx\" ]; then\n"
    "  _rnx \"$@\"\n"
    "fi\n";

/* ---- the help text, read ---------------------------------------------------------------- */

#define CPL_MAX_FLAGS 128
#define CPL_MAX_SUBS  64
#define CPL_MAX_POS   8
#define CPL_MAX_HELP  (1u << 20)

typedef struct cpl_flag {
    char shortopt;   /* 'e' for -e, 0 when it has none */
    char name[48];   /* "max-memory" for --max-memory, "" for a flag with only a short form */
    char arg[64];    /* the value's placeholder ("SIZE", "none|host"), "" when it takes none */
    char desc[512];  /* its description, continuation lines joined */
} cpl_flag;

typedef struct cpl_sub {
    char name[48];
    char desc[160];
} cpl_sub;

/* What one command's help says about its command line. */
typedef struct cpl_doc {
    bool group;                  /* has subcommands (a "Commands:" section) */
    cpl_flag flags[CPL_MAX_FLAGS];
    size_t nflags;
    cpl_sub subs[CPL_MAX_SUBS];
    size_t nsubs;
    char pos[CPL_MAX_POS][64];   /* the positional arguments' placeholders, in order */
    size_t npos;
    bool pos_repeat;             /* the last one repeats ("[ARGS...]") */
} cpl_doc;

/* The stdout of "rnx PATH... --help" (this binary), NULL when it fails. Caller frees. */
static char *cpl_help_text(const char *const *path, size_t n)
{
    char *argv[8];
    size_t k = 0;
    if (n > 4)
        return NULL;
    argv[k++] = (char *)"rnx";
    for (size_t i = 0; i < n; i++)
        argv[k++] = (char *)path[i];
    argv[k++] = (char *)"--help";
    argv[k] = NULL;

    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return NULL;
    }
    size_t len = 0, cap = 16384;
    char *text = xmalloc(cap);
    ssize_t got;
    while ((got = read(p[0], text + len, cap - len - 1)) > 0) {
        len += (size_t)got;
        if (len + 1 == cap) {
            if (cap >= CPL_MAX_HELP)
                break;
            cap *= 2;
            text = xrealloc(text, cap);
        }
    }
    text[len] = 0;
    close(p[0]);
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (w != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || len == 0) {
        free(text);
        return NULL;
    }
    return text;
}

static size_t cpl_indent(const char *line)
{
    size_t i = 0;
    while (line[i] == ' ')
        i++;
    return i;
}

static void cpl_copy(char *dst, size_t cap, const char *src, size_t len)
{
    if (len >= cap)
        len = cap - 1;
    memcpy(dst, src, len);
    dst[len] = 0;
}

/* Appends text (len bytes) to a description, one space between pieces. */
static void cpl_append(char *dst, size_t cap, const char *text, size_t len)
{
    size_t l = strlen(dst);
    while (len && (*text == ' '))
        text++, len--;
    while (len && text[len - 1] == ' ')
        len--;
    if (!len || l + 2 >= cap)
        return;
    if (l)
        dst[l++] = ' ';
    cpl_copy(dst + l, cap - l, text, len);
}

/* A value's placeholder as help texts write them: capitalised ("SIZE", "K=V", "NAME[:ro]") or
 * alternatives ("none|host", "N|all"). A lower-case word is the description's first. */
static bool cpl_placeholder(const char *s, size_t len)
{
    return len && (isupper((unsigned char)s[0]) || memchr(s, '|', len));
}

/* Reads a flag as help texts write it: "-e, --env K=V", "--max-cpu PERCENT",
 * "--size=SIZE", "--stream stdout|stderr", "--probe-gpus[=BACKEND]", "--json".
 * Returns where the flag's text ends (its description follows), NULL when s is no flag. */
static const char *cpl_flag_spec(const char *s, cpl_flag *f)
{
    memset(f, 0, sizeof *f);
    if (s[0] == '-' && isalnum((unsigned char)s[1]) && strchr(", ]", s[2] ? s[2] : ' ')) {
        f->shortopt = s[1];
        s += 2;
        if (*s == ',')
            s++;
        while (*s == ' ' && s[1] == '-')
            s++;
    }
    if (s[0] == '-' && s[1] == '-' && isalnum((unsigned char)s[2])) {
        size_t l = 2;
        while (isalnum((unsigned char)s[l]) || s[l] == '-')
            l++;
        cpl_copy(f->name, sizeof f->name, s + 2, l - 2);
        s += l;
    } else if (!f->shortopt) {
        return NULL;
    }
    /* the value: "=ARG", "[=ARG]", or " ARG" (one blank: "--max-runtime DURATION stop the job"
     * leaves no wider gap before its description) */
    const char *a = NULL;
    if (s[0] == '=')
        a = s + 1;
    else if (s[0] == '[' && s[1] == '=')
        a = s + 2;
    else if (s[0] == ' ' && s[1] && s[1] != ' ' && cpl_placeholder(s + 1, strcspn(s + 1, " ]")))
        a = s + 1;
    if (a) {
        size_t l = strcspn(a, " ]");
        cpl_copy(f->arg, sizeof f->arg, a, l);
        s = a + l;
        if (*s == ']')
            s++;
    }
    return s;
}

static cpl_flag *cpl_find_long(cpl_doc *d, const char *name, size_t len)
{
    for (size_t i = 0; i < d->nflags; i++)
        if (d->flags[i].name[0] && strlen(d->flags[i].name) == len && !strncmp(d->flags[i].name, name, len))
            return &d->flags[i];
    return NULL;
}

/* Adds a flag, or completes what is known of it: a help may name a flag in its usage line
 * with its values ("[--stream stdout|stderr]") and describe it below as "--stream S". */
static void cpl_add_flag(cpl_doc *d, const cpl_flag *f)
{
    cpl_flag *e = NULL;
    if (f->name[0])
        e = cpl_find_long(d, f->name, strlen(f->name));
    /* "-f" alone (a usage line's "[-f|--no-follow]"), then "-f, --follow": one flag */
    for (size_t i = 0; i < d->nflags && !e && f->shortopt; i++)
        if (d->flags[i].shortopt == f->shortopt && (!f->name[0] || !d->flags[i].name[0]))
            e = &d->flags[i];
    if (!e) {
        if (d->nflags < CPL_MAX_FLAGS)
            d->flags[d->nflags++] = *f;
        return;
    }
    if (!e->shortopt)
        e->shortopt = f->shortopt;
    if (!e->name[0])
        snprintf(e->name, sizeof e->name, "%s", f->name);
    if (f->arg[0] && (!e->arg[0] || (strchr(f->arg, '|') && !strchr(e->arg, '|'))))
        snprintf(e->arg, sizeof e->arg, "%s", f->arg);
    if (!e->desc[0])
        snprintf(e->desc, sizeof e->desc, "%s", f->desc);
}

/* The words of a synopsis after the command ("[--json] [--status STATUS]",
 * "[flags] COMMAND [ARGS...]", "NAME FILE.tar.zst|-"): its flags, and with positionals its
 * arguments. "<command>" makes it a group; lower-case words ("[flags]") are no arguments. */
static void cpl_synopsis(cpl_doc *d, const char *s, bool positionals)
{
    while (*s) {
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        const char *start = s;
        int depth = 0;
        while (*s && (depth > 0 || *s != ' ')) {
            depth += *s == '[' ? 1 : *s == ']' ? -1 : 0;
            s++;
        }
        char tok[160];
        cpl_copy(tok, sizeof tok, start, (size_t)(s - start));
        char *in = tok;
        size_t l = strlen(in);
        if (in[0] == '[' && in[l - 1] == ']') {
            in[l - 1] = 0;
            in++;
        }
        if (in[0] == '-') {
            /* "[-f|--no-follow]": alternatives, each a flag ("-f, --follow" is how an option
             * line writes two names of one flag); "--stream stdout|stderr" is one */
            for (char *alt = in, *bar; alt; alt = bar) {
                bar = strstr(alt, "|-");
                if (bar)
                    *bar++ = 0;
                cpl_flag f;
                if (cpl_flag_spec(alt, &f))
                    cpl_add_flag(d, &f);
            }
        } else if (!strcmp(in, "<command>")) {
            d->group = true;
        } else if (positionals && cpl_placeholder(in, strlen(in)) && d->npos < CPL_MAX_POS) {
            l = strlen(in);
            bool repeat = l > 3 && !strcmp(in + l - 3, "...");
            if (repeat)
                in[l - 3] = 0;
            snprintf(d->pos[d->npos++], sizeof d->pos[0], "%s", in);
            d->pos_repeat = repeat;
        }
    }
}

/* "--word" mentioned in a command's description ("drain GPU ... (--force: stop them now)"):
 * flags of that command, their values unknown. */
static void cpl_mentions(cpl_doc *d, const char *s)
{
    for (const char *p = strstr(s, "--"); p; p = strstr(p + 2, "--")) {
        if ((p > s && p[-1] != ' ' && p[-1] != '(') || !isalnum((unsigned char)p[2]))
            continue;
        cpl_flag f;
        if (cpl_flag_spec(p, &f) && !cpl_find_long(d, f.name, strlen(f.name))) {
            f.arg[0] = 0;
            cpl_add_flag(d, &f);
        }
    }
}

/* One entry of a "Commands:" section: its term ("log [--stream S] [--no-follow] ID") and
 * all its description, continuation lines joined. */
typedef struct cpl_entry {
    char term[160];
    char desc[768];
} cpl_entry;

/* Reads the entry starting at lines[i]; returns the index of the line after it. */
static size_t cpl_read_entry(char **lines, size_t n, size_t i, cpl_entry *e)
{
    const char *l = lines[i];
    size_t ind = cpl_indent(l);
    const char *term = l + ind, *gap = strstr(term, "  ");
    memset(e, 0, sizeof *e);
    cpl_copy(e->term, sizeof e->term, term, gap ? (size_t)(gap - term) : strlen(term));
    if (gap)
        cpl_append(e->desc, sizeof e->desc, gap, strlen(gap));
    for (i++; i < n && lines[i][0] && cpl_indent(lines[i]) > ind + 1; i++)
        cpl_append(e->desc, sizeof e->desc, lines[i], strlen(lines[i]));
    return i;
}

static void cpl_add_sub(cpl_doc *d, const char *name, size_t len, const char *desc)
{
    for (size_t i = 0; i < d->nsubs; i++)
        if (strlen(d->subs[i].name) == len && !strncmp(d->subs[i].name, name, len))
            return;
    if (d->nsubs >= CPL_MAX_SUBS)
        return;
    cpl_copy(d->subs[d->nsubs].name, sizeof d->subs[0].name, name, len);
    snprintf(d->subs[d->nsubs].desc, sizeof d->subs[0].desc, "%s", desc);
    d->nsubs++;
}

/* rnx's own help (depth 0) lists "job run", "job list", ..., "audit": its commands are the
 * first words, described by their one entry or by their subcommands' names. */
static void cpl_top_commands(cpl_doc *d, const cpl_entry *ents, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(ents[i].term, " ");
        char desc[160] = "";
        size_t count = 0;
        for (size_t j = 0; j < n; j++) {
            if (strncmp(ents[j].term, ents[i].term, len) || (ents[j].term[len] && ents[j].term[len] != ' '))
                continue;
            const char *second = ents[j].term + len + strspn(ents[j].term + len, " ");
            size_t l2 = strcspn(second, " ");
            char piece[64];
            cpl_copy(piece, sizeof piece, second, l2);
            /* "drain|offline|online" */
            for (char *p = piece, *bar; l2 && (bar = strsep(&p, "|"));)
                snprintf(desc + strlen(desc), sizeof desc - strlen(desc), "%s%s", desc[0] ? ", " : "", bar);
            count++;
        }
        cpl_add_sub(d, ents[i].term, len, count == 1 ? ents[i].desc : desc);
    }
}

/* What the help of "rnx PATH..." says (depth n <= 2): false when there is no such command.
 * A subcommand that prints its group's help ("rnx gpu show --help") is read from its entry
 * in the group's "Commands:" section, with the group's flags. */
static bool cpl_load(const char *const *path, size_t n, cpl_doc *d)
{
    memset(d, 0, sizeof *d);
    if (n > 2)
        return false;
    char *text = cpl_help_text(path, n);
    if (!text)
        return false;
    size_t nlines = 0, cap = 64;
    char **lines = xmalloc(cap * sizeof *lines);
    for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
        nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        if (nlines == cap)
            lines = xrealloc(lines, (cap *= 2) * sizeof *lines);
        lines[nlines++] = p;
    }

    char prefix[160] = "rnx", parent[160] = "rnx";
    for (size_t i = 0; i < n; i++) {
        snprintf(prefix + strlen(prefix), sizeof prefix - strlen(prefix), " %s", path[i]);
        if (i + 1 < n)
            snprintf(parent + strlen(parent), sizeof parent - strlen(parent), " %s", path[i]);
    }
    bool own = n == 0, has_cmds = false, in_usage = false, in_cmds = false;
    cpl_entry *ents = xcalloc(CPL_MAX_SUBS, sizeof *ents);
    /* one help for several subcommands ("rnx monitor status [--json]", "rnx monitor watch
     * [--interval S] ..."): a flag only a sibling's usage line names is the sibling's */
    cpl_doc *mine = xcalloc(1, sizeof *mine), *sibling = xcalloc(1, sizeof *sibling);
    size_t nents = 0;
    for (size_t i = 0; i < nlines;) {
        const char *l = lines[i];
        size_t ind = cpl_indent(l);
        /* usage lines: "Usage: rnx job run [flags] COMMAND [ARGS...]" and those below it */
        const char *syn = NULL;
        if (!strncasecmp(l, "usage:", 6)) {
            in_usage = true;
            syn = l + 6 + strspn(l + 6, " ");
        } else if (in_usage && ind && !strncmp(l + ind, "rnx ", 4)) {
            syn = l + ind;
        } else {
            in_usage = false;
        }
        if (syn && n > 0) {
            size_t pl = strlen(prefix), ql = strlen(parent);
            if (!strncmp(syn, prefix, pl) && (!syn[pl] || syn[pl] == ' ')) {
                own = true;
                cpl_synopsis(d, syn + pl, true);
                cpl_synopsis(mine, syn + pl, false);
            } else if (n == 2 && !strncmp(syn, parent, ql) && !strncmp(syn + ql, " <command>", 10)) {
                cpl_synopsis(d, syn + ql, false);   /* the group's own flags ("rnx gpu <command> [--json]") */
            } else if (n == 2 && !strncmp(syn, parent, ql) && syn[ql] == ' ') {
                cpl_synopsis(sibling, syn + ql, false);
            }
        }
        if (syn) {
            i++;
            continue;
        }
        if (ind == 0 && l[0] && l[0] != '-') {
            in_cmds = !strcmp(l, "Commands:");
            has_cmds |= in_cmds;
            i++;
            continue;
        }
        /* "  -e, --env K=V   set ...", "--json prints the API's objects": a flag and its
         * description; lines indented deeper than the flag continue the description */
        cpl_flag f;
        const char *rest;
        if (ind < 8 && l[ind] == '-' && (rest = cpl_flag_spec(l + ind, &f))) {
            cpl_append(f.desc, sizeof f.desc, rest, strlen(rest));
            for (i++; i < nlines && lines[i][0] && cpl_indent(lines[i]) > ind + 2 &&
                      (cpl_indent(lines[i]) >= 8 || lines[i][cpl_indent(lines[i])] != '-');
                 i++)
                cpl_append(f.desc, sizeof f.desc, lines[i], strlen(lines[i]));
            cpl_add_flag(d, &f);
            continue;
        }
        if (in_cmds && ind >= 1 && ind <= 4 && islower((unsigned char)l[ind]) && nents < CPL_MAX_SUBS) {
            i = cpl_read_entry(lines, nlines, i, &ents[nents++]);
            continue;
        }
        i++;
    }

    for (size_t i = 0; own && i < d->nflags;) {
        const cpl_flag *f = &d->flags[i];
        size_t l = strlen(f->name);
        if (l && cpl_find_long(sibling, f->name, l) && !cpl_find_long(mine, f->name, l))
            memmove(&d->flags[i], &d->flags[i + 1], (--d->nflags - i) * sizeof *f);
        else
            i++;
    }
    free(mine);
    free(sibling);

    bool ok = true;
    if (n == 2 && !own) {
        /* the group's help: this subcommand's entry */
        const cpl_entry *e = NULL;
        size_t sl = strlen(path[1]);
        for (size_t i = 0; i < nents && !e; i++)
            if (!strncmp(ents[i].term, path[1], sl) && (!ents[i].term[sl] || ents[i].term[sl] == ' '))
                e = &ents[i];
        if (e) {
            cpl_synopsis(d, e->term + sl, true);
            cpl_mentions(d, e->term);
            cpl_mentions(d, e->desc);
        }
        ok = e != NULL;
        d->group = false;
    } else if (n < 2 && has_cmds) {
        d->group = true;
        d->npos = 0;
        if (n == 0)
            cpl_top_commands(d, ents, nents);
        else
            for (size_t i = 0; i < nents; i++)
                cpl_add_sub(d, ents[i].term, strcspn(ents[i].term, " "), ents[i].desc);
    } else {
        d->group = false;
    }
    free(ents);
    free(lines);
    free(text);
    return ok;
}

/* ---- candidates ------------------------------------------------------------------------- */

typedef struct cpl_out {
    FILE *f;         /* the answer, written at the end (a timeout prints nothing) */
    const char *cur; /* the word being completed */
} cpl_out;

/* One candidate, when it continues the word being completed. Values with blanks or control
 * characters (a job named "a b") are left out: no shell could take them back as one word. */
static void cpl_emit(cpl_out *o, const char *prefix, const char *value, const char *desc)
{
    size_t pl = strlen(prefix), cl = strlen(o->cur);
    if (strncmp(prefix, o->cur, pl < cl ? pl : cl) || (cl > pl && strncmp(value, o->cur + pl, cl - pl)))
        return;
    uint32_t cp;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++)
        if (*p <= ' ' || *p == 0x7f || utf8_control_len(p, &cp))
            return;
    fprintf(o->f, "%s%s", prefix, value);
    if (desc && *desc) {
        fputc('\t', o->f);
        for (const unsigned char *p = (const unsigned char *)desc; *p && p - (const unsigned char *)desc < 120; p++) {
            size_t ctl = utf8_control_len(p, &cp);
            if (ctl)
                p += ctl - 1;
            fputc(ctl || *p < ' ' || *p == 0x7f ? ' ' : *p, o->f);
        }
    }
    fputc('\n', o->f);
}

/* The names of what the daemon keeps, for placeholders that name one (GET path; the
 * objects' key; an alternative key such as a job's name; what describes one). */
static const struct cpl_noun {
    const char *noun, *path, *array, *key, *alt, *desc[3];
} cpl_nouns[] = {
    {"job", "/v1/jobs", "jobs", "id", "name", {"name", "status", "command"}},
    {"workflow", "/v1/workflows", "workflows", "id", "name", {"name", "state", NULL}},
    {"gpu", "/v1/gpus", "gpus", "index", NULL, {"name", "state", NULL}},
    {"volume", "/v1/volumes", "volumes", "name", NULL, {"type", "state", NULL}},
    {"network", "/v1/networks", "networks", "name", NULL, {"mode", "cidr", NULL}},
    {"runtime", "/v1/runtimes", "runtimes", "name", NULL, {"description", NULL, NULL}},
    {"build", "/v1/runtime-builds", "builds", "id", NULL, {"name", "state", NULL}},
};

static const struct cpl_noun *cpl_noun(const char *name)
{
    for (size_t i = 0; name && i < ARRAY_LEN(cpl_nouns); i++)
        if (!strcmp(cpl_nouns[i].noun, name))
            return &cpl_nouns[i];
    return NULL;
}

/* A key's value as text: strings as they are, integers in decimal, anything else "". */
static void cpl_json_text(json_t *v, char *buf, size_t cap)
{
    if (json_is_string(v))
        snprintf(buf, cap, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else
        buf[0] = 0;
}

static void cpl_alarm(int sig)
{
    (void)sig;
    _exit(1);
}

static void cpl_objects(cpl_out *o, const struct cpl_noun *nn, rnx_ctx *ctx, const char *prefix)
{
    /* a daemon that does not answer must not hang the shell: past 3 s, no candidates. (Only
     * the question: reading this binary's own help takes what it takes, and a loaded machine's
     * build reads all of it for the man page: scripts/mkman.py.) */
    signal(SIGALRM, cpl_alarm);
    alarm(3);
    if (cmd_node_target(ctx, true) != RNX_OK) {
        alarm(0);
        return;   /* no daemon to ask, no candidates */
    }
    rnx_client *c = client_new(&ctx->target);
    json_t *ans = NULL;
    jerr e = {0};
    int rc = client_request(c, "GET", nn->path, NULL, &ans, &e);
    alarm(0);
    client_free(c);
    if (rc < 0)
        return;   /* no daemon, no candidates */
    json_t *arr = json_object_get(ans, nn->array), *it;
    size_t i;
    json_array_foreach(arr, i, it)
    {
        char key[256], desc[256] = "", part[128];
        cpl_json_text(json_object_get(it, nn->key), key, sizeof key);
        for (size_t k = 0; k < 3 && nn->desc[k]; k++) {
            cpl_json_text(json_object_get(it, nn->desc[k]), part, sizeof part);
            if (part[0])
                snprintf(desc + strlen(desc), sizeof desc - strlen(desc), "%s%s", desc[0] ? "  " : "", part);
        }
        if (key[0])
            cpl_emit(o, prefix, key, desc);
    }
    if (nn->alt) {
        /* names, where one names one object only (a name shared by two is refused by rnx) */
        json_array_foreach(arr, i, it)
        {
            char alt[256], key[256];
            cpl_json_text(json_object_get(it, nn->alt), alt, sizeof alt);
            cpl_json_text(json_object_get(it, nn->key), key, sizeof key);
            if (!alt[0])
                continue;
            size_t same = 0, j;
            json_t *other;
            json_array_foreach(arr, j, other)
            {
                char a2[256];
                cpl_json_text(json_object_get(other, nn->alt), a2, sizeof a2);
                same += !strcmp(a2, alt);
            }
            if (same == 1)
                cpl_emit(o, prefix, alt, key);
        }
    }
    json_decref(ans);
}

/* Choices a flag's description lists after a colon: "only jobs in this state: PENDING,
 * SCHEDULED, QUEUED, ..." or "driver capabilities: compute, utility, video, ...": three or
 * more single words separated by commas, up to the end of the sentence. Returns how many
 * were stored into words (each NUL-terminated inside buf). */
static size_t cpl_desc_choices(const char *desc, char *buf, size_t cap, const char **words, size_t max)
{
    for (const char *colon = strchr(desc, ':'); colon; colon = strchr(colon + 1, ':')) {
        const char *p = colon + 1;
        size_t n = 0, used = 0;
        for (;;) {
            while (*p == ' ')
                p++;
            size_t l = 0;
            while (isalnum((unsigned char)p[l]) || p[l] == '_' || p[l] == '-')
                l++;
            if (!l || !isalpha((unsigned char)p[0]) || used + l + 1 > cap || n == max)
                break;
            memcpy(buf + used, p, l);
            buf[used + l] = 0;
            words[n++] = buf + used;
            used += l + 1;
            p += l;
            if (*p != ',')
                break;
            p++;
        }
        /* the list must end the sentence: "PENDING, ..., CANCELED" then end, '.', ';' or '(' */
        while (*p == ' ')
            p++;
        if (n >= 3 && (!*p || strchr(".;(", *p)))
            return n;
    }
    return 0;
}

typedef struct cpl_node_out {
    cpl_out *o;
    const char *prefix;
    bool has_local;   /* "local" is among the placeholder's literals already ("NAME|local") */
} cpl_node_out;

static void cpl_node(const char *name, const char *desc, void *ud)
{
    cpl_node_out *no = ud;
    if (!no->has_local || strcmp(name, "local"))
        cpl_emit(no->o, no->prefix, name, desc);
}

/* Completes the value of a placeholder: an argument of command path (pos) or the value of
 * flag fl. prefix is what the word has before the value ("--network=" or ""). Returns the
 * directive. */
static const char *cpl_values(cpl_out *o, const char *arg, const cpl_flag *fl, const char *const *path,
                              size_t depth, rnx_ctx *ctx, const char *prefix)
{
    char alts[64];
    snprintf(alts, sizeof alts, "%s", arg);
    const char *ph = NULL;   /* the placeholder among the alternatives ("N" of "N|all") */
    bool literals = false;
    for (char *save = NULL, *a = strtok_r(alts, "|", &save); a; a = strtok_r(NULL, "|", &save)) {
        if (isupper((unsigned char)a[0])) {
            if (!ph)
                ph = a;
        } else if (islower((unsigned char)a[0])) {
            cpl_emit(o, prefix, a, NULL);
            literals = true;
        }
    }
    if (!ph)
        return ":words";
    char base[64];
    snprintf(base, sizeof base, "%.*s", (int)strcspn(ph, "[:"), ph);   /* "NAME" of "NAME[:ro]" */

    if (fl && !literals) {
        char buf[512];
        const char *words[32];
        size_t n = cpl_desc_choices(fl->desc, buf, sizeof buf, words, ARRAY_LEN(words));
        if (n) {
            /* a LIST takes several: complete the last one after its comma */
            const char *value = strlen(o->cur) >= strlen(prefix) ? o->cur + strlen(prefix) : "";
            const char *comma = !strcmp(base, "LIST") ? strrchr(value, ',') : NULL;
            char pre[256];
            snprintf(pre, sizeof pre, "%s%.*s", prefix, comma ? (int)(comma + 1 - value) : 0, value);
            for (size_t i = 0; i < n; i++)
                cpl_emit(o, pre, words[i], NULL);
            return ":words";
        }
    }
    /* files: PATH, FILE, and FILE.ext / RECIPE.yml (of that extension) */
    const char *dot = strchr(base, '.');
    if (dot && islower((unsigned char)dot[1])) {
        fprintf(o->f, ":files *%s\n", dot);
        return NULL;
    }
    if (!strcmp(base, "PATH") || !strcmp(base, "FILE"))
        return ":files";
    if (!strcmp(base, "USER"))
        return ":users";
    /* the nodes of nodes.yml: --node NAME, rnx node use|show|remove NAME (not add's new one) */
    if (!strcmp(base, "NAME") && ((fl && !strcmp(fl->name, "node")) ||
                                  (!fl && depth == 2 && !strcmp(path[0], "node") && strcmp(path[1], "add")))) {
        cpl_node_out no = {o, prefix, literals};
        cmd_node_each(cpl_node, &no);
        return ":words";
    }
    /* what the daemon keeps: ID (a job's, a workflow's: the flag's noun, or the group's), GPU,
     * BUILD, and NAME of a volume, network or runtime (but not of one being created) */
    const char *noun = NULL;
    const char *flagnoun = fl && cpl_noun(fl->name) ? fl->name : NULL;
    const char *group = depth ? path[0] : NULL;
    if (!strcmp(base, "ID"))
        noun = flagnoun ? flagnoun : group;
    else if (!strcmp(base, "GPU"))
        noun = "gpu";
    else if (!strcmp(base, "BUILD"))
        noun = "build";
    else if (!strcmp(base, "NAME"))
        noun = fl ? flagnoun : depth == 2 && strcmp(path[1], "create") ? group : NULL;
    const struct cpl_noun *nn = cpl_noun(noun);
    if (nn)
        cpl_objects(o, nn, ctx, prefix);
    return ":words";
}

static void cpl_flags(cpl_out *o, const cpl_doc *d)
{
    for (size_t i = 0; i < d->nflags; i++) {
        const cpl_flag *f = &d->flags[i];
        char desc[160];
        snprintf(desc, sizeof desc, "%s", f->desc);
        if (f->name[0]) {
            char name[64];
            snprintf(name, sizeof name, "--%s", f->name);
            cpl_emit(o, "", name, desc);
        }
        if (f->shortopt && strncmp(o->cur, "--", 2)) {
            char s[3] = {'-', f->shortopt, 0};
            cpl_emit(o, "", s, desc);
        }
    }
}

/* The flag a word sets ("--name", "--name=v", "-e", "-eK=V"); *attached when its value is in
 * the same word. */
static const cpl_flag *cpl_flag_of(cpl_doc *d, const char *w, bool *attached)
{
    *attached = false;
    if (w[1] == '-') {
        size_t l = strcspn(w + 2, "=");
        *attached = w[2 + l] == '=';
        return cpl_find_long(d, w + 2, l);
    }
    for (size_t i = 0; i < d->nflags; i++)
        if (d->flags[i].shortopt == w[1]) {
            *attached = w[2] != 0;
            return &d->flags[i];
        }
    return NULL;
}

/* The candidates for words[nwords - 1]; words[0] is rnx itself. */
static int cpl_complete(const rnx_ctx *ctx, int nwords, char **words)
{
    signal(SIGCHLD, SIG_DFL);   /* ignored (inherited), the help's exit status would be lost */
    char *answer = NULL;
    size_t answer_len = 0;
    cpl_out o = {open_memstream(&answer, &answer_len), nwords > 0 ? words[nwords - 1] : ""};
    if (!o.f)
        return RNX_FAIL;
    const char *path[3] = {0};
    size_t depth = 0;
    cpl_doc *d = xcalloc(1, sizeof *d);
    rnx_ctx where = *ctx;   /* the daemon or node the command line names, for its objects */
    const char *directive = ":words";
    bool ok = cpl_load(path, 0, d), dashdash = false;
    const cpl_flag *pending = NULL;   /* the previous word is a flag whose value this is */
    size_t npos = 0;
    int i;
    for (i = 1; ok && i < nwords - 1; i++) {
        const char *w = words[i];
        if (pending) {
            if (depth == 0 && !strcmp(pending->name, "socket"))
                where.socket_flag = w;
            if (depth == 0 && !strcmp(pending->name, "node"))
                where.node_flag = w;
            pending = NULL;
        } else if (!dashdash && !strcmp(w, "--")) {
            dashdash = true;
        } else if (!dashdash && w[0] == '-' && w[1]) {
            bool attached;
            const cpl_flag *f = cpl_flag_of(d, w, &attached);
            if (f && f->arg[0] && !attached)
                pending = f;
            if (f && attached && depth == 0 && !strcmp(f->name, "socket"))
                where.socket_flag = strchr(w, '=') + 1;
            if (f && attached && depth == 0 && !strcmp(f->name, "node"))
                where.node_flag = strchr(w, '=') + 1;
        } else if (d->group && depth < 2) {
            path[depth++] = w;
            ok = cpl_load(path, depth, d);
            npos = 0;
            dashdash = false;
        } else {
            size_t k = npos < d->npos ? npos : d->npos - (d->npos && d->pos_repeat);
            if (k < d->npos && !strcmp(d->pos[k], "COMMAND"))
                break;   /* from here on the words are the job's */
            npos++;
        }
    }
    const char *cur = o.cur;
    if (!ok) {
        /* an unknown command: nothing to offer */
    } else if (i < nwords - 1) {
        fprintf(o.f, ":command %d\n", i);
        directive = NULL;
    } else if (pending) {
        directive = cpl_values(&o, pending->arg, pending, path, depth, &where, "");
    } else if (!dashdash && !strncmp(cur, "--", 2) && strchr(cur, '=')) {
        const cpl_flag *f = cpl_find_long(d, cur + 2, strcspn(cur + 2, "="));
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(strchr(cur, '=') + 1 - cur), cur);
        if (f && f->arg[0])
            directive = cpl_values(&o, f->arg, f, path, depth, &where, prefix);
    } else if (!dashdash && cur[0] == '-') {
        cpl_flags(&o, d);
    } else if (d->group && depth < 2) {
        for (size_t k = 0; k < d->nsubs; k++)
            cpl_emit(&o, "", d->subs[k].name, d->subs[k].desc);
        directive = ":commands";
    } else if (d->npos) {
        size_t k = npos < d->npos ? npos : d->npos - 1;
        if (npos < d->npos || d->pos_repeat) {
            if (!strcmp(d->pos[k], "COMMAND")) {
                fprintf(o.f, ":command %d\n", nwords - 1);
                directive = NULL;
            } else {
                directive = cpl_values(&o, d->pos[k], NULL, path, depth, &where, "");
            }
        }
    }
    if (directive)
        fprintf(o.f, "%s\n", directive);
    fclose(o.f);
    free(d);
    fwrite(answer, 1, answer_len, stdout);
    free(answer);
    return RNX_OK;
}

/* ---- the command ------------------------------------------------------------------------ */

int cmd_completion(rnx_ctx *ctx, int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {0}};
    int c;
    optind = 0;
    while ((c = rnx_getopt(argc, argv, "h", opts, "rnx completion")) != -1) {
        if (c != 'h')
            return RNX_USAGE;
        fputs(completion_help, stdout);
        return RNX_OK;
    }
    if (optind >= argc)
        return rnx_usage("completion: missing shell (bash or zsh); see 'rnx completion --help'");
    const char *what = argv[optind];
    if (!strcmp(what, "complete")) {
        int first = optind + 1;
        if (first < argc && !strcmp(argv[first], "--"))
            first++;
        return cpl_complete(ctx, argc - first, argv + first);
    }
    if (optind + 1 < argc)
        return rnx_usage("completion: expected one shell, got %d arguments; usage: rnx completion bash|zsh",
                         argc - optind);
    if (!strcmp(what, "bash")) {
        fputs(bash_script, stdout);
        return RNX_OK;
    }
    if (!strcmp(what, "zsh")) {
        fputs(zsh_script, stdout);
        return RNX_OK;
    }
    return rnx_usage("completion: unknown shell '%s'; rnx completes bash and zsh", what);
}
