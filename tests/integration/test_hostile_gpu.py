"""Hostile tests of GPU isolation as other local users (A, B: uids with no account, through
setpriv): what one user's job may do to the GPUs, the MPS servers and the device filter that
another user's job relies on. Simulated GPUs (gpu.fixture), or the fake NVML with mknod-made
nodes where a device must really be opened; every probe is harmless if it succeeds."""
import os
import stat
import time

from conftest import ROOT
from test_hostile_sched import run_as, sim

FIX = os.path.join(ROOT, "tests", "fixtures")
FAKE_MPS = os.path.join(ROOT, "tests", "fakes", "nvidia-cuda-mps-control")
A, B = 4351, 4352


def wait_output(d, jid, needle, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline and needle not in d.output(jid):
        time.sleep(0.05)
    return d.output(jid)


def test_another_users_shared_job_never_shares_a_gpu_nor_takes_its_mps_pipe(fresh_daemon):
    # NVIDIA MPS serves one uid at a time: a CUDA client of another uid than the running
    # server's waits until every client of that server has gone. So B's and A's shared jobs
    # must never be tenants of one GPU: A's job would hang in its CUDA start while B's run (and
    # the tenants of one server can tell it to quit). A's job asking for B's GPU by id waits, its
    # reason says why; asking for any, it gets a GPU of its own.
    d = sim(fresh_daemon, "a100-pcie-4", f"  mps_control: {FAKE_MPS}\n")
    b = run_as(d, B, "--gpu=1", "--gpu-share", "--gpu-memory=10GB", "sh", "-c",
               "test -p /tmp/nvidia-mps/control && echo READY; sleep 600")
    assert "READY" in wait_output(d, b, "READY")
    assert [g["index"] for g in d.job(b)["gpus"]] == [0]
    named = run_as(d, A, "--gpu-ids=0", "--gpu-share", "--gpu-memory=10GB", "true")
    time.sleep(1)
    w = d.job(named)
    assert w["status"] == "QUEUED", w
    assert "a shared GPU takes the jobs of one uid at a time" in w["wait_reason"], w["wait_reason"]
    assert b[:8] not in w["wait_reason"]  # (another user's job is not named)
    # A's job on a GPU of its own tries to rename its server's control pipe (root's) and plant
    # its own FIFO, and leaves a file: the pipe directory is sticky, so only the file goes in
    probe = ("cd /tmp/nvidia-mps; mv control stolen 2>/dev/null && echo MOVED; "
             "[ -p control ] || { mkfifo control && echo PLANTED; }; touch left-by-a && echo LEFT")
    a = run_as(d, A, "--gpu=1", "--gpu-share", "--gpu-memory=10GB", "sh", "-c", probe)
    ja = d.wait(a)
    assert [g["index"] for g in ja["gpus"]] == [1], ja["gpus"]
    out = d.output(a)
    assert "MOVED" not in out and "PLANTED" not in out and "LEFT" in out, out
    assert d.job(named)["status"] == "QUEUED"
    # B's job ends (the last tenant: the server is told to quit): A's waiting job gets GPU 0,
    # and B's next shared job a server of its own, in a directory holding nothing A left
    d.rnx("job", "stop", b, check=True)
    d.wait(b)
    assert d.wait(named)["status"] == "COMPLETED"
    b2 = run_as(d, B, "--gpu=1", "--gpu-share", "--gpu-memory=10GB", "sh", "-c",
                "ls /tmp/nvidia-mps; sleep 600")
    j2 = d.wait_status(b2, "RUNNING")
    assert wait_output(d, b2, "control").split() == ["control"], j2
    d.rnx("job", "stop", b2, check=True)
    d.wait(b2)


def test_a_shared_job_cannot_fill_the_state_disk_through_its_mps_pipe_directory(fresh_daemon):
    # A's /work is 64 MB (jobs.work_quota) and its /tmp a bounded tmpfs; the MPS pipe
    # directory mounted at /tmp/nvidia-mps is <state>/mps/<gpu>/pipe on the state directory's
    # disk, writable by every tenant: 100 MB written there land on the host's disk, past
    # every limit the job has (and stay after the job, until the GPU's next MPS server).
    d = sim(fresh_daemon, "a100-pcie-4", f"  mps_control: {FAKE_MPS}\njobs:\n  work_quota: 64MB\n")
    j = run_as(d, A, "--gpu=1", "--gpu-share", "--gpu-memory=1GB", "sh", "-c",
               "dd if=/dev/zero of=/tmp/nvidia-mps/fill bs=1M count=100 2>/dev/null; "
               "echo $(( $(stat -c %s /tmp/nvidia-mps/fill 2>/dev/null || echo 0) / 1048576 ))")
    assert d.wait(j)["status"] in ("COMPLETED", "FAILED")
    written = int(d.output(j).split()[-1])
    on_host = os.path.join(d.state, "mps", "0", "pipe", "fill")
    size = os.path.getsize(on_host) // 1048576 if os.path.exists(on_host) else 0
    assert written < 64 and size < 64, (f"A's shared job wrote {written} MB into /tmp/nvidia-mps; the state "
                                        f"directory holds {size} MB of it")


def pipe_mounts(d, gpu=0):
    """The file systems mounted on GPU gpu's MPS pipe directory: (type, superblock options)."""
    pipe = os.path.realpath(os.path.join(d.state, "mps", str(gpu), "pipe"))
    with open("/proc/self/mountinfo") as f:
        rows = [line.split(" - ") for line in f]
    return [(tail.split()[0], tail.split()[2]) for head, tail in rows if head.split()[4] == pipe]


def test_the_mps_pipe_directory_goes_with_its_server_and_after_a_killed_daemon(fresh_daemon):
    # The pipe directory is a tmpfs of its own while the GPU's server runs (bounded in bytes
    # and entries), unmounted when the last tenant leaves; a daemon killed -9 with a server
    # running leaves it mounted, and the next daemon, finding no tenant left, unmounts it.
    d = sim(fresh_daemon, "a100-pcie-4", f"  mps_control: {FAKE_MPS}\n")
    ready = "test -p /tmp/nvidia-mps/control && echo READY; "
    j = run_as(d, A, "--gpu=1", "--gpu-share", "--gpu-memory=1GB", "sh", "-c", ready + "sleep 600")
    assert "READY" in wait_output(d, j, "READY")
    [(fstype, opts)] = pipe_mounts(d)
    assert fstype == "tmpfs" and "size=4096k" in opts and "nr_inodes=1024" in opts, opts
    assert stat.S_IMODE(os.stat(os.path.join(d.state, "mps", "0", "pipe")).st_mode) == 0o1777
    d.rnx("job", "stop", j, check=True)
    d.wait(j)
    assert pipe_mounts(d) == []
    j = run_as(d, A, "--gpu=1", "--gpu-share", "--gpu-memory=1GB", "sh", "-c", ready + "sleep 2")
    assert "READY" in wait_output(d, j, "READY")
    d.kill9()
    time.sleep(3)  # the job ends while no daemon runs
    assert len(pipe_mounts(d)) == 1
    d.start()
    assert d.wait(j)["status"] == "COMPLETED"
    assert pipe_mounts(d) == []
    log = open(os.path.join(d.state, "mps", "0", "log", "control.log")).read()
    assert log.count("cmd quit") == 2, log
    # the next shared job gets a server, on a pipe directory mounted afresh
    j = run_as(d, B, "--gpu=1", "--gpu-share", "--gpu-memory=1GB", "sh", "-c", "ls -A /tmp/nvidia-mps")
    assert d.wait(j)["status"] == "COMPLETED" and d.output(j).split() == ["control"]
    assert len(pipe_mounts(d)) == 0
    assert "stays mounted" not in d.log()
