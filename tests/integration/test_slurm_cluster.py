"""The test Slurm cluster of tests/integration/slurm_cluster.py is a real one (issue 30): two
slurmd on this machine run a step's tasks on both nodes, hand out the test GPUs of gres.conf
(SLURM_STEP_GPUS: positions in the node's File= list), confine a task to its GPUs with
ConstrainDevices=yes (and not with =no), hold --mem through Slurm's memory cgroup (the job ends
OUT_OF_MEMORY), run and cancel batch jobs, and load a SPANK plugin from plugstack.conf (the probe
of slurm_spank_probe.c, which records what each hook sees: the facts the joblet plugin builds on).

This module's cluster has ConstrainDevices=yes and the probe loaded; test_constrain_devices_off
starts a second one with ConstrainDevices=no."""
import collections
import os
import pwd
import re
import subprocess
import time

import pytest

from slurm_cluster import NODES, SlurmCluster, build_spank_plugin, slurm_cluster_fixture  # noqa: F401
from conftest import wait_for

HERE = os.path.dirname(os.path.abspath(__file__))


def probe_plugstack(cluster):
    so = build_spank_plugin(os.path.join(HERE, "slurm_spank_probe.c"), cluster.path("etc", "probe.so"))
    log = cluster.path("log", "spank-probe.log")
    open(log, "w").close()
    os.chmod(log, 0o666)  # hooks that run as the job's user append too
    return f"required {so} log={log}\n"


SLURM_CLUSTER_OPTIONS = {"constrain_devices": True, "plugstack": probe_plugstack}

# open() each path: "ENXIO" is as far as the (absent) driver, so the devices cgroup let it
# through; "EPERM" is the devices cgroup refusing it.
OPEN_PROBE = r"""
import errno, os, sys
out = []
for p in sys.argv[1:]:
    try:
        os.close(os.open(p, os.O_RDWR)); r = "ok"
    except OSError as e:
        r = errno.errorcode[e.errno]
    out.append(os.path.basename(p) + "=" + r)
print(os.environ.get("SLURMD_NODENAME"), os.environ.get("SLURM_STEP_GPUS", "-"),
      os.environ.get("CUDA_VISIBLE_DEVICES", "-"), " ".join(out))
"""


def all_gpus(cluster):
    return [f for n in NODES for f in cluster.gpu_files(n)]


def probe_rows(p):
    """node -> (SLURM_STEP_GPUS, CUDA_VISIBLE_DEVICES, {device: result}) of OPEN_PROBE's lines."""
    assert p.returncode == 0, p.stderr
    rows = {}
    for line in p.stdout.splitlines():
        node, step_gpus, cvd, *opens = line.split()
        rows.setdefault(node, []).append((step_gpus, cvd, dict(o.split("=") for o in opens)))
    return rows


def wait_state(cluster, job, states, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        out = cluster.run(["scontrol", "show", "job", job]).stdout
        m = re.search(r"JobState=(\S+)", out)
        if m and m.group(1) in states:
            return out
        assert time.monotonic() < deadline, f"job {job} never reached {states}:\n{out}"
        time.sleep(0.1)


def sbatch(cluster, *args):
    p = cluster.run(["sbatch", "--parsable", "--chdir=/tmp", *args])
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().split(";")[0]


def test_srun_two_nodes_four_tasks(slurm_cluster):
    p = slurm_cluster.run(["srun", "-N2", "--ntasks-per-node=2", "sh", "-c", 'echo "$SLURMD_NODENAME $SLURM_PROCID"'])
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines()]
    assert len(rows) == 4, p.stdout
    assert collections.Counter(r[0] for r in rows) == {"node1": 2, "node2": 2}, p.stdout
    assert sorted(int(r[1]) for r in rows) == [0, 1, 2, 3], p.stdout


