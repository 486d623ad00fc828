"""joblet's SPANK plugin through a real slurmstepd (issue 30's acceptance, docs/slurm.md): the
test Slurm cluster of slurm_cluster.py (two slurmd on this host, cgroup/v1 on the hybrid
layout, ConstrainDevices=no: joblet's device filter alone keeps a task to its GPUs) loads
build/joblet.so from its plugstack.conf, pointed at a joblet daemon the test starts on a
simulated machine (the a100-pcie-4 fixture: four GPUs, minors 0-3) whose device nodes are the
cluster's test GPUs (node1: nvidia0, nvidia1; node2: nvidia2, nvidia3). Both nodes share this
one daemon, as both slurmd share this host.

srun and sbatch run as `nobody` (runuser), the way a user submits."""
import collections
import fcntl
import json
import os
import pathlib
import pwd
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time

import pytest

import busybox_runtime
from conftest import BUILD, Daemon, DbLock, need_root
from gpu_nodes import FAKE_NVML, FIX, make_nodes
from slurm_cluster import NODES, SlurmCluster, cannot_run, slurm_cgroup_dirs

PLUGIN = os.path.join(BUILD, "joblet.so")
MACHINE = "a100-pcie-4"
USER = "nobody"
UID = pwd.getpwnam(USER).pw_uid
HERE = os.path.dirname(os.path.abspath(__file__))

# What a task sees, as one JSON line: run as the task inside joblet.
PROBE = r"""
import ctypes, errno, json, os, sys, time
res = {"job": os.environ.get("SLURM_JOB_ID"), "node": os.environ.get("SLURMD_NODENAME"), "procid": os.environ.get("SLURM_PROCID"),
       "localid": os.environ.get("SLURM_LOCALID"), "uid": os.getuid(), "euid": os.geteuid(),
       "cvd": os.environ.get("CUDA_VISIBLE_DEVICES"), "step_gpus": os.environ.get("SLURM_STEP_GPUS"),
       "cwd": os.getcwd(), "ns": {n: os.readlink("/proc/self/ns/" + n) for n in ("mnt", "pid")},
       "pid": os.getpid(), "init": open("/proc/1/cmdline", "rb").read().split(b"\0")[0].decode(),
       "dev": {}}
for n in sorted(os.listdir("/dev")):
    if n.startswith("nvidia") and n[6:].isdigit():
        try:
            os.close(os.open("/dev/" + n, os.O_RDWR)); res["dev"][n] = "ok"
        except OSError as e:
            res["dev"][n] = errno.errorcode[e.errno]
status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
res["cap_eff"] = status["CapEff"].strip()
res["no_new_privs"] = status["NoNewPrivs"].strip()
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 8, params)  # io_uring_setup
res["io_uring"] = "allowed" if fd >= 0 else errno.errorcode[ctypes.get_errno()]
if fd >= 0:
    os.close(fd)
print(json.dumps(res), flush=True)
if sys.argv[1:] == ["hold"]:
    sys.stdin.read()  # until the test closes srun's stdin (srun --input=all)
"""


def host_ns(n):
    return os.readlink(f"/proc/self/ns/{n}")


