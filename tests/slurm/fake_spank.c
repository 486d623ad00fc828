/* A stand-in for slurmstepd's task process, for tests without Slurm: it loads joblet's SPANK
 * plugin (the real joblet.so) and calls it as slurmstepd 22.05 does for one task (mgr.c,
 * task.c): slurm_spank_init with plugstack.conf's arguments, the options' callbacks,
 * slurm_spank_task_init_privileged as root, then the drop to the task's user, then
 * slurm_spank_task_init; when that returns, it execs the task's command itself, as slurmstepd
 * would. The test puts this process in Slurm-like cgroups before it starts.
 *
 *   fake_spank PLUGIN.so --uid U --gid G [--groups G1,G2] --job J --step S --task T [--arg A]... [--opt NAME[=V]]... -- CMD ARGS...
 *
 * The step "batch" is SLURM_BATCH_SCRIPT. The task's environment is this process's own. */
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

extern char **environ;

static struct spank_option registered[16];
static int nregistered;
static uint32_t job_id, step_id, task_id;
static uid_t uid;
static gid_t gid;
static int task_argc;
static char **task_argv;

spank_err_t spank_option_register(spank_t spank, struct spank_option *opt)
{
    if (nregistered == 16)
        return ESPANK_ERROR;
    registered[nregistered++] = *opt;
    return ESPANK_SUCCESS;
}

int spank_remote(spank_t spank) { return 1; }

spank_context_t spank_context(void) { return S_CTX_REMOTE; }

spank_err_t spank_get_item(spank_t spank, spank_item_t item, ...)
{
    va_list ap;
    va_start(ap, item);
    spank_err_t rc = ESPANK_SUCCESS;
    switch (item) {
    case S_JOB_ID: *va_arg(ap, uint32_t *) = job_id; break;
    case S_JOB_STEPID: *va_arg(ap, uint32_t *) = step_id; break;
    case S_TASK_ID: *va_arg(ap, int *) = (int)task_id; break;
    case S_TASK_GLOBAL_ID: *va_arg(ap, uint32_t *) = task_id; break;
    case S_JOB_UID: *va_arg(ap, uid_t *) = uid; break;
    case S_JOB_GID: *va_arg(ap, gid_t *) = gid; break;
    case S_JOB_ARGV: {
        int *argc = va_arg(ap, int *);
        char ***argv = va_arg(ap, char ***);
        *argc = task_argc;
        *argv = task_argv;
        break;
    }
    case S_JOB_ENV: *va_arg(ap, char ***) = environ; break;
    default: rc = ESPANK_BAD_ARG;
    }
    va_end(ap);
    return rc;
}

spank_err_t spank_getenv(spank_t spank, const char *var, char *buf, int len)
{
    const char *v = getenv(var);
    if (!v)
        return ESPANK_ENV_NOEXIST;
    snprintf(buf, (size_t)len, "%s", v);
    return ESPANK_SUCCESS;
}

static void say(const char *level, const char *fmt, va_list ap)
{
    fprintf(stderr, "fake_spank %s: ", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void slurm_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("error", fmt, ap);
    va_end(ap);
}

void slurm_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("info", fmt, ap);
    va_end(ap);
}

void slurm_verbose(const char *fmt, ...) {}
void slurm_debug(const char *fmt, ...) {}

int main(int argc, char **argv)
{
    char *args[16], *opts[16];
    gid_t groups[16];
    int nargs = 0, nopts = 0, ngroups = 0, i = 2;
    if (argc < 3)
        return 2;
    for (; i < argc && strcmp(argv[i], "--"); i += 2) {
        if (i + 1 >= argc)
            return 2;
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--uid"))
            uid = (uid_t)atoi(v);
        else if (!strcmp(k, "--gid"))
            gid = (gid_t)atoi(v);
        else if (!strcmp(k, "--groups"))
            for (char *save = NULL, *t = strtok_r((char *)v, ",", &save); t && ngroups < 16; t = strtok_r(NULL, ",", &save))
                groups[ngroups++] = (gid_t)atoi(t);
        else if (!strcmp(k, "--job"))
            job_id = (uint32_t)atoi(v);
        else if (!strcmp(k, "--step"))
            step_id = !strcmp(v, "batch") ? SLURM_BATCH_SCRIPT : (uint32_t)atoi(v);
        else if (!strcmp(k, "--task"))
            task_id = (uint32_t)atoi(v);
        else if (!strcmp(k, "--arg") && nargs < 16)
            args[nargs++] = (char *)v;
        else if (!strcmp(k, "--opt") && nopts < 16)
            opts[nopts++] = (char *)v;
        else
            return 2;
    }
    if (i >= argc - 1)
        return 2;
    task_argv = argv + i + 1;
    task_argc = argc - i - 1;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "fake_spank: %s\n", dlerror());
        return 3;
    }
    spank_f *init = (spank_f *)dlsym(h, "slurm_spank_init"),
            *priv = (spank_f *)dlsym(h, "slurm_spank_task_init_privileged"),
            *user = (spank_f *)dlsym(h, "slurm_spank_task_init");
    if (!init || !priv || !user || init(NULL, nargs, args) < 0)
        return 4;
    for (int k = 0; k < nopts; k++) {
        char *eq = strchr(opts[k], '=');
        if (eq)
            *eq = 0;
        int found = 0;
        for (int r = 0; r < nregistered; r++)
            if (!strcmp(registered[r].name, opts[k])) {
                registered[r].cb(registered[r].val, eq ? eq + 1 : NULL, 1);
                found = 1;
            }
        if (!found)
            return 5;
    }
    /* mgr.c: the privileged hook, then _become_user; task.c: the user's hook, then execve */
    if (priv(NULL, 0, NULL) < 0)
        return 6;
    /* the task's groups: the user's, as slurmstepd's initgroups gives them */
    if (setgroups((size_t)ngroups, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0) {
        perror("fake_spank: drop to the task's user");
        return 7;
    }
    if (user(NULL, 0, NULL) < 0)
        return 1;
    execvp(task_argv[0], task_argv);
    perror(task_argv[0]);
    return 127;
}
