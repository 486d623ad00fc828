"""`rnx job status --detail` (issue 15; docs/api.md "Job detail"): the request as the flags that
give it, the placement and its score against the best possible, the spec summary, and the job's
history, which outlives a kill -9 of joblet. Real daemon, simulated machines (and, for the device
nodes, the fake NVML with mknod'd test nodes as in test_gpu_isolation.py)."""
import json
import os
import re

import pytest

from conftest import ROOT, rnx_as
from gpu_nodes import FAKE_NVML, make_nodes

FIX = os.path.join(ROOT, "tests", "fixtures")
LEVELS = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}
EVENT = re.compile(r"^  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  (\S+) +(.*)$")
USER = 4321


def sim(fresh_daemon, name="dgx-h100"):
    return fresh_daemon(f"gpu:\n  fixture: {FIX}/{name}/machine.json\n  scrub: 0\n")


def run_id(d, *args):
    return d.rnx("job", "run", *args, check=True).stdout.strip()


def detail(d, jid):
    p = d.rnx("job", "status", "--detail", jid, check=True)
    return p.stdout.splitlines()


def line(lines, key):
    """The one line that starts with key (a "Key:" of the status block)."""
    found = [l for l in lines if l.startswith(key)]
    assert len(found) == 1, (key, lines)
    return found[0]


def events(lines):
    """The Events block without its times: ["submitted by uid 0", ...]."""
    out = []
    for l in lines[lines.index("Events:") + 1:]:
        m = EVENT.match(l)
        assert m, (l, lines)
        out.append(f"{m.group(1)} {m.group(2)}")
    return out


def pair_score(gpus, a, b):
    """placement_pair_score (src/sched/placement.c) from the API's view of two GPUs."""
    ga, gb = gpus[a], gpus[b]
    nv = ga["nvlink_peers"][b] or 0
    lvl = ga["pcie_levels"][b]
    s = 1000 * nv if nv > 0 else 0
    if lvl in LEVELS:
        s += 60 - LEVELS[lvl]
    return s + (5 if ga["numa_node"] is not None and ga["numa_node"] >= 0 and ga["numa_node"] == gb["numa_node"] else 0)


def api_gpus(d):
    status, body = d.api("GET", "/v1/gpus")
    assert status == 200, body
    return {g["index"]: g for g in body["gpus"]}


def key(k):
    """A key as rnx prints it ("Key: "), or the indent of a list's further lines."""
    return f"{k} " if k else "  "


def test_two_gpus_on_a_dgx_h100_show_nvlink_and_the_optimal_score(fresh_daemon, tmp_path):
    # the fake NVML on the DGX H100 with real device nodes, so the spec has the GPU nodes
    if not os.path.exists(FAKE_NVML):
        pytest.skip("the fake libnvidia-ml.so.1 is not built")
    dev = tmp_path / "dev"
    make_nodes(dev, "dgx-h100")
    f = os.path.join(FIX, "dgx-h100")
    (tmp_path / "nocuda").mkdir()
    d = fresh_daemon(f"gpu:\n  backends: [nvml]\n  nvml_library: {FAKE_NVML}\n  proc_root: {f}/proc\n"
                     f"  sys_root: {f}/sys\n  dev_root: {dev}\n  cuda_search_root: {tmp_path}/nocuda\n  scrub: 0\n",
                     env={"FAKE_NVML_FIXTURE": f"{f}/machine.json"})
    jid = run_id(d, "--gpu=2", "--gpu-memory=8GB", "--max-memory=4GB", "sleep", "600")
    job = d.wait_status(jid, "RUNNING")
    assert sorted(g["index"] for g in job["gpus"]) == [0, 1]
    gpus = api_gpus(d)
    nv = gpus[0]["nvlink_peers"][1]
    score = pair_score(gpus, 0, 1)
    best = max(pair_score(gpus, a, b) for a in gpus for b in gpus if a < b)
    assert nv == 18 and score == best
    lines = detail(d, jid)
    assert line(lines, "Request:") == key("Request:") + \
        "rnx job run --max-memory=4GB --gpu=2 --gpu-memory=8GB sleep 600"
    assert line(lines, "Placement:") == key("Placement:") + \
        f"GPUs [0, 1] on NUMA node 0, NV18 between them; score {score} of best possible {best} (optimal)"
    i = lines.index(line(lines, "Devices:"))
    assert lines[i] == key("Devices:") + \
        "/dev/nvidia0, /dev/nvidia1, /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools"
    assert lines[i + 1] == key("") + \
        "standard: /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom, /dev/tty, /dev/pts/*"
    # over the host's /proc/driver/nvidia, or /proc/driver where the module is not loaded
    base = "/proc/driver/nvidia" if os.path.exists("/proc/driver/nvidia") else "/proc/driver"
    assert key("") + f"{base} (ro, tmpfs, the job's GPUs only)" in lines, lines
    assert key("") + "/work (rw, from " + d.work(jid) + ")" in lines
    names = line(lines, "Env names:")[len(key("Env names:")):].split(", ")
    assert {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "PATH", "JOB_ID"} <= set(names)
    assert line(lines, "Cgroup limits:").startswith(key("Cgroup limits:") + "memory 4.0 GB, pids ")
    assert events(lines) == [
        "submitted by uid 0",
        f"granted GPUs 0, 1 on NUMA node 0; score {score} of best possible {best}",
        f"started pid {job['pid']}",
    ]
    # the API's object: the same, as data
    status, body = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert status == 200
    pl = body["detail"]["placement"]
    assert (pl["gpus"], pl["numa_nodes"], pl["score"], pl["best"], pl["optimal"]) == ([0, 1], [0], score, best, True)
    assert pl["links"] == [{"gpus": [0, 1], "nvlinks": 18, "pcie": gpus[0]["pcie_levels"][1]}]
    assert [x["path"] for x in body["detail"]["spec"]["devices"] if not x["standard"]] == \
        ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    assert body["detail"]["request"]["flags"] == ["--max-memory=4GB", "--gpu=2", "--gpu-memory=8GB"]
    # only when asked for
    assert "detail" not in d.job(jid)
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)


