"""docs/sandbox.md typed as written: each test is a claim of the document that the program did not
keep (or a message a new user could not act on), checked through rnx against a real daemon."""
import json
import os
import shutil

import pytest

from conftest import ROOT, rnx_as

RUNSC = shutil.which("runsc") or ("/usr/bin/runsc" if os.path.exists("/usr/bin/runsc") else None)
needs_runsc = pytest.mark.skipif(RUNSC is None, reason="runsc is not installed (scripts/install-deps.sh installs it)")


@needs_runsc
def test_status_detail_shows_a_gvisor_jobs_sandbox_uid(daemon):
    """docs/sandbox.md, "Host uids": "`rnx job status --detail` shows it as `sandbox_uid`"; the
    text view printed the job's uid only (the sandbox uid was in --json alone)."""
    d = daemon
    jid = d.submit("true", isolation="gvisor")
    d.wait(jid, timeout=60)
    status, o = d.api("GET", f"/v1/jobs/{jid}?detail=1")
    assert status == 200, o
    sb = o["detail"]["spec"]["sandbox_uid"]
    assert sb and sb > 0, o["detail"]["spec"]
    p = d.rnx("job", "status", "--detail", jid, check=True)
    assert f"Sandbox uid: {sb} " in p.stdout, p.stdout
    # a native job has none, and says nothing of one
    nid = d.submit("true")
    d.wait(nid)
    p = d.rnx("job", "status", "--detail", nid, check=True)
    assert "Sandbox uid" not in p.stdout, p.stdout


@needs_runsc
def test_a_gpu_refusal_for_a_user_who_must_be_sandboxed_offers_no_native_way_out(fresh_daemon):
    """docs/sandbox.md, "Users who must be sandboxed" and "GPUs: nvproxy": a user whom
    isolation.require_gvisor names, asking for a GPU on a runsc without nvproxy, was told to "run
    the job with --isolation=native", which the same rule refuses them; the refusal now names the
    rule and what they can do instead. Anyone else keeps the native advice."""
    fixture = os.path.join(ROOT, "tests", "fixtures", "dgx-h100", "machine.json")
    d = fresh_daemon(f"gpu:\n  fixture: {fixture}\nisolation:\n  require_gvisor: \"nobody\"\n")
    if d.api("GET", "/v1/version")[1]["isolation"]["modes"][1].get("nvproxy"):
        pytest.skip("this runsc has nvproxy: a GPU job under gVisor is not refused")
    p = rnx_as(d, 65534, "job", "run", "--gpu=1", "nvidia-smi")
    assert p.returncode != 0, p.stdout
    assert "isolation: a GPU job under gVisor needs runsc with nvproxy" in p.stderr, p.stderr
    assert "--isolation=native" not in p.stderr, p.stderr
    assert "isolation.require_gvisor lists 'nobody'" in p.stderr and "without GPUs" in p.stderr, p.stderr
    # its -t refusal the same: no native way out
    p = rnx_as(d, 65534, "job", "run", "-t", "true")
    assert p.returncode != 0 and "tty: a job under gVisor cannot have a terminal" in p.stderr, p.stderr
    assert "--isolation=native" not in p.stderr, p.stderr
    # root is not listed: native is a way out for it, and it is told so
    p = d.rnx("job", "run", "--isolation=gvisor", "--gpu=1", "nvidia-smi")
    assert p.returncode != 0 and "run the job with --isolation=native" in p.stderr, p.stderr
    # the same when a waiting job of theirs is changed to ask for a GPU (rnx job update --gpu):
    # the update's refusal offered native to them too
    p = rnx_as(d, 65534, "job", "run", "--hold", "--name=later", "true")
    assert p.returncode == 0, p.stderr
    p = rnx_as(d, 65534, "job", "update", "later", "--gpu=1")
    assert p.returncode != 0 and "needs runsc with nvproxy" in p.stderr, p.stderr
    assert "--isolation=native" not in p.stderr and "isolation.require_gvisor lists 'nobody'" in p.stderr, p.stderr


def test_device_with_other_gpu_ids_is_refused_not_dropped(fresh_daemon):
    """docs/sandbox.md, "--device / devices:": "giving --gpu, --gpu-mig or different --gpu-ids
    besides is refused". --device=nvidia.com/gpu=1 --gpu-ids=2 was accepted and the job got GPU 2:
    the device it named was dropped without a word. Now refused on the field devices; the same
    GPU both ways stays accepted."""
    fixture = os.path.join(ROOT, "tests", "fixtures", "dgx-h100", "machine.json")
    d = fresh_daemon(f"gpu:\n  fixture: {fixture}\n")
    p = d.rnx("job", "run", "--device=nvidia.com/gpu=1", "--gpu-ids=2", "true")
    assert p.returncode != 0, p.stdout
    assert "--device: names other GPUs than --gpu-ids" in p.stderr, p.stderr
    status, o = d.api("POST", "/v1/jobs", {"command": "true", "devices": ["nvidia.com/gpu=1"], "gpu_ids": ["1", "2"]})
    assert status == 400 and "devices" in json.dumps(o), (status, o)
    p = d.rnx("job", "run", "--device=nvidia.com/gpu=1", "--gpu-ids=1", "true")
    assert p.returncode == 0, p.stderr
    job = d.wait(p.stdout.strip())
    assert job["status"] == "COMPLETED", job
    # the same GPU by its UUID one way and its index the other is the same GPU (before: refused,
    # the two compared as written)
    uuid = d.api("GET", "/v1/gpus/1")[1]["uuid"]
    p = d.rnx("job", "run", f"--device=nvidia.com/gpu={uuid}", "--gpu-ids=1", "true")
    assert p.returncode == 0, p.stderr
    job = d.wait(p.stdout.strip())
    assert job["status"] == "COMPLETED" and [g["index"] for g in job["gpus"]] == [1], job
    p = d.rnx("job", "run", f"--device=nvidia.com/gpu={uuid}", "--gpu-ids=2", "true")
    assert p.returncode != 0 and "--device: names other GPUs than --gpu-ids" in p.stderr, p.stderr


def test_workflow_run_notes_a_script_it_does_not_upload(daemon, tmp_path):
    """docs/sandbox.md's workflow (command python3, args [grade.py]) typed as written, grade.py
    beside it, failed with "can't open file '/work/grade.py'" and no word from rnx workflow run,
    where rnx job run says "'grade.py' is a file here ... (add --upload grade.py)". Now the
    workflow says so too, naming the job and its uploads: key (the file's directory, not rnx's)."""
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "grade.py").write_text('print("graded")\n')
    (flow / "wf.yml").write_text("jobs:\n  grade:\n    command: python3\n    args: [grade.py]\n")
    p = daemon.rnx("workflow", "run", str(flow / "wf.yml"), check=True)
    assert ("rnx: note: job 'grade': 'grade.py' is a file beside the workflow, but the job's /work holds only "
            "its uploads (add it to the job's uploads: [grade.py])") in p.stderr, p.stderr
    (flow / "wf.yml").write_text("jobs:\n  grade:\n    command: python3\n    args: [grade.py]\n"
                                 "    uploads: [grade.py]\n")
    p = daemon.rnx("workflow", "run", str(flow / "wf.yml"), check=True)
    assert "note" not in p.stderr, p.stderr
