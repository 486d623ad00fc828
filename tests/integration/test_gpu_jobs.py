"""GPU jobs on a simulated machine (gpu.fixture): what a job is granted, how it waits, and that
nothing is lost across a restart. Isolation of real device nodes is tested in
test_gpu_isolation.py and tests/gpu/."""
import json
import os
import time

from conftest import ROOT

FIX = os.path.join(ROOT, "tests", "fixtures")


def sim(fresh_daemon, name="dgx-h100"):
    return fresh_daemon(f"gpu:\n  fixture: {FIX}/{name}/machine.json\n")


def test_simulated_job_gets_its_gpus_labelled(fresh_daemon):
    d = sim(fresh_daemon)
    assert "SIMULATED from a fixture" in d.log()
    p = d.rnx("job", "run", "--gpu=2", "--follow", "sh", "-c",
              "echo CVD=$CUDA_VISIBLE_DEVICES NVD=$NVIDIA_VISIBLE_DEVICES SIM=$JOBLET_GPUS_SIMULATED")
    assert p.returncode == 0, p.stderr
    with open(f"{FIX}/dgx-h100/machine.json") as f:
        gpus = sorted(json.load(f)["gpus"], key=lambda g: g["bus_id"])
    assert p.stdout.strip() == f"CVD=0,1 NVD={gpus[0]['uuid']},{gpus[1]['uuid']} SIM=1"
    job = json.loads(d.rnx("job", "list", "--json", check=True).stdout)[-1]
    assert [g["index"] for g in job["gpus"]] == [0, 1]
    assert all(g["simulated"] for g in job["gpus"])
    assert job["gpu_request"] == {"count": 2, "memory_mb": None, "ids": None, "all": False, "caps": None,
                                  "optional": False, "degraded": None, "mig": None, "type": None, "cc": None,
                                  "share": False, "cross_numa": True}
    st = d.rnx("job", "status", job["id"], check=True).stdout
    assert "GPUs: [0, 1] (2 GPUs allocated" in st
    assert st.count("[simulated]") == 2
    lst = d.rnx("gpu", "list", check=True).stdout
    assert lst.startswith("SIMULATED GPUs")
    assert lst.count("[simulated]") == 8


def test_gang_allocation_waits_and_never_oversubscribes(fresh_daemon):
    d = sim(fresh_daemon)
    a = d.submit("sleep", "30", gpu_count=6)
    d.wait_status(a, "RUNNING")
    b = d.submit("true", gpu_count=4)
    c = d.submit("true")  # no GPU: not held back by b
    assert d.wait(c)["status"] == "COMPLETED"
    jb = d.job(b)
    assert jb["status"] == "QUEUED" and jb["gpus"] == [] and jb["queue_position"] == 1
    assert jb["wait_reason"] == "needs 4 GPUs; 2 free; first in line: GPUs 6,7 are reserved for it"
    assert "Waiting: needs 4 GPUs; 2 free" in d.rnx("job", "status", b, check=True).stdout
    held = {g["index"] for g in d.job(a)["gpus"]}
    assert len(held) == 6
    gl = json.loads(d.rnx("gpu", "list", "--json", check=True).stdout)["gpus"]
    assert sum(1 for g in gl if g["job"] == a) == 6 and sum(1 for g in gl if g["job"] is None) == 2
    d.rnx("job", "stop", a, check=True)
    jb = d.wait(b)
    assert jb["status"] == "COMPLETED" and len(jb["gpus"]) == 4
    time.sleep(0.2)
    gl = json.loads(d.rnx("gpu", "list", "--json", check=True).stdout)["gpus"]
    assert all(g["state"] == "available" for g in gl)


def test_gpu_memory_minimum(fresh_daemon):
    d = sim(fresh_daemon, "mixed")
    # 2 A100 40GB + 2 T4 16GB: three GPUs of 20 GB can never exist here
    p = d.rnx("job", "run", "--gpu=3", "--gpu-memory=20GB", "true")
    assert p.returncode == 1
    # the memory is what no three GPUs here have: the refusal names --gpu-memory (issue 26)
    assert "--gpu-memory: asks for 3 GPUs with at least 20480 MB each; this machine has 2 such GPUs of 4" in p.stderr
    j, _, _ = d.run("true", gpu_count=2, gpu_memory_mb=20480)
    assert {g["name"] for g in j["gpus"]} == {"NVIDIA A100-SXM4-40GB"}
    for bad, msg in [("--gpu=65", "--gpu: '65' must be a number of GPUs from 0 to 64"),
                     ("--gpu=two", "--gpu: 'two' must be a number"),
                     ("--gpu-memory=lots", "--gpu-memory")]:
        p = d.rnx("job", "run", "--gpu=1", bad, "true") if "memory" in bad else d.rnx("job", "run", bad, "true")
        assert p.returncode == 2 and msg in p.stderr, (bad, p.stderr)
    status, err = d.api("POST", "/v1/jobs", {"command": "true", "gpu_memory_mb": 100})
    assert status == 400 and err["error"]["field"] == "gpu_memory_mb"
    status, err = d.api("POST", "/v1/jobs", {"command": "true", "gpu_count": 99})
    assert status == 400 and err["error"]["field"] == "gpu_count"


