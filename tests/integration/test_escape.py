"""Escape attempts (issue 14): the one list of what a hostile job may try, each with its denial.

Every attempt runs inside a real job started through the real daemon, made by
escape_probe.py: one job makes them all (the test plants what it needs in the job's /work from
the host, then lets it go) and prints {attempt: outcome}; ATTEMPTS below says, for each, the
outcome this test asserts, the errno where there is one, and which layer gives it. The probe
runs in three jobs:

- `root`: submitted by root, so the job runs as a uid of its own (jobs.uid_range_start);
- `user`: submitted by uid 4321 through the socket (SO_PEERCRED), so it runs as uid 4321, the
  same uid as a process the test starts on the host for it to reach;
- `root-hostnet`: root's job with `network: host`, where the network attempts succeed as that
  mode means them to (HOSTNET below) and every other denial still holds.

Around the in-job attempts, the tests below check on the host what the job could not observe
itself: the host processes it aimed at still run untouched, the cgroup files a process of the
job's uid could write are refused to that uid even outside the job, the device cgroup refuses
an unlisted node to a process placed in the job's cgroup, a symlink a job leaves in /work does
not lead the daemon's cleanup outside it, and a GPU not granted is neither in the job's view nor
openable from its cgroup.

Every attempt is harmless if isolation had failed (escape_probe.py's docstring says how).
Older tests that check parts of this (test_isolation.py, test_gpu_isolation.py,
test_gpu_devfilter.py, test_limits.py) stay; this file is the list (docs/isolation.md).
"""
import base64
import ctypes
import json
import os
import platform
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid

import pytest

from conftest import api_as, need_setpriv, setpriv, wait_for
from gpu_nodes import FAKE_NVML, FIX, machine, make_nodes

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "escape_probe.py")) as _f:
    PROBE = _f.read()
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
USER = 4321          # the unprivileged submitter (as in test_users.py)
ARCH = platform.machine()


def exists(path):
    return os.path.exists(path)


def _have_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


HAVE_V6 = socket.has_ipv6 and _have_ipv6_loopback()


# --------------------------------------------------------------------------------------------
# The attempts: (key as the probe prints it, expected outcome, why). An outcome is an errno's
# name, "ok", or what the probe saw. Where the host decides (a kernel without a /proc entry),
# the expectation is computed from the host, and says so.

HOST_PIDS = ("a host process (root)", "a host process of the job's uid", "another job's process")
SIG0_PIDS = ("the daemon", "the job's shim")
HOST_PATHS = ("another job's /work file", "the state directory", "the daemon's database", "the daemon's socket dir",
              "a host /tmp file", "a host /dev/shm file", "/root", "/home", "/var/lib", "/run", "/boot")
DEVICES = ("/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/kvm",
           "/dev/fuse", "/dev/net/tun", "/dev/vsock", "/dev/loop-control", "/dev/console", "/dev/tty0",
           "/dev/nvidia0", "/dev/nvidiactl", "/dev/userfaultfd", "/dev/watchdog")
NOT_NATIVE = "absent" if ARCH != "x86_64" else None  # iopl, ioperm, create_module, int 0x80, x32: x86 only


