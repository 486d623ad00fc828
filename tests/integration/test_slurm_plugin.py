"""joblet's SPANK plugin without Slurm (docs/slurm.md, "The SPANK plugin"): the test plays
slurmstepd. It makes v1 cgroups named as Slurm 22.05's cgroup/v1 names a task's
(<prepend>/uid_U/job_J/step_S/task_T), puts a process in them, and that process runs the real
plugin (build/joblet.so) through tests/slurm/fake_spank.c, which calls the plugin's hooks as
slurmstepd does: task_init_privileged as root, the drop to the user, task_init. The daemon
must take the task's own stdio, run it in those cgroups, give it exactly the GPUs the
(root-opened) connection names, refuse what it cannot check, and leave nothing behind."""
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
import uuid

import pytest

from conftest import BUILD, api_as, preload_object
from gpu_nodes import FAKE_NVML, FIX, machine, make_nodes

PLUGIN = os.path.join(BUILD, "joblet.so")
FAKE = os.path.join(BUILD, "fake_spank")
NOBODY = 65534


def mounts():
    found = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            point, root = left.split()[4], left.split()[3]
            fstype, _src, opts = right.split()[:3]
            if root == "/" and fstype == "cgroup":
                for o in opts.split(","):
                    found.setdefault(o, point)
            elif root == "/" and fstype == "cgroup2":
                found.setdefault("cgroup2", point)
    return found


@pytest.fixture
def slurm_cgroups():
    """Task cgroups as slurmstepd makes them, in memory (and devices), for uid nobody."""
    m = mounts()
    if "memory" not in m:
        pytest.skip("no cgroup v1 memory controller: the plugin needs Slurm's cgroup/v1 layout")
    if not os.path.exists(PLUGIN):
        pytest.skip("joblet.so was not built (no slurm/spank.h)")
    made = []
    prepend = "slurm_jt" + uuid.uuid4().hex[:6]

    def make(job, step="0", task=0, uid=NOBODY, mem=None):
        dirs = {}
        for ctrl in ("memory", "devices"):
            if ctrl not in m:
                continue
            d = m[ctrl]
            for part in (prepend, f"uid_{uid}", f"job_{job}", f"step_{step}", f"task_{task}"):
                d = os.path.join(d, part)
                if not os.path.isdir(d):
                    os.mkdir(d)
                    made.append(d)
            dirs[ctrl] = d
        if mem:
            with open(os.path.join(dirs["memory"], "memory.limit_in_bytes"), "w") as f:
                f.write(str(mem))
        return dirs

    yield make
    for d in reversed(made):
        for _ in range(200):
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


def task(d, cg, cmd, job=7, step="0", task_id=0, opts=("joblet",), args=(), env=None, uid=NOBODY, stdin=None,
         groups=()):
    """One task: a process put in cg's cgroups that runs the plugin, then cmd (srun's pipes are
    the test's: stdout, stderr)."""
    enter = " && ".join(f"echo $$ > {d}/cgroup.procs" for d in cg.values())
    argv = ["sh", "-c", enter + ' && exec "$@"', "sh", FAKE, PLUGIN, "--uid", str(uid), "--gid", str(uid),
            "--job", str(job), "--step", step, "--task", str(task_id), "--arg", f"socket={d.sock}"]
    if groups:
        argv += ["--groups", ",".join(str(g) for g in groups)]
    for a in args:
        argv += ["--arg", a]
    for o in opts:
        argv += ["--opt", o]
    e = {"PATH": "/usr/local/bin:/usr/bin:/bin", "SLURM_JOB_ID": str(job), "SLURMD_NODENAME": "n1"}
    e.update(env or {})
    return subprocess.Popen(argv + ["--"] + list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                            stdin=stdin if stdin is not None else subprocess.DEVNULL, text=True)


def slurm_jobs(d):
    st, jobs = d.api("GET", "/v1/jobs")
    assert st == 200
    jobs = jobs["jobs"] if isinstance(jobs, dict) else jobs
    return [j for j in jobs if j.get("slurm")]


