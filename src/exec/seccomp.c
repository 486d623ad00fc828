/* The default seccomp profile: allow by default, refuse (EPERM) the syscalls that act on
 * the machine rather than on the job. The job already lacks every capability, so most of
 * these would fail anyway; the filter removes the kernel attack surface behind them too
 * (modelled on Docker's default profile). Only the native ABI is allowed: a 32-bit or x32
 * syscall kills the process, so the list cannot be bypassed through another ABI. A syscall
 * newer than the list (a number above SECCOMP_NEWEST_REVIEWED_NR) is refused with ENOSYS, so a
 * newer kernel cannot open surface the list was never checked against.
 * tests/integration/test_escape.py tries each of these from a job; docs/isolation.md lists them. */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/util.h"
#include "isolate.h"

static const char *const denied[] = {
    /* filesystems and mounts */
    "mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "swapon", "swapoff", "quotactl", "quotactl_fd",
    "name_to_handle_at", "open_by_handle_at", "nfsservctl",
    "open_tree_attr", /* open_tree with mount attributes (Linux 6.15): see newer_than_libseccomp */
    /* namespaces (clone with CLONE_NEW* is filtered below) */
    "unshare", "setns",
    /* the kernel itself */
    "reboot", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "create_module", "get_kernel_syms", "query_module", "uselib", "_sysctl", "syslog", "acct",
    "lookup_dcookie", "iopl", "ioperm", "vm86", "vm86old",
    /* observation and control of other processes */
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "perf_event_open", "bpf",
    "userfaultfd", "fanotify_init",
    /* keyrings are not namespaced */
    "add_key", "request_key", "keyctl",
    /* clocks are not namespaced */
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
    /* NUMA policy of pages the job does not own */
    "move_pages", "migrate_pages",
    /* io_uring: a second way to make most syscalls, past this filter's view of their
     * arguments, and a large kernel surface of its own (Docker's profile refuses it too) */
    "io_uring_setup", "io_uring_enter", "io_uring_register",
};

/* Refused unless jobs.kernel_aio lets them through: kernel AIO's contexts take their events
 * from one pool of the machine's (fs.aio-max-nr, 65536), counted in no cgroup: one
 * io_setup(65536) of a job, 2 MiB of its memory, made every other process's io_setup fail
 * (EAGAIN) until it ended. libaio's users (DeepSpeed's async_io for NVMe offload, fio's libaio
 * engine, InnoDB's native AIO) need it; glibc's aio_* never use it. Docker's profile allows it. */
static const char *const machine_pools[] = {"io_setup"};

/* Names in the list above that an older libseccomp cannot resolve (2.5.4, Debian 12's, knows none
 * of them), by number. Before this table the profile skipped such a name as if the architecture
 * lacked it, and open_tree_attr stayed allowed on Linux 6.15 and later: open_tree was refused
 * and its newer twin was not (found by test_escape.py). Syscalls added since Linux 5.1 have the
 * same number on every architecture but alpha (asm-generic's unified table). */
static const struct {
    const char *name;
    int nr;
} newer_than_libseccomp[] = {
    {"open_tree_attr", 467},
};

/* The newest syscall the lists here were reviewed against: file_setattr (469, Linux 6.17; Linux
 * 6.18 adds none). The profile allows by default, so a syscall a later kernel adds would reach
 * jobs unreviewed; numbers above this one are refused with ENOSYS instead, as if the kernel
 * lacked them, which is what libc and runtimes expect of a new syscall and fall back from (runc
 * and Docker answer syscalls their profile does not know the same way). When a kernel adds
 * syscalls: review them, deny what acts on the machine, then raise this number. */
#define SECCOMP_NEWEST_REVIEWED_NR 469

/* Socket families a job may create: local sockets, IPv4 and IPv6, and netlink (getifaddrs,
 * ip(8) in its own network namespace; only the protocols in allowed_netlink). Everything else (vsock to the hypervisor, packet and
 * raw link layers, AF_KEY, AF_ALG, Bluetooth, CAN, RDS, TIPC, XDP, ...) is refused with
 * EAFNOSUPPORT, as if the kernel lacked it: what the jobs do not need is kernel surface they
 * should not reach (docs/isolation.md). */