def _host_int80():
    """What a 32-bit syscall (getpid through int 0x80) does on the host itself, outside any job:
    "ran", or "SIGSEGV" on a kernel without 32-bit syscalls (no IA32 emulation, or booted with
    ia32_emulation=false), where the instruction faults before any seccomp filter could see it.
    In a Python of its own: pytest's fault handler would report the fault of a forked child."""
    if ARCH != "x86_64":
        return "absent"
    code = ("import ctypes, mmap\n"
            "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
            "m.write(b'\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3')  # mov eax, 20; int 0x80; ret\n"
            "ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    return signal.Signals(-p.returncode).name if p.returncode < 0 else "ran"


HOST_INT80 = _host_int80()


def _attempts():
    a = []

    def add(key, expected, why):
        a.append((key, expected, why))

    # ---- processes: the job has a PID namespace of its own ---------------------------------
    add("/proc lists only the job's processes", ["joblet-init", "python3"],
        "fresh /proc of the job's PID namespace: its init and the probe, nothing of the host")
    for label in HOST_PIDS:
        add(f"kill(SIGKILL) {label}", "ESRCH", "not in the job's PID namespace")
        add(f"pidfd_open {label}", "ESRCH", "not in the job's PID namespace")
        add(f"ptrace(ATTACH) {label}", "EPERM", "seccomp refuses ptrace before the pid is looked up")
        add(f"fcntl(F_SETOWN) {label}", "ESRCH", "no such pid in the job's namespace: no SIGIO to it")
        add(f"/proc/<pid> of {label}", "ENOENT", "the job's /proc lists only its own PID namespace")
    for label in SIG0_PIDS:
        add(f"kill(sig 0) {label}", "ESRCH", "not in the job's PID namespace")
    add("kill(sig 0) the job's root init", "EPERM", "PID 1 of the job stays root; the job's uid may not signal it")
    add("ptrace(ATTACH) the job's root init", "EPERM", "seccomp (ptrace)")
    add("open /proc/1/exe (the host's shim binary)", "EACCES",
        "the init is root and not dumpable: ptrace-mode access is refused (no CVE-2019-5736 overwrite)")
    add("readlink /proc/1/root", "EACCES", "as above")
    add("list /proc/1/fd (the init's host-side fds)", "EACCES", "as above")
    add("open /proc/1/environ", "EACCES", "as above")
    add("open /proc/1/mem", "EACCES", "as above")
    add("open /proc/1/ns/mnt (to setns)", "EACCES", "as above")
    add("pidfd_getfd (steal an fd of the root init)", "EPERM", "the kernel's ptrace-mode check")
    add("ptrace(ATTACH) own child", "EPERM", "seccomp refuses ptrace even on the job's own processes")
    add("ptrace(TRACEME)", "EPERM", "seccomp")
    add("process_vm_readv own child", "EPERM", "seccomp")
    add("process_vm_writev own child", "EPERM", "seccomp")
    add("kcmp own child", "EPERM", "seccomp")
    add("kill(-1, SIGURG)", "ESRCH",
        "no process the job's uid may signal in its namespace (the host's of the same uid are not there)")
    add("setpriority(PRIO_USER, own uid, 10)", "ok",
        "succeeds on the job's own processes only; the host-side test checks a host process of that uid kept its nice")

    # ---- files -------------------------------------------------------------------------------
    add("descriptors open at start", {"0": "/dev/null", "1": "pipe", "2": "pipe"},
        "the command gets stdin /dev/null and its two log pipes; nothing of the shim's (close_range)")
    for label in HOST_PATHS:
        add(f"stat {label}", "ENOENT", "outside the job's view: its root is a private tmpfs with /usr, /etc, ... bound in")
    add("read /etc/shadow", "EACCES", "the host's /etc is bound read-only; shadow's mode keeps the job's uid out")
    add("open /etc/passwd for writing", "EACCES", "mode 0644 root: the permission check comes before the read-only mount's")
    add("create a file in /etc", "EROFS", "creating a name checks the read-only mount first")
    add("open /proc/self/exe (python3) for writing", "EACCES", "the host's binaries are root's and read-only")
    add("hard link /etc/shadow into /work", "EXDEV", "different mounts: a link cannot bring a host file into /work")
    add("open_by_handle_at (shocker)", "EPERM", "seccomp (and CAP_DAC_READ_SEARCH)")
    add("name_to_handle_at", "EPERM", "seccomp")
    add("chown own file to root", "EPERM", "no CAP_CHOWN")

    # ---- sockets and IPC (network none) ------------------------------------------------------
    add("connect host 127.0.0.1 listener", "ECONNREFUSED", "the job's own network namespace: its lo is not the host's")
    if HAVE_V6:
        add("connect host ::1 listener", "ECONNREFUSED", "as above")
    if host_ipv4():
        add("connect host's own address", "ENETUNREACH", "only lo in the job's namespace: no route")
    add("connect 169.254.169.254 (metadata)", "ENETUNREACH", "no route out of the job's namespace")
    add("bind TCP port 80", "EACCES",
        "ports below 1024 need CAP_NET_BIND_SERVICE (with network host: the host's ports, so no job takes a service's)")
    add("connect host abstract unix socket", "ECONNREFUSED", "abstract unix names belong to the network namespace")
    add("connect the daemon's socket", "ENOENT", "its path is outside the job's view")
    add("connect /run/dbus/system_bus_socket", "ENOENT", "/run is not in the job's view")
    add("shmget host SysV segment", "ENOENT", "the job's IPC namespace")
    add("ioctl(SIOCSIFFLAGS) lo, unchanged", "EPERM", "no CAP_NET_ADMIN")
    for fam in ("AF_PACKET SOCK_RAW", "AF_PACKET SOCK_DGRAM", "AF_VSOCK SOCK_STREAM", "AF_VSOCK SOCK_DGRAM", "AF_KEY",
                "AF_ALG", "AF_XDP", "AF_BLUETOOTH", "AF_CAN", "AF_TIPC", "AF_RDS", "AF_LLC", "AF_NFC"):
        add("socket " + fam, "EAFNOSUPPORT", "seccomp: families jobs do not need look absent (docs/isolation.md)")
    add("socketpair AF_VSOCK", "EAFNOSUPPORT", "seccomp, socketpair as socket")
    add("socket AF_VSOCK with high bits", "EAFNOSUPPORT", "seccomp compares the whole 64-bit register")
    for proto in ("NETLINK_ROUTE", "NETLINK_SOCK_DIAG", "NETLINK_GENERIC"):
        add("socket AF_NETLINK " + proto, "ok", "netlink protocols jobs use: ip(8) and getifaddrs, ss(8), genetlink")
    for proto in ("NETLINK_CONNECTOR", "NETLINK_KOBJECT_UEVENT", "NETLINK_AUDIT", "NETLINK_NETFILTER", "NETLINK_XFRM",
                  "NETLINK_SELINUX", "NETLINK_RDMA"):
        add("socket AF_NETLINK " + proto, "EPROTONOSUPPORT",
            "seccomp: netlink protocols jobs do not need look absent (docs/isolation.md)")
    add("socket AF_NETLINK NETLINK_CONNECTOR with high bits", "EPROTONOSUPPORT", "the whole register is compared")
    add("receive process events (proc connector)", "EPROTONOSUPPORT",
        "with network host the connector multicast every host fork, exec and exit (host pids, exit codes) to the "
        "job while a root process listened: refused since")
    add("socket AF_INET SOCK_RAW", "EPERM", "AF_INET is allowed; a raw socket needs CAP_NET_RAW")
    add("socket AF_INET6 SOCK_RAW", "EPERM", "as above")

    # ---- devices -----------------------------------------------------------------------------
    add("mknod char device in /work", "EPERM", "no CAP_MKNOD")
    add("mknod block device in /work", "EPERM", "no CAP_MKNOD")
    add("mknod char device in /dev/shm", "EPERM", "no CAP_MKNOD")
    for dev in DEVICES:
        add("open " + dev, "ENOENT", "the job's /dev holds only null, zero, full, random, urandom, tty, ptmx, pts")
    add("open a device node planted in /work", "EACCES",
        "a node the host put in /work: /work is nodev (the device cgroup would say EPERM next)")

    # ---- mounts ------------------------------------------------------------------------------
    for key in ("mount tmpfs on /work/scratch", "mount --bind / on /work/scratch", "mount proc on /work/scratch",
                "remount / read-write", "umount2 /work/scratch", "umount2 /proc/keys (unmask)",
                "umount2 /proc/sys (its read-only bind)", "pivot_root", "chroot /work", "open_tree /", "move_mount",
                "fsopen tmpfs", "fspick /work", "fsconfig", "fsmount", "mount_setattr /"):
        add(key, "EPERM", "seccomp (and no CAP_SYS_ADMIN / CAP_SYS_CHROOT)")
    # Linux 6.15's open_tree with attributes: without OPEN_TREE_CLONE it needs no privilege (an
    # O_PATH open), and the profile let it through while refusing open_tree, because the
    # libseccomp of the build (2.5.4) did not know its name; now refused by number (seccomp.c)
    add("open_tree_attr / (no clone)", "EPERM", "seccomp, like open_tree")
    add("setuid-root mount(8) tmpfs on /work/mnt", "refused", "/usr is nosuid in the job and no_new_privs is set")

    # ---- namespaces --------------------------------------------------------------------------
    for ns in ("NEWUSER", "NEWNS", "NEWNET", "NEWPID", "NEWCGROUP", "NEWIPC", "NEWUTS", "NEWTIME"):
        add(f"unshare(CLONE_{ns})", "EPERM", "seccomp: unshare is refused whole")
    add("clone(CLONE_NEWUSER)", "EPERM", "seccomp: clone with any CLONE_NEW* flag")
    add("clone(CLONE_NEWNS)", "EPERM", "as above")
    add("clone3", "ENOSYS", "seccomp makes clone3 look absent (its flags are in memory a filter cannot read)")
    add("setns(own net ns)", "EPERM", "seccomp")
    add("setns(own mnt ns)", "EPERM", "seccomp")
    add("setns(own user ns)", "EPERM", "seccomp")

    # ---- kernel interfaces -------------------------------------------------------------------
    for key in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        add(key, "EPERM", "seccomp: io_uring would make syscalls past the filter")
    add("io_setup", "EPERM", "seccomp: kernel AIO's events are one pool of the machine's, in no cgroup")
    for key in ("add_key", "request_key", "keyctl(GET_KEYRING_ID session)"):
        add(key, "EPERM", "seccomp: keyrings are not namespaced")
    add("read /proc/keys (masked)", "empty" if exists("/proc/keys") else "ENOENT",
        "masked with /dev/null (absent when the kernel lacks it)")
    add("bpf(BPF_MAP_CREATE)", "EPERM", "seccomp")
    add("perf_event_open (own process)", "EPERM", "seccomp (the kernel alone would allow self-monitoring)")
    add("perf_event_open (whole cpu 0)", "EPERM", "seccomp")
    for key in ("init_module (zeroed image)", "finit_module (/dev/null)", "delete_module (no such module)"):
        add(key, "EPERM", "seccomp (and no CAP_SYS_MODULE)")
    add("create_module", NOT_NATIVE or "EPERM", "seccomp (a syscall number the kernel no longer serves)")
    add("reboot (bad magic)", "EPERM", "seccomp; the kernel would check CAP_SYS_BOOT before the magic")
    add("kexec_load (bad flags)", "EPERM", "seccomp (the kernel checks CAP_SYS_BOOT before the flags)")
    add("kexec_file_load (bad flags)", "EPERM", "as above")
    add("clock_settime(REALTIME, now)", "EPERM", "seccomp: the clock is not namespaced")
    add("settimeofday(now)", "EPERM", "seccomp")
    add("adjtimex (read only)", "EPERM", "seccomp refuses even the reading form")
    add("clock_adjtime (read only)", "EPERM", "as above")
    add("swapon (no such file)", "EPERM", "seccomp (CAP_SYS_ADMIN is checked before the path)")
    add("swapoff (no such file)", "EPERM", "as above")
    add("acct (no such file)", "EPERM", "seccomp (CAP_SYS_PACCT is checked before the path)")
    add("iopl(3)", NOT_NATIVE or "EPERM", "seccomp (and CAP_SYS_RAWIO)")
    add("ioperm(0x80)", NOT_NATIVE or "EPERM", "as above")
    add("userfaultfd", "EPERM", "seccomp")
    add("quotactl", "EPERM", "seccomp")
    add("syslog(READ_ALL)", "EPERM", "seccomp")
    add("read /proc/kmsg", "EACCES" if exists("/proc/kmsg") else "ENOENT", "mode 0400 root")
    add("lookup_dcookie", "EPERM", "seccomp")
    add("fanotify_init", "EPERM", "seccomp")
    add("move_pages (pid 1)", "EPERM", "seccomp")
    add("migrate_pages (pid 1)", "EPERM", "seccomp")
    add("sethostname (same name)", "EPERM", "seccomp (the UTS namespace is the job's, but names are set by joblet)")
    add("setdomainname (same name)", "EPERM", "as above")
    add("vhangup", "EPERM", "no CAP_SYS_TTY_CONFIG")
    add("ioctl(TIOCSTI)", "EPERM", "seccomp: no typing into a terminal the job may share")
    # the kernel here has no syscall 470 either, so it would say ENOSYS too: tests/unit/test_seccomp.c
    # shows the filter's own answer for numbers past the list
    add("syscall 470 (newer than the seccomp list)", "ENOSYS",
        "seccomp refuses syscalls newer than its reviewed list, as if the kernel lacked them")
    if HOST_INT80 == "SIGSEGV":
        add("i386 syscall (int 0x80)", "SIGSEGV", "this kernel has no 32-bit syscalls: int 0x80 faults on the host "
            "too, before a filter could see it (computed from the host)")
    else:
        add("i386 syscall (int 0x80)", NOT_NATIVE or "SIGSYS", "seccomp kills a syscall of another ABI")
    add("x32 syscall", NOT_NATIVE or "SIGSYS", "as above")

    # ---- cgroups: hybrid or v2 on the host, none in the job's view ---------------------------
    for key in ("write own pid to /sys/fs/cgroup/cgroup.procs", "write own pid to /sys/fs/cgroup/unified/cgroup.procs",
                "write own pid to /sys/fs/cgroup/pids/cgroup.procs"):
        add(key, "ENOENT", "the job's /sys is a fresh read-only sysfs: no cgroupfs is mounted in it")
    add("mount cgroup2 on /work/cg", "EPERM", "seccomp")
    add("mount cgroup v1 pids on /work/cg", "EPERM", "seccomp")
    add("/proc/self/cgroup paths", ["/"], "a cgroup namespace rooted at the job's cgroup, in every hierarchy")

    # ---- /proc and /sys writes (opened for writing, never written) ---------------------------
    def proc_write(path, if_there):
        add("open for writing " + path, if_there if exists(path) else "ENOENT",
            "mode: root's only (the /proc/sys bind is read-only too)" if if_there == "EACCES" else
            "a read-only mount: the job's sysfs, or the bind of /proc/sys" if if_there == "EROFS" else if_there)
    proc_write("/proc/sys/kernel/core_pattern", "EACCES")
    proc_write("/proc/sys/kernel/modprobe", "EACCES")
    proc_write("/proc/sys/vm/drop_caches", "EACCES")
    proc_write("/proc/sys/kernel/hostname", "EACCES")
    proc_write("/proc/sys/net/ipv4/ip_forward", "EACCES")
    # mode 0666 (the kernel checks CAP_SYS_ADMIN on write): here the read-only bind of /proc/sys answers
    proc_write("/proc/sys/kernel/ns_last_pid", "EROFS")
    proc_write("/proc/sysrq-trigger", "EACCES")
    proc_write("/proc/1/oom_score_adj", "EACCES")
    add("open for writing /proc/sys/fs/binfmt_misc/register", "ENOENT", "binfmt_misc is not mounted in the job's /proc")
    proc_write("/sys/kernel/mm/transparent_hugepage/enabled", "EROFS")
    proc_write("/sys/kernel/uevent_helper", "EROFS")
    proc_write("/sys/kernel/profiling", "EROFS")
    proc_write("/sys/class/net/lo/mtu", "EROFS")
    proc_write("/sys/power/state", "EROFS")
    add("open for writing /sys/kernel/tracing/trace_marker", "ENOENT", "no tracefs in the job's sysfs")
    add("open for writing /sys/kernel/debug/sched/preempt", "ENOENT", "no debugfs in the job's sysfs")
    add("lower own oom_score_adj to -1000", "EACCES", "below its minimum needs CAP_SYS_RESOURCE")
    add("read /proc/timer_list (masked)", "empty" if exists("/proc/timer_list") else "ENOENT", "masked with /dev/null")

    # ---- privileges --------------------------------------------------------------------------
    add("capability sets", ["0000000000000000"], "CapInh, CapPrm, CapEff, CapBnd, CapAmb all empty")
    add("NoNewPrivs", "1", "no_new_privs: no exec gains privileges")
    add("Seccomp", "2", "a seccomp filter is in force")
    add("capsh --print", "Current: =", "capsh agrees: no capability")
    add("setuid(0)", "EPERM", "no CAP_SETUID")
    add("setgid(0)", "EPERM", "no CAP_SETGID")
    add("setgroups([0])", "EPERM", "no CAP_SETGID")
    add("capset(CAP_SYS_ADMIN)", "EPERM", "not in the permitted (or bounding) set")
    add("prctl(CAP_AMBIENT_RAISE)", "EPERM", "not permitted nor inheritable")
    add("prctl(SET_SECUREBITS)", "EPERM", "no CAP_SETPCAP")
    add("prctl(unset NO_NEW_PRIVS)", "EINVAL", "no_new_privs cannot be cleared")
    add("run a setuid-root binary planted in /work", "euid unchanged", "/work is nosuid, and no_new_privs")
    add("setuid bit of an uploaded file", "0o755", "uploads never keep setuid/setgid/sticky bits")
    add("/work mount flags", ["nodev", "nosuid"], "/work is mounted nosuid,nodev")
    add("sched_setscheduler(SCHED_FIFO)", "EPERM", "real-time scheduling needs CAP_SYS_NICE")
    add("setpriority(-20)", "EACCES", "raising priority needs CAP_SYS_NICE")
    add("ioprio_set(RT)", "EPERM", "the real-time I/O class needs CAP_SYS_ADMIN")
    add("raise RLIMIT_NOFILE's hard limit", "probe error: ValueError: not allowed to raise maximum limit",
        "EPERM from setrlimit (Python reports it as this ValueError): needs CAP_SYS_RESOURCE")
    add("mmap at address 0", "EPERM", "vm.mmap_min_addr, enforced without CAP_SYS_RAWIO")
    add("personality(MMAP_PAGE_ZERO) then exec", "page 0 unmapped", "the same, for the page the personality asks for")
    return a


def host_ipv4():
    """The host's first global IPv4 address, or None."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True,
                             timeout=10).stdout
    except OSError:
        return None
    for line in out.splitlines():
        parts = line.split()
        if "inet" in parts:
            return parts[parts.index("inet") + 1].split("/")[0]
    return None


# With network "host" the job shares the host's network namespace: what that means is reachable
# (the host's loopback listeners and abstract unix sockets), and sysfs shares the host's
# superblock, so its mode check (EACCES) comes before the read-only mount's (EROFS). The rest of
# the list holds as under "none".
HOSTNET = {
    "connect host 127.0.0.1 listener": "ok",
    "connect host ::1 listener": "ok",
    "connect host's own address": "ECONNREFUSED",    # the listener is bound to 127.0.0.1 only
    "connect host abstract unix socket": "ok",
    "connect 169.254.169.254 (metadata)": None,       # depends on the host's network: not attempted
}

ATTEMPTS = _attempts()
VARIANTS = ("root", "user", "root-hostnet")


def expected_for(variant, key, expected):
    if variant == "root-hostnet":
        if key in HOSTNET:
            return HOSTNET[key]
        if key.startswith("open for writing /sys/") and expected == "EROFS":
            return "EACCES"
    return expected


# --------------------------------------------------------------------------------------------
# helpers

def call_as(d, uid, method, path, body=None):
    """An API call from a client of that uid (SO_PEERCRED is the identity); root's goes straight."""
    return d.api(method, path, body) if uid == 0 else api_as(d, uid, method, path, body)


def submit_as(d, uid, body):
    code, job = call_as(d, uid, "POST", "/v1/jobs", body)
    assert code == 201, job
    return job["id"]


def cgroup_dirs(d, jid):
    """The job's cgroup directories on the host: cgroup2 (v2 or hybrid) and each v1 hierarchy."""
    out = []
    for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified") + tuple(
            f"/sys/fs/cgroup/{c}" for c in ("pids", "memory", "cpu", "devices")):
        p = os.path.join(base, d.cgroup_root, d.job_cgroup(jid))
        if os.path.isfile(os.path.join(p, "cgroup.procs")):
            out.append(p)
    assert out, f"job {jid} has no cgroup on the host"
    return out


