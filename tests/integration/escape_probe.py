"""The escape attempts of tests/integration/test_escape.py, made from inside one job.

Run as `python3 -c <this file's text>` in a job (the job's python3 is the host's /usr). The test
plants what the job should not reach in /work/cfg.json (host pids, a listener's port, the
daemon's socket and state paths, ...) and a few files in the job's /work through the host, then
creates /work/go. This prints one JSON object on its last line: {attempt: outcome}, where an
outcome is "ok" (the call succeeded) or the errno's name, or a short word for what was seen.

Every attempt is harmless if isolation had failed: mounts only target scratch directories under
/work, nothing is written to a /proc or /sys file (opened for writing, then closed unwritten),
signals go only to processes the test started for the purpose (or are signal 0), reboot and the
kexec calls carry arguments the kernel refuses after its permission check (bad magic, unknown
flags), the module calls carry no module (a zeroed image, /dev/null, a name no module has), the
clock is set to the time it already reads, swapon/acct name files that do not exist.
"""
import ctypes
import errno
import fcntl
import json
import mmap
import os
import platform
import signal
import socket
import struct
import subprocess
import sys
import time

MACHINE = platform.machine()

# Syscall numbers. None: the syscall does not exist on that architecture.
_NR = {
    #                   x86_64 aarch64
    "clone":            (56, 220),
    "kill":             (62, 129),
    "socket":           (41, 198),
    "ptrace":           (101, 117),
    "syslog":           (103, 116),
    "vhangup":          (153, 58),
    "pivot_root":       (155, 41),
    "adjtimex":         (159, 171),
    "chroot":           (161, 51),
    "acct":             (163, 89),
    "settimeofday":     (164, 170),
    "mount":            (165, 40),
    "umount2":          (166, 39),
    "swapon":           (167, 224),
    "swapoff":          (168, 225),
    "reboot":           (169, 142),
    "sethostname":      (170, 161),
    "setdomainname":    (171, 162),
    "iopl":             (172, None),
    "ioperm":           (173, None),
    "create_module":    (174, None),
    "init_module":      (175, 105),
    "delete_module":    (176, 106),
    "quotactl":         (179, 60),
    "lookup_dcookie":   (212, 18),
    "clock_settime":    (227, 112),
    "kexec_load":       (246, 104),
    "add_key":          (248, 217),
    "request_key":      (249, 218),
    "keyctl":           (250, 219),
    "ioprio_set":       (251, 30),
    "migrate_pages":    (256, 238),
    "unshare":          (272, 97),
    "move_pages":       (279, 239),
    "perf_event_open":  (298, 241),
    "fanotify_init":    (300, 262),
    "name_to_handle_at": (303, 264),
    "open_by_handle_at": (304, 265),
    "clock_adjtime":    (305, 266),
    "setns":            (308, 268),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp":             (312, 272),
    "finit_module":     (313, 273),
    "kexec_file_load":  (320, 294),
    "bpf":              (321, 280),
    "userfaultfd":      (323, 282),
    "pidfd_send_signal": (424, 424),
    "io_setup":         (206, 0),
    "io_uring_setup":   (425, 425),
    "io_uring_enter":   (426, 426),
    "io_uring_register": (427, 427),
    "open_tree":        (428, 428),
    "move_mount":       (429, 429),
    "fsopen":           (430, 430),
    "fsconfig":         (431, 431),
    "fsmount":          (432, 432),
    "fspick":           (433, 433),
    "pidfd_open":       (434, 434),
    "clone3":           (435, 435),
    "pidfd_getfd":      (438, 438),
    "mount_setattr":    (442, 442),
    "open_tree_attr":   (467, 467),
    "past the list":    (470, 470),  # no syscall yet: above the newest the seccomp list was reviewed for
}
_COL = {"x86_64": 0, "aarch64": 1}.get(MACHINE)
NR = {k: v[_COL] for k, v in _NR.items()} if _COL is not None else {}

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]

results = {}


def ename(n):
    return errno.errorcode.get(n, str(n))


def arg(a):
    if isinstance(a, bytes):
        return ctypes.c_char_p(a)
    if isinstance(a, int):
        return ctypes.c_long(a)
    return a  # None, buffers, pointers


