"""Acceptance: isolation holds.

Each probe runs inside a real job (root-submitted, so the command runs as a uid of its own from
joblet's range, 2000000000 and up by default) and prints
what it saw as JSON; the test judges it. Probes are harmless if isolation failed: they write
only under the job's /work or /tmp, never mount over a host path, and the one device node the
tests create lives in a scratch directory under the daemon's temp dir and is removed.
"""
import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
import uuid

import pytest

UID_RANGE = range(2000000000, 2000000000 + 65536)  # jobs.uid_range_start / _size defaults


def last_json(out):
    lines = [l for l in out.splitlines() if l.strip()]
    assert lines, "the job printed nothing on stdout"
    return json.loads(lines[-1])


def py(d, code, **fields):
    """Run `python3 -c code` as a job; return (job, the JSON its last stdout line holds)."""
    job, out, err = d.run("python3", "-c", textwrap.dedent(code), **fields)
    assert job["status"] == "COMPLETED", (job, out, err)
    return job, last_json(out)


# --------------------------------------------------------------------------------------------
# processes and /proc

PS_PROBE = r"""
import json, os
procs = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            procs[p] = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode().strip()
        except OSError:
            pass
print(json.dumps({"procs": procs, "pid": os.getpid(), "ppid": os.getppid()}))
"""


def test_job_sees_only_its_own_processes(daemon):
    """A job's /proc lists only the job's few processes, and its command is PID 1 or PID 1's child."""
    job, r = py(daemon, PS_PROBE)
    procs = {int(p): c for p, c in r["procs"].items()}
    assert 1 in procs, procs
    assert r["pid"] in procs, procs
    assert r["pid"] == 1 or r["ppid"] == 1, r
    assert len(procs) <= 4, f"the job sees {len(procs)} processes: {procs}"
    # the host's processes (the daemon, this test runner) are nowhere to be seen
    for c in procs.values():
        assert "pytest" not in c and "--state-dir" not in c, procs


def test_job_proc_is_fresh_with_job_init_as_pid1(daemon):
    """/proc inside the job is its own: PID 1 is the job's init, not the host's init."""
    _, r = py(daemon, """
        import json
        print(json.dumps({"cmdline": open("/proc/1/cmdline", "rb").read().decode(errors="replace"),
                          "comm": open("/proc/1/comm").read().strip()}))
    """)
    with open("/proc/1/cmdline", "rb") as f:
        host_init = f.read().decode(errors="replace")
    assert r["cmdline"] != host_init, r
    assert "joblet-shim" in r["cmdline"] or "joblet" in r["comm"], r


NS_PROBE = r"""
import json, os
print(json.dumps({n: os.readlink(f"/proc/self/ns/{n}") for n in ("pid", "mnt", "uts", "ipc", "net", "cgroup")}))
"""


def test_job_runs_in_its_own_namespaces(daemon):
    """The job's pid, mount, uts, ipc, net and cgroup namespaces all differ from the host's."""
    _, r = py(daemon, NS_PROBE)
    for n, link in r.items():
        assert link != os.readlink(f"/proc/self/ns/{n}"), f"the job shares the host's {n} namespace: {link}"


# --------------------------------------------------------------------------------------------
# filesystem

RO_PROBE = r"""
import errno, json, os
name = "joblet-probe-%(tag)s"
res = {}
for d in ("/usr", "/etc", "/", "/bin", "/lib"):
    p = os.path.join(d, name)
    try:
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        os.unlink(p)
        res["create " + p] = "ok"
    except OSError as e:
        res["create " + p] = errno.errorcode[e.errno]
    try:
        os.mkdir(p + ".d")
        os.rmdir(p + ".d")
        res["mkdir " + p] = "ok"
    except OSError as e:
        res["mkdir " + p] = errno.errorcode[e.errno]
ro = {d: bool(os.statvfs(d).f_flag & os.ST_RDONLY) for d in ("/", "/usr", "/etc", "/work", "/tmp")}
print(json.dumps({"tries": res, "readonly": ro}))
"""


