/* rnx job batch's reading of a script written for sbatch (src/common/sbatch.c): the fuzzer's
 * bytes as the script (before a NUL byte: the command line's words, one a line, then the script
 * after it), then, when it is read, the flags of rnx job run it comes to, each given to
 * the request's schema as rnx job run gives it (jobreq_set_text). Besides not crashing: a refusal
 * has its message, every flag is "--name" or "--name=value", and a flag that names a field of the
 * request is one the schema accepts or refuses with a message of its own (never a flag rnx job
 * run does not have). */
#include <time.h>

#include "common/jobreq.h"
#include "common/log.h"
#include "common/sbatch.h"
#include "common/util.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    log_set_level(LOG_ERR);
    setenv("TZ", "UTC", 1);
    return 0;
}

/* rnx job run's own flags the plan may give besides the request's */
static bool own_flag(const char *name)
{
    return !strcmp(name, "--upload") || !strcmp(name, "--env") || !strcmp(name, "--secret-env") ||
           !strcmp(name, "--follow") || !strcmp(name, "--wait") || !strcmp(name, "--dependency");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const time_t now = 1795946400;
    sbatch_plan p = {0}, cl = {0};
    jerr e = {0};
    const uint8_t *nul = memchr(data, 0, size);
    if (nul) {
        char *words = fuzz_strndup(data, (size_t)(nul - data)), *argv[64], *save = NULL;
        int argc = 0;
        for (char *w = strtok_r(words, "\n", &save); w && argc < 64; w = strtok_r(NULL, "\n", &save))
            argv[argc++] = w;
        int used = sbatch_args(&cl, argc, argv, now, &e);
        free(words);
        if (used < 0) {
            FUZZ_ASSERT(e.msg[0], "a refusal without its message");
            sbatch_free(&cl);
            return 0;
        }
        FUZZ_ASSERT(used <= argc, "%d words of %d used", used, argc);
        size -= (size_t)(nul + 1 - data);
        data = nul + 1;
    }
    if (sbatch_script(&p, (const char *)data, size, now, &e) < 0) {
        FUZZ_ASSERT(e.msg[0], "a refusal without its message");
        sbatch_free(&p);
        sbatch_free(&cl);
        return 0;
    }
    sbatch_merge(&p, &cl);
    sbatch_list flags = {0}, where = {0};
    sbatch_flags(&p, &flags, &where);
    FUZZ_ASSERT(where.n == flags.n, "%zu flags, %zu places they were given", flags.n, where.n);
    e = (jerr){0};
    if (sbatch_check(&flags, &where, now, &e) < 0)
        FUZZ_ASSERT(e.msg[0], "a refusal of the flags without its message");
    job_req r;
    memset(&r, 0, sizeof r);
    for (size_t i = 0; i < flags.n; i++) {
        const char *f = flags.v[i];
        FUZZ_ASSERT(!strncmp(f, "--", 2) && f[2], "'%s' is not a flag", f);
        char name[80];
        size_t len = strcspn(f, "=");
        FUZZ_ASSERT(len < sizeof name, "'%.100s': a flag's name this long", f);
        snprintf(name, sizeof name, "%.*s", (int)len, f);
        if (own_flag(name))
            continue;
        const jobreq_field *field = NULL;
        for (int k = 0; k < JR_N && !field; k++)
            if (jobreq_fields[k].flag && !strcmp(jobreq_fields[k].flag, name))
                field = &jobreq_fields[k];
        FUZZ_ASSERT(field, "'%s': not a flag of rnx job run", f);
        const char *value = f[len] == '=' ? f + len + 1 : "true";
        e = (jerr){0};
        if (jobreq_set_text(&r, field, value, now, &e) < 0)
            FUZZ_ASSERT(e.msg[0], "'%s' refused without a message", f);
    }
    jobreq_free(&r);
    sbatch_list_free(&flags);
    sbatch_list_free(&where);
    sbatch_free(&p);
    sbatch_free(&cl);
    return 0;
}