def test_grants_survive_a_daemon_crash(fresh_daemon):
    d = sim(fresh_daemon)
    a = d.submit("sleep", "5", gpu_count=8)
    d.wait_status(a, "RUNNING")
    b = d.submit("true", gpu_count=1)
    d.kill9()
    d.start()
    # a still holds all eight GPUs: b must wait, not double-book one
    assert d.job(b)["status"] == "QUEUED"
    gl = json.loads(d.rnx("gpu", "list", "--json", check=True).stdout)["gpus"]
    assert all(g["job"] == a for g in gl)
    assert d.wait(a)["status"] == "COMPLETED"
    jb = d.wait(b)
    assert jb["status"] == "COMPLETED" and len(jb["gpus"]) == 1
    assert len(d.job(a)["gpus"]) == 8  # history keeps what it had


ENV_PROBE = "echo CVD=$CUDA_VISIBLE_DEVICES NVD=$NVIDIA_VISIBLE_DEVICES CAPS=$NVIDIA_DRIVER_CAPABILITIES"


def bus_sorted(name):
    with open(f"{FIX}/{name}/machine.json") as f:
        return sorted(json.load(f)["gpus"], key=lambda g: g["bus_id"])


def test_ways_to_ask_for_gpus(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4")
    gpus = bus_sorted("a100-pcie-4")
    uuids = [g["uuid"] for g in gpus]
    # --gpu=all: every GPU, numbered 0..n-1 inside
    p = d.rnx("job", "run", "--gpu=all", "--follow", "sh", "-c", ENV_PROBE, check=True)
    assert p.stdout.strip() == f"CVD=0,1,2,3 NVD={','.join(uuids)} CAPS=compute,utility"
    # --gpu-ids by index and by UUID: exactly those, in bus order; caps as asked
    p = d.rnx("job", "run", f"--gpu-ids=3,{uuids[1]}", "--gpu-caps=compute,utility,video", "--follow", "sh", "-c",
              ENV_PROBE, check=True)
    assert p.stdout.strip() == f"CVD=0,1 NVD={uuids[1]},{uuids[3]} CAPS=compute,utility,video"
    job = json.loads(d.rnx("job", "list", "--json", check=True).stdout)[-1]
    assert [g["index"] for g in job["gpus"]] == [1, 3]
    assert job["gpu_request"]["ids"] == [uuids[3], uuids[1]]
    st = d.rnx("job", "status", job["id"], check=True).stdout
    assert "GPUs: [1, 3] (2 GPUs allocated" in st
    assert f"GPU 3  {uuids[3]}  NVIDIA A100-PCIE-40GB  40960 MiB" in st
    # NVIDIA_VISIBLE_DEVICES=void: no GPU, and the variable is left as given
    p = d.rnx("job", "run", "-e", "NVIDIA_VISIBLE_DEVICES=void", "--follow", "sh", "-c", ENV_PROBE, check=True)
    assert p.stdout.strip() == "CVD= NVD=void CAPS="
    assert json.loads(d.rnx("job", "list", "--json", check=True).stdout)[-1]["gpus"] == []


def test_bad_gpu_requests_are_refused_with_the_reason(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4")
    before = d.job_count()
    cases = [
        (["--gpu=65"], 2, "--gpu: '65' must be a number of GPUs from 0 to 64, or all"),
        (["--gpu=-1"], 2, "--gpu: '-1' must be a number of GPUs"),
        (["--gpu=abc"], 2, "--gpu: 'abc' must be a number of GPUs"),
        (["--gpu=1", "--gpu-memory=8XB"], 2, "--gpu-memory"),
        (["--gpu=5"], 1, "--gpu: asks for 5 GPUs; this machine has 4 usable GPUs"),
        (["--gpu=1", "--gpu-memory=80GB"], 1, "--gpu-memory: asks for 1 GPU with at least 81920 MB each; this machine has 0 such GPUs of 4"),
        (["--gpu-ids=7"], 1, "--gpu-ids: no GPU '7' on this machine; give an index from 0 to 3 or a UUID"),
        (["--gpu-ids=GPU-nope"], 1, "--gpu-ids: no GPU 'GPU-nope'"),
        (["--gpu-ids=1,1"], 1, "--gpu-ids: GPU 1 is listed twice"),
        (["--gpu-ids=+1"], 1, "--gpu-ids: no GPU '+1' on this machine"),
        (["--gpu-ids=-0"], 1, "--gpu-ids: no GPU '-0' on this machine"),
        (["--gpu=2", "--gpu-ids=1"], 1, "--gpu-ids: names 1 GPU but --gpu asks for 2"),
        (["--gpu=1", "--gpu-caps=compute,warp"], 2, "--gpu-caps: 'warp' is not a driver capability"),
        (["--gpu-memory=4GB"], 2, "--gpu-memory: qualifies a GPU request, but the job asks for no GPU"),
        (["--gpu=1", "-e", "NVIDIA_VISIBLE_DEVICES=none"], 2, "asks for no GPU, but the job also asks for GPUs"),
    ]
    for flags, rc, msg in cases:
        p = d.rnx("job", "run", *flags, "true")
        assert p.returncode == rc and msg in p.stderr, (flags, p.returncode, p.stderr)
    assert d.job_count() == before


def test_gpu_optional_runs_without_and_says_so(fresh_daemon):
    d = sim(fresh_daemon, "mixed")
    p = d.rnx("job", "run", "--gpu=8", "--gpu-optional", "--follow", "sh", "-c", "echo CVD=$CUDA_VISIBLE_DEVICES")
    assert p.returncode == 0 and p.stdout.strip() == "CVD="
    job = json.loads(d.rnx("job", "list", "--json", check=True).stdout)[-1]
    assert job["gpus"] == [] and job["gpu_request"]["optional"] is True
    assert "asks for 8 GPUs; this machine has 4 usable GPUs" in job["gpu_request"]["degraded"]
    st = d.rnx("job", "status", job["id"], check=True).stdout
    assert "GPU request: none granted (--gpu-optional): asks for 8 GPUs" in st
    # optional does not mean "skip the queue": GPUs that exist but are busy are waited for
    a = d.submit("sleep", "30", gpu_count=4)
    d.wait_status(a, "RUNNING")
    b = d.submit("true", gpu_count=1, gpu_optional=True)
    assert d.job(b)["status"] == "QUEUED"
    d.api("POST", f"/v1/jobs/{a}/stop")
    assert len(d.wait(b)["gpus"]) == 1


def test_placement_follows_the_interconnect(fresh_daemon):
    d = sim(fresh_daemon, "dgx1-v100")
    # four GPUs on the cube mesh: a quad where every pair is NVLinked
    a = d.submit("sleep", "30", gpu_count=4)
    d.wait_status(a, "RUNNING")
    quad = sorted(g["index"] for g in d.job(a)["gpus"])
    inv = json.loads(d.rnx("gpu", "list", "--json", check=True).stdout)["gpus"]
    assert all(inv[i]["nvlink_peers"][j] > 0 for i in quad for j in quad if i != j), quad
    # a pair from what is left: an NV2 pair
    b = d.submit("sleep", "30", gpu_count=2)
    d.wait_status(b, "RUNNING")
    i, j = sorted(g["index"] for g in d.job(b)["gpus"])
    assert inv[i]["nvlink_peers"][j] == 2, (i, j)
    for x in (a, b):
        d.api("POST", f"/v1/jobs/{x}/stop")
        d.wait(x)


def test_priority_orders_the_gpu_queue(fresh_daemon):
    d = sim(fresh_daemon, "a100-pcie-4")
    a = d.submit("sleep", "30", gpu_count=4)
    d.wait_status(a, "RUNNING")
    low = d.submit("sleep", "30", gpu_count=4)
    high = d.rnx("job", "run", "--priority=10", "--gpu=4", "sleep", "30", check=True).stdout.strip()
    assert d.job(high)["queue_position"] == 1 and d.job(low)["queue_position"] == 2
    assert d.job(high)["priority"] == 10
    d.api("POST", f"/v1/jobs/{a}/stop")
    d.wait_status(high, "RUNNING")
    assert d.job(low)["status"] == "QUEUED"
    p = d.rnx("job", "run", "--priority=5000", "true")
    assert p.returncode == 2 and "--priority: '5000' must be a whole number from -1000 to 1000" in p.stderr
    for j in (high, low):
        d.api("POST", f"/v1/jobs/{j}/stop")
        d.wait(j)