def test_job_cannot_write_usr_etc_or_root(daemon):
    """/usr, /etc and the job's / are read-only mounts (EROFS, whatever the uid), and nothing lands on the host."""
    tag = uuid.uuid4().hex[:12]
    _, r = py(daemon, RO_PROBE % {"tag": tag})
    # EROFS, not EACCES: creating a name in a read-only mount fails on the mount before the
    # permission check, so this holds for any uid the job could run as.
    assert set(r["tries"].values()) == {"EROFS"}, r["tries"]
    assert r["readonly"] == {"/": True, "/usr": True, "/etc": True, "/work": False, "/tmp": False}, r
    for d in ("/usr", "/etc", "/", "/bin", "/lib"):
        assert not os.path.exists(os.path.join(d, f"joblet-probe-{tag}"))
        assert not os.path.exists(os.path.join(d, f"joblet-probe-{tag}.d"))


def test_job_tmp_and_work_are_private(daemon):
    """/work is the writable working directory; /tmp files do not reach the next job or the host."""
    tag = uuid.uuid4().hex[:12]
    _, first = py(daemon, f"""
        import json, os
        open("/tmp/joblet-private-{tag}", "w").write("secret")
        open("/work/joblet-private-{tag}", "w").write("mine")
        print(json.dumps({{"cwd": os.getcwd(), "tmp": os.listdir("/tmp"), "work": os.listdir(".")}}))
    """)
    assert first["cwd"] == "/work", first
    assert f"joblet-private-{tag}" in first["tmp"] and f"joblet-private-{tag}" in first["work"], first

    _, second = py(daemon, f"""
        import json, os
        print(json.dumps({{"tmp": os.path.exists("/tmp/joblet-private-{tag}"),
                          "work": os.path.exists("/work/joblet-private-{tag}")}}))
    """)
    assert second == {"tmp": False, "work": False}, second
    assert not os.path.exists(f"/tmp/joblet-private-{tag}")
    assert not os.path.exists(f"/work/joblet-private-{tag}")


# --------------------------------------------------------------------------------------------
# hostname and network

def test_job_has_its_own_hostname(daemon):
    """The hostname inside the job is the job's (job["hostname"]), not the host's."""
    job, r = py(daemon, "import json, socket; print(json.dumps(socket.gethostname()))")
    assert r == job["hostname"], (r, job["hostname"])
    assert r != socket.gethostname()


NAMES_PROBE = r"""
import json, os, socket, subprocess
name = socket.gethostname()
mounts = {l.split()[4]: l.split()[5].split(",") for l in open("/proc/self/mountinfo")}
def write(path):
    try:
        open(path, "a").close()
        return "written"
    except OSError as e:
        return e.strerror
print(json.dumps({
    "name": name, "addr": socket.gethostbyname(name), "localhost": socket.gethostbyname("localhost"),
    "getent": subprocess.run(["getent", "hosts", name], capture_output=True, text=True).stdout.split(),
    "hosts": open("/etc/hosts").read(), "hostname": open("/etc/hostname").read(),
    "hosts_opts": mounts.get("/etc/hosts"), "hostname_opts": mounts.get("/etc/hostname"),
    "write": write("/etc/hosts"), "passwd": os.path.exists("/etc/passwd")}))
"""


def test_job_hostname_resolves_to_loopback(daemon):
    """The job's hostname and localhost resolve inside the job, to the loopback (/etc/hosts of
    the job's own, bound read-only over the host's), and /etc/hostname says the job's name; the
    host's files stay as they were. With the host's network too."""
    host_files = {p: open(p).read() for p in ("/etc/hosts", "/etc/hostname")}
    for network in (None, "host"):
        job, r = py(daemon, NAMES_PROBE, **({"network": network} if network else {}))
        name = job["hostname"]
        assert r["name"] == name, r
        assert r["addr"] == "127.0.0.1" and r["localhost"] == "127.0.0.1", r
        assert r["getent"] == ["127.0.0.1", name], r
        assert f"\n127.0.0.1\t{name}\n" in r["hosts"] and "\n::1\tlocalhost" in r["hosts"], r["hosts"]
        assert r["hostname"] == name + "\n", r
        assert "ro" in r["hosts_opts"] and "ro" in r["hostname_opts"], r
        assert r["write"] in ("Read-only file system", "Permission denied"), r
        assert r["passwd"], r  # the rest of the host's /etc is still there
    assert {p: open(p).read() for p in host_files} == host_files
    assert name not in host_files["/etc/hosts"]


