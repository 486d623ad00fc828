"""A released GPU is cleared of processes outside its jobs that still hold its device node
before anyone else gets it (joblet-gpu-scrub, src/gpu/scrub_main.c and holders.c): a job may
have passed its descriptor of /dev/nvidia<minor> to such a process (SCM_RIGHTS over a unix
socket), which would keep raw driver access to the GPU the next job gets.

Without a driver: the nodes are mknod'ed 195:N in a scratch gpu.dev_root, and a holder is a
process that opened one with O_PATH (which needs no driver; its descriptor's stat shows the
device number) as root and then, for a non-root holder, dropped to another uid, as a process
that received the descriptor would hold it. The fake NVML and fake libcuda stand for the
driver, as in test_gpu_isolation.py's scrub test."""
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time

import pytest

from conftest import BUILD
from gpu_nodes import FAKE_NVML, FIX, machine

FAKE_CUDA = os.path.join(BUILD, "tests", "fakes", "libcuda.so.1")
HOLDER_UID = 64231

HOLDER = r"""
import os, sys, time
uid, nodes = int(sys.argv[1]), sys.argv[2:]
fds = [os.open(n, os.O_PATH) for n in nodes]
if uid:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
print("ready", flush=True)
time.sleep(int(os.environ.get("HOLD_S", "600")))
"""


# Many threads sharing one descriptor table, and one of them alone holding the node, in a table
# it made its own (unshare(CLONE_FILES)) after the others were started; the thread-group leader
# holds nothing.
THREADED_HOLDER = r"""
import ctypes, os, sys, threading, time
uid, node = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
CLONE_FILES = 0x400
go, held = threading.Event(), threading.Event()
def idle():
    go.wait()
    time.sleep(600)
def holder():
    assert libc.unshare(CLONE_FILES) == 0, ctypes.get_errno()
    os.open(node, os.O_PATH)
    held.set()
    time.sleep(600)
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(200)]
threads = [threading.Thread(target=idle, daemon=True) for _ in range(100)]
for t in threads[:50]:
    t.start()
threading.Thread(target=holder, daemon=True).start()
held.wait()
for t in threads[50:]:
    t.start()
if uid:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
print("ready", len(os.listdir("/proc/self/task")), flush=True)
time.sleep(600)
"""


@pytest.fixture
def scrub_machine(fresh_daemon, tmp_path):
    """A daemon on the dgx-h100 fixture with gpu.scrub on, the fake driver, and its nodes."""
    if not os.path.exists(FAKE_NVML) or not os.path.exists(FAKE_CUDA):
        pytest.skip("the fake NVML and libcuda are not built")
    f = os.path.join(FIX, "dgx-h100")
    gpus = sorted(machine("dgx-h100")["gpus"], key=lambda g: g["bus_id"])
    dev = tmp_path / "dev"
    dev.mkdir()
    for g in gpus:
        os.mknod(dev / f"nvidia{g['minor']}", 0o666 | stat.S_IFCHR, os.makedev(195, g["minor"]))
    os.mknod(dev / "nvidiactl", 0o666 | stat.S_IFCHR, os.makedev(195, 255))
    d = fresh_daemon(f"gpu:\n  backends: [nvml]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                     f"  sys_root: {f}/sys\n  dev_root: {dev}\n  scrub: 1\n  libcuda: {FAKE_CUDA}\n",
                     env={"FAKE_NVML_FIXTURE": f"{f}/machine.json", "FAKE_CUDA_LOG": str(tmp_path / "cuda.log")})
    return d, dev, gpus, tmp_path / "cuda.log"


@pytest.fixture
def holders():
    made = []

    def start(uid, *nodes, env=None):
        p = subprocess.Popen([sys.executable, "-c", HOLDER, str(uid), *map(str, nodes)], stdout=subprocess.PIPE,
                             text=True, env={**os.environ, **(env or {})})
        made.append(p)
        assert p.stdout.readline().strip() == "ready"
        return p

    yield start
    for p in made:
        if p.poll() is None:
            p.kill()
        p.wait()


def run_and_release(d, index):
    """A job on GPU index, over; then its scrub, over. The GPU list after it."""
    job = d.wait(d.submit("true", gpu_ids=[str(index)]))
    assert job["status"] == "COMPLETED", job
    deadline = time.time() + 30
    while True:
        gl = json.loads(d.rnx("gpu", "list", "--json", check=True).stdout)["gpus"]
        if gl[index]["state"] != "scrubbing":
            return job, gl
        assert time.time() < deadline, gl[index]
        time.sleep(0.05)


def audit_all(d):
    code, a = d.api("GET", "/v1/audit")
    assert code == 200, a
    return a["records"]


def audit(d, action):
    return [r for r in audit_all(d) if r["action"] == action]


