"""The shim run the way a Slurm plugin will run it: a job spec of the test's own, in cgroups the
test made (delegated mode, src/exec/cgroup.h), and the host's step hook that holds the job's init
before it starts the command (src/exec/isolate.h: jobinit_fds).

No request of joblet's API can ask for either today (the SPANK plugin of issue 30 will build
the spec itself), so these tests hand the shim its spec directly: a file on its fd 5, as the
daemon hands it a memfd. The shim needs nothing else from the daemon (no notify pipe, no
preloaded device filter).
"""
import ctypes
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import BUILD, need_root, shim_record, wait_for

SHIM = os.path.join(BUILD, "joblet-shim")
NOBODY = 65534


def cgroup_mounts():
    """{"cgroup2": point or None, "<controller>": point, ...} from /proc/self/mountinfo."""
    found = {"cgroup2": None}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            point, root = left.split()[4], left.split()[3]
            fstype, _src, opts = right.split()[:3]
            if root != "/":
                continue
            if fstype == "cgroup2" and not found["cgroup2"]:
                found["cgroup2"] = point
            elif fstype == "cgroup":
                for o in opts.split(","):
                    found.setdefault(o, point)
    return found


def write(path, value):
    with open(path, "w") as f:
        f.write(value)


class Given:
    """Cgroups made by the test for one job, the way Slurm makes a step's: a memory limit of
    its own choosing, and (v2, hybrid) a cgroup2 directory for joblet's device filter."""

    def __init__(self, mem_bytes):
        m = cgroup_mounts()
        self.name = "joblet-deleg-" + uuid.uuid4().hex[:8]
        self.dirs = []
        self.spec = {"v1": {}}
        self.layout = "v2" if "memory" not in m else ("hybrid" if m["cgroup2"] else "v1")
        if self.layout == "v2":
            root = m["cgroup2"]
            ctrls = open(os.path.join(root, "cgroup.subtree_control")).read().split()
            if "memory" not in ctrls:
                write(os.path.join(root, "cgroup.subtree_control"), "+memory")
            d = self.make(root)
            write(os.path.join(d, "memory.max"), str(mem_bytes))
            if os.path.exists(os.path.join(d, "memory.swap.max")):
                write(os.path.join(d, "memory.swap.max"), "0")
            self.spec["unified"] = d
            self.memory = d
        else:
            d = self.make(m["memory"])
            write(os.path.join(d, "memory.limit_in_bytes"), str(mem_bytes))
            if os.path.exists(os.path.join(d, "memory.memsw.limit_in_bytes")):
                write(os.path.join(d, "memory.memsw.limit_in_bytes"), str(mem_bytes))
            self.spec["v1"]["memory"] = d
            self.memory = d
            if self.layout == "hybrid":
                self.spec["unified"] = self.make(m["cgroup2"])
            else:
                self.spec["v1"]["devices"] = self.make(m["devices"])

    def make(self, mount):
        d = os.path.join(mount, self.name)
        os.mkdir(d)
        self.dirs.append(d)
        return d

    def procs(self):
        n = 0
        for d in self.dirs:
            with open(os.path.join(d, "cgroup.procs")) as f:
                n += len(f.read().split())
        return n

    def remove(self):
        for d in self.dirs:
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    for pid in open(os.path.join(d, "cgroup.procs")).read().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    time.sleep(0.02)


