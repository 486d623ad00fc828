/* Unit tests for src/exec/seccomp.c: the compiled program a job's command loads, run by a
 * classic-BPF interpreter here on chosen (arch, nr, args), so that decisions the running kernel
 * cannot show apart are checked too: a syscall number above the reviewed list gets ENOSYS from
 * the filter (this kernel would say ENOSYS as well, having no such syscall), and open_tree_attr
 * is refused by number although the libseccomp the build uses may not know its name; netlink
 * protocols are told apart by the third argument. What a
 * real job sees is tests/integration/test_escape.py. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "common/err.h"
#include "exec/isolate.h"

static struct sock_fprog prog;

static int setup(void **state)
{
    (void)state;
    jerr e = {0};
    return seccomp_default_program(&prog, false, &e);
}

static int teardown(void **state)
{
    (void)state;
    free(prog.filter);
    return 0;
}

/* The kernel's classic BPF, for what a seccomp program may hold (kernel/seccomp.c,
 * seccomp_check_filter); anything else fails the test rather than guessing. */
static uint32_t run(uint32_t arch, int nr, const uint64_t args[6])
{
    struct seccomp_data d = {.nr = nr, .arch = arch};
    if (args)
        memcpy(d.args, args, sizeof d.args);
    uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {0};
    for (unsigned pc = 0; pc < prog.len; pc++) {
        const struct sock_filter *f = &prog.filter[pc];
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            assert_true(f->k + 4 <= sizeof d && f->k % 4 == 0);
            memcpy(&A, (const char *)&d + f->k, 4);
            break;
        case BPF_LD | BPF_IMM: A = f->k; break;
        case BPF_LDX | BPF_IMM: X = f->k; break;
        case BPF_LD | BPF_MEM: A = M[f->k]; break;
        case BPF_LDX | BPF_MEM: X = M[f->k]; break;
        case BPF_ST: M[f->k] = A; break;
        case BPF_STX: M[f->k] = X; break;
        case BPF_MISC | BPF_TAX: X = A; break;
        case BPF_MISC | BPF_TXA: A = X; break;
        case BPF_ALU | BPF_AND | BPF_K: A &= f->k; break;
        case BPF_ALU | BPF_OR | BPF_K: A |= f->k; break;
        case BPF_ALU | BPF_AND | BPF_X: A &= X; break;
        case BPF_JMP | BPF_JA: pc += f->k; break;
        case BPF_JMP | BPF_JEQ | BPF_K: pc += A == f->k ? f->jt : f->jf; break;
        case BPF_JMP | BPF_JGT | BPF_K: pc += A > f->k ? f->jt : f->jf; break;
        case BPF_JMP | BPF_JGE | BPF_K: pc += A >= f->k ? f->jt : f->jf; break;
        case BPF_JMP | BPF_JSET | BPF_K: pc += (A & f->k) ? f->jt : f->jf; break;
        case BPF_JMP | BPF_JEQ | BPF_X: pc += A == X ? f->jt : f->jf; break;
        case BPF_JMP | BPF_JGT | BPF_X: pc += A > X ? f->jt : f->jf; break;
        case BPF_JMP | BPF_JGE | BPF_X: pc += A >= X ? f->jt : f->jf; break;
        case BPF_RET | BPF_K: return f->k;
        case BPF_RET | BPF_A: return A;
        default: fail_msg("instruction %u: opcode 0x%x not interpreted here", pc, f->code);
        }
    }
    fail_msg("the program ran off its end");
    return 0;
}

#define ALLOW SECCOMP_RET_ALLOW
#define ERRNO(e) (SECCOMP_RET_ERRNO | (e))

static uint32_t native3(int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
    const uint64_t args[6] = {a0, a1, a2, 0, 0, 0};
    return run(seccomp_arch_native(), nr, args);
}

static uint32_t native(int nr, uint64_t a0, uint64_t a1)
{
    return native3(nr, a0, a1, 0);
}

static void test_ordinary_syscalls_pass(void **state)
{
    (void)state;
    assert_int_equal(native(SYS_read, 0, 0), ALLOW);
    assert_int_equal(native(SYS_openat, 0, 0), ALLOW);
    assert_int_equal(native(SYS_clone, 17 /* SIGCHLD */, 0), ALLOW);
    assert_int_equal(native(SYS_socket, AF_INET, SOCK_STREAM), ALLOW);
    assert_int_equal(native(SYS_ioctl, 1, 0x5401 /* TCGETS */), ALLOW);
}