def test_a_non_root_holder_of_a_released_gpu_is_killed_before_it_is_handed_out(scrub_machine, holders):
    d, dev, gpus, cuda_log = scrub_machine
    h = holders(HOLDER_UID, dev / f"nvidia{gpus[0]['minor']}")
    released, gl = run_and_release(d, 0)
    assert h.wait(timeout=30) == -signal.SIGKILL  # killed by the scrub, not by the test
    assert gl[0]["state"] == "available", gl[0]
    assert f"memset {gpus[0]['uuid']}" in cuda_log.read_text()  # then zeroed as usual
    rec = audit(d, "holder")
    assert len(rec) == 1, rec
    # killed before the GPU was zeroed, and so before it was available again (newest first)
    acts = [r["action"] for r in audit_all(d) if r["gpu"] == 0]
    assert acts.index("scrub") < acts.index("holder"), acts
    assert rec[0]["gpu"] == 0 and rec[0]["uid"] == HOLDER_UID, rec
    assert f"killed pid {h.pid} (uid {HOLDER_UID}, python3)" in rec[0]["detail"], rec
    assert rec[0]["job"] == released["id"] and f"GPU job {released['id']} released" in rec[0]["detail"], rec
    # the next job gets the GPU, and no holder is left to find
    job, gl = run_and_release(d, 0)
    assert [g["index"] for g in job["gpus"]] == [0] and gl[0]["state"] == "available"
    assert len(audit(d, "holder")) == 1


def test_a_root_holder_is_not_killed_and_leaves_the_gpu_degraded(scrub_machine, holders):
    d, dev, gpus, _ = scrub_machine
    h = holders(0, dev / f"nvidia{gpus[0]['minor']}")
    _, gl = run_and_release(d, 0)
    assert h.poll() is None  # alive: root's processes are never killed
    assert gl[0]["state"] == "degraded", gl[0]
    assert f"/dev/nvidia{gpus[0]['minor']} is held by root process {h.pid} (python3," in gl[0]["problem"], gl[0]
    assert not audit(d, "holder")
    p = d.rnx("job", "run", "--gpu-ids=0", "true")
    assert p.returncode == 1 and "GPU 0 is degraded" in p.stderr, p.stderr


def test_joblet_s_own_quitting_mps_server_is_waited_for(scrub_machine, holders):
    # a root holder whose MPS pipe directory is joblet's for this GPU: the server it told to quit
    d, dev, gpus, _ = scrub_machine
    mps = os.path.join(d.state, "mps", "0", "pipe")
    h = holders(0, dev / f"nvidia{gpus[0]['minor']}", env={"CUDA_MPS_PIPE_DIRECTORY": mps, "HOLD_S": "2"})
    _, gl = run_and_release(d, 0)
    assert h.wait(timeout=30) == 0  # it ended by itself, and only then was the GPU zeroed
    assert gl[0]["state"] == "available", gl[0]
    # another GPU's server is not this GPU's: a root holder like any
    h = holders(0, dev / f"nvidia{gpus[1]['minor']}",
                env={"CUDA_MPS_PIPE_DIRECTORY": os.path.join(d.state, "mps", "0", "pipe"), "HOLD_S": "60"})
    _, gl = run_and_release(d, 1)
    assert h.poll() is None and gl[1]["state"] == "degraded", gl[1]


def test_joblet_s_mps_server_of_its_tenants_uid_is_waited_for_not_killed(scrub_machine, holders, tmp_path):
    # the MPS server runs as its tenant's uid (the control daemon starts it so): told to quit, it
    # is waited for, not killed as a holder nor recorded against the tenant; a process that only
    # takes its name and pipe directory is waited for as long, then killed as any holder
    d, dev, gpus, _ = scrub_machine
    server = tmp_path / "nvidia-cuda-mps-server"
    server.write_bytes(open(os.path.realpath(sys.executable), "rb").read())
    server.chmod(0o755)
    mps = os.path.join(d.state, "mps", "0", "pipe")

    def as_server(uid, node, hold_s):
        p = subprocess.Popen([str(server), "-c", HOLDER, str(uid), str(node)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "CUDA_MPS_PIPE_DIRECTORY": mps, "HOLD_S": str(hold_s)})
        assert p.stdout.readline().strip() == "ready"
        return p

    h = as_server(HOLDER_UID, dev / f"nvidia{gpus[0]['minor']}", 2)
    try:
        _, gl = run_and_release(d, 0)
        assert h.wait(timeout=30) == 0  # it ended by itself, and only then was the GPU zeroed
    finally:
        if h.poll() is None:
            h.kill()
    assert gl[0]["state"] == "available", gl[0]
    assert not audit(d, "holder")
    h = as_server(HOLDER_UID, dev / f"nvidia{gpus[0]['minor']}", 600)
    try:
        _, gl = run_and_release(d, 0)
        assert h.wait(timeout=30) == -signal.SIGKILL
    finally:
        if h.poll() is None:
            h.kill()
    assert gl[0]["state"] == "available" and len(audit(d, "holder")) == 1, (gl[0], audit(d, "holder"))