class ShimJob:
    """One job dir, its spec and the shim that runs it."""

    def __init__(self, argv, **extra):
        self.dir = tempfile.mkdtemp(prefix="joblet-deleg-")
        os.chmod(self.dir, 0o755)
        self.job_dir = os.path.join(self.dir, "job")
        self.work = os.path.join(self.dir, "work")
        self.rootfs = os.path.join(self.dir, "rootfs")
        for d in (self.job_dir, self.work, self.rootfs):
            os.mkdir(d)
        os.chown(self.work, NOBODY, NOBODY)
        self.id = str(uuid.uuid4())
        self.cgroup_root = "joblet-deleg-" + uuid.uuid4().hex[:8]
        self.spec = {
            "id": self.id, "job_dir": self.job_dir, "work_dir": self.work, "root_mount": self.rootfs,
            "hostname": "deleg", "argv": argv, "env": ["PATH=/usr/bin:/bin"], "workdir": "/work",
            "uid": NOBODY, "gid": NOBODY, "net_host": False, "max_runtime_s": 60, "stop_grace_s": 2,
            "tmp_size_mb": 16, "cgroup_root": self.cgroup_root, "limits": {}, "owner_uid": 0,
        }
        self.spec.update(extra)
        self.proc = None

    def start(self):
        path = os.path.join(self.dir, "spec.json")
        with open(path, "w") as f:
            json.dump(self.spec, f)
        self.proc = subprocess.Popen(["sh", "-c", 'exec "$0" "$1" 5<"$2"', SHIM, self.job_dir, path])
        return self

    def wait(self, timeout=60, rc=0):
        assert self.proc.wait(timeout=timeout) == rc
        return json.loads(shim_record(self.job_dir, "status.json"))

    def run(self, timeout=60, rc=0):
        return self.start().wait(timeout, rc)

    def started(self, timeout=20):
        deadline = time.time() + timeout
        while not shim_record(self.job_dir, "started"):
            assert self.proc.poll() is None, "the shim ended before the job started"
            assert time.time() < deadline, "the job did not start"
            time.sleep(0.02)

    def stdout(self):
        p = os.path.join(self.job_dir, "stdout.data")
        return open(p).read() if os.path.exists(p) else ""

    def shim_log(self):
        p = os.path.join(self.job_dir, "shim.log")
        return open(p).read() if os.path.exists(p) else ""

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def jobs():
    need_root()
    made = []

    def make(argv, **extra):
        j = ShimJob(argv, **extra)
        made.append(j)
        return j

    yield make
    for j in made:
        j.close()


@pytest.fixture
def given():
    need_root()
    made = []

    def make(mem_bytes=64 << 20):
        g = Given(mem_bytes)
        made.append(g)
        return g

    yield make
    for g in made:
        g.remove()


def joblet_cgroups_made(cgroup_root):
    """The directories named cgroup_root that joblet would make in any hierarchy."""
    m = cgroup_mounts()
    return [os.path.join(p, cgroup_root) for p in set(v for v in m.values() if v)
            if os.path.exists(os.path.join(p, cgroup_root))]


ALLOC = "import sys; b = b'x' * (int(sys.argv[1]) << 20); print('held', len(b) >> 20)"


def test_memory_limit_of_delegated_cgroup_holds(jobs, given):
    """A job in cgroups the test made: the test's memory limit holds (joblet set none), the
    statistics are the given cgroup's, and joblet neither made nor removed any cgroup."""
    g = given(64 << 20)
    small = jobs(["python3", "-c", ALLOC, "16"], cgroup_given=g.spec)
    st = small.run()
    assert st["end_reason"] == "exit" and st["exit_code"] == 0, (st, small.shim_log())
    assert "held 16" in small.stdout()
    assert st["usage"]["memory_peak_bytes"] >= 16 << 20, st

    big = jobs(["python3", "-c", ALLOC, "256"], cgroup_given=g.spec)
    st = big.run()
    assert st["end_reason"] == "oom_killed", (st, big.shim_log())
    assert st["oom_kills"] >= 1
    assert 16 << 20 <= st["usage"]["memory_peak_bytes"] <= 64 << 20, st
    assert "held" not in big.stdout()

    for d in g.dirs:
        assert os.path.isdir(d), f"joblet removed the delegated cgroup {d}"
    assert g.procs() == 0
    assert joblet_cgroups_made(big.cgroup_root) == [], "joblet made cgroups of its own for a delegated job"
    # the maker's limit is as the maker left it
    f = "memory.max" if g.layout == "v2" else "memory.limit_in_bytes"
    assert int(open(os.path.join(g.memory, f)).read()) == 64 << 20


