/*
 * lsan_roots.c — LeakSanitizer's roots without the sanitizer runtimes' own data: built into
 * the executables of an AddressSanitizer build only (meson.build, `lsan_roots`), never into an
 * installed one.
 *
 * At each exit, LeakSanitizer looks for pointers to the heap in every loaded module's data and
 * bss, word by word. gcc's shared runtimes hold ~12 MB of their own there, none of it a pointer
 * to a block the program allocated: libasan.so.8 5.6 MB (its stack depot's table), libubsan.so.1
 * 6.1 MB (a second copy of the sanitizers' common part, its own depot) against rnx's 2.4 MB and
 * libc's 50 KB: 14.3 MB scanned at the end of an ASan `rnx --help`, whose leak check was two
 * thirds of its CPU (55 ms against 18 without; 26 with this file). The test suite's sanitizer
 * pass starts and ends these executables tens of thousands of times (docs/performance.md,
 * "LeakSanitizer's roots").
 *
 * So the leak check does not scan the modules' data itself (`use_globals=0`, the default this
 * executable gives LSan; LSAN_OPTIONS still overrides it), and at exit, before the check runs,
 * every module's writable segments but the two runtimes' are handed to it as root regions,
 * which it scans the same way. A module loaded later (an NSS module, a library opened with
 * dlopen) is there at exit and so is scanned. Should a runtime ever hold the only pointer to a
 * block, the check reports a leak that is not one: a loud failure, never a missed leak.
 *
 * The hook is registered with atexit from a constructor: the runtime, a library this executable
 * needs, registered its leak check before (its constructor ran first), and atexit's functions
 * run last registered first, so the regions are in place when the check runs.
 */
#if defined(__SANITIZE_ADDRESS__)
#include <link.h>
#include <sanitizer/lsan_interface.h>
#include <stdlib.h>
#include <string.h>

/* The runtimes whose data is not scanned: gcc's shared ASan and UBSan runtimes. */
static const char *const lsan_roots_skipped[] = {"/libasan.so.", "/libubsan.so."};

const char *__lsan_default_options(void);
const char *__lsan_default_options(void) { return "use_globals=0"; }

static int lsan_roots_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    for (size_t i = 0; info->dlpi_name && i < sizeof lsan_roots_skipped / sizeof *lsan_roots_skipped; i++)
        if (strstr(info->dlpi_name, lsan_roots_skipped[i]))
            return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && ph->p_memsz)
            __lsan_register_root_region((const void *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz);
    }
    return 0;
}

static void lsan_roots_register(void) { dl_iterate_phdr(lsan_roots_module, NULL); }

__attribute__((constructor)) static void lsan_roots_init(void) { atexit(lsan_roots_register); }
#endif