def job_host_pids(d, jid):
    with open(os.path.join(cgroup_dirs(d, jid)[0], "cgroup.procs")) as f:
        return [int(x) for x in f.read().split()]


def process_named(pids, comm):
    """The first of pids whose command is comm, or None (one that ended meanwhile is passed)."""
    for p in pids:
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip() == comm:
                    return p
        except OSError:
            pass
    return None


def free_major(kind):
    """A device major the host has no driver for (so a node of it opens nothing anywhere)."""
    with open("/proc/devices") as f:
        text = f.read()
    chars, blocks = text.split("Block devices:")
    section = chars if kind == "char" else blocks
    used = {int(l.split()[0]) for l in section.splitlines() if l.strip() and l.split()[0].isdigit()}
    for m in list(range(240, 255)) + list(range(200, 240)):
        if m not in used:
            return m
    pytest.skip(f"no unused {kind} major between 200 and 254")


HOST_TARGET = r"""
import os, signal, sys, time
def seen(sig, frame):
    os.write(1, b"signal %d\n" % sig)
for s in (signal.SIGURG, signal.SIGUSR1, signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, seen)
os.nice(3)
os.write(1, b"ready\n")
while True:
    time.sleep(1)
"""


def start_host_target(uid):
    """A host process of the given uid that reports every signal it gets, at nice 3."""
    argv = [PY, "-c", HOST_TARGET]
    p = subprocess.Popen([*setpriv(uid), *argv] if uid else argv,
                         stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"ready\n"
    os.set_blocking(p.stdout.fileno(), False)
    return p


PROC_CN_LISTENER = r"""
import socket, struct, sys, time
s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 11)   # NETLINK_CONNECTOR
s.bind((0, 1))                                                  # CN_IDX_PROC
def op(o):                                                      # cn_msg to CN_IDX_PROC/CN_VAL_PROC
    body = struct.pack("=I", o)
    cn = struct.pack("=IIIIHH", 1, 1, 0, 0, len(body), 0) + body
    s.send(struct.pack("=IHHII", 16 + len(cn), 3, 0, 0, 0) + cn)
op(1)                                                           # PROC_CN_MCAST_LISTEN
sys.stdout.write("ready\n"); sys.stdout.flush()
try:
    sys.stdin.read()
finally:
    op(2)                                                       # PROC_CN_MCAST_IGNORE
"""


def start_proc_connector_listener():
    """A root process on the host subscribed to the proc connector, as a monitoring agent would
    be: while one is, the kernel multicasts every process event to the connector's group."""
    p = subprocess.Popen([PY, "-c", PROC_CN_LISTENER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"ready\n"
    return p


def stop(p):
    p.kill()
    p.wait()


class Probed:
    """One variant's probe job and what the test saw around it."""


def make_shm_segment():
    """A SysV shared memory segment of the test's own (a fresh key: IPC_CREAT | IPC_EXCL)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for _ in range(100):
        key = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF or 1  # never IPC_PRIVATE (0)
        shmid = libc.shmget(key, 4096, 0o1000 | 0o2000 | 0o600)  # IPC_CREAT | IPC_EXCL
        if shmid >= 0:
            return key, lambda: libc.shmctl(shmid, 0, None)  # IPC_RMID
    raise AssertionError("no free SysV key: " + os.strerror(ctypes.get_errno()))


@pytest.fixture(scope="module", params=VARIANTS)
def probed(request, daemon):
    variant = request.param
    uid = USER if variant == "user" else 0
    if uid:
        need_setpriv()
    tag = uuid.uuid4().hex[:10]
    cleanups = []
    r = Probed()
    r.variant = variant
    try:
        # what the job should not reach
        tcp4 = socket.socket()
        tcp4.bind(("127.0.0.1", 0))
        tcp4.listen(8)
        cleanups.append(tcp4.close)
        tcp6_port = None
        if HAVE_V6:
            tcp6 = socket.socket(socket.AF_INET6)
            tcp6.bind(("::1", 0))
            tcp6.listen(8)
            cleanups.append(tcp6.close)
            tcp6_port = tcp6.getsockname()[1]
        abstract = socket.socket(socket.AF_UNIX)
        abstract.bind("\0joblet-escape-" + tag)
        abstract.listen(8)
        cleanups.append(abstract.close)
        shm_key, rm_shm = make_shm_segment()
        cleanups.append(rm_shm)
        host_tmp, host_shm = f"/tmp/joblet-escape-{tag}", f"/dev/shm/joblet-escape-{tag}"
        for path in (host_tmp, host_shm):
            with open(path, "w") as f:
                f.write("host secret\n")
            os.chmod(path, 0o644)
            cleanups.append(lambda path=path: os.unlink(path))
        listener = start_proc_connector_listener()
        cleanups.append(lambda: stop(listener))
        root_target = start_host_target(0)
        cleanups.append(lambda: stop(root_target))

        # another job of the same submitter, with a file in its /work
        victim = submit_as(daemon, uid, {"command": "sh", "args": ["-c", "echo secret > secret; exec sleep 120"]})
        cleanups.append(lambda: call_as(daemon, uid, "POST", f"/v1/jobs/{victim}/stop"))
        daemon.wait_status(victim, "RUNNING")
        # RUNNING comes before its shell has written the file and become `sleep` (CI run 22 here
        # read the job's processes in between, on a loaded machine)
        victim_sleep = wait_for(lambda: process_named(job_host_pids(daemon, victim), "sleep"),
                                "the victim job's sleep")

        # the probe job; its upload asks for a setuid bit
        script = b"#!/bin/sh\nid -u\n"
        body = {"command": "python3", "args": ["-c", PROBE],
                "uploads": [{"path": "suid-upload", "type": "file", "mode": 0o4755,
                             "content_b64": base64.b64encode(script).decode(), "size": len(script)}]}
        if variant == "root-hostnet":
            body["network"] = "host"
        jid = submit_as(daemon, uid, body)
        cleanups.append(lambda: call_as(daemon, uid, "POST", f"/v1/jobs/{jid}/stop"))
        job = daemon.wait_status(jid, "RUNNING")
        r.jid, r.job_uid = jid, job["uid"]
        r.upload_listing = {u["path"]: u["mode"] for u in job.get("uploads", [])}
        probe_pids = job_host_pids(daemon, jid)
        init = next(p for p in probe_pids if open(f"/proc/{p}/comm").read().strip() == "joblet-init")
        shim = int(next(l for l in open(f"/proc/{init}/status") if l.startswith("PPid:")).split()[1])

        # a host process of the job's own uid, for the signals and renice the job may try
        same_uid = start_host_target(r.job_uid)
        cleanups.append(lambda: stop(same_uid))
        r.targets = {"a host process (root)": root_target, "a host process of the job's uid": same_uid}
        r.victim, r.victim_sleep = victim, victim_sleep

        work = daemon.work(jid)
        shutil.copy("/usr/bin/id", os.path.join(work, "suid-id"))
        os.chown(os.path.join(work, "suid-id"), 0, 0)
        os.chmod(os.path.join(work, "suid-id"), 0o4755)
        os.mknod(os.path.join(work, "planted-node"), 0o666 | stat.S_IFCHR, os.makedev(free_major("char"), 0))
        cfg = {
            "host_pids": {"a host process (root)": root_target.pid, "a host process of the job's uid": same_uid.pid,
                          "another job's process": victim_sleep},
            "sig0_pids": {"the daemon": daemon.proc.pid, "the job's shim": shim},
            "host_paths": {"another job's /work file": os.path.join(daemon.work(victim), "secret"),
                           "the state directory": daemon.state,
                           "the daemon's database": os.path.join(daemon.state, "joblet.db"),
                           "the daemon's socket dir": daemon.dir, "a host /tmp file": host_tmp,
                           "a host /dev/shm file": host_shm, "/root": "/root", "/home": "/home",
                           "/var/lib": "/var/lib", "/run": "/run", "/boot": "/boot"},
            "tcp4_port": tcp4.getsockname()[1], "tcp6_port": tcp6_port, "host_ip": host_ipv4(),
            "metadata": variant != "root-hostnet", "abstract": "joblet-escape-" + tag,
            "daemon_socket": daemon.sock, "shm_key": shm_key,
            "unused_char_major": free_major("char"), "unused_block_major": free_major("block"),
        }
        for path in cfg["host_paths"].values():
            assert exists(path), f"the test's own target {path} is missing on the host: the probe would prove nothing"
        with open(os.path.join(work, "cfg.json"), "w") as f:
            json.dump(cfg, f)
        r.host_side_cgroups = cgroup_writes_as(r.job_uid, daemon, jid)
        open(os.path.join(work, "go"), "w").close()

        done = daemon.wait(jid, timeout=90)
        out, err = daemon.output(jid), daemon.output(jid, "stderr")
        assert done["status"] == "COMPLETED", (done, out[-2000:], err[-4000:])
        r.results = json.loads(out.splitlines()[-1])
        # what the host processes got meanwhile
        time.sleep(0.2)
        r.signals = {label: (p.stdout.read() or b"").decode() for label, p in r.targets.items()}
        r.alive = {label: p.poll() is None for label, p in r.targets.items()}
        r.nice = os.getpriority(os.PRIO_PROCESS, same_uid.pid)
        r.victim_status = daemon.job(victim)["status"]
        r.victim_sleep_alive = os.path.exists(f"/proc/{victim_sleep}")
        yield r
    finally:
        for c in reversed(cleanups):
            try:
                c()
            except Exception:
                pass


def cgroup_writes_as(uid, d, jid):
    """As the job's uid but outside the job (a bound on what a job process could do, were the
    cgroupfs in its view): write its own pid ("0") into the host's cgroup roots, joblet's
    parent cgroup and the job's own cgroup. Harmless: a write that succeeded would only move
    this short-lived helper."""
    targets = {}
    for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"):
        if os.path.isfile(os.path.join(base, "cgroup.procs")):
            targets[f"{base} (root)"] = os.path.join(base, "cgroup.procs")
            if os.path.isfile(os.path.join(base, d.cgroup_root, "cgroup.procs")):
                targets[f"{base} (joblet's parent)"] = os.path.join(base, d.cgroup_root, "cgroup.procs")
            if os.path.isfile(os.path.join(base, d.cgroup_root, d.job_cgroup(jid), "cgroup.procs")):
                targets[f"{base} (the job's own)"] = os.path.join(base, d.cgroup_root, d.job_cgroup(jid), "cgroup.procs")
    code = ("import errno, json, sys\nres = {}\nfor k, p in json.loads(sys.argv[1]).items():\n"
            "    try:\n        open(p, 'w').write('0')\n        res[k] = 'ok'\n"
            "    except OSError as e:\n        res[k] = errno.errorcode[e.errno]\nprint(json.dumps(res))")
    p = subprocess.run([*setpriv(uid), PY, "-c", code, json.dumps(targets)], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# --------------------------------------------------------------------------------------------
# the list

@pytest.mark.parametrize("key,expected,why", ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_attempt(probed, key, expected, why):
    want = expected_for(probed.variant, key, expected)
    if want is None:
        pytest.skip(f"not attempted under {probed.variant}")
    got = probed.results.get(key, "<not attempted>")
    assert got == want, f"{probed.variant}: {key}: got {got!r}, expected {want!r} ({why})"


def test_every_attempt_is_in_the_list(probed):
    """The probe made exactly the attempts listed here: none unlisted, none forgotten."""
    listed = {k for k, e, _ in ATTEMPTS if expected_for(probed.variant, k, e) is not None}
    assert set(probed.results) == listed, (sorted(set(probed.results) - listed), sorted(listed - set(probed.results)))


def test_upload_listing_shows_no_setuid_bit(probed):
    """The upload asked for 04755; the listing says what the job got: 0755."""
    assert probed.upload_listing == {"suid-upload": "0755"}, probed.upload_listing


def test_host_processes_the_job_aimed_at_are_untouched(probed):
    """The host processes the job tried to kill, signal (kill -1) and renice (PRIO_USER) got nothing
    and kept their nice; the other job still runs."""
    assert probed.alive == {"a host process (root)": True, "a host process of the job's uid": True}, probed.alive
    assert probed.signals == {"a host process (root)": "", "a host process of the job's uid": ""}, probed.signals
    assert probed.nice == 3, probed.nice
    assert probed.victim_status == "RUNNING" and probed.victim_sleep_alive


def test_cgroup_files_refuse_the_jobs_uid_even_outside_the_job(probed):
    """Writing a pid into the host's cgroup roots, joblet's parent cgroup or the job's own
    cgroup.procs as the job's uid, on the host: EACCES (root's files, mode 0644)."""
    got = probed.host_side_cgroups
    assert any("(root)" in k for k in got) and any("(the job's own)" in k for k in got), got
    assert set(got.values()) == {"EACCES"}, got


# --------------------------------------------------------------------------------------------
# devices through the cgroup, and GPUs not granted

OPEN_IN_CGROUP = r"""
import errno, json, os, sys
for procs in json.loads(sys.argv[1]):
    with open(procs, "w") as f:
        f.write("0")
res = {}
for n in sys.argv[2:]:
    try:
        os.close(os.open(n, os.O_RDWR))
        res[n] = "ok"
    except OSError as e:
        res[n] = errno.errorcode[e.errno]
print(json.dumps(res))
"""


def open_in_cgroups(procs_files, nodes):
    """As root on the host, join the given cgroups (a short-lived helper, never the test), then open each node."""
    p = subprocess.run([PY, "-c", OPEN_IN_CGROUP, json.dumps(procs_files), *nodes], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def device_filter_procs(d, jid):
    """cgroup.procs of the cgroups that filter the job's devices: cgroup2 (eBPF) where there is one, v1 devices."""
    files = [os.path.join(c, "cgroup.procs") for c in cgroup_dirs(d, jid)
             if "/devices/" in c or os.path.isfile(os.path.join(c, "cgroup.controllers"))]
    assert files, f"job {jid} has no device-filtering cgroup"
    return files


def test_device_cgroup_refuses_an_unlisted_node(daemon, tmp_path):
    """Even a root process placed in a job's cgroup opens an unlisted node with EPERM (ENXIO
    outside: no driver), while /dev/null opens: the filter stands behind the missing nodes."""
    node = str(tmp_path / "node")
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(free_major("char"), 0))
    assert open_in_cgroups([], [node, "/dev/null"]) == {node: "ENXIO", "/dev/null": "ok"}
    jid = daemon.submit("sleep", "60")
    try:
        daemon.wait_status(jid, "RUNNING")
        assert open_in_cgroups(device_filter_procs(daemon, jid), [node, "/dev/null"]) == {node: "EPERM", "/dev/null": "ok"}
    finally:
        daemon.api("POST", f"/v1/jobs/{jid}/stop")
        daemon.wait(jid)


