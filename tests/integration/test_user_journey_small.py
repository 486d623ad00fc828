"""The small items of issue 26's point 9 that a new user hit with rnx:

a. `rnx job list` says whose each job is (a USER column) to a caller who sees other users'
   jobs (root), and not to anyone else; --json is the API's list, unchanged. So does
   `rnx workflow list` (the sibling).
b. `rnx monitor status` and `rnx monitor watch` show the temperature (and utilization, power,
   memory) `rnx gpu list` shows, also for a simulated GPU that has no health sample.
c. A conflict between a GPU flag and NVIDIA_VISIBLE_DEVICES / NVIDIA_DRIVER_CAPABILITIES given
   with -e exits 2 (a bad command line, nothing sent: docs/cli.md) whatever the variable; the
   same conflict in a workflow file's environment is found by `rnx workflow validate` with its
   line, before anything is sent, like the file's other problems.
d. Every workflow example in examples/ validates against the real daemon on this machine
   (a 2-CPU one included), and the first one no longer says there are no runtimes.

Each test drives the built rnx and, where a daemon is needed, the real joblet."""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile

from conftest import BUILD, ROOT, setpriv

RNX = os.path.join(BUILD, "rnx")
FIX = os.path.join(ROOT, "tests", "fixtures")
EXAMPLES = os.path.join(ROOT, "examples")
NO_DAEMON = "/nonexistent/joblet-test-journey-small.sock"
NOBODY = (65534, 65534)   # a user with a passwd entry ("nobody")
NAMELESS = (4329, 4329)   # a uid with no passwd entry (setpriv needs none)


def env_for(sock):
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "JOBLET_SOCKET": sock}
    e.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    return e


def rnx(sock, *args, user=None, cwd=None):
    pre = setpriv(user) if user else []
    p = subprocess.run([*pre, RNX, *args], capture_output=True, text=True, timeout=60, env=env_for(sock),
                       cwd=cwd or "/")
    for mark in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        assert mark not in p.stderr, p.stderr
    return p


def table(out):
    """A table as printed: the header's words and each row's cells (two or more spaces apart)."""
    lines = out.splitlines()
    return lines[0].split(), [re.split(r"\s{2,}", l.strip()) for l in lines[1:]]


# ---- a. the USER column ---------------------------------------------------------------------

def test_job_list_names_each_jobs_user_for_root_only(fresh_daemon):
    d = fresh_daemon()
    mine = rnx(d.sock, "job", "run", "--name", "roots", "true")
    assert mine.returncode == 0, mine.stderr
    theirs = rnx(d.sock, "job", "run", "--name", "nobodys", "true", user=NOBODY)
    assert theirs.returncode == 0, theirs.stderr
    nameless = rnx(d.sock, "job", "run", "--name", "nameless", "true", user=NAMELESS)
    assert nameless.returncode == 0, nameless.stderr
    ids = {n: p.stdout.strip().splitlines()[-1].split()[-1] for n, p in
           (("roots", mine), ("nobodys", theirs), ("nameless", nameless))}
    for jid in ids.values():
        d.wait(jid)

    # root sees everyone's jobs: the owner's name (or uid) before the command
    p = rnx(d.sock, "job", "list")
    assert p.returncode == 0, p.stderr
    head, rows = table(p.stdout)
    assert head == ["ID", "NUM", "NAME", "STATUS", "EXIT", "GPUS", "CREATED", "DURATION", "USER", "COMMAND"], \
        p.stdout
    by_name = {r[2]: r for r in rows}
    assert by_name["roots"][8] == "root" and by_name["roots"][9] == "true", by_name
    assert by_name["nobodys"][8] == "nobody", by_name
    assert by_name["nameless"][8] == str(NAMELESS[0]), by_name

    # anyone else sees only their own: no column
    p = rnx(d.sock, "job", "list", user=NOBODY)
    assert p.returncode == 0, p.stderr
    head, rows = table(p.stdout)
    assert head == ["ID", "NUM", "NAME", "STATUS", "EXIT", "GPUS", "CREATED", "DURATION", "COMMAND"], p.stdout
    assert [r[2] for r in rows] == ["nobodys"] and rows[0][8] == "true", rows

    # --json is the API's list as it was: the same objects, no user name added
    p = rnx(d.sock, "job", "list", "--json")
    assert p.returncode == 0, p.stderr
    listed = json.loads(p.stdout)
    code, api = d.api("GET", "/v1/jobs")
    assert code == 200
    assert [sorted(j) for j in listed] == [sorted(j) for j in api["jobs"]]
    assert all("user" not in j for j in listed)
    assert {j["owner_uid"] for j in listed} == {0, NOBODY[0], NAMELESS[0]}