def test_delegated_job_is_in_the_given_cgroup_and_stopped_there(jobs, given):
    """While it runs, the job's processes are in the given cgroups; SIGTERM to the shim stops
    it like any job."""
    g = given(256 << 20)
    j = jobs(["sh", "-c", "sleep 30 & sleep 30; wait"], cgroup_given=g.spec).start()
    j.started()
    # the init, sh and its two sleeps (3 at least): sh starts them after the job's start is recorded (on a
    # loaded machine, well after)
    procs = os.path.join(g.memory, "cgroup.procs")
    wait_for(lambda: len(open(procs).read().split()) >= 3, "the job's processes in the given cgroup")
    j.proc.send_signal(signal.SIGTERM)
    st = j.wait()
    assert st["end_reason"] == "stopped", st
    assert g.procs() == 0


BPF_PROG_QUERY, BPF_CGROUP_DEVICE = 16, 6


def attached_device_programs(cgdir):
    """How many device programs are attached to a cgroup2 directory (bpf(BPF_PROG_QUERY))."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(cgdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        # union bpf_attr's query: target_fd, attach_type, query_flags, attach_flags, prog_ids, prog_cnt
        attr = ctypes.create_string_buffer(struct.pack("=IIIIQI", fd, BPF_CGROUP_DEVICE, 0, 0, 0, 0), 128)
        if libc.syscall(321, BPF_PROG_QUERY, attr, 128) < 0:  # SYS_bpf on x86_64
            raise OSError(ctypes.get_errno(), "BPF_PROG_QUERY " + cgdir)
        return struct.unpack_from("=IIIIQI", attr.raw)[5]
    finally:
        os.close(fd)


def test_device_filter_on_the_given_cgroup(jobs, given):
    """joblet's device filter goes on the given cgroup2 directory while the job runs and comes
    off when it ends (v2, hybrid); on v1 hosts it is the given devices cgroup's list."""
    g = given(256 << 20)
    j = jobs(["sleep", "2"], cgroup_given=g.spec).start()
    j.started()
    if g.layout == "v1":
        allowed = open(os.path.join(g.spec["v1"]["devices"], "devices.list")).read()
        assert "a *:* rwm" not in allowed and "c 1:3 rw" in allowed, allowed
        assert j.wait()["end_reason"] == "exit"
        return
    assert attached_device_programs(g.spec["unified"]) == 1
    st = j.wait()
    assert st["end_reason"] == "exit", (st, j.shim_log())
    assert attached_device_programs(g.spec["unified"]) == 0


def test_delegated_refusals(jobs, given):
    """What a delegated spec may not do, each refused before anything runs: ask for limits
    (they are the maker's), name a directory outside the hierarchy, climb to its root or out of
    it, or name a cgroup that does not exist."""
    g = given()
    lim = jobs(["true"], cgroup_given=g.spec, limits={"mem_bytes": 1 << 30}).run()
    assert lim["end_reason"] == "start_failed" and "delegated cgroup" in lim["error"], lim

    bad = dict(g.spec, v1=dict(g.spec["v1"]))
    key = "unified" if "unified" in bad else None
    if key:
        bad["unified"] = "/tmp"
    else:
        bad["v1"]["memory"] = "/tmp"
    out = jobs(["true"], cgroup_given=bad).run()
    assert out["end_reason"] == "start_failed" and "is not below" in out["error"], out

    climb = dict(g.spec, v1=dict(g.spec["v1"]))
    if key:
        climb["unified"] = g.spec["unified"] + "/.."
    else:
        climb["v1"]["memory"] = g.spec["v1"]["memory"] + "/.."
    up = jobs(["true"], cgroup_given=climb).run()
    assert up["end_reason"] == "start_failed" and "is not below" in up["error"], up

    climb_out = dict(climb)
    if key:
        climb_out["unified"] = g.spec["unified"] + "/../../../../../../../../tmp"
    else:
        climb_out["v1"] = dict(climb["v1"], memory=g.spec["v1"]["memory"] + "/../../../../../../../../tmp")
    out2 = jobs(["true"], cgroup_given=climb_out).run()
    assert out2["end_reason"] == "start_failed" and "is not below" in out2["error"], out2

    gone = dict(g.spec, v1=dict(g.spec["v1"]))
    if key:
        gone["unified"] = g.spec["unified"] + "-missing"
    else:
        gone["v1"]["memory"] = g.spec["v1"]["memory"] + "-missing"
    miss = jobs(["true"], cgroup_given=gone).run()
    assert miss["end_reason"] == "start_failed" and "No such file" in miss["error"], miss