def test_gres_gpus_env_and_devices(slurm_cluster):
    """--gres=gpu:2 on both nodes: each task's SLURM_STEP_GPUS and CUDA_VISIBLE_DEVICES are 0,1
    (positions in its node's File= list, not minors), and with ConstrainDevices=yes it opens its
    node's two test GPUs. Slurm denies only the gres devices of the task's own node (its
    gres.conf lines) that the step was not given; everything else stays allowed, so the other
    node's test GPUs (absent from this node's gres.conf) open too: see test_no_gres_no_gpu."""
    p = slurm_cluster.run(["srun", "-N2", "--ntasks-per-node=1", "--gres=gpu:2", "python3", "-c", OPEN_PROBE,
                           *all_gpus(slurm_cluster)])
    rows = probe_rows(p)
    assert sorted(rows) == ["node1", "node2"], p.stdout
    for node, [(step_gpus, cvd, opens)] in rows.items():
        assert step_gpus == "0,1" and cvd == "0,1", (node, step_gpus, cvd)
        assert set(opens.values()) == {"ENXIO"}, (node, opens)


def test_no_gres_no_gpu(slurm_cluster):
    """A step without --gres has no SLURM_STEP_GPUS and, with ConstrainDevices=yes, EPERM on
    its node's GPUs; the other node's test GPUs (not in this node's gres.conf) stay allowed."""
    rows = probe_rows(slurm_cluster.run(["srun", "-N2", "--ntasks-per-node=1", "python3", "-c", OPEN_PROBE,
                                         *all_gpus(slurm_cluster)]))
    assert sorted(rows) == ["node1", "node2"], rows
    for node, [(step_gpus, cvd, opens)] in rows.items():
        assert step_gpus == "-" and cvd == "-", (node, step_gpus, cvd)
        mine = {os.path.basename(f) for f in slurm_cluster.gpu_files(node)}
        assert opens == {d: ("EPERM" if d in mine else "ENXIO") for d in opens}, (node, opens)


def test_step_gpus_index_is_file_position(slurm_cluster):
    """With node2's first GPU held by a running job, the next --gres=gpu:1 there gets
    SLURM_STEP_GPUS=1 and CUDA_VISIBLE_DEVICES=0, and opens nvidia3 (File= position 1 of
    node2, minor 3) of node2's two: the index is the position in gres.conf's File= list."""
    holder = sbatch(slurm_cluster, "-w", "node2", "--gres=gpu:1", "--wrap", "sleep 600")
    try:
        wait_state(slurm_cluster, holder, {"RUNNING"})
        rows = probe_rows(slurm_cluster.run(["srun", "-w", "node2", "--gres=gpu:1", "python3", "-c", OPEN_PROBE,
                                             *all_gpus(slurm_cluster)]))
        [(step_gpus, cvd, opens)] = rows["node2"]
        assert (step_gpus, cvd) == ("1", "0"), rows
        # nvidia0, nvidia1 are node1's: not in node2's gres.conf, so Slurm leaves them allowed
        assert opens == {"nvidia0": "ENXIO", "nvidia1": "ENXIO", "nvidia2": "EPERM", "nvidia3": "ENXIO"}, opens
    finally:
        slurm_cluster.run(["scancel", holder], check=True)
    wait_state(slurm_cluster, holder, {"CANCELLED"})


def test_task_cgroups(slurm_cluster):
    """A task's v1 cgroups: freezer (proctrack/cgroup) at the step, memory and devices
    (task/cgroup) and cpuacct (jobacct_gather/cgroup) at the task; nothing else gets a Slurm
    directory (ConstrainCores=no: cpuset stays at the root). On node2 the memory and devices
    task_T is the task's local id, cpuacct's the global one."""
    p = slurm_cluster.run(["srun", "-N2", "--ntasks-per-node=2", "sh", "-c",
                           'echo "$SLURMD_NODENAME $SLURM_JOB_ID $SLURM_PROCID $SLURM_LOCALID $(cat /proc/self/cgroup | tr "\\n" " ")"'])
    assert p.returncode == 0, p.stderr
    rows = p.stdout.splitlines()
    assert len(rows) == 4, p.stdout
    for row in rows:
        node, job, gtask, ltask, *lines = row.split()
        cg = {}
        for line in lines:
            _, ctrls, path = line.split(":", 2)
            cg[ctrls] = path
        base = f"/slurm_{node}/uid_0/job_{job}/step_0"
        assert cg["freezer"] == base, row
        assert cg["memory"] == cg["devices"] == f"{base}/task_{ltask}", row
        assert cg["cpuacct"] == f"{base}/task_{gtask}", row
        others = {k: v for k, v in cg.items() if k not in ("freezer", "memory", "devices", "cpuacct")}
        assert set(others.values()) == {"/"}, row


