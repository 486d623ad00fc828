/* A harness of tests/fuzz without libFuzzer: each file named (or each file of each directory
 * named, in name order) is one input, run once through LLVMFuzzerTestOneInput. The normal and
 * the sanitizer builds make every harness so, and meson test runs each on its seed corpus
 * (corpus/NAME): a harness that no longer builds against the code it calls fails every build,
 * not only scripts/fuzz.sh's clang build (the project's CI of 2026-12-05: fuzz_routes called a
 * function whose signature had changed), and the seeds run under ASan and UBSan in the
 * sanitizer pass. libFuzzer's own main does the same with a file argument (the way a crash is
 * reproduced). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static size_t ran;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *more = realloc(data, cap *= 2);
            if (!more)
                free(data);
            data = more;
        }
    }
    fclose(f);
    if (!data) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    /* a copy of exactly its size, so that ASan sees a read past the input's end */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(data);
        return -1;
    }
    memcpy(exact, data, n);
    free(data);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    ran++;
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            perror(argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            rc |= run_file(argv[i]) < 0;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, by_name);
        if (n < 0) {
            perror(argv[i]);
            return 2;
        }
        for (int k = 0; k < n; k++) {
            if (names[k]->d_name[0] != '.') {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
                rc |= run_file(path) < 0;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("%s: %zu inputs run\n", argv[0], ran);
    return rc ? 1 : ran ? 0 : 77;
}
