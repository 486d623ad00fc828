/* srun inside a job (src/common/srun.c): the fuzzer's bytes as srun's words, one a line, for a
 * job of 4 CPUs, 2 GPUs and 8 GiB; then each word as an -o file name pattern and as a host list
 * (scontrol show hostnames). Besides not crashing: a refusal has its message, the command is one
 * of the words (none after --version or --help), a pattern's expansion fits where it is written or is refused (NULL), a host list
 * gives at most SRUN_HOSTS_MAX names, none empty. */
#include "common/log.h"
#include "common/srun.h"
#include "common/util.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    log_set_level(LOG_ERR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const srun_job job = {4, 2, 8192};
    char *words = fuzz_strndup(data, size), *argv[64], *save = NULL;
    int argc = 0;
    for (char *w = strtok_r(words, "\n", &save); w && argc < 64; w = strtok_r(NULL, "\n", &save))
        argv[argc++] = w;
    srun_plan p;
    jerr e = {0};
    if (srun_args(&p, argc, argv, &job, &e) < 0) {
        FUZZ_ASSERT(e.msg[0], "a refusal without its message");
    } else {
        /* (--version and --help: no command; p.cmd is past the words) */
        FUZZ_ASSERT(p.info ? p.cmd == argc : p.cmd >= 0 && p.cmd < argc, "the command at %d of %d words%s", p.cmd,
                    argc, p.info ? " (--version or --help)" : "");
        for (size_t i = 0; i < p.notes.n; i++)
            FUZZ_ASSERT(p.notes.v[i][0], "an empty note");
        srun_free(&p);
    }
    srun_names nm = {"8bea11bb-1e94-46d3-a4ed-31080779e201", "job-8bea11bb", "alice", "sweep", "8bea11bb", "7", "12"};
    for (int i = 0; i < argc; i++) {
        char out[64];
        out[sizeof out - 1] = 'x';
        char *r = srun_file_name(argv[i], &nm, out, sizeof out - 1);
        FUZZ_ASSERT(out[sizeof out - 1] == 'x', "wrote past the length it was given");
        if (r)
            FUZZ_ASSERT(r == out && strlen(out) < sizeof out - 1, "an expansion longer than its room");
        sbatch_list hosts = {0};
        e = (jerr){0};
        if (srun_hostnames(argv[i], &hosts, &e) < 0)
            FUZZ_ASSERT(e.msg[0], "a host list refused without its message");
        FUZZ_ASSERT(hosts.n <= SRUN_HOSTS_MAX, "%zu names", hosts.n);
        for (size_t k = 0; k < hosts.n; k++)
            FUZZ_ASSERT(hosts.v[k][0], "an empty name from '%.100s'", argv[i]);
        sbatch_list_free(&hosts);
    }
    free(words);
    return 0;
}