GPU_PROBE = r"""
import errno, json, os, sys
res = {"dev": sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))}
for n in sys.argv[1:]:
    try:
        os.close(os.open(n, os.O_RDWR))
        res[n] = "ok"
    except OSError as e:
        res[n] = errno.errorcode[e.errno]
print(json.dumps(res))
"""


@pytest.mark.skipif(not os.path.exists(FAKE_NVML), reason="the fake NVML is not built")
def test_gpu_not_granted_is_absent_and_refused(fresh_daemon, tmp_path):
    """On a fixture machine with real 195:N nodes: a job given one GPU sees only that GPU's node;
    the others are absent from its /dev and from its view of the host's device directory
    (ENOENT), and from the job's cgroup they open with EPERM where the granted one reaches the
    (absent) driver (ENXIO)."""
    dev = tmp_path / "dev"
    make_nodes(dev, "dgx-h100")
    f = os.path.join(FIX, "dgx-h100")
    (tmp_path / "nocuda").mkdir()
    d = fresh_daemon(f"gpu:\n  backends: [nvml]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                     f"  sys_root: {f}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp_path}/nocuda\n",
                     env={"FAKE_NVML_FIXTURE": f"{f}/machine.json"})
    minors = sorted(g["minor"] for g in machine("dgx-h100")["gpus"])
    jid = d.submit("python3", "-c", GPU_PROBE, *[f"/dev/nvidia{m}" for m in minors],
                   *[str(dev / f"nvidia{m}") for m in minors], gpu_count=1)
    job = d.wait(jid)
    assert job["status"] == "COMPLETED", (job, d.output(jid, "stderr"))
    r = json.loads(d.output(jid).splitlines()[-1])
    mine = job["gpus"][0]["minor"]
    assert r.pop("dev") == sorted([f"nvidia{mine}", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]), r
    for m in minors:
        assert r.pop(f"/dev/nvidia{m}") == ("ENXIO" if m == mine else "ENOENT"), (m, r)
    assert set(r.values()) == {"ENOENT"}, r  # the host's device directory is not in the job's view

    held = d.submit("sleep", "60", gpu_count=1)
    try:
        d.wait_status(held, "RUNNING")
        held_minor = d.job(held)["gpus"][0]["minor"]
        nodes = [str(dev / f"nvidia{m}") for m in minors]
        got = open_in_cgroups(device_filter_procs(d, held), nodes)
        assert got == {str(dev / f"nvidia{m}"): ("ENXIO" if m == held_minor else "EPERM") for m in minors}, got
    finally:
        d.api("POST", f"/v1/jobs/{held}/stop")
        d.wait(held)


# --------------------------------------------------------------------------------------------
# what a job leaves behind in /work

def test_links_left_in_work_do_not_lead_the_cleanup_outside(daemon, tmp_path):
    """A job leaves symlinks in /work to a host file and a host directory (paths it cannot
    reach, but root's cleanup could follow); deleting the job removes the links, never what
    they point at."""
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep").write_text("host data\n")
    jid = daemon.submit("sh", "-c", f"ln -s {canary} dir-link && ln -s {canary}/keep file-link && "
                                    f"mkdir -p deep/er && ln -s {canary} deep/er/link && ls -l")
    job = daemon.wait(jid)
    assert job["status"] == "COMPLETED", (job, daemon.output(jid, "stderr"))
    assert "dir-link ->" in daemon.output(jid)
    work = daemon.work(jid)
    code, _ = daemon.api("DELETE", f"/v1/jobs/{jid}")
    assert code in (200, 204), code
    assert not os.path.exists(os.path.join(daemon.state, "jobs", jid)) and not os.path.exists(work)
    assert (canary / "keep").read_text() == "host data\n"