HOOK = """#!/bin/sh
# holds: the init is in its namespaces, the command not started yet
[ "$1" = before-exec ] || exit 9
[ -d /proc/$JOBLET_INIT_PID ] || exit 8
sleep 0.5
echo "hook saw init $JOBLET_INIT_PID for $JOBLET_JOB_ID" > "$JOBLET_JOB_DIR/../work/from-hook"
chmod 644 "$JOBLET_JOB_DIR/../work/from-hook"
{link}
exit {code}
"""


def make_hook(tmp, code=0, link=""):
    path = os.path.join(tmp, "hook.sh")
    with open(path, "w") as f:
        f.write(HOOK.format(code=code, link=link))
    os.chmod(path, 0o755)
    return path


def test_step_hook_runs_while_the_init_waits(jobs, given, tmp_path):
    """The command starts only after the host's step hook: it reads what the hook wrote."""
    j = jobs(["cat", "/work/from-hook"], cgroup_given=given().spec)
    j.spec["step_hook"] = make_hook(str(tmp_path))
    st = j.run()
    assert st["end_reason"] == "exit" and st["exit_code"] == 0, (st, j.shim_log())
    assert f"for {j.id}" in j.stdout()


def test_step_hook_moves_a_network_link_into_the_job(jobs, given, tmp_path):
    """What the hold is for: the host moves a link into the job's network namespace before
    the command starts, and the command sees it."""
    probe = "jdl" + uuid.uuid4().hex[:6]
    if subprocess.run(["ip", "link", "add", probe + "a", "type", "veth", "peer", "name", probe + "b"],
                      capture_output=True).returncode != 0:
        pytest.skip("no veth links on this host")
    subprocess.run(["ip", "link", "del", probe + "a"], check=True)
    name = "jdl" + uuid.uuid4().hex[:6]
    link = (f"ip link add {name}h type veth peer name {name}j || exit 7\n"
            f"ip link set {name}j netns $JOBLET_INIT_PID || exit 6")
    j = jobs(["cat", "/proc/net/dev"], cgroup_given=given().spec)
    j.spec["step_hook"] = make_hook(str(tmp_path), link=link)
    try:
        st = j.run()
        assert st["end_reason"] == "exit", (st, j.shim_log())
        assert f"{name}j:" in j.stdout(), j.stdout()
    finally:
        subprocess.run(["ip", "link", "del", f"{name}h"], capture_output=True)


def test_step_hook_failure_fails_the_start(jobs, given, tmp_path):
    """A hook that fails: the job fails to start with the hook's exit status, the command never
    runs, and nothing of the job is left in its cgroup."""
    g = given()
    j = jobs(["sh", "-c", "echo ran > /work/ran"], cgroup_given=g.spec)
    j.spec["step_hook"] = make_hook(str(tmp_path), code=3)
    st = j.run()
    assert st["end_reason"] == "start_failed", st
    assert "step hook" in st["error"] and "exited with 3" in st["error"], st
    assert not os.path.exists(os.path.join(j.work, "ran"))
    assert g.procs() == 0


def test_step_hook_not_with_gvisor(jobs, tmp_path):
    """A gVisor job has no init of joblet's to hold: the spec is refused."""
    j = jobs(["true"], gvisor={"runsc": "/usr/bin/runsc", "root": "/tmp", "platform": "ptrace"})
    j.spec["step_hook"] = make_hook(str(tmp_path))
    st = j.run(rc=1)  # a spec the shim cannot load
    assert st["end_reason"] == "start_failed" and "step_hook and gvisor" in st["error"], st
