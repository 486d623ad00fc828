/* What test_lsan_roots runs: an AddressSanitizer executable built with src/common/lsan_roots.c,
 * as joblet's are, that ends holding heap blocks in one way or another (argv[1]):
 *   global   a chain of blocks held by this executable's static data only (global -> a -> b)
 *   libc     a block held by another module's data only: stdout's buffer (setvbuf; the FILE is
 *            libc's _IO_2_1_stdout_, in libc's data)
 *   leak     a block nothing holds
 * LeakSanitizer must report the last and neither of the others. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct link {
    struct link *next;
    char pad[40];
};

static struct link *kept; /* the only pointer to the chain (its data, not its stack) */

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    if (!strcmp(argv[1], "global")) {
        kept = calloc(1, sizeof *kept);
        if (!kept || !(kept->next = calloc(1, sizeof *kept)))
            return 1;
    } else if (!strcmp(argv[1], "libc")) {
        char *buf = malloc(BUFSIZ);
        if (!buf || setvbuf(stdout, buf, _IOFBF, BUFSIZ))
            return 1;
        buf = NULL;
    } else if (!strcmp(argv[1], "leak")) {
        volatile void *lost = malloc(77);
        lost = NULL;
        (void)lost;
    } else {
        return 2;
    }
    return 0;
}