def test_workflow_list_names_each_workflows_user_for_root_only(fresh_daemon):
    """The sibling: root's `rnx workflow list` shows every user's workflows too."""
    d = fresh_daemon()
    where = tempfile.mkdtemp(prefix="joblet-it-wf-")   # pytest's tmp_path is root's alone
    try:
        os.chmod(where, 0o755)
        path = os.path.join(where, "w.yaml")
        with open(path, "w") as f:
            f.write("jobs:\n  one:\n    command: 'true'\n")
        os.chmod(path, 0o644)
        for who in (None, NOBODY, NAMELESS):
            p = rnx(d.sock, "workflow", "run", path, user=who)
            assert p.returncode == 0, p.stderr
    finally:
        shutil.rmtree(where)
    p = rnx(d.sock, "workflow", "list")
    assert p.returncode == 0, p.stderr
    head, rows = table(p.stdout)
    assert head == ["ID", "NAME", "STATE", "JOBS", "USER", "CREATED", "DURATION"], p.stdout
    assert sorted(r[4] for r in rows) == sorted(["root", "nobody", str(NAMELESS[0])]), rows
    p = rnx(d.sock, "workflow", "list", user=NOBODY)
    assert p.returncode == 0, p.stderr
    head, rows = table(p.stdout)
    assert head == ["ID", "NAME", "STATE", "JOBS", "CREATED", "DURATION"] and len(rows) == 1, p.stdout
    p = rnx(d.sock, "--json", "workflow", "list")
    assert sorted(w["owner_uid"] for w in json.loads(p.stdout)) == sorted([0, NOBODY[0], NAMELESS[0]])


# ---- b. monitor and gpu list agree ----------------------------------------------------------

def test_monitor_shows_the_temperature_gpu_list_shows_on_a_simulated_machine(fresh_daemon):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/dgx-h100/machine.json\n  scrub: 0\n")
    p = rnx(d.sock, "gpu", "list")
    assert p.returncode == 0, p.stderr
    head, rows = table(p.stdout[p.stdout.index("INDEX"):])
    assert head == ["INDEX", "NAME", "MEMORY", "USED/TOTAL", "UTIL", "TEMP", "STATE", "JOB"], p.stdout
    listed = {int(r[0]): r for r in rows if r and r[0].isdigit()}
    assert len(listed) == 8, p.stdout
    mems = {i: r[2] for i, r in listed.items()}
    utils = {i: r[3] for i, r in listed.items()}
    temps = {i: r[4] for i, r in listed.items()}
    assert all(re.match(r"^\d+C$", t) for t in temps.values()), temps

    # rnx monitor status: the table's TEMP and UTIL columns
    p = rnx(d.sock, "monitor", "status")
    assert p.returncode == 0, p.stderr
    text = p.stdout[p.stdout.index("GPU  "):]
    head, rows = table(text)
    assert head[:3] == ["GPU", "NAME", "STATE"], text
    shown = {int(r[0]): r for r in rows if r and r[0].isdigit()}
    assert {i: r[5] for i, r in shown.items()} == temps, text
    assert {i: r[3] for i, r in shown.items()} == utils, text
    assert {i: r[4] for i, r in shown.items()} == mems, text

    # rnx monitor watch, one sample as a line (not a terminal)
    p = rnx(d.sock, "monitor", "watch", "--count", "1")
    assert p.returncode == 0, p.stderr
    watched = dict((int(i), t) for i, t in re.findall(r"\| gpu(\d+) \S+ util \S+ temp (\S+) ", p.stdout))
    assert watched == temps, p.stdout


# ---- c. the same conflict, the same exit status ---------------------------------------------