def sys_(name, *args):
    """A raw syscall: "ok" (and the return value) or the errno's name."""
    nr = NR.get(name)
    if nr is None:
        return "absent", None
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *(arg(a) for a in args))
    if rc == -1:
        return ename(ctypes.get_errno()), rc
    return "ok", rc


def attempt(key, fn):
    """Record fn()'s outcome under key: its return value, or the errno of the OSError it raised."""
    try:
        out = fn()
        results[key] = "ok" if out is None else out
    except OSError as e:
        results[key] = ename(e.errno) if e.errno else repr(e)
    except Exception as e:  # a probe that broke says so: the test shows it as it is
        results[key] = f"probe error: {type(e).__name__}: {e}"


def call(name, *args, close=False):
    def f():
        out, rc = sys_(name, *args)
        if out == "ok" and close and rc is not None and rc >= 0:
            os.close(rc)
        return out
    return f


def open_for_write(path):
    """Open for writing, close unwritten: the open is where a read-only mount or the file's mode refuses."""
    def f():
        os.close(os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK))
    return f


def open_read(path, flags=0):
    def f():
        os.close(os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | flags))
    return f


def read_len(path):
    """How much a read gives: masked files read as empty."""
    def f():
        with open(path, "rb") as fh:
            return "empty" if fh.read(4096) == b"" else "has data"
    return f


def connect(family, addr, timeout=3):
    def f():
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(addr)
        finally:
            s.close()
    return f




def inherited_fds():
    """What the job's command got open from joblet: a leaked descriptor of a host directory or
    socket would be a way out (openat(fd, "..")). Read before the probe opens anything."""
    out = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        out[fd] = target.split(":[")[0] if ":[" in target else target
    return out


results["descriptors open at start"] = inherited_fds()

# ---------------------------------------------------------------------------------------------
# wait for the test to plant its files in /work (at most 30 s)
deadline = time.time() + 30
while not os.path.exists("/work/go") and time.time() < deadline:
    time.sleep(0.02)
with open("/work/cfg.json") as fh:
    CFG = json.load(fh)

for d in ("scratch", "scratch/old", "cg", "mnt"):
    os.makedirs("/work/" + d, exist_ok=True)
open("/work/mine", "w").close()

# ---------------------------------------------------------------------------------------------
# processes: the host's and other jobs' are not in this PID namespace
my_pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
comms = []
for p in my_pids:
    try:
        with open(f"/proc/{p}/comm") as fh:
            comms.append(fh.read().strip())
    except OSError:
        pass
results["/proc lists only the job's processes"] = sorted(set(comms))