def test_a_queued_job_shows_why_it_waited_then_its_grant(fresh_daemon):
    d = sim(fresh_daemon)
    blocker = run_id(d, "--gpu=8", "sleep", "600")
    d.wait_status(blocker, "RUNNING")
    jid = run_id(d, "--gpu=2", "--name=waiter", "sleep", "600")
    assert d.job(jid)["status"] == "QUEUED"
    d.rnx("job", "stop", blocker, check=True)
    job = d.wait_status(jid, "RUNNING")
    got = events(detail(d, jid))
    assert got[:2] == ["submitted by uid 0", "queued needs 2 GPUs; 0 free; first in line"], got
    assert got[2].startswith("granted GPUs 0, 1 on NUMA node 0; score "), got
    assert got[3:] == [f"started pid {job['pid']}"], got
    # the blocker's: stopped by root, the way it ended
    got = events(detail(d, blocker))
    assert got[-2:] == ["stopping by uid 0: SIGTERM, SIGKILL after 2s",
                        "ended STOPPED (stopped), exit code 143, signal SIGTERM; stopped by uid 0"], got
    d.rnx("job", "stop", jid, check=True)
    d.wait(jid)


def test_preemption_in_the_history(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4")
    low = run_id(d, "--gpu=4", "--preemptible", "--priority=-5", "sleep", "600")
    first = d.wait_status(low, "RUNNING")
    high = run_id(d, "--gpu=4", "--priority=10", "sleep", "600")
    d.wait_status(low, "PREEMPTED")
    d.wait_status(high, "RUNNING")
    lines = detail(d, low)
    assert not [l for l in lines if l.startswith("Placement:")]  # it holds no GPU while it waits
    got = events(lines)
    assert got[:2] == ["submitted by uid 0", "granted GPUs 0, 1, 2, 3 on NUMA nodes 0, 1; score " + got[1].split("score ")[1]]
    assert got[2:4] == [f"started pid {first['pid']}",
                        f"preempted for job {high} (priority 10 over -5): SIGTERM, SIGKILL after 2s"], got
    # what the run used, which its usage fields lose to the next run (4 GPUs for its run time)
    ran = re.fullmatch(r"requeued run 1 ended: ran ([0-9.]+) s, CPU [0-9.]+ s, memory peak [0-9.]+ MiB, "
                       r"read [0-9.]+ MiB, written [0-9.]+ MiB, ([0-9.]+) GPU-seconds; waiting in the queue again",
                       got[4])
    # both printed to 0.1 from one time: 4 x the shown run time may be 4 x 0.05 off, the GPU-seconds
    # 0.05 more (a run of 0.15 s: "ran 0.2 s", "0.6 GPU-seconds"; the sanitizer pass of run 149)
    assert ran and float(ran[2]) == pytest.approx(4 * float(ran[1]), abs=0.26), got
    assert got[5].startswith("queued needs 4 GPUs; 0 free; "), got
    d.rnx("job", "stop", high, check=True)
    again = d.wait_status(low, "RUNNING")
    got = events(detail(d, low))
    assert got[-2].startswith("granted GPUs 0, 1, 2, 3") and got[-1] == f"started pid {again['pid']}", got
    d.rnx("job", "stop", low, check=True)
    d.wait(low)


def as_user(d, *args):
    return rnx_as(d, USER, *args)


def test_a_stopped_job_shows_who_stopped_it(daemon):
    p = as_user(daemon, "job", "run", "sleep", "600")
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip()
    job = daemon.wait_status(jid, "RUNNING")
    daemon.rnx("job", "stop", jid, check=True)  # root stops a user's job
    daemon.wait(jid)
    got = events(detail(daemon, jid))
    assert got == [f"submitted by uid {USER}", f"started pid {job['pid']}",
                   "stopping by uid 0: SIGTERM, SIGKILL after 2s",
                   "ended STOPPED (stopped), exit code 143, signal SIGTERM; stopped by uid 0"], got
    # the owner sees the same history of their own job
    p = as_user(daemon, "job", "status", "--detail", jid)
    assert p.returncode == 0, p.stderr
    assert events(p.stdout.splitlines()) == got
    status, body = daemon.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert [(e["event"], e["uid"]) for e in body["detail"]["events"]] == \
        [("submitted", USER), ("started", None), ("stopping", 0), ("ended", 0)]


def test_a_secret_value_never_appears_in_the_detail(daemon):
    secret = "s3cr3t-detail-value-81f2"
    jid = run_id(daemon, "-s", f"API_TOKEN={secret}", "-e", "PLAIN=visible value", "--max-cpu=50",
                 "--max-runtime=2h30m", "--max-iobps=10MB", "sh", "-c", "exit 3")
    job = daemon.wait(jid)
    assert job["exit_code"] == 3
    text = daemon.rnx("job", "status", "--detail", jid, check=True).stdout
    js = daemon.rnx("job", "status", "--detail", "--json", jid, check=True).stdout
    status, body = daemon.api("GET", f"/v1/jobs/{jid}?detail=1")
    for out in (text, js, json.dumps(body)):
        assert secret not in out
    lines = text.splitlines()
    assert line(lines, "Request:") == key("Request:") + \
        "rnx job run '--env=PLAIN=visible value' '--secret-env=API_TOKEN=***' --max-cpu=50 --max-iobps=10MB " \
        "--max-runtime=2h30m sh -c 'exit 3'"
    assert line(lines, "Secret names:") == key("Secret names:") + "API_TOKEN (values never shown)"
    assert "PLAIN" in line(lines, "Env names:") and "API_TOKEN" not in line(lines, "Env names:")
    assert events(lines)[-1] == "ended FAILED (exit), exit code 3"
    d = json.loads(js)["detail"]
    assert d["spec"]["secret_env"] == ["API_TOKEN"]
    assert d["request"]["fields"]["secret_env"] == {"API_TOKEN": "***"}
    # --json without --detail: no detail
    assert "detail" not in json.loads(daemon.rnx("job", "status", "--json", jid, check=True).stdout)


def test_the_history_survives_kill_9_and_restart(fresh_daemon):
    d = sim(fresh_daemon)
    blocker = run_id(d, "--gpu=8", "sleep", "600")
    d.wait_status(blocker, "RUNNING")
    waiter = run_id(d, "--gpu=2", "sleep", "600")
    assert d.job(waiter)["status"] == "QUEUED"
    before_b, before_w = events(detail(d, blocker)), events(detail(d, waiter))
    assert before_w == ["submitted by uid 0", "queued needs 2 GPUs; 0 free; first in line"]
    _, pl = d.api("GET", f"/v1/jobs/{blocker}?detail=1")
    d.kill9()
    d.start()
    after_b, after_w = events(detail(d, blocker)), events(detail(d, waiter))
    shim = d.job(blocker)["shim_pid"]
    assert after_b == before_b + [f"restarted joblet restarted; re-attached to the job's shim (pid {shim})"]
    assert after_w[:3] == before_w + ["restarted joblet restarted; the job still waits (QUEUED)"]
    _, again = d.api("GET", f"/v1/jobs/{blocker}?detail=1")
    assert again["detail"]["placement"] == pl["detail"]["placement"]
    assert again["detail"]["spec"] == pl["detail"]["spec"]
    d.rnx("job", "stop", blocker, check=True)
    d.wait(blocker)
    job = d.wait_status(waiter, "RUNNING")
    assert events(detail(d, waiter))[-1] == f"started pid {job['pid']}"
    d.rnx("job", "stop", waiter, check=True)
    d.wait(waiter)


def test_detail_only_when_asked_and_in_the_help(daemon):
    jid = run_id(daemon, "true")
    daemon.wait(jid)
    a = daemon.rnx("job", "status", "--detail", jid, check=True).stdout
    assert "Events:" in a and "Request:" in a and "Placement:" not in a  # no GPU, no placement
    assert "Events:" not in daemon.rnx("job", "status", jid, check=True).stdout
    h = daemon.rnx("job", "status", "--help", check=True).stdout
    assert "Usage: rnx job status [--detail] [--json] ID" in h and "--detail" in h