NET_PROBE = r"""
import json, os, socket
ifaces = sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])
lo_up = bool(int(open("/sys/class/net/lo/flags").read(), 16) & 1) if os.path.exists("/sys/class/net/lo") else None
def connect(port):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(("127.0.0.1", port))
        return "ok"
    except OSError as e:
        return type(e).__name__
    finally:
        s.close()
own = socket.socket()
own.bind(("127.0.0.1", 0))
own.listen(1)
print(json.dumps({"ifaces": ifaces, "lo_up": lo_up, "host_listener": connect(int(os.environ["HOST_PORT"])),
                  "own_listener": connect(own.getsockname()[1])}))
"""


@pytest.fixture
def host_listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield s.getsockname()[1]
    s.close()


def host_ifaces():
    with open("/proc/net/dev") as f:
        return sorted(l.split(":")[0].strip() for l in f.readlines()[2:])


def test_job_has_only_loopback_by_default(daemon, host_listener):
    """By default a job has only lo (up): it reaches its own 127.0.0.1 listener but not the host's."""
    job, r = py(daemon, NET_PROBE, env={"HOST_PORT": str(host_listener)})
    assert job["network"] == "none"
    assert r["ifaces"] == ["lo"], r
    assert r["lo_up"] is True, r
    assert r["own_listener"] == "ok", r
    assert r["host_listener"] != "ok", r


def test_job_with_host_network_sees_host_interfaces(daemon, host_listener):
    """With network "host" the job sees the host's interfaces and reaches a host listener."""
    job, r = py(daemon, NET_PROBE, env={"HOST_PORT": str(host_listener)}, network="host")
    assert job["network"] == "host"
    assert r["ifaces"] == host_ifaces(), r
    assert r["host_listener"] == "ok", r


# --------------------------------------------------------------------------------------------
# mounts, capabilities, seccomp, identity

def test_job_cannot_mount(daemon):
    """Inside the job, mount(8) and the raw mount syscall both fail (EPERM), even on its own /tmp."""
    _, r = py(daemon, """
        import ctypes, errno, json, os, subprocess
        os.mkdir("/tmp/x")
        p = subprocess.run(["mount", "-t", "tmpfs", "none", "/tmp/x"], capture_output=True, text=True)
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.mount(b"none", b"/tmp/x", b"tmpfs", 0, None)
        err = ctypes.get_errno()
        mounted = any(" /tmp/x " in l for l in open("/proc/self/mountinfo"))
        print(json.dumps({"mount_rc": p.returncode, "mount_err": p.stderr, "sys_rc": rc,
                          "sys_errno": errno.errorcode.get(err, err), "mounted": mounted}))
    """)
    assert r["mount_rc"] != 0, r
    assert r["sys_rc"] == -1 and r["sys_errno"] == "EPERM", r
    assert r["mounted"] is False, r


def test_job_has_no_capabilities_no_new_privs_and_seccomp(daemon):
    """Every capability set is empty, NoNewPrivs is 1 and a seccomp filter is active (mode 2)."""
    _, r = py(daemon, """
        import json
        st = dict(l.rstrip("\\n").split(":\\t", 1) for l in open("/proc/self/status") if ":\\t" in l)
        print(json.dumps({k: st.get(k) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
                                                 "NoNewPrivs", "Seccomp")}))
    """)
    for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert r[k] is not None and int(r[k], 16) == 0, r
    assert r["NoNewPrivs"] == "1", r
    assert r["Seccomp"] == "2", r