def test_holders_of_other_nodes_are_left_alone(scrub_machine, holders):
    # nvidiactl is every GPU job's; another GPU's node is not the released one's: in the same
    # scan that kills the released GPU's holder, they stay
    d, dev, gpus, _ = scrub_machine
    ctl = holders(HOLDER_UID, dev / "nvidiactl")
    other = holders(HOLDER_UID, dev / f"nvidia{gpus[1]['minor']}")
    mine = holders(HOLDER_UID + 1, dev / f"nvidia{gpus[0]['minor']}")
    _, gl = run_and_release(d, 0)
    assert mine.wait(timeout=30) == -signal.SIGKILL
    assert ctl.poll() is None and other.poll() is None
    assert gl[0]["state"] == "available" and gl[1]["state"] == "available", gl[:2]
    assert [(r["uid"], r["gpu"]) for r in audit(d, "holder")] == [(HOLDER_UID + 1, 0)]


@pytest.fixture
def persistenced_account():
    """The system account nvidia-persistenced (Debian's package makes it), made for the test when
    the machine lacks it and removed after."""
    import pwd
    try:
        yield pwd.getpwnam("nvidia-persistenced").pw_uid
        return
    except KeyError:
        pass
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "nvidia-persistenced"],
                   check=True)
    try:
        yield pwd.getpwnam("nvidia-persistenced").pw_uid
    finally:
        subprocess.run(["userdel", "nvidia-persistenced"], check=False)


def test_the_persistence_daemon_under_its_own_account_is_left_alone(scrub_machine, persistenced_account, tmp_path):
    # Debian's and NVIDIA's units run `nvidia-persistenced --user nvidia-persistenced`: it holds
    # every GPU's node by design, not as root. Left alone under that account; a tenant's process
    # named so is killed as any holder (only root can make a process of the daemon's account)
    d, dev, gpus, _ = scrub_machine
    daemon = tmp_path / "nvidia-persistenced"
    daemon.write_bytes(open(os.path.realpath(sys.executable), "rb").read())
    daemon.chmod(0o755)
    made = []

    def as_daemon(uid, node):
        p = subprocess.Popen([str(daemon), "-c", HOLDER, str(uid), str(node)], stdout=subprocess.PIPE, text=True)
        made.append(p)
        assert p.stdout.readline().strip() == "ready"
        return p

    try:
        real = as_daemon(persistenced_account, dev / f"nvidia{gpus[0]['minor']}")
        _, gl = run_and_release(d, 0)
        assert real.poll() is None and gl[0]["state"] == "available", gl[0]
        assert not audit(d, "holder")
        fake = as_daemon(HOLDER_UID, dev / f"nvidia{gpus[0]['minor']}")
        _, gl = run_and_release(d, 0)
        assert fake.wait(timeout=30) == -signal.SIGKILL and real.poll() is None
        assert gl[0]["state"] == "available" and [r["uid"] for r in audit(d, "holder")] == [HOLDER_UID]
    finally:
        for p in made:
            if p.poll() is None:
                p.kill()
            p.wait()


def test_a_holder_in_one_thread_s_own_descriptor_table_is_found(scrub_machine, tmp_path):
    # the scan reads each distinct table once (kcmp): the one thread of 102 whose table is its
    # own, the only one holding the node, is still found, and killed
    d, dev, gpus, _ = scrub_machine
    h = subprocess.Popen([sys.executable, "-c", THREADED_HOLDER, str(HOLDER_UID), str(dev / f"nvidia{gpus[0]['minor']}")],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert h.stdout.readline().split() == ["ready", "102"]
        assert not any(os.path.exists(f"/proc/{h.pid}/fd/{fd}") and os.stat(f"/proc/{h.pid}/fd/{fd}").st_rdev ==
                       os.makedev(195, gpus[0]["minor"]) for fd in os.listdir(f"/proc/{h.pid}/fd"))
        _, gl = run_and_release(d, 0)
        assert h.wait(timeout=30) == -signal.SIGKILL
    finally:
        if h.poll() is None:
            h.kill()
        h.wait()
    assert gl[0]["state"] == "available", gl[0]
    assert [(r["uid"], r["gpu"]) for r in audit(d, "holder")] == [(HOLDER_UID, 0)]
    # what the scans cost, at debug level: the round that killed it, and one that found nobody
    scans = re.findall(rf"joblet-gpu-scrub: {gpus[0]['uuid']}: holder scan: (\d+) rounds, (\d+) descriptor tables "
                       r"read, \d+ ms", d.log())
    assert scans and scans[-1][0] == "2" and int(scans[-1][1]) > 0, scans