def test_mem_oom(slurm_cluster):
    """--mem=64M and a task that allocates 256 MB: the memory cgroup kills it; srun says
    'Out Of Memory', scontrol (no slurmdbd, so no sacct) and the jobcomp file say OUT_OF_MEMORY."""
    p = slurm_cluster.run(["srun", "--mem=64M", "python3", "-c", "b = bytearray(256 << 20); print('survived')"])
    assert p.returncode != 0 and "survived" not in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert re.search(r"srun: error: node\d: task 0: Out Of Memory", p.stderr), p.stderr
    m = re.search(r"srun: job (\d+) ", p.stderr) or re.search(r"StepId=(\d+)\.0", p.stderr)
    assert m, p.stderr
    job = m.group(1)
    out = wait_state(slurm_cluster, job, {"OUT_OF_MEMORY"})
    assert "Reason=OutOfMemory" in out, out
    assert re.search(rf"^JobId={job} .*JobState=OUT_OF_MEMORY", slurm_cluster.log("jobcomp.txt"), re.M)


def test_sbatch_runs_and_scancel_ends(slurm_cluster, tmp_path):
    os.chmod(tmp_path, 0o777)
    out = tmp_path / "out.txt"
    job = sbatch(slurm_cluster, f"--output={out}", "--wrap", 'echo "batch on $SLURMD_NODENAME"')
    wait_state(slurm_cluster, job, {"COMPLETED"})
    assert re.fullmatch(r"batch on node[12]\n", out.read_text()), out.read_text()

    job = sbatch(slurm_cluster, "-w", "node1", "--output=/dev/null", "--wrap", "exec sleep 600")
    wait_state(slurm_cluster, job, {"RUNNING"})
    cg = f"/sys/fs/cgroup/freezer/slurm_node1/uid_0/job_{job}"
    deadline = time.monotonic() + 30
    while not any("sleep" in open(f"/proc/{p}/comm").read() for p in pids_below(cg) if os.path.exists(f"/proc/{p}")):
        assert time.monotonic() < deadline, f"no sleep in {cg}"
        time.sleep(0.1)
    pids = pids_below(cg)
    slurm_cluster.run(["scancel", job], check=True)
    wait_state(slurm_cluster, job, {"CANCELLED"})
    deadline = time.monotonic() + 30
    while os.path.exists(cg) or any(os.path.exists(f"/proc/{p}") for p in pids):
        assert time.monotonic() < deadline, f"after scancel: {cg} or {pids} still there"
        time.sleep(0.1)


def pids_below(top):
    pids = set()
    for dirpath, _, files in os.walk(top):
        if "cgroup.procs" in files:
            try:
                with open(os.path.join(dirpath, "cgroup.procs")) as f:
                    pids.update(int(x) for x in f.read().split())
            except OSError:
                pass
    return pids


def probe_log(cluster, job):
    """hook -> [fields] of the SPANK probe's lines for one job (remote context only)."""
    out = collections.defaultdict(list)
    for line in open(cluster.path("log", "spank-probe.log")):
        hook, rest = line.split(" ", 1)
        if f" job={job} " not in line:
            continue
        fields = dict(kv.split("=", 1) for kv in re.findall(r"\S+=\S+", rest))
        out[hook].append(fields)
    return out