def setown(pid):
    """F_SETOWN names the process that gets SIGIO/SIGURG for a socket: a pid of another namespace is no one."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        fcntl.fcntl(s.fileno(), fcntl.F_SETOWN, pid)
    finally:
        s.close()


# processes the test started for the purpose: a real SIGKILL would only end those
for label, pid in CFG["host_pids"].items():
    attempt(f"kill(SIGKILL) {label}", lambda pid=pid: os.kill(pid, signal.SIGKILL))
    attempt(f"pidfd_open {label}", call("pidfd_open", pid, 0, close=True))
    attempt(f"ptrace(ATTACH) {label}", call("ptrace", 16, pid, 0, 0))
    attempt(f"fcntl(F_SETOWN) {label}", lambda pid=pid: setown(pid))
    attempt(f"/proc/<pid> of {label}", lambda pid=pid: os.stat(f"/proc/{pid}") and None)
# processes that are not the test's: signal 0 only (the permission and existence check)
for label, pid in CFG["sig0_pids"].items():
    attempt(f"kill(sig 0) {label}", lambda pid=pid: os.kill(pid, 0))
# PID 1 is the job's own init, which stays root: no signal, no ptrace, no peeking at its /proc
attempt("kill(sig 0) the job's root init", lambda: os.kill(1, 0))
attempt("ptrace(ATTACH) the job's root init", call("ptrace", 16, 1, 0, 0))
attempt("open /proc/1/exe (the host's shim binary)", open_read("/proc/1/exe"))
attempt("readlink /proc/1/root", lambda: os.readlink("/proc/1/root") and None)
attempt("list /proc/1/fd (the init's host-side fds)", lambda: os.listdir("/proc/1/fd") and None)
attempt("open /proc/1/environ", open_read("/proc/1/environ"))
attempt("open /proc/1/mem", open_read("/proc/1/mem"))
attempt("open /proc/1/ns/mnt (to setns)", open_read("/proc/1/ns/mnt"))


def steal_init_fd():
    out, fd = sys_("pidfd_open", 1, 0)
    if out != "ok":
        return "pidfd_open " + out
    try:
        out, got = sys_("pidfd_getfd", fd, 0, 0)
        if out == "ok":
            os.close(got)
        return out
    finally:
        os.close(fd)


attempt("pidfd_getfd (steal an fd of the root init)", steal_init_fd)

# a child of the job's own, for the ptrace family (the filter refuses them even on one's own)
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
attempt("ptrace(ATTACH) own child", call("ptrace", 16, child, 0, 0))


def in_child(fn):
    """fn() in a child that exits right after (a traced process would stop on its next signal)."""
    def f():
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.write(w, fn().encode())
            os._exit(0)
        os.close(w)
        out = os.read(r, 256).decode()
        os.close(r)
        os.waitpid(pid, 0)
        return out
    return f


attempt("ptrace(TRACEME)", in_child(call("ptrace", 0, 0, 0, 0)))
buf = ctypes.create_string_buffer(16)
iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 16)
attempt("process_vm_readv own child", call("process_vm_readv", child, iov, 1, iov, 1, 0))
attempt("process_vm_writev own child", call("process_vm_writev", child, iov, 1, iov, 1, 0))
attempt("kcmp own child", call("kcmp", os.getpid(), child, 0, 0, 0))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)

# ---------------------------------------------------------------------------------------------
# files outside the job's view
for label, path in CFG["host_paths"].items():
    attempt(f"stat {label}", lambda path=path: os.stat(path) and None)
attempt("read /etc/shadow", open_read("/etc/shadow"))
attempt("open /etc/passwd for writing", open_for_write("/etc/passwd"))
attempt("create a file in /etc", lambda: os.close(os.open("/etc/joblet-escape", os.O_WRONLY | os.O_CREAT | os.O_EXCL)))
attempt("open /proc/self/exe (python3) for writing", open_for_write("/proc/self/exe"))
attempt("hard link /etc/shadow into /work", lambda: os.link("/etc/shadow", "/work/shadow"))
attempt("open_by_handle_at (shocker)", call("open_by_handle_at", -100, None, 0))
fh = ctypes.create_string_buffer(8 + 128)
struct.pack_into("I", fh, 0, 128)
mnt_id = ctypes.c_int()
attempt("name_to_handle_at", call("name_to_handle_at", -100, b"/etc", fh, ctypes.byref(mnt_id), 0))
attempt("chown own file to root", lambda: os.chown("/work/mine", 0, 0))

# ---------------------------------------------------------------------------------------------
# sockets, IPC
if CFG.get("tcp4_port"):
    attempt("connect host 127.0.0.1 listener", connect(socket.AF_INET, ("127.0.0.1", CFG["tcp4_port"])))
if CFG.get("tcp6_port"):
    attempt("connect host ::1 listener", connect(socket.AF_INET6, ("::1", CFG["tcp6_port"])))
if CFG.get("host_ip"):
    attempt("connect host's own address", connect(socket.AF_INET, (CFG["host_ip"], CFG["tcp4_port"])))
if CFG.get("metadata"):
    attempt("connect 169.254.169.254 (metadata)", connect(socket.AF_INET, ("169.254.169.254", 80), timeout=2))


def bind_port(port):
    def f():
        s = socket.socket()
        try:
            s.bind(("0.0.0.0", port))
        finally:
            s.close()
    return f


attempt("bind TCP port 80", bind_port(80))
attempt("connect host abstract unix socket", lambda: connect(socket.AF_UNIX, "\0" + CFG["abstract"])())
attempt("connect the daemon's socket", lambda: connect(socket.AF_UNIX, CFG["daemon_socket"])())
attempt("connect /run/dbus/system_bus_socket", connect(socket.AF_UNIX, "/run/dbus/system_bus_socket"))
libc.shmget.restype = ctypes.c_int


def shmget():
    ctypes.set_errno(0)
    if libc.shmget(CFG["shm_key"], 0, 0) == -1:
        return ename(ctypes.get_errno())
    return "ok"


attempt("shmget host SysV segment", shmget)


def set_lo_flags():
    """SIOCSIFFLAGS on lo with the flags it has: needs CAP_NET_ADMIN over the network namespace."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = struct.pack("16sH14x", b"lo", 0)
        got = fcntl.ioctl(s.fileno(), 0x8913, ifr)       # SIOCGIFFLAGS
        fcntl.ioctl(s.fileno(), 0x8914, got)             # SIOCSIFFLAGS, unchanged
    finally:
        s.close()


