"""The examples of the GPU documents (docs/gpu.md, health.md, metrics.md, scheduler.md, runtimes.md,
sandbox.md) as a user types them, on a simulated DGX H100 (gpu.fixture): where what rnx says
differed from the documents, or would puzzle someone used to Docker, NVIDIA's container toolkit
or Slurm, the case that showed it."""
import json
import os
import re

import pytest

from conftest import ROOT, Daemon, need_root

FIX = os.path.join(ROOT, "tests", "fixtures")


@pytest.fixture(scope="module")
def dgx():
    need_root()
    d = Daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n").start()
    yield d
    d.cleanup()


def test_nvidia_visible_devices_refusal_names_the_variable_not_gpu_ids(dgx):
    """`-e NVIDIA_VISIBLE_DEVICES=9` (docs/gpu.md, "NVIDIA's variables as the request") is refused
    naming the variable the user gave, as nvidia-container-cli names it, not --gpu-ids, a flag
    the user never typed."""
    p = dgx.rnx("job", "run", "-e", "NVIDIA_VISIBLE_DEVICES=9", "true")
    assert p.returncode == 1, p.stderr
    assert p.stderr == ("rnx: --env: NVIDIA_VISIBLE_DEVICES=9: no GPU '9' on this machine; give an index from 0 to 7 "
                        "or a UUID (rnx gpu list)\n")
    p = dgx.rnx("job", "run", "-e", "NVIDIA_VISIBLE_DEVICES=1,1", "true")
    assert p.returncode == 1 and p.stderr == "rnx: --env: NVIDIA_VISIBLE_DEVICES=1,1: GPU 1 is listed twice\n", p.stderr
    # --gpu-ids itself keeps its own name
    p = dgx.rnx("job", "run", "--gpu-ids=9", "true")
    assert p.returncode == 1 and p.stderr.startswith("rnx: --gpu-ids: no GPU '9' on this machine"), p.stderr


def test_detail_gpu_usage_of_a_simulated_gpu_says_it_is_not_sampled(dgx):
    """`rnx job status --detail` (docs/gpu.md: "its GPUs' live use") on a simulated GPU printed
    `GPU usage: GPU 0: now`, a line with no figure in it; it says why there is none."""
    jid = dgx.rnx("job", "run", "--gpu=2", "sleep", "60", check=True).stdout.strip()
    try:
        dgx.wait_status(jid, "RUNNING")
        out = dgx.rnx("job", "status", "--detail", jid, check=True).stdout
        assert "GPU usage: GPU 0: not sampled (simulated GPUs have no health monitor)\n" \
               "  GPU 1: not sampled (simulated GPUs have no health monitor)\n" in out, out
        assert ": now" not in out, out
    finally:
        dgx.rnx("job", "stop", jid)


def test_audit_refusals_name_the_flag(dgx):
    """docs/health.md's `rnx audit --user alice --job 1f2e3d4c --json` on a machine without alice:
    the refusal names --user, the flag typed, not the API's query key `user`."""
    p = dgx.rnx("audit", "--user", "alice", "--job", "1f2e3d4c", "--json")
    assert p.returncode == 1 and p.stderr == "rnx: --user: 'alice' is neither a user name nor a uid\n", p.stderr
    p = dgx.rnx("audit", "--since", "yesterday")
    assert p.returncode == 1 and p.stderr.startswith("rnx: --since: 'yesterday' is not a time; give RFC 3339"), p.stderr
    p = dgx.rnx("audit", "--gpu", "12")
    assert p.returncode == 1 and p.stderr == ("rnx: --gpu: no GPU '12': give an index from 0 to 7 or a UUID "
                                              "(rnx gpu list)\n"), p.stderr


def test_audit_since_and_until_take_a_duration_as_job_list_does(dgx):
    """`rnx job list --since 2h` takes a duration (docs/cli.md); `rnx audit --since 2h` was refused
    ("is not a time; give RFC 3339"): both take one now, that long ago, for --until too."""
    jid = dgx.rnx("job", "run", "--gpu=1", "true", check=True).stdout.strip()
    dgx.wait(jid)
    recs = lambda *a: [r["action"] for r in json.loads(dgx.rnx("audit", "--job", jid, "--json", *a,
                                                               check=True).stdout)]
    assert "allocate" in recs("--since", "2h"), recs()
    assert recs("--until", "1h") == []
    assert "or a duration, that long ago" in dgx.rnx("audit", "--help", check=True).stdout


def test_no_gpu_is_named_without_a_range_on_a_machine_without_gpus(fresh_daemon):
    """On a machine without GPUs, naming one said "give an index from 0 to -1"; it says there is
    none (rnx audit --gpu 3, docs/health.md; rnx gpu drain 0)."""
    d = fresh_daemon("gpu:\n  enabled: false\n")
    p = d.rnx("audit", "--gpu", "3")
    assert p.returncode == 1 and p.stderr == "rnx: --gpu: no GPU '3': this machine has no GPUs joblet can use\n", \
        p.stderr
    # -e NVIDIA_VISIBLE_DEVICES (docs/gpu.md) is named as in test_nvidia_visible_devices_refusal_...:
    # "No GPUs available" named --gpu, which the user never typed
    for v in ("all", "0"):
        p = d.rnx("job", "run", "-e", f"NVIDIA_VISIBLE_DEVICES={v}", "true")
        assert p.returncode == 1 and p.stderr.startswith(f"rnx: --env: NVIDIA_VISIBLE_DEVICES={v}: No GPUs available: "
                                                         "this machine has no GPU joblet can use"), p.stderr
    p = d.rnx("gpu", "drain", "0")
    assert p.returncode == 1 and "-1" not in p.stderr and "this machine has no GPUs joblet can use" in p.stderr, \
        p.stderr


def test_every_wait_reason_code_has_a_row_in_the_scheduler_doc():
    """docs/scheduler.md's "Wait reasons" table says its codes are `enum sched_wait`; it lacked five
    of them (SW_USER_RUNNING, which a user of limits.max_running_per_user meets first among them,
    SW_ARRAY_THROTTLE, SW_NET_FULL, SW_UNSAVED, SW_ACCOUNT_LOOKUP): every code but the two that
    are no wait (SW_STARTS, SW_SCHEDULED: scheduled_at says when) has its row."""
    with open(os.path.join(ROOT, "src", "sched", "sched.h")) as f:
        enum = re.search(r"enum sched_wait \{(.*?)\};", f.read(), re.S).group(1)
    codes = re.findall(r"^\s*(SW_[A-Z_]+),", enum, re.M)
    assert "SW_USER_RUNNING" in codes and len(codes) > 10, codes
    with open(os.path.join(ROOT, "docs", "scheduler.md")) as f:
        doc = f.read()
    table = doc[doc.index("## Wait reasons"):doc.index("## A worked example")]
    rows = re.findall(r"^\| `(SW_[A-Z_]+)` \|", table, re.M)
    assert sorted(rows) == sorted(c for c in codes if c not in ("SW_STARTS", "SW_SCHEDULED")), rows