def test_spank_plugin_loaded_and_what_hooks_see(slurm_cluster):
    """srun as nobody with --gres=gpu:1: the probe runs in srun (local context) and slurmstepd
    (remote); spank_getenv already returns SLURM_STEP_GPUS and CUDA_VISIBLE_DEVICES in init,
    user_init and task_init_privileged (slurmstepd's own environment has neither);
    task_init_privileged runs as root in the task's process, task_init as the user;
    task_post_fork (slurmstepd, root) sees the task in its task cgroups."""
    nobody = pwd.getpwnam("nobody")
    p = slurm_cluster.run(["runuser", "-u", "nobody", "--", "srun", "--chdir=/tmp", "-w", "node1", "--gres=gpu:1",
                           "sh", "-c", 'echo "$SLURM_JOB_ID $(id -u)"'])
    assert p.returncode == 0, p.stderr
    job, uid = p.stdout.split()
    assert int(uid) == nobody.pw_uid
    # slurmstepd's exit hook runs as the step ends, which srun may return before (local run 168,
    # under a whole run's load: 'exit' not written yet)
    wait_for(lambda: probe_log(slurm_cluster, job)["exit"], "slurmstepd's exit hook in the probe's log")
    log = probe_log(slurm_cluster, job)
    local = [line for line in open(slurm_cluster.path("log", "spank-probe.log")) if " ctx=1 " in line]
    assert any(line.startswith("init_post_opt ") and f"uid={nobody.pw_uid} " in line for line in local), local

    for hook in ("init", "user_init", "task_init_privileged", "task_post_fork", "task_init", "task_exit", "exit"):
        assert log[hook], (hook, dict(log))
        for f in log[hook]:
            assert f["ctx"] == "2" and f["step"] == "0", (hook, f)
            assert f["spank:SLURM_STEP_GPUS"] == "0" and f["spank:CUDA_VISIBLE_DEVICES"] == "0", (hook, f)
            assert f["getenv:SLURM_STEP_GPUS"] == "(unset)", (hook, f)
    [priv] = log["task_init_privileged"]
    [task] = log["task_init"]
    [fork] = log["task_post_fork"]
    assert (priv["uid"], priv["euid"]) == ("0", "0"), priv
    assert (task["uid"], task["euid"]) == (str(nobody.pw_uid), str(nobody.pw_uid)), task
    assert fork["uid"] == "0" and fork["pid"] != priv["pid"] == task["pid"], (fork, priv, task)
    cgline = next(line for line in open(slurm_cluster.path("log", "spank-probe.log"))
                  if line.startswith("task_post_fork(task) cgroup ") and f"/job_{job}/" in line)
    assert f"memory:/slurm_node1/uid_{nobody.pw_uid}/job_{job}/step_0/task_0|" in cgline, cgline


def test_constrain_devices_off():
    """With ConstrainDevices=no Slurm leaves the devices cgroup alone: a task given one GPU
    still opens all four test GPUs (what the joblet plugin must close itself)."""
    with SlurmCluster(constrain_devices=False) as c:
        rows = probe_rows(c.run(["srun", "-w", "node1", "--gres=gpu:1", "python3", "-c", OPEN_PROBE, *all_gpus(c)]))
        [(step_gpus, cvd, opens)] = rows["node1"]
        assert (step_gpus, cvd) == ("0", "0"), rows
        assert set(opens.values()) == {"ENXIO"}, opens


def test_spank_batch_step_sees_job_gpus(slurm_cluster, tmp_path):
    """The batch step (step id 0xfffffffb, cgroup step_batch) of sbatch --gres=gpu:1: spank_getenv
    gives SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES, not SLURM_STEP_GPUS."""
    job = sbatch(slurm_cluster, "-w", "node2", "--gres=gpu:1", "--output=/dev/null", "--wrap", "true")
    wait_state(slurm_cluster, job, {"COMPLETED"})
    log = probe_log(slurm_cluster, job)
    [priv] = log["task_init_privileged"]
    assert priv["step"] == str(0xFFFFFFFB), priv
    assert priv["spank:SLURM_JOB_GPUS"] == "0" and priv["spank:CUDA_VISIBLE_DEVICES"] == "0", priv
    assert priv["spank:SLURM_STEP_GPUS"] == "(unset)", priv
    cgline = next(line for line in open(slurm_cluster.path("log", "spank-probe.log"))
                  if line.startswith("task_post_fork(task) cgroup ") and f"/job_{job}/" in line)
    assert f"memory:/slurm_node2/uid_0/job_{job}/step_batch/task_0|" in cgline, cgline


def test_teardown_fails_loudly_on_a_leftover():
    """A process of the cluster's left running at teardown is killed and fails the teardown."""
    c = SlurmCluster().start()
    stray = subprocess.Popen(["sleep", "600"], env=c.env, start_new_session=True)
    with pytest.raises(AssertionError, match=rf"left running after the daemons stopped \(killed\): {stray.pid} sleep 600"):
        c.stop()
    assert stray.wait(10) == -9
    assert c.dir is None