static const int allowed_families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

/* socket() and socketpair() with any family but those: a rule per refused value below the
 * highest allowed one, and one for everything above it (the whole 64-bit register is
 * compared, so high bits cannot smuggle an allowed value past the filter). */
static int refuse_families(scmp_filter_ctx ctx)
{
    int top = 0, rc = 0;
    for (size_t i = 0; i < ARRAY_LEN(allowed_families); i++)
        top = allowed_families[i] > top ? allowed_families[i] : top;
    static const int calls[] = {SCMP_SYS(socket), SCMP_SYS(socketpair)};
    for (size_t c = 0; c < ARRAY_LEN(calls) && rc == 0; c++) {
        for (int f = 0; f < top && rc == 0; f++) {
            bool ok = false;
            for (size_t i = 0; i < ARRAY_LEN(allowed_families); i++)
                ok |= allowed_families[i] == f;
            if (!ok)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[c], 1, SCMP_A0(SCMP_CMP_EQ, (uint64_t)f));
        }
        if (rc == 0)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[c], 1, SCMP_A0(SCMP_CMP_GT, (uint64_t)top));
    }
    return rc;
}

/* Netlink protocols a job may open: NETLINK_ROUTE (getifaddrs, ip(8), glibc's address
 * lookups), NETLINK_SOCK_DIAG (ss(8)) and NETLINK_GENERIC (ethtool, devlink, taskstats of the
 * job's own processes). The others are refused with EPROTONOSUPPORT, as if the kernel lacked
 * them. Found by test_escape.py: with network host a job shares the initial network namespace,
 * where NETLINK_CONNECTOR multicasts every fork, exec and exit on the host (host pids, exit
 * codes, uid changes) to any socket bound to its group, unprivileged ones included (Linux 6.18
 * here), whenever a root process has subscribed (a monitoring agent); the job read them. The
 * rest carry host-wide events or need privileges the job lacks (KOBJECT_UEVENT: the host's
 * device events; AUDIT; NETFILTER; XFRM; SELINUX; RDMA ...); libaudit takes EPROTONOSUPPORT
 * for "no audit here". */
static const int allowed_netlink[] = {NETLINK_ROUTE, NETLINK_SOCK_DIAG, NETLINK_GENERIC};

/* socket(AF_NETLINK, type, protocol) with any protocol but those, compared as refuse_families
 * compares families (the whole register, so high bits cannot smuggle a protocol through). */
static int refuse_netlink_protocols(scmp_filter_ctx ctx)
{
    int top = 0, rc = 0;
    for (size_t i = 0; i < ARRAY_LEN(allowed_netlink); i++)
        top = allowed_netlink[i] > top ? allowed_netlink[i] : top;
    for (int p = 0; p < top && rc == 0; p++) {
        bool ok = false;
        for (size_t i = 0; i < ARRAY_LEN(allowed_netlink); i++)
            ok |= allowed_netlink[i] == p;
        if (!ok)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 2,
                                  SCMP_A0(SCMP_CMP_EQ, (uint64_t)AF_NETLINK), SCMP_A2(SCMP_CMP_EQ, (uint64_t)p));
    }
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 2,
                              SCMP_A0(SCMP_CMP_EQ, (uint64_t)AF_NETLINK), SCMP_A2(SCMP_CMP_GT, (uint64_t)top));
    return rc;
}

/* EPERM for each of names[0..n) this architecture has. */
static int deny_all(scmp_filter_ctx ctx, const char *const *names, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int nr = seccomp_syscall_resolve_name(names[i]);
        for (size_t k = 0; nr == __NR_SCMP_ERROR && k < ARRAY_LEN(newer_than_libseccomp); k++)
            if (!strcmp(names[i], newer_than_libseccomp[k].name))
                nr = newer_than_libseccomp[k].nr;
        if (nr < 0)
            continue; /* not a syscall of this architecture (libseccomp's negative pseudo-numbers) */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
    return rc;
}