SECCOMP_PROBE = r"""
import ctypes, errno, json, os, platform
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": {"keyctl": 250, "bpf": 321, "clone": 56, "clone3": 435, "perf_event_open": 298},
      "aarch64": {"keyctl": 219, "bpf": 280, "clone": 220, "clone3": 435, "perf_event_open": 241}}[platform.machine()]
libc.syscall.restype = ctypes.c_long
def call(f, *a):
    ctypes.set_errno(0)
    rc = f(*a)
    return "ok" if rc != -1 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
res = {}
res["unshare(NEWUSER)"] = call(libc.unshare, CLONE_NEWUSER)
res["unshare(NEWNS)"] = call(libc.unshare, CLONE_NEWNS)
res["unshare(NEWNET)"] = call(libc.unshare, CLONE_NEWNET)
# raw clone(CLONE_NEWUSER|SIGCHLD): if it ever succeeded, the child leaves at once
ctypes.set_errno(0)
pid = libc.syscall(NR["clone"], ctypes.c_ulong(CLONE_NEWUSER | 17), ctypes.c_ulong(0), None, None, ctypes.c_ulong(0))
if pid == 0:
    os._exit(0)
if pid > 0:
    os.waitpid(pid, 0)
res["clone(NEWUSER)"] = "ok" if pid != -1 else errno.errorcode.get(ctypes.get_errno())
res["clone3"] = call(libc.syscall, NR["clone3"], None, ctypes.c_size_t(0))
# keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1): works for anyone without the filter
res["keyctl"] = call(libc.syscall, NR["keyctl"], 0, -3, 1)
res["bpf"] = call(libc.syscall, NR["bpf"], 0, None, 0)
# ptrace(PTRACE_TRACEME): works for anyone without the filter
res["ptrace"] = call(libc.ptrace, 0, 0, None, None)
res["perf_event_open"] = call(libc.syscall, NR["perf_event_open"], None, 0, -1, -1, 0)
print(json.dumps(res))
"""


def test_seccomp_refuses_namespaces_keyrings_bpf_ptrace(daemon):
    """The seccomp profile refuses new namespaces (unshare, clone), keyctl, bpf, ptrace and perf with EPERM."""
    import platform
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"syscall numbers not known for {platform.machine()}")
    _, r = py(daemon, SECCOMP_PROBE)
    expected = {k: "EPERM" for k in r}
    expected["clone3"] = "ENOSYS"  # made to look absent so libc falls back to the filtered clone
    assert r == expected, r


SOCKET_PROBE = r"""
import ctypes, errno, json, platform, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_IO_URING_SETUP = {"x86_64": 425, "aarch64": 425}[platform.machine()]
def call(f, *a):
    ctypes.set_errno(0)
    rc = f(*a)
    return "ok" if rc != -1 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
params = ctypes.create_string_buffer(120)
res = {"io_uring_setup": call(libc.syscall, NR_IO_URING_SETUP, 8, params)}
for name, fam, typ in [("unix", 1, 1), ("inet", 2, 1), ("inet6", 10, 2), ("netlink", 16, 3),
                       ("vsock", 40, 1), ("packet", 17, 3), ("alg", 38, 5), ("key", 15, 3), ("can", 29, 3),
                       ("xdp", 44, 3), ("unspec", 0, 1), ("ax25", 3, 2), ("beyond", 1000, 1)]:
    res[name] = call(libc.socket, fam, typ, 0)
fds = (ctypes.c_int * 2)()
res["socketpair(unix)"] = call(libc.socketpair, 1, 1, 0, fds)
res["socketpair(vsock)"] = call(libc.socketpair, 40, 1, 0, fds)
# a family smuggled in the high bits of the register
res["vsock+high bits"] = call(libc.syscall, 41, ctypes.c_ulong((1 << 32) | 40), 1, 0)
res["inet+high bits"] = call(libc.syscall, 41, ctypes.c_ulong((1 << 32) | 2), 1, 0)
print(json.dumps(res))
"""


