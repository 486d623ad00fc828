"""NVIDIA's variables mean what they mean in NVIDIA's container toolkit (issue 15):
NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES given with -e are the job's GPU request;
given with the job's own GPU flags they must agree (else refused with both named); and the job
sees the values that describe what it really got."""
import json
import os

import pytest

from conftest import ROOT

FIX = os.path.join(ROOT, "tests", "fixtures")
SHOW = "echo NVD=$NVIDIA_VISIBLE_DEVICES CAPS=$NVIDIA_DRIVER_CAPABILITIES CVD=$CUDA_VISIBLE_DEVICES"


@pytest.fixture(scope="module")
def sim():
    from conftest import Daemon, need_root
    need_root()
    d = Daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n").start()
    with open(f"{FIX}/dgx-h100/machine.json") as f:
        d.uuids = [g["uuid"] for g in sorted(json.load(f)["gpus"], key=lambda g: g["bus_id"])]
    yield d
    d.cleanup()


def run(d, *args):
    p = d.rnx("job", "run", "--follow", *args, "sh", "-c", SHOW)
    job = json.loads(d.rnx("job", "list", "--json", check=True).stdout)[-1]
    return p, job


def test_all_asks_for_every_gpu(sim):
    p, job = run(sim, "-e", "NVIDIA_VISIBLE_DEVICES=all")
    assert p.returncode == 0, p.stderr
    assert job["gpu_request"]["all"] is True and len(job["gpus"]) == 8, job["gpu_request"]
    assert p.stdout.strip() == f"NVD={','.join(sim.uuids)} CAPS=compute,utility CVD=0,1,2,3,4,5,6,7"
    assert job["env"]["NVIDIA_VISIBLE_DEVICES"] == "all"    # the request as submitted, kept


def test_indices_and_uuids_ask_for_those_gpus(sim):
    p, job = run(sim, "-e", "NVIDIA_VISIBLE_DEVICES=2,3")
    assert p.returncode == 0, p.stderr
    assert sorted(g["index"] for g in job["gpus"]) == [2, 3], job["gpus"]
    assert p.stdout.strip() == f"NVD={sim.uuids[2]},{sim.uuids[3]} CAPS=compute,utility CVD=0,1"
    p, job = run(sim, "-e", f"NVIDIA_VISIBLE_DEVICES={sim.uuids[5]}")
    assert p.returncode == 0, p.stderr
    assert [g["index"] for g in job["gpus"]] == [5], job["gpus"]


def test_void_none_and_empty_ask_for_no_gpu(sim):
    for v in ("void", "none", ""):
        p, job = run(sim, "-e", f"NVIDIA_VISIBLE_DEVICES={v}")
        assert p.returncode == 0, p.stderr
        assert job["gpus"] == [] and job["gpu_request"]["all"] is False, job
        assert p.stdout.strip() == f"NVD={v} CAPS= CVD=", (v, p.stdout)


def test_a_contradiction_with_the_gpu_flags_is_refused_with_both_named(sim):
    p = sim.rnx("job", "run", "--gpu=2", "-e", "NVIDIA_VISIBLE_DEVICES=5,6", "true")
    assert p.returncode == 2   # rnx finds it, naming the flag typed (test_user_journey_small.py)
    assert "--env: NVIDIA_VISIBLE_DEVICES=5,6 asks for those GPUs, but the job also asks for --gpu 2; " \
           "drop one of the two" in p.stderr, p.stderr
    p = sim.rnx("job", "run", "--gpu-ids=1", "-e", "NVIDIA_VISIBLE_DEVICES=all", "true")
    assert p.returncode == 2 and "--env: NVIDIA_VISIBLE_DEVICES=all asks for every GPU, but the job also asks " \
           "for --gpu-ids 1; drop one of the two" in p.stderr, p.stderr
    p = sim.rnx("job", "run", "--gpu=1", "-e", "NVIDIA_VISIBLE_DEVICES=none", "true")
    assert "NVIDIA_VISIBLE_DEVICES=none asks for no GPU, but the job also asks for GPUs" in p.stderr, p.stderr
    p = sim.rnx("job", "run", "-e", "NVIDIA_VISIBLE_DEVICES=0,gpu7", "true")
    assert "env: NVIDIA_VISIBLE_DEVICES=0,gpu7: 'gpu7' is neither a GPU index nor a GPU or MIG UUID" in p.stderr
    # agreeing with the flags is not a contradiction
    p, job = run(sim, "--gpu-ids=4", "-e", "NVIDIA_VISIBLE_DEVICES=4")
    assert p.returncode == 0 and [g["index"] for g in job["gpus"]] == [4], (p.stderr, job["gpus"])


def test_driver_capabilities_are_the_caps_request(sim):
    p, job = run(sim, "--gpu=1", "-e", "NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics")
    assert p.returncode == 0, p.stderr
    assert job["gpu_request"]["caps"] == "compute,utility,graphics", job["gpu_request"]
    assert "CAPS=compute,utility,graphics" in p.stdout
    p = sim.rnx("job", "run", "--gpu=1", "--gpu-caps=compute", "-e", "NVIDIA_DRIVER_CAPABILITIES=video", "true")
    assert p.returncode == 2 and "--env: NVIDIA_DRIVER_CAPABILITIES=video, but the job also asks for --gpu-caps " \
        "compute; drop one of the two" in p.stderr, p.stderr
    p = sim.rnx("job", "run", "--gpu=1", "-e", "NVIDIA_DRIVER_CAPABILITIES=warp", "true")
    assert "env: NVIDIA_DRIVER_CAPABILITIES=warp: 'warp' is not a driver capability" in p.stderr, p.stderr
    # without GPUs the variable asks for nothing and is passed on as given
    p, job = run(sim, "-e", "NVIDIA_DRIVER_CAPABILITIES=video")
    assert p.returncode == 0 and job["gpus"] == [] and "CAPS=video" in p.stdout, (p.stderr, p.stdout)


def test_a_workflows_environment_is_a_request_too(sim, tmp_path):
    """`environment: {NVIDIA_VISIBLE_DEVICES: ...}` of a workflow job asks for those GPUs, as -e
    does; a contradiction with its gpu_count is refused naming the job and both."""
    f = tmp_path / "wf.yaml"
    f.write_text("name: nv\njobs:\n  a:\n    command: sh\n    args: [-c, '" + SHOW + "']\n"
                 "    environment:\n      NVIDIA_VISIBLE_DEVICES: '4,5'\n"
                 "      NVIDIA_DRIVER_CAPABILITIES: 'compute,utility,video'\n")
    p = sim.rnx("workflow", "run", "--follow", str(f))
    assert p.returncode == 0, p.stderr
    job = json.loads(sim.rnx("job", "list", "--json", check=True).stdout)[-1]
    assert sorted(g["index"] for g in job["gpus"]) == [4, 5], job["gpus"]
    assert job["gpu_request"]["caps"] == "compute,utility,video"
    assert sim.output(job["id"]).strip() == f"NVD={sim.uuids[4]},{sim.uuids[5]} CAPS=compute,utility,video CVD=0,1"
    f.write_text("name: nv\njobs:\n  a:\n    command: 'true'\n    resources:\n      gpu_count: 1\n"
                 "    environment:\n      NVIDIA_VISIBLE_DEVICES: '4,5'\n")
    p = sim.rnx("workflow", "run", str(f))
    assert p.returncode != 0
    assert "NVIDIA_VISIBLE_DEVICES" in p.stderr and "gpu_count" in p.stderr, p.stderr