CONFLICTS = [
    # (flags, what the refusal names)
    (["--gpu=1", "-e", "NVIDIA_VISIBLE_DEVICES=none"], "NVIDIA_VISIBLE_DEVICES=none asks for no GPU"),
    (["--gpu=1", "-e", "NVIDIA_VISIBLE_DEVICES=all"], "NVIDIA_VISIBLE_DEVICES=all asks for every GPU"),
    (["--gpu=3", "-e", "NVIDIA_VISIBLE_DEVICES=1"], "NVIDIA_VISIBLE_DEVICES=1 asks for those GPUs"),
    (["--gpu=1", "-e", "NVIDIA_VISIBLE_DEVICES=gpu-one"], "'gpu-one' is neither a GPU index"),
    (["--gpu=1", "--gpu-caps=compute", "-e", "NVIDIA_DRIVER_CAPABILITIES=graphics"],
     "NVIDIA_DRIVER_CAPABILITIES=graphics, but the job also asks for"),
    (["--gpu=1", "-e", "NVIDIA_DRIVER_CAPABILITIES=warp-drive"], "NVIDIA_DRIVER_CAPABILITIES=warp-drive: "),
    (["--gpu-mig=1g.10gb", "-e", "NVIDIA_VISIBLE_DEVICES=2"], "NVIDIA_VISIBLE_DEVICES=2 asks for those GPUs"),
]


def test_every_nvidia_variable_conflict_is_a_command_line_error():
    for flags, says in CONFLICTS:
        p = rnx(NO_DAEMON, "job", "run", *flags, "true")
        assert p.returncode == 2, (flags, p.returncode, p.stderr)
        assert "cannot reach joblet" not in p.stderr, (flags, p.stderr)
        assert p.stderr.startswith("rnx: --env: ") and says in p.stderr, (flags, p.stderr)


def test_the_daemon_refuses_what_rnx_refuses(daemon):
    # the same requests sent as JSON, past rnx: the daemon refuses each of them, naming env
    for flags, says in CONFLICTS:
        body = {"command": "true", "env": {}}
        it = iter(flags)
        for f in it:
            if f == "-e":
                k, v = next(it).split("=", 1)
                body["env"][k] = v
            elif f.startswith("--gpu="):
                body["gpu_count"] = int(f.split("=")[1])
            elif f.startswith("--gpu-caps="):
                body["gpu_caps"] = f.split("=")[1]
            elif f.startswith("--gpu-mig="):
                body["gpu_mig"] = f.split("=")[1]
        code, err = daemon.api("POST", "/v1/jobs", body)
        assert code == 400 and says in json.dumps(err), (body, code, err)


def test_a_workflow_environment_conflict_is_found_before_anything_is_sent(tmp_path):
    path = tmp_path / "conflict.yaml"
    path.write_text("jobs:\n  train:\n    command: 'true'\n    environment:\n      NVIDIA_VISIBLE_DEVICES: all\n"
                    "    resources:\n      gpu_count: 2\n")
    p = rnx(NO_DAEMON, "workflow", "validate", str(path))
    # a workflow file's problems exit 1 with their line (docs/workflows.md), found here: nothing sent
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "cannot reach joblet" not in p.stderr, p.stderr
    assert f"{path}:5:7:" in p.stderr and "job 'train'" in p.stderr and "NVIDIA_VISIBLE_DEVICES=all" in p.stderr, \
        p.stderr
    # the variable alone still asks for the GPUs, as the daemon reads it
    path.write_text("jobs:\n  train:\n    command: 'true'\n    environment:\n      NVIDIA_VISIBLE_DEVICES: '0,1'\n"
                    "    resources:\n      gpu_memory_mb: 1024\n")
    p = rnx(NO_DAEMON, "workflow", "validate", str(path))
    assert p.returncode == 0 and "only the file was checked" in p.stderr, (p.returncode, p.stderr)


# ---- d. the examples run here ---------------------------------------------------------------

def test_every_workflow_example_validates_on_this_machine(fresh_daemon):
    d = fresh_daemon(f"gpu:\n  fixture: {FIX}/a100-pcie-4/machine.json\n  scrub: 0\n")
    examples = sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml")))
    assert os.path.join(EXAMPLES, "ml-training-pipeline.yaml") in examples and len(examples) >= 3, examples
    for path in examples:
        # as the guide types it, from the repository's root, with this machine's CPUs
        p = rnx(d.sock, "workflow", "validate", os.path.relpath(path, ROOT), cwd=ROOT)
        assert p.returncode == 0, (path, os.cpu_count(), p.stderr)
    text = open(os.path.join(EXAMPLES, "ml-training-pipeline.yaml")).read()
    assert "no runtime" not in text and "docs/runtimes.md" in text, text[:600]
    # each max_cpu fits a 2-CPU machine, whatever this one has
    assert all(int(v) <= 200 for v in re.findall(r"max_cpu:\s*(\d+)", text)), text