scmp_filter_ctx seccomp_default_profile(bool kernel_aio, jerr *e)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        jerr_set(e, ENOMEM, "seccomp_init failed");
        return NULL;
    }
    int rc = deny_all(ctx, denied, ARRAY_LEN(denied));
    if (rc == 0 && !kernel_aio)
        rc = deny_all(ctx, machine_pools, ARRAY_LEN(machine_pools));
    /* One rule per flag: a filter can test "flags & F == F" but not "flags & MASK != 0". */
    static const unsigned long ns_flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                                             CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_NEWTIME};
    for (size_t i = 0; i < ARRAY_LEN(ns_flags) && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
    if (rc == 0) {
        /* clone3 passes its flags in memory that a filter cannot read: make it look absent
         * so libc falls back to clone, whose flags are checked above. */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    }
    if (rc == 0)
        rc = refuse_families(ctx);
    if (rc == 0)
        rc = refuse_netlink_protocols(ctx);
    if (rc == 0) /* TIOCSTI pushes input into a terminal the job may share with its caller */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
    if (rc == 0)
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); /* set by caps_drop_and_setuid */
    /* Syscall numbers as a binary tree instead of a list: the same decisions, but loading the
     * filter is 2.5x cheaper (~40 instead of ~100 us per job on the 2-vCPU VM). On load the
     * kernel runs the filter once per syscall number to build its allow cache, so a list of
     * ~60 checks costs ~60 steps per syscall and a tree ~6. */
    if (rc == 0)
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (rc < 0) {
        jerr_set(e, -rc, "building the seccomp profile failed (%d)", rc);
        seccomp_release(ctx);
        return NULL;
    }
    return ctx;
}

/* Put before libseccomp's program: native syscall numbers above SECCOMP_NEWEST_REVIEWED_NR get
 * ENOSYS; everything else falls through to libseccomp's rules, which start by loading the arch
 * again (other ABIs and x32 numbers are left to them: they kill). Jumps are relative, so
 * libseccomp's own stay valid behind the prefix. The kernel's per-syscall allow cache reads these
 * loads and constant compares, so allowed syscalls still bypass the filter at run time. */
#define NEWER_PREFIX_LEN 6
static void newer_syscalls_prefix(struct sock_filter out[NEWER_PREFIX_LEN])
{
    const struct sock_filter prefix[NEWER_PREFIX_LEN] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* x86's x32 bit */, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, SECCOMP_NEWEST_REVIEWED_NR, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
    };
    memcpy(out, prefix, sizeof prefix);
}

int seccomp_default_program(struct sock_fprog *prog, bool kernel_aio, jerr *e)
{
    scmp_filter_ctx ctx = seccomp_default_profile(kernel_aio, e);
    if (!ctx)
        return -1;
    int fd = memfd_create("joblet-seccomp", MFD_CLOEXEC);
    int rc = fd < 0 ? -errno : seccomp_export_bpf(ctx, fd);
    seccomp_release(ctx);
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        return jerr_set(e, -rc, "compiling the seccomp profile failed: %s", strerror(-rc));
    }
    const size_t npre = NEWER_PREFIX_LEN;
    off_t len = lseek(fd, 0, SEEK_END);
    if (len <= 0 || len % (off_t)sizeof(struct sock_filter) ||
        len / (off_t)sizeof(struct sock_filter) + (off_t)npre > BPF_MAXINSNS) {
        close(fd);
        return jerr_set(e, EINVAL, "the compiled seccomp profile has an impossible size (%lld bytes)", (long long)len);
    }
    prog->filter = xmalloc((size_t)len + npre * sizeof(struct sock_filter));
    prog->len = (unsigned short)(len / (off_t)sizeof(struct sock_filter) + (off_t)npre);
    newer_syscalls_prefix(prog->filter);
    ssize_t n = pread(fd, prog->filter + npre, (size_t)len, 0);
    close(fd);
    if (n != len) {
        free(prog->filter);
        prog->filter = NULL;
        return jerr_set(e, EIO, "reading back the compiled seccomp profile failed");
    }
    return 0;
}

int seccomp_apply(const struct sock_fprog *prog, jerr *e)
{
    /* flags 0: what libseccomp's seccomp_load would pass for this profile (no TSYNC, the
     * speculation mitigations left on); no_new_privs is already set. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
        return jerr_sys(e, "loading the seccomp profile");
    return 0;
}