def test_seccomp_refuses_io_uring_and_socket_families_jobs_do_not_need(daemon):
    """io_uring is refused (EPERM); only local, IPv4, IPv6 and netlink sockets can be made: vsock,
    packet, AF_ALG, AF_KEY, CAN, XDP and the rest look absent (EAFNOSUPPORT), even with high
    bits set in the register, under --network none as under host."""
    import platform
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"syscall numbers not known for {platform.machine()}")
    for network in ("none", "host"):
        _, r = py(daemon, SOCKET_PROBE, network=network)
        assert r.pop("io_uring_setup") == "EPERM", r
        for ok in ("unix", "inet", "inet6", "netlink", "socketpair(unix)"):
            assert r.pop(ok) == "ok", (network, ok, r)
        assert r == {k: "EAFNOSUPPORT" for k in r}, (network, r)


def test_root_jobs_run_as_a_uid_of_their_own(daemon):
    """Each root-submitted job runs as its own unprivileged uid/gid from joblet's range, with no root group."""
    probe = ("import json, os; print(json.dumps([os.getuid(), os.geteuid(), os.getgid(), "
             "os.getegid(), os.getgroups(), os.getresuid()]))")
    job, r = py(daemon, probe)
    ids = job["uid"]
    assert ids in UID_RANGE and job["gid"] == ids, job
    assert job["owner_uid"] == 0, job
    uid, euid, gid, egid, groups, resuid = r
    assert (uid, euid, gid, egid) == (ids,) * 4, r
    assert resuid == [ids] * 3, r
    assert 0 not in groups, r
    other, _ = py(daemon, probe)
    assert other["uid"] in UID_RANGE and other["uid"] != ids, (job["uid"], other["uid"])


ENV_PROBE = r"""
import json
raw = open("/proc/self/environ", "rb").read().split(b"\0")
print(json.dumps(dict(v.decode().split("=", 1) for v in raw if v)))
"""


def test_job_environment_is_built_from_nothing(daemon):
    """The job sees none of the daemon's variables: only PATH, HOME=/work, JOB_ID (LANG) and the -e vars."""
    with open(f"/proc/{daemon.proc.pid}/environ", "rb") as f:
        assert b"JOBLET_DAEMON_SECRET_MARK=" in f.read(), "the daemon lacks the marker: the test proves nothing"
    p = daemon.rnx("job", "run", "-e", "ALPHA=1", "-e", "BETA=two words", "--", "python3", "-c", ENV_PROBE,
                   check=True)
    jid = p.stdout.strip().split()[-1]
    job = daemon.wait(jid)
    assert job["status"] == "COMPLETED", (job, daemon.output(jid, "stderr"))
    env = last_json(daemon.output(jid))
    assert "JOBLET_DAEMON_SECRET_MARK" not in env, env
    assert not any(k.endswith("SAN_OPTIONS") for k in env), env
    assert env["HOME"] == "/work", env
    assert env["JOB_ID"] == jid, env
    assert "/usr/bin" in env["PATH"].split(":"), env
    assert env["ALPHA"] == "1" and env["BETA"] == "two words", env
    extra = set(env) - {"PATH", "HOME", "JOB_ID", "ALPHA", "BETA"}
    assert extra <= {"LANG"}, f"unexpected variables in the job: {sorted(extra)}"


# --------------------------------------------------------------------------------------------
# devices

DEV_PROBE = r"""
import errno, json, os
res = {"dev": sorted(os.listdir("/dev"))}
with open("/dev/null", "w") as f:
    res["null_write"] = f.write("x")
res["zero"] = len(open("/dev/zero", "rb").read(8))
try:
    os.mknod("/tmp/node", 0o666 | 0o020000, os.makedev(1, 3))
    res["mknod"] = "ok"
except OSError as e:
    res["mknod"] = errno.errorcode[e.errno]
print(json.dumps(res))
"""