attempt("ioctl(SIOCSIFFLAGS) lo, unchanged", set_lo_flags)
for name, fam, typ, proto in [("AF_PACKET SOCK_RAW", 17, 3, 0x0300), ("AF_PACKET SOCK_DGRAM", 17, 2, 0x0300),
                              ("AF_INET SOCK_RAW", 2, 3, 255), ("AF_INET6 SOCK_RAW", 10, 3, 255),
                              ("AF_VSOCK SOCK_STREAM", 40, 1, 0), ("AF_VSOCK SOCK_DGRAM", 40, 2, 0),
                              ("AF_KEY", 15, 3, 2), ("AF_ALG", 38, 5, 0), ("AF_XDP", 44, 3, 0),
                              ("AF_BLUETOOTH", 31, 3, 1), ("AF_CAN", 29, 3, 1), ("AF_TIPC", 30, 5, 0),
                              ("AF_RDS", 21, 5, 0), ("AF_LLC", 26, 2, 0), ("AF_NFC", 39, 2, 0)]:
    def mk(fam=fam, typ=typ, proto=proto):
        ctypes.set_errno(0)
        fd = libc.socket(fam, typ, proto)
        if fd == -1:
            return ename(ctypes.get_errno())
        os.close(fd)
        return "ok"
    attempt("socket " + name, mk)
for name, proto in [("NETLINK_ROUTE", 0), ("NETLINK_SOCK_DIAG", 4), ("NETLINK_GENERIC", 16),
                    ("NETLINK_CONNECTOR", 11), ("NETLINK_KOBJECT_UEVENT", 15), ("NETLINK_AUDIT", 9),
                    ("NETLINK_NETFILTER", 12), ("NETLINK_XFRM", 6), ("NETLINK_SELINUX", 7), ("NETLINK_RDMA", 20)]:
    def nl(proto=proto):
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto).close()
    attempt("socket AF_NETLINK " + name, nl)
attempt("socket AF_NETLINK NETLINK_CONNECTOR with high bits", call("socket", 16, 3, (1 << 32) | 11, close=True))