def wait_for(cond, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def test_output_exit_code_and_ids(fresh_daemon, slurm_cgroups):
    """The task's output arrives on its own stdout and stderr (no relay), its exit code is the
    task's, it ran as the task's user in its own PID namespace, and joblet shows it with its
    Slurm ids."""
    d = fresh_daemon()
    cg = slurm_cgroups(41, task=2)
    p = task(d, cg, ["sh", "-c", "echo out $(id -u) $$; echo err >&2; exit 3"], job=41, task_id=2)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 3, (out, err, [j.get("error") for j in slurm_jobs(d)])
    assert out == f"out {NOBODY} 1\n" or out.startswith(f"out {NOBODY} "), out
    assert int(out.split()[2]) < 10, out  # a PID namespace of its own: the shell is pid 1's child
    assert err == "err\n", err
    [j] = slurm_jobs(d)
    assert j["slurm"]["id"] == "41.0.2" and j["slurm"]["job"] == 41 and j["slurm"]["uid"] == NOBODY, j["slurm"]
    assert j["status"] == "FAILED" and j["exit_code"] == 3 and j["uid"] == NOBODY, j
    listed = d.rnx("job", "list", check=True).stdout
    assert "slurm-41.0.2" in listed, listed
    for detail in ((), ("--detail",)):
        shown = d.rnx("job", "status", j["id"], *detail, check=True).stdout
        assert f"task 41.0.2 (job, step, task on this node) of uid {NOBODY}" in shown, shown


def test_signal_is_the_tasks(fresh_daemon, slurm_cgroups):
    """A job killed by a signal ends the task by the same signal, as Slurm would record it."""
    d = fresh_daemon()
    cg = slurm_cgroups(42)
    p = task(d, cg, ["sh", "-c", "kill -USR1 $$"], job=42)
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGUSR1, p.returncode


def test_job_runs_in_the_tasks_cgroup_and_killing_the_waiter_kills_it(fresh_daemon, slurm_cgroups):
    """While it runs the job's processes are in the task's cgroups (Slurm's limits and
    accounting see them); when the task process dies (scancel), the job is killed, and nothing
    of it is left: no process, no cgroup2 directory of joblet's."""
    d = fresh_daemon()
    cg = slurm_cgroups(43)
    p = task(d, cg, ["sleep", "300"], job=43)
    j = wait_for(lambda: [x for x in slurm_jobs(d) if x["status"] == "RUNNING"], "the task to run")[0]
    procs = open(os.path.join(cg["memory"], "cgroup.procs")).read().split()
    assert len(procs) >= 3, procs  # the waiter, the job's init and sleep
    assert str(p.pid) in procs
    made = os.path.join(mounts().get("cgroup2", "/nonexistent"), d.cgroup_root, "slurm-" + j["id"])
    if "cgroup2" in mounts():
        assert os.path.isdir(made), made
    st, shown = d.api("GET", f"/v1/jobs/{j['id']}")
    assert st == 200 and shown["slurm"]["id"] == "43.0.0"
    # its figures and its cgroup are Slurm's task cgroups' (the sleep's memory is counted there)
    assert shown["usage"]["memory_peak_bytes"] > 0 and shown["usage"]["cpu_ns"] > 0, shown["usage"]
    detail = d.rnx("job", "status", "--detail", j["id"], check=True).stdout
    assert f"Cgroup: {cg['memory']}\n" in detail, detail
    # rnx job exec into the task: its namespaces (the sleep is there), as its user
    ex = d.rnx("job", "exec", j["id"], "sh", "-c", "id -u; ps -o comm= 2>/dev/null || ls /proc")
    assert ex.returncode == 0, (ex.stdout, ex.stderr)
    assert ex.stdout.split()[0] == str(NOBODY), ex.stdout
    # an exec'd process is in Slurm's task cgroups too (its limits and accounting cover it)
    before = set(open(os.path.join(cg["memory"], "cgroup.procs")).read().split())
    ex = subprocess.Popen([os.path.join(BUILD, "rnx"), "job", "exec", j["id"], "sleep", "300"],
                          env={"JOBLET_SOCKET": d.sock, "PATH": "/usr/bin:/bin"}, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: set(open(os.path.join(cg["memory"], "cgroup.procs")).read().split()) - before,
                 "the exec'd process in Slurm's memory cgroup")
    finally:
        ex.kill()
        ex.wait()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    job = wait_for(lambda: [x for x in slurm_jobs(d) if x["id"] == j["id"] and x["status"] not in ("RUNNING", "STOPPING")],
                   "the job to end")[0]
    assert job["status"] == "STOPPED", job
    wait_for(lambda: open(os.path.join(cg["memory"], "cgroup.procs")).read().split() == [], "the cgroup to empty")
    wait_for(lambda: not os.path.exists(made), "joblet's cgroup2 directory to go")


def test_peer_not_in_a_slurm_cgroup_is_refused(fresh_daemon):
    """A request from a process in no Slurm task's cgroup (this test, as root) is refused: 403
    naming why."""
    d = fresh_daemon()
    st, r = d.api("POST", "/v1/slurm/tasks", {"argv": ["true"], "env": []})
    assert st == 403, r
    assert "not in a Slurm task's cgroup" in r["error"]["message"], r


FORGE = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
body = json.dumps({"argv": ["true"], "env": [], "gpus": [sys.argv[2]]}).encode()
s.sendall(b"POST /v1/slurm/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
          + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
data = b""
while True:
    c = s.recv(65536)
    if not c: break
    data += c
print(data.decode().split("\r\n", 1)[0]); print(data.decode().split("\r\n\r\n", 1)[1])
"""


def test_forged_gpu_claim_is_refused(fresh_daemon, slurm_cgroups, tmp_path):
    """The user's own process, in its Slurm task's cgroup, names a GPU on a connection it opened
    itself: refused (403): only the plugin's root-opened connection may name GPUs."""
    d = fresh_daemon()
    cg = slurm_cgroups(44)
    enter = " && ".join(f"echo $$ > {x}/cgroup.procs" for x in cg.values())
    p = subprocess.run(["sh", "-c", enter + ' && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"', "sh",
                        sys.executable, "-c", FORGE, d.sock, "/dev/null"], capture_output=True, text=True, timeout=60)
    assert " 403 " in p.stdout, (p.stdout, p.stderr)
    assert "root" in p.stdout and "GPUs" in p.stdout, p.stdout
    assert slurm_jobs(d) == []


def test_claimed_ids_must_be_the_cgroups(fresh_daemon, slurm_cgroups):
    """The plugin's claimed task must be the one whose cgroup the process is in."""
    d = fresh_daemon()
    cg = slurm_cgroups(45, task=0)
    p = task(d, cg, ["true"], job=46)  # claims job 46, sits in job 45's cgroup
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0 and "task 45.0.0's cgroups" in err, (p.returncode, err)


def test_not_asked_runs_as_slurm_would(fresh_daemon, slurm_cgroups):
    """Without --joblet (and no default=on) the plugin does nothing: the command runs as is."""
    d = fresh_daemon()
    cg = slurm_cgroups(47)
    p = task(d, cg, ["sh", "-c", "echo plain $$"], job=47, opts=())
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0 and out == f"plain {p.pid}\n", out
    assert slurm_jobs(d) == []
    # default=on in plugstack.conf: every step's tasks
    p = task(d, cg, ["sh", "-c", "echo wrapped $$"], job=47, opts=(), args=("default=on",))
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0 and out != f"wrapped {p.pid}\n" and out.startswith("wrapped "), out
    assert len(slurm_jobs(d)) == 1


@pytest.fixture
def gpu_daemon(fresh_daemon, tmp_path):
    name = "dgx-h100"
    dev = tmp_path / "dev"
    make_nodes(dev, name)
    f = os.path.join(FIX, name)
    backend = "nvml" if os.path.exists(FAKE_NVML) else "proc"
    (tmp_path / "nocuda").mkdir()
    d = fresh_daemon(f"gpu:\n  backends: [{backend}]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                     f"  sys_root: {f}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp_path}/nocuda\n",
                     env={"FAKE_NVML_FIXTURE": f"{f}/machine.json"})
    minors = sorted(g["minor"] for g in machine(name)["gpus"])
    gres = tmp_path / "gres.conf"
    # two nodes' worth: n1 has the first half of the device nodes, n2 the rest
    half = len(minors) // 2
    gres.write_text("".join(f"NodeName=n1 Name=gpu File={dev}/nvidia{m}\n" for m in minors[:half]) +
                    f"NodeName=n2 Name=gpu File={dev}/nvidia[{minors[half]}-{minors[-1]}]\n")
    return d, str(dev), minors[:half], str(gres)


PROBE = ("import json, os, errno\n"
         "nodes = sorted(n for n in os.listdir('/dev') if n.startswith('nvidia'))\n"
         "res = {}\n"
         "for n in nodes:\n"
         "    try: os.close(os.open('/dev/' + n, os.O_RDWR)); res[n] = 'ok'\n"
         "    except OSError as e: res[n] = errno.errorcode[e.errno]\n"
         "print(json.dumps({'open': res, 'cvd': os.environ.get('CUDA_VISIBLE_DEVICES'),\n"
         "  'slurm_gpus': os.environ.get('SLURM_STEP_GPUS')}))")

IN_CGROUP = r"""
import errno, json, os, sys
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
res = {}
for n in sys.argv[2:]:
    try:
        os.close(os.open(n, os.O_RDWR)); res[n] = "ok"
    except OSError as e:
        res[n] = errno.errorcode[e.errno]
print(json.dumps(res))
"""


def test_exactly_slurms_gpus(gpu_daemon, slurm_cgroups):
    """SLURM_STEP_GPUS=1,2 on node n1: the job gets gres.conf's second and third files of n1,
    numbered 0 and 1 inside; every other GPU is denied to its cgroup; a native job of joblet's
    cannot get them while the task runs."""
    d, dev, n1_minors, gres = gpu_daemon
    cg = slurm_cgroups(50)
    want = [n1_minors[1], n1_minors[2]]
    p = task(d, cg, ["python3", "-c", PROBE], job=50, args=(f"gres_conf={gres}",),
             env={"SLURM_STEP_GPUS": "1,2", "CUDA_VISIBLE_DEVICES": "1,2"})
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, (out, err, d.log()[-3000:])
    r = json.loads(out)
    expected = {f"nvidia{m}" for m in want} | {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}
    assert r["open"] == {n: "ENXIO" for n in expected}, r
    assert r["cvd"] == "0,1", r
    [j] = slurm_jobs(d)
    assert sorted(g["minor"] for g in j["gpus"]) == want, j["gpus"]

    # while a task holds them: the device filter of its cgroup, and joblet's own jobs kept off
    hold = task(d, cg, ["sleep", "300"], job=50, args=(f"gres_conf={gres}",), env={"SLURM_STEP_GPUS": "1,2"})
    try:
        run = wait_for(lambda: [x for x in slurm_jobs(d) if x["status"] == "RUNNING"], "the task to run")[0]
        made = os.path.join(mounts()["cgroup2"], d.cgroup_root, "slurm-" + run["id"], "cgroup.procs")
        all_nodes = [os.path.join(dev, f"nvidia{g['minor']}") for g in machine("dgx-h100")["gpus"]]
        res = subprocess.run([sys.executable, "-c", IN_CGROUP, made, *all_nodes], capture_output=True, text=True,
                             timeout=30)
        res = json.loads(res.stdout)
        for n in all_nodes:
            m = int(n.rsplit("nvidia", 1)[1])
            assert res[n] == ("ENXIO" if m in want else "EPERM"), (n, res)
        st, busy = d.api("GET", "/v1/gpus")
        native = d.submit("sleep", "1", gpu_count=len(machine("dgx-h100")["gpus"]))
        time.sleep(1)
        assert d.job(native)["status"] == "QUEUED", d.job(native)
        d.api("POST", f"/v1/jobs/{native}/stop")
    finally:
        hold.send_signal(signal.SIGKILL)
        hold.wait()


def test_gpu_held_by_a_native_job_is_refused(gpu_daemon, slurm_cgroups):
    """Slurm gives the task a GPU a job of joblet's own holds: refused (409); the holder is root's
    job, not the task's user's: said to be another user's (its id in joblet's log, for the admin),
    as nobody sees another user's job ids (docs/gpu.md)."""
    d, dev, n1_minors, gres = gpu_daemon
    native = d.submit("sleep", "300", gpu_count=len(machine("dgx-h100")["gpus"]))
    try:
        d.wait_status(native, "RUNNING")
        cg = slurm_cgroups(51)
        p = task(d, cg, ["true"], job=51, args=(f"gres_conf={gres}",), env={"SLURM_STEP_GPUS": "0"})
        out, err = p.communicate(timeout=60)
        assert p.returncode != 0 and "held by joblet's job of another user" in err, (p.returncode, err)
        assert native not in err and native[:8] not in err, err
        assert f"which joblet's job {native} holds: refused" in d.log(), d.log()[-2000:]
    finally:
        d.api("POST", f"/v1/jobs/{native}/stop")
        d.wait(native)


ALLOC = "import sys; b = b'x' * (int(sys.argv[1]) << 20); print('held', len(b) >> 20)"


def test_slurms_memory_limit_holds(fresh_daemon, slurm_cgroups):
    """--mem: the limit of Slurm's task cgroup holds for the job (joblet set none of its own); the
    task ends by the OOM killer's SIGKILL, which Slurm then records."""
    d = fresh_daemon()
    cg = slurm_cgroups(48, mem=64 << 20)
    p = task(d, cg, ["python3", "-c", ALLOC, "16"], job=48)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and out == "held 16\n", (out, err)
    p = task(d, cg, ["python3", "-c", ALLOC, "256"], job=48)
    out, err = p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL, (p.returncode, out, err)
    ended = [j for j in slurm_jobs(d) if j["status"] != "COMPLETED"]
    assert len(ended) == 1 and ended[0]["end_reason"] == "oom_killed", ended
    assert int(open(os.path.join(cg["memory"], "memory.limit_in_bytes")).read()) == 64 << 20


def test_batch_script_stays_slurms(fresh_daemon, slurm_cgroups):
    """sbatch --joblet: the batch script itself is not wrapped (it starts the steps, which are)."""
    d = fresh_daemon()
    cg = slurm_cgroups(49, step="batch")
    p = task(d, cg, ["sh", "-c", "echo batch $$"], job=49, step="batch")
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0 and out == f"batch {p.pid}\n", out
    assert slurm_jobs(d) == []


TASK_GPUS = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
body = json.dumps({"argv": ["true"], "env": [], "gpus": [sys.argv[2]], "task_gpus": [sys.argv[3]]}).encode()
s.sendall(b"POST /v1/slurm/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
          + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
data = b""
while True:
    c = s.recv(65536)
    if not c: break
    data += c
print(data.decode().split("\r\n", 1)[0]); print(data.decode().split("\r\n\r\n", 1)[1])
"""


def test_task_gpus_beyond_the_steps_are_refused(gpu_daemon, slurm_cgroups):
    """task_gpus (the task's own, from the plugin) only narrows: a GPU in it that is not among
    the step's gpus is refused (400 on task_gpus), even on root's connection."""
    d, dev, n1_minors, gres = gpu_daemon
    cg = slurm_cgroups(52, uid=0)
    enter = " && ".join(f"echo $$ > {x}/cgroup.procs" for x in cg.values())
    p = subprocess.run(["sh", "-c", enter + ' && exec "$@"', "sh", sys.executable, "-c", TASK_GPUS, d.sock,
                        f"{dev}/nvidia{n1_minors[0]}", f"{dev}/nvidia{n1_minors[1]}"],
                       capture_output=True, text=True, timeout=60)
    assert " 400 " in p.stdout and "task_gpus" in p.stdout, (p.stdout, p.stderr)
    assert slurm_jobs(d) == []


def test_network_is_the_nodes_unless_the_step_asks_for_none(fresh_daemon, slurm_cgroups):
    """A step's tasks talk across nodes (MPI, NCCL, torch.distributed): by default a task has the
    node's network namespace; --joblet-network=none gives it loopback only; another value is
    refused by the plugin, and a field the route does not know is refused naming it."""
    d = fresh_daemon()
    host_net = os.readlink("/proc/self/ns/net")
    cg = slurm_cgroups(47, task=0)
    p = task(d, cg, ["readlink", "/proc/self/ns/net"], job=47)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and out.strip() == host_net, (out, err)
    p = task(d, cg, ["sh", "-c", "readlink /proc/self/ns/net; ls /sys/class/net"], job=47,
             opts=("joblet-network=none",))
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out.split()[0] != host_net and out.split()[1:] == ["lo"], out
    p = task(d, cg, ["true"], job=47, opts=("joblet-network=bridge",))
    out, err = p.communicate(timeout=60)
    # (srun refuses the option when its callback fails; the fake host only reports it)
    assert "--joblet-network=bridge: must be host" in err, (p.returncode, err)
    st, r = d.api("POST", "/v1/slurm/tasks", {"argv": ["true"], "cwd": "/"})
    assert st == 400 and r["error"]["field"] == "cwd", r


def test_a_restart_of_joblet_keeps_the_task(fresh_daemon, slurm_cgroups):
    """joblet killed (-9) and started again while a task runs: the new joblet adopts the job and
    watches the task process again, which waits on a new connection: the task ends with its own
    code. A task process that dies while joblet is down takes its job with it when joblet comes
    back, and joblet's cgroup2 directory of that job goes."""
    d = fresh_daemon()
    cg = slurm_cgroups(48, task=0)
    p = task(d, cg, ["sh", "-c", "while [ ! -e /work/go ]; do sleep 0.05; done; echo after; exit 7"], job=48)
    j = wait_for(lambda: [x for x in slurm_jobs(d) if x["status"] == "RUNNING"], "the task to run")[0]
    d.kill9()
    d.start()
    wait_for(lambda: "re-adopted running shim" in d.log(), "the job's adoption")
    with open(os.path.join(d.work(j["id"]), "go"), "w"):
        pass
    out, err = p.communicate(timeout=120)
    assert p.returncode == 7 and out == "after\n", (p.returncode, out, err)
    [done] = [x for x in slurm_jobs(d) if x["id"] == j["id"]]
    assert done["status"] == "FAILED" and done["exit_code"] == 7, done
    # the task process dies while joblet is down
    cg2 = slurm_cgroups(49, task=0)
    p = task(d, cg2, ["sleep", "300"], job=49)
    j = wait_for(lambda: [x for x in slurm_jobs(d) if x["status"] == "RUNNING" and x["slurm"]["job"] == 49],
                 "the second task to run")[0]
    made = os.path.join(mounts().get("cgroup2", "/nonexistent"), d.cgroup_root, "slurm-" + j["id"])
    d.kill9()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    d.start()
    job = wait_for(lambda: [x for x in slurm_jobs(d) if x["id"] == j["id"] and x["status"] not in ("RUNNING", "STOPPING")],
                   "the job to end")[0]
    assert job["status"] == "STOPPED", job
    shown = d.rnx("job", "status", "--detail", j["id"], check=True).stdout
    assert "ended while joblet was down" in shown, shown
    wait_for(lambda: open(os.path.join(cg2["memory"], "cgroup.procs")).read().split() == [], "the cgroup to empty")
    wait_for(lambda: not os.path.exists(made), "joblet's cgroup2 directory to go")


def test_a_traced_task_process_sends_nothing(fresh_daemon, slurm_cgroups):
    """The connection root opened may name GPUs, and the task process runs as the user from
    task_init on: when a tracer is attached to it there (strace here: a debugger could write on
    that connection), the plugin sends nothing and the task fails, naming why."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed (Debian package strace)")
    d = fresh_daemon()
    cg = slurm_cgroups(50, task=0)
    enter = " && ".join(f"echo $$ > {x}/cgroup.procs" for x in cg.values())
    argv = ["sh", "-c", enter + ' && exec strace -f -o /dev/null "$@"', "sh", FAKE, PLUGIN, "--uid", str(NOBODY),
            "--gid", str(NOBODY), "--job", "50", "--step", "0", "--task", "0", "--arg", f"socket={d.sock}",
            "--opt", "joblet", "--", "true"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "50", "SLURMD_NODENAME": "n1"})
    assert "is being traced (ptrace)" in p.stderr, (p.returncode, p.stderr)
    assert slurm_jobs(d) == []


def test_the_task_keeps_its_supplementary_groups(fresh_daemon, slurm_cgroups):
    """A Slurm task has the user's groups (slurmstepd's initgroups: shared project directories
    rely on them); joblet's own jobs have only their gid. The job and an exec into it get the
    task process's groups, as the kernel shows them, whatever the request says."""
    d = fresh_daemon()
    cg = slurm_cgroups(51, task=0)
    p = task(d, cg, ["sh", "-c", "id -G; exec sleep 300"], job=51, groups=(4242, 4343))
    j = wait_for(lambda: [x for x in slurm_jobs(d) if x["status"] == "RUNNING"], "the task to run")[0]
    line = wait_for(lambda: p.stdout.readline(), "the task's id -G")
    assert sorted(int(g) for g in line.split()) == [4242, 4343, NOBODY], line
    ex = d.rnx("job", "exec", j["id"], "id", "-G")
    assert ex.returncode == 0 and sorted(int(g) for g in ex.stdout.split()) == [4242, 4343, NOBODY], ex.stdout
    p.kill()
    p.wait(timeout=30)
    wait_for(lambda: [x for x in slurm_jobs(d) if x["id"] == j["id"] and x["status"] not in ("RUNNING", "STOPPING")],
             "the job to end")
    # joblet's own job: its gid alone
    jid = d.submit("sh", "-c", "id -G")
    d.wait(jid)
    assert len(d.output(jid).split()) == 1, d.output(jid)


SETGID_CALLER = r"""
import json, os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])  # the daemon's caller is this pid (SO_PEERCRED, at connect)
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    time.sleep(1)  # by now the parent has exec'd a setgid program: the same pid, egid shadow
    body = json.dumps({"argv": ["sh", "-c", "echo gid=$(id -g); head -c 5 /etc/shadow; echo"], "env": []}).encode()
    s.sendall(b"POST /v1/slurm/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
              + str(len(body)).encode() + b"\r\n\r\n" + body)
    print("answer:", s.recv(65536).decode().split("\r\n", 1)[0], flush=True)
    time.sleep(3)  # the job runs meanwhile; then the setgid program reads its stdin's end and exits
    os._exit(0)
os.close(w)
os.dup2(r, 0)
os.execv("/usr/sbin/unix_chkpwd", ["unix_chkpwd", "nobody", "nullok"])  # blocks reading a password
"""


def test_the_jobs_gid_is_never_a_setgid_programs(fresh_daemon, slurm_cgroups):
    """A user's process in its Slurm task's cgroup connects, then execs a setgid program (Debian's
    unix_chkpwd, setgid shadow, waits on its stdin): the same pid, whose effective gid is now
    shadow. A request sent on that connection (by a child that kept it) must not give a job
    that gid: the job runs with the user's own gid, or is refused (the uids are checked, all
    four; the gid is the caller's too)."""
    chk = "/usr/sbin/unix_chkpwd"
    if not os.path.exists(chk) or not os.stat(chk).st_mode & 0o2000:
        pytest.skip("no setgid unix_chkpwd (Debian's libpam-modules-bin)")
    d = fresh_daemon()
    cg = slurm_cgroups(53, task=0)
    enter = " && ".join(f"echo $$ > {x}/cgroup.procs" for x in cg.values())
    p = subprocess.run(["sh", "-c", enter + ' && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"', "sh",
                        sys.executable, "-c", SETGID_CALLER, d.sock], capture_output=True, text=True, timeout=60)
    jobs = slurm_jobs(d)
    assert "root:" not in p.stdout, ("the job read /etc/shadow", p.stdout, jobs)
    assert all(j["gid"] == NOBODY for j in jobs), ([(j["id"], j["uid"], j["gid"]) for j in jobs], p.stdout)


MANY_TASKS = r"""
import http.client, json, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
c = http.client.HTTPConnection("joblet")
c.sock = s
body = json.dumps({"argv": sys.argv[3:] or ["true"], "env": []})
for _ in range(int(sys.argv[2])):
    c.request("POST", "/v1/slurm/tasks", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    print(r.status, flush=True)
time.sleep(2)  # this process is the jobs' waiter: they end first
"""


def test_slurm_tasks_count_in_the_users_limits(fresh_daemon, slurm_cgroups):
    """limits.max_jobs_per_user bounds the jobs one user keeps (every job is kept until deleted),
    and jobs.state_reserve the state disk: a Slurm task is a kept job of its user like another,
    so a user whose process sits in any Slurm task's cgroup cannot make joblet keep more than the
    limit by asking on POST /v1/slurm/tasks in a loop."""
    d = fresh_daemon("limits:\n  max_jobs_per_user: 2\n")
    cg = slurm_cgroups(54, task=0)
    enter = " && ".join(f"echo $$ > {x}/cgroup.procs" for x in cg.values())

    def four_tasks():
        # four tasks of `sleep 60` asked in a row; they end when this process does (their waiter)
        p = subprocess.run(["sh", "-c", enter + ' && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"',
                            "sh", sys.executable, "-c", MANY_TASKS, d.sock, "4", "sleep", "60"],
                           capture_output=True, text=True, timeout=60)
        kept = [j for j in slurm_jobs(d) if j["uid"] == NOBODY]
        assert len(kept) <= 2, (p.stdout, len(kept), p.stderr)
        assert p.stdout.split() == ["201", "201", "429", "429"], (p.stdout, p.stderr)
        return kept

    first = four_tasks()
    for j in first:
        d.wait(j["id"])
    # the records of ended Slurm tasks make room for new ones, oldest first (Slurm's accounting
    # keeps them): a user's srun steps do not all fail once it kept max_jobs_per_user of them
    second = four_tasks()
    assert not {j["id"] for j in first} & {j["id"] for j in second}, (first, second)
    # (one record for each new task: as many as it needs)
    assert d.log().count("the record of its 1 oldest ended Slurm task was deleted to make room") == 2, d.log()[-3000:]


def read_request(c, buf):
    """One HTTP request from connection c (buf: what came before it): (head, body, what is left)."""
    while b"\r\n\r\n" not in buf:
        got = c.recv(65536)
        assert got, buf
        buf += got
    head, buf = buf.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(buf) < n:
        buf += c.recv(65536)
    return head.decode(), buf[:n], buf[n:]


def answer(c, status, obj, content_type="application/json"):
    body = (obj if isinstance(obj, str) else json.dumps(obj)).encode()
    c.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
              + body)


def stand_in_joblet(path):
    """The test's own joblet for the plugin to talk to: a unix socket listening at path (the
    test answers on it as the joblet it plays would); (its path, the listening socket). Skips
    without the plugin."""
    if not os.path.exists(PLUGIN):
        pytest.skip("joblet.so was not built (no slurm/spank.h)")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(4)
    srv.settimeout(60)
    return str(path), srv


def task_on_a_terminal(sock_path, cmd):
    """The fake slurmstepd's task (root's, job 9) running cmd with --joblet against sock_path, its
    stdio a new pty whose slave is its controlling terminal: (the process, the pty's master)."""
    master, slave = pty.openpty()

    def ctty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    p = subprocess.Popen([FAKE, PLUGIN, "--uid", "0", "--gid", "0", "--job", "9", "--step", "0", "--task", "0", "--arg",
                          f"socket={sock_path}", "--opt", "joblet", "--", cmd], stdin=slave, stdout=slave,
                         stderr=slave, preexec_fn=ctty, env={"PATH": "/usr/bin:/bin"})
    os.close(slave)
    return p, master


def test_pty_task_on_a_joblet_that_refuses_a_terminal_passes_ctrl_c_on(tmp_path):
    """srun --pty (the task's stdin a terminal, its controlling one) asks for a job with a terminal
    of its own ("tty": true). A joblet that refuses it (400 naming the field tty: one older than the
    plugin, which knows no tty) is asked again without it, and the task runs as before terminals
    were relayed: Ctrl-C on Slurm's pty is passed on to every process of the job
    (POST /v1/jobs/ID/kill?signal=2&all=1), and the task ends as the job did. The joblet here is
    the test's, a unix socket that answers as such a joblet would."""
    sock_path, srv = stand_in_joblet(tmp_path / "old.sock")
    seen, waiting = [], threading.Event()

    def old_joblet():
        c, _ = srv.accept()
        c.settimeout(60)
        head, body, left = read_request(c, b"")
        seen.append(("task", json.loads(body)))
        if "tty" in json.loads(body):
            answer(c, 400, {"error": {"code": "invalid", "message": "tty: not a field of a Slurm task", "field": "tty"}})
            head, body, left = read_request(c, left)
            seen.append(("task", json.loads(body)))
        answer(c, 201, {"id": "0123abcd", "status": "RUNNING"})
        head, _, left = read_request(c, left)
        seen.append(("follow", head.split()[1]))
        waiting.set()
        k, _ = srv.accept()
        k.settimeout(60)
        khead, _, _ = read_request(k, b"")
        seen.append(("kill", khead.split()[1]))
        answer(k, 200, {})
        k.close()
        answer(c, 200, json.dumps({"end": True, "exit_code": 0, "end_reason": "exit"}) + "\n", "application/x-ndjson")
        c.close()
    th = threading.Thread(target=old_joblet, daemon=True)
    th.start()
    p, master = task_on_a_terminal(sock_path, "true")
    try:
        assert waiting.wait(60), seen
        time.sleep(0.3)
        os.write(master, b"\x03")  # the terminal's Ctrl-C: SIGINT to its foreground, the task process
        assert p.wait(60) == 0, seen
        th.join(10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
        srv.close()
    assert [s[0] for s in seen] == ["task", "task", "follow", "kill"], seen
    assert seen[0][1].get("tty") is True and "tty" not in seen[1][1], seen
    assert seen[2][1] == "/v1/jobs/0123abcd/logs?follow=1&format=ndjson", seen
    assert seen[3][1] == "/v1/jobs/0123abcd/kill?signal=2&all=1", seen


def test_pty_task_keys_typed_while_the_job_starts_are_echoed_once(tmp_path):
    """srun --pty: keys typed after the task process started but before its relay is attached
    (here: while joblet takes its time to answer the request) wait in Slurm's pty, raw already,
    and reach the job's terminal, whose echo is the only one: Slurm's pty made raw only once
    attached echoed them first (cooked), and the job's terminal again. The joblet here is the
    test's: its job's terminal echoes what it is sent, as a cooked pty would."""
    sock_path, srv = stand_in_joblet(tmp_path / "j.sock")
    seen, asked, typed = [], threading.Event(), threading.Event()

    def frame(ch, payload):
        return bytes([ch]) + len(payload).to_bytes(4, "big") + payload

    def joblet():
        c, _ = srv.accept()
        c.settimeout(60)
        head, body, left = read_request(c, b"")
        seen.append(("task", json.loads(body).get("tty")))
        asked.set()
        assert typed.wait(30)
        answer(c, 201, {"id": "0123abcd", "status": "RUNNING"})
        a, _ = srv.accept()
        a.settimeout(60)
        head, _, buf = read_request(a, b"")
        seen.append(("attach", head.split()[1]))
        a.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
        keys = b""
        while not re.search(rb"[\r\n]", keys):  # (a cooked pty made the CR a LF)
            while len(buf) < 5 or len(buf) < 5 + int.from_bytes(buf[1:5], "big"):
                got = a.recv(4096)
                assert got, (buf, keys)
                buf += got
            n = int.from_bytes(buf[1:5], "big")
            if buf[0] == 0:
                keys += buf[5:5 + n]
            buf = buf[5 + n:]
        line = re.split(rb"[\r\n]", keys)[0]
        a.sendall(frame(1, line + b"\r\n" + b"got-" + line + b"\r\n") + frame(4, (0).to_bytes(4, "big")))
        a.close()
        k, _ = srv.accept()  # the end record, on a new connection
        k.settimeout(60)
        head, _, _ = read_request(k, b"")
        seen.append(("follow", head.split()[1]))
        answer(k, 200, json.dumps({"end": True, "exit_code": 0, "end_reason": "exit"}) + "\n", "application/x-ndjson")
        k.close()
        c.close()
    th = threading.Thread(target=joblet, daemon=True)
    th.start()
    p, master = task_on_a_terminal(sock_path, "sh")
    out = b""
    try:
        assert asked.wait(60), seen
        os.write(master, b"abc\r")  # typed while the job starts
        time.sleep(0.5)
        typed.set()
        deadline = time.monotonic() + 60
        while b"got-abc" not in out and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    out += os.read(master, 4096)
                except OSError:
                    break
        assert p.wait(60) == 0, (seen, out)
        th.join(10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
        srv.close()
    assert seen[0] == ("task", True) and seen[1] == ("attach", "/v1/jobs/0123abcd/attach"), seen
    assert out.count(b"abc") == 2, out  # the job's echo and got-abc: Slurm's pty echoed none


class PtyTask:
    """The task process (fake_spank with the plugin) of Slurm job `job`, task 0, run by nobody on a
    pty of the test's that is its controlling terminal, as srun --pty gives it (stdin, stdout and
    stderr the pty's slave); what it writes there is kept in .seen."""

    def __init__(self, d, slurm_cgroups, job, command):
        cg = slurm_cgroups(job, task=0)
        self.master, self.slave = pty.openpty()
        self.before = termios.tcgetattr(self.slave)
        enter = " && ".join(f"echo $$ > {x}/cgroup.procs" for x in cg.values())
        argv = ["sh", "-c", enter + ' && exec "$@"', "sh", FAKE, PLUGIN, "--uid", str(NOBODY), "--gid",
                str(NOBODY), "--job", str(job), "--step", "0", "--task", "0", "--arg", f"socket={d.sock}",
                "--opt", "joblet", "--", "sh", "-c", command]

        def ctty():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.p = subprocess.Popen(argv, stdin=self.slave, stdout=self.slave, stderr=self.slave, preexec_fn=ctty,
                                  env={"PATH": "/usr/local/bin:/usr/bin:/bin", "SLURM_JOB_ID": str(job),
                                       "SLURMD_NODENAME": "n1"})
        self.seen = b""

    def until(self, what, timeout=60):
        deadline = time.monotonic() + timeout
        while what not in self.seen:
            assert time.monotonic() < deadline, self.seen
            if select.select([self.master], [], [], 0.2)[0]:
                try:
                    self.seen += os.read(self.master, 4096)
                except OSError:
                    assert what in self.seen, self.seen

    def close(self):
        """The pty's settings when it ended; the task process killed if it had not."""
        after = termios.tcgetattr(self.slave)
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        os.close(self.master)
        os.close(self.slave)
        return after


def test_pty_task_has_a_terminal_of_its_own_across_a_restart(fresh_daemon, slurm_cgroups):
    """The task's stdin a terminal (srun --pty): the job's stdin is a terminal of the job's own
    (tty names it), which the task process relays; joblet killed (-9) and started again meanwhile:
    the task process attaches again, what is typed then reaches the job, and the task ends with
    the job's code. Slurm's pty is set back as it was at the end."""
    d = fresh_daemon()
    t = PtyTask(d, slurm_cgroups, 50, "tty; echo T$((6*7)); read x; echo got-$x; exit 5")
    try:
        t.until(b"T42")
        assert re.search(rb"/dev/pts/\d+", t.seen) and b"not a tty" not in t.seen, t.seen
        [j] = slurm_jobs(d)
        assert j["tty"] is True, j
        d.kill9()
        d.start()
        wait_for(lambda: "re-adopted running shim" in d.log(), "the job's adoption")
        os.write(t.master, b"hello\r")
        t.until(b"got-hello")
        assert t.p.wait(60) == 5, t.seen
        # the new attach's replay of the terminal's last output is not written again
        assert t.seen.count(b"T42") == 1, t.seen
    finally:
        after = t.close()
    assert after == t.before, (t.before, after)
    [done] = [x for x in slurm_jobs(d) if x["id"] == j["id"]]
    assert done["exit_code"] == 5, done


def test_pty_task_idle_detach_is_not_said_on_slurms_terminal(fresh_daemon, slurm_cgroups):
    """jobs.terminal_idle_timeout_s closes an attach that was idle; the task process relaying a
    terminal job (srun --pty) attaches again at once, and the job goes on as if nothing happened.
    joblet's line for that end ('detached (jobs.terminal_idle_timeout_s); the job goes on: rnx job
    attach ID') is for a person's rnx, who must come back by hand: on Slurm's pty it landed in the
    middle of the job's screen, telling the user to run a command they need not run; and the
    shim's replay of the terminal's last output to the new attach wrote again what Slurm's pty
    already showed, once per idle period."""
    d = fresh_daemon("jobs:\n  terminal_idle_timeout_s: 1\n")
    t = PtyTask(d, slurm_cgroups, 51, "echo T$((6*7)); read x; echo got-$x; exit 4")
    try:
        t.until(b"T42")
        # idle past the timeout, twice over: joblet detaches the relay, which attaches again
        time.sleep(3.5)
        [j] = slurm_jobs(d)
        assert j["status"] == "RUNNING", j
        os.write(t.master, b"hello\r")
        t.until(b"got-hello")
        assert t.p.wait(60) == 4, t.seen
    finally:
        t.close()
    assert b"nothing typed or written" not in t.seen and b"rnx job attach" not in t.seen, t.seen
    # each attach's replay of the terminal's last output (the shim's ring) was written again
    assert t.seen.count(b"T42") == 1, t.seen


def test_pty_task_refused_an_attach_says_why_and_attaches_when_it_may(fresh_daemon, slurm_cgroups):
    """The relay's attach refused (429: the user's attaches at limits.attach_sessions_per_user,
    here taken by another srun --pty of theirs): the user is told on Slurm's pty why, naming the
    limit, and the relay tries again while the job runs; once the other ends it attaches, what was
    typed meanwhile reaches the job, its output so far is shown (the attach's replay), and the
    task ends with the job's code. It said 'HTTP 429' and never relayed again: a silent terminal
    until the user's scancel."""
    d = fresh_daemon("limits:\n  attach_sessions_per_user: 1\n")
    a = PtyTask(d, slurm_cgroups, 52, "echo A$((6*7)); read x; exit 3")
    b = None
    try:
        a.until(b"A42")
        b = PtyTask(d, slurm_cgroups, 53, "echo B$((6*7)); read x; echo got-$x; exit 6")
        b.until(b"limits.attach_sessions_per_user", timeout=30)
        assert b"trying again" in b.seen, b.seen
        os.write(b.master, b"early\r")  # typed while refused
        time.sleep(1)
        os.write(a.master, b"bye\r")
        a.until(b"bye")
        assert a.p.wait(60) == 3, a.seen
        b.until(b"got-early", timeout=60)
        assert b"B42" in b.seen and b"attached to the terminal of job" in b.seen, b.seen
        assert b.p.wait(60) == 6, b.seen
        # said once, not at each try
        assert b.seen.count(b"limits.attach_sessions_per_user") == 1, b.seen
    finally:
        a.close()
        if b:
            b.close()


def test_pty_task_that_did_not_keep_up_is_told_what_was_dropped(fresh_daemon, slurm_cgroups):
    """srun's side stalls (nothing reads Slurm's pty) while the job writes a lot: joblet never
    makes a job wait for a terminal, so output is dropped for the relay (the job's log has all
    of it), and the srun user is told how much on Slurm's pty once it takes output again. The
    shim said so only with the job's next output: a job that then waited for a key (a shell at
    its prompt) left the srun user a terminal that had stopped mid-output, silently."""
    d = fresh_daemon()
    t = PtyTask(d, slurm_cgroups, 54, "head -c 1500000 /dev/zero | tr '\\0' x; echo; echo E$((6*7)); read x; "
                                      "echo got-$x; exit 2")
    try:
        time.sleep(8)  # nothing read: the pty fills, the relay blocks, the shim drops for it
        try:
            t.until(b"were dropped here", timeout=120)
        except AssertionError:
            raise AssertionError((len(t.seen), t.seen[-300:]))
        assert re.search(rb"\[joblet: \d+ bytes of the job's output were dropped here", t.seen), t.seen[-2000:]
        assert t.seen.count(b"x") < 1500000, len(t.seen)
        os.write(t.master, b"hi\r")
        t.until(b"got-hi")
        assert t.p.wait(60) == 2, t.seen[-2000:]
    finally:
        t.close()


def test_a_task_whose_start_joblet_was_killed_before_it_let_run_is_not_run_by_the_queue(fresh_daemon, slurm_cgroups,
                                                                                       tmp_path):
    """joblet is killed right after the commit that records a Slurm task's start, before its word
    to the shim (test_restart's LD_PRELOAD object): the shim runs nothing (not_run) and the task
    process is told the start failed. The next joblet ends the job FAILED (start_failed): it was
    put back in the queue and run there as a plain job, outside Slurm's cgroups, its output in
    joblet's log, while Slurm counted the task failed."""
    from test_restart import _KILL_AT_GO
    d = fresh_daemon(env={"LD_PRELOAD": preload_object(tmp_path, _KILL_AT_GO, "kill_at_go")})
    task_killed_with_joblet_never_runs(d, slurm_cgroups, 52)


def task_killed_with_joblet_never_runs(d, slurm_cgroups, job):
    """A task of Slurm job `job` started on d, whose LD_PRELOAD object kills joblet during its
    start: the task process is told it failed and its command never ran; the next joblet ends the
    task's job FAILED (start_failed), its command not run from the queue."""
    cg = slurm_cgroups(job, task=0)
    p = task(d, cg, ["sh", "-c", "echo task-ran; exit 3"], job=job)
    assert d.proc.wait(timeout=60) == -signal.SIGKILL, d.log()[-2000:]
    out, err = p.communicate(timeout=150)
    assert p.returncode != 0 and "task-ran" not in out, (p.returncode, out, err)
    d.extra_env = {}
    d.start()
    [j] = wait_for(lambda: [x for x in slurm_jobs(d) if x["status"] not in ("QUEUED", "RUNNING", "STOPPING")],
                   "the task's job to end")
    time.sleep(1)  # (a start from the queue would have come by now)
    j = d.job(j["id"])
    assert j["status"] == "FAILED" and j["end_reason"] == "start_failed", j
    assert d.output(j["id"]) == "", f"the task's command ran from joblet's queue: {d.output(j['id'])!r}"
    events = d.api("GET", f"/v1/jobs/{j['id']}?detail=1")[1]["detail"]["events"]
    assert not any(e["event"] == "started" for e in events), events


_KILL_AFTER_FORK = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
/* joblet's launch (core/job_launch.c): the shim's socket pair, then the shim forked, then joblet
 * closes its copy of the shim's end: the process is killed there instead, before any commit
 * records the start */
static int shims_end = -1;
int socketpair(int domain, int type, int protocol, int sv[2])
{
    static int (*real)(int, int, int, int *);
    if (!real)
        real = (int (*)(int, int, int, int *))dlsym(RTLD_NEXT, "socketpair");
    int rc = real(domain, type, protocol, sv);
    if (rc == 0 && domain == AF_UNIX && type == (SOCK_STREAM | SOCK_CLOEXEC))
        shims_end = sv[1];
    return rc;
}
int close(int fd)
{
    static int (*real)(int);
    if (fd >= 0 && fd == shims_end)
        kill(getpid(), SIGKILL);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "close");
    return real(fd);
}
"""


def test_a_task_whose_start_no_commit_recorded_is_not_run_by_the_queue(fresh_daemon, slurm_cgroups, tmp_path):
    """joblet is killed right after it forked a Slurm task's shim, before any commit named it (the
    task's job is committed, waiting: slurm_task.c). The shim runs nothing (not_run); the next
    joblet ends the job FAILED (start_failed) instead of leaving it to the queue, which ran it as a
    plain job outside Slurm (the committed row did not even say it was a Slurm task: the route's
    changes after submit_create were saved only by the launch)."""
    d = fresh_daemon(env={"LD_PRELOAD": preload_object(tmp_path, _KILL_AFTER_FORK, "kill_after_fork")})
    task_killed_with_joblet_never_runs(d, slurm_cgroups, 53)


# A connection whose process is gone, its pid given to another: A (nobody, in no Slurm cgroup)
# connects and hands the connection over, then ends; V, made with A's pid (ns_last_pid), is a
# process of nobody in a Slurm task's cgroup with a gid nobody was never given; the request
# goes on A's connection. Prints the answer's status line, then its body.
REUSE = r"""
import os, socket, sys, time
sock_path, gid, cgprocs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
parent, child = socket.socketpair()
a = os.fork()
if a == 0:
    os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
    s = socket.socket(socket.AF_UNIX); s.connect(sock_path)
    socket.send_fds(child, [b"x"], [s.fileno()])
    os._exit(0)
_, fds, _, _ = socket.recv_fds(parent, 1, 1)
conn = socket.socket(fileno=fds[0])
os.waitpid(a, 0)
ready_r, ready_w = os.pipe()
for attempt in range(200):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(a - 1))
    v = os.fork()
    if v == 0:
        if os.getpid() != a:
            os._exit(0)
        for p in cgprocs:
            with open(p, "w") as f:
                f.write(str(os.getpid()))
        os.setgroups([]); os.setresgid(gid, gid, gid); os.setresuid(65534, 65534, 65534)
        os.write(ready_w, b"r")
        time.sleep(60)
        os._exit(0)
    if v == a:
        break
    os.waitpid(v, 0)
else:
    print("NOREUSE"); sys.exit(0)
os.read(ready_r, 1)
body = b'{"argv": ["true"], "env": []}'
conn.sendall(b"POST /v1/slurm/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
             + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
data = b""
while True:
    c = conn.recv(65536)
    if not c:
        break
    data += c
os.kill(v, 9); os.waitpid(v, 0)
print(data.decode().split("\r\n", 1)[0]); print(data.decode().split("\r\n\r\n", 1)[1])
"""


def test_a_connection_whose_process_is_gone_starts_nothing(fresh_daemon, slurm_cgroups):
    """A Slurm task is the process that connected (SO_PEERCRED's pid): once that process is gone
    its pid may name another, which is not the caller. joblet once looked at the pid when the
    request came: a process of nobody in no Slurm cgroup that connected and ended, its pid given
    to another of nobody's processes in a task's cgroup with a gid nobody never had, made a job
    of that process with that gid (its stdio taken, 201). Refused now: the caller is gone."""
    d = fresh_daemon()
    cg = slurm_cgroups(47)
    p = subprocess.run([sys.executable, "-c", REUSE, d.sock, "4242",
                        *[os.path.join(x, "cgroup.procs") for x in cg.values()]],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.stdout, p.stderr)
    if p.stdout.startswith("NOREUSE"):
        pytest.skip("the pid of the process that connected was not given again (a busy machine)")
    assert " 403 " in p.stdout.splitlines()[0] and "gone" in p.stdout, p.stdout
    assert slurm_jobs(d) == []


def test_a_slurm_task_is_not_requeued_into_joblets_queue(fresh_daemon, slurm_cgroups):
    """A requeue (POST /v1/jobs/ID/requeue, rnx job requeue) puts a job back in joblet's queue:
    a Slurm task's user once requeued it, and joblet's queue ran its command again as a job of
    its own: out of Slurm's task cgroups (no memory limit of Slurm's, nor joblet's), its output
    in joblet's log, and running on after its task process died (scancel): a job Slurm never
    gave. Refused (409, saying Slurm requeues it); the task runs on in its cgroup."""
    d = fresh_daemon()
    cg = slurm_cgroups(62)
    p = task(d, cg, ["sleep", "300"], job=62)
    try:
        [j] = wait_for(lambda: [x for x in slurm_jobs(d) if x["status"] == "RUNNING"] or None, "the task to run")
        st, r = api_as(d, NOBODY, "POST", f"/v1/jobs/{j['id']}/requeue")
        assert st == 409 and "Slurm" in r["error"]["message"], (st, r)
        time.sleep(1)
        st, now = d.api("GET", f"/v1/jobs/{j['id']}")
        assert now["status"] == "RUNNING" and now["pid"] == j["pid"], now
        assert p.poll() is None
    finally:
        p.kill()
        p.communicate(timeout=60)
    wait_for(lambda: d.api("GET", f"/v1/jobs/{j['id']}")[1]["status"] not in ("RUNNING", "STOPPING", "QUEUED"),
             "the job to end with its task process")
    assert open(os.path.join(cg["memory"], "cgroup.procs")).read().split() == []
