"""A job's command is resolved in the job's root at submission (docs/api.md, "command"): along
its PATH in the host's system directories or in its runtime's tree, or among its uploads in
/work. One that cannot be found is refused before anything is created or granted, naming what
exists instead; a command under /volumes/ (made by an earlier job) is not checked."""
import json
import os
import shutil

import pytest

import busybox_runtime
from conftest import ROOT

FIX = os.path.join(ROOT, "tests", "fixtures")
SYSTEM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

pytestmark = pytest.mark.skipif(not os.path.exists(busybox_runtime.BUSYBOX),
                                reason="busybox-static is not installed (scripts/install-deps.sh installs it)")


def host_has(name):
    """Whether a job without a runtime finds name along the default PATH."""
    return any(os.access(os.path.join(d, name), os.X_OK) for d in SYSTEM_DIRS)


@pytest.fixture
def sim_daemon(fresh_daemon):
    """A simulated DGX H100 with two busybox runtimes: 'busybox', and 'pybox' whose tree also has
    a `python` (a shell script: its name is what is looked for)."""
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n", start=False)
    rts = os.path.join(d.state, "runtimes")
    busybox_runtime.make(rts)
    root = busybox_runtime.make(rts, name="pybox")
    with open(os.path.join(root, "usr/bin/python"), "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    os.chmod(os.path.join(root, "usr/bin/python"), 0o755)
    d.start()
    return d


def refused(d, body):
    code, err = d.api("POST", "/v1/jobs", body)
    assert code == 400, (code, err)
    assert err["error"]["field"] == "command", err
    return err["error"]["message"]


def test_missing_command_refused_before_any_gpu_naming_alternatives(sim_daemon):
    d = sim_daemon
    name = "python" if not host_has("python") else "jcm-nonexistent"
    p = d.rnx("job", "run", "--gpu=1", name, "x.py")
    assert p.returncode != 0
    assert p.stderr.startswith("rnx: command: "), p.stderr
    assert f"'{name}'" in p.stderr
    if name == "python":
        assert host_has("python3")
        assert "python3 exists" in p.stderr, p.stderr          # what the host has instead
        assert "pybox" in p.stderr and "busybox," not in p.stderr, p.stderr  # the runtimes with python
    # nothing was created, and no GPU was ever granted
    assert d.job_count() == 0 and d.job_dirs() == []
    code, a = d.api("GET", "/v1/audit")
    assert code == 200 and not [r for r in a["records"] if r.get("job_id")], a
    assert all(g["state"] != "allocated" for g in d.api("GET", "/v1/gpus")[1]["gpus"])
    # the same command in the runtime that has it is accepted and runs
    p = d.rnx("job", "run", "--runtime=pybox", "--follow", *(["python", "x.py"] if name == "python" else ["sh", "-c", "echo ran"]))
    assert p.returncode == 0 and p.stdout == "ran\n", p.stderr


def test_resolved_in_the_jobs_own_root_and_path(sim_daemon):
    d = sim_daemon
    assert host_has("python3")
    # the host has python3, the busybox runtime does not: the runtime's tree is what counts
    msg = refused(d, {"command": "python3", "args": ["-c", "1"], "runtime": "busybox"})
    assert "runtime 'busybox'" in msg and "'python3'" in msg, msg
    # an absolute path is looked up in the same root
    msg = refused(d, {"command": "/usr/bin/python3", "runtime": "busybox"})
    assert "/usr/bin/python3" in msg, msg
    # the job's own PATH is the one searched
    msg = refused(d, {"command": "sh", "env": {"PATH": "/nonexistent:/etc"}})
    assert "PATH=/nonexistent:/etc" in msg, msg
    # a directory or a file without execute permission is no command either
    refused(d, {"command": "/usr/bin"})
    plain = next(f for f in ("/etc/passwd", "/etc/group", "/etc/hosts", "/etc/os-release")
                 if os.path.isfile(f) and not os.stat(f).st_mode & 0o111)
    assert "execute" in refused(d, {"command": plain})
    # a path outside the system directories the job sees (the host's /root is not in the job)
    refused(d, {"command": os.path.realpath(shutil.which("python3") or "/usr/bin/python3")
                .replace("/usr/bin", "/root/.nope")})
    assert d.job_count() == 0 and d.job_dirs() == []
    # what exists is accepted, in each root
    for body in ({"command": "sh", "args": ["-c", "true"]},
                 {"command": "/bin/sh", "args": ["-c", "true"]},
                 {"command": "sh", "args": ["-c", "true"], "runtime": "busybox"},
                 {"command": "/bin/sh", "args": ["-c", "true"], "runtime": "busybox"},
                 {"command": "sh", "args": ["-c", "true"], "env": {"PATH": "/nonexistent:/bin"}}):
        code, j = d.api("POST", "/v1/jobs", body)
        assert code in (200, 201, 202), (body, j)


def test_uploaded_commands_are_found_in_work(sim_daemon, tmp_path):
    d = sim_daemon
    (tmp_path / "train.sh").write_text("#!/bin/sh\necho trained $1\n")
    (tmp_path / "train.sh").chmod(0o755)
    (tmp_path / "notes.txt").write_text("not a program\n")
    (tmp_path / "notes.txt").chmod(0o644)
    up = str(tmp_path / "train.sh")
    for cmd in ("./train.sh", "/work/train.sh", "train.sh"):
        p = d.rnx("job", "run", "--follow", "--upload", up, cmd, "x")
        assert p.returncode == 0 and p.stdout == "trained x\n", (cmd, p.stderr)
    # not uploaded: refused, saying what was uploaded is where it would be
    p = d.rnx("job", "run", "./other.sh")
    assert p.returncode != 0 and "'./other.sh'" in p.stderr and "upload" in p.stderr, p.stderr
    p = d.rnx("job", "run", "--upload", str(tmp_path / "notes.txt"), "./notes.txt")
    assert p.returncode != 0 and "execute" in p.stderr, p.stderr


def test_commands_made_later_in_a_volume_keep_working(sim_daemon):
    d = sim_daemon
    p = d.rnx("volume", "create", "jcmtools", "--size=16MB")
    assert p.returncode == 0, p.stderr
    # an earlier job writes the program; the later one runs it: /volumes/ is not checked
    p = d.rnx("job", "run", "--volume=jcmtools", "--follow", "sh", "-c",
              "printf '#!/bin/sh\\necho made later\\n' > /volumes/jcmtools/run.sh && chmod +x /volumes/jcmtools/run.sh")
    assert p.returncode == 0, p.stderr
    p = d.rnx("job", "run", "--volume=jcmtools", "--follow", "/volumes/jcmtools/run.sh")
    assert p.returncode == 0 and p.stdout == "made later\n", p.stderr
    # and by name along the job's own PATH, which is the one the job's init searches (not joblet's)
    for flag in ("-e", "-s"):
        p = d.rnx("job", "run", "--volume=jcmtools", flag, "PATH=/volumes/jcmtools:/usr/bin:/bin", "--follow",
                  "run.sh")
        assert p.returncode == 0 and p.stdout == "made later\n", (flag, p.stderr)


def test_workflow_job_with_missing_command_refused_as_a_whole(sim_daemon, tmp_path):
    d = sim_daemon
    wf = tmp_path / "wf.yaml"
    wf.write_text("jobs:\n  prep:\n    command: sh\n    args: [-c, 'true']\n"
                  "  train:\n    command: jcm-nonexistent\n    requires:\n      - prep: COMPLETED\n")
    p = d.rnx("workflow", "run", str(wf))
    assert p.returncode != 0 and "jcm-nonexistent" in p.stderr and "train" in p.stderr, p.stderr
    assert d.job_count() == 0


def test_looked_up_again_before_a_waiting_job_gets_gpus(sim_daemon):
    """A job that waited for GPUs while its command went away (its runtime rebuilt without it)
    fails when its turn comes, before a GPU is granted, saying what is missing."""
    d = sim_daemon
    holder = d.submit("sleep", "300", gpu_count=8)
    d.wait_status(holder, "RUNNING")
    p = d.rnx("--json", "job", "run", "--runtime=pybox", "--gpu=1", "python", "x.py")
    assert p.returncode == 0, p.stderr
    waiting = json.loads(p.stdout)["id"]
    d.wait_status(waiting, "QUEUED")
    os.unlink(os.path.join(d.state, "runtimes", "pybox", "rootfs", "usr", "bin", "python"))
    d.rnx("job", "kill", holder, check=True)
    job = d.wait(waiting)
    assert job["status"] == "FAILED", job
    assert "'python'" in (job.get("error") or ""), job
    code, a = d.api("GET", "/v1/audit")
    assert code == 200
    assert not [r for r in a["records"] if r.get("job_id") == waiting], a
    assert not d.job(waiting).get("gpus"), d.job(waiting)