static void test_listed_syscalls_refused(void **state)
{
    (void)state;
    assert_int_equal(native(SYS_mount, 0, 0), ERRNO(EPERM));
    assert_int_equal(native(SYS_unshare, CLONE_NEWUSER, 0), ERRNO(EPERM));
    assert_int_equal(native(SYS_bpf, 0, 0), ERRNO(EPERM));
    assert_int_equal(native(SYS_io_uring_setup, 8, 0), ERRNO(EPERM));
    assert_int_equal(native(SYS_clone, CLONE_NEWUSER | 17, 0), ERRNO(EPERM));
    assert_int_equal(native(SYS_clone3, 0, 0), ERRNO(ENOSYS));
    assert_int_equal(native(SYS_ioctl, 0, TIOCSTI), ERRNO(EPERM));
    assert_int_equal(native(SYS_socket, AF_VSOCK, SOCK_STREAM), ERRNO(EAFNOSUPPORT));
    assert_int_equal(native(SYS_socket, (1ull << 32) | AF_VSOCK, SOCK_STREAM), ERRNO(EAFNOSUPPORT));
}

/* netlink: only the route, sock_diag and generic protocols */
static void test_netlink_protocols(void **state)
{
    (void)state;
    assert_int_equal(native3(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), ALLOW);
    assert_int_equal(native3(SYS_socket, AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG), ALLOW);
    assert_int_equal(native3(SYS_socket, AF_NETLINK, SOCK_RAW, NETLINK_GENERIC), ALLOW);
    assert_int_equal(native3(SYS_socket, AF_NETLINK, SOCK_DGRAM, NETLINK_CONNECTOR), ERRNO(EPROTONOSUPPORT));
    assert_int_equal(native3(SYS_socket, AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT), ERRNO(EPROTONOSUPPORT));
    assert_int_equal(native3(SYS_socket, AF_NETLINK, SOCK_RAW, NETLINK_AUDIT), ERRNO(EPROTONOSUPPORT));
    assert_int_equal(native3(SYS_socket, AF_NETLINK, SOCK_RAW, 31), ERRNO(EPROTONOSUPPORT));
    assert_int_equal(native3(SYS_socket, AF_NETLINK, SOCK_RAW, (1ull << 32) | NETLINK_ROUTE), ERRNO(EPROTONOSUPPORT));
    /* the protocol argument means nothing to the other families */
    assert_int_equal(native3(SYS_socket, AF_INET, SOCK_STREAM, 6 /* IPPROTO_TCP */), ALLOW);
    assert_int_equal(native3(SYS_socket, AF_INET, SOCK_DGRAM, 17 /* IPPROTO_UDP */), ALLOW);
}

/* open_tree_attr (467, Linux 6.15): refused like open_tree, by number when libseccomp
 * does not know the name */
static void test_open_tree_attr_refused(void **state)
{
    (void)state;
    assert_int_equal(native(428 /* open_tree */, 0, 0), ERRNO(EPERM));
    assert_int_equal(native(467 /* open_tree_attr */, 0, 0), ERRNO(EPERM));
}

/* the newest reviewed syscall passes; everything after it looks absent */
static void test_syscalls_newer_than_the_list_look_absent(void **state)
{
    (void)state;
    assert_int_equal(native(469 /* file_setattr */, 0, 0), ALLOW);
    assert_int_equal(native(468 /* file_getattr */, 0, 0), ALLOW);
    assert_int_equal(native(470, 0, 0), ERRNO(ENOSYS));
    assert_int_equal(native(512, 0, 0), ERRNO(ENOSYS));
    assert_int_equal(native(0x3fffffff, 0, 0), ERRNO(ENOSYS));
}

/* other ABIs are killed, as before the prefix */
static void test_other_abis_killed(void **state)
{
    (void)state;
#if defined(__x86_64__)
    uint32_t r = run(AUDIT_ARCH_I386, 20 /* getpid */, NULL);
    assert_true((r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_THREAD ||
                (r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_PROCESS);
    r = native(0x40000000 | SYS_getpid, 0, 0); /* x32 */
    assert_true((r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_THREAD ||
                (r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_PROCESS);
#elif defined(__aarch64__)
    uint32_t r = run(AUDIT_ARCH_ARM, 20, NULL);
    assert_true((r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_THREAD ||
                (r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_PROCESS);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ordinary_syscalls_pass),
        cmocka_unit_test(test_listed_syscalls_refused),
        cmocka_unit_test(test_netlink_protocols),
        cmocka_unit_test(test_open_tree_attr_refused),
        cmocka_unit_test(test_syscalls_newer_than_the_list_look_absent),
        cmocka_unit_test(test_other_abis_killed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