def node_daemon(make, prefix):
    """(daemon, its directory): made by make(config, env) on the simulated machine whose device
    nodes the cluster's gres.conf names (d.dev); not pytest's tmp_path (root's alone): the
    task's user reaches the device nodes, as /dev's."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(tmp, 0o755)
    dev = tmp / "dev"
    make_nodes(dev, MACHINE)
    f = os.path.join(FIX, MACHINE)
    backend = "nvml" if os.path.exists(FAKE_NVML) else "proc"
    (tmp / "nocuda").mkdir()
    d = make(f"gpu:\n  backends: [{backend}]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
             f"  sys_root: {f}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp}/nocuda\n",
             {"FAKE_NVML_FIXTURE": f"{f}/machine.json"})
    d.dev = str(dev)
    return d, tmp


@pytest.fixture(scope="module")
def jd():
    """The node's joblet: a simulated four-GPU machine whose device nodes the cluster's gres.conf
    names, and a busybox runtime."""
    need_root()
    why = cannot_run()
    if why:
        pytest.skip(why)
    if not os.path.exists(PLUGIN):
        pytest.skip("build/joblet.so was not built (no slurm/spank.h: Debian's libslurm-dev)")
    d, tmp = node_daemon(Daemon, "joblet-slurmjoblet-")
    busybox_runtime.make(os.path.join(d.state, "runtimes"))
    try:
        d.start()
        yield d
    finally:
        d.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def plugin_for_slurmd(c):
    """build/joblet.so, or, when that one is sanitized (the ASan suite: slurmd is not, and cannot
    load it), the same sources built plainly in the cluster's directory: the daemon under test
    stays the sanitized one."""
    ldd = subprocess.run(["ldd", PLUGIN], capture_output=True, text=True).stdout
    if "libasan" not in ldd and "libubsan" not in ldd:
        return PLUGIN
    out = c.path("etc", "joblet.so")
    src = os.path.join(HERE, "..", "..", "src", "slurm")
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-D_GNU_SOURCE", "-shared", "-fPIC", "-o", out, os.path.join(src, "joblet.c"),
                    os.path.join(src, "gresconf.c"), os.path.join(src, "..", "common", "termframe.c"),
                    os.path.join(src, "..", "common", "termring.c"), "-ljansson"], check=True)
    return out


def joblet_cluster(d, constrain_devices=False):
    """The test cluster with the plugin in its plugstack.conf, pointed at daemon d (whose device
    nodes its gres.conf names)."""
    return SlurmCluster(constrain_devices=constrain_devices, gpu_dev=d.dev,
                        plugstack=lambda c: f"required {plugin_for_slurmd(c)} socket={d.sock} "
                                            f"gres_conf={c.path('etc', 'gres.conf')}\n")


@pytest.fixture(scope="module")
def cluster(jd):
    c = joblet_cluster(jd)
    c.start()
    try:
        yield c
    finally:
        c.stop()


def as_user(cluster, argv, **kw):
    """A Slurm client command run by the test user from /tmp."""
    return subprocess.run(["runuser", "-u", USER, "--", argv[0], *argv[1:]], env=cluster.env, cwd="/tmp",
                          capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)


def slurm_jobs(d):
    st, jobs = d.api("GET", "/v1/jobs")
    assert st == 200
    jobs = jobs["jobs"] if isinstance(jobs, dict) else jobs
    return [j for j in jobs if j.get("slurm")]


def rows(p):
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]



def cg2_root(d):
    return os.path.join("/sys/fs/cgroup/unified", d.cgroup_root)


def wait_for(cond, what, timeout=60, diag=lambda: ""):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for " + what + "\n" + diag()
        time.sleep(0.05)


def running(d, n):
    jobs = [j for j in slurm_jobs(d) if j["status"] == "RUNNING"]
    return jobs if len(jobs) == n else None


def pids_of(path):
    with open(os.path.join(path, "cgroup.procs")) as f:
        return {int(x) for x in f.read().split()}


def cgroup_of(pid, ctrl):
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if ctrl in ctrls.split(","):
                return path
    return None


# A root process put in a joblet job's cgroup2 directory (its device filter) opens the nodes.
IN_CGROUP = r"""
import errno, json, os, sys
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
res = {}
for n in sys.argv[2:]:
    try:
        os.close(os.open(n, os.O_RDWR)); res[os.path.basename(n)] = "ok"
    except OSError as e:
        res[os.path.basename(n)] = errno.errorcode[e.errno]