def host_process_events():
    """The proc connector multicasts every fork, exec and exit on the host (host pids, exit codes)
    to the sockets bound to its group in the initial network namespace, once any root process
    listens (the test starts one). Listen, make a child, and see whether anything arrives."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 11)
    try:
        s.bind((0, 1))  # CN_IDX_PROC
        s.settimeout(1)
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        try:
            s.recv(65536)
            return "received host process events"
        except socket.timeout:
            return "nothing received"
    finally:
        s.close()


attempt("receive process events (proc connector)", host_process_events)
fds = (ctypes.c_int * 2)()
attempt("socketpair AF_VSOCK", lambda: "ok" if libc.socketpair(40, 1, 0, fds) == 0 else ename(ctypes.get_errno()))
# the family with high bits set: the filter compares all 64 bits
attempt("socket AF_VSOCK with high bits", call("socket", (1 << 32) | 40, 1, 0, close=True))


# ---------------------------------------------------------------------------------------------
# devices
MAJ_C, MAJ_B = CFG["unused_char_major"], CFG["unused_block_major"]
attempt("mknod char device in /work", lambda: os.mknod("/work/node-c", 0o600 | 0o020000, os.makedev(MAJ_C, 0)))
attempt("mknod block device in /work", lambda: os.mknod("/work/node-b", 0o600 | 0o060000, os.makedev(MAJ_B, 0)))
attempt("mknod char device in /dev/shm", lambda: os.mknod("/dev/shm/node-c", 0o600 | 0o020000, os.makedev(MAJ_C, 0)))
for dev in ("/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg",
            "/dev/kvm", "/dev/fuse", "/dev/net/tun", "/dev/vsock", "/dev/loop-control", "/dev/console",
            "/dev/tty0", "/dev/nvidia0", "/dev/nvidiactl", "/dev/userfaultfd", "/dev/watchdog"):
    attempt("open " + dev, open_read(dev))
attempt("open a device node planted in /work", open_read("/work/planted-node"))

# ---------------------------------------------------------------------------------------------
# mounts
attempt("mount tmpfs on /work/scratch", call("mount", b"none", b"/work/scratch", b"tmpfs", 0, None))
attempt("mount --bind / on /work/scratch", call("mount", b"/", b"/work/scratch", None, 0x1000 | 0x4000, None))
attempt("mount proc on /work/scratch", call("mount", b"proc", b"/work/scratch", b"proc", 0, None))
attempt("remount / read-write", call("mount", None, b"/", None, 0x20 | 0x1000, None))
attempt("umount2 /work/scratch", call("umount2", b"/work/scratch", 0))
attempt("umount2 /proc/keys (unmask)", call("umount2", b"/proc/keys", 2))
attempt("umount2 /proc/sys (its read-only bind)", call("umount2", b"/proc/sys", 2))
attempt("pivot_root", call("pivot_root", b"/work/scratch", b"/work/scratch/old"))
attempt("chroot /work", call("chroot", b"/work"))
attempt("open_tree /", call("open_tree", -100, b"/", 1 | 0x80000, close=True))
attempt("open_tree_attr / (no clone)", call("open_tree_attr", -100, b"/", 0x80000, None, 0, close=True))
attempt("move_mount", call("move_mount", -100, b"/work/scratch", -100, b"/work/mnt", 0))
attempt("fsopen tmpfs", call("fsopen", b"tmpfs", 1, close=True))
attempt("fspick /work", call("fspick", -100, b"/work", 1, close=True))
attempt("fsconfig", call("fsconfig", -1, 0, None, None, 0))
attempt("fsmount", call("fsmount", -1, 1, 0, close=True))
attr = struct.pack("QQQQ", 1, 0, 0, 0)  # attr_set MOUNT_ATTR_RDONLY on /, already read-only
attempt("mount_setattr /", call("mount_setattr", -100, b"/", 0, ctypes.create_string_buffer(attr, 32), 32))


def setuid_mount8():
    p = subprocess.run(["/usr/bin/mount", "-t", "tmpfs", "none", "/work/mnt"], capture_output=True, text=True)
    mounted = any(" /work/mnt " in line for line in open("/proc/self/mountinfo"))
    return "MOUNTED" if mounted else ("refused" if p.returncode != 0 else f"rc {p.returncode}")


attempt("setuid-root mount(8) tmpfs on /work/mnt", setuid_mount8)

# ---------------------------------------------------------------------------------------------
# namespaces
for flag, name in [(0x10000000, "NEWUSER"), (0x00020000, "NEWNS"), (0x40000000, "NEWNET"), (0x20000000, "NEWPID"),
                   (0x02000000, "NEWCGROUP"), (0x08000000, "NEWIPC"), (0x04000000, "NEWUTS"), (0x80, "NEWTIME")]:
    attempt(f"unshare(CLONE_{name})", call("unshare", flag))


def clone_ns(flag):
    def f():
        ctypes.set_errno(0)
        pid = libc.syscall(ctypes.c_long(NR["clone"]), ctypes.c_ulong(flag | 17), ctypes.c_ulong(0), None, None,
                           ctypes.c_ulong(0))
        if pid == 0:
            os._exit(0)
        if pid > 0:
            os.waitpid(pid, 0)
            return "ok"
        return ename(ctypes.get_errno())
    return f


attempt("clone(CLONE_NEWUSER)", clone_ns(0x10000000))
attempt("clone(CLONE_NEWNS)", clone_ns(0x00020000))
attempt("clone3", call("clone3", None, 0))


def setns_own(ns, nstype):
    def f():
        fd = os.open(f"/proc/self/ns/{ns}", os.O_RDONLY)
        try:
            return sys_("setns", fd, nstype)[0]
        finally:
            os.close(fd)
    return f


attempt("setns(own net ns)", setns_own("net", 0x40000000))
attempt("setns(own mnt ns)", setns_own("mnt", 0x00020000))
attempt("setns(own user ns)", setns_own("user", 0x10000000))

# ---------------------------------------------------------------------------------------------
# kernel surfaces
params = ctypes.create_string_buffer(120)
attempt("io_uring_setup", call("io_uring_setup", 8, params, close=True))
attempt("io_uring_enter", call("io_uring_enter", -1, 0, 0, 0, None, 0))
attempt("io_uring_register", call("io_uring_register", -1, 0, None, 0))
aio_ctx = ctypes.c_ulong(0)  # (one event of the machine's pool, had it been let through, until the probe ends)
attempt("io_setup", call("io_setup", 1, ctypes.byref(aio_ctx)))
attempt("add_key", call("add_key", b"user", b"joblet-escape", b"x", 1, -2))  # KEY_SPEC_PROCESS_KEYRING
attempt("request_key", call("request_key", b"user", b"joblet-escape", None, 0))
attempt("keyctl(GET_KEYRING_ID session)", call("keyctl", 0, -3, 1))
attempt("read /proc/keys (masked)", read_len("/proc/keys"))
bpf_attr = ctypes.create_string_buffer(128)
struct.pack_into("IIII", bpf_attr, 0, 2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY, 4-byte keys and values, one entry
attempt("bpf(BPF_MAP_CREATE)", call("bpf", 0, bpf_attr, 128, close=True))
pe = ctypes.create_string_buffer(128)
struct.pack_into("IIQ", pe, 0, 1, 128, 0)     # PERF_TYPE_SOFTWARE, size, PERF_COUNT_SW_CPU_CLOCK
struct.pack_into("Q", pe, 40, 1 << 5)         # exclude_kernel
attempt("perf_event_open (own process)", call("perf_event_open", pe, 0, -1, -1, 0, close=True))
attempt("perf_event_open (whole cpu 0)", call("perf_event_open", pe, -1, 0, -1, 0, close=True))
zeros = ctypes.create_string_buffer(64)
attempt("init_module (zeroed image)", call("init_module", zeros, 64, b""))


def finit_module():
    fd = os.open("/dev/null", os.O_RDONLY)
    try:
        return sys_("finit_module", fd, b"", 0)[0]
    finally:
        os.close(fd)


attempt("finit_module (/dev/null)", finit_module)
attempt("delete_module (no such module)", call("delete_module", b"joblet_escape_no_such_module", 0o4000))
attempt("create_module", call("create_module", b"joblet_escape", 0))
# bad magic: the kernel checks CAP_SYS_BOOT first (EPERM), then the magic (EINVAL), so even a
# caller allowed to reboot gets EINVAL and nothing happens
attempt("reboot (bad magic)", call("reboot", 0, 0, 0x01234567, None))
# flags outside KEXEC_FLAGS and too many segments: EINVAL after the permission check
attempt("kexec_load (bad flags)", call("kexec_load", 0, 1000, None, 0x8000))
attempt("kexec_file_load (bad flags)", call("kexec_file_load", -1, -1, 0, None, 0x80000000))
now = ctypes.create_string_buffer(16)
libc.clock_gettime(0, now)
attempt("clock_settime(REALTIME, now)", call("clock_settime", 0, now))
sec, nsec = struct.unpack("qq", now.raw)
tv = ctypes.create_string_buffer(struct.pack("qq", sec, nsec // 1000))
attempt("settimeofday(now)", call("settimeofday", tv, None))
timex = ctypes.create_string_buffer(256)  # modes 0: only reads
attempt("adjtimex (read only)", call("adjtimex", timex))
attempt("clock_adjtime (read only)", call("clock_adjtime", 0, timex))
attempt("swapon (no such file)", call("swapon", b"/work/joblet-no-swapfile", 0))
attempt("swapoff (no such file)", call("swapoff", b"/work/joblet-no-swapfile"))
attempt("acct (no such file)", call("acct", b"/work/joblet-no-acct-file"))
attempt("iopl(3)", call("iopl", 3))
attempt("ioperm(0x80)", call("ioperm", 0x80, 1, 1))
attempt("userfaultfd", call("userfaultfd", 0o2000000, close=True))
attempt("quotactl", call("quotactl", 0x800007, b"/dev/vda", 0, None))  # Q_SYNC
attempt("syslog(READ_ALL)", call("syslog", 3, ctypes.create_string_buffer(64), 64))
attempt("read /proc/kmsg", open_read("/proc/kmsg"))
attempt("lookup_dcookie", call("lookup_dcookie", 0, None, 0))
attempt("fanotify_init", call("fanotify_init", 0, 0, close=True))
attempt("move_pages (pid 1)", call("move_pages", 1, 0, None, None, None, 0))
attempt("migrate_pages (pid 1)", call("migrate_pages", 1, 0, None, None))
hostname = socket.gethostname().encode()
attempt("sethostname (same name)", call("sethostname", hostname, len(hostname)))
with open("/proc/sys/kernel/domainname", "rb") as fh:
    domain = fh.read().strip()
attempt("setdomainname (same name)", call("setdomainname", domain, len(domain)))
attempt("vhangup", call("vhangup"))
attempt("ioctl(TIOCSTI)", lambda: "ok" if libc.ioctl(0, 0x5412, ctypes.c_char_p(b"x")) == 0 else ename(ctypes.get_errno()))


def int80():
    """A 32-bit syscall (getpid through int 0x80) in a child: the filter allows only the native ABI."""
    if MACHINE != "x86_64":
        return "absent"
    pid = os.fork()
    if pid == 0:
        code = b"\xb8\x14\x00\x00\x00\xcd\x80\xc3"  # mov eax, 20; int 0x80; ret
        m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        m.write(code)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
        ctypes.CFUNCTYPE(ctypes.c_long)(addr)()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else "ran"


def x32():
    if MACHINE != "x86_64":
        return "absent"
    pid = os.fork()
    if pid == 0:
        libc.syscall(ctypes.c_long(0x40000000 | 39))
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else "ran"


attempt("syscall 470 (newer than the seccomp list)", call("past the list", 0, 0, 0))
attempt("i386 syscall (int 0x80)", int80)
attempt("x32 syscall", x32)

# ---------------------------------------------------------------------------------------------
# cgroups: no cgroupfs in the job's view, and none can be mounted
attempt("write own pid to /sys/fs/cgroup/cgroup.procs", open_for_write("/sys/fs/cgroup/cgroup.procs"))
attempt("write own pid to /sys/fs/cgroup/unified/cgroup.procs", open_for_write("/sys/fs/cgroup/unified/cgroup.procs"))
attempt("write own pid to /sys/fs/cgroup/pids/cgroup.procs", open_for_write("/sys/fs/cgroup/pids/cgroup.procs"))
attempt("mount cgroup2 on /work/cg", call("mount", b"none", b"/work/cg", b"cgroup2", 0, None))
attempt("mount cgroup v1 pids on /work/cg", call("mount", b"none", b"/work/cg", b"cgroup", 0, b"pids"))
with open("/proc/self/cgroup") as fh:
    paths = {line.rstrip("\n").split(":", 2)[2] for line in fh if line.strip()}
results["/proc/self/cgroup paths"] = sorted(paths)

# ---------------------------------------------------------------------------------------------
# /proc and /sys: opened for writing and closed unwritten
for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches",
             "/proc/sys/kernel/hostname", "/proc/sys/net/ipv4/ip_forward", "/proc/sysrq-trigger",
             "/proc/1/oom_score_adj", "/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/uevent_helper",
             "/sys/kernel/profiling", "/sys/class/net/lo/mtu", "/sys/power/state", "/proc/sys/fs/binfmt_misc/register",
             "/sys/kernel/tracing/trace_marker", "/sys/kernel/debug/sched/preempt", "/proc/sys/kernel/ns_last_pid"):
    attempt("open for writing " + path, open_for_write(path))


def oom_lower():
    with open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("-1000")


attempt("lower own oom_score_adj to -1000", oom_lower)
attempt("read /proc/timer_list (masked)", read_len("/proc/timer_list"))

# ---------------------------------------------------------------------------------------------
# privileges
with open("/proc/self/status") as fh:
    st = dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)
results["capability sets"] = sorted({st[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")})
results["NoNewPrivs"] = st.get("NoNewPrivs")
results["Seccomp"] = st.get("Seccomp")
attempt("setuid(0)", lambda: os.setuid(0))
attempt("setgid(0)", lambda: os.setgid(0))
attempt("setgroups([0])", lambda: os.setgroups([0]))
hdr = struct.pack("Ii", 0x20080522, 0)
caps = ctypes.create_string_buffer(struct.pack("IIIIII", 1 << 21, 1 << 21, 0, 0, 0, 0))  # CAP_SYS_ADMIN
attempt("capset(CAP_SYS_ADMIN)", lambda: "ok" if libc.capset(ctypes.create_string_buffer(hdr, 8), caps) == 0
        else ename(ctypes.get_errno()))
attempt("prctl(CAP_AMBIENT_RAISE)", lambda: "ok" if libc.prctl(47, 2, 21, 0, 0) == 0 else ename(ctypes.get_errno()))
attempt("prctl(SET_SECUREBITS)", lambda: "ok" if libc.prctl(28, 0, 0, 0, 0) == 0 else ename(ctypes.get_errno()))
attempt("prctl(unset NO_NEW_PRIVS)", lambda: "ok" if libc.prctl(38, 0, 0, 0, 0) == 0 else ename(ctypes.get_errno()))


def capsh():
    p = subprocess.run(["/usr/sbin/capsh", "--print"], capture_output=True, text=True)
    line = next((l for l in p.stdout.splitlines() if l.startswith("Current:")), p.stdout + p.stderr)
    return line.strip()


attempt("capsh --print", capsh)


def setuid_binary(path):
    def f():
        if not os.path.exists(path):
            return "missing"
        p = subprocess.run([path, "-u"], capture_output=True, text=True)
        euid = int(p.stdout.strip())
        return "euid 0" if euid == 0 else "euid unchanged" if euid == os.geteuid() else f"euid {euid}"
    return f


attempt("run a setuid-root binary planted in /work", setuid_binary("/work/suid-id"))
attempt("setuid bit of an uploaded file", lambda: oct(os.stat("/work/suid-upload").st_mode & 0o7777))
results["/work mount flags"] = sorted(
    f for f, bit in (("nosuid", os.ST_NOSUID), ("nodev", os.ST_NODEV)) if os.statvfs("/work").f_flag & bit)
attempt("sched_setscheduler(SCHED_FIFO)", lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1)))
attempt("setpriority(-20)", lambda: os.setpriority(os.PRIO_PROCESS, 0, -20))
attempt("ioprio_set(RT)", call("ioprio_set", 1, 0, (1 << 13) | 0))


def raise_nofile():
    soft, hard = __import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE)
    __import__("resource").setrlimit(__import__("resource").RLIMIT_NOFILE, (hard + 1, hard + 1))


attempt("raise RLIMIT_NOFILE's hard limit", raise_nofile)
attempt("mmap at address 0", lambda: ename(ctypes.get_errno())
        if libc.mmap(None, 4096, 1, 0x22 | 0x100000, -1, 0) == 2**64 - 1 else "ok")


def page_zero_personality():
    """personality(MMAP_PAGE_ZERO) then exec: the kernel would map page 0 for the new program,
    were mmap_min_addr not enforced for an uncapable process."""
    code = "print(any(l.startswith('00000000-') for l in open('/proc/self/maps')))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       preexec_fn=lambda: libc.personality(0x0100000))
    return "page 0 mapped" if p.stdout.strip() == "True" else "page 0 unmapped" if p.stdout.strip() == "False" \
        else f"rc {p.returncode}: {p.stderr.strip()[-200:]}"


attempt("personality(MMAP_PAGE_ZERO) then exec", page_zero_personality)

# last: every process the job's uid may signal (kill -1) and renice as a user (PRIO_USER). In a
# PID namespace of its own the job's uid has no other process here (the root init is not its):
# ESRCH. The test checks that its host process of the job's uid got no signal and kept its nice.
attempt("kill(-1, SIGURG)", lambda: os.kill(-1, signal.SIGURG))
attempt("setpriority(PRIO_USER, own uid, 10)", lambda: os.setpriority(os.PRIO_USER, os.getuid(), 10))

print(json.dumps(results))