def test_job_dev_holds_only_standard_nodes(daemon):
    """The job's /dev holds only the standard nodes; /dev/null works; mknod is refused."""
    _, r = py(daemon, DEV_PROBE)
    assert set(r["dev"]) == {"null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts", "shm", "fd",
                             "stdin", "stdout", "stderr"}, r["dev"]
    assert r["null_write"] == 1 and r["zero"] == 8, r
    assert r["mknod"] == "EPERM", r


# Run by the test as a separate root process on the host, so the test itself never joins a
# job's cgroup: join the given cgroups, then try the scratch node and /dev/null.
CGROUP_HELPER = r"""
import errno, json, os, sys
node, procs_files = sys.argv[1], sys.argv[2:]
for p in procs_files:
    with open(p, "w") as f:
        f.write("0")
def try_open(path):
    try:
        os.close(os.open(path, os.O_RDONLY))
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"node": try_open(node), "null": try_open("/dev/null")}))
"""


def unused_char_major():
    with open("/proc/devices") as f:
        text = f.read()
    chars = text.split("Block devices:")[0]
    used = {int(l.split()[0]) for l in chars.splitlines() if l.strip() and l.split()[0].isdigit()}
    for m in list(range(240, 255)) + list(range(200, 240)):
        if m not in used:
            return m
    pytest.skip("no unused character major between 200 and 254")


@pytest.fixture
def scratch_node(daemon):
    """A char device node of an unused major, in a scratch directory under the daemon's temp dir."""
    d = os.path.join(daemon.dir, "devtest-" + uuid.uuid4().hex[:8])
    os.mkdir(d, 0o755)
    node = os.path.join(d, "nodev0")
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(unused_char_major(), 0))
    yield node
    os.unlink(node)
    os.rmdir(d)


def run_cgroup_helper(node, procs_files):
    p = subprocess.run([sys.executable, "-c", CGROUP_HELPER, node, *procs_files], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def job_cgroup_procs(daemon, jid):
    """cgroup.procs of the job's v1 devices cgroup and of its cgroup2 (eBPF filter) cgroup, where they exist."""
    unified = "/sys/fs/cgroup" if os.path.isfile("/sys/fs/cgroup/cgroup.procs") else "/sys/fs/cgroup/unified"
    files = {}
    for kind, base in (("devices", "/sys/fs/cgroup/devices"), ("unified", unified)):
        path = os.path.join(base, daemon.cgroup_root, daemon.job_cgroup(jid), "cgroup.procs")
        if os.path.exists(path):
            files[kind] = path
    return files


def test_device_cgroup_denies_unlisted_node(daemon, scratch_node):
    """In the job's cgroups an unlisted device node fails with EPERM (ENXIO outside), while /dev/null opens."""
    control = run_cgroup_helper(scratch_node, [])
    assert control["node"] in ("ENXIO", "ENODEV") and control["null"] == "ok", control

    jid = daemon.submit("sleep", "60")
    try:
        daemon.wait_status(jid, "RUNNING")
        files = job_cgroup_procs(daemon, jid)
        if os.path.isfile("/sys/fs/cgroup/unified/cgroup.procs") or os.path.isfile("/sys/fs/cgroup/cgroup.procs"):
            # a cgroup2 hierarchy exists: its eBPF program is the device filter (docs/isolation.md)
            assert "unified" in files, f"job {jid} has no cgroup2 cgroup to carry the device filter: {files}"
        assert files, f"job {jid} has neither a devices nor a cgroup2 cgroup"
        # every filter layer denies by itself, and all of them together
        for kind, path in files.items():
            alone = run_cgroup_helper(scratch_node, [path])
            assert alone == {"node": "EPERM", "null": "ok"}, (kind, alone)
        together = run_cgroup_helper(scratch_node, list(files.values()))
        assert together == {"node": "EPERM", "null": "ok"}, (together, files)
    finally:
        daemon.api("POST", f"/v1/jobs/{jid}/stop")
        daemon.wait(jid)