print(json.dumps(res))
"""


def device_filter(d, job, nodes):
    """What a process in job's device filter gets opening each node."""
    p = subprocess.run([sys.executable, "-c", IN_CGROUP, os.path.join(cg2_root(d), "slurm-" + job["id"],
                                                                          "cgroup.procs"), *nodes],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def held(cluster, d, args, ntasks, check, env=None):
    """srun ARGS PROBE hold as the test user: while its ntasks tasks wait on stdin (srun
    --input=all), check(jobs) looks at them in joblet; then stdin closes and the probe rows come back."""
    e = dict(cluster.env, **(env or {}))
    p = subprocess.Popen(["runuser", "-u", USER, "--", "srun", "--input=all", *args, sys.executable, "-c", PROBE,
                          "hold"], env=e, cwd="/tmp", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        jobs = wait_for(lambda: p.poll() is None and running(d, ntasks), f"{ntasks} Slurm tasks running in joblet")
        check(jobs)
    finally:
        out, err = p.communicate(input="", timeout=120)
    return rows(subprocess.CompletedProcess(p.args, p.returncode, out, err))


def all_gpu_nodes(jd):
    return [os.path.join(jd.dev, f"nvidia{m}") for n in NODES for m in NODES[n]]


def test_constrain_devices_on_gpus_per_task(jd):
    """With Slurm's ConstrainDevices=yes too (a cluster of its own, started and stopped before the
    module's: the two would share node names and job ids), --gpus-per-task=1 still gives each of
    two tasks one GPU, different ones, numbered 0: Slurm's per-task SLURM_STEP_GPUS counts in the
    File= list even where it renumbers CUDA_VISIBLE_DEVICES."""
    with joblet_cluster(jd, constrain_devices=True) as c:
        p = as_user(c, ["srun", "-w", "node1", "-n2", "--gpus-per-task=1", "--joblet", sys.executable, "-c", PROBE])
        out = rows(p)
    assert len(out) == 2, out
    assert sorted(n for r in out for n in r["dev"]) == ["nvidia0", "nvidia1"], out
    for r in out:
        assert len(r["dev"]) == 1 and set(r["dev"].values()) == {"ENXIO"} and r["cvd"] == "0", r


def test_four_tasks_on_two_nodes_isolated(cluster, jd):
    """srun -N2 --ntasks-per-node=2 --gres=gpu:2 --joblet: four tasks, each a joblet job with its
    node's two GPUs (and EPERM on the other two through joblet's filter: ConstrainDevices=no),
    its own mount and PID namespaces under joblet's init, io_uring refused, no capabilities,
    no_new_privs, as the submitting user, started in Slurm's working directory (/tmp: the job's
    own); `rnx job list` shows them by their Slurm ids; their processes are in every Slurm cgroup
    of the task (freezer step_0 included, which proctrack/cgroup signals and waits for)."""
    seen = []

    def check(jobs):
        listed = jd.rnx("job", "list", check=True).stdout
        for j in jobs:
            seen.append(j["slurm"]["id"])
            assert f"slurm-{j['slurm']['id']}" in listed, listed
            assert j["uid"] == UID, j
            procs = pids_of(os.path.join(cg2_root(jd), "slurm-" + j["id"]))
            assert procs, j
            for pid in procs:
                fr, mem = cgroup_of(pid, "freezer"), cgroup_of(pid, "memory")
                assert re.fullmatch(rf"/slurm_node[12]/uid_{UID}/job_{j['slurm']['job']}/step_0", fr), (pid, fr)
                assert mem == f"{fr}/task_{j['slurm']['task']}", (pid, mem)
            node = "node1" if sorted(g["minor"] for g in j["gpus"]) == list(NODES["node1"]) else "node2"
            assert sorted(g["minor"] for g in j["gpus"]) == list(NODES[node]), j["gpus"]
            got = device_filter(jd, j, all_gpu_nodes(jd))
            assert got == {f"nvidia{m}": "ENXIO" if m in NODES[node] else "EPERM" for m in range(4)}, (node, got)

    out = held(cluster, jd, ["-N2", "--ntasks-per-node=2", "--gres=gpu:2", "--joblet"], 4, check)
    assert len(out) == 4, out
    assert collections.Counter(r["node"] for r in out) == {"node1": 2, "node2": 2}, out
    assert sorted(r["procid"] for r in out) == ["0", "1", "2", "3"], out
    job = out[0]["job"]
    # ids J.S.T with T the task's number on its node: 0 and 1 on each node
    assert collections.Counter(seen) == {f"{job}.0.0": 2, f"{job}.0.1": 2}, seen
    for r in out:
        mine = {f"nvidia{m}" for m in NODES[r["node"]]}
        assert r["dev"] == {n: "ENXIO" for n in mine}, r
        assert r["cvd"] == "0,1", r
        assert r["uid"] == r["euid"] == UID, r
        assert r["ns"]["mnt"] != host_ns("mnt") and r["ns"]["pid"] != host_ns("pid"), r
        assert r["pid"] < 10 and r["init"] == "joblet-shim", r
        assert r["cap_eff"] == "0000000000000000" and r["no_new_privs"] == "1", r
        assert r["io_uring"] == "EPERM", r
        assert r["cwd"] == "/tmp", r
    assert len({r["ns"]["pid"] for r in out}) == 4, out


def scontrol_state(cluster, job, states):
    def state():
        out = cluster.run(["scontrol", "show", "job", job]).stdout
        m = re.search(r"JobState=(\S+)", out)
        return out if m and m.group(1) in states else None
    return wait_for(state, f"job {job} in {states}")


def test_mem_holds_out_of_memory(cluster, jd):
    """--mem=64M holds for the joblet job (Slurm's memory cgroup): a task allocating 256 MB is
    killed; srun says Out Of Memory and scontrol OUT_OF_MEMORY (no slurmdbd: no sacct)."""
    p = as_user(cluster, ["srun", "-w", "node1", "--mem=64M", "--joblet", sys.executable, "-c",
                          "b = bytearray(256 << 20); print('survived')"])
    assert p.returncode != 0 and "survived" not in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert re.search(r"srun: error: node1: task 0: Out Of Memory", p.stderr), p.stderr
    job = re.search(r"StepId=(\d+)\.0", p.stderr).group(1)
    out = scontrol_state(cluster, job, {"OUT_OF_MEMORY"})
    assert "Reason=OutOfMemory" in out, out
    [j] = [x for x in slurm_jobs(jd) if x["slurm"]["job"] == int(job)]
    assert j["end_reason"] == "oom_killed", j


def test_sbatch_steps_and_scancel_leave_nothing(cluster, jd):
    """sbatch --joblet: the batch script stays Slurm's, its srun steps run through joblet (in
    /work: the submission directory is not in the job's view); scancel of a running step ends
    its job and leaves no joblet job running, no process, no cgroup2 directory of joblet's and
    none of Slurm's cgroups of the job."""
    tmp_path = pathlib.Path(cluster.path("user"))  # the test user's: pytest's tmp_path is root's alone
    tmp_path.mkdir()
    os.chmod(tmp_path, 0o777)
    out = tmp_path / "out.txt"
    script = tmp_path / "job.sh"
    (tmp_path / "probe.py").write_text(PROBE)
    # the batch script is Slurm's (the host's view): it reads the probe, the step gets its text
    script.write_text(f"#!/bin/sh\nsrun {sys.executable} -c \"$(cat {tmp_path}/probe.py)\"\nexec srun sleep 600\n")
    os.chmod(script, 0o755)
    p = as_user(cluster, ["sbatch", "--parsable", "-w", "node2", "--joblet", f"--chdir={tmp_path}",
                          f"--output={out}", str(script)])
    assert p.returncode == 0, p.stderr
    job = p.stdout.strip().split(";")[0]
    [sleeper] = wait_for(lambda: [j for j in slurm_jobs(jd) if j["slurm"]["job"] == int(job) and
                                  j["slurm"]["step"] == "1" and j["status"] == "RUNNING"],
                         "step 1 to run", diag=lambda: (out.read_text() if out.exists() else "no output") + jd.log()[-3000:])
    [r] = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{")]
    assert r["init"] == "joblet-shim" and r["uid"] == UID and r["cwd"] == "/work", r
    [first] = [j for j in slurm_jobs(jd) if j["slurm"]["job"] == int(job) and j["slurm"]["step"] == "0"]
    assert first["status"] == "COMPLETED", first
    # rnx job exec into the running Slurm task: its PID namespace, its user
    ex = jd.rnx("job", "exec", sleeper["id"], "sh", "-c", "id -u; cat /proc/1/comm")
    assert ex.returncode == 0 and ex.stdout.split()[0] == str(UID), (ex.stdout, ex.stderr)
    cg2 = os.path.join(cg2_root(jd), "slurm-" + sleeper["id"])
    pids = pids_of(cg2)
    assert pids
    frz = f"/sys/fs/cgroup/freezer/slurm_node2/uid_{UID}/job_{job}"
    assert pids <= pids_of(os.path.join(frz, "step_1")), pids
    p = as_user(cluster, ["scancel", job])
    assert p.returncode == 0, p.stderr
    scontrol_state(cluster, job, {"CANCELLED"})
    wait_for(lambda: jd.job(sleeper["id"])["status"] not in ("RUNNING", "STOPPING"), "the joblet job to end")
    wait_for(lambda: not any(os.path.exists(f"/proc/{p}") for p in pids), "the job's processes to go")
    wait_for(lambda: not os.path.exists(cg2), "joblet's cgroup2 directory to go")
    wait_for(lambda: not [d for d in slurm_cgroup_dirs_of(job)], "Slurm's cgroups of the job to go")
    assert not [j for j in slurm_jobs(jd) if j["status"] == "RUNNING"]


def slurm_cgroup_dirs_of(job):
    out = []
    for top in slurm_cgroup_dirs():
        for dirpath, dirnames, _ in os.walk(top):
            out += [os.path.join(dirpath, x) for x in dirnames if x == f"job_{job}"]
    return out


def test_gpus_per_task_one_each_and_env_cannot_widen(cluster, jd):
    """--gpus-per-task=1, two tasks on node2: each task's job has exactly one GPU, a different
    one, numbered 0 inside, and EPERM on the other's (joblet's filter), even with the user
    exporting SLURM_STEP_GPUS, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES of both through srun; a step
    without GPUs and the same exports gets none."""
    forged = {"SLURM_STEP_GPUS": "0,1", "SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "0,1",
              "GPU_DEVICE_ORDINAL": "0,1"}
    filters = {}

    def check(jobs):
        for j in jobs:
            [g] = j["gpus"]
            filters[g["minor"]] = device_filter(jd, j, [os.path.join(jd.dev, f"nvidia{m}") for m in NODES["node2"]])

    out = held(cluster, jd, ["-w", "node2", "-n2", "--gpus-per-task=1", "--joblet"], 2, check, env=forged)
    assert len(out) == 2, out
    assert sorted(n for r in out for n in r["dev"]) == ["nvidia2", "nvidia3"], out
    for r in out:
        assert len(r["dev"]) == 1 and set(r["dev"].values()) == {"ENXIO"}, r
        assert r["cvd"] == "0", r
    assert filters == {2: {"nvidia2": "ENXIO", "nvidia3": "EPERM"}, 3: {"nvidia2": "EPERM", "nvidia3": "ENXIO"}}, \
        filters
    p = subprocess.run(["runuser", "-u", USER, "--", "srun", "-w", "node2", "--joblet", sys.executable, "-c", PROBE],
                       env=dict(cluster.env, **forged), cwd="/tmp", capture_output=True, text=True, timeout=120)
    [r] = rows(p)
    assert r["dev"] == {} and r["cvd"] is None, r


def test_chdir_into_a_directory_the_job_sees(cluster, jd):
    """srun --chdir=/usr/bin: the task starts there (the job sees the host's /usr); a host
    directory outside the job's view gives /work."""
    p = as_user(cluster, ["srun", "-w", "node1", "--chdir=/usr/bin", "--joblet", "pwd"])
    assert p.returncode == 0 and p.stdout == "/usr/bin\n", (p.stdout, p.stderr)
    p = as_user(cluster, ["srun", "-w", "node1", f"--chdir={cluster.dir}", "--joblet", "pwd"])
    assert p.returncode == 0 and p.stdout == "/work\n", (p.stdout, p.stderr)


def test_a_task_started_while_joblets_database_is_locked_is_asked_again(cluster, jd):
    """Another process (a backup, a sqlite3 shell) holds joblet's database's write lock for 8 s as
    srun --joblet starts a task: joblet answers 503 "nothing was submitted: try again" with
    Retry-After; the plugin asks again, as srun itself does while step creation is disabled, says
    so once, and the task runs once the lock goes (before: "the task was not started")."""
    import threading
    lock = DbLock(jd.state)
    threading.Timer(8, lock.release).start()
    try:
        p = as_user(cluster, ["srun", "-w", "node1", "--joblet", "echo", "ran-once"])
    finally:
        if not lock.gone.wait(30):
            lock.release()
    assert p.returncode == 0 and p.stdout == "ran-once\n", (p.stdout, p.stderr)
    assert p.stderr.count("joblet: busy: ") == 1 and "asking again" in p.stderr, p.stderr


def test_runtime(cluster, jd):
    """--joblet-runtime=busybox (a tiny runtime made from the host's busybox): the task runs in
    the runtime's root."""
    p = as_user(cluster, ["srun", "-w", "node1", "--joblet-runtime=busybox", "cat", "/etc/marker"])
    assert p.returncode == 0 and p.stdout == "busybox runtime\n", (p.stdout, p.stderr)


class Term:
    """A program on a pty of the test's (a user's terminal): keys in, the screen's bytes out."""

    def __init__(self, argv, env, rows, cols):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

        def ctty():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.p = subprocess.Popen(argv, env=env, cwd="/tmp", stdin=slave, stdout=slave, stderr=slave,
                                  preexec_fn=ctty, close_fds=True)
        os.close(slave)
        self.out = self.screen = b""

    def read(self, timeout):
        r, _, _ = select.select([self.master], [], [], timeout)
        if r:
            try:
                got = os.read(self.master, 65536)
                self.out += got
                self.screen += got  # (printed at the end: pytest -rP shows the session)
            except OSError:  # EIO: the program closed the terminal
                return False
        return True

    def expect(self, pattern, timeout=30):
        """Reads until pattern (bytes regex) is in what came since the last expect: its match."""
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.out)
            if m:
                self.out = self.out[m.end():]
                return m
            left = deadline - time.monotonic()
            assert left > 0 and self.read(min(left, 0.5)) is not False or re.search(pattern, self.out), \
                f"timed out waiting for {pattern!r}; the screen since: {self.out[-2000:]!r}"

    def type(self, keys):
        os.write(self.master, keys)

    def resize(self, rows, cols):
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(30)
        os.close(self.master)


def test_pty_gives_the_job_a_terminal_of_its_own(cluster, jd):
    """srun --pty --joblet bash -i, typed on a terminal of the test's (33x97): the job's stdin
    is a terminal of its own, its controlling one (tty names it; bash has job control: a
    background sleep in `jobs`, Ctrl-Z stops the foreground one), of the window's size and of
    the new one after a resize; Ctrl-C ends the foreground sleep, not the shell; `exit 3` is
    srun's exit code."""
    env = dict(cluster.env, TERM="xterm", PS1="$ ")
    t = Term(["runuser", "-u", USER, "--", "srun", "-w", "node1", "--joblet", "--pty", "bash", "--norc",
              "--noprofile", "-i"], env, 33, 97)
    try:
        # (markers are made by the shell: the echo of the typed line does not match them)
        t.type(b"tty; echo M$((1+0))X\r")
        m = t.expect(rb"(?s)(.*)M1X")
        assert b"no job control" not in m.group(1) and b"not a tty" not in m.group(1), m.group(1)
        assert re.search(rb"/dev/pts/\d+", m.group(1)), m.group(1)
        job = wait_for(lambda: running(jd, 1), "the task's job running")[0]
        assert job.get("tty") is True, job
        t.type(b"stty size; echo M$((1+1))X\r")
        assert b"33 97" in t.expect(rb"(?s)(.*)M2X").group(1)
        t.resize(41, 123)

        def resized():
            t.type(b"stty size; echo M$((1+2))X\r")
            return b"41 123" in t.expect(rb"(?s)(.*)M3X").group(1)
        wait_for(resized, "the job's terminal to take the new window size")
        # job control: a background job, listed, and killed by its job number
        t.type(b"sleep 100 & jobs; echo M$((1+3))X\r")
        assert re.search(rb"\[1\]\+?\s+Running\s+sleep 100", t.expect(rb"(?s)(.*)M4X").group(1))
        t.type(b"kill %1; wait; echo M$((1+4))X\r")
        t.expect(rb"M5X")
        # Ctrl-Z stops the foreground command (the terminal's SIGTSTP); bash takes the terminal back
        t.type(b"sleep 100\r")
        time.sleep(1)
        t.type(b"\x1a")
        t.expect(rb"Stopped\s+sleep 100")
        t.type(b"kill -9 %1; wait; echo M$((1+5))X\r")
        t.expect(rb"M6X")
        # Ctrl-C: the foreground sleep ends, the shell goes on
        t.type(b"sleep 100; echo A$((8*8))Z\r")
        time.sleep(1)
        started = time.monotonic()
        t.type(b"\x03")
        t.type(b"echo M$((1+6))X\r")
        out = t.expect(rb"(?s)(.*)M7X", timeout=20).group(1)
        assert time.monotonic() - started < 15 and b"A64Z" not in out, out
        assert t.p.poll() is None
        t.type(b"exit 3\r")
        assert t.p.wait(60) == 3, t.out
    finally:
        print(t.screen.decode(errors="replace"))
        t.close()
    wait_for(lambda: not [j for j in slurm_jobs(jd) if j["status"] in ("RUNNING", "STOPPING")],
             "the task's job to end")
    ended = [j for j in slurm_jobs(jd) if j["id"] == job["id"]][0]
    assert ended["exit_code"] == 3, ended


def test_pty_with_several_tasks_gives_task_0_alone_a_terminal(cluster, jd):
    """srun -n2 --pty --joblet: Slurm gives the pty to task 0 alone (slurmstepd's io.c: the
    others' stdin, stdout and stderr are /dev/null); the plugin keys on the task's stdin being a
    terminal, so task 0's job has a terminal of its own, relayed, and task 1's runs without one.
    srun ends with the step's code."""
    env = dict(cluster.env, TERM="xterm", PS1="$ ")
    before = {j["id"] for j in slurm_jobs(jd)}
    t = Term(["runuser", "-u", USER, "--", "srun", "-w", "node1", "-n2", "--joblet", "--pty", "sh", "-c",
              'tty; echo R$SLURM_PROCID-$((6*7)); read x; echo got-$x; exit 4'], env, 33, 97)
    try:
        m = t.expect(rb"(?s)(.*)R0-42")
        assert re.search(rb"/dev/pts/\d+", m.group(1)), m.group(1)
        # (task 1's `read` sees its /dev/null's end: its job may have ended already)
        jobs = wait_for(lambda: (lambda new: new if len(new) == 2 else None)(
            [j for j in slurm_jobs(jd) if j["id"] not in before]), "the step's two jobs")
        by_task = {j["slurm"]["task"]: j for j in jobs}
        assert by_task[0].get("tty") is True and not by_task[1].get("tty"), jobs
        t.type(b"hi\r")
        t.expect(rb"got-hi")
        assert t.p.wait(60) == 4, t.out
        assert b"R1-42" not in t.screen, t.screen  # task 1's output is /dev/null, as Slurm has it
    finally:
        print(t.screen.decode(errors="replace"))
        t.close()
    wait_for(lambda: not [j for j in slurm_jobs(jd) if j["status"] in ("RUNNING", "STOPPING")],
             "the step's jobs to end")


def test_nothing_left(cluster, jd):
    """After the module's tasks: no joblet job running, no cgroup2 directory slurm-* of joblet's.
    A task's directory goes when its shim exits, just after the job's end is recorded (srun may
    return in between), so the test waits for it."""
    assert not [j for j in slurm_jobs(jd) if j["status"] in ("RUNNING", "STOPPING")]

    def left():
        return [x for x in os.listdir(cg2_root(jd)) if x.startswith("slurm-")] if os.path.isdir(cg2_root(jd)) else []
    wait_for(lambda: not left(), "joblet to remove its slurm-* cgroup2 directories", diag=lambda: str(left()))
